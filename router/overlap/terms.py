"""Word-level evidence for overlap: lexical similarity, shared terms and distinguishing words.

Every function here works on token lists from :func:`indexes.tokenize.tokenize` (the router's own tokens, so
that "lexical" means what the BM25 index sees) after dropping :data:`STOPWORDS`, one-character tokens and bare
numbers (:func:`content_tokens`), so that "shared words" means shared *content* words. Tokens may be stems;
:func:`surface_forms` maps them back to the words the texts actually use before anything is shown.

Weights are tf-idf with sublinear term frequency, ``w(t, d) = (1 + ln tf(t, d)) * idf(t)`` (Salton and Buckley
1988, "Term-weighting approaches in automatic text retrieval"), and the Lucene BM25 idf
``idf(t) = ln(1 + (n - df(t) + 0.5) / (df(t) + 0.5))`` (Robertson and Zaragoza 2009, "The Probabilistic
Relevance Framework: BM25 and Beyond"). That idf is positive for every term, even one found in every document:
the Okapi form gives 0 to a term in exactly half the documents, which would make every shared word of a
two-skill library invisible.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter, defaultdict
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

from indexes.tokenize import tokenize

STOPWORDS: frozenset[str] = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before being below
    between both but by can could did do does doing down during each either etc few for from further had has
    have having he her here hers herself him himself his how however i if in into is it its itself just let
    may me might more most must my myself no nor not now of off on once only or other our ours ourselves out
    over own per same shall she should so some such than that the their theirs them themselves then there
    these they this those through thus to too under until up upon us very via was we were what when where
    whether which while who whom whose why will with within without would yet you your yours yourself
    yourselves e g eg ie vs use used uses using ask asks asked
    """.split()
)
"""English function words, plus "use"/"using" and "ask"/"asked" (nearly every description says "Use when asked
to ..."): never evidence
that two skills overlap, never a word worth adding to a description."""

# Function words of the other languages skill libraries are written in (French, German, Spanish, Italian,
# Portuguese, Dutch): as tokens they are as empty as English ones.
FOREIGN_STOPWORDS: frozenset[str] = frozenset(
    """
    le la les un une des du de et est en dans pour par sur avec sans qui que quoi dont ou où au aux ce cet cette ces
    il elle ils elles nous vous je tu son sa ses leur leurs mon ma mes ton ta tes pas ne plus très être avoir fait
    der die das den dem des ein eine einer eines einem einen und oder ist sind nicht mit von zu zum zur auf aus für
    bei nach über unter wie wird werden kann können sich auch noch nur wenn dass ich du er sie wir ihr es im am
    el los las una unos unas y o es son del al para por con sin que qué como pero más muy se su sus lo esta este
    il lo gli uno una e è di da con per tra fra che non più come questo questa sono nel nella della delle degli
    os as um uma uns umas e é do da dos das em no na nos nas com sem que não mais como isso este esta seu sua
    het een en van op te dat die niet met voor zijn ook aan bij als maar dan wat wordt worden naar
    """.split()
)

# Words every kind of text uses, whatever it is about: as "the word to add to a description" they say nothing
# of what the skill does ("accordingly", "ready", "first"), so they are never suggested.
GENERAL_WORDS: frozenset[str] = frozenset(
    """
    able absolutely accordingly actual actually add added adding additional additionally again ago ahead aim
    allow allowed allows almost alone along already alright although always among another anything anyway
    anywhere apart appear applied apply appropriate approach approx area around aside available avoid away back
    bad based basic basically become becomes begin behind believe belong best better big bit bold brief briefly
    bring broad build built call called can care careful carefully case cases cause certain certainly change
    check choose clean clear clearly close come comes common complete completely complex consider contain
    contains correct could create current currently cut deal decide default define depend depending detail
    details different difficult directly does done double easily easy effective either else end enough ensure
    entire especially even ever every everything evil exactly example examples except exist expect explain
    extra fact fail fairly far fast feel felt few final finally find fine first fit fix follow following
    forward found free fresh friendly full fully further get getting give given gives go goes going good great
    group guide half handle happen hard heat help helps high highly hold huge idea ideal immediately important
    include included includes including indeed instead involve item items keep kind know large last later least
    leave less level like likely limit line list little live long look looks lot low main mainly make makes
    making many matter maybe mean means meet mind minimal miss mode moment much name need needed needs never new
    next nice none normal normally note nothing notice number often okay old one ones open order others
    otherwise overall overview part particular particularly pass past perhaps person personal place plain plan
    play please pleasure point possible possibly prefer present pretty prevent previous probably proper properly
    provide provides pure purely put quick quickly quite rather read ready real really reason recommended
    regular related relevant remain remember require required requires respond rest result results return right
    rule run safe said save say see seem seen sense set several short show shown side significantly similar
    simple simply since single small smart solid something sometimes soon sort specific specifically stand
    start state step still stop strong strongly sure take taken takes tell term thing things think third
    though thought three tiny today together top total toward treat true try turn two type typical typically
    understand unless unlike usual usually valid value various want way well whatever whenever wide without
    work works worth write wrong yes
    accept accepted accumulated agreement aids assumption assumptions aware bulk characters chars clients
    concise confirmation deadline deadlines development due executive feature features garbage hat human
    integrating link locate maximal medium modern obsess official operations optimizing overload potential
    primary problem problems prohibited propose reduce refer resources significant signal software solves
    specify strictly summary transform vertical
    """.split()
)

