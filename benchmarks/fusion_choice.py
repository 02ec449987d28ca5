"""Which fusion should be the default? Measured on the dev splits only (MetaTool single dev, Seal-Tools dev).

    python benchmarks/fusion_choice.py
"""

from __future__ import annotations


import numpy as np

from common import DATASETS, read_jsonl, save
from router import Router
from router.config import RouterConfig


def evaluate(fused: np.ndarray, ids: list[str], golds: list[list[str]], order: np.ndarray) -> dict[str, float]:
    r1 = r5 = mrr = 0.0
    for row, gold in enumerate(golds):
        ranking = np.lexsort((order, -fused[row]))[:10]
        top = [ids[i] for i in ranking]
        gold_set = set(gold)
        r1 += len(gold_set & set(top[:1])) / min(len(gold_set), 1) if len(gold_set) == 1 else float(top[0] in gold_set)
        r5 += len(gold_set & set(top[:5])) / len(gold_set)
        mrr += next((1 / (i + 1) for i, d in enumerate(top) if d in gold_set), 0.0)
    n = len(golds)
    return {"R@1": round(100 * r1 / n, 2), "R@5": round(100 * r5 / n, 2), "MRR": round(100 * mrr / n, 2)}


def main() -> None:
    setups = {
        "metatool-dev": (DATASETS / "metatool/tools.jsonl", DATASETS / "metatool/queries_single_dev.jsonl"),
        "sealtools-dev": (DATASETS / "sealtools/tools.jsonl", DATASETS / "sealtools/dev.jsonl"),
    }
    variants = {"bm25": ("zscore", {"bm25": 1, "dense": 0}), "dense": ("zscore", {"bm25": 0, "dense": 1}),
                "rrf equal": ("rrf", {"bm25": 1, "dense": 1})}
    for w in (0.2, 0.3, 0.5):
        variants[f"rrf bm25={w}"] = ("rrf", {"bm25": w, "dense": 1})
    for w in (0.2, 0.3, 0.5, 0.7, 1.0):
        variants[f"zscore bm25={w}"] = ("zscore", {"bm25": w, "dense": 1})
    for w in (0.2, 0.3, 0.5):
        variants[f"minmax bm25={w}"] = ("minmax", {"bm25": w, "dense": 1})
    results: dict[str, dict[str, dict[str, float]]] = {}
    for setup, (tools, queries) in setups.items():
        router = Router.from_catalog(tools, config=RouterConfig(route_above=0))
        rows = read_jsonl(queries)
        scored = router.score_many([r["query"] for r in rows])
        ids = [s.id for s in router.skills]
        order = router.order
        golds = [r["gold"] for r in rows]
        for name, (method, weights) in variants.items():
            fused = router.with_config(fusion=method, weights={**weights, "examples": 0.0}).fuse(scored)
            results.setdefault(name, {})[setup] = evaluate(fused, ids, golds, order)
            print(f"{setup:14} {name:22} {results[name][setup]}", flush=True)
    save("fusion_choice", {"results": results})


if __name__ == "__main__":
    main()
