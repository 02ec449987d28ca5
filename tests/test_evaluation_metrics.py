import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from router.evaluation.metrics import (
    abstention_metrics,
    all_at_k,
    best_threshold,
    hit_at_k,
    ndcg_at_k,
    recall_at_k,
    reciprocal_rank,
    top1,
)

RANKING = ["a", "b", "c", "d"]
GOLD = {"b", "d"}
L3 = math.log2(3)
L5 = math.log2(5)


def test_multi_gold_metrics_from_the_formulas():
    assert [hit_at_k(RANKING, GOLD, k) for k in (1, 2, 4)] == [0.0, 1.0, 1.0]
    assert [recall_at_k(RANKING, GOLD, k) for k in (1, 2, 3, 4)] == [0.0, 0.5, 0.5, 1.0]
    assert [all_at_k(RANKING, GOLD, k) for k in (2, 3, 4)] == [0.0, 0.0, 1.0]
    assert top1(RANKING, GOLD) == 0.0
    assert reciprocal_rank(RANKING, GOLD) == 1 / 2
    assert ndcg_at_k(RANKING, GOLD, 1) == 0.0
    assert ndcg_at_k(RANKING, GOLD, 2) == pytest.approx((1 / L3) / (1 + 1 / L3))
    assert ndcg_at_k(RANKING, GOLD, 4) == pytest.approx((1 / L3 + 1 / L5) / (1 + 1 / L3))


def test_single_gold_first():
    assert top1(["x", "y"], ["x"]) == 1.0
    assert reciprocal_rank(["x", "y"], ["x"]) == 1.0
    assert ndcg_at_k(["x", "y"], ["x"], 5) == 1.0


def test_k_larger_than_the_ranking():
    assert hit_at_k(["a"], {"a", "z"}, 10) == 1.0
    assert recall_at_k(["a"], {"a", "z"}, 10) == 0.5
    assert all_at_k(["a"], {"a", "z"}, 10) == 0.0
    assert ndcg_at_k(["a"], {"a", "z"}, 10) == pytest.approx(1 / (1 + 1 / L3))  # ideal has both gold ids


def test_gold_outside_the_ranking_and_empty_ranking():
    assert reciprocal_rank(["a", "b"], {"z"}) == 0.0
    assert recall_at_k([], {"z"}, 3) == 0.0
    assert ndcg_at_k([], {"z"}, 3) == 0.0


def test_ideal_dcg_is_cut_at_k():
    # three gold ids, k = 2: ideal = 1 + 1/log2(3); ranking finds one at rank 2
    assert ndcg_at_k(["x", "g1", "g2"], {"g1", "g2", "g3"}, 2) == pytest.approx((1 / L3) / (1 + 1 / L3))


def test_repeated_ranking_id_counts_once():
    assert ndcg_at_k(["b", "b", "d"], GOLD, 3) == pytest.approx((1 + 1 / 2) / (1 + 1 / L3))
    assert recall_at_k(["b", "b"], GOLD, 2) == 0.5


@pytest.mark.parametrize(
    "call",
    [
        lambda: hit_at_k(["a"], [], 1),
        lambda: recall_at_k(["a"], set(), 1),
        lambda: all_at_k(["a"], (), 1),
        lambda: ndcg_at_k(["a"], [], 1),
        lambda: reciprocal_rank(["a"], []),
        lambda: top1(["a"], []),
    ],
)
def test_empty_gold_is_undefined(call):
    with pytest.raises(ValueError, match="undefined for a request with no gold ids"):
        call()


def test_k_must_be_positive():
    with pytest.raises(ValueError, match="k must be at least 1, got 0"):
        recall_at_k(["a"], ["a"], 0)


ids = st.lists(st.sampled_from("abcdefgh"), unique=True, max_size=8)