# Placeholders of examples ("yourdomain.com", "foo", "John Doe"): in a skill's text, never in its subject.
PLACEHOLDERS: frozenset[str] = frozenset(
    """
    example examples sample yourdomain mydomain yourcompany mycompany yourapp myapp yourname myname username
    foo bar baz qux quux foobar acme lorem ipsum dolor amet todo fixme xxx xyz abc john jane doe alice bob carol
    dave eve mallory smith tom
    """.split()
)

NAME_WEIGHT = 3
"""A word of a skill's name counts as this many occurrences in its name-and-body profile: the name is the
author's own summary, so its words are the first candidates to add to a description."""

MAX_SHARED_TERMS = 8
MAX_LACKS = 5


def content_tokens(text: str) -> list[str]:
    """Tokens of ``text`` without stopwords, one-character tokens and bare numbers, in order."""
    return [t for t in tokenize(text) if len(t) > 1 and not t.isdigit() and t not in STOPWORDS]


_WORD = re.compile(r"[^\W_]+")


@functools.lru_cache(maxsize=1 << 16)
def _word_tokens(word: str) -> tuple[str, ...]:
    return tuple(tokenize(word))


def surface_forms(texts: Iterable[str], tokens: Iterable[str]) -> dict[str, str]:
    """Map each of ``tokens`` to the lowercase word of ``texts`` that tokenizes to it most often.

    Ties go to the shorter word, then the alphabetically first; a token no single word produces (a CJK bigram,
    one part of a CamelCase word) maps to itself. Only words starting like a wanted token are tokenized, which
    keeps a 70 KB body cheap.
    """
    wanted = set(tokens)
    prefixes = {t[:2] for t in wanted}
    seen: dict[str, Counter[str]] = defaultdict(Counter)
    for text in texts:
        for word in _WORD.findall(text):
            lower = word.lower()
            if lower[:2] not in prefixes:
                continue
            produced = _word_tokens(word)
            if len(produced) == 1 and produced[0] in wanted:
                seen[produced[0]][lower] += 1
    return {
        t: min(seen[t].items(), key=lambda wc: (-wc[1], len(wc[0]), wc[0]))[0] if seen[t] else t for t in wanted
    }


def lucene_idf(doc_tokens: Sequence[Iterable[str]]) -> dict[str, float]:
    """Map every token of ``doc_tokens`` to ``ln(1 + (n - df + 0.5) / (df + 0.5))`` over those documents."""
    df: Counter[str] = Counter()
    for tokens in doc_tokens:
        df.update(set(tokens))
    n = len(doc_tokens)
    return {t: math.log(1.0 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}


def lexical_similarity(doc_tokens: Sequence[Sequence[str]], idf: Mapping[str, float]) -> np.ndarray:
    """Cosine between the sublinear tf-idf vectors of every pair of documents, as a dense (n, n) matrix.

    A document without content tokens has a zero vector and similarity 0 to everything, itself included.
    Symmetric and bounded in [0, 1], so it can be averaged with an embedding cosine; BM25 scores are neither.
    """
    from scipy import sparse

    vocabulary = {t: k for k, t in enumerate(sorted(idf))}
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    for i, tokens in enumerate(doc_tokens):
        for t, tf in Counter(tokens).items():
            rows.append(i)
            cols.append(vocabulary[t])
            vals.append((1.0 + math.log(tf)) * idf[t])
    n = len(doc_tokens)
    matrix = sparse.csr_matrix((vals, (rows, cols)), shape=(n, max(len(vocabulary), 1)), dtype=np.float64)
    norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())
    matrix = sparse.diags(1.0 / np.where(norms > 0, norms, 1.0)) @ matrix
    return np.asarray((matrix @ matrix.T).toarray())


