"""One conformance suite over every index kind: ids AND scores against an exact numpy reference."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

from indexes import BM25Index, DenseIndex, Hit, tokenize
from indexes.tokenize import Tokenizer
from indexes.base import Index
from indexes.bm25 import BM25Params
from reference import bm25_reference_scores, fit_rank_bm25

TEXTS = [
    "Get the weather forecast for a city",
    "Weather radar maps and weather alerts",
    "Convert currency using live exchange rates",
    "Search research papers on arXiv",
    "Create PowerPoint presentations from an outline",
    "Fill PDF forms and extract PDF text",
    "Forecast stock prices from history",
    "Translate text between languages",
]
IDS = [f"doc-{i}" for i in range(len(TEXTS))]
QUERIES = ["weather forecast", "pdf forms pdf", "stock exchange rates", "translate papers", "nothing matches zzz"]


@dataclass
class Case:
    index: Index
    queries: list
    reference: Callable[[object], np.ndarray]
    exact: bool  # False for approximate search: ids compared by recall, not equality


def reference_ranking(ids: list[str], scores: np.ndarray) -> list[str]:
    return [ids[i] for i in sorted(range(len(ids)), key=lambda i: (-scores[i], ids[i]))]


def bm25_case(variant: str) -> Case:
    index = BM25Index.from_texts(IDS, TEXTS, variant=variant)
    corpus = [tokenize(text) for text in TEXTS]
    return Case(index, QUERIES, lambda q: bm25_reference_scores(corpus, tokenize(q), 1.5, 0.75, variant), True)


def random_unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def vector_case() -> Case:
    rng = np.random.default_rng(7)
    n = 300
    vectors = random_unit(rng, n, 384)
    ids = [f"v{i:05d}" for i in range(n)]
    queries = list(random_unit(rng, 40, 384))
    index: Index = DenseIndex.from_vectors(ids, vectors)
    # The reference is a plain numpy product, written independently of the index.
    matrix = vectors.astype(np.float64)
    return Case(index, queries, lambda q: matrix @ np.asarray(q, dtype=np.float64), True)


KINDS = {
    "bm25-lucene": lambda: bm25_case("lucene"),
    "bm25-okapi": lambda: bm25_case("okapi"),
    "bm25-plus": lambda: bm25_case("plus"),
    "dense": vector_case,
}


@pytest.fixture(params=list(KINDS))
def case(request: pytest.FixtureRequest) -> Case:
    return KINDS[request.param]()


def test_scores_equal_reference(case: Case) -> None:
    for query in case.queries:
        got = case.index.scores(query)
        assert got.dtype == np.float64 and got.shape == (len(case.index),)
        np.testing.assert_allclose(got, case.reference(query), rtol=1e-12, atol=1e-12)


def test_search_ids_and_scores_match_reference(case: Case) -> None:
    recalls = []
    for query in case.queries:
        expected_scores = case.reference(query)
        hits = case.index.search(query, 10)
        want = reference_ranking(list(case.index.ids), expected_scores)[:10]
        if isinstance(case.index, BM25Index):
            matching = {i for i, tokens in enumerate(tokenize(t) for t in TEXTS) if set(tokens) & set(tokenize(query))}
            want = [doc for doc in want if IDS.index(doc) in matching]
        assert [hit.rank for hit in hits] == list(range(1, len(hits) + 1))
        for hit in hits:
            assert hit.score == pytest.approx(expected_scores[case.index.ids.index(hit.id)], rel=1e-12, abs=1e-12)
        if case.exact:
            assert [hit.id for hit in hits] == want
        else:
            recalls.append(len({hit.id for hit in hits} & set(want)) / len(want))
    if not case.exact:
        assert np.mean(recalls) >= 0.95


def test_len_ids_and_k_clamped(case: Case) -> None:
    assert len(case.index) == len(case.index.ids)
    query = case.queries[0]
    assert len(case.index.search(query, 10**6)) <= len(case.index)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        case.index.search(query, 0)


@pytest.mark.parametrize("variant", ["lucene", "okapi", "plus"])
def test_bm25_scores_equal_rank_bm25_bit_for_bit(variant: str) -> None:
    index = BM25Index.from_texts(IDS, TEXTS, variant=variant)
    model = fit_rank_bm25([tokenize(text) for text in TEXTS], BM25Params(variant=variant))
    for query in [*QUERIES, "weather weather weather city"]:
        assert np.array_equal(index.scores(query), model.get_scores(tokenize(query)))


def test_bm25_lucene_formula_by_hand() -> None:
    # N=2, avgdl=2; "weather" is in doc a only: idf = log(1 + (2 - 1 + 0.5) / (1 + 0.5)) = log 2,
    # tf=1, |d|=2: part = 1 * 2.5 / (1 + 1.5 * (0.25 + 0.75 * 2 / 2)) = 2.5 / 2.5 = 1.
    index = BM25Index.from_texts(["a", "b"], ["weather today", "stocks today"])
    assert index.search("weather", 5) == [Hit("a", pytest.approx(np.log(2.0)), 1)]


def test_two_document_library_ranks_the_matching_document_first() -> None:
    # Under BM25Okapi a term in exactly half the documents has idf 0; the default variant must not.
    index = BM25Index.from_texts(["pdf", "slides"], ["Fill and extract PDF forms", "Build slide decks"])
    hits = index.search("extract text from a pdf", 2)
    assert [hit.id for hit in hits] == ["pdf"]
    assert hits[0].score > 0


def test_bm25_query_without_known_tokens_is_empty() -> None:
    index = BM25Index.from_texts(IDS, TEXTS)
    assert index.search("qwertyuiop", 5) == []
    assert index.search("", 5) == []
    assert not index.scores("qwertyuiop").any()


def test_bm25_handles_documents_without_tokens() -> None:
    index = BM25Index.from_texts(["a", "b"], ["", "   "])
    assert index.search("anything", 3) == []
    assert index.scores("anything").tolist() == [0.0, 0.0]


def test_empty_indexes_search_to_nothing() -> None:
    assert BM25Index.from_texts([], []).search("weather", 3) == []
    dense = DenseIndex.from_vectors([], np.zeros((0, 4), dtype=np.float32))
    assert dense.search(np.array([1, 0, 0, 0], dtype=np.float32), 3) == []


def test_ties_break_by_id_in_every_kind() -> None:
    bm25 = BM25Index.from_texts(["c", "a", "b"], ["same words", "same words", "same words"])
    assert [hit.id for hit in bm25.search("words", 3)] == ["a", "b", "c"]
    vectors = np.tile(np.array([[0.6, 0.8]], dtype=np.float32), (5, 1))
    ids = ["e", "c", "a", "d", "b"]
    for index in (DenseIndex.from_vectors(ids, vectors),):
        assert [hit.id for hit in index.search(np.array([1.0, 0.0]), 2)] == ["a", "b"]


def test_bad_inputs_are_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="'a' appears more than once"):
        BM25Index.from_texts(["a", "a"], ["x", "y"])
    with pytest.raises(ValueError, match="one id per document"):
        BM25Index.from_texts(["a"], ["x", "y"])
    with pytest.raises(ValueError, match="unknown BM25 variant 'bm11'"):
        BM25Index.from_texts(["a"], ["x"], variant="bm11")
    with pytest.raises(ValueError, match="not 1: normalise"):
        DenseIndex.from_vectors(["a"], np.array([[3.0, 4.0]], dtype=np.float32))
    index = DenseIndex.from_vectors(["a"], np.array([[0.6, 0.8]], dtype=np.float32))
    with pytest.raises(ValueError, match="holds 2-d vectors"):
        index.search(np.ones(3), 1)


def _random_corpus(rng: np.random.Generator, n: int) -> list[str]:
    words = ("weather forecast city radar alert currency exchange rate paper arxiv slide deck pdf form text stock "
             "price history translate language review code query plan index table chart the and of").split()
    # Skewed word choice, so some terms are in most documents (okapi's negative idf) and some in one.
    p = 1.0 / np.arange(1, len(words) + 1)
    return [" ".join(rng.choice(words, size=int(rng.integers(0, 14)), p=p / p.sum())) for _ in range(n)]


def _same_index(a: BM25Index, b: BM25Index) -> None:
    assert a.ids == b.ids and a.vocabulary == b.vocabulary and a.params == b.params
    for mine, theirs in ((a._weights.data, b._weights.data), (a._weights.indices, b._weights.indices),
                         (a._weights.indptr, b._weights.indptr), (a._term_constant, b._term_constant)):
        assert np.array_equal(mine, theirs)
    assert a.counts is not None and b.counts is not None
    for field in ("terms", "counts", "indptr", "digests"):
        assert np.array_equal(getattr(a.counts, field), getattr(b.counts, field)), field


@pytest.mark.parametrize("variant", ["lucene", "okapi", "plus"])
def test_bm25_updated_from_an_earlier_index_equals_a_rebuild_exactly(variant: str) -> None:
    rng = np.random.default_rng(11)
    texts = _random_corpus(rng, 60)
    ids = [f"d{i:03d}" for i in range(len(texts))]
    index = BM25Index.from_texts(ids, texts, variant=variant)
    queries = [*QUERIES, "weather the the of", "pdf pdf form", *_random_corpus(rng, 10)]
    for step in range(25):
        ids, texts = list(ids), list(texts)
        edit = step % 5
        if edit == 0:  # one document's text changes
            texts[int(rng.integers(len(texts)))] = _random_corpus(rng, 1)[0]
        elif edit == 1:  # one added, with a term no document had
            ids.append(f"new{step}")
            texts.append(f"zebra{step} " + _random_corpus(rng, 1)[0])
        elif edit == 2 and len(ids) > 2:  # one removed: its terms may leave the vocabulary
            gone = int(rng.integers(len(ids)))
            del ids[gone], texts[gone]
        elif edit == 3:  # reordered, one emptied
            order = rng.permutation(len(ids))
            ids, texts = [ids[i] for i in order], [texts[i] for i in order]
            texts[0] = ""
        updated = BM25Index.from_texts(ids, texts, variant=variant, reuse=index)
        rebuilt = BM25Index.from_texts(ids, texts, variant=variant)
        _same_index(updated, rebuilt)
        model = fit_rank_bm25([tokenize(text) for text in texts], BM25Params(variant=variant))
        for query in queries:
            assert np.array_equal(updated.scores(query), model.get_scores(tokenize(query))), (step, query)
        index = updated


def test_bm25_reuse_tokenises_only_changed_texts_and_returns_an_unchanged_index_itself() -> None:
    calls: list[str] = []

    class Counting(Tokenizer):
        def __call__(self, text: str) -> list[str]:
            calls.append(text)
            return super().__call__(text)

    tokenizer = Counting()
    index = BM25Index.from_texts(IDS, TEXTS, tokenizer=tokenizer)
    assert len(calls) == len(TEXTS)
    calls.clear()
    assert BM25Index.from_texts(IDS, TEXTS, tokenizer=tokenizer, reuse=index) is index
    assert calls == []
    changed = [*TEXTS[:-1], "Translate speech between languages"]
    updated = BM25Index.from_texts(IDS, changed, tokenizer=tokenizer, reuse=index)
    assert calls == ["Translate speech between languages"]
    assert np.array_equal(updated.scores("speech"), BM25Index.from_texts(IDS, changed).scores("speech"))
    # Another tokenizer or other parameters: nothing is reused that would not be rebuilt the same way.
    calls.clear()
    other = BM25Index.from_texts(IDS, TEXTS, tokenizer=Tokenizer(stem="none"), reuse=index)
    assert other is not index and other.vocabulary == BM25Index.from_texts(IDS, TEXTS, tokenizer=Tokenizer(
        stem="none")).vocabulary
    assert BM25Index.from_texts(IDS, TEXTS, tokenizer=tokenizer, reuse=index, k1=1.2) is not index


def test_bm25_term_counts_survive_save_and_load(tmp_path) -> None:
    index = BM25Index.from_texts(IDS, TEXTS)
    index.save(tmp_path)
    loaded = BM25Index.load(tmp_path)
    _same_index(loaded, index)
    changed = [*TEXTS[:-1], "Translate speech between languages"]
    _same_index(BM25Index.from_texts(IDS, changed, reuse=loaded), BM25Index.from_texts(IDS, changed))
