"""Full-body evidence: each SKILL.md body cut into passages, scored by BM25, a skill scored by its best passage.

A body is cut into sections at its Markdown headings (fenced code is kept with its section but its fences do not
start one); a section longer than :data:`WINDOW` words is cut into windows of :data:`WINDOW` words that overlap by
:data:`STRIDE` less than that. Each passage carries its section's heading, so "## Bisect" stays with the words
under it. A skill's ``passages`` score is the best BM25 score of its passages against the request (MaxP, Dai &
Callan 2019), which lets a term deep in a long body count without the body's length diluting it.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from indexes.bm25 import BM25Index

WINDOW = 150
STRIDE = 100
MAX_PASSAGES = 64  # per skill: a 70 KB body gives at most this many (the first ones), which bounds the index
#: Libraries of more skills get no passage index: at 10,000 skills with real bodies it holds ~216,000 passages
#: (a 36 s refresh after one edit, 9 ms per request on a busy machine); the body lead's BM25 stands in for it, at
#: LEAD_STAND_IN, when the configured body_bm25 weight is 0.
MAX_SKILLS = 1000
LEAD_STAND_IN = 0.5

_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def sections(body: str) -> list[tuple[str, str]]:
    """(heading, text) of each section of ``body``; text before the first heading has heading ''."""
    out: list[tuple[str, list[str]]] = [("", [])]
    fenced = False
    for line in body.splitlines():
        start = line.lstrip()[:1]
        if start in ("`", "~") and _FENCE.match(line):
            fenced = not fenced
        heading = _HEADING.match(line) if start == "#" and not fenced and line[0] == "#" else None
        if heading:
            out.append((heading.group(1), []))
        else:
            out[-1][1].append(line)
    return [(h, " ".join(" ".join(lines).split())) for h, lines in out if h or any(x.strip() for x in lines)]


def passages(body: str, *, window: int = WINDOW, stride: int = STRIDE, limit: int = MAX_PASSAGES) -> list[str]:
    """The passages of ``body`` by the rules of the module docstring, at most ``limit``."""
    out: list[str] = []
    for heading, text in sections(body):
        words = text.split()
        if len(words) <= window:
            out.append(f"{heading} {text}".strip())
        else:
            for start in range(0, len(words) - (window - stride), stride):
                out.append(" ".join([heading, *words[start:start + window]]).strip())
        if len(out) >= limit:
            break
    return [p for p in out[:limit] if p]


_CUT: dict[tuple[str, tuple[tuple[str, int], ...]], list[str]] = {}


def _cut(body: str, options: dict[str, int]) -> list[str]:
    """:func:`passages`, remembered per body in the process: a refresh after one edit cuts one body again."""
    key = (body, tuple(sorted(options.items())))
    found = _CUT.get(key)
    if found is None:
        if len(_CUT) >= 20_000:
            _CUT.clear()
        found = _CUT[key] = passages(body, **options)
    return found


class PassageIndex:
    """BM25 over the passages of every skill's body, answering one MaxP score per skill."""

    def __init__(self, index: "BM25Index", owners: np.ndarray, skills: int) -> None:
        self.index, self.owners, self.skills = index, owners, skills

    @classmethod
    def build(cls, ids: Sequence[str], bodies: Sequence[str], *, reuse: "BM25Index | None" = None,
              **options: int) -> "PassageIndex":
        from indexes.bm25 import BM25Index

        texts, owners, keys = [], [], []
        for i, (ident, body) in enumerate(zip(ids, bodies, strict=True)):
            for n, passage in enumerate(_cut(body, options)):
                texts.append(passage)
                owners.append(i)
                keys.append(f"{ident}#{n}")
        index = BM25Index.from_texts(keys or ["-"], texts or [""], reuse=reuse)
        return cls(index, np.asarray(owners, dtype=np.int64), len(bodies))

    def scores(self, query: str) -> np.ndarray:
        """Each skill's best passage score (0 for a skill without passages)."""
        out = np.zeros(self.skills, dtype=np.float64)
        if len(self.owners):
            np.maximum.at(out, self.owners, self.index.scores(query))
        return out

    def scores_many(self, queries: Sequence[str]) -> np.ndarray:
        return np.stack([self.scores(q) for q in queries]) if len(queries) else np.zeros((0, self.skills))


