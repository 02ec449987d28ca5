"""The Router: routing on the bundled library with the real model, the rules, and the one batch path."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import BUNDLED, write_skill
from indexes import Encoder
from indexes.fusion import rank_of, ranks_by_score
from router.config import RouterConfig
from router.errors import ConfigError, SkillToolError
from router.profiles import get_profile
from router.routing import Router
from router.signals import passage_dense


def scores(router: Router, query) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(fused scores, each signal's scores) of one request, from the router's batch path."""
    scored = router.score_many([query])
    return router.fuse(scored)[0], {name: values[0] for name, values in scored.signals.items()}


SMALL = {
    "weather-now": "Report the current weather conditions observed right now at a place.",
    "csv-cleanup": "Clean messy CSV files and fix broken dates, types, duplicates and missing values.",
    "pirate-voice": "Answer in the voice of a pirate, arr, keeping facts exact.",
    "sql-tuning": "Make one slow SQL query faster with query plans and indexes.",
    "poem-writer": "Write short rhyming poems and haiku on any topic.",
}


def small_library(root: Path) -> Path:
    for folder, description in SMALL.items():
        write_skill(root, folder, description, body=f"# {folder}\nSteps.\n")
    return root


@pytest.fixture(scope="module")
def small_index(tmp_path_factory: pytest.TempPathFactory, encoder: Encoder) -> Path:
    """An index folder of the small library, built once and copied by :func:`small_router`."""
    folder = tmp_path_factory.mktemp("small")
    Router.from_skills([str(small_library(folder / "skills"))], "genkit", RouterConfig(route_above=0),
                       index_folder=str(folder / "idx"), encoder=encoder)
    return folder / "idx"


@pytest.fixture
def small_router(tmp_path: Path, encoder: Encoder, small_index: Path):
    """Build routers over the small library in ``tmp_path``; the vectors come from a copy of ``small_index``."""
    small_library(tmp_path / "skills")
    shutil.copytree(small_index, tmp_path / "idx")

    def make(**kwargs) -> Router:
        config = kwargs.pop("config", RouterConfig(route_above=0, k=2))
        return Router.from_skills([str(tmp_path / "skills")], "genkit", config, index_folder=str(tmp_path / "idx"),
                                  encoder=encoder, **kwargs)

    return make


# -- routing on the bundled library with the real model ---------------------------------------------------------

@pytest.mark.parametrize(("request_text", "skill"), [
    ("will it rain in Lyon this weekend", "weather-forecast"),
    ("is it raining right now in Oslo", "current-weather"),
    ("review this Go handler for goroutine leaks", "go-code-review"),
    ("speak like a pirate", "pirate-speak"),
    ("clean up this CSV with broken dates", "csv-data-cleaning"),
    ("my pod keeps going into CrashLoopBackOff", "kubernetes-debugging"),
    ("what time is 3pm in Tokyo for someone in New York", "timezone-conversion"),
    ("design primers for PCR of this gene", "pcr-primer-design"),
])
def test_bundled_requests_reach_their_skill(bundled: Router, request_text: str, skill: str) -> None:
    top3 = [m.id for m in bundled.rank(request_text, 3)]
    assert skill in top3, top3


def test_bundled_build_embeds_every_skill_once(bundled: Router, encoder: Encoder, tmp_path: Path) -> None:
    assert len(bundled.skills) == 52
    texts = set(bundled.dense_texts()) | {e for s in bundled.skills for e in s.examples}
    heads = {p for s in bundled.skills for p in passage_dense.head_passages(s.body or "")}
    # a fresh folder: every description and every passage of the bodies' heads once (3 per body here); of the
    # bodies only their heads are embedded (body_dense weighs 0 by default)
    assert len(texts) == 52 and len(heads) == 3 * 52
    assert bundled.embedded_count == len(texts | heads) and bundled.signals.body_dense is None
    assert bundled.signals.body_bm25 is not None
    again = Router.from_skills([str(BUNDLED)], "genkit", RouterConfig(route_above=0),
                               index_folder=bundled.index_folder, encoder=encoder)
    assert again.embedded_count == 0


