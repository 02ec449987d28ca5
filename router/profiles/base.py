"""What every harness profile provides, and the file helpers the profiles share.

A profile reproduces one harness exactly: how it discovers skill folders, parses SKILL.md, names and validates
skills, renders the catalogue, and answers its skill tool. The behaviour is specified in
``shared/specs/harness-profiles.md``; each profile module cites the rules it implements.

This module lists every extension point a profile has, in one place (:class:`Profile`):

Required (abstract): ``name``, ``tool_errors_fail``, :meth:`~Profile.discover`, :meth:`~Profile.parse`,
:meth:`~Profile.render`, :meth:`~Profile.tool`, :meth:`~Profile.call_tool`.

Optional capabilities (:class:`Capability`; the base class's default says "this harness has none", and a profile
has a capability exactly when it overrides its method; :meth:`Profile.provides` answers,
:func:`router.profiles.with_capability` lists the profiles that have one):

- ``HARNESS_FOLDERS`` :meth:`~Profile.harness_paths`: the skills folders the harness itself reads for a working
  folder (the library when no folder is given, the in-process hook's library, what ``lint`` checks).
- ``HOOK`` :meth:`~Profile.hook_context`: the ``UserPromptSubmit`` hook's additional context for a routed
  shortlist (``skill-router hook HARNESS`` and ``POST /v1/hooks/{harness}`` exist for these profiles).
- ``CONFIG_RESTRICTION`` :meth:`~Profile.restrict_config`: the harness's own switch that hides all skills but the
  routed ones (``skill-router prompt --emit-config``).
- ``HARNESS_MODEL`` :meth:`~Profile.with_model`: the profile for another model of the harness, whose budget
  depends on it (``--harness-model``); :attr:`~Profile.harness_model` and :meth:`~Profile.budget_report` go with it.

Always present, with a default a profile may override: :attr:`~Profile.harness_version` (None) and
:meth:`~Profile.skill_call` (how to call the skill tool to load one skill by name).

Adding a harness is adding one module to :mod:`router.profiles` that exports ``PROFILE``: the CLI's
``--profile``, the hook command and the service's hook endpoint pick it up from its capabilities.
"""

from __future__ import annotations

import copy
import enum
import json
import logging
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Iterator, Mapping, Protocol, Sequence, TypeVar

from router.files import MAX_SKILL_FILE_BYTES, read_bytes, read_bytes_stat
from router.safetext import is_safe, safe_name
from router.skill import Skill

log = logging.getLogger("router.profiles")

SKILL_FILE = "SKILL.md"
#: The router's shortlist in a hook's context: its first line, its most skills and its most characters.
SHORTLIST_HEADER = "Skills most relevant to this request (skill-router):"
SHORTLIST_MAX_SKILLS = 5
SHORTLIST_MAX_CHARS = 2000


