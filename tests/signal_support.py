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


def chance_by_formula(router: Router):  # -> router.abstain.Chance
    """The chance level as a router's first route computes it: the first 54 everyday requests scored through its
    signals (a file store's or a database's), the mean best cosine (examples, else dense), the mean
    log(1 + best passage score), the mean log(1 + number of skills with a passage score above zero) and, where the
    bodies' heads are embedded, the mean best head cosine."""
    import numpy as np

    from router import abstain

    sample = list(abstain.EVERYDAY[:54])
    vectors = abstain.everyday_vectors(router.encoder.model_id, router.encode, 384)[:54]
    scores = router.signals.score(sample, vectors)
    best = scores.get("examples", scores["dense"]).max(axis=1)
    return abstain.Chance(best=float(np.mean(best)), lexical=float(np.mean(np.log1p(scores["passages"].max(axis=1)))),
                          matched=float(np.mean(np.log1p((scores["passages"] > 0).sum(axis=1)))),
                          passage=float(np.mean(scores[abstain.PASSAGE].max(axis=1))) if abstain.PASSAGE in scores
                          else None)
