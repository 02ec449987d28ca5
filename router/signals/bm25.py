"""``bm25``: lexical BM25 over each skill's index text (its name words and description; ``indexes.bm25``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from router.texts import index_text

from router.signals.base import Tuning

if TYPE_CHECKING:
    import numpy as np

    from router.config import RouterConfig
    from router.signals.base import BuildJob
    from router.skill import Skill


class BM25Signal:
    name = "bm25"
    lexical = True
    steady = False
    default_weight = 0.3
    position = 10
    reads_body = False
    persisted = True
    row_vectors = False
    whole_body = False
    build_rank = 20
    tuning = Tuning(weights=(0.0, 0.3, 0.5, 0.75, 1.0))  # the default 0.3 among them

    def text(self, skill: Skill, config: RouterConfig) -> str:
        return index_text(skill)

    def wanted(self, config: RouterConfig) -> bool:
        return True

    def applies(self, texts: Sequence[str]) -> bool:
        return True

    def index_kind(self) -> Any:
        from indexes import BM25Index

        return BM25Index

    def build(self, job: BuildJob) -> Any:
        if job.current:
            return job.previous[self.name]
        return self.index_kind().from_texts(job.ids, list(job.texts[self.name]), reuse=job.previous.get(self.name))

    def score(self, index: Any, texts: Sequence[str], vectors: np.ndarray,
              scores: Mapping[str, np.ndarray]) -> np.ndarray:
        import numpy as np

        return np.stack([index.scores(t) for t in texts])


SIGNAL = BM25Signal()
