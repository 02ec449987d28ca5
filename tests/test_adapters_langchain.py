"""The LangChain middleware in a real ``create_agent`` loop with LangChain's own fake chat model: each turn the
model is bound exactly the routed skill tools (plus the agent's own tool) and its system message ends with exactly
the routed skills' catalogue; the same over a running ``skill-router serve``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain.agents")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from langchain_core.tools import StructuredTool  # noqa: E402

from adapter_support import (BUNDLED, OWN_TOOL, SYSTEM, TURNS, HashEncoder, bundled_router,  # noqa: E402
                             catalogue, skill_names)
from router.adapters.base import RouterServerError, Shortlist  # noqa: E402
from router.adapters.langchain import SkillRouterMiddleware  # noqa: E402
from router.errors import SkillNotFoundError  # noqa: E402
from serve_support import running  # noqa: E402


class RecordingModel(GenericFakeChatModel):
    """GenericFakeChatModel has no working bind_tools: record what each call is bound, and each call's system."""

    calls: list[dict[str, Any]] = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        self.calls.append({"tools": [t.name for t in tools]})
        return self

    def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self.calls[-1]["system"] = messages[0].content if messages[0].type == "system" else None
        self.calls[-1]["human"] = [m.content for m in messages if m.type == "human"]
        return super()._generate(messages, *args, **kwargs)


def skill_tools(names: list[str], ran: list[str]) -> list[StructuredTool]:
    def make(name: str) -> StructuredTool:
        def run(note: str = "") -> str:
            ran.append(name)
            return f"{name} loaded"

        return StructuredTool.from_function(run, name=name, description=f"Use the {name} skill.")

    def web_search(query: str) -> str:
        """Search the web."""
        return query

    return [make(n) for n in names] + [StructuredTool.from_function(web_search, name=OWN_TOOL)]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("langchain") / "idx"


def replies() -> list[AIMessage]:
    """Turn 1 calls the forecast skill's tool, then answers; turn 2 answers at once."""
    return [AIMessage(content="", tool_calls=[{"name": "weather-forecast", "args": {}, "id": "call-1"}]),
            AIMessage(content="Rain in Lyon tomorrow."), AIMessage(content="feat: add the parser")]


def run_conversation(router: Any, names: list[str], ran: list[str], *, use_async: bool = False,
                     **options: Any) -> tuple[Any, Any]:
    model = RecordingModel(messages=iter(replies()))
    model.calls = []
    middleware = SkillRouterMiddleware(router, **options)
    agent = create_agent(model, tools=skill_tools(names, ran), system_prompt=SYSTEM,
                         middleware=[middleware])
    state: dict[str, Any] = {"messages": []}
    for text, _ in TURNS:
        state = {"messages": [*state["messages"], HumanMessage(content=text)]}
        state = asyncio.run(agent.ainvoke(state)) if use_async else agent.invoke(state)
    return model, state


def expected_calls(router: Any) -> list[dict[str, Any]]:
    (first, first_skills), (second, second_skills) = TURNS
    one = {"tools": [*first_skills, OWN_TOOL], "system": f"{SYSTEM}\n\n{catalogue(router, first_skills)}"}
    two = {"tools": [*second_skills, OWN_TOOL], "system": f"{SYSTEM}\n\n{catalogue(router, second_skills)}"}
    return [{**one, "human": [first]}, {**one, "human": [first]}, {**two, "human": [first, second]}]


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_each_model_call_sees_only_the_routed_tools_and_their_catalogue(index: Path, encoder: Any,
                                                                         use_async: bool) -> None:
    router = bundled_router(index, encoder)
    assert len(router.skills) > 40  # the agent is given every skill as a tool
    ran: list[str] = []
    model, state = run_conversation(router, skill_names(router), ran, use_async=use_async)
    # two model calls in turn 1 (before and after the tool ran), one in turn 2; the routed set changes between
    assert model.calls == expected_calls(router)
    assert ran == ["weather-forecast"]
    assert state["messages"][-1].content == "feat: add the parser"


def test_the_middleware_is_what_filters(index: Path, encoder: Any) -> None:
    """Without the middleware the same agent binds every tool and the system prompt alone."""
    router = bundled_router(index, encoder)
    model = RecordingModel(messages=iter([AIMessage(content="ok")]))
    model.calls = []
    agent = create_agent(model, tools=skill_tools(skill_names(router), []), system_prompt=SYSTEM)
    agent.invoke({"messages": [HumanMessage(content=TURNS[0][0])]})
    assert model.calls == [{"tools": [*skill_names(router), OWN_TOOL], "system": SYSTEM, "human": [TURNS[0][0]]}]


def test_pinned_and_mapped_tools(tmp_path: Path) -> None:
    router = bundled_router(tmp_path / "idx", HashEncoder())
    routed = [s.name for s in router.route(TURNS[0][0]).shown]
    model = RecordingModel(messages=iter([AIMessage(content="ok")]))
    model.calls = []
    tools = skill_tools(skill_names(router), [])
    tools.append(StructuredTool.from_function(lambda: "x", name="haiku_tool", description="Write a haiku."))
    middleware = SkillRouterMiddleware(router, pin=["haiku-responder"], tools={"haiku_tool": "haiku-responder"})
    agent = create_agent(model, tools=tools, system_prompt=SYSTEM, middleware=[middleware])
    agent.invoke({"messages": [HumanMessage(content=TURNS[0][0])]})
    shown = sorted({*routed, "haiku-responder"}, key=skill_names(router).index)
    assert model.calls[0]["tools"] == [*shown, OWN_TOOL, "haiku_tool"]
    assert model.calls[0]["system"] == f"{SYSTEM}\n\n{catalogue(router, shown)}"
    assert middleware.last_turn is not None and middleware.last_turn.request == TURNS[0][0]


@pytest.mark.model
def test_a_server_url_routes_as_the_router_does(tmp_path: Path, encoder: Any) -> None:
    router = bundled_router(tmp_path / "local", encoder)
    argv = ["--skills", str(BUNDLED), "--index-dir", str(tmp_path / "idx"), "--no-log", "--no-watch"]
    with running(argv, mcp=False) as (url, _):
        model, _ = run_conversation(url, skill_names(router), [], k=2)
        remote = Shortlist(url)
        assert remote.skill("weather-forecast") == router.registry.get("weather-forecast")
        assert remote.skill("weather-forecast").body == router.registry.get("weather-forecast").body
        with pytest.raises(SkillNotFoundError, match=f"no skill 'nope' on {url}"):
            remote.skill("nope")
        with pytest.raises(RouterServerError, match="/v1/route answered 422: pinned skill 'nope' is not in the "
                                                    "library"):
            Shortlist(url, pin=["nope"]).route_text(TURNS[0][0])
    assert model.calls == expected_calls(router)
