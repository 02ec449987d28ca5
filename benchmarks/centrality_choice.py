"""Which weight for the centrality signal (each skill's closeness to the library's centre), on the dev splits only.

    python benchmarks/centrality_choice.py           # dev sets, weights 0 / 0.1 / 0.2 / 0.3 / 0.4 / 0.5
    python benchmarks/centrality_choice.py --test    # once, after choosing: the test sets, 0 against CHOSEN, and
                                                     # the default before issue 20's names rule and centrality

The sets are name_choice.py's (single-skill rows of users-corpora-dev, corpora-dev, users-bundled-dev and
bundled-dev; MetaTool single-tool dev; Seal-Tools dev with its multi-tool recall@5), each scored once by the default
router; every weight then fuses the same scores (weight 0 leaves the signal out: the default before it). hit@1,
hit@5 and MRR (first gold in the top 10) with a paired sign-flip test (10,000 flips) of each weight against 0. The
rule for choosing: the best mean MRR over the dev sets with no dev set more than 0.5 below weight 0. With --test,
a row "previous" fuses without centrality and name_dense (the default before both: catalogue_names 0) and each
row's paired test is against it. Writes benchmarks/results/centrality_choice[-test].json.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from common import outcome, save
from name_choice import Rows, choice_sets, paired
from router import Router

WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
CHOSEN = 0.2


def outcomes(router: Router, rows: Rows, weight: float | str, scored: Any) -> np.ndarray:
    """Per request: (a needed tool first, hit@5 or recall@5 for several needs, reciprocal rank, several needs);
    ``weight`` "previous": without centrality and the names rule."""
    if weight == "previous":
        fused = router.fuse(scored, without={"centrality", "name_dense"})
    else:
        fused = router.with_config(weights={"centrality": weight}).fuse(scored) if weight else \
            router.fuse(scored, without={"centrality"})
    return ranked_outcomes(router, rows, scored, fused)


def ranked_outcomes(router: Router, rows: Rows, scored: Any, fused: np.ndarray) -> np.ndarray:
    """Per request, from its top 10 by ``fused``: (a needed tool first, hit@5 or recall@5 for several needs,
    reciprocal rank, several needs)."""
    ranked = router.rank_scored(scored, 10, fused=fused)
    return np.array([(*outcome([m.id for m in matches], needs), len(needs) > 1)
                     for (_, needs), matches in zip(rows, ranked)], dtype=float)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--test", action="store_true", help="the test sets, weight 0 against CHOSEN")
    args = parser.parse_args()
    sets = choice_sets(args.test)
    weights: tuple[float | str, ...] = ("previous", 0.0, CHOSEN) if args.test else WEIGHTS
    rng = np.random.default_rng(20)
    results: dict[str, Any] = {}
    for name, (router, rows) in sets.items():
        scored = router.score_many([q for q, _ in rows])
        base = outcomes(router, rows, weights[0], scored)
        several = base[:, 3] > 0
        for weight in weights:
            values = outcomes(router, rows, weight, scored)
            row: dict[str, Any] = {"n": int((~several).sum()), "multi_n": int(several.sum()),
                                   "all_hit@1": round(100 * float(values[:, 0].mean()), 1)}
            row.update(paired(values, base, (("hit@1", 0, ~several), ("hit@5", 1, ~several), ("mrr", 2, ~several),
                                             ("first", 0, several), ("multi_recall@5", 1, several)), rng))
            results.setdefault(name, {})[str(weight)] = row
            print(f"{name:18} centrality {weight!s:8}: " + ", ".join(
                f"{m} {row[m]} {row.get(m + '_wins_losses_p', '')}" for m in
                ("hit@1", "hit@5", "mrr", "first", "multi_recall@5", "all_hit@1") if row[m] is not None), flush=True)
    save("centrality_choice-test" if args.test else "centrality_choice", {"weights": list(weights),
                                                                           "results": results})


if __name__ == "__main__":
    main()
