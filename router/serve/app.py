"""The HTTP application of ``skill-router serve`` (FastAPI on uvicorn).

Endpoints (bodies and answers in ``/openapi.json``)::

    POST /v1/route              {query | messages, k?, pin?, exclude?} -> ranking, shown, catalogue, timings
    POST /v1/route/batch        {requests: [...]} (at most 64)
    GET  /v1/skills             every skill, or ?q=...&k=... ranked
    GET  /v1/skills/{name}      one skill's metadata (?body=true adds the Markdown body)
    POST /v1/tool               {name | arguments} -> exactly the profile's skill-tool result, or its error (422)
    POST /v1/inject             {messages, k?} -> the messages with the routed catalogue injected (idempotent)
    POST /v1/hooks/{harness}    UserPromptSubmit JSON -> hook JSON ({} when there is nothing to add), for each
                                profile with a prompt hook (claude-code, codex)
    POST /v1/reindex            rebuild from the skill folders now (--index-url: commit a generation to the database)
    GET  /healthz  /readyz  /metrics
    /mcp                        MCP over streamable HTTP (see router.serve.mcp)

Every answer has a model in :mod:`router.serve.schemas`, and every error status an endpoint can answer (401, 403,
404, 405, 413, 415, 422, 500, 503) is documented in ``/openapi.json`` with the one error shape actually sent.

Security: the guard middleware refuses bodies over the limit (413), checks the bearer token in constant time when
one is configured (401), and, on a loopback bind, refuses a Host header that is not a loopback name (403, against
DNS rebinding). Errors are JSON ``{"error": {"type", "message", "details"?}}``; no traceback or server path is ever
sent, and an unexpected failure answers 500 with only a request id that the server log also names.

Reliability: the event loop only moves bytes. Routing, rendering, encoding skill data, the skill tool and the
decision log run in the service's workers, and every request but ``/mcp`` and ``/v1/reindex`` has a deadline
(``--request-timeout``, default 10 s): past it the answer is 503 ``deadline_exceeded`` while ``/healthz`` keeps
answering. A reload that fails answers 503 ``reload_failed`` with the reason and keeps the previous library
serving; ``/readyz`` then names the reason (``reload_error``), as it names a failing decision log (``log``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import logging
import threading
import time
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, AsyncIterator, Callable, Sequence, TypedDict

from fastapi import APIRouter, FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from router.version import package_version
from router.errors import (CatalogError, ConfigError, ModelError, SkillNotFoundError,
                           SkillRouterError, SkillToolError)
from router.serve import hooks
from router.serve.log import new_request_id
from router.serve.payload import DeadlineExceeded, MetadataTooLarge, encode, metadata_json
from router.serve.schemas import (MAX_BODY_BYTES, MAX_K, MAX_NAME_CHARS, MAX_TEXT_CHARS, Alive, BatchAnswer,
                                  BatchRequest, ErrorAnswer, HookAnswer, HookInput, InjectAnswer, InjectRequest,
                                  JSONObject, Loading, LogHealth, MatchAnswer, RankedSkill, RankedSkills, Ready,
                                  ReloadAnswer, RouteRequest, RoutingAnswer, SkillDetail, SkillList, SkillRow,
                                  ToolAnswer, ToolRequest)
from router.serve.service import Busy, NotReady, Service, failure_reason

if TYPE_CHECKING:
    from router.ranking import Match, Routing
    from router.routing import Router
    from router.serve.metrics import Metrics
    from router.skill import Skill

log = logging.getLogger("router.serve")

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
#: Paths without the request deadline: MCP streams stay open, and a reload may rightly take longer.
NO_DEADLINE = ("/mcp", "/v1/reindex")

#: What each error status means, for /openapi.json (the body is always an ErrorAnswer).
ERROR_STATUSES = {
    400: "Content-Length is not a number, or the body cannot be read as JSON",
    401: "no bearer token, or the wrong one (a server started with --token-file)",
    403: "a Host header that is not a loopback name, on a loopback bind",
    404: "no such skill, harness or endpoint",
    405: "method not allowed on this endpoint",
    413: "request body larger than the limit",
    415: "a body not sent as JSON",
    422: "invalid request: each invalid field in details; a skill-tool call that failed",
    500: "unexpected server error: the message names the request id the server log names",
    503: "not ready, busy, past the request deadline, the model unavailable, or a failed reload",
}
#: Every endpoint may answer these (the guard's refusals, the deadline, the last-resort error).
COMMON_ERRORS = (401, 403, 405, 500, 503)
BODY_ERRORS = (400, 413, 415, 422)


def documented(*statuses: int) -> dict[int | str, dict[str, object]]:
    """The ``responses`` of an endpoint: the common error statuses and ``statuses``, each with the error model."""
    return {status: {"model": ErrorAnswer, "description": ERROR_STATUSES[status]}
            for status in sorted({*COMMON_ERRORS, *statuses})}


def error_body(kind: str, message: str, details: object = None) -> JSONObject:
    error: JSONObject = {"type": kind, "message": message}
    if details is not None:
        error["details"] = details  # type: ignore[assignment]  # a list of ErrorDetail rows or a reload report
    return {"error": error}


def _json(status: int, kind: str, message: str, details: object = None, headers: dict[str, str] | None = None
          ) -> JSONResponse:
    return JSONResponse(error_body(kind, message, details), status_code=status, headers=headers)


class _TooLarge(StarletteHTTPException):
    """Raised while the body streams in; an HTTPException so that FastAPI's body reader lets it through."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body is larger than {limit} bytes")


