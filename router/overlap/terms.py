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
from typing import Iterable, Mapping, Sequence

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


def name_body_counts(name: str, body: str, cache: dict[str, tuple[str, ...]] | None = None) -> Counter[str]:
    """Content-token counts of a skill's body, each word of its name counting :data:`NAME_WEIGHT` times.

    The body is tokenized one whitespace-separated chunk at a time, each distinct chunk once (``cache`` shares
    that work across skills): no tokenizer rule spans whitespace, so the tokens are those of the whole text,
    and bodies up to 70 KB repeat most of their chunks.
    """
    cache = {} if cache is None else cache
    counts: Counter[str] = Counter()
    for chunk, repeats in Counter(body.split()).items():
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
    own: Mapping[str, float], other: Mapping[str, float], described: Iterable[str]
) -> tuple[str, ...]:
    """Words that set one skill apart from another and that neither description mentions yet.

    ``own`` and ``other`` are the two skills' :func:`profile`; ``described`` the content tokens of both
    descriptions. A word qualifies when it weighs more in ``own`` than in ``other`` (so a word both bodies lean
    on does not count), is not in ``described``, and is a real word (three characters or more, or non-ASCII such
    as a CJK bigram). Ranked by ``own[t] - other.get(t, 0)``, ties alphabetical; at most :data:`MAX_LACKS`.
    """
    excluded = set(described)
    margins = {
        t: w - other.get(t, 0.0)
        for t, w in own.items()
        if t not in excluded and (len(t) >= 3 or not t.isascii()) and w - other.get(t, 0.0) > 0
    }
    return tuple(sorted(margins, key=lambda t: (-margins[t], t))[:MAX_LACKS])
