"""skill-router: route a request to the few agent skills that matter, rendered exactly as the harness renders.

Two lines::

    from router import Router
    router = Router.from_skills("skills", profile="genkit")
    print(router.render("review my Go code"))

Importing this package does not import torch, sentence-transformers or faiss; they load when a dense index is
first needed.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version as _version
from typing import TYPE_CHECKING, Any

from router.errors import SkillRouterError
from router.registry import SkillRegistry
from router.skill import Skill

try:
    __version__ = _version("skill-router")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"

__all__ = ["Router", "Skill", "SkillRegistry", "SkillRouterError", "__version__"]

if TYPE_CHECKING:
    from router.routing import Router


def __getattr__(name: str) -> Any:
    if name == "Router":
        from router.routing import Router

        return Router
    raise AttributeError(f"module 'router' has no attribute {name!r}")
