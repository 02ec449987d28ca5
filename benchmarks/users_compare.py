"""Paired comparison of two runs of benchmarks/users.py, group by group (dev only).

    python benchmarks/users.py --set glosses=false --name users-no-glosses
    python benchmarks/users.py --name users
    python benchmarks/users_compare.py users-no-glosses users        # B minus A, per library and group

Per library, for the single-skill requests of each group (all, zh, en, vocab, twin, ...): hit@1, hit@5 and MRR
of A and B, and the paired bootstrap of B minus A (``router.evaluation.stats.paired_comparison``: mean difference
in points, its 95% interval, p, requests won / lost), as benchmarks/README.md reports them. Multi-skill requests
count in ``multi`` only, and no-skill requests in the share given nothing (with the paired bootstrap of the
decisions, for the first file and for the requests added for that decision when both runs have them).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from common import ROOT
from router.evaluation.stats import paired_comparison

RESULTS = ROOT / "benchmarks" / "results"


def measures(first: int | None) -> dict[str, float]:
    return {"hit@1": float(first == 1), "hit@5": float(first is not None and first <= 5),
            "mrr": 1.0 / first if first and first <= 10 else 0.0}


def compare(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    lines = []
    rows_b = {d["id"]: d for d in b["details"]}
    groups: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for row in a["details"]:
        other = rows_b.get(row["id"])
        if other is None or row["kind"] == "none" or row.get("set", "first") != "first":
            continue
        for group in row["groups"]:
            if group == "single" or (row["kind"] == "multi" and group != "multi"):
                continue
            groups.setdefault(group, []).append((row, other))
    for group in sorted(groups, key=lambda g: (g != "all", g)):
        pairs = groups[group]
        cells = []
        for measure in ("hit@1", "hit@5", "mrr"):
            x = [measures(p["first_gold"])[measure] for p, _ in pairs]
            y = [measures(q["first_gold"])[measure] for _, q in pairs]
            test = paired_comparison(x, y)
            cells.append(f"{measure} {100 * sum(x) / len(x):5.1f} -> {100 * sum(y) / len(y):5.1f} "
                         f"({100 * test.mean_diff:+.1f} [{100 * test.low:+.1f}, {100 * test.high:+.1f}], "
                         f"p = {test.p_value:.2g}, {test.wins}/{test.losses})")
        lines.append(f"  {group:9} n={len(pairs):3}  " + "; ".join(cells))
    for name in ("first", "added"):
        shared = [p for p in a["details"] if p.get("set", "first") == name and p["id"] in rows_b]
        nones = [(p["dropped"], rows_b[p["id"]]["dropped"]) for p in shared if p["kind"] == "none"]
        singles = [(p["dropped"], rows_b[p["id"]]["dropped"]) for p in shared if p["kind"] == "single"]
        if not nones or not singles:
            continue
        given = paired_comparison([float(x) for x, _ in nones], [float(y) for _, y in nones])
        kept = paired_comparison([float(not x) for x, _ in singles], [float(not y) for _, y in singles])
        lines.append(f"  {name} requests: no-skill given nothing {100 * sum(x for x, _ in nones) / len(nones):.1f}% -> "
                     f"{100 * sum(y for _, y in nones) / len(nones):.1f}% of {len(nones)} (p = {given.p_value:.2g}); "
                     f"single wrongly dropped {100 * sum(x for x, _ in singles) / len(singles):.1f}% -> "
                     f"{100 * sum(y for _, y in singles) / len(singles):.1f}% of {len(singles)} "
                     f"(p = {kept.p_value:.2g})")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", help="results name of the first run (benchmarks/results/A.json)")
    parser.add_argument("b", help="results name of the second run")
    args = parser.parse_args()
    a, b = (json.loads((RESULTS / f"{name}.json").read_text())["results"] for name in (args.a, args.b))
    for library in a:
        if library in b:
            print(f"{library}: {args.b} minus {args.a} (single-skill requests; won/lost)")
            print("\n".join(compare(a[library], b[library])))


if __name__ == "__main__":
    main()
