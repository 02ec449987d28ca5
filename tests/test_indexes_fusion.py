"""Fusion from the formula on hand-sized arrays, and its properties: one request or many, order-free, tie-broken."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from indexes import BM25Index
from indexes import fusion
from indexes.fusion import SteadyRows, fuse_score_arrays, normalise, rank_of, ranks_by_score, ranks_of, tie_order

ORDER3 = np.array([0, 1, 2])


def fuse(signals, weights, method, order, rrf_k=60):
    """Fusion as the router calls it: BM25 ranks only the documents it scores above zero."""
    present = {"bm25": signals["bm25"] > 0} if "bm25" in signals else None
    return fuse_score_arrays(signals, weights, method=method, tie_order=order, rrf_k=rrf_k, present=present)


def test_rrf_from_the_formula() -> None:
    signals = {"dense": np.array([0.9, 0.5, 0.7]), "bm25": np.array([0.0, 2.0, 1.0])}
    fused = fuse(signals, {"dense": 1.0, "bm25": 0.5}, "rrf", ORDER3)
    # dense ranks: a=1, b=3, c=2; bm25 ranks b=1, c=2 and leaves a out (score 0 shares no word with the request)
    expected = [1 / (60 + 1) + 0,
                1 / (60 + 3) + 0.5 / (60 + 1),
                1 / (60 + 2) + 0.5 / (60 + 2)]
    np.testing.assert_allclose(fused, expected, rtol=0, atol=1e-15)


def test_rrf_constant_changes_the_shares() -> None:
    fused = fuse_score_arrays({"dense": np.array([0.9, 0.1])}, {"dense": 2.0}, method="rrf", tie_order=np.arange(2),
                              rrf_k=1)
    assert fused.tolist() == [2 / (1 + 1), 2 / (1 + 2)]
    with pytest.raises(ValueError, match="rrf_k must be > 0"):
        fuse_score_arrays({"dense": np.zeros(2)}, {"dense": 1.0}, method="rrf", tie_order=np.arange(2), rrf_k=0)


def test_zscore_from_the_formula() -> None:
    dense = np.array([1.0, 2.0, 3.0])  # mean 2, population std sqrt(2/3)
    bm25 = np.array([0.0, 0.0, 4.0])  # mean 4/3, std sqrt(32/9)
    fused = fuse({"dense": dense, "bm25": bm25}, {"dense": 1.0, "bm25": 0.5}, "zscore", ORDER3)
    sd_dense, sd_bm25 = np.sqrt(2 / 3), np.sqrt(32 / 9)
    expected = [(1 - 2) / sd_dense + 0.5 * (0 - 4 / 3) / sd_bm25,
                (2 - 2) / sd_dense + 0.5 * (0 - 4 / 3) / sd_bm25,
                (3 - 2) / sd_dense + 0.5 * (4 - 4 / 3) / sd_bm25]
    np.testing.assert_allclose(fused, expected, rtol=1e-12)


def test_zscore_flat_signal_falls_silent() -> None:
    fused = fuse({"dense": np.array([0.2, 0.4]), "bm25": np.zeros(2)}, {"dense": 1.0, "bm25": 1.0}, "zscore",
                 np.array([0, 1]))
    np.testing.assert_allclose(fused, [-1.0, 1.0])


def test_minmax_from_the_formula() -> None:
    fused = fuse({"dense": np.array([0.2, 0.6, 1.0]), "bm25": np.array([4.0, 0.0, 2.0])},
                 {"dense": 2.0, "bm25": 1.0}, "minmax", ORDER3)
    np.testing.assert_allclose(fused, [2 * 0.0 + 1.0, 2 * 0.5 + 0.0, 2 * 1.0 + 0.5])


def test_normalise_from_the_formula() -> None:
    np.testing.assert_allclose(normalise(np.array([2.0, 4.0, 6.0]), "minmax"), [0.0, 0.5, 1.0])
    np.testing.assert_allclose(normalise(np.array([2.0, 4.0, 6.0]), "zscore"),
                               [-1 / np.sqrt(2 / 3), 0.0, 1 / np.sqrt(2 / 3)])
    assert normalise(np.array([3.0, 3.0]), "minmax").tolist() == [1.0, 1.0]
    assert normalise(np.array([3.0, 3.0]), "zscore").tolist() == [0.0, 0.0]
    rows = np.array([[2.0, 4.0, 6.0], [5.0, 5.0, 5.0]])
    np.testing.assert_allclose(normalise(rows, "minmax"), [[0.0, 0.5, 1.0], [1.0, 1.0, 1.0]])
    with pytest.raises(ValueError, match="unknown normalisation"):
        normalise(rows, "softmax")  # type: ignore[arg-type]


def test_unknown_fusion_and_missing_or_zero_weights() -> None:
    with pytest.raises(ValueError, match="unknown fusion 'sum'"):
        fuse_score_arrays({"dense": np.zeros(2)}, {"dense": 1.0}, method="sum", tie_order=np.arange(2))  # type: ignore[arg-type]
    # a signal without a weight, or with weight 0, contributes nothing; nothing at all gives zeros
    assert fuse_score_arrays({"dense": np.array([1.0, 2.0])}, {}, method="zscore",
                             tie_order=np.arange(2)).tolist() == [0.0, 0.0]


def test_ranks_break_ties_by_id_order() -> None:
    # documents in registration order c, a, b (id order 2, 0, 1), all tied: ranks follow the ids
    assert ranks_by_score(np.array([0.5, 0.5, 0.5]), np.array([2, 0, 1])).tolist() == [3, 1, 2]
    assert ranks_by_score(np.array([0.1, 0.5, 0.5]), np.array([0, 2, 1])).tolist() == [3, 2, 1]
    assert tie_order(["c", "a", "b"]).tolist() == [2, 0, 1]


def test_rrf_ties_break_by_id() -> None:
    # identical scores: the document first in id order gets rank 1 and so the larger RRF share
    fused = fuse_score_arrays({"dense": np.array([0.5, 0.5])}, {"dense": 1.0}, method="rrf",
                              tie_order=np.array([1, 0]))
    assert fused.tolist() == [1 / (60 + 2), 1 / (60 + 1)]


score_arrays = st.integers(min_value=2, max_value=6).flatmap(lambda n: st.tuples(*[
    st.lists(st.floats(min_value=-5, max_value=5, allow_nan=False), min_size=n, max_size=n) for _ in range(3)]))
METHODS = st.sampled_from(["rrf", "zscore", "minmax"])
WEIGHTS = {"bm25": 0.5, "dense": 1.0, "examples": 0.75}


@settings(max_examples=60, deadline=None)
@given(score_arrays, METHODS, st.permutations(["bm25", "dense", "examples"]))
def test_fusion_is_invariant_to_signal_order(arrays, method, names) -> None:
    signals = {name: np.array(values) for name, values in zip(["bm25", "dense", "examples"], arrays)}
    order = np.arange(len(arrays[0]))
    reordered = {name: signals[name] for name in names}
    assert fuse(signals, WEIGHTS, method, order).tolist() == fuse(reordered, WEIGHTS, method, order).tolist()


@settings(max_examples=60, deadline=None)
@given(score_arrays, METHODS)
def test_signal_with_weight_zero_changes_nothing(arrays, method) -> None:
    bm25, dense, examples = (np.array(a) for a in arrays)
    order = np.arange(len(bm25))
    without = fuse({"bm25": bm25, "dense": dense}, {"bm25": 0.5, "dense": 1.0}, method, order)
    with_zero = fuse({"bm25": bm25, "dense": dense, "examples": examples},
                     {"bm25": 0.5, "dense": 1.0, "examples": 0.0}, method, order)
    assert with_zero.tolist() == without.tolist()


@settings(max_examples=60, deadline=None)
@given(st.lists(score_arrays, min_size=1, max_size=4).filter(lambda rows: len({len(r[0]) for r in rows}) == 1),
       METHODS)
def test_many_requests_fuse_exactly_as_one_at_a_time(rows, method) -> None:
    n = len(rows[0][0])
    order = np.array(list(range(n))[::-1])
    matrix = {name: np.array([r[i] for r in rows]) for i, name in enumerate(["bm25", "dense", "examples"])}
    together = fuse(matrix, WEIGHTS, method, order)
    for row in range(len(rows)):
        alone = fuse({name: values[row] for name, values in matrix.items()}, WEIGHTS, method, order)
        assert together[row].tolist() == alone.tolist()
    assert ranks_by_score(matrix["dense"], order).tolist() == [ranks_by_score(v, order).tolist()
                                                                for v in matrix["dense"]]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.25, 1.0]), min_size=2, max_size=8), st.randoms(use_true_random=False))
def test_ranks_are_score_then_id(values, rnd) -> None:
    n = len(values)
    order = np.array(rnd.sample(range(n), n))
    ranks = ranks_by_score(np.array(values), order)
    expected = sorted(range(n), key=lambda i: (-values[i], order[i]))
    assert [int(ranks[i]) for i in expected] == list(range(1, n + 1))
    assert [rank_of(np.array(values), order, i) for i in range(n)] == ranks.tolist()


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.25, 1.0, 3.5]), min_size=1, max_size=40), st.randoms(use_true_random=False),
       st.integers(1, 6))
def test_the_ranks_of_a_few_documents_are_theirs_in_the_full_ranking(values, rnd, count) -> None:
    """Counted among the documents at or above the lowest of them (or over all, when those are most of them)."""
    n = len(values)
    order = np.array(rnd.sample(range(n), n))
    chosen = rnd.sample(range(n), min(count, n))
    full = ranks_by_score(np.array(values), order)
    assert ranks_of(np.array(values), order, chosen) == [int(r) for r in full[chosen]]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=1, max_size=30).map(sorted), min_size=1,
                max_size=3).filter(lambda rows: len({len(r) for r in rows}) == 1))
def test_zscore_is_numpys_own_mean_and_std_to_the_last_bit(rows) -> None:
    """Computed in fewer passes, z-scores are the very bits of numpy's (x - mean) / std, a flat row 0."""
    values = np.array(rows)
    spread = values.std(axis=-1, keepdims=True)
    expected = np.divide(values - values.mean(axis=-1, keepdims=True), spread, out=np.zeros_like(values),
                         where=spread > 0)
    assert normalise(values, "zscore").tobytes() == expected.tobytes()
    assert normalise(values[0], "zscore").tobytes() == expected[0].tobytes()


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


