"""Example requests learned from labelled routing history, kept beside the index.

``skill-router learn --queries labelled.jsonl`` appends ``{"id": skill id, "query": request}`` rows to
``learned-examples.jsonl`` in the index folder; every router built over the same index folder reads them back as
examples of their skills (the third routing signal).
"""

from __future__ import annotations

import json
import os
from typing import Mapping, Sequence

from router.errors import CatalogError
from router.files import read_user_text
from router.safetext import safe_name, safe_text

FILE = "learned-examples.jsonl"


def load_learned(folder: str | None) -> dict[str, list[str]]:
    """Learned examples by skill id ({} when there are none)."""
    path = os.path.join(folder, FILE) if folder else ""
    if not path or not os.path.isfile(path):
        return {}
    learned: dict[str, list[str]] = {}
    text = read_user_text(path, "learned examples", CatalogError, not_utf8="fix or delete the file")
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            key, query = row["id"], row["query"]
        except (json.JSONDecodeError, KeyError, TypeError):
            raise CatalogError(f"{path}:{number}: not a learned example row; fix or delete the line") from None
        if not isinstance(query, str) or not isinstance(key, (str, int)) or isinstance(key, bool):
            # str() would turn a null query into the example request "None"
            raise CatalogError(f"{path}:{number}: 'id' must be a string and 'query' a string, got "
                               f"{key!r} and {query!r}; fix or delete the line")
        learned.setdefault(safe_name(str(key)), []).append(safe_text(query))
    return learned


def append_learned(folder: str, examples: Mapping[str, Sequence[str]]) -> int:
    """Append examples not stored yet; returns how many rows were written."""
    known = {(k, q) for k, qs in load_learned(folder).items() for q in qs}
    # A pair repeated within ``examples`` is written once, and counted once.
    rows = list(dict.fromkeys((k, q) for k, qs in examples.items() for q in qs if (k, q) not in known))
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, FILE), "a", encoding="utf-8") as handle:
        for key, query in rows:
            handle.write(json.dumps({"id": key, "query": query}, ensure_ascii=False) + "\n")
    return len(rows)
