"""Fuse several signals' scores over the same documents into one score, as small pure functions.

BM25 scores are unbounded and cosine similarities lie in [-1, 1], so signals are fused by rank (RRF) or after an
explicit normalisation (z-score, min-max); raw scores of different scales are never added. Every function works on
one request (1-D arrays, one score per document) or on many at once (2-D arrays, one row per request, one column
per document): a router scores a single request and an evaluation of thousands of requests with the same code.

Ties are broken everywhere by a ``tie_order`` array (each document's position in id order, see
:func:`tie_order`), so the same input always gives the same ranking. Results do not depend on the order of the
input mapping: contributions are summed in sorted signal-name order.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Literal, get_args

import numpy as np

Fusion = Literal["zscore", "rrf", "minmax"]
FUSIONS: tuple[Fusion, ...] = get_args(Fusion)
Normalisation = Literal["minmax", "zscore", "none"]
NORMALISATIONS: tuple[Normalisation, ...] = get_args(Normalisation)


def tie_order(ids: Sequence[str]) -> np.ndarray:
    """``order[i]`` = the position of ``ids[i]`` among the sorted ids: the one tie-break of every ranking here."""
    order = np.empty(len(ids), dtype=np.int64)
    order[np.argsort(np.array(list(ids), dtype=object), kind="stable")] = np.arange(len(ids))
    return order


def normalise(scores: np.ndarray, method: Normalisation) -> np.ndarray:
    """Rescale scores along the last axis so signals of different scales can be combined.

    ``"minmax"`` maps each row to [0, 1] (a row whose scores are all equal maps to 1); ``"zscore"`` subtracts the
    row mean and divides by the row's standard deviation (all equal -> 0); ``"none"`` returns float64 scores.
    """
    if method not in NORMALISATIONS:
        raise ValueError(f"unknown normalisation {method!r}: use one of {', '.join(NORMALISATIONS)}")
    values = np.asarray(scores, dtype=np.float64)
    if values.size == 0 or method == "none":
        return values.copy()
    if method == "minmax":
        low = values.min(axis=-1, keepdims=True)
        spread = values.max(axis=-1, keepdims=True) - low
        flat = np.ones_like(values)
        return np.divide(values - low, spread, out=flat, where=spread > 0)
    # numpy's own std and mean (sum / n, then the root of the mean square of the centred values), each pass made
    # once and in place: the very bits of ``(values - values.mean()) / values.std()``, in 5 passes instead of 10
    # (100,000 skills: about 0.3 ms a signal)
    count = values.shape[-1]
    centred = values - values.sum(axis=-1, keepdims=True) / count
    squares = np.multiply(centred, centred)
    spread = np.sqrt(squares.sum(axis=-1, keepdims=True) / count)
    flat = ~(spread > 0)
    if not flat.any():  # the usual case: a plain division, the same bits as a masked one in half the time
        np.divide(centred, spread, out=centred)
        return centred
    np.divide(centred, spread, out=centred, where=~flat)
    centred[np.broadcast_to(flat, centred.shape)] = 0.0
    return centred


def ranking(scores: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Document positions best first along the last axis: score descending, then ``order`` ascending."""
    values = np.asarray(scores, dtype=np.float64)
    return np.lexsort((np.broadcast_to(order, values.shape), -values), axis=-1)


def ranks_by_score(scores: np.ndarray, order: np.ndarray) -> np.ndarray:
    """1-based rank of every document under ``scores`` (descending), ties broken by ``order`` (ascending)."""
    values = np.asarray(scores, dtype=np.float64)
    ranks = np.empty(values.shape, dtype=np.int64)
    np.put_along_axis(ranks, ranking(values, order), np.broadcast_to(np.arange(1, values.shape[-1] + 1),
                                                                     values.shape), axis=-1)
    return ranks


def rank_of(scores: np.ndarray, order: np.ndarray, i: int) -> int:
    """``ranks_by_score(scores, order)[i]`` for one document of a 1-D array, without sorting every document (the
    id order is read only among the documents that tie with it)."""
    value = scores[i]
    ties = scores == value
    tied = int(np.count_nonzero(ties))
    before = int(np.count_nonzero(order[ties] < order[i])) if tied > 1 else 0
    return int(np.count_nonzero(scores > value)) + before + 1


