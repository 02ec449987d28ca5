"""BM25 lexical index: rank_bm25's statistics, scored from a precomputed sparse term x document matrix.

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

``scores(text)`` equals rank_bm25's ``get_scores(tokenize(text))`` bit for bit: document lengths, document
frequencies and idf are computed as rank_bm25 computes them (its idf with ``math.log``, okapi's mean idf summed in
its order), and the per-(term, document) contributions with the same float64 expression, summed in query-token
order. Repeated query tokens count once per occurrence, as in rank_bm25. A search over 10,000 documents touches
only the postings of the query's terms, so it takes well under a millisecond.

An index keeps each document's term counts with a digest of its text (:class:`TermCounts`), so
``from_texts(..., reuse=old)`` tokenises only the texts ``old`` did not hold: replacing one document of 10,000
re-tokenises one text instead of 10,000. Every statistic is then recomputed from the counts, so the result equals
a build from scratch exactly (same vocabulary, same weights).
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Self

import numpy as np

from indexes.base import Hit, Index, IndexLoadError, check_ids, read_array, read_json, top_hits, write_array, write_json
from indexes.tokenize import DEFAULT_TOKENIZER, Tokenizer

Variant = Literal["okapi", "plus", "lucene"]
VARIANTS: tuple[Variant, ...] = ("lucene", "okapi", "plus")


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


DIGEST_BYTES = 16


def text_digest(text: str) -> bytes:
    """The digest a document's term counts are kept under (BLAKE2b, 16 bytes, of the UTF-8 text)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=DIGEST_BYTES).digest()


#: Digests of the texts of the last builds in this process (a text is its own key: equal texts, equal digests).
_DIGESTS: dict[str, bytes] = {}
_DIGESTS_KEPT = 100_000


def text_digests(texts: Sequence[str]) -> list[bytes]:
    """:func:`text_digest` of each text, remembered for the texts the previous builds in this process held, so a
    rebuild after one edit hashes the changed text only (the others are the same strings again)."""
    memo = _DIGESTS
    out = []
    for text in texts:
        digest = memo.get(text)
        if digest is None:
            digest = memo[text] = text_digest(text)
        out.append(digest)
    if len(memo) > _DIGESTS_KEPT:
        memo.clear()
        memo.update(zip(texts, out))
    return out


def known_digests(texts: Sequence[str]) -> list[bytes]:
    """:func:`text_digest` of each text, from what :func:`text_digests` remembers where it holds the text (nothing
    is added: a caller keeping digests for later, not building an index, leaves the memo to the builds)."""
    memo = _DIGESTS
    return [memo.get(text) or text_digest(text) for text in texts]


def remember_digests(texts: Sequence[str], digests: Sequence[bytes]) -> None:
    """Let :func:`text_digests` give ``digests`` (one :func:`text_digest` per text, computed by an earlier process
    and kept with the texts) for ``texts`` without hashing them, up to the memo's size. The caller vouches that
    each digest is its text's: one kept in a file is read only from a file whose damage is detected (a checksum
    per entry, :mod:`router.fresh`)."""
    if len(digests) != len(texts) or any(len(d) != DIGEST_BYTES for d in digests):
        raise ValueError("one digest of DIGEST_BYTES bytes a text")
    if len(_DIGESTS) + len(texts) <= _DIGESTS_KEPT:
        _DIGESTS.update(zip(texts, digests))


