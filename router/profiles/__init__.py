"""Harness profiles: one module per harness, found by name.

Every module in this package that defines ``PROFILE`` (a :class:`~router.profiles.base.Profile`) is a
profile; adding a harness is adding one file. What a profile may provide is listed in :mod:`router.profiles.base`.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Sequence

from router.errors import ConfigError
from router.profiles.base import Capability, Discovery, Profile, ToolSpec

__all__ = ["Capability", "Discovery", "Profile", "ToolSpec", "get_profile", "profile_names", "with_capability",
           "DEFAULT_PROFILE"]

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


_PROFILES = _load()


def profile_names() -> tuple[str, ...]:
    """The names of every available profile, sorted."""
    return tuple(_PROFILES)


def get_profile(name: str | Profile) -> Profile:
    """The profile called ``name``; raises ConfigError naming the known profiles otherwise."""
    if isinstance(name, Profile):
        return name
    try:
        return _PROFILES[name]
    except KeyError:
        raise ConfigError(f"unknown profile '{name}': choose one of {', '.join(_PROFILES)}") from None


def with_capability(capability: Capability) -> tuple[str, ...]:
    """The names of the available profiles that provide ``capability``, sorted."""
    return tuple(name for name, profile in _PROFILES.items() if profile.provides(capability))


def either(names: Sequence[str], *, flag: str = "") -> str:
    """``a``, ``a or b``, ``a, b or c`` (each after ``flag`` when given): profile names for a message."""
    shown = [f"{flag}{n}" for n in names]
    return " or ".join([", ".join(shown[:-1]), shown[-1]]) if len(shown) > 1 else "".join(shown)