class Guard:
    """Pure ASGI middleware: body limit, bearer token, Host check, metrics, and the last-resort error answer."""

    def __init__(self, app: ASGIApp, *, token: str | None, max_body: int, metrics: Metrics | None, loopback: bool,
                 deadline_s: float | None = None) -> None:
        self.app = app
        self.deadline_s = deadline_s
        self.token = token.encode("utf-8") if token else None
        self.max_body = max_body
        self.metrics = metrics
        self.loopback = loopback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        state = {"status": 500, "started": False}

        async def tracked(message: Message) -> None:
            if message["type"] == "http.response.start":
                state["status"] = message["status"]
                state["started"] = True
            await send(message)

        try:
            refusal = self._refusal(scope)
            if refusal is not None:
                await refusal(scope, receive, tracked)
            elif self.deadline_s is None or str(scope.get("path", "")).startswith(NO_DEADLINE):
                await self.app(scope, self._limited(receive), tracked)
            else:
                async with asyncio.timeout(self.deadline_s):
                    await self.app(scope, self._limited(receive), tracked)
        except _TooLarge:
            if not state["started"]:
                await self._too_large()(scope, receive, tracked)
        except TimeoutError:
            log.error("%s %s ran past its deadline of %g s", scope.get("method"), scope.get("path"), self.deadline_s)
            if not state["started"]:
                await _json(503, "deadline_exceeded", str(DeadlineExceeded(self.deadline_s or 0)),
                            headers={"Retry-After": "1"})(scope, receive, tracked)
        except Exception:
            request_id = new_request_id()
            log.exception("unexpected error answering %s %s (request %s)", scope.get("method"), scope.get("path"),
                          request_id)
            if not state["started"]:
                await _json(500, "internal_error", f"unexpected server error; the server log names request "
                                                   f"{request_id}")(scope, receive, tracked)
        finally:
            if self.metrics is not None:
                route = scope.get("route")
                label = getattr(route, "path", None) or ("/mcp" if scope.get("path", "").startswith("/mcp")
                                                         else "unmatched")
                self.metrics.observe(label, scope.get("method", ""), state["status"], time.perf_counter() - start)

    def _refusal(self, scope: Scope) -> JSONResponse | None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if self.loopback:
            host = headers.get("host", "")
            name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
            if host and name not in LOOPBACK_HOSTS:
                return _json(403, "forbidden_host", f"Host '{host[:100]}' is not a loopback name; this server only "
                                                    "answers local clients")
        if self.token is not None:
            given = headers.get("authorization", "")
            scheme, _, credential = given.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(credential.strip().encode("utf-8"), self.token):
                return _json(401, "unauthorized", "send 'Authorization: Bearer <token>' with the token of "
                                                  "--token-file", headers={"WWW-Authenticate": "Bearer"})
        length = headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                return _json(400, "invalid_request", "Content-Length is not a number")
            if int(length) > self.max_body:
                return self._too_large()
        return None

    def _too_large(self) -> JSONResponse:
        return _json(413, "body_too_large", f"request body is larger than {self.max_body} bytes")

    def _limited(self, receive: Receive) -> Receive:
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise _TooLarge(self.max_body)
            return message

        return limited


