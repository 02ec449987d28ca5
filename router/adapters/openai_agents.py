"""OpenAI Agents SDK: tool gating and routed instructions per model call (``pip install
'skill-router[openai-agents]'``).

::

    from agents import Agent, Runner
    from router import Router
    from router.adapters.openai_agents import SkillRouterAgents

    routed = SkillRouterAgents(Router.from_skills("skills"))
    agent = routed.agent(Agent(name="assistant", instructions="...", tools=skill_tools + my_tools))
    result = await Runner.run(agent, "fill this PDF form", run_config=routed.run_config())

The SDK has two per-turn hooks and the adapter uses both (:mod:`router.adapters.base` for the rules):

- every skill tool gets an ``is_enabled`` callable that routes the run's input (``run_context.turn_input``) and
  enables the tool only when its skill is shown (a tool's own ``is_enabled`` still applies; other tools are left
  as they are);
- ``RunConfig(call_model_input_filter=...)`` appends the shown skills' catalogue to the instructions.
"""

from __future__ import annotations

from router.adapters.base import Adapter, Turn, require

require(__name__, ["agents"], "openai-agents")

import dataclasses  # noqa: E402
import inspect  # noqa: E402
from collections.abc import Mapping, Sequence  # noqa: E402
from typing import Any  # noqa: E402

from agents import Agent, FunctionTool, RunConfig, RunContextWrapper  # noqa: E402
from agents.run_config import CallModelData, ModelInputData  # noqa: E402

__all__ = ["SkillRouterAgents", "conversation"]

_TEXT_PARTS = ("text", "input_text")


def _content(content: Any) -> Any:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return [{"type": "text", "text": p["text"]} for p in content
                if isinstance(p, Mapping) and p.get("type") in _TEXT_PARTS and isinstance(p.get("text"), str)]
    return ""


def conversation(items: Sequence[Any]) -> list[dict[str, Any]]:
    """The user messages of Responses-API input items as ``{"role", "content"}`` dicts."""
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    out = []
    for item in items:
        item = item if isinstance(item, Mapping) else getattr(item, "model_dump", lambda: {})()
        if item.get("role") == "user" and item.get("type", "message") == "message":
            out.append({"role": "user", "content": _content(item.get("content"))})
    return out


class SkillRouterAgents(Adapter):
    """Routes each turn of an Agents SDK run (see the module docstring).

    ``router`` is a :class:`router.Router` or the URL of ``skill-router serve``; ``k``, ``pin``, ``tools``,
    ``token`` and ``timeout`` are :class:`router.adapters.base.Shortlist`'s.
    """

    def turn(self, items: Sequence[Any]) -> Turn:
        return self.route_turn(conversation(items))

    # -- tools ----------------------------------------------------------------------------------------------------
    def tools(self, tools: Sequence[Any]) -> list[Any]:
        """``tools`` with every skill tool enabled only on the turns that show its skill (copies; the others are
        returned as they are)."""
        out = []
        for tool in tools:
            if isinstance(tool, FunctionTool) and self.shortlist.skill_of(tool.name) is not None:
                tool = dataclasses.replace(tool, is_enabled=self._gate(tool.name, tool.is_enabled))
            out.append(tool)
        return out

    def agent(self, agent: Agent[Any]) -> Agent[Any]:
        """A copy of ``agent`` whose skill tools are gated (:meth:`tools`)."""
        return agent.clone(tools=self.tools(agent.tools))

    def _gate(self, name: str, own: Any) -> Any:
        async def is_enabled(run_context: RunContextWrapper[Any], agent: Any) -> bool:
            if own is False:
                return False
            if callable(own):
                allowed = own(run_context, agent)
                if inspect.isawaitable(allowed):
                    allowed = await allowed
                if not allowed:
                    return False
            import asyncio

            turn = await asyncio.to_thread(self.turn, run_context.turn_input)
            return self.shortlist.keeps(name, turn)

        return is_enabled

    # -- instructions ---------------------------------------------------------------------------------------------
    def input_filter(self, data: CallModelData[Any]) -> ModelInputData:
        """The ``call_model_input_filter``: the model's input unchanged, the instructions with the shown skills'
        catalogue appended."""
        turn = self.turn(data.model_data.input)
        return ModelInputData(input=data.model_data.input,
                              instructions=self.shortlist.instructions(data.model_data.instructions, turn))

    def run_config(self, **options: Any) -> RunConfig:
        """``RunConfig(**options)`` with :meth:`input_filter` as its ``call_model_input_filter``."""
        if "call_model_input_filter" in options:
            raise TypeError("run_config() sets call_model_input_filter itself: call input_filter(data) from yours")
        return RunConfig(call_model_input_filter=self.input_filter, **options)
