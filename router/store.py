"""The persistent index: an embedding cache kept by content, in a folder of plain files that no reader waits for.

Two parts:

- :class:`EmbeddingCache` (in memory, no files): vectors by the content hash of their text, so a text is embedded
  once per model (simonw/llm keeps embeddings the same way) and rebuilding after one skill changed embeds only
  that skill's text.
- :class:`IndexFolder`: the folder on disk. Layout (``FORMAT`` 2)::

      manifest.json        format, package version, the library it was built for, model id and dimension,
                           parameters, per-skill content hashes, the signature the built indexes were made
                           from, the generation folder, the sha256 of every file in it, and the library's
                           no-skill chance level with its recipe (``chance``, :func:`router.abstain.stored_chance`)
      gen-<id>/            one generation: vectors.npy + keys.json (the cache), bm25/, dense/ and body_bm25/
                           (built indexes; body_dense is assembled from the cache, see router.signals)
      learned-examples.jsonl   examples added by ``skill-router learn`` (append-only, see router.learned)

  A save writes a new generation beside the old one and then replaces ``manifest.json`` (an atomic rename), so a
  reader sees the old index or the new one, never a mix, and never takes a lock: it reads the manifest, then the
  files it names, checking each one's checksum; if a writer removed a generation meanwhile, it reads again.
  Writers exclude each other with one file lock (:func:`exclusive`) and say so when they wait for more than two
  seconds. Each save removes what a killed writer left behind (``*.tmp`` files, generations no manifest names).
  What a save shares with the generation it replaces (an index that did not change, an unchanged cache) is
  hard-linked from it with the checksums its manifest gave; only the rest is written, hashed and flushed to disk,
  so the refresh after one edited skill writes that skill's indexes, not the whole library's. Files are never
  changed in place, so a link never lets one generation change another.

Embeddings are keyed by content and model only, so a folder shared by two libraries (an explicit ``--index-dir``)
still saves embedding work; the built indexes are rebuilt when the skills differ, and learned examples are only
read by the library they were learned for (:meth:`IndexFolder.built_for`).

The skills are the source of truth: an index that is corrupt, truncated, of another format or model, or
whose files do not match their checksums is rebuilt from them, with a note saying what was wrong.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from router.files import open_regular, read_bytes, read_text

FORMAT = 2
MANIFEST = "manifest.json"
VECTORS = "vectors.npy"
KEYS = "keys.json"
LOCK = ".lock"
LOCK_TIMEOUT_S = 600
LOCK_NOTICE_S = 2.0
READ_ATTEMPTS = 3


def text_key(model_id: str, text: str) -> str:
    """The content hash an embedding is cached under."""
    return hashlib.sha256(f"{model_id}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()


def index_signature(skill_hashes: Mapping[str, str], parameters: Mapping[str, Any]) -> str:
    """What a built index depends on: the skills in order with their texts' hashes, and the parameters."""
    payload = json.dumps([FORMAT, list(skill_hashes.items()), dict(parameters)], sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def sha256_file(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open_regular(path) as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class StaleIndex(Exception):
    """Why a persisted index cannot be used as it is (the caller rebuilds and reports it)."""


# -- the cache ---------------------------------------------------------------------------------------------------
class EmbeddingCache:
    """Unit vectors by content key for one model and dimension (in memory)."""

    def __init__(self, dim: int, keys: Sequence[str] = (), vectors: np.ndarray | None = None) -> None:
        self.dim = dim
        self._rows = {key: row for row, key in enumerate(keys)}
        self._vectors = np.zeros((0, dim), dtype=np.float32) if vectors is None else vectors
        self.added = 0

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, key: object) -> bool:
        return key in self._rows

    def missing(self, keys: Sequence[str]) -> list[str]:
        """The distinct keys not cached yet, in first-seen order."""
        return [k for k in dict.fromkeys(keys) if k not in self._rows]

    def add(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        """Cache ``vectors`` (one row per key) under ``keys``; keys already cached keep their vector."""
        vectors = np.asarray(vectors, dtype=np.float32).reshape(len(keys), self.dim)
        first: dict[str, int] = {}
        for i, key in enumerate(keys):
            if key not in self._rows:
                first.setdefault(key, i)
        fresh = list(first.values())
        start = len(self._rows)
        for offset, i in enumerate(fresh):
            self._rows[keys[i]] = start + offset
        if fresh:
            self._vectors = np.concatenate([self._vectors, vectors[fresh]])
            self.added += len(fresh)

    def get(self, keys: Sequence[str]) -> np.ndarray:
        """The vectors of ``keys`` (all must be cached), one row each."""
        if not keys:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._vectors[[self._rows[k] for k in keys]]

    def embed(self, keys: Sequence[str], texts: Sequence[str], encode: Callable[[list[str]], np.ndarray]
              ) -> np.ndarray:
        """The vectors of ``texts`` (under ``keys``), encoding only the texts not cached yet."""
        text_of = dict(zip(keys, texts))
        missing = self.missing(keys)
        if missing:
            self.add(missing, encode([text_of[k] for k in missing]))
        return self.get(keys)

    def pruned(self, keep: Sequence[str]) -> EmbeddingCache:
        """A cache holding only the ``keep`` keys that are cached, so the folder does not grow without bound."""
        wanted = [k for k in dict.fromkeys(keep) if k in self._rows]
        return EmbeddingCache(self.dim, wanted, self.get(wanted))

    def arrays(self) -> tuple[list[str], np.ndarray]:
        return list(self._rows), self._vectors  # rows are numbered in insertion order


# -- the folder ---------------------------------------------------------------------------------------------------
@contextlib.contextmanager
def exclusive(folder: str, notes: list[str] | None = None) -> Iterator[None]:
    """Hold the folder's writer lock; a wait longer than :data:`LOCK_NOTICE_S` is said on stderr (and in
    ``notes``), a wait longer than :data:`LOCK_TIMEOUT_S` raises OSError naming the lock file."""
    from filelock import FileLock, Timeout

    os.makedirs(folder, exist_ok=True)
    lock = FileLock(os.path.join(folder, LOCK))
    try:
        lock.acquire(timeout=LOCK_NOTICE_S)
    except Timeout:
        message = f"waiting for another process that is writing the index at {folder}"
        print(f"note: {message}", file=sys.stderr)
        if notes is not None:
            notes.append(message)
        try:
            lock.acquire(timeout=LOCK_TIMEOUT_S)
        except Timeout:
            raise OSError(f"index folder {folder} is locked by another process for over {LOCK_TIMEOUT_S} s; if no "
                          f"build is running, delete {lock.lock_file}") from None
    try:
        yield
    finally:
        lock.release()


@dataclass(frozen=True)
class Snapshot:
    """One consistent read of an index folder: the manifest, the cache (and the keys it was read with), the
    generation's folder, and the indexes loaded from it (which a save can link instead of writing again)."""

    manifest: Mapping[str, Any]
    cache: EmbeddingCache
    generation: Path
    keys: tuple[str, ...] = ()
    loaded: dict[str, Any] = field(default_factory=dict)

    @property
    def signature(self) -> str:
        return str(self.manifest.get("signature", ""))

    @property
    def files(self) -> Mapping[str, str]:
        """The generation's files (relative paths) and their checksums, as the manifest names them."""
        return self.manifest["files"]

    def has(self, name: str) -> bool:
        """Whether the generation holds an index saved under ``name``."""
        return any(path.startswith(f"{name}/") for path in self.files)

    def load_index(self, name: str, kind: Any) -> Any:
        """The built index saved under ``name`` (its files were checked when the snapshot was read)."""
        from indexes import IndexLoadError

        try:
            index = kind.load(self.generation / name)
        except (OSError, IndexLoadError) as exc:
            raise StaleIndex(f"has a {name} index that does not load ({_first_line(exc)})") from None
        self.loaded[name] = index
        return index


@dataclass
class IndexFolder:
    """The index folder of one library (see the module docstring for the layout and the rules)."""

    path: str
    library: str = ""
    package_version: str = "0"
    notes: list[str] = field(default_factory=list)

    # -- reading ----------------------------------------------------------------------------------------------
    def read(self, model_id: str, dim: int) -> Snapshot | None:
        """The folder's current index for ``model_id``; None when there is none yet. Raises :class:`StaleIndex`
        saying what is wrong when there is one that cannot be used."""
        for attempt in range(READ_ATTEMPTS):
            manifest = self._manifest()
            if manifest is None:
                return None
            try:
                return self._snapshot(manifest, model_id, dim)
            except FileNotFoundError:
                # A writer replaced the generation between our two reads: read the new manifest.
                if attempt == READ_ATTEMPTS - 1:
                    raise StaleIndex("changed while it was read, three times") from None
        raise AssertionError("unreachable")

    def _manifest(self) -> dict[str, Any] | None:
        path = os.path.join(self.path, MANIFEST)
        try:
            raw = read_bytes(path, 1 << 24)
        except FileNotFoundError:
            if os.path.isdir(os.path.join(self.path)) and any(n.startswith("gen-") for n in _listdir(self.path)):
                raise StaleIndex(f"is missing its {MANIFEST}") from None
            return None
        except OSError as exc:
            raise StaleIndex(f"has an unreadable {MANIFEST} ({exc.strerror or exc})") from None
        try:
            manifest = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise StaleIndex(f"has a corrupt {MANIFEST} ({_first_line(exc)})") from None
        if not isinstance(manifest, dict):
            raise StaleIndex(f"has a {MANIFEST} that is not a JSON object")
        return manifest

    def _snapshot(self, manifest: Mapping[str, Any], model_id: str, dim: int) -> Snapshot:
        if manifest.get("format") != FORMAT:
            raise StaleIndex(f"has format {_short(manifest.get('format'))}, this version reads format {FORMAT}")
        built_model, built_dim = manifest.get("model"), manifest.get("dim")
        if built_model != model_id or built_dim != dim:
            raise StaleIndex(f"was built with model {_short(built_model)} (dim {_short(built_dim)}), the router is "
                             f"configured with {model_id!r} (dim {dim})")
        generation, files = manifest.get("generation"), manifest.get("files")
        if not isinstance(generation, str) or not generation.startswith("gen-") or os.sep in generation:
            raise StaleIndex(f"has a {MANIFEST} with no valid generation folder")
        if not isinstance(files, dict) or not files or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
            raise StaleIndex(f"has a {MANIFEST} without the checksums of its files")
        folder = Path(self.path) / generation
        if not folder.is_dir():
            raise FileNotFoundError(folder)
        for name, digest in sorted(files.items()):
            path = folder / name
            if ".." in Path(name).parts or not path.is_file():
                raise StaleIndex(f"is missing {generation}/{name}")
            if sha256_file(path) != digest:
                raise StaleIndex(f"has a corrupt or changed {generation}/{name} (checksum mismatch)")
        try:
            with open_regular(folder / VECTORS) as handle:
                vectors = np.load(handle, allow_pickle=False)
            keys = json.loads(read_text(folder / KEYS))
        except (OSError, ValueError) as exc:
            raise StaleIndex(f"has an unreadable cache ({_first_line(exc)})") from None
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys) or vectors.dtype != np.float32 \
                or vectors.shape != (len(keys), dim):
            raise StaleIndex(f"holds vectors of shape {vectors.shape}, expected ({_short(len(keys))}, {dim})")
        return Snapshot(manifest, EmbeddingCache(dim, keys, vectors), folder, tuple(keys))

    def built_for(self) -> str | None:
        """The library the folder's index was last built for (None when there is no readable manifest)."""
        try:
            manifest = self._manifest()
        except StaleIndex:
            return None
        library = manifest.get("library") if manifest else None
        return library if isinstance(library, str) else None

    # -- writing ----------------------------------------------------------------------------------------------
    def write(self, cache: EmbeddingCache, indexes: Mapping[str, Any], *, model_id: str, dim: int,
              parameters: Mapping[str, Any], skill_hashes: Mapping[str, str], signature: str,
              previous: Snapshot | None = None, chance: Mapping[str, Any] | None = None) -> None:
        """Write a new generation holding ``cache`` and ``indexes``, then point the manifest at it (which also
        holds ``chance``, the library's chance level in its stored form, when given).

        What is unchanged since ``previous`` (the snapshot the caller read: an index it loaded from there, a cache
        with exactly the keys it was read with) is hard-linked from that generation with the checksums its
        manifest gives, rather than written and hashed again; where a link cannot be made (the generation is
        gone, another file system, no hard links) it is written."""
        with exclusive(self.path, self.notes):
            generation = f"gen-{uuid.uuid4().hex[:12]}"
            fresh = Path(tempfile.mkdtemp(dir=self.path, prefix=f".{generation}.", suffix=".tmp"))
            try:
                keys, vectors = cache.arrays()
                files: dict[str, str] = {}
                if previous is None or tuple(keys) != previous.keys or not _link(previous, (VECTORS, KEYS),
                                                                                   fresh, files):
                    with open(fresh / VECTORS, "wb") as handle:
                        np.save(handle, vectors, allow_pickle=False)
                    (fresh / KEYS).write_text(json.dumps(keys), encoding="utf-8")
                for name, index in indexes.items():
                    if previous is not None and previous.loaded.get(name) is index and _link(
                            previous, [p for p in previous.files if p.startswith(f"{name}/")], fresh, files):
                        continue
                    index.save(fresh / name)
                written = [p for p in sorted(fresh.rglob("*")) if p.is_file()
                           and p.relative_to(fresh).as_posix() not in files]
                files.update({p.relative_to(fresh).as_posix(): sha256_file(p) for p in written})
                _fsync_files(written)
                os.rename(fresh, Path(self.path) / generation)
            except BaseException:
                shutil.rmtree(fresh, ignore_errors=True)
                raise
            manifest = {"format": FORMAT, "package": self.package_version, "library": self.library,
                        "model": model_id, "dim": dim, "parameters": dict(parameters), "skills": dict(skill_hashes),
                        "signature": signature, "generation": generation, "files": files}
            if chance is not None:
                manifest["chance"] = dict(chance)
            _atomic_write(os.path.join(self.path, MANIFEST), json.dumps(manifest, sort_keys=True))
            self._clean(keep=generation)

    def set_chance(self, generation: str, chance: Mapping[str, Any]) -> bool:
        """Keep ``chance`` (the library's chance level in its stored form) in the manifest of ``generation``, the
        saved index it was computed over; False when another save replaced that generation meanwhile (its own
        save stored its own). Only the manifest is replaced (atomically): the generation's files stay."""
        with exclusive(self.path, self.notes):
            try:
                manifest = self._manifest()
            except StaleIndex:
                return False
            if manifest is None or manifest.get("generation") != generation:
                return False
            manifest["chance"] = dict(chance)
            _atomic_write(os.path.join(self.path, MANIFEST), json.dumps(manifest, sort_keys=True))
            return True

    def _clean(self, keep: str) -> None:
        """Remove what the manifest does not name (it names ``keep``): temporary files of killed writers and old
        generations. Called under the writer lock after a save, so no other writer's temporary file can be among
        them. A reader that is still reading an
        old generation reads again from the new manifest (see :meth:`read`)."""
        for name in _listdir(self.path):
            path = os.path.join(self.path, name)
            stale_tmp = name.endswith(".tmp") and name.startswith(".")
            old_generation = name.startswith("gen-") and name != keep
            if stale_tmp or old_generation:
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    with contextlib.suppress(OSError):
                        os.unlink(path)


def _atomic_write(path: str, text: str) -> None:
    folder = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _link(previous: Snapshot, paths: Sequence[str], fresh: Path, files: dict[str, str]) -> bool:
    """Hard-link ``paths`` of the previous generation into ``fresh``, adding their checksums to ``files``; on any
    failure remove what was linked and return False (the caller writes the files instead)."""
    linked: list[Path] = []
    try:
        for path in paths:
            target = fresh / path
            target.parent.mkdir(parents=True, exist_ok=True)
            os.link(previous.generation / path, target)
            linked.append(target)
    except OSError:
        for target in linked:
            with contextlib.suppress(OSError):
                target.unlink()
        return False
    files.update({path: previous.files[path] for path in paths})
    return bool(paths)


def _fsync_files(paths: Sequence[Path]) -> None:
    """Flush written files to disk (linked ones were flushed when their own generation was written)."""
    for path in paths:
        with open(path, "rb") as handle:
            os.fsync(handle.fileno())


def _listdir(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:200]


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


# -- where the folder is ------------------------------------------------------------------------------------------
def library_key(roots: Sequence[str], catalog: str | None, profile: str) -> str:
    """What identifies a library: its roots (absolute, in order) or its catalogue, and the profile that reads it."""
    sources = [os.path.abspath(catalog)] if catalog else [os.path.abspath(r) for r in roots]
    return json.dumps({"sources": sources, "profile": profile}, sort_keys=True)


def default_learned_folder(roots: Sequence[str], catalog: str | None, *, in_cache: bool = False) -> str:
    """Where ``skill-router learn`` keeps a library's learned examples by default: one folder per library, whatever
    the profile (examples belong to skills, so a request learned under genkit also routes under claude-code):
    ``<first root's name>-learned-<hash of the sources>`` beside the index folders."""
    digest = hashlib.sha256(library_key(roots, catalog, "").encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return _beside_library(roots, catalog, f"learned-{digest}", in_cache)


def default_index_folder(roots: Sequence[str], catalog: str | None, profile: str = "", *,
                         in_cache: bool = False) -> str:
    """One folder per library: ``<catalog>.index/<profile>-<hash of the library>`` for a catalogue; for skill
    folders ``<parent of the first root>/.skill-router-index/<first root's name>-<profile>-<hash of the library>``,
    so two libraries that share a parent folder never share (or overwrite) an index.

    With ``in_cache`` (a harness's own folders, a library inside a git work tree: :mod:`router.spec`) the folder is
    ``<user cache>/skill-router/indexes/<first root's or catalogue's name>-<profile>-<hash of the library>``; so it
    is when the library's place is not writable (a read-only library)."""
    digest = hashlib.sha256(library_key(roots, catalog, profile).encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return _beside_library(roots, catalog, f"{profile or 'default'}-{digest}", in_cache)


def user_cache_folder() -> str:
    """skill-router's folder in the user cache: ``$XDG_CACHE_HOME/skill-router``, default ``~/.cache``."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "skill-router")


def _beside_library(roots: Sequence[str], catalog: str | None, label: str, in_cache: bool = False) -> str:
    if catalog:
        name = os.path.basename(os.path.abspath(catalog))
        base = os.path.join(os.path.abspath(catalog) + ".index", label)
        parent = os.path.dirname(os.path.abspath(catalog))
    else:
        first = os.path.abspath(roots[0] if roots else "skills")
        parent = os.path.dirname(first)
        name = os.path.basename(first) or "skills"
        base = os.path.join(parent, ".skill-router-index", f"{name}-{label}")
    if in_cache:
        return os.path.join(user_cache_folder(), "indexes", f"{name}-{label}")
    if os.access(parent, os.W_OK):
        return base
    return os.path.join(user_cache_folder(), hashlib.sha256(base.encode("utf-8", "surrogatepass")).hexdigest()[:16])