def _message(error: dict[str, object]) -> str:
    if error.get("type") == "json_invalid":
        context = error.get("ctx")
        reason = context.get("error", "invalid JSON") if isinstance(context, dict) else "invalid JSON"
        loc = error.get("loc", ())
        at = f" at character {loc[1]}" if isinstance(loc, tuple) and len(loc) > 1 else ""
        return f"the body is not valid JSON: {reason}{at}"
    return str(error.get("msg", ""))


class _Row(TypedDict):
    id: str
    name: str
    description: str
    path: str | None
    directory: str | None


def _row(skill: Skill) -> _Row:
    return {"id": skill.id, "name": skill.name, "description": skill.description, "path": skill.path or None,
            "directory": skill.directory or None}


def skill_answer(skill: Skill, *, body: bool, deadline: float, seconds: float) -> Response:
    """One skill's answer, encoded (in a worker: metadata from YAML can be built to be huge)."""
    if not body:
        return answer_of(SkillRow(**_row(skill)))
    out = SkillDetail(**_row(skill), examples=list(skill.examples), body=skill.body, metadata={})
    # YAML may hold dates and other values JSON has no type for: they are sent as strings
    metadata = metadata_json(skill.name, skill.metadata or {}, deadline=deadline, seconds=seconds)
    return json_answer(out.model_dump(exclude={"metadata"}), raw={"metadata": metadata})


def json_answer(payload: JSONObject, raw: dict[str, str] | None = None) -> Response:
    return Response(encode(payload, raw=raw), media_type="application/json")


def answer_of(model: BaseModel, *, exclude_none: bool = False) -> Response:
    return json_answer(model.model_dump(exclude_none=exclude_none))


def _match(match: Match) -> MatchAnswer:
    return MatchAnswer(id=match.id, name=match.name, score=round(float(match.score), 6), rank=match.rank,
                       scores={k: round(float(v), 6) for k, v in match.scores.items()}, ranks=dict(match.ranks),
                       reason=match.reason)


def routing_answer(router: Router, routing: Routing, request_id: str, timings: dict[str, float]) -> RoutingAnswer:
    start = time.perf_counter()
    catalogue = router.profile.render(list(routing.shown))
    timings = {**timings, "render_ms": round((time.perf_counter() - start) * 1000, 3)}
    return RoutingAnswer(request_id=request_id, profile=router.profile.name,
                         matches=[_match(m) for m in routing.matches], shown=[s.name for s in routing.shown],
                         abstained=bool(routing.abstained), no_skill=bool(routing.no_skill),
                         confidence=round(float(routing.confidence), 6),
                         routed=bool(routing.routed), catalogue=catalogue, timings=timings)


class _Recorder:
    """Writes one routing to the decision log and names it."""

    def __init__(self, service: Service) -> None:
        self.service = service

    def __call__(self, source: str, text: str, routing: Routing, k: int | None, session: str | None = None) -> str:
        request_id = new_request_id()
        if self.service.decision_log is not None:
            self.service.decision_log.routed(request_id, source, text, routing, k=k, session=session)
        return request_id


