"""The Router: choose which skills a catalogue shows, and nothing about how it shows them.

Two lines::

    router = Router.from_skills(["skills"], profile="genkit")
    print(router.render("what will the weather be like tomorrow in Lyon?"))

Rules, in the order they apply:

1. A library with at most ``route_above`` skills (default 15) is shown whole, unrouted.
2. The request (or, for a conversation, the last user turn, with earlier user turns as weighted context) is
   scored by three signals (:mod:`router.signals`) and the scores are fused (``RouterConfig.fusion``).
3. Ties break by score, then id, so the same input always gives the same output.
4. A request that names a skill exactly (its name, or its name's words in order) always includes that skill:
   it takes the place of the last routed one when it is not already in the top k.
5. Excluded skills never appear; pinned skills always do (on top of the ``k`` routed ones).
6. Optional abstention: when the confidence (best cosine of the request with any description or example) is
   below ``threshold`` the routing says "no skill matches" and the catalogue shows the plain top-k or nothing.

Rendering, injection and the skill tool are the profile's own (:mod:`router.profiles`); the tool loads every
registered skill, shown or not.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from indexes.fusion import fuse_score_arrays, rank_of
from router import inject as injection
from router.catalog import load_catalog
from router.config import RouterConfig
from router.errors import ConfigError, ModelError, SkillNotFoundError
from router.profiles import Profile, ToolSpec, get_profile
from router.registry import SkillRegistry
from router.signals import Signals, example_scores
from router.skill import Skill
from router.learned import load_learned
from router.store import EmbeddingStore, default_index_folder, index_signature, text_key
from router.texts import index_text

EXAMPLES_FILE = "routing-examples.txt"
_WORDS = re.compile(r"[^\W_]+")

Query = str | Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class Match:
    """One routed skill: its fused score and rank, and each signal's score and rank."""

    id: str
    name: str
    score: float
    rank: int
    scores: Mapping[str, float] = field(default_factory=dict)
    ranks: Mapping[str, int] = field(default_factory=dict)
    reason: str = "routed"  # routed | named | pinned


@dataclass(frozen=True)
class Routing:
    """The outcome of routing one request."""

    matches: tuple[Match, ...]
    shown: tuple[Skill, ...]
    abstained: bool = False
    confidence: float = 1.0
    routed: bool = True  # False when the library is small enough to be shown whole


