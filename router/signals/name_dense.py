"""``name_dense``: cosine of the request with the embedding of each skill's name words alone
(:func:`router.texts.name_words`: ``AusPetrolPrices`` -> "Aus Petrol Prices"; ``indexes.dense``).

A name is a short summary its author chose ("FinanceTool", "pdf-forms"): embedded on its own it says what the
skill is for without the description's detail, where ``dense`` embeds the description alone (and embedding the
two together measured worse than either, ``RouterConfig.dense_name``). Built only when it weighs something
(:attr:`router.config.RouterConfig.embeds_names`), from the embedding cache like ``body_dense``, so the default
embeds nothing more. Measured on the dev splits (weight 0.3, ``benchmarks/name_choice.py``): MetaTool hit@1 / hit@5
58.1 / 79.3 -> 59.1 / 81.5, Seal-Tools dev single-tool hit@1 85.5 -> 87.0 (multi-tool recall@5 81.5 -> 81.0), the
four skill-library dev sets within one request of the default."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from router.texts import name_words

if TYPE_CHECKING:
    import numpy as np

    from router.config import RouterConfig
    from router.signals.base import BuildJob
    from router.skill import Skill


class NameDenseSignal:
    name = "name_dense"
    lexical = False
    default_weight = 0.0
    position = 70  # after the others: their order (of scores, weights, retrievers) stays as it was
    reads_body = False
    persisted = False
    build_rank = 15
    tuning = None  # tune keeps the configured weight (0 unless a config gives it one)

    def text(self, skill: Skill, config: RouterConfig) -> str:
        return (name_words(skill.name) or skill.name) if config.embeds_names else ""

    def wanted(self, config: RouterConfig) -> bool:
        return config.embeds_names

    def applies(self, texts: Sequence[str]) -> bool:
        return any(t.strip() for t in texts)

    def index_kind(self) -> None:
        return None  # not persisted: assembled from the embedding cache

    def build(self, job: BuildJob) -> Any | None:
        from indexes import DenseIndex

        names = list(job.texts.get(self.name, ()))
        if not self.applies(names):
            return None
        return DenseIndex.from_vectors(job.ids, job.embed([job.key(t) for t in names], names))

    def score(self, index: Any, texts: Sequence[str], vectors: np.ndarray,
              scores: Mapping[str, np.ndarray]) -> np.ndarray:
        return index.scores_many(vectors)


SIGNAL = NameDenseSignal()
