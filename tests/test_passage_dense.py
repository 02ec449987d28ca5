"""The passage_dense signal (router/signals/passage_dense.py): each skill's score is the request's mean cosine with
the first HEAD passages of its body (a skill without a body keeps its description's cosine), from the formula;
absent without bodies and past the passage limit; built from the embedding cache, so a refresh embeds only the
passages of an edited body."""

from __future__ import annotations

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


WEIGHED = {"passage_dense": 0.5}  # the weight chosen on the dev sets


@pytest.fixture(autouse=True)
def private_folder(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)


def test_the_head_is_the_first_four_passages_of_the_cut() -> None:
    assert passage_dense.HEAD == 4
    cut = passages.passages(LONG)
    assert len(cut) == 6 and passage_dense.head_passages(LONG) == cut[:4]
    assert cut[0].startswith("Part 0 word0x0 ") and cut[3].startswith("Part 3 word3x0 ")
    assert passage_dense.head_passages("  \n") == []


def test_head_vectors_average_each_skills_passages_and_keep_the_fallback_without_any() -> None:
    fallback = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    vectors = np.array([[1.0, 0.0], [0.0, 1.0], [0.8, 0.6]])
    heads = [["a", "b"], [], ["c"]]
    np.testing.assert_array_equal(passage_dense.head_vectors(heads, fallback, vectors),
                                  [[0.5, 0.5], [0.0, 1.0], [0.8, 0.6]])


def test_the_score_is_the_mean_cosine_with_the_head_passages_fused_at_0_5() -> None:
    assert RouterConfig().weights["passage_dense"] == 0.0  # built only when a config weighs it
    encoder = FakeEncoder(dim=64)
    routed = memory_router(encoder, SKILLS, weights=WEIGHED)
    requests = ["which commit broke it", "rain tomorrow"]
    scored = routed.score_many(requests)
    queries = encoder.encode(requests)
    expected = np.stack([
        encoder.encode(passages.passages(LONG)[:4]).mean(axis=0),
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
    # 4 descriptions, 4 + 1 + 1 head passages (the body-less skill has an empty body)
    assert "passage_dense" in first.signals.indexes and first.embedded_count == 4 + 6
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
