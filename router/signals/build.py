"""Building a library's signals with the index folder as a cache, and scoring requests with them.

:func:`build_signals` builds every signal of :mod:`router.signals` (each one's ``build``, in their ``build_rank``
order): when the index folder holds the index of exactly these texts, nothing is embedded and no model is loaded;
otherwise only the texts it lacks are embedded, BM25 re-tokenises only the texts that changed, and an index that
comes out unchanged is kept and linked, not rewritten (:meth:`router.store.IndexFolder.write`). Scores are arrays
in skill order (one row per request); fusion and the ranking rules are :mod:`indexes.fusion` and
:mod:`router.ranking`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from router.config import RouterConfig
from router.signals import registry
from router.signals.base import BuildJob
from router.skill import Skill
from router.store import EmbeddingCache, IndexFolder, StaleIndex, index_signature, text_key

EXAMPLE_BLOCK = 512


@dataclass(frozen=True)
class Signals:
    """Built indexes for one library, by signal name (a signal the library gives nothing to index is absent)."""

    ids: tuple[str, ...]
    indexes: Mapping[str, Any]

    @property
    def bm25(self) -> Any:
        return self.indexes["bm25"]

    @property
    def dense(self) -> Any:
        return self.indexes["dense"]

    @property
    def body_bm25(self) -> Any:
        return self.indexes.get("body_bm25")

    @property
    def body_dense(self) -> Any:
        return self.indexes.get("body_dense")

    @property
    def example_vectors(self) -> np.ndarray:
        return self.indexes["examples"].vectors

    @property
    def example_owner(self) -> np.ndarray:
        return self.indexes["examples"].owner

    @property
    def has_examples(self) -> bool:
        return len(self.example_owner) > 0

    def score(self, texts: Sequence[str], vectors: np.ndarray) -> dict[str, np.ndarray]:
        """Each signal's scores for ``texts`` (with their unit embeddings ``vectors``), shape (requests, skills),
        in the signals' order; a signal absent from the library, or with nothing to score (``examples`` without
        example requests), has none."""
        out: dict[str, np.ndarray] = {}
        for name, signal in registry().items():
            index = self.indexes.get(name)
            if index is None:
                continue
            values = signal.score(index, texts, vectors, out) if len(texts) else np.zeros((0, len(self.ids)))
            if values is not None and not (name == "examples" and not self.has_examples):
                out[name] = values
        return out


def example_scores(queries: np.ndarray, examples: np.ndarray, owners: np.ndarray, base: np.ndarray) -> np.ndarray:
    """``base`` (requests x skills) raised, skill by skill, to the best cosine of each request with that skill's
    examples: the ``examples`` signal for many requests at once, in blocks of requests to bound memory."""
    out = base.copy()
    if not len(owners) or not len(queries):
        return out
    sort = np.argsort(owners, kind="stable")
    sorted_owners = owners[sort]
    starts = np.flatnonzero(np.r_[True, sorted_owners[1:] != sorted_owners[:-1]])
    columns = sorted_owners[starts]
    vectors = np.ascontiguousarray(examples[sort], dtype=np.float32)
    for low in range(0, len(queries), EXAMPLE_BLOCK):
        block = slice(low, low + EXAMPLE_BLOCK)
        sims = (queries[block] @ vectors.T).astype(np.float64)
        out[block, columns] = np.maximum(out[block, columns], np.maximum.reduceat(sims, starts, axis=1))
    return out


@dataclass
class BuildReport:
    """What building did: texts embedded, whether the folder was written (None: nothing to write), notes, and,
    for a build that did not persist, the write it left to do (``pending``: :meth:`router.index.LibraryIndex.save`
    runs it; None when the folder already holds this index). ``chance``: the library's chance level
    (:class:`router.abstain.Chance`) as the index holds it or as saving it computed, when its recipe is this
    index's; None: a router computes it (:func:`router.abstain.chance_level`)."""

    embedded: int = 0
    saved: bool | None = None
    notes: list[str] = field(default_factory=list)
    pending: Callable[[], None] | None = field(default=None, repr=False)
    chance: Any = None
    #: The skills read back with kept texts whose texts this build computed (:attr:`router.index.BuildTexts.computed`).
    texts_computed: frozenset[str] = frozenset()


class ChanceStep(Protocol):
    """How a build keeps the library's chance level (:mod:`router.abstain`) with the index: the recipe of the
    built signals (their signature is the saved index's) and, when the folder does not hold it, its computation."""

    def recipe(self, signals: Signals, signature: str) -> str: ...

    def compute(self, signals: Signals) -> Any: ...