def test_ranking_is_best_first_with_consistent_ranks(bundled: Router) -> None:
    matches = bundled.rank("will it rain in Lyon this weekend", 5)
    assert [m.rank for m in matches] == [1, 2, 3, 4, 5]
    assert [m.score for m in matches] == sorted((m.score for m in matches), reverse=True)
    fused, per_signal = scores(bundled, "will it rain in Lyon this weekend")
    ids = [s.id for s in bundled.skills]
    for m in matches:
        assert m.score == float(fused[ids.index(m.id)])
        assert m.scores["dense"] == float(per_signal["dense"][ids.index(m.id)])
    assert matches[0].ranks["dense"] >= 1


def test_top_k_is_a_prefix_of_top_k_plus_one(bundled: Router) -> None:
    request = "make this slow query faster"
    assert [m.id for m in bundled.rank(request, 3)] == [m.id for m in bundled.rank(request, 4)][:3]


def test_score_many_matches_single_scores(bundled: Router) -> None:
    requests = ["will it rain in Lyon this weekend", "speak like a pirate"]
    many = bundled.score_many(requests)
    for row, request in enumerate(requests):
        _, single = scores(bundled, request)
        # batch and single encodes differ by float rounding only (padding changes the summation order)
        np.testing.assert_allclose(many.signals["dense"][row], single["dense"], atol=1e-5)
        np.testing.assert_array_equal(many.signals["bm25"][row], single["bm25"])
    assert many.signals["dense"].shape == (2, 52)
    assert bundled.score_many([]).signals["bm25"].shape == (0, 52)


def test_rank_many_is_rank_one_by_one(bundled: Router) -> None:
    requests = ["will it rain in Lyon this weekend", "speak like a pirate", "review my Go code for races"]
    many = bundled.rank_many(requests, 4)
    for request, ranked in zip(requests, many):
        assert [m.id for m in ranked] == [m.id for m in bundled.rank(request, 4)]
    assert [[s.id for s in r.shown] for r in bundled.route_many(requests, 2)] == [
        [s.id for s in bundled.route(q, 2).shown] for q in requests]


# -- rules -----------------------------------------------------------------------------------------------------

def test_small_library_is_shown_whole_unrouted(small_router) -> None:
    router = small_router(config=RouterConfig(route_above=5, k=1))
    routing = router.route("is it raining right now")
    assert routing.routed is False
    assert [s.id for s in routing.shown] == sorted(SMALL)  # genkit registers in folder name order
    assert router.render("is it raining right now") == router.profile.render(list(router.skills))
    with pytest.raises(ConfigError, match="empty"):
        router.route("   ")


def test_one_more_skill_than_route_above_is_routed(small_router) -> None:
    router = small_router(config=RouterConfig(route_above=4, k=1))
    routing = router.route("is it raining right now")
    assert routing.routed is True
    assert [s.id for s in routing.shown] == ["weather-now"]


def test_pinned_always_shown_excluded_never(small_router) -> None:
    request = "fix the broken dates in this CSV file"
    plain = small_router()
    order = [m.id for m in plain.rank(request, 5)]
    assert order[0] == "csv-cleanup"
    last = order[-1]  # below the top 2 even once csv-cleanup is excluded
    router = small_router(pinned=[last], excluded=["csv-cleanup"])
    ranked = router.rank(request)
    ids = [m.id for m in ranked]
    assert "csv-cleanup" not in ids
    assert [m.reason for m in ranked] == ["routed", "routed", "pinned"] and ids[-1] == last
    shown = [s.id for s in router.route(request).shown]
    assert last in shown and "csv-cleanup" not in shown and len(shown) == 3
    # excluded wins over naming the skill
    assert "csv-cleanup" not in [m.id for m in router.rank("use csv cleanup please")]


def test_excluded_is_never_shown_in_a_small_library(small_router) -> None:
    router = small_router(config=RouterConfig(), excluded=["csv-cleanup"])
    assert [s.id for s in router.route("anything").shown] == [n for n in sorted(SMALL) if n != "csv-cleanup"]


