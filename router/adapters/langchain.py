"""LangChain v1 agents: a middleware that routes each model call's conversation (``pip install
'skill-router[langchain]'``).

::

    from langchain.agents import create_agent
    from router import Router
    from router.adapters.langchain import SkillRouterMiddleware

    router = Router.from_skills("skills")
    agent = create_agent(model, tools=skill_tools + my_tools, middleware=[SkillRouterMiddleware(router)])

Before every model call (``wrap_model_call`` / ``awrap_model_call``) the middleware routes the conversation's user
turns (:mod:`router.adapters.base`), passes on only the tools the routing keeps (``request.override(tools=)``) and
appends the shown skills' catalogue to the system message (``system_message=``). It is the offline, deterministic
counterpart of LangChain's ``LLMToolSelectorMiddleware``, which spends a model call on the same choice.
"""

from __future__ import annotations

from router.adapters.base import Adapter, require

require(__name__, ["langchain.agents.middleware", "langchain_core.messages"], "langchain")

from collections.abc import Awaitable, Callable, Sequence  # noqa: E402
from typing import Any  # noqa: E402

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse  # noqa: E402
from langchain_core.messages import BaseMessage, SystemMessage  # noqa: E402

__all__ = ["SkillRouterMiddleware", "conversation"]


def conversation(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """LangChain messages as ``{"role", "content"}`` dicts (human turns are the user's)."""
    return [{"role": "user" if m.type == "human" else m.type, "content": m.content} for m in messages]


class SkillRouterMiddleware(Adapter, AgentMiddleware):
    """Routes each model call of a LangChain agent (see the module docstring).

    ``router`` is a :class:`router.Router` or the URL of ``skill-router serve``; ``k``, ``pin``, ``tools``,
    ``token`` and ``timeout`` are :class:`router.adapters.base.Shortlist`'s.
    """

    @property
    def name(self) -> str:
        return "SkillRouterMiddleware"

    def prepare(self, request: ModelRequest) -> ModelRequest:
        """The request the model gets: routed tools, the shown skills' catalogue in the system message."""
        turn = self.route_turn(conversation(request.messages))
        if not turn.active:
            return request
        changes: dict[str, Any] = {"tools": self.shortlist.filter(request.tools, turn)}
        if turn.context:
            changes["system_message"] = _with_context(request.system_message, turn.context)
        return request.override(**changes)

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        return handler(self.prepare(request))

    async def awrap_model_call(self, request: ModelRequest,
                               handler: Callable[[ModelRequest], Awaitable[ModelResponse]]) -> Any:
        import asyncio

        prepared = await asyncio.to_thread(self.prepare, request)  # routing is CPU work (or an HTTP call)
        return await handler(prepared)


def _with_context(system: SystemMessage | None, context: str) -> SystemMessage:
    if system is None:
        return SystemMessage(content=context)
    if isinstance(system.content, str):
        text = f"{system.content}\n\n{context}" if system.content else context
        return SystemMessage(content=text)
    return SystemMessage(content=[*system.content, {"type": "text", "text": context}])
