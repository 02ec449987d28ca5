"""Shared helpers for the benchmark scripts: where the datasets are, reading and saving."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from collections.abc import Sequence
from typing import Any

import numpy as np

from router.config import ConfigError, RouterConfig

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SHARED = Path(os.environ.get("SKILL_ROUTER_SHARED", ROOT.parent / "shared"))
DATASETS = SHARED / "datasets"
CORPORA = SHARED / "corpora"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def config_changes(items: Sequence[str]) -> dict[str, Any]:
    """``--set FIELD=JSON`` items as config changes (``{"no_skill": False}``); ValueError for an item without ``=``
    or with a value that is not JSON."""
    changes = {}
    for item in items:
        field, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"{item!r} is not FIELD=JSON")
        changes[field] = json.loads(value)
    return changes


def parsed_config(parser: argparse.ArgumentParser, items: Sequence[str]) -> tuple[dict[str, Any], RouterConfig]:
    """The ``--set FIELD=JSON`` items of ``parser``'s command line: the changes, and the default router config with
    them; a bad item ends the command with the parser's usage error (exit 2)."""
    try:
        changes = config_changes(items)
        return changes, RouterConfig().with_(**changes)
    except (ValueError, TypeError, ConfigError) as exc:
        parser.error(f"--set takes FIELD=JSON with a router config field: {exc}")


def save(name: str, payload: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {"command": "python " + " ".join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:]),
               "date": time.strftime("%Y-%m-%d"), **payload}
    path.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n")
    return path


def corpus_folder(skill_path: str) -> str:
    """A skill's folder relative to the corpora (``awesome-skills/skills/pdf``): how labelled requests name gold."""
    return str(Path(skill_path).parent.relative_to(CORPORA))


def outcome(ids: Sequence[str], needs: Sequence[set[str]]) -> tuple[bool, float, float]:
    """One request's hit@1, recall@5 and reciprocal rank for the ranked ``ids``; ``needs`` are its needs, each the
    set of skills that would serve it."""
    first = next((i + 1 for i, x in enumerate(ids) if any(x in n for n in needs)), None)
    return first == 1, sum(bool(n & set(ids[:5])) for n in needs) / len(needs), 1.0 / first if first else 0.0


def best_of_pieces(sims: np.ndarray, owners: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """Each skill's best cosine over its pieces (``sims``: requests x pieces, ``owners``: each piece's skill), and
    ``fallback``'s column (requests x skills) for a skill without pieces."""
    out = np.array(fallback, dtype=np.float64)
    has = np.zeros(out.shape[1], dtype=bool)
    has[owners] = True
    best = np.full_like(out, -np.inf)
    np.maximum.at(best.T, owners, sims.T)
    out[:, has] = best[:, has]
    return out
