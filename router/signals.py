"""The three signals a router fuses, each one score per skill, and how they are built from a library.

- ``bm25``: lexical BM25 over the index text (``indexes.bm25``).
- ``dense``: cosine of the request with the index text's embedding (``indexes.dense``).
- ``examples``: cosine of the request with the nearest example request of each skill. A skill's own index text
  counts as one of its examples, so a skill without examples keeps its description's score and is not pushed
  down by skills that have many.
- ``body_bm25`` / ``body_dense``: BM25 over, and cosine with the embedding of, part of each skill's SKILL.md body
  (``RouterConfig.body``). Separate signals, so the description keeps its own weight; a skill without body text
  scores 0 in ``body_bm25`` and keeps its description's cosine in ``body_dense``. Absent when no skill has body
  text (a tool catalogue), so such libraries route exactly as without them; ``body_dense`` is built only when it
  weighs something (the default weighs it 0, so bodies are not embedded).

:func:`build_signals` builds them with the index folder as a cache: when the folder holds the index of exactly
these texts, nothing is embedded and no model is loaded; otherwise only the texts it lacks are embedded, BM25
re-tokenises only the texts that changed, and an index that comes out unchanged is kept and linked, not rewritten
(:meth:`router.store.IndexFolder.write`). Scores
are arrays in skill order (one row per request); fusion and the ranking rules are :mod:`indexes.fusion` and
:mod:`router.ranking`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from router.skill import Skill
from router.store import EmbeddingCache, IndexFolder, StaleIndex, index_signature, text_key

if TYPE_CHECKING:
    from indexes import BM25Index, DenseIndex

EXAMPLE_BLOCK = 512


@dataclass(frozen=True)
class Signals:
    """Built indexes for one library: BM25, the dense vectors, and every example request's vector."""

    ids: tuple[str, ...]
    bm25: "BM25Index"
    dense: "DenseIndex"
    example_vectors: np.ndarray  # (m, d): examples of all skills
    example_owner: np.ndarray  # (m,): the skill position each example belongs to
    body_bm25: "BM25Index | None" = None
    body_dense: "DenseIndex | None" = None

    @property
    def has_examples(self) -> bool:
        return len(self.example_owner) > 0

    def score(self, texts: Sequence[str], vectors: np.ndarray) -> dict[str, np.ndarray]:
        """Each signal's scores for ``texts`` (with their unit embeddings ``vectors``), shape (requests, skills).
        ``examples`` is present only when the library has example requests."""
        lexical = [self.bm25.scores(t) for t in texts]
        dense = self.dense.scores_many(vectors) if len(texts) else np.zeros((0, len(self.ids)))
        out = {"bm25": np.stack(lexical) if lexical else np.zeros((0, len(self.ids))), "dense": dense}
        if self.has_examples:
            out["examples"] = example_scores(vectors, self.example_vectors, self.example_owner, dense)
        if self.body_bm25 is not None:
            out["body_bm25"] = np.stack([self.body_bm25.scores(t) for t in texts]) if len(texts) else \
                np.zeros((0, len(self.ids)))
        if self.body_dense is not None:
            out["body_dense"] = self.body_dense.scores_many(vectors) if len(texts) else np.zeros((0, len(self.ids)))
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
    """What building did: texts embedded, whether the folder was written (None: nothing to write), notes."""

    embedded: int = 0
    saved: bool | None = None
    notes: list[str] = field(default_factory=list)


