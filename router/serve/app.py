"""The HTTP application of ``skill-router serve`` (FastAPI on uvicorn).

Endpoints (bodies and answers in ``/openapi.json``)::

    POST /v1/route              {query | messages, k?, pin?, exclude?} -> ranking, shown, catalogue, timings
    POST /v1/route/batch        {requests: [...]} (at most 64)
    GET  /v1/skills             every skill, or ?q=...&k=... ranked
    GET  /v1/skills/{name}      one skill's metadata (?body=true adds the Markdown body)
    POST /v1/tool               {name | arguments} -> exactly the profile's skill-tool result, or its error (422)
    POST /v1/inject             {messages, k?} -> the messages with the routed catalogue injected (idempotent)
    POST /v1/hooks/claude-code  UserPromptSubmit JSON -> hook JSON ({} when there is nothing to add)
    POST /v1/hooks/codex        the same for Codex
    POST /v1/reindex            rebuild from the skill folders now
    GET  /healthz  /readyz  /metrics
    /mcp                        MCP over streamable HTTP (see router.serve.mcp)

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
from typing import Any, Sequence, cast

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route

from router import __version__
from router.errors import (CatalogError, ConfigError, ModelError, SkillNotFoundError,
                           SkillRouterError, SkillToolError)
from router.serve import hooks
from router.serve.log import new_request_id
from router.serve.payload import DeadlineExceeded, MetadataTooLarge, encode, metadata_json
from router.serve.schemas import (MAX_BODY_BYTES, MAX_K, MAX_NAME_CHARS, MAX_TEXT_CHARS, BatchRequest, HookInput,
                                  InjectRequest, RouteRequest, ToolRequest)
from router.serve.service import Busy, NotReady, Service, failure_reason

log = logging.getLogger("router.serve")

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
#: Paths without the request deadline: MCP streams stay open, and a reload may rightly take longer.
NO_DEADLINE = ("/mcp", "/v1/reindex")


def error_body(kind: str, message: str, details: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"type": kind, "message": message}
    if details is not None:
        error["details"] = details
    return {"error": error}


def _json(status: int, kind: str, message: str, details: Any = None, headers: dict[str, str] | None = None
          ) -> JSONResponse:
    return JSONResponse(error_body(kind, message, details), status_code=status, headers=headers)


class _TooLarge(StarletteHTTPException):
    """Raised while the body streams in; an HTTPException so that FastAPI's body reader lets it through."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body is larger than {limit} bytes")


class Guard:
    """Pure ASGI middleware: body limit, bearer token, Host check, metrics, and the last-resort error answer."""

    def __init__(self, app: Any, *, token: str | None, max_body: int, metrics: Any, loopback: bool,
                 deadline_s: float | None = None) -> None:
        self.app = app
        self.deadline_s = deadline_s
        self.token = token.encode("utf-8") if token else None
        self.max_body = max_body
        self.metrics = metrics
        self.loopback = loopback

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        state = {"status": 500, "started": False}

        async def tracked(message: Any) -> None:
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

    def _refusal(self, scope: dict[str, Any]) -> Any:
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

    def _limited(self, receive: Any) -> Any:
        seen = 0

        async def limited() -> dict[str, Any]:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise _TooLarge(self.max_body)
            return message

        return limited


def _message(error: dict[str, Any]) -> str:
    if error.get("type") == "json_invalid":
        reason = (error.get("ctx") or {}).get("error", "invalid JSON")
        loc = error.get("loc", ())
        at = f" at character {loc[1]}" if len(loc) > 1 else ""
        return f"the body is not valid JSON: {reason}{at}"
    return str(error.get("msg", ""))


def _skill_json(skill: Any) -> dict[str, Any]:
    return {"id": skill.id, "name": skill.name, "description": skill.description, "path": skill.path or None,
            "directory": skill.directory or None}


def skill_answer(skill: Any, *, body: bool, deadline: float, seconds: float) -> Response:
    """One skill's answer, encoded (in a worker: metadata from YAML can be built to be huge)."""
    out = _skill_json(skill)
    if not body:
        return json_answer(out)
    out["examples"] = list(skill.examples)
    out["body"] = skill.body
    # YAML may hold dates and other values JSON has no type for: they are sent as strings
    metadata = metadata_json(skill.name, skill.metadata or {}, deadline=deadline, seconds=seconds)
    return json_answer(out, raw={"metadata": metadata})


def json_answer(payload: dict[str, Any], raw: dict[str, str] | None = None) -> Response:
    return Response(encode(payload, raw=raw), media_type="application/json")


def _match_json(match: Any) -> dict[str, Any]:
    return {"id": match.id, "name": match.name, "score": round(float(match.score), 6), "rank": match.rank,
            "scores": {k: round(float(v), 6) for k, v in match.scores.items()}, "ranks": dict(match.ranks),
            "reason": match.reason}


