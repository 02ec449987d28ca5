"""Shared helpers for the benchmark scripts: where the datasets are, reading and saving."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SHARED = Path(os.environ.get("SKILL_ROUTER_SHARED", ROOT.parent / "shared"))
DATASETS = SHARED / "datasets"
CORPORA = SHARED / "corpora"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


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
