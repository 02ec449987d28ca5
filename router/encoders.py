"""Which encoder embeds a library's texts and its requests.

A router answers once per prompt, often from a fresh process, so the request is embedded by the onnxruntime
export of the model (:mod:`indexes.onnx_encoder`) whenever one is cached and passed its check: a process that
routes from a current index then imports neither torch nor sentence-transformers, and starts in well under a
second. The export is made from the sentence-transformers model itself (:mod:`indexes.onnx_export`) the first
time a build has to load that model anyway, so the next process is fast; when it cannot be made (no
onnxruntime, a model that does not export, an export that fails its check against sentence-transformers) the
sentence-transformers model serves as before, with one note saying why. ``SKILL_ROUTER_ONNX=0`` in the
environment turns the onnxruntime path off (to compare the two, or to rule it out).

Threads: a router in a user's process (a one-shot ``skill-router route``, the library) embeds one request at a
time, and its onnxruntime session runs that request's operators on :data:`REQUEST_THREADS` threads that sleep
while they wait (``SKILL_ROUTER_ONNX_THREADS`` in the environment sets another count; 1 runs each request on the
calling thread alone). ``skill-router serve`` and the hook's encoder process ask for one: the server answers
requests on every core at once, and the hook's encoder embeds while the library is read on the other core. The
vectors are the same to the last bit with any count.

Requests and texts: a library's texts (what is indexed and cached) are embedded by the export's float graph, and
requests by its int8 copy when the export has one (:func:`indexes.onnx_export.add_int8_copy`), which takes about
55% of the time and changes no dev set's accuracy measurably (benchmarks/README.md, "Speed"); its session runs a
request on :data:`INT8_THREADS` thread unless ``SKILL_ROUTER_ONNX_THREADS`` or the caller says otherwise.
``SKILL_ROUTER_INT8=0`` embeds requests by the float graph too.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Literal, get_args

from router.errors import ConfigError, ModelError

if TYPE_CHECKING:
    from indexes.base import Encoder

ENV_SWITCH = "SKILL_ROUTER_ONNX"
THREADS_ENV = "SKILL_ROUTER_ONNX_THREADS"
INT8_ENV = "SKILL_ROUTER_INT8"
#: Intra-op threads of a router's onnxruntime session unless ``SKILL_ROUTER_ONNX_THREADS`` says otherwise (at most
#: one a core; see the module docstring and benchmarks/README.md, "Speed").
REQUEST_THREADS = 2
#: The same for the int8 request session: a second thread gave it no lower latency for twice the CPU (6.86 against
#: 7.18 ms p50 at 683 skills, benchmarks/README.md, "Speed").
INT8_THREADS = 1
#: How requests are embedded: ``auto`` (the ONNX export where it works), ``onnx``, ``torch``.
EncoderKind = Literal["auto", "onnx", "torch"]
ENCODER_KINDS: tuple[EncoderKind, ...] = get_args(EncoderKind)


def onnx_enabled() -> bool:
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "false", "no", "off")


def int8_enabled() -> bool:
    """False when ``SKILL_ROUTER_INT8`` turns the int8 request graph off (see the module docstring)."""
    return os.environ.get(INT8_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def request_threads(default: int = REQUEST_THREADS) -> int:
    """The intra-op threads of a router's onnxruntime session: ``SKILL_ROUTER_ONNX_THREADS`` when set (a whole
    number >= 1, else :class:`ConfigError` naming it), else ``default``; at most one a core."""
    from indexes.onnx_encoder import cores

    text = os.environ.get(THREADS_ENV, "").strip()
    if not text:
        return min(default, cores())
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise ConfigError(f"{THREADS_ENV}={text!r} is not a whole number >= 1: set it to 1 (one thread a request) "
                          f"or more, or unset it for {REQUEST_THREADS}")
    return min(count, cores())


def encoder_kind(text: str) -> EncoderKind:
    """``text`` as an :data:`EncoderKind` (``--encoder``); :class:`ConfigError` naming the choices otherwise."""
    for kind in ENCODER_KINDS:
        if text == kind:
            return kind
    raise ConfigError(f"unknown encoder {text!r}: choose one of {', '.join(ENCODER_KINDS)}")


def choose(model: str | None, notes: list[str], *, kind: EncoderKind = "auto", export: bool = False,
           threads: int | None = None) -> Encoder:
    """The one encoder choice for ``model`` (:class:`indexes.base.Encoder`).

    ``kind`` ``torch``: the sentence-transformers model. Otherwise the model's checked ONNX export: with
    ``export`` made now when the cache has none, in a process of its own (:func:`export_in_child`: a server, whose
    start-up may take the time and which then never holds torch), without it only a cached one (a command or a
    hook must not export before its first answer). ``onnx`` raises
    :class:`ConfigError` when no export can be had; ``auto`` falls back to the sentence-transformers model
    (loaded on its first use) with a note in ``notes`` saying why. ``threads``: the ONNX session's intra-op
    threads (None: :func:`request_threads`; see the module docstring).
    """
    from indexes import Encoder as SentenceEncoder
    from indexes import ModelLoadError, OnnxUnavailable

    if kind not in ENCODER_KINDS:
        raise ConfigError(f"unknown encoder {kind!r}: choose one of {', '.join(ENCODER_KINDS)}")
    int8_threads = threads
    if threads is None and kind != "torch":
        threads, int8_threads = request_threads(), request_threads(INT8_THREADS)
    threads = 1 if threads is None else threads
    if kind != "torch" and export and not onnx_enabled():
        notes.append(f"the ONNX path is turned off ({ENV_SWITCH}=0)")
    if kind != "torch":
        try:
            from indexes.onnx_encoder import find_onnx_encoder

            found = find_onnx_encoder(model, threads=threads, int8=int8_enabled(), int8_threads=int8_threads) \
                if onnx_enabled() else None
            if export and onnx_enabled() and found is None and export_in_child(model, notes):
                # a server: a missing export made in a process of its own, which alone imports torch
                found = find_onnx_encoder(model, threads=threads, int8=int8_enabled(), int8_threads=int8_threads)
            if export and found is not None and (lacks_int8(found) or lacks_external_copy(found)):
                # an export made before its weights file or int8 copy existed gets them now (loaded once more
                # only then: a second session left 17 MB more resident)
                from indexes.onnx_export import ensure_onnx_encoder

                found = ensure_onnx_encoder(model, threads=threads, int8=int8_enabled(), int8_threads=int8_threads)
        except OnnxUnavailable as exc:
            notes.append(f"embedding with sentence-transformers: {exc}")
            found = None
        except ModelLoadError as exc:
            raise ModelError(str(exc)) from None
        if found is not None:
            return found
        if kind == "onnx":
            raise ConfigError(f"--encoder onnx: {notes[-1] if notes else 'no ONNX export of the model is cached'}")
    encoder = SentenceEncoder(model)
    try:
        _ = encoder.dim  # known without loading for the bundled model; loads any other one now
    except ModelLoadError as exc:
        raise ModelError(str(exc)) from None
    return encoder


#: Seconds an export in a process of its own may take (loading the model, exporting, checking both graphs: about a
#: minute on two busy cores) before the server goes on with sentence-transformers.
EXPORT_TIMEOUT_S = 900.0


def export_in_child(model: str | None, notes: list[str], *, timeout_s: float = EXPORT_TIMEOUT_S) -> bool:
    """Export ``model`` to ONNX and check it (:func:`indexes.onnx_export.ensure_onnx_encoder`, with its int8 copy
    unless ``SKILL_ROUTER_INT8`` turns it off) in a process of its own, so that a server that then only routes
    never holds torch and the model's weights: a replica that had to export in-process kept about 960 MB resident
    instead of 280 at 100,000 skills (``benchmarks/scale.py``). True when it succeeded; otherwise a note in
    ``notes`` says why, with the child's last line."""
    import subprocess
    import sys

    code = "import sys\nfrom router.encoders import export_here\nsys.exit(export_here(sys.argv[1] or None))"
    try:
        done = subprocess.run([sys.executable, "-c", code, model or ""], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        notes.append(f"embedding with sentence-transformers: the ONNX export did not finish in {timeout_s:.0f} s; "
                     "the next start tries again")
        return False
    except OSError as exc:
        notes.append(f"embedding with sentence-transformers: the ONNX export could not start ({exc})")
        return False
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        notes.append(f"embedding with sentence-transformers: the ONNX export failed "
                     f"({lines[-1].strip() if lines else f'exit {done.returncode}'})")
        return False
    return True


def export_here(model: str | None) -> int:
    """The child of :func:`export_in_child`: export and check ``model`` into the cache; 0 when it is there, 1 with
    the reason on standard error."""
    import sys

    from indexes import Encoder, ModelLoadError, OnnxUnavailable
    from indexes.onnx_export import ensure_onnx_encoder

    try:
        ensure_onnx_encoder(Encoder(model), int8=int8_enabled())
    except (OnnxUnavailable, ModelLoadError) as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


def export_for_next_time(encoder: Any, notes: list[str], *, threads: int | None = None,
                         int8_threads: int | None = None) -> Any:
    """After ``encoder`` (a sentence-transformers :class:`indexes.encoder.Encoder`) had to be loaded, export it to
    ONNX and check it, so the next process routes without torch; returns the encoder to use from now on (its
    session with ``threads`` intra-op threads, None: :func:`request_threads`; its int8 request session with
    ``int8_threads``, None: ``threads`` when given, else :data:`INT8_THREADS`)."""
    from indexes import Encoder, OnnxUnavailable

    if not isinstance(encoder, Encoder) or not onnx_enabled():
        return encoder
    try:
        from indexes.onnx_export import ensure_onnx_encoder

        if int8_threads is None:
            int8_threads = request_threads(INT8_THREADS) if threads is None else threads
        return ensure_onnx_encoder(encoder, threads=request_threads() if threads is None else threads,
                                   int8=int8_enabled(), int8_threads=int8_threads)
    except OnnxUnavailable as exc:
        notes.append(f"routing will load sentence-transformers each time: {exc}")
        return encoder


def lacks_external_copy(encoder: Any) -> bool:
    """True for an ONNX encoder loaded from an export made before its weights had a file of their own
    (:func:`indexes.onnx_export.add_external_copy`)."""
    from indexes import OnnxEncoder
    from indexes.onnx_encoder import EXTERNAL_MODEL_FILE

    return isinstance(encoder, OnnxEncoder) and encoder.model_path().name != EXTERNAL_MODEL_FILE


def lacks_int8(encoder: Any) -> bool:
    """True for an ONNX encoder whose export has no int8 request graph yet and may get one (none was made and
    failed with these library versions), while ``SKILL_ROUTER_INT8`` allows it."""
    from indexes import OnnxEncoder, OnnxUnavailable
    from indexes.onnx_encoder import read_manifest
    from indexes.onnx_export import wants_int8

    if not isinstance(encoder, OnnxEncoder) or encoder.int8_requests or not int8_enabled():
        return False
    try:
        return wants_int8(encoder.folder, read_manifest(encoder.folder))
    except OnnxUnavailable:
        return False


def with_int8(encoder: Any, notes: list[str]) -> Any:
    """``encoder`` (an ONNX encoder, :func:`lacks_int8`) with its export's int8 request graph made now
    (:func:`indexes.onnx_export.add_int8_copy`, a few seconds, once: a copy that fails its check is recorded and
    not made again); the encoder itself when it cannot be made, with a note saying why."""
    from indexes import OnnxEncoder, OnnxUnavailable
    from indexes.onnx_export import add_int8_copy

    try:
        if not add_int8_copy(encoder.folder):
            notes.append("requests are embedded by the float graph: its int8 copy failed its check")
            return encoder
        return OnnxEncoder.load(encoder.folder, model_id=encoder.model_id, threads=encoder.threads,
                                int8_threads=request_threads(INT8_THREADS) if encoder.threads > 1 else 1)
    except (OnnxUnavailable, ImportError, OSError, ValueError, RuntimeError) as exc:
        notes.append(f"requests are embedded by the float graph: no int8 copy ({exc})")
        return encoder
