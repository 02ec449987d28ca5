"""The Router: choose which skills a catalogue shows, and nothing about how it shows them.

Two lines::

    router = Router.from_skills(["skills"], profile="genkit")
    print(router.render("what will the weather be like tomorrow in Lyon?"))

Public surface:

- construction: :meth:`Router.from_skills`, :meth:`Router.from_catalog`, :meth:`Router.from_spec` build the index
  now (or load the fresh one the index folder holds), :meth:`Router.from_index` takes one already built
  (:mod:`router.index`); :meth:`Router.with_config` and :meth:`Router.with_examples` return a new router (a router
  never changes under its users: routing writes no file and changes no attribute);
- routing: :meth:`Router.route` / :meth:`Router.route_many` (what the catalogue shows), :meth:`Router.rank` /
  :meth:`Router.rank_many` (the ranked matches), :meth:`Router.score_many` and :meth:`Router.fuse` (the scores
  underneath, for evaluation and tuning);
- what the harness sees: :meth:`Router.render`, :meth:`Router.inject`, :meth:`Router.tool`,
  :meth:`Router.call_tool`.

How a request is routed:

1. A library with at most ``route_above`` skills (default 15) is shown whole, unrouted.
2. The request (for a conversation, its last user turn, with earlier user turns as weighted context; see
   :mod:`router.conversation`) is scored by three signals (:mod:`router.signals`), and the scores are fused
   (:func:`indexes.fusion.fuse_score_arrays`, ``RouterConfig.fusion``).
3. The ranking rules (:mod:`router.ranking`): ties by id, named skills included, pinned always, excluded never.
4. Optional abstention: when the confidence (best cosine of the request with any description or example) is
   below ``threshold`` the routing says "no skill matches" and the catalogue shows the plain top-k or nothing.
5. A request of several parts (sentences, list items, "then" / "also" / "plus") adds ``split_weight`` times each
   skill's best fused score over its parts (:mod:`router.split`), so each part's skill can reach the top k.
6. "No skill fits" (``no_skill``, :mod:`router.abstain`): set when a small model over the request's confidence,
   its closeness to everyday requests, the best body passage's BM25, how many skills' bodies share a word with
   it and (where the bodies are embedded) its best body-head cosine, each against the library's chance level, says
   no skill serves it; only the surfaces in front of an agent act on it.

Every request, one or many, goes through the same batch path (:meth:`Router.score_many`, :meth:`Router.fuse`,
:meth:`Router.rank_scored`), so the CLI, the evaluation, tuning and the benchmarks rank exactly as the router does.
Rendering, injection and the skill tool are the profile's own (:mod:`router.profiles`); the tool loads every
registered skill, shown or not.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from indexes.fusion import SteadyRows, fuse_score_arrays, tie_order
from router import abstain, glossary, split
from router import inject as injection
from router import passages as passage_index
from router.config import RouterConfig
from router.conversation import Conversation, conversation_text
from router.errors import ConfigError, EmptyLibraryError, SkillNotFoundError
from router.files import open_regular
from router.profiles import Profile, ToolSpec
from router.ranking import (KeyIndex, Match, NameTable, Routing, choose, confidence, confidence_scores, confidences,
                            matches)
from router.registry import SkillRegistry
from router.safetext import safe_text
from router.index import IndexStore, LibraryIndex, LibrarySource, Scorer, requested_k
from router.signals import lexical_names, steady_names
from router.signals.name_dense import name_weights
from router.skill import Skill
from router.spec import LibrarySpec

if TYPE_CHECKING:
    from indexes.base import Encoder
    from router.signals import BuildReport

__all__ = ["Match", "Query", "Router", "Routing", "Scored"]

Query = str | Sequence[Mapping[str, Any]]

#: The name table, tie order and positions of the last library's ids and names in this process (each a pure
#: function of them, never changed once made), shared by the next router over the same ids and names.
_PLACES: dict[tuple[tuple[str, ...], tuple[str, ...]], tuple[NameTable, np.ndarray, KeyIndex]] = {}


@dataclass(frozen=True)
class Scored:
    """Every signal's scores for a batch of requests (see :meth:`Router.score_many`).

    ``texts`` are what was routed (a conversation's last user turn), ``vectors`` their unit embeddings,
    ``signals`` each signal's scores (requests x skills); ``context`` holds the same for the earlier user turns of
    the conversations among them, row ``j`` belonging to request ``context_rows[j]``.
    """

    texts: tuple[str, ...]
    vectors: np.ndarray
    signals: Mapping[str, np.ndarray]
    context: Mapping[str, np.ndarray]
    context_rows: np.ndarray

    def __len__(self) -> int:
        return len(self.texts)


class Router:
    """Routes requests to the skills of one library, for one harness profile (see the module docstring).

    A router holds a built, frozen index (:class:`router.index.LibraryIndex`) and never changes under its users:
    routing, ranking and scoring write no file and change no attribute; :meth:`with_config` and
    :meth:`with_examples` return other routers."""

    def __init__(self, index: LibraryIndex, *, pinned: Iterable[str] | None = None,
                 excluded: Iterable[str] | None = None, same_places: Router | None = None) -> None:
        """A router over ``index`` (prefer :meth:`from_skills`, :meth:`from_catalog`, :meth:`from_spec` or
        :meth:`from_index`); ``pinned`` / ``excluded`` (names or ids) default to the spec's. ``same_places`` is a
        router over the same ids and names in the same places (a replica's next generation that edited rows in
        place): its name table, tie order and positions are shared, not derived again."""
        self._index = index
        #: What fusion and ranking compute once from the rows of the signals that score every request alike
        self._steady = SteadyRows(steady_names())
        registry = index.registry
        self._by_id = registry.by_id  # a view: a replica's registry of 100,000 rows is not walked again
        self._pinned_names = tuple(index.spec.pinned if pinned is None else pinned)
        self._excluded_names = tuple(index.spec.excluded if excluded is None else excluded)
        self.pinned = self._check_names(self._pinned_names, "pinned")
        self.excluded = self._check_names(self._excluded_names, "excluded")
        skills = registry.skills
        self._names: NameTable
        if same_places is not None:
            self._names = same_places._names
            self.order: np.ndarray = same_places.order
            self._positions: KeyIndex = same_places._positions
            return
        key = (tuple(s.id for s in skills), tuple(s.name for s in skills))
        known = _PLACES.get(key)
        if known is None:  # a reload after an edit keeps its ids and names in their places: derived once
            order = tie_order(key[0])
            order.setflags(write=False)
            known = (NameTable.build(skills), order, registry.id_index())
            _PLACES.clear()
            _PLACES[key] = known
        self._names = known[0]
        #: Each skill's position in id order: the one tie-break (:func:`indexes.fusion.tie_order`).
        self.order = known[1]
        #: Each skill's position by id (what a routing shows is found without walking the library).
        self._positions = known[2]

    # -- construction -------------------------------------------------------------------------------------------
    @classmethod
    def from_spec(cls, spec: LibrarySpec, config: RouterConfig | None = None, *, encoder: Encoder | None = None,
                  store: IndexStore | None = None, progress: bool = False) -> Router:
        """A router over the library ``spec`` describes (:mod:`router.spec`): its skills discovered once, its
        index built now from ``store`` (default: the index folder, where what changed is saved, so the next run
        loads it and rebuilds nothing)."""
        source = LibrarySource.read(spec, config, encoder=encoder)
        return cls(LibraryIndex.create(source, store=store, persist=True, progress=progress))

    @classmethod
    def from_index(cls, index: LibraryIndex) -> Router:
        """A router over an index already built (:meth:`router.index.LibraryIndex.build`): it routes at once;
        requests are embedded by the model that embedded the index."""
        return cls(index)

    @classmethod
    def from_skills(cls, roots: Sequence[str | os.PathLike[str]] | str | os.PathLike[str] | None = ("skills",),
                    profile: str | Profile = "agentskills", config: RouterConfig | None = None, *,
                    index_folder: str | None = None, pinned: Iterable[str] = (), excluded: Iterable[str] = (),
                    encoder: Any = None, store: IndexStore | None = None) -> Router:
        """Discover skills under ``roots`` with ``profile``'s rules and build a router over them (``roots=None``:
        wherever the profile's harness looks by itself, from the current folder).

        Example requests come from each skill folder's ``routing-examples.txt`` and from the examples
        ``skill-router learn`` kept in this library's index folder.
        """
        spec = LibrarySpec.create(roots, profile=profile, pinned=pinned, excluded=excluded, index_dir=index_folder)
        return cls.from_spec(spec, config, encoder=encoder, store=store)

    @classmethod
    def from_catalog(cls, path: str | os.PathLike[str], profile: str | Profile = "agentskills",
                     config: RouterConfig | None = None, *, index_folder: str | None = None,
                     pinned: Iterable[str] = (), excluded: Iterable[str] = (), encoder: Any = None,
                     store: IndexStore | None = None) -> Router:
        """A router over a JSONL catalogue of ``{"id", "name", "description"}`` rows."""
        spec = LibrarySpec.create(catalog=path, profile=profile, pinned=pinned, excluded=excluded,
                                  index_dir=index_folder)
        return cls.from_spec(spec, config, encoder=encoder, store=store)

    def with_config(self, config: RouterConfig | None = None, **changes: Any) -> Router:
        """A router over the same library with ``config`` (or this config with ``changes``). The built index is
        shared when only ranking fields changed; otherwise the new router's index is built now."""
        new = (config or self.config).with_(**changes)
        return Router(self._index.with_config(new), pinned=self._pinned_names, excluded=self._excluded_names)

    def with_examples(self, examples: Mapping[str, Sequence[str]], *, persist: bool = True,
                      progress: bool = False) -> Router:
        """A router whose skills also have these example requests (skill id or name -> requests); only the new
        requests are embedded. ``persist`` False writes nothing."""
        return self._over(self._index.source.with_examples(examples), persist, progress)

    def without_examples(self, texts: Iterable[str], *, persist: bool = True) -> Router:
        """A router whose skills no longer have these example requests (``tune`` scoring dev requests that were
        learned: a request is never its own example). ``persist`` False writes nothing."""
        return self._over(self._index.source.without_examples(texts), persist, False)

    def _over(self, source: LibrarySource, persist: bool, progress: bool) -> Router:
        index = LibraryIndex.create(source, store=self._index.store, persist=persist, progress=progress)
        return Router(index, pinned=self._pinned_names, excluded=self._excluded_names)

    # -- what it holds ------------------------------------------------------------------------------------------
    @property
    def index(self) -> LibraryIndex:
        """The built index this router ranks with."""
        return self._index

    @property
    def source(self) -> LibrarySource:
        """The library the index was built from (its skills, profile and config)."""
        return self._index.source

    @property
    def spec(self) -> LibrarySpec:
        return self._index.spec

    @property
    def config(self) -> RouterConfig:
        """The parameters (read-only: :meth:`with_config` makes a router with others)."""
        return self._index.config

    @property
    def registry(self) -> SkillRegistry:
        return self._index.registry

    @property
    def profile(self) -> Profile:
        return self._index.profile

    @property
    def skills(self) -> tuple[Skill, ...]:
        return self._index.registry.skills

    @property
    def notes(self) -> list[str]:
        """What reading and building the library noted (a copy)."""
        return list(self._index.notes)

    @property
    def index_folder(self) -> str | None:
        """The folder the index is kept in (None for an index in a database)."""
        return self._index.index_folder

    @property
    def learned_folder(self) -> str:
        """Where ``learn`` adds examples: the library's own folder (shared by every profile), or the index folder."""
        return self._index.spec.learned_folder

    @property
    def learned(self) -> dict[str, list[str]]:
        """The learned examples this router uses, by skill id (``eval`` warns when its requests are among them)."""
        return {k: list(v) for k, v in self._index.learned.items()}

    @property
    def build_report(self) -> BuildReport | None:
        """What building the index did."""
        return self._index.report

    @property
    def embedded_count(self) -> int:
        """How many texts building the index embedded."""
        report = self._index.report
        return report.embedded if report is not None else 0

    @property
    def saved(self) -> bool | None:
        """Whether building saved the index (None: nothing to save)."""
        report = self._index.report
        return report.saved if report is not None else None

    def skill_by_id(self, ident: str) -> Skill:
        """The skill whose ranking id is ``ident``."""
        try:
            return self._by_id[ident]
        except KeyError:
            raise SkillNotFoundError(f"no skill with id '{ident}'") from None

    def _check_names(self, names: Iterable[str], what: str) -> frozenset[str]:
        return named_ids(self.registry, names, what)

    def signal_texts(self) -> dict[str, list[str]]:
        """Each signal's text (:meth:`router.signals.base.Signal.text`) for each skill, in skill order."""
        return self.source.signal_texts()

    def index_texts(self) -> list[str]:
        """The text the ``bm25`` signal indexes for each skill, in skill order."""
        return self.source.index_texts()

    def dense_texts(self) -> list[str]:
        """The text the ``dense`` signal embeds for each skill, in skill order."""
        return self.source.dense_texts()

    def body_texts(self) -> list[str]:
        """The body text the ``body_*`` signals index for each skill ('' for none), in skill order."""
        return self.source.body_texts()

    # -- the encoder and the indexes ----------------------------------------------------------------------------
    @property
    def encoder(self) -> Encoder:
        """The embedding model that embedded the index (the bundled all-MiniLM-L6-v2 unless the config names one):
        its checked ONNX export when one is cached, else sentence-transformers loaded on first use
        (:mod:`router.encoders`)."""
        return self._index.encoder

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        """Unit embeddings of ``texts`` as the library's texts are embedded, shape (len(texts), dim), in the
        encoder's own batch size."""
        return self._index.source.encode(texts, progress=progress)

    def encode_requests(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        """Unit embeddings of requests as routing embeds them (:meth:`router.index.LibrarySource.encode_requests`:
        the int8 request graph where the export has one)."""
        return self._index.source.encode_requests(texts, progress=progress)

    @property
    def signals(self) -> Scorer:
        """The built signals (:class:`router.signals.Signals`, or a store's own)."""
        return self._index.signals

    # -- scoring ------------------------------------------------------------------------------------------------
    def conversation(self, query: Query) -> Conversation:
        """What ``query`` routes: the text itself, or a conversation's last user turn and earlier user turns.
        Raises :class:`ConfigError` for an empty request."""
        if isinstance(query, str):
            if not query.strip():
                raise ConfigError("the request is empty: give the text to route")
            return Conversation(safe_text(query))
        turns = conversation_text(query)
        return Conversation(safe_text(turns.request), safe_text(turns.context))

    def score_many(self, queries: Sequence[Query], *, progress: bool = False) -> Scored:
        """Each signal's scores for many requests at once; every request and context is embedded in one batch."""
        return self._score([self.conversation(q) for q in queries], progress=progress)

    def _score(self, turns: Sequence[Conversation], *, progress: bool = False) -> Scored:
        texts = [t.request for t in turns]
        use_context = self.config.context_weight > 0
        rows = np.array([i for i, t in enumerate(turns) if use_context and t.context.strip()], dtype=np.int64)
        contexts = [turns[i].context for i in rows]
        if self.config.glosses:  # Chinese words scored with their English glosses too (router.glossary)
            routed, contexts = [glossary.with_glosses(t) for t in texts], [glossary.with_glosses(c) for c in contexts]
        else:
            routed = texts
        signals = self.signals
        prefetch = getattr(signals, "prefetch", None)  # a store that reads what needs no vector while embedding
        if prefetch is not None:
            prefetch(routed)
        vectors = self.encode_requests(routed + contexts, progress=progress)
        scores = signals.score(routed, vectors[:len(texts)])
        context = signals.score(contexts, vectors[len(texts):]) if len(rows) else {}
        return Scored(tuple(texts), vectors[:len(texts)], scores, context, rows)

    def fuse(self, scored: Scored, *, without: Iterable[str] = ()) -> np.ndarray:
        """The fused score of every skill for every request (requests x skills), by the config's fusion; a
        conversation adds ``context_weight`` times the fused score of its earlier turns. ``without`` leaves
        signals out (e.g. ``{"examples"}``)."""
        left_out = set(without)
        config = self.config
        lexical = lexical_names()

        def fused(scores: Mapping[str, np.ndarray]) -> np.ndarray:
            kept = {name: values for name, values in scores.items() if name not in left_out}
            # A lexical signal ranks only the skills sharing a word with the request: the others get no RRF credit
            # for where the id order put them among the zeros (only reciprocal rank fusion reads it).
            present = {name: values > 0 for name, values in kept.items() if name in lexical} \
                if config.fusion == "rrf" else None
            weights = config.weights if "passages" in kept else passage_index.weights_without(dict(config.weights))
            if "name_dense" in kept:  # present only where the library's names count (router.signals.name_dense)
                weights = name_weights(weights, config)
            return fuse_score_arrays(kept, weights, method=config.fusion, tie_order=self.order,
                                     rrf_k=config.rrf_k, present=present, steady=self._steady)

        total = fused(scored.signals)
        if len(scored.context_rows):
            total[scored.context_rows] += config.context_weight * fused(scored.context)
        if config.split_weight > 0:  # a request of several parts: its parts' best scores count too (router.split)
            total = split.with_parts(scored.texts, total, lambda parts: fused(
                self._score([Conversation(p) for p in parts]).signals), config.split_weight)
        return total

    # -- ranking ------------------------------------------------------------------------------------------------
    def rank_scored(self, scored: Scored, k: int | None = None, *, fused: np.ndarray | None = None,
                    without: Iterable[str] = (), pinned: frozenset[str] | None = None,
                    excluded: frozenset[str] | None = None) -> list[tuple[Match, ...]]:
        """The ranking rules (:mod:`router.ranking`) applied to every row of ``scored`` (fused by :meth:`fuse`
        unless ``fused`` is given): each request's top-``k`` matches, named skills among them, pinned ones after
        them, excluded ones never (``pinned`` / ``excluded``: skill ids, default the router's own)."""
        self._require_skills()
        k = self._k(k)
        left_out = set(without)
        if fused is None:
            fused = self.fuse(scored, without=left_out)
        excluded_mask = self._mask(self.excluded if excluded is None else excluded)
        pinned_mask = self._mask(self.pinned if pinned is None else pinned)
        out = []
        for row, text in enumerate(scored.texts):
            per_signal = {n: v[row] for n, v in scored.signals.items() if n not in left_out}
            chosen = choose(fused[row], self.order, k, named=self._names.named(text), excluded=excluded_mask,
                            pinned=pinned_mask)
            out.append(matches(chosen, self.skills, fused[row], per_signal, self.order, self._steady))
        return out

    def _require_skills(self) -> None:
        if not self.skills:
            raise EmptyLibraryError("the library has no skills, so there is nothing to rank: add skill folders "
                                    "(each with a SKILL.md) or catalogue rows first")

    def _mask(self, ids: frozenset[str]) -> np.ndarray | None:
        return np.array([s.id in ids for s in self.skills], dtype=bool) if ids else None

    def _k(self, k: int | None) -> int:
        k = self.config.k if k is None else k
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ConfigError(f"k must be a whole number >= 1, got {k!r}")
        return min(int(k), len(self.skills))

    def choices(self, pin: Iterable[str] = (), exclude: Iterable[str] = ()) -> tuple[frozenset[str], frozenset[str]]:
        """The ids pinned and excluded for one request: the router's own and ``pin`` / ``exclude`` (names or ids).
        Raises :class:`ConfigError` naming a skill that is not in the library."""
        def resolve(names: Iterable[str], what: str) -> frozenset[str]:
            out = set()
            for name in names:
                skill = self.registry.lookup(name)
                if skill is None:
                    raise ConfigError(f"{what} skill '{name}' is not in the library; 'skill-router list' or GET "
                                      "/v1/skills lists them")
                out.add(skill.id)
            return frozenset(out)

        return self.pinned | resolve(pin, "pinned"), self.excluded | resolve(exclude, "excluded")

    def rank_many(self, queries: Sequence[Query], k: int | None = None, *, pin: Iterable[str] = (),
                  exclude: Iterable[str] = ()) -> list[tuple[Match, ...]]:
        """The top-``k`` matches of each request, best first (one batch: see :meth:`score_many`); ``pin`` and
        ``exclude`` add skills to pin and exclude for these requests only."""
        if not queries:
            return []
        self._require_skills()
        pinned, excluded = self.choices(pin, exclude)
        with requested_k(self._k(k)):
            scored = self.score_many(queries)
        return self.rank_scored(scored, k, pinned=pinned, excluded=excluded)

    def rank(self, query: Query, k: int | None = None, *, pin: Iterable[str] = (),
             exclude: Iterable[str] = ()) -> list[Match]:
        """The top-``k`` matches for ``query``, best first."""
        return list(self.rank_many([query], k, pin=pin, exclude=exclude)[0])

    def route_many(self, queries: Sequence[Query], k: int | None = None, *, pin: Iterable[str] = (),
                   exclude: Iterable[str] = ()) -> list[Routing]:
        """Route many requests in one batch: for each, the ranking and the skills the catalogue shows. ``pin`` and
        ``exclude`` (names or ids) add skills to pin and exclude for these requests only: the router itself never
        changes, so one router serves requests with different choices at once."""
        pinned, excluded = self.choices(pin, exclude)
        turns = [self.conversation(q) for q in queries]  # every request is checked, even when none is routed
        skills = self.skills
        if not skills:
            return [Routing(matches=(), shown=(), routed=False) for _ in turns]
        if len(skills) <= self.config.route_above:
            shown = tuple(s for s in skills if s.id not in excluded)
            return [Routing(matches=(), shown=shown, routed=False) for _ in turns]
        with requested_k(self._k(k)):
            scored = self._score(turns)
        ranked = self.rank_scored(scored, k, pinned=pinned, excluded=excluded)
        excluded_mask = self._mask(excluded)
        cosine = confidence_scores(scored.signals)
        unfit = abstain.unfit(self.no_skill_features(scored, excluded_mask)) if self.config.no_skill else None
        out = []
        for row, found in enumerate(ranked):
            sure = confidence(cosine[row], excluded_mask)
            no_skill = unfit is not None and bool(unfit[row]) and all(m.reason != "named" for m in found)
            abstained = self.config.threshold is not None and sure < self.config.threshold
            chosen = {m.id for m in found}
            if abstained and self.config.on_abstain == "empty":
                chosen = {m.id for m in found if m.reason == "named"}
            chosen |= pinned
            shown = tuple(skills[i] for i in sorted(self._positions.first(x) for x in chosen if x not in excluded))
            out.append(Routing(matches=found, shown=shown, abstained=abstained, confidence=sure,
                               no_skill=no_skill))
        return out

    def no_skill_features(self, scored: Scored, excluded: np.ndarray | None = None) -> np.ndarray:
        """The "no skill fits" model's numbers for each request of ``scored`` (:func:`router.abstain.features`:
        requests x 5 where the library embeds its bodies' passages, else x 4), over the skills that may be shown
        (``excluded``: a mask of those that may not)."""
        cosine, lexical_name = confidence_scores(scored.signals), abstain.lexical_signal(scored.signals)
        best = [confidence(row, excluded) for row in cosine]
        lexical, matched = abstain.lexical_evidence(scored.signals[lexical_name], excluded) if lexical_name \
            else (np.zeros(len(best)), np.zeros(len(best)))
        everyday = abstain.everyday_cosines(scored.vectors, self.encoder.model_id, self.encode)
        chance = self._chance(int(scored.vectors.shape[1]))
        passage = abstain.passage_evidence(scored.signals, excluded)
        return abstain.features(np.array(best), everyday, lexical, matched, chance, passage)

    def _chance(self, dim: int) -> abstain.Chance:
        """The library's chance level: as the store keeps it with the index (computed when the index was built),
        else computed on this first need (an index saved before it was kept, or by another recipe)."""
        stored = self._index.chance
        if isinstance(stored, abstain.Chance):
            return stored
        return abstain.chance_level(self.signals, self.signals.score, confidences, abstain.everyday_vectors(
            self.encoder.model_id, self.encode, dim), self.encoder.model_id, self._saved_identity())

    def _saved_identity(self) -> bytes | None:
        """Bytes that change whenever the saved index does: its manifest (the skills' content hashes, the
        generation and the checksum of every file in it) and the passages' body digests, which the manifest does
        not cover; None for an index that is not in a folder (the chance level is then kept in memory only)."""
        from router.store import MANIFEST

        folder = self.index_folder
        if not folder:
            return None
        try:
            with open_regular(os.path.join(folder, MANIFEST)) as handle:
                manifest = handle.read()
        except OSError:
            return None
        passages = getattr(self.signals, "indexes", {}).get("passages")
        bodies = getattr(passages, "bodies", None)
        return manifest + (b"" if bodies is None else b"\0passages\0" + np.ascontiguousarray(bodies).tobytes())

    def route(self, query: Query, k: int | None = None, *, pin: Iterable[str] = (),
              exclude: Iterable[str] = ()) -> Routing:
        """Route ``query``: the ranking, and the skills the catalogue shows."""
        return self.route_many([query], k, pin=pin, exclude=exclude)[0]

    # -- what the harness sees ----------------------------------------------------------------------------------
    def render(self, query: Query | None = None, k: int | None = None) -> str:
        """The profile's catalogue holding only the chosen skills (all of them when ``query`` is None)."""
        shown = self.skills if query is None else self.route(query, k).shown
        return self.profile.render(list(shown))

    def inject(self, messages: Sequence[Mapping[str, Any]], k: int | None = None) -> list[dict[str, Any]]:
        """``messages`` with the routed catalogue injected idempotently (the genkit rule)."""
        return injection.inject(messages, self.render(messages, k))

    def tool(self) -> ToolSpec | None:
        """The profile's skill tool for the whole library."""
        return self.profile.tool(list(self.skills))

    def call_tool(self, arguments: Mapping[str, Any] | str | None, call_name: str | None = None) -> str:
        """Answer a skill-tool call for any registered skill, exactly as the harness does."""
        return self.profile.call_tool(self.registry, arguments, call_name)

    def load_skill(self, name: str) -> str:
        """What the skill tool answers when the model loads the skill called ``name`` (the one call path of the
        ``use`` command, ``POST /v1/tool {"name"}`` and the MCP ``load_skill`` tool)."""
        arguments, call_name = self.profile.skill_call(name, list(self.skills))
        return self.call_tool(arguments, call_name)



def named_ids(registry: SkillRegistry, names: Iterable[str], what: str) -> frozenset[str]:
    """The ids of the skills ``names`` (names or ids) name; raises :class:`SkillNotFoundError` for one that is not
    in the library (``what``: ``pinned`` or ``excluded``)."""
    chosen = set()
    for name in names:
        skill = registry.lookup(name)
        if skill is None:
            raise SkillNotFoundError(f"{what} skill '{name}' is not in the library; run 'skill-router list'")
        chosen.add(skill.id)
    return frozenset(chosen)
