"""The ranking rules, as pure functions over already computed scores.

Given one request's fused score per skill (and each signal's scores, for the report), the rules choose what a
routed catalogue shows, in this order:

1. Skills are ranked by fused score, then id (:func:`indexes.fusion.ranking`): the same input always gives the
   same output.
2. Excluded skills never appear.
3. A request that names a skill exactly (its name, or its name's words in order) always includes that skill: it
   takes the place of the last routed one when it is not already in the top k, and keeps its fused order (moving
   named skills first cost 2.3 points of hit@1 on the MetaTool dev split).
4. Pinned skills come on top of the ``k`` routed ones, after them, so a ranking's prefix is unchanged.

Abstention is separate (:func:`confidence`): the routing confidence is the best cosine of the request with any
skill that may be shown; below a configured threshold the router says no skill matches.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from indexes.fusion import kth_largest, ranks_of
from router.skill import Skill

_WORDS = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Match:
    """One routed skill: its fused score and rank, and each signal's score and rank."""

    id: str
    name: str
    score: float
    rank: int
    scores: Mapping[str, float] = field(default_factory=dict)
    ranks: Mapping[str, int] = field(default_factory=dict)
    reason: str = "routed"  # routed | named | pinned


@dataclass(frozen=True)
class Routing:
    """The outcome of routing one request: the ranking, and the skills the catalogue shows."""

    matches: tuple[Match, ...]
    shown: tuple[Skill, ...]
    abstained: bool = False
    confidence: float = 1.0
    routed: bool = True  # False when the library is small enough to be shown whole
    no_skill: bool = False  # the request fits no skill (router.abstain): surfaces in front of an agent show nothing


@dataclass(frozen=True)
class NameTable:
    """Which skills a request names: every skill's name and its name's words, as lower-case words joined by one
    space (a word never holds a space). Held as each such key's hash, sorted, beside the position it names: 12
    bytes a key, 3 MB at 100,000 skills where a dict of the keys took 23 (and tuples of word tuples 92). A hash a
    request's words meet is confirmed against the keys of the names at its positions, so a collision names
    nothing."""

    hashes: np.ndarray  # int64, ascending; a key's positions in ascending order
    positions: np.ndarray  # each hash's position
    names: Sequence[str]  # each position's name
    longest: int  # the most words of any key

    @staticmethod
    def keys(name: str, kept: bool = True) -> set[str]:
        """The keys a skill called ``name`` is named by: its name and its name's words, lower-case (``kept``
        False: the words are not kept by :func:`router.texts.name_words`)."""
        from router.texts import name_words

        found = set()
        for variant in (name, name_words(name) if kept else name_words.__wrapped__(name)):
            # lower-casing the joined words lower-cases each word (it never makes a space): one call a key
            key = " ".join(_WORDS.findall(variant)).lower()
            if key:
                found.add(key)
        return found

    @classmethod
    def build(cls, skills: Sequence[Skill]) -> NameTable:
        from array import array

        from router.texts import NAME_WORDS_KEPT

        hashes, positions = array("q"), array("q")
        longest = 0
        # past the words' cache size a walk over every name would only push each one out for the next: the
        # cache would end full (12 MB at 100,000 skills) and serve no later walk
        kept = len(skills) <= NAME_WORDS_KEPT
        for position, skill in enumerate(skills):
            for key in cls.keys(skill.name, kept):
                hashes.append(hash(key))
                positions.append(position)
                longest = max(longest, key.count(" ") + 1)
        keyed = np.frombuffer(hashes, dtype=np.int64) if hashes else np.zeros(0, dtype=np.int64)
        order = np.argsort(keyed, kind="stable")
        at = np.frombuffer(positions, dtype=np.int64) if positions else np.zeros(0, dtype=np.int64)
        kind = np.int32 if len(skills) < 2 ** 31 else np.int64
        return cls(keyed[order], at[order].astype(kind), tuple(s.name for s in skills), longest)

    def named(self, text: str) -> list[int]:
        """Positions of the skills ``text`` names, in the order they are first named."""
        words = [w.lower() for w in _WORDS.findall(text)]
        keys = [" ".join(words[start:start + length]) for start in range(len(words))
                for length in range(1, min(self.longest, len(words) - start) + 1)]
        if not keys or not len(self.hashes):
            return []
        wanted = np.fromiter((hash(key) for key in keys), dtype=np.int64, count=len(keys))
        low = np.searchsorted(self.hashes, wanted, side="left")
        high = np.searchsorted(self.hashes, wanted, side="right")
        found: list[int] = []
        for i in np.flatnonzero(high > low).tolist():
            for position in self.positions[low[i]:high[i]].tolist():
                if position not in found and keys[i] in self.keys(self.names[position]):
                    found.append(position)
        return found


