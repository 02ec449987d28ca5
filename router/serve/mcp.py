"""The MCP server: skill search and loading for MCP clients that have no skill support of their own.

Built with the official ``mcp`` SDK 2.x (``mcp.server.MCPServer``; the 1.x ``FastMCP`` import is gone). Served at
``/mcp`` by ``skill-router serve`` (streamable HTTP, same process and router as the HTTP API) and on stdio by
``skill-router mcp``.

Tools (all read-only):
    ``search_skills(query, k)``   the skills that fit, best first: name, description, score, base directory and
                                  ``skill://`` URI
    ``load_skill(name)``          exactly what the profile's skill tool returns, plus the base directory against
                                  which the skill's relative paths resolve
    ``read_skill_file(name, path)``  a file inside that skill's folder (strict confinement: no ``..``, no symlink
                                  out of the folder)
Resources: every file of every skill folder, ``skill://<skill-path>/<file-path>`` (``resources/list`` pages
through them; ``resources/read`` reads one, confined to the skill folders). Prompt: ``use_skills_for(request)``, the
skills the router shows for a request as the profile renders them, then the request. At protocol 2026-07-28 the
MCP Skills extension (``skills/list``, ``skills/get``, ``resources/directory/read``: :mod:`router.serve.mcp_skills`).

Each tool does its work in the service's worker pool under the request deadline (``--request-timeout``): a call
past it fails with a tool error naming the deadline, and the other tools and the HTTP API keep answering.
"""

# No "from __future__ import annotations": the SDK reads the tools' annotations, which name local imports.

import re
from typing import TYPE_CHECKING, Annotated, Callable, Iterable, TypedDict, TypeVar

from pydantic import Field

from router.errors import PathEscapeError, SkillRouterError, SkillToolError
from router.serve import mcp_extension, mcp_skills
from router.serve.log import new_request_id
from router.serve.schemas import (MAX_K, MAX_NAME_CHARS, MAX_TEXT_CHARS, LoadedSkill, SearchResult, SkillFile,
                                  SkillHit)
from router.serve.payload import DeadlineExceeded
from router.serve.service import Busy, NotReady, Service

if TYPE_CHECKING:
    from mcp.server import MCPServer
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp_types import CallToolResult, GetPromptResult, InputRequiredResult, PaginatedRequestParams
    from pydantic import AnyUrl, ValidationError

    from router.routing import Router
    from router.skill import Skill

T = TypeVar("T")


class FileText(TypedDict):
    """A file of a skill, read as text."""

    size: int
    content: str

MAX_FILE_BYTES = 1 << 20
INSTRUCTIONS = (
    "Skills are folders of instructions for specific tasks. At the start of a task call search_skills with the "
    "user's request; if a result fits, call load_skill with its name and follow the instructions it returns. "
    "Relative paths in a skill resolve against its base_directory: read them with read_skill_file(name, path). "
    "Load only the skills you use."
)


PROMPT = "use_skills_for"
PROMPT_NONE = "No skill of this library fits this request: go ahead without one."


