"""Requests that ask for several things: routing the parts as well as the whole (``split_weight``), on dev sets.

    python benchmarks/multi_split.py                  # dev sets, split_weight 0 / 0.25 / 0.5 / 1
    python benchmarks/multi_split.py --test           # the test sets, the default against split_weight 0

Dev: Seal-Tools dev (700, 500 needing 2-6 tools), the multi-skill rows of benchmarks/data/corpora-dev.jsonl and
users-corpora-dev.jsonl (over the ~700 corpus skills), and the first 1,500 MetaTool single-tool dev requests (a
split must not cost single-tool requests). Test: Seal-Tools test (1,354), MetaTool multi (497, test only) and
single test, corpora-test. Multi-skill recall@5 = share of needed tools (or skills, each need met by any of its
equally serving paths) in the top 5; hit@1 = a gold tool first. Writes benchmarks/results/multi_split[-test].json.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from common import DATASETS, RESULTS, read_jsonl, save
from router import Router
from router.config import RouterConfig
from users import DATA, load, query_of


def corpus_rows(name: str) -> tuple[Router, "Rows"]:
    router, by = load("corpora", RouterConfig())
    out = []
    for row in read_jsonl(DATA / f"{name}.jsonl"):
        if row.get("needs"):
            out.append((query_of(row), [{by[p] for p in need if p in by} for need in row["needs"]]))
        elif row["gold"]:
            out.append((query_of(row), [{by[g] for g in row["gold"] if g in by}]))
    return router, out


Rows = list[tuple[Any, list[set[str]]]]


def catalogue_rows(dataset: str, file: str, limit: int | None = None) -> tuple[Router, Rows]:
    router = Router.from_catalog(DATASETS / dataset / "tools.jsonl", config=RouterConfig(route_above=0),
                                 index_folder=str(RESULTS.parent / ".index" / dataset))
    rows = read_jsonl(DATASETS / dataset / file)[:limit]
    multi = dataset == "sealtools" or "multi" in file
    return router, [(r["query"], [{g} for g in r["gold"]] if multi and len(r["gold"]) > 1 else [set(r["gold"])])
                    for r in rows]


def measure(router: Router, rows: list[tuple[Any, list[set[str]]]], weight: float) -> dict[str, Any]:
    ranked = router.with_config(split_weight=weight).rank_many([q for q, _ in rows], k=5)
    multi, single, first = [], [], []
    for (_, needs), matches in zip(rows, ranked):
        top = {m.id for m in matches}
        first.append(any(matches[0].id in n for n in needs))
        if len(needs) > 1:
            multi.append(sum(bool(n & top) for n in needs) / len(needs))
        else:
            single.append(matches[0].id in needs[0])
    pct = lambda xs: round(100 * float(np.mean(xs)), 1) if xs else None  # noqa: E731
    return {"multi_recall@5": pct(multi), "multi_n": len(multi), "single_hit@1": pct(single),
            "single_n": len(single), "hit@1": pct(first)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--test", action="store_true", help="the test sets, default against split_weight 0")
    args = parser.parse_args()
    if args.test:
        sets = {"sealtools-test": lambda: catalogue_rows("sealtools", "queries.jsonl"),
                "metatool-multi": lambda: catalogue_rows("metatool", "queries_multi.jsonl"),
                "metatool-single-test": lambda: catalogue_rows("metatool", "queries_single_test.jsonl"),
                "corpora-test": lambda: corpus_rows("corpora-test")}
        weights = [0.0, RouterConfig().split_weight]
    else:
        sets = {"sealtools-dev": lambda: catalogue_rows("sealtools", "dev.jsonl"),
                "corpora-dev": lambda: corpus_rows("corpora-dev"),
                "users-corpora-dev": lambda: corpus_rows("users-corpora-dev"),
                "metatool-single-dev-1500": lambda: catalogue_rows("metatool", "queries_single_dev.jsonl", 1500)}
        weights = [0.0, 0.25, 0.5, 1.0]
    results: dict[str, Any] = {}
    for name, build in sets.items():
        router, rows = build()
        for weight in weights:
            value = measure(router, rows, weight)
            results.setdefault(name, {})[str(weight)] = value
            print(f"{name:26} split_weight {weight:4}: multi R@5 {value['multi_recall@5']} (n={value['multi_n']}), "
                  f"single hit@1 {value['single_hit@1']} (n={value['single_n']}), hit@1 {value['hit@1']}",
                  flush=True)
    save("multi_split-test" if args.test else "multi_split", {"results": results})


if __name__ == "__main__":
    main()
