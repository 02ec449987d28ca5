"""The three signals a router fuses, computed as one score per skill.

- ``bm25``: lexical BM25 over the index text (``indexes.bm25``).
- ``dense``: cosine of the request with the index text's embedding (``indexes.dense``).
- ``examples``: cosine of the request with the nearest example request of each skill. A skill's own index text
  counts as one of its examples, so a skill without examples keeps its description's score and is not pushed
  down by skills that have many.

Scores are arrays in skill order; fusion and ranking happen in :mod:`router.routing`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from router.skill import Skill

if TYPE_CHECKING:
    from indexes import BM25Index, DenseIndex


@dataclass
class Signals:
    """Built indexes for one library, and how to encode a request."""

    ids: tuple[str, ...]
    bm25: "BM25Index"
    dense: "DenseIndex"
    example_vectors: np.ndarray  # (m, d): examples of all skills
    example_owner: np.ndarray  # (m,): the skill position each example belongs to
    encode: Callable[[list[str]], np.ndarray]

    @classmethod
    def build(cls, skills: Sequence[Skill], texts: Sequence[str], embed: Callable[[list[str]], np.ndarray],
              encode: Callable[[list[str]], np.ndarray], *, approximate_above: int | None = None,
              bm25: "BM25Index | None" = None, dense: "DenseIndex | None" = None) -> "Signals":
        """Index ``texts`` (one per skill, in order) and the skills' examples. ``embed`` may serve cached
        vectors; ``encode`` always computes (used for requests). ``bm25`` and ``dense`` are indexes already built
        from the same texts (loaded from an index folder); they are built here when None."""
        from indexes import BM25Index, DenseIndex

        ids = tuple(s.id for s in skills)
        if bm25 is None:
            bm25 = BM25Index.from_texts(ids, texts)
        if dense is None:
            dense = DenseIndex.from_vectors(ids, embed(list(texts)), approximate_above=approximate_above)
        examples = [(i, e) for i, s in enumerate(skills) for e in s.examples if e.strip()]
        if examples:
            example_vectors = embed([e for _, e in examples])
            owner = np.array([i for i, _ in examples], dtype=np.int64)
        else:
            example_vectors = np.zeros((0, dense.dim), dtype=np.float32)
            owner = np.zeros(0, dtype=np.int64)
        return cls(ids, bm25, dense, example_vectors, owner, encode)

    def scores(self, text: str) -> dict[str, np.ndarray]:
        """One float64 score per skill for each signal."""
        lexical = self.bm25.scores(text)
        query = self.encode([text])[0]
        dense = self.dense.scores(query)
        examples = example_scores(query[None, :], self.example_vectors, self.example_owner, dense[None, :])[0]
        return {"bm25": lexical, "dense": dense, "examples": examples}

    @property
    def has_examples(self) -> bool:
        return len(self.example_owner) > 0


EXAMPLE_BLOCK = 512


def example_scores(queries: np.ndarray, examples: np.ndarray, owners: np.ndarray, base: np.ndarray) -> np.ndarray:
    """``base`` (requests x skills) raised, skill by skill, to the best cosine of each request with that skill's
    examples: the ``examples`` signal for many requests at once, in blocks of requests to bound memory."""
    out = base.copy()
    if not len(owners) or not len(queries):
        return out
    sort = np.argsort(owners, kind="stable")
    sorted_owners = owners[sort]
    starts = np.flatnonzero(np.r_[True, sorted_owners[1:] != sorted_owners[:-1]])
    columns = sorted_owners[starts]
    vectors = np.ascontiguousarray(examples[sort], dtype=np.float32)
    for low in range(0, len(queries), EXAMPLE_BLOCK):
        block = slice(low, low + EXAMPLE_BLOCK)
        sims = (queries[block] @ vectors.T).astype(np.float64)
        out[block, columns] = np.maximum(out[block, columns], np.maximum.reduceat(sims, starts, axis=1))
    return out