class Capability(enum.Enum):
    """An optional extension point of a profile; the value is the method a profile overrides to provide it."""

    HARNESS_FOLDERS = "harness_paths"
    HOOK = "hook_context"
    CONFIG_RESTRICTION = "restrict_config"
    HARNESS_MODEL = "with_model"


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
    #: Roots used when the caller configures none (``()`` for a harness that finds its own: HARNESS_FOLDERS).
    default_roots: ClassVar[tuple[str, ...]] = ("skills",)
    #: The harness release the profile reproduces (its rules were observed on it); None for a format.
    harness_version: ClassVar[str | None] = None
    #: The capabilities this profile provides (set for each subclass from the methods it overrides).
    capabilities: ClassVar[frozenset[Capability]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.capabilities = frozenset(c for c in Capability
                                     if getattr(cls, c.value) is not getattr(Profile, c.value))

    def provides(self, capability: Capability) -> bool:
        """Whether this profile has ``capability``."""
        return capability in self.capabilities

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

    def skill_call(self, name: str, skills: Sequence[Skill]) -> tuple[dict[str, Any], str | None]:
        """The arguments and tool name of the skill-tool call that loads the skill called ``name`` from a library
        of ``skills``: the tool's first required parameter (``name`` for a harness without a tool) set to it."""
        spec = self.tool(skills)
        required = spec.parameters.get("required") if spec is not None else None
        key = required[0] if isinstance(required, list) and required else "name"
        return {key: name}, spec.name if spec is not None else None

    # --- optional capabilities (Capability): a default here means "this harness has none" ---------------------

    def harness_paths(self) -> list[str]:
        """HARNESS_FOLDERS: every skills folder the harness reads (from the working folder :meth:`in_folder` gave,
        else the current one), in its order, missing ones included; [] for a profile without such discovery,
        whose library without folders is :attr:`default_roots`."""
        return []

    def harness_folders(self) -> list[str]:
        """The :meth:`harness_paths` that exist (what ``lint`` checks and a hook routes over when none is given)."""
        return [path for path in dict.fromkeys(self.harness_paths()) if os.path.isdir(path)]

    def in_folder(self, cwd: str | os.PathLike[str]) -> Profile:
        """This profile as its harness runs in the working folder ``cwd`` (HARNESS_FOLDERS: the folders it reads
        follow; a profile without harness discovery is the same everywhere and returns itself)."""
        return self

    def hook_context(self, skills: Sequence[Skill]) -> str:
        """HOOK: the ``UserPromptSubmit`` additional context naming ``skills`` (a routed shortlist, best first) in
        the harness's own listing-line format, within :data:`SHORTLIST_MAX_SKILLS` skills and
        :data:`SHORTLIST_MAX_CHARS` characters; '' when none of them may be shown."""
        raise self.unsupported(Capability.HOOK)

    def restrict_config(self, skills: Sequence[Skill], keep: Sequence[Skill]) -> str:
        """CONFIG_RESTRICTION: the harness's own configuration that hides every skill of ``skills`` but ``keep``."""
        raise self.unsupported(Capability.CONFIG_RESTRICTION)

    def with_model(self, model: str) -> Profile:
        """HARNESS_MODEL: this profile for another model of the harness (its budget and layout follow it)."""
        raise self.unsupported(Capability.HARNESS_MODEL)

    @property
    def harness_model(self) -> str | None:
        """The harness's model the rendering follows (HARNESS_MODEL), else None."""
        return None

    def budget_report(self, skills: Sequence[Skill]) -> dict[str, Any] | None:
        """How the listing of ``skills`` fits the harness's own budget (HARNESS_MODEL), else None."""
        return None

    def unsupported(self, capability: Capability) -> NotImplementedError:
        """The error for calling a capability this profile does not have."""
        return NotImplementedError(f"the {self.name} profile has no {capability.name} capability "
                                   f"({capability.value}): see router.profiles.with_capability")


# --- helpers shared by the profiles -------------------------------------------------------------------------

def read_skill_file(path: str) -> bytes:
    """Read a SKILL.md's bytes (symlinks followed), raising OSError as the OS reports it.

    Only regular files are read, and at most :data:`router.files.MAX_SKILL_FILE_BYTES` of them: a FIFO, a device
    or a larger file raises an OSError (:mod:`router.files`), which every profile treats as an unreadable file.
    """
    return read_bytes(path, MAX_SKILL_FILE_BYTES)


#: A SKILL.md whose stamp is younger than this when it is read is read again next time (coarse timestamps: a
#: write in the same clock tick keeps the stamp), as :data:`router.fresh.RACY_S`.
RACY_S = 2.0
T = TypeVar("T")
_PARSED: dict[str, dict[str, tuple[tuple[int, ...], Any]]] = {}


class ParsedFiles:
    """What one discovery parses, remembered for the next one in this process: a SKILL.md whose stamp (mode, size,
    modification and change times in ns, inode, device; taken before it is read) is the same as when it was parsed
    is not read or parsed again, so a reload after one edit reads that file only. ``kind`` names the parse (a
    profile's rules); :meth:`close` keeps what this discovery saw, and only that, for the next one."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._before = _PARSED.get(kind, {})
        self._now: dict[str, tuple[tuple[int, ...], Any]] = {}

    def parse(self, path: str, parse: Callable[[str, bytes, str], T], folder_name: str) -> T:
        """``parse(path, raw, folder_name)`` of the bytes at ``path`` (read as :func:`read_skill_file` reads, its
        OSError propagating), or the value it gave when the file last had this stamp under this folder name."""
        import time

        key = f"{folder_name}\0{path}"
        found = self._before.get(key)
        if found is not None:  # a first discovery stats nothing more than it reads
            try:
                if _stamp(os.stat(path)) == found[0]:
                    value = found[1]
                    resolve = getattr(value, "resolve_parse", None)
                    if resolve is not None:  # kept by an earlier process (router.fresh): made when first met
                        value = resolve(lambda: parse(path, read_skill_file(path), folder_name))
                        found = (found[0], value)
                    self._now[key] = found
                    return value
            except OSError:
                pass  # reading says why
        raw, opened = read_bytes_stat(path, MAX_SKILL_FILE_BYTES)
        value = parse(path, raw, folder_name)
        stamp = _stamp(opened)
        if time.time_ns() - max(stamp[2], stamp[3]) > RACY_S * 1e9:
            self._now[key] = (stamp, value)
        return value

    def close(self) -> None:
        _PARSED[self.kind] = self._now


def parsed_files(kind: str) -> dict[str, tuple[tuple[int, ...], Any]]:
    """What the last discovery of ``kind`` parsed or found unchanged: ``folder name NUL path`` -> (the file's
    stamp, the parse) (what :mod:`router.fresh` keeps beside the index for the next process)."""
    return dict(_PARSED.get(kind, {}))


def remember_parsed(kind: str, entries: Mapping[str, tuple[tuple[int, ...], Any]]) -> None:
    """Add ``entries`` (kept by an earlier process: a parse may be a stand-in with ``resolve_parse(reparse)``,
    which gives the parse when the file is met with the same stamp) to what the next discovery of ``kind`` finds,
    before the ones this process made."""
    _PARSED[kind] = {**entries, **_PARSED.get(kind, {})}


def parse_kind(profile: Profile) -> str:
    """The ``kind`` of ``profile``'s :class:`ParsedFiles` and :func:`front_parse` (its class: the rules a parse
    follows)."""
    return type(profile).__name__


#: Most frontmatter parses kept per kind (the least recently used go first).
MAX_FRONTS = 1 << 15
#: Frontmatter parses by kind, then frontmatter text: the parse as JSON text, most recently used last.
_FRONTS: dict[str, dict[str, str]] = {}
#: How many parses each kind has gained in this process (what :mod:`router.fresh` saves when it moved).
_FRONTS_ADDED: dict[str, int] = {}


def front_parse(kind: str, front: str, parse: Callable[[str], T]) -> T:
    """``parse(front)`` (a frontmatter's YAML under the rules of ``kind``; its exceptions propagate), kept by the
    text: parsed once in this process, or in another one whose parses :mod:`router.fresh` kept beside the index
    (:func:`fronts`, :func:`remember_fronts`), so a new process after one edit of a large library parses one
    frontmatter. The parse must be a function of the text alone; a value JSON does not give back equal (a date, a
    tuple, a key that is not a string) is not kept. A kept value is returned as a new copy each time."""
    memo = _FRONTS.setdefault(kind, {})
    text = memo.pop(front, None)
    if text is not None:
        try:
            value: T = json.loads(text)
            memo[front] = text
            return value
        except ValueError:  # not what was kept (a damaged file): parsed again
            pass
    value = parse(front)
    try:
        encoded = json.dumps(value)
        kept = json.loads(encoded) == value
    except (TypeError, ValueError):
        kept = False
    if kept:
        memo[front] = encoded
        _FRONTS_ADDED[kind] = _FRONTS_ADDED.get(kind, 0) + 1
        if len(memo) > MAX_FRONTS:  # the least recently used go (list(): one step, whatever another thread does)
            for stale in list(memo)[:len(memo) - MAX_FRONTS]:
                memo.pop(stale, None)
    return value


def fronts(kind: str) -> dict[str, str]:
    """The parses :func:`front_parse` keeps for ``kind`` (frontmatter text -> JSON text), least recently used first."""
    return dict(_FRONTS.get(kind, {}))


def remember_fronts(kind: str, entries: Mapping[str, str]) -> None:
    """Add ``entries`` (what :func:`fronts` gave in another process) to the parses kept for ``kind``, before the
    ones this process made."""
    memo = _FRONTS.get(kind, {})
    merged = {front: text for front, text in entries.items() if type(front) is str and type(text) is str}
    merged.update(memo)
    for stale in list(merged)[:len(merged) - MAX_FRONTS]:
        merged.pop(stale)
    _FRONTS[kind] = merged


def _stamp(found: os.stat_result) -> tuple[int, ...]:
    return (found.st_mode, found.st_size, found.st_mtime_ns, found.st_ctime_ns, found.st_ino, found.st_dev)


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
