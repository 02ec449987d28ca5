"""Split the labelled requests over the real skill libraries into corpora-dev.jsonl and corpora-test.jsonl.

    python3 benchmarks/data/split_corpora.py                 # re-split the union of the two files
    python3 benchmarks/data/split_corpora.py --check         # exit 1 if the files are not what the split gives
    python3 benchmarks/data/split_corpora.py --from all.jsonl  # split a new set of rows

The split depends only on the ids, kinds and languages of the rows, not on their gold or the order they are read
in: rows are pooled and sorted by id, grouped into strata by (kind, lang), and each stratum is shuffled with
random.Random(12) (one generator, strata taken in sorted order) and dealt alternately to dev and test, starting
with the file that so far has fewer rows of that language, then of that kind, then in all (dev on a tie). Every
stratum is therefore split as evenly as its size allows, correcting a gold list (without changing the row's kind)
never moves the row to the other file, and the union of the two files re-splits to the same two files. Plain
Python; no routing is involved.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEV = HERE / "corpora-dev.jsonl"
TEST = HERE / "corpora-test.jsonl"
SEED = 12
FIELDS = ("id", "query", "gold", "lang", "kind", "needs", "note")


def read(paths: list[Path]) -> list[dict]:
    rows = []
    for path in paths:
        with path.open(encoding="utf-8") as f:
            rows.extend(json.loads(line) for line in f if line.strip())
    return rows


def split(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    rows = sorted(rows, key=lambda r: r["id"])
    ids = [r["id"] for r in rows]
    if len(ids) != len(set(ids)):
        raise SystemExit("duplicate ids")
    strata: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        strata.setdefault((r["kind"], r["lang"]), []).append(r)
    rng = random.Random(SEED)
    dev: list[dict] = []
    test: list[dict] = []
    for key in sorted(strata):
        group = strata[key]
        rng.shuffle(group)
        kind, lang = key
        sides = (dev, test)
        turn = min((0, 1), key=lambda i: (sum(r["lang"] == lang for r in sides[i]),
                                          sum(r["kind"] == kind for r in sides[i]), len(sides[i]), i))
        for r in group:
            sides[turn].append(r)
            turn ^= 1
    return sorted(dev, key=lambda r: r["id"]), sorted(test, key=lambda r: r["id"])


def dumps(rows: list[dict]) -> str:
    return "".join(json.dumps({k: r[k] for k in FIELDS if k in r}, ensure_ascii=False) + "\n" for r in rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--from", dest="source", type=Path, nargs="+", help="rows to split (default: the two files)")
    ap.add_argument("--check", action="store_true", help="only compare the files with the split")
    args = ap.parse_args()
    rows = read(args.source or [DEV, TEST])
    dev, test = split(rows)
    if args.check:
        same = DEV.read_text(encoding="utf-8") == dumps(dev) and TEST.read_text(encoding="utf-8") == dumps(test)
        print("split reproduces the files" if same else "files differ from the split")
        return 0 if same else 1
    DEV.write_text(dumps(dev), encoding="utf-8")
    TEST.write_text(dumps(test), encoding="utf-8")
    print(f"{DEV.name}: {len(dev)} rows, {TEST.name}: {len(test)} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
