"""Harness profiles: one module per harness, found by name.

Every module in this package that defines ``PROFILE`` (a :class:`~router.profiles.base.Profile`) is a
profile; adding a harness is adding one file. What a profile may provide is listed in :mod:`router.profiles.base`.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from typing import Iterator, Sequence

from router.errors import ConfigError
from router.profiles.base import Capability, Discovery, Profile, ToolSpec

__all__ = ["Capability", "Discovery", "Profile", "ToolSpec", "get_profile", "profile_choices", "profile_names",
           "with_capability", "DEFAULT_PROFILE"]

DEFAULT_PROFILE = "agentskills"


def _load() -> dict[str, Profile]:
    found: dict[str, Profile] = {}
    for module in pkgutil.iter_modules(__path__):
        if module.name == "base":
            continue
        profile = getattr(importlib.import_module(f"{__name__}.{module.name}"), "PROFILE", None)
        if isinstance(profile, Profile):
            found[profile.name] = profile
    return dict(sorted(found.items()))


#: The profiles known so far, by name: every one once :func:`_everything` ran, before that only those asked for by
#: name (a prompt hook routing in-process needs its harness's profile, not the import of all eight modules).
_PROFILES: dict[str, Profile] = {}
_ALL_LOADED = False


def _everything() -> dict[str, Profile]:
    """Every profile, sorted by name (then any added by hand), imported on first use."""
    global _ALL_LOADED
    if not _ALL_LOADED:
        loaded = _load()
        added = {name: profile for name, profile in _PROFILES.items() if name not in loaded}
        _PROFILES.clear()
        _PROFILES.update(loaded)
        _PROFILES.update(added)
        _ALL_LOADED = True
    return _PROFILES


def _named(name: str) -> Profile | None:
    """The profile ``name`` from the module of that name (``claude-code``: ``claude_code``) alone, if it is there."""
    module = name.replace("-", "_")
    if _ALL_LOADED or not module.isidentifier() or module == "base" or \
            not os.path.isfile(os.path.join(__path__[0], f"{module}.py")):
        return None
    profile = getattr(importlib.import_module(f"{__name__}.{module}"), "PROFILE", None)
    if isinstance(profile, Profile) and profile.name == name:
        _PROFILES.setdefault(name, profile)
        return _PROFILES[name]
    return None


def profile_names() -> tuple[str, ...]:
    """The names of every available profile, sorted."""
    return tuple(_everything())


class _Names(Sequence[str]):
    """:func:`profile_names`, imported only when listed: whether it holds one name imports that profile alone."""

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in _PROFILES or _named(name) is not None or name in _everything())

    def __iter__(self) -> Iterator[str]:
        return iter(profile_names())

    def __len__(self) -> int:
        return len(profile_names())

    def __getitem__(self, index):
        return profile_names()[index]


def profile_choices() -> Sequence[str]:
    """The profile names as a command line's choices: checking ``--profile genkit`` imports the genkit profile, not
    all eight (listing them, for help or an error, imports every one)."""
    return _Names()


def get_profile(name: str | Profile) -> Profile:
    """The profile called ``name``; raises ConfigError naming the known profiles otherwise."""
    if isinstance(name, Profile):
        return name
    found = _PROFILES.get(name) or _named(name)
    if found is not None:
        return found
    try:
        return _everything()[name]
    except KeyError:
        raise ConfigError(f"unknown profile '{name}': choose one of {', '.join(_PROFILES)}") from None


def with_capability(capability: Capability) -> tuple[str, ...]:
    """The names of the available profiles that provide ``capability``, sorted."""
    return tuple(name for name, profile in _everything().items() if profile.provides(capability))


def either(names: Sequence[str], *, flag: str = "") -> str:
    """``a``, ``a or b``, ``a, b or c`` (each after ``flag`` when given): profile names for a message."""
    shown = [f"{flag}{n}" for n in names]
    return " or ".join([", ".join(shown[:-1]), shown[-1]]) if len(shown) > 1 else "".join(shown)
