"""The conformance references: brute-force cosine search and BM25 written straight from the formula.

They are slow and obviously correct, and live with the tests on purpose: the conformance suite holds
:class:`~indexes.dense.DenseIndex` and :class:`~indexes.bm25.BM25Index` to them, and no product code imports them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar, Self

import numpy as np

from indexes.base import Index, check_ids, check_query_vector, check_unit_vectors, read_vectors, write_array

class ExactIndex(Index):
    """Brute-force inner product over L2-normalised vectors (so scores are cosine similarities)."""

    kind: ClassVar[str] = "exact"

    def __init__(self, ids: tuple[str, ...], vectors: np.ndarray) -> None:
        """Assemble from checked parts; use :meth:`from_vectors` or :meth:`load`."""
        super().__init__(ids)
        self._vectors = vectors

    @classmethod
    def from_vectors(cls, ids: Sequence[str], vectors: np.ndarray) -> ExactIndex:
        """Build from one id per row of ``vectors`` (float32, L2-normalised, shape (n, dim))."""
        array = check_unit_vectors(vectors, len(ids))
        return cls(check_ids(ids, len(array)), array)

    @property
    def dim(self) -> int:
        """Vector dimension."""
        return int(self._vectors.shape[1])

    @property
    def vectors(self) -> np.ndarray:
        """The stored float32 vectors (read-only view)."""
        view = self._vectors.view()
        view.flags.writeable = False
        return view

    def scores(self, query: np.ndarray) -> np.ndarray:
        """Cosine similarity of every document to ``query``, computed in float64."""
        return self._vectors.astype(np.float64) @ check_query_vector(query, self.dim)

    def save(self, folder: Path) -> None:
        """Write manifest, ids and ``vectors.npy`` to ``folder``."""
        folder = Path(folder)
        self._write_manifest(folder, {"dim": self.dim})
        write_array(folder / "vectors.npy", self._vectors)

    @classmethod
    def load(cls, folder: Path) -> Self:
        """Read an index written by :meth:`save`."""
        folder = Path(folder)
        ids, _ = cls._read_manifest(folder)
        return cls(ids, read_vectors(folder, len(ids)))


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
