"""The contract every index kind follows, the value it returns, and its errors.

An index maps string ids to documents (texts or vectors) and, for a query, gives one score per document
(higher is better) and the top-k as :class:`Hit` values. Every kind persists itself as a folder of plain files:
``index.json`` (kind, format version, parameters), arrays as ``.npy`` written and read with pickling off,
small JSON for ids and vocabularies, and FAISS indexes through FAISS's own writer. Nothing is pickled.

Errors::

    IndexLoadError   a persisted index that is missing, truncated, corrupt, of another kind or format version
    ModelLoadError   an embedding model that cannot be loaded
    OnnxUnavailable  the onnxruntime encoder cannot be used for a model (runtime not installed, model not a
                     local folder, no export yet, an export that is corrupt or failed its check); the caller
                     falls back to the sentence-transformers encoder

All three carry a message that names the offending file or model and says what to do.

The embedding model is a seam (:class:`Encoder`, a protocol): the sentence-transformers model
(:class:`indexes.encoder.Encoder`, exported as ``indexes.Encoder``), its onnxruntime export
(:class:`indexes.onnx_encoder.OnnxEncoder`) and the fast deterministic fake for tests that do not measure accuracy
(:class:`indexes.fake.FakeEncoder`) all implement it.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol, Self

import numpy as np

from indexes.fusion import tie_order

FORMAT_VERSION = 1
MANIFEST = "index.json"


class Encoder(Protocol):
    """What embeds texts: ``model_id`` (the key its vectors are cached under), ``dim``, and ``encode``, which
    returns float32 unit vectors of shape (len(texts), dim) ((0, dim) for no texts). ``progress`` True may show a
    bar; a callable is called with the number of texts each part embedded."""

    model_id: str

    @property
    def dim(self) -> int: ...

    def encode(self, texts: Sequence[str], *, progress: bool | Callable[[int], None] = False) -> np.ndarray: ...


class IndexLoadError(Exception):
    """A persisted index is missing, truncated, corrupt, or was written by another kind or format version."""


class ModelLoadError(Exception):
    """An embedding model cannot be loaded (not installed, wrong path, or unreadable weights)."""


class OnnxUnavailable(Exception):
    """The onnxruntime encoder cannot serve a model; the message is one line saying why and what to do.

    Not a :class:`ModelLoadError`: the model itself may be fine, and the caller is expected to use the
    sentence-transformers encoder instead.
    """


@dataclass(frozen=True)
class Hit:
    """One ranked document: its id, its score (higher is better) and its 1-based rank."""

    id: str
    score: float
    rank: int


def clamp_k(k: int, n: int) -> int:
    """Return how many hits a top-``k`` request over ``n`` candidates yields: ``min(k, n)``.

    The single place where k meets the library size, so every index kind and fusion agree.
    Raises ValueError for a ``k`` that is not a positive integer.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}: ask for at least one hit")
    return min(int(k), n)


def top_hits(
    ids: Sequence[str],
    id_order: np.ndarray,
    scores: np.ndarray,
    k: int,
    candidates: np.ndarray | None = None,
) -> list[Hit]:
    """Rank documents by score descending, then id ascending, and return the first ``k`` as hits.

    Parameters:
        ids: document ids, position ``i`` belongs to ``scores[i]``.
        id_order: ``id_order[i]`` is the position of ``ids[i]`` in ``sorted(ids)``; ties break on it so the
            same query always yields the same ranking.
        scores: one score per document.
        k: hits wanted; clamped to the number of candidates by :func:`clamp_k`.
        candidates: positions eligible for ranking (all documents when None).
    """
    pool = np.arange(len(ids)) if candidates is None else np.asarray(candidates, dtype=np.intp)
    k = clamp_k(k, len(pool))
    if k == 0:
        return []
    pool_scores = scores[pool]
    if k < len(pool):
        # Keep everything tied with the k-th score so the id tie-break below sees all tied documents.
        kth = np.partition(pool_scores, len(pool) - k)[len(pool) - k]
        keep = pool_scores >= kth
        pool, pool_scores = pool[keep], pool_scores[keep]
    order = np.lexsort((id_order[pool], -pool_scores))[:k]
    return [Hit(ids[i], float(scores[i]), rank) for rank, i in enumerate(pool[order].tolist(), start=1)]


def check_ids(ids: Sequence[str], n_documents: int) -> tuple[str, ...]:
    """Validate ids (strings, unique, one per document) and return them as a tuple."""
    ids = tuple(ids)
    if len(ids) != n_documents:
        raise ValueError(f"got {len(ids)} ids for {n_documents} documents: give exactly one id per document")
    for value in ids:
        if not isinstance(value, str):
            raise ValueError(f"id {value!r} is not a string: convert ids to str before indexing")
    seen: set[str] = set()
    for value in ids:
        if value in seen:
            raise ValueError(f"id {value!r} appears more than once: ids must be unique")
        seen.add(value)
    return ids


