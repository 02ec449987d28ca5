"""Sentence embeddings with onnxruntime and the Rust ``tokenizers`` package: no torch on the query path.

A sentence-transformers model is exported once to ONNX by :mod:`indexes.onnx_export` (transformer, the model's
own pooling and L2 normalisation in one graph) and checked against sentence-transformers before it is trusted.
This module only *reads* such exports, so importing and using it loads onnxruntime, tokenizers and numpy, never
torch, transformers, sentence-transformers or faiss: a fresh process embeds a request in well under a second
instead of spending seconds importing torch.

Cache layout (``default_cache_dir()``, ``$XDG_CACHE_HOME/skill-router/onnx`` or ``~/.cache/skill-router/onnx``;
every function takes ``cache_dir`` to put it elsewhere)::

    <cache_dir>/sources.json        content hash of each model folder seen, keyed by path, with the size and
                                    mtime of its files so an unchanged folder is not hashed again
    <cache_dir>/<model hash>/       one export per model content (its weight and config files)
        model.onnx                  input ids (+ attention mask, token type ids) -> unit sentence vectors
        tokenizer.json              the model's fast tokenizer, truncating at the model's max_seq_length
        onnx.json                   manifest: format version, model id and hash, dimension, sequence length,
                                    padding ids, size/mtime/sha256 of the two files, the check against
                                    sentence-transformers (max abs difference, tolerance, passed) and versions
        model-external.onnx         the same graph with its weights in the next file (written after the check,
        model-external.onnx.data    and only kept when it gives the very same vectors as model.onnx; recorded
                                    under ``external`` in the manifest): onnxruntime maps the weights file
                                    instead of copying 90 MB into fresh memory, so a session is made in about a
                                    third of the CPU time. Without it (or when it fails its size/hash check)
                                    model.onnx is loaded.
        model-int8.onnx             the graph with int8 weights in its matrix products (one scale per output
        model-int8.onnx.data        channel) and its weights in the next file, mapped as the external copy's,
                                    for requests only (:meth:`OnnxEncoder.encode_requests`); kept when
                                    every check text's vector lies within :data:`INT8_MIN_COSINE` of
                                    model.onnx's, recorded under ``int8``. A library's texts are always embedded
                                    by the float graph, so an index and its caches hold the same vectors with or
                                    without it.

An export that failed its check keeps only ``onnx.json`` (``passed: false`` and the reason), so the check is not
repeated on every run with the same library versions.

Errors are :class:`indexes.base.OnnxUnavailable` with a one-line reason; the caller falls back to
:class:`indexes.encoder.Encoder`.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Self

import numpy as np

from indexes.base import ModelLoadError, OnnxUnavailable
from indexes.encoder import DEFAULT_MODEL_ID, _default_model_path

EXPORT_FORMAT = 1
MANIFEST = "onnx.json"
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
EXTERNAL_MODEL_FILE = "model-external.onnx"
EXTERNAL_DATA_FILE = "model-external.onnx.data"
INT8_MODEL_FILE = "model-int8.onnx"
INT8_DATA_FILE = "model-int8.onnx.data"
# Least cosine of the int8 graph's vector with the float graph's on each check text for the int8 copy to be kept.
# Over 1,000+ dev requests the per-channel copy's least cosine was 0.972 and its median 0.993; a broken
# quantization gives far less (benchmarks/README.md, "Speed").
INT8_MIN_COSINE = 0.95
SOURCES = "sources.json"
# Largest difference from the sentence-transformers vectors an export may show on the check texts. Measured
# exports of MiniLM differ by about 2e-7 (float32 rounding in another kernel order).
TOLERANCE = 1e-5
# Texts per onnxruntime run. Length-sorted batches of 4 texts cost the least CPU per text, because the activations
# stay in cache and the longest member decides the padding: MiniLM on 300 corpus descriptions took 5.4 CPU s at 4,
# 6.3 at 16, 10.4 at 64; on 300 body passages 6.2 / 8.2 / 11.4 (benchmarks/passage_dense_cost.py --profile); a cold
# build of the 683 corpus skills 3-10% less CPU at 4 than at 16 (passage_dense_cost.py).
BATCH_SIZE = 4
# Files of a model folder that do not change its vectors: documentation, and other runtimes' copies of the
# weights, which sentence-transformers does not read when it loads the folder with torch.
_SKIP_DIRS = frozenset({"onnx", "openvino"})


_MANIFEST_FIELDS: dict[str, type] = {"model_id": str, "dim": int, "max_seq_length": int, "inputs": list,
                                     "pad_id": int, "pad_type_id": int, "files": dict}


def default_cache_dir() -> Path:
    """The folder exports are cached in: ``$XDG_CACHE_HOME/skill-router/onnx``, else ``~/.cache/skill-router/onnx``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "skill-router" / "onnx"


