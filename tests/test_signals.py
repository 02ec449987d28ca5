"""The signals as an extension point (router/signals/): the registry the config and the evaluation read, and
fusion's masking derived from each signal's ``lexical`` flag (reciprocal rank fusion, written from the formula)."""

from __future__ import annotations

import numpy as np
import pytest

from router.config import DEFAULT_WEIGHTS, RouterConfig
from router.errors import ConfigError
from router.evaluation.retrievers import RETRIEVERS
from router.index import LibraryIndex, LibrarySource
from router.profiles import get_profile
from router.registry import SkillRegistry
from router.routing import Router, Scored
from router.signals import Signals, lexical_names, names, registry
from router.skill import Skill
from router.spec import LibrarySpec


def router(config: RouterConfig) -> Router:
    """A router over three skills that fuses given scores (no signal is built: fusion needs only the id order)."""
    skills = [Skill(name=n, description=f"The {n} skill.", body=f"Body of {n}.") for n in ("alpha", "beta", "gamma")]
    source = LibrarySource(LibrarySpec.create([]), config, SkillRegistry(skills), get_profile("agentskills"))
    return Router(LibraryIndex(source, Signals(tuple(s.id for s in skills), {})))


def scored(signals: dict[str, list[float]]) -> Scored:
    return Scored(("a request",), np.zeros((1, 4)), {n: np.array([v]) for n, v in signals.items()}, {},
                  np.zeros(0, dtype=np.int64))


def test_every_signal_is_declared_once_with_its_kind_and_default_weight() -> None:
    assert names() == ("bm25", "dense", "examples", "body_bm25", "body_dense", "passages", "name_dense",
                       "centrality", "passage_dense")
    assert lexical_names() == {"bm25", "body_bm25", "passages"}
    assert DEFAULT_WEIGHTS == {"bm25": 0.3, "dense": 1.0, "examples": 2.0, "body_bm25": 0.0, "body_dense": 0.0,
                               "passages": 0.8, "name_dense": 0.0, "centrality": 0.2, "passage_dense": 0.5}
    assert {name: s.persisted for name, s in registry().items()} == {
        "bm25": True, "dense": True, "examples": False, "body_bm25": True, "body_dense": False, "passages": False,
        "name_dense": False, "centrality": False, "passage_dense": False}
    assert RETRIEVERS == ("bm25", "dense", "examples", "body_bm25", "body_dense", "passages", "name_dense",
                          "centrality", "passage_dense", "rrf", "default",
                          "default-no-examples")


def test_the_config_validates_weights_against_the_registry() -> None:
    with pytest.raises(ConfigError, match=r"^unknown signal weight\(s\) title_bm25: weights are for bm25, dense, "
                                          r"examples, body_bm25, body_dense, passages, name_dense, centrality, "
                                          r"passage_dense$"):
        RouterConfig(weights={"title_bm25": 1.0})


def test_rrf_ranks_only_the_skills_a_lexical_body_signal_scores() -> None:
    """sum_i w_i / (k + rank_i(d)) over the skills each signal ranks (Cormack et al. 2009). dense ranks alpha 1,
    beta 2, gamma 3; body_bm25 scores only beta (rank 1): alpha and gamma, which share no word of their body with
    the request, get nothing from it (before: 0.5/62 and 0.5/63, by the order of their ids). bm25 scores nothing."""
    config = RouterConfig(fusion="rrf", rrf_k=60, weights={"bm25": 0.3, "dense": 1.0, "body_bm25": 0.5})
    fused = router(config).fuse(scored({"bm25": [0.0, 0.0, 0.0], "dense": [0.9, 0.5, 0.1],
                                        "body_bm25": [0.0, 2.0, 0.0]}))
    assert fused[0].tolist() == pytest.approx([1 / 61, 1 / 62 + 0.5 / 61, 1 / 63], rel=1e-12)
    assert router(config).rank_scored(scored({"bm25": [0.0, 0.0, 0.0], "dense": [0.9, 0.5, 0.1],
                                              "body_bm25": [0.0, 2.0, 0.0]}), 3)[0][0].id == "beta"


def test_rrf_still_credits_every_skill_for_a_dense_signal() -> None:
    """body_dense is not lexical: every skill gets w / (k + rank)."""
    config = RouterConfig(fusion="rrf", rrf_k=10, weights={"bm25": 0.0, "dense": 1.0, "body_dense": 2.0})
    fused = router(config).fuse(scored({"bm25": [0.0, 0.0, 0.0], "dense": [0.1, 0.5, 0.9],
                                        "body_dense": [0.0, 0.0, 0.3]}))
    # dense: gamma 1, beta 2, alpha 3; body_dense: gamma 1, then alpha 2 and beta 3 (tied at 0, by id)
    assert fused[0].tolist() == pytest.approx([1 / 13 + 2 / 12, 1 / 12 + 2 / 13, 1 / 11 + 2 / 11], rel=1e-12)
