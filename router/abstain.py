"""Saying "no skill fits": the default decision of the surfaces in front of an agent.

The Claude Code hook, MCP ``search_skills`` and ``/v1/route`` with ``"abstain": true`` give nothing for a request
that no skill serves ("When did the Berlin Wall fall?", "thanks!", "72°F in celsius?" in a library without a
conversion skill) instead of five guesses. The catalogue surfaces (``route``, ``prompt``, the adapters) keep their
behaviour: they abstain only on the configured ``threshold``.

The rule compares two cosines of the request's embedding:

- ``best``: the routing confidence, the request's best cosine with any skill's description or example
  (:func:`router.ranking.confidence`);
- ``everyday``: its best cosine with :data:`EVERYDAY`, a fixed list of requests that no skill library serves
  (greetings, thanks, trivia, everyday advice, arithmetic, words).

A request fits no skill when ``best < FLOOR`` (it is close to nothing in the library), or when it is closer to an
everyday request than to any skill by more than ``MARGIN``. Comparing with the library's own best cosine keeps a
request a skill serves: "72°F in celsius?" is dropped over the corpora (no skill converts units) and kept over the
bundled library, whose ``unit-conversion`` description is closer to it than any everyday request is. A request
that names a skill is never dropped. ``FLOOR`` and ``MARGIN`` were chosen on the dev requests of
``benchmarks/data`` (``benchmarks/users.py``), with the bundled all-MiniLM-L6-v2; another model may need others.

The everyday vectors are embedded once per model and kept under the user cache folder
(``$XDG_CACHE_HOME/skill-router/everyday/``), so a one-shot route does not embed them again; a cache that cannot be
written is only a slower first route.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Sequence

import numpy as np

FLOOR = 0.15
MARGIN = 0.05

EVERYDAY: tuple[str, ...] = (
    "hello", "hey, how are you?", "hi again", "good evening!", "thank you so much", "great, thanks", "cool, got it",
    "never mind that", "yes please", "no thanks", "that's all for today, bye", "who are you?", "what can you do?",
    "are you a real person?", "how old is the universe", "who was the first person to walk on the moon",
    "when did world war two end", "who invented the light bulb", "what is the largest ocean on earth",
    "what is the population of brazil", "which planet is closest to the sun", "how many bones are in the human body",
    "why is the sky blue", "what language do they speak in switzerland", "who is the president of france",
    "how tall is the eiffel tower", "what is the longest river in africa", "who won the super bowl last year",
    "how many players are on a basketball team", "who sang bohemian rhapsody", "what's a good movie to watch tonight",
    "recommend me a book about history", "what should I make for lunch", "how do I make pancakes",
    "how much water should I drink a day", "what's a good gift for my sister",
    "ideas for a birthday party for a 7 year old", "where should I go on vacation in spring",
    "how do I get rid of hiccups", "how do I fall asleep faster", "tell me something interesting",
    "tell me a funny story", "what's your favourite colour", "what's the meaning of life", "do you like music",
    "how many minutes are in a day", "what is 15 times 23", "what's the square root of 144",
    "what day of the week is christmas this year", "how do you spell necessary", "what's the opposite of ancient",
    "translate good night into french", "what's a synonym for happy", "how do you pronounce quinoa",
)

Encode = Callable[[Sequence[str]], np.ndarray]
_MEMO: dict[str, np.ndarray] = {}


def fits_no_skill(best: float, everyday: float, *, floor: float = FLOOR, margin: float = MARGIN) -> bool:
    """The rule of the module docstring for one request."""
    return best < floor or everyday - best > margin


def everyday_cosines(vectors: np.ndarray, model_id: str, encode: Encode) -> np.ndarray:
    """Each request's best cosine with the :data:`EVERYDAY` requests (``vectors``: unit rows, requests x dim)."""
    if not len(vectors):
        return np.zeros(0, dtype=np.float32)
    everyday = everyday_vectors(model_id, encode, int(vectors.shape[1]))
    return np.asarray(vectors @ everyday.T).max(axis=1)


def everyday_vectors(model_id: str, encode: Encode, dim: int) -> np.ndarray:
    """The :data:`EVERYDAY` embeddings of ``model_id``: from memory, else the cache file, else ``encode`` (then
    cached in both)."""
    key = hashlib.sha256("\n".join((model_id, *EVERYDAY)).encode("utf-8", "surrogatepass")).hexdigest()[:24]
    vectors = _MEMO.get(key)
    if vectors is not None and vectors.shape == (len(EVERYDAY), dim):
        return vectors
    path = os.path.join(cache_folder(), f"{key}.npy")
    vectors = _read(path, dim)
    if vectors is None:
        vectors = np.asarray(encode(list(EVERYDAY)), dtype=np.float32)
        if vectors.shape != (len(EVERYDAY), dim):
            raise ValueError(f"the encoder returned {vectors.shape} vectors for {len(EVERYDAY)} texts of dimension "
                             f"{dim}: check the model")
        _write(path, vectors)
    _MEMO[key] = vectors
    return vectors


def cache_folder() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "skill-router", "everyday")


def _read(path: str, dim: int) -> np.ndarray | None:
    from router.files import open_regular

    try:
        with open_regular(path) as handle:
            vectors = np.load(handle, allow_pickle=False)
    except (OSError, ValueError):
        return None
    if vectors.shape != (len(EVERYDAY), dim) or vectors.dtype != np.float32 or not np.isfinite(vectors).all():
        return None  # a file from elsewhere or a cut write: embed again
    return vectors


def _write(path: str, vectors: np.ndarray) -> None:
    tmp = ""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        handle, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".everyday.", suffix=".npy")
        with os.fdopen(handle, "wb") as out:
            np.save(out, vectors, allow_pickle=False)
        os.replace(tmp, path)
        tmp = ""
    except OSError:
        pass  # a read-only or full cache folder: the vectors stay in memory for this process
    finally:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)
