"""The Pydantic AI capability in real agent runs with Pydantic AI's own ``FunctionModel``: each request shows the
model exactly the routed function tools (plus the agent's own) and instructions ending in exactly the routed
skills' catalogue, over a conversation carried by ``message_history``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai.capabilities")

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402
from pydantic_ai.tools import Tool  # noqa: E402

from adapter_support import OWN_TOOL, SYSTEM, TURNS, HashEncoder, bundled_router, catalogue, skill_names  # noqa: E402
from router.adapters.pydantic_ai import SkillRouterCapability  # noqa: E402


def skill_tools(names: list[str], ran: list[str]) -> list[Tool[Any]]:
    def make(name: str) -> Tool[Any]:
        def run(note: str = "") -> str:
            ran.append(name)
            return f"{name} loaded"

        return Tool(run, name=name, description=f"Use the {name} skill.")

    def web_search(query: str) -> str:
        """Search the web."""
        return query

    return [make(n) for n in names] + [Tool(web_search, name=OWN_TOOL)]


def scripted(calls: list[dict[str, Any]]) -> FunctionModel:
    """Turn 1 calls the forecast skill's tool, then answers; turn 2 answers at once."""

    def respond(messages: list[Any], info: AgentInfo) -> ModelResponse:
        calls.append({"tools": [t.name for t in info.function_tools], "instructions": info.instructions})
        returned = [p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)]
        if len(calls) == 1:
            return ModelResponse(parts=[ToolCallPart("weather-forecast", {}, tool_call_id="call-1")])
        return ModelResponse(parts=[TextPart(f"done after {len(returned)} tool result(s)")])

    return FunctionModel(respond)


def run_conversation(router: Any, ran: list[str], capabilities: bool = True) -> tuple[list[dict[str, Any]], Any]:
    calls: list[dict[str, Any]] = []
    capability = SkillRouterCapability(router)
    agent = Agent(scripted(calls), instructions=SYSTEM, tools=skill_tools(skill_names(router), ran),
                  capabilities=[capability] if capabilities else [])
    history = None
    for text, _ in TURNS:
        result = asyncio.run(agent.run(text, message_history=history))  # run_sync leaves its event loop open
        history = result.all_messages()
    return calls, capability


def test_each_request_sees_only_the_routed_tools_and_their_catalogue(tmp_path: Path, encoder: Any) -> None:
    router = bundled_router(tmp_path / "idx", encoder)
    ran: list[str] = []
    calls, capability = run_conversation(router, ran)
    (_, first), (second_text, second) = TURNS
    one = {"tools": [*first, OWN_TOOL], "instructions": f"{SYSTEM}\n\n{catalogue(router, first)}"}
    two = {"tools": [*second, OWN_TOOL], "instructions": f"{SYSTEM}\n\n{catalogue(router, second)}"}
    assert calls == [one, one, two]
    assert ran == ["weather-forecast"]
    assert capability.last_turn.request == second_text  # the history's first prompt is context, not the request


def test_without_the_capability_every_tool_is_shown(tmp_path: Path) -> None:
    router = bundled_router(tmp_path / "idx", HashEncoder())
    calls, _ = run_conversation(router, [], capabilities=False)
    assert calls[0] == {"tools": [*skill_names(router), OWN_TOOL], "instructions": SYSTEM}


def test_a_tool_the_routing_hides_cannot_be_called(tmp_path: Path) -> None:
    router = bundled_router(tmp_path / "idx", HashEncoder())
    hidden = next(n for n in skill_names(router) if n not in {s.name for s in router.route(TURNS[0][0]).shown})
    ran: list[str] = []
    calls: list[list[str]] = []

    def respond(messages: list[Any], info: AgentInfo) -> ModelResponse:
        calls.append([t.name for t in info.function_tools])
        if len(calls) == 1:
            return ModelResponse(parts=[ToolCallPart(hidden, {}, tool_call_id="call-1")])
        return ModelResponse(parts=[TextPart("ok")])

    agent = Agent(FunctionModel(respond), tools=skill_tools(skill_names(router), ran),
                  capabilities=[SkillRouterCapability(router)])
    asyncio.run(agent.run(TURNS[0][0]))
    assert ran == [] and hidden not in calls[0]
