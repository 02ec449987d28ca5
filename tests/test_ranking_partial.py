"""router.ranking.choose sorts only what it can show: its choices equal those of a full sort of the library."""

from __future__ import annotations

import numpy as np

from indexes.fusion import ranking
from router.ranking import choose


def _by_full_sort(fused, order, k, named=(), excluded=None, pinned=None):
    """The rules as stated, over the whole ranked library (the reference)."""
    ranked = ranking(fused, order)
    if excluded is not None and excluded.any():
        ranked = ranked[~excluded[ranked]]
        named = [i for i in named if not excluded[i]]
    chosen = [int(i) for i in ranked[:k]]
    if any(i not in chosen for i in named):
        others = [i for i in chosen if i not in named][: max(k - len(named), 0)]
        keep = set(named) | set(others)
        chosen = [int(i) for i in ranked[np.isin(ranked, list(keep))]]
    extra = [int(i) for i in ranked if pinned is not None and pinned[i] and int(i) not in chosen]
    return [(i, "named" if i in set(named) else "routed") for i in chosen] + [(i, "pinned") for i in extra]


def test_choices_equal_a_full_sort_with_ties_names_pins_and_exclusions() -> None:
    rng = np.random.default_rng(5)
    for trial in range(400):
        n = int(rng.integers(1, 300))
        # few distinct values: many exact ties, broken by the id order
        fused = rng.integers(0, 6, n).astype(np.float64) / 3 if trial % 2 else rng.normal(0, 1, n)
        order = rng.permutation(n)
        k = int(rng.integers(1, n + 1))
        named = [int(i) for i in rng.choice(n, size=min(n, int(rng.integers(0, 4))), replace=False)]
        excluded = rng.random(n) < 0.1 if trial % 3 == 0 else None
        pinned = rng.random(n) < 0.05 if trial % 4 == 0 else None
        assert choose(fused, order, k, named=named, excluded=excluded, pinned=pinned) == \
            _by_full_sort(fused, order, k, named, excluded, pinned), trial


def test_everything_excluded_chooses_nothing_but_what_is_pinned_and_allowed() -> None:
    fused = np.array([0.5, 0.9, 0.1])
    order = np.array([2, 0, 1])
    assert choose(fused, order, 2, excluded=np.array([True, True, True])) == []
    assert choose(fused, order, 1, excluded=np.array([False, True, False]), pinned=np.array([False, True, True])) \
        == [(0, "routed"), (2, "pinned")]


def test_the_kth_largest_past_the_sample_size_is_the_partitions_on_ties_zeros_and_sorted_rows() -> None:
    from indexes.fusion import SAMPLE_ABOVE, kth_largest

    rng = np.random.default_rng(7)
    n = 3 * SAMPLE_ABOVE
    rows = {"normal": rng.normal(0, 1, n), "mostly zeros": np.where(rng.random(n) < 0.95, 0.0, rng.random(n)),
            "five values": rng.integers(0, 5, n).astype(np.float64), "ascending": np.sort(rng.normal(0, 1, n)),
            "descending": -np.sort(rng.normal(0, 1, n)), "one best": np.r_[np.zeros(n - 1), 1.0]}
    for name, values in rows.items():
        for k in (1, 2, 5, 17, 100, n // 64 - 1, n // 64, n - 1, n):
            assert kth_largest(values, k) == -np.partition(-values, k - 1)[k - 1], (name, k)


def test_choices_over_many_skills_equal_a_full_sort() -> None:
    rng = np.random.default_rng(11)
    for trial in range(6):
        n = 30_000
        fused = rng.integers(0, 40, n).astype(np.float64) / 7 if trial % 2 else rng.normal(0, 1, n)
        order = rng.permutation(n)
        for k in (1, 5, 100):
            assert choose(fused, order, k) == _by_full_sort(fused, order, k), (trial, k)


def test_a_rank_among_ties_is_the_full_sorts() -> None:
    from indexes.fusion import rank_of, ranks_by_score

    rng = np.random.default_rng(13)
    for trial in range(50):
        n = int(rng.integers(1, 2000))
        scores = rng.integers(0, 4, n).astype(np.float64) if trial % 2 else rng.normal(0, 1, n)
        order = rng.permutation(n)
        full = ranks_by_score(scores, order)
        assert [rank_of(scores, order, i) for i in range(n)] == full.tolist(), trial