def test_a_steady_row_is_normalised_and_ranked_once_with_the_very_bits_of_each_time() -> None:
    """The row a signal shows every request (read-only) is fused and ranked from what was kept for it: the same bits
    as computing it each time; a row at another address, or one that can be written to, is computed again."""
    rng = np.random.default_rng(7)
    n = 500
    order = rng.permutation(n)
    central = rng.normal(size=n)
    weights = {"bm25": 0.3, "centrality": 0.2, "dense": 1.0}
    steady = SteadyRows({"centrality"})
    calls = []
    real = fusion.normalise

    def counting(values, method):  # type: ignore[no-untyped-def]
        calls.append(values.shape)
        return real(values, method)

    for call, requests in enumerate((1, 3, 1)):
        scores = {"bm25": np.where(rng.random((requests, n)) < 0.2, rng.random((requests, n)) * 9, 0.0),
                  "dense": rng.normal(size=(requests, n)), "centrality": np.broadcast_to(central, (requests, n))}
        expected = fuse_score_arrays(scores, weights, method="zscore", tie_order=order)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(fusion, "normalise", counting)
            calls.clear()
            fused = fuse_score_arrays(scores, weights, method="zscore", tie_order=order, steady=steady)
        assert fused.tobytes() == expected.tobytes()
        # bm25 and dense each time; the steady row on the first call only, as one row for every request
        assert calls == [(requests, n), (n,), (requests, n)] if call == 0 else [(requests, n)] * 2
        chosen = [int(i) for i in np.argsort(-fused[0])[:5]]
        assert steady.ranks("centrality", scores["centrality"][0], order, chosen) == ranks_of(central, order, chosen)
    # another array of the same values at another address: kept anew, same result
    other = np.broadcast_to(central.copy(), (1, n))
    assert steady.contribution("centrality", other[0], "zscore", 0.2).tobytes() == \
        (real(central, "zscore") * 0.2).tobytes()
    # a row that can be written to is never kept: its next values are fused, not the first ones
    writable = central.copy()
    assert steady.contribution("centrality", writable, "zscore", 0.2) is None
    assert steady.ranks("centrality", writable, order, [0]) is None
    first = fuse_score_arrays({"centrality": writable[None, :]}, weights, method="zscore", tie_order=order,
                              steady=steady)
    writable[:] = rng.normal(size=n)
    again = fuse_score_arrays({"centrality": writable[None, :]}, weights, method="zscore", tie_order=order,
                              steady=steady)
    assert not np.array_equal(first, again)
    # a signal not named steady is computed each time, read-only or not
    assert steady.contribution("dense", np.broadcast_to(central, (n,)), "zscore", 1.0) is None


def test_a_kept_row_is_replaced_by_the_next_index_s_row() -> None:
    order = np.arange(4)
    steady = SteadyRows({"centrality"})
    first = np.array([1.0, 2.0, 3.0, 4.0])
    second = np.array([4.0, 3.0, 2.0, 1.0])
    for row in (first, second):
        view = np.broadcast_to(row, (1, 4))
        fused = fuse_score_arrays({"centrality": view}, {"centrality": 1.0}, method="zscore", tie_order=order,
                                  steady=steady)
        assert fused.tobytes() == normalise(row[None, :], "zscore").tobytes()
        assert steady.ranks("centrality", view[0], order, [0, 3]) == ranks_of(row, order, [0, 3])
