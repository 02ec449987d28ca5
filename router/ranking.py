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

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import overload

import numpy as np

from indexes.fusion import SteadyRows, kth_largest, ranks_of
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


@dataclass(frozen=True, eq=False)
class KeyIndex:
    """The positions of the keys of ``keys`` (a library's ids or names, in its order) as the keys' hashes, sorted,
    beside their positions: 16 bytes a key where a dict of them took about 60 (6 MB at 100,000 skills), and shared
    by the routers and registries over the same keys in the same places. A hash that matches is confirmed against
    ``keys``, so a collision finds nothing; ``keys`` may compute each key when asked (:class:`NameTable`)."""

    keys: Sequence[str]
    order: np.ndarray  # positions in the order of their keys' hashes (equal hashes keep position order)
    hashes: np.ndarray  # int64, ascending

    @classmethod
    def build(cls, keys: Sequence[str], hashes: np.ndarray | None = None) -> KeyIndex:
        """The index of ``keys``; ``hashes``, when given, is each key's ``hash`` in position order."""
        if hashes is None:
            hashes = np.fromiter((hash(k) for k in keys), dtype=np.int64, count=len(keys))
        order = np.argsort(hashes, kind="stable")  # the first of equal keys comes first
        kind = np.int32 if len(keys) < 2 ** 31 else np.int64
        return cls(keys, order.astype(kind), hashes[order])

    @functools.cached_property
    def distinct(self) -> int:
        """How many different keys."""
        return len(set(self.keys))

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

    def every(self, keys: Sequence[str]) -> list[list[int]]:
        """For each of ``keys``, its positions in ascending order (none for a key not held)."""
        found: list[list[int]] = [[] for _ in keys]
        if not keys or not len(self.hashes):
            return found
        wanted = np.fromiter((hash(key) for key in keys), dtype=np.int64, count=len(keys))
        low = np.searchsorted(self.hashes, wanted, side="left")
        high = np.searchsorted(self.hashes, wanted, side="right")
        for i in np.flatnonzero(high > low).tolist():
            found[i] = [p for p in self.order[low[i]:high[i]].tolist() if self.keys[p] == keys[i]]
        return found


class _NameKeys(Sequence[str]):
    """The keys of a :class:`NameTable`, computed when asked: position ``2 * p`` is the ``p``-th name's key (its words
    as written, lower-case, joined by one space), ``2 * p + 1`` its name words' key (:func:`router.texts.name_words`);
    either may be empty, or the two equal."""

    def __init__(self, names: Sequence[str], kept: bool) -> None:
        self.names = names
        self.kept = kept  # whether :func:`router.texts.name_words` keeps what it is asked

    def __len__(self) -> int:
        return 2 * len(self.names)

    @overload
    def __getitem__(self, position: int) -> str: ...

    @overload
    def __getitem__(self, position: slice) -> list[str]: ...

    def __getitem__(self, position: int | slice) -> str | list[str]:
        if isinstance(position, slice):
            return [self[p] for p in range(*position.indices(len(self)))]
        if not -len(self) <= position < len(self):
            raise IndexError(position)
        from router.texts import name_words

        name = self.names[position % len(self) // 2]
        if position % 2:
            name = name_words(name) if self.kept else name_words.__wrapped__(name)
        # lower-casing the joined words lower-cases each word (it never makes a space): one call a key
        return " ".join(_WORDS.findall(name)).lower()


@dataclass(frozen=True, eq=False)
class NameTable:
    """Which skills a request names: every skill's name and its name's words, as lower-case words joined by one
    space (a word never holds a space), as a :class:`KeyIndex` over two keys a skill, computed again only to
    confirm a hash a request's words meet: 24 bytes a skill, 2.4 MB at 100,000 skills where a dict of the keys took
    23 (and tuples of word tuples 92)."""

    index: KeyIndex  # over :class:`_NameKeys`: skill ``p``'s keys are at ``2 * p`` and ``2 * p + 1``
    longest: int  # the most words of any key

    @classmethod
    def build(cls, skills: Sequence[Skill]) -> NameTable:
        from router.texts import NAME_WORDS_KEPT

        # past the words' cache size a walk over every name would only push each one out for the next: the
        # cache would end full (12 MB at 100,000 skills) and serve no later walk
        keys = _NameKeys(tuple(s.name for s in skills), kept=len(skills) <= NAME_WORDS_KEPT)
        made = [keys[p] for p in range(len(keys))]
        hashes = np.fromiter((hash(k) for k in made), dtype=np.int64, count=len(made))
        longest = max((k.count(" ") + 1 for k in made if k), default=0)
        return cls(KeyIndex.build(keys, hashes), longest)

    def named(self, text: str) -> list[int]:
        """Positions of the skills ``text`` names, in the order they are first named."""
        words = [w.lower() for w in _WORDS.findall(text)]
        keys = [" ".join(words[start:start + length]) for start in range(len(words))
                for length in range(1, min(self.longest, len(words) - start) + 1)]
        found: list[int] = []
        for positions in self.index.every(keys):
            for skill in (p // 2 for p in positions):
                if skill not in found:
                    found.append(skill)
        return found


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
            per_signal: Mapping[str, np.ndarray], order: np.ndarray,
            steady: SteadyRows | None = None) -> tuple[Match, ...]:
    """The :class:`Match` records of :func:`choose`'s result, with each signal's score and rank (``steady``: the
    ranks of the signals that score every request alike, kept between requests)."""
    where = [i for i, _ in chosen]

    def ranks_in(name: str, values: np.ndarray) -> list[int]:
        kept = steady.ranks(name, values, order, where) if steady is not None else None
        return ranks_of(values, order, where) if kept is None else kept

    ranks = {n: ranks_in(n, v) for n, v in per_signal.items()}  # each signal's ranks in one pass
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
