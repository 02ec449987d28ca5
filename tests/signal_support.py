"""A router over skills held in memory, nothing saved: what the signal tests score (each test module makes its
working folder private, so no index folder of an earlier run is read)."""

from __future__ import annotations

from collections.abc import Sequence

from indexes import FakeEncoder
from router.config import RouterConfig
from router.index import LibraryIndex, LibrarySource
from router.profiles import get_profile
from router.registry import SkillRegistry
from router.routing import Router
from router.skill import Skill
from router.spec import LibrarySpec


def memory_router(encoder: FakeEncoder, skills: Sequence[Skill], **config: object) -> Router:
    """A router over ``skills`` that routes every request (``route_above`` 0), built with ``encoder``."""
    chosen = RouterConfig(route_above=0, **config)  # type: ignore[arg-type]
    source = LibrarySource(LibrarySpec.create([]), chosen, SkillRegistry(list(skills)), get_profile("agentskills"),
                           chosen_encoder=encoder)
    return Router(LibraryIndex.create(source, persist=False))
