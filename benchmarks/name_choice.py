"""Which weight for the name_dense signal (the embedding of the name words alone), on the dev splits only.

    python benchmarks/name_choice.py            # dev sets, catalogue_names 0 / 0.2 / 0.3 / 0.5
    python benchmarks/name_choice.py --test     # once, after choosing: the test sets, 0 against CHOSEN

The signal counts by the library's rule (router/signals/name_dense.py): in a library without bodies whose names
agree with their descriptions less than AGREEMENT, at ``catalogue_names``; elsewhere it is not built, so those sets
route exactly as with 0 (their rows show 0 wins and 0 losses). Weight 0 is the default before the rule.

Dev sets: the single-skill rows of users-corpora-dev, corpora-dev (the ~700 corpus skills), users-bundled-dev and
bundled-dev (skills/), every MetaTool single-tool dev request (4,212) and Seal-Tools dev (700; multi-tool recall@5
on the 500 that need several tools, and "first": a needed tool ranked first). Each set is scored once by the
default router; every weight then fuses the same scores (weight 0 leaves the signal out). hit@1 /
hit@5 with a paired sign-flip test (10,000 flips) of each weight against 0. Test: MetaTool single-tool test
(16,338), MetaTool multi (497, two tools each), Seal-Tools test (1,354) and the single-skill rows of corpora-test
and bundled-test. Writes benchmarks/results/name_choice[-test].json.
"""

from __future__ import annotations

from typing import Any

import argparse

import numpy as np

from common import DATASETS, RESULTS, read_jsonl, save
from router import Router
from router.config import RouterConfig
from users import DATA, load, query_of

WEIGHTS = (0.0, 0.2, 0.3, 0.5)
CHOSEN = 0.3  # on the dev sets: the largest MetaTool hit@5 gain, no other dev set lower
FLIPS = 10_000
Rows = list[tuple[Any, list[set[str]]]]


#: The later users' files (benchmarks/data/USERS.md), whose single-skill rows no ranking weight was chosen on.
UNREAD = (("corpora", ("users-corpora-dev-tasks", "users-corpora-dev-abstain")),
          ("bundled", ("users-bundled-dev-tasks", "users-bundled-dev-abstain")))


def library_sets(test: bool = False, files: Any = None, config: RouterConfig | None = None
                 ) -> dict[str, tuple[Router, Rows]]:
    """The single-skill rows of the skill-library dev sets (``test``: test sets; ``files``: other (library, set
    names) pairs such as :data:`UNREAD`), each library built once by the router of ``config`` (default: the
    default config)."""
    out = {}
    for library, names in files or (("corpora", ("corpora-test",) if test else ("users-corpora-dev", "corpora-dev")),
                                     ("bundled", ("bundled-test",) if test else ("users-bundled-dev", "bundled-dev"))):
        router, by = load(library, config or RouterConfig())
        for name in names:
            rows = [r for r in read_jsonl(DATA / f"{name}.jsonl") if r["gold"] and r.get("kind", "single") == "single"]
            out[name] = (router, [(query_of(r), [{by[g] for g in r["gold"] if g in by}]) for r in rows])
    return out


def catalogue_set(dataset: str, file: str) -> tuple[Router, Rows]:
    router = Router.from_catalog(DATASETS / dataset / "tools.jsonl",
                                 config=RouterConfig(route_above=0),
                                 index_folder=str(RESULTS.parent / ".index" / dataset))
    rows = read_jsonl(DATASETS / dataset / file)
    multi = dataset == "sealtools" or "multi" in file
    return router, [(r["query"], [{g} for g in r["gold"]] if len(r["gold"]) > 1 and multi else [set(r["gold"])])
                    for r in rows]


