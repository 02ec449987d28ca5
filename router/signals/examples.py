"""``examples``: cosine of the request with the nearest example request of each skill (``routing-examples.txt``, a
catalogue row's ``examples``, ``skill-router learn``). A skill's own description counts as one of its examples, so a
skill without examples keeps its ``dense`` score and is not pushed down by skills that have many. Present only when
the library has example requests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from router.signals.base import Tuning

if TYPE_CHECKING:
    import numpy as np

    from router.config import RouterConfig
    from router.signals.base import BuildJob
    from router.skill import Skill


@dataclass(frozen=True)
class ExampleVectors:
    """Every example request's unit vector (m x d) and the position of the skill it belongs to (m,)."""

    vectors: np.ndarray
    owner: np.ndarray


class ExamplesSignal:
    name = "examples"
    lexical = False
    steady = False
    default_weight = 2.0
    position = 30
    reads_body = False
    persisted = False
    row_vectors = False
    whole_body = False
    build_rank = 50
    tuning = Tuning(weights=(0.5, 1.0, 2.0, 4.0))

    def text(self, skill: Skill, config: RouterConfig) -> str:
        return "\n".join(e for e in skill.examples if e.strip())

    def wanted(self, config: RouterConfig) -> bool:
        return True

    def applies(self, texts: Sequence[str]) -> bool:
        return any(t.strip() for t in texts)

    def index_kind(self) -> None:
        return None  # not persisted

    def build(self, job: BuildJob) -> ExampleVectors:
        import numpy as np

        pairs = [(i, e) for i, s in enumerate(job.skills) for e in s.examples if e.strip()]
        texts = [e for _, e in pairs]
        vectors = job.embed([job.key(e) for e in texts], texts)
        return ExampleVectors(vectors, np.array([i for i, _ in pairs], dtype=np.int64))

    def score(self, index: ExampleVectors, texts: Sequence[str], vectors: np.ndarray,
              scores: Mapping[str, np.ndarray]) -> np.ndarray | None:
        if not len(index.owner):
            return None
        from router.signals.build import example_scores

        return example_scores(vectors, index.vectors, index.owner, scores["dense"])


SIGNAL = ExamplesSignal()
