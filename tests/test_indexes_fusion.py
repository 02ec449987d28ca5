"""Fusion from the formula on hand-sized rankings, plus properties of the pure functions and of search."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from indexes import BM25Index, Hit, rrf, weighted_fusion
from indexes.fusion import normalise


def ranking(*ids: str) -> list[Hit]:
    return [Hit(doc_id, 10.0 - rank, rank) for rank, doc_id in enumerate(ids, start=1)]


def test_rrf_from_the_formula() -> None:
    fused = rrf({"bm25": ranking("a", "b", "c"), "dense": ranking("b", "d", "a")})
    scores = {hit.id: hit.score for hit in fused}
    assert scores["a"] == pytest.approx(1 / (60 + 1) + 1 / (60 + 3))
    assert scores["b"] == pytest.approx(1 / (60 + 2) + 1 / (60 + 1))
    assert scores["c"] == pytest.approx(1 / (60 + 3))
    assert scores["d"] == pytest.approx(1 / (60 + 2))
    assert [hit.id for hit in fused] == ["b", "a", "d", "c"]
    assert [hit.rank for hit in fused] == [1, 2, 3, 4]


def test_rrf_weights_and_k() -> None:
    fused = rrf({"bm25": ranking("a", "b"), "dense": ranking("b", "a")}, k=1, weights={"bm25": 3.0, "dense": 1.0})
    assert [(hit.id, hit.score) for hit in fused] == [
        ("a", pytest.approx(3 / (1 + 1) + 1 / (1 + 2))),
        ("b", pytest.approx(3 / (1 + 2) + 1 / (1 + 1))),
    ]


def test_rrf_carries_on_past_an_empty_ranking() -> None:
    fused = rrf({"bm25": [], "dense": ranking("x", "y")})
    assert [(hit.id, hit.score) for hit in fused] == [("x", pytest.approx(1 / 61)), ("y", pytest.approx(1 / 62))]
    assert rrf({}) == [] and rrf({"bm25": []}) == []


def test_rrf_counts_a_repeated_document_once_at_its_best_rank() -> None:
    fused = rrf({"bm25": [Hit("a", 1.0, 1), Hit("a", 0.5, 2)]})
    assert fused == [Hit("a", pytest.approx(1 / 61), 1)]


def test_rrf_refuses_bad_options() -> None:
    with pytest.raises(ValueError, match="no weight for ranking 'dense'"):
        rrf({"bm25": ranking("a"), "dense": ranking("a")}, weights={"bm25": 1.0})
    with pytest.raises(ValueError, match="weights must be >= 0"):
        rrf({"bm25": ranking("a")}, weights={"bm25": -1.0})
    with pytest.raises(ValueError, match="rrf k must be > 0"):
        rrf({"bm25": ranking("a")}, k=0)


def test_normalise_from_the_formula() -> None:
    assert normalise(np.array([2.0, 4.0, 6.0]), "minmax").tolist() == [0.0, 0.5, 1.0]
    assert normalise(np.array([5.0, 5.0]), "minmax").tolist() == [1.0, 1.0]
    z = normalise(np.array([1.0, 3.0]), "zscore")
    assert z.tolist() == [-1.0, 1.0]
    assert normalise(np.array([7.0, 7.0]), "zscore").tolist() == [0.0, 0.0]
    assert normalise(np.array([3.0, -1.0]), "none").tolist() == [3.0, -1.0]
    assert normalise(np.array([]), "minmax").size == 0
    with pytest.raises(ValueError, match="unknown normalisation 'max'"):
        normalise(np.array([1.0]), "max")


def test_weighted_fusion_from_the_formula() -> None:
    # bm25 minmax: a=(9-1)/8=1, b=(5-1)/8=0.5, c=0; dense minmax: b=1, c=(0.5-0.2)/(0.8-0.2)=0.5, a missing -> 0.
    fused = weighted_fusion(
        {"bm25": {"a": 9.0, "b": 5.0, "c": 1.0}, "dense": {"b": 0.8, "c": 0.5, "d": 0.2}},
        {"bm25": 0.25, "dense": 0.75},
    )
    scores = {hit.id: hit.score for hit in fused}
    assert scores == {
        "a": pytest.approx(0.25 * 1.0 + 0.75 * 0.0),
        "b": pytest.approx(0.25 * 0.5 + 0.75 * 1.0),
        "c": pytest.approx(0.25 * 0.0 + 0.75 * 0.5),
        "d": pytest.approx(0.25 * 0.0 + 0.75 * 0.0),
    }
    assert [hit.id for hit in fused] == ["b", "c", "a", "d"]


def test_weighted_fusion_accepts_hits_and_drops_an_empty_ranking() -> None:
    fused = weighted_fusion({"bm25": [], "dense": ranking("x", "y", "z")}, {"bm25": 0.5, "dense": 0.5})
    assert [(hit.id, hit.score) for hit in fused] == [("x", 1.0), ("y", 0.5), ("z", 0.0)]


def test_weighted_fusion_zscore_missing_gets_the_lowest_score() -> None:
    fused = weighted_fusion({"r": {"a": 1.0, "b": 3.0}, "s": {"a": 2.0}}, {"r": 1.0, "s": 1.0}, method="zscore")
    # r: a=-1, b=+1; s: a=0 (constant), b missing -> s's lowest normalised score, 0.
    assert {hit.id: hit.score for hit in fused} == {"a": pytest.approx(-0.5), "b": pytest.approx(0.5)}


names = st.sampled_from(["bm25", "dense", "title", "body"])
doc_ids = st.text(alphabet="abcdef", min_size=1, max_size=2)
rankings_strategy = st.dictionaries(names, st.lists(doc_ids, unique=True, max_size=8), max_size=4)


def as_hits(order: list[str]) -> list[Hit]:
    return [Hit(doc_id, float(len(order) - i), i + 1) for i, doc_id in enumerate(order)]


@given(rankings_strategy, st.randoms(use_true_random=False))
def test_rrf_is_invariant_to_input_order(rankings: dict[str, list[str]], rnd) -> None:
    items = [(name, as_hits(order)) for name, order in rankings.items()]
    shuffled = items[:]
    rnd.shuffle(shuffled)
    assert rrf(dict(items)) == rrf(dict(shuffled))


@given(rankings_strategy, st.randoms(use_true_random=False))
def test_weighted_fusion_is_invariant_to_input_order(rankings: dict[str, list[str]], rnd) -> None:
    items = [(name, as_hits(order)) for name, order in rankings.items()]
    shuffled = items[:]
    rnd.shuffle(shuffled)
    weights = {"bm25": 0.3, "dense": 0.7, "title": 0.1, "body": 0.2}
    assert weighted_fusion(dict(items), weights) == weighted_fusion(dict(shuffled), weights)


@given(rankings_strategy)
def test_fused_output_is_sorted_with_ties_by_id(rankings: dict[str, list[str]]) -> None:
    for fused in (rrf({n: as_hits(o) for n, o in rankings.items()}),
                  weighted_fusion({n: as_hits(o) for n, o in rankings.items()}, dict.fromkeys(rankings, 1.0))):
        assert [hit.rank for hit in fused] == list(range(1, len(fused) + 1))
        keys = [(-hit.score, hit.id) for hit in fused]
        assert keys == sorted(keys)
        assert {hit.id for hit in fused} == {doc for order in rankings.values() for doc in order}


words = st.sampled_from(["pdf", "form", "weather", "slide", "deck", "chart", "report", "image"])
library = st.lists(st.lists(words, min_size=1, max_size=6).map(" ".join), min_size=1, max_size=12)


@settings(deadline=None)
@given(library, st.lists(words, min_size=1, max_size=4).map(" ".join), st.integers(1, 12))
def test_bm25_top_k_is_a_prefix_of_top_k_plus_one(texts: list[str], query: str, k: int) -> None:
    index = BM25Index.from_texts([f"s{i:02d}" for i in range(len(texts))][::-1], texts)
    top_k, top_k1 = index.search(query, k), index.search(query, k + 1)
    assert top_k == top_k1[: len(top_k)]
    keys = [(-hit.score, hit.id) for hit in top_k1]
    assert keys == sorted(keys)


@given(st.lists(st.tuples(st.floats(0, 10), st.floats(-1, 1)), min_size=1, max_size=8),
       st.floats(0.1, 3), st.floats(0.1, 3))
def test_array_fusion_agrees_with_the_ranked_list_functions(rows, w_a, w_b) -> None:
    from indexes.fusion import fuse_score_arrays, ranks_by_score

    ids = [f"d{i}" for i in range(len(rows))]
    tie_order = np.arange(len(rows))
    a = np.array([r[0] for r in rows])
    b = np.array([r[1] for r in rows])
    weights = {"a": w_a, "b": w_b}
    hits = {name: [Hit(ids[i], float(v[i]), int(rank)) for i, rank in enumerate(ranks_by_score(v, tie_order))]
            for name, v in (("a", a), ("b", b))}
    by_rank = dict((h.id, h.score) for h in rrf(hits, k=60, weights=weights))
    arrays = fuse_score_arrays({"a": a, "b": b}, weights, method="rrf", tie_order=tie_order)
    assert np.allclose(arrays, [by_rank[i] for i in ids])
    by_score = dict((h.id, h.score) for h in weighted_fusion(hits, weights, method="minmax"))
    arrays = fuse_score_arrays({"a": a, "b": b}, weights, method="minmax", tie_order=tie_order)
    assert np.allclose(arrays / (w_a + w_b), [by_score[i] for i in ids])
