"""Index kinds over texts, vectors and ids: BM25, dense (FAISS), exact reference, and rank fusion.

Every index is built by a classmethod (``BM25Index.from_texts``, ``DenseIndex.from_vectors``), answers
``search(query, k) -> list[Hit]`` and ``scores(query)``, and persists with a ``save(folder)`` / ``load(folder)``
pair. torch, sentence-transformers and faiss are imported only when first needed.
"""

from indexes.base import Hit, IndexLoadError, ModelLoadError
from indexes.bm25 import BM25Index
from indexes.dense import DenseIndex
from indexes.encoder import Encoder
from indexes.exact import ExactIndex
from indexes.fusion import rrf, weighted_fusion
from indexes.tokenize import tokenize

__all__ = [
    "BM25Index",
    "DenseIndex",
    "Encoder",
    "ExactIndex",
    "Hit",
    "IndexLoadError",
    "ModelLoadError",
    "rrf",
    "tokenize",
    "weighted_fusion",
]
