"""Labelled requests: what a user asked and which skills should have been routed.

A labels file is JSONL, one request a line (blank lines are skipped)::

    {"id": "q1", "query": "convert this pdf to text", "gold": ["pdf"]}
    {"id": "q2", "query": "what's the weather like", "gold": []}
    {"id": "q3", "messages": [{"role": "user", "content": "..."}, ...], "gold": ["xlsx", "charts"]}

or, by suffix ``.yaml`` / ``.yml``, a YAML list of the same mappings. ``gold: []`` means no skill applies (the
router should abstain); several gold ids mean each of them is needed. A conversation (``messages``) is routed
exactly as the router routes it (:func:`router.conversation.conversation_text`: its last user turn with text, the
earlier user turns as context); ``query`` then defaults to that last turn and only labels the row in reports.

Every problem raises :class:`LabelsError` (a :class:`router.errors.CatalogError`, hence a ``ValueError``) whose
message starts with ``file:line``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

import yaml

from router.catalog import parse_jsonl
from router.conversation import conversation_text
from router.errors import CatalogError, ConfigError, brief
from router.files import read_user_text
from router.frontmatter import load_with_nodes
from router.safetext import safe_value


class LabelsError(CatalogError):
    """A labelled-requests file cannot be read, parsed or validated."""


@dataclass(frozen=True)
class Request:
    """One labelled request.

    Parameters
    ----------
    id:
        Unique within its file.
    query:
        The text to route; for a conversation, the last user turn.
    gold:
        Skill ids that should be routed, best first if the labeller ranked them; ``()`` when no skill applies.
        ``None`` only for a request loaded with ``require_gold=False`` and no ``gold`` key (unlabelled).
    messages:
        The conversation as ``{"role", "content"}`` mappings, or ``None`` for a single query.
    """

    id: str
    query: str
    gold: tuple[str, ...] | None
    messages: tuple[Mapping[str, Any], ...] | None = field(default=None, hash=False)


def load_requests(
    path: str | PathLike[str], *, known_ids: Collection[str] | None = None, require_gold: bool = True
) -> list[Request]:
    """Read labelled requests from a JSONL or YAML file, in file order.

    Parameters
    ----------
    path:
        A ``.jsonl`` file (any suffix other than ``.yaml`` / ``.yml``) or a YAML list.
    known_ids:
        The catalogue's skill ids; when given, every gold id must be one of them (catches labels written for
        another catalogue or a renamed skill).
    require_gold:
        When true (the default, what evaluation needs) a request without a ``gold`` key is an error; when false it
        loads with ``gold=None``.

    Raises
    ------
    LabelsError
        Unreadable file, invalid JSON or YAML, a row that is not a mapping, a missing or empty ``id``, a missing
        or empty ``query`` (and no user turn in ``messages``), a ``gold`` that is not a list of strings, duplicate
        ids, gold ids outside ``known_ids``, or no requests at all.
    """
    p = Path(path)
    text = read_user_text(p, "labelled requests", LabelsError)
    rows = _yaml_rows(p, text) if p.suffix.lower() in (".yaml", ".yml") else _jsonl_rows(p, text)
    if not rows:
        raise LabelsError(f"{p}: no labelled requests found; expected one JSON object per line")
    requests = [_parse_row(p, line, row, require_gold) for line, row in rows]
    lines = [line for line, _ in rows]
    _check_unique(p, requests, lines)
    if known_ids is not None:
        _check_known(p, requests, lines, known_ids)
    return requests


def _jsonl_rows(path: Path, text: str) -> list[tuple[int, Any]]:
    return parse_jsonl(text, path, LabelsError)


def _yaml_rows(path: Path, text: str) -> list[tuple[int, Any]]:
    # Compose first so that each item keeps the line it starts on, for messages that point at it.
    try:
        node, data = load_with_nodes(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise LabelsError(f"{where}: invalid YAML: {getattr(exc, 'problem', None) or exc}") from None
    if data is None:
        return []
    if not isinstance(data, list):
        raise LabelsError(f"{path}:1: a YAML labels file must be a list of requests, got {type(data).__name__}")
    assert node is not None  # data is a list, so the document had a node
    return [(item.start_mark.line + 1, value) for item, value in zip(node.value, data)]


def _parse_row(path: Path, line: int, row: Any, require_gold: bool) -> Request:
    where = f"{path}:{line}"
    if not isinstance(row, Mapping):
        raise LabelsError(f"{where}: expected an object with \"id\", \"query\" and \"gold\", got {brief(row)}")
    row = safe_value(row)  # lone surrogates from JSON or YAML escapes, once, before any text is kept
    rid = row.get("id")
    if not isinstance(rid, str) or not rid.strip():
        raise LabelsError(f"{where}: \"id\" must be a non-empty string, got {brief(rid)}")
    messages = _parse_messages(where, rid, row["messages"]) if "messages" in row else None
    query = row.get("query")
    if query is None and messages is not None:
        query = _last_user_turn(where, rid, messages)
    if query is None:
        raise LabelsError(f"{where}: request {brief(rid)} has neither \"query\" nor \"messages\"")
    if not isinstance(query, str):
        raise LabelsError(f"{where}: request {brief(rid)}: \"query\" must be a string, got {brief(query)}")
    if not query.strip():
        raise LabelsError(f"{where}: request {brief(rid)} has an empty query")
    if "gold" not in row:
        if require_gold:
            raise LabelsError(
                f"{where}: request {brief(rid)} has no \"gold\"; label it ([] when no skill applies)"
            )
        return Request(rid, query, None, messages)
    gold = row["gold"]
    if not isinstance(gold, list) or not all(isinstance(g, str) and g for g in gold):
        raise LabelsError(f"{where}: request {brief(rid)}: \"gold\" must be a list of skill ids, got {brief(gold)}")
    # A repeated gold id would count twice in recall's denominator; keep the first.
    return Request(rid, query, tuple(dict.fromkeys(gold)), messages)


def _parse_messages(where: str, rid: str, messages: Any) -> tuple[Mapping[str, Any], ...]:
    if not isinstance(messages, list) or not messages:
        raise LabelsError(f"{where}: request {brief(rid)}: \"messages\" must be a non-empty list, got "
                          f"{brief(messages)}")
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or "role" not in message or "content" not in message:
            raise LabelsError(
                f"{where}: request {brief(rid)}: message {i} must have \"role\" and \"content\", got {brief(message)}"
            )
    return tuple(dict(m) for m in messages)


def _last_user_turn(where: str, rid: str, messages: tuple[Mapping[str, Any], ...]) -> str:
    try:
        return conversation_text(messages).request
    except ConfigError as exc:
        raise LabelsError(f"{where}: request {brief(rid)}: {exc}") from None


def _check_unique(path: Path, requests: list[Request], lines: list[int]) -> None:
    seen: dict[str, list[int]] = defaultdict(list)
    for request, line in zip(requests, lines):
        seen[request.id].append(line)
    repeated = {rid: where for rid, where in seen.items() if len(where) > 1}
    if repeated:
        listed = ", ".join(f"{brief(rid)} (lines {', '.join(map(str, where))})" for rid, where in repeated.items())
        raise LabelsError(f"{path}:{next(iter(repeated.values()))[1]}: duplicate request ids: {listed}")


def _check_known(path: Path, requests: list[Request], lines: list[int], known_ids: Collection[str]) -> None:
    known = set(known_ids)
    unknown: dict[str, int] = {}
    for request, line in zip(requests, lines):
        for gold in request.gold or ():
            if gold not in known:
                unknown.setdefault(gold, line)
    if unknown:
        shown = list(unknown.items())[:10]
        listed = ", ".join(f"{brief(gid)} (line {line})" for gid, line in shown)
        more = f" and {len(unknown) - len(shown)} more" if len(unknown) > len(shown) else ""
        raise LabelsError(
            f"{path}:{shown[0][1]}: {len(unknown)} gold ids are not in the catalogue: {listed}{more}; "
            "fix the labels or evaluate against the catalogue they were written for"
        )
