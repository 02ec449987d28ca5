"""``dense``: cosine of the request with the embedding of each skill's description (``RouterConfig.dense_name``:
with its name words; ``indexes.dense``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from router.texts import dense_text

from router.signals.base import Tuning

if TYPE_CHECKING:
    import numpy as np

    from router.config import RouterConfig
    from router.signals.base import BuildJob
    from router.skill import Skill


class DenseSignal:
    name = "dense"
    lexical = False
    steady = False
    default_weight = 1.0
    position = 20
    reads_body = False
    persisted = True
    row_vectors = False
    whole_body = False
    build_rank = 10
    tuning = Tuning(fixed=1.0)  # the scale the other weights are tried against

    def text(self, skill: Skill, config: RouterConfig) -> str:
        return dense_text(skill, with_name=config.dense_name)

    def wanted(self, config: RouterConfig) -> bool:
        return True

    def applies(self, texts: Sequence[str]) -> bool:
        return True

    def index_kind(self) -> Any:
        from indexes import DenseIndex

        return DenseIndex

    def build(self, job: BuildJob) -> Any:
        import numpy as np

        texts = list(job.texts[self.name])
        keys = [job.key(t) for t in texts]
        if job.current:
            job.keep(keys)
            return job.previous[self.name]
        vectors = job.embed(keys, texts)
        previous = job.previous.get(self.name)
        # An unchanged index is kept as it is, so saving links its files instead of writing them again.
        if previous is not None and previous.ids == job.ids and np.array_equal(previous.vectors, vectors):
            return previous
        return self.index_kind().from_vectors(job.ids, vectors)

    def score(self, index: Any, texts: Sequence[str], vectors: np.ndarray,
              scores: Mapping[str, np.ndarray]) -> np.ndarray:
        return index.scores_many(vectors)


SIGNAL = DenseSignal()
