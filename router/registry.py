"""The skill registry: the skills a harness can load by name, in registration order.

Built from what a profile discovered (:func:`router.library.discover`), from a JSONL catalogue, or by hand.
Registration follows the unreal harness's registry, the strictest of the three: a repeated path or name is
refused. Lookups are exact and case-sensitive. Skills are keyed by id, which is the name unless a profile keeps
same-named skills apart (codex lists every one of them and gives the later ones ids ``name#2``, ...); a lookup by
name then finds the first. The skill tool loads any registered skill, whether or not a router showed it in the
catalogue.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Iterable, Iterator

from router.errors import RegistryError, SkillNotFoundError
from router.gotext import go_quote
from router.profiles.base import Discovery
from router.safetext import safe_name
from router.skill import Skill

if TYPE_CHECKING:
    from router.ranking import KeyIndex


class SkillRegistry:
    """Skills by exact name, in registration order."""

    def __init__(self, skills: Iterable[Skill] = (), *, discovery: Discovery | None = None) -> None:
        self._by_id: dict[str, Skill] = {}
        self._by_name: dict[str, Skill] = {}  # the first skill of each name
        self._paths: set[str] = set()
        self._snapshot: tuple[Skill, ...] | None = None
        self.discovery = discovery
        for skill in skills:
            self.register(skill)

    def register(self, skill: Skill) -> None:
        """Add a skill; refuses a path or name that is already registered."""
        if skill.path and skill.fs_path in self._paths:
            raise RegistryError(f"skill path {go_quote(skill.path)} is already registered")
        if skill.id in self._by_id or (skill.id == skill.name and skill.name in self._by_name):
            raise RegistryError(f"skill name {go_quote(skill.id)} is already registered")
        self._by_id[skill.id] = skill
        self._by_name.setdefault(skill.name, skill)
        self._snapshot = None
        if skill.path:
            self._paths.add(skill.fs_path)

    def find(self, name: str) -> Skill | None:
        """The skill called exactly ``name``, or None. A name as the OS or a request hands it over (undecodable
        bytes, lone surrogates) finds the skill shown under its safe form (:func:`router.safetext.safe_name`)."""
        return self._by_name.get(safe_name(name) if isinstance(name, str) else name)

    def lookup(self, key: str) -> Skill | None:
        """The skill whose id is ``key``, else the first skill called ``key`` (:meth:`find`), else None.

        The one order wherever a key may be either (pins and excludes, labelled examples, a skill named in an HTTP
        path or an MCP call): an id names exactly one skill, while a name may be shared by skills a profile keeps
        apart by id. For skills read from folders the id is the name, and both orders agree."""
        return self._by_id.get(key) or self.find(key)

    def get(self, name: str) -> Skill:
        """The skill called exactly ``name``; raises SkillNotFoundError naming close matches."""
        name = safe_name(name) if isinstance(name, str) else name
        skill = self._by_name.get(name)
        if skill is None:
            raise SkillNotFoundError(self._unknown(name))
        return skill

    def _unknown(self, name: str) -> str:
        import difflib

        close = difflib.get_close_matches(name, list(self._by_name), n=3)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else \
            "; run 'skill-router list' to see the registered names"
        return f"no skill named '{name}'{hint}"

    def __iter__(self) -> Iterator[Skill]:
        return iter(self.skills)

    def __len__(self) -> int:
        return len(self._by_id)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    @property
    def names(self) -> tuple[str, ...]:
        """Every skill's name, in registration order (a name repeats only where a profile keeps same-named
        skills apart by id)."""
        return tuple(s.name for s in self.skills)

    @property
    def by_id(self) -> Mapping[str, Skill]:
        """Each skill by its id (read-only; a view, not a copy)."""
        return MappingProxyType(self._by_id) if isinstance(self._by_id, dict) else self._by_id

    def id_index(self) -> KeyIndex:
        """Each skill's position by id (:class:`router.ranking.KeyIndex`), made now."""
        from router.ranking import KeyIndex

        return KeyIndex.build(tuple(s.id for s in self.skills))

    @property
    def skills(self) -> tuple[Skill, ...]:
        """The skills in registration order; the same tuple until the registry changes, so callers can cache
        what they derive from it by identity."""
        if self._snapshot is None:
            self._snapshot = tuple(self._by_id.values())
        return self._snapshot
