"""Google ADK agents: a ``before_model_callback`` that routes each model call (``pip install
'skill-router[google-adk]'``).

::

    from google.adk.agents import LlmAgent
    from router import Router
    from router.adapters.google_adk import SkillRouterCallback

    agent = LlmAgent(name="assistant", model=model, tools=skill_tools + my_tools,
                     before_model_callback=SkillRouterCallback(Router.from_skills("skills")))

Before every model call the callback routes the request's user turns (``llm_request.contents``, by the router's
conversation rule; :mod:`router.adapters.base`), removes the skill tools whose skill is not shown from what the
model sees (``config.tools[*].function_declarations``) and from what can run (``tools_dict``), and appends the
shown skills' catalogue to the system instruction (``append_instructions``). It returns None, so the model call
goes ahead.

ADK's own skills interface is model-driven (the model writes the query of its ``search_skills`` tool);
:class:`RouterSkillRegistry` answers it with the router, for ``SkillToolset(registry=RouterSkillRegistry(router))``.
"""

from __future__ import annotations

from router.adapters.base import DEFAULT_TIMEOUT_S, Adapter, Shortlist, Turn, require

require(__name__, ["google.adk.agents", "google.genai.types"], "google-adk")

from collections.abc import Iterable, Sequence  # noqa: E402
from typing import Any  # noqa: E402

from google.adk.agents.callback_context import CallbackContext  # noqa: E402
from google.adk.models.llm_request import LlmRequest  # noqa: E402
from google.adk.skills import models as adk_skills  # noqa: E402
from google.adk.skills.skill_registry import SkillRegistry  # noqa: E402
from google.genai import types  # noqa: E402
from pydantic import ValidationError  # noqa: E402

__all__ = ["RouterSkillRegistry", "SkillRouterCallback", "conversation"]


def conversation(contents: Sequence[types.Content]) -> list[dict[str, Any]]:
    """The user turns of ADK contents as ``{"role", "content"}`` dicts (text parts only: a function response is
    sent with the user role but is not what the user asked)."""
    return [{"role": "user", "content": [{"type": "text", "text": p.text} for p in content.parts or ()
                                         if isinstance(p.text, str) and not p.thought]}
            for content in contents if content.role == "user"]


class SkillRouterCallback(Adapter):
    """A ``before_model_callback`` that routes each model call (see the module docstring).

    ``router`` is a :class:`router.Router` or the URL of ``skill-router serve``; ``k``, ``pin``, ``tools``,
    ``token`` and ``timeout`` are :class:`router.adapters.base.Shortlist`'s.
    """

    def prepare(self, llm_request: LlmRequest) -> Turn:
        """Change ``llm_request`` in place for this turn; the turn it was routed to."""
        turn = self.route_turn(conversation(llm_request.contents))
        if not turn.active:
            return turn
        keeps = self.shortlist.keeps
        for tool in (llm_request.config.tools or []) if llm_request.config else []:
            declarations = getattr(tool, "function_declarations", None)
            if declarations:
                tool.function_declarations = [d for d in declarations  # type: ignore[union-attr]
                                              if keeps(d.name or "", turn)]
        llm_request.tools_dict = {name: t for name, t in llm_request.tools_dict.items() if keeps(name, turn)}
        if turn.context:
            llm_request.append_instructions([turn.context])
        return turn

    async def __call__(self, callback_context: CallbackContext, llm_request: LlmRequest) -> None:
        import asyncio

        await asyncio.to_thread(self.prepare, llm_request)
        return None


class RouterSkillRegistry(SkillRegistry):
    """An ADK ``SkillRegistry`` backed by the router: ``search_skills`` returns the skills a query routes to (best
    first, pinned ones last), ``get_skill`` any skill of the library by name, its SKILL.md body as instructions.

    ADK accepts only kebab-case names of at most 64 characters: a routed skill with another name is left out of
    the results, and ``get_skill`` names the problem.
    """

    def __init__(self, router: Any, *, k: int | None = None, pin: Iterable[str] = (), token: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.shortlist = Shortlist(router, k=k, pin=pin, token=token, timeout=timeout)

    async def search_skills(self, *, query: str) -> list[adk_skills.Frontmatter]:
        import asyncio

        turn = await asyncio.to_thread(self.shortlist.route_text, query)
        found = []
        for skill in turn.shown:
            try:
                found.append(adk_skills.Frontmatter(name=skill.name, description=skill.description))
            except ValidationError:
                continue
        return found

    async def get_skill(self, *, name: str) -> adk_skills.Skill:
        import asyncio

        skill = await asyncio.to_thread(self.shortlist.skill, name)
        try:
            frontmatter = adk_skills.Frontmatter(name=skill.name, description=skill.description)
        except ValidationError as exc:
            problem = exc.errors()[0].get("msg", "invalid")
            raise ValueError(f"ADK cannot load skill '{skill.name}': {problem}") from None
        return adk_skills.Skill(frontmatter=frontmatter, instructions=skill.body.strip())

    def search_tool_description(self) -> str | None:
        return ("Finds the skills that fit a task: give the task in the user's words; returns the best matching "
                "skills' names and descriptions, best first.")