def conversation_text(messages: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """(last user turn, earlier user turns joined) from OpenAI- or Anthropic-style messages."""
    turns = []
    for message in messages:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            text = content
        elif isinstance(content, list):
            text = " ".join(p.get("text", "") for p in content if isinstance(p, Mapping) and p.get("type") == "text")
        else:
            text = ""
        if text.strip():
            turns.append(text.strip())
    if not turns:
        raise ConfigError("the conversation has no user turn with text: nothing to route")
    return turns[-1], " ".join(turns[:-1])


def fuse(signals: Mapping[str, np.ndarray], weights: Mapping[str, float], method: str, rrf_k: int,
         order: np.ndarray) -> np.ndarray:
    """Fuse the signals' per-skill scores (:func:`indexes.fusion.fuse_score_arrays`). BM25 ranks only the
    skills that share a word with the request; ``order`` (each skill's position in id order) breaks ties."""
    present = {"bm25": signals["bm25"] > 0} if "bm25" in signals else None
    return fuse_score_arrays(signals, weights, method=method, tie_order=order, rrf_k=rrf_k, present=present)


class Router:
    """Routes requests to the skills of one library, for one harness profile."""

    def __init__(self, registry: SkillRegistry, profile: Profile, config: RouterConfig, *,
                 index_folder: str | None = None, pinned: Iterable[str] = (), excluded: Iterable[str] = (),
                 encoder: Any = None, notes: Sequence[str] = ()) -> None:
        """Assemble a router from a built registry; prefer :meth:`from_skills` or :meth:`from_catalog`."""
        self.registry = registry
        self.profile = profile
        self.config = config
        self.index_folder = index_folder
        self.notes: list[str] = list(notes)
        self._encoder = encoder
        self._signals: Signals | None = None
        self._by_id = {s.id: s for s in registry}
        self.pinned = self._check_names(pinned, "pinned")
        self.excluded = self._check_names(excluded, "excluded")
        self._names = _name_table(registry.skills)
        self._order_cache: tuple[tuple[Skill, ...], np.ndarray] | None = None
        self.embedded_count = 0
        learned = load_learned(index_folder)
        if learned:
            unknown = sorted(k for k in learned if k not in self._by_id)
            if unknown:
                self.notes.append(f"ignoring learned examples of skills no longer in the library: "
                                  f"{', '.join(unknown[:5])}")
            self.learn({k: v for k, v in learned.items() if k in self._by_id})

    # -- construction -------------------------------------------------------------------------------------------
    @classmethod
    def from_skills(cls, roots: Sequence[str | os.PathLike[str]] | str = ("skills",), profile: str | Profile =
                    "agentskills", config: RouterConfig | None = None, *, index_folder: str | None = None,
                    pinned: Iterable[str] = (), excluded: Iterable[str] = (), encoder: Any = None) -> "Router":
        """Discover skills under ``roots`` with ``profile``'s rules and build a router over them.

        Example requests in a skill folder's ``routing-examples.txt`` (one per line, ``#`` comments) are read.
        """
        roots = [roots] if isinstance(roots, (str, os.PathLike)) else list(roots)
        profile = get_profile(profile)
        registry = SkillRegistry.discover(roots, profile, require_roots=True)
        if config is not None and config.confine:
            from router.confine import confine

            kept = confine(registry.discovery, roots)
            registry = SkillRegistry(kept.skills, discovery=kept)
        skills = [_with_sidecar_examples(s) for s in registry]
        registry = SkillRegistry(skills, discovery=registry.discovery)
        folder = index_folder or default_index_folder([os.fspath(r) for r in roots], None)
        notes = list(registry.discovery.errors if registry.discovery else ())
        return cls(registry, profile, config or RouterConfig(), index_folder=folder, pinned=pinned,
                   excluded=excluded, encoder=encoder, notes=notes)

    @classmethod
    def from_catalog(cls, path: str | os.PathLike[str], profile: str | Profile = "agentskills",
                     config: RouterConfig | None = None, *, index_folder: str | None = None,
                     pinned: Iterable[str] = (), excluded: Iterable[str] = (), encoder: Any = None) -> "Router":
        """A router over a JSONL catalogue of ``{"id", "name", "description"}`` rows."""
        skills = load_catalog(path)
        registry = SkillRegistry()
        for skill in skills:
            if skill.name in registry:  # catalogue names may repeat; the id is what rankings report
                skill = Skill(name=skill.id, description=skill.description, id=skill.id, metadata=skill.metadata,
                              examples=skill.examples)
            registry.register(skill)
        folder = index_folder or default_index_folder([], os.fspath(path))
        return cls(registry, get_profile(profile), config or RouterConfig(), index_folder=folder, pinned=pinned,
                   excluded=excluded, encoder=encoder)

    def skill_by_id(self, ident: str) -> Skill:
        """The skill whose ranking id is ``ident``."""
        try:
            return self._by_id[ident]
        except KeyError:
            raise SkillNotFoundError(f"no skill with id '{ident}'") from None

    def _check_names(self, names: Iterable[str], what: str) -> frozenset[str]:
        chosen = set()
        for name in names:
            skill = self.registry.find(name) or self._by_id.get(name)
            if skill is None:
                raise SkillNotFoundError(f"{what} skill '{name}' is not in the library; run 'skill-router list'")
            chosen.add(skill.id)
        return frozenset(chosen)

    # -- indexing -----------------------------------------------------------------------------------------------
    @property
    def skills(self) -> tuple[Skill, ...]:
        return self.registry.skills

    def index_texts(self) -> list[str]:
        return [index_text(s, body=self.config.body, body_tokens=self.config.body_tokens) for s in self.skills]

    @property
    def encoder(self) -> Any:
        if self._encoder is None:
            from indexes import Encoder, ModelLoadError

            encoder = Encoder(self.config.model)
            try:
                encoder.dim  # known without loading for the bundled model; loads any other one now
            except ModelLoadError as exc:
                raise ModelError(str(exc)) from None
            self._encoder = encoder
        return self._encoder

    def _encode(self, texts: list[str], progress: bool = False, batch_size: int = 64) -> np.ndarray:
        from indexes import ModelLoadError

        try:
            return self.encoder.encode(texts, progress=progress, batch_size=batch_size)
        except ModelLoadError as exc:
            raise ModelError(str(exc)) from None

    def build(self, *, progress: bool = False, persist: bool = True) -> "Router":
        """Build (or refresh) the indexes, embedding only texts the index folder does not hold yet."""
        from indexes import BM25Index, DenseIndex

        texts = self.index_texts()
        store = self._store()
        before = len(store)
        hashes = {s.id: text_key(store.model_id, t) for s, t in zip(self.skills, texts)}
        signature = index_signature(hashes, self._parameters())
        bm25 = store.load_index("bm25", BM25Index, signature)
        dense = store.load_index("dense", DenseIndex, signature)

        def embed(batch: list[str]) -> np.ndarray:
            return store.embed(batch, lambda missing: self._encode(missing, progress))

        self._signals = Signals.build(self.skills, texts, embed, self._encode, bm25=bm25, dense=dense)
        self.embedded_count = len(store) - before
        if persist and self.index_folder and (store.dirty or store.notes or bm25 is None or dense is None):
            keep = [text_key(store.model_id, t) for t in texts] + [
                text_key(store.model_id, e) for s in self.skills for e in s.examples if e.strip()]
            try:
                if dense is not None:  # the texts' vectors were not read this time: keep them in the cache,
                    # taken from the loaded index when the cache lost them (a corrupt vectors.npy costs nothing)
                    row = {t: i for i, t in enumerate(texts)}
                    store.embed(texts, lambda missing: dense.vectors[[row[t] for t in missing]])
                store.save(self._parameters(), hashes, keep=keep)
                store.save_indexes({"bm25": self._signals.bm25, "dense": self._signals.dense}, signature)
            except OSError as exc:
                self.notes.append(f"could not save the index to {self.index_folder}: {exc}")
        self.notes.extend(store.notes)
        return self

    def _store(self) -> EmbeddingStore:
        from router import __version__

        folder = self.index_folder or ""
        return EmbeddingStore(folder, self.encoder.model_id, self.encoder.dim, package_version=__version__) \
            if folder else EmbeddingStore("", self.encoder.model_id, self.encoder.dim)

    def _parameters(self) -> dict[str, Any]:
        return {"profile": self.profile.name, "body": self.config.body, "body_tokens": self.config.body_tokens}

    @property
    def signals(self) -> Signals:
        if self._signals is None:
            self.build()
        assert self._signals is not None
        return self._signals

    def learn(self, examples: Mapping[str, Sequence[str]]) -> int:
        """Add example requests (skill id or name -> requests) and re-index; returns how many were added."""
        added = 0
        updated = {s.id: s for s in self.skills}
        for key, requests in examples.items():
            skill = self._by_id.get(key) or self.registry.find(key)
            if skill is None:
                raise SkillNotFoundError(f"labelled skill '{key}' is not in the library")
            current = updated[skill.id]
            fresh = tuple(r for r in requests if r.strip() and r not in current.examples)
            added += len(fresh)
            updated[skill.id] = dataclasses.replace(current, examples=current.examples + fresh)
        self.registry = SkillRegistry(updated.values(), discovery=self.registry.discovery)
        self._by_id = {s.id: s for s in self.registry}
        self._signals = None
        return added

    # -- routing ------------------------------------------------------------------------------------------------
    def scores(self, query: Query) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(fused score per skill, each signal's scores) for a request or a conversation."""
        if isinstance(query, str):
            last, context = query, ""
        else:
            last, context = conversation_text(query)
        if not last.strip():
            raise ConfigError("the request is empty: give the text to route")
        signals = self.signals
        weights = dict(self.config.weights)
        per_signal = signals.scores(last)
        if not signals.has_examples:
            per_signal.pop("examples")
        order = self._order()
        fused = fuse(per_signal, weights, self.config.fusion, self.config.rrf_k, order)
        if context.strip() and self.config.context_weight > 0:
            earlier = signals.scores(context)
            if not signals.has_examples:
                earlier.pop("examples")
            fused = fused + self.config.context_weight * fuse(earlier, weights, self.config.fusion,
                                                               self.config.rrf_k, order)
        return fused, per_signal

    def _order(self) -> np.ndarray:
        """Each skill's position in id order (the tie-break), computed once per registry."""
        skills = self.skills
        if self._order_cache is None or self._order_cache[0] is not skills:
            ids = [s.id for s in skills]
            order = np.empty(len(ids), dtype=np.int64)
            order[np.argsort(np.array(ids, dtype=object), kind="stable")] = np.arange(len(ids))
            self._order_cache = (skills, order)
        return self._order_cache[1]

    def rank(self, query: Query, k: int | None = None) -> list[Match]:
        """The top-``k`` skills for ``query``, best first: named skills always among them, pinned ones after
        them, excluded ones never."""
        fused, per_signal = self.scores(query)
        text = query if isinstance(query, str) else conversation_text(query)[0]
        return self.rank_scores(text, fused, per_signal, k)

    def rank_scores(self, text: str, fused: np.ndarray, per_signal: Mapping[str, np.ndarray],
                    k: int | None = None) -> list[Match]:
        """Apply the ranking rules to already computed scores (``text`` is checked for named skills)."""
        k = self._k(k)
        order = self._order()
        skills = self.skills
        ranking = np.lexsort((order, -fused))
        if self.excluded:
            ranking = np.array([i for i in ranking if skills[i].id not in self.excluded], dtype=np.int64)
        named = [i for i in self._named(text) if skills[i].id not in self.excluded]
        # Named skills are guaranteed a place, not the first place: they replace the tail of the routed top-k and
        # keep their fused order (moving them first cost 2.3 points of hit@1 on the MetaTool dev split).
        chosen = [int(i) for i in ranking[:k]]
        if any(i not in chosen for i in named):
            others = [i for i in chosen if i not in named][: max(k - len(named), 0)]
            keep = set(named) | set(others)
            chosen = [int(i) for i in ranking[np.isin(ranking, list(keep))]]
        # Pinned skills come on top of the k routed ones (after them, so a ranking's prefix is unchanged).
        pinned = []
        if self.pinned:
            pinned = [int(i) for i in ranking if skills[i].id in self.pinned and int(i) not in chosen]
        return [
            Match(id=skills[i].id, name=skills[i].name, score=float(fused[i]), rank=position,
                  scores={n: float(v[i]) for n, v in per_signal.items()},
                  ranks={n: rank_of(v, order, i) for n, v in per_signal.items()},
                  reason="named" if i in named else "pinned" if i in pinned else "routed")
            for position, i in enumerate(chosen + pinned, start=1)
        ]

    def encode_requests(self, texts: Sequence[str], *, batch_size: int = 128, progress: bool = False
                        ) -> np.ndarray:
        """Unit embeddings of many requests, in batches."""
        if not texts:
            return np.zeros((0, self.signals.dense.dim), dtype=np.float32)
        return self._encode(list(texts), progress=progress, batch_size=batch_size)

    def score_many(self, texts: Sequence[str], *, vectors: np.ndarray | None = None, batch_size: int = 128,
                   progress: bool = False) -> dict[str, np.ndarray]:
        """Each signal's scores for many requests, shape (len(texts), skills). Requests are embedded in batches
        (or ``vectors`` from :meth:`encode_requests` are used), which is what makes dataset-sized evaluations
        take seconds rather than minutes."""
        signals = self.signals
        if vectors is None:
            vectors = self.encode_requests(texts, batch_size=batch_size, progress=progress)
        dense = vectors.astype(np.float64) @ signals.dense.vectors.astype(np.float64).T
        lexical = [signals.bm25.scores(t) for t in texts]
        out = {"bm25": np.stack(lexical) if lexical else np.zeros((0, len(self.skills))), "dense": dense}
        if signals.has_examples:
            out["examples"] = example_scores(vectors, signals.example_vectors, signals.example_owner, dense)
        return out

    def _k(self, k: int | None) -> int:
        k = self.config.k if k is None else k
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ConfigError(f"k must be a whole number >= 1, got {k!r}")
        return min(k, len(self.skills)) if self.skills else 0

    def _named(self, text: str) -> list[int]:
        words = [w.lower() for w in _WORDS.findall(text)]
        found: list[int] = []
        for start in range(len(words)):
            for length in range(1, min(self._names.longest, len(words) - start) + 1):
                for position in self._names.table.get(tuple(words[start:start + length]), ()):
                    if position not in found:
                        found.append(position)
        return found

    def route(self, query: Query, k: int | None = None) -> Routing:
        """Route ``query``: the ranking, and the skills the catalogue shows."""
        skills = self.skills
        if not skills:
            return Routing(matches=(), shown=(), routed=False)
        if len(skills) <= self.config.route_above:
            self._validate_query(query)
            shown = tuple(s for s in skills if s.id not in self.excluded)
            return Routing(matches=(), shown=shown, routed=False)
        fused, per_signal = self.scores(query)
        text = query if isinstance(query, str) else conversation_text(query)[0]
        matches = self.rank_scores(text, fused, per_signal, k)
        # The best cosine over every skill that may be shown, not only the top k: a skill that BM25 pushed out
        # of the top k can still be the request's closest description.
        cosine = per_signal.get("examples", per_signal["dense"])
        allowed = [i for i, s in enumerate(skills) if s.id not in self.excluded]
        confidence = float(cosine[allowed].max()) if allowed else 0.0
        abstained = self.config.threshold is not None and confidence < self.config.threshold
        chosen = {m.id for m in matches}
        if abstained and self.config.on_abstain == "empty":
            chosen = {m.id for m in matches if m.reason == "named"}
        chosen |= self.pinned
        shown = tuple(s for s in skills if s.id in chosen and s.id not in self.excluded)
        return Routing(matches=tuple(matches), shown=shown, abstained=abstained, confidence=confidence)

    @staticmethod
    def _validate_query(query: Query) -> None:
        if isinstance(query, str):
            if not query.strip():
                raise ConfigError("the request is empty: give the text to route")
        else:
            conversation_text(query)

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


@dataclass(frozen=True)
class _NameTable:
    table: Mapping[tuple[str, ...], tuple[int, ...]]
    longest: int


def _name_table(skills: Sequence[Skill]) -> _NameTable:
    from router.texts import name_words

    table: dict[tuple[str, ...], list[int]] = {}
    for position, skill in enumerate(skills):
        for variant in {skill.name, name_words(skill.name)}:
            words = tuple(w.lower() for w in _WORDS.findall(variant))
            if words:
                table.setdefault(words, []).append(position)
    longest = max((len(w) for w in table), default=0)
    return _NameTable({k: tuple(v) for k, v in table.items()}, longest)


def _with_sidecar_examples(skill: Skill) -> Skill:
    path = os.path.join(skill.directory, EXAMPLES_FILE) if skill.path else ""
    if not path or not os.path.isfile(path):
        return skill
    with open(path, encoding="utf-8", errors="replace") as handle:
        lines = [line.strip() for line in handle]
    examples = tuple(line for line in lines if line and not line.startswith("#"))
    return dataclasses.replace(skill, examples=skill.examples + examples)