@dataclass(frozen=True)
class TermCounts:
    """Each document's distinct terms with their counts, document by document, and a digest of its text.

    ``terms[indptr[d]:indptr[d + 1]]`` are the vocabulary rows of document ``d`` in order of first occurrence (the
    order rank_bm25 meets them, which okapi's mean idf depends on) and ``counts`` the same slice's term
    frequencies; ``digests`` is one :func:`text_digest` per document, shape (documents, 16).
    """

    terms: np.ndarray  # int32
    counts: np.ndarray  # int32
    indptr: np.ndarray  # int64, documents + 1
    digests: np.ndarray  # uint8, (documents, DIGEST_BYTES)

    def digest_list(self) -> list[bytes]:
        raw = self.digests.tobytes()
        return [raw[i : i + DIGEST_BYTES] for i in range(0, len(raw), DIGEST_BYTES)]


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The positions ``starts[i] .. starts[i] + lengths[i] - 1`` for every i, concatenated."""
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.repeat(starts, lengths) + (np.arange(total) - offsets)


def count_terms(texts: Sequence[str], digests: Sequence[bytes], tokenizer: Tokenizer,
                previous: TermCounts | None = None, previous_rows: Mapping[str, int] | None = None
                ) -> tuple[tuple[str, ...], TermCounts]:
    """(sorted vocabulary, the term counts of ``texts`` in it), tokenising only the texts whose digest (``digests``,
    by :func:`text_digest`) ``previous`` does not hold (``previous``: counted with the same tokenizer;
    ``previous_rows``: its vocabulary, term -> row in row order)."""
    previous_rows = previous_rows or {}
    previous_vocabulary = tuple(previous_rows)
    known: dict[bytes, int] = {}
    if previous is not None:
        for position, digest in enumerate(previous.digest_list()):
            known.setdefault(digest, position)
    n = len(texts)
    source = np.full(n, -1, dtype=np.int64)  # the previous document each one reuses; -1: tokenised now
    sizes = np.zeros(n, dtype=np.int64)
    fresh_terms: list[str] = []
    fresh_counts: list[int] = []
    for i, (text, digest) in enumerate(zip(texts, digests)):
        found = known.get(digest)
        if found is None:
            frequencies = Counter(tokenizer(text))  # insertion order: first occurrence, as rank_bm25 counts
            fresh_terms.extend(frequencies)
            fresh_counts.extend(frequencies.values())
            sizes[i] = len(frequencies)
        else:
            source[i] = found
    reused = np.flatnonzero(source >= 0)
    old_rows = np.zeros(0, dtype=np.int64)
    if previous is not None and len(reused):
        sizes[reused] = np.diff(previous.indptr)[source[reused]]
        old_rows = previous.terms[_ranges(previous.indptr[source[reused]], sizes[reused])].astype(np.int64)
    in_use = np.zeros(len(previous_vocabulary), dtype=bool)
    in_use[old_rows] = True
    if previous_vocabulary and in_use.all() and all(term in previous_rows for term in fresh_terms):
        # the usual edit: no term comes or goes, so the sorted vocabulary is the previous one
        vocabulary, row_of, remap = previous_vocabulary, previous_rows, np.arange(len(previous_vocabulary))
    else:
        used = np.flatnonzero(in_use)
        vocabulary = tuple(sorted({previous_vocabulary[row] for row in used.tolist()}.union(fresh_terms)))
        row_of = {term: row for row, term in enumerate(vocabulary)}
        remap = np.zeros(len(previous_vocabulary), dtype=np.int64)
        remap[used] = [row_of[previous_vocabulary[row]] for row in used.tolist()]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes, out=indptr[1:])
    terms = np.zeros(int(indptr[-1]), dtype=np.int32)
    counts = np.zeros(int(indptr[-1]), dtype=np.int32)
    if len(reused):
        assert previous is not None
        into = _ranges(indptr[reused], sizes[reused])
        terms[into] = remap[old_rows]
        counts[into] = previous.counts[_ranges(previous.indptr[source[reused]], sizes[reused])]
    fresh = np.flatnonzero(source < 0)
    if len(fresh_terms):
        into = _ranges(indptr[fresh], sizes[fresh])
        terms[into] = [row_of[term] for term in fresh_terms]
        counts[into] = fresh_counts
    digest_array = np.frombuffer(b"".join(digests), dtype=np.uint8).reshape(n, DIGEST_BYTES).copy()
    return vocabulary, TermCounts(terms, counts, indptr, digest_array)


@dataclass(frozen=True)
class Postings:
    """A term x document weight matrix in CSR form (``data``, ``indices``, ``indptr``: what scoring reads), as a
    loaded index holds it: building a ``scipy.sparse.csr_matrix`` would import scipy, 0.15-0.4 s of a prompt hook
    that routes in-process, for three arrays that :meth:`BM25Index.load` has already checked."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    shape: tuple[int, int]


