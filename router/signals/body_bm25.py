"""``body_bm25``: lexical BM25 over part of each skill's SKILL.md body (``RouterConfig.body``; a skill without body
text scores 0). Absent when no skill has body text (a tool catalogue), so such libraries route as without it."""

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


class BodyBM25Signal(BodySignal):
    name = "body_bm25"
    lexical = True
    steady = False
    default_weight = 0.0  # router.passages (best passage of the whole body) took its place; 0.5 past its size limit
    position = 40
    persisted = True
    build_rank = 30
    whole_body = False  # its text is part of the body (RouterConfig.body)

    def text(self, skill: Skill, config: RouterConfig) -> str:
        return body_text(skill.body, config.body, config.body_tokens)

    def wanted(self, config: RouterConfig) -> bool:
        return True

    def index_kind(self) -> Any:
        from indexes import BM25Index

        return BM25Index

    def build(self, job: BuildJob) -> Any | None:
        texts = list(job.texts[self.name])
        if not self.applies(texts):
            return None
        if job.current:
            return job.previous[self.name]
        return self.index_kind().from_texts(job.ids, texts, reuse=job.previous.get(self.name))

    def score(self, index: Any, texts: Sequence[str], vectors: np.ndarray,
              scores: Mapping[str, np.ndarray]) -> np.ndarray:
        import numpy as np

        return np.stack([index.scores(t) for t in texts])


SIGNAL = BodyBM25Signal()
