"""BM25 lexical index: fitted with rank_bm25, scored from a precomputed sparse term x document matrix.

BM25 (Robertson & Zaragoza 2009, "The Probabilistic Relevance Framework: BM25 and Beyond") scores a document
``d`` for a query ``q`` as ``sum over query tokens t of idf(t) * tf(t,d) * (k1 + 1) / (tf(t,d) + k1 * (1 - b +
b * |d| / avgdl))``. Three variants differ in idf (N documents, df(t) of them contain t):

- ``"lucene"`` (default): ``idf = log(1 + (N - df + 0.5) / (df + 0.5))``, Lucene's BM25Similarity idf, which is
  positive for every term. Chosen because skill libraries are often tiny: with 2-4 documents a term in half of
  them still counts, and a document sharing a query word always outranks one that shares none. On the dev sets
  the three variants are within 0.2 points of each other (MetaTool R@1 43.9 lucene / 43.9 okapi / 44.0 plus;
  Seal-Tools R@5 78.5 / 78.7 / 78.5; ``benchmarks/tokenizer_choice.py``), so robustness on tiny libraries decides.
- ``"okapi"``: rank_bm25's BM25Okapi, ``idf = log((N - df + 0.5) / (df + 0.5))``, which is 0 for a term in
  exactly half the documents and negative above (floored at ``epsilon`` times the mean idf, itself negative on
  tiny corpora). Kept for comparison only.
- ``"plus"``: rank_bm25's BM25Plus (Lv & Zhai 2011, "Lower-bounding term frequency normalization"),
  ``idf = log((N + 1) / df)`` and ``delta`` added to the tf part. rank_bm25 adds ``idf * delta`` for every query
  term to every document, matching or not; the same constant is added here so scores equal rank_bm25's.

``scores(text)`` equals rank_bm25's ``get_scores(tokenize(text))`` bit for bit: the per-(term, document)
contributions are computed with the same float64 expression and summed in query-token order. Repeated query
tokens count once per occurrence, as in rank_bm25. A search over 10,000 documents touches only the postings of
the query's terms, so it takes well under a millisecond.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Self

import numpy as np
from rank_bm25 import BM25, BM25Okapi, BM25Plus
from scipy import sparse

from indexes.base import Hit, Index, IndexLoadError, check_ids, read_array, read_json, top_hits, write_array, write_json
from indexes.tokenize import DEFAULT_TOKENIZER, Tokenizer

Variant = Literal["okapi", "plus", "lucene"]
VARIANTS: tuple[Variant, ...] = ("lucene", "okapi", "plus")


class LuceneBM25(BM25Okapi):
    """rank_bm25's BM25Okapi with Lucene's non-negative idf ``log(1 + (N - df + 0.5) / (df + 0.5))``."""

    def _calc_idf(self, nd: dict[str, int]) -> None:
        for word, freq in nd.items():
            self.idf[word] = math.log(1 + (self.corpus_size - freq + 0.5) / (freq + 0.5))
        self.average_idf = sum(self.idf.values()) / len(self.idf) if self.idf else 0.0


@dataclass(frozen=True)
class BM25Params:
    """BM25 parameters: ``k1`` (tf saturation), ``b`` (length normalisation), the variant, and its extras."""

    k1: float = 1.5
    b: float = 0.75
    variant: Variant = "lucene"
    delta: float = 1.0
    epsilon: float = 0.25

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"unknown BM25 variant {self.variant!r}: use one of {', '.join(VARIANTS)}")
        if not (self.k1 >= 0 and 0 <= self.b <= 1):
            raise ValueError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={self.k1!r}, b={self.b!r}")


def fit_rank_bm25(corpus_tokens: list[list[str]], params: BM25Params) -> BM25:
    """Fit the rank_bm25 model of ``params.variant`` on tokenized documents (at least one token overall)."""
    if params.variant == "okapi":
        return BM25Okapi(corpus_tokens, k1=params.k1, b=params.b, epsilon=params.epsilon)
    if params.variant == "plus":
        return BM25Plus(corpus_tokens, k1=params.k1, b=params.b, delta=params.delta)
    return LuceneBM25(corpus_tokens, k1=params.k1, b=params.b)


class BM25Index(Index):
    """A BM25 index over texts; build with :meth:`from_texts`, query with :meth:`search` or :meth:`scores`."""

    kind: ClassVar[str] = "bm25"

    def __init__(
        self,
        ids: tuple[str, ...],
        vocabulary: tuple[str, ...],
        weights: sparse.csr_matrix,
        term_constant: np.ndarray,
        params: BM25Params,
        tokenizer: Tokenizer,
    ) -> None:
        """Assemble a built index; use :meth:`from_texts` or :meth:`load` rather than calling this."""
        super().__init__(ids)
        self.params = params
        self.tokenizer = tokenizer
        self._vocabulary = vocabulary
        self._term_row = {term: row for row, term in enumerate(vocabulary)}
        self._weights = weights
        self._term_constant = term_constant

    @classmethod
    def from_texts(
        cls,
        ids: Sequence[str],
        texts: Sequence[str],
        *,
        k1: float = 1.5,
        b: float = 0.75,
        variant: Variant = "lucene",
        delta: float = 1.0,
        epsilon: float = 0.25,
        tokenizer: Tokenizer = DEFAULT_TOKENIZER,
    ) -> BM25Index:
        """Tokenize ``texts`` and build the index.

        Parameters:
            ids: one unique id per text.
            texts: the documents.
            k1, b: BM25's term-frequency saturation and length normalisation (Robertson & Zaragoza 2009).
            variant: ``"lucene"`` (default, non-negative idf), ``"okapi"`` or ``"plus"``; see the module docstring.
            delta: BM25+'s lower bound on a matching term's tf part (``"plus"`` only).
            epsilon: BM25Okapi's floor for negative idf, as a share of the mean idf (``"okapi"`` only).
            tokenizer: applied to documents now and to queries later; persisted with the index.
        """
        params = BM25Params(k1=k1, b=b, variant=variant, delta=delta, epsilon=epsilon)
        ids = check_ids(ids, len(texts))
        corpus = [tokenizer(text) for text in texts]
        if not any(corpus):
            # rank_bm25 divides by the corpus size and the vocabulary size; with neither there is nothing to score.
            empty = sparse.csr_matrix((0, len(ids)), dtype=np.float64)
            return cls(ids, (), empty, np.zeros(0), params, tokenizer)
        model = fit_rank_bm25(corpus, params)
        vocabulary = tuple(sorted(model.idf))
        row_of = {term: row for row, term in enumerate(vocabulary)}
        rows, cols, tfs = [], [], []
        for col, frequencies in enumerate(model.doc_freqs):
            for term, tf in frequencies.items():
                rows.append(row_of[term])
                cols.append(col)
                tfs.append(tf)
        idf = np.array([model.idf[term] for term in vocabulary], dtype=np.float64)
        q_freq = np.array(tfs, dtype=np.int64)
        doc_len = np.array(model.doc_len, dtype=np.int64)[cols]
        term_idf = idf[rows]
        # Same float64 expressions, in the same order, as rank_bm25's get_scores, so sums agree bit for bit.
        if params.variant == "plus":
            values = term_idf * (
                params.delta + (q_freq * (params.k1 + 1))
                / (params.k1 * (1 - params.b + params.b * doc_len / model.avgdl) + q_freq)
            )
            term_constant = idf * (params.delta + 0.0)
        else:
            values = term_idf * (
                q_freq * (params.k1 + 1) / (q_freq + params.k1 * (1 - params.b + params.b * doc_len / model.avgdl))
            )
            term_constant = np.zeros(len(vocabulary))
        weights = sparse.csr_matrix((values, (rows, cols)), shape=(len(vocabulary), len(ids)), dtype=np.float64)
        weights.sort_indices()
        return cls(ids, vocabulary, weights, term_constant, params, tokenizer)

    @property
    def vocabulary(self) -> tuple[str, ...]:
        """Indexed terms, in the row order of the weight matrix."""
        return self._vocabulary

    def _query_rows(self, query: str) -> list[int]:
        """Rows of the query's known tokens, one per occurrence, in query order; unknown tokens add nothing."""
        if not isinstance(query, str):
            raise TypeError(f"BM25Index queries are texts, got {type(query).__name__}: pass the request string")
        return [self._term_row[token] for token in self.tokenizer(query) if token in self._term_row]

    def _accumulate(self, rows: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Return (scores, matched) where matched marks documents containing at least one query term."""
        scores = np.zeros(len(self))
        matched = np.zeros(len(self), dtype=bool)
        indptr, indices, data = self._weights.indptr, self._weights.indices, self._weights.data
        for row in rows:
            postings = indices[indptr[row] : indptr[row + 1]]
            constant = self._term_constant[row]
            if constant:
                # BM25+ as in rank_bm25: a document without the term still gets idf * delta, added in order.
                contribution = np.full(len(self), constant)
                contribution[postings] = data[indptr[row] : indptr[row + 1]]
                scores += contribution
            else:
                scores[postings] += data[indptr[row] : indptr[row + 1]]
            matched[postings] = True
        return scores, matched

    def scores(self, query: str) -> np.ndarray:
        """Return the BM25 score of every document for the text ``query`` (float64, in :attr:`ids` order)."""
        return self._accumulate(self._query_rows(query))[0]

    def search(self, query: str, k: int) -> list[Hit]:
        """Return the top ``k`` documents sharing at least one token with ``query``; none known -> ``[]``."""
        scores, matched = self._accumulate(self._query_rows(query))
        return top_hits(self._ids, self._id_order, scores, k, np.flatnonzero(matched))

    def save(self, folder: Path) -> None:
        """Write the manifest, ids, vocabulary and the CSR arrays to ``folder``."""
        folder = Path(folder)
        params: dict[str, Any] = {
            "k1": self.params.k1,
            "b": self.params.b,
            "variant": self.params.variant,
            "delta": self.params.delta,
            "epsilon": self.params.epsilon,
            "tokenizer": self.tokenizer.to_dict(),
        }
        self._write_manifest(folder, params)
        write_json(folder / "vocabulary.json", list(self._vocabulary))
        write_array(folder / "weights_data.npy", self._weights.data.astype(np.float64))
        write_array(folder / "weights_indices.npy", self._weights.indices.astype(np.int64))
        write_array(folder / "weights_indptr.npy", self._weights.indptr.astype(np.int64))
        write_array(folder / "term_constant.npy", self._term_constant.astype(np.float64))

    @classmethod
    def load(cls, folder: Path) -> Self:
        """Read an index written by :meth:`save`; IndexLoadError names the missing or inconsistent file."""
        folder = Path(folder)
        ids, raw = cls._read_manifest(folder)
        try:
            params = BM25Params(
                k1=float(raw["k1"]), b=float(raw["b"]), variant=raw["variant"],
                delta=float(raw["delta"]), epsilon=float(raw["epsilon"]),
            )
            tokenizer = Tokenizer.from_dict(raw["tokenizer"])
        except (KeyError, TypeError, ValueError) as exc:
            raise IndexLoadError(f"'{folder / 'index.json'}' has bad BM25 parameters ({exc}): rebuild the "
                                 "index") from None
        vocabulary = read_json(folder / "vocabulary.json")
        if not isinstance(vocabulary, list) or not all(isinstance(term, str) for term in vocabulary):
            raise IndexLoadError(f"'{folder / 'vocabulary.json'}' is not a list of terms: rebuild the index")
        data = read_array(folder / "weights_data.npy", dtype=np.float64, ndim=1)
        indices = read_array(folder / "weights_indices.npy", dtype=np.int64, ndim=1)
        indptr = read_array(folder / "weights_indptr.npy", dtype=np.int64, ndim=1)
        term_constant = read_array(folder / "term_constant.npy", dtype=np.float64, ndim=1)
        consistent = (
            len(indptr) == len(vocabulary) + 1
            and len(term_constant) == len(vocabulary)
            and len(data) == len(indices) == (indptr[-1] if len(indptr) else -1)
            and bool(np.all(np.diff(indptr) >= 0))
            and (len(indices) == 0 or (indices.min() >= 0 and indices.max() < len(ids)))
        )
        if not consistent:
            raise IndexLoadError(
                f"the weight arrays in '{folder}' do not fit {len(vocabulary)} terms x {len(ids)} documents: "
                "rebuild the index"
            )
        weights = sparse.csr_matrix((data, indices, indptr), shape=(len(vocabulary), len(ids)))
        return cls(ids, tuple(vocabulary), weights, term_constant, params, tokenizer)