class Index(ABC):
    """Abstract contract: ids in insertion order, a score per document, top-k hits, and a save/load pair.

    Subclasses set ``kind`` (written to the manifest and checked on load) and implement :meth:`scores`,
    :meth:`save` and :meth:`load`; :meth:`search` ranks all documents unless a subclass narrows the candidates.
    """

    kind: ClassVar[str]

    def __init__(self, ids: tuple[str, ...]) -> None:
        self._ids = ids
        self._id_order = tie_order(ids)

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def ids(self) -> tuple[str, ...]:
        """Document ids in insertion order; ``scores()[i]`` belongs to ``ids[i]``."""
        return self._ids

    @abstractmethod
    def scores(self, query: Any) -> np.ndarray:
        """Return a float64 score for every document, in :attr:`ids` order."""

    def search(self, query: Any, k: int) -> list[Hit]:
        """Return the top ``k`` hits (score descending, then id ascending); k is clamped to the size."""
        return top_hits(self._ids, self._id_order, self.scores(query), k)

    @abstractmethod
    def save(self, folder: Path) -> None:
        """Write the index to ``folder`` (created if needed) as plain files."""

    @classmethod
    @abstractmethod
    def load(cls, folder: Path) -> Self:
        """Read an index written by :meth:`save`; raise IndexLoadError naming the bad file."""

    # Persistence helpers shared by the index kinds.

    def _write_manifest(self, folder: Path, params: dict[str, Any]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        write_json(folder / "ids.json", list(self._ids))
        write_json(folder / MANIFEST, {"kind": self.kind, "format_version": FORMAT_VERSION, "params": params})

    @classmethod
    def _read_manifest(cls, folder: Path) -> tuple[tuple[str, ...], dict[str, Any]]:
        """Check the manifest belongs to this kind and format version; return (ids, params)."""
        folder = Path(folder)
        if not folder.is_dir():
            raise IndexLoadError(f"index folder '{folder}' does not exist: build the index and save it there first")
        manifest = read_json(folder / MANIFEST)
        if not isinstance(manifest, dict) or "kind" not in manifest:
            raise IndexLoadError(f"'{folder / MANIFEST}' is not an index manifest: rebuild the index")
        if manifest["kind"] != cls.kind:
            raise IndexLoadError(
                f"'{folder}' holds a {manifest['kind']!r} index, not {cls.kind!r}: load it with the matching class"
            )
        if manifest.get("format_version") != FORMAT_VERSION:
            raise IndexLoadError(
                f"'{folder / MANIFEST}' has format version {manifest.get('format_version')!r}, this code reads "
                f"{FORMAT_VERSION}: rebuild the index"
            )
        ids = read_json(folder / "ids.json")
        if not isinstance(ids, list) or not all(isinstance(value, str) for value in ids) or len(set(ids)) != len(ids):
            raise IndexLoadError(f"'{folder / 'ids.json'}' is not a list of unique string ids: rebuild the index")
        return tuple(ids), manifest.get("params", {})


def write_json(path: Path, value: Any) -> None:
    """Write ``value`` as UTF-8 JSON, replacing the file atomically so a crash never leaves half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value, ensure_ascii=False, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def read_json(path: Path) -> Any:
    """Read a JSON file, raising IndexLoadError naming the file when it is missing or unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise IndexLoadError(f"index file '{path}' is missing: rebuild the index") from None
    except (OSError, ValueError) as exc:
        raise IndexLoadError(f"index file '{path}' is corrupt ({exc}): rebuild the index") from None


def write_array(path: Path, array: np.ndarray) -> None:
    """Write one array as ``.npy`` with pickling off."""
    with path.open("wb") as handle:
        np.save(handle, np.ascontiguousarray(array), allow_pickle=False)


def read_array(path: Path, *, dtype: np.dtype | type, ndim: int) -> np.ndarray:
    """Read a ``.npy`` array with pickling off and check its dtype and rank; IndexLoadError names the file."""
    try:
        array = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise IndexLoadError(f"index file '{path}' is missing: rebuild the index") from None
    except (OSError, ValueError, EOFError) as exc:
        raise IndexLoadError(f"index file '{path}' is truncated or corrupt ({exc}): rebuild the index") from None
    if array.dtype != np.dtype(dtype) or array.ndim != ndim:
        raise IndexLoadError(
            f"index file '{path}' holds a {array.ndim}-d {array.dtype} array, expected {ndim}-d "
            f"{np.dtype(dtype)}: rebuild the index"
        )
    return array


UNIT_NORM_TOLERANCE = 1e-3


def check_unit_vectors(vectors: np.ndarray, n_ids: int | None = None) -> np.ndarray:
    """Return ``vectors`` as a C-contiguous float32 (n, dim) array, refusing rows that are not L2-normalised."""
    array = np.asarray(vectors)
    if array.ndim != 2:
        raise ValueError(f"vectors must be a 2-d (n, dim) array, got shape {array.shape}")
    if n_ids is not None and array.shape[0] != n_ids:
        raise ValueError(f"got {n_ids} ids for {array.shape[0]} vectors: give exactly one id per vector")
    array = np.ascontiguousarray(array, dtype=np.float32)
    # Summed in float64 without a float64 copy of the array (which took 70 ms at 10,000 x 384).
    norms = np.sqrt(np.einsum("ij,ij->i", array, array, dtype=np.float64))
    bad = np.flatnonzero(np.abs(norms - 1.0) > UNIT_NORM_TOLERANCE)
    if len(bad):
        raise ValueError(
            f"vector {int(bad[0])} has L2 norm {norms[bad[0]]:.4f}, not 1: normalise vectors "
            "(Encoder.encode already does) before indexing"
        )
    return array


def check_query_vector(query: np.ndarray, dim: int) -> np.ndarray:
    """Return a query vector as float64 of shape (dim,); accepts (dim,) or (1, dim)."""
    array = np.asarray(query, dtype=np.float64)
    if array.ndim == 2 and array.shape[0] == 1:
        array = array[0]
    if array.shape != (dim,):
        raise ValueError(f"query vector has shape {np.shape(query)}, the index holds {dim}-d vectors")
    return array


def read_vectors(folder: Path, n_ids: int) -> np.ndarray:
    """The ``vectors.npy`` a vector index saved, checked to hold one row per id."""
    vectors = read_array(folder / "vectors.npy", dtype=np.float32, ndim=2)
    if len(vectors) != n_ids:
        raise IndexLoadError(f"'{folder / 'vectors.npy'}' has {len(vectors)} rows for {n_ids} ids: rebuild")
    return vectors