def build_mcp(service: Service) -> "MCPServer":
    """An MCPServer whose tools, resources, prompt and Skills extension answer from ``service``'s current router."""
    from mcp.server import MCPServer
    from mcp.server.caching import CacheHint
    from mcp.server.lowlevel.helper_types import ReadResourceContents
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.shared.exceptions import MCPError
    from mcp.types import ListResourcesResult, Resource, ResourceTemplate, ToolAnnotations

    from router.version import package_version

    spaces = mcp_extension.Spaces()

    async def in_pool(fn: Callable[[], T]) -> T:
        """``fn()`` in the worker pool under the deadline; any refusal is a JSON-RPC error naming it."""
        try:
            return await service.bounded(service.run(fn))
        except mcp_skills.SkillsError as exc:
            raise mcp_extension.as_mcp_error(exc) from None
        except (DeadlineExceeded, Busy, NotReady) as exc:
            raise MCPError(code=-32603, message=f"{exc}; try again shortly") from None

    class Server(MCPServer):
        async def call_tool(self, name: str, arguments: dict[str, object], context: Context | None = None
                            ) -> "CallToolResult | InputRequiredResult":
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as exc:
                if type(exc) is not ToolError:  # an unexpected crash keeps the SDK's generic text
                    raise
                raise ToolError(model_message(name, exc)) from exc.__cause__

        # resources/list pages through every skill file (the SDK's own handler has no cursor).
        async def _handle_list_resources(self, ctx: "ServerRequestContext", params: "PaginatedRequestParams | None"
                                         ) -> ListResourcesResult:
            cursor = getattr(params, "cursor", None)
            resources, next_cursor = await in_pool(lambda: mcp_extension.resources_page(spaces.of(service.router),
                                                                                     cursor))
            return ListResourcesResult(resources=[Resource.model_validate(r) for r in resources],
                                       next_cursor=next_cursor)

        async def list_resource_templates(self) -> list[ResourceTemplate]:
            return [ResourceTemplate(uri_template="skill://{+path}", name="skill-file", title="A file of a skill",
                                     description="skill://<skill-path>/SKILL.md is a skill's instructions; its "
                                                 "other files sit beside it at their paths in the skill folder")]

        async def read_resource(self, uri: "AnyUrl | str", context: Context | None = None
                                ) -> "Iterable[ReadResourceContents] | InputRequiredResult":
            data, mime = await in_pool(lambda: spaces.of(service.router).read(str(uri)))
            if b"\x00" not in data:
                try:
                    return [ReadResourceContents(content=data.decode("utf-8"), mime_type=mime)]
                except UnicodeDecodeError:
                    pass
            return [ReadResourceContents(content=data, mime_type=mime)]  # sent as a base64 blob

        async def get_prompt(self, name: str, arguments: dict[str, object] | None = None,
                             context: Context | None = None) -> "GetPromptResult | InputRequiredResult":
            if name != PROMPT:
                raise MCPError(code=-32602, message=f"there is no prompt named {name[:100]!r}: the prompt is "
                                                    f"{PROMPT}, with the argument 'request'")
            request = (arguments or {}).get("request")
            if not isinstance(request, str) or not request.strip():
                raise MCPError(code=-32602, message=f"{PROMPT} needs the argument 'request': the user's request as "
                                                    "non-empty text")
            if len(request) > MAX_TEXT_CHARS:
                raise MCPError(code=-32602, message=f"{PROMPT}'s request is {len(request)} characters long, more "
                                                    f"than {MAX_TEXT_CHARS}: send the request itself")
            return await super().get_prompt(name, arguments, context)

    hint = CacheHint(ttl_ms=mcp_skills.TTL_MS, scope=mcp_skills.CACHE_SCOPE)
    server = Server("skill-router", instructions=INSTRUCTIONS, version=package_version(),
                    extensions=[mcp_extension.skills_extension(service, spaces)],
                    cache_hints={"resources/list": hint, "resources/read": hint, "resources/templates/list": hint})
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                open_world_hint=False)

    def session_of(ctx: Context | None) -> str | None:
        try:
            return f"mcp-{id(ctx.session)}" if ctx is not None else None
        except Exception:  # outside a request (direct calls in tests)
            return None

    def current() -> "Router":
        try:
            return service.router
        except NotReady as exc:
            raise ToolError(str(exc)) from None

    async def work(fn: Callable[[], T], error: type[Exception] = ToolError) -> T:
        """``fn()`` in the worker pool, under the deadline; a deadline or a busy server is a tool error."""
        try:
            return await service.bounded(service.run(fn))
        except (DeadlineExceeded, Busy) as exc:
            raise error(str(exc)) from None

    def find(router: "Router", name: str) -> "Skill":
        skill = router.registry.lookup(name)
        if skill is None:
            import difflib

            close = difflib.get_close_matches(name, list(router.registry.names), n=3)
            hint = f"Did you mean {' or '.join(repr(c) for c in close)}? Otherwise, c" if close else "C"
            raise ToolError(f"no skill named {name!r}. {hint}all search_skills with the user's request, then "
                            "load_skill with one of the names it returns.")
        return skill

    async def explain_bad_params(ctx: "ServerRequestContext", call_next: "CallNext") -> "HandlerResult":
        """Params the SDK's own validation refuses get a message naming each bad field, not "Invalid request
        parameters"."""
        from pydantic import ValidationError

        try:
            return await call_next(ctx)
        except ValidationError as exc:
            raise MCPError(code=-32602, message=params_message(getattr(ctx, "method", "the request"), exc)) from None

    server.middleware.append(explain_bad_params)

    @server.tool(name="search_skills", title="Search skills", annotations=read_only)
    async def search_skills(query: Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS,
                                                        description="the user's request")],
                            k: Annotated[int, Field(ge=1, le=MAX_K, description="how many skills")] = 5,
                            ctx: Context | None = None) -> SearchResult:
        """Find the skills that fit a request, best first."""
        if not query.strip():
            raise ToolError("query is empty: call search_skills with the user's request as the query.")
        try:
            router, routing, _ = await service.bounded(service.route(query, k))
        except (SkillRouterError, NotReady, Busy, DeadlineExceeded) as exc:
            raise ToolError(str(exc)) from None
        session = session_of(ctx)

        def build() -> SearchResult:
            request_id = new_request_id()
            space = spaces.of(router)
            if service.decision_log is not None:
                service.decision_log.routed(request_id, "mcp", query, routing, k=k, session=session)
            no_skill = bool(getattr(routing, "no_skill", False))  # router.abstain: nothing fits, say so
            by_id = {} if no_skill else {s.id: s for s in routing.shown}
            pairs: list[tuple[Skill, float | None]]
            if routing.routed:
                pairs = [(by_id[m.id], float(m.score)) for m in routing.matches if m.id in by_id]
            else:
                pairs = [(s, None) for s in routing.shown]
            hits = [SkillHit(name=s.name, description=s.description,
                             score=None if score is None else round(score, 6), base_directory=s.directory or None,
                             uri=space.uri_of(s)) for s, score in pairs]
            return SearchResult(skills=hits, total=len(hits), abstained=bool(routing.abstained) or no_skill,
                                request_id=request_id)

        return await work(build)

    @server.tool(name="load_skill", title="Load a skill", annotations=read_only)
    async def load_skill(name: Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS,
                                                    description="the skill's name, as search_skills returned it")],
                         request_id: Annotated[str | None, Field(max_length=64, description=(
                             "the request_id search_skills returned, so that the decision log links this load to "
                             "that routing"))] = None,
                         ctx: Context | None = None) -> LoadedSkill:
        """Load a skill's instructions (what the harness's skill tool returns)."""
        router = current()
        session = session_of(ctx)

        def build() -> LoadedSkill:
            skill = find(router, name)
            try:
                content = router.load_skill(skill.name)
            except SkillToolError as exc:
                raise ToolError(str(exc)) from None
            if service.decision_log is not None:
                service.decision_log.loaded(skill.id, "mcp", route_id=request_id, session=session)
            return LoadedSkill(name=skill.name, base_directory=skill.directory or None, content=content)

        return await work(build)

    @server.tool(name="read_skill_file", title="Read a file of a skill", annotations=read_only)
    async def read_skill_file(name: Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS)],
                              path: Annotated[str, Field(min_length=1, max_length=1024,
                                                         description="relative to the skill's base directory")]
                              ) -> SkillFile:
        """Read a file inside a skill's folder (a script, reference or template it names)."""
        skill = find(current(), name)
        return await work(lambda: SkillFile(name=skill.name, path=path, **_read_confined(skill, path, ToolError)))

    @server.prompt(name=PROMPT, title="Use the skills for a request")
    async def use_skills_for(request: str, ctx: Context | None = None) -> list[dict[str, object]]:
        """The skills that fit a request, as the harness lists them, then the request."""
        try:
            router, routing, _ = await service.bounded(service.route(request))
        except (SkillRouterError, NotReady, Busy, DeadlineExceeded) as exc:
            raise MCPError(code=-32603, message=f"{PROMPT}: {exc}") from None
        if service.decision_log is not None:
            service.decision_log.routed(new_request_id(), "mcp", request, routing, session=session_of(ctx))
        shown = list(routing.shown)
        listing = router.profile.render(shown) if shown else PROMPT_NONE
        return [{"role": "user", "content": {"type": "text", "text": listing}},
                {"role": "user", "content": {"type": "text", "text": request}}]

    return server


