"""Turn text into lowercase word tokens for BM25: identifiers split, CJK as bigrams.

Rules, in order:

1. NFKC normalisation (full-width letters become ASCII), possessive ``'s`` dropped and apostrophes inside
   words removed (``don't`` -> ``dont``).
2. Runs of CJK characters (Han, Hiragana, Katakana, Hangul) become overlapping character bigrams, and a
   one-character run stays a unigram, as Lucene's CJKBigramFilter does, so a Chinese request matches a Chinese
   description without a dictionary segmenter.
3. Other runs of letters and digits are split like identifiers, following Lucene's WordDelimiterFilter:
   ``_`` and ``-`` and punctuation separate words, a lower-to-upper change starts a word (``getWeather`` ->
   get, weather), an acronym ends before its last capital when two lowercase letters follow (``HTTPServer`` ->
   http, server), and letters and digits separate (``base64Encode`` -> base, 64, encode).
4. Tokens are lowercased, English stop words removed and a light stemmer applied (both configurable).

The default (English stop words + light stemmer) was chosen by measurement: ``benchmarks/tokenizer_choice.py``,
BM25 (Lucene idf, k1=1.5, b=0.75), dev splits only, index text = tool name split into words + description,
R@k = share of the gold tools in the top k:

==================================  ====================  ====================
variant                             MetaTool dev R@1/R@5  Seal-Tools dev R@1/R@5
==================================  ====================  ====================
lowercase ``\\w+`` (no splitting)    28.7 / 44.3           40.7 / 73.9
identifier splitting                30.6 / 45.5           40.5 / 73.2
+ Lucene stop words                 35.6 / 52.0           41.9 / 77.8
+ Lucene stop words + light stem    39.5 / 59.5           42.7 / 76.7
+ English (NLTK) stop words         40.0 / 55.3           42.9 / 79.9
+ English stop words + S-stemmer    43.7 / 62.5           43.6 / 79.5
+ English stop words + light stem   43.9 / 63.5           43.5 / 78.5   (default)
==================================  ====================  ====================

Stop words matter most because requests are phrased as questions ("can you help me find ...") while
descriptions are not; stemming folds plurals and verb forms (papers/paper, generating/generate).

References: Lucene ``CJKBigramFilter``, ``WordDelimiterGraphFilter`` and ``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET``;
Harman (1991), "How effective is suffixing?", JASIS 42(1) for the S-stemmer.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

Stemmer = Literal["none", "s", "light"]
StopList = Literal["none", "lucene", "english"]

# Lucene's EnglishAnalyzer stop set: short and conservative, the one most BM25 baselines use.
LUCENE_STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these "
    "they this to was will with".split()
)
# NLTK's English stop list without contractions: it also drops the pronouns and auxiliaries that fill requests
# ("can you help me ..."), which measured +4 points of R@1 on MetaTool dev over the Lucene set.
ENGLISH_STOP_WORDS = frozenset(
    "a about above after again against all am an and any are as at be because been before being below between "
    "both but by can could did do does doing down during each few for from further had has have having he her "
    "here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not "
    "now of off on once only or other our ours ourselves out over own same she should so some such than that the "
    "their theirs them themselves then there these they this those through to too under until up very was we "
    "were what when where which while who whom why will with would you your yours yourself yourselves".split()
)
_STOP_LISTS = {"none": frozenset(), "lucene": LUCENE_STOP_WORDS, "english": ENGLISH_STOP_WORDS}

_CJK = (
    "\u1100-\u11ff\u3040-\u309f\u30a0-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002ebef"
)
_RUN = re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>(?:(?![{_CJK}])[^\W_])+)")
_POSSESSIVE = re.compile(r"(?<=\w)['\u2019]s\b")
_INNER_APOSTROPHE = re.compile(r"(?<=\w)['\u2019](?=\w)")


def _char_class(char: str) -> str:
    if char.isdigit():
        return "D"
    return "U" if char.isupper() else "L"


def split_identifier(word: str) -> list[str]:
    """Split one run of letters and digits at case and letter/digit boundaries (case preserved)."""
    # No digit and no upper case (uncased letters count as lower), or ASCII capitals only: no boundary (most words)
    if word.isalpha() and (word.islower() or (word.isascii() and word.isupper())):
        return [word]
    parts: list[str] = []
    start = 0
    classes = [_char_class(char) for char in word]
    for i in range(1, len(word)):
        before, here = classes[i - 1], classes[i]
        # An acronym ends before its last capital only when a real word follows (HTTPServer, not IPv4).
        word_follows = classes[i + 1 : i + 3] == ["L", "L"]
        boundary = (
            (before == "L" and here == "U")
            or (before == "D") != (here == "D")
            or (before == "U" and here == "U" and word_follows)
        )
        if boundary:
            parts.append(word[start:i])
            start = i
    parts.append(word[start:])
    return parts


def _cjk_grams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def s_stem(token: str) -> str:
    """Harman's S-stemmer: fold English plurals (``queries`` -> query, ``files`` -> file, ``tools`` -> tool)."""
    if len(token) > 3 and token.endswith("ies") and not token.endswith(("eies", "aies")):
        return token[:-3] + "y"
    if len(token) > 3 and token.endswith("es") and not token.endswith(("aes", "ees", "oes")):
        return token[:-1]
    if len(token) > 2 and token.endswith("s") and not token.endswith(("us", "ss")):
        return token[:-1]
    return token


