"""benchmarks/adapt_choice.py's training data: the request -> tool pairs it reads, and the batches it trains on, in
which a tool never comes twice (a second request for it would count its own description as a wrong answer)."""

from __future__ import annotations

from types import ModuleType

import pytest


@pytest.fixture
def adapt(benchmark) -> ModuleType:
    return benchmark("adapt_choice")


def test_pairs_are_one_a_gold_tool_with_its_name_and_description(adapt) -> None:
    tools = [{"id": "a", "name": "weather", "description": "Forecasts."},
             {"id": "b", "name": "maps", "description": "Routes, places."}]
    requests = [{"query": "rain tomorrow?", "gold": ["a"]}, {"query": "drive to Oslo in the rain", "gold": ["b", "a"]},
                {"query": "hello", "gold": []}, {"query": "stocks", "gold": ["gone"]}]
    assert adapt.pairs_of(tools, requests, "set") == [
        ("rain tomorrow?", "weather: Forecasts.", "set/a"),
        ("drive to Oslo in the rain", "maps: Routes, places.", "set/b"),
        ("drive to Oslo in the rain", "weather: Forecasts.", "set/a")]


def test_batches_hold_every_pair_once_and_no_tool_twice(adapt) -> None:
    pairs = [(f"request {i}", f"tool {i % 3}", f"t/{i % 3}") for i in range(10)]
    batches = adapt.batches(pairs, 4)
    assert sorted(p for b in batches for p in b) == sorted(pairs)
    assert [len(b) for b in batches] == [3, 3, 3, 1]  # three tools: at most three pairs a batch
    assert all(len({p[2] for p in b}) == len(b) for b in batches)
    assert batches == adapt.batches(pairs, 4)  # the same seed, the same order


def test_batches_fill_to_the_size_when_the_tools_allow(adapt) -> None:
    pairs = [(f"request {i}", f"tool {i}", f"t/{i}") for i in range(10)]
    assert [len(b) for b in adapt.batches(pairs, 4)] == [4, 4, 2]
