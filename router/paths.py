"""Relative paths inside a skill resolve against the skill directory (the parent of SKILL.md).

This is the rule every profile states to the model; the resolved absolute path is what goes into tool calls.
"""

from __future__ import annotations

import os

from router.errors import ConfigError, PathEscapeError, brief
from router.skill import Skill


def resolve_skill_path(skill: Skill, relative: str, *, strict: bool = False) -> str:
    """Resolve ``relative`` (a path found in the skill's file) against the skill directory.

    Returns the absolute, normalised path. With ``strict`` (for any surface that reads files on a caller's
    behalf) symlinks are resolved first and a path that leaves the skill folder raises
    :class:`PathEscapeError` naming the skill and the path.
    """
    if not isinstance(relative, str):
        raise ConfigError(f"the path to resolve in skill '{skill.name}' must be a string, got {brief(relative)}")
    if "\x00" in relative:
        raise ConfigError(f"path {brief(relative)} in skill '{skill.name}' holds a NUL character, which no file "
                          "name can hold")
    directory = skill.fs_directory
    if not directory:
        raise PathEscapeError(f"skill '{skill.name}' has no folder (it comes from a catalogue), so "
                              f"'{relative}' cannot be resolved against it")
    resolved = os.path.normpath(os.path.join(directory, os.path.expanduser(relative)))
    if not strict:
        return resolved
    real_dir = os.path.realpath(directory)
    real = os.path.realpath(resolved)
    if os.path.commonpath([real_dir, real]) != real_dir:
        raise PathEscapeError(f"path '{relative}' in skill '{skill.name}' resolves to '{real}', outside the skill "
                              f"folder '{real_dir}'; only files inside the skill folder can be read")
    return real
