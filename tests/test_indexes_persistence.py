"""save/load round trips (ids and scores identical) and damaged folders -> IndexLoadError naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from indexes import BM25Index, DenseIndex, IndexLoadError
from indexes.tokenize import Tokenizer

TEXTS = ["Fill PDF forms", "Weather forecast by city", "Slide decks from outlines", "Forecast sales from PDFs"]
IDS = ["pdf", "weather", "slides", "sales"]


def unit_vectors(n: int, dim: int = 16, seed: int = 3) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def build(kind: str):
    if kind.startswith("bm25"):
        variant = kind.split("-")[1]
        index = BM25Index.from_texts(IDS, TEXTS, variant=variant, tokenizer=Tokenizer(stopwords="lucene", stem="s"))
        return index, ["pdf forecast", "weather weather", "unknown"]
    vectors = unit_vectors(300)
    ids = [f"v{i}" for i in range(300)]
    queries = list(unit_vectors(5, seed=9))
    return DenseIndex.from_vectors(ids, vectors), queries


KINDS = ["bm25-lucene", "bm25-okapi", "bm25-plus", "flat"]


@pytest.mark.parametrize("kind", KINDS)
def test_round_trip_keeps_ids_and_scores(kind: str, tmp_path: Path) -> None:
    index, queries = build(kind)
    index.save(tmp_path / "idx")
    loaded = type(index).load(tmp_path / "idx")
    assert loaded.ids == index.ids
    for query in queries:
        assert np.array_equal(loaded.scores(query), index.scores(query))
        assert loaded.search(query, 10) == index.search(query, 10)
    if isinstance(index, BM25Index):
        assert loaded.params == index.params and loaded.tokenizer == index.tokenizer


def test_files_are_plain_and_arrays_need_no_pickle(tmp_path: Path) -> None:
    index, _ = build("flat")
    index.save(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ids.json", "index.json", "vectors.npy"]
    np.load(tmp_path / "vectors.npy", allow_pickle=False)
    assert json.loads((tmp_path / "index.json").read_text())["kind"] == "dense"


@pytest.mark.parametrize(
    ("kind", "filename"),
    [("bm25-lucene", "weights_data.npy"), ("bm25-lucene", "weights_indptr.npy"), ("bm25-lucene", "vocabulary.json"),
     ("flat", "vectors.npy"),
     ("flat", "ids.json"), ("flat", "index.json")],
)
def test_truncated_file_raises_index_load_error_naming_it(kind: str, filename: str, tmp_path: Path) -> None:
    index, _ = build(kind)
    index.save(tmp_path)
    path = tmp_path / filename
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(IndexLoadError, match=filename.replace(".", r"\.")):
        type(index).load(tmp_path)


def test_missing_file_and_folder(tmp_path: Path) -> None:
    with pytest.raises(IndexLoadError, match="does not exist"):
        BM25Index.load(tmp_path / "nowhere")
    index, _ = build("flat")
    index.save(tmp_path)
    (tmp_path / "vectors.npy").unlink()
    with pytest.raises(IndexLoadError, match=r"vectors\.npy' is missing"):
        DenseIndex.load(tmp_path)


def test_foreign_kind_and_format_version(tmp_path: Path) -> None:
    index, _ = build("bm25-lucene")
    index.save(tmp_path)
    with pytest.raises(IndexLoadError, match="holds a 'bm25' index, not 'dense'"):
        DenseIndex.load(tmp_path)
    manifest = json.loads((tmp_path / "index.json").read_text())
    manifest["format_version"] = 99
    (tmp_path / "index.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexLoadError, match="format version 99"):
        BM25Index.load(tmp_path)


def test_array_that_does_not_fit_the_ids(tmp_path: Path) -> None:
    index, _ = build("flat")
    index.save(tmp_path)
    (tmp_path / "ids.json").write_text(json.dumps(["only-one"]))
    with pytest.raises(IndexLoadError, match="300 rows for 1 ids"):
        DenseIndex.load(tmp_path)


def test_pickled_object_array_is_refused(tmp_path: Path) -> None:
    index, _ = build("bm25-lucene")
    index.save(tmp_path)
    np.save(tmp_path / "term_constant.npy", np.array([{"x": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(IndexLoadError, match=r"term_constant\.npy"):
        BM25Index.load(tmp_path)
