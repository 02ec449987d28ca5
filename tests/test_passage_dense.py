"""The passage_dense signal (router/signals/passage_dense.py): each skill's score is the request's mean cosine with
the first HEAD passages of its body, each cut to its first WORDS words (a skill without a body keeps its
description's cosine), from the formula; built by default, absent without bodies (a catalogue embeds nothing more)
and past the passage limit; built from the embedding cache, so a refresh embeds only the passages of an edited
body."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import write_skill
from indexes import FakeEncoder
from indexes.fusion import normalise
from router import passages
from router.config import RouterConfig
from router.ranking import confidences
from router.routing import Router
from router.signals import passage_dense
from router.skill import Skill
from tests.signal_support import memory_router

LONG = "\n\n".join(f"## Part {n}\n\n" + " ".join(f"word{n}x{i}" for i in range(40)) for n in range(6))
SKILLS = [Skill(name="bisect", description="Find the commit that broke a build.", body=LONG),
          Skill(name="poems", description="Write short rhyming poems.", body="# Poems\n\nCount syllables.\n"),
          Skill(name="weather", description="Rain and wind for tomorrow."),  # no body
          Skill(name="csv", description="Clean messy CSV files.", body="# CSV\n\nFix the dates with pandas.\n")]


WEIGHED = {"passage_dense": 0.5}  # the default, chosen on the dev sets
#: The head of LONG: its first three sections, 16 words each (the heading's two words counted).
LONG_HEAD = [f"Part {n} " + " ".join(f"word{n}x{i}" for i in range(14)) for n in range(3)]


@pytest.fixture(autouse=True)
def private_folder(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)


def test_the_head_is_the_first_16_words_of_the_first_three_passages_of_the_cut() -> None:
    assert (passage_dense.HEAD, passage_dense.WORDS) == (3, 16)
    cut = passages.passages(LONG)
    assert len(cut) == 6 and cut[0] == "Part 0 " + " ".join(f"word0x{i}" for i in range(40))
    assert passage_dense.head_passages(LONG) == LONG_HEAD
    assert passage_dense.head_passages("# Poems\n\nCount syllables.\n") == ["Poems Count syllables."]
    assert passage_dense.head_passages("  \n") == []


def test_head_vectors_average_each_skills_passages_and_keep_the_fallback_without_any() -> None:
    fallback = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    vectors = np.array([[1.0, 0.0], [0.0, 1.0], [0.8, 0.6]])
    heads = [["a", "b"], [], ["c"]]
    np.testing.assert_array_equal(passage_dense.head_vectors(heads, fallback, vectors),
                                  [[0.5, 0.5], [0.0, 1.0], [0.8, 0.6]])


def test_the_score_is_the_mean_cosine_with_the_head_passages_fused_at_0_5() -> None:
    assert RouterConfig().weights["passage_dense"] == 0.5
    encoder = FakeEncoder(dim=64)
    routed = memory_router(encoder, SKILLS, weights=WEIGHED)
    requests = ["which commit broke it", "rain tomorrow"]
    scored = routed.score_many(requests)
    queries = encoder.encode(requests)
    expected = np.stack([
        encoder.encode(LONG_HEAD).mean(axis=0),
        encoder.encode(["Poems Count syllables."])[0],
        encoder.encode(["Rain and wind for tomorrow."])[0],  # no body: the description's vector
        encoder.encode(["CSV Fix the dates with pandas."])[0]])
    np.testing.assert_allclose(scored.signals["passage_dense"], queries @ expected.T, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(scored.signals["passage_dense"][:, 2], scored.signals["dense"][:, 2], rtol=1e-6)
    fused = sum(w * normalise(scored.signals[n], "zscore") for n, w in
                (("bm25", 0.3), ("dense", 1.0), ("passages", 0.8), ("centrality", 0.2), ("passage_dense", 0.5)))
    np.testing.assert_allclose(routed.with_config(split_weight=0).fuse(scored), fused, rtol=1e-12)
    # the routing confidence and the "no skill fits" inputs do not read it
    plain = routed.with_config(weights={"passage_dense": 0.0})
    assert "passage_dense" not in plain.score_many(requests).signals
    np.testing.assert_array_equal(confidences(scored.signals), confidences(plain.score_many(requests).signals))


def test_a_catalogue_without_bodies_has_no_such_signal_and_ranks_as_without_it() -> None:
    catalogue = [Skill(name=s.name, description=s.description) for s in SKILLS]
    routed = memory_router(FakeEncoder(dim=64), catalogue, weights=WEIGHED)
    scored = routed.score_many(["rain tomorrow", "clean my csv"])
    assert "passage_dense" not in scored.signals and "passage_dense" not in routed.signals.indexes
    plain = routed.with_config(weights={"passage_dense": 0.0})
    np.testing.assert_array_equal(routed.fuse(scored), plain.fuse(plain.score_many(["rain tomorrow",
                                                                                    "clean my csv"])))


def test_past_the_passage_limit_there_is_no_such_signal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(passages, "MAX_SKILLS", 3)
    routed = memory_router(FakeEncoder(dim=64), SKILLS, weights=WEIGHED)
    assert "passage_dense" not in routed.score_many(["rain"]).signals


def test_a_refresh_after_one_body_edit_embeds_that_bodys_new_passages_only(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    for skill in SKILLS:
        write_skill(root, skill.name, skill.description, body=skill.body or "")
    index = str(tmp_path / "index")
    config = RouterConfig(route_above=0, weights=WEIGHED)
    first = Router.from_skills([str(root)], config=config, index_folder=index,
                               encoder=FakeEncoder(dim=64))
    # 4 descriptions, 3 + 1 + 1 head passages (the body-less skill has an empty body)
    assert "passage_dense" in first.signals.indexes and first.embedded_count == 4 + 5
    path = root / "poems" / "SKILL.md"
    path.write_text(path.read_text().replace("Count syllables.", "Count syllables. Sonnets too."), encoding="utf-8")
    again = Router.from_skills([str(root)], config=config, index_folder=index,
                               encoder=FakeEncoder(dim=64))
    assert again.embedded_count == 1
    scratch = Router.from_skills([str(root)], config=config, index_folder=str(tmp_path / "new"),
                                 encoder=FakeEncoder(dim=64))
    requests = ["count the syllables of a sonnet", "which commit broke it"]
    np.testing.assert_array_equal(again.score_many(requests).signals["passage_dense"],
                                  scratch.score_many(requests).signals["passage_dense"])


def test_the_default_build_embeds_each_bodys_head(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    for skill in SKILLS:
        write_skill(root, skill.name, skill.description, body=skill.body or "")
    encoder = FakeEncoder(dim=64)
    routed = Router.from_skills([str(root)], config=RouterConfig(route_above=0), index_folder=str(tmp_path / "i"),
                                encoder=encoder)
    # 4 descriptions, then the heads: LONG's 3 passages, the poems' and the csv's one each
    assert routed.embedded_count == 4 + 3 + 1 + 1 and "passage_dense" in routed.signals.indexes
    heads = routed.signals.indexes["passage_dense"].vectors
    np.testing.assert_allclose(heads[0], encoder.encode(LONG_HEAD).mean(axis=0), rtol=1e-6)
    off = Router.from_skills([str(root)], config=RouterConfig(route_above=0, weights={"passage_dense": 0.0}),
                             index_folder=str(tmp_path / "off"), encoder=FakeEncoder(dim=64))
    assert off.embedded_count == 4 and "passage_dense" not in off.signals.indexes


def test_a_catalogue_embeds_nothing_more_by_default(tmp_path: Path) -> None:
    """A library without bodies (a MetaTool-like catalogue) builds exactly what it built with the signal off: its
    three descriptions and, by the catalogue rule of router/signals/name_dense.py, its three names."""
    catalogue = tmp_path / "tools.jsonl"
    tools = [("weather", "Weather: rain and wind for tomorrow."), ("poems", "Poems: write short rhyming poems."),
             ("csv", "CSV: clean messy csv files.")]
    catalogue.write_text("".join(json.dumps({"id": i, "name": i, "description": d}) + "\n" for i, d in tools),
                         encoding="utf-8")
    built = {weight: Router.from_catalog(catalogue, config=RouterConfig(route_above=0,
                                                                        weights={"passage_dense": weight}),
                                         index_folder=str(tmp_path / str(weight)), encoder=FakeEncoder(dim=64))
             for weight in (0.5, 0.0)}
    assert RouterConfig().weights["passage_dense"] == 0.5
    assert [r.embedded_count for r in built.values()] == [3 + 3, 3 + 3]
    assert all("passage_dense" not in r.signals.indexes for r in built.values())
    requests = ["rain tomorrow", "clean my csv"]
    np.testing.assert_array_equal(built[0.5].fuse(built[0.5].score_many(requests)),
                                  built[0.0].fuse(built[0.0].score_many(requests)))
