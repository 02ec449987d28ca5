"""Saying "no skill fits": the default decision of the surfaces in front of an agent.

The Claude Code hook, MCP ``search_skills`` and ``/v1/route`` with ``"abstain": true`` give nothing for a request
that no skill serves ("When did the Berlin Wall fall?", "thanks!", "72°F in celsius?" in a library without a
conversion skill) instead of five guesses. The catalogue surfaces (``route``, ``prompt``, the adapters) keep their
behaviour: they abstain only on the configured ``threshold``.

The decision is a logistic model over five numbers of the request (:func:`features`), four where the library's
body passages are not embedded:

- ``best - chance.best``: the routing confidence (the best cosine with any skill's description or example,
  :func:`router.ranking.confidence`) above what a request no skill serves gets from this library by chance;
- ``everyday``: its best cosine with :data:`EVERYDAY`, a fixed list of requests that no skill library serves
  (greetings, thanks, trivia, everyday advice, arithmetic, words);
- ``log(1 + lexical) - chance.lexical``: the best BM25 score of one passage of a skill's body
  (:data:`LEXICAL`: ``passages``, else ``body_bm25``, else ``bm25``), against chance the same way. A request whose
  words a skill's body uses ("differentiate ... solve for x" and the sympy body) is not everyday even when no
  description is close to it;
- ``log(1 + matched) - chance.matched``: how many skills that lexical signal scores above zero at all, that is how
  many skills' bodies share a word with the request. A task in words no description uses still shares words with
  many bodies; a greeting, thanks or a one-line question of fact shares few;
- ``passage - chance.passage``: the best cosine of the request with a skill's embedded body head
  (:data:`PASSAGE`, :mod:`router.signals.passage_dense`), against chance the same way: a body says what its skill
  does in the words of a task ("how hot is it in cairo right now" and the current-weather body) where the
  description is one line in its author's words. A library without that signal (a catalogue without bodies,
  ``passage_dense`` weighing 0) is decided by the model of the
  first four numbers (:data:`FALLBACK_COEFFICIENTS`, fitted on the same requests): :func:`model` picks the model by
  how many numbers a request has.

``chance`` (:class:`Chance`) holds the means of the confidence, of ``log(1 + lexical)``, of ``log(1 + matched)`` and
of the best passage cosine over the first :data:`CHANCE_SAMPLE` everyday requests, scored against the library: a
library of 700 skills is closer to any request than one of 50 is, its BM25 scores are larger and more of its skills
share a word with any request, so the raw numbers mean different things in different libraries; against the
library's own chance level they do not. A request fits no skill when its :func:`score`, ``COEFFICIENTS . (1,
features)``, is at least ``CUT`` (:func:`unfit`). Measuring against the library keeps a request a skill serves:
"convert 10 miles to kilometres" is dropped over the corpora (no skill converts units) and kept over the bundled
library, whose ``unit-conversion`` is much closer to it than chance.

Where the cut sits comes from what each mistake costs, not from accuracy: a skill wrongly dropped costs the user the
skill (the agent works without the instructions the request needed), five lines shown to a request no skill serves
cost about 100 tokens. So the cut is set by a budget of dropped single-skill requests (at most 1.5% of each
library's, half of the 3% the decision may cost, leaving room for requests it was not fitted on), and a model that
separates better is spent on giving more no-skill requests nothing within that budget, never on a larger one. The
budget must hold on a library the model was not fitted on too: fitted on one library (model and cut) and applied to
the other, a cut drops more of the other's single-skill requests (the five numbers fitted on the 50-skill library
dropped 7.9% of the 700-skill one's), so each cut carries a *transfer margin*, the largest amount by which the cut
fitted on one library falls short of the one the other library's requests need within the budget; and the five
numbers' weights are shrunk (an L2 penalty of 100 on the standardised numbers instead of 1), which brings that
shortfall from 1.33 logits to 0.08 at a cost of about one no-skill request in a hundred. A
request that names a skill is never dropped. The coefficients and the cut were fitted on the dev requests of
``benchmarks/data`` with the bundled all-MiniLM-L6-v2 (``python benchmarks/abstain_fit.py``: the fit, its
cross-validation and the cut; both models); another model may need others. ``matched`` counts the skills whose
lexical score was computed: where a store scores only its first-stage candidates (PostgreSQL past
``pgstore.EXACT_BELOW`` skills, without the passage index), it is at most their number, and so is its chance level.

The everyday vectors are embedded once per model and kept under the user cache folder
(``$XDG_CACHE_HOME/skill-router/everyday/``), so a one-shot route does not embed them again; a cache that cannot be
written is only a slower first route. A library's chance level is computed when its index is built (scoring 54
everyday requests: 30-45 ms of CPU for 700 skills on a busy machine; through PostgreSQL, 54 queries) and stored with
it (:func:`stored_chance`: the index folder's manifest, the database generation's row), beside its *recipe*
(:func:`chance_recipe`: the model, the everyday sample, the signals that feed the confidence, the lexical and the
passage evidence, and the library's content), so a router reads it instead of scoring: a changed recipe is computed
again. An index saved before the chance level was stored with it, or one whose recipe is not the router's, gets it
as before (:func:`chance_level`): computed on the first route, then read from memory, and for an index saved in a
folder from a small file of the cache folder named by the index's manifest.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import math
import os
import tempfile
import weakref
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

#: Intercept, then the weights of ``best - chance.best``, ``everyday``, ``log(1 + lexical) - chance.lexical``,
#: ``log(1 + matched) - chance.matched`` and ``passage - chance.passage`` (benchmarks/abstain_fit.py): the model of
#: a library whose bodies are embedded (the :data:`PASSAGE` signal).
#: Fitted again on the body heads passage_dense embeds by default (3 passages x 16 words), each request's fifth
#: number against the chance level of those heads (before, the index kept the level of the heads it was first
#: built with: 0.153 over the corpora, where these heads give 0.167).
COEFFICIENTS: tuple[float, ...] = (0.1550, -3.9086, 3.9088, -0.6428, -0.2265, -5.5595)
#: A request fits no skill when its score (:func:`score`) is at least this: the cut of the 1.5% budget plus the
#: transfer margin, 0.0473 (module docstring).
CUT = 0.4333
#: The model without the fifth number, fitted on the same requests: a library without the :data:`PASSAGE` signal
#: (a catalogue without bodies, ``passage_dense`` weighing 0) is decided by it.
FALLBACK_COEFFICIENTS: tuple[float, ...] = (-0.2128, -20.4224, 12.4366, -2.8242, -0.4304)
#: Its budget cut (1.3816) plus its transfer margin, 0.3900.
FALLBACK_CUT = 1.7716
#: The embedded body passages (:mod:`router.signals.passage_dense`): the fifth number, where the library has them.
PASSAGE = "passage_dense"
#: The lexical evidence, the first of these signals the library has: the body's best passage, else the body's
#: first words, else the name and description.
LEXICAL = ("passages", "body_bm25", "bm25")
#: The everyday requests a library's chance level is measured on (the first ones): a mean needs fewer than the
#: nearest-neighbour cosine does, and each costs a BM25 query over every passage.
CHANCE_SAMPLE = 54

#: The version of how the chance level is computed, part of every stored chance level's recipe
#: (:func:`chance_recipe`): a change of what the means are made of (another mean, another statistic) changes it.
#: 4: the recipe names how the body heads of :data:`PASSAGE` are cut, so a level kept from another cut is not read.
CHANCE_RECIPE = 4

#: Requests no skill library serves. The first 54 are those of the rule before the model (a floor and a margin
#: over two cosines, kept in benchmarks/abstain_fit.py for comparison).
EVERYDAY: tuple[str, ...] = (
    "hello", "hey, how are you?", "hi again", "good evening!", "thank you so much", "great, thanks", "cool, got it",
    "never mind that", "yes please", "no thanks", "that's all for today, bye", "who are you?", "what can you do?",
    "are you a real person?", "how old is the universe", "who was the first person to walk on the moon",
    "when did world war two end", "who invented the light bulb", "what is the largest ocean on earth",
    "what is the population of brazil", "which planet is closest to the sun", "how many bones are in the human body",
    "why is the sky blue", "what language do they speak in switzerland", "who is the president of france",
    "how tall is the eiffel tower", "what is the longest river in africa", "who won the super bowl last year",
    "how many players are on a basketball team", "who sang bohemian rhapsody", "what's a good movie to watch tonight",
    "recommend me a book about history", "what should I make for lunch", "how do I make pancakes",
    "how much water should I drink a day", "what's a good gift for my sister",
    "ideas for a birthday party for a 7 year old", "where should I go on vacation in spring",
    "how do I get rid of hiccups", "how do I fall asleep faster", "tell me something interesting",
    "tell me a funny story", "what's your favourite colour", "what's the meaning of life", "do you like music",
    "how many minutes are in a day", "what is 15 times 23", "what's the square root of 144",
    "what day of the week is christmas this year", "how do you spell necessary", "what's the opposite of ancient",
    "translate good night into french", "what's a synonym for happy", "how do you pronounce quinoa",
    # added with the logistic model: the same kinds of request, more of each kind (history, places, science,
    # sport, food, health, home, travel, numbers, words, fun), written from general knowledge
    "good morning to you", "hey there", "yo", "nice to meet you", "how was your weekend", "sorry, my mistake",
    "ok sounds good", "awesome, appreciate it", "you're the best", "hmm interesting", "lol", "see you tomorrow",
    "I'm back", "just checking in", "can I ask you something?", "I'm feeling a bit sad today",
    "I had a long day at work", "happy new year!", "congrats to me, I passed my exam", "what's your name?",
    "are you an AI?", "do you dream?", "who made you?", "can you remember me?", "who was napoleon",
    "when did the roman empire fall", "who built the pyramids", "what started world war one",
    "who was the first president of the united states", "when did humans first fly a plane",
    "what is the capital of italy", "which country has the most people", "how big is russia",
    "what's the highest waterfall in the world", "where is timbuktu", "what currency do they use in japan",
    "why is the ocean salty", "how far is the sun from earth", "what are black holes made of", "how do rainbows form",
    "why do leaves change colour in autumn", "how many legs does a spider have", "what's the hottest planet",
    "are dolphins mammals", "how long does it take light to reach us from the moon",
    "who has won the most tennis grand slams", "how long is a marathon", "what are the rules of chess",
    "who directed jurassic park", "what's the best selling album of all time", "when is the next olympics",
    "recommend a tv series like breaking bad", "what's a fun board game for four people",
    "how do I cook rice on the stove", "what can I make with chicken and potatoes",
    "is it safe to eat raw cookie dough", "how long does cooked pasta keep in the fridge",
    "what wine goes with salmon", "a quick breakfast idea", "how many hours of sleep do adults need",
    "what helps with a headache", "how do I start running", "is coffee bad for you",
    "how many steps a day should I walk", "how do I get my dog to stop barking", "how often should I feed a goldfish",
    "what plants are easy to keep indoors", "tips for moving to a new apartment",
    "gift ideas for a coworker who is leaving", "how do I ask for a raise", "what to wear to a wedding",
    "best time to visit japan", "what to see in rome in one day", "do I need a visa to visit canada",
    "how early should I get to the airport", "what's 45 divided by 9", "how many days until christmas",
    "is 2028 a leap year", "how many weeks are in a year", "round 3.14159 to two decimals", "what's half of 350",
    "what does ubiquitous mean", "what's the plural of cactus", "give me a word that rhymes with light",
    "what's the past tense of swim", "is it who or whom here", "tell me a riddle", "say something nice", "flip a coin",
    "pick a random number between 1 and 10", "would you rather fly or be invisible",
    "tell me a fun fact about octopuses",
)

Encode = Callable[[Sequence[str]], np.ndarray]
Score = Callable[[Sequence[str], np.ndarray], Mapping[str, np.ndarray]]
_MEMO: dict[str, np.ndarray] = {}
_CHANCE: dict[tuple[int, str], tuple[Any, Chance]] = {}


@dataclass(frozen=True)
class Chance:
    """What a request that no skill serves gets from one library: the mean over :data:`EVERYDAY` of the best
    confidence cosine (``best``), of ``log(1 + best lexical score)`` (``lexical``), of ``log(1 + number of skills
    with a lexical score above zero)`` (``matched``) and of the best :data:`PASSAGE` cosine (``passage``; None for a
    library without that signal)."""

    best: float
    lexical: float
    matched: float
    passage: float | None = None


def features(best: np.ndarray | float, everyday: np.ndarray | float, lexical: np.ndarray | float,
             matched: np.ndarray | float, chance: Chance, passage: np.ndarray | float | None = None) -> np.ndarray:
    """The model's numbers per request: ``best - chance.best``, ``everyday``,
    ``log(1 + lexical) - chance.lexical`` (``lexical``: the best :data:`LEXICAL` score, 0 without one),
    ``log(1 + matched) - chance.matched`` (``matched``: how many skills that signal scores above zero) and, when
    both ``passage`` (the best :data:`PASSAGE` cosine) and ``chance.passage`` are given, ``passage -
    chance.passage``: rows x 5, else rows x 4 (the fallback model's)."""
    best, everyday, lexical, matched = (np.atleast_1d(np.asarray(v, dtype=np.float64))
                                        for v in (best, everyday, lexical, matched))
    columns = [best - chance.best, everyday, np.log1p(np.maximum(lexical, 0.0)) - chance.lexical,
               np.log1p(np.maximum(matched, 0.0)) - chance.matched]
    if passage is not None and chance.passage is not None:
        columns.append(np.atleast_1d(np.asarray(passage, dtype=np.float64)) - chance.passage)
    return np.column_stack(columns)


def model(width: int) -> tuple[tuple[float, ...], float]:
    """The coefficients and cut for rows of ``width`` numbers: :data:`COEFFICIENTS` for 5, the fallback's for 4."""
    for coefficients, cut in ((COEFFICIENTS, CUT), (FALLBACK_COEFFICIENTS, FALLBACK_CUT)):
        if len(coefficients) == width + 1:
            return coefficients, cut
    raise ValueError(f"the no-skill model takes 4 or 5 numbers a request, got {width}")


def score(rows: np.ndarray, coefficients: Sequence[float] | None = None) -> np.ndarray:
    """The model's logit for each row of :func:`features` (by default the model of the rows' width): higher is
    more surely no skill's."""
    rows = np.atleast_2d(np.asarray(rows, dtype=np.float64))
    coefficients = model(rows.shape[1])[0] if coefficients is None else coefficients
    return coefficients[0] + rows @ np.asarray(coefficients[1:], dtype=np.float64)


def unfit(rows: np.ndarray) -> np.ndarray:
    """Which rows of :func:`features` fit no skill: the score of the model of their width at its cut."""
    rows = np.atleast_2d(np.asarray(rows, dtype=np.float64))
    return score(rows) >= model(rows.shape[1])[1]


def fits_no_skill(best: float, everyday: float, lexical: float, matched: float, chance: Chance,
                  passage: float | None = None) -> bool:
    """The rule of the module docstring for one request."""
    return bool(unfit(features(best, everyday, lexical, matched, chance, passage))[0])


def lexical_signal(signals: Mapping[str, np.ndarray]) -> str | None:
    """The first :data:`LEXICAL` signal among ``signals`` (None: the library has none)."""
    return next((name for name in LEXICAL if name in signals), None)


def lexical_evidence(scores: np.ndarray, excluded: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per request (a row of ``scores``, the :data:`LEXICAL` signal's requests x skills), over the skills that may
    be shown (``excluded``: a mask of those that may not): its best score (0 with no skill) and how many skills it
    scores above zero. What :func:`features` reads as ``lexical`` and ``matched``, for a route and for the chance
    level alike."""
    allowed = _allowed(scores, excluded)
    return _best(allowed), (allowed > 0).sum(axis=1).astype(np.float64)


def _allowed(scores: np.ndarray, excluded: np.ndarray | None) -> np.ndarray:
    """``scores`` (requests x skills) over the skills that may be shown (``excluded``: a mask of those that may not)."""
    scores = np.asarray(scores, dtype=np.float64)
    return scores if excluded is None else scores[:, ~np.asarray(excluded, dtype=bool)]


def _best(allowed: np.ndarray) -> np.ndarray:
    """Each request's best score (0 with no skill)."""
    return allowed.max(axis=1) if allowed.shape[1] else np.zeros(len(allowed))


def chance_level(scorer: Any, score_texts: Score, confidences: Callable[[Mapping[str, np.ndarray]], np.ndarray],
                 vectors: np.ndarray, model_id: str, identity: bytes | None = None) -> Chance:
    """The library's :class:`Chance` when its index does not hold it (:func:`chance_of`, computed here). Kept in
    memory for as long as ``scorer`` (the library's built signals) lives; with ``identity`` (bytes that change
    whenever the built signals do: the saved index's manifest) also in the cache folder, so a one-shot route over
    an unchanged index reads it instead of scoring again."""
    key = (id(scorer), model_id)
    held = _CHANCE.get(key)
    if held is not None and held[0]() is scorer:
        return held[1]
    path = _chance_path(model_id, identity) if identity is not None else None
    chance = _read_chance(path) if path else None
    if chance is None:
        chance = chance_of(score_texts, confidences, vectors)
        if path:
            _write_bytes(path, json.dumps(dataclasses.asdict(chance)).encode())
    try:
        ref = weakref.ref(scorer, lambda _: _CHANCE.pop(key, None))
    except TypeError:  # a scorer that cannot be weakly referenced is scored again next time
        return chance
    _CHANCE[key] = (ref, chance)
    return chance


def chance_of(score_texts: Score, confidences: Callable[[Mapping[str, np.ndarray]], np.ndarray],
              vectors: np.ndarray) -> Chance:
    """The library's :class:`Chance`: the first :data:`CHANCE_SAMPLE` of :data:`EVERYDAY` (unit ``vectors``, one
    row per everyday request) scored by ``score_texts``, then the mean of ``confidences`` (each request's best
    cosine), of the log lexical score and of the log count of skills with a lexical score above zero. What an
    index build stores and what :func:`chance_level` computes."""
    signals = score_texts(list(EVERYDAY[:CHANCE_SAMPLE]), vectors[:CHANCE_SAMPLE])
    name = lexical_signal(signals)
    best, count = lexical_evidence(signals[name]) if name else (np.zeros(1), np.zeros(1))
    lexical, matched = np.log1p(np.maximum(best, 0.0)), np.log1p(count)
    passage = passage_evidence(signals)
    return Chance(best=float(np.mean(confidences(signals))), lexical=float(np.mean(lexical)),
                  matched=float(np.mean(matched)), passage=None if passage is None else float(np.mean(passage)))


def passage_evidence(signals: Mapping[str, np.ndarray], excluded: np.ndarray | None = None) -> np.ndarray | None:
    """Per request, the best :data:`PASSAGE` cosine over the skills that may be shown (``excluded``: a mask of
    those that may not); None when ``signals`` lack that signal (the fallback model decides)."""
    if PASSAGE not in signals:
        return None
    return _best(_allowed(signals[PASSAGE], excluded))


def chance_recipe(model_id: str, signals: Collection[str], content: str) -> str:
    """What a library's chance level is computed from, as a digest: :data:`CHANCE_RECIPE`, the model, the
    everyday sample, the signal the confidence reads (``examples``, else ``dense``:
    :func:`router.ranking.confidence_scores`), the lexical one (:func:`lexical_signal`), whether :data:`PASSAGE`
    is among ``signals`` (the names the built signals score) and then how its body heads are cut
    (:func:`router.signals.passage_dense.head_passages`: the same bodies cut otherwise embed other heads, whose
    chance level differs), and ``content`` (what identifies the library's built signals: the saved index's
    signature and bodies, a database generation)."""
    from router.signals import passage_dense

    confidence = "examples" if "examples" in signals else "dense"
    heads = [passage_dense.HEAD, passage_dense.WORDS, passage_dense.WINDOW, passage_dense.STRIDE] \
        if PASSAGE in signals else None
    payload = json.dumps([CHANCE_RECIPE, model_id, CHANCE_SAMPLE, list(EVERYDAY[:CHANCE_SAMPLE]), confidence,
                          lexical_signal(cast("Mapping[str, np.ndarray]", dict.fromkeys(signals))),
                          PASSAGE in signals, heads, content], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def stored_chance(chance: Chance, recipe: str) -> dict[str, Any]:
    """The form an index keeps its chance level in: a small JSON object, one mean by name
    (``{"recipe": ..., "means": {"best": ..., "lexical": ..., "matched": ..., "passage": ... or null}}``)."""
    return {"recipe": recipe, "means": dataclasses.asdict(chance)}


def read_stored(stored: object, recipe: str) -> Chance | None:
    """The :class:`Chance` an index keeps (:func:`stored_chance`) when it was computed by ``recipe``; None when
    there is none, it is of another recipe, or it lacks a mean (the caller computes it again)."""
    if not isinstance(stored, Mapping) or stored.get("recipe") != recipe or not isinstance(stored.get("means"),
                                                                                           Mapping):
        return None
    return _chance_from(stored["means"])


def _chance_from(means: Mapping[str, Any]) -> Chance | None:
    """The :class:`Chance` of a mapping of its means (``passage`` may be null); None when one is missing or not a
    finite number."""
    try:
        values = {f.name: None if f.name == "passage" and means.get(f.name, 0) is None else float(means[f.name])
                  for f in dataclasses.fields(Chance)}
    except (KeyError, TypeError, ValueError):
        return None
    return Chance(**cast("dict[str, Any]", values)) if all(v is None or math.isfinite(v) for v in values.values()) \
        else None


def _chance_path(model_id: str, identity: bytes) -> str:
    digest = hashlib.sha256("\n".join((str(CHANCE_RECIPE), model_id, *EVERYDAY[:CHANCE_SAMPLE])).encode(
        "utf-8", "surrogatepass"))
    digest.update(b"\0" + identity)
    return os.path.join(cache_folder(), f"chance-{digest.hexdigest()[:24]}.json")


def _read_chance(path: str) -> Chance | None:
    from router.files import open_regular

    try:
        with open_regular(path) as handle:
            raw = json.loads(handle.read(4096))
    except (OSError, ValueError):
        return None  # missing or cut: score again
    # from elsewhere, or from before ``matched`` or ``passage``: score again
    return _chance_from(raw) if isinstance(raw, Mapping) and "passage" in raw else None


def everyday_cosines(vectors: np.ndarray, model_id: str, encode: Encode) -> np.ndarray:
    """Each request's best cosine with the :data:`EVERYDAY` requests (``vectors``: unit rows, requests x dim)."""
    if not len(vectors):
        return np.zeros(0, dtype=np.float32)
    everyday = everyday_vectors(model_id, encode, int(vectors.shape[1]))
    return np.asarray(vectors @ everyday.T).max(axis=1)


def everyday_vectors(model_id: str, encode: Encode, dim: int) -> np.ndarray:
    """The :data:`EVERYDAY` embeddings of ``model_id``: from memory, else the cache file, else ``encode`` (then
    cached in both)."""
    key = hashlib.sha256("\n".join((model_id, *EVERYDAY)).encode("utf-8", "surrogatepass")).hexdigest()[:24]
    vectors = _MEMO.get(key)
    if vectors is not None and vectors.shape == (len(EVERYDAY), dim):
        return vectors
    path = os.path.join(cache_folder(), f"{key}.npy")
    vectors = _read(path, dim)
    if vectors is None:
        vectors = np.asarray(encode(list(EVERYDAY)), dtype=np.float32)
        if vectors.shape != (len(EVERYDAY), dim):
            raise ValueError(f"the encoder returned {vectors.shape} vectors for {len(EVERYDAY)} texts of dimension "
                             f"{dim}: check the model")
        _write(path, vectors)
    _MEMO[key] = vectors
    return vectors


def cache_folder() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "skill-router", "everyday")


def _read(path: str, dim: int) -> np.ndarray | None:
    from router.files import open_regular

    try:
        with open_regular(path) as handle:
            vectors = np.load(handle, allow_pickle=False)
    except (OSError, ValueError):
        return None
    if vectors.shape != (len(EVERYDAY), dim) or vectors.dtype != np.float32 or not np.isfinite(vectors).all():
        return None  # a file from elsewhere or a cut write: embed again
    return vectors


def _write(path: str, vectors: np.ndarray) -> None:
    buffer = io.BytesIO()
    np.save(buffer, vectors, allow_pickle=False)
    _write_bytes(path, buffer.getvalue())


def _write_bytes(path: str, data: bytes) -> None:
    tmp = ""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        handle, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".everyday.", suffix=".tmp")
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
        tmp = ""
    except OSError:
        pass  # a read-only or full cache folder: the values stay in memory for this process
    finally:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)
