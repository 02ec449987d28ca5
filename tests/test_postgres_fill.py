"""indexes.fill: the scores a store gives the documents it did not retrieve, checked against the exact full row."""

from __future__ import annotations

import numpy as np

from indexes.fill import fill_unretrieved
from indexes.fusion import fuse_score_arrays, normalise, tie_order


def _top(values: np.ndarray, depth: int) -> np.ndarray:
    return np.argsort(-values, kind="stable")[:depth]


def test_the_fill_has_the_mean_and_variance_of_the_documents_left_out() -> None:
    rng = np.random.default_rng(7)
    for n in (10, 11, 1001):
        exact = rng.normal(0.2, 0.1, n)
        where = _top(exact, 5)
        full, cut = fill_unretrieved(n, where, exact[where], exact.sum(), (exact ** 2).sum(), exact[where].min())
        assert not cut
        assert np.array_equal(full[where], exact[where])
        assert abs(full.mean() - exact.mean()) < 1e-12
        assert abs(full.std() - exact.std()) < 1e-12


def test_every_retrieved_document_keeps_its_exact_z_score_and_fused_score() -> None:
    rng = np.random.default_rng(3)
    n = 2000
    dense = rng.normal(0.1, 0.08, n)
    bm25 = np.where(rng.random(n) < 0.05, rng.gamma(2.0, 2.0, n), 0.0)
    where = np.union1d(_top(dense, 50), _top(bm25, 50))
    filled = {name: fill_unretrieved(n, where, v[where], v.sum(), (v ** 2).sum())[0]
              for name, v in (("dense", dense), ("bm25", bm25))}
    order = tie_order([f"s{i:05d}" for i in range(n)])
    weights = {"dense": 1.0, "bm25": 0.3}
    exact_fused = fuse_score_arrays({"dense": dense, "bm25": bm25}, weights, method="zscore", tie_order=order)
    fused = fuse_score_arrays(filled, weights, method="zscore", tie_order=order)
    assert np.allclose(normalise(filled["dense"], "zscore")[where], normalise(dense, "zscore")[where], atol=1e-9)
    assert np.allclose(fused[where], exact_fused[where], atol=1e-9)
    assert list(np.argsort(-fused, kind="stable")[:5]) == list(np.argsort(-exact_fused, kind="stable")[:5])


def test_bm25_with_every_match_retrieved_fills_exact_zeros() -> None:
    exact = np.array([0.0, 3.5, 0.0, 0.0, 1.25, 0.0])
    where = np.array([1, 4])
    full, cut = fill_unretrieved(6, where, exact[where], exact.sum(), (exact ** 2).sum(), 0.0)
    assert full.tolist() == exact.tolist() and not cut


def test_a_fill_above_the_lowest_retrieved_score_is_cut_there_and_says_so() -> None:
    # left out: 0 and 10 (mean 5, sd 5): 10 would exceed the lowest retrieved score 9
    exact = np.array([9.0, 0.0, 10.0, 9.5])
    where = np.array([0, 3])
    full, cut = fill_unretrieved(4, where, exact[where], exact.sum(), (exact ** 2).sum(), 9.0)
    assert cut
    assert full.tolist() == [9.0, 9.0, 0.0, 9.5]


def test_the_left_out_documents_take_high_low_in_position_order_and_an_odd_last_one_the_mean() -> None:
    """Left out: positions 0, 2, 3, 5, 6, sum 5 and sum of squares 9, so mean 1, variance 0.8 and spread
    sqrt(0.8 * 5 / (2 * 2)) = 1: high 2, low 0, high, low, then the mean."""
    full, cut = fill_unretrieved(7, np.array([1, 4]), np.array([2.0, 3.0]), 2.0 + 3.0 + 5.0, 4.0 + 9.0 + 9.0)
    assert full.tolist() == [2.0, 2.0, 0.0, 2.0, 3.0, 0.0, 1.0] and not cut
