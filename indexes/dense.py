"""Dense vector index over L2-normalised embeddings, searched with FAISS.

Inner product of unit vectors is cosine similarity. Up to ``approximate_above`` documents (all of them by
default) the index is exact, ``faiss.IndexFlatIP``; above it the index is an HNSW graph (Malkov & Yashunin 2018,
"Efficient and robust approximate nearest neighbor search using Hierarchical Navigable Small World graphs",
``faiss.IndexHNSWFlat`` with the inner-product metric, M=32, efConstruction=200, efSearch=max(256, 2k)). On
random 384-d unit vectors, the hardest case for a graph index, its recall@10 against exact search is 1.0 at
2,000 vectors and drops at 10,000 (``benchmarks/index_speed.py`` prints it), so exact search stays the default:
it takes about 0.2 ms per query at 10,000 vectors.

A search is one query, so FAISS runs it on one OpenMP thread (restored afterwards): on a busy 2-core machine,
waking the thread pool cost 24 ms against 0.2 ms for the scan itself at 10,000 vectors.

FAISS only proposes candidates: their scores are recomputed in float64 from the stored vectors, so a hit's score
equals ``scores(query)`` for that document, and ties are broken by id. The vectors are saved next to the FAISS
file so the index can be rebuilt (for example with another ``approximate_above``) without re-encoding.
FAISS is imported lazily, inside the methods that need it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Self

import numpy as np

from indexes.base import Hit, Index, IndexLoadError, check_ids, clamp_k, top_hits, write_array
from indexes.exact import check_query_vector, check_unit_vectors, read_vectors

HNSW_M = 32
HNSW_EF_CONSTRUCTION = 200
HNSW_EF_SEARCH = 256


def _build_faiss(vectors: np.ndarray, approximate: bool) -> Any:
    import faiss

    dim = vectors.shape[1]
    if approximate:
        index = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
    else:
        index = faiss.IndexFlatIP(dim)
    index.add(vectors)
    return index


class DenseIndex(Index):
    """Cosine-similarity search over unit vectors: exact FAISS flat index, or HNSW above a size threshold."""

    kind: ClassVar[str] = "dense"

    def __init__(self, ids: tuple[str, ...], vectors: np.ndarray, faiss_index: Any, approximate_above: int | None) -> None:
        """Assemble from built parts; use :meth:`from_vectors` or :meth:`load`."""
        super().__init__(ids)
        self._vectors = vectors
        self._vectors64: np.ndarray | None = None
        self._faiss = faiss_index
        self.approximate_above = approximate_above

    @classmethod
    def from_vectors(
        cls, ids: Sequence[str], vectors: np.ndarray, *, approximate_above: int | None = None
    ) -> DenseIndex:
        """Build from one id per row of ``vectors``.

        Parameters:
            ids: unique document ids.
            vectors: float32, L2-normalised, shape (n, dim); rows that are not unit length are refused.
            approximate_above: use HNSW when there are more than this many documents; None keeps search exact.
        """
        if approximate_above is not None and (isinstance(approximate_above, bool) or approximate_above < 0):
            raise ValueError(f"approximate_above must be None or >= 0, got {approximate_above!r}")
        array = check_unit_vectors(vectors, len(ids))
        ids = check_ids(ids, len(array))
        approximate = approximate_above is not None and len(array) > approximate_above
        return cls(ids, array, _build_faiss(array, approximate), approximate_above)

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
    def is_approximate(self) -> bool:
        """True when search goes through the HNSW graph."""
        return self.approximate_above is not None and len(self) > self.approximate_above

    def scores(self, query_vector: np.ndarray) -> np.ndarray:
        """Exact cosine similarity of every document to ``query_vector`` (float64, :attr:`ids` order)."""
        if self._vectors64 is None:
            # Kept once: converting 10,000 x 384 vectors on every query cost 5 ms of a 10 ms search.
            self._vectors64 = self._vectors.astype(np.float64)
        return self._vectors64 @ check_query_vector(query_vector, self.dim)

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

        query32 = query.astype(np.float32)[None, :]
        # Per-call parameters rather than mutating the index, so concurrent searches do not interfere.
        params = faiss.SearchParametersHNSW(efSearch=max(HNSW_EF_SEARCH, 2 * k)) if self.is_approximate else None
        fetch = min(k + 1, len(self))
        while True:
            threads = faiss.omp_get_max_threads()
            faiss.omp_set_num_threads(1)
            try:
                distances, labels = self._faiss.search(query32, fetch, params=params)
            finally:
                faiss.omp_set_num_threads(threads)
            found = labels[0][labels[0] >= 0]
            tied_at_boundary = fetch > k and len(found) == fetch and distances[0][fetch - 1] == distances[0][k - 1]
            if not tied_at_boundary or fetch == len(self):
                return found
            fetch = min(2 * fetch, len(self))

    def save(self, folder: Path) -> None:
        """Write manifest, ids, ``vectors.npy`` and ``faiss.index`` to ``folder``."""
        import faiss

        folder = Path(folder)
        self._write_manifest(folder, {"dim": self.dim, "approximate_above": self.approximate_above})
        write_array(folder / "vectors.npy", self._vectors)
        faiss.write_index(self._faiss, str(folder / "faiss.index"))

    @classmethod
    def load(cls, folder: Path) -> Self:
        """Read an index written by :meth:`save`; IndexLoadError names the missing or corrupt file."""
        import faiss

        folder = Path(folder)
        ids, params = cls._read_manifest(folder)
        vectors = read_vectors(folder, len(ids))
        path = folder / "faiss.index"
        if not path.is_file():
            raise IndexLoadError(f"index file '{path}' is missing: rebuild the index")
        try:
            faiss_index = faiss.read_index(str(path))
        except RuntimeError as exc:
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else "unreadable"
            raise IndexLoadError(f"index file '{path}' is truncated or corrupt ({first_line}): rebuild the index") from None
        if faiss_index.ntotal != len(ids) or faiss_index.d != vectors.shape[1]:
            raise IndexLoadError(
                f"'{path}' holds {faiss_index.ntotal} vectors of dim {faiss_index.d}, expected {len(ids)} of dim "
                f"{vectors.shape[1]}: rebuild the index"
            )
        return cls(ids, vectors, faiss_index, params.get("approximate_above"))