def test_named_skill_is_included_in_its_fused_place(bundled: Router) -> None:
    request = "will it rain or snow in Lyon this weekend? then log analysis"
    fused, per_signal = scores(bundled, request)
    plain = [s.id for s in sorted(bundled.skills, key=lambda s: -fused[bundled.skills.index(s)])][:3]
    assert plain[:2] == ["weather-forecast", "log-analysis"]
    # not in the top 1: the named skill takes the last routed place
    assert [(m.id, m.reason) for m in bundled.rank(request, 1)] == [("log-analysis", "named")]
    assert [s.id for s in bundled.route(request, 1).shown] == ["log-analysis"]
    # already in the top 3: it keeps its fused place
    matches = bundled.rank(request, 3)
    assert [m.id for m in matches] == plain
    assert [m.reason for m in matches] == ["routed", "named", "routed"]


def test_name_with_hyphens_or_words_out_of_order(bundled: Router) -> None:
    assert bundled.rank("apply pirate-speak to: the rain in Lyon", 1)[0].id == "pirate-speak"
    reasons = {m.id: m.reason for m in bundled.rank("analysis of the log from the weather station", 5)}
    assert reasons.get("log-analysis", "routed") != "named"


def test_ties_break_by_id_and_repeat(tmp_path: Path, encoder: Encoder, small_index: Path) -> None:
    shutil.copytree(small_index, tmp_path / "idx")
    root = tmp_path / "skills"
    description = "Translate recipes between metric and imperial kitchen measures."
    # unreal registers in folder order, so registration order (a, b) differs from id order (b's id sorts first)
    write_skill(root, "a", description, name="kitchen_units")
    write_skill(root, "b", description, name="kitchen-units")
    for folder, text in SMALL.items():
        write_skill(root, folder, text)
    router = Router.from_skills([str(root)], "unreal", RouterConfig(route_above=0, k=2),
                                index_folder=str(tmp_path / "idx"), encoder=encoder)
    assert [s.id for s in router.skills][:2] == ["kitchen_units", "kitchen-units"]
    assert router.embedded_count == 2  # one description and one body head ("Steps."), each shared by both
    request = "how many grams is a cup of flour"
    first = router.rank(request)
    assert [m.id for m in first] == ["kitchen-units", "kitchen_units"]
    assert first[0].score == first[1].score
    assert [m.ranks["dense"] for m in first] == [1, 2]
    for _ in range(3):
        assert router.rank(request) == first


def test_rank_scored_ties_break_by_id(small_router) -> None:
    router = small_router(config=RouterConfig(route_above=0, k=5))
    scored = router.score_many(["nothing named here"])
    matches = router.rank_scored(scored, fused=np.zeros((1, 5)))[0]
    assert [m.id for m in matches] == sorted(SMALL)


def test_abstention(small_router) -> None:
    request = "what is the capital of Australia"
    never = small_router(config=RouterConfig(route_above=0, k=2, threshold=-1.0))
    routing = never.route(request)
    assert not routing.abstained and len(routing.shown) == 2
    _, per_signal = scores(never, request)
    assert routing.confidence == pytest.approx(float(per_signal["dense"].max()))

    top_k = small_router(config=RouterConfig(route_above=0, k=2, threshold=0.99))
    routing = top_k.route(request)
    assert routing.abstained and len(routing.shown) == 2
    assert routing.confidence < 0.99

    empty = small_router(config=RouterConfig(route_above=0, k=2, threshold=0.99,
                                                                 on_abstain="empty"),
                         pinned=["sql-tuning"])
    routing = empty.route(request)
    assert routing.abstained and [s.id for s in routing.shown] == ["sql-tuning"]
    assert len(routing.matches) == 3  # the ranking is still reported
    named = empty.route("ask the poem writer: " + request)
    assert named.abstained and [s.id for s in named.shown] == ["poem-writer", "sql-tuning"]