def build_signals(skills: Sequence[Skill], texts: Sequence[str], *, dense_texts: Sequence[str] | None = None,
                  body_texts: Sequence[str] = (), embed_bodies: bool = True, model_id: str, dim: int,
                  encode: Callable[[list[str]], np.ndarray], folder: IndexFolder | None,
                  parameters: Mapping[str, Any], persist: bool = True) -> tuple[Signals, BuildReport]:
    """Build the signals of ``skills`` (``texts``: one index text each, in order).

    ``dense_texts`` are what the dense signal embeds (``texts`` when None); ``body_texts`` (one per skill, '' for
    none) feed the body signals; ``embed_bodies`` False leaves ``body_dense`` out (nothing of the bodies is
    embedded). ``encode`` embeds texts the folder does not hold (it is only called when some are
    missing, so a current index loads without the model). With ``persist`` a changed index is written back to
    ``folder``; a folder that cannot be written is reported in the notes (``saved`` False) and routing carries on
    from memory.
    """
    from indexes import BM25Index, DenseIndex

    report = BuildReport()
    ids = tuple(s.id for s in skills)
    embedded = list(texts if dense_texts is None else dense_texts)
    keys = [text_key(model_id, t) for t in embedded]
    bodies = list(body_texts) if any(t.strip() for t in body_texts) else []
    # What each skill's indexes are built from: its BM25 text, its embedded text and its body text.
    hashes = {i: text_key(model_id, f"{t}\0{e}\0{b}")
              for i, t, e, b in zip(ids, texts, embedded, bodies or [""] * len(ids))}
    signature = index_signature(hashes, parameters)
    pairs = [(i, e) for i, s in enumerate(skills) for e in s.examples if e.strip()]
    example_texts = [e for _, e in pairs]
    example_keys = [text_key(model_id, e) for e in example_texts]
    body_rows = [i for i, t in enumerate(bodies) if t.strip()] if embed_bodies else []
    body_keys = [text_key(model_id, bodies[i]) for i in body_rows]
    # The indexes the folder keeps. body_dense is not among them: each of its rows is a vector of the cache (the
    # body's, or the description's for a skill without body text), so it is assembled from the cache below,
    # which costs less than writing, checking and reading 15 MB of copies at 10,000 skills.
    names = ("bm25", "dense", "body_bm25") if bodies else ("bm25", "dense")

    snapshot = None
    if folder is not None:
        try:
            snapshot = folder.read(model_id, dim)
        except StaleIndex as exc:
            report.notes.append(f"index at {folder.path} {exc}; rebuilding it from the skills")
    cache = snapshot.cache if snapshot is not None else EmbeddingCache(dim)
    kinds = {"bm25": BM25Index, "dense": DenseIndex, "body_bm25": BM25Index}
    # The folder's indexes: used as they are when they were built from exactly these texts, otherwise each one is
    # the starting point of its rebuild (BM25 re-tokenises only changed texts; an index that comes out the same
    # is kept, so saving links its files instead of writing them again).
    previous: dict[str, Any] = {}
    if snapshot is not None:
        same = snapshot.signature == signature
        try:
            previous = {name: snapshot.load_index(name, kinds[name]) for name in names if same or snapshot.has(name)}
        except StaleIndex as exc:
            report.notes.append(f"index at {folder.path if folder else ''} {exc}; rebuilding it from the skills")
            previous = {}
    if snapshot is not None and snapshot.signature == signature and len(previous) == len(names):
        built: dict[str, Any] = dict(previous)
    else:
        built = {"dense": _dense(previous.get("dense"), ids, cache.embed(keys, embedded, encode)),
                 "bm25": BM25Index.from_texts(ids, list(texts), reuse=previous.get("bm25"))}
        if bodies:
            built["body_bm25"] = BM25Index.from_texts(ids, bodies, reuse=previous.get("body_bm25"))
    if bodies and embed_bodies:
        # A skill without body text keeps its description's vector, so its body_dense score is its dense score.
        vectors = np.array(built["dense"].vectors, dtype=np.float32)
        vectors[body_rows] = cache.embed(body_keys, [bodies[i] for i in body_rows], encode)
        built["body_dense"] = DenseIndex.from_vectors(ids, vectors)
    example_vectors = cache.embed(example_keys, example_texts, encode)
    owner = np.array([i for i, _ in pairs], dtype=np.int64)
    signals = Signals(ids, built["bm25"], built["dense"], example_vectors, owner, built.get("body_bm25"),
                      built.get("body_dense"))

    report.embedded = cache.added
    current = snapshot is not None and snapshot.signature == signature and not report.notes and not cache.added
    if persist and folder is not None and not current:
        try:
            folder.write(cache.pruned(keys + example_keys + body_keys), {n: built[n] for n in names},
                         model_id=model_id, dim=dim, parameters=parameters, skill_hashes=hashes, signature=signature,
                         previous=snapshot)
            report.saved = True
        except OSError as exc:
            report.saved = False
            report.notes.append(f"could not save the index to {folder.path}: {exc.strerror or exc}")
    report.notes.extend(folder.notes if folder is not None else ())
    return signals, report


def _dense(previous: "DenseIndex | None", ids: tuple[str, ...], vectors: np.ndarray) -> "DenseIndex":
    """A dense index over ``vectors``: ``previous`` itself when it holds exactly these ids and vectors."""
    from indexes import DenseIndex

    if previous is not None and previous.ids == ids and np.array_equal(previous.vectors, vectors):
        return previous
    return DenseIndex.from_vectors(ids, vectors)
