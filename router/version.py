"""The package version, read once from the installed metadata (one source: pyproject.toml)."""

from __future__ import annotations

import os
import sys
from functools import lru_cache

DISTRIBUTION = "skill-router"


@lru_cache(maxsize=1)
def package_version() -> str:
    """``skill-router``'s version; ``0.0.0`` when running from a source tree that was never installed. Read on
    first use, and from the name of the installed ``.dist-info`` folder when there is one: importing
    :mod:`importlib.metadata` (email parsing, zipfile, ...) costs 10-15 ms, which a prompt hook asking its warm
    server (whose state file names the version it runs) must not pay on every prompt."""
    found = dist_info_version()
    if found is not None:
        return found
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "0.0.0"


def dist_info_version(path: list[str] | None = None) -> str | None:
    """The version in the name of the first ``skill_router-<version>.dist-info`` folder on ``path`` (default
    ``sys.path``), searched in the order :func:`importlib.metadata.version` searches it; None when the first
    match is not a plain folder name of that form (an egg, a zip), so that the caller asks importlib.metadata."""
    prefix = DISTRIBUTION.replace("-", "_") + "-"
    for entry in sys.path if path is None else path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            lowered = name.lower()
            if lowered.startswith(prefix) and lowered.endswith(".dist-info"):
                if not os.path.isfile(os.path.join(entry or ".", name, "METADATA")):
                    return None
                return name[len(prefix):-len(".dist-info")] or None
            if lowered.replace("-", "_").startswith(prefix[:-1]) and lowered.endswith((".egg-info", ".egg")):
                return None
    return None