def ranks_of(scores: np.ndarray, order: np.ndarray, positions: Sequence[int]) -> list[int]:
    """``[rank_of(scores, order, i) for i in positions]``: the documents above the lowest of them found in one pass
    and each rank counted among those alone (a routing's five shown skills in each signal: two passes over the
    library instead of twenty). When the lowest of them ties with or sits below most of the library (a lexical
    signal's shown skill that shares no word with the request scores 0, as most skills do), the documents of that
    score are counted over the whole array, with no copy of its ties, and the others among the few above them."""
    at = np.asarray(positions, dtype=np.int64)
    if not len(at):
        return []
    values = scores[at]
    low = values.min()
    if low != low:  # NaN: no order to count in
        return [rank_of(scores, order, int(i)) for i in at.tolist()]
    at_least = scores >= low
    if int(np.count_nonzero(at_least)) * 4 <= len(scores):
        kept, kept_order = scores[at_least], order[at_least]
        out = []
        for value, rank in zip(values.tolist(), order[at].tolist()):
            ties = kept == value
            out.append(int(np.count_nonzero(kept > value)) + int(np.count_nonzero(kept_order[ties] < rank)) + 1)
        return out
    lowest = values == low
    ranks = np.empty(len(at), dtype=np.int64)
    if not lowest.all():
        ranks[~lowest] = ranks_of(scores, order, at[~lowest])
    ties = scores == low
    greater = int(np.count_nonzero(scores > low))
    ranks[lowest] = [greater + int(np.count_nonzero(ties & (order < rank))) + 1 for rank in order[at[lowest]].tolist()]
    return ranks.tolist()


#: Past this many values, :func:`kth_largest` partitions only the values above a sample's k-th largest.
SAMPLE_ABOVE = 8192


