"""The Router: choose which skills a catalogue shows, and nothing about how it shows them.

Two lines::

    router = Router.from_skills(["skills"], profile="genkit")
    print(router.render("what will the weather be like tomorrow in Lyon?"))

Public surface:

- construction: :meth:`Router.from_skills`, :meth:`Router.from_catalog`; :meth:`Router.with_config` and
  :meth:`Router.with_examples` return a new router (a router never changes under its users);
- routing: :meth:`Router.route` / :meth:`Router.route_many` (what the catalogue shows), :meth:`Router.rank` /
  :meth:`Router.rank_many` (the ranked matches), :meth:`Router.score_many` and :meth:`Router.fuse` (the scores
  underneath, for evaluation and tuning), :meth:`Router.build` (index now rather than on the first request);
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
6. "No skill fits" (``no_skill``, :mod:`router.abstain`): set when the request is closer to an everyday request
   than to any skill; only the surfaces in front of an agent act on it.

Every request, one or many, goes through the same batch path (:meth:`Router.score_many`, :meth:`Router.fuse`,
:meth:`Router.rank_scored`), so the CLI, the evaluation, tuning and the benchmarks rank exactly as the router does.
Rendering, injection and the skill tool are the profile's own (:mod:`router.profiles`); the tool loads every
registered skill, shown or not.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from indexes.fusion import fuse_score_arrays, tie_order
from router import abstain, encoders, split
from router import inject as injection
from router import passages as passage_index
from router import library as libraries
from router import progress as steps
from router.config import RouterConfig
from router.conversation import Conversation, conversation_text
from router.errors import ConfigError, EmptyLibraryError, ModelError, SkillNotFoundError
from router.learned import load_learned
from router.profiles import Profile, ToolSpec
from router.ranking import Match, NameTable, Routing, choose, confidence, confidence_scores, matches
from router.registry import SkillRegistry
from router.safetext import safe_text
from router.signals import BuildReport, Signals, build_signals, lexical_names, registry
from router.skill import Skill
from router.spec import LibrarySpec
from router.store import IndexFolder
from router.texts import body_text, dense_text, index_text

if TYPE_CHECKING:
    from indexes.base import Encoder
    from router.index import LibraryIndex

__all__ = ["Match", "Query", "Router", "Routing", "Scored"]

Query = str | Sequence[Mapping[str, Any]]


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


#: Fewer texts than this are embedded without a progress row (a request or two takes milliseconds).
MANY_TEXTS = 32


class Router:
    """Routes requests to the skills of one library, for one harness profile (see the module docstring)."""

    def __init__(self, registry: SkillRegistry, profile: Profile, config: RouterConfig | None = None, *,
                 index_folder: str | None = None, library: str = "", pinned: Iterable[str] = (),
                 excluded: Iterable[str] = (), encoder: Encoder | None = None, notes: Sequence[str] = (),
                 signals: Signals | None = None, learned_folder: str | None = None,
                 learned: Mapping[str, Sequence[str]] | None = None) -> None:
        """Assemble a router from parts that are already built; prefer :meth:`from_skills` or
        :meth:`from_catalog`. ``signals`` are indexes already built for exactly these skills and config."""
        self._registry = registry
        self._profile = profile
        self._config = config or RouterConfig()
        self._library = library
        self.index_folder = index_folder
        #: Where ``learn`` adds examples: the library's own folder (shared by every profile), or the index folder.
        self.learned_folder = learned_folder or index_folder
        #: The learned examples this router uses, by skill id (``eval`` warns when its requests are among them).
        self.learned: dict[str, list[str]] = {k: list(v) for k, v in (learned or {}).items()}
        self.notes: list[str] = list(notes)
        self._encoder = encoder
        self._own_encoder = False  # an encoder passed in is the caller's: never swapped for an export
        self._signals = signals
        self._by_id = {s.id: s for s in registry}
        self._pinned_names, self._excluded_names = tuple(pinned), tuple(excluded)
        self.pinned = self._check_names(self._pinned_names, "pinned")
        self.excluded = self._check_names(self._excluded_names, "excluded")
        self._names: NameTable | None = None
        self._order: np.ndarray | None = None
        self.embedded_count = 0
        self.saved: bool | None = None
        #: What the last :meth:`build` did (None before one).
        self.build_report: BuildReport | None = None

    # -- construction -------------------------------------------------------------------------------------------
    @classmethod
    def from_spec(cls, spec: LibrarySpec, config: RouterConfig | None = None, *,
                  encoder: Encoder | None = None) -> Router:
        """A router over the library ``spec`` describes (:mod:`router.spec`): its skills discovered once, its index
        folder and learned examples where the spec says. Nothing is indexed until a route needs it."""
        confine = spec.confine or (config is not None and config.confine)
        if spec.catalog is None:
            with steps.step("reading the skills"):
                loaded = spec.load(confine=confine)
        else:
            loaded = spec.load()
        return cls._assemble(loaded, config, spec.index_folder, spec.key, spec.pinned, spec.excluded, encoder,
                             spec.learned_folder)

    @classmethod
    def from_index(cls, index: LibraryIndex) -> Router:
        """A router over an index already built (:meth:`router.index.LibraryIndex.build`): it routes at once and
        never builds; requests are embedded by the model that embedded the index."""
        spec = index.spec
        return cls(index.registry, index.profile, index.config, index_folder=spec.index_folder, library=spec.key,
                   pinned=spec.pinned, excluded=spec.excluded, encoder=index.encoder, notes=index.notes,
                   signals=index.signals, learned_folder=spec.learned_folder, learned=index.learned)

    @classmethod
    def from_skills(cls, roots: Sequence[str | os.PathLike[str]] | str | os.PathLike[str] | None = ("skills",),
                    profile: str | Profile = "agentskills", config: RouterConfig | None = None, *,
                    index_folder: str | None = None, pinned: Iterable[str] = (), excluded: Iterable[str] = (),
                    encoder: Any = None) -> Router:
        """Discover skills under ``roots`` with ``profile``'s rules and build a router over them (``roots=None``:
        wherever the profile's harness looks by itself, from the current folder).

        Example requests come from each skill folder's ``routing-examples.txt`` and from the examples
        ``skill-router learn`` kept in this library's index folder.
        """
        spec = LibrarySpec.create(roots, profile=profile, pinned=pinned, excluded=excluded, index_dir=index_folder)
        return cls.from_spec(spec, config, encoder=encoder)

    @classmethod
    def from_catalog(cls, path: str | os.PathLike[str], profile: str | Profile = "agentskills",
                     config: RouterConfig | None = None, *, index_folder: str | None = None,
                     pinned: Iterable[str] = (), excluded: Iterable[str] = (), encoder: Any = None) -> Router:
        """A router over a JSONL catalogue of ``{"id", "name", "description"}`` rows."""
        spec = LibrarySpec.create(catalog=path, profile=profile, pinned=pinned, excluded=excluded,
                                  index_dir=index_folder)
        return cls.from_spec(spec, config, encoder=encoder)

    @classmethod
    def _assemble(cls, loaded: libraries.Library, config: RouterConfig | None, folder: str, key: str,
                  pinned: Iterable[str], excluded: Iterable[str], encoder: Any, learned_at: str) -> Router:
        registry, notes = loaded.registry, list(loaded.notes)
        owner = IndexFolder(folder).built_for()
        # Examples learned before they were kept per library lie in the profile's index folder: still read.
        learned = load_learned(folder) if owner in (None, key) else {}
        if owner not in (None, key) and load_learned(folder):
            notes.append(f"the learned examples in {folder} were learned for another library; not using them")
        if learned_at != folder:
            for skill_id, queries in load_learned(learned_at).items():
                known_queries = learned.setdefault(skill_id, [])
                known_queries.extend(q for q in queries if q not in known_queries)
        if learned:
            known = {s.id for s in registry}
            unknown = sorted(k for k in learned if k not in known)
            if unknown:
                notes.append(f"ignoring learned examples of skills no longer in the library: {', '.join(unknown[:5])}")
            learned = {k: v for k, v in learned.items() if k in known}
            registry, _ = libraries.with_examples(registry, learned)
        return cls(registry, loaded.profile, config, index_folder=folder, library=key, pinned=pinned,
                   excluded=excluded, encoder=encoder, notes=notes, learned_folder=learned_at, learned=learned)

    def with_config(self, config: RouterConfig | None = None, **changes: Any) -> Router:
        """A router over the same library with ``config`` (or this config with ``changes``). The built indexes
        are shared when the text they index and the model are unchanged; otherwise the new router rebuilds."""
        new = (config or self._config).with_(**changes)
        same_index = new.index_part() == self._config.index_part()
        return Router(self._registry, self._profile, new, index_folder=self.index_folder, library=self._library,
                      pinned=self._pinned_names, excluded=self._excluded_names,
                      encoder=self._encoder if new.model == self._config.model else None, notes=self.notes,
                      signals=self._signals if same_index else None, learned_folder=self.learned_folder,
                      learned=self.learned)

    def with_examples(self, examples: Mapping[str, Sequence[str]]) -> Router:
        """A router whose skills also have these example requests (skill id or name -> requests); only the new
        requests are embedded when it is built."""
        registry, _ = libraries.with_examples(self._registry, examples)
        return self._with_registry(registry)

    def without_examples(self, texts: Iterable[str]) -> Router:
        """A router whose skills no longer have these example requests (``tune`` scoring dev requests that were
        learned: a request is never its own example)."""
        dropped = set(texts)
        registry = SkillRegistry([dataclasses.replace(s, examples=tuple(e for e in s.examples if e not in dropped))
                                  for s in self._registry], discovery=self._registry.discovery)
        return self._with_registry(registry)

    def _with_registry(self, registry: SkillRegistry) -> Router:
        """This router over ``registry`` (the same skills with other examples): same config, encoder, choices."""
        return Router(registry, self._profile, self._config, index_folder=self.index_folder, library=self._library,
                      pinned=self._pinned_names, excluded=self._excluded_names, encoder=self._encoder,
                      notes=self.notes, learned_folder=self.learned_folder, learned=self.learned)

    # -- what it holds ------------------------------------------------------------------------------------------
    @property
    def config(self) -> RouterConfig:
        """The parameters (read-only: :meth:`with_config` makes a router with others)."""
        return self._config

    @property
    def registry(self) -> SkillRegistry:
        return self._registry

    @property
    def profile(self) -> Profile:
        return self._profile

    @property
    def skills(self) -> tuple[Skill, ...]:
        return self._registry.skills

    def skill_by_id(self, ident: str) -> Skill:
        """The skill whose ranking id is ``ident``."""
        try:
            return self._by_id[ident]
        except KeyError:
            raise SkillNotFoundError(f"no skill with id '{ident}'") from None

    def _check_names(self, names: Iterable[str], what: str) -> frozenset[str]:
        chosen = set()
        for name in names:
            skill = self._registry.lookup(name)
            if skill is None:
                raise SkillNotFoundError(f"{what} skill '{name}' is not in the library; run 'skill-router list'")
            chosen.add(skill.id)
        return frozenset(chosen)

    def signal_texts(self) -> dict[str, list[str]]:
        """Each signal's text (:meth:`router.signals.base.Signal.text`) for each skill, in skill order."""
        return {name: [signal.text(s, self._config) for s in self.skills] for name, signal in registry().items()}

    def index_texts(self) -> list[str]:
        """The text the ``bm25`` signal indexes for each skill, in skill order."""
        return [index_text(s) for s in self.skills]

    def dense_texts(self) -> list[str]:
        """The text the ``dense`` signal embeds for each skill, in skill order."""
        return [dense_text(s, with_name=self._config.dense_name) for s in self.skills]

    def body_texts(self) -> list[str]:
        """The body text the ``body_*`` signals index for each skill ('' for none), in skill order."""
        return [body_text(s.body, self._config.body, self._config.body_tokens) for s in self.skills]

    # -- the encoder and the indexes ----------------------------------------------------------------------------
    @property
    def encoder(self) -> Encoder:
        """The embedding model (the bundled all-MiniLM-L6-v2 unless the config names one): its checked ONNX export
        when one is cached, else sentence-transformers loaded on first use (:mod:`router.encoders`)."""
        if self._encoder is None:
            self._encoder = encoders.choose(self._config.model, self.notes)
            self._own_encoder = True
        return self._encoder

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        """Unit embeddings of ``texts``, shape (len(texts), dim), in the encoder's own batch size."""
        from indexes import ModelLoadError

        if not texts:
            return np.zeros((0, self.encoder.dim), dtype=np.float32)
        try:
            encoder = self.encoder
            if not steps.active():
                return encoder.encode(list(texts), progress=progress)
            load = getattr(encoder, "load", None)  # sentence-transformers: its import alone takes seconds
            if getattr(encoder, "loaded", True) is False and load is not None:
                with steps.step("loading the embedding model (sentence-transformers)"):
                    load()
            if len(texts) < MANY_TEXTS:
                return encoder.encode(list(texts), progress=False)
            with steps.step(f"embedding {len(texts):,} texts", total=len(texts)) as advance:
                return encoder.encode(list(texts), progress=advance)
        except ModelLoadError as exc:
            raise ModelError(str(exc)) from None

    def build(self, *, progress: bool = False, persist: bool = True) -> Router:
        """Build (or refresh) the indexes now, embedding only texts the index folder does not hold yet."""
        from router.version import package_version

        folder = IndexFolder(self.index_folder, self._library, package_version()) if self.index_folder else None
        if steps.active() and (folder is None or folder.built_for() is None):
            steps.note(f"first build of the index of {len(self.skills):,} skills: each skill is embedded once (and the "
                       "model exported to ONNX, once per machine); later runs reuse it")
        parameters = {"profile": self._profile.name, **self._config.index_parameters()}
        with steps.step(f"building the index of {len(self.skills):,} skills"):
            self._signals, report = build_signals(
                self.skills, self.signal_texts(), embed_bodies=self._config.embeds_bodies,
                model_id=self.encoder.model_id,
                dim=self.encoder.dim,
                encode=lambda texts: self.encode(texts, progress=progress), folder=folder,
                parameters=parameters, persist=persist)
        self.__dict__.pop("passages", None)  # router.passages: found again for the skills as they are now (unless
        # nothing may be written yet, then on first use, beside the index once it is saved)
        if persist and self._config.weights["passages"] > 0 and any(s.body for s in self.skills):
            with steps.step("indexing the passages of the skills' bodies"):
                _ = self.passages
        self._report(report)
        if report.embedded and self._own_encoder:
            from indexes import Encoder

            if isinstance(self._encoder, Encoder) and encoders.onnx_enabled():
                with steps.step("exporting the embedding model to ONNX (once per machine)"):
                    self._encoder = encoders.export_for_next_time(self._encoder, self.notes)
        return self

    def _report(self, report: BuildReport) -> None:
        self.build_report = report
        self.embedded_count = report.embedded
        self.saved = report.saved
        self.notes.extend(report.notes)

    @property
    def signals(self) -> Signals:
        """The built indexes (built on first use)."""
        if self._signals is None:
            self.build()
        assert self._signals is not None
        return self._signals

    @property
    def order(self) -> np.ndarray:
        """Each skill's position in id order: the one tie-break (:func:`indexes.fusion.tie_order`)."""
        if self._order is None:
            self._order = tie_order([s.id for s in self.skills])
        return self._order

    @functools.cached_property
    def _positions(self) -> dict[str, int]:
        """Each skill's position by id (what a routing shows is found without walking the library)."""
        return {s.id: i for i, s in enumerate(self.skills)}

    @functools.cached_property
    def passages(self) -> passage_index.PassageIndex | None:
        """The passage index of the skills' bodies (:mod:`router.passages`), None when no skill has a body; found
        or built on first use, then kept."""
        return passage_index.for_skills([s.id for s in self.skills], [s.body or "" for s in self.skills],
                                        self.index_folder)

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
        use_context = self._config.context_weight > 0
        rows = np.array([i for i, t in enumerate(turns) if use_context and t.context.strip()], dtype=np.int64)
        contexts = [turns[i].context for i in rows]
        signals = self.signals
        vectors = self.encode(texts + contexts, progress=progress)
        scores = signals.score(texts, vectors[:len(texts)])
        context = signals.score(contexts, vectors[len(texts):]) if len(rows) else {}
        if self._config.weights["passages"] > 0 and (found := self.passages) is not None:  # router.passages
            passages = registry()["passages"]  # its index is the router's, scored by the signal as the others are
            scores["passages"] = passages.score(found, texts, vectors[:len(texts)], scores)
            if len(rows):
                context["passages"] = passages.score(found, contexts, vectors[len(texts):], context)
        return Scored(tuple(texts), vectors[:len(texts)], scores, context, rows)

    def fuse(self, scored: Scored, *, without: Iterable[str] = ()) -> np.ndarray:
        """The fused score of every skill for every request (requests x skills), by the config's fusion; a
        conversation adds ``context_weight`` times the fused score of its earlier turns. ``without`` leaves
        signals out (e.g. ``{"examples"}``)."""
        left_out = set(without)
        config = self._config
        lexical = lexical_names()

        def fused(scores: Mapping[str, np.ndarray]) -> np.ndarray:
            kept = {name: values for name, values in scores.items() if name not in left_out}
            # A lexical signal ranks only the skills sharing a word with the request: the others get no RRF credit
            # for where the id order put them among the zeros.
            present = {name: values > 0 for name, values in kept.items() if name in lexical}
            weights = config.weights if "passages" in kept else passage_index.weights_without(dict(config.weights))
            return fuse_score_arrays(kept, weights, method=config.fusion, tie_order=self.order,
                                     rrf_k=config.rrf_k, present=present)

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
        if not self.skills:
            raise EmptyLibraryError("the library has no skills, so there is nothing to rank: add skill folders "
                                    "(each with a SKILL.md) or catalogue rows first")
        k = self._k(k)
        left_out = set(without)
        if fused is None:
            fused = self.fuse(scored, without=left_out)
        if self._names is None:
            self._names = NameTable.build(self.skills)
        excluded_mask = self._mask(self.excluded if excluded is None else excluded)
        pinned_mask = self._mask(self.pinned if pinned is None else pinned)
        out = []
        for row, text in enumerate(scored.texts):
            per_signal = {n: v[row] for n, v in scored.signals.items() if n not in left_out}
            chosen = choose(fused[row], self.order, k, named=self._names.named(text), excluded=excluded_mask,
                            pinned=pinned_mask)
            out.append(matches(chosen, self.skills, fused[row], per_signal, self.order))
        return out

    def _mask(self, ids: frozenset[str]) -> np.ndarray | None:
        return np.array([s.id in ids for s in self.skills], dtype=bool) if ids else None

    def _k(self, k: int | None) -> int:
        k = self._config.k if k is None else k
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ConfigError(f"k must be a whole number >= 1, got {k!r}")
        return min(int(k), len(self.skills))

    def choices(self, pin: Iterable[str] = (), exclude: Iterable[str] = ()) -> tuple[frozenset[str], frozenset[str]]:
        """The ids pinned and excluded for one request: the router's own and ``pin`` / ``exclude`` (names or ids).
        Raises :class:`ConfigError` naming a skill that is not in the library."""
        def resolve(names: Iterable[str], what: str) -> frozenset[str]:
            out = set()
            for name in names:
                skill = self._registry.lookup(name)
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
        pinned, excluded = self.choices(pin, exclude)
        return self.rank_scored(self.score_many(queries), k, pinned=pinned, excluded=excluded)

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
        if len(skills) <= self._config.route_above:
            shown = tuple(s for s in skills if s.id not in excluded)
            return [Routing(matches=(), shown=shown, routed=False) for _ in turns]
        scored = self._score(turns)
        ranked = self.rank_scored(scored, k, pinned=pinned, excluded=excluded)
        excluded_mask = self._mask(excluded)
        cosine = confidence_scores(scored.signals)
        everyday = abstain.everyday_cosines(scored.vectors, self.encoder.model_id, self.encode) \
            if self._config.no_skill else None
        out = []
        for row, found in enumerate(ranked):
            sure = confidence(cosine[row], excluded_mask)
            no_skill = everyday is not None and all(m.reason != "named" for m in found) \
                and abstain.fits_no_skill(sure, float(everyday[row]))
            abstained = self._config.threshold is not None and sure < self._config.threshold
            chosen = {m.id for m in found}
            if abstained and self._config.on_abstain == "empty":
                chosen = {m.id for m in found if m.reason == "named"}
            chosen |= pinned
            shown = tuple(skills[i] for i in sorted(self._positions[x] for x in chosen if x not in excluded))
            out.append(Routing(matches=found, shown=shown, abstained=abstained, confidence=sure,
                               no_skill=no_skill))
        return out

    def route(self, query: Query, k: int | None = None, *, pin: Iterable[str] = (),
              exclude: Iterable[str] = ()) -> Routing:
        """Route ``query``: the ranking, and the skills the catalogue shows."""
        return self.route_many([query], k, pin=pin, exclude=exclude)[0]

    # -- what the harness sees ----------------------------------------------------------------------------------
    def render(self, query: Query | None = None, k: int | None = None) -> str:
        """The profile's catalogue holding only the chosen skills (all of them when ``query`` is None)."""
        shown = self.skills if query is None else self.route(query, k).shown
        return self._profile.render(list(shown))

    def inject(self, messages: Sequence[Mapping[str, Any]], k: int | None = None) -> list[dict[str, Any]]:
        """``messages`` with the routed catalogue injected idempotently (the genkit rule)."""
        return injection.inject(messages, self.render(messages, k))

    def tool(self) -> ToolSpec | None:
        """The profile's skill tool for the whole library."""
        return self._profile.tool(list(self.skills))

    def call_tool(self, arguments: Mapping[str, Any] | str | None, call_name: str | None = None) -> str:
        """Answer a skill-tool call for any registered skill, exactly as the harness does."""
        return self._profile.call_tool(self._registry, arguments, call_name)

    def load_skill(self, name: str) -> str:
        """What the skill tool answers when the model loads the skill called ``name`` (the one call path of the
        ``use`` command, ``POST /v1/tool {"name"}`` and the MCP ``load_skill`` tool)."""
        arguments, call_name = self._profile.skill_call(name, list(self.skills))
        return self.call_tool(arguments, call_name)

