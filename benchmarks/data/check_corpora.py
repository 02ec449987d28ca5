"""Check the labelled requests over the real skill libraries and print their counts.

    python3 benchmarks/data/check_corpora.py [--markdown]

Checks that every gold path names a folder with a SKILL.md under the corpora (../shared/corpora, or
$SKILL_ROUTER_SHARED/corpora), that ids are unique across dev and test and no request is repeated, that each row's
kind agrees with its gold (single: one need, multi: two or more disjoint needs, none: empty gold), and that the set
meets its minimums. Prints the counts per split by kind, language and corpus folder. Reads files only.
"""

from __future__ import annotations

import collections
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CORPORA = Path(os.environ.get("SKILL_ROUTER_SHARED", ROOT.parent / "shared")) / "corpora"
FILES = {"dev": HERE / "corpora-dev.jsonl", "test": HERE / "corpora-test.jsonl"}
FOLDERS = ("anthropic-skills", "scientific-skills", "awesome-skills")
KINDS = ("single", "multi", "none")
LANGS = ("en", "zh", "es", "de", "fr", "ja", "pt")
MINIMUM = {"total": 240, "multi": 36, "none": 24, "non-English": 24}


def load() -> dict[str, list[dict]]:
    out = {}
    for name, path in FILES.items():
        with path.open(encoding="utf-8") as f:
            out[name] = [json.loads(line) for line in f if line.strip()]
    return out


def errors_in(rows: list[dict]) -> list[str]:
    errs = []
    ids = collections.Counter(r.get("id") for r in rows)
    errs += [f"duplicate id {i}" for i, n in ids.items() if n > 1]
    queries = collections.Counter(r.get("query", "").strip().lower() for r in rows)
    errs += [f"duplicate query {q!r}" for q, n in queries.items() if n > 1]
    for r in rows:
        rid = r.get("id")
        if not isinstance(r.get("query"), str) or not r["query"].strip():
            errs.append(f"{rid}: empty query")
        if r.get("lang") not in LANGS:
            errs.append(f"{rid}: lang {r.get('lang')!r}")
        gold = r.get("gold")
        if not isinstance(gold, list) or len(gold) != len(set(gold)):
            errs.append(f"{rid}: gold must be a list without repeats")
            continue
        for g in gold:
            p = CORPORA / g
            if g != os.path.normpath(g) or g.startswith(("/", "..")) or g.split("/", 1)[0] not in FOLDERS:
                errs.append(f"{rid}: gold {g!r} is not a plain path inside a corpus folder")
            elif not (p.is_dir() and (p / "SKILL.md").is_file()):
                errs.append(f"{rid}: gold {g!r} has no SKILL.md under {CORPORA}")
        kind, needs = r.get("kind"), r.get("needs")
        if kind == "none" and gold:
            errs.append(f"{rid}: kind none with gold")
        elif kind == "single" and (not gold or needs is not None):
            errs.append(f"{rid}: kind single needs gold and no 'needs'")
        elif kind == "multi":
            flat = [g for grp in needs or [] for g in grp]
            if len(needs or []) < 2 or not all(needs) or flat != gold or len(flat) != len(set(flat)):
                errs.append(f"{rid}: multi needs 2+ disjoint non-empty needs whose union, in order, is gold")
        elif kind not in KINDS:
            errs.append(f"{rid}: kind {kind!r}")
    return errs


def folders(row: dict) -> list[str]:
    return sorted({g.split("/", 1)[0] for g in row["gold"]}) or ["none"]


def table(splits: dict[str, list[dict]], markdown: bool) -> str:
    cols = list(splits) + ["all"]
    splits = dict(splits, all=[r for rows in splits.values() for r in rows])
    lines = []

    def row(label: str, fn) -> None:
        vals = [str(sum(1 for r in splits[c] if fn(r))) for c in cols]
        lines.append(f"| {label} | " + " | ".join(vals) + " |" if markdown
                     else f"{label:<40}" + "".join(f"{v:>7}" for v in vals))

    lines.append("| | " + " | ".join(cols) + " |" if markdown else f"{'':<40}" + "".join(f"{c:>7}" for c in cols))
    if markdown:
        lines.append("|---|" + "---|" * len(cols))
    row("requests", lambda r: True)
    for k in KINDS:
        row(f"kind {k}", lambda r, k=k: r["kind"] == k)
    for lang in LANGS:
        row(f"lang {lang}", lambda r, lang=lang: r["lang"] == lang)
    row("not English", lambda r: r["lang"] != "en")
    for f in FOLDERS:
        row(f"gold in {f}/", lambda r, f=f: f in folders(r))
    for f in FOLDERS:
        row(f"multi with gold in {f}/", lambda r, f=f: r["kind"] == "multi" and f in folders(r))
    row("multi with gold in 2+ folders", lambda r: r["kind"] == "multi" and len(folders(r)) > 1)
    row("single with 2+ equally serving gold", lambda r: r["kind"] == "single" and len(r["gold"]) > 1)
    return "\n".join(lines)


def main() -> int:
    splits = load()
    rows = [r for part in splits.values() for r in part]
    errs = errors_in(rows)
    counts = {"total": len(rows), "multi": sum(r["kind"] == "multi" for r in rows),
              "none": sum(r["kind"] == "none" for r in rows), "non-English": sum(r["lang"] != "en" for r in rows)}
    errs += [f"{k}: {counts[k]} < {m}" for k, m in MINIMUM.items() if counts[k] < m]
    skills = {g for r in rows for g in r["gold"]}
    print(table(splits, "--markdown" in sys.argv))
    print(f"\n{len(skills)} distinct gold skills; corpora at {CORPORA}")
    for e in errs:
        print("ERROR", e)
    print("ok" if not errs else f"{len(errs)} errors")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
