"""Fixtures the test modules share, and the ``model`` marker.

Tests that need the real bundled all-MiniLM-L6-v2 (the ``encoder`` fixture, directly or through another fixture,
or marked ``@pytest.mark.model``) are marked ``model``; ``pytest -m "not model"`` runs the rest in seconds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from indexes import Encoder
from oracle_claude import claude_binary  # noqa: F401 - the real Claude Code, a session fixture

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ROOT / "skills"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "encoder" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.model)


@pytest.fixture(scope="session")
def encoder() -> Encoder:
    """The real bundled model, loaded once per session and warmed up."""
    model = Encoder()
    model.encode(["warm up"])
    return model


def write_skill(root: Path, folder: str, description: str, *, name: str | None = None, body: str = "") -> Path:
    """``root/folder/SKILL.md`` with a name (default: the folder) and description in its frontmatter."""
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name or folder}\ndescription: {description}\n---\n{body}", encoding="utf-8")
    return path
