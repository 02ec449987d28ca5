"""Whole score arrays from a retrieved top list and the exact moments of every document's score.

A store that retrieves candidates (an HNSW top-N, the best BM25 matches) knows the exact score of the candidates
and, from statistics it keeps, the sum and the sum of squares of the scores of *all* documents; it does not know
the score of each document it did not retrieve. Fusion normalises each signal over every document (z-score:
mean and standard deviation of the row), so the documents left out must get values with the mean and variance
the left-out documents really have; then every candidate's z-score equals the one computed from the exact full
row, and the ranking of the candidates is the exact ranking.

:func:`fill_unretrieved` gives the left-out documents a two-point fill: with ``m`` of them, remaining sum ``S``
and remaining sum of squares ``Q``, mean ``mu = S / m`` and variance ``var = Q / m - mu**2``; half of them get
``mu + a`` and half ``mu - a`` (one gets ``mu`` when ``m`` is odd), ``a = sqrt(var * m / (2 * (m // 2)))``, which
has exactly mean ``mu`` and variance ``var``. No filled value exceeds ``ceiling`` (the lowest retrieved score of a
top-N list: nothing left out scored above it); when ``mu + a`` would, it is cut there and the variance comes out
lower than the exact one (reported by :func:`fill_unretrieved`'s caller through the returned flag).

For BM25 the "no evidence" score of a document sharing no query term is exactly 0; when every matching document
was retrieved, ``S = Q = 0`` and the fill is 0 everywhere, exactly the in-process array.
"""

from __future__ import annotations

import math

import numpy as np


def fill_unretrieved(n: int, positions: np.ndarray, values: np.ndarray, total: float, total_sq: float,
                     ceiling: float | None = None) -> tuple[np.ndarray, bool]:
    """(the full score array of ``n`` documents, whether the fill had to be cut at ``ceiling``).

    ``positions`` / ``values``: the retrieved documents and their exact scores; ``total`` / ``total_sq``: the sum
    and the sum of squares of the exact scores of all ``n`` documents."""
    positions = np.asarray(positions, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    left = np.ones(n, dtype=bool)
    left[positions] = False
    m = int(np.count_nonzero(left))
    if not m:
        out = np.zeros(n, dtype=np.float64)
        out[positions] = values
        return out, False
    mean = (float(total) - float(values.sum())) / m
    variance = max((float(total_sq) - float(np.dot(values, values))) / m - mean * mean, 0.0)
    pairs = m // 2
    spread = math.sqrt(variance * m / (2 * pairs)) if pairs else 0.0
    high, low = mean + spread, mean - spread
    cut = ceiling is not None and high > ceiling
    if cut:
        assert ceiling is not None
        high = float(ceiling)
        low = min(low, high)
    # the left-out documents in position order take high, low, high, low, ... (mean for an odd last one): built
    # as m values, then written through the mask, not by an index array over every document
    fill = np.empty(m, dtype=np.float64)
    fill[0:2 * pairs:2] = high
    fill[1:2 * pairs:2] = low
    if m % 2:
        fill[-1] = mean
    out = np.empty(n, dtype=np.float64)
    out[left] = fill
    out[positions] = values
    return out, cut
