"""The package version, read once from the installed metadata (one source: pyproject.toml)."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def package_version() -> str:
    """``skill-router``'s version; ``0.0.0`` when running from a source tree that was never installed. Read on
    first use: the package metadata costs tens of ms, which a prompt hook must not pay on every prompt."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("skill-router")
    except PackageNotFoundError:
        return "0.0.0"
