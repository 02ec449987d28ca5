"""The Encoder on the real bundled all-MiniLM-L6-v2 model, and lazy heavy imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from indexes import DenseIndex, Encoder, ModelLoadError


def test_import_indexes_leaves_heavy_modules_unloaded() -> None:
    code = (
        "import sys, indexes\n"
        "from indexes import BM25Index, DenseIndex, Encoder, fuse_score_arrays\n"
        "Encoder()\n"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'faiss') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_default_model_identity_without_loading() -> None:
    fresh = Encoder()
    assert fresh.model_id == "sentence-transformers/all-MiniLM-L6-v2"
    assert fresh.dim == 384
    assert fresh.encode([]).shape == (0, 384)
    assert fresh.encoded_count == 0


def test_vectors_are_unit_float32(encoder: Encoder) -> None:
    vectors = encoder.encode(["Fill in a PDF form", "Forecast the weather", "生成幻灯片"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_similar_sentences_are_closer_than_unrelated(encoder: Encoder) -> None:
    query, near, far = encoder.encode(
        ["What will the weather be like tomorrow?", "Get the weather forecast for the coming days",
         "Merge two PDF files"]
    )
    assert float(query @ near) > float(query @ far) + 0.2


def test_encoder_feeds_a_dense_index(encoder: Encoder) -> None:
    texts = ["Fill and extract PDF forms", "Weather forecast for a city", "Build slide decks"]
    index = DenseIndex.from_vectors(["pdf", "weather", "slides"], encoder.encode(texts))
    assert index.search(encoder.encode(["is it going to rain tomorrow"])[0], 1)[0].id == "weather"


def test_counter_and_shared_model(encoder: Encoder) -> None:
    other = Encoder()
    other.encode(["one", "two"])
    other.encode(["three"])
    assert other.encoded_count == 3
    assert other._model() is encoder._model()
    with pytest.raises(TypeError, match="wrap it in a list"):
        other.encode("one string")


def test_unloadable_model_names_model_and_fix(encoder: Encoder, tmp_path: Path) -> None:
    missing = tmp_path / "no-model-here"
    broken = Encoder(str(missing))
    assert broken.model_id == str(missing)
    with pytest.raises(ModelLoadError, match="no-model-here"):
        broken.encode(["text"])
