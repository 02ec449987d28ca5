"""``passages``: the best BM25 passage of each skill's whole SKILL.md body (sections under headings and 150-word
windows; max-passage scoring). Its index is :mod:`router.passages`, built by the router beside the other signals
and cached by content in its own folder of the index (``passages/``), so :func:`router.signals.build_signals`
builds nothing for it; the router adds its scores (:meth:`router.routing.Router.passages`). Absent when no skill
has a body or past :data:`router.passages.MAX_SKILLS` skills, where ``body_bm25`` stands in for it
(:func:`router.passages.weights_without`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from router.config import RouterConfig
    from router.signals.base import BuildJob
    from router.skill import Skill


class PassagesSignal:
    name = "passages"
    lexical = True
    default_weight = 0.8  # with body_bm25 0, chosen on the pooled dev sets (benchmarks/passage_choice.py)
    position = 60
    reads_body = True
    persisted = False
    build_rank = 60

    def text(self, skill: Skill, config: RouterConfig) -> str:
        return skill.body or ""

    def applies(self, texts: Sequence[str]) -> bool:
        return any(t.strip() for t in texts)

    def index_kind(self) -> Any:
        return None

    def build(self, job: BuildJob) -> Any | None:
        return None  # the router's passage index (router.passages), cached in its own folder

    def score(self, index: Any, texts: Sequence[str], vectors: np.ndarray,
              scores: Mapping[str, np.ndarray]) -> np.ndarray:
        return index.scores_many(texts)


SIGNAL = PassagesSignal()
