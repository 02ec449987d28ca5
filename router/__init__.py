"""skill-router: route a request to the few agent skills that matter, rendered exactly as the harness renders.

Two lines::

    from router import Router
    router = Router.from_skills("skills", profile="genkit")
    print(router.render("review my Go code"))

The public surface:

- :class:`Router` (``router.routing``): ``from_skills`` / ``from_catalog`` build one; ``route`` / ``route_many``
  say what a catalogue shows (a :class:`Routing`), ``rank`` / ``rank_many`` give the ranked :class:`Match` list,
  ``score_many`` and ``fuse`` the scores underneath; ``render``, ``inject``, ``tool`` and ``call_tool`` speak the
  harness's own format; ``with_config`` and ``with_examples`` return a changed copy.
- :class:`RouterConfig`: every routing parameter, one frozen value (``skill-router tune`` writes it).
- :class:`Skill` and :class:`SkillRegistry`: the skills a profile found, by name.
- :class:`SkillRouterError`: the base of every error a user can cause (``router.errors`` draws the hierarchy).

Importing this package does not import torch, sentence-transformers or faiss; they load when a dense index is
first needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from router.errors import SkillRouterError

__all__ = ["Match", "Router", "RouterConfig", "Routing", "Skill", "SkillRegistry", "SkillRouterError", "__version__"]

if TYPE_CHECKING:
    from router.config import RouterConfig
    from router.ranking import Match, Routing
    from router.registry import SkillRegistry
    from router.routing import Router
    from router.skill import Skill

    __version__: str

# Loaded on first use: the registry pulls in every profile (YAML), the package metadata costs tens of ms and even
# Skill's dataclass machinery (dataclasses, inspect) costs several, which a prompt hook answered by a running
# server must not pay on every prompt.
_LAZY = {"Router": "router.routing", "Match": "router.ranking", "Routing": "router.ranking",
         "RouterConfig": "router.config", "SkillRegistry": "router.registry", "Skill": "router.skill"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    if name == "__version__":
        from router.version import package_version

        value = package_version()
        globals()["__version__"] = value
        return value
    raise AttributeError(f"module 'router' has no attribute {name!r}")
