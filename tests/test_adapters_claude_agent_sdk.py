"""The Claude Agent SDK hook in a real ``ClaudeSDKClient`` session whose other end is a fake transport playing the
Claude Code CLI's side of the control protocol: the SDK sends the hook each prompt, the hook answers exactly the
Claude Code shortlist lines for it (the session's earlier prompts as context), and ``options_for`` lists only the
routed skills in the ``initialize`` request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("claude_agent_sdk")

import anyio  # noqa: E402
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient  # noqa: E402
from claude_agent_sdk._internal.transport import Transport  # noqa: E402

from adapter_support import TURNS, HashEncoder, bundled_router  # noqa: E402
from router.adapters.claude_agent_sdk import SkillRouterHook  # noqa: E402

HEADER = "Skills most relevant to this request (skill-router):"
# Best first, as the real model ranks them with k=2.
#: The order the router gives (with the bodies' heads embedded, current-weather's "the weather ... in a city" head
#: lifts it above weather-forecast for "what will the weather be like tomorrow in Lyon?": a known miss).
BEST_FIRST = (("current-weather", "weather-forecast"), ("git-commit-messages", "changelog-writing"))


class FakeCLI(Transport):
    """The CLI side: answers ``initialize``, turns each user message into a ``hook_callback`` for every
    UserPromptSubmit callback the SDK registered, records the SDK's replies, then ends the turn."""

    def __init__(self) -> None:
        self.send, self.receive = anyio.create_memory_object_stream[dict[str, Any]](100)
        self.initialize: dict[str, Any] = {}
        self.prompts: list[str] = []
        self.replies: list[dict[str, Any]] = []
        self._callbacks: list[str] = []
        self._waiting = 0

    async def connect(self) -> None:
        pass

    def is_ready(self) -> bool:
        return True

    async def end_input(self) -> None:
        pass

    async def close(self) -> None:
        self.send.close()

    async def write(self, data: str) -> None:
        message = json.loads(data)
        if message.get("type") == "control_request" and message["request"]["subtype"] == "initialize":
            self.initialize = message["request"]
            self._callbacks = [i for m in (message["request"].get("hooks") or {}).get("UserPromptSubmit", [])
                               for i in m["hookCallbackIds"]]
            await self.send.send({"type": "control_response", "response": {
                "subtype": "success", "request_id": message["request_id"], "response": {"commands": []}}})
        elif message.get("type") == "user":
            prompt = message["message"]["content"]
            self.prompts.append(prompt)
            self._waiting = len(self._callbacks)
            for n, callback in enumerate(self._callbacks):
                await self.send.send({"type": "control_request", "request_id": f"cli-{len(self.prompts)}-{n}",
                                      "request": {"subtype": "hook_callback", "callback_id": callback,
                                                  "tool_use_id": None,
                                                  "input": {"hook_event_name": "UserPromptSubmit", "prompt": prompt,
                                                            "session_id": "session-1", "cwd": "/tmp",
                                                            "transcript_path": "/dev/null"}}})
            if not self._callbacks:
                await self._end_turn()
        elif message.get("type") == "control_response":
            self.replies.append(message["response"]["response"])
            self._waiting -= 1
            if self._waiting == 0:
                await self._end_turn()

    async def _end_turn(self) -> None:
        await self.send.send({"type": "result", "subtype": "success", "duration_ms": 1, "duration_api_ms": 0,
                              "is_error": False, "num_turns": 1, "session_id": "session-1", "result": "ok"})

    async def read_messages(self) -> Any:
        async with self.receive:
            async for message in self.receive:
                yield message


def converse(options: Any, prompts: list[str]) -> FakeCLI:
    cli = FakeCLI()

    async def session() -> None:
        async with ClaudeSDKClient(options, transport=cli) as client:
            for prompt in prompts:
                await client.query(prompt)
                async for _ in client.receive_response():
                    pass

    anyio.run(session)
    return cli


def shortlist(router: Any, names: tuple[str, ...]) -> dict[str, Any]:
    lines = [f"- {n}: {router.registry.get(n).description[:250]}" for n in names]
    return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                   "additionalContext": "\n".join([HEADER, *lines])}}


def test_each_prompt_gets_the_shortlist_of_the_skills_it_routes_to(tmp_path: Path, encoder: Any) -> None:
    router = bundled_router(tmp_path / "idx", encoder, profile="claude-code")
    hook = SkillRouterHook(router)
    cli = converse(hook.options(system_prompt="You are helpful."), [text for text, _ in TURNS])
    assert cli.prompts == [text for text, _ in TURNS]
    assert cli.replies == [shortlist(router, names) for names in BEST_FIRST]
    # the session's first prompt was context for the second
    both = [{"role": "user", "content": text} for text, _ in TURNS]
    assert hook.last_turn is not None and hook.last_turn.request == TURNS[1][0]
    assert hook.last_turn.shown == tuple(sorted(router.route(both).shown, key=lambda s: BEST_FIRST[1].index(s.name)))


def test_options_for_lists_only_the_routed_skills(tmp_path: Path, encoder: Any) -> None:
    router = bundled_router(tmp_path / "idx", encoder, profile="claude-code")
    hook = SkillRouterHook(router, pin=["haiku-responder"])
    cli = converse(hook.options_for(TURNS[0][0]), [TURNS[0][0]])
    assert cli.initialize["skills"] == [*BEST_FIRST[0], "haiku-responder"]
    assert cli.replies == [shortlist(router, (*BEST_FIRST[0], "haiku-responder"))]


def test_no_hook_no_context(tmp_path: Path) -> None:
    """The fake CLI asks only the callbacks the SDK registered: without the hook nothing answers."""
    router = bundled_router(tmp_path / "idx", HashEncoder(), profile="claude-code")
    cli = converse(ClaudeAgentOptions(), [TURNS[0][0]])
    assert cli.replies == [] and "skills" not in cli.initialize
    routed = converse(SkillRouterHook(router).options(), [TURNS[0][0]])
    assert len(routed.replies) == 1 and "skills" not in routed.initialize


def test_abstaining_and_a_small_library_add_nothing(tmp_path: Path) -> None:
    unsure = SkillRouterHook(bundled_router(tmp_path / "a", HashEncoder(), profile="claude-code", threshold=1.01))
    assert converse(unsure.options(), [TURNS[0][0]]).replies == [{}]
    whole = SkillRouterHook(bundled_router(tmp_path / "b", HashEncoder(), profile="claude-code", route_above=1000))
    options = whole.options_for(TURNS[0][0])
    assert options.skills is None  # a library listed whole is not filtered
    assert converse(options, [TURNS[0][0]]).replies == [{}]


def test_other_events_are_not_answered(tmp_path: Path) -> None:
    hook = SkillRouterHook(bundled_router(tmp_path / "idx", HashEncoder(), profile="claude-code"))
    assert hook.answer({"hook_event_name": "PreToolUse", "prompt": TURNS[0][0]}) == {}
    assert hook.answer({"hook_event_name": "UserPromptSubmit"}) == {}
