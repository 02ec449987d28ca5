"""Shared helpers for the benchmark scripts: where the datasets are, and per-request signal scores in bulk."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

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


def bulk_signals(router, queries: Sequence[str]) -> dict[str, np.ndarray]:
    """Each signal's scores for many requests at once, shape (n_queries, n_skills); the queries are embedded
    in one batch, which is what makes dataset-sized runs take seconds rather than minutes."""
    signals = router.signals
    query_vectors = router.encoder.encode(list(queries), batch_size=128)
    bm25 = np.stack([signals.bm25.scores(q) for q in queries])
    doc_vectors = signals.dense.vectors.astype(np.float64)
    dense = query_vectors.astype(np.float64) @ doc_vectors.T
    out = {"bm25": bm25, "dense": dense}
    if signals.has_examples:
        sims = query_vectors @ signals.example_vectors.T
        examples = dense.copy()
        for row in range(len(queries)):
            np.maximum.at(examples[row], signals.example_owner, sims[row].astype(np.float64))
        out["examples"] = examples
    return out
