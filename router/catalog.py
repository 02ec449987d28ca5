"""A plain catalogue source: a JSONL file of ``{"id", "name", "description"}`` rows, routed like skills.

This is the shape of tool catalogues such as ``datasets/*/tools.jsonl``. Other fields are kept as metadata; an
``examples`` field (a list of requests) feeds the router's example signal.
"""

from __future__ import annotations

import json
import os
from typing import Any

from router.errors import CatalogError, brief
from router.files import read_user_text
from router.skill import Skill


def parse_jsonl(text: str, path: str | os.PathLike[str], error: type[CatalogError] = CatalogError
                ) -> list[tuple[int, Any]]:
    """(line number, decoded value) for each non-blank line of JSONL ``text``; ``error`` names the file and line
    of the first line that is not JSON. Lines split on LF only: ``str.splitlines()`` would also break a row at a
    U+2028 or U+0085 inside a JSON string."""
    rows = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            rows.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise error(f"{os.fspath(path)}:{number}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    return rows


def load_catalog(path: str | os.PathLike[str]) -> list[Skill]:
    """Read a JSONL catalogue. Each row becomes a :class:`Skill` with ``id`` = the row's id (``name`` when absent).

    Catalogue names may repeat (tool catalogues reuse names across providers); ids may not. A row whose name an
    earlier row already has is named by its id instead, so every command (``list``, ``use``, ``prompt``,
    ``route``) sees the same unique names; a row whose id is also taken as a name is an error.

    Raises :class:`CatalogError` naming the file and line for unreadable files, bad JSON, missing fields and
    repeated ids.
    """
    path = os.fspath(path)
    text = read_user_text(path, "catalogue", CatalogError, missing="pass --catalog with a JSONL file of "
                                                                   '{"id", "name", "description"} rows')
    skills: list[Skill] = []
    seen: set[str] = set()
    names: dict[str, int] = {}
    for number, row in parse_jsonl(text, path):
        if not isinstance(row, dict):
            raise CatalogError(f"{path}:{number}: expected a JSON object, got {type(row).__name__}")
        name = row.get("name") or row.get("id")
        if not isinstance(name, str) or not name:
            raise CatalogError(f"{path}:{number}: a row needs a non-empty string 'name' or 'id'")
        ident = row.get("id") or name
        if not isinstance(ident, str):
            raise CatalogError(f"{path}:{number}: 'id' must be a string")
        if ident in seen:
            raise CatalogError(f"{path}:{number}: id {brief(ident)} appears more than once")
        seen.add(ident)
        description = row.get("description", "")
        if not isinstance(description, str):
            raise CatalogError(f"{path}:{number}: 'description' of {brief(ident)} must be a string")
        examples = row.get("examples", [])
        if not isinstance(examples, list) or not all(isinstance(e, str) for e in examples):
            raise CatalogError(f"{path}:{number}: 'examples' of {brief(ident)} must be a list of strings")
        if name in names:
            if ident in names:
                raise CatalogError(f"{path}:{number}: name '{name}' repeats line {names[name]} and id '{ident}' is "
                                   f"already a name too: give the row a unique id")
            name = ident
        names[name] = number
        metadata = {k: v for k, v in row.items() if k not in ("id", "name", "description", "examples")}
        skills.append(Skill(name=name, description=description.strip(), id=ident, metadata=metadata,
                            examples=tuple(examples)))
    if not skills:
        raise CatalogError(f"catalogue '{path}' has no rows")
    return skills