def test_confidence_is_the_best_cosine_over_all_skills(bundled: Router) -> None:
    request = "table"  # fused top 1 is docx-report-writing, the best cosine is sql-query-optimization
    routing = bundled.route(request, 1)
    _, per_signal = scores(bundled, request)
    best = bundled.skills[int(per_signal["dense"].argmax())].id
    assert best not in [m.id for m in routing.matches]
    assert routing.confidence == pytest.approx(float(per_signal["dense"].max()))


def test_empty_request_is_a_config_error(small_router) -> None:
    router = small_router()
    for bad in ("", "  \n", [{"role": "assistant", "content": "hi"}], [{"role": "user", "content": " "}]):
        with pytest.raises(ConfigError):
            router.rank(bad)
        with pytest.raises(ConfigError):
            router.route(bad)


def test_conversation_last_turn_dominates(bundled: Router) -> None:
    csv_turn = "clean up this CSV with broken dates"
    rain_turn = "will it rain in Lyon this weekend"
    forward = [{"role": "user", "content": csv_turn}, {"role": "assistant", "content": "Done."},
               {"role": "user", "content": rain_turn}]
    backward = [{"role": "user", "content": [{"type": "text", "text": rain_turn}]},
                {"role": "assistant", "content": "Sunny."},
                {"role": "user", "content": [{"type": "text", "text": csv_turn}]}]
    assert bundled.rank(forward, 1)[0].id == "weather-forecast"
    assert bundled.rank(backward, 1)[0].id == "csv-data-cleaning"
    # earlier turns do weigh in: the context moves the fused scores
    alone, _ = scores(bundled, rain_turn)
    with_context, _ = scores(bundled, forward)
    assert not np.array_equal(alone, with_context)


def test_render_is_the_profile_render_of_the_shown_subset(tmp_path: Path, bundled: Router, encoder: Encoder) -> None:
    shutil.copytree(bundled.index_folder, tmp_path / "idx")  # the same texts: nothing to embed again
    router = Router.from_skills([str(BUNDLED)], "unreal", RouterConfig(route_above=0, k=4),
                                index_folder=str(tmp_path / "idx"), encoder=encoder)
    request = "will it rain in Lyon this weekend"
    routing = router.route(request)
    chosen = {m.id for m in routing.matches}
    subset = [s for s in router.skills if s.id in chosen]
    assert list(routing.shown) == subset
    assert router.render(request) == get_profile("unreal").render(subset)
    assert router.render() == get_profile("unreal").render(list(router.skills))


def test_tool_loads_a_skill_that_was_not_shown(bundled: Router) -> None:
    shown = {s.id for s in bundled.route("will it rain in Lyon this weekend", 2).shown}
    assert "pirate-speak" not in shown
    assert bundled.tool().name == "use_skill"
    text = bundled.call_tool({"skillName": "pirate-speak"})
    assert text == (BUNDLED / "pirate-speak" / "SKILL.md").read_text(encoding="utf-8")
    with pytest.raises(SkillToolError, match="not found"):
        bundled.call_tool('{"skillName": "no-such-skill"}')


@given(st.lists(st.integers(min_value=-3, max_value=3), min_size=1, max_size=12), st.data())
def test_rank_of_equals_the_full_ranking(values, data):
    order = np.array(data.draw(st.permutations(range(len(values)))), dtype=np.int64)
    full = ranks_by_score(values_array := np.array(values, dtype=np.float64), order)
    assert [rank_of(values_array, order, i) for i in range(len(values))] == full.tolist()


def test_bulk_evaluation_ranks_exactly_as_the_router(bundled: Router, tmp_path: Path) -> None:
    from router.evaluation import load_requests
    from router.evaluation.retrievers import retrievers_for

    rows = [
        {"id": "c1", "messages": [{"role": "user", "content": "I have a Go service with a data race"},
                                  {"role": "assistant", "content": "Show me the code."},
                                  {"role": "user", "content": "can you review this handler?"}],
         "gold": ["go-code-review"]},
        {"id": "c2", "query": "will it rain in Lyon this weekend", "gold": ["weather-forecast"]},
        {"id": "c3", "query": "speak like a pirate about the weather forecast", "gold": ["pirate-speak"]},
    ]
    path = tmp_path / "requests.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    requests = load_requests(path, known_ids={s.id for s in bundled.skills})
    retrieve = retrievers_for(bundled, requests, ["default"], depth=5)["default"]
    for request in requests:
        live = bundled.rank(list(request.messages) if request.messages else request.query, 5)
        assert [pair[0] for pair in retrieve(request)] == [m.id for m in live]


