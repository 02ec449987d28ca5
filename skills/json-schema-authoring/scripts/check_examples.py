"""Validate JSON example files against a JSON Schema (draft 2020-12).

Usage:
    python check_examples.py SCHEMA GOOD.json [GOOD2.json ...] [--expect-invalid BAD.json ...]

Exit status 0 when every good file validates and every file after --expect-invalid fails validation.
Requires the jsonschema package (pip install jsonschema).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def load(path: str) -> object:
    with Path(path).open(encoding="utf-8") as handle:
        return json.load(handle)


def main(argv: list[str]) -> int:
    try:
        from jsonschema import Draft202012Validator
    except ImportError:
        print("jsonschema is not installed: pip install jsonschema", file=sys.stderr)
        return 2
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    schema = load(argv[0])
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)

    good, bad, target = [], [], None
    target = good
    for arg in argv[1:]:
        if arg == "--expect-invalid":
            target = bad
            continue
        target.append(arg)

    failures = 0
    for path in good:
        errors = sorted(validator.iter_errors(load(path)), key=lambda e: list(e.path))
        if errors:
            failures += 1
            print(f"FAIL {path} (expected valid)")
            for error in errors:
                location = "/".join(str(p) for p in error.path) or "<root>"
                print(f"  {location}: {error.message}")
        else:
            print(f"ok   {path}")
    for path in bad:
        if validator.is_valid(load(path)):
            failures += 1
            print(f"FAIL {path} (expected invalid, but it validates)")
        else:
            print(f"ok   {path} (rejected as expected)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
