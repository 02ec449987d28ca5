"""What a signal is: the :class:`Signal` protocol every module of :mod:`router.signals` implements, and the
:class:`BuildJob` its ``build`` receives.

A signal is a small stateless object:

- ``name``: the key of its weight (``RouterConfig.weights``) and of its scores;
- ``lexical``: True when it scores only the skills that share a word with the request (0 for the others): under
  reciprocal rank fusion such a signal ranks only those skills, so a skill it did not score gets no credit for
  the order of ids (:meth:`router.routing.Router.fuse`);
- ``default_weight``, ``position`` (its place in the order of scores and weights), ``reads_body`` (it indexes
  the SKILL.md body: ``tune`` scales the body signals' weights together);
- ``persisted``: its built index is kept in the index folder (the others are assembled from the embedding cache
  on every build, which costs less than writing and reading copies);
- ``build_rank``: its place in the order of building (indexes that others start from come first; the embedding
  model is called in this order);
- ``text(skill, config)``: what it indexes for one skill ('' for nothing); ``applies(texts)``: whether a library
  with these texts has the signal at all; a persisted signal also has ``index_kind()``, the class that loads its
  saved index;
- ``build(job)``: its index for the library, or None when the library gives it nothing to index;
- ``score(index, job_texts, vectors, scores)``: its scores (requests x skills), given the requests' texts, their
  unit embeddings and the scores of the signals before it (``examples`` starts from ``dense``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

    from router.config import RouterConfig
    from router.skill import Skill


class Signal(Protocol):
    """One retrieval signal (see the module docstring)."""

    name: str
    lexical: bool
    default_weight: float
    position: int
    reads_body: bool
    persisted: bool
    build_rank: int

    def text(self, skill: Skill, config: RouterConfig) -> str:
        """What the signal indexes for ``skill`` ('' for nothing)."""
        ...

    def applies(self, texts: Sequence[str]) -> bool:
        """Whether a library whose skills have these texts gets this signal at all (``body_*``: some body)."""
        ...

    def index_kind(self) -> Any:
        """The class that loads the saved index of a persisted signal (``load(folder)``); None for the others."""
        ...

    def build(self, job: BuildJob) -> Any | None:
        """The signal's index for ``job``'s library, or None when there is nothing to index."""
        ...

    def score(self, index: Any, texts: Sequence[str], vectors: np.ndarray,
              scores: Mapping[str, np.ndarray]) -> np.ndarray:
        """Scores (requests x skills) of ``texts`` (unit embeddings ``vectors``), after the signals before it."""
        ...


@dataclass
class BuildJob:
    """What building a library's signals shares: the skills, every signal's text per skill, the embedding cache
    (``embed(keys, texts)`` encodes only texts it lacks), the previous build's indexes to start from, the indexes
    built so far, and whether bodies are embedded (``RouterConfig.embeds_bodies``)."""

    ids: tuple[str, ...]
    skills: Sequence[Skill]
    texts: Mapping[str, Sequence[str]]
    embed: Callable[[Sequence[str], Sequence[str]], np.ndarray]
    key: Callable[[str], str]
    previous: Mapping[str, Any]
    built: dict[str, Any]
    embed_bodies: bool
    #: True when the folder's indexes were built from exactly these texts: a persisted signal returns its own.
    current: bool = False
    #: Keep these cache keys when the cache is saved (a signal reusing its index embeds nothing, yet its vectors
    #: must stay cached for the next rebuild).
    keep: Callable[[Sequence[str]], None] = lambda keys: None
