"""RouterConfig: defaults, validation messages, and the JSON file round trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from router.config import DEFAULT_WEIGHTS, RouterConfig, find_config
from router.errors import ConfigError


def test_defaults() -> None:
    config = RouterConfig()
    assert (config.k, config.route_above, config.fusion, config.rrf_k) == (5, 15, "zscore", 60)
    assert config.weights == {"bm25": 0.3, "dense": 1.0, "examples": 2.0, "body_bm25": 0.0, "body_dense": 0.0,
                              "passages": 0.8, "name_dense": 0.0, "centrality": 0.2,
                              "passage_dense": 0.5} == DEFAULT_WEIGHTS
    assert (config.threshold, config.on_abstain, config.body, config.body_tokens) == (None, "top-k", "lead", 150)
    assert (config.model, config.context_weight) == (None, 0.3)


def test_partial_weights_are_completed_from_the_defaults() -> None:
    assert RouterConfig(weights={"bm25": 2}).weights == {**DEFAULT_WEIGHTS, "bm25": 2.0}


def test_config_is_frozen() -> None:
    with pytest.raises(AttributeError):
        RouterConfig().k = 3  # type: ignore[misc]


@pytest.mark.parametrize(("changes", "message"), [
    ({"fusion": "borda"}, "unknown fusion 'borda': choose one of rrf, minmax, zscore"),
    ({"weights": {"dense": -1.0}}, "weights must be numbers >= 0, got {'dense': -1.0}"),
    ({"weights": {"dense": float("nan")}}, "weights must be numbers >= 0"),
    ({"weights": {"title": 1.0}}, "unknown signal weight(s) title: weights are for bm25, dense, examples"),
    ({"k": 0}, "k must be a whole number >= 1, got 0"),
    ({"k": True}, "k must be a whole number >= 1, got True"),
    ({"route_above": -1}, "route_above must be a whole number >= 0, got -1"),
    ({"on_abstain": "nothing"}, "on_abstain must be 'top-k' or 'empty', got 'nothing'"),
    ({"body": "all"}, "unknown body mode 'all': choose one of none, headings, lead"),
    ({"rrf_k": 0}, "rrf_k must be a number > 0, got 0"),
    ({"body_tokens": 0}, "body_tokens must be a whole number >= 1, got 0"),
    ({"threshold": "high"}, "threshold must be a number"),
    ({"context_weight": -0.5}, "context_weight must be a number >= 0, got -0.5"),
])
def test_validation_errors_name_the_value(changes: dict, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        RouterConfig(**changes)
    assert message in str(error.value)


def test_unknown_key_in_a_file(tmp_path: Path) -> None:
    path = tmp_path / "skill-router.json"
    path.write_text(json.dumps({"k": 3, "fusoin": "rrf"}), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"unknown key\(s\) fusoin; known keys: body, body_tokens"):
        RouterConfig.load(path)


def test_bad_value_in_a_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"fusion": "borda"}), encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown fusion 'borda'"):
        RouterConfig.load(path)
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ConfigError, match="must hold a JSON object"):
        RouterConfig.load(path)
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match="cannot be read"):
        RouterConfig.load(path)
    with pytest.raises(ConfigError, match="does not exist: run 'skill-router tune'"):
        RouterConfig.load(tmp_path / "missing.json")


def test_save_load_round_trip(tmp_path: Path) -> None:
    config = RouterConfig(k=3, route_above=0, fusion="rrf", weights={"bm25": 0.25, "dense": 1.5, "examples": 0.0},
                          rrf_k=10, threshold=0.35, on_abstain="empty", body="lead", body_tokens=40,
                          model="/models/mini", context_weight=0.5)
    path = tmp_path / "skill-router.json"
    config.save(path, extra={"split": "dev", "score": 0.61})
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["schema"] == "skill-router.config/1" and data["tuning"] == {"split": "dev", "score": 0.61}
    assert RouterConfig.load(path) == config
    assert RouterConfig.load(path).to_json() == config.to_json()
    assert not (tmp_path / "skill-router.json.tmp").exists()


def test_with_changes_some_values_and_ignores_none() -> None:
    config = RouterConfig(threshold=0.2).with_(k=7, threshold=None, fusion="minmax")
    assert (config.k, config.threshold, config.fusion) == (7, 0.2, "minmax")
    with pytest.raises(ConfigError):
        RouterConfig().with_(k=-1)


def test_find_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert find_config(None) == RouterConfig()
    RouterConfig(k=9).save(tmp_path / "skill-router.json")
    assert find_config(None).k == 9
    RouterConfig(k=2).save(tmp_path / "other.json")
    assert find_config(str(tmp_path / "other.json")).k == 2