def fit_counts(vocabulary: Sequence[str], counted: TermCounts, params: BM25Params
               ) -> tuple[Postings, np.ndarray]:
    """(term x document weight matrix, per-term constant) from term counts, with rank_bm25's numbers: the same
    document lengths, average length, idf (``math.log`` of the same expression) and weight expression."""
    n, size = len(counted.indptr) - 1, len(vocabulary)
    doc_of = np.repeat(np.arange(n, dtype=np.int64), np.diff(counted.indptr))
    terms = counted.terms.astype(np.int64)
    q_freq = counted.counts.astype(np.int64)
    doc_len = np.bincount(doc_of, weights=q_freq, minlength=n).astype(np.int64)
    avgdl = int(doc_len.sum()) / n  # rank_bm25: the sum of the lengths (an int) over the corpus size
    frequency = np.bincount(terms, minlength=size)
    distinct, where = np.unique(frequency, return_inverse=True)
    if params.variant == "okapi":
        by_frequency = [math.log(n - f + 0.5) - math.log(f + 0.5) for f in distinct.tolist()]
    elif params.variant == "plus":
        by_frequency = [math.log((n + 1) / f) for f in distinct.tolist()]
    else:
        by_frequency = [math.log(1 + (n - f + 0.5) / (f + 0.5)) for f in distinct.tolist()]
    idf = np.array(by_frequency, dtype=np.float64)[where]
    if params.variant == "okapi":
        # rank_bm25 floors negative idf at epsilon times the mean idf, summed in the order it met the terms:
        # document by document, each document's terms in order of first occurrence.
        _, first = np.unique(terms, return_index=True)
        idf_sum = 0.0
        for value in idf[np.argsort(first, kind="stable")].tolist():
            idf_sum += value
        idf = np.where(idf < 0, params.epsilon * (idf_sum / size), idf)
    term_idf = idf[terms]
    doc_len = doc_len[doc_of]
    # Same float64 expressions, in the same order, as rank_bm25's get_scores, so sums agree bit for bit.
    if params.variant == "plus":
        values = term_idf * (
            params.delta + (q_freq * (params.k1 + 1))
            / (params.k1 * (1 - params.b + params.b * doc_len / avgdl) + q_freq)
        )
        term_constant = idf * (params.delta + 0.0)
    else:
        values = term_idf * (
            q_freq * (params.k1 + 1) / (q_freq + params.k1 * (1 - params.b + params.b * doc_len / avgdl))
        )
        term_constant = np.zeros(size)
    # Term-major order, documents ascending within a term: the CSR matrix scipy.sparse would build from these
    # (term, document) pairs, which are distinct (a document counts each of its terms once), without importing it.
    # (Entries are document by document, so a stable sort by term keeps documents ascending: a radix sort when the
    # rows fit 16 bits, else a sort of the distinct term * n + document keys.)
    order = np.argsort(terms.astype(np.uint16), kind="stable") if size <= 1 << 16 else np.argsort(terms * n + doc_of)
    indptr = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(frequency, out=indptr[1:])
    return Postings(values[order], doc_of[order], indptr, (size, n)), term_constant


