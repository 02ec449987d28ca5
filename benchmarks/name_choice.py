"""Which weight for the name_dense signal (the embedding of the name words alone), on the dev splits only.

    python benchmarks/name_choice.py

Dev sets: the single-skill rows of users-corpora-dev, corpora-dev (the ~700 corpus skills), users-bundled-dev and
bundled-dev (skills/), every MetaTool single-tool dev request (4,212) and Seal-Tools dev (700; multi-tool recall@5
on the 500 that need several tools). Each set is scored once with the names embedded; every weight then fuses the
same scores (weight 0 leaves the signal out: the default). hit@1 / hit@5 with a paired sign-flip test (10,000
flips) of each weight against 0. Writes benchmarks/results/name_choice.json.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from common import DATASETS, RESULTS, read_jsonl, save
from router import Router
from router.config import RouterConfig
from users import DATA, load, query_of

WEIGHTS = (0.0, 0.2, 0.3, 0.5)
FLIPS = 10_000
Rows = list[tuple[Any, list[set[str]]]]


def library_sets() -> dict[str, tuple[Router, Rows]]:
    out = {}
    for library, names in (("corpora", ("users-corpora-dev", "corpora-dev")),
                           ("bundled", ("users-bundled-dev", "bundled-dev"))):
        router, by = load(library, RouterConfig(weights={"name_dense": 0.3}))
        for name in names:
            rows = [r for r in read_jsonl(DATA / f"{name}.jsonl") if r["gold"] and r.get("kind", "single") == "single"]
            out[name] = (router, [(query_of(r), [{by[g] for g in r["gold"] if g in by}]) for r in rows])
    return out


def catalogue_set(dataset: str, file: str) -> tuple[Router, Rows]:
    router = Router.from_catalog(DATASETS / dataset / "tools.jsonl",
                                 config=RouterConfig(route_above=0, weights={"name_dense": 0.3}),
                                 index_folder=str(RESULTS.parent / ".index" / dataset))
    rows = read_jsonl(DATASETS / dataset / file)
    return router, [(r["query"], [{g} for g in r["gold"]] if len(r["gold"]) > 1 and dataset == "sealtools"
                     else [set(r["gold"])]) for r in rows]


def outcomes(router: Router, rows: Rows, weight: float, scored: Any) -> tuple[np.ndarray, list[float]]:
    """(hit@1, hit@5) per single-need request, and recall@5 per multi-need request."""
    fused = router.with_config(weights={"name_dense": weight}).fuse(scored) if weight else \
        router.fuse(scored, without={"name_dense"})
    ranked = router.rank_scored(scored, 5, fused=fused)
    single, multi = [], []
    for (_, needs), matches in zip(rows, ranked):
        top = {m.id for m in matches}
        if len(needs) > 1:
            multi.append(sum(bool(n & top) for n in needs) / len(needs))
        else:
            single.append((matches[0].id in needs[0], bool(needs[0] & top)))
    return np.array(single, dtype=float).reshape(-1, 2), multi


def flip_p(diff: np.ndarray, rng: np.random.Generator) -> float:
    if not diff.any():
        return 1.0
    signs = rng.choice([-1.0, 1.0], size=(FLIPS, len(diff)))
    return float(np.mean(np.abs(signs @ diff) >= abs(diff.sum()) - 1e-9))


def main() -> None:
    sets = {**library_sets(), "metatool-dev": catalogue_set("metatool", "queries_single_dev.jsonl"),
            "sealtools-dev": catalogue_set("sealtools", "dev.jsonl")}
    rng = np.random.default_rng(20)
    results: dict[str, Any] = {}
    for name, (router, rows) in sets.items():
        scored = router.score_many([q for q, _ in rows])
        base, _ = outcomes(router, rows, 0.0, scored)
        for weight in WEIGHTS:
            single, multi = outcomes(router, rows, weight, scored)
            row: dict[str, Any] = {"n": len(single), "hit@1": round(100 * single[:, 0].mean(), 1),
                                   "hit@5": round(100 * single[:, 1].mean(), 1),
                                   "multi_recall@5": round(100 * float(np.mean(multi)), 1) if multi else None}
            for k, metric in enumerate(("hit@1", "hit@5")):
                diff = single[:, k] - base[:, k]
                row[f"{metric}_wins_losses_p"] = [int((diff > 0).sum()), int((diff < 0).sum()),
                                                  round(flip_p(diff, rng), 4)]
            results.setdefault(name, {})[str(weight)] = row
            print(f"{name:18} name_dense {weight:3}: hit@1 {row['hit@1']:5.1f} {row['hit@1_wins_losses_p']} "
                  f"hit@5 {row['hit@5']:5.1f} {row['hit@5_wins_losses_p']} multi R@5 {row['multi_recall@5']}",
                  flush=True)
    save("name_choice", {"weights": list(WEIGHTS), "results": results})


if __name__ == "__main__":
    main()