def outcomes(router: Router, rows: Rows, weight: float, scored: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per request: (a needed tool first, hit@5 or, for a request of several needs, recall@5)."""
    fused = router.with_config(catalogue_names=weight).fuse(scored) if weight else \
        router.fuse(scored, without={"name_dense"})
    ranked = router.rank_scored(scored, 5, fused=fused)
    out = []
    for (_, needs), matches in zip(rows, ranked):
        top = {m.id for m in matches}
        out.append((any(matches[0].id in n for n in needs), sum(bool(n & top) for n in needs) / len(needs)))
    return np.array(out, dtype=float), np.array([len(needs) > 1 for _, needs in rows])


def flip_p(diff: np.ndarray, rng: np.random.Generator) -> float:
    if not diff.any():
        return 1.0
    signs = rng.choice([-1.0, 1.0], size=(FLIPS, len(diff)))
    return float(np.mean(np.abs(signs @ diff) >= abs(diff.sum()) - 1e-9))


def paired(values: np.ndarray, base: np.ndarray, metrics: Any, rng: np.random.Generator | None,
           digits: int = 1) -> dict[str, Any]:
    """Each ``(metric, column, mask)``'s mean over the masked requests (None when the mask is empty; in % rounded to
    ``digits``) and its wins, losses and sign-flip p against ``base``, the same requests' outcomes under the previous
    setting (None without ``rng``: a grid that counts wins and losses only)."""
    row: dict[str, Any] = {}
    for metric, column, mask in metrics:
        if not mask.any():
            row[metric] = None
            continue
        diff = values[mask, column] - base[mask, column]
        row[metric] = round(100 * float(values[mask, column].mean()), digits)
        row[f"{metric}_wins_losses_p"] = [int((diff > 0).sum()), int((diff < 0).sum()),
                                          round(flip_p(diff, rng), 4) if rng is not None else None]
    return row


def choice_sets(test: bool) -> dict[str, tuple[Router, Rows]]:
    """The skill-library sets and the catalogues' dev splits, or (``test``) their test splits and MetaTool's
    multi-tool requests."""
    if test:
        return {**library_sets(test=True), "metatool-test": catalogue_set("metatool", "queries_single_test.jsonl"),
                "metatool-multi": catalogue_set("metatool", "queries_multi.jsonl"),
                "sealtools-test": catalogue_set("sealtools", "queries.jsonl")}
    return {**library_sets(), "metatool-dev": catalogue_set("metatool", "queries_single_dev.jsonl"),
            "sealtools-dev": catalogue_set("sealtools", "dev.jsonl")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--test", action="store_true", help="the test sets, weight 0 against CHOSEN")
    args = parser.parse_args()
    sets = choice_sets(args.test)
    weights = (0.0, CHOSEN) if args.test else WEIGHTS
    rng = np.random.default_rng(20)
    results: dict[str, Any] = {}
    for name, (router, rows) in sets.items():
        scored = router.score_many([q for q, _ in rows])
        base, several = outcomes(router, rows, 0.0, scored)
        for weight in weights:
            values, _ = outcomes(router, rows, weight, scored)
            single = ~several
            row: dict[str, Any] = {"n": int(single.sum()), "multi_n": int(several.sum()),
                                   "all_hit@1": round(100 * float(values[:, 0].mean()), 1)}
            row.update(paired(values, base, (("hit@1", 0, single), ("hit@5", 1, single), ("first", 0, several),
                                             ("multi_recall@5", 1, several)), rng))
            row["names_scored"] = "name_dense" in scored.signals
            results.setdefault(name, {})[str(weight)] = row
            scoring = "" if row["names_scored"] else " (names not scored)"
            print(f"{name:18} catalogue_names {weight:3}{scoring}: " + ", ".join(
                f"{m} {row[m]} {row.get(m + '_wins_losses_p', '')}" for m in ("hit@1", "hit@5", "first",
                                                                            "multi_recall@5", "all_hit@1")
                if row[m] is not None),
                flush=True)
    save("name_choice-test" if args.test else "name_choice", {"weights": list(weights), "results": results})


if __name__ == "__main__":
    main()