#: What each tool takes, in the words of a tool call, for messages about bad arguments.
_CALLS = {
    "search_skills": f'search_skills with {{"query": "<the user\'s request>", "k": <1 to {MAX_K}, default 5>}}',
    "load_skill": 'load_skill with {"name": "<a name search_skills returned>"}',
    "read_skill_file": 'read_skill_file with {"name": "<a loaded skill>", "path": "<a file its instructions name, '
                       'relative to its base_directory>"}',
}


def params_message(method: str, exc: "ValidationError") -> str:
    """A refused ``params`` as one line: each bad field and what was wrong with it."""
    problems = []
    for error in exc.errors(include_url=False)[:5]:
        field = ".".join(str(part) for part in error["loc"]) or "params"
        problems.append(f"{field}: {error['msg'][:1].lower()}{error['msg'][1:]}")
    return f"{method} was called with bad params ({'; '.join(problems)})"


def model_message(tool: str, exc: Exception) -> str:
    """A tool error as the model that called the tool can act on it: what was wrong and which call to make instead;
    never a URL, a server path or advice to run a command."""
    from pydantic import ValidationError

    cause = exc.__cause__
    if isinstance(cause, ValidationError):
        problems = []
        for error in cause.errors(include_url=False):
            field = ".".join(str(part) for part in error["loc"]) or "arguments"
            problems.append(f"{field}: {error['msg'][:1].lower()}{error['msg'][1:]}")
        retry = _CALLS.get(tool)
        return (f"{tool} was called with bad arguments ({'; '.join(problems)})."
                + (f" Call {retry}." if retry else ""))
    text = str(exc)
    prefix = f"Error executing tool {tool}: "
    text = text[len(prefix):] if text.startswith(prefix) else text
    if text.startswith("Unknown tool"):
        return f"there is no tool {tool!r}: the tools are search_skills, load_skill and read_skill_file."
    # Advice for a person at a terminal ("run 'skill-router list'") is no use to a model: name its own calls.
    advice = re.search(r"[;:,]?\s*(?:run|see|use|try) '?skill-router\b.*$", text)
    if advice:
        text = text[:advice.start()] + ": call search_skills with the user's request to see the skills' names."
    return re.sub(r"\s*(?:For further information visit )?https?://\S+", "", text)


