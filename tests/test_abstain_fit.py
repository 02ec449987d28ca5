"""The cut of the "no skill fits" model (benchmarks/abstain_fit.py): the budget cut and the transfer margin that
keeps a library the model was not fitted on within the same budget."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest


@pytest.fixture
def fitting(benchmark, monkeypatch) -> ModuleType:
    module = benchmark("abstain_fit")
    penalties: list[float] = []
    # the logit of a request is its one feature: the cuts below are computed by hand
    monkeypatch.setattr(module, "fit", lambda x, y, weight, l2=1.0: penalties.append(l2) or np.array([0.0, 1.0]))
    module.penalties = penalties  # type: ignore[attr-defined]
    return module


# library a: no-skill requests at 5 and 3, single-skill ones at 1 and 0; library b: 6 and 4, then 3 and 2
X = np.array([[5.0], [3.0], [1.0], [0.0], [6.0], [4.0], [3.0], [2.0]])
NONE = np.array([True, True, False, False, True, True, False, False])
LIBRARY = np.array(["a"] * 4 + ["b"] * 4)


def test_the_budget_cut_sits_halfway_below_the_lowest_logit_that_drops_no_more_than_the_budget(fitting) -> None:
    a, b = LIBRARY == "a", LIBRARY == "b"
    assert fitting.choose_cut(X[a, 0], NONE[a], LIBRARY[a], 0.0) == 2.0  # lowest fine logit 3, next lower 1
    assert fitting.choose_cut(X[b, 0], NONE[b], LIBRARY[b], 0.0) == 3.5  # 4, next lower 3
    assert fitting.choose_cut(X[b, 0], NONE[b], LIBRARY[b], 0.5) == 2.5  # one of the two may go: 3, next lower 2
    assert fitting.choose_cut(X[:, 0], NONE, LIBRARY, 0.0) == 3.5  # pooled: every library within the budget


def test_the_transfer_margin_is_the_largest_shortfall_of_a_cut_fitted_on_the_other_library(fitting) -> None:
    margin, shortfall, above, dropped = fitting.transfer(X, NONE, LIBRARY, 0.0, 100.0)
    # held out a: the cut fitted on b (3.5) is above a's own (2): -1.5; held out b: a's cut 2 below b's 3.5: +1.5
    assert shortfall == {"a": -1.5, "b": 1.5} and margin == 1.5
    assert above.tolist() == [1.5, -0.5, -2.5, -3.5, 4.0, 2.0, 1.0, 0.0]  # each logit minus the held-out cut
    assert dropped.tolist() == [True, False, False, False, True, True, True, True]  # both of b's singles
    assert (above >= margin).tolist() == [True, False, False, False, True, True, False, False]  # with the margin
    assert fitting.penalties == [100.0, 100.0]


def test_no_margin_when_each_library_is_within_the_budget_of_the_other(fitting) -> None:
    same = np.array([[5.0], [3.0], [1.0], [0.0]] * 2)
    margin, shortfall, _, _ = fitting.transfer(same, NONE, LIBRARY, 0.0, 1.0)
    assert shortfall == {"a": 0.0, "b": 0.0} and margin == 0.0


def test_the_cross_validated_cut_carries_the_margin(fitting) -> None:
    x = np.tile(X, (5, 1))
    none, library = np.tile(NONE, 5), np.tile(LIBRARY, 5)
    plain = fitting.cross_validate(x, none, library, 0.0, folds=2, repeats=1)
    lifted = fitting.cross_validate(x, none, library, 0.0, margin=1.5, folds=2, repeats=1)
    # every fold's pooled cut is 3.5 (b's singles at 3 must stay): the margin moves it to 5, so only the 5s and 6s go
    assert plain.tolist() == np.tile([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0], 5).tolist()
    assert lifted.tolist() == np.tile([1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0], 5).tolist()
