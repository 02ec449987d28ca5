"""The Router: fusion from the formula, routing on the bundled library with the real model, and the rules."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from indexes import Encoder
from router.config import RouterConfig
from router.errors import ConfigError, SkillToolError
from router.profiles import get_profile
from indexes.fusion import rank_of, ranks_by_score as signal_ranks
from router.routing import Router, conversation_text, fuse

BUNDLED = Path(__file__).resolve().parents[1] / "skills"


@pytest.fixture(scope="session")
def encoder() -> Encoder:
    model = Encoder()
    model.encode(["warm up"])
    return model


@pytest.fixture(scope="module")
def bundled(tmp_path_factory: pytest.TempPathFactory, encoder: Encoder) -> Router:
    folder = tmp_path_factory.mktemp("bundled") / "idx"
    return Router.from_skills([str(BUNDLED)], "genkit", RouterConfig(route_above=0), index_folder=str(folder),
                              encoder=encoder).build()


def write_skill(root: Path, folder: str, description: str, *, name: str | None = None, body: str = "") -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name or folder}\ndescription: {description}\n---\n{body}", encoding="utf-8")
    return path


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
                       index_folder=str(folder / "idx"), encoder=encoder).build()
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


# -- fuse() from the formula ------------------------------------------------------------------------------------

ORDER3 = np.array([0, 1, 2])


def test_fuse_rrf_from_the_formula() -> None:
    signals = {"dense": np.array([0.9, 0.5, 0.7]), "bm25": np.array([0.0, 2.0, 1.0])}
    fused = fuse(signals, {"dense": 1.0, "bm25": 0.5}, "rrf", 60, ORDER3)
    # dense ranks: a=1, b=3, c=2; bm25 ranks b=1, c=2 and leaves a out (score 0 shares no word with the request)
    expected = [1 / (60 + 1) + 0,
                1 / (60 + 3) + 0.5 / (60 + 1),
                1 / (60 + 2) + 0.5 / (60 + 2)]
    np.testing.assert_allclose(fused, expected, rtol=0, atol=1e-15)


def test_fuse_zscore_from_the_formula() -> None:
    dense = np.array([1.0, 2.0, 3.0])  # mean 2, population std sqrt(2/3)
    bm25 = np.array([0.0, 0.0, 4.0])  # mean 4/3, std sqrt(32/9)
    fused = fuse({"dense": dense, "bm25": bm25}, {"dense": 1.0, "bm25": 0.5}, "zscore", 60, ORDER3)
    sd_dense, sd_bm25 = np.sqrt(2 / 3), np.sqrt(32 / 9)
    expected = [(1 - 2) / sd_dense + 0.5 * (0 - 4 / 3) / sd_bm25,
                (2 - 2) / sd_dense + 0.5 * (0 - 4 / 3) / sd_bm25,
                (3 - 2) / sd_dense + 0.5 * (4 - 4 / 3) / sd_bm25]
    np.testing.assert_allclose(fused, expected, rtol=1e-12)


def test_fuse_zscore_flat_signal_falls_silent() -> None:
    fused = fuse({"dense": np.array([0.2, 0.4]), "bm25": np.zeros(2)}, {"dense": 1.0, "bm25": 1.0}, "zscore", 60,
                 np.array([0, 1]))
    np.testing.assert_allclose(fused, [-1.0, 1.0])


def test_fuse_minmax_from_the_formula() -> None:
    fused = fuse({"dense": np.array([0.2, 0.6, 1.0]), "bm25": np.array([4.0, 0.0, 2.0])},
                 {"dense": 2.0, "bm25": 1.0}, "minmax", 60, ORDER3)
    np.testing.assert_allclose(fused, [2 * 0.0 + 1.0, 2 * 0.5 + 0.0, 2 * 1.0 + 0.5])


def test_signal_ranks_break_ties_by_id_order() -> None:
    # skills in registration order c, a, b (id order 2, 0, 1), all tied: ranks follow the ids
    ranks = signal_ranks(np.array([0.5, 0.5, 0.5]), np.array([2, 0, 1]))
    assert ranks.tolist() == [3, 1, 2]
    assert signal_ranks(np.array([0.1, 0.5, 0.5]), np.array([0, 2, 1])).tolist() == [3, 2, 1]


def test_fuse_rrf_ties_break_by_id() -> None:
    # identical scores: the skill first in id order gets rank 1 and so the larger RRF share
    fused = fuse({"dense": np.array([0.5, 0.5])}, {"dense": 1.0}, "rrf", 60, np.array([1, 0]))
    assert fused.tolist() == [1 / (60 + 2), 1 / (60 + 1)]


score_arrays = st.integers(min_value=2, max_value=6).flatmap(lambda n: st.tuples(*[
    st.lists(st.floats(min_value=-5, max_value=5, allow_nan=False), min_size=n, max_size=n) for _ in range(3)]))


@settings(max_examples=60, deadline=None)
@given(score_arrays, st.sampled_from(["rrf", "zscore", "minmax"]), st.permutations(["bm25", "dense", "examples"]))
def test_fuse_is_invariant_to_signal_order(arrays, method, names) -> None:
    signals = {name: np.array(values) for name, values in zip(["bm25", "dense", "examples"], arrays)}
    weights = {"bm25": 0.5, "dense": 1.0, "examples": 0.75}
    order = np.arange(len(arrays[0]))
    reordered = {name: signals[name] for name in names}
    assert fuse(signals, weights, method, 60, order).tolist() == fuse(reordered, weights, method, 60, order).tolist()


@settings(max_examples=60, deadline=None)
@given(score_arrays, st.sampled_from(["rrf", "zscore", "minmax"]))
def test_fuse_signal_with_weight_zero_changes_nothing(arrays, method) -> None:
    bm25, dense, examples = (np.array(a) for a in arrays)
    order = np.arange(len(bm25))
    without = fuse({"bm25": bm25, "dense": dense}, {"bm25": 0.5, "dense": 1.0}, method, 60, order)
    with_zero = fuse({"bm25": bm25, "dense": dense, "examples": examples},
                     {"bm25": 0.5, "dense": 1.0, "examples": 0.0}, method, 60, order)
    assert with_zero.tolist() == without.tolist()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.25, 1.0]), min_size=2, max_size=8), st.randoms(use_true_random=False))
def test_signal_ranks_are_score_then_id(values, rnd) -> None:
    n = len(values)
    order = np.array(rnd.sample(range(n), n))
    ranks = signal_ranks(np.array(values), order)
    expected = sorted(range(n), key=lambda i: (-values[i], order[i]))
    assert [int(ranks[i]) for i in expected] == list(range(1, n + 1))


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


def test_bundled_build_embeds_every_skill_once(bundled: Router) -> None:
    assert len(bundled.skills) == 52
    assert bundled.embedded_count in (0, 52)  # 0 only when another module already filled the same folder


def test_ranking_is_best_first_with_consistent_ranks(bundled: Router) -> None:
    matches = bundled.rank("will it rain in Lyon this weekend", 5)
    assert [m.rank for m in matches] == [1, 2, 3, 4, 5]
    assert [m.score for m in matches] == sorted((m.score for m in matches), reverse=True)
    fused, per_signal = bundled.scores("will it rain in Lyon this weekend")
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
        _, single = bundled.scores(request)
        np.testing.assert_allclose(many["dense"][row], single["dense"], atol=1e-5)
        np.testing.assert_array_equal(many["bm25"][row], single["bm25"])
    assert many["dense"].shape == (2, 52)
    assert bundled.score_many([])["bm25"].shape == (0, 52)


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
    assert [m.id for m in plain.rank(request)][0] == "csv-cleanup"
    assert "sql-tuning" in [m.id for m in plain.rank(request, 5)[2:]]
    router = small_router(pinned=["sql-tuning"], excluded=["csv-cleanup"])
    ranked = router.rank(request)
    ids = [m.id for m in ranked]
    assert "csv-cleanup" not in ids
    assert [m.reason for m in ranked] == ["routed", "routed", "pinned"] and ids[-1] == "sql-tuning"
    shown = [s.id for s in router.route(request).shown]
    assert "sql-tuning" in shown and "csv-cleanup" not in shown and len(shown) == 3
    # excluded wins over naming the skill
    assert "csv-cleanup" not in [m.id for m in router.rank("use csv cleanup please")]


def test_excluded_is_never_shown_in_a_small_library(small_router) -> None:
    router = small_router(config=RouterConfig(), excluded=["csv-cleanup"])
    assert [s.id for s in router.route("anything").shown] == [n for n in sorted(SMALL) if n != "csv-cleanup"]


def test_named_skill_is_included_in_its_fused_place(bundled: Router) -> None:
    request = "will it rain in Lyon this weekend? then the log analysis"
    fused, per_signal = bundled.scores(request)
    plain = [m.id for m in bundled.rank_scores("", fused, per_signal, 3)]  # no text, so nothing is named
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
    assert router.build().embedded_count == 1  # one text shared by both skills
    request = "how many grams is a cup of flour"
    first = router.rank(request)
    assert [m.id for m in first] == ["kitchen-units", "kitchen_units"]
    assert first[0].score == first[1].score
    assert [m.ranks["dense"] for m in first] == [1, 2]
    for _ in range(3):
        assert router.rank(request) == first


def test_rank_scores_ties_break_by_id(small_router) -> None:
    router = small_router(config=RouterConfig(route_above=0, k=5))
    matches = router.rank_scores("nothing named here", np.zeros(5), {})
    assert [m.id for m in matches] == sorted(SMALL)


def test_abstention(small_router) -> None:
    request = "what is the capital of Australia"
    never = small_router(config=RouterConfig(route_above=0, k=2, threshold=-1.0))
    routing = never.route(request)
    assert not routing.abstained and len(routing.shown) == 2
    _, per_signal = never.scores(request)
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
    _, per_signal = bundled.scores(request)
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
    assert conversation_text(forward) == (rain_turn, csv_turn)
    # earlier turns do weigh in: the context moves the fused scores
    alone, _ = bundled.scores(rain_turn)
    with_context, _ = bundled.scores(forward)
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
    scores = np.array(values, dtype=np.float64)
    order = np.array(data.draw(st.permutations(range(len(values)))), dtype=np.int64)
    full = signal_ranks(scores, order)
    assert [rank_of(scores, order, i) for i in range(len(values))] == full.tolist()


def test_bulk_evaluation_ranks_exactly_as_the_router(bundled: Router, tmp_path: Path) -> None:
    from router.cli.evaluate import retrievers_for
    from router.evaluation import load_requests

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
