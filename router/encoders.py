"""Which encoder embeds a library's texts and its requests.

A router answers once per prompt, often from a fresh process, so the request is embedded by the onnxruntime
export of the model (:mod:`indexes.onnx_encoder`) whenever one is cached and passed its check: a process that
routes from a current index then imports neither torch nor sentence-transformers, and starts in well under a
second. The export is made from the sentence-transformers model itself (:mod:`indexes.onnx_export`) the first
time a build has to load that model anyway, so the next process is fast; when it cannot be made (no
onnxruntime, a model that does not export, an export that fails its check against sentence-transformers) the
sentence-transformers model serves as before, with one note saying why. ``SKILL_ROUTER_ONNX=0`` in the
environment turns the onnxruntime path off (to compare the two, or to rule it out).
"""

from __future__ import annotations

import os
from typing import Any

from router.errors import ModelError

ENV_SWITCH = "SKILL_ROUTER_ONNX"


def onnx_enabled() -> bool:
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "false", "no", "off")


def choose(model: str | None, notes: list[str]) -> Any:
    """The encoder for ``model``: its cached, checked ONNX export, else the sentence-transformers model (loaded on
    its first use). A reason to skip an export that exists or was tried is added to ``notes``."""
    from indexes import Encoder, ModelLoadError, OnnxUnavailable

    try:
        from indexes.onnx_encoder import find_onnx_encoder

        found = find_onnx_encoder(model) if onnx_enabled() else None
    except OnnxUnavailable as exc:
        notes.append(f"embedding with sentence-transformers: {exc}")
        found = None
    except ModelLoadError as exc:
        raise ModelError(str(exc)) from None
    if found is not None:
        return found
    encoder = Encoder(model)
    try:
        _ = encoder.dim  # known without loading for the bundled model; loads any other one now
    except ModelLoadError as exc:
        raise ModelError(str(exc)) from None
    return encoder


def export_for_next_time(encoder: Any, notes: list[str]) -> Any:
    """After ``encoder`` (a sentence-transformers :class:`indexes.encoder.Encoder`) had to be loaded, export it to
    ONNX and check it, so the next process routes without torch; returns the encoder to use from now on."""
    from indexes import Encoder, OnnxUnavailable

    if not isinstance(encoder, Encoder) or not onnx_enabled():
        return encoder
    try:
        from indexes.onnx_export import ensure_onnx_encoder

        return ensure_onnx_encoder(encoder)
    except OnnxUnavailable as exc:
        notes.append(f"routing will load sentence-transformers each time: {exc}")
        return encoder
