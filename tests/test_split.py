"""Requests that ask for several things (router.split): the parts, the merge formula, and the router using both."""

from __future__ import annotations

import numpy as np
import pytest

from router import Router
from router.config import RouterConfig
from router.errors import ConfigError
from router.split import merge, parts, with_parts
from serve_support import BUNDLED


@pytest.mark.parametrize("text,expected", [
    ("I need the capacity of warehouse 44. Then I want the layout of the Fiction section. Finally, give me the "
     "metadata.", ["I need the capacity of warehouse 44.", "Then I want the layout of the Fiction section.",
                   "Finally, give me the metadata."]),
    ("scrape the pricing tables from 30 sites and then make a d3 chart comparing them",
     ["scrape the pricing tables from 30 sites", "and then make a d3 chart comparing them"]),
    ("1) terraform for an EKS cluster 2) a helm chart for our api",
     ["terraform for an EKS cluster", "a helm chart for our api"]),
    ("migrate the db to postgres; also make the monthly report fast again",
     ["migrate the db to postgres", "also make the monthly report fast again"]),
    ("set up prometheus scraping plus a grafana board for it", ["set up prometheus scraping",
                                                                "plus a grafana board for it"]),
    ("我要先把 PDF 论文转成 markdown，然后用 mermaid 画出方法的流程图",
     ["我要先把 PDF 论文转成 markdown，", "然后用 mermaid 画出方法的流程图"]),
    ("train and test a model", ["train and test a model"]),  # "and" alone never cuts
    # a joiner is a word of its own, not the start of a name
    ("add supabase login to the next.js app. then fix the LCP of the landing page",
     ["add supabase login to the next.js app.", "then fix the LCP of the landing page"]),
    ("find plus-size dresses for the wedding", ["find plus-size dresses for the wedding"]),
    ("write the tests, next deploy it to staging", ["write the tests", "next deploy it to staging"]),
    ("fix the login bug. thanks!", ["fix the login bug. thanks!"]),  # a short part stays with its sentence
    ("thanks. ok", ["thanks. ok"]),
    ("a. b. c. d. e. f. g.", ["a. b. c. d. e. f. g."]),
])
def test_parts(text: str, expected: list[str]) -> None:
    assert parts(text) == expected


def test_more_than_six_parts_route_as_one_request() -> None:
    text = " ".join(f"Please do task number {i}." for i in range(7))
    assert parts(text) == [text]
    assert len(parts(" ".join(f"Please do task number {i}." for i in range(6)))) == 6


def test_merge_adds_the_weighted_best_part_score() -> None:
    whole = np.array([1.0, 0.0, -1.0])
    first, second = np.array([0.0, 2.0, 0.0]), np.array([0.5, 0.0, 3.0])
    assert merge(whole, [first, second], 0.5).tolist() == [1.25, 1.0, 0.5]
    assert merge(whole, [], 0.5) is whole


def test_only_requests_of_several_parts_are_rescored_in_one_batch() -> None:
    fused = np.array([[1.0, 0.0], [0.0, 1.0]])
    calls = []

    def score(texts: list[str]) -> np.ndarray:
        calls.append(texts)
        return np.array([[0.0, 4.0], [2.0, 0.0]])

    out = with_parts(["one request", "set up prometheus scraping plus a grafana board"], fused, score, 0.5)
    assert calls == [["set up prometheus scraping", "plus a grafana board"]]
    assert out.tolist() == [[1.0, 0.0], [1.0, 3.0]]
    assert with_parts(["one request"], fused, score, 0.5) is fused and len(calls) == 1


def test_split_weight_is_checked() -> None:
    assert RouterConfig().split_weight == 0.5
    with pytest.raises(ConfigError, match="split_weight must be a number >= 0, got -1"):
        RouterConfig(split_weight=-1)


def test_each_part_gets_its_skill_into_the_top_k(tmp_path, encoder) -> None:
    router = Router.from_skills([str(BUNDLED)], "agentskills", RouterConfig(), index_folder=str(tmp_path),
                                encoder=encoder)
    request = ("My pod keeps crashing with exit code 137 in the payments namespace, the logs show OOMKilled after the "
               "deploy of the new kubernetes memory limits on the cluster. Then convert 72°F to celsius.")
    split = [m.name for m in router.rank(request, 5)]
    alone = [m.name for m in router.with_config(split_weight=0).rank(request, 5)]
    assert split[:2] == ["kubernetes-debugging", "unit-conversion"] and "unit-conversion" not in alone
    whole = router.with_config(split_weight=0)
    scored = whole.score_many([request])
    assert np.array_equal(whole.fuse(scored), whole.with_config(split_weight=0).fuse(scored))
    one = "is it raining in oslo right now"  # one part: the same scores with or without the split
    assert np.array_equal(router.fuse(router.score_many([one])), whole.fuse(whole.score_many([one])))
