"""The name_dense signal (router/signals/name_dense.py): the cosine of the request with the embedding of the name
words alone, fused by z-score like the others (from the formula). It counts where its weight says so, or by the
library's rule: a library without bodies whose names say something their descriptions do not
(``catalogue_names``, the default 0.3)."""

from __future__ import annotations

import numpy as np
import pytest

from indexes import FakeEncoder
from indexes.fusion import normalise
from router.config import RouterConfig
from router.errors import ConfigError
from router.routing import Router
from router.signals import name_dense
from router.skill import Skill
from tests.signal_support import memory_router

SKILLS = [Skill(name="AusPetrolPrices", description="Average daily petrol price in a state."),
          Skill(name="FinanceTool", description="Stay informed with the latest updates and insights."),
          Skill(name="qr-code", description="Make a square image from a link.")]
REQUEST = "finance tool for the price of bitcoin"


@pytest.fixture(autouse=True)
def private_folder(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """No index folder of an earlier run is read: what was embedded is counted from nothing."""
    monkeypatch.chdir(tmp_path)


def router(encoder: FakeEncoder, skills: list[Skill] = SKILLS, **config: object) -> Router:
    return memory_router(encoder, skills, **config)


def expected(scored: object, weights: dict[str, float]) -> np.ndarray:
    return sum(w * normalise(scored.signals[n], "zscore") for n, w in weights.items())  # type: ignore[attr-defined]


def test_the_name_words_alone_are_embedded_and_scored_by_cosine() -> None:
    encoder = FakeEncoder(dim=64)
    routed = router(encoder, weights={"name_dense": 0.5})
    scored = routed.score_many([REQUEST])
    names = encoder.encode(["Aus Petrol Prices", "Finance Tool", "qr code"])
    query = encoder.encode([REQUEST])[0]
    np.testing.assert_allclose(scored.signals["name_dense"][0], names @ query, rtol=1e-6)
    assert routed.embedded_count == 6  # three descriptions and three names
    np.testing.assert_allclose(routed.fuse(scored), expected(scored, {"bm25": 0.3, "dense": 1.0, "name_dense": 0.5,
                                                                        "centrality": 0.2}),
                               rtol=1e-12)


def test_agreement_is_the_mean_cosine_of_each_name_with_its_own_description() -> None:
    names = np.array([[1.0, 0.0], [0.6, 0.8]])
    descriptions = np.array([[0.6, 0.8], [0.6, 0.8]])
    assert name_dense.agreement(names, descriptions) == pytest.approx((0.6 + 1.0) / 2, abs=1e-15)
    assert name_dense.agreement(np.zeros((0, 2)), np.zeros((0, 2))) == 1.0


def test_the_default_counts_names_in_a_catalogue_whose_names_differ_from_its_descriptions() -> None:
    assert RouterConfig().catalogue_names == 0.3 and RouterConfig().weights["name_dense"] == 0.0
    assert name_dense.AGREEMENT == 0.6
    skills = [Skill(name="AusPetrolPrices", description="Average daily petrol price in a state, updated daily."),
              Skill(name="FinanceTool", description="Stay informed with the latest updates and insights."),
              Skill(name="qr-code", description="Make a square image from a link."),
              Skill(name="WeatherTool", description="Forecasts and current conditions for any city.")]
    encoder = FakeEncoder(dim=64)
    routed = router(encoder, skills, weights={"centrality": 0.0})  # the names alone
    vectors = encoder.encode(["Aus Petrol Prices", "Finance Tool", "qr code", "Weather Tool"])
    descriptions = encoder.encode([s.description for s in skills])
    assert name_dense.agreement(vectors, descriptions) < name_dense.AGREEMENT
    scored = routed.score_many(["price insights"])
    np.testing.assert_allclose(scored.signals["name_dense"][0], vectors @ encoder.encode(["price insights"])[0],
                               rtol=1e-6)
    np.testing.assert_allclose(routed.fuse(scored), expected(scored, {"bm25": 0.3, "dense": 1.0, "name_dense": 0.3}),
                               rtol=1e-12)
    # The ranking it should change: the request asks for prices, what one skill's name says; another's description
    # has the other word.
    assert [m.name for m in routed.rank("price insights", 2)] == ["AusPetrolPrices", "FinanceTool"]
    off = routed.with_config(catalogue_names=0.0)
    assert "name_dense" not in off.score_many(["price insights"]).signals and off.embedded_count == 4
    assert [m.name for m in off.rank("price insights", 2)] == ["FinanceTool", "AusPetrolPrices"]


def test_names_that_repeat_their_descriptions_are_embedded_but_not_scored() -> None:
    skills = [Skill(name="get-weather-forecast", description="get weather forecast"),
              Skill(name="book-flight", description="book flight"),
              Skill(name="send-email", description="send email"),
              Skill(name="qr-code", description="Make a square image from a link.")]
    encoder = FakeEncoder(dim=64)
    routed = router(encoder, skills)
    # agreement (1 + 1 + 1 + cos(qr code, the qr description)) / 4 >= 0.6: the names add nothing of their own
    assert "name_dense" not in routed.score_many(["weather tomorrow"]).signals
    assert routed.embedded_count == 5  # four descriptions and the one name that is not a description


def test_a_library_with_bodies_embeds_no_name_unless_the_weight_asks() -> None:
    skills = [Skill(name=s.name, description=s.description, body=f"# {s.name}\nUse it well.") for s in SKILLS]
    encoder = FakeEncoder(dim=64)
    routed = router(encoder, skills)
    # three descriptions and the bodies' heads (one passage each), no name
    assert "name_dense" not in routed.score_many([REQUEST]).signals and routed.embedded_count == 3 + 3
    weighed = routed.with_config(weights={"name_dense": 0.3})  # the index part changed: built again, with names
    assert "name_dense" in weighed.score_many([REQUEST]).signals


@pytest.mark.parametrize("value", [-0.1, True, "0.3", float("nan")])
def test_catalogue_names_must_be_a_number_at_least_zero(value: object) -> None:
    with pytest.raises(ConfigError, match=r"catalogue_names must be"):
        RouterConfig(catalogue_names=value)  # type: ignore[arg-type]
