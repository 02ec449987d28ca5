"""What every harness profile provides, and the file helpers the profiles share.

A profile reproduces one harness exactly: how it discovers skill folders, parses SKILL.md, names and validates
skills, renders the catalogue, and answers its skill tool. The behaviour is specified in
``shared/specs/harness-profiles.md``; each profile module cites the rules it implements.
"""

from __future__ import annotations

import copy
import json
import logging
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterator, Mapping, Protocol, Sequence

from router.files import MAX_SKILL_FILE_BYTES, read_bytes
from router.safetext import is_safe, safe_name
from router.skill import Skill

log = logging.getLogger("router.profiles")

SKILL_FILE = "SKILL.md"


class SkillLookup(Protocol):
    """What a skill tool needs from the skills it serves (a :class:`router.registry.SkillRegistry` is one)."""

    def find(self, name: str) -> Skill | None:
        """The skill called exactly ``name``, or None."""

    def __iter__(self) -> Iterator[Skill]:
        """The skills, in registration order (for messages that list the known names)."""


@dataclass(frozen=True)
class Discovery:
    """The result of discovering skills under some roots.

    ``skills`` is in the order the harness keeps them; ``errors`` are the harness's own error strings for skills
    it rejected; ``warnings`` are what it logs (skipped roots, lenient fallbacks) and never stop discovery.
    """

    skills: tuple[Skill, ...]
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Messages quote paths and names as the OS gave them: made safe here, once, for every profile.
        for name in ("errors", "warnings"):
            messages = getattr(self, name)
            if not all(is_safe(m) for m in messages):
                object.__setattr__(self, name, tuple(safe_name(m) for m in messages))


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
    def call_tool(self, registry: SkillLookup, arguments: Mapping[str, Any] | str | None,
                  call_name: str | None = None) -> str:
        """Answer one skill-tool call exactly as the harness does.

        ``arguments`` is the decoded JSON object or the raw JSON string the model sent. Profiles whose harness
        fails the call raise :class:`router.errors.SkillToolError`; the others return the error text.
        """


# --- helpers shared by the profiles -------------------------------------------------------------------------

def read_skill_file(path: str) -> bytes:
    """Read a SKILL.md's bytes (symlinks followed), raising OSError as the OS reports it.

    Only regular files are read, and at most :data:`router.files.MAX_SKILL_FILE_BYTES` of them: a FIFO, a device
    or a larger file raises an OSError (:mod:`router.files`), which every profile treats as an unreadable file.
    """
    return read_bytes(path, MAX_SKILL_FILE_BYTES)


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
    """Decode tool-call arguments given as a JSON string or an already-decoded mapping.

    Raises ``ValueError`` (``json.JSONDecodeError`` is one) for text that is not JSON and for anything that is
    not an object.
    """
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        decoded = json.loads(arguments) if arguments.strip() else {}
    else:
        decoded = arguments
    if not isinstance(decoded, Mapping):
        raise ValueError(f"tool arguments must be a JSON object, got {type(decoded).__name__}")
    return decoded
