"""What every harness profile provides, and the Go-compatible text helpers two of them share.

A profile reproduces one harness exactly: how it discovers skill folders, parses SKILL.md, names and validates
skills, renders the catalogue, and answers its skill tool. The behaviour is specified in
``shared/specs/harness-profiles.md``; each profile module cites the rules it implements.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import unicodedata
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, Sequence

from router.skill import Skill

if TYPE_CHECKING:
    from router.registry import SkillRegistry

log = logging.getLogger("router.profiles")

SKILL_FILE = "SKILL.md"


@dataclass(frozen=True)
class Discovery:
    """The result of discovering skills under some roots.

    ``skills`` is in the order the harness keeps them; ``errors`` are the harness's own error strings for skills
    it rejected; ``warnings`` are what it logs (skipped roots, lenient fallbacks) and never stop discovery.
    """

    skills: tuple[Skill, ...]
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class ToolSpec:
    """A skill tool's definition, convertible to the shapes the OpenAI and Anthropic tool-calling APIs take."""

    name: str
    description: str
    parameters: Mapping[str, Any] = field(default_factory=dict)

    def openai(self) -> dict[str, Any]:
        """The OpenAI Chat Completions ``tools`` entry."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description,
                         "parameters": copy.deepcopy(dict(self.parameters))},
        }

    def anthropic(self) -> dict[str, Any]:
        """The Anthropic Messages ``tools`` entry."""
        return {"name": self.name, "description": self.description,
                "input_schema": copy.deepcopy(dict(self.parameters))}


class Profile(ABC):
    """One harness's rules for skills. Subclasses are stateless; one instance per module is exported."""

    name: ClassVar[str]
    #: True when the harness fails a bad tool call; False when it returns the error text as the result.
    tool_errors_fail: ClassVar[bool]
    #: Roots used when the caller configures none.
    default_roots: ClassVar[tuple[str, ...]] = ("skills",)

    @abstractmethod
    def discover(self, roots: Sequence[str | os.PathLike[str]] | None = None) -> Discovery:
        """Find and parse every skill under ``roots`` (``None`` = the harness's default roots)."""

    @abstractmethod
    def parse(self, path: str, raw: bytes, folder_name: str) -> Skill:
        """Parse one SKILL.md's bytes into a Skill, or raise ``ValueError`` with the harness's message."""

    @abstractmethod
    def render(self, skills: Sequence[Skill]) -> str:
        """The catalogue text for exactly these skills ('' for none). The caller chooses the subset."""

    @abstractmethod
    def tool(self, skills: Sequence[Skill]) -> ToolSpec | None:
        """The skill tool's definition, or None where the harness registers no tool for this library."""

    @abstractmethod
    def call_tool(self, registry: "SkillRegistry", arguments: Mapping[str, Any] | str | None,
                  call_name: str | None = None) -> str:
        """Answer one skill-tool call exactly as the harness does.

        ``arguments`` is the decoded JSON object or the raw JSON string the model sent. Profiles whose harness
        fails the call raise :class:`router.errors.SkillToolError`; the others return the error text.
        """


# --- helpers shared by the profiles -------------------------------------------------------------------------

# Go's unicode.IsSpace: Latin-1 spaces plus the White_Space property. Python's str.strip() also strips
# U+001C..U+001F, which Go keeps, so the Go harnesses need their own trim.
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000"


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


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def go_os_error(op: str, path: str, exc: OSError) -> str:
    """The text of Go's ``*fs.PathError`` for a failed open or read, e.g. ``open /x: permission denied``."""
    if isinstance(exc, IsADirectoryError):
        return f"read {path}: is a directory"
    reason = exc.strerror.lower() if exc.strerror else str(exc)
    return f"{op} {path}: {reason}"


def read_skill_file(path: str) -> bytes:
    """Read a SKILL.md's bytes (symlinks followed), raising OSError as the OS reports it."""
    with open(path, "rb") as handle:
        return handle.read()


def decode_lossy(raw: bytes) -> str:
    """Decode UTF-8 with invalid bytes replaced by U+FFFD (what Go's JSON encoder does to a tool result)."""
    return raw.decode("utf-8", errors="replace")


def sorted_entries(folder: str) -> list[str]:
    """Directory entry names in byte order (what Go's ReadDir and Node's readdir return).

    Sorting ``str`` by code point equals UTF-8 byte order; undecodable names keep their surrogate escapes,
    which sort where their bytes would.
    """
    return sorted(os.listdir(folder), key=lambda name: os.fsencode(name))


def tool_arguments(arguments: Mapping[str, Any] | str | None) -> Mapping[str, Any]:
    """Decode tool-call arguments given as a JSON string or an already-decoded mapping."""
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        decoded = json.loads(arguments) if arguments.strip() else {}
        if not isinstance(decoded, dict):
            raise ValueError(f"tool arguments must be a JSON object, got {type(decoded).__name__}")
        return decoded
    return arguments
