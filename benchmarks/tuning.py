"""What `skill-router tune` picks on MetaTool dev, and how it holds up on test.

    python benchmarks/tuning.py

Tuning set: the 4,212 single-tool dev requests plus the even-numbered no-tool requests (for the abstention
threshold), with the dev requests as cross-validated examples (5 folds, seed 0). Held out: the 16,338 test
requests plus the odd-numbered no-tool requests; there every dev request is an example. Writes
benchmarks/results/tuning.json.
"""

from __future__ import annotations

import time

from accuracy import MT, notool_split
from common import RESULTS, save
from router import Router
from router.config import RouterConfig
from router.evaluation import load_requests
from router.tune import tune


def main() -> None:
    router = Router.from_catalog(MT / "tools.jsonl", config=RouterConfig(route_above=0),
                                 index_folder=str(RESULTS.parent / ".index" / "metatool"))
    dev = load_requests(MT / "queries_single_dev.jsonl") + notool_split(0)
    test = load_requests(MT / "queries_single_test.jsonl") + notool_split(1)
    start = time.perf_counter()
    result = tune(router, dev, folds=5, seed=0, examples_from_requests=True, held_out=test)
    payload = result.to_json()
    payload.pop("grid", None)
    payload["seconds"] = round(time.perf_counter() - start, 1)
    print(payload)
    save("tuning", {"tune": payload})


if __name__ == "__main__":
    main()