def kth_largest(values: np.ndarray, k: int) -> float:
    """The ``k``-th largest of ``values`` (1-D, no NaN, 1 <= k <= len), exactly ``-np.partition(-values, k -
    1)[k - 1]``. Past :data:`SAMPLE_ABOVE` values, a strided sample's k-th largest bounds it from below (the sample's
    k best are k values of the array at least that large), so only the values at or above the bound are partitioned:
    a few hundred instead of every one (numpy's partition of 100,000 values took 2-5 ms a request)."""
    n = len(values)
    if n > SAMPLE_ABOVE and k * 64 < n:
        sample = values[:: max(1, n // (64 * k))]
        bound = -np.partition(-sample, k - 1)[k - 1]
        values = values[values >= bound]
    return float(-np.partition(-values, k - 1)[k - 1])


class SteadyRows:
    """What fusion and ranking compute from the score row of a signal that scores every request alike (``names``,
    e.g. ``centrality``), computed once and reused while the row is the same array: its normalised, weighted
    contribution and every document's rank. At 100,000 documents that is a normalisation (six passes over the row)
    and a rank count (up to five passes a shown document) a request saved.

    A row is reused only when it is read-only (a signal's one array shown to every request, e.g. through
    ``np.broadcast_to``: nobody can write to it through that view) and lies at the very address, shape and strides
    of the row kept here. The kept row holds its memory, so no other array can take that address while it is
    kept; another array (the next index's row) replaces the entry. A writeable row is computed as usual."""

    def __init__(self, names: Collection[str]) -> None:
        self.names = frozenset(names)
        self._lock = threading.Lock()
        self._rows: dict[str, tuple[np.ndarray, dict[tuple[object, ...], Any]]] = {}

    def _memo(self, name: str, row: np.ndarray) -> dict[tuple[object, ...], Any] | None:
        """The kept results of ``row`` (1-D), a new empty set for a new row; None for one that may not be kept."""
        if name not in self.names or row.ndim != 1 or row.flags.writeable:
            return None
        with self._lock:
            kept = self._rows.get(name)
            if kept is None or not _same_memory(kept[0], row):
                kept = (row, {})
                self._rows[name] = kept
            return kept[1]

    def contribution(self, name: str, values: np.ndarray, method: Normalisation,
                     weight: float) -> np.ndarray | None:
        """``weight * normalise(row, method)`` (read-only) of the one row of ``values`` (:func:`steady_row`),
        computed once for a steady row; None otherwise."""
        row = steady_row(values)
        memo = None if row is None else self._memo(name, row)
        if row is None or memo is None:
            return None
        key = ("contribution", method, weight)
        found = memo.get(key)
        if found is None:
            found = normalise(row, method)
            found *= weight  # the bits of fuse_score_arrays' own in-place product
            found.setflags(write=False)
            memo[key] = found
        return found

    def ranks(self, name: str, row: np.ndarray, order: np.ndarray, positions: Sequence[int]) -> list[int] | None:
        """``ranks_of(row, order, positions)``, read from every document's rank computed once for a steady row;
        None otherwise."""
        memo = self._memo(name, row)
        if memo is None:
            return None
        key = ("ranks", id(order))
        found = memo.get(key)
        if found is None or found[1] is not order:  # kept with its tie order, whose id no other array can take
            found = memo[key] = (ranks_by_score(row, order), order)
        return [int(r) for r in found[0][np.asarray(positions, dtype=np.int64)]]


def _same_memory(kept: np.ndarray, row: np.ndarray) -> bool:
    return (kept.__array_interface__["data"][0] == row.__array_interface__["data"][0] and kept.shape == row.shape
            and kept.strides == row.strides and kept.dtype == row.dtype)


def steady_row(values: np.ndarray) -> np.ndarray | None:
    """The one row of a requests x documents array that repeats a single row for every request (a read-only
    broadcast: stride 0 along the requests), or of a 1-D read-only array; None for any other array."""
    if values.flags.writeable:
        return None
    if values.ndim == 1:
        return values
    if values.ndim == 2 and (values.strides[0] == 0 or values.shape[0] == 1):
        return values[0]
    return None


def fuse_score_arrays(
    scores: Mapping[str, np.ndarray],
    weights: Mapping[str, float],
    *,
    method: Fusion,
    tie_order: np.ndarray,
    rrf_k: int = 60,
    present: Mapping[str, np.ndarray] | None = None,
    steady: SteadyRows | None = None,
) -> np.ndarray:
    """Fuse score arrays (same shape each: ``(documents,)`` or ``(requests, documents)``) into one array.

    - ``"zscore"``: CombSUM of z-normalised scores (Fox & Shaw 1994; Montague & Aslam 2001). A signal that is
      sure of itself (a top score far above its mean) speaks louder; one that cannot tell documents apart (flat
      scores) falls silent.
    - ``"minmax"``: sum of min-max normalised scores, a convex combination once divided by the total weight
      (Bruch, Gai & Ingber 2023, "An analysis of fusion functions for hybrid retrieval", ACM TOIS).
    - ``"rrf"``: ``sum_i w_i / (rrf_k + rank_i(d))`` (Cormack, Clarke & Buettcher 2009, "Reciprocal rank fusion
      outperforms Condorcet and individual rank learning methods", SIGIR; ``rrf_k = 60`` as in the paper) over
      the documents each signal contains: ``present[name]`` marks them (all documents when absent).

    Signals are visited in sorted name order, so the result does not depend on the mapping's order; a weight of 0,
    a missing weight or an empty array contributes nothing. ``tie_order`` breaks ties in ranks. ``steady``: the
    normalised rows of signals that score every request alike, kept between calls (:class:`SteadyRows`; the same
    bits as computing them each time).
    """
    if method not in FUSIONS:
        raise ValueError(f"unknown fusion {method!r}: use one of {', '.join(FUSIONS)}")
    if method == "rrf" and not rrf_k > 0:
        raise ValueError(f"rrf_k must be > 0, got {rrf_k!r} (the paper uses 60)")
    total: np.ndarray | None = None
    for name in sorted(scores):
        weight = float(weights.get(name, 0.0))
        values = np.asarray(scores[name], dtype=np.float64)
        if weight == 0 or values.size == 0:
            continue
        if method == "rrf":
            contribution = weight / (rrf_k + ranks_by_score(values, tie_order))
            mask = present.get(name) if present else None
            if mask is not None:
                contribution = np.where(mask, contribution, 0.0)
        else:
            kept = steady.contribution(name, values, method, weight) if steady is not None else None
            if kept is not None:  # the same row for every request: normalised once, added to each
                if total is None:
                    total = np.array(np.broadcast_to(kept, values.shape))
                else:
                    total += kept
                continue
            contribution = normalise(values, method)
            contribution *= weight  # in place: the bits of weight * contribution
        if total is None:
            total = contribution
        else:
            total += contribution
    if total is None:
        shape = next((np.shape(v) for v in scores.values() if np.size(v)), (len(tie_order),))
        return np.zeros(shape, dtype=np.float64)
    return total
