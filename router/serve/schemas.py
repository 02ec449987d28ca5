"""Request bodies and answers of the HTTP API, the MCP tools' answers, and their bounds.

Requests: every field is checked here, once, at the boundary. Unknown fields are refused (a typo such as
``"qeury"`` is named in the 422 error rather than ignored), numbers are strict (``"k": "5"`` and ``"k": true`` are
refused), and text must be valid Unicode (a lone surrogate escaped in JSON is refused before it reaches the
tokenizer or the log).

Answers: one model per answer (``/openapi.json`` shows them, the MCP tools return theirs), and one error shape,
:class:`ErrorAnswer` (``{"error": {"type", "message", "details"?}}``), for every status the service sends.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, JsonValue, model_validator

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
#: A JSON object (the metadata of a skill, a message as sent).
JSONObject = dict[str, JsonValue]


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

    def request(self) -> str | list[JSONObject]:
        if self.query is not None:
            return self.query
        return [m.model_dump(exclude_unset=True) for m in self.messages or ()]

    def text(self) -> str:
        """The text that is routed: the query, or the conversation's last user turn."""
        if self.query is not None:
            return self.query
        from router.conversation import conversation_text

        return conversation_text([m.model_dump(exclude_unset=True) for m in self.messages or ()]).request


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
    arguments: dict[str, JsonValue] | Text | None = None
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


# -- answers ------------------------------------------------------------------------------------------------------


class Answer(BaseModel):
    """An answer: every field is always sent (``null`` where there is no value)."""

    model_config = ConfigDict(extra="forbid")


class MatchAnswer(Answer):
    """One ranked skill: fused score and rank, each signal's score and rank, and why it is there."""

    id: str
    name: str
    score: float
    rank: int
    scores: dict[str, float]
    ranks: dict[str, int]
    reason: str = Field(description="routed, named (the request names it) or pinned")


class RoutingAnswer(Answer):
    """``POST /v1/route``: the ranking, the skills the catalogue shows, and the catalogue as the harness renders it."""

    request_id: str
    profile: str
    matches: list[MatchAnswer]
    shown: list[str]
    abstained: bool
    no_skill: bool = Field(description="true when the request fits no skill (router.abstain); with abstain: true in "
                                       "the request nothing is shown then")
    confidence: float
    routed: bool = Field(description="false when the library is small enough to be shown whole")
    catalogue: str
    timings: dict[str, float] = Field(description="queued_ms, route_ms, render_ms, total_ms")


class BatchAnswer(Answer):
    results: list[RoutingAnswer]


class SkillRow(Answer):
    """A skill as listed: ``path`` and ``directory`` are null for a catalogue row."""

    id: str
    name: str
    description: str
    path: str | None
    directory: str | None


class SkillList(Answer):
    skills: list[SkillRow]
    total: int


class RankedSkill(SkillRow):
    score: float | None = Field(description="null when the library is small enough to be shown whole")
    rank: int | None


class RankedSkills(Answer):
    query: str
    skills: list[RankedSkill]
    total: int
    request_id: str
    took_ms: float


class SkillDetail(SkillRow):
    """``GET /v1/skills/{name}?body=true``: the skill with its example requests, body and frontmatter."""

    examples: list[str]
    body: str
    metadata: JSONObject = Field(description="the frontmatter; values JSON has no type for are sent as strings")


class ToolAnswer(Answer):
    result: str = Field(description="exactly what the profile's skill tool returns")
    skill: str | None = Field(description="the skill loaded, when the call named one")
    after: str | None = Field(description="the request_id of the routing this load followed (decision log)")


class InjectAnswer(Answer):
    messages: list[JSONObject]
    shown: list[str]
    request_id: str
    timings: dict[str, float]


class HookSpecificOutput(Answer):
    hookEventName: str
    additionalContext: str


class HookAnswer(Answer):
    """What the harness reads from a ``UserPromptSubmit`` hook: ``{}`` when there is nothing to add."""

    hookSpecificOutput: HookSpecificOutput | None = None


class ReloadAnswer(Answer):
    ok: bool
    skills: int
    embedded: int = Field(description="skill texts embedded by this reload (the others came from the index)")
    seconds: float
    errors: list[str]
    warnings: list[str]
    message: str
    generation: int | None = Field(None, description="the index generation now served, with --index-url "
                                                     "(PostgreSQL); null with the file store")


class Alive(Answer):
    status: str


class LogHealth(Answer):
    """The decision log's state: ``ok`` false while writing fails, with the reason."""

    path: str
    ok: bool
    failures: int
    error: str | None


class Ready(Answer):
    """``GET /readyz`` once the library is loaded."""

    status: str
    profile: str
    skills: int
    errors: list[str]
    warnings: list[str]
    notes: list[str]
    reloads: int
    reload_error: str | None
    last_reload: ReloadAnswer | None
    log: LogHealth | None


class Loading(Answer):
    """``GET /readyz`` while the library loads (``loading``) or after it failed to (``failed``, with the reason)."""

    status: str
    error: str | None


class ErrorDetail(Answer):
    loc: str
    message: str
    type: str


class ErrorInfo(Answer):
    type: str = Field(description="invalid_request, skill_not_found, body_too_large, not_ready, ...")
    message: str
    details: list[ErrorDetail] | ReloadAnswer | None = Field(
        None, description="422: each invalid field; reload_failed: the reload's report; otherwise absent")


class ErrorAnswer(Answer):
    """Every error the service answers, whatever its status."""

    error: ErrorInfo


# -- MCP tool answers ------------------------------------------------------------------------------------------------
class SkillHit(BaseModel):
    name: str
    description: str
    score: float | None = Field(description="fused routing score; null when the library is small enough to be "
                                            "shown whole")
    base_directory: str | None
    uri: str


class SearchResult(BaseModel):
    skills: list[SkillHit]
    total: int
    abstained: bool = Field(description="true when no skill is a confident match")
    request_id: str


class LoadedSkill(BaseModel):
    name: str
    base_directory: str | None = Field(description="relative paths in the skill resolve against this folder")
    content: str = Field(description="what the harness's skill tool returns for this skill")


class SkillFile(BaseModel):
    name: str
    path: str
    size: int
    content: str