_VOWEL = re.compile(r"[aeiouy]")


def light_stem(token: str) -> str:
    """S-stemmer, then strip ``-ing``/``-ed`` and a final ``e`` so create/created/creating meet at ``creat``."""
    token = s_stem(token)
    if not token.isascii() or not token.isalpha():
        return token
    for suffix in ("ing", "ed"):
        stem = token[: -len(suffix)]
        if token.endswith(suffix) and len(stem) >= 3 and _VOWEL.search(stem):
            token = stem
            # running -> runn -> run; keep ll/ss/zz which English doubles without a suffix (install, process).
            if len(token) >= 4 and token[-1] == token[-2] and token[-1] not in "aeiouylsz":
                token = token[:-1]
            break
    if len(token) > 4 and token.endswith("e"):
        token = token[:-1]
    return token


@functools.lru_cache(maxsize=1 << 18)
def _word_tokens(word: str, split_identifiers: bool, stopwords: str, stem: str) -> tuple[str, ...]:
    """The tokens of one word. Cached: a library's vocabulary is far smaller than its token count, and
    re-tokenising 10,000 descriptions spent most of its time splitting and stemming the same words again."""
    stop = _STOP_LISTS[stopwords]
    out = []
    for part in split_identifier(word) if split_identifiers else [word]:
        token = part.lower()
        if token in stop:
            continue
        if stem == "s":
            token = s_stem(token)
        elif stem == "light":
            token = light_stem(token)
        out.append(token)
    return tuple(out)


@dataclass(frozen=True)
class Tokenizer:
    """A configured tokenizer; calling it on a text returns its tokens.

    Parameters:
        split_identifiers: split CamelCase, snake_case, kebab-case and letter/digit boundaries.
        stopwords: ``"none"``, ``"lucene"`` (Lucene's 33 English stop words) or ``"english"`` (NLTK's list).
        stem: ``"none"``, ``"s"`` (Harman's plural folding) or ``"light"`` (plurals, -ing, -ed, final e).
    """

    split_identifiers: bool = True
    stopwords: StopList = "english"
    stem: Stemmer = "light"

    def __post_init__(self) -> None:
        if self.stopwords not in _STOP_LISTS:
            raise ValueError(f"unknown stop list {self.stopwords!r}: use 'none', 'lucene' or 'english'")
        if self.stem not in ("none", "s", "light"):
            raise ValueError(f"unknown stemmer {self.stem!r}: use 'none', 's' or 'light'")

    def __call__(self, text: str) -> list[str]:
        text = unicodedata.normalize("NFKC", text)
        text = _INNER_APOSTROPHE.sub("", _POSSESSIVE.sub("", text))
        tokens: list[str] = []
        for match in _RUN.finditer(text):
            if match.group("cjk"):
                tokens.extend(_cjk_grams(match.group("cjk")))
                continue
            tokens.extend(_word_tokens(match.group("word"), self.split_identifiers, self.stopwords, self.stem))
        return tokens

    def to_dict(self) -> dict[str, object]:
        """Plain-JSON form, stored with a persisted index so queries are tokenized as the documents were."""
        return {"split_identifiers": self.split_identifiers, "stopwords": self.stopwords, "stem": self.stem}

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Tokenizer:
        """Inverse of :meth:`to_dict`."""
        return cls(
            split_identifiers=bool(data["split_identifiers"]), stopwords=data["stopwords"],  # type: ignore[arg-type]
            stem=data["stem"],  # type: ignore[arg-type]
        )


DEFAULT_TOKENIZER = Tokenizer()


def tokenize(text: str) -> list[str]:
    """Tokenize ``text`` with the default tokenizer (see the module docstring for the rules and the numbers)."""
    return DEFAULT_TOKENIZER(text)
