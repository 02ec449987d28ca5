"""Saying "no skill fits" (router.abstain): the rule, its cache, the router's flag, and the surfaces in front of an
agent (hook, /v1/route with abstain, MCP search_skills) against the catalogue surfaces that keep the top k."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import numpy as np
import pytest

from router import Router, abstain
from router.config import RouterConfig
from router.errors import ConfigError
from router.routing import Match, Routing
from router.serve import hooks
from router.skill import Skill
from serve_support import BUNDLED, copy_bundled, running


# -- the rule -------------------------------------------------------------------------------------------------------
def test_the_rule_is_a_floor_and_a_margin_over_the_everyday_requests() -> None:
    assert (abstain.FLOOR, abstain.MARGIN) == (0.15, 0.05)
    assert abstain.fits_no_skill(0.149, 0.0)  # close to nothing in the library
    assert not abstain.fits_no_skill(0.15, 0.0)
    assert abstain.fits_no_skill(0.30, 0.36)  # an everyday request is 0.06 closer than any skill
    assert not abstain.fits_no_skill(0.30, 0.34)  # 0.04 closer: the skill may still serve it
    assert not abstain.fits_no_skill(0.30, 0.35, margin=0.06)


def test_everyday_vectors_are_embedded_once_then_read_from_the_cache(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(abstain, "_MEMO", {})
    calls = []
    rows = np.eye(len(abstain.EVERYDAY), 64, dtype=np.float32)

    def encode(texts):
        calls.append(list(texts))
        return rows

    first = abstain.everyday_vectors("model-a", encode, 64)
    assert calls == [list(abstain.EVERYDAY)] and np.array_equal(first, rows)
    [cached] = (tmp_path / "skill-router" / "everyday").iterdir()
    monkeypatch.setattr(abstain, "_MEMO", {})  # a new process: the file answers
    assert np.array_equal(abstain.everyday_vectors("model-a", encode, 64), rows) and len(calls) == 1
    abstain.everyday_vectors("model-b", encode, 64)  # another model, another key
    assert len(calls) == 2
    cached.write_bytes(b"not an array")  # a cut write is embedded again, never trusted
    monkeypatch.setattr(abstain, "_MEMO", {})
    assert np.array_equal(abstain.everyday_vectors("model-a", encode, 64), rows) and len(calls) == 3


def test_a_cache_that_cannot_be_written_only_costs_the_embedding(tmp_path: Path, monkeypatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder would go")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    monkeypatch.setattr(abstain, "_MEMO", {})
    rows = np.ones((len(abstain.EVERYDAY), 8), dtype=np.float32)
    assert np.array_equal(abstain.everyday_vectors("m", lambda texts: rows, 8), rows)


def test_an_encoder_of_the_wrong_shape_is_named(monkeypatch) -> None:
    monkeypatch.setattr(abstain, "_MEMO", {})
    monkeypatch.setattr(abstain, "_read", lambda path, dim: None)
    with pytest.raises(ValueError, match=r"returned \(2, 8\) vectors for 54 texts of dimension 8: check the model"):
        abstain.everyday_vectors("m", lambda texts: np.zeros((2, 8), dtype=np.float32), 8)


def test_no_skill_is_a_checked_config_switch() -> None:
    assert RouterConfig().no_skill is True
    assert RouterConfig.from_json({"no_skill": False}).no_skill is False
    with pytest.raises(ConfigError, match="no_skill must be true or false, got 'yes'"):
        RouterConfig(no_skill="yes")  # type: ignore[arg-type]


def test_the_hook_adds_nothing_for_a_request_that_fits_no_skill() -> None:
    shown = (Skill(name="a", description="first", path=""),)
    matches = (Match("a", "a", 1.0, 1),)
    assert hooks.routing_context("claude-code", Routing(matches, shown)) != ""
    assert hooks.routing_context("claude-code", Routing(matches, shown, no_skill=True)) == ""


# -- the router -----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bundled(tmp_path_factory: pytest.TempPathFactory, encoder) -> Router:
    return Router.from_skills([str(BUNDLED)], "agentskills", RouterConfig(),
                              index_folder=str(tmp_path_factory.mktemp("abstain-idx")), encoder=encoder)


def test_everyday_requests_fit_no_skill_and_a_conversion_keeps_its_skill(bundled: Router) -> None:
    berlin, thanks, celsius, named = bundled.route_many(
        ["When did the Berlin Wall fall?", "thanks!", "72°F in celsius?",
         "pirate-speak: when did the Berlin Wall fall?"])
    assert berlin.no_skill and thanks.no_skill
    assert len(berlin.shown) == 5 and not berlin.abstained  # the catalogue keeps its top k
    assert not celsius.no_skill and celsius.matches[0].name == "unit-conversion"
    assert not named.no_skill and "pirate-speak" in [s.name for s in named.shown]
    assert not bundled.with_config(no_skill=False).route("When did the Berlin Wall fall?").no_skill


def test_the_flag_follows_the_rule_from_the_two_cosines(bundled: Router) -> None:
    texts = ["how many kWh is 500 BTU", "is it raining in oslo right now", "what's the capital of canada"]
    scored = bundled.score_many(texts)
    everyday = abstain.everyday_cosines(scored.vectors, bundled.encoder.model_id, bundled.encode)
    best = scored.signals["dense"].max(axis=1)
    expected = [abstain.fits_no_skill(float(b), float(e)) for b, e in zip(best, everyday)]
    assert [r.no_skill for r in bundled.route_many(texts)] == expected
    assert expected[-1] is True


# -- the surfaces ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("abstain-serve")
    library = copy_bundled(root / "skills")
    argv = ["--skills", str(library), "--profile", "agentskills", "--index-dir", str(root / "idx"),
            "--log", str(root / "decisions.jsonl"), "--no-watch"]
    with running(argv) as (url, service):
        yield url, service


@pytest.mark.model
def test_route_gives_nothing_only_when_asked_and_the_hook_nothing_by_default(server) -> None:
    url, _ = server
    with httpx.Client(base_url=url, trust_env=False, timeout=30) as client:
        plain = client.post("/v1/route", json={"query": "When did the Berlin Wall fall?"}).json()
        asked = client.post("/v1/route", json={"query": "When did the Berlin Wall fall?", "abstain": True}).json()
        kept = client.post("/v1/route", json={"query": "will it rain in Lyon tomorrow?", "abstain": True}).json()
        hook = client.post("/v1/hooks/claude-code", json={"hook_event_name": "UserPromptSubmit", "session_id": "s",
                                                          "prompt": "When did the Berlin Wall fall?"}).json()
    assert plain["no_skill"] is True and len(plain["shown"]) == 5 and plain["abstained"] is False
    assert asked["no_skill"] is True and asked["shown"] == [] and len(asked["matches"]) == 5
    assert kept["no_skill"] is False and kept["matches"][0]["name"] == "weather-forecast" and len(kept["shown"]) == 5
    assert hook == {}


@pytest.mark.model
def test_search_skills_says_abstained_with_no_skills(server) -> None:
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    url, _ = server

    async def search(query: str):
        async with httpx2.AsyncClient(trust_env=False, timeout=httpx2.Timeout(30, read=60)) as http:
            async with streamable_http_client(f"{url}/mcp", http_client=http) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    return await session.call_tool("search_skills", {"query": query, "k": 3})

    nothing = asyncio.run(search("thanks, that's all for now")).structured_content
    something = asyncio.run(search("will it rain in Lyon tomorrow?")).structured_content
    assert nothing["abstained"] is True and nothing["skills"] == [] and nothing["total"] == 0
    assert something["abstained"] is False and something["total"] == 3
