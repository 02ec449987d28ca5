"""Encoding answers off the event loop, bounded in size and in time.

Skill data is the one thing a server answers with that a library author controls, and YAML makes a small file
hold a huge value: aliases nested nine deep expand to hundreds of millions of strings, an alias inside itself
makes a list that holds itself, and a key may be a date or a list, which ``json.dumps`` refuses. ``json.dumps``
also runs in C and never lets go of the interpreter, so one such value stops every other request, ``/healthz``
included, for as long as it takes. Metadata is therefore encoded here, piece by piece in Python, and given up
past :data:`MAX_METADATA_BYTES`, :data:`MAX_DEPTH` levels or the request's deadline; everything else an answer
holds is bounded already (a SKILL.md is at most a few MB) and is encoded in one call, in the worker pool.
"""

from __future__ import annotations

import datetime
import json
import math
import re
import time
from typing import Any, Mapping

#: Largest JSON encoding of one skill's frontmatter metadata (the keys besides name and description) that is sent:
#: real ones hold a few KB; an alias bomb reaches this in about a second.
MAX_METADATA_BYTES = 1 << 20
#: Deepest nesting of lists and mappings sent (a YAML alias inside itself nests for ever).
MAX_DEPTH = 64
_CHECK_EVERY = 4096  # pieces encoded between two looks at the clock
_SURROGATE = re.compile("[\ud800-\udfff]")
_END = object()
_encode_string = json.encoder.encode_basestring  # ensure_ascii=False, as the rest of the answer (C where built)


class DeadlineExceeded(Exception):
    """The request ran past its deadline."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the request took longer than its deadline of {seconds:g} s and was given up: retry, or "
                         "start the server with a larger --request-timeout")
        self.seconds = seconds


class MetadataTooLarge(Exception):
    """A skill's metadata encodes to more than :data:`MAX_METADATA_BYTES`, or nests deeper than :data:`MAX_DEPTH`."""


def _text(value: object) -> str:
    return _encode_string(value if isinstance(value, str) else str(value))


def _key(value: object) -> str:
    if value is None or isinstance(value, bool):
        return _text(json.dumps(value))  # as json.dumps names them: "null", "true"
    return _text(value)


def _scalar(value: Any) -> str | None:
    """The JSON text of a value that holds no other values; None for a list or a mapping."""
    kind = type(value)
    if kind is str:
        return _encode_string(value)
    if kind is int:
        return int.__repr__(value)
    if value is None or isinstance(value, (bool, int)):
        return json.dumps(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else _text(repr(value))  # NaN is no JSON number: a string
    if isinstance(value, (datetime.date, datetime.time)):
        return _text(value.isoformat())
    if isinstance(value, (Mapping, list, tuple, set, frozenset)):
        return None
    return _text(value)  # anything else YAML can construct (bytes from !!binary, ...) is sent as its text


def metadata_json(name: str, metadata: Mapping[str, object], *, deadline: float, seconds: float,
                  max_bytes: int | None = None) -> str:
    """``metadata`` as JSON text: keys as strings, dates and values JSON has no type for as their text.

    ``deadline`` is a :func:`time.monotonic` instant (``seconds`` after the request started): past it
    :class:`DeadlineExceeded`; past ``max_bytes`` characters or :data:`MAX_DEPTH` levels
    :class:`MetadataTooLarge`, naming the skill (``max_bytes`` defaults to :data:`MAX_METADATA_BYTES`). One loop
    over an explicit stack (no recursion, no generator per level): an alias bomb of 9 ** 9 values reaches the
    default limit in about half a second."""
    def refuse(why: str) -> MetadataTooLarge:
        return MetadataTooLarge(f"the frontmatter metadata of skill '{name[:200]}' {why} (YAML aliases can expand "
                                "a small file): shorten it; without ?body=true the skill is still answered")

    limit = MAX_METADATA_BYTES if max_bytes is None else max_bytes
    out = ["{"]
    size = 1
    # each frame: [closing bracket, iterator over its items, whether they are (key, value) pairs, items so far]
    stack: list[list[Any]] = [["}", iter(dict(metadata).items()), True, 0]]
    count = 0
    while stack:
        frame = stack[-1]
        item: Any = next(frame[1], _END)
        if item is _END:
            out.append(frame[0])
            size += 1
            stack.pop()
            continue
        piece = "," if frame[3] else ""
        frame[3] += 1
        if frame[2]:
            key, item = item
            piece += _key(key) + ":"
        text = _scalar(item)
        if text is not None:
            piece += text
        elif len(stack) >= MAX_DEPTH:
            raise refuse(f"nests deeper than {MAX_DEPTH} levels")
        elif isinstance(item, Mapping):
            piece += "{"
            stack.append(["}", iter(item.items()), True, 0])
        else:
            piece += "["
            stack.append(["]", iter(item), False, 0])
        out.append(piece)
        size += len(piece)
        if size > limit:
            raise refuse(f"is larger than {limit} bytes as JSON")
        count += 1
        if count % _CHECK_EVERY == 0 and time.monotonic() > deadline:
            raise DeadlineExceeded(seconds)
    return "".join(out)


def encode(payload: Mapping[str, object], *, raw: Mapping[str, str] | None = None) -> bytes:
    """``payload`` as UTF-8 JSON bytes, with each ``raw`` value (JSON text already encoded) added under its key.
    A character UTF-8 cannot carry (a lone surrogate) is sent as U+FFFD."""
    text = json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=str)
    if raw:
        extra = ",".join(f"{json.dumps(key)}:{value}" for key, value in raw.items())
        text = f"{text[:-1]},{extra}}}" if text != "{}" else f"{{{extra}}}"
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text).encode("utf-8")
