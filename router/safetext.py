"""Text made safe once, where it enters: every string the router keeps can be encoded, printed and sent as JSON.

Python hands the router strings no encoder accepts in two ways:

- **undecodable bytes**: a folder name, a command-line argument or an environment value that is not valid UTF-8
  arrives from the operating system with each bad byte as a lone surrogate U+DC80..U+DCFF (``surrogateescape``);
- **lone surrogates from escapes**: YAML and JSON decode ``"\\ud800"`` to the code point U+D800 itself.

Either one makes ``str.encode("utf-8")``, a tokenizer, a terminal or a JSON encoder fail far from where the text
came in. Two functions replace them, by these rules and no others:

:func:`safe_text`, for text (descriptions, bodies, metadata, requests, labels, log records):

1. ``bytes`` are decoded as UTF-8 with each invalid sequence replaced by U+FFFD (Python's ``errors="replace"``,
   the Unicode standard's recommended practice).
2. A high surrogate immediately followed by a low surrogate is joined into the one code point the pair encodes
   (``"\\ud83d\\ude00"`` in YAML means U+1F600, as it does in JSON).
3. Every other surrogate becomes U+FFFD (the replacement character, what Go's JSON encoder and a browser's
   decoder put in place of bytes they cannot decode).

:func:`safe_name`, for names the file system gives (folder names, skill names and ids, paths, command-line names):
the same, except that an undecodable byte ``0xNN`` (``bytes``, or the lone U+DC80..U+DCFF Python's
``surrogateescape`` makes of it) becomes the four characters ``\\xNN`` (lower-case hex). A folder ``bad<0xff>``
is shown as ``bad\\xff``: escaped, distinct from ``bad<0xfe>``, and found again when typed back or when the
shell passes the raw byte.

Where they are applied (each boundary once; nothing downstream cleans again):

- :class:`router.skill.Skill`, as it is made: every skill of every profile (frontmatter values after YAML
  parsing, folder names, paths, bodies, metadata), catalogue rows, sidecar and learned examples;
- :class:`router.profiles.base.Discovery`, as it is made: the profiles' errors and warnings, which quote paths;
- :meth:`router.registry.SkillRegistry.find` and ``get``: every name looked up (``use NAME``, ``--pin``,
  ``--exclude``, skill-tool calls, ``GET /v1/skills/NAME``, MCP ``load_skill`` and ``read_skill_file``);
- :meth:`router.routing.Router.conversation`: every request routed (command line, stdin, HTTP, MCP, hooks);
- :func:`router.texts.lenient_description`: the indexer's own lenient parse of a frontmatter;
- labels files (:mod:`router.evaluation.labels`), learned examples (:func:`router.learned.load_learned`) and
  decision-log records read back (:func:`router.serve.log.read_log`).

Nothing else changes: valid text is returned as it is (the same object); the result always encodes to UTF-8 and
round-trips through JSON; both functions are idempotent. File contents are decoded by the profiles as their
harness decodes them (invalid bytes become U+FFFD, :func:`router.profiles.base.decode_lossy`); these functions
then clean what YAML or JSON escapes produced.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

REPLACEMENT = "\ufffd"

_TEXT_PIECE = re.compile("([\ud800-\udbff][\udc00-\udfff])|[\ud800-\udfff]")
_NAME_PIECE = re.compile("([\ud800-\udbff][\udc00-\udfff])|([\udc80-\udcff])|[\ud800-\udfff]")


def _replace(match: re.Match[str]) -> str:
    pair = match.group(1)
    if pair is not None:
        return chr(0x10000 + ((ord(pair[0]) - 0xD800) << 10) + (ord(pair[1]) - 0xDC00))
    if match.re is _NAME_PIECE and match.group(2) is not None:
        return f"\\x{ord(match.group(2)) - 0xDC00:02x}"
    return REPLACEMENT


def safe_text(value: str | bytes) -> str:
    """``value`` as text every encoder accepts: invalid bytes and lone surrogates become U+FFFD, a surrogate pair
    the character it encodes (the rules are in the module's docstring)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if is_safe(value):
        return value
    return _TEXT_PIECE.sub(_replace, value)


def safe_name(value: str | bytes) -> str:
    """A file-system name or path as text: like :func:`safe_text`, but each undecodable byte is shown as
    ``\\xNN``."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "surrogateescape")
    if is_safe(value):
        return value
    return _NAME_PIECE.sub(_replace, value)


def is_safe(value: object) -> bool:
    """False only for a string holding a surrogate (one ``safe_text`` would change).

    Checked by encoding, which refuses any surrogate: CPython's UTF-16 encoder finds one in a 5 KB text in about
    1.5 microseconds (UTF-8: 4.7, a regular expression: 25), and an ASCII string is known safe at once.
    """
    if not isinstance(value, str) or value.isascii():
        return True
    try:
        value.encode("utf-16-le")
    except UnicodeEncodeError:
        return False
    return True


_FLAT = frozenset({str, int, float, bool, type(None)})


def _all_safe(value: Any, budget: int = 10_000) -> bool:
    """True when no string in ``value`` (walked up to ``budget`` items) holds a surrogate; False also when the
    walk is cut (the careful walk then decides)."""
    if type(value) is dict and all(type(v) in _FLAT for v in value.values()):  # most skills' metadata: one check
        return is_safe("".join([*(k for k in value if type(k) is str), *(v for v in value.values() if type(v) is str)]))
    stack = [value]
    while stack:
        budget -= 1
        if budget < 0:
            return False
        item = stack.pop()
        kind = type(item)
        if kind is str:
            if not item.isascii() and not is_safe(item):
                return False
        elif kind is dict:
            stack.extend(item)
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            stack.extend(item)
        elif isinstance(item, (str, Mapping, list, tuple)):
            return False  # a subclass: left to the careful walk
    return True


def safe_value(value: Any) -> Any:
    """``value`` with :func:`safe_text` applied to every string in it, keys included (for parsed YAML or JSON).

    Mappings, lists and tuples are rebuilt only where something changed; other values are returned as they are. A
    container met again (a YAML alias) is cleaned once and shared, so the work is bounded by the distinct values,
    and a container that holds itself is returned as it is.
    """
    if _all_safe(value):
        return value
    memo: dict[int, Any] = {}

    def clean(item: Any) -> Any:
        if isinstance(item, str):
            return safe_text(item)
        if not isinstance(item, (Mapping, list, tuple)):
            return item
        key = id(item)
        if key in memo:
            return memo[key]
        memo[key] = item  # a cycle meets the original: left as it is
        if isinstance(item, Mapping):
            pairs = [(clean(k), clean(v)) for k, v in item.items()]
            changed = any(k is not k0 or v is not v0 for (k, v), (k0, v0) in zip(pairs, item.items()))
            result: Any = dict(pairs) if changed else item
        else:
            values = [clean(v) for v in item]
            changed = any(v is not v0 for v, v0 in zip(values, item))
            result = (tuple(values) if isinstance(item, tuple) else values) if changed else item
        memo[key] = result
        return result

    return clean(value)
