"""``body_dense``: cosine of the request with the embedding of part of each skill's SKILL.md body; a skill without
body text keeps its description's vector, so its score is its ``dense`` score. Built only when it weighs something
(``RouterConfig.embeds_bodies``: the default weighs it 0, so bodies are not embedded). Not kept in the index folder:
each row is a vector of the embedding cache, assembled on every build (cheaper than writing 15 MB of copies at
10,000 skills)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from router.texts import body_text

from router.signals.base import BodySignal

if TYPE_CHECKING:
    import numpy as np

    from router.config import RouterConfig
    from router.signals.base import BuildJob
    from router.skill import Skill


class BodyDenseSignal(BodySignal):
    name = "body_dense"
    lexical = False
    steady = False
    default_weight = 0.0
    position = 50
    build_rank = 40
    whole_body = False  # its text is part of the body (RouterConfig.body)

    def text(self, skill: Skill, config: RouterConfig) -> str:
        return body_text(skill.body, config.body, config.body_tokens)

    def wanted(self, config: RouterConfig) -> bool:
        return config.embeds_bodies

    def build(self, job: BuildJob) -> Any | None:
        import numpy as np

        from indexes import DenseIndex

        bodies = list(job.texts[self.name])
        if not job.embed_bodies or not self.applies(bodies):
            return None
        rows = [i for i, t in enumerate(bodies) if t.strip()]
        vectors = np.array(job.built["dense"].vectors, dtype=np.float32)
        vectors[rows] = job.embed([job.key(bodies[i]) for i in rows], [bodies[i] for i in rows])
        return DenseIndex.from_vectors(job.ids, vectors)

    def score(self, index: Any, texts: Sequence[str], vectors: np.ndarray,
              scores: Mapping[str, np.ndarray]) -> np.ndarray:
        return index.scores_many(vectors)


SIGNAL = BodyDenseSignal()