def shared_terms(a: Iterable[str], b: Iterable[str], idf: Mapping[str, float]) -> tuple[str, ...]:
    """The content tokens both ``a`` and ``b`` contain, rarest in the library first (ties alphabetical)."""
    both = set(a) & set(b)
    return tuple(sorted(both, key=lambda t: (-idf[t], t))[:MAX_SHARED_TERMS])


_FENCED = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n.*?(^[ \t]*\1[ \t]*$|\Z)", re.S | re.M)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_URL = re.compile(r"\b(?:[a-z][a-z0-9+.-]*://|www\.)\S+", re.I)
_EMAIL = re.compile(r"\S+@\S+\.\w+")
# Host names (example.com, api.weather.gov), paths (/etc/x, ./a, a/b/c) and file names (config.yaml): names,
# not words. "Next.js", "CI/CD" and "A/B" stay.
_HOST_OR_PATH = re.compile(r"\S*\w\.(?:com|org|net|io|dev|gov|edu|co|app|ai|xyz|info|me|us|uk|fr|de)\b\S*"
                           r"|\S*\w\.\w+\.\w\S*|[.~]?/\S+|\S+/\S+/\S+"
                           r"|\S+\.(?:json|ya?ml|toml|md|txt|csv|py|sh|html?|xml|log|ini|cfg|lock|env)\b\S*", re.I)
_MENTION = re.compile(r"(?<!\w)[@#$]\w+")
_QUOTED = re.compile(r'"[^"\n]{1,400}"|\u201c[^\u201d\n]{1,400}\u201d')  # example requests and outputs
_HTML = re.compile(r"<[^>\n]{1,200}>")
_CONTRACTION = re.compile(r"(?<=\w)['\u2019](?:ll|ve|re|d|s|m|t)\b", re.I)
_LATIN = re.compile(r"\b(?:ad[- ]hoc|et al|per se|vice versa|de facto|a priori|via|i\.e|e\.g)\b", re.I)
_DIALOGUE = re.compile(r"^\s*(?:>|(?:user|assistant|human|ai|input|output|q|a|prompt|response)\s*:).*$",
                       re.I | re.M)


def prose(body: str) -> str:
    """The prose of a SKILL.md body: what the author says about the skill, without the material it quotes.

    Code (fenced blocks and inline spans), URLs, e-mail addresses, host names and paths, @mentions, HTML tags,
    quoted text and dialogue lines are examples, not vocabulary: a distinguishing word taken from them would be
    a placeholder (``yourdomain``), an identifier (``kpdx``) or a name from an example (``Tom``, ``Portland``).
    Contractions lose their ending ("I'll" would give "ill") and Latin phrases are dropped ("ad hoc": "hoc").
    """
    text = _FENCED.sub(" ", body)
    for pattern in (_INLINE_CODE, _URL, _EMAIL, _DIALOGUE, _QUOTED, _HTML, _MENTION, _LATIN, _CONTRACTION):
        text = pattern.sub(" ", text)
    return " ".join(chunk for chunk in text.split() if not _HOST_OR_PATH.fullmatch(chunk.strip(".,;:!?()[]*_")))


@functools.lru_cache(maxsize=1)
def _never_suggested() -> frozenset[str]:
    words = STOPWORDS | FOREIGN_STOPWORDS | GENERAL_WORDS | PLACEHOLDERS
    return frozenset(words) | frozenset(t for w in words for t in tokenize(w))


def capitalised_only(name: str, body: str) -> frozenset[str]:
    """Tokens the body's prose only ever writes capitalised, never at the start of a sentence and never in the
    name: names of people and places ("Portland", "Oregon", "Tom") and products ("Kotlin")."""
    text = prose(body)
    lower: set[str] = set(content_tokens(name))
    upper: set[str] = set()
    for match in re.finditer(r"(^|[.!?:]\s+|\n\s*[-*\d.]*\s*)?([^\W\d_][^\W_]*)", text):
        word = match.group(2)
        tokens = _word_tokens(word)
        if len(tokens) != 1:
            continue
        if word[0].isupper() and not word.isupper() and match.group(1) is None:
            upper.add(tokens[0])
        elif word[0].islower():
            lower.add(tokens[0])
    return frozenset(upper - lower)


def name_body_counts(name: str, body: str, cache: dict[str, tuple[str, ...]] | None = None, *,
                     whole: bool = False) -> Counter[str]:
    """Content-token counts of a skill's body (its :func:`prose`, or all of it with ``whole``), each word of its
    name counting :data:`NAME_WEIGHT` times.

    The body is tokenized one whitespace-separated chunk at a time, each distinct chunk once (``cache`` shares
    that work across skills): no tokenizer rule spans whitespace, so the tokens are those of the whole text,
    and bodies up to 70 KB repeat most of their chunks.
    """
    cache = {} if cache is None else cache
    counts: Counter[str] = Counter()
    for chunk, repeats in Counter((body if whole else prose(body)).split()).items():
        tokens = cache.get(chunk)
        if tokens is None:
            tokens = cache[chunk] = tuple(content_tokens(chunk))
        for t in tokens:
            counts[t] += repeats
    for t in content_tokens(name):
        counts[t] += NAME_WEIGHT
    return counts


def profile(counts: Mapping[str, int], idf: Mapping[str, float]) -> dict[str, float]:
    """L2-normalised sublinear tf-idf weights of :func:`name_body_counts` (a word unknown to ``idf`` weighs 0)."""
    weights = {t: (1.0 + math.log(c)) * idf.get(t, 0.0) for t, c in counts.items()}
    norm = math.sqrt(sum(w * w for w in weights.values()))
    return {t: w / norm for t, w in weights.items()} if norm > 0 else {}


def distinguishing_words(
    own: Mapping[str, float], other: Mapping[str, float], described: Iterable[str], *,
    other_words: Iterable[str] | None = None, counts: Mapping[str, int] | None = None,
    names: Iterable[str] = (), min_count: int = 1, df: Mapping[str, int] | None = None,
    standalone: Callable[[str], bool] | None = None,
) -> tuple[str, ...]:
    """Words that set one skill apart from another and that neither description mentions yet.

    ``own`` and ``other`` are the two skills' :func:`profile`; ``described`` the content tokens of both
    descriptions. A word qualifies when it is in ``own`` and not in ``other`` (nor in ``other_words``, the
    other skill's whole text: a word the other skill uses too tells nothing apart), is not in ``described``,
    and is a real word: three characters or more (or non-ASCII such as a CJK bigram), not a stop word of any
    language, not a general word or a placeholder (:data:`GENERAL_WORDS`, :data:`PLACEHOLDERS`), used at least
    ``min_count`` times (``counts``) unless it is in the skill's name, and not one of ``names`` (words only
    ever written capitalised, :func:`capitalised_only`) that no other skill of the library uses (``df`` 1):
    those are people and places of examples. ``standalone`` (when given) says whether a token is written as a
    word of its own, not only inside another ("armor" of "AppArmor", "rep" of "AS-REP"). Ranked by ``own[t]``,
    ties alphabetical; at most :data:`MAX_LACKS`.
    """
    excluded = set(described) | set(other) | set(other_words or ()) | _never_suggested()
    proper = set(names)
    counts = counts or {}
    margins = {
        t: w
        for t, w in own.items()
        if t not in excluded and (len(t) >= 3 or not t.isascii()) and w > 0 and not t.isdigit()
        and not any(ch.isdigit() for ch in t)
        and (counts.get(t, min_count) >= min_count or counts.get(t, 0) >= NAME_WEIGHT)
        and not (t in proper and (df or {}).get(t, 1) <= 1)
    }
    ranked = sorted(margins, key=lambda t: (-margins[t], t))
    if standalone is not None:
        ranked = [t for t in ranked if standalone(t)]
    return tuple(ranked[:MAX_LACKS])


def standalone_words(texts: Iterable[str]) -> Callable[[str], bool]:
    """A test of whether a token is produced by a whole word of ``texts`` (not a part of a CamelCase or
    hyphenated word); non-ASCII tokens (CJK bigrams) always pass."""
    words: set[str] = set()
    for text in texts:
        for chunk in text.split():
            if "-" in chunk.strip("-"):
                continue  # "AS-REP", "ad-hoc": the parts are not words of their own
            for word in _WORD.findall(chunk):
                produced = _word_tokens(word)
                if len(produced) == 1:
                    words.add(produced[0])
    return lambda token: token in words or not token.isascii()
