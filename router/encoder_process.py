"""The embedding model loaded in a process of its own while this one reads the library and its index.

A prompt hook without its warm server routes in a fresh process, and two loads share its time: the model (the
onnxruntime import, the tokenizer, the session) and the library with its index (the saved library, the BM25
postings, the vectors). On a thread the model's Python parts and the library's take turns on the interpreter lock;
in a forked child each has a core. :class:`EncoderProcess` forks that child as it is made (after numpy is
imported, which both need), and embeds through two pipes: this process sends the texts, the child answers with
the float32 vectors of the one encoder choice (:func:`router.encoders.choose`), the same bytes this process would
have computed itself. The child sends the model id and the dimension from the export's manifest before it loads
the model, so that loading the index does not wait for the model, and checks there that the model has an export
(without one it would load torch, which takes longer than a prompt's budget).

Every message is a 4-byte big-endian length and a JSON value. The child's first message is ``{"model_id",
"dim"}`` (or ``{"unprepared": why}``, ``{"error": why}``); each request is the list of texts to embed (a
library's texts) or ``{"requests": [...]}`` (requests, by the encoder's request graph), each answer a header
``{"rows", "dim", "model_id", "notes"}`` (or ``{"error"}``) followed by ``rows * dim`` float32 values. The child
leaves when this process closes its end of the pipe (or dies) or on :meth:`EncoderProcess.close`. It inherits
this process's descriptors: fork it before opening any that another process waits to see closed (a pipe an answer
goes through, ``close_fds``), or after pointing the standard ones elsewhere.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

_LENGTH = struct.Struct(">I")
#: Largest header or request accepted through the pipe (a request is a few texts; a build embeds in batches).
MAX_MESSAGE_BYTES = 1 << 28


class EncoderProcessError(RuntimeError):
    """The embedding process failed or ended without an answer."""


def _read_exact(fd: int, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = os.read(fd, min(n - len(data), 1 << 20))
        if not chunk:
            raise EOFError
        data += chunk
    return bytes(data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _send(fd: int, header: bytes, payload: bytes = b"") -> None:
    _write_all(fd, _LENGTH.pack(len(header)) + header + payload)


def _receive(fd: int) -> bytes:
    (length,) = _LENGTH.unpack(_read_exact(fd, _LENGTH.size))
    if length > MAX_MESSAGE_BYTES:
        raise EncoderProcessError(f"the embedding process sent a message of {length} bytes")
    return _read_exact(fd, length)


class Unprepared(EncoderProcessError):
    """The model has no usable ONNX export: the child would have to load torch."""


def identity(model: str | None) -> tuple[str, int]:
    """(model id, dimension) of ``model``'s cached ONNX export, read from its manifest (no onnxruntime import);
    :class:`indexes.OnnxUnavailable` naming the problem when there is none or it cannot be used."""
    from indexes import OnnxUnavailable
    from indexes.onnx_encoder import MANIFEST, export_dir, model_identity, read_manifest

    model_id, _ = model_identity(model)
    folder = export_dir(model)
    if not (folder / MANIFEST).exists():
        raise OnnxUnavailable("the model's ONNX export is not made yet")
    return model_id, int(read_manifest(folder)["dim"])


def _serve(model_of: Callable[[], str | None], requests: int, answers: int, prefetch: Sequence[str]) -> None:
    """The child: say the model's identity (or why it has no export), choose the encoder, embed ``prefetch``,
    then answer each request until the pipe closes (a request for exactly ``prefetch``: at once)."""
    from indexes import OnnxUnavailable

    notes: list[str] = []
    encoder: Any = None
    failure = ""
    try:
        model = model_of()
        model_id, dim = identity(model)
        _send(answers, json.dumps({"model_id": model_id, "dim": dim}).encode("utf-8"))
    except OnnxUnavailable as exc:
        _send(answers, json.dumps({"unprepared": str(exc)}).encode("utf-8"))
        return
    except BaseException as exc:
        _send(answers, json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode("utf-8"))
        return
    ready: tuple[list[str], np.ndarray] | None = None
    try:
        from router import encoders

        encoder = encoders.choose(model, notes, threads=1)  # the library is read on the other core meanwhile
        if prefetch:
            ready = (list(prefetch), np.ascontiguousarray(_requests(encoder)(list(prefetch)), dtype=np.float32))
    except BaseException as exc:  # told to the parent with its first answer
        failure = f"{type(exc).__name__}: {exc}"
    while True:
        try:
            message = json.loads(_receive(requests).decode("utf-8"))
        except (EOFError, OSError, ValueError):
            return
        asked = isinstance(message, dict)
        texts = message.get("requests", []) if asked else message
        if failure:
            _send(answers, json.dumps({"error": failure}).encode("utf-8"))
            continue
        try:
            if asked and ready is not None and texts == ready[0]:
                vectors, ready = ready[1], None
            else:
                embed = _requests(encoder) if asked else encoder.encode
                vectors = np.ascontiguousarray(embed(list(texts)), dtype=np.float32)
        except BaseException as exc:
            _send(answers, json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode("utf-8"))
            continue
        header = {"rows": int(vectors.shape[0]), "dim": int(vectors.shape[1]), "model_id": str(encoder.model_id),
                  "notes": notes}
        _send(answers, json.dumps(header).encode("utf-8"), vectors.tobytes())


def _requests(encoder: Any) -> Callable[[list[str]], np.ndarray]:
    """How ``encoder`` embeds requests: its request graph when it has one, else as any text."""
    embed = getattr(encoder, "encode_requests", None)
    return encoder.encode if embed is None else embed


def _die_with_parent(parent: int) -> None:
    """Have the kernel kill this process when its parent ``parent`` ends (Linux; elsewhere it leaves at the end of
    the pipe, once its model is loaded): a hook's child killed at its deadline takes the model's process with it.
    A parent that ended before the kernel was asked (between the fork and here) ends this process now."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:
        os._exit(0)


