"""What a signal is: the :class:`Signal` protocol every module of :mod:`router.signals` implements, and the
:class:`BuildJob` its ``build`` receives.

A signal is a small stateless object:

- ``name``: the key of its weight (``RouterConfig.weights``) and of its scores;
- ``lexical``: True when it scores only the skills that share a word with the request (0 for the others): under
  reciprocal rank fusion such a signal ranks only those skills, so a skill it did not score gets no credit for
  the order of ids (:meth:`router.routing.Router.fuse`);
- ``steady`` (optional, False when absent): True when it scores every request alike (``centrality``) and returns
  that one row read-only (``np.broadcast_to``): fusion and ranking compute what they need of it once
  (:class:`indexes.fusion.SteadyRows`);
- ``default_weight``, ``position`` (its place in the order of scores and weights), ``reads_body`` (it indexes
  the SKILL.md body: ``tune`` scales the body signals' weights together);
- ``persisted``: its built index is kept in the index folder (the others are assembled from the embedding cache
  on every build, which costs less than writing and reading copies); the texts of the persisted signals are what
  a saved index is checked against (each skill's content hash: a change of one of them rebuilds it);
- ``row_vectors``: its built index is one vector a skill (``vectors``, in skill order) scored by the inner product
  with the request's unit embedding, so a store may keep those rows and score them itself (:mod:`router.pgstore`);
- ``whole_body``: its text is the skill's whole SKILL.md body, as it is (``passages``, ``passage_dense``): a build
  takes it from the skill rather than keeping a copy of every body, and past :data:`router.passages.MAX_SKILLS`
  skills, where those signals index nothing, it is '' (no body is read);
- ``build_rank``: its place in the order of building (indexes that others start from come first; the embedding
  model is called in this order);
- ``text(skill, config)``: what it indexes for one skill ('' for nothing); ``applies(texts)``: whether a library
  with these texts has the signal at all; a persisted signal also has ``index_kind()``, the class that loads its
  saved index;
- ``wanted(config)``: whether the signal is built under ``config`` at all (``body_dense`` only when bodies are
  embedded, ``passages`` only when it weighs something): an index serves another config only when the same
  signals are built;
- ``tuning``: how ``tune`` chooses its weight (:class:`Tuning`: weights to try, a fixed weight, or a multiple of
  the configured weight shared by a group of signals; None keeps the configured weight);
- ``build(job)``: its index for the library, or None when the library gives it nothing to index;
- ``score(index, job_texts, vectors, scores)``: its scores (requests x skills), given the requests' texts, their
  unit embeddings and the scores of the signals before it (``examples`` starts from ``dense``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
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
    row_vectors: bool
    whole_body: bool
    build_rank: int
    tuning: Tuning | None

    def text(self, skill: Skill, config: RouterConfig) -> str:
        """What the signal indexes for ``skill`` ('' for nothing)."""
        ...

    def applies(self, texts: Sequence[str]) -> bool:
        """Whether a library whose skills have these texts gets this signal at all (``body_*``: some body)."""
        ...

    def index_kind(self) -> Any:
        """The class that loads the saved index of a persisted signal (``load(folder)``); None for the others."""
        ...

    def wanted(self, config: RouterConfig) -> bool:
        """Whether the signal is built under ``config``."""
        ...

    def build(self, job: BuildJob) -> Any | None:
        """The signal's index for ``job``'s library, or None when there is nothing to index."""
        ...

    def score(self, index: Any, texts: Sequence[str], vectors: np.ndarray,
              scores: Mapping[str, np.ndarray]) -> np.ndarray:
        """Scores (requests x skills) of ``texts`` (unit embeddings ``vectors``), after the signals before it."""
        ...


#: Multiples of the configured body weights tune tries (``body_bm25``, ``body_dense``, ``passages``).
BODY_SCALES = (0.0, 1.0, 2.0)


@dataclass(frozen=True)
class Tuning:
    """How ``tune`` (:mod:`router.tune`) chooses a signal's weight: one of

    - ``weights``: the weights tried (when the dev requests have the signal's scores; otherwise it weighs 0 while
      the others are tried, and keeps its configured weight in the tuned config);
    - ``fixed``: the weight it always has (the scale the others are tried against);
    - ``scales`` with a ``group``: multiples of the configured weights of every signal of the group, tried
      together (when any signal of the group has scores).
    """

    weights: tuple[float, ...] = ()
    fixed: float | None = None
    scales: tuple[float, ...] = ()
    group: str = ""


class BodySignal:
    """What the signals over the SKILL.md body share (``body_bm25``, ``body_dense``, ``passages``,
    ``passage_dense``): each indexes the whole body unless it says otherwise, is built when it weighs something,
    is absent from a library without any body text (a tool catalogue, which then ranks as without it), is not kept
    in the index folder, and has its weight tuned with the others of the ``body`` group."""

    name: str
    reads_body = True
    persisted = False
    row_vectors = False
    #: True while ``text`` is the whole body (a signal that reads part of it says False with its own ``text``).
    whole_body = True
    tuning = Tuning(scales=BODY_SCALES, group="body")

    def text(self, skill: Skill, config: RouterConfig) -> str:
        return skill.body or ""

    def wanted(self, config: RouterConfig) -> bool:
        return config.weights.get(self.name, 0.0) > 0

    def applies(self, texts: Sequence[str]) -> bool:
        return any(t.strip() for t in texts)

    def index_kind(self) -> Any:
        return None


@dataclass
class BuildJob:
    """What building a library's signals shares: the skills, every signal's text per skill, the embedding cache
    (``embed(keys, texts)`` encodes only texts it lacks), the previous build's indexes to start from, the indexes
    built so far, the config (which signals are wanted, whether bodies are embedded), the index folder's path and
    whether this build may write to it now (a signal with its own files there, ``passages``, saves them itself:
    at once with ``persist``, else by adding its save to ``later``, run by :meth:`router.index.LibraryIndex.save`)."""

    ids: tuple[str, ...]
    skills: Sequence[Skill]
    texts: Mapping[str, Sequence[str]]
    embed: Callable[[Sequence[str], Sequence[str]], np.ndarray]
    key: Callable[[str], str]
    previous: Mapping[str, Any]
    built: dict[str, Any]
    config: RouterConfig
    #: True when the folder's indexes were built from exactly these texts: a persisted signal returns its own.
    current: bool = False
    #: Keep these cache keys when the cache is saved (a signal reusing its index embeds nothing, yet its vectors
    #: must stay cached for the next rebuild).
    keep: Callable[[Sequence[str]], None] = lambda keys: None
    folder: str | None = None
    persist: bool = True
    later: list[Callable[[], None]] = field(default_factory=list)

    @property
    def embed_bodies(self) -> bool:
        return self.config.embeds_bodies
