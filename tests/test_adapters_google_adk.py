"""The Google ADK callback in real ``InMemoryRunner`` sessions with a ``BaseLlm`` subclass as the model: each
model call declares exactly the routed skill tools (plus the agent's own), can run only those, and its system
instruction ends with exactly the routed skills' catalogue, over a session whose routed set changes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, AsyncGenerator

import pytest

pytest.importorskip("google.adk.agents")

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.adk.tools import FunctionTool  # noqa: E402
from google.genai import types  # noqa: E402

from adapter_support import OWN_TOOL, SYSTEM, TURNS, HashEncoder, bundled_router, catalogue, skill_names  # noqa: E402
from router.adapters.google_adk import SkillRouterCallback  # noqa: E402

CALLS: list[dict[str, Any]] = []


def python_name(skill: str) -> str:
    return skill.replace("-", "_")


class ScriptedLlm(BaseLlm):
    """Turn 1 calls the forecast skill's tool, then answers; turn 2 answers at once."""

    async def generate_content_async(self, llm_request: Any, stream: bool = False) -> AsyncGenerator[LlmResponse]:
        CALLS.append({"tools": [d.name for t in llm_request.config.tools or [] for d in t.function_declarations or []],
                      "runnable": sorted(llm_request.tools_dict),
                      "instruction": str(llm_request.config.system_instruction)})
        if len(CALLS) == 1:
            part = types.Part(function_call=types.FunctionCall(name="weather_forecast", args={}))
        else:
            part = types.Part(text="ok")
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


def skill_tools(names: list[str], ran: list[str]) -> list[Any]:
    def make(name: str) -> FunctionTool:
        def run() -> str:
            ran.append(name)
            return f"{name} loaded"

        run.__name__ = python_name(name)
        run.__doc__ = f"Use the {name} skill."
        return FunctionTool(run)

    def web_search(query: str) -> str:
        """Search the web."""
        return query

    return [make(n) for n in names] + [web_search]


def run_session(router: Any, ran: list[str], *, routed: bool = True) -> SkillRouterCallback:
    CALLS.clear()
    callback = SkillRouterCallback(router, tools={python_name(n): n for n in skill_names(router)})
    agent = LlmAgent(name="assistant", model=ScriptedLlm(model="scripted"), instruction=SYSTEM,
                     tools=skill_tools(skill_names(router), ran), before_model_callback=callback if routed else None)

    async def session() -> None:
        runner = InMemoryRunner(agent=agent, app_name="adapters")
        state = await runner.session_service.create_session(app_name="adapters", user_id="u")
        for words, _ in TURNS:
            message = types.Content(role="user", parts=[types.Part(text=words)])
            async for _ in runner.run_async(user_id="u", session_id=state.id, new_message=message):
                pass

    asyncio.run(session())
    return callback


def test_each_model_call_sees_only_the_routed_tools_and_their_catalogue(tmp_path: Path, encoder: Any) -> None:
    router = bundled_router(tmp_path / "idx", encoder)
    ran: list[str] = []
    callback = run_session(router, ran)
    (_, first), (second_text, second) = TURNS
    assert [c["tools"] for c in CALLS] == [[*map(python_name, first), OWN_TOOL]] * 2 + [
        [*map(python_name, second), OWN_TOOL]]
    assert [c["runnable"] for c in CALLS] == [c["tools"] for c in CALLS]
    for call, names in zip(CALLS, (first, first, second)):
        # ADK puts its own identity line after the agent's instruction; the catalogue comes last, once
        assert call["instruction"].startswith(SYSTEM + "\n\n")
        assert call["instruction"].endswith("\n\n" + catalogue(router, names))
        assert call["instruction"].count("<available_skills>") == 1
    assert ran == ["weather-forecast"]
    assert callback.last_turn is not None and callback.last_turn.request == second_text


def test_without_the_callback_every_tool_is_declared(tmp_path: Path) -> None:
    router = bundled_router(tmp_path / "idx", HashEncoder())
    run_session(router, [], routed=False)
    assert CALLS[0]["tools"] == [*map(python_name, skill_names(router)), OWN_TOOL]
    assert "<available_skills>" not in CALLS[0]["instruction"]


def test_a_skill_toolset_searches_and_loads_through_the_router(tmp_path: Path, encoder: Any) -> None:
    """ADK's model-driven route: the model calls search_skills with its own query, then load_skill."""
    from google.adk.tools.skill_toolset import SkillToolset

    from router.adapters.google_adk import RouterSkillRegistry

    router = bundled_router(tmp_path / "idx", encoder)
    seen: list[Any] = []

    class SkillSeeker(BaseLlm):
        async def generate_content_async(self, llm_request: Any, stream: bool = False) -> AsyncGenerator[LlmResponse]:
            last = llm_request.contents[-1].parts[0]
            if last.function_response is not None:
                seen.append(last.function_response.response)
            step = len(seen)
            if step == 0:
                part = types.Part(function_call=types.FunctionCall(name="search_skills", args={"query": TURNS[0][0]}))
            elif step == 1:
                part = types.Part(function_call=types.FunctionCall(name="load_skill",
                                                                   args={"skill_name": "weather-forecast"}))
            else:
                part = types.Part(text="ok")
            yield LlmResponse(content=types.Content(role="model", parts=[part]))

    agent = LlmAgent(name="assistant", model=SkillSeeker(model="seeker"),
                     tools=[SkillToolset(registry=RouterSkillRegistry(router))])

    async def session() -> None:
        runner = InMemoryRunner(agent=agent, app_name="adapters")
        state = await runner.session_service.create_session(app_name="adapters", user_id="u")
        message = types.Content(role="user", parts=[types.Part(text=TURNS[0][0])])
        async for _ in runner.run_async(user_id="u", session_id=state.id, new_message=message):
            pass

    asyncio.run(session())
    forecast, current = router.registry.get("weather-forecast"), router.registry.get("current-weather")
    found = seen[0]["result"] if isinstance(seen[0], dict) and "result" in seen[0] else seen[0]
    # the router's order (current-weather first for this request: tests/test_adapters_claude_agent_sdk.BEST_FIRST)
    assert [(r["name"], r["description"]) for r in found] == [(current.name, current.description),
                                                             (forecast.name, forecast.description)]
    assert seen[1]["skill_name"] == "weather-forecast"
    assert seen[1]["instructions"] == forecast.body.strip() != ""


def test_the_registry_names_a_skill_it_does_not_have(tmp_path: Path) -> None:
    from router.adapters.google_adk import RouterSkillRegistry
    from router.errors import SkillNotFoundError

    registry = RouterSkillRegistry(bundled_router(tmp_path / "idx", HashEncoder()))
    with pytest.raises(SkillNotFoundError, match="no skill 'no-such-skill' in the library"):
        asyncio.run(registry.get_skill(name="no-such-skill"))
