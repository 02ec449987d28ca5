"""Full-body evidence: each SKILL.md body cut into passages, scored by BM25, a skill scored by its best passage.

A body is cut into sections at its Markdown headings (fenced code is kept with its section but its fences do not
start one); a section longer than :data:`WINDOW` words is cut into windows of :data:`WINDOW` words that overlap by
:data:`STRIDE` less than that. Each passage carries its section's heading, so "## Bisect" stays with the words
under it. A skill's ``passages`` score is the best BM25 score of its passages against the request (MaxP, Dai &
Callan 2019), which lets a term deep in a long body count without the body's length diluting it.

A rebuild is incremental: an index keeps a digest of each skill's body (:func:`body_digest`), and a build given an
earlier index (``reuse``) takes the passages' term counts of every body it already held, so after one edit only
that skill's body is cut and tokenised again; every BM25 statistic is then recomputed from the counts, so the result
equals a build from scratch exactly.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from indexes.bm25 import BM25Index

WINDOW = 150
STRIDE = 100
MAX_PASSAGES = 64  # per skill: a 70 KB body gives at most this many (the first ones), which bounds the index
#: Libraries of more skills get no passage index: at 10,000 skills with real bodies it holds ~216,000 passages
#: (a 167 s cold build, 9 ms per request on a busy machine; the refresh after one edit was 36 s before it became
#: incremental); the body lead's BM25 stands in for it, at LEAD_STAND_IN, when the configured body_bm25 weight is 0.
MAX_SKILLS = 1000
LEAD_STAND_IN = 0.5

_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def sections(body: str) -> list[tuple[str, str]]:
    """(heading, text) of each section of ``body``; text before the first heading has heading ''."""
    return list(_sections(body))


def _sections(body: str) -> Iterator[tuple[str, str]]:
    """:func:`sections` one at a time, so that a caller wanting the first few reads no further into the body."""
    heading = ""
    lines: list[str] = []
    fenced = False
    for line in body.splitlines():
        start = line.lstrip()[:1]
        if start in ("`", "~") and _FENCE.match(line):
            fenced = not fenced
        found = _HEADING.match(line) if start == "#" and not fenced and line[0] == "#" else None
        if found:
            if heading or any(x.strip() for x in lines):
                yield heading, " ".join(" ".join(lines).split())
            heading, lines = found.group(1), []
        else:
            lines.append(line)
    if heading or any(x.strip() for x in lines):
        yield heading, " ".join(" ".join(lines).split())


def passages(body: str, *, window: int = WINDOW, stride: int = STRIDE, limit: int = MAX_PASSAGES) -> list[str]:
    """The passages of ``body`` by the rules of the module docstring, at most ``limit``."""
    out: list[str] = []
    for heading, text in _sections(body):
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


def body_digest(body: str, options: dict[str, int] | None = None) -> bytes:
    """The digest a body's passages are kept under: BLAKE2b (16 bytes) of the cutting options and the body."""
    shape = {"window": WINDOW, "stride": STRIDE, "limit": MAX_PASSAGES, **(options or {})}
    head = f"passages/1 {shape['window']} {shape['stride']} {shape['limit']}\0"
    return hashlib.blake2b((head + body).encode("utf-8", "surrogatepass"), digest_size=16).digest()


