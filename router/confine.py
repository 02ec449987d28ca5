"""Symlinks that lead out of a library: found by lint, refused on request.

The harnesses follow symlinks (unreal and agentskills follow symlinked skill folders; all three read a SKILL.md
that is itself a symlink), so a library can hand an agent any file the process can read: a skill whose SKILL.md
links to ``/etc/passwd`` is loaded and shown by its tool. The profiles keep that behaviour exactly. ``lint``
warns about every symlink in a skill folder whose target leaves the roots, and ``--confine`` (config key
``confine``) refuses skills whose SKILL.md resolves outside every root, for users who serve libraries they do not
trust.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Iterator, Sequence

from router.library import Library, skill_folders
from router.profiles.base import Discovery
from router.registry import SkillRegistry

#: Most entries of one skill folder lint looks at for symlinks (a skill folder holds a handful of files).
MAX_SCANNED_ENTRIES = 10_000


def real_roots(roots: Sequence[str | os.PathLike[str]]) -> tuple[str, ...]:
    return tuple(os.path.realpath(os.path.expanduser(os.fspath(r))) for r in roots)


def outside(path: str, roots: Sequence[str]) -> str | None:
    """The real path of ``path`` when it lies outside every one of ``roots`` (real paths), else None."""
    real = os.path.realpath(path)
    for root in roots:
        try:
            if os.path.commonpath([root, real]) == root:
                return None
        except ValueError:  # different drives
            continue
    return real


def confine(discovery: Discovery, roots: Sequence[str | os.PathLike[str]]) -> Discovery:
    """``discovery`` without the skills whose SKILL.md resolves outside every root; each refusal is an error."""
    base = real_roots(roots)
    kept = []
    refused = []
    for skill in discovery.skills:
        target = outside(skill.fs_path, base) if skill.path else None
        if target is None:
            kept.append(skill)
        else:
            refused.append(f"refusing skill {skill.name!r}: {skill.path} leads to {target}, outside every skills "
                           "folder (--confine)")
    if not refused:
        return discovery
    return replace(discovery, skills=tuple(kept), errors=discovery.errors + tuple(refused))


def escaping_links(folder: str, roots: Sequence[str]) -> Iterator[tuple[str, str]]:
    """(link, real target) for each symlink in the skill ``folder`` (the folder itself included, its skill file
    and anything below, links not followed) whose target lies outside every one of ``roots`` (real paths)."""
    if os.path.islink(folder):
        target = outside(folder, roots)
        if target is not None:
            yield folder, target
            return  # everything below leaves the roots too: one warning says it
    seen = 0
    for current, dirs, files in os.walk(folder):
        for entry in sorted(dirs + files):
            seen += 1
            if seen > MAX_SCANNED_ENTRIES:
                return
            path = os.path.join(current, entry)
            if os.path.islink(path):
                target = outside(path, roots)
                if target is not None:
                    yield path, target
        dirs.sort()


def confine_library(library: Library, roots: Sequence[str | os.PathLike[str]] | None) -> Library:
    """``library`` without the skills :func:`confine` refuses; each refusal becomes a note."""
    discovery = library.registry.discovery
    if discovery is None:
        return library
    kept = confine(discovery, skill_folders(roots, library.profile))
    if kept is discovery:
        return library
    paths = {skill.path for skill in kept.skills}
    registry = SkillRegistry([s for s in library.registry if s.path in paths], discovery=kept)
    refused = kept.errors[len(discovery.errors):]
    return replace(library, registry=registry, notes=library.notes + refused)
