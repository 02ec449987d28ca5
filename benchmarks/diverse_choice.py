"""Whether a top-k that spreads over several topics serves requests that ask for several things, on dev only.

    python benchmarks/diverse_choice.py                      # every penalty of PENALTIES
    python benchmarks/diverse_choice.py --penalties 0 1      # some of them

Maximal marginal relevance (Carbonell & Goldstein 1998) over the fused scores: the top ``k`` is chosen one skill
at a time among the best ``POOL``, each time the skill whose fused score minus ``penalty`` times its greatest
description cosine with the skills already chosen is highest (the first is the fused first: hit@1 never moves).
A request whose best skills are near-copies of one another (three Kubernetes skills for "a Docker image and the
k8s manifests") leaves room for the skill of its other need.

Sets: the single-skill rows of users-corpora-dev, corpora-dev, users-bundled-dev and bundled-dev, MetaTool
single-tool dev and Seal-Tools dev (its single-tool rows for hit@1 / hit@5 / MRR, its 500 multi-tool rows for
recall@5), and the multi-skill rows of corpora-dev and users-corpora-dev (recall@5: the share of needs met in the
top 5). The rule of benchmarks/README.md ("Choosing the defaults"): the best mean MRR over the six sets with no
set more than 0.5 below the default (penalty 0), with the multi-skill recall beside it. Writes
benchmarks/results/diverse_choice.json.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from common import outcome, save
from name_choice import catalogue_set
from router import Router
from split_choice import Rows, library_sets, summary

PENALTIES = (0.0, 0.5, 1.0, 2.0, 3.0, 4.0)
POOL = 20
DEPTH = 10


def diverse(order: list[int], fused: np.ndarray, vectors: np.ndarray, penalty: float, depth: int) -> list[int]:
    """The first ``depth`` of ``order`` (positions, best first) re-chosen by maximal marginal relevance."""
    if penalty <= 0:
        return order[:depth]
    pool = list(order)
    sims = vectors[pool] @ vectors[pool].T
    chosen = [0]
    left = list(range(1, len(pool)))
    nearest = sims[0].copy()
    while left and len(chosen) < depth:
        gains = [fused[pool[i]] - penalty * nearest[i] for i in left]
        pick = left.pop(int(np.argmax(gains)))
        chosen.append(pick)
        nearest = np.maximum(nearest, sims[pick])
    return [pool[i] for i in chosen]


def outcomes(router: Router, rows: Rows, scored: Any, fused: np.ndarray, penalty: float) -> np.ndarray:
    vectors = np.asarray(router.signals.dense.vectors, dtype=np.float64)
    position = {s.id: i for i, s in enumerate(router.skills)}
    out = []
    for row, ((_, needs), matches) in enumerate(zip(rows, router.rank_scored(scored, POOL, fused=fused))):
        picked = diverse([position[m.id] for m in matches], fused[row], vectors, penalty, DEPTH)
        ids = [router.skills[i].id for i in picked]
        out.append((*outcome(ids, needs), len(needs) > 1))
    return np.array(out, dtype=float)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--penalties", nargs="*", type=float, default=list(PENALTIES))
    args = parser.parse_args()
    sets = {**library_sets(), "metatool-dev": catalogue_set("metatool", "queries_single_dev.jsonl"),
            "sealtools-dev": catalogue_set("sealtools", "dev.jsonl")}
    results: dict[str, dict[str, Any]] = {}
    for name, (router, rows) in sets.items():
        scored = router.score_many([q for q, _ in rows])
        fused = router.fuse(scored)
        for penalty in args.penalties:
            row = summary(outcomes(router, rows, scored, fused, penalty))
            results.setdefault(str(penalty), {})[name] = row
            print(f"penalty {penalty:4} {name:24} {row}", flush=True)
    table = {}
    base = results.get("0.0")
    for label, by_set in results.items():
        single = [s for s, row in by_set.items() if row["mrr"] is not None]
        mean_mrr = round(float(np.mean([by_set[s]["mrr"] for s in single])), 2)
        allowed = base is None or all(by_set[s]["mrr"] >= base[s]["mrr"] - 0.5 for s in single)
        multi = {s: row["multi_recall@5"] for s, row in by_set.items() if row["multi_recall@5"] is not None}
        table[label] = {"mean_mrr": mean_mrr, "allowed": allowed, **multi}
        print(f"penalty {label:4} mean MRR {mean_mrr:6.2f}{'' if allowed else ' (a set > 0.5 below)'} multi {multi}")
    save("diverse_choice", {"penalties": args.penalties, "pool": POOL, "table": table, "results": results})


if __name__ == "__main__":
    main()
