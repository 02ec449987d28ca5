"""The OpenAI Agents SDK adapter in real ``Runner.run`` calls with a fake ``agents.Model``: each model call gets
exactly the routed skill tools (plus the agent's own) and instructions ending in exactly the routed skills'
catalogue, over a conversation carried by ``to_input_list()``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import (Agent, FunctionTool, Model, ModelResponse, RunConfig, Runner, Usage,  # noqa: E402
                    function_tool)
from openai.types.responses import (ResponseFunctionToolCall, ResponseOutputMessage,  # noqa: E402
                                    ResponseOutputText)

from adapter_support import OWN_TOOL, SYSTEM, TURNS, HashEncoder, bundled_router, catalogue, skill_names  # noqa: E402
from router.adapters.openai_agents import SkillRouterAgents  # noqa: E402


def text(words: str) -> ModelResponse:
    message = ResponseOutputMessage(id="m", type="message", role="assistant", status="completed",
                                    content=[ResponseOutputText(type="output_text", text=words, annotations=[])])
    return ModelResponse(output=[message], usage=Usage(), response_id=None)


class ScriptedModel(Model):
    """Turn 1 calls the forecast skill's tool, then answers; turn 2 answers at once."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def get_response(self, system_instructions: Any, input: Any, model_settings: Any, tools: Any,
                           output_schema: Any, handoffs: Any, tracing: Any, **kwargs: Any) -> ModelResponse:
        self.calls.append({"tools": [t.name for t in tools], "instructions": system_instructions})
        if len(self.calls) == 1:
            call = ResponseFunctionToolCall(type="function_call", call_id="call-1", name="weather-forecast",
                                            arguments="{}")
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        return text("ok")

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def skill_tools(names: list[str], ran: list[str]) -> list[Any]:
    def make(name: str) -> FunctionTool:
        async def invoke(context: Any, arguments: str) -> str:
            ran.append(name)
            return f"{name} loaded"

        return FunctionTool(name=name, description=f"Use the {name} skill.", on_invoke_tool=invoke,
                            params_json_schema={"type": "object", "properties": {}, "additionalProperties": False})

    @function_tool(name_override=OWN_TOOL)
    def web_search(query: str) -> str:
        """Search the web."""
        return query

    return [make(n) for n in names] + [web_search]


def run_conversation(router: Any, ran: list[str], *, routed: bool = True) -> tuple[ScriptedModel, Any]:
    model = ScriptedModel()
    adapter = SkillRouterAgents(router)
    agent = Agent(name="assistant", instructions=SYSTEM, model=model, tools=skill_tools(skill_names(router), ran))
    if routed:
        agent = adapter.agent(agent)
    config = adapter.run_config(tracing_disabled=True) if routed else RunConfig(tracing_disabled=True)

    async def conversation() -> None:
        items: list[Any] = []
        for words, _ in TURNS:
            items = [*items, {"role": "user", "content": words}]
            result = await Runner.run(agent, items, run_config=config)
            items = result.to_input_list()

    asyncio.run(conversation())
    return model, adapter


def test_each_model_call_sees_only_the_routed_tools_and_their_catalogue(tmp_path: Path, encoder: Any) -> None:
    router = bundled_router(tmp_path / "idx", encoder)
    ran: list[str] = []
    model, adapter = run_conversation(router, ran)
    (_, first), (second_text, second) = TURNS
    one = {"tools": [*first, OWN_TOOL], "instructions": f"{SYSTEM}\n\n{catalogue(router, first)}"}
    two = {"tools": [*second, OWN_TOOL], "instructions": f"{SYSTEM}\n\n{catalogue(router, second)}"}
    assert model.calls == [one, one, two]
    assert ran == ["weather-forecast"]
    assert adapter.last_turn.request == second_text


def test_without_the_adapter_every_tool_is_sent(tmp_path: Path) -> None:
    router = bundled_router(tmp_path / "idx", HashEncoder())
    model, _ = run_conversation(router, [], routed=False)
    assert model.calls[0] == {"tools": [*skill_names(router), OWN_TOOL], "instructions": SYSTEM}


def test_a_tools_own_is_enabled_still_applies(tmp_path: Path) -> None:
    router = bundled_router(tmp_path / "idx", HashEncoder())
    shown = [s.name for s in router.route(TURNS[0][0]).shown]
    adapter = SkillRouterAgents(router)
    tools = skill_tools(skill_names(router), [])
    tools[skill_names(router).index(shown[0])].is_enabled = False
    model = ScriptedModel()
    model.calls.append({})  # answer at once
    agent = adapter.agent(Agent(name="a", model=model, tools=tools))
    asyncio.run(Runner.run(agent, TURNS[0][0], run_config=adapter.run_config(tracing_disabled=True)))
    assert model.calls[1]["tools"] == [*shown[1:], OWN_TOOL]
    assert model.calls[1]["instructions"] == catalogue(router, shown)


def test_run_config_refuses_a_second_filter(tmp_path: Path) -> None:
    adapter = SkillRouterAgents(bundled_router(tmp_path / "idx", HashEncoder()))
    with pytest.raises(TypeError, match="call input_filter"):
        adapter.run_config(call_model_input_filter=lambda data: data.model_data)