class EncoderProcess:
    """An encoder (``model_id``, ``dim``, ``encode``) whose model loads and runs in a forked child from
    construction on (see the module docstring). ``model_of`` gives the model; it is called in the child, which
    first sends the model's id and dimension from its export's manifest (:func:`identity`), then loads it.
    ``close_fds``: descriptors of this process the child must not keep open (the pipe a parent reads this
    process's answer from: it waits until every holder closed it). ``prefetch``: the texts the first request
    will likely ask for (a prompt), embedded as soon as the model is loaded, so that asking costs no wait.
    Raises :class:`OSError` when it cannot fork.
    """

    def __init__(self, model_of: Callable[[], str | None], *, close_fds: Sequence[int] = (),
                 prefetch: Sequence[str] = ()) -> None:
        self._identity: tuple[str, int] | None = None
        self.encoded_count = 0
        self.notes: list[str] = []
        child_requests, self._requests = os.pipe()
        self._answers, child_answers = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 0
            try:
                for fd in (self._requests, self._answers, *close_fds):
                    os.close(fd)
                gc.disable()  # it lives for one answer or a few: its cycles are freed by its exit
                _die_with_parent(parent)
                _serve(model_of, child_requests, child_answers, list(prefetch))
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(child_requests)
        os.close(child_answers)
        self.pid = pid

    @property
    def model_id(self) -> str:
        return self.identity()[0]

    @property
    def dim(self) -> int:
        return self.identity()[1]

    def identity(self) -> tuple[str, int]:
        """(model id, dimension) of the model the child loads: the child's first message (sent before it loads
        the model). :class:`Unprepared` when the model has no usable export, :class:`EncoderProcessError` when
        the child failed."""
        if self._identity is None:
            header = self._header()
            if "unprepared" in header:
                raise Unprepared(str(header["unprepared"]))
            self._identity = (str(header["model_id"]), int(header["dim"]))
        return self._identity

    def _header(self) -> dict[str, Any]:
        if self.pid == 0:
            raise EncoderProcessError("the embedding process was closed")
        try:
            header = json.loads(_receive(self._answers).decode("utf-8"))
        except (EOFError, OSError, ValueError):
            raise EncoderProcessError("the embedding process ended without an answer") from None
        if not isinstance(header, dict):
            raise EncoderProcessError("the embedding process sent something that is not a JSON object")
        if "error" in header:
            raise EncoderProcessError(f"the embedding model failed to load or run: {header['error']}")
        return header

    def __repr__(self) -> str:
        return f"EncoderProcess(pid={self.pid})"

    def encode(self, texts: Sequence[str], *, progress: Any = False) -> np.ndarray:
        """Unit embeddings of ``texts`` (a library's) computed by the child, shape (len(texts), dim)."""
        return self._ask(texts, False)

    def encode_requests(self, texts: Sequence[str]) -> np.ndarray:
        """Unit embeddings of requests computed by the child's request graph (the int8 copy where the export has
        one, :mod:`router.encoders`), shape (len(texts), dim); the prefetched texts are answered at once."""
        return self._ask(texts, True)

    def _ask(self, texts: Sequence[str], requests: bool) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("encode takes a sequence of texts, got one string: wrap it in a list")
        texts = list(texts)
        model_id, dim = self.identity()
        if not texts:
            return np.zeros((0, dim), dtype=np.float32)
        if self.pid == 0:
            raise EncoderProcessError("the embedding process was closed")
        try:
            _send(self._requests, json.dumps({"requests": texts} if requests else texts).encode("ascii"))
        except OSError:
            raise EncoderProcessError("the embedding process ended without an answer") from None
        header = self._header()
        rows = int(header["rows"])
        if header["model_id"] != model_id or int(header["dim"]) != dim or rows != len(texts):
            raise EncoderProcessError(f"the embedding process answered {rows} vectors of {header['model_id']!r} "
                                      f"(dimension {header['dim']}) for {len(texts)} texts of {model_id!r} "
                                      f"(dimension {dim})")
        try:
            data = _read_exact(self._answers, rows * dim * 4)
        except (EOFError, OSError):
            raise EncoderProcessError("the embedding process ended without an answer") from None
        self.notes[:] = header["notes"]
        self.encoded_count += rows
        return np.frombuffer(data, dtype=np.float32).reshape(rows, dim).copy()

    def close(self, *, wait: bool = True) -> None:
        """Stop the child (at once: it holds nothing to save) and reap it; without ``wait`` it is left to whoever
        reaps this process's orphans once this process is gone (for a process about to leave: the kernel takes
        tens of milliseconds to free the child's memory on a busy machine)."""
        if self.pid == 0:
            return
        for fd in (self._requests, self._answers):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.kill(self.pid, signal.SIGKILL)
            if wait:
                os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        self.pid = 0