def test_equal_rrf_fuses_the_signals_that_read_the_request(bundled: Router, tmp_path: Path) -> None:
    """The ``rrf`` retriever is sum 1 / (60 + rank) over the signals that read the request, each lexical one ranking
    only the skills it scores; ``centrality`` (the same row for every request) casts no vote."""
    from router.evaluation import load_requests
    from router.evaluation.retrievers import retrievers_for
    from router.signals import lexical_names

    rows = [{"id": "w", "query": "will it rain in Lyon this weekend", "gold": ["weather-forecast"]},
            {"id": "r", "query": "review my Go handler for data races", "gold": ["go-code-review"]},
            {"id": "p", "query": "write the release notes as a pirate would", "gold": ["pirate-speak"]}]
    path = tmp_path / "requests.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    requests = load_requests(path, known_ids={s.id for s in bundled.skills})
    scored = bundled.score_many([r.query for r in requests])
    assert "centrality" in scored.signals
    ids = [s.id for s in bundled.skills]

    def by_formula(i: int, names: list[str]) -> list[str]:
        total = np.zeros(len(ids))
        for name in names:
            values = scored.signals[name][i]
            ranked = [j for j in sorted(range(len(ids)), key=lambda j: -values[j])
                      if name not in lexical_names() or values[j] > 0]
            for rank, j in enumerate(ranked, start=1):
                total[j] += 1 / (60 + rank)
        return [ids[j] for j in sorted(range(len(ids)), key=lambda j: -total[j])[:10]]

    voting = [n for n in scored.signals if n != "centrality"]
    retrieve = retrievers_for(bundled, requests, ["rrf"], depth=10)["rrf"]
    assert [[pair[0] for pair in retrieve(r)] for r in requests] == [by_formula(i, voting) for i in range(3)]
    assert [by_formula(i, voting) for i in range(3)] != [by_formula(i, list(scored.signals)) for i in range(3)]


def test_lone_surrogates_are_routed_as_replacement_characters(bundled: Router, capsys) -> None:
    from router.cli import main

    cleaned = bundled.rank("caf\ufffd rain tomorrow in Lyon", 3)
    assert bundled.rank("caf\udce9 rain tomorrow in Lyon", 3) == cleaned
    assert bundled.rank([{"role": "user", "content": "caf\ud83d rain tomorrow in Lyon"}], 3) == cleaned
    status = main(["route", "caf\udce9 rain tomorrow in Lyon", "--skills", str(BUNDLED), "--profile", "genkit",
                   "--index-dir", bundled.index_folder, "--json", "-k", "3"])
    assert status == 0
    assert [row["id"] for row in json.loads(capsys.readouterr().out)] == [m.id for m in cleaned]


def test_the_abstention_confidence_reads_examples_else_dense() -> None:
    """The best ``examples`` cosine of each request where the library has examples, else the best ``dense`` one."""
    from router.ranking import confidence, confidence_scores, confidences

    dense, examples = np.array([[0.1, 0.5], [0.3, 0.2]]), np.array([[0.7, 0.2], [0.1, 0.4]])
    assert confidence_scores({"dense": dense, "examples": examples}) is examples
    assert confidences({"dense": dense, "examples": examples}).tolist() == [0.7, 0.4]
    assert confidences({"dense": dense}).tolist() == [0.5, 0.3]
    assert confidences({"dense": np.zeros((2, 0))}).tolist() == [0.0, 0.0]
    assert confidence(examples[0], np.array([True, False])) == 0.2
