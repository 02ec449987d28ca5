"""Pydantic AI agents: one capability that routes each step (``pip install 'skill-router[pydantic-ai]'``).

::

    from pydantic_ai import Agent
    from router import Router
    from router.adapters.pydantic_ai import SkillRouterCapability

    agent = Agent(model, tools=skill_tools + my_tools,
                  capabilities=[SkillRouterCapability(Router.from_skills("skills"))])

On every step the capability routes the run's user prompts (the history's and this run's, by the router's
conversation rule; :mod:`router.adapters.base`), keeps only the routed function tools (``prepare_tools``, which
also blocks calls to the others) and adds the shown skills' catalogue to the instructions (``get_instructions``
returns a callable, evaluated per request).
"""

from __future__ import annotations

from router.adapters.base import Adapter, Turn, require

require(__name__, ["pydantic_ai.capabilities"], "pydantic-ai")

import asyncio  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import Any  # noqa: E402

from pydantic_ai import RunContext  # noqa: E402
from pydantic_ai.capabilities import AbstractCapability  # noqa: E402
from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart  # noqa: E402
from pydantic_ai.tools import ToolDefinition  # noqa: E402

__all__ = ["SkillRouterCapability", "conversation"]


def _content(content: Any) -> Any:
    if isinstance(content, str):
        return content
    return [{"type": "text", "text": part} for part in content if isinstance(part, str)]


def conversation(messages: Sequence[ModelMessage], prompt: Any = None) -> list[dict[str, Any]]:
    """The user prompts of a Pydantic AI history (and ``prompt``, when the history does not hold it yet) as
    ``{"role", "content"}`` dicts."""
    out = [{"role": "user", "content": _content(part.content)} for message in messages
           if isinstance(message, ModelRequest) for part in message.parts if isinstance(part, UserPromptPart)]
    if prompt is not None:
        current = {"role": "user", "content": _content(prompt)}
        if not out or out[-1] != current:
            out.append(current)
    return out


class SkillRouterCapability(Adapter, AbstractCapability[Any]):
    """Routes each step of a Pydantic AI agent (see the module docstring).

    ``router`` is a :class:`router.Router` or the URL of ``skill-router serve``; ``k``, ``pin``, ``tools``,
    ``token`` and ``timeout`` are :class:`router.adapters.base.Shortlist`'s.
    """

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds a router: not written to an agent spec

    def turn(self, ctx: RunContext[Any]) -> Turn:
        """The routing of this step's conversation."""
        turn = self.route_turn(conversation(ctx.messages, ctx.prompt))
        return turn

    async def prepare_tools(self, ctx: RunContext[Any], tool_defs: list[ToolDefinition]) -> list[ToolDefinition]:
        turn = await asyncio.to_thread(self.turn, ctx)
        return self.shortlist.filter(tool_defs, turn)

    def get_instructions(self) -> Any:
        def routed_skills(ctx: RunContext[Any]) -> str:
            return self.turn(ctx).context

        return routed_skills
