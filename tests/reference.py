"""The conformance references for BM25: the formula written out one term at a time, and rank_bm25 itself.

Slow and obviously correct, and kept with the tests on purpose: the conformance suite holds
:class:`~indexes.bm25.BM25Index` to both (rank_bm25 bit for bit), and no product code imports them. (The dense
index's reference is a plain numpy product in the suite itself.)
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np
from rank_bm25 import BM25, BM25Okapi, BM25Plus

from indexes.bm25 import BM25Params


def bm25_reference_scores(
    corpus_tokens: list[list[str]],
    query_tokens: Sequence[str],
    k1: float = 1.5,
    b: float = 0.75,
    variant: str = "lucene",
    *,
    delta: float = 1.0,
    epsilon: float = 0.25,
) -> np.ndarray:
    """BM25 scores of every document for ``query_tokens``, written from the formula, one term at a time.

    ``score(d) = sum over query tokens t (with repeats) of idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b *
    |d| / avgdl))`` (Robertson & Zaragoza 2009), with idf by variant: ``lucene`` ``log(1 + (N - df + 0.5) / (df +
    0.5))``; ``okapi`` ``log((N - df + 0.5) / (df + 0.5))`` with negatives replaced by ``epsilon`` times the mean
    idf over the vocabulary; ``plus`` ``log((N + 1) / df)`` with ``delta`` added to the tf part (Lv & Zhai 2011),
    for every document, as rank_bm25 does. Unknown tokens score 0.
    """
    n = len(corpus_tokens)
    counts = [Counter(doc) for doc in corpus_tokens]
    doc_len = np.array([len(doc) for doc in corpus_tokens], dtype=np.float64)
    df = Counter(term for doc in counts for term in doc)
    if not df:
        return np.zeros(n)
    avgdl = doc_len.mean()

    def raw_idf(term: str) -> float:
        if variant == "lucene":
            return math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
        if variant == "okapi":
            return math.log(n - df[term] + 0.5) - math.log(df[term] + 0.5)
        if variant == "plus":
            return math.log((n + 1) / df[term])
        raise ValueError(f"unknown BM25 variant {variant!r}")

    idf = {term: raw_idf(term) for term in df}
    if variant == "okapi":
        floor = epsilon * sum(idf.values()) / len(idf)
        idf = {term: (floor if value < 0 else value) for term, value in idf.items()}
    scores = np.zeros(n)
    for term in query_tokens:
        if term not in idf:
            continue
        tf = np.array([doc[term] for doc in counts], dtype=np.float64)
        norm = k1 * (1 - b + b * doc_len / avgdl)
        part = tf * (k1 + 1) / (tf + norm)
        scores += idf[term] * (part + delta if variant == "plus" else part)
    return scores


class LuceneBM25(BM25Okapi):
    """rank_bm25's BM25Okapi with Lucene's non-negative idf ``log(1 + (N - df + 0.5) / (df + 0.5))``."""

    def _calc_idf(self, nd: dict[str, int]) -> None:
        for word, freq in nd.items():
            self.idf[word] = math.log(1 + (self.corpus_size - freq + 0.5) / (freq + 0.5))
        self.average_idf = sum(self.idf.values()) / len(self.idf) if self.idf else 0.0


def fit_rank_bm25(corpus_tokens: list[list[str]], params: BM25Params) -> BM25:
    """Fit the rank_bm25 model of ``params.variant`` on tokenized documents (at least one token overall)."""
    if params.variant == "okapi":
        return BM25Okapi(corpus_tokens, k1=params.k1, b=params.b, epsilon=params.epsilon)
    if params.variant == "plus":
        return BM25Plus(corpus_tokens, k1=params.k1, b=params.b, delta=params.delta)
    return LuceneBM25(corpus_tokens, k1=params.k1, b=params.b)
