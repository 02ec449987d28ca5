"""Harness profiles: one module per harness, found by name.

Every module in this package that defines ``PROFILE`` (a :class:`~router.profiles.base.Profile`) is a
profile; adding a harness is adding one file.
"""

from __future__ import annotations

import importlib
import pkgutil

from router.errors import ConfigError
from router.profiles.base import Discovery, Profile, ToolSpec

__all__ = ["Discovery", "Profile", "ToolSpec", "get_profile", "profile_names", "DEFAULT_PROFILE"]

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
