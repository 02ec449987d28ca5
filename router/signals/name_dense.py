"""``name_dense``: cosine of the request with the embedding of each skill's name words alone
(:func:`router.texts.name_words`: ``AusPetrolPrices`` -> "Aus Petrol Prices"; ``indexes.dense``).

A name is a short summary its author chose ("FinanceTool", "pdf-forms"): embedded on its own it says what the
skill is for without the description's detail, where ``dense`` embeds the description alone (and embedding the
two together measured worse than either, ``RouterConfig.dense_name``).

When it counts, by a rule read from the library (:func:`names_count`), unless ``weights["name_dense"]`` gives it a
weight everywhere:

- **A library without SKILL.md bodies** (a tool catalogue: name and description are all its author wrote) whose
  names say something of their own: the mean cosine of a skill's name embedding with its description's embedding
  (:func:`agreement`) is below :data:`AGREEMENT`. There it weighs ``RouterConfig.catalogue_names`` (0.3).
- **Nowhere else.** A library with bodies has their passages as evidence, and names measured no gain there (the
  held-out skill libraries lost 0.6-1.6 hit@1 at 0.3); names that repeat their descriptions (Seal-Tools'
  ``getWeatherForecast`` for "Get the weather forecast", agreement 0.79) add the description's score a second time
  and cost multi-tool recall@5.

Measured on the dev splits (``benchmarks/name_choice.py``): MetaTool (agreement 0.44) hit@1 / hit@5 58.1 / 79.3
-> 59.1 / 81.6; Seal-Tools (0.79) unchanged; the four skill-library dev sets unchanged (they have bodies). The
names are embedded only where the library has no bodies (from the embedding cache, so once); the signal is built
only where it counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from router.texts import name_words

if TYPE_CHECKING:
    import numpy as np

    from router.config import RouterConfig
    from router.signals.base import BuildJob
    from router.skill import Skill

#: Names count in a catalogue whose mean name/description cosine is below this (MetaTool 0.44, Seal-Tools 0.79
#: with the bundled all-MiniLM-L6-v2; the skill libraries, which have bodies, 0.54-0.66).
AGREEMENT = 0.6


def agreement(names: np.ndarray, descriptions: np.ndarray) -> float:
    """The mean cosine of each skill's name embedding with its own description's (rows of unit vectors, in skill
    order): near 1 when names repeat their descriptions, lower when they say something else."""
    import numpy as np

    return float(np.mean(np.sum(names * descriptions, axis=1))) if len(names) else 1.0


def names_count(config: RouterConfig, has_bodies: bool, names_agreement: float | None) -> bool:
    """Whether the library's names are a signal under ``config`` (see the module docstring): always when
    ``weights["name_dense"]`` weighs them; by the rule, when ``catalogue_names`` does, in a library without bodies
    whose ``names_agreement`` (:func:`agreement`; None: not measured yet) is below :data:`AGREEMENT`."""
    if config.weights["name_dense"] > 0:
        return True
    if config.catalogue_names <= 0 or has_bodies:
        return False
    return names_agreement is None or names_agreement < AGREEMENT


def name_weights(weights: Mapping[str, float], config: RouterConfig) -> dict[str, float]:
    """The weights to fuse with when the library's names are scored: ``catalogue_names`` stands in for a
    ``name_dense`` weight of 0 (the signal is present only where the rule let it be built)."""
    if weights.get("name_dense", 0.0) > 0:
        return dict(weights)
    return {**weights, "name_dense": config.catalogue_names}


class NameDenseSignal:
    name = "name_dense"
    lexical = False
    steady = False
    default_weight = 0.0  # RouterConfig.catalogue_names weighs it where the rule lets it count
    position = 70  # after the others: their order (of scores, weights, retrievers) stays as it was
    reads_body = False
    persisted = False
    row_vectors = False
    whole_body = False
    build_rank = 15  # after dense, whose vectors the rule compares the names with
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
        has_bodies = any((s.body or "").strip() for s in job.skills)
        if not names_count(job.config, has_bodies, None):
            return None  # a library with bodies: nothing embedded
        vectors = job.embed([job.key(t) for t in names], names)
        dense = job.built.get("dense")
        measured = agreement(vectors, dense.vectors) if dense is not None else None
        if not names_count(job.config, has_bodies, measured):
            return None
        return DenseIndex.from_vectors(job.ids, vectors)

    def score(self, index: Any, texts: Sequence[str], vectors: np.ndarray,
              scores: Mapping[str, np.ndarray]) -> np.ndarray:
        return index.scores_many(vectors)


SIGNAL = NameDenseSignal()
