"""Uncertainty for per-request metric values: bootstrap confidence intervals and paired comparisons.

Both resample requests with replacement (the request is the unit of sampling, since requests are what a new
labels file would redraw), using ``numpy.random.default_rng(seed)`` so results are exactly reproducible.
Resamples are drawn in blocks of rows to bound memory on large label sets; the block size depends only on the
number of requests, so the same inputs and seed always give the same numbers.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

_BLOCK_CELLS = 2_000_000  # indices drawn per block (16 MB of int64)


def _as_values(values: Sequence[float], what: str) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{what} needs a non-empty sequence of per-request values, got {array.size} values")
    if not np.isfinite(array).all():
        raise ValueError(f"{what} got a non-finite value; per-request metric values must be finite")
    return array


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")


def _resampled_means(values: np.ndarray, n_resamples: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Means of ``n_resamples`` bootstrap resamples of ``values``, yielded block by block."""
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    n = values.size
    block = max(1, _BLOCK_CELLS // n)
    for start in range(0, n_resamples, block):
        rows = min(block, n_resamples - start)
        yield values[rng.integers(0, n, size=(rows, n))].mean(axis=1)


def bootstrap_ci(
    values: Sequence[float], *, n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """Mean of ``values`` and its percentile-bootstrap confidence interval (Efron and Tibshirani 1993, ch. 13).

    Draws ``n_resamples`` resamples of the requests with replacement and returns ``(mean, low, high)`` where
    ``low`` and ``high`` are the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of the
    resampled means. ``mean`` is the plain sample mean. Raises ValueError on empty or non-finite input.
    """
    _check_confidence(confidence)
    array = _as_values(values, "bootstrap_ci")
    rng = np.random.default_rng(seed)
    means = np.concatenate(list(_resampled_means(array, n_resamples, rng)))
    low, high = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(array.mean()), float(low), float(high)


@dataclass(frozen=True)
class PairedResult:
    """Outcome of :func:`paired_comparison`; differences are ``b - a``.

    ``low`` / ``high`` bound the mean difference (percentile bootstrap), ``p_value`` is two-sided for "no
    difference", and ``wins`` / ``losses`` / ``ties`` count requests where ``b`` scores above, below, equal to ``a``.
    """

    mean_diff: float
    low: float
    high: float
    p_value: float
    wins: int
    losses: int
    ties: int


def paired_comparison(
    a: Sequence[float],
    b: Sequence[float],
    *,
    n_resamples: int = 10000,
    confidence: float = 0.95,
    seed: int = 0,
) -> PairedResult:
    """Paired bootstrap test of system ``b`` against system ``a`` on the same requests.

    With per-request differences ``d = b - a`` and observed mean ``d̄``: the interval is the percentile bootstrap
    of ``d̄``; the p-value resamples the differences shifted to mean zero (the null hypothesis of no difference)
    and counts resampled means at least as far from zero as ``d̄``,
    ``p = (1 + #{|d̄*| >= |d̄|}) / (1 + n_resamples)``
    (Efron and Tibshirani 1993, section 16.4; its use for IR evaluation: Smucker, Allan and Carterette, CIKM 2007;
    the +1 keeps an estimate from claiming p = 0: Davison and Hinkley 1997, ch. 4). Identical inputs give
    ``mean_diff = 0`` and ``p = 1``.

    Raises ValueError when ``a`` and ``b`` differ in length, are empty or hold non-finite values.
    """
    _check_confidence(confidence)
    x = _as_values(a, "paired_comparison")
    y = _as_values(b, "paired_comparison")
    if x.size != y.size:
        raise ValueError(f"paired_comparison needs one value per request in both: got {x.size} and {y.size}")
    diff = y - x
    observed = float(diff.mean())
    rng = np.random.default_rng(seed)
    means = np.concatenate(list(_resampled_means(diff, n_resamples, rng)))
    # The mean of a resample of the centred differences d - d̄ is the resample's mean minus d̄, so one set of
    # draws serves both the interval and the test. The tolerance keeps floating-point noise from deciding ties
    # with |d̄| (d̄ = 0 must give p = 1).
    extreme = int((np.abs(means - observed) >= abs(observed) - 1e-12).sum())
    low, high = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2])
    return PairedResult(
        mean_diff=observed,
        low=float(low),
        high=float(high),
        p_value=(1 + extreme) / (1 + n_resamples),
        wins=int((diff > 0).sum()),
        losses=int((diff < 0).sum()),
        ties=int((diff == 0).sum()),
    )
