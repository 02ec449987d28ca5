"""Group similar log lines into patterns and count them.

Usage:
    python top_errors.py FILE [FILE ...] [--level ERROR] [--top 20]
    zcat app.log.gz | python top_errors.py - --top 20

Variable parts (timestamps, UUIDs, hex strings, IP addresses, numbers, quoted values) are replaced with
placeholders so that "user 42 not found" and "user 97 not found" count as one pattern. For each pattern the
count, the first and last line number seen and one full example are printed.
"""
from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from dataclasses import dataclass, field

SUBSTITUTIONS = [
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"), "<ts>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I), "<uuid>"),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<ip>"),
    (re.compile(r"\b0x[0-9a-f]+\b|\b[0-9a-f]{12,}\b", re.I), "<hex>"),
    (re.compile(r"\"[^\"]*\"|'[^']*'"), "<str>"),
    (re.compile(r"\b\d+(?:\.\d+)?(?:ms|s|KB|MB|GB)?\b"), "<n>"),
]


@dataclass
class Pattern:
    count: int = 0
    first_line: int = 0
    last_line: int = 0
    example: str = ""
    sources: Counter = field(default_factory=Counter)


def normalise(line: str) -> str:
    for regex, placeholder in SUBSTITUTIONS:
        line = regex.sub(placeholder, line)
    return re.sub(r"\s+", " ", line).strip()


def read_lines(paths: list[str]):
    for path in paths:
        handle = sys.stdin if path == "-" else open(path, encoding="utf-8", errors="replace")
        try:
            for number, line in enumerate(handle, start=1):
                yield path, number, line.rstrip("\n")
        finally:
            if handle is not sys.stdin:
                handle.close()


def main() -> int:
    parser = argparse.ArgumentParser(description="Group similar log lines and count them.")
    parser.add_argument("paths", nargs="+", help="log files, or - for stdin")
    parser.add_argument("--level", help="only lines containing this word, e.g. ERROR")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()

    level = re.compile(rf"\b{re.escape(args.level)}\b", re.I) if args.level else None
    patterns: dict[str, Pattern] = {}
    total = 0
    for path, number, line in read_lines(args.paths):
        if not line.strip() or (level and not level.search(line)):
            continue
        total += 1
        key = normalise(line)
        entry = patterns.setdefault(key, Pattern(first_line=number, example=line))
        entry.count += 1
        entry.last_line = number
        entry.sources[path] += 1

    if not total:
        print("no matching lines")
        return 1
    print(f"{total} matching lines, {len(patterns)} distinct patterns\n")
    ranked = sorted(patterns.items(), key=lambda item: item[1].count, reverse=True)
    for key, entry in ranked[: args.top]:
        share = 100 * entry.count / total
        print(f"{entry.count:>7}  {share:5.1f}%  lines {entry.first_line}-{entry.last_line}")
        print(f"         pattern: {key[:160]}")
        print(f"         example: {entry.example[:160]}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
