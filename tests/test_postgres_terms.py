"""The frequent terms' weighed postings a router over PostgreSQL keeps (:class:`router.pgquery.TermCache`) and the
BM25 row it adds from them: the in-process weights, summed in request order."""

from __future__ import annotations

import math

import numpy as np

from router import pgquery


def _weighted(term: str, size: int, field: int = 0) -> pgquery.Weighted:
    return {(field, term): (np.arange(size), np.full(size, 1.0))}


def test_only_terms_with_enough_postings_are_kept_and_the_least_recently_used_go_first() -> None:
    cache = pgquery.TermCache(budget=10, min_postings=3)
    cache.put({**_weighted("rare", 2), **_weighted("a", 4)})
    assert cache.get("rare") is None and cache.get("a") is not None and cache.postings == 4
    cache.put({**_weighted("b", 3, 0), **_weighted("b", 1, 1)})  # a term's fields count together: 4 postings
    assert cache.postings == 8 and set(cache.get("b") or ()) == {(0, "b"), (1, "b")}
    cache.get("a")  # used last: "b" goes first
    cache.put(_weighted("c", 5))
    assert cache.get("b") is None and cache.get("a") is not None and cache.get("c") is not None
    assert cache.postings == 9
    cache.put(_weighted("huge", 11))  # more than the whole budget: never kept
    assert cache.get("huge") is None and cache.postings == 9


def test_the_row_is_the_formula_summed_in_request_order_with_repeats() -> None:
    n, avgdl, k1, b = 10, 4.5, 1.5, 0.75
    fetched = {(0, "pdf"): (np.array([7, 2]), np.array([1.0, 3.0]), np.array([4.0, 9.0])),
               (0, "form"): (np.array([2]), np.array([2.0]), np.array([9.0]))}
    position = np.arange(10)[::-1].copy()  # slot s is skill 9 - s
    weighted = pgquery.weigh(fetched, {0: (n, avgdl)}, position, k1, b)
    row = pgquery.bm25_row(0, ["form", "pdf", "form", "missing"], weighted, n)

    def weight(df: int, tf: float, dl: float) -> float:
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        return idf * (tf * 2.5 / (tf + 1.5 * (0.25 + 0.75 * dl / avgdl)))

    expected = np.zeros(n)
    expected[7] = (weight(1, 2.0, 9.0) + weight(2, 3.0, 9.0)) + weight(1, 2.0, 9.0)
    expected[2] = weight(2, 1.0, 4.0)
    assert row.tolist() == expected.tolist()
