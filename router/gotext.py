"""Go-compatible text: what the Go harnesses (genkit, unreal) print, reproduced byte for byte.

The harness messages quote names with ``%q`` (:func:`go_quote`), trim with ``strings.TrimSpace``
(:func:`go_trim_space`) and report file errors as ``*fs.PathError`` text (:func:`go_os_error`). The registry's
messages follow the unreal harness's registry, so these live outside the profiles package.
"""

from __future__ import annotations

import unicodedata

# Go's unicode.IsSpace: Latin-1 spaces plus the White_Space property. Python's str.strip() also strips
# U+001C..U+001F, which Go keeps, so the Go harnesses need their own trim.
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000"

_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def go_trim_space(text: str) -> str:
    """``strings.TrimSpace`` from Go."""
    return text.strip(_GO_SPACE)


def go_quote(text: str) -> str:
    """``strconv.Quote`` from Go (what ``%q`` prints) for a valid UTF-8 string."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch == " " or (ch.isprintable() and unicodedata.category(ch) != "Zs"):
            out.append(ch)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code == 0xFFFD:
            out.append(ch)
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def go_os_error(op: str, path: str, exc: OSError) -> str:
    """The text of Go's ``*fs.PathError`` for a failed open or read, e.g. ``open /x: permission denied``."""
    if isinstance(exc, IsADirectoryError):
        return f"read {path}: is a directory"
    reason = exc.strerror.lower() if exc.strerror else str(exc)
    return f"{op} {path}: {reason}"
