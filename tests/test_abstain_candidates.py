"""The candidate numbers of benchmarks/abstain_candidates.py, from their formulas on hand-sized data."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest

from indexes.bm25 import BM25Index


@pytest.fixture
def candidates(benchmark) -> ModuleType:
    return benchmark("abstain_candidates")


def test_the_gap_is_the_top_score_minus_the_mean_of_the_next_ones(candidates) -> None:
    scores = np.array([[0.1, 0.5, 0.3, 0.2], [2.0, 0.0, 1.0, 0.0]])
    assert candidates.gap(scores, 3).tolist() == pytest.approx([0.5 - (0.3 + 0.2) / 2, 2.0 - 0.5])
    # BM25 scores in log(1 + score): log 3 - log 2 for the second row's top two
    assert candidates.gap(scores, 2, log=True)[1] == pytest.approx(np.log(3.0) - np.log(2.0))


def test_a_candidate_is_measured_against_the_everyday_sample_of_the_same_library(candidates) -> None:
    measured = {"scores": {"dense": np.array([[0.6, 0.2], [0.3, 0.1]])},
                "sample": {"dense": np.array([[0.2, 0.1], [0.4, 0.0]])}}
    best = candidates.against_chance("dense", lambda v: v.max(axis=1))
    assert best(measured).tolist() == pytest.approx([0.6 - 0.3, 0.3 - 0.3])  # the sample's mean best is 0.3
    z = candidates.z_best("dense")(measured)
    assert z.tolist() == pytest.approx([(0.6 - 0.3) / 0.1, 0.0])  # the sample's best: 0.2 and 0.4, spread 0.1


def test_unknown_tokens_are_those_the_bodies_never_use(candidates) -> None:
    index = BM25Index.from_texts(["a", "b"], ["merge pdf files into one", "plot a histogram"])
    shares = candidates.unknown(index, ["merge the verilog files", "plot 300 histograms", "用 ffmpeg 截图"])
    # "merge" and "files" are known, "verilog" is not (the stop word is no token): 1 of 3, one Latin word
    assert shares[0].tolist() == pytest.approx([1 / 3, 1.0])
    # "histograms" stems to the known "histogram"; "300" is unknown but no word: it counts in the share only
    assert shares[1].tolist() == pytest.approx([1 / 3, 0.0])
    # the Han bigrams and "ffmpeg" are all unknown, and only "ffmpeg" is Latin
    assert shares[2][0] == 1.0 and shares[2][1] == 1.0
