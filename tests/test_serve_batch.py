"""Micro-batching: requests that arrive together are routed together, each gets its own answer, one bad
request does not fail the others, and a batch routes exactly as requests routed one by one."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from router.errors import ConfigError
from router.routing import Router
from router.serve.service import Batcher, route_many


class FakeRouter:
    """Answers route(q) with q upper-cased, slowly, and refuses 'bad'."""

    def __init__(self, delay: float = 0.01) -> None:
        self.delay = delay
        self.calls: list[str] = []

    def route(self, query: str, k: int | None = None) -> str:
        self.calls.append(query)
        time.sleep(self.delay)
        if query == "bad":
            raise ConfigError("the request is bad")
        return f"{query.upper()}:{k}"

    def route_many(self, queries: list[str], k: int | None = None, **choices: object) -> list[str]:
        return [self.route(q, k) for q in queries]


class BatchRouter(FakeRouter):
    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []

    def route_many(self, queries: list[str], k: int | None = None, **choices: object) -> list[str]:
        self.batches.append(list(queries))
        return [f"{q.upper()}:{k}" for q in queries]


async def submit_all(batcher: Batcher, router: object, queries: list[str], k: int | None = None) -> list:
    async def one(q: str):
        try:
            return (await batcher.route(router, q, k))[0]
        except ConfigError as exc:
            return exc
    return await asyncio.gather(*(one(q) for q in queries))


def test_requests_arriving_together_are_batched_and_answered_in_order() -> None:
    sizes: list[int] = []
    batcher = Batcher(max_batch=8, on_batch=sizes.append)
    router = FakeRouter()
    queries = [f"q{i}" for i in range(30)]
    try:
        answers = asyncio.run(submit_all(batcher, router, queries, 3))
    finally:
        batcher.stop()
    assert answers == [f"Q{i}:3" for i in range(30)]
    assert sum(sizes) == 30 and max(sizes) > 1 and max(sizes) <= 8


def test_route_many_is_used_where_the_router_has_it() -> None:
    batcher = Batcher()
    router = BatchRouter()
    router.delay = 0.05
    try:
        answers = asyncio.run(submit_all(batcher, router, [f"q{i}" for i in range(10)]))
    finally:
        batcher.stop()
    assert answers == [f"Q{i}:None" for i in range(10)]
    assert any(len(b) > 1 for b in router.batches)


def test_one_bad_request_does_not_fail_the_others_batched_with_it() -> None:
    batcher = Batcher()
    router = FakeRouter()
    try:
        answers = asyncio.run(submit_all(batcher, router, ["a", "bad", "c", "d"] * 3))
    finally:
        batcher.stop()
    assert [a if isinstance(a, str) else "error" for a in answers] == ["A:None", "error", "C:None", "D:None"] * 3


def test_requests_with_different_options_are_routed_separately() -> None:
    batcher = Batcher()
    router = BatchRouter()
    gate = threading.Event()
    original_one, original_many = router.route, router.route_many

    def slow_one(query, k=None):
        gate.wait(5)
        return original_one(query, k)

    def slow_many(queries, k=None, **choices):
        gate.wait(5)
        return original_many(queries, k)

    router.route, router.route_many = slow_one, slow_many

    async def run():
        first = asyncio.ensure_future(batcher.route(router, "first", 1))
        await asyncio.sleep(0.05)  # the worker now holds 'first'; the rest queue up behind it
        rest = [asyncio.ensure_future(batcher.route(router, q, k)) for q, k in
                [("a", 1), ("b", 2), ("c", 1), ("d", 2)]]
        await asyncio.sleep(0.05)
        gate.set()
        return [r[0] for r in await asyncio.gather(first, *rest)]

    try:
        assert asyncio.run(run()) == ["FIRST:1", "A:1", "B:2", "C:1", "D:2"]
    finally:
        batcher.stop()
    assert sorted(router.batches) == [["a", "c"], ["b", "d"], ["first"]]


def test_a_batch_routes_as_single_requests_do_in_one_model_call(bundled: Router) -> None:
    queries = ["will it rain in Lyon this weekend?", "write a commit message for this diff",
               [{"role": "user", "content": "I have a CSV export"}, {"role": "user", "content": "fix its dates"}],
               "convert 5 miles to km", "review my Go handler"]
    single = [bundled.route(q, 3) for q in queries]
    inner = bundled.encoder._encoder
    calls: list[int] = []
    original = inner.encode
    inner.encode = lambda texts, **kw: calls.append(len(texts)) or original(texts, **kw)
    try:
        batched = route_many(bundled, queries, 3)
    finally:
        del inner.encode
    assert len(calls) <= 2 and sum(calls) >= 5  # the requests together (and earlier turns), not one call each
    for one, many in zip(single, batched):
        assert [m.id for m in one.matches] == [m.id for m in many.matches]
        assert [s.id for s in one.shown] == [s.id for s in many.shown]
        for a, b in zip(one.matches, many.matches):
            assert a.score == pytest.approx(b.score, abs=1e-4)


def test_per_request_pins_and_exclusions_leave_the_router_unchanged(bundled: Router) -> None:
    routing = route_many(bundled, ["weather forecast for tomorrow"], 3, pin=["haiku-responder"],
                         exclude=["weather-forecast"])[0]
    assert "weather-forecast" not in [s.name for s in routing.shown]
    assert "haiku-responder" in [s.name for s in routing.shown]
    assert bundled.pinned == frozenset() and bundled.excluded == frozenset()
    plain = bundled.route("weather forecast for tomorrow", 3)
    names = [s.name for s in plain.shown]
    assert "weather-forecast" in names and "haiku-responder" not in names
    with pytest.raises(ConfigError, match=r"^pinned skill 'no-such-skill' is not in the library; 'skill-router "
                                          r"list' or GET /v1/skills lists them$"):
        route_many(bundled, ["weather"], 3, pin=["no-such-skill"])
