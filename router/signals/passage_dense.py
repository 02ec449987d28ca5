"""``passage_dense``: cosine of the request with each skill's body head, the mean of the unit embeddings of the
first :data:`HEAD` passages of its SKILL.md body (:func:`router.passages.passages`: sections under headings, cut
into 150-word windows), each cut to its first :data:`WORDS` words; a skill without a body keeps its description's
vector, so its score is its ``dense`` score.

Why the head's mean: the body says what the skill does in the words a user's task uses ("find which commit broke
it" against a body that explains ``git bisect``), where the description is one sentence in the author's words.
The mean of the passages' cosines (``q . mean(v_1..v_k)``, one vector per skill) scores a skill by what its opening
sections say together, which measured better on the dev sets than the best passage alone (MaxP, Dai & Callan 2019)
or the mean over the whole body: late sections (licences, troubleshooting, API tables) pull a body towards every
request a little.

Why the first 16 words of each of the first 3 passages: the model's cost grows with the tokens it reads, and the
openings of a body's first sections (a heading and its first sentence) carry most of what the whole passages do.
On the dev sets (``benchmarks/passage_dense_choice.py --shapes``) the mean MRR is 86.78 without the signal, 87.53
with 4 whole passages (153,607 tokens for the 683 corpus skills) and 87.50 with 3 x 16 words (38,704 tokens, a
quarter; 3 x 20 and 3 x 24 give 87.42 and 87.35); shorter or fewer pieces (3 x 12, 4 x 12, 6 x 8, 2 x 24-48, one
whole passage) keep at most half of the gain. Weighted 0.5, chosen on the same dev sets; 0 turns it off, and
nothing of a body is then embedded.

Cost: the passages are embedded at build time through the embedding cache (by content: a refresh re-embeds only the
passages of an edited body). In memory it is one vector per skill, and a request costs one more matrix product
(under 0.5 ms of CPU at 683 skills); the cold build's cost is in benchmarks/README.md ("Embedded body heads").

Absent where the library has no bodies (a tool catalogue ranks exactly as without it, and embeds nothing more),
and past :data:`router.passages.MAX_SKILLS` skills (as the passage index). What a store must give it is
:func:`body_heads`' result, one vector per skill (``row_vectors``): the PostgreSQL store keeps those rows per
generation and scores them itself (:mod:`router.pgstore`), so a replica ranks as the file store does. The routing
confidence does not read it; the "no skill fits" decision reads its best cosine (:mod:`router.abstain`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from router.signals.base import BodySignal

if TYPE_CHECKING:
    import numpy as np

    from router.signals.base import BuildJob

#: Passages of the body's head that are embedded and averaged.
HEAD = 3
#: Words of each head passage that are embedded, its heading counted (None: the whole passage). The model's cost
#: grows with the tokens it reads, so this bounds what a body adds to a cold build.
WORDS: int | None = 16
#: How the body is cut for its head: :func:`router.passages.passages`' window and stride (words).
WINDOW, STRIDE = 150, 100


@dataclass(frozen=True)
class BodyHeads:
    """One vector per skill, in skill order: the mean of its head passages' unit embeddings (not unit length), or
    its description's unit vector for a skill without a body."""

    vectors: np.ndarray

    def scores_many(self, query_vectors: np.ndarray) -> np.ndarray:
        """``q . head`` for each request (unit ``query_vectors``) and skill: the mean cosine with its head passages."""
        import numpy as np

        return np.asarray(query_vectors, dtype=np.float64) @ self.vectors.T


def head_passages(body: str) -> list[str]:
    """The passages of ``body`` that make its head: the first :data:`HEAD` of :func:`router.passages.passages`
    (cut in :data:`WINDOW`-word windows), each cut to its first :data:`WORDS` words."""
    from router.passages import passages

    if not body.strip():
        return []
    cut = passages(body, window=WINDOW, stride=STRIDE, limit=HEAD)
    return cut if WORDS is None else [" ".join(p.split()[:WORDS]) for p in cut]


def head_vectors(heads: Sequence[Sequence[str]], fallback: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """Each skill's head vector: the mean of its passages' rows of ``vectors`` (the passages of ``heads`` in order,
    one row each), or its row of ``fallback`` for a skill without passages."""
    import numpy as np

    out = np.array(fallback, dtype=np.float64)
    start = 0
    for row, passages in enumerate(heads):
        if passages:
            out[row] = np.asarray(vectors[start:start + len(passages)], dtype=np.float64).mean(axis=0)
            start += len(passages)
    return out


def body_heads(bodies: Sequence[str], fallback: np.ndarray,
               embed: Callable[[Sequence[str]], np.ndarray]) -> BodyHeads | None:
    """The signal's index for a library whose skills have these ``bodies`` (in skill order; '' for none) and
    description vectors ``fallback`` (the ``dense`` rows), with ``embed`` (texts -> unit vectors): None where the
    signal is absent (no body, or past :data:`router.passages.MAX_SKILLS` skills).

    This is all a store needs to give the signal: :func:`head_passages` of each body are the texts to embed (by
    content, as every embedded text), and :class:`BodyHeads` holds one vector per skill, so a store may keep either
    the passages' vectors or each skill's head vector alone."""
    from router.passages import MAX_SKILLS

    bodies = list(bodies)
    if len(bodies) > MAX_SKILLS or not any(b.strip() for b in bodies):
        return None
    heads = [head_passages(body) for body in bodies]
    return BodyHeads(head_vectors(heads, fallback, embed([p for passages in heads for p in passages])))


class PassageDenseSignal(BodySignal):
    name = "passage_dense"
    lexical = False
    steady = False
    default_weight = 0.5  # chosen on the dev sets (benchmarks/passage_dense_choice.py --shapes)
    position = 90  # after the others: their order (of scores, weights, retrievers) stays as it was
    build_rank = 45  # after dense, whose vectors stand in for a skill without a body
    #: Its index is one vector a skill (``vectors``, in skill order) scored by the inner product with the request:
    #: a store may keep those rows and score them itself (router.pgstore).
    row_vectors = True

    def build(self, job: BuildJob) -> BodyHeads | None:
        dense = job.built.get("dense")
        if dense is None:
            return None
        return body_heads(job.texts[self.name], dense.vectors,
                          lambda texts: job.embed([job.key(t) for t in texts], texts))

    def score(self, index: BodyHeads, texts: Sequence[str], vectors: np.ndarray,
              scores: Mapping[str, np.ndarray]) -> np.ndarray:
        return index.scores_many(vectors)


SIGNAL = PassageDenseSignal()