class PassageIndex:
    """BM25 over the passages of every skill's body, answering one MaxP score per skill. ``bodies`` holds one
    :func:`body_digest` per skill (shape (skills, 16); None for an index saved without them), which is what a
    later :meth:`build` reuses."""

    def __init__(self, index: "BM25Index", owners: np.ndarray, skills: int, bodies: np.ndarray | None = None) -> None:
        self.index, self.owners, self.skills, self.bodies = index, owners, skills, bodies

    @classmethod
    def build(cls, ids: Sequence[str], bodies: Sequence[str], *, reuse: "PassageIndex | BM25Index | None" = None,
              **options: int) -> "PassageIndex":
        """The index of ``bodies`` (one per id). ``reuse``: an earlier index whose skills' passages are taken as
        they are wherever a body is unchanged (a bare BM25 index: its passages' term counts, by passage text)."""
        from indexes.base import check_ids
        from indexes.bm25 import BM25Index, BM25Params, count_terms, fit_counts, text_digest
        from indexes.tokenize import DEFAULT_TOKENIZER

        earlier = reuse.index if isinstance(reuse, PassageIndex) else reuse
        previous = earlier.counts if earlier is not None and earlier.tokenizer == DEFAULT_TOKENIZER else None
        held = reuse._held() if isinstance(reuse, PassageIndex) and previous is not None else {}
        kept = previous.digest_list() if held and previous is not None else []
        digests_of_bodies = [body_digest(body, options) for body in bodies]
        texts: list[str] = []
        digests: list[bytes] = []
        owners: list[int] = []
        keys: list[str] = []
        for i, (ident, body, digest) in enumerate(zip(ids, bodies, digests_of_bodies, strict=True)):
            span = held.get(digest)
            if span is not None:  # unchanged: its passages' counts are found by their digests, never tokenised
                count = span[1] - span[0]
                texts.extend([""] * count)
                digests.extend(kept[span[0]:span[1]])
            else:
                cut = _cut(body, options)
                count = len(cut)
                texts.extend(cut)
                digests.extend(text_digest(p) for p in cut)
            owners.extend([i] * count)
            keys.extend(f"{ident}#{n}" for n in range(count))
        body_array = np.frombuffer(b"".join(digests_of_bodies), dtype=np.uint8).reshape(len(bodies), 16).copy()
        owner_array = np.asarray(owners, dtype=np.int64)
        if not texts:
            return cls(BM25Index.from_texts(["-"], [""]), owner_array, len(bodies), body_array)
        rows = {term: row for row, term in enumerate(earlier.vocabulary)} if earlier is not None and previous else None
        vocabulary, counted = count_terms(texts, digests, DEFAULT_TOKENIZER, previous, rows)
        params = BM25Params()
        if not vocabulary:
            return cls(BM25Index.from_texts(keys, [""] * len(keys)), owner_array, len(bodies), body_array)
        weights, term_constant = fit_counts(vocabulary, counted, params)
        index = BM25Index(check_ids(keys, len(texts)), vocabulary, weights, term_constant, params, DEFAULT_TOKENIZER,
                          counted)
        return cls(index, owner_array, len(bodies), body_array)

    def _held(self) -> dict[bytes, tuple[int, int]]:
        """Body digest -> (first, end) of that skill's passages, for the skills whose passages this index holds."""
        if self.bodies is None or len(self.bodies) != self.skills:
            return {}
        starts = np.searchsorted(self.owners, np.arange(self.skills + 1), side="left").tolist()
        raw = self.bodies.tobytes()
        return {raw[16 * i:16 * i + 16]: (starts[i], starts[i + 1]) for i in range(self.skills)}

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
    home = os.path.join(folder, "passages") if folder else None
    found = _MEMO.get(key)
    if found is not None:
        if home and not os.path.isdir(os.path.join(home, key)):
            _save(home, key, found)  # built for another folder: this one keeps it too, for the next process
        return found
    found = _load(os.path.join(home, key), len(ids)) if home else None
    if found is None:
        previous = next(reversed(_MEMO.values()), None) or _newest(home)  # the newest in memory, else on disk
        found = PassageIndex.build(ids, bodies, reuse=previous)
        if home:
            _save(home, key, found)
    if len(_MEMO) >= 4:
        _MEMO.pop(next(iter(_MEMO)))
    _MEMO[key] = found
    return found


def _load(path: str, skills: int | None) -> PassageIndex | None:
    """The index saved at ``path`` for ``skills`` skills (None: as many as its body digests say), or None."""
    from indexes.bm25 import BM25Index
    from router.files import open_regular

    try:
        with open_regular(os.path.join(path, "owners.npy")) as handle:
            owners = np.load(handle, allow_pickle=False)
        bodies: np.ndarray | None = None
        if os.path.exists(os.path.join(path, "bodies.npy")):
            with open_regular(os.path.join(path, "bodies.npy")) as handle:
                bodies = np.load(handle, allow_pickle=False)
        index = BM25Index.load(Path(path) / "bm25")
    except Exception:  # missing, cut or from another version: build again
        return None
    if bodies is not None and (bodies.dtype != np.uint8 or bodies.ndim != 2 or bodies.shape[1] != 16
                               or (skills is not None and len(bodies) != skills)):
        bodies = None  # not digests of these skills: the index loads, and a rebuild from it cuts every body
    if skills is not None:
        size = skills
    else:  # the newest index of an earlier library, to reuse: as many skills as it says or its owners imply
        size = len(bodies) if bodies is not None else (int(owners.max()) + 1 if len(owners) else 0)
    if owners.ndim != 1 or len(owners) != (len(index) if len(owners) else 0) \
            or (len(owners) and (owners.min() < 0 or owners.max() >= size or np.any(np.diff(owners) < 0))):
        return None
    return PassageIndex(index, owners.astype(np.int64), size, bodies)


def _newest(home: str | None) -> PassageIndex | None:
    if not home or not os.path.isdir(home):
        return None
    names = sorted((n for n in os.listdir(home) if not n.startswith(".")),
                   key=lambda n: os.path.getmtime(os.path.join(home, n)), reverse=True)
    for name in names:
        found = _load(os.path.join(home, name), None)
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
        if index.bodies is not None:
            np.save(os.path.join(tmp, "bodies.npy"), index.bodies, allow_pickle=False)
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