async def _answer(service: Service, build: Callable[[], BaseModel]) -> Response:
    """``build()`` and its encoding, in a worker (the event loop only moves bytes)."""
    return await service.run(lambda: answer_of(build()))


# -- the endpoints, by area ---------------------------------------------------------------------------------------
def routing_endpoints(service: Service, record: _Recorder) -> APIRouter:
    api = APIRouter(tags=["routing"])

    @api.post("/v1/route", summary="rank the skills for one request", response_model=RoutingAnswer,
              responses=documented(*BODY_ERRORS, 404))
    async def route(body: RouteRequest) -> Response:
        router, routing, timings = await service.route(body.request(), body.k, body.pin, body.exclude)
        if body.abstain and routing.no_skill:  # router.abstain, asked for: show nothing
            routing = dataclasses.replace(routing, shown=())
        return await _answer(service, lambda: routing_answer(router, routing,
                                                             record("route", body.text(), routing, body.k), timings))

    @api.post("/v1/route/batch", summary="rank the skills for several requests", response_model=BatchAnswer,
              responses=documented(*BODY_ERRORS, 404))
    async def route_batch(body: BatchRequest) -> Response:
        outcomes = await asyncio.gather(*(service.route(r.request(), r.k, r.pin, r.exclude) for r in body.requests),
                                        return_exceptions=True)
        routed: list[tuple[Router, Routing, dict[str, float]]] = []
        for index, outcome in enumerate(outcomes):
            if isinstance(outcome, SkillRouterError):
                raise type(outcome)(f"requests[{index}]: {outcome}") if isinstance(outcome, ConfigError) else outcome
            if isinstance(outcome, BaseException):
                raise outcome
            routed.append(outcome)

        def build() -> BatchAnswer:
            results = []
            for request, (router, routing, timings) in zip(body.requests, routed):
                request_id = record("batch", request.text(), routing, request.k)
                results.append(routing_answer(router, routing, request_id, timings))
            return BatchAnswer(results=results)

        return await _answer(service, build)

    @api.post("/v1/inject", summary="inject the routed catalogue into chat messages", response_model=InjectAnswer,
              responses=documented(*BODY_ERRORS, 404))
    async def inject(body: InjectRequest) -> Response:
        from router.conversation import conversation_text
        from router.inject import inject as inject_block

        messages = [m.model_dump(exclude_unset=True) for m in body.messages]
        router, routing, timings = await service.route(messages, body.k, body.pin, body.exclude)

        def build() -> InjectAnswer:
            request_id = record("inject", conversation_text(messages).request, routing, body.k)
            out = inject_block(messages, router.profile.render(list(routing.shown)))
            return InjectAnswer(messages=out, shown=[s.name for s in routing.shown], request_id=request_id,
                                timings=timings)

        return await _answer(service, build)

    return api


