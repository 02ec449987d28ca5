"""Index kinds over texts, vectors and ids: BM25, dense (exact cosine; FAISS for top-k search), fusion, encoders.

Every index is built by a classmethod (``BM25Index.from_texts``, ``DenseIndex.from_vectors``), answers
``search(query, k) -> list[Hit]`` and ``scores(query)``, and persists with a ``save(folder)`` / ``load(folder)``
pair. Names are imported on first use, so ``import indexes.tokenize`` stays cheap and torch,
sentence-transformers, faiss and scipy load only when an index that needs them is built.

Two encoders give the same vectors: :class:`Encoder` (sentence-transformers on torch) and :class:`OnnxEncoder`
(an ONNX export of the same model on onnxruntime, which loads in a fraction of a second without torch).
:func:`find_onnx_encoder` returns the cached export or None; :func:`ensure_onnx_encoder` exports and checks it
first. Both raise :class:`OnnxUnavailable` when the torch encoder has to be used instead.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "BM25Index",
    "DenseIndex",
    "Encoder",
    "ensure_onnx_encoder",
    "FakeEncoder",
    "find_onnx_encoder",
    "fuse_score_arrays",
    "Hit",
    "IndexLoadError",
    "ModelLoadError",
    "OnnxEncoder",
    "OnnxUnavailable",
    "tie_order",
    "tokenize",
]

_HOMES = {
    "Hit": "indexes.base", "IndexLoadError": "indexes.base", "ModelLoadError": "indexes.base",
    "BM25Index": "indexes.bm25", "DenseIndex": "indexes.dense", "Encoder": "indexes.encoder",
    "fuse_score_arrays": "indexes.fusion", "tie_order": "indexes.fusion",
    "OnnxUnavailable": "indexes.base", "OnnxEncoder": "indexes.onnx_encoder",
    "find_onnx_encoder": "indexes.onnx_encoder", "ensure_onnx_encoder": "indexes.onnx_export",
    "FakeEncoder": "indexes.fake",
}

# Cheap (no numpy), and binding the function here keeps ``indexes.tokenize`` the function even after the
# submodule of the same name is imported.
from indexes.tokenize import tokenize  # noqa: E402

if TYPE_CHECKING:
    from indexes.base import Hit, IndexLoadError, ModelLoadError, OnnxUnavailable
    from indexes.bm25 import BM25Index
    from indexes.dense import DenseIndex
    from indexes.encoder import Encoder
    from indexes.fake import FakeEncoder
    from indexes.fusion import fuse_score_arrays, tie_order
    from indexes.onnx_encoder import OnnxEncoder, find_onnx_encoder
    from indexes.onnx_export import ensure_onnx_encoder


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'indexes' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
