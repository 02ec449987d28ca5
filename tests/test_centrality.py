"""The centrality signal (router/signals/centrality.py): each skill's description vector against the mean of all
of them, the same score for every request, fused by z-score with the others (from the formula); routing
confidence does not read it."""

from __future__ import annotations

import numpy as np
import pytest

from indexes import FakeEncoder
from indexes.fusion import normalise
from router.config import RouterConfig
from router.ranking import confidences
from router.routing import Router
from router.signals.centrality import centrality
from router.skill import Skill
from tests.signal_support import memory_router

SKILLS = [Skill(name="finance", description="Latest updates on stocks, funds, markets and prices.", body="# Use\n."),
          Skill(name="petrol", description="Daily petrol prices.", body="# Use\n."),
          Skill(name="stocks", description="Quotes for stocks and funds.", body="# Use\n."),
          Skill(name="weather", description="Rain and wind for tomorrow.", body="# Use\n.")]


@pytest.fixture(autouse=True)
def private_folder(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)


def router(encoder: FakeEncoder, skills: list[Skill] = SKILLS, **config: object) -> Router:
    return memory_router(encoder, skills, **config)


def test_centrality_is_each_row_against_the_mean_row() -> None:
    vectors = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]])
    # mean (1.6 / 3, 1.8 / 3): rows 1.6 / 3, (0.96 + 1.44) / 3, 1.8 / 3
    np.testing.assert_allclose(centrality(vectors), [1.6 / 3, 2.4 / 3, 1.8 / 3], rtol=1e-15)
    assert centrality(np.zeros((0, 2))).shape == (0,)


def test_the_default_weighs_it_0_2_the_same_for_every_request_and_not_in_the_confidence() -> None:
    assert RouterConfig().weights["centrality"] == 0.2
    encoder = FakeEncoder(dim=64)
    routed = router(encoder)
    requests = ["petrol prices", "rain tomorrow"]
    scored = routed.score_many(requests)
    vectors = encoder.encode([s.description for s in SKILLS])
    expected = vectors @ vectors.mean(axis=0)
    np.testing.assert_allclose(scored.signals["centrality"], [expected, expected], rtol=1e-6)
    fused = sum(w * normalise(scored.signals[n], "zscore") for n, w in
                (("bm25", 0.3), ("dense", 1.0), ("passages", 0.8), ("centrality", 0.2)))
    np.testing.assert_allclose(routed.fuse(scored), fused, rtol=1e-12)
    plain = routed.with_config(weights={"centrality": 0.0})
    assert "centrality" not in plain.score_many(requests).signals
    np.testing.assert_array_equal(confidences(scored.signals), confidences(plain.score_many(requests).signals))


def test_it_lifts_the_broad_skill_when_the_request_tells_the_narrow_ones_apart_by_nothing() -> None:
    skills = [Skill(name=name, description=text, body="# Use\n.") for name, text in (
        ("finance", "Updates on stocks, bonds, funds, markets and prices."), ("petrol", "Daily petrol prices."),
        ("stocks", "Quotes for stocks."), ("funds", "Ratings of funds."), ("bonds", "Yields of bonds."),
        ("weather", "Rain and wind for tomorrow."))]
    encoder = FakeEncoder(dim=64)
    routed = router(encoder, skills)
    # The request shares no word with any skill: without centrality a hashing collision of "today" / "my" with
    # "bonds" decides; with it the skill that covers the field of four others comes first.
    assert [m.name for m in routed.with_config(weights={"centrality": 0.0}).rank("today my", 2)] == ["bonds", "finance"]
    assert [m.name for m in routed.rank("today my", 2)] == ["finance", "funds"]