# -- built once per content, kept in the index folder ----------------------------------------------------------------
_MEMO: dict[str, PassageIndex] = {}
_KEEP = 2  # passage indexes kept on disk per index folder (the current one and the one before)


def content_key(ids: Sequence[str], bodies: Sequence[str]) -> str:
    digest = hashlib.sha256(f"passages/1 {WINDOW} {STRIDE} {MAX_PASSAGES}".encode())
    for ident, body in zip(ids, bodies, strict=True):
        digest.update(b"\0" + ident.encode("utf-8", "surrogatepass") + b"\0" + body.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:24]


def for_skills(ids: Sequence[str], bodies: Sequence[str], folder: str | None) -> PassageIndex | None:
    """The passage index of these bodies (None when no skill has a body, or over :data:`MAX_SKILLS` skills): from
    memory, else ``folder``'s ``passages/<content key>/``, else built (reusing the term counts of the newest one
    there) and saved."""
    if len(ids) > MAX_SKILLS or not any(b.strip() for b in bodies):
        return None
    key = content_key(ids, bodies)
    found = _MEMO.get(key)
    if found is not None:
        return found
    home = os.path.join(folder, "passages") if folder else None
    found = _load(os.path.join(home, key), len(ids)) if home else None
    if found is None:
        previous = _newest(home)
        found = PassageIndex.build(ids, bodies, reuse=previous.index if previous else None)
        if home:
            _save(home, key, found)
    if len(_MEMO) >= 4:
        _MEMO.pop(next(iter(_MEMO)))
    _MEMO[key] = found
    return found


def _load(path: str, skills: int) -> PassageIndex | None:
    from indexes.bm25 import BM25Index
    from router.files import open_regular

    try:
        with open_regular(os.path.join(path, "owners.npy")) as handle:
            owners = np.load(handle, allow_pickle=False)
        index = BM25Index.load(Path(path) / "bm25")
    except Exception:  # missing, cut or from another version: build again
        return None
    if owners.ndim != 1 or (len(owners) and (owners.min() < 0 or owners.max() >= skills)):
        return None
    return PassageIndex(index, owners.astype(np.int64), skills)


def _newest(home: str | None) -> PassageIndex | None:
    if not home or not os.path.isdir(home):
        return None
    names = sorted((n for n in os.listdir(home) if not n.startswith(".")),
                   key=lambda n: os.path.getmtime(os.path.join(home, n)), reverse=True)
    for name in names:
        found = _load(os.path.join(home, name), 1 << 62)
        if found is not None:
            return found
    return None


def _save(home: str, key: str, index: PassageIndex) -> None:
    tmp = ""
    try:
        os.makedirs(home, exist_ok=True)
        tmp = tempfile.mkdtemp(dir=home, prefix=".passages.")
        index.index.save(Path(tmp) / "bm25")
        np.save(os.path.join(tmp, "owners.npy"), index.owners, allow_pickle=False)
        os.replace(tmp, os.path.join(home, key))
        tmp = ""
        names = sorted((n for n in os.listdir(home) if not n.startswith(".")),
                       key=lambda n: os.path.getmtime(os.path.join(home, n)), reverse=True)
        for name in names[_KEEP:]:
            shutil.rmtree(os.path.join(home, name), ignore_errors=True)
    except OSError:
        pass  # a read-only or full index folder: the index stays in memory for this process
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def weights_without(weights: dict[str, float]) -> dict[str, float]:
    """The weights to fuse with when the passage signal is absent: the lead's BM25 stands in for it."""
    if weights.get("passages", 0.0) > 0 and weights.get("body_bm25", 0.0) == 0:
        return {**weights, "body_bm25": LEAD_STAND_IN}
    return weights
