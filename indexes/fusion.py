"""Fuse several rankings of the same documents into one, as small pure functions.

BM25 scores are unbounded and cosine similarities lie in [-1, 1], so rankings are fused by rank (:func:`rrf`)
or after an explicit normalisation (:func:`weighted_fusion`); raw scores of different scales are never added.
An empty ranking (for example a BM25 query with no known word) contributes nothing and the others carry on.
Results do not depend on the order of the input mapping: contributions are summed in sorted ranking-name order,
and ties are broken by id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np

from indexes.base import Hit

Normalisation = Literal["minmax", "zscore", "none"]
NORMALISATIONS: tuple[Normalisation, ...] = ("minmax", "zscore", "none")


def _ranked(scores: Mapping[str, float]) -> list[Hit]:
    order = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return [Hit(doc_id, float(score), rank) for rank, (doc_id, score) in enumerate(order, start=1)]


def _check_weights(names: Sequence[str], weights: Mapping[str, float] | None) -> dict[str, float]:
    if weights is None:
        return {name: 1.0 for name in names}
    missing = [name for name in names if name not in weights]
    if missing:
        raise ValueError(f"no weight for ranking {missing[0]!r}: give a weight for each of {sorted(names)}")
    checked = {name: float(weights[name]) for name in names}
    negative = [name for name, weight in checked.items() if not weight >= 0]
    if negative:
        raise ValueError(f"weight of ranking {negative[0]!r} is {weights[negative[0]]!r}: weights must be >= 0")
    return checked


def rrf(rankings: Mapping[str, Sequence[Hit]], *, k: int = 60, weights: Mapping[str, float] | None = None) -> list[Hit]:
    """Reciprocal rank fusion: ``score(d) = sum_i w_i / (k + rank_i(d))`` over the rankings that contain ``d``.

    Cormack, Clarke & Buettcher (2009), "Reciprocal rank fusion outperforms Condorcet and individual rank
    learning methods", SIGIR; ``k = 60`` as in the paper.

    Parameters:
        rankings: ranking name -> hits; each hit's ``rank`` (1-based) is used, scores are ignored. A document
            listed twice in one ranking counts once, at its best rank.
        k: smoothing constant (> 0); larger values flatten the difference between top ranks.
        weights: ranking name -> non-negative weight; every ranking needs one. None weights all equally (1).

    Returns every document found in any ranking, sorted by fused score descending, then id; ranks 1..n.
    """
    if not k > 0:
        raise ValueError(f"rrf k must be > 0, got {k!r} (the paper uses 60)")
    names = sorted(rankings)
    weight = _check_weights(names, weights)
    fused: dict[str, float] = {}
    for name in names:
        best: dict[str, int] = {}
        for hit in rankings[name]:
            best[hit.id] = min(hit.rank, best.get(hit.id, hit.rank))
        for doc_id, rank in best.items():
            fused[doc_id] = fused.get(doc_id, 0.0) + weight[name] / (k + rank)
    return _ranked(fused)


def normalise(scores: np.ndarray, method: Normalisation) -> np.ndarray:
    """Rescale one ranking's scores so rankings of different scales can be combined.

    ``"minmax"`` maps to [0, 1] (a ranking whose scores are all equal maps to 1); ``"zscore"`` subtracts the mean
    and divides by the standard deviation (all equal -> 0); ``"none"`` returns the scores as float64.
    """
    if method not in NORMALISATIONS:
        raise ValueError(f"unknown normalisation {method!r}: use one of {', '.join(NORMALISATIONS)}")
    values = np.asarray(scores, dtype=np.float64)
    if values.size == 0 or method == "none":
        return values.copy()
    if method == "minmax":
        low, high = values.min(), values.max()
        return np.ones_like(values) if high == low else (values - low) / (high - low)
    spread = values.std()
    return np.zeros_like(values) if spread == 0 else (values - values.mean()) / spread


def weighted_fusion(
    score_lists: Mapping[str, Mapping[str, float] | Sequence[Hit]],
    weights: Mapping[str, float],
    *,
    method: Normalisation = "minmax",
) -> list[Hit]:
    """Convex combination of normalised scores: ``score(d) = sum_i w_i * norm_i(d) / sum_i w_i``.

    Bruch, Gai & Ingber (2023), "An analysis of fusion functions for hybrid retrieval", ACM TOIS: a convex
    combination of min-max normalised lexical and semantic scores is robust and needs only one weight tuned.

    Parameters:
        score_lists: ranking name -> {doc id: score} or a list of hits (their scores are used).
        weights: ranking name -> non-negative weight, one per ranking; weights are divided by the total weight of
            the non-empty rankings, so an empty ranking drops out and the others carry on.
        method: how each ranking's scores are normalised (see :func:`normalise`).

    A document missing from a ranking gets that ranking's floor: 0 for ``"minmax"``, the lowest normalised score
    otherwise. Returns every document found in any ranking, fused score descending, then id; ranks 1..n.
    """
    if method not in NORMALISATIONS:
        raise ValueError(f"unknown normalisation {method!r}: use one of {', '.join(NORMALISATIONS)}")
    names = sorted(score_lists)
    weight = _check_weights(names, weights)
    tables: dict[str, dict[str, float]] = {}
    for name in names:
        entries = score_lists[name]
        table = dict(entries) if isinstance(entries, Mapping) else {hit.id: hit.score for hit in entries}
        if table:
            tables[name] = table
    total = sum(weight[name] for name in tables)
    if tables and not total > 0:
        raise ValueError(f"weights {dict(weights)} sum to 0 over the non-empty rankings: give one a positive weight")
    all_ids = sorted({doc_id for table in tables.values() for doc_id in table})
    fused = dict.fromkeys(all_ids, 0.0)
    for name, table in tables.items():
        doc_ids = list(table)
        normalised = normalise(np.array([table[doc_id] for doc_id in doc_ids]), method)
        floor = 0.0 if method == "minmax" else float(normalised.min())
        value = dict(zip(doc_ids, normalised.tolist(), strict=True))
        share = weight[name] / total
        for doc_id in all_ids:
            fused[doc_id] += share * value.get(doc_id, floor)
    return _ranked(fused)


def ranks_by_score(scores: np.ndarray, tie_order: np.ndarray) -> np.ndarray:
    """1-based rank of every document under ``scores`` (descending), ties broken by ``tie_order`` (ascending;
    e.g. each document's position in id order)."""
    ranking = np.lexsort((tie_order, -scores))
    ranks = np.empty(len(scores), dtype=np.int64)
    ranks[ranking] = np.arange(1, len(scores) + 1)
    return ranks


def rank_of(scores: np.ndarray, tie_order: np.ndarray, i: int) -> int:
    """``ranks_by_score(scores, tie_order)[i]`` in one vectorised pass, without sorting every document."""
    value = scores[i]
    return int(np.count_nonzero(scores > value) + np.count_nonzero((scores == value) & (tie_order < tie_order[i])) + 1)


def fuse_score_arrays(
    scores: Mapping[str, np.ndarray],
    weights: Mapping[str, float],
    *,
    method: Literal["rrf", "minmax", "zscore"],
    tie_order: np.ndarray,
    rrf_k: int = 60,
    present: Mapping[str, np.ndarray] | None = None,
) -> np.ndarray:
    """Fuse full score arrays (one score per document, same document order in each) into one array.

    The array form of :func:`rrf` and :func:`weighted_fusion`, for scoring every document of a library at once:

    - ``"zscore"``: CombSUM of z-normalised scores (Fox & Shaw 1994; Montague & Aslam 2001). A ranking that is
      sure of itself (a top score far above its mean) speaks louder; one that cannot tell documents apart (flat
      scores) falls silent.
    - ``"minmax"``: convex combination of min-max normalised scores (Bruch, Gai & Ingber 2023).
    - ``"rrf"``: ``sum_i w_i / (rrf_k + rank_i(d))`` (Cormack, Clarke & Buettcher 2009) over the documents each
      ranking contains: ``present[name]`` marks them (all documents when absent).

    Rankings are visited in sorted name order, so the result does not depend on the mapping's order; a weight of 0
    or an empty array contributes nothing. ``tie_order`` breaks ties in ranks.
    """
    total = np.zeros(len(tie_order), dtype=np.float64)
    for name in sorted(scores):
        weight = weights.get(name, 0.0)
        values = np.asarray(scores[name], dtype=np.float64)
        if weight == 0 or values.size == 0:
            continue
        if method == "rrf":
            contribution = weight / (rrf_k + ranks_by_score(values, tie_order))
            mask = present.get(name) if present else None
            total += contribution if mask is None else np.where(mask, contribution, 0.0)
        elif method in ("zscore", "minmax"):
            total += weight * normalise(values, method)
        else:
            raise ValueError(f"unknown fusion {method!r}: use rrf, minmax or zscore")
    return total
