"""``passage_dense``: cosine of the request with each skill's body head, the mean of the unit embeddings of the
first :data:`HEAD` passages of its SKILL.md body (:func:`router.passages.passages`: sections under headings, cut
into 150-word windows); a skill without a body keeps its description's vector, so its score is its ``dense`` score.

Why the head's mean: the body says what the skill does in the words a user's task uses ("find which commit broke
it" against a body that explains ``git bisect``), where the description is one sentence in the author's words.
Embedded whole, a body is cut at the model's 256 tokens; one passage at a time, each is read whole. The mean of
their cosines (``q . mean(v_1..v_k)``, one vector per skill) scores a skill by what its opening sections say
together, which measured better on the dev sets than the best passage alone (MaxP, Dai & Callan 2019) or the mean
over the whole body: late sections (licences, troubleshooting, API tables) pull a body towards every request a
little. The first 1, 2, 3, 4, 6 and 8 passages at weights 0.25-1.0 form a plateau; 4 at 0.5 is its best mean MRR
over the dev sets and the cheapest near the top (``benchmarks/passage_dense_choice.py``). The default weighs it 0,
so it is not built and nothing of a body is embedded; a config giving it 0.5 builds it.

Cost: the passages are embedded at build time through the embedding cache (by content: a refresh re-embeds only the
passages of an edited body). For the 683 corpus skills that is 2,428 distinct passages of up to 150 words: a cold
build takes 42-44 s of CPU instead of 9, the index folder 19.0 MB instead of 15.3, a build from the current index
(a one-shot route, which cuts each body's head again) 0.05 s more (``benchmarks/passage_dense_cost.py``). In memory
it is one vector per skill, and a request costs one more matrix product (under 0.5 ms of CPU at 683 skills).

Absent where the library has no bodies (a tool catalogue ranks exactly as without it), past
:data:`router.passages.MAX_SKILLS` skills (as the passage index), and beside the PostgreSQL store, which holds no
body vectors: a replica ranks by the other signals, as the file store with this weight at 0. The routing confidence
and the "no skill fits" decision do not read it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from router.signals.base import BODY_SCALES, Tuning

if TYPE_CHECKING:
    import numpy as np

    from router.config import RouterConfig
    from router.signals.base import BuildJob
    from router.skill import Skill

#: Passages of the body's head that are embedded and averaged (the first ~450-600 words of a long body).
HEAD = 4


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
    """The passages of ``body`` that make its head: the first :data:`HEAD` of :func:`router.passages.passages`."""
    from router.passages import passages

    return passages(body, limit=HEAD) if body.strip() else []


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


class PassageDenseSignal:
    name = "passage_dense"
    lexical = False
    default_weight = 0.0  # 0.5 is the weight chosen on the dev sets (benchmarks/passage_dense_choice.py)
    position = 90  # after the others: their order (of scores, weights, retrievers) stays as it was
    reads_body = True
    persisted = False
    build_rank = 45  # after dense, whose vectors stand in for a skill without a body
    #: Its index is one vector a skill (``vectors``, in skill order) scored by the inner product with the request:
    #: a store may keep those rows and score them itself (router.pgstore).
    row_vectors = True
    tuning = Tuning(scales=BODY_SCALES, group="body")

    def text(self, skill: Skill, config: RouterConfig) -> str:
        return skill.body or ""

    def wanted(self, config: RouterConfig) -> bool:
        return config.weights.get(self.name, 0.0) > 0

    def applies(self, texts: Sequence[str]) -> bool:
        return any(t.strip() for t in texts)

    def index_kind(self) -> None:
        return None  # not persisted: each passage vector is a row of the embedding cache

    def build(self, job: BuildJob) -> BodyHeads | None:
        from router.passages import MAX_SKILLS

        bodies = list(job.texts[self.name])
        dense = job.built.get("dense")
        if dense is None or len(bodies) > MAX_SKILLS or not self.applies(bodies):
            return None
        heads = [head_passages(body) for body in bodies]
        texts = [p for passages in heads for p in passages]
        vectors = job.embed([job.key(t) for t in texts], texts)
        return BodyHeads(head_vectors(heads, dense.vectors, vectors))

    def score(self, index: BodyHeads, texts: Sequence[str], vectors: np.ndarray,
              scores: Mapping[str, np.ndarray]) -> np.ndarray:
        return index.scores_many(vectors)


SIGNAL = PassageDenseSignal()
