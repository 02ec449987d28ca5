"""A signal is one declaration: a signal defined here only (no other file touched) gets a config weight, is built,
saved and scored, is tuned, and its text invalidates a saved index (router/signals/, router/tune.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from indexes import BM25Index, FakeEncoder
from router import index as library_index
from router.config import RouterConfig
from router.errors import ConfigError
from router.evaluation.labels import Request
from router.evaluation.retrievers import retrievers_for
from router.routing import Router
from router.signals import registered, registry
from router.signals.base import BuildJob, Tuning
from router.tune import tune
from serve_support import write_skill

#: The text the signal indexes, by skill name: what a skill's own data would be (a test changes it in place).
KEYWORDS = {"mail": "zorblax", "maps": "quibbit", "music": "frandle", "notes": "plimsoll"}


class KeywordSignal:
    """BM25 over one invented keyword per skill: lexical, persisted in the index folder, tuned over two weights."""

    name = "keywords"
    lexical = True
    default_weight = 0.0
    position = 70
    reads_body = False
    persisted = True
    row_vectors = False
    whole_body = False
    build_rank = 70
    tuning = Tuning(weights=(0.0, 5.0))

    def text(self, skill: Any, config: RouterConfig) -> str:
        return KEYWORDS.get(skill.name, "")

    def wanted(self, config: RouterConfig) -> bool:
        return True

    def applies(self, texts: Sequence[str]) -> bool:
        return True

    def index_kind(self) -> Any:
        return BM25Index

    def build(self, job: BuildJob) -> Any:
        if job.current:
            return job.previous[self.name]
        self.builds += 1
        return BM25Index.from_texts(job.ids, list(job.texts[self.name]))

    def score(self, index: Any, texts: Sequence[str], vectors: np.ndarray,
              scores: Mapping[str, np.ndarray]) -> np.ndarray:
        return np.stack([index.scores(t) for t in texts])

    builds = 0


@pytest.fixture()
def signal():
    found = KeywordSignal()
    with registered(found):
        yield found
    assert "keywords" not in registry()


@pytest.fixture()
def skills(tmp_path: Path) -> Path:
    for name in KEYWORDS:
        write_skill(tmp_path / "skills", name, f"The {name} helper for everyday work.")
    return tmp_path / "skills"


def test_the_config_weighs_a_registered_signal_and_refuses_it_otherwise(signal) -> None:
    assert RouterConfig().weights["keywords"] == 0.0
    assert RouterConfig(weights={"keywords": 2}).weights["keywords"] == 2.0
    with pytest.raises(ConfigError, match="^unknown signal weight"):
        RouterConfig(weights={"keyword": 1})


def test_a_registered_signal_is_built_saved_scored_and_fused(signal, skills: Path, tmp_path: Path) -> None:
    config = RouterConfig(route_above=0, weights={"keywords": 5.0})
    router = Router.from_skills([str(skills)], config=config, index_folder=str(tmp_path / "i"), encoder=FakeEncoder())
    assert signal.builds == 1 and any(p.name == "keywords" for p in (tmp_path / "i").glob("gen-*/*"))
    top = router.rank("please quibbit this", 1)[0]
    assert top.id == "maps" and top.scores["keywords"] > 0
    assert router.rank("please quibbit this", 1)[0].id == "maps"
    again = Router.from_skills([str(skills)], config=config, index_folder=str(tmp_path / "i"), encoder=FakeEncoder())
    assert signal.builds == 1 and again.embedded_count == 0  # loaded from the folder


def test_the_signal_text_invalidates_the_saved_index(signal, skills: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    config = RouterConfig(route_above=0, weights={"keywords": 5.0})
    Router.from_skills([str(skills)], config=config, index_folder=str(tmp_path / "i"), encoder=FakeEncoder())
    monkeypatch.setitem(KEYWORDS, "music", "quibbit")  # only this signal's text changes
    monkeypatch.setitem(KEYWORDS, "maps", "cartouche")
    monkeypatch.setattr(library_index, "_TEXTS", {})  # a new process (a new version of the signal's code): it
    # does not remember the texts an earlier build in this process had for the same skills
    router = Router.from_skills([str(skills)], config=config, index_folder=str(tmp_path / "i"), encoder=FakeEncoder())
    assert signal.builds == 2
    assert router.rank("please quibbit this", 1)[0].id == "music"


def test_tune_tries_the_weights_the_signal_declares(signal, skills: Path, tmp_path: Path) -> None:
    router = Router.from_skills([str(skills)], config=RouterConfig(route_above=0), index_folder=str(tmp_path / "i"),
                                encoder=FakeEncoder())
    requests = [Request(f"r{n}", f"{word} please", (name,)) for n, (name, word) in enumerate(KEYWORDS.items())]
    result = tune(router, requests * 2, folds=2)
    # fusion x bm25 x keywords (no examples, no bodies beyond the stub "Steps." ones: the body group is tried too)
    assert {g["keywords"] for g in result.grid} == {0.0, 5.0}
    assert len(result.grid) == 2 * 5 * 2 * 3
    assert result.config.weights["keywords"] == 5.0  # the keyword is the only thing that tells the skills apart


def test_eval_offers_the_signal_as_a_retriever(signal, skills: Path, tmp_path: Path) -> None:
    router = Router.from_skills([str(skills)], config=RouterConfig(route_above=0), index_folder=str(tmp_path / "i"),
                                encoder=FakeEncoder())
    request = Request("r", "frandle please", ("music",))
    alone = retrievers_for(router, [request], ["keywords"], depth=1)["keywords"]
    assert [skill for skill, _ in alone(request)] == ["music"]
