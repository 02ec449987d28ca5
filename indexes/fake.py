"""A fast deterministic encoder for tests that do not measure accuracy (httpx's ``MockTransport`` is the model).

:class:`FakeEncoder` implements :class:`indexes.base.Encoder` without a model: a text's vector is the signed
feature hashing of its tokens (:func:`indexes.tokenize.tokenize`; Weinberger et al. 2009, "Feature hashing for
large scale multitask learning", ICML), normalised to unit length. The same text always gets the same vector, in
every process; texts sharing words have a positive cosine, texts sharing none a cosine near 0; a text without
tokens gets the first basis vector. It imports no torch and embeds thousands of texts per millisecond.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

import numpy as np

from indexes.tokenize import tokenize


class FakeEncoder:
    """Feature-hashing unit vectors of ``dim`` dimensions (see the module docstring); ``calls`` counts the texts
    embedded, so a test can check what was (not) embedded."""

    def __init__(self, dim: int = 64, model_id: str = "fake-hashing-encoder") -> None:
        if dim < 2:
            raise ValueError(f"dim must be at least 2, got {dim}")
        self.model_id = model_id
        self._dim = dim
        self.calls = 0
        self.loaded = True

    @property
    def dim(self) -> int:
        return self._dim

    def __repr__(self) -> str:
        return f"FakeEncoder(dim={self._dim}, model_id={self.model_id!r})"

    def encode(self, texts: Sequence[str], *, progress: bool | Callable[[int], None] = False) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("encode takes a sequence of texts, got one string: wrap it in a list")
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in tokenize(text):
                digest = hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % self._dim
                out[row, bucket] += 1.0 if digest[4] & 1 else -1.0
            norm = float(np.linalg.norm(out[row]))
            if norm == 0:
                out[row] = 0
                out[row, 0] = 1.0
            else:
                out[row] /= norm
        self.calls += len(texts)
        if callable(progress):
            progress(len(texts))
        return out
