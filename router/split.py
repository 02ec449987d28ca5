"""Requests that ask for several things: split them, route the parts as well as the whole, merge.

A request is cut into parts at sentence ends (``.``, ``?``, ``!``, ``;``, ``。``, ``？``, ``！``, ``；`` and line
breaks), at list items (``1)``, ``2.``, ``-``, ``*`` at the start of a line or after a cut), and before words that
start another task ("then", "also", "plus", "additionally", "finally", "after that", "然后", "另外", "并且",
"接着", "最后"), each a word of its own: "next.js" or "plus-size" starts no part. A part shorter than
:data:`MIN_WORDS` words is glued to the part before it ("thanks." stays with its sentence), and a request that
yields a single part is routed as it is.

Each part is scored like a request, and the fused score of every skill becomes the whole request's fused score
plus ``weight`` times its best fused score over the parts (:func:`merge`), so a skill that one part asks for
strongly climbs into the top k even when the whole request, dominated by another part, ranks it lower.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

MIN_WORDS = 3
MAX_PARTS = 6

_SENTENCE = re.compile(r"(?<=[.?!;])\s+|[。？！；]+|\s*\n+\s*")
_ITEM = re.compile(r"(?:^|\s)(?:\(?\d{1,2}[.)]|[-*•])\s+")
_JOINER = re.compile(
    r"[,;]?(?<!\band)\s+(?=(?:and\s+)?(?:then|also|plus|additionally|finally|after\s+that|afterwards|next|lastly)"
    r"\b(?![.\-]\w))"
    r"|(?=然后|另外|并且|接着|最后|同时)", re.IGNORECASE)
_WORD = re.compile(r"[^\W_]+")


def parts(text: str) -> list[str]:
    """The parts of ``text`` by the rules of the module docstring; ``[text]`` when it has one."""
    pieces: list[str] = []
    for sentence in _SENTENCE.split(text):
        for item in _ITEM.split(sentence):
            pieces.extend(p for p in _JOINER.split(item) if p and p.strip())
    out: list[str] = []
    for piece in (p.strip(" ,;:") for p in pieces):
        if not piece:
            continue
        if out and _words(piece) < MIN_WORDS:
            out[-1] = f"{out[-1]} {piece}"
        elif out and _words(out[-1]) < MIN_WORDS:
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    if len(out) > MAX_PARTS:  # a long list: the whole request is the better guide than a dozen fragments
        return [text]
    return out if len(out) > 1 else [text]


def _words(text: str) -> int:
    # a CJK character counts as a word: Chinese has no spaces
    return len(_WORD.findall(text)) + sum(1 for c in text if "\u4e00" <= c <= "\u9fff")


def merge(whole: np.ndarray, part_scores: Sequence[np.ndarray], weight: float) -> np.ndarray:
    """The whole request's fused scores plus ``weight`` times each skill's best fused score over the parts."""
    if not part_scores:
        return whole
    return whole + weight * np.max(np.stack(part_scores), axis=0)


def with_parts(texts: Sequence[str], fused: np.ndarray, score_parts: Callable[[list[str]], np.ndarray],
               weight: float) -> np.ndarray:
    """``fused`` (requests x skills) with every request of several parts merged with its parts' fused scores;
    ``score_parts(texts)`` fuses the parts, all of them in one batch."""
    pieces = [parts(t) for t in texts]
    owners = [i for i, p in enumerate(pieces) if len(p) > 1 for _ in p]
    if not owners or weight <= 0:
        return fused
    scores = score_parts([p for ps in pieces if len(ps) > 1 for p in ps])
    out = np.array(fused, copy=True)
    rows = np.asarray(owners)
    for i in sorted(set(owners)):
        out[i] = merge(fused[i], list(scores[rows == i]), weight)
    return out
