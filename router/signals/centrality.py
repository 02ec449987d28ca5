"""``centrality``: how close each skill's description is to the library's centre, the same for every request: the
cosine-like score ``v_s . c`` of its description's unit embedding ``v_s`` with the mean ``c`` of all of them (the
dense index's vectors), equal up to an affine map to its mean cosine with every other description.

Why a request-independent score helps: a broad description ("Stay informed with the latest financial updates,
insights and analysis on stocks, options and more") sits near the middle of the library and shares a little with
many requests, so any one request's cosine with it is lower than with a narrow description that happens to share
one of its words ("Ask for the average daily petrol price ..."); requests for the broad skill's field go to the
narrow one. Under z-score fusion the centrality adds ``weight * z(v_s . c)`` to every request's fused scores, a
small push towards the skills that cover much of the library; it is not a cosine of the request, so the routing
confidence (:func:`router.ranking.confidence_scores`) and the "no skill fits" decision do not read it.

Weight 0.2, chosen on the dev splits (``benchmarks/centrality_choice.py``; the best mean MRR of 0.1 / 0.2 / 0.3 /
0.4 / 0.5 with no dev set more than 0.5 below the default without it). Built from the dense vectors on every build
(one pass over them: ``n x d`` multiply-adds), nothing embedded or kept on disk.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from router.config import RouterConfig
    from router.signals.base import BuildJob
    from router.skill import Skill


@dataclass(frozen=True)
class Centrality:
    """Each skill's ``v_s . c`` (in skill order)."""

    values: np.ndarray


def centrality(vectors: np.ndarray) -> np.ndarray:
    """``vectors @ mean(vectors)``: each row's inner product with the rows' mean (0 for no rows)."""
    import numpy as np

    if not len(vectors):
        return np.zeros(0)
    rows = np.asarray(vectors, dtype=np.float64)
    return rows @ rows.mean(axis=0)


class CentralitySignal:
    name = "centrality"
    lexical = False
    steady = True  # the same scores for every request: fusion normalises its row once (indexes.fusion.SteadyRows)
    default_weight = 0.2
    position = 80  # after the others: their order (of scores, weights, retrievers) stays as it was
    reads_body = False
    persisted = False
    row_vectors = False
    whole_body = False
    build_rank = 16  # after dense, whose vectors it reads
    tuning = None  # tune keeps the configured weight

    def text(self, skill: Skill, config: RouterConfig) -> str:
        return ""  # reads the dense vectors, indexes no text of its own

    def wanted(self, config: RouterConfig) -> bool:
        return config.weights.get(self.name, 0.0) > 0

    def applies(self, texts: Sequence[str]) -> bool:
        return True

    def index_kind(self) -> None:
        return None  # not persisted: computed from the dense vectors on every build

    def build(self, job: BuildJob) -> Centrality | None:
        dense = job.built.get("dense")
        if dense is None:
            return None
        # the dense index's float64 rows, which its scoring converts once and keeps: the same values, and the
        # 10,000 x 384 conversion is made once a build instead of twice
        return Centrality(centrality(dense.vectors64))

    def score(self, index: Centrality, texts: Sequence[str], vectors: np.ndarray,
              scores: Mapping[str, np.ndarray]) -> np.ndarray:
        import numpy as np

        # one read-only row shown to every request, not a copy each: fusion and ranking recognise it and compute
        # its normalisation and ranks once (indexes.fusion.SteadyRows)
        return np.broadcast_to(index.values, (len(texts), len(index.values)))


SIGNAL = CentralitySignal()