class BM25Index(Index):
    """A BM25 index over texts; build with :meth:`from_texts`, query with :meth:`search` or :meth:`scores`."""

    kind: ClassVar[str] = "bm25"

    def __init__(
        self,
        ids: tuple[str, ...],
        vocabulary: tuple[str, ...],
        weights: Postings,
        term_constant: np.ndarray,
        params: BM25Params,
        tokenizer: Tokenizer,
        counts: TermCounts | None = None,
    ) -> None:
        """Assemble a built index; use :meth:`from_texts` or :meth:`load` rather than calling this. ``counts``
        (None for an index saved without them) is what a later :meth:`from_texts` can reuse."""
        super().__init__(ids)
        self.params = params
        self.tokenizer = tokenizer
        self.counts = counts
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
        reuse: BM25Index | None = None,
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
            reuse: an earlier index whose documents' term counts are reused wherever a text is unchanged (only
                with the same tokenizer); the result equals a build from scratch. When ids, texts and
                parameters are all the same, ``reuse`` itself is returned.
        """
        params = BM25Params(k1=k1, b=b, variant=variant, delta=delta, epsilon=epsilon)
        ids = check_ids(ids, len(texts))
        digests = text_digests(texts)
        previous = reuse.counts if reuse is not None and reuse.tokenizer == tokenizer else None
        if reuse is not None and previous is not None and reuse.params == params and reuse.ids == ids \
                and previous.digest_list() == digests:
            return reuse
        vocabulary, counted = count_terms(texts, digests, tokenizer, previous,
                                          reuse._term_row if reuse is not None else None)
        if not vocabulary:
            # rank_bm25 divides by the corpus size and the vocabulary size; with neither there is nothing to score.
            empty = Postings(np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64), (0, len(ids)))
            return cls(ids, (), empty, np.zeros(0), params, tokenizer, counted)
        weights, term_constant = fit_counts(vocabulary, counted, params)
        return cls(ids, vocabulary, weights, term_constant, params, tokenizer, counted)

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
        """Write the manifest, ids, vocabulary, the CSR arrays and the term counts to ``folder``."""
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
        # copy=False: the arrays have these types already, so they are written as they are rather than copied first
        write_array(folder / "weights_data.npy", self._weights.data.astype(np.float64, copy=False))
        write_array(folder / "weights_indices.npy", self._weights.indices.astype(np.int64, copy=False))
        write_array(folder / "weights_indptr.npy", self._weights.indptr.astype(np.int64, copy=False))
        write_array(folder / "term_constant.npy", self._term_constant.astype(np.float64, copy=False))
        if self.counts is not None:
            write_array(folder / "doc_terms.npy", self.counts.terms.astype(np.int32, copy=False))
            write_array(folder / "doc_counts.npy", self.counts.counts.astype(np.int32, copy=False))
            write_array(folder / "doc_indptr.npy", self.counts.indptr.astype(np.int64, copy=False))
            write_array(folder / "doc_digests.npy", self.counts.digests.astype(np.uint8, copy=False))

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
        weights = Postings(data, indices, indptr, (len(vocabulary), len(ids)))
        return cls(ids, tuple(vocabulary), weights, term_constant, params, tokenizer,
                   cls._load_counts(folder, len(ids), len(vocabulary)))

    @staticmethod
    def _load_counts(folder: Path, documents: int, terms: int) -> TermCounts | None:
        """The saved term counts (None for an index saved before they were kept: it loads, and a rebuild from
        it tokenises every text)."""
        if not (folder / "doc_indptr.npy").exists():
            return None
        counted = TermCounts(
            read_array(folder / "doc_terms.npy", dtype=np.int32, ndim=1),
            read_array(folder / "doc_counts.npy", dtype=np.int32, ndim=1),
            read_array(folder / "doc_indptr.npy", dtype=np.int64, ndim=1),
            read_array(folder / "doc_digests.npy", dtype=np.uint8, ndim=2),
        )
        indptr = counted.indptr
        consistent = (
            len(indptr) == documents + 1 and indptr[0] == 0 and bool(np.all(np.diff(indptr) >= 0))
            and len(counted.terms) == len(counted.counts) == indptr[-1]
            and counted.digests.shape == (documents, DIGEST_BYTES)
            and (len(counted.terms) == 0 or (counted.terms.min() >= 0 and counted.terms.max() < terms
                                             and counted.counts.min() >= 1))
        )
        if not consistent:
            raise IndexLoadError(f"the term counts in '{folder}' do not fit {terms} terms x {documents} documents: "
                                 "rebuild the index")
        return counted