def _read_confined(skill: "Skill", path: str, error: type[Exception]) -> FileText:
    """The text of ``path`` inside ``skill``'s folder; ``error`` carries a message naming no server path."""
    from router.files import FileTooLargeError, NotRegularFileError, read_bytes
    from router.paths import resolve_skill_path

    if "\x00" in path:
        raise error("path holds a NUL character")
    try:
        resolved = resolve_skill_path(skill, path, strict=True)
    except PathEscapeError:
        raise error(f"path '{path}' leaves the folder of skill '{skill.name}': only files inside it can be read") \
            from None
    try:
        data = read_bytes(resolved, MAX_FILE_BYTES)  # regular files only: a FIFO or a device is refused at once
    except IsADirectoryError:
        raise error(f"'{path}' is a folder in skill '{skill.name}', not a file") from None
    except FileNotFoundError:
        raise error(f"skill '{skill.name}' has no file '{path}'") from None
    except FileTooLargeError:
        raise error(f"'{path}' of skill '{skill.name}' is larger than {MAX_FILE_BYTES} bytes") from None
    except NotRegularFileError:
        raise error(f"'{path}' of skill '{skill.name}' is not a regular file (a FIFO, a device or a socket)") \
            from None
    except OSError as exc:
        raise error(f"cannot read '{path}' of skill '{skill.name}': {exc.strerror or type(exc).__name__}") from None
    if b"\x00" in data:
        raise error(f"'{path}' of skill '{skill.name}' is a binary file")
    return {"size": len(data), "content": data.decode("utf-8", errors="replace")}
