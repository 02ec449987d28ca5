"""Request bodies of the HTTP API and their bounds. Every field is checked here, once, at the boundary.

Unknown fields are refused (a typo such as ``"qeury"`` is named in the 422 error rather than ignored), numbers are
strict (``"k": "5"`` and ``"k": true`` are refused), and text must be valid Unicode (a lone surrogate escaped in
JSON is refused before it reaches the tokenizer or the log).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

MAX_BODY_BYTES = 1 << 20
MAX_K = 50
MAX_BATCH = 64
MAX_TEXT_CHARS = 8000
# A pasted prompt can be long; a hook routes its first MAX_TEXT_CHARS characters rather than refuse it.
MAX_HOOK_PROMPT_CHARS = 200_000
MAX_MESSAGES = 200
MAX_PARTS = 64
MAX_NAMES = 50
MAX_NAME_CHARS = 256


def _unicode(text: str) -> str:
    for position, char in enumerate(text):
        if "\ud800" <= char <= "\udfff":
            raise ValueError(f"text holds a lone surrogate (\\u{ord(char):04x}) at position {position}: send valid "
                             "UTF-8")
    return text


Text = Annotated[str, Field(max_length=MAX_TEXT_CHARS), AfterValidator(_unicode)]
Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS), AfterValidator(_unicode)]
K = Annotated[int, Field(strict=True, ge=1, le=MAX_K, description=f"skills to return, 1..{MAX_K}")]


class Part(BaseModel):
    """One content part of a message (``{"type": "text", "text": ...}``; other part types are kept as sent)."""

    model_config = ConfigDict(extra="allow")
    type: Annotated[str, Field(max_length=64)]
    text: Text | None = None


class Message(BaseModel):
    """An OpenAI- or Anthropic-style chat message."""

    model_config = ConfigDict(extra="allow")
    role: Annotated[str, Field(min_length=1, max_length=64)]
    content: Text | Annotated[list[Part], Field(max_length=MAX_PARTS)] | None = None


Messages = Annotated[list[Message], Field(min_length=1, max_length=MAX_MESSAGES)]


def _conversation(messages: list[Message]) -> None:
    from router.conversation import conversation_text

    try:
        conversation_text([m.model_dump(exclude_unset=True) for m in messages])
    except ValueError as exc:
        raise ValueError(str(exc)) from None


class RouteRequest(BaseModel):
    """Route one request: a ``query`` string or a conversation (``messages``), not both."""

    model_config = ConfigDict(extra="forbid")
    query: Text | None = Field(None, description="the request to route")
    messages: Messages | None = Field(None, description="a conversation: the last user turn is routed, earlier "
                                                        "user turns are weighted context")
    k: K | None = None
    pin: Annotated[list[Name], Field(max_length=MAX_NAMES)] = Field(default_factory=list,
                                                                    description="skills always shown")
    exclude: Annotated[list[Name], Field(max_length=MAX_NAMES)] = Field(default_factory=list,
                                                                        description="skills never shown")
    abstain: bool = Field(False, description="show nothing when the request fits no skill (as the hook does)")

    @model_validator(mode="after")
    def _one_request(self) -> "RouteRequest":
        if (self.query is None) == (self.messages is None):
            raise ValueError("give exactly one of 'query' (a string) or 'messages' (a conversation)")
        if self.query is not None and not self.query.strip():
            raise ValueError("'query' is empty: give the text to route")
        if self.messages is not None:
            _conversation(self.messages)
        return self

    def request(self) -> Any:
        if self.query is not None:
            return self.query
        return [m.model_dump(exclude_unset=True) for m in self.messages or ()]

    def text(self) -> str:
        """The text that is routed: the query, or the conversation's last user turn."""
        if self.query is not None:
            return self.query
        from router.conversation import conversation_text

        return conversation_text(self.request()).request


class BatchRequest(BaseModel):
    """Route several requests in one call (for offline callers)."""

    model_config = ConfigDict(extra="forbid")
    requests: Annotated[list[RouteRequest], Field(min_length=1, max_length=MAX_BATCH)]


class InjectRequest(BaseModel):
    """Messages in, the same messages with the routed catalogue injected out (idempotent)."""

    model_config = ConfigDict(extra="forbid")
    messages: Messages
    k: K | None = None
    pin: Annotated[list[Name], Field(max_length=MAX_NAMES)] = Field(default_factory=list)
    exclude: Annotated[list[Name], Field(max_length=MAX_NAMES)] = Field(default_factory=list)

    @model_validator(mode="after")
    def _has_user_turn(self) -> "InjectRequest":
        _conversation(self.messages)
        return self


class ToolRequest(BaseModel):
    """A skill-tool call: ``name`` (like ``skill-router use NAME``) or the raw ``arguments`` the model sent."""

    model_config = ConfigDict(extra="forbid")
    name: Name | None = None
    arguments: dict[str, Any] | Text | None = None
    call_name: Annotated[str, Field(max_length=MAX_NAME_CHARS)] | None = None
    route_id: Annotated[str, Field(max_length=64)] | None = Field(
        None, description="the request_id of the routing this load follows (for the decision log)")
    session: Annotated[str, Field(max_length=256)] | None = None

    @model_validator(mode="after")
    def _one_call(self) -> "ToolRequest":
        if (self.name is None) == (self.arguments is None):
            raise ValueError("give exactly one of 'name' (a skill name) or 'arguments' (the tool-call arguments)")
        return self


class HookInput(BaseModel):
    """The ``UserPromptSubmit`` JSON both harnesses send (fields beyond these are accepted and ignored)."""

    model_config = ConfigDict(extra="allow")
    prompt: Annotated[str, Field(max_length=MAX_HOOK_PROMPT_CHARS), AfterValidator(_unicode)]
    hook_event_name: Annotated[str, Field(max_length=64)] | None = None
    session_id: Annotated[str, Field(max_length=256)] | None = None
    cwd: Annotated[str, Field(max_length=4096)] | None = None
