"""ToolLens (Qu et al., CIKM 2024, "Towards Completeness-Oriented Tool Retrieval"): recall@5 of every retriever.

    python benchmarks/toollens.py --data <COLT checkout>/datasets/ToolLens            # the test queries
    python benchmarks/toollens.py --data <COLT checkout>/datasets/ToolLens --dev      # 2,000 train queries
    python benchmarks/toollens.py --data <COLT checkout>/datasets/ToolLens --examples # test, those as examples
    python benchmarks/toollens.py --data <COLT checkout>/datasets/ToolLens --dev --mmr 0.5 1 2   # a spread top 5

ToolLens is not in ``../shared/datasets``; it ships in the COLT repository (github.com/quchangle1/COLT, folder
``datasets/ToolLens``, BEIR layout: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/{train,test}.tsv``). 464 RapidAPI
endpoints; 1,877 test queries, each needing 2.7 endpoints on average ("I'm planning a keto meal with cucumbers.":
a recipe search, a grocery search and a nutrition endpoint). Each endpoint becomes a catalogue row of its name and
description only, like the MetaTool and Seal-Tools rows: name "<tool_name>: <api_name>", description its
``api_description``; the category, parameters and return schema are left out. The test queries are the published
test split (its ``tune`` files are the same); ``--dev`` takes the first 2,000 train queries by id instead, the split
to choose anything on; ``--examples`` scores the test queries with those 2,000 train queries as examples of their
endpoints (the router's example signal, as ``skill-router learn`` or ``eval --examples`` give it). The converted
files and the index go to a temporary folder; nothing of the dataset is written into the repository. Writes
benchmarks/results/toollens[-dev|-examples].json (the eval JSON schema). ``--mmr P ...`` instead ranks the chosen
queries' top 5 by maximal marginal relevance at each penalty (``diverse_choice.py``'s rule over the fused best 20)
and prints recall@5 against penalty 0 with the requests won and lost (results/toollens[-dev]-mmr.json).
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from accuracy import evaluated, examples_from
from common import save
from router import Router
from router.config import RouterConfig
from router.evaluation import load_requests
from router.evaluation.report import print_table

RETRIEVERS = ("bm25", "dense", "rrf", "default")
DEV_QUERIES = 2000
_FIELD = "category_name|tool_name|api_name|api_description|required_params"


def fields(text: str) -> dict[str, str]:
    """The ``key:value`` fields of a corpus row's text ("category_name:Food, tool_name:..., api_name:...")."""
    found = re.finditer(rf"(?:^|, )({_FIELD}):", text)
    starts = [(m.group(1), m.start(), m.end()) for m in found]
    return {key: text[end:(starts[i + 1][1] if i + 1 < len(starts) else len(text))].strip()
            for i, (key, _, end) in enumerate(starts)}


def catalogue(data: Path, folder: Path) -> Path:
    """The endpoints as catalogue rows of name and description, written in ``folder``."""
    tools = folder / "tools.jsonl"
    with open(data / "corpus.jsonl", encoding="utf-8") as rows, open(tools, "w", encoding="utf-8") as out:
        for line in rows:
            row = json.loads(line)
            f = fields(row["text"])
            out.write(json.dumps({"id": f"t{row['_id']}", "name": f"{f['tool_name']}: {f['api_name']}",
                                  "description": f["api_description"]}) + "\n")
    return tools


def labelled(data: Path, folder: Path, dev: bool, file: str = "requests.jsonl") -> Path:
    """The test queries, or (``dev``) the first :data:`DEV_QUERIES` train queries, as labelled requests in
    ``folder / file``."""
    with open(data / "queries.jsonl", encoding="utf-8") as rows:
        queries = {q["_id"]: q["text"] for q in map(json.loads, rows)}
    gold: dict[str, list[str]] = defaultdict(list)
    with open(data / "qrels" / ("train.tsv" if dev else "test.tsv"), encoding="utf-8") as rows:
        for query, tool, _ in list(csv.reader(rows, delimiter="\t"))[1:]:
            gold[query].append(f"t{tool}")
    chosen = sorted(gold, key=int)[:DEV_QUERIES] if dev else sorted(gold, key=int)
    requests = folder / file
    with open(requests, "w", encoding="utf-8") as out:
        for query in chosen:
            out.write(json.dumps({"id": f"q{query}", "query": queries[query], "gold": gold[query]}) + "\n")
    return requests