def model_identity(model: str | None) -> tuple[str, Path]:
    """Return ``(model_id, folder)`` for a model as :class:`indexes.encoder.Encoder` takes it.

    ``model_id`` is what the torch encoder reports, so vectors cached under it are shared by both encoders.
    Only the bundled model (None) and local model folders can be exported: a hub name would have to be found
    in a download cache, and nothing here downloads.
    """
    if model is None:
        try:
            return DEFAULT_MODEL_ID, Path(_default_model_path())
        except ModelLoadError as exc:
            raise OnnxUnavailable(str(exc)) from None
    folder = Path(model).expanduser()
    if not folder.is_dir():
        raise OnnxUnavailable(
            f"model {model!r} is not a local folder: the onnxruntime encoder is built from a local "
            "sentence-transformers model folder (or the bundled default)"
        )
    return model, folder.resolve()


def _model_files(folder: Path) -> list[tuple[str, Path]]:
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
        for name in files:
            if not name.startswith(".") and not name.lower().endswith(".md"):
                path = Path(root) / name
                found.append((path.relative_to(folder).as_posix(), path))
    return sorted(found)


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def model_hash(folder: Path, *, cache_dir: Path | None = None) -> str:
    """Content hash of a model folder: SHA-256 over the path, size and SHA-256 of each weight and config file.

    Hashing the weights costs about 50 ms per 90 MB, so with a ``cache_dir`` the result is remembered in
    ``<cache_dir>/sources.json`` with each file's size and mtime and reused while they are unchanged.
    """
    files = _model_files(folder)
    if not files:
        raise OnnxUnavailable(f"model folder '{folder}' holds no files: give a sentence-transformers model folder")
    stamps = [[rel, path.stat().st_size, path.stat().st_mtime_ns] for rel, path in files]
    memo: dict[str, Any] = {}
    if cache_dir is not None:
        try:
            memo = json.loads((Path(cache_dir) / SOURCES).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            memo = {}
        memo = memo if isinstance(memo, dict) else {}
        known = memo.get(str(folder))
        if isinstance(known, dict) and known.get("files") == stamps and isinstance(known.get("hash"), str):
            return known["hash"]
    digest = hashlib.sha256()
    for (rel, path), (_, size, _) in zip(files, stamps):
        digest.update(f"{rel}\0{size}\0{_sha256(path)}\n".encode("utf-8", "surrogateescape"))
    value = digest.hexdigest()
    if cache_dir is not None:
        memo[str(folder)] = {"files": stamps, "hash": value}
        try:
            _write_json(Path(cache_dir) / SOURCES, memo)
        except OSError:
            pass  # a read-only cache only costs hashing again next time
    return value


def export_dir(model: str | None = None, *, cache_dir: Path | None = None) -> Path:
    """The folder the export of ``model`` lives in (or would): ``<cache_dir>/<model hash>``."""
    cache_dir = default_cache_dir() if cache_dir is None else Path(cache_dir)
    _, folder = model_identity(model)
    return cache_dir / model_hash(folder, cache_dir=cache_dir)


def _write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def _runtime() -> tuple[Any, Any]:
    """Import onnxruntime and tokenizers, or say which one is missing."""
    try:
        import onnxruntime
        import tokenizers
    except ImportError as exc:
        raise OnnxUnavailable(f"{exc.name or 'onnxruntime'} is not installed: pip install onnxruntime tokenizers") \
            from None
    return onnxruntime, tokenizers


def read_manifest(folder: Path) -> dict[str, Any]:
    """Read and check an export's manifest; OnnxUnavailable names the folder, the problem and the fix."""
    path = Path(folder) / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise OnnxUnavailable(f"no ONNX export in '{folder}': export the model first") from None
    except (OSError, ValueError) as exc:
        raise OnnxUnavailable(f"ONNX export manifest '{path}' is corrupt ({exc}): delete '{folder}' to re-export") \
            from None
    if not isinstance(manifest, dict) or manifest.get("format_version") != EXPORT_FORMAT:
        version = manifest.get("format_version") if isinstance(manifest, dict) else None
        raise OnnxUnavailable(
            f"ONNX export '{folder}' has format version {version!r}, this code reads {EXPORT_FORMAT}: "
            f"delete '{folder}' to re-export"
        )
    check = manifest.get("check")
    if not isinstance(check, dict) or check.get("passed") is not True:
        reason = check.get("reason") if isinstance(check, dict) else "no check recorded"
        raise OnnxUnavailable(f"the ONNX export of {manifest.get('model_id')!r} failed its check ({reason})")
    for key, kind in _MANIFEST_FIELDS.items():
        if not isinstance(manifest.get(key), kind) or isinstance(manifest.get(key), bool):
            raise OnnxUnavailable(
                f"ONNX export manifest '{path}' lacks a valid {key!r}: delete '{folder}' to re-export"
            )
    return manifest


def _check_files(folder: Path, manifest: dict[str, Any]) -> None:
    """Detect a truncated or altered export: sizes always, SHA-256 when a file's mtime is not the recorded one."""
    files = manifest.get("files")
    for name in (MODEL_FILE, TOKENIZER_FILE):
        _check_file(folder, name, files.get(name) if isinstance(files, dict) else None)


def _check_file(folder: Path, name: str, record: Any) -> None:
    path = folder / name
    if not isinstance(record, dict):
        raise OnnxUnavailable(
            f"ONNX export manifest in '{folder}' does not describe {name}: delete the folder to re-export"
        )
    try:
        stat = path.stat()
    except OSError:
        raise OnnxUnavailable(f"ONNX export file '{path}' is missing: delete '{folder}' to re-export") from None
    if stat.st_size != record.get("bytes"):
        raise OnnxUnavailable(
            f"ONNX export file '{path}' has {stat.st_size} bytes, {record.get('bytes')} were written: "
            f"delete '{folder}' to re-export"
        )
    if stat.st_mtime_ns != record.get("mtime_ns") and _sha256(path) != record.get("sha256"):
        raise OnnxUnavailable(f"ONNX export file '{path}' was altered since export: delete '{folder}' to re-export")


def model_file(folder: Path, manifest: dict[str, Any]) -> Path:
    """The graph a session loads: the export's external-weights copy when the manifest records one and its
    files pass the size/hash check (see the module docstring), else ``model.onnx``."""
    external = manifest.get("external")
    files = external.get("files") if isinstance(external, dict) else None
    if not isinstance(files, dict):
        return Path(folder) / MODEL_FILE
    try:
        for name in (EXTERNAL_MODEL_FILE, EXTERNAL_DATA_FILE):
            _check_file(Path(folder), name, files.get(name))
    except OnnxUnavailable:  # a damaged copy costs time, not correctness: model.onnx holds the same model
        return Path(folder) / MODEL_FILE
    return Path(folder) / EXTERNAL_MODEL_FILE


def int8_file(folder: Path, manifest: dict[str, Any]) -> Path | None:
    """The export's int8 request graph when the manifest records one and it passes its size/hash check, else None
    (requests are then embedded by the float graph: a damaged copy costs time, not correctness)."""
    record = manifest.get("int8")
    files = record.get("files") if isinstance(record, dict) and record.get("passed") is True else None
    if not isinstance(files, dict):
        return None
    try:
        for name in (INT8_MODEL_FILE, INT8_DATA_FILE):
            _check_file(Path(folder), name, files.get(name))
    except OnnxUnavailable:
        return None
    return Path(folder) / INT8_MODEL_FILE


def cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class OnnxEncoder:
    """Turn texts into L2-normalised float32 sentence embeddings with an exported model and onnxruntime.

    The same interface as :class:`indexes.encoder.Encoder` (``model_id``, ``dim``, ``encode``,
    ``encoded_count``) and the same vectors within :data:`TOLERANCE`. Build it with :meth:`load` (or
    :func:`find_onnx_encoder`); ``__init__`` takes parts that are already checked.

    Threads: a bulk call runs its batches on one worker per core, all sharing that session's weights, so batches
    of length-sorted texts scale across cores without the per-operator synchronisation of a multi-threaded
    session. ``threads`` is the session's intra-op thread count, what one request's run may use: 1 (the default)
    runs it on the calling thread alone, what a server answering requests on every core wants; more lets the
    operators of one request's run use that many threads, which never spin while they wait (a spinning pool
    took 54.6 ms a request against 21.4 on a busy machine). The vectors are the same to the last bit either way.

    Requests: :meth:`encode_requests` runs the export's int8 graph (:func:`int8_file`) when the encoder was loaded
    with it, in about 55% of the float graph's time; :meth:`encode` (a library's texts) always runs the float
    graph, whose session is then opened on its first call, so a process that only routes never loads it.
    """

    def __init__(self, folder: Path, manifest: dict[str, Any], tokenizer: Any, *, model_id: str | None = None,
                 threads: int = 1) -> None:
        self.folder = Path(folder)
        self.model_id: str = model_id if model_id is not None else str(manifest["model_id"])
        self.dim: int = int(manifest["dim"])
        self.max_seq_length: int = int(manifest["max_seq_length"])
        self.encoded_count = 0
        self._manifest = manifest
        self._inputs: tuple[str, ...] = tuple(manifest["inputs"])
        self._pad_id = int(manifest["pad_id"])
        self._pad_type_id = int(manifest["pad_type_id"])
        self._tokenizer = tokenizer
        self._session: Any = None
        self._bulk_session: Any = None
        self._request_session: Any = None
        self._request_bulk: Any = None
        self._request_path: Path | None = None
        self._opening = threading.Lock()
        self._model_path = self.folder / MODEL_FILE
        self._workers = cores()
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads must be a positive integer, got {threads!r}")
        #: The session's intra-op threads (see the class docstring).
        self.threads = threads
        #: The int8 request session's (:meth:`load`).
        self.int8_threads = threads
        # Kept, not made per call (threads start on first use): a server encodes small batches many times a second.
        self._pool = ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix="onnx-encode")

    def __repr__(self) -> str:
        return f"OnnxEncoder(model_id={self.model_id!r}, folder='{self.folder}')"

    def model_path(self) -> Path:
        """The graph file a library's texts are embedded with (:func:`model_file`)."""
        return self._model_path

    def request_path(self) -> Path:
        """The graph file requests are embedded with: the int8 copy when loaded with it, else :meth:`model_path`."""
        return self._model_path if self._request_path is None else self._request_path

    @property
    def int8_requests(self) -> bool:
        """True when :meth:`encode_requests` runs the int8 graph."""
        return self._request_path is not None

    @classmethod
    def load(cls, folder: Path, *, model_id: str | None = None, threads: int = 1, int8: bool = True,
             int8_threads: int | None = None) -> Self:
        """Open an export written by :func:`indexes.onnx_export.export_onnx`.

        Checks the manifest (format version, passed check) and the files (size, and SHA-256 when a file's mtime
        changed), then creates the session with ``threads`` intra-op threads (see the class docstring). With
        ``int8`` and an int8 copy in the export, requests are embedded by that copy, whose session is the one
        made now (the float graph's on the first :meth:`encode`), with ``int8_threads`` intra-op threads (None:
        ``threads``). Raises OnnxUnavailable naming the reason and the fix.
        """
        _, tokenizers = _runtime()
        folder = Path(folder)
        manifest = read_manifest(folder)
        _check_files(folder, manifest)
        try:
            tokenizer = tokenizers.Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        except Exception as exc:  # the Rust tokenizer raises a bare Exception for a malformed file
            reason = " ".join(str(exc).split())
            raise OnnxUnavailable(
                f"ONNX export tokenizer in '{folder}' cannot be read ({reason}): delete the folder to re-export"
            ) from None
        # Batches are padded here, to the longest member of each length-sorted batch.
        tokenizer.no_padding()
        encoder = cls(folder, manifest, tokenizer, model_id=model_id, threads=threads)
        quantized = int8_file(folder, manifest) if int8 else None
        if quantized is None:
            encoder._open(model_file(folder, manifest))
        else:
            encoder._model_path = model_file(folder, manifest)
            count = threads if int8_threads is None else int8_threads
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ValueError(f"int8_threads must be a positive integer, got {count!r}")
            encoder._request_session = encoder._new_session(quantized, count)
            encoder._request_path, encoder.int8_threads = quantized, count
        return encoder

    def _open(self, path: Path | None = None) -> None:
        """Create the float session over ``path`` (default ``model.onnx``)."""
        path = self.folder / MODEL_FILE if path is None else path
        self._model_path = path
        self._session = self._new_session(path, self.threads)
        self._bulk_session = None

    def _library(self) -> Any:
        """The float graph's session, opened on first use when requests have a session of their own."""
        if self._session is None:
            with self._opening:
                if self._session is None:
                    self._session = self._new_session(self._model_path, self.threads)
        return self._session

    def _bulk(self) -> Any:
        """The session a call of more than :data:`BATCH_SIZE` texts (a build) runs its batches on, one a worker
        (:meth:`encode`): this encoder's own when it has one intra-op thread, else a one-thread session over the
        same graph, opened on the first such call. Batches on workers that each run a multi-threaded session put
        twice the threads on the cores (17% more CPU for 300 skill texts on two cores, benchmarks/README.md,
        "Speed"); requests keep their threads."""
        if self.threads == 1:
            return self._library()
        if self._bulk_session is None:
            with self._opening:
                if self._bulk_session is None:
                    self._bulk_session = self._new_session(self._model_path, 1)
        return self._bulk_session

    def _new_session(self, path: Path, threads: int) -> Any:
        onnxruntime, _ = _runtime()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        if threads > 1:  # threads that wait sleep: a spinning pool holds the cores other requests need
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3  # errors only: a command-line tool's stderr is for its own notes
        # No arena and no planned pattern: each run's activations are allocated and freed, so one batch of long
        # texts (16 x 256 tokens: ~150 MB of attention scores) is not kept by the process for good. The same
        # kernels run: the vectors are the same to the last bit, and short requests are no slower.
        options.enable_cpu_mem_arena = False
        options.enable_mem_pattern = False
        try:
            session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types for unreadable models
            reason = " ".join(str(exc).split())
            raise OnnxUnavailable(f"onnxruntime cannot load '{path}' ({reason}): "
                                  f"delete '{self.folder}' to re-export") from None
        return session

    def encode(self, texts: Sequence[str], *, batch_size: int | None = None,
               progress: bool | Callable[[int], None] = False) -> np.ndarray:
        """Embed ``texts``; return float32 unit vectors of shape (len(texts), dim) in input order.

        Texts are tokenized together, sorted by token count and run in batches of ``batch_size`` padded to
        their longest member, so little work is spent on padding; batches run on one worker thread per core.
        ``batch_size`` None: :data:`BATCH_SIZE`, smaller than sentence-transformers' usual 64 on purpose (see there).
        ``progress`` True shows a bar (tqdm, if installed); a callable is called with the number of texts each
        finished batch embedded (the caller shows its own progress).
        """
        # a build's many batches on one-thread sessions, a request's few on the request session (:meth:`_bulk`)
        return self._encode(texts, lambda n: self._bulk() if n > BATCH_SIZE else self._library(), batch_size,
                            progress)

    def encode_requests(self, texts: Sequence[str]) -> np.ndarray:
        """Embed requests (what is routed, never what is indexed): by the int8 graph when this encoder was loaded
        with one (:attr:`int8_requests`), else exactly as :meth:`encode`. The vectors lie within
        :data:`INT8_MIN_COSINE` of :meth:`encode`'s on the export's check texts (0.97 or more on every dev
        request measured). Each request runs alone: the int8 graph quantizes a run's activations with one scale
        for the whole batch, so a request batched with others (a server's concurrent requests) would get another
        vector than alone."""
        if self._request_session is None:
            return self.encode(texts)
        return self._encode(texts, self._requests, 1, False)

    def _requests(self, count: int) -> Any:
        """The int8 session ``count`` requests run on: the request session, or for more than :data:`BATCH_SIZE`
        (an evaluation's thousands) a one-thread session over the same graph, as :meth:`_bulk`."""
        if count <= BATCH_SIZE or self.int8_threads == 1:
            return self._request_session
        if self._request_bulk is None:
            with self._opening:
                if self._request_bulk is None:
                    assert self._request_path is not None
                    self._request_bulk = self._new_session(self._request_path, 1)
        return self._request_bulk

    def _encode(self, texts: Sequence[str], session_for: Callable[[int], Any], batch_size: int | None,
                progress: bool | Callable[[int], None]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("encode takes a sequence of texts, got one string: wrap it in a list")
        batch_size = BATCH_SIZE if batch_size is None else batch_size
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(texts)
        order = np.argsort(np.array([len(e.ids) for e in encodings]), kind="stable")
        # A few texts (a server's batch of requests) are split so that every core runs one part: one run of 14
        # short requests kept one core busy and left the other idle.
        batch_size = min(batch_size, -(-len(texts) // self._workers))
        batches = [order[start : start + batch_size] for start in range(0, len(texts), batch_size)]

        session = session_for(len(texts))

        def run(rows: np.ndarray) -> np.ndarray:
            return session.run(None, self._feed([encodings[i] for i in rows]))[0]

        if len(batches) == 1 or self._workers == 1:
            vectors: Iterator[np.ndarray] = map(run, batches)
            for rows, batch_vectors in zip(batches, _progress(vectors, progress, len(batches), batch_size)):
                out[rows] = batch_vectors
                if callable(progress):
                    progress(len(rows))
        else:
            # onnxruntime releases the GIL while it runs, and one session serves concurrent runs.
            vectors = self._pool.map(run, batches)
            for rows, batch_vectors in zip(batches, _progress(vectors, progress, len(batches), batch_size)):
                out[rows] = batch_vectors
                if callable(progress):
                    progress(len(rows))
        self.encoded_count += len(texts)
        return out

    def _feed(self, batch: list[Any]) -> dict[str, np.ndarray]:
        width = max(len(e.ids) for e in batch)
        ids = np.full((len(batch), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        types = np.full((len(batch), width), self._pad_type_id, dtype=np.int64)
        for row, encoding in enumerate(batch):
            n = len(encoding.ids)
            ids[row, :n] = encoding.ids
            mask[row, :n] = 1
            types[row, :n] = encoding.type_ids
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        return {name: feed[name] for name in self._inputs}


def _progress(batches: Iterator[np.ndarray], enabled: bool | Callable[[int], None], total: int,
              batch_size: int) -> Iterator[np.ndarray]:
    if not enabled or callable(enabled):
        return batches
    try:
        from tqdm import tqdm
    except ImportError:
        return batches
    return tqdm(batches, total=total, desc=f"embedding ({batch_size} texts a batch)", unit="batch")


def find_onnx_encoder(model: str | None = None, *, cache_dir: Path | None = None,
                      threads: int = 1, int8: bool = True, int8_threads: int | None = None) -> OnnxEncoder | None:
    """Return a ready :class:`OnnxEncoder` for ``model`` from the cache, or None when it was never exported.

    Cheap: no torch import; hashes the model folder only when its files changed since last seen. Raises
    OnnxUnavailable when the runtime is not installed, the model is not a local folder, or the export is corrupt
    or failed its check (the message says why, for a one-line note before falling back to torch). ``threads``:
    the session's intra-op threads (:class:`OnnxEncoder`); ``int8``: requests by the export's int8 copy when it
    has one, on ``int8_threads`` threads (:meth:`OnnxEncoder.load`).
    """
    _runtime()
    model_id, _ = model_identity(model)
    folder = export_dir(model, cache_dir=cache_dir)
    if not (folder / MANIFEST).exists():
        return None
    return OnnxEncoder.load(folder, model_id=model_id, threads=threads, int8=int8, int8_threads=int8_threads)