@dataclass(frozen=True, eq=False)
class KeyIndex:
    """The first position of each key of ``keys`` (a library's ids or names, in its order) as the keys' hashes,
    sorted, beside their positions: 16 bytes a key where a dict of them took about 60 (6 MB at 100,000 skills),
    and shared by the routers and registries over the same keys in the same places."""

    keys: Sequence[str]
    order: np.ndarray  # positions in the order of their keys' hashes (equal hashes keep position order)
    hashes: np.ndarray  # int64, ascending
    distinct: int  # how many different keys

    @classmethod
    def build(cls, keys: Sequence[str]) -> KeyIndex:
        hashes = np.fromiter((hash(k) for k in keys), dtype=np.int64, count=len(keys))
        order = np.argsort(hashes, kind="stable")  # the first of equal keys comes first
        return cls(keys, order, hashes[order], len(set(keys)))

    def first(self, key: object) -> int:
        """The first position of ``key``, or -1."""
        if not isinstance(key, str):
            return -1
        wanted = hash(key)
        low, high = (int(np.searchsorted(self.hashes, wanted, side=side)) for side in ("left", "right"))
        for position in self.order[low:high].tolist():
            if self.keys[position] == key:
                return position
        return -1


def choose(fused: np.ndarray, order: np.ndarray, k: int, *, named: Sequence[int] = (),
           excluded: np.ndarray | None = None, pinned: np.ndarray | None = None) -> list[tuple[int, str]]:
    """(skill position, reason) of what one request's catalogue shows, best first, by the module's rules.

    ``fused`` is one score per skill, ``order`` each skill's position in id order, ``k`` the routed count (already
    clamped to the library), ``named`` the positions the request names, ``excluded`` / ``pinned`` boolean masks.
    Only the skills that can be shown are sorted (the best ``k`` and the named and pinned ones), never the whole
    library: the result is the one of a full :func:`indexes.fusion.ranking`.
    """
    if excluded is not None and excluded.any():
        named = [i for i in named if not excluded[i]]
    else:
        excluded = None
    chosen = [int(i) for i in best(fused, order, k, excluded)]
    if any(i not in chosen for i in named):
        others = [i for i in chosen if i not in named][: max(k - len(named), 0)]
        chosen = [int(i) for i in in_order(fused, order, sorted(set(named) | set(others)))]
    extra = []
    if pinned is not None and pinned.any():
        shown = pinned if excluded is None else pinned & ~excluded
        extra = [int(i) for i in in_order(fused, order, np.flatnonzero(shown)) if int(i) not in chosen]
    named_set = set(named)
    return [(i, "named" if i in named_set else "routed") for i in chosen] + [(i, "pinned") for i in extra]


def in_order(fused: np.ndarray, order: np.ndarray, positions: Sequence[int] | np.ndarray) -> np.ndarray:
    """``positions`` in the order of :func:`indexes.fusion.ranking`: fused score descending, then id order."""
    where = np.asarray(positions, dtype=np.int64)
    return where[np.lexsort((order[where], -np.asarray(fused, dtype=np.float64)[where]))]


def best(fused: np.ndarray, order: np.ndarray, count: int, excluded: np.ndarray | None = None) -> np.ndarray:
    """The first ``count`` positions of :func:`indexes.fusion.ranking` without the ``excluded`` ones: the skills
    scoring at least the ``count``-th best score (ties included) are found by a partition, and only they are
    sorted."""
    values = np.asarray(fused, dtype=np.float64)
    allowed = np.arange(len(values)) if excluded is None else np.flatnonzero(~excluded)
    if excluded is not None:
        values = values[allowed]
    if count <= 0 or not len(allowed):
        return allowed[:0]
    if count < len(values):
        threshold = kth_largest(values, count)
        allowed = allowed[values >= threshold]
    return in_order(fused, order, allowed)[:count]


def matches(chosen: Sequence[tuple[int, str]], skills: Sequence[Skill], fused: np.ndarray,
            per_signal: Mapping[str, np.ndarray], order: np.ndarray) -> tuple[Match, ...]:
    """The :class:`Match` records of :func:`choose`'s result, with each signal's score and rank."""
    where = [i for i, _ in chosen]
    ranks = {n: ranks_of(v, order, where) for n, v in per_signal.items()}  # each signal's ranks in one pass
    return tuple(
        Match(id=skills[i].id, name=skills[i].name, score=float(fused[i]), rank=position,
              scores={n: float(v[i]) for n, v in per_signal.items()},
              ranks={n: r[position - 1] for n, r in ranks.items()}, reason=reason)
        for position, (i, reason) in enumerate(chosen, start=1))


def confidence_scores(signals: Mapping[str, np.ndarray]) -> np.ndarray:
    """The cosines the abstention rule reads (requests x skills): the ``examples`` signal (each skill's best match
    among its description and example requests) where the library has it, else ``dense`` (descriptions alone).
    The one home of that choice: routing, tuning and evaluation all read it here."""
    return signals.get("examples", signals["dense"])


def confidences(signals: Mapping[str, np.ndarray]) -> np.ndarray:
    """Per request, :func:`confidence` over every skill (0.0 for a library with none)."""
    values = confidence_scores(signals)
    return values.max(axis=1) if values.shape[1] else np.zeros(len(values))


def confidence(cosine: np.ndarray, excluded: np.ndarray | None = None) -> float:
    """The routing confidence: the best cosine over every skill that may be shown, not only the top k (a skill
    that BM25 pushed out of the top k can still be the request's closest description)."""
    allowed = cosine if excluded is None else cosine[~excluded]
    return float(allowed.max()) if allowed.size else 0.0
