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
from typing import Any, Iterator, Mapping

#: Largest JSON encoding of one skill's frontmatter metadata that is sent (twice the size cap of a SKILL.md).
MAX_METADATA_BYTES = 8 << 20
#: Deepest nesting of lists and mappings sent (a YAML alias inside itself nests for ever).
MAX_DEPTH = 64
_CHECK_EVERY = 4096  # pieces encoded between two looks at the clock
_SURROGATE = re.compile("[\ud800-\udfff]")


class DeadlineExceeded(Exception):
    """The request ran past its deadline."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the request took longer than its deadline of {seconds:g} s and was given up: retry, or "
                         "start the server with a larger --request-timeout")
        self.seconds = seconds


class MetadataTooLarge(Exception):
    """A skill's metadata encodes to more than :data:`MAX_METADATA_BYTES`, or nests deeper than :data:`MAX_DEPTH`."""


def _text(value: Any) -> str:
    return json.dumps(value if isinstance(value, str) else str(value), ensure_ascii=False)


def _key(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return _text(json.dumps(value))  # as json.dumps names them: "null", "true"
    return _text(value)


def _pieces(value: Any, depth: int) -> Iterator[str]:
    if isinstance(value, str):
        yield _text(value)
    elif value is None or isinstance(value, (bool, int)):
        yield json.dumps(value)
    elif isinstance(value, float):
        yield repr(value) if math.isfinite(value) else _text(repr(value))  # NaN is no JSON number: a string
    elif isinstance(value, (datetime.date, datetime.time)):
        yield _text(value.isoformat())
    elif depth >= MAX_DEPTH:
        raise MetadataTooLarge(f"nests deeper than {MAX_DEPTH} levels")
    elif isinstance(value, Mapping):
        yield "{"
        for n, (key, item) in enumerate(value.items()):
            yield f"{',' if n else ''}{_key(key)}:"
            yield from _pieces(item, depth + 1)
        yield "}"
    elif isinstance(value, (list, tuple, set, frozenset)):
        yield "["
        for n, item in enumerate(value):
            if n:
                yield ","
            yield from _pieces(item, depth + 1)
        yield "]"
    else:  # anything else YAML can construct (bytes from !!binary, ...) is sent as its text
        yield _text(value)


def metadata_json(name: str, metadata: Mapping[str, Any], *, deadline: float, seconds: float,
                  max_bytes: int = MAX_METADATA_BYTES) -> str:
    """``metadata`` as JSON text: keys as strings, dates and values JSON has no type for as their text.

    ``deadline`` is a :func:`time.monotonic` instant (``seconds`` after the request started): past it
    :class:`DeadlineExceeded`; past ``max_bytes`` characters or :data:`MAX_DEPTH` levels
    :class:`MetadataTooLarge`, naming the skill."""
    pieces: list[str] = []
    size = 0
    try:
        for count, piece in enumerate(_pieces(dict(metadata), 0), 1):
            size += len(piece)
            if size > max_bytes:
                raise MetadataTooLarge(f"is larger than {max_bytes} bytes as JSON")
            pieces.append(piece)
            if count % _CHECK_EVERY == 0 and time.monotonic() > deadline:
                raise DeadlineExceeded(seconds)
    except MetadataTooLarge as exc:
        raise MetadataTooLarge(f"the frontmatter metadata of skill '{name[:200]}' {exc} (YAML aliases can expand a "
                               "small file): shorten it; without ?body=true the skill is still answered") from None
    return "".join(pieces)


def encode(payload: Mapping[str, Any], *, raw: Mapping[str, str] | None = None) -> bytes:
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
