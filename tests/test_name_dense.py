"""The name_dense signal (router/signals/name_dense.py): the cosine of the request with the embedding of the name
words alone, built only when it weighs something, fused by z-score like the others (from the formula)."""

from __future__ import annotations

import numpy as np
import pytest

from indexes import FakeEncoder
from indexes.fusion import normalise
from router.config import RouterConfig
from router.profiles import get_profile
from router.index import LibraryIndex, LibrarySource
from router.registry import SkillRegistry
from router.routing import Router
from router.skill import Skill
from router.spec import LibrarySpec

SKILLS = [Skill(name="AusPetrolPrices", description="Average daily petrol price in a state."),
          Skill(name="FinanceTool", description="Stay informed with the latest updates and insights."),
          Skill(name="qr-code", description="Make a square image from a link.")]


def router(weight: float, encoder: FakeEncoder) -> Router:
    config = RouterConfig(route_above=0, weights={"name_dense": weight})
    source = LibrarySource(LibrarySpec.create([]), config, SkillRegistry(SKILLS), get_profile("agentskills"),
                           chosen_encoder=encoder)
    return Router(LibraryIndex.create(source, persist=False))


def test_the_name_words_alone_are_embedded_and_scored_by_cosine() -> None:
    encoder = FakeEncoder(dim=64)
    routed = router(0.3, encoder)
    request = "finance tool for the price of bitcoin"
    scored = routed.score_many([request])
    names = encoder.encode(["Aus Petrol Prices", "Finance Tool", "qr code"])
    query = encoder.encode([request])[0]
    np.testing.assert_allclose(scored.signals["name_dense"][0], names @ query, rtol=1e-6)
    assert routed.embedded_count == 6  # three descriptions and three names
    fused = routed.fuse(scored)
    expected = sum(w * normalise(scored.signals[n], "zscore") for n, w in
                   (("bm25", 0.3), ("dense", 1.0), ("name_dense", 0.3)))
    np.testing.assert_allclose(fused, expected, rtol=1e-12)


@pytest.mark.parametrize("weight", [0.0])
def test_at_weight_zero_no_name_is_embedded_and_nothing_changes(weight: float) -> None:
    encoder = FakeEncoder(dim=64)
    plain = router(weight, encoder)
    scored = plain.score_many(["price of petrol"])
    assert "name_dense" not in scored.signals and plain.embedded_count == 3
    weighed = plain.with_config(weights={"name_dense": 0.3})  # the index part changed: built again, with names
    assert "name_dense" in weighed.score_many(["price of petrol"]).signals
