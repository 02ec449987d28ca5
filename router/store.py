"""The persistent, incremental index: a folder of plain files that caches embeddings by content.

Layout (``FORMAT`` 1)::

    manifest.json   format, package version, model id and dimension, parameters, per-skill content hashes,
                    and the sha256 of every array file (to detect truncation and corruption)
    vectors.npy     float32 embeddings, one row per distinct embedded text (saved with pickling off)
    keys.json       the content hash of each row of vectors.npy
    bm25/, dense/   the built indexes in their own formats (``.npy`` arrays, FAISS's writer), each with the
                    signature of the skills and parameters it was built from; a folder whose signature does not
                    match, or that does not load, is rebuilt (cheaply: the embeddings come from vectors.npy)

A text's key is ``sha256(model id + NUL + text)``, so an embedding is computed once per distinct text and
model: rebuilding after one skill changed embeds only that skill's text (simonw/llm keeps embeddings the same
way). The skills are the source of truth: an index that is corrupt, truncated, of another format or of another
model is rebuilt from them and the reason is reported, never lost work. Writes go to temporary files renamed into
place (atomic on POSIX), under a file lock, so two processes building at once cannot interleave.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

FORMAT = 1
MANIFEST = "manifest.json"
VECTORS = "vectors.npy"
KEYS = "keys.json"
LOCK_TIMEOUT_S = 600


def text_key(model_id: str, text: str) -> str:
    """The content hash an embedding is cached under."""
    return hashlib.sha256(f"{model_id}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()


def _sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def index_signature(skill_hashes: Mapping[str, str], parameters: Mapping[str, Any]) -> str:
    """What a built index depends on: the skills in order with their texts' hashes, and the parameters."""
    payload = json.dumps([FORMAT, list(skill_hashes.items()), dict(parameters)], sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


SIGNATURE = "signature.txt"


class StaleIndex(Exception):
    """Why a persisted index cannot be used as it is (the caller rebuilds and reports it)."""


@dataclass
class EmbeddingStore:
    """Embeddings cached by content in ``folder`` for one model.

    ``notes`` collects what happened while loading (a rebuild and its reason) so callers can report it.
    """

    folder: str
    model_id: str
    dim: int
    package_version: str = "0"
    notes: list[str] = field(default_factory=list)
    _rows: dict[str, int] = field(default_factory=dict, repr=False)
    _vectors: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    _dirty: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        self._vectors = np.zeros((0, self.dim), dtype=np.float32)
        try:
            self._load()
        except StaleIndex as exc:
            self.notes.append(f"index at {self.folder} {exc}; rebuilding it from the skills")
            self._rows, self._vectors = {}, np.zeros((0, self.dim), dtype=np.float32)

    # -- reading ------------------------------------------------------------------------------------------------
    def _load(self) -> None:
        if not self.folder:  # an in-memory store: never read a manifest.json from the working folder
            return
        manifest_path = os.path.join(self.folder, MANIFEST)
        if not os.path.exists(manifest_path):
            return
        from filelock import FileLock, Timeout

        # Read under the writers' lock: a concurrent save replaces three files one after the other, and reading
        # between two replacements would see mismatched checksums and rebuild for nothing.
        lock = FileLock(os.path.join(self.folder, ".lock"))
        try:
            with lock.acquire(timeout=LOCK_TIMEOUT_S):
                self._read(manifest_path)
        except Timeout:
            raise StaleIndex(f"is locked by another process for over {LOCK_TIMEOUT_S} s") from None
        except OSError as exc:  # a read-only index folder where the lock file cannot be created
            if os.access(self.folder, os.W_OK):
                raise StaleIndex(f"cannot be read ({exc})") from None
            self._read(manifest_path)

    def _read(self, manifest_path: str) -> None:
        try:
            with open(manifest_path, encoding="utf-8") as handle:
                manifest = json.load(handle)
        except (OSError, json.JSONDecodeError) as exc:
            raise StaleIndex(f"has an unreadable manifest ({exc})") from None
        if not isinstance(manifest, dict):
            raise StaleIndex("has a manifest that is not a JSON object")
        if manifest.get("format") != FORMAT:
            raise StaleIndex(f"has format {manifest.get('format')!r}, this version reads format {FORMAT}")
        if manifest.get("model") != self.model_id or manifest.get("dim") != self.dim:
            raise StaleIndex(f"was built with model {manifest.get('model')!r} (dim {manifest.get('dim')}), the router "
                             f"is configured with {self.model_id!r} (dim {self.dim})")
        files = manifest.get("files", {})
        for name in (VECTORS, KEYS):
            path = os.path.join(self.folder, name)
            if not os.path.exists(path):
                raise StaleIndex(f"is missing {name}")
            if files.get(name) != _sha256_file(path):
                raise StaleIndex(f"has a corrupt or truncated {name} (checksum mismatch)")
        try:
            vectors = np.load(os.path.join(self.folder, VECTORS), allow_pickle=False)
            with open(os.path.join(self.folder, KEYS), encoding="utf-8") as handle:
                keys = json.load(handle)
        except (OSError, ValueError) as exc:
            raise StaleIndex(f"cannot be read ({exc})") from None
        if vectors.ndim != 2 or vectors.shape != (len(keys), self.dim) or vectors.dtype != np.float32:
            raise StaleIndex(f"holds vectors of shape {vectors.shape}, expected ({len(keys)}, {self.dim})")
        self._rows = {key: row for row, key in enumerate(keys)}
        self._vectors = vectors

    def __len__(self) -> int:
        return len(self._rows)

    # -- embedding ----------------------------------------------------------------------------------------------
    def embed(self, texts: Sequence[str], encode: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        """Vectors for ``texts``, computing with ``encode`` only those not cached yet."""
        keys = [text_key(self.model_id, t) for t in texts]
        missing: dict[str, str] = {}
        for key, text in zip(keys, texts):
            if key not in self._rows and key not in missing:
                missing[key] = text
        if missing:
            fresh = np.asarray(encode(list(missing.values())), dtype=np.float32)
            start = len(self._rows)
            for offset, key in enumerate(missing):
                self._rows[key] = start + offset
            self._vectors = np.concatenate([self._vectors, fresh.reshape(len(missing), self.dim)])
            self._dirty = True
        if not keys:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._vectors[[self._rows[k] for k in keys]]

    # -- writing ------------------------------------------------------------------------------------------------
    def save(self, parameters: Mapping[str, Any], skill_hashes: Mapping[str, str], *, keep: Sequence[str] = ()
             ) -> None:
        """Write the cache atomically under a lock. Rows not used by ``keep`` texts' keys are dropped when
        ``keep`` is given, so the folder does not grow without bound as skills change."""
        from filelock import FileLock, Timeout

        os.makedirs(self.folder, exist_ok=True)
        if keep:
            wanted = [k for k in dict.fromkeys(keep) if k in self._rows]
            self._vectors = self._vectors[[self._rows[k] for k in wanted]] if wanted else self._vectors[:0]
            self._rows = {k: i for i, k in enumerate(wanted)}
        keys = sorted(self._rows, key=self._rows.get)
        lock = FileLock(os.path.join(self.folder, ".lock"))
        try:
            with lock.acquire(timeout=LOCK_TIMEOUT_S):
                files = {VECTORS: self._write(VECTORS, lambda h: np.save(h, self._vectors, allow_pickle=False)),
                         KEYS: self._write(KEYS, lambda h: h.write(json.dumps(keys).encode()))}
                manifest = {"format": FORMAT, "package": self.package_version, "model": self.model_id,
                            "dim": self.dim, "parameters": dict(parameters), "skills": dict(skill_hashes),
                            "files": files}
                self._write(MANIFEST, lambda h: h.write(json.dumps(manifest, indent=1, sort_keys=True).encode()))
        except Timeout:
            raise OSError(f"index folder {self.folder} is locked by another process for over {LOCK_TIMEOUT_S} s; "
                          f"if no build is running, delete {lock.lock_file}") from None
        self._dirty = False

    def _write(self, name: str, write: Callable[[Any], Any]) -> str:
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=f".{name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                write(handle)
                handle.flush()
                os.fsync(handle.fileno())
            digest = _sha256_file(tmp)
            os.replace(tmp, os.path.join(self.folder, name))
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return digest

    @property
    def dirty(self) -> bool:
        return self._dirty

    # -- built indexes ------------------------------------------------------------------------------------------
    def load_index(self, name: str, kind: Any, signature: str) -> Any | None:
        """The index saved under ``name`` if it was built from ``signature`` and loads cleanly, else None."""
        from indexes import IndexLoadError

        path = os.path.join(self.folder, name) if self.folder else ""
        try:
            with open(os.path.join(path, SIGNATURE), encoding="utf-8") as handle:
                if handle.read().strip() != signature:
                    return None
            return kind.load(Path(path))
        except (OSError, IndexLoadError):
            return None

    def save_indexes(self, indexes: Mapping[str, Any], signature: str) -> None:
        """Save each index into its own folder, swapped into place by renames under the lock."""
        from filelock import FileLock

        os.makedirs(self.folder, exist_ok=True)
        with FileLock(os.path.join(self.folder, ".lock")).acquire(timeout=LOCK_TIMEOUT_S):
            for name, index in indexes.items():
                fresh = tempfile.mkdtemp(dir=self.folder, prefix=f".{name}.", suffix=".tmp")
                try:
                    index.save(Path(fresh))
                    with open(os.path.join(fresh, SIGNATURE), "w", encoding="utf-8") as handle:
                        handle.write(signature + "\n")
                    target = os.path.join(self.folder, name)
                    stale = f"{fresh}.old"
                    if os.path.exists(target):
                        os.rename(target, stale)
                    os.rename(fresh, target)
                    shutil.rmtree(stale, ignore_errors=True)
                except BaseException:
                    shutil.rmtree(fresh, ignore_errors=True)
                    raise


def default_index_folder(roots: Sequence[str], catalog: str | None) -> str:
    """Beside the library (``<parent of the first root>/.skill-router-index``, or ``<catalog>.index``); in the
    user cache folder when that place is not writable (a read-only library)."""
    if catalog:
        base = os.path.abspath(catalog) + ".index"
        parent = os.path.dirname(base)
    else:
        first = os.path.abspath(roots[0] if roots else "skills")
        parent = os.path.dirname(first)
        base = os.path.join(parent, ".skill-router-index")
    if os.access(parent, os.W_OK):
        return base
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    digest = hashlib.sha256(base.encode()).hexdigest()[:16]
    return os.path.join(cache, "skill-router", digest)
