"""Dense vector index over L2-normalised embeddings: exact cosine scores, FAISS for top-k search.

Inner product of unit vectors is cosine similarity. :meth:`DenseIndex.scores` (what a router fuses: one score per
document) is a numpy matrix product over the stored vectors, so loading and scoring a saved index imports neither
FAISS nor torch. :meth:`DenseIndex.search` (top-k alone) goes through an exact ``faiss.IndexFlatIP`` built on first
use; exact search takes about 0.4 ms per query at 10,000 vectors (``benchmarks/index_speed.py``), so no
approximate index is offered. A search is one query, so FAISS runs it on one OpenMP thread (restored
afterwards): on a busy 2-core machine, waking the thread pool cost 24 ms against 0.2 ms for the scan itself.

FAISS only proposes candidates: their scores are recomputed in float64 from the stored vectors, so a hit's score
equals ``scores(query)`` for that document, and ties are broken by id. Saved as ``vectors.npy`` plus ids and a
manifest; nothing is pickled.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Self

import numpy as np

from indexes.base import (Hit, Index, check_ids, check_query_vector, check_unit_vectors, clamp_k, read_vectors,
                          top_hits, write_array)


class DenseIndex(Index):
    """Cosine similarity over unit vectors: exact scores with numpy, top-k search through an exact FAISS index."""

    kind: ClassVar[str] = "dense"

    def __init__(self, ids: tuple[str, ...], vectors: np.ndarray) -> None:
        """Assemble from checked parts; use :meth:`from_vectors` or :meth:`load`."""
        super().__init__(ids)
        self._vectors = vectors
        self._vectors64: np.ndarray | None = None
        self._faiss: Any = None

    @classmethod
    def from_vectors(cls, ids: Sequence[str], vectors: np.ndarray) -> DenseIndex:
        """Build from one id per row of ``vectors`` (float32, L2-normalised, shape (n, dim)); rows that are not
        unit length are refused."""
        array = check_unit_vectors(vectors, len(ids))
        return cls(check_ids(ids, len(array)), array)

    @property
    def vectors(self) -> np.ndarray:
        """The stored unit vectors, one row per id (read-only view)."""
        view = self._vectors.view()
        view.flags.writeable = False
        return view

    @property
    def dim(self) -> int:
        """Vector dimension."""
        return int(self._vectors.shape[1])

    @property
    def vectors64(self) -> np.ndarray:
        """:attr:`vectors` in float64 (exactly: every float32 is a float64), what scoring multiplies; converted once
        and kept (read-only view), so what else reads the rows in float64 (the centrality signal) shares it."""
        if self._vectors64 is None:
            # Kept once: converting 10,000 x 384 vectors on every query cost 5 ms of a 10 ms search.
            self._vectors64 = self._vectors.astype(np.float64)
            self._vectors64.flags.writeable = False
        return self._vectors64

    def scores(self, query_vector: np.ndarray) -> np.ndarray:
        """Exact cosine similarity of every document to ``query_vector`` (float64, :attr:`ids` order)."""
        return self.vectors64 @ check_query_vector(query_vector, self.dim)

    def scores_many(self, query_vectors: np.ndarray) -> np.ndarray:
        """:meth:`scores` for many queries at once: shape (queries, documents)."""
        queries = np.asarray(query_vectors, dtype=np.float64).reshape(-1, self.dim)
        return queries @ self.vectors64.T

    def search(self, query_vector: np.ndarray, k: int) -> list[Hit]:
        """Return the top ``k`` documents by cosine similarity (score descending, then id ascending)."""
        query = check_query_vector(query_vector, self.dim)
        wanted = clamp_k(k, len(self))
        if wanted == 0:
            return []
        candidates = self._candidates(query, wanted)
        scores = np.zeros(len(self))
        scores[candidates] = self._vectors[candidates].astype(np.float64) @ query
        return top_hits(self._ids, self._id_order, scores, k, candidates)

    def _candidates(self, query: np.ndarray, k: int) -> np.ndarray:
        """Positions FAISS proposes, widened until no document tied with the k-th is left out."""
        import faiss

        if self._faiss is None:
            self._faiss = faiss.IndexFlatIP(self.dim)
            self._faiss.add(self._vectors)
        query32 = query.astype(np.float32)[None, :]
        fetch = min(k + 1, len(self))
        while True:
            threads = faiss.omp_get_max_threads()
            faiss.omp_set_num_threads(1)
            try:
                distances, labels = self._faiss.search(query32, fetch)
            finally:
                faiss.omp_set_num_threads(threads)
            found = labels[0][labels[0] >= 0]
            tied_at_boundary = fetch > k and len(found) == fetch and distances[0][fetch - 1] == distances[0][k - 1]
            if not tied_at_boundary or fetch == len(self):
                return found
            fetch = min(2 * fetch, len(self))

    def save(self, folder: Path) -> None:
        """Write manifest, ids and ``vectors.npy`` to ``folder``."""
        folder = Path(folder)
        self._write_manifest(folder, {"dim": self.dim})
        write_array(folder / "vectors.npy", self._vectors)

    @classmethod
    def load(cls, folder: Path) -> Self:
        """Read an index written by :meth:`save`; IndexLoadError names the missing or corrupt file."""
        folder = Path(folder)
        ids, _ = cls._read_manifest(folder)
        return cls(ids, read_vectors(folder, len(ids)))
