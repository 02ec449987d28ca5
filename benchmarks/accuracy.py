"""Routing accuracy on MetaTool and Seal-Tools for every retriever, beside the published baselines.

    python benchmarks/accuracy.py            # all setups (about 15 minutes on 2 cores)
    python benchmarks/accuracy.py metatool-test sealtools

Setups (tuning only ever touches dev splits):
- metatool-dev / metatool-test: single-tool requests, no examples.
- metatool-multi: the 497 two-tool requests.
- metatool-abstention: the abstention threshold is tuned (best F1) on single dev + the even-numbered no-tool
  requests, then applied to single test + the odd-numbered no-tool requests.
- metatool-examples-dev: all dev requests as examples of their tools, scored on test.
- metatool-examples-5: 5 dev requests per tool (the first 5 by id order in the file) as examples, on test.
- sealtools: the 1,354 test requests (dev is used only for choosing defaults).
Each writes benchmarks/results/accuracy-<setup>.json (the eval JSON schema) and prints the table.
"""

from __future__ import annotations

import sys
from pathlib import Path

from common import DATASETS, RESULTS, save
from router import Router
from router.evaluation.retrievers import retrievers_for
from router.config import RouterConfig
from router.evaluation import evaluate, load_requests
from router.evaluation.metrics import best_threshold
from router.evaluation.report import print_table

MT = DATASETS / "metatool"
SEAL = DATASETS / "sealtools"


def evaluated(router: Router, requests, names, compare, thresholds=None):
    """The evaluation of ``names`` over ``requests`` (top 10, a routed catalogue of 5, paired tests ``compare``)."""
    retrievers = retrievers_for(router, requests, names, depth=10)
    return evaluate(requests, retrievers, render=lambda ids: router.profile.render(
        [s for s in router.skills if s.id in set(ids)]), catalogue=[s.id for s in router.skills], route_k=5,
        thresholds=thresholds or {}, progress=False, compare=compare)


def run(name: str, tools: Path, requests, names=("bm25", "dense", "rrf", "default"), examples=None,
        thresholds=None) -> dict:
    router = Router.from_catalog(tools, config=RouterConfig(route_above=0),
                                 index_folder=str(RESULTS.parent / ".index" / tools.parent.name))
    if examples:
        router = router.with_examples(examples)
        names = ("bm25", "dense", "rrf", "default-no-examples", "default")
    result = evaluated(router, requests, names, [
        (a, b) for a, b in (("dense", "default"), ("bm25", "default"), ("default-no-examples", "default"))
        if a in names and b in names], thresholds)
    print(f"\n== {name}")
    print_table(result)
    payload = result.to_json()
    save(f"accuracy-{name}", {"setup": name, "eval": payload})
    return payload


def examples_from(requests, per_tool: int | None = None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for request in requests:
        for gold in request.gold:
            if per_tool is None or len(out.get(gold, [])) < per_tool:
                out.setdefault(gold, []).append(request.query)
    return out


def notool_split(parity: int):
    rows = [r for r in load_requests(MT / "queries_notool.jsonl")]
    return [r for r in rows if int(r.id.lstrip("n")) % 2 == parity]


def main(selected: list[str]) -> None:
    dev = load_requests(MT / "queries_single_dev.jsonl")
    test = load_requests(MT / "queries_single_test.jsonl")
    setups = {
        "metatool-dev": lambda: run("metatool-dev", MT / "tools.jsonl", dev),
        "metatool-test": lambda: run("metatool-test", MT / "tools.jsonl", test),
        "metatool-multi": lambda: run("metatool-multi", MT / "tools.jsonl", load_requests(MT / "queries_multi.jsonl")),
        "metatool-abstention": lambda: abstention(dev, test),
        "metatool-examples-dev": lambda: run("metatool-examples-dev", MT / "tools.jsonl", test,
                                             examples=examples_from(dev)),
        "metatool-examples-5": lambda: run("metatool-examples-5", MT / "tools.jsonl", test,
                                           examples=examples_from(dev, 5)),
        "sealtools": lambda: run("sealtools", SEAL / "tools.jsonl", load_requests(SEAL / "queries.jsonl")),
    }
    for name in selected or list(setups):
        setups[name]()


def abstention(dev, test) -> None:
    router = Router.from_catalog(MT / "tools.jsonl", config=RouterConfig(route_above=0),
                                 index_folder=str(RESULTS.parent / ".index" / "metatool"))
    tune_set = dev + notool_split(0)
    ranked = retrievers_for(router, tune_set, ["default"], depth=1)["default"]
    threshold = best_threshold([ranked(r)[0][1] for r in tune_set], [bool(r.gold) for r in tune_set])
    print(f"threshold tuned on dev + even no-tool requests: {threshold:.4f}")
    run("metatool-abstention", MT / "tools.jsonl", test + notool_split(1), names=("default",),
        thresholds={"default": threshold})


if __name__ == "__main__":
    main(sys.argv[1:])