def convert(data: Path, folder: Path, dev: bool) -> tuple[Path, Path]:
    """The catalogue and the chosen split's labelled requests, written in ``folder``; exits naming what ``data``
    lacks when it is not a ToolLens folder."""
    missing = [part for part in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "qrels/train.tsv")
               if not (data / part).is_file()]
    if missing:
        sys.exit(f"toollens.py: {data} has no {', '.join(missing)}: give --data the datasets/ToolLens folder of a "
                 "COLT checkout (github.com/quchangle1/COLT)")
    return catalogue(data, folder), labelled(data, folder, dev)


def catalogue_router(tools: Path, folder: Path) -> Router:
    return Router.from_catalog(tools, config=RouterConfig(route_above=0), index_folder=str(folder / "index"))


def spread(data: Path, dev: bool, penalties: list[float]) -> None:
    """Recall@5 of the top 5 chosen by maximal marginal relevance at each penalty, against penalty 0."""
    from diverse_choice import outcomes

    with tempfile.TemporaryDirectory(prefix="toollens-") as folder:
        tools, requests = convert(data, Path(folder), dev)
        router = catalogue_router(tools, Path(folder))
        rows = [(r.query, [{g} for g in r.gold]) for r in load_requests(requests)]
        scored = router.score_many([q for q, _ in rows])
        fused = router.fuse(scored)
        base = outcomes(router, rows, scored, fused, 0.0)
        result = {"0.0": {"recall@5": round(100 * float(base[:, 1].mean()), 2)}}
        for penalty in penalties:
            values = outcomes(router, rows, scored, fused, penalty)
            diff = values[:, 1] - base[:, 1]
            result[str(penalty)] = {"recall@5": round(100 * float(values[:, 1].mean()), 2),
                                    "won": int((diff > 0).sum()), "lost": int((diff < 0).sum())}
    for penalty, row in result.items():
        print(f"penalty {penalty:5} {row}")
    save(f"toollens{'-dev' if dev else ''}-mmr", {"penalties": penalties, "results": result})


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="the datasets/ToolLens folder of a COLT checkout")
    chosen = parser.add_mutually_exclusive_group()
    chosen.add_argument("--dev", action="store_true", help=f"the first {DEV_QUERIES:,} train queries, not test")
    chosen.add_argument("--examples", action="store_true",
                        help=f"test, with the first {DEV_QUERIES:,} train queries as examples of their endpoints")
    parser.add_argument("--mmr", nargs="+", type=float, metavar="PENALTY",
                        help="recall@5 of a top 5 spread by maximal marginal relevance at these penalties")
    args = parser.parse_args()
    if args.mmr:
        spread(args.data, args.dev, args.mmr)
        return
    names = ("default-no-examples", "default") if args.examples else RETRIEVERS
    with tempfile.TemporaryDirectory(prefix="toollens-") as folder:
        tools, chosen = convert(args.data, Path(folder), args.dev)
        router = catalogue_router(tools, Path(folder))
        known = {s.id for s in router.skills}
        if args.examples:
            dev = labelled(args.data, Path(folder), True, "examples.jsonl")
            router = router.with_examples(examples_from(load_requests(dev, known_ids=known)), persist=False)
        result = evaluated(router, load_requests(chosen, known_ids=known), names,
                           [(a, "default") for a in names if a != "default"])
    name = "toollens-dev" if args.dev else "toollens-examples" if args.examples else "toollens"
    print(f"\n== {name}")
    print_table(result)
    save(name, {"setup": name, "eval": result.to_json()})


if __name__ == "__main__":
    main()
