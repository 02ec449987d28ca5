"""What the commands share: building the library or router from the common options, and printing."""

from __future__ import annotations

import json
import sys
from typing import Any

from router.config import RouterConfig, find_config
from router.errors import ConfigError


def config_from(args: Any, **overrides: Any) -> RouterConfig:
    return find_config(getattr(args, "config", None)).with_(**overrides)


def roots(args: Any) -> list[str] | None:
    """The --skills folders; without any, ``skills``, or None (the harness's own discovery from the working
    folder and the home folder) for a profile with no default roots (codex, claude-code)."""
    if args.skills:
        return args.skills
    from router.profiles import get_profile

    return ["skills"] if get_profile(args.profile).default_roots else None


def make_router(args: Any, encoder: Any = None, **overrides: Any):
    """The router the options describe (nothing is indexed until a route needs it). ``encoder`` shares an
    already loaded embedding model (a server rebuilding its router)."""
    from router.routing import Router

    config = config_from(args, **{"model": getattr(args, "model", None), **overrides})
    pinned = getattr(args, "pin", None) or ()
    excluded = getattr(args, "exclude", None) or ()
    if args.catalog:
        if args.skills:
            raise ConfigError("give either --skills or --catalog, not both")
        return Router.from_catalog(args.catalog, args.profile, config, index_folder=args.index_dir, pinned=pinned,
                                   excluded=excluded, encoder=encoder)
    return Router.from_skills(roots(args), args.profile, config, index_folder=args.index_dir, pinned=pinned,
                              excluded=excluded, encoder=encoder)


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")


def report_notes(notes: list[str]) -> None:
    for note in notes:
        print(f"note: {note}", file=sys.stderr)


def read_query(query: str | None) -> str:
    """The request from the argument, or from stdin when the argument is '-'."""
    if query == "-":
        query = sys.stdin.read()
    if query is None or not query.strip():
        raise ConfigError("the request is empty: give the text to route, e.g. skill-router route \"review my Go "
                          "code\"")
    return query
