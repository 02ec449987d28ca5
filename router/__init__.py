"""skill-router: route a request to the few agent skills that matter, rendered exactly as the harness renders.

Two lines::

    from router import Router
    router = Router.from_skills("skills", profile="genkit")
    print(router.render("review my Go code"))

Importing this package does not import torch, sentence-transformers or faiss; they load when a dense index is
first needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from router.errors import SkillRouterError
from router.skill import Skill

__all__ = ["Router", "Skill", "SkillRegistry", "SkillRouterError", "__version__"]

if TYPE_CHECKING:
    from router.registry import SkillRegistry
    from router.routing import Router

    __version__: str


def __getattr__(name: str) -> Any:
    # Loaded on first use: the profiles (YAML) and the package metadata cost ~0.1 s, which a prompt hook answered
    # by a running server must not pay on every prompt.
    if name == "Router":
        from router.routing import Router

        return Router
    if name == "SkillRegistry":
        from router.registry import SkillRegistry

        return SkillRegistry
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            value = version("skill-router")
        except PackageNotFoundError:  # running from a source tree that was never installed
            value = "0.0.0"
        globals()["__version__"] = value
        return value
    raise AttributeError(f"module 'router' has no attribute {name!r}")