def skill_endpoints(service: Service, record: _Recorder) -> APIRouter:
    api = APIRouter(tags=["skills"])

    @api.get("/v1/skills", summary="every skill, or the skills ranked for ?q=",
             response_model=SkillList | RankedSkills, responses=documented(422))
    async def skills(q: str | None = Query(None, min_length=1, max_length=MAX_TEXT_CHARS),
                     k: int | None = Query(None, ge=1, le=MAX_K)) -> Response:
        if q is None:
            router = service.router

            def listing() -> SkillList:
                rows = [SkillRow(**_row(s)) for s in router.skills]
                return SkillList(skills=rows, total=len(rows))

            return await _answer(service, listing)
        if not q.strip():
            raise ConfigError("'q' is empty: give the text to rank the skills for")
        query = q
        router, routing, timings = await service.route(query, k)

        def ranked() -> RankedSkills:
            request_id = record("skills", query, routing, k)
            by_id = {s.id: s for s in router.skills}
            if routing.routed:
                rows = [RankedSkill(**_row(by_id[m.id]), score=round(float(m.score), 6), rank=m.rank)
                        for m in routing.matches]
            else:  # a library small enough to be shown whole is not ranked
                rows = [RankedSkill(**_row(s), score=None, rank=None) for s in routing.shown]
            return RankedSkills(query=query, skills=rows, total=len(rows), request_id=request_id,
                                took_ms=timings["total_ms"])

        return await _answer(service, ranked)

    @api.get("/v1/skills/{name:path}", summary="one skill's metadata (and body on request)",
             response_model=SkillRow | SkillDetail, responses=documented(404, 422))
    async def skill(name: str, body: bool = False) -> Response:
        if len(name) > MAX_NAME_CHARS:
            raise ConfigError(f"skill name is longer than {MAX_NAME_CHARS} characters")
        router = service.router
        deadline = time.monotonic() + service.deadline_s

        def build() -> Response:
            found = router.registry.lookup(name)
            if found is None:
                found = router.registry.get(name)  # raises SkillNotFoundError naming close matches
            return skill_answer(found, body=body, deadline=deadline, seconds=service.deadline_s)

        return await service.run(build)

    @api.post("/v1/tool", summary="answer a skill-tool call as the harness does", response_model=ToolAnswer,
              responses=documented(*BODY_ERRORS))
    async def tool(body: ToolRequest) -> Response:
        router = service.router

        def build() -> ToolAnswer:
            loads, tool_name = router.profile.skill_call(body.name or "", list(router.skills))
            [key] = loads
            if body.name is not None and body.call_name is None:
                result = router.load_skill(body.name)
            else:
                arguments = loads if body.name is not None else body.arguments
                result = router.call_tool(arguments, body.call_name or tool_name)
            named = body.name
            if named is None and isinstance(body.arguments, dict):
                given = body.arguments.get(key)
                named = given if isinstance(given, str) else None
            skill = router.registry.find(named) if named else None
            loaded = None
            if skill is not None and service.decision_log is not None:
                loaded = service.decision_log.loaded(skill.id, "tool", route_id=body.route_id, session=body.session)
            after = loaded.get("after") if loaded else None
            return ToolAnswer(result=result, skill=skill.name if skill else None,
                              after=after if isinstance(after, str) else None)

        return await _answer(service, build)

    return api


def hook_endpoints(service: Service, record: _Recorder) -> APIRouter:
    """``POST /v1/hooks/{harness}`` for every profile with a prompt hook (:data:`router.profiles.Capability.HOOK`)."""
    api = APIRouter(tags=["hooks"])
    harnesses = hooks.harnesses()

    @api.post("/v1/hooks/{harness}", summary="a harness's UserPromptSubmit hook (Claude Code: type http)",
              response_model=HookAnswer, response_model_exclude_none=True,
              responses=documented(*BODY_ERRORS, 404))
    async def hook(body: HookInput, harness: str = Path(json_schema_extra={"enum": list(harnesses)})) -> Response:
        if harness not in harnesses:
            return _json(404, "unknown_harness", f"unknown harness '{harness[:100]}': choose one of "
                                                 f"{', '.join(harnesses)}")
        try:
            prompt = hooks.prompt_of(body.model_dump())
        except hooks.HookError:
            return answer_of(HookAnswer(), exclude_none=True)  # another event: nothing to add
        prompt = prompt[:MAX_TEXT_CHARS]
        if not prompt.strip():
            return answer_of(HookAnswer(), exclude_none=True)
        _, routing, _ = await service.route(prompt)

        def build() -> Response:
            record(f"hook:{harness}", prompt, routing, None, session=body.session_id)
            output = HookAnswer.model_validate(hooks.hook_output(hooks.routing_context(harness, routing)))
            return answer_of(output, exclude_none=True)

        return await service.run(build)

    return api


