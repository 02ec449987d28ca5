"""Saying "no skill fits" (router.abstain): the rule, its cache, the router's flag, and the surfaces in front of an
agent (hook, /v1/route with abstain, MCP search_skills) against the catalogue surfaces that keep the top k."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import numpy as np
import pytest

from router import Router, abstain
from router.config import RouterConfig
from router.errors import ConfigError
from router.routing import Match, Routing
from router.serve import hooks
from router.skill import Skill
from serve_support import BUNDLED, copy_bundled, running


# -- the rule -------------------------------------------------------------------------------------------------------
def test_the_features_are_the_four_numbers_against_the_library_chance_level() -> None:
    chance = abstain.Chance(best=0.2, lexical=1.5, matched=3.0)
    rows = abstain.features(np.array([0.35, 0.1]), np.array([0.3, 0.5]), np.array([np.e ** 2 - 1, 0.0]),
                            np.array([np.e ** 4 - 1, 0.0]), chance)
    assert np.allclose(rows, [[0.15, 0.3, 0.5, 1.0], [-0.1, 0.5, -1.5, -3.0]])
    assert np.allclose(abstain.features(0.2, 0.3, -4.0, np.e - 1, chance), [[0.0, 0.3, -1.5, -2.0]])  # log1p(0)
    # a passage cosine, but a library whose chance level has none: still the four numbers
    assert abstain.features(0.2, 0.3, 0.0, 0.0, chance, passage=0.4).shape == (1, 4)


def test_with_embedded_passages_the_fifth_number_is_the_best_passage_cosine_above_chance() -> None:
    chance = abstain.Chance(best=0.2, lexical=1.5, matched=3.0, passage=0.25)
    rows = abstain.features(np.array([0.35, 0.1]), np.array([0.3, 0.5]), np.array([np.e ** 2 - 1, 0.0]),
                            np.array([np.e ** 4 - 1, 0.0]), chance, passage=np.array([0.4, 0.05]))
    assert np.allclose(rows, [[0.15, 0.3, 0.5, 1.0, 0.15], [-0.1, 0.5, -1.5, -3.0, -0.2]])
    scores = {"dense": np.zeros((2, 3)), abstain.PASSAGE: np.array([[0.1, 0.4, 0.3], [0.2, -0.1, 0.0]])}
    assert np.allclose(abstain.passage_evidence(scores), [0.4, 0.2])
    assert np.allclose(abstain.passage_evidence(scores, np.array([False, True, False])), [0.3, 0.2])
    assert abstain.passage_evidence({"dense": np.zeros((2, 3))}) is None


def test_the_lexical_evidence_is_one_function_over_the_skills_that_may_be_shown() -> None:
    scores = np.array([[0.0, 2.5, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0], [3.0, 0.0, 0.5, 0.2]])
    best, matched = abstain.lexical_evidence(scores)
    assert best.tolist() == [2.5, 0.0, 3.0] and matched.tolist() == [2, 0, 3]
    best, matched = abstain.lexical_evidence(scores, np.array([True, True, False, False]))
    assert best.tolist() == [1.0, 0.0, 0.5] and matched.tolist() == [1, 0, 2]
    best, matched = abstain.lexical_evidence(scores, np.ones(4, dtype=bool))  # every skill excluded
    assert best.tolist() == [0.0, 0.0, 0.0] and matched.tolist() == [0, 0, 0]
    # the chance level reads it too: its means are those of the evidence of the everyday sample
    vectors = np.zeros((len(abstain.EVERYDAY), 4), dtype=np.float32)
    sample = np.tile(scores, (abstain.CHANCE_SAMPLE // 3, 1))
    chance = abstain.chance_of(lambda texts, v: {"dense": np.zeros_like(sample), "passages": sample},
                               lambda s: s["dense"].max(axis=1), vectors)
    assert chance.lexical == pytest.approx(np.mean(np.log1p([2.5, 0.0, 3.0])))
    assert chance.matched == pytest.approx(np.mean(np.log1p([2, 0, 3]))) and chance.passage is None


def test_the_decision_is_the_logit_of_the_fitted_model_at_its_cut() -> None:
    intercept, w_best, w_everyday, w_lexical, w_matched, w_passage = abstain.COEFFICIENTS
    row = np.array([[0.1, 0.4, -0.5, 2.0, 0.05]])
    assert abstain.score(row)[0] == pytest.approx(intercept + 0.1 * w_best + 0.4 * w_everyday - 0.5 * w_lexical
                                                  + 2.0 * w_matched + 0.05 * w_passage)
    assert abstain.score(row, (1.0, 2.0, 3.0, 4.0, 5.0, 6.0))[0] == pytest.approx(1 + 0.2 + 1.2 - 2.0 + 10.0 + 0.3)
    assert w_best < 0 and w_everyday > 0 and w_passage < 0  # closer to a skill or its body: less likely none
    assert abstain.unfit(np.array([[0.0, 0.0, 0.0, 0.0, 0.0]]))[0] == (intercept >= abstain.CUT)
    with pytest.raises(ValueError, match="the no-skill model takes 4 or 5 numbers a request, got 3"):
        abstain.unfit(np.zeros((1, 3)))


def test_without_embedded_passages_the_fallback_model_decides() -> None:
    intercept, w_best, w_everyday, w_lexical, w_matched = abstain.FALLBACK_COEFFICIENTS
    row = np.array([[0.1, 0.4, -0.5, 2.0]])
    assert abstain.score(row)[0] == pytest.approx(intercept + 0.1 * w_best + 0.4 * w_everyday - 0.5 * w_lexical
                                                  + 2.0 * w_matched)
    assert abstain.score(row, (1.0, 2.0, 3.0, 4.0, 5.0))[0] == pytest.approx(1 + 0.2 + 1.2 - 2.0 + 10.0)
    # closer to a skill, its body, or sharing words with more bodies: less likely none
    assert w_best < 0 and w_everyday > 0 and w_lexical < 0 and w_matched < 0
    chance = abstain.Chance(best=0.2, lexical=1.0, matched=np.log(8))
    # an everyday cosine placed exactly at the cut for each other number at chance, then either side of it
    edge = (abstain.FALLBACK_CUT - intercept) / w_everyday
    assert abstain.fits_no_skill(0.2, edge + 1e-6, np.e - 1, 7, chance)
    assert not abstain.fits_no_skill(0.2, edge - 1e-6, np.e - 1, 7, chance)
    # the same request sharing words with e times more bodies (plus one) than chance is kept
    assert not abstain.fits_no_skill(0.2, edge - w_matched / w_everyday - 1e-6, np.e - 1, 8 * np.e - 1, chance)


def test_the_lexical_evidence_is_the_body_passages_else_the_body_else_the_description() -> None:
    scores = {"dense": np.zeros((1, 2)), "bm25": np.zeros((1, 2)), "body_bm25": np.zeros((1, 2))}
    assert abstain.lexical_signal({**scores, "passages": np.zeros((1, 2))}) == "passages"
    assert abstain.lexical_signal(scores) == "body_bm25"
    assert abstain.lexical_signal({"dense": np.zeros((1, 2)), "bm25": np.zeros((1, 2))}) == "bm25"
    assert abstain.lexical_signal({"dense": np.zeros((1, 2))}) is None


def test_the_chance_level_is_the_everyday_means_computed_once_per_library() -> None:
    class Scorer:
        calls = 0

        def score(self, texts, vectors):
            Scorer.calls += 1
            n = len(texts)
            return {"dense": np.tile([0.1, 0.3], (n, 1)), "passages": np.tile([0.0, np.e - 1], (n, 1))}

    first, second = Scorer(), Scorer()
    vectors = np.zeros((len(abstain.EVERYDAY), 4), dtype=np.float32)
    seen = []
    chance = abstain.chance_level(object.__new__(Scorer), lambda texts, v: seen.append((len(texts), len(v))) or
                                  Scorer().score(texts, v), lambda s: s["dense"].max(axis=1), vectors, "m")
    assert seen == [(abstain.CHANCE_SAMPLE, abstain.CHANCE_SAMPLE)]  # the first everyday requests only
    Scorer.calls = 0
    chance = abstain.chance_level(first, first.score, lambda s: s["dense"].max(axis=1), vectors, "m")
    # every request has one skill with a lexical score above zero: matched = log(1 + 1)
    assert chance == abstain.Chance(best=pytest.approx(0.3), lexical=pytest.approx(1.0),
                                    matched=pytest.approx(np.log(2))) and Scorer.calls == 1
    assert abstain.chance_level(first, first.score, lambda s: s["dense"].max(axis=1), vectors, "m") is chance
    assert Scorer.calls == 1  # the same library: from memory
    abstain.chance_level(second, second.score, lambda s: s["dense"].max(axis=1), vectors, "m")
    assert Scorer.calls == 2  # another library (another index): scored again


def test_a_saved_index_keeps_its_chance_level_in_the_cache_folder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(abstain, "_CHANCE", {})
    calls = []

    class Scorer:
        def score(self, texts, vectors):
            calls.append(len(texts))
            return {"dense": np.tile([0.1, 0.3], (len(texts), 1)), "bm25": np.tile([0.0, np.e - 1], (len(texts), 1))}

    vectors = np.zeros((len(abstain.EVERYDAY), 4), dtype=np.float32)

    def chance(identity: bytes) -> abstain.Chance:
        scorer = Scorer()  # a new process: nothing in memory
        return abstain.chance_level(scorer, scorer.score, lambda s: s["dense"].max(axis=1), vectors, "m", identity)

    first = chance(b"manifest 1")
    [saved] = (tmp_path / "skill-router" / "everyday").glob("chance-*.json")
    assert first == abstain.Chance(best=pytest.approx(0.3), lexical=pytest.approx(1.0),
                                   matched=pytest.approx(np.log(2))) and calls == [54]
    assert chance(b"manifest 1") == first and calls == [54]  # read back, not scored
    chance(b"manifest 2")  # another index: scored again, saved beside
    assert calls == [54, 54] and len(list(saved.parent.glob("chance-*.json"))) == 2
    saved.write_text('{"best": "not a number"}')  # a cut or foreign file is scored again, never trusted
    assert chance(b"manifest 1") == first and calls == [54, 54, 54]
    saved.write_text('{"best": 0.3, "lexical": 1.0}')  # a file from before ``matched``: scored again
    assert chance(b"manifest 1") == first and calls == [54, 54, 54, 54]
    saved.write_text('{"best": 0.3, "lexical": 1.0, "matched": 0.5}')  # from before ``passage``: scored again
    assert chance(b"manifest 1") == first and calls == [54, 54, 54, 54, 54]
    assert json.loads(saved.read_text()) == {"best": first.best, "lexical": first.lexical, "matched": first.matched,
                                             "passage": None}


def test_everyday_vectors_are_embedded_once_then_read_from_the_cache(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(abstain, "_MEMO", {})
    calls = []
    rows = np.eye(len(abstain.EVERYDAY), 64, dtype=np.float32)

    def encode(texts):
        calls.append(list(texts))
        return rows

    first = abstain.everyday_vectors("model-a", encode, 64)
    assert calls == [list(abstain.EVERYDAY)] and np.array_equal(first, rows)
    [cached] = (tmp_path / "skill-router" / "everyday").iterdir()
    monkeypatch.setattr(abstain, "_MEMO", {})  # a new process: the file answers
    assert np.array_equal(abstain.everyday_vectors("model-a", encode, 64), rows) and len(calls) == 1
    abstain.everyday_vectors("model-b", encode, 64)  # another model, another key
    assert len(calls) == 2
    cached.write_bytes(b"not an array")  # a cut write is embedded again, never trusted
    monkeypatch.setattr(abstain, "_MEMO", {})
    assert np.array_equal(abstain.everyday_vectors("model-a", encode, 64), rows) and len(calls) == 3


def test_a_cache_that_cannot_be_written_only_costs_the_embedding(tmp_path: Path, monkeypatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder would go")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    monkeypatch.setattr(abstain, "_MEMO", {})
    rows = np.ones((len(abstain.EVERYDAY), 8), dtype=np.float32)
    assert np.array_equal(abstain.everyday_vectors("m", lambda texts: rows, 8), rows)


def test_an_encoder_of_the_wrong_shape_is_named(monkeypatch) -> None:
    monkeypatch.setattr(abstain, "_MEMO", {})
    monkeypatch.setattr(abstain, "_read", lambda path, dim: None)
    with pytest.raises(ValueError, match=r"returned \(2, 8\) vectors for 146 texts of dimension 8: check the model"):
        abstain.everyday_vectors("m", lambda texts: np.zeros((2, 8), dtype=np.float32), 8)


def test_no_skill_is_a_checked_config_switch() -> None:
    assert RouterConfig().no_skill is True
    assert RouterConfig.from_json({"no_skill": False}).no_skill is False
    with pytest.raises(ConfigError, match="no_skill must be true or false, got 'yes'"):
        RouterConfig(no_skill="yes")  # type: ignore[arg-type]


def test_the_hook_adds_nothing_for_a_request_that_fits_no_skill() -> None:
    shown = (Skill(name="a", description="first", path=""),)
    matches = (Match("a", "a", 1.0, 1),)
    assert hooks.routing_context("claude-code", Routing(matches, shown)) != ""
    assert hooks.routing_context("claude-code", Routing(matches, shown, no_skill=True)) == ""


# -- the router -----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bundled(tmp_path_factory: pytest.TempPathFactory, encoder) -> Router:
    # the bodies' heads not embedded (passage_dense 0): the four-number model; `embedded` below has the five
    return Router.from_skills([str(BUNDLED)], "agentskills", RouterConfig(weights={"passage_dense": 0.0}),
                              index_folder=str(tmp_path_factory.mktemp("abstain-idx")), encoder=encoder)


def test_everyday_requests_fit_no_skill_and_requests_a_skill_serves_keep_it(bundled: Router) -> None:
    berlin, thanks, capital, miles, haiku, caffeine, named = bundled.route_many(
        ["When did the Berlin Wall fall?", "thanks!", "what's the capital of canada", "convert 10 miles to kilometres",
         "answer only in 5-7-5 from now on", "smiles for caffeine", "pirate-speak: when did the Berlin Wall fall?"])
    assert berlin.no_skill and thanks.no_skill and capital.no_skill
    assert len(berlin.shown) == 5 and not berlin.abstained  # the catalogue keeps its top k
    # the rule before (a confidence floor and a margin over the everyday cosine) dropped these two: no description
    # is close to them, but the words are those of the skill's body
    assert not haiku.no_skill and haiku.matches[0].name == "haiku-responder"
    assert not caffeine.no_skill and caffeine.matches[0].name == "molecular-structure-lookup"
    assert not miles.no_skill and miles.matches[0].name == "unit-conversion"
    assert not named.no_skill and "pirate-speak" in [s.name for s in named.shown]
    assert not bundled.with_config(no_skill=False).route("When did the Berlin Wall fall?").no_skill


def test_the_flag_follows_the_model_from_the_features_formula(bundled: Router) -> None:
    texts = ["how many kWh is 500 BTU", "is it raining in oslo right now", "what's the capital of canada"]
    scored = bundled.score_many(texts)
    assert "passages" in scored.signals and "examples" not in scored.signals
    model_id, dim = bundled.encoder.model_id, scored.vectors.shape[1]
    everyday = abstain.everyday_vectors(model_id, bundled.encode, dim)
    assert abstain.CHANCE_SAMPLE == 54 and len(abstain.EVERYDAY) == 146
    baseline = bundled.signals.score(list(abstain.EVERYDAY[:54]), everyday[:54])  # chance: the first 54
    chance = abstain.Chance(best=float(baseline["dense"].max(axis=1).mean()),
                            lexical=float(np.log1p(baseline["passages"].max(axis=1)).mean()),
                            matched=float(np.log1p((baseline["passages"] > 0).sum(axis=1)).mean()))
    rows = np.column_stack([scored.signals["dense"].max(axis=1) - chance.best,
                            (scored.vectors @ everyday.T).max(axis=1),
                            np.log1p(scored.signals["passages"].max(axis=1)) - chance.lexical,
                            np.log1p((scored.signals["passages"] > 0).sum(axis=1)) - chance.matched])
    assert np.allclose(bundled.no_skill_features(scored), rows)
    # no embedded passages (passage_dense weighs 0 here): the fallback model decides
    coefficients = abstain.FALLBACK_COEFFICIENTS
    expected = [bool(coefficients[0] + r @ np.array(coefficients[1:]) >= abstain.FALLBACK_CUT) for r in rows]
    assert [r.no_skill for r in bundled.route_many(texts)] == expected == [False, False, True]


def test_the_everyday_sample_scores_the_chance_level_on_average(bundled: Router) -> None:
    # the chance level is the mean of the same evidence routing reads: the sample routed has features 0 on average
    rows = bundled.no_skill_features(bundled.score_many(list(abstain.EVERYDAY[:abstain.CHANCE_SAMPLE])))
    assert np.allclose(rows[:, [0, 2, 3]].mean(axis=0), 0.0, atol=1e-5)


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory, encoder) -> Router:
    return Router.from_skills([str(BUNDLED)], "agentskills", RouterConfig(weights={"passage_dense": 0.5}),
                              index_folder=str(tmp_path_factory.mktemp("abstain-pd-idx")), encoder=encoder)


def test_with_embedded_passages_the_five_number_model_decides(embedded: Router) -> None:
    texts = ["how many kWh is 500 BTU", "is it raining in oslo right now", "what's the capital of canada",
             "thank you so much"]
    scored = embedded.score_many(texts)
    model_id, dim = embedded.encoder.model_id, scored.vectors.shape[1]
    everyday = abstain.everyday_vectors(model_id, embedded.encode, dim)
    baseline = embedded.signals.score(list(abstain.EVERYDAY[:54]), everyday[:54])
    chance = embedded.index.chance
    assert chance.passage == pytest.approx(float(baseline[abstain.PASSAGE].max(axis=1).mean()))
    rows = embedded.no_skill_features(scored)
    assert rows.shape == (4, 5)
    assert np.allclose(rows[:, 4], scored.signals[abstain.PASSAGE].max(axis=1) - chance.passage)
    coefficients = abstain.COEFFICIENTS
    expected = [bool(coefficients[0] + r @ np.array(coefficients[1:]) >= abstain.CUT) for r in rows]
    # "how many kWh is 500 BTU" is dropped (logit 0.12 above the cut): the unit-conversion body's head, its first
    # three passages cut to 16 words, does not name energy units (with 4 whole passages it was kept, 0.41 below)
    assert [r.no_skill for r in embedded.route_many(texts)] == expected == [True, False, True, True]
    # an excluded skill's passages give no evidence
    mask = np.array([s.name == "unit-conversion" for s in embedded.skills])
    without = embedded.no_skill_features(scored, mask)
    assert without[0, 4] < rows[0, 4] and np.array_equal(without[2:, 4], rows[2:, 4])


def test_the_saved_identity_is_the_manifest_and_the_passages_body_digests(bundled: Router) -> None:
    import dataclasses

    from router.signals import BuildReport

    abstain._CHANCE.clear()
    # an index that does not hold its chance level (saved before it was kept there): the first route of a process
    # computes it and saves it in the cache folder
    older = Router(dataclasses.replace(bundled.index, report=BuildReport()))
    assert older.index.chance is None and bundled.index.chance is not None
    older.route("hello")
    manifest = (Path(older.index_folder) / "manifest.json").read_bytes()
    bodies = older.signals.indexes["passages"].bodies
    assert older._saved_identity() == manifest + b"\0passages\0" + bodies.tobytes()
    [saved] = [p for p in Path(abstain.cache_folder()).glob("chance-*.json")
               if p.name == Path(abstain._chance_path(older.encoder.model_id, older._saved_identity())).name]
    assert abstain._read_chance(str(saved)) == bundled.index.chance


def test_an_excluded_skill_gives_no_evidence(bundled: Router) -> None:
    scored = bundled.score_many(["answer only in 5-7-5 from now on"])
    mask = np.array([s.name == "haiku-responder" for s in bundled.skills])
    kept, without = bundled.no_skill_features(scored)[0], bundled.no_skill_features(scored, mask)[0]
    assert without[0] < kept[0] and without[2] < kept[2] and without[1] == kept[1]
    passages = scored.signals["passages"][0]
    assert passages[mask][0] > 0  # the excluded skill shares a word with the request: one body fewer counts
    assert np.exp(kept[3] - without[3]) == pytest.approx((1 + (passages > 0).sum()) / (passages > 0).sum())


# -- the surfaces ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("abstain-serve")
    library = copy_bundled(root / "skills")
    argv = ["--skills", str(library), "--profile", "agentskills", "--index-dir", str(root / "idx"),
            "--log", str(root / "decisions.jsonl"), "--no-watch"]
    with running(argv) as (url, service):
        yield url, service


@pytest.mark.model
def test_route_gives_nothing_only_when_asked_and_the_hook_nothing_by_default(server) -> None:
    url, _ = server
    with httpx.Client(base_url=url, trust_env=False, timeout=30) as client:
        plain = client.post("/v1/route", json={"query": "When did the Berlin Wall fall?"}).json()
        asked = client.post("/v1/route", json={"query": "When did the Berlin Wall fall?", "abstain": True}).json()
        kept = client.post("/v1/route", json={"query": "will it rain in Lyon tomorrow?", "abstain": True}).json()
        hook = client.post("/v1/hooks/claude-code", json={"hook_event_name": "UserPromptSubmit", "session_id": "s",
                                                          "prompt": "When did the Berlin Wall fall?"}).json()
    assert plain["no_skill"] is True and len(plain["shown"]) == 5 and plain["abstained"] is False
    assert asked["no_skill"] is True and asked["shown"] == [] and len(asked["matches"]) == 5
    assert kept["no_skill"] is False and kept["matches"][0]["name"] == "weather-forecast" and len(kept["shown"]) == 5
    assert hook == {}


@pytest.mark.model
def test_search_skills_says_abstained_with_no_skills(server) -> None:
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    url, _ = server

    async def search(query: str):
        async with httpx2.AsyncClient(trust_env=False, timeout=httpx2.Timeout(30, read=60)) as http:
            async with streamable_http_client(f"{url}/mcp", http_client=http) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    return await session.call_tool("search_skills", {"query": query, "k": 3})

    nothing = asyncio.run(search("thanks, that's all for now")).structured_content
    something = asyncio.run(search("will it rain in Lyon tomorrow?")).structured_content
    assert nothing["abstained"] is True and nothing["skills"] == [] and nothing["total"] == 0
    assert something["abstained"] is False and something["total"] == 3