@given(ranking=ids, gold=st.sets(st.sampled_from("abcdefgh"), min_size=1), k=st.integers(1, 9))
def test_metric_properties(ranking, gold, k):
    hit, rec, every, nd = (f(ranking, gold, k) for f in (hit_at_k, recall_at_k, all_at_k, ndcg_at_k))
    assert hit >= rec >= every
    assert 0.0 <= nd <= 1.0 + 1e-12
    assert (nd > 0) == (hit > 0)
    assert recall_at_k(ranking, gold, k + 1) >= rec
    assert (reciprocal_rank(ranking, gold) >= 1 / k) == (hit_at_k(ranking, gold, k) == 1.0)


# abstention: scores and labels for five requests; None is an empty ranking
SCORES = [0.9, 0.5, 0.5, None, 0.2]
HAS_GOLD = [True, True, False, False, False]


def test_abstention_at_a_threshold_equal_to_a_score_routes_that_request():
    result = abstention_metrics(SCORES, HAS_GOLD, 0.5)
    # abstains on None and 0.2 (both no-gold): 2 abstentions, both correct; 0.5 == threshold routes
    assert result == {
        "threshold": 0.5,
        "precision": 1.0,
        "recall": 2 / 3,
        "f1": pytest.approx(2 * (2 / 3) / (1 + 2 / 3)),
        "false_abstention_rate": 0.0,
        "abstentions": 2,
        "no_gold_requests": 3,
        "gold_requests": 2,
    }


def test_abstention_above_a_score():
    result = abstention_metrics(SCORES, HAS_GOLD, 0.6)
    # abstains on 0.5 (gold), 0.5 (no gold), None, 0.2: 4 abstentions, 3 correct
    assert result["precision"] == 3 / 4
    assert result["recall"] == 1.0
    assert result["f1"] == pytest.approx(2 * 0.75 / 1.75)
    assert result["false_abstention_rate"] == 1 / 2


def test_no_abstention_has_zero_precision():
    result = abstention_metrics([0.9, 0.8], [True, False], 0.1)
    assert (result["precision"], result["recall"], result["f1"]) == (0.0, 0.0, 0.0)


def test_best_threshold_maximises_f1():
    # candidates 0.2 (F1 1/2), 0.5 (F1 4/5), 0.9 (F1 6/7)
    assert best_threshold(SCORES, HAS_GOLD) == 0.9


def test_best_threshold_breaks_f1_ties_toward_the_lowest():
    scores = [0.1, 0.3, 0.35, 0.5, 0.9]
    has_gold = [False, True, True, False, True]
    f1 = {t: abstention_metrics(scores, has_gold, t)["f1"] for t in scores}
    assert f1[0.3] == pytest.approx(2 / 3) and f1[0.9] == pytest.approx(2 / 3)
    assert best_threshold(scores, has_gold) == 0.3


def test_best_threshold_with_no_scores_at_all():
    assert best_threshold([None, None], [True, False]) == 0.0


def test_abstention_needs_no_gold_requests_and_equal_lengths():
    with pytest.raises(ValueError, match=r"at least one request with no gold ids"):
        abstention_metrics([0.1], [True], 0.5)
    with pytest.raises(ValueError, match="2 top scores but 1 has_gold flags"):
        best_threshold([0.1, 0.2], [False])


@given(
    st.lists(
        st.tuples(st.one_of(st.none(), st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.7, 1.0])), st.booleans()),
        min_size=1,
        max_size=12,
    ).filter(lambda rows: not all(g for _, g in rows))
)
def test_best_threshold_matches_brute_force(rows):
    scores = [s for s, _ in rows]
    has_gold = [g for _, g in rows]
    candidates = sorted({s for s in scores if s is not None})
    if not candidates:
        assert best_threshold(scores, has_gold) == 0.0
        return
    f1 = [round(abstention_metrics(scores, has_gold, t)["f1"], 12) for t in candidates]
    assert best_threshold(scores, has_gold) == candidates[f1.index(max(f1))]