REINDEX = ("Re-reads the skill folders and swaps to the library they hold. With --index-url (PostgreSQL) it first "
           "commits that library as a new index generation in one transaction (only texts the database lacks are "
           "embedded), which every replica reading the database swaps to; `generation` names the one now served. "
           "A reindex that fails answers 503 `reload_failed` (the reason in `message`, the report in `details`) "
           "and the previous library keeps serving.")


def operation_endpoints(service: Service) -> APIRouter:
    api = APIRouter(tags=["operations"])

    @api.post("/v1/reindex", summary="rebuild from the skill folders now", response_model=ReloadAnswer,
              responses=documented(), description=REINDEX)
    async def reindex() -> Response:
        _ = service.router  # 503 while the first load is running
        result = await asyncio.to_thread(service.reindex)
        if not result.ok:  # 503: the library cannot be read now; the previous one is still served
            return _json(503, "reload_failed", f"reload failed, still serving the previous library: "
                                               f"{result.message}", result.to_json(), headers={"Retry-After": "5"})
        return answer_of(ReloadAnswer.model_validate(result.to_json()))

    @api.get("/healthz", summary="the process is alive", response_model=Alive, responses=documented())
    async def healthz() -> Alive:
        return Alive(status="alive")

    ready_errors = documented()
    ready_errors[503] = {"model": Loading | ErrorAnswer, "description": "the library is loading or failed to load "
                                                                         "(or the guard's 503 errors)"}

    @api.get("/readyz", summary="the library is loaded; discovery errors", response_model=Ready,
             responses=ready_errors)
    async def readyz() -> Response:
        if not service.ready:
            error = service.load_error
            loading = Loading(status="failed" if error else "loading", error=error)
            return JSONResponse(loading.model_dump(), status_code=503, headers={"Retry-After": "1"})
        router = service.router
        last = service.last_reload
        decision_log = service.decision_log
        ready = Ready(status="ready", profile=router.profile.name, skills=len(router.skills),
                      errors=list(last.errors) if last else [], warnings=list(last.warnings) if last else [],
                      notes=list(service.notes), reloads=service.reloads, reload_error=service.reload_error,
                      last_reload=ReloadAnswer.model_validate(last.to_json()) if last else None,
                      log=LogHealth.model_validate(decision_log.health()) if decision_log is not None else None)
        return JSONResponse(ready.model_dump())

    @api.get("/metrics", summary="Prometheus metrics", response_class=Response, responses={
        **documented(404), 200: {"content": {"text/plain": {"schema": {"type": "string"}}},
                                 "description": "Prometheus text format"}})
    async def metrics() -> Response:
        if service.metrics is None:
            return _json(404, "http_error", "metrics are off")
        payload, content_type = service.metrics.text()
        return Response(payload, media_type=content_type)

    return api


