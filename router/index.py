"""A library's built index, as a value: building is explicit and saving is a separate step.

    index, report = LibraryIndex.build(LibrarySpec.create(["skills"], profile="genkit"), RouterConfig())
    index.save()                      # write it to spec.index_folder (only what changed)
    router = Router.from_index(index)  # routes over it; building again is never needed

Three values, each frozen:

- :class:`LibrarySource`: the library the spec describes, read once (its skills with their learned examples, the
  profile, the config): what listing, linting, rendering the whole catalogue and loading a skill need, and what an
  index is built from. Reading it builds nothing.
- :class:`LibraryIndex`: a source with its built signals (every signal of :mod:`router.signals`, the passage index
  among them) and the encoder that embedded them (requests must be embedded by the same model). An index never
  changes once built: a router over it shares it, and a router with another config builds its own
  (:meth:`LibraryIndex.with_config` reuses an index whose index-shaping fields, ``RouterConfig.index_fields``, and
  built signals are the same).
- an :class:`IndexStore`: where built signals come from. :class:`FileStore` (the default) builds them with the
  index folder as a cache (:func:`router.signals.build_signals`); :class:`router.pgstore.PgStore` reads them from
  PostgreSQL. A store returns a :class:`Scorer` (``ids`` and ``score(texts, vectors)``, one score per signal and
  skill) and the :class:`~router.signals.BuildReport`.

:meth:`LibraryIndex.build` reads the library once, loads what the index folder holds and embeds only the texts it
lacks, and writes nothing; the report says what was embedded and what a save would write. :meth:`LibraryIndex.create`
with ``persist`` (what :meth:`router.routing.Router.from_spec` does) saves at once, as a router always has: a second
run loads the saved index and rebuilds nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from router import progress as steps
from router.config import RouterConfig
from router.errors import IndexSaveError, ModelError
from router.spec import LibrarySpec

if TYPE_CHECKING:
    import numpy as np

    from indexes.base import Encoder
    from router.library import Library
    from router.profiles import Profile
    from router.registry import SkillRegistry
    from router.signals import BuildReport
    from router.skill import Skill

#: Fewer texts than this are embedded without a progress row (a request or two takes milliseconds).
MANY_TEXTS = 32

#: The signals' texts of the skills of the last build in this process, by signal name and the config's index
#: part (:meth:`LibrarySource.build_texts`): a reload after one edit computes the texts of the changed skill only.
_TEXTS: dict[str, dict[str, tuple[Skill, tuple[str, ...]]]] = {}


#: The k of the requests being scored, for a store whose retrieval depth follows it (:class:`router.pgstore.PgSignals`:
#: its top lists and ``hnsw.ef_search``); None outside :func:`requested_k`.
REQUESTED_K: ContextVar[int | None] = ContextVar("skill_router_requested_k", default=None)


@contextmanager
def requested_k(k: int) -> Iterator[None]:
    """Score with :data:`REQUESTED_K` set to ``k`` (the router ranks the top ``k`` of what is scored inside)."""
    token = REQUESTED_K.set(k)
    try:
        yield
    finally:
        REQUESTED_K.reset(token)


class Scorer(Protocol):
    """Built signals: one score per skill and signal for a batch of requests (:class:`router.signals.Signals`, or a
    store's own, e.g. :class:`router.pgstore.PgSignals`)."""

    @property
    def ids(self) -> tuple[str, ...]: ...

    def score(self, texts: Sequence[str], vectors: np.ndarray) -> dict[str, np.ndarray]: ...


class IndexStore(Protocol):
    """Where a library's built signals come from (see the module docstring)."""

    def index_folder(self, spec: LibrarySpec) -> str | None:
        """The folder the index is kept in (None: not in files)."""
        ...

    def build(self, source: LibrarySource, *, persist: bool, progress: bool) -> tuple[Scorer, BuildReport]:
        """The built signals of ``source`` (whose encoder is chosen) and what building did; with ``persist`` what
        changed is saved now, otherwise the report's ``pending`` holds the save."""
        ...


@dataclass(frozen=True)
class BuildTexts:
    """What :meth:`LibrarySource.build_texts` gives: each signal's text per skill (in skill order, by signal name)
    and ``computed``, the ids of the skills read back with kept texts (:class:`router.fresh.SavedSkill`) that did
    not hold this config's, computed by this build: their kept parses are to be kept again with these texts."""

    texts: dict[str, list[str]]
    computed: frozenset[str] = frozenset()


@dataclass(frozen=True)
class LibrarySource:
    """The library ``spec`` describes, read once under ``config``: its skills (with the examples ``skill-router
    learn`` kept for it), the profile, the learned examples by skill id and what reading it noted. ``encoder`` is
    the embedding model once one is given or chosen (``chosen_encoder``; :meth:`chosen`)."""

    spec: LibrarySpec
    config: RouterConfig
    registry: SkillRegistry
    profile: Profile
    learned: Mapping[str, Sequence[str]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    chosen_encoder: Encoder | None = field(default=None, compare=False)
    #: Keeps what reading the library parsed beside its index (:func:`router.fresh.load`), once the index is kept;
    #: given the skills whose texts the build computed anew (:attr:`BuildTexts.computed`).
    keep: Callable[[Collection[str]], bool] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def read(cls, spec: LibrarySpec, config: RouterConfig | None = None, *, encoder: Encoder | None = None,
             loaded: Library | None = None) -> LibrarySource:
        """Discover the library (once; ``loaded``: as already read, e.g. by :func:`router.fresh.read`) and add its
        learned examples; builds and writes nothing."""
        from router import library as libraries
        from router.learned import load_learned
        from router.store import IndexFolder

        config = config or RouterConfig()
        keep = None
        if loaded is None and spec.catalog is None:
            from router import fresh

            with steps.step("reading the skills"):  # with the frontmatter parses an earlier process kept
                loaded, keep = fresh.load(spec, confine=spec.confine or config.confine)
        elif loaded is None:
            loaded = spec.load()
        registry, notes = loaded.registry, list(loaded.notes)
        if keep is not None:
            from router import fresh

            notes.extend(fresh.take_notes())  # a kept file that could not be used, and so was not
        folder, key, learned_at = spec.index_folder, spec.key, spec.learned_folder
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
        return cls(spec, config, registry, loaded.profile, learned, tuple(notes), encoder, keep)

    @property
    def encoder(self) -> Encoder:
        """The embedding model (given, or chosen by :meth:`chosen`)."""
        if self.chosen_encoder is None:
            raise AssertionError("the encoder is not chosen yet: call LibrarySource.chosen() first")
        return self.chosen_encoder

    @property
    def skills(self) -> tuple[Skill, ...]:
        return self.registry.skills

    def with_config(self, config: RouterConfig) -> LibrarySource:
        """The same library under ``config`` (the encoder is kept when the model is the same)."""
        same_model = config.model == self.config.model
        return dataclasses.replace(self, config=config, chosen_encoder=self.chosen_encoder if same_model else None)

    def with_examples(self, examples: Mapping[str, Sequence[str]]) -> LibrarySource:
        """The same library whose skills also have these example requests (skill id or name -> requests)."""
        from router import library as libraries

        registry, _ = libraries.with_examples(self.registry, examples)
        return dataclasses.replace(self, registry=registry)

    def without_examples(self, texts: Iterable[str]) -> LibrarySource:
        """The same library whose skills no longer have these example requests."""
        from router.registry import SkillRegistry

        dropped = set(texts)
        registry = SkillRegistry([dataclasses.replace(s, examples=tuple(e for e in s.examples if e not in dropped))
                                  for s in self.registry], discovery=self.registry.discovery)
        return dataclasses.replace(self, registry=registry)

    def chosen(self) -> LibrarySource:
        """This source with its encoder: the given one, else the config's model by the one encoder choice
        (:func:`router.encoders.choose`; what it notes is added to the notes)."""
        if self.chosen_encoder is not None:
            return self
        from router import encoders

        notes = list(self.notes)
        encoder = encoders.choose(self.config.model, notes)
        return dataclasses.replace(self, chosen_encoder=encoder, notes=tuple(notes))

    # -- the texts an index is built from ------------------------------------------------------------------------
    def signal_texts(self) -> dict[str, list[str]]:
        """Each signal's text (:meth:`router.signals.base.Signal.text`) for each skill, in skill order."""
        from router.signals import registry

        return {name: [signal.text(s, self.config) for s in self.skills] for name, signal in registry().items()}

    def build_texts(self) -> BuildTexts:
        """:meth:`signal_texts` of the signals an index under this config is built or checked from: those it
        wants and the persisted ones (whose texts a saved index is checked against), so a refresh computes no
        text of a signal the config does not build (``body_dense`` unless bodies are embedded). A skill equal to
        one of the previous build in this process has the texts it had then (:data:`_TEXTS`), and so has a skill
        read back with the texts an earlier process kept (:class:`router.fresh.SavedSkill`), whose body is then
        not read; one read back without this config's texts has them computed, and is named in the result's
        ``computed``. A text that is the whole body (the signals declaring ``whole_body``: the passage signals)
        is not kept: it is the body, and past :data:`router.passages.MAX_SKILLS` skills, where those signals index
        nothing, it is '' (no body read)."""
        from router.fresh import SavedSkill
        from router.passages import MAX_SKILLS
        from router.signals import registry
        from router.texts import reads_file

        config = self.config
        signals = {name: s for name, s in registry().items() if s.persisted or s.wanted(config)}
        whole = {name for name, signal in signals.items() if signal.whole_body}
        parts = [name for name in signals if name not in whole]
        key = texts_key(parts, config)
        before = _TEXTS.get(key, {})
        rows: list[tuple[str, ...]] = []
        now: dict[str, tuple[Skill, tuple[str, ...]]] = {}
        computed: list[str] = []
        for skill in self.skills:
            # By id, then compared field by field: hashing a skill would hash its whole body
            found = before.get(skill.id)
            if found is not None and (found[0] is skill or found[0] == skill):
                row = found[1]
            else:
                kept = skill.saved_texts if isinstance(skill, SavedSkill) else None
                row = tuple(kept.get(key, ())) if kept is not None else ()
                if len(row) != len(parts):
                    row = tuple(signals[name].text(skill, config) for name in parts)
                    if kept is not None:
                        computed.append(skill.id)  # its kept parse is to be kept with these
                    if reads_file(skill):  # its text also comes from its file, which the skill's fields may not show
                        rows.append(row)
                        continue
            now[skill.id] = (skill, row)
            rows.append(row)
        _TEXTS.pop(key, None)
        _TEXTS[key] = now
        while len(_TEXTS) > 4:
            _TEXTS.pop(next(iter(_TEXTS)))
        columns: dict[str, tuple[str, ...]] = dict(zip(parts, zip(*rows))) if rows else {name: () for name in parts}
        skills = self.skills
        for name in whole:
            columns[name] = tuple(s.body or "" for s in skills) if len(skills) <= MAX_SKILLS else ("",) * len(skills)
        return BuildTexts({name: list(columns[name]) for name in signals}, frozenset(computed))

    def index_texts(self) -> list[str]:
        """The text the ``bm25`` signal indexes for each skill, in skill order."""
        from router.texts import index_text

        return [index_text(s) for s in self.skills]

    def dense_texts(self) -> list[str]:
        """The text the ``dense`` signal embeds for each skill, in skill order."""
        from router.texts import dense_text

        return [dense_text(s, with_name=self.config.dense_name) for s in self.skills]

    def body_texts(self) -> list[str]:
        """The body text the ``body_*`` signals index for each skill ('' for none), in skill order."""
        from router.texts import body_text

        return [body_text(s.body, self.config.body, self.config.body_tokens) for s in self.skills]

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        """Unit embeddings of ``texts`` by the chosen encoder, shape (len(texts), dim), in its own batch size."""
        import numpy as np

        from indexes import ModelLoadError

        encoder = self.encoder
        if not texts:
            return np.zeros((0, encoder.dim), dtype=np.float32)
        try:
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

    def encode_requests(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        """Unit embeddings of requests (what is routed, never what is indexed): the encoder's own request path
        when it has one (the ONNX export's int8 copy, :mod:`router.encoders`), else :meth:`encode`."""
        import numpy as np

        from indexes import ModelLoadError

        embed = getattr(self.encoder, "encode_requests", None)
        if embed is None:
            return self.encode(texts, progress=progress)
        if not texts:
            return np.zeros((0, self.encoder.dim), dtype=np.float32)
        try:
            return embed(list(texts))
        except ModelLoadError as exc:
            raise ModelError(str(exc)) from None


def texts_key(names: Sequence[str], config: RouterConfig) -> str:
    """What the texts of the signals ``names`` are kept under: a signal's text depends on the skill and the
    config's index part only (:meth:`RouterConfig.index_part`)."""
    import hashlib

    return hashlib.sha256(repr((tuple(names), config.index_part())).encode()).hexdigest()[:20]


def kept_texts(skill: Skill) -> dict[str, list[str]]:
    """The signal texts of ``skill`` to keep with its parse (:mod:`router.fresh`): those the builds in this process
    computed for this very skill, and those it was read back with, by the key of :meth:`LibrarySource.build_texts`."""
    from router.fresh import SavedSkill

    out = {key: list(row) for key, row in skill.saved_texts.items()} if isinstance(skill, SavedSkill) else {}
    for key, now in _TEXTS.items():
        found = now.get(skill.id)
        if found is not None and found[0] is skill:
            out[key] = list(found[1])
    return out


class FileStore:
    """The default store: the signals are built in process, with the library's index folder as a cache
    (:func:`router.signals.build_signals`; the passage index keeps its own folder in it, :mod:`router.passages`)."""

    def index_folder(self, spec: LibrarySpec) -> str | None:
        return spec.index_folder

    def build(self, source: LibrarySource, *, persist: bool, progress: bool) -> tuple[Scorer, BuildReport]:
        from router.signals import build_signals
        from router.store import IndexFolder
        from router.version import package_version

        spec, config, encoder = source.spec, source.config, source.encoder
        folder = IndexFolder(spec.index_folder, spec.key, package_version())
        skills = source.skills
        if steps.active() and folder.built_for() is None:
            steps.note(f"first build of the index of {len(skills):,} skills: each skill is embedded once (and the "
                       "model exported to ONNX, once per machine); later runs reuse it")
        parameters = {"profile": source.profile.name, **config.index_parameters()}
        with steps.step(f"building the index of {len(skills):,} skills"):
            texts = source.build_texts()
            signals, report = build_signals(
                skills, texts.texts, config=config, model_id=encoder.model_id, dim=encoder.dim,
                encode=lambda batch: source.encode(batch, progress=progress), folder=folder, parameters=parameters,
                persist=persist, chance=FileChance(source))
            report.texts_computed = texts.computed
            return signals, report


class FileChance:
    """The file store's chance level (:mod:`router.abstain`), kept in the index folder's manifest: its recipe's
    content is the saved index's signature, every skill's example requests (which the signature does not cover)
    and the passage index's body digests (nor these), so any change of what the everyday sample is scored
    against computes it again."""

    def __init__(self, source: LibrarySource) -> None:
        self.source = source

    def recipe(self, signals: Scorer, signature: str) -> str:
        import hashlib

        from router import abstain

        digest = hashlib.sha256(signature.encode())
        for skill in self.source.skills:
            if skill.examples:
                digest.update("\0".join((skill.id, *skill.examples)).encode("utf-8", "surrogatepass") + b"\1")
        passages = getattr(signals, "indexes", {}).get("passages")
        if passages is not None:
            from router import passages as passage_index

            bodies = getattr(passages, "bodies", None)
            skills = self.source.skills
            digest.update(b"\0passages\0" + (bodies.tobytes() if bodies is not None else passage_index.content_key(
                [s.id for s in skills], [s.body or "" for s in skills]).encode()))
        return abstain.chance_recipe(self.source.encoder.model_id, scored_names(signals), digest.hexdigest())

    def compute(self, signals: Scorer) -> object:
        return chance_now(signals, self.source)


def chance_now(signals: Scorer, source: LibrarySource) -> object:
    """The library's :class:`router.abstain.Chance` over ``signals``, computed now (:func:`router.abstain.chance_of`:
    the everyday sample's vectors from memory, the cache folder, or the encoder)."""
    from router import abstain
    from router.ranking import confidences

    encoder = source.encoder
    vectors = abstain.everyday_vectors(encoder.model_id, source.encode, int(encoder.dim))
    return abstain.chance_of(signals.score, confidences, vectors)


def scored_names(signals: Scorer) -> tuple[str, ...]:
    """The signals ``signals`` scores (the keys of its ``score``), known without scoring: a store's scorer says
    them (``names``); built signals are their indexes (``examples`` only with example requests)."""
    names = getattr(signals, "names", None)
    if names is not None:
        return tuple(names)
    indexes = getattr(signals, "indexes", {})
    return tuple(n for n in indexes if n != "examples" or getattr(signals, "has_examples", True))


@dataclass(frozen=True)
class LibraryIndex:
    """The built signals of one library (``source``), with the encoder that embedded them and the store they came
    from (see the module docstring)."""

    source: LibrarySource
    signals: Scorer
    index_folder: str | None = None
    store: IndexStore = field(default_factory=FileStore, repr=False, compare=False)
    report: BuildReport | None = field(default=None, repr=False, compare=False)

    @classmethod
    def build(cls, spec: LibrarySpec, config: RouterConfig | None = None, *, encoder: Encoder | None = None,
              progress: bool = False, store: IndexStore | None = None) -> tuple[LibraryIndex, BuildReport]:
        """Build the index of ``spec``'s library under ``config`` without writing anything; returns the index and
        the build report (texts embedded, notes). :meth:`save` writes it."""
        index = cls.create(LibrarySource.read(spec, config, encoder=encoder), store=store, persist=False,
                           progress=progress)
        assert index.report is not None
        return index, index.report

    @classmethod
    def create(cls, source: LibrarySource, *, store: IndexStore | None = None, persist: bool = True,
               progress: bool = False) -> LibraryIndex:
        """The index of ``source`` from ``store`` (default :class:`FileStore`): with ``persist`` what changed is
        saved now (a folder that cannot be written is noted, and the index is used from memory)."""
        from router import encoders

        store = store if store is not None else FileStore()
        own = source.chosen_encoder is None  # an encoder passed in is the caller's: never swapped for an export
        source = source.chosen()
        if not source.skills:  # nothing to index, and nothing a request could be ranked against
            from router.signals import BuildReport, Signals

            return cls(source, Signals((), {}), store.index_folder(source.spec), store, BuildReport())
        from router.fresh import collection_paused

        with collection_paused():
            signals, report = store.build(source, persist=persist, progress=progress)
        if persist and source.keep is not None and store.index_folder(source.spec) is not None:
            source.keep(report.texts_computed)
        notes = list(source.notes)
        encoder = source.encoder
        if report.embedded and own and encoders.onnx_enabled():
            from indexes import Encoder as SentenceEncoder

            if isinstance(encoder, SentenceEncoder):
                with steps.step("exporting the embedding model to ONNX (once per machine)"):
                    encoder = encoders.export_for_next_time(encoder, notes)
            elif encoders.lacks_int8(encoder):  # an export made before its int8 request graph existed
                with steps.step("making the int8 request graph of the embedding model (once per machine)"):
                    encoder = encoders.with_int8(encoder, notes)
        source = dataclasses.replace(source, chosen_encoder=encoder, notes=(*notes, *report.notes))
        return cls(source, signals, store.index_folder(source.spec), store, report)

    # -- what it holds ------------------------------------------------------------------------------------------
    @property
    def spec(self) -> LibrarySpec:
        return self.source.spec

    @property
    def config(self) -> RouterConfig:
        return self.source.config

    @property
    def registry(self) -> SkillRegistry:
        return self.source.registry

    @property
    def profile(self) -> Profile:
        return self.source.profile

    @property
    def encoder(self) -> Encoder:
        return self.source.encoder

    @property
    def learned(self) -> Mapping[str, Sequence[str]]:
        return self.source.learned

    @property
    def notes(self) -> tuple[str, ...]:
        return self.source.notes

    @property
    def chance(self) -> object | None:
        """The library's no-skill chance level (:class:`router.abstain.Chance`) as the store keeps it with this
        index, when its recipe is this index's; None: a router computes it (:func:`router.abstain.chance_level`)."""
        return self.report.chance if self.report is not None else None

    # -- other indexes from this one ------------------------------------------------------------------------------
    def with_config(self, config: RouterConfig, *, persist: bool = True) -> LibraryIndex:
        """This index under ``config``: shared when ``config`` shapes the same index (only ranking fields
        changed), else the index built for it (:func:`shapes_same_index`)."""
        if shapes_same_index(self.config, config):
            return dataclasses.replace(self, source=dataclasses.replace(self.source, config=config))
        return LibraryIndex.create(self.source.with_config(config), store=self.store, persist=persist)

    def with_source(self, source: LibrarySource, *, persist: bool = True) -> LibraryIndex:
        """The index of ``source`` (the same library with other examples) from the same store: only the new texts
        are embedded."""
        return LibraryIndex.create(source, store=self.store, persist=persist)

    def save(self) -> bool:
        """Write the index to :attr:`LibrarySpec.index_folder` (only what changed); False when the folder already
        held it. Raises :class:`IndexSaveError` naming the folder when it cannot be written."""
        report = self.report
        if self.source.keep is not None and self.index_folder is not None:
            self.source.keep(report.texts_computed if report is not None else frozenset())
        if report is None or report.pending is None:
            return False
        try:
            report.pending()
        except OSError as exc:
            raise IndexSaveError(f"the index could not be saved to {self.spec.index_folder}: "
                                 f"{exc.strerror or exc}; choose a writable folder with --index-dir") from None
        report.pending, report.saved = None, True
        return True


def shapes_same_index(old: RouterConfig, new: RouterConfig) -> bool:
    """Whether an index built under ``old`` serves ``new``: the same index-shaping fields
    (``RouterConfig.index_part``) and the same signals built (:meth:`router.signals.base.Signal.wanted`)."""
    from router.signals import registry

    def built(config: RouterConfig) -> tuple[bool, ...]:
        return tuple(signal.wanted(config) for signal in registry().values())

    return old.index_part() == new.index_part() and built(old) == built(new)


class Beside:
    """A store's signals with signals built in process beside them (:func:`beside`): the scores of both, and the
    store's own attributes (e.g. a database generation) read through."""

    def __init__(self, base: Scorer, local: Scorer) -> None:
        self.base, self.local = base, local

    @property
    def ids(self) -> tuple[str, ...]:
        return self.base.ids

    @property
    def names(self) -> tuple[str, ...]:
        """The signals :meth:`score` scores (:func:`scored_names`)."""
        return tuple(dict.fromkeys((*scored_names(self.base), *scored_names(self.local))))

    def score(self, texts: Sequence[str], vectors: np.ndarray) -> dict[str, np.ndarray]:
        return {**self.base.score(texts, vectors), **self.local.score(texts, vectors)}

    def __getattr__(self, name: str) -> object:
        return getattr(self.base, name)

    def __setattr__(self, name: str, value: object) -> None:  # a store's settings (e.g. depth) reach the store
        if name in ("base", "local"):
            object.__setattr__(self, name, value)
        else:
            setattr(self.base, name, value)


def beside(base: Scorer, source: LibrarySource, names: Sequence[str]) -> Scorer:
    """``base`` with the signals ``names`` built in process, in memory, for ``source`` (those its config wants and
    its library has: none for a library past :data:`router.passages.MAX_SKILLS` skills or without bodies); a store
    that does not hold a signal serves it so. ``base`` itself when there are none."""
    from router.signals import BuildJob, Signals, registry

    wanted = {name: signal for name, signal in registry().items() if name in names and signal.wanted(source.config)}
    skills = source.skills
    ids = tuple(s.id for s in skills)
    texts = {name: [signal.text(s, source.config) for s in skills] for name, signal in wanted.items()}

    def no_embedding(keys: Sequence[str], batch: Sequence[str]) -> np.ndarray:
        raise AssertionError("a signal built beside a store embeds nothing")

    job = BuildJob(ids, skills, texts, no_embedding, str, {}, {}, source.config, folder=None)
    built = {name: index for name, signal in wanted.items() if (index := signal.build(job)) is not None}
    return Beside(base, Signals(ids, built)) if built else base