def build_signals(skills: Sequence[Skill], texts: Mapping[str, Sequence[str]], *, config: RouterConfig,
                  model_id: str, dim: int, encode: Callable[[list[str]], np.ndarray], folder: IndexFolder | None,
                  parameters: Mapping[str, Any], persist: bool = True, chance: ChanceStep | None = None
                  ) -> tuple[Signals, BuildReport]:
    """Build the signals of ``skills`` (``texts``: each signal's text per skill, in skill order, by signal name)
    that ``config`` wants (:meth:`router.signals.base.Signal.wanted`).

    ``encode`` embeds texts the folder does not hold (it is only called when some are missing, so a current index
    loads without the model). With ``persist`` a changed index is written back to ``folder``; a folder that cannot
    be written is reported in the notes (``saved`` False) and routing carries on from memory. With ``chance`` the
    saved index holds the library's chance level: read from the manifest when its recipe is the built signals',
    else computed when the index is written (or, for an unchanged index, added to its manifest).
    """
    signals = registry()
    report = BuildReport()
    ids = tuple(s.id for s in skills)
    hashes = skill_hashes(ids, texts, model_id)
    signature = index_signature(hashes, parameters)
    # The indexes the folder keeps (the others are assembled from the embedding cache on every build).
    names = [n for n, s in signals.items() if s.persisted and s.wanted(config) and s.applies(texts.get(n, ()))]

    snapshot = None
    if folder is not None:
        try:
            snapshot = folder.read(model_id, dim)
        except StaleIndex as exc:
            report.notes.append(f"index at {folder.path} {exc}; rebuilding it from the skills")
    cache = snapshot.cache if snapshot is not None else EmbeddingCache(dim)
    # The folder's indexes: used as they are when they were built from exactly these texts, otherwise each one is
    # the starting point of its rebuild (BM25 re-tokenises only changed texts; an index that comes out the same
    # is kept, so saving links its files instead of writing them again).
    previous: dict[str, Any] = {}
    if snapshot is not None:
        same = snapshot.signature == signature
        try:
            previous = {name: snapshot.load_index(name, signals[name].index_kind()) for name in names
                        if same or snapshot.has(name)}
        except StaleIndex as exc:
            report.notes.append(f"index at {folder.path if folder else ''} {exc}; rebuilding it from the skills")
            previous = {}
    current = snapshot is not None and snapshot.signature == signature and len(previous) == len(names)
    used: list[str] = []

    def embed(keys: Sequence[str], batch: Sequence[str]) -> np.ndarray:
        used.extend(keys)
        return cache.embed(keys, batch, encode)

    job = BuildJob(ids, skills, texts, embed, lambda text: text_key(model_id, text), previous, {}, config,
                   current, used.extend, folder.path if folder is not None else None, persist)
    for name, signal in sorted(signals.items(), key=lambda item: item[1].build_rank):
        if not signal.wanted(config):
            continue
        index = signal.build(job)
        if index is not None:
            job.built[name] = index
    built = Signals(ids, {name: job.built[name] for name in signals if name in job.built})

    report.embedded = cache.added
    unchanged = current and not report.notes and not cache.added
    recipe = chance.recipe(built, signature) if chance is not None else ""
    if chance is not None and snapshot is not None and current:
        from router.abstain import read_stored

        report.chance = read_stored(snapshot.manifest.get("chance"), recipe)

    def chance_now() -> dict[str, Any] | None:
        """The chance level to store with the index (computed now unless the report holds it)."""
        if chance is None:
            return None
        from router.abstain import stored_chance

        if report.chance is None:
            report.chance = chance.compute(built)
        return stored_chance(report.chance, recipe)

    later = list(job.later)
    if folder is not None and not unchanged:
        index_folder = folder

        def write() -> None:
            index_folder.write(cache.pruned(used), {n: job.built[n] for n in names}, model_id=model_id, dim=dim,
                               parameters=parameters, skill_hashes=hashes, signature=signature, previous=snapshot,
                               chance=chance_now())
            for save in later:
                save()

        if not persist:
            report.pending = write
        else:
            try:
                write()
                report.saved = True
            except OSError as exc:
                report.saved = False
                report.notes.append(f"could not save the index to {folder.path}: {exc.strerror or exc}")
    elif later or (chance is not None and folder is not None and snapshot is not None and report.chance is None):
        # the folder holds these indexes; a signal's own files (passages) are still to save, or the chance level
        # (an index saved before it was kept there, or by another recipe)
        kept = folder

        def save_later() -> None:
            if chance is not None and kept is not None and snapshot is not None and report.chance is None:
                stored = chance_now()
                assert stored is not None
                with contextlib.suppress(OSError):  # a folder that cannot be written: the level stays in memory
                    kept.set_chance(str(snapshot.manifest["generation"]), stored)
            for save in later:
                save()

        if persist and not later:
            save_later()
        else:
            report.pending = save_later
    report.notes.extend(folder.notes if folder is not None else ())
    return built, report


def skill_hashes(ids: Sequence[str], texts: Mapping[str, Sequence[str]], model_id: str) -> dict[str, str]:
    """What each skill's saved indexes are built from: the content hash of the persisted signals' texts, in their
    order (:attr:`router.signals.base.Signal.persisted`; a signal the library does not have, such as the body
    signals of a catalogue, counts as ''), so a change of any of them rebuilds the index. Hashed from each text's
    digest (:func:`indexes.bm25.text_digests`, which BM25 takes anyway and which a new process after an edit has
    kept for the unchanged skills, :mod:`router.fresh`), not from the texts again: the SHA-256 of the model id and
    the texts' fixed-size digests in order."""
    import hashlib

    from indexes.bm25 import text_digest, text_digests

    persisted = [(name, signal.applies(texts.get(name, ()))) for name, signal in registry().items()
                 if signal.persisted]
    columns = [text_digests(texts[name]) if applies else [text_digest("")] * len(ids) for name, applies in persisted]
    prefix = f"{model_id}\0".encode("utf-8", "surrogatepass")
    sha256 = hashlib.sha256
    return {ident: sha256(prefix + b"".join(row)).hexdigest() for ident, *row in zip(ids, *columns)}
