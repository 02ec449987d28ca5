"""Routing accuracy and "no skill fits" on the requests written as users write them (dev only).

    python benchmarks/users.py                 # both libraries, the default router
    python benchmarks/users.py --only corpora  # the ~700 corpus skills only
    python benchmarks/users.py --set glosses=false --name users-no-glosses   # one setting changed

Requests: benchmarks/data/users-{corpora,bundled}-dev.jsonl (see benchmarks/data/USERS.md), and the requests added
for the "no skill fits" decision, users-*-dev-abstain.jsonl and users-*-dev-tasks.jsonl. The corpus library is
loaded as in real_libraries.py (three roots, agentskills profile); the bundled one is skills/. Reports, per
library, over the first file: hit@1, hit@5 and MRR over single-skill requests, the same per tag (vocab, twin,
typo, follow-up) and for Chinese requests, multi-skill recall@5 (share of needs met in the top 5); and the
abstention decision of the surfaces in front of an agent (``router.abstain``) over the first file, each added one
and all: share of no-skill requests given nothing, share of single-skill requests wrongly given nothing. Writes
benchmarks/results/users.json, with each request's set and abstention features (``Router.no_skill_features``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from common import CORPORA, ROOT, corpus_folder, parsed_config, read_jsonl, save
from router import Router
from router.config import RouterConfig

DATA = ROOT / "benchmarks" / "data"
SETS = {"first": "", "added": "-abstain", "tasks": "-tasks"}  # the file suffixes: users-LIBRARY-dev{suffix}.jsonl
ROOTS = [CORPORA / "anthropic-skills/skills", CORPORA / "scientific-skills/scientific-skills",
         CORPORA / "awesome-skills/skills"]
INDEX = Path("/tmp/skill-router-users-bench")


def load(library: str, config: RouterConfig) -> tuple[Router, dict[str, str]]:
    if library == "corpora":
        router = Router.from_skills([str(r) for r in ROOTS], "agentskills", config,
                                    index_folder=str(INDEX / "corpora"))
        return router, {corpus_folder(s.path): s.id for s in router.skills}
    router = Router.from_skills([str(ROOT / "skills")], "agentskills", config, index_folder=str(INDEX / "bundled"))
    return router, {s.name: s.id for s in router.skills}


def query_of(row: dict[str, Any]) -> Any:
    return row["messages"] if row.get("messages") else row["query"]


def per_request(ranking: list[str], gold: set[str], needs: list[set[str]] | None) -> dict[str, float]:
    first = next((i + 1 for i, ident in enumerate(ranking) if ident in gold), None)
    out = {"hit@1": float(first == 1), "hit@5": float(first is not None and first <= 5),
           "mrr": 1.0 / first if first and first <= 10 else 0.0}
    if needs:
        top = set(ranking[:5])
        out["multi_recall@5"] = sum(bool(need & top) for need in needs) / len(needs)
    return out


def mean(values: list[float]) -> float | None:
    return round(100 * float(np.mean(values)), 1) if values else None


def evaluate(library: str, config: RouterConfig, rank: Any = None) -> dict[str, Any]:
    """``rank(router, queries, k)``: the rankings to score (default: ``router.route_many``)."""
    rows = [{**row, "set": name} for name, suffix in SETS.items()
            for row in read_jsonl(DATA / f"users-{library}-dev{suffix}.jsonl")]
    router, by_key = load(library, config)
    queries = [query_of(r) for r in rows]
    start = time.perf_counter()
    if rank is None:
        routings = router.route_many(queries, k=10)
        rankings = [[m.id for m in r.matches] for r in routings]
        dropped = [r.abstained or r.no_skill for r in routings]
        conf = [r.confidence for r in routings]
    else:
        rankings, dropped, conf = rank(router, queries, 10)
    seconds = time.perf_counter() - start
    features = router.no_skill_features(router.score_many(queries))
    metrics: dict[str, list[dict[str, float]]] = {}
    singles: dict[str, list[bool]] = {name: [] for name in SETS}
    nones: dict[str, list[bool]] = {name: [] for name in SETS}
    details = []
    for row, ranking, gone, sure, numbers in zip(rows, rankings, dropped, conf, features, strict=True):
        gold = {by_key[g] for g in row["gold"] if g in by_key}
        needs = [{by_key[p] for p in need if p in by_key} for need in row["needs"]] if row.get("needs") else None
        first = next((i + 1 for i, ident in enumerate(ranking) if ident in gold), None)
        details.append({"id": row["id"], "kind": row["kind"], "set": row["set"], "dropped": bool(gone),
                        "confidence": round(sure, 4), "features": [round(float(v), 4) for v in numbers],
                        "top": ranking[:5], "first_gold": first,
                        "groups": ["all"] + row.get("tags", []) + [row["lang"]] + [row["kind"]]})
        if row["kind"] == "none":
            nones[row["set"]].append(bool(gone))
            continue
        if row["kind"] == "single":
            singles[row["set"]].append(bool(gone))
        if row["set"] != "first":
            continue
        value = per_request(ranking, gold, needs)
        groups = ["all"] + row.get("tags", []) + ([row["lang"]] if row["lang"] in ("en", "zh") else [])
        if row["kind"] == "single":
            groups.append("single")
        for group in groups:
            metrics.setdefault(group, []).append(value)
    table = {group: {"n": len(values), **{m: mean([v[m] for v in values if m in v])
                                          for m in ("hit@1", "hit@5", "mrr", "multi_recall@5")}}
             for group, values in metrics.items()}
    both = {"none": [x for v in nones.values() for x in v], "single": [x for v in singles.values() for x in v]}
    abstention = {name: {"none_given_nothing": mean([float(x) for x in nones[name]]), "none_n": len(nones[name]),
                         "single_wrongly_dropped": mean([float(x) for x in singles[name]]),
                         "single_n": len(singles[name])} for name in SETS}
    abstention["both"] = {"none_given_nothing": mean([float(x) for x in both["none"]]), "none_n": len(both["none"]),
                          "single_wrongly_dropped": mean([float(x) for x in both["single"]]),
                          "single_n": len(both["single"])}
    return {"library": library, "skills": len(router.skills), "requests": len(rows), "table": table,
            **abstention["first"], "abstention": abstention,
            "route_ms_per_request": round(1000 * seconds / len(rows), 2), "details": details}


def show(result: dict[str, Any]) -> None:
    print(f"{result['library']}: {result['requests']} requests, {result['skills']} skills, "
          f"{result['route_ms_per_request']} ms per request in one batch")
    print(f"  {'group':10} {'n':>4} {'hit@1':>6} {'hit@5':>6} {'MRR':>6} {'multi R@5':>9}")
    for group, row in sorted(result["table"].items(), key=lambda kv: (kv[0] != "single", kv[0] != "all", kv[0])):
        cells = [f"{row[m]:6.1f}" if row[m] is not None else "     -" for m in ("hit@1", "hit@5", "mrr")]
        multi = f"{row['multi_recall@5']:9.1f}" if row["multi_recall@5"] is not None else "        -"
        print(f"  {group:10} {row['n']:4} " + " ".join(cells) + f" {multi}")
    for name, row in result["abstention"].items():
        print(f"  {name + ' requests:':16} no-skill given nothing {row['none_given_nothing']}% of {row['none_n']}; "
              f"single-skill wrongly given nothing {row['single_wrongly_dropped']}% of {row['single_n']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("corpora", "bundled"))
    parser.add_argument("--name", default="users", help="results file name (benchmarks/results/NAME.json)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=JSON",
                        help="a config change from the default, e.g. glosses=false or split_weight=0 (repeatable)")
    args = parser.parse_args()
    _, config = parsed_config(parser, args.set)
    results = {}
    for library in ([args.only] if args.only else ["corpora", "bundled"]):
        results[library] = evaluate(library, config)
        show(results[library])
    save(args.name, {"results": results})


if __name__ == "__main__":
    main()
