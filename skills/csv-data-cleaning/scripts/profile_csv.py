"""Profile a CSV file using only the standard library.

Usage: python profile_csv.py FILE.csv [--max-rows N]

Prints the detected encoding and delimiter, the row count, rows with the wrong number of fields, and per
column: blanks, distinct values, an inferred type and up to three example values.
"""
from __future__ import annotations

import argparse
import csv
import re
import sys
from collections import Counter
from pathlib import Path

BLANKS = {"", "na", "n/a", "null", "none", "-", "nan"}
PATTERNS = [
    ("integer", re.compile(r"^[+-]?\d+$")),
    ("decimal", re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+|\d{1,3}(,\d{3})+(\.\d+)?)$")),
    ("date", re.compile(r"^(\d{4}-\d{2}-\d{2}|\d{1,2}[/.]\d{1,2}[/.]\d{2,4})$")),
    ("datetime", re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}")),
    ("boolean", re.compile(r"^(true|false|yes|no|y|n)$", re.IGNORECASE)),
]


def detect_encoding(raw: bytes) -> str:
    if raw.startswith(b"\xef\xbb\xbf"):
        return "utf-8-sig"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return "cp1252"
    return "utf-8"


def detect_delimiter(text: str, candidates: str = ",;\t|") -> str:
    """Pick the delimiter giving the most columns with the most consistent row width.

    csv.Sniffer is easily fooled by commas inside values (1,200.50 in a semicolon file), so each candidate
    is scored on the first 200 lines: the share of rows whose width equals the header's width, for headers
    with more than one column.
    """
    sample = text.splitlines()[:200]
    best, best_score = ",", (-1.0, 0)
    for candidate in candidates:
        rows = list(csv.reader(sample, delimiter=candidate))
        if not rows or len(rows[0]) < 2:
            continue
        width = len(rows[0])
        consistent = sum(len(r) == width for r in rows) / len(rows)
        score = (consistent, width)
        if score > best_score:
            best, best_score = candidate, score
    return best


def infer_type(values: list[str]) -> str:
    if not values:
        return "empty"
    for name, pattern in PATTERNS:
        if all(pattern.match(v) for v in values):
            return name
    return "text"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--max-rows", type=int, default=1_000_000)
    args = parser.parse_args()

    raw = args.path.read_bytes()
    encoding = detect_encoding(raw)
    text = raw.decode(encoding, errors="replace")
    delimiter = detect_delimiter(text)
    rows = csv.reader(text.splitlines(), delimiter=delimiter)
    header = next(rows, None)
    if header is None:
        print("file is empty")
        return 1

    width = len(header)
    columns: list[list[str]] = [[] for _ in header]
    blanks = [0] * width
    bad_rows: list[int] = []
    count = 0
    for line_no, row in enumerate(rows, start=2):
        if count >= args.max_rows:
            break
        count += 1
        if len(row) != width:
            bad_rows.append(line_no)
        for i in range(min(width, len(row))):
            value = row[i].strip()
            if value.lower() in BLANKS:
                blanks[i] += 1
            else:
                columns[i].append(value)

    print(f"file:      {args.path}")
    print(f"encoding:  {encoding}")
    print(f"delimiter: {delimiter!r}")
    print(f"rows:      {count} (header excluded)")
    if bad_rows:
        shown = ", ".join(map(str, bad_rows[:10]))
        print(f"WARNING {len(bad_rows)} rows do not have {width} fields, e.g. lines {shown}")
    duplicates = [name for name, n in Counter(h.strip().lower() for h in header).items() if n > 1]
    if duplicates:
        print(f"WARNING duplicate column names: {duplicates}")
    print()
    print(f"{'column':<28}{'type':<10}{'blank':>7}{'distinct':>10}  examples")
    for name, values, blank in zip(header, columns, blanks):
        distinct = Counter(values)
        examples = ", ".join(v for v, _ in distinct.most_common(3))
        print(f"{name[:27]:<28}{infer_type(values):<10}{blank:>7}{len(distinct):>10}  {examples[:60]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