# -- errors -------------------------------------------------------------------------------------------------------
def add_error_handlers(app: FastAPI) -> None:
    """Every error as ``{"error": {"type", "message", "details"?}}`` (:class:`router.serve.schemas.ErrorAnswer`)."""

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        content_type = request.headers.get("content-type", "")
        if (errors and tuple(errors[0].get("loc", ())) == ("body",) and content_type
                and "json" not in content_type.lower()):
            return _json(415, "unsupported_media_type", f"the body was sent as '{content_type[:80]}': send JSON "
                                                        "with 'Content-Type: application/json'")
        details = [{"loc": ".".join(str(p) for p in e.get("loc", ())), "message": _message(e),
                    "type": e.get("type", "")} for e in errors[:20]]
        summary = "; ".join(f"{d['loc']}: {d['message']}" for d in details[:3])
        return _json(422, "invalid_request", summary or "invalid request", details)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        messages = {404: "no such endpoint: see /openapi.json", 405: "method not allowed on this endpoint",
                    400: "the body could not be read as JSON (not UTF-8, or nested too deeply)"}
        generic = (None, "Not Found", "Method Not Allowed", "There was an error parsing the body")
        message = messages.get(exc.status_code) if exc.detail in generic else None
        kind = "body_too_large" if isinstance(exc, _TooLarge) else "http_error"
        return _json(exc.status_code, kind, message or str(exc.detail),
                     headers=dict(exc.headers) if exc.headers else None)

    @app.exception_handler(SkillRouterError)
    async def router_error(_: Request, exc: SkillRouterError) -> JSONResponse:
        if isinstance(exc, SkillNotFoundError):
            return _json(404, "skill_not_found", str(exc))
        if isinstance(exc, ModelError):
            return _json(503, "model_unavailable", "the embedding model cannot be loaded; see the server log")
        if getattr(exc, "status", None) == 503:  # a store that is away for now (router.pgstore.StoreUnavailable)
            return _json(503, str(getattr(exc, "kind", "unavailable")), str(exc), headers={"Retry-After": "1"})
        if isinstance(exc, SkillToolError):
            return _json(422, "tool_call_failed", str(exc))
        if isinstance(exc, (ConfigError, CatalogError)):
            return _json(422, "invalid_request", str(exc))
        log.error("request failed: %s", exc)
        return _json(422, "request_failed", type(exc).__name__)

    @app.exception_handler(NotReady)
    async def not_ready(_: Request, exc: NotReady) -> JSONResponse:
        return _json(503, "not_ready", str(exc), headers={"Retry-After": "1"})

    @app.exception_handler(Busy)
    async def busy(_: Request, exc: Busy) -> JSONResponse:
        return _json(503, "busy", str(exc), headers={"Retry-After": "1"})

    @app.exception_handler(DeadlineExceeded)
    async def too_slow(request: Request, exc: DeadlineExceeded) -> JSONResponse:
        log.error("%s %s ran past its deadline of %g s", request.method, request.url.path, exc.seconds)
        return _json(503, "deadline_exceeded", str(exc), headers={"Retry-After": "1"})

    @app.exception_handler(MetadataTooLarge)
    async def too_large(_: Request, exc: MetadataTooLarge) -> JSONResponse:
        return _json(422, "metadata_too_large", str(exc))


def create_app(service: Service, *, token: str | None = None, loopback: bool = True,
               max_body: int = MAX_BODY_BYTES, mcp: bool = True, watch: Sequence[str] = (),
               load: bool = True) -> FastAPI:
    """The application over ``service``. With ``load`` the library is loaded in the background at start-up
    (``/readyz`` answers 503 until it is); ``watch`` folders are watched for changes once it is."""
    mcp_server = None
    if mcp:
        from router.serve.mcp import build_mcp

        mcp_server = build_mcp(service)
    stop = threading.Event()

    def start_up() -> None:
        if watch:  # before loading: an edit made while the library loads is picked up once it has
            service.watch(watch, stop)
        try:
            if not service.ready:
                service.load()
        except Exception as exc:  # reported by /readyz; the process stays up so that the reason can be read
            service.load_error = failure_reason(exc)
            log.error("could not load the library: %s", service.load_error)
            stop.set()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if load:
            threading.Thread(target=start_up, daemon=True, name="skill-router-load").start()
        try:
            if mcp_server is not None:
                async with mcp_server.session_manager.run():
                    yield
            else:
                yield
        finally:
            stop.set()

    app = FastAPI(title="skill-router", version=package_version(), lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Route a request to the few agent skills that matter.")
    add_error_handlers(app)
    record = _Recorder(service)
    for api in (routing_endpoints(service, record), skill_endpoints(service, record),
                hook_endpoints(service, record), operation_endpoints(service)):
        app.include_router(api)
    if mcp_server is not None:
        app.router.routes.append(Route("/mcp", endpoint=mcp_server.streamable_http_app(
            streamable_http_path="/mcp", host="127.0.0.1" if loopback else "0.0.0.0")))

    app.add_middleware(Guard, token=token, max_body=max_body, metrics=service.metrics, loopback=loopback,
                       deadline_s=service.deadline_s)
    return app
