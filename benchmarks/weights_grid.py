"""Can the weights alone reach the MetaTool goal? BM25, centrality and catalogue_names varied together, dev sets only.

    python benchmarks/weights_grid.py           # 48 settings over the six dev sets, about 15 minutes at load 2-3
    python benchmarks/weights_grid.py --pair 0.3 0.3 0.3   # one setting (bm25, centrality, catalogue_names)
                                                           # against the default, request by request

The earlier choices varied one weight at a time (``name_choice.py``: catalogue_names, ``centrality_choice.py``:
centrality, ``signal_choice.py``: BM25). This grid varies the three together, each setting fusing the same scores
(every dev set scored once by the default router, as in ``centrality_choice.py``): ``weights.bm25`` 0.2 / 0.3 / 0.4,
``weights.centrality`` 0.1-0.4 and ``catalogue_names`` 0.2-0.5 (it counts in MetaTool only: the other sets' names are
not scored). Each setting is judged by the project's rule (best mean MRR over the six dev sets, no set more than 0.5
below the default) and shown with MetaTool dev hit@1 / hit@5, the numbers of the MetaTool goal (60 / 82 on test).
Writes benchmarks/results/weights_grid.json. ``--pair`` compares one setting with the default on the same requests:
each set's hit@1 / hit@5 / MRR with wins, losses and a paired sign-flip p, and the rule's mean MRR change (each set
weighing equally) with its own sign-flip p (benchmarks/results/weights_grid-pair.json).
"""

from __future__ import annotations

import argparse
import itertools
from typing import Any

import numpy as np

from centrality_choice import ranked_outcomes
from common import save
from name_choice import FLIPS, Rows, choice_sets, flip_p, paired
from router import Router

BM25 = (0.2, 0.3, 0.4)
CENTRALITY = (0.1, 0.2, 0.3, 0.4)
CATALOGUE_NAMES = (0.2, 0.3, 0.4, 0.5)
#: The rule's bound: no dev set's MRR more than this below the default's.
WORST = 0.5


def outcomes(router: Router, rows: Rows, scored: Any) -> np.ndarray:
    """Per request, fused by ``router``'s own weights: (a needed skill first, hit@5 or recall@5 for several needs,
    reciprocal rank, several needs)."""
    return ranked_outcomes(router, rows, scored, router.fuse(scored))


def measures(values: np.ndarray) -> dict[str, float | None]:
    """hit@1, hit@5 and MRR over the single-need requests, recall@5 over the others (None without any), in %."""
    single = values[:, 3] == 0
    return {"hit@1": round(100 * float(values[single, 0].mean()), 2),
            "hit@5": round(100 * float(values[single, 1].mean()), 2),
            "mrr": round(100 * float(values[single, 2].mean()), 2),
            "multi_recall@5": round(100 * float(values[~single, 1].mean()), 2) if (~single).any() else None}


def setting(router: Router, bm25: float, centrality: float, names: float) -> Router:
    """``router`` with the three weights of one grid point."""
    return router.with_config(weights={**router.config.weights, "bm25": bm25, "centrality": centrality},
                              catalogue_names=names)


def pair(point: tuple[float, float, float]) -> None:
    """``point`` against the default on the six dev sets, request by request."""
    rng = np.random.default_rng(20)
    sets = choice_sets(False)
    result: dict[str, Any] = {}
    shares = []
    for name, (router, rows) in sets.items():
        scored = router.score_many([q for q, _ in rows])
        base = outcomes(router, rows, scored)
        values = outcomes(setting(router, *point), rows, scored)
        single = base[:, 3] == 0
        result[name] = paired(values, base, (("hit@1", 0, single), ("hit@5", 1, single), ("mrr", 2, single)), rng, 2)
        result[name]["default"] = measures(base)
        shares.append((values[single, 2] - base[single, 2]) / single.sum() / len(sets))
        print(f"{name:18} default {result[name]['default']}; setting " + ", ".join(
            f"{m} {result[name][m]} {result[name][m + '_wins_losses_p']}" for m in ("hit@1", "hit@5", "mrr")),
            flush=True)
    diff = np.concatenate(shares)
    change = {"mean_mrr_change": round(100 * float(diff.sum()), 3), "p": round(flip_p(diff, rng), 4),
              "flips": FLIPS}
    print(f"mean MRR over the sets {change['mean_mrr_change']:+.3f} points, sign-flip p {change['p']}")
    save("weights_grid-pair", {"setting": dict(zip(("bm25", "centrality", "catalogue_names"), point)),
                               "sets": result, "mean": change})


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pair", nargs=3, type=float, metavar=("BM25", "CENTRALITY", "NAMES"),
                        help="compare this one setting with the default, request by request")
    args = parser.parse_args()
    if args.pair:
        pair(tuple(args.pair))
        return
    sets = choice_sets(False)
    scored = {name: router.score_many([q for q, _ in rows]) for name, (router, rows) in sets.items()}
    default = {name: measures(outcomes(router, rows, scored[name])) for name, (router, rows) in sets.items()}
    base_mean = float(np.mean([row["mrr"] for row in default.values()]))
    print(f"default: mean MRR {base_mean:.2f}, MetaTool dev {default['metatool-dev']}", flush=True)
    results: dict[str, Any] = {}
    for bm25, centrality, names in itertools.product(BM25, CENTRALITY, CATALOGUE_NAMES):
        row: dict[str, Any] = {}
        for name, (router, rows) in sets.items():
            row[name] = measures(outcomes(setting(router, bm25, centrality, names), rows, scored[name]))
        mean = float(np.mean([row[name]["mrr"] for name in sets]))
        worst = min(row[name]["mrr"] - default[name]["mrr"] for name in sets)  # type: ignore[operator]
        key = f"bm25={bm25} centrality={centrality} catalogue_names={names}"
        results[key] = {"sets": row, "mean_mrr": round(mean, 2), "worst_set_mrr_change": round(worst, 2),
                        "passes_rule": bool(worst >= -WORST)}
        meta = row["metatool-dev"]
        print(f"{key:52} mean MRR {mean:.2f} (worst set {worst:+.2f}); MetaTool dev {meta['hit@1']} / "
              f"{meta['hit@5']}", flush=True)
    passing = {k: v for k, v in results.items() if v["passes_rule"]}
    best = max(passing, key=lambda k: passing[k]["mean_mrr"]) if passing else None
    print(f"best by the rule: {best} ({passing[best]['mean_mrr'] if best else '-'} against {base_mean:.2f})")
    save("weights_grid", {"default": default, "default_mean_mrr": round(base_mean, 2), "best_by_rule": best,
                          "results": results})


if __name__ == "__main__":
    main()
