"""What the router indexes for each skill.

Each signal reads its own text (chosen on the dev sets by ``benchmarks/signal_choice.py``):

- ``bm25``: the name words and the description (:func:`index_text`);
- ``dense``: the description alone (:func:`dense_text`): embedding the name words with it lost 1 point of hit@1
  on MetaTool dev and a little on the real corpora, where names are folder slugs;
- ``body_bm25`` / ``body_dense``: part of the SKILL.md body (:func:`body_text`).

What goes into them:

- The name split into words (``go-code-review`` -> ``go code review``, ``getWeatherForecast`` -> ``get Weather
  Forecast``): names carry the skill's topic and a request often uses the same words.
- The description **as the profile parses it** (what the harness shows the model). Where that parse is
  degenerate — ``|`` or ``>`` from the unreal line parser, an empty value, the genkit placeholder, or a value the
  line parser kept in quotes — a lenient YAML parse of the same file is indexed in addition
  (:func:`lenient_description`). The catalogue still shows exactly what the harness shows.
- At most :data:`MAX_INDEXED_DESCRIPTION_CHARS` of each description (:func:`indexed_description`): a 3 MB
  description is indexed by its first few thousand characters, not tokenised whole for every signal (the
  rendering still shows all of it).
- Part of the body, as separate signals (``body_bm25``, ``body_dense``), never mixed into the description's text:
  ``body="headings"`` the Markdown headings, ``"lead"`` the first ``body_tokens`` words, ``"both"`` the headings
  then the lead. Which part, and how much it weighs, was chosen on the dev sets by ``benchmarks/signal_choice.py``.
"""

from __future__ import annotations

import functools
import re
from typing import Literal

from indexes.tokenize import split_identifier
from router.safetext import safe_text
from router.skill import Skill

BodyMode = Literal["none", "headings", "lead", "both"]
BODY_MODES: tuple[BodyMode, ...] = ("none", "headings", "lead", "both")

#: Most characters of a description that are indexed. Four times the 1,024 characters the Agent Skills
#: specification and codex allow, so every valid description is indexed whole; the embedding model reads only its
#: first 256 word pieces (about 1,000 characters) anyway, and BM25 gains nothing from more text than that.
MAX_INDEXED_DESCRIPTION_CHARS = 4096

_DEGENERATE = {"", "|", ">", "|-", ">-", "|+", ">+", "No description provided."}
_WORD = re.compile(r"[^\W_]+")
# [ \t], not \s: \s would let an empty "#" line swallow the line after it as its heading text
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)
_FENCED = re.compile(r"^ {0,3}(```|~~~).*?(?:^ {0,3}\1[^\n]*$|\Z)", re.MULTILINE | re.DOTALL)


def indexed_description(text: str, limit: int = MAX_INDEXED_DESCRIPTION_CHARS) -> str:
    """The first ``limit`` characters of ``text``, cut at the last whitespace before the limit so no word is
    indexed half (a text without whitespace there is cut at the limit)."""
    if len(text) <= limit:
        return text
    head = text[:limit + 1]
    cut = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
    return (head[:cut] if cut > 0 else head[:limit]).rstrip()


#: Names whose words :func:`name_words` keeps.
NAME_WORDS_KEPT = 1 << 16


@functools.lru_cache(maxsize=NAME_WORDS_KEPT)
def name_words(name: str) -> str:
    """The skill name as words: separators become spaces, identifiers split at case and digit boundaries. Kept per
    name: three signals' texts and the name table ask for the words of every skill."""
    return " ".join(part for word in _WORD.findall(name) for part in split_identifier(word))


def is_degenerate(description: str) -> bool:
    """True where a profile's parse left no usable description text."""
    return description.strip() in _DEGENERATE


def _kept_quotes(description: str) -> bool:
    text = description.strip()
    return len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'"


def reads_file(skill: Skill) -> bool:
    """Whether the skill's texts are read from its file as well (:func:`lenient_description`), not only from its
    fields: the profile's parse is degenerate (:func:`is_degenerate`) or kept the YAML quotes."""
    return bool(skill.path) and (is_degenerate(skill.description) or _kept_quotes(skill.description))


def lenient_description(skill: Skill) -> str:
    """A lenient YAML parse of the skill's frontmatter description ('' when there is nothing better).

    Read only where :func:`reads_file` says so.
    """
    if not reads_file(skill):
        return ""
    from router.frontmatter import FrontmatterError, load_frontmatter, split_frontmatter

    from router.files import MAX_SKILL_FILE_BYTES, read_bytes

    try:
        text = read_bytes(skill.fs_path, MAX_SKILL_FILE_BYTES).decode("utf-8", errors="replace")
        front, _ = split_frontmatter(text.removeprefix("\ufeff").replace("\r\n", "\n"))
        data, _ = load_frontmatter(front)
    except (OSError, FrontmatterError):
        return ""
    value = data.get("description")
    if not isinstance(value, str):
        return ""
    value = " ".join(safe_text(value)[:4 * MAX_INDEXED_DESCRIPTION_CHARS].split())
    return "" if value == skill.description.strip() else indexed_description(value)


def body_text(body: str, mode: BodyMode, tokens: int = 100) -> str:
    """The part of a skill's body that is indexed under ``mode``."""
    if mode == "none" or not body:
        return ""
    if mode == "both":
        return " ".join(p for p in (body_text(body, "headings"), body_text(body, "lead", tokens)) if p)
    if mode == "headings":
        # A '# comment' line inside a fenced code block (shell, Python) is code, not a heading.
        return " ".join(_HEADING.findall(_FENCED.sub("", body)))
    # Split only a prefix of a long body: when it holds more than ``tokens`` words, the first ``tokens`` are whole.
    words = body[: 16 * tokens + 64].split(maxsplit=tokens)
    if len(words) <= tokens:
        words = body.split(maxsplit=tokens)
    return " ".join(words[:tokens])


def _descriptions(skill: Skill) -> tuple[str, str]:
    """(the description as shown, when it is usable; a lenient parse of it, when the shown one is degenerate)."""
    extra = indexed_description(skill.index_description) or lenient_description(skill)
    # A degenerate description ('|', the placeholder) would give every such skill the same words.
    shown = "" if extra and is_degenerate(skill.description) else indexed_description(skill.description)
    return shown, extra


def index_text(skill: Skill) -> str:
    """The text the ``bm25`` signal indexes for ``skill``: name words and description."""
    return ". ".join(p for p in (name_words(skill.name), *_descriptions(skill)) if p)


def dense_text(skill: Skill, *, with_name: bool = False) -> str:
    """The text the ``dense`` signal embeds for ``skill``: the description (the name words when it has none), or
    with ``with_name`` the same text as :func:`index_text`."""
    if with_name:
        return index_text(skill)
    shown, extra = _descriptions(skill)
    text = ". ".join(p for p in (shown, extra) if p and not is_degenerate(p))
    return text or name_words(skill.name) or skill.name