def routing_json(router: Any, routing: Any, request_id: str, timings: dict[str, float]) -> dict[str, Any]:
    start = time.perf_counter()
    catalogue = router.profile.render(list(routing.shown))
    timings = {**timings, "render_ms": round((time.perf_counter() - start) * 1000, 3)}
    return {"request_id": request_id, "profile": router.profile.name,
            "matches": [_match_json(m) for m in routing.matches], "shown": [s.name for s in routing.shown],
            "abstained": bool(routing.abstained), "no_skill": bool(getattr(routing, "no_skill", False)),
            "confidence": round(float(routing.confidence), 6),
            "routed": bool(routing.routed), "catalogue": catalogue, "timings": timings}


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
    async def lifespan(_: FastAPI) -> Any:
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

    app = FastAPI(title="skill-router", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Route a request to the few agent skills that matter.")

    # -- errors ---------------------------------------------------------------------------------------------------
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
        return _json(exc.status_code, kind, message or str(exc.detail), headers=getattr(exc, "headers", None))

    @app.exception_handler(SkillRouterError)
    async def router_error(_: Request, exc: SkillRouterError) -> JSONResponse:
        if isinstance(exc, SkillNotFoundError):
            return _json(404, "skill_not_found", str(exc))
        if isinstance(exc, ModelError):
            return _json(503, "model_unavailable", "the embedding model cannot be loaded; see the server log")
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

    # -- routing --------------------------------------------------------------------------------------------------
    # Each answer is built and encoded by a worker (service.run); the handler only awaits it.
    def record(source: str, text: str, routing: Any, k: int | None, session: str | None = None) -> str:
        request_id = new_request_id()
        if service.decision_log is not None:
            service.decision_log.routed(request_id, source, text, routing, k=k, session=session)
        return request_id

    async def answer(build: Any) -> Response:
        return cast(Response, await service.run(lambda: json_answer(build())))

    @app.post("/v1/route", tags=["routing"], summary="rank the skills for one request")
    async def route(body: RouteRequest) -> Response:
        router, routing, timings = await service.route(body.request(), body.k, body.pin, body.exclude)
        if body.abstain and getattr(routing, "no_skill", False):  # router.abstain, asked for: show nothing
            routing = dataclasses.replace(routing, shown=())
        return await answer(lambda: routing_json(router, routing, record("route", body.text(), routing, body.k),
                                                 timings))

    @app.post("/v1/route/batch", tags=["routing"], summary="rank the skills for several requests")
    async def route_batch(body: BatchRequest) -> Response:
        outcomes = await asyncio.gather(*(service.route(r.request(), r.k, r.pin, r.exclude) for r in body.requests),
                                        return_exceptions=True)
        for index, outcome in enumerate(outcomes):
            if isinstance(outcome, SkillRouterError):
                raise type(outcome)(f"requests[{index}]: {outcome}") if isinstance(outcome, ConfigError) else outcome
            if isinstance(outcome, BaseException):
                raise outcome

        def build() -> dict[str, Any]:
            results = []
            for request, outcome in zip(body.requests, outcomes):
                router, routing, timings = cast(tuple, outcome)
                request_id = record("batch", request.text(), routing, request.k)
                results.append(routing_json(router, routing, request_id, timings))
            return {"results": results}

        return await answer(build)

    @app.get("/v1/skills", tags=["skills"], summary="every skill, or the skills ranked for ?q=")
    async def skills(q: str | None = Query(None, min_length=1, max_length=MAX_TEXT_CHARS),
                     k: int | None = Query(None, ge=1, le=MAX_K)) -> Response:
        if q is None:
            router = service.router

            def listing() -> dict[str, Any]:
                rows = [_skill_json(s) for s in router.skills]
                return {"skills": rows, "total": len(rows)}

            return await answer(listing)
        if not q.strip():
            raise ConfigError("'q' is empty: give the text to rank the skills for")
        router, routing, timings = await service.route(q, k)

        def ranked() -> dict[str, Any]:
            request_id = record("skills", q, routing, k)
            by_id = {s.id: s for s in router.skills}
            if routing.routed:
                rows = [{**_skill_json(by_id[m.id]), "score": round(float(m.score), 6), "rank": m.rank}
                        for m in routing.matches]
            else:  # a library small enough to be shown whole is not ranked
                rows = [{**_skill_json(s), "score": None, "rank": None} for s in routing.shown]
            return {"query": q, "skills": rows, "total": len(rows), "request_id": request_id,
                    "took_ms": timings["total_ms"]}

        return await answer(ranked)

    @app.get("/v1/skills/{name:path}", tags=["skills"], summary="one skill's metadata (and body on request)")
    async def skill(name: str, body: bool = False) -> Response:
        if len(name) > MAX_NAME_CHARS:
            raise ConfigError(f"skill name is longer than {MAX_NAME_CHARS} characters")
        router = service.router
        deadline = time.monotonic() + service.deadline_s

        def build() -> Response:
            found = router.registry.find(name) or next((s for s in router.skills if s.id == name), None)
            if found is None:
                found = router.registry.get(name)  # raises SkillNotFoundError naming close matches
            return skill_answer(found, body=body, deadline=deadline, seconds=service.deadline_s)

        return cast(Response, await service.run(build))

    @app.post("/v1/tool", tags=["skills"], summary="answer a skill-tool call as the harness does")
    async def tool(body: ToolRequest) -> Response:
        router = service.router

        def build() -> dict[str, Any]:
            spec = router.tool()
            key = spec.parameters.get("required", ["name"])[0] if spec is not None else "name"
            arguments = {key: body.name} if body.name is not None else body.arguments
            call_name = body.call_name or (spec.name if spec is not None else None)
            result = router.call_tool(arguments, call_name)
            named = body.name
            if named is None and isinstance(body.arguments, dict):
                named = body.arguments.get(key) if isinstance(body.arguments.get(key), str) else None
            skill = router.registry.find(named) if named else None
            loaded = None
            if skill is not None and service.decision_log is not None:
                loaded = service.decision_log.loaded(skill.id, "tool", route_id=body.route_id, session=body.session)
            return {"result": result, "skill": skill.name if skill else None,
                    "after": loaded.get("after") if loaded else None}

        return await answer(build)

    @app.post("/v1/inject", tags=["routing"], summary="inject the routed catalogue into chat messages")
    async def inject(body: InjectRequest) -> Response:
        from router.conversation import conversation_text
        from router.inject import inject as inject_block

        messages = [m.model_dump(exclude_unset=True) for m in body.messages]
        router, routing, timings = await service.route(messages, body.k, body.pin, body.exclude)

        def build() -> dict[str, Any]:
            request_id = record("inject", conversation_text(messages).request, routing, body.k)
            out = inject_block(messages, router.profile.render(list(routing.shown)))
            return {"messages": out, "shown": [s.name for s in routing.shown], "request_id": request_id,
                    "timings": timings}

        return await answer(build)

    async def answer_hook(harness: str, body: HookInput) -> Response:
        try:
            prompt = hooks.prompt_of(body.model_dump())
        except hooks.HookError:
            return json_answer({})  # another event: nothing to add
        prompt = prompt[:MAX_TEXT_CHARS]
        if not prompt.strip():
            return json_answer({})
        _, routing, _ = await service.route(prompt)

        def build() -> dict[str, Any]:
            record(f"hook:{harness}", prompt, routing, None, session=body.session_id)
            return hooks.hook_output(hooks.routing_context(harness, routing))

        return await answer(build)

    @app.post("/v1/hooks/claude-code", tags=["hooks"], summary="Claude Code UserPromptSubmit hook (type http)")
    async def hook_claude(body: HookInput) -> Response:
        return await answer_hook("claude-code", body)

    @app.post("/v1/hooks/codex", tags=["hooks"], summary="Codex UserPromptSubmit hook")
    async def hook_codex(body: HookInput) -> Response:
        return await answer_hook("codex", body)

    # -- operations -----------------------------------------------------------------------------------------------
    @app.post("/v1/reindex", tags=["operations"], summary="rebuild from the skill folders now")
    async def reindex() -> Response:
        _ = service.router  # 503 while the first load is running
        result = await asyncio.to_thread(service.reload)
        if not result.ok:  # 503: the library cannot be read now; the previous one is still served
            return _json(503, "reload_failed", f"reload failed, still serving the previous library: "
                                               f"{result.message}", result.to_json(), headers={"Retry-After": "5"})
        return json_answer(result.to_json())

    @app.get("/healthz", tags=["operations"], summary="the process is alive")
    async def healthz() -> dict[str, Any]:
        return {"status": "alive"}

    @app.get("/readyz", tags=["operations"], summary="the library is loaded; discovery errors")
    async def readyz() -> Response:
        if not service.ready:
            error = getattr(service, "load_error", None)
            return JSONResponse({"status": "failed" if error else "loading", "error": error}, status_code=503,
                                headers={"Retry-After": "1"})
        router = service.router
        last = service.last_reload
        decision_log = service.decision_log
        return JSONResponse({"status": "ready", "profile": router.profile.name, "skills": len(router.skills),
                             "errors": list(last.errors) if last else [],
                             "warnings": list(last.warnings) if last else [], "notes": list(service.notes),
                             "reloads": service.reloads, "reload_error": service.reload_error,
                             "last_reload": last.to_json() if last else None,
                             "log": decision_log.health() if decision_log is not None else None})

    @app.get("/metrics", tags=["operations"], summary="Prometheus metrics")
    async def metrics() -> Response:
        if service.metrics is None:
            return _json(404, "http_error", "metrics are off")
        payload, content_type = service.metrics.text()
        return Response(payload, media_type=content_type)

    if mcp_server is not None:
        app.router.routes.append(Route("/mcp", endpoint=mcp_server.streamable_http_app(
            streamable_http_path="/mcp", host="127.0.0.1" if loopback else "0.0.0.0")))

    app.add_middleware(Guard, token=token, max_body=max_body, metrics=service.metrics, loopback=loopback,
                       deadline_s=service.deadline_s)
    return app
