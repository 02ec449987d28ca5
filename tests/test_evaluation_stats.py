import numpy as np
import pytest

from router.evaluation.stats import PairedResult, bootstrap_ci, paired_comparison

VALUES = [0.1, 0.4, 0.35, 0.8, 0.05, 1.0, 0.0]


def reference_means(values, n_resamples, seed):
    """Textbook percentile bootstrap: one matrix of resample indices from default_rng(seed)."""
    values = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    return values[rng.integers(0, len(values), size=(n_resamples, len(values)))].mean(axis=1)


def test_bootstrap_ci_equals_the_textbook_computation():
    means = reference_means(VALUES, 1000, 0)
    low, high = np.quantile(means, [0.025, 0.975])
    assert bootstrap_ci(VALUES) == (np.mean(VALUES), low, high)


def test_bootstrap_ci_pinned_values_and_reproducible():
    assert bootstrap_ci([1, 0, 1, 1, 0, 0, 1, 1, 1, 0]) == (0.6, 0.3, 0.9)
    assert bootstrap_ci(VALUES, seed=3) == bootstrap_ci(VALUES, seed=3)
    assert bootstrap_ci(VALUES, seed=3) != bootstrap_ci(VALUES, seed=4)


def test_bootstrap_ci_contains_the_mean_and_narrows_with_confidence():
    mean, low, high = bootstrap_ci(VALUES)
    assert low <= mean <= high
    _, low80, high80 = bootstrap_ci(VALUES, confidence=0.8)
    assert low <= low80 <= high80 <= high


def test_bootstrap_ci_of_constant_values_is_a_point():
    assert bootstrap_ci([0.5] * 4) == (0.5, 0.5, 0.5)


def test_large_inputs_are_resampled_in_blocks_deterministically():
    # 300,000 values are drawn in blocks of 6 resamples; the answer must still be reproducible
    values = np.random.default_rng(1).random(300_000)
    first = bootstrap_ci(values, n_resamples=20)
    assert first == bootstrap_ci(values, n_resamples=20)
    assert first[1] <= first[0] <= first[2]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"values": []}, "needs a non-empty sequence"),
        ({"values": [1.0, float("nan")]}, "non-finite value"),
        ({"values": [1.0], "confidence": 1.0}, "confidence must lie strictly between 0 and 1, got 1.0"),
        ({"values": [1.0], "n_resamples": 0}, "n_resamples must be at least 1, got 0"),
    ],
)
def test_bootstrap_ci_rejects_bad_input(kwargs, message):
    values = kwargs.pop("values")
    with pytest.raises(ValueError, match=message):
        bootstrap_ci(values, **kwargs)


A = [1, 0, 0, 0, 0, 1, 0]
B = [1, 1, 1, 0, 1, 1, 1]


def test_paired_comparison_pinned_values():
    result = paired_comparison(A, B)
    assert result == PairedResult(
        mean_diff=4 / 7,
        low=1 / 7,
        high=6 / 7,
        p_value=(1 + 31) / (1 + 10000),
        wins=4,
        losses=0,
        ties=3,
    )


def test_paired_comparison_equals_the_textbook_computation():
    a = np.array(VALUES)
    b = a[::-1] * 0.9
    diff = b - a
    means = reference_means(diff, 2000, 7)
    low, high = np.quantile(means, [0.025, 0.975])
    extreme = np.sum(np.abs(means - diff.mean()) >= abs(diff.mean()) - 1e-12)
    result = paired_comparison(a, b, n_resamples=2000, seed=7)
    assert (result.mean_diff, result.low, result.high) == (diff.mean(), low, high)
    assert result.p_value == (1 + extreme) / 2001


def test_identical_systems_differ_by_nothing():
    result = paired_comparison(VALUES, VALUES)
    assert result == PairedResult(0.0, 0.0, 0.0, 1.0, 0, 0, len(VALUES))


def test_balanced_wins_and_losses_give_p_one():
    result = paired_comparison([1, 0, 1, 0], [0, 1, 1, 0])
    assert (result.mean_diff, result.p_value, result.wins, result.losses, result.ties) == (0.0, 1.0, 1, 1, 2)


def test_swapping_systems_negates_the_difference_and_keeps_p():
    ab = paired_comparison(A, B, n_resamples=500)
    ba = paired_comparison(B, A, n_resamples=500)
    assert ba.mean_diff == -ab.mean_diff
    assert (ba.low, ba.high) == pytest.approx((-ab.high, -ab.low))  # interpolation rounds differently
    assert ba.p_value == ab.p_value
    assert (ba.wins, ba.losses) == (ab.losses, ab.wins)


def test_paired_comparison_needs_equal_lengths():
    with pytest.raises(ValueError, match="one value per request in both: got 2 and 3"):
        paired_comparison([1, 0], [1, 0, 1])
