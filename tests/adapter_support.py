"""What the framework adapter tests share: a router over the bundled library, a scripted two-turn conversation
whose routed set changes, and the text each turn must add (built from the profile's formula, not the adapter)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from router.config import RouterConfig
from router.routing import Router

BUNDLED = Path(__file__).resolve().parents[1] / "skills"

WEATHER = "what will the weather be like tomorrow in Lyon?"
COMMIT = "now write a commit message for this diff"
# The two skills the real model routes each turn to with k=2, in library (tool) order.
TURNS = ((WEATHER, ("current-weather", "weather-forecast")), (COMMIT, ("changelog-writing", "git-commit-messages")))
SYSTEM = "You are helpful."
OWN_TOOL = "web_search"  # a framework tool that is no skill: always passed through


class HashEncoder:
    """A fake encoder for plumbing tests: a fixed unit vector per text, no model."""

    model_id, dim = "test/hash-encoder", 8

    def encode(self, texts: Sequence[str], progress: bool = False, batch_size: int = 64) -> np.ndarray:
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8) for t in texts]
        vectors = np.array(rows, dtype=np.float32) + 1
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def bundled_router(index: Path, encoder: Any, profile: str = "agentskills", **config: Any) -> Router:
    return Router.from_skills([str(BUNDLED)], profile, RouterConfig(k=2, **config), index_folder=str(index),
                              encoder=encoder)


def catalogue(router: Router, names: Sequence[str]) -> str:
    """The profile's catalogue of exactly these skills, in library order (what a turn must add)."""
    return router.profile.render([s for s in router.skills if s.name in names])


def skill_names(router: Router) -> list[str]:
    return [s.name for s in router.skills]
