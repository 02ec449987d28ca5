"""The rules every adapter shares (router.adapters.base), with no framework installed: which text is routed,
which tools are kept, what is added, abstention, and the errors for a bad router, URL, option or missing extra."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from adapter_support import OWN_TOOL, TURNS, HashEncoder, bundled_router, catalogue, skill_names
from router.adapters.base import RouterServerError, Shortlist
from router.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
ADAPTERS = {"langchain": ("langchain", "langchain"), "pydantic_ai": ("pydantic_ai", "pydantic-ai"),
            "openai_agents": ("agents", "openai-agents"), "claude_agent_sdk": ("claude_agent_sdk", "claude-agent-sdk"),
            "google_adk": ("google", "google-adk")}


@pytest.fixture()
def router(tmp_path: Path):
    return bundled_router(tmp_path / "idx", HashEncoder())


def tools_of(names: list[str]) -> list[dict[str, str]]:
    return [{"name": n} for n in [*names, OWN_TOOL]]


def test_a_turn_keeps_the_shown_skill_tools_and_every_other_tool(router) -> None:
    shortlist = Shortlist(router)
    turn = shortlist.route([{"role": "system", "content": "Be brief."}, {"role": "user", "content": TURNS[0][0]}])
    expected = [s.name for s in router.skills if s in router.route(TURNS[0][0]).shown]
    assert len(expected) == 2
    assert [t["name"] for t in shortlist.filter(tools_of(skill_names(router)), turn)] == [*expected, OWN_TOOL]
    assert turn.context == catalogue(router, expected) == router.render(TURNS[0][0])
    assert turn.request == TURNS[0][0]


def test_the_conversation_rule_routes_the_last_user_turn_with_earlier_ones_as_context(router) -> None:
    messages = [{"role": "user", "content": TURNS[0][0]}, {"role": "assistant", "content": "Rain."},
                {"role": "user", "content": [{"type": "text", "text": TURNS[1][0]}]},
                {"role": "user", "content": [{"type": "image", "source": "..."}]}]
    turn = Shortlist(router).route(messages)
    assert turn.request == TURNS[1][0]
    assert set(turn.shown) == set(router.route(messages).shown)


def test_a_turn_with_no_text_changes_nothing(router) -> None:
    shortlist = Shortlist(router)
    turn = shortlist.route([{"role": "user", "content": [{"type": "image", "source": "..."}]}])
    assert not turn.active and turn.context == ""
    tools = tools_of(skill_names(router))
    assert shortlist.filter(tools, turn) == tools
    assert Shortlist.instructions("Base.", turn) == "Base."


def test_an_empty_abstention_hides_every_skill_tool(tmp_path: Path) -> None:
    router = bundled_router(tmp_path / "idx", HashEncoder(), threshold=1.01, on_abstain="empty")
    shortlist = Shortlist(router, pin=["haiku-responder"])
    turn = shortlist.route_text(TURNS[0][0])
    assert turn.abstained and turn.shown_names == ["haiku-responder"]
    assert [t["name"] for t in shortlist.filter(tools_of(skill_names(router)), turn)] == ["haiku-responder", OWN_TOOL]
    assert turn.context == catalogue(router, ["haiku-responder"])


def test_mapped_tools_and_ids_count_as_skills(router) -> None:
    shortlist = Shortlist(router, tools={"forecast_tool": "weather-forecast"})
    assert shortlist.skill_of("forecast_tool") == "weather-forecast"
    assert shortlist.skill_of("weather-forecast") == "weather-forecast"
    assert shortlist.skill_of(OWN_TOOL) is None
    turn = shortlist.route_text("commit message for this diff")
    assert "weather-forecast" not in turn.shown_names
    assert not shortlist.keeps("forecast_tool", turn) and shortlist.keeps(OWN_TOOL, turn)


def test_one_routing_per_conversation(router) -> None:
    shortlist = Shortlist(router)
    calls = []
    real = router.route
    router.route = lambda *a, **k: calls.append(a) or real(*a, **k)  # type: ignore[method-assign]
    first = shortlist.route_text(TURNS[0][0])
    assert shortlist.route_text(TURNS[0][0]) is first
    shortlist.route_text(TURNS[1][0])
    assert len(calls) == 2


def test_bad_options_are_named(router) -> None:
    with pytest.raises(ConfigError, match="k must be a whole number >= 1, got 0"):
        Shortlist(router, k=0)
    with pytest.raises(ConfigError, match=r"pin=\['pdf'\]"):
        Shortlist(router, pin="pdf")
    with pytest.raises(ConfigError, match="pinned skill 'no-such-skill' is not in the library"):
        Shortlist(router, pin=["no-such-skill"])
    with pytest.raises(ConfigError, match="takes a router.Router or the URL of 'skill-router serve', got int"):
        Shortlist(3)
    with pytest.raises(ConfigError, match="must start with http:// or https://"):
        Shortlist("127.0.0.1:8765")


def test_a_server_that_does_not_answer_is_named_with_the_fix() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    shortlist = Shortlist(f"http://127.0.0.1:{port}", timeout=2)
    with pytest.raises(RouterServerError, match=f"no skill-router server answers at http://127.0.0.1:{port} .*start "
                                                "'skill-router serve' or pass a router.Router"):
        shortlist.route_text(TURNS[0][0])


@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
def test_a_missing_framework_names_its_extra(adapter: str, tmp_path: Path) -> None:
    blocked, extra = ADAPTERS[adapter]
    code = (f"import sys\nsys.modules[{blocked!r}] = None\n"
            f"try:\n    import router.adapters.{adapter}\n"
            "except ImportError as exc:\n    print(type(exc).__name__, exc)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"MissingExtraError router.adapters.{adapter} needs the '{extra}' extra (")
    assert done.stdout.rstrip().endswith(f"pip install 'skill-router[{extra}]'")
