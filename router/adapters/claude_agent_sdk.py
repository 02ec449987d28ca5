"""Claude Agent SDK: a ``UserPromptSubmit`` hook in the SDK's own process, and the routed ``skills`` option
(``pip install 'skill-router[claude-agent-sdk]'``).

::

    from claude_agent_sdk import ClaudeSDKClient
    from router import Router
    from router.adapters.claude_agent_sdk import SkillRouterHook

    hook = SkillRouterHook(Router.from_skills(".claude/skills", profile="claude-code"))
    async with ClaudeSDKClient(hook.options(system_prompt="...")) as client:
        await client.query("fill this PDF form")

The SDK fixes ``ClaudeAgentOptions.skills`` per session, so the per-turn part is the hook: each prompt is routed
(with the session's earlier prompts as context, by the router's conversation rule; :mod:`router.adapters.base`)
and the hook answers ``additionalContext`` naming the skills that fit, in the Claude Code hook's own lines
(:func:`router.serve.hooks.hook_context`: at most 5, best first; nothing when the router abstains or the library
is listed whole). For a one-prompt session, :meth:`SkillRouterHook.options_for` also sets ``skills=`` to the
routed names (pinned ones included), so the session lists only those.
"""

from __future__ import annotations

from router.adapters.base import DEFAULT_TIMEOUT_S, Adapter, Turn, require

require(__name__, ["claude_agent_sdk"], "claude-agent-sdk")

import asyncio  # noqa: E402
import threading  # noqa: E402
from collections import OrderedDict  # noqa: E402
from collections.abc import Iterable, Mapping  # noqa: E402
from typing import Any  # noqa: E402

from claude_agent_sdk import ClaudeAgentOptions, HookMatcher  # noqa: E402

from router.serve import hooks as prompt_hooks  # noqa: E402

__all__ = ["SkillRouterHook"]

EVENT = "UserPromptSubmit"
#: Prompts of a session kept as context, and sessions remembered.
MAX_PROMPTS = 20
MAX_SESSIONS = 256


class SkillRouterHook(Adapter):
    """The ``UserPromptSubmit`` hook callback and the options that install it (see the module docstring).

    ``router`` is a :class:`router.Router` or the URL of ``skill-router serve``; ``k`` and ``pin`` (skill names
    always named and listed), ``token`` and ``timeout`` are :class:`router.adapters.base.Shortlist`'s.
    """

    def __init__(self, router: Any, *, k: int | None = None, pin: Iterable[str] = (), token: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT_S) -> None:
        super().__init__(router, k=k, pin=pin, token=token, timeout=timeout)
        self._sessions: OrderedDict[str, list[str]] = OrderedDict()
        self._lock = threading.Lock()

    def turn(self, prompt: str, session: str | None = None) -> Turn:
        """The routing of ``prompt`` after the session's earlier prompts."""
        with self._lock:
            earlier = list(self._sessions.get(session, ())) if session is not None else []
            if session is not None:
                self._sessions[session] = [*earlier, prompt][-MAX_PROMPTS:]
                self._sessions.move_to_end(session)
                while len(self._sessions) > MAX_SESSIONS:
                    self._sessions.popitem(last=False)
        return self.route_turn([{"role": "user", "content": p} for p in [*earlier, prompt]])

    def context(self, turn: Turn) -> str:
        """The ``additionalContext`` for a turn: the Claude Code hook's lines, '' when there is nothing to add."""
        if not turn.active or turn.abstained or not turn.routed or not turn.shown:
            return ""
        return prompt_hooks.hook_context("claude-code", turn.shown)

    def answer(self, input_data: Mapping[str, Any]) -> dict[str, Any]:
        """The hook's JSON answer for one ``UserPromptSubmit`` input ({} for another event or nothing to add)."""
        if input_data.get("hook_event_name", EVENT) != EVENT or not isinstance(input_data.get("prompt"), str):
            return {}
        session = input_data.get("session_id")
        turn = self.turn(input_data["prompt"], session if isinstance(session, str) else None)
        return prompt_hooks.hook_output(self.context(turn))

    async def __call__(self, input_data: Mapping[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.answer, input_data)

    # -- options --------------------------------------------------------------------------------------------------
    def options(self, **options: Any) -> ClaudeAgentOptions:
        """``ClaudeAgentOptions(**options)`` with this hook added to the ``UserPromptSubmit`` hooks."""
        given = dict(options.pop("hooks", None) or {})
        given[EVENT] = [*given.get(EVENT, []), HookMatcher(hooks=[self])]  # type: ignore[list-item]
        return ClaudeAgentOptions(hooks=given, **options)

    def options_for(self, prompt: str, **options: Any) -> ClaudeAgentOptions:
        """:meth:`options` for a session that starts with ``prompt``, listing only the skills it routes to
        (``skills=``, the SDK's per-session filter; a library small enough to be listed whole is not filtered)."""
        if "skills" in options:
            raise TypeError("options_for() sets skills= itself from the routing; use options() to set your own")
        turn = self.shortlist.route_text(prompt)
        if turn.active and turn.routed:
            options["skills"] = turn.shown_names
        return self.options(**options)
