"""Loading a library: the skills a profile discovers under some folders, or the rows of a JSONL catalogue, with the
example requests that go with them.

This is where the parts meet: a profile (:mod:`router.profiles`) finds and parses skill folders, a
:class:`~router.registry.SkillRegistry` holds them by name, and example requests come from three places:

- a skill folder's ``routing-examples.txt`` (one request a line, ``#`` comments),
- a catalogue row's ``examples`` field,
- ``learned-examples.jsonl`` in the library's own index folder (``skill-router learn``; see :mod:`router.learned`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from router.catalog import load_catalog
from router.errors import SkillNotFoundError, SkillsFolderError
from router.files import read_bytes
from router.profiles import Capability, Discovery, Profile, get_profile
from router.registry import SkillRegistry
from router.skill import Skill

EXAMPLES_FILE = "routing-examples.txt"
MAX_EXAMPLES_BYTES = 1 << 20


def check_roots(roots: Sequence[str | os.PathLike[str]]) -> None:
    """Raise :class:`SkillsFolderError` naming the first root that is not an existing folder."""
    for root in roots:
        if not os.path.isdir(root):
            what = "is not a folder" if os.path.exists(root) else "does not exist"
            raise SkillsFolderError(f"skills folder '{os.fspath(root)}' {what}: pass --skills with a folder that "
                                    "holds one sub-folder per skill")


def skill_folders(roots: Sequence[str | os.PathLike[str]] | None, profile: str | Profile) -> list[str]:
    """The folders a library is read from: ``roots``, or for ``None`` the skills folders the harness itself reads
    that exist (codex, claude-code; a profile without harness discovery: its default roots)."""
    if roots is not None:
        return [os.fspath(r) for r in roots]
    profile = get_profile(profile)
    if profile.provides(Capability.HARNESS_FOLDERS):
        return profile.harness_folders()
    return list(profile.default_roots)


def discover(roots: Sequence[str | os.PathLike[str]] | None, profile: str | Profile, *,
             require_roots: bool = False) -> SkillRegistry:
    """The skills ``profile`` discovers under ``roots`` (``None``: the harness's own default places).

    With ``require_roots`` a root that is not an existing folder raises :class:`SkillsFolderError` (what a
    command-line user wants); otherwise the profile's own behaviour applies (skip, with a warning).
    """
    profile = get_profile(profile)
    if require_roots and roots is not None:
        check_roots(roots)
    found: Discovery = profile.discover(roots)
    return SkillRegistry(found.skills, discovery=found)


@dataclass(frozen=True)
class Library:
    """A loaded library: its registry, the profile that reads it, and notes on what loading skipped."""

    registry: SkillRegistry
    profile: Profile
    notes: tuple[str, ...] = ()


def from_folders(roots: Sequence[str | os.PathLike[str]] | None, profile: str | Profile) -> Library:
    """Skill folders under ``roots`` as ``profile`` discovers them (``None``: where its harness looks), with their
    sidecar example requests."""
    profile = get_profile(profile)
    if roots is not None:
        check_roots(roots)
    found: Discovery = profile.discover(roots)  # one discovery, one registry (with the sidecar examples)
    registry = SkillRegistry([_with_sidecar_examples(s) for s in found.skills], discovery=found)
    return Library(registry, profile, tuple(found.errors))


def from_catalog(path: str | os.PathLike[str], profile: str | Profile) -> Library:
    """A JSONL catalogue's rows (:func:`router.catalog.load_catalog`)."""
    return Library(SkillRegistry(load_catalog(path)), get_profile(profile))


def with_examples(registry: SkillRegistry, examples: Mapping[str, Sequence[str]]) -> tuple[SkillRegistry, int]:
    """A registry whose skills also have ``examples`` (skill id or name -> requests), and how many were new.
    Raises :class:`SkillNotFoundError` for a key that is neither an id nor a name of the library."""
    updated = {s.id: s for s in registry}
    added = 0
    for key, requests in examples.items():
        skill = registry.lookup(key)
        if skill is None:
            raise SkillNotFoundError(f"labelled skill '{key}' is not in the library")
        current = updated[skill.id]
        fresh = tuple(dict.fromkeys(r for r in requests if r.strip() and r not in current.examples))
        added += len(fresh)
        updated[skill.id] = dataclasses.replace(current, examples=current.examples + fresh)
    return SkillRegistry(updated.values(), discovery=registry.discovery), added


def _with_sidecar_examples(skill: Skill) -> Skill:
    path = os.path.join(skill.fs_directory, EXAMPLES_FILE) if skill.path else ""
    if not path or not os.path.isfile(path):
        return skill
    try:
        text = read_bytes(path, MAX_EXAMPLES_BYTES, truncate=True).decode("utf-8", errors="replace")
    except OSError:  # gone or replaced since isfile(): the skill loads without its examples
        return skill
    examples = tuple(line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))
    return dataclasses.replace(skill, examples=skill.examples + examples)
