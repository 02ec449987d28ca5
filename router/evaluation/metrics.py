"""Ranking and abstention metrics, as pure functions of one request's ranking and gold set.

Notation: ``ranking`` is the list of skill ids best first, ``G`` the gold set, ``top_k`` the first ``k`` ids of
the ranking (all of them when the ranking is shorter than ``k``) and ``rank(d)`` the 1-based position of ``d``.

The ranking metrics are undefined for a request with no gold id (nothing to find) and raise ``ValueError``; such
requests are scored by :func:`abstention_metrics` instead. An id that appears twice in a ranking is counted once,
at its first position.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

import numpy as np


def _check(gold: Collection[str], k: int | None = None) -> None:
    if not gold:
        raise ValueError("ranking metrics are undefined for a request with no gold ids; score it for abstention")
    if k is not None and k < 1:
        raise ValueError(f"k must be at least 1, got {k}")


def hit_at_k(ranking: Sequence[str], gold: Collection[str], k: int) -> float:
    """Hit@k = 1 if ``G ∩ top_k`` is non-empty else 0 (any gold skill routed)."""
    _check(gold, k)
    return 1.0 if any(d in gold for d in ranking[:k]) else 0.0


def recall_at_k(ranking: Sequence[str], gold: Collection[str], k: int) -> float:
    """Recall@k = |G ∩ top_k| / |G| (the share of the gold set routed; top-k accuracy when |G| = 1)."""
    _check(gold, k)
    gold_set = set(gold)
    return len(gold_set.intersection(ranking[:k])) / len(gold_set)


def all_at_k(ranking: Sequence[str], gold: Collection[str], k: int) -> float:
    """All@k = 1 if G ⊆ top_k else 0 (every needed skill routed; the bar for multi-skill requests)."""
    _check(gold, k)
    return 1.0 if set(gold).issubset(ranking[:k]) else 0.0


def top1(ranking: Sequence[str], gold: Collection[str]) -> float:
    """Top-1 = Hit@1: 1 if the first-ranked id is gold."""
    return hit_at_k(ranking, gold, 1)


def reciprocal_rank(ranking: Sequence[str], gold: Collection[str]) -> float:
    """RR = 1 / min{rank(d) : d ∈ G}, or 0 when no gold id is ranked (its mean is MRR; Voorhees, TREC-8 QA 1999)."""
    _check(gold)
    for position, d in enumerate(ranking, start=1):
        if d in gold:
            return 1.0 / position
    return 0.0


def ndcg_at_k(ranking: Sequence[str], gold: Collection[str], k: int) -> float:
    """nDCG@k with binary gains (Järvelin and Kekäläinen, ACM TOIS 2002).

    DCG@k = Σ_{i=1..k} rel_i / log2(i + 1) with rel_i = 1 if the i-th id is gold (first occurrence) else 0;
    IDCG@k = Σ_{i=1..min(|G|, k)} 1 / log2(i + 1), the DCG of a ranking with every gold id first;
    nDCG@k = DCG@k / IDCG@k, in [0, 1].
    """
    _check(gold, k)
    gold_set = set(gold)
    seen: set[str] = set()
    dcg = 0.0
    for i, d in enumerate(ranking[:k], start=1):
        if d in gold_set and d not in seen:
            dcg += 1.0 / math.log2(i + 1)
        seen.add(d)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(gold_set), k) + 1))
    return dcg / ideal


def _abstains(top_scores: Sequence[float | None], threshold: float) -> np.ndarray:
    return np.array([s is None or s < threshold for s in top_scores], dtype=bool)


def abstention_metrics(
    top_scores: Sequence[float | None], has_gold: Sequence[bool], threshold: float
) -> dict[str, float | int]:
    """Score the rule "abstain when the top score is below ``threshold``" against the labels.

    A request abstains when its top score is ``None`` (empty ranking) or ``< threshold``; a score equal to the
    threshold routes. An abstention is correct on a request with no gold id.

    precision = correct abstentions / abstentions (0 when nothing abstains);
    recall = correct abstentions / no-gold requests;
    f1 = 2PR / (P + R) (0 when P + R = 0);
    false_abstention_rate = abstentions on gold requests / gold requests (0 when there are none).

    Raises ValueError when the lengths differ or no request is without gold (recall is then undefined).
    """
    if len(top_scores) != len(has_gold):
        raise ValueError(f"{len(top_scores)} top scores but {len(has_gold)} has_gold flags; pass one per request")
    gold = np.asarray(has_gold, dtype=bool)
    if gold.all():
        raise ValueError("abstention needs at least one request with no gold ids (gold: [])")
    abstain = _abstains(top_scores, threshold)
    abstentions = int(abstain.sum())
    correct = int((abstain & ~gold).sum())
    no_gold = int((~gold).sum())
    gold_n = int(gold.sum())
    precision = correct / abstentions if abstentions else 0.0
    recall = correct / no_gold
    return {
        "threshold": float(threshold),
        "precision": precision,
        "recall": recall,
        "f1": _f1(precision, recall),
        "false_abstention_rate": (abstentions - correct) / gold_n if gold_n else 0.0,
        "abstentions": abstentions,
        "no_gold_requests": no_gold,
        "gold_requests": gold_n,
    }


def _f1(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def best_threshold(top_scores: Sequence[float | None], has_gold: Sequence[bool]) -> float:
    """The abstention threshold with the highest F1, among the distinct observed top scores.

    Candidate ``t`` abstains on every score ``< t``. Ties in F1 go to the lowest threshold (the one that abstains
    least), so the choice is deterministic. Returns 0.0 when no request has a score (all rankings empty: every
    threshold abstains on everything). The sweep sorts once and counts with binary search: O(n log n).
    """
    if len(top_scores) != len(has_gold):
        raise ValueError(f"{len(top_scores)} top scores but {len(has_gold)} has_gold flags; pass one per request")
    gold = np.asarray(has_gold, dtype=bool)
    if gold.all():
        raise ValueError("abstention needs at least one request with no gold ids (gold: [])")
    present = np.array([s is not None for s in top_scores], dtype=bool)
    if not present.any():
        return 0.0
    scores = np.array([s for s in top_scores if s is not None], dtype=float)
    candidates = np.unique(scores)
    scored_gold = gold[present]
    always = int((~present).sum())  # empty rankings abstain at every threshold
    always_correct = int((~present & ~gold).sum())
    abstentions = np.searchsorted(np.sort(scores), candidates, side="left") + always
    correct = np.searchsorted(np.sort(scores[~scored_gold]), candidates, side="left") + always_correct
    no_gold = int((~gold).sum())
    precision = np.divide(correct, abstentions, out=np.zeros(len(candidates)), where=abstentions > 0)
    recall = correct / no_gold
    denominator = precision + recall
    f1 = np.divide(2 * precision * recall, denominator, out=np.zeros(len(candidates)), where=denominator > 0)
    # Rounding makes mathematically equal F1 values tie exactly; argmax then returns the lowest tied threshold.
    return float(candidates[int(np.argmax(np.round(f1, 12)))])
