"""Every endpoint of a real server, answering 200 and each error it documents, checked against its own
/openapi.json: the answer's status is documented for that operation and its body validates against the schema
documented for that status."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import httpx
import jsonschema
import pytest

from serve_support import serve_args

TOKEN = "s3cret-token"
QUERY = "what will the weather be tomorrow in Lyon?"
HOOK = {"hook_event_name": "UserPromptSubmit", "prompt": QUERY, "session_id": "s-1"}


def documented(spec: dict[str, Any], method: str, template: str, status: int) -> dict[str, Any]:
    """The documented response of ``method template`` for ``status`` (for a method the path does not have: the
    path's first operation's, where 405 is documented)."""
    operations = spec["paths"][template]
    operation = operations.get(method) or next(iter(operations.values()))
    responses = operation["responses"]
    assert str(status) in responses, f"{method.upper()} {template} answers {status}, undocumented ({list(responses)})"
    return responses[str(status)]


def check(spec: dict[str, Any], method: str, template: str, answer: httpx.Response, status: int) -> None:
    """``answer`` has ``status``, and its JSON body validates against what /openapi.json documents for it."""
    assert answer.status_code == status, (method, template, answer.status_code, answer.text)
    response = documented(spec, method, template, status)
    media = answer.headers["content-type"].split(";")[0]
    assert media in response["content"], (template, status, media, list(response["content"]))
    if media != "application/json":
        return
    schema = {**response["content"][media]["schema"], "components": spec["components"]}
    jsonschema.Draft202012Validator(schema).validate(answer.json())
    if status >= 400:  # the one error shape, and the documented one is that shape
        assert set(answer.json()) == {"error"} and {"type", "message"} <= set(answer.json()["error"])
        assert response["content"][media]["schema"] == {"$ref": "#/components/schemas/ErrorAnswer"}


SERVER_TOKEN = TOKEN
SERVER_MCP = False


@pytest.fixture(scope="module")
def served(server) -> Iterator[tuple[str, dict[str, Any]]]:
    """The module's server (conftest ``server``, with a token) and its /openapi.json."""
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60,
                      trust_env=False) as client:
        yield server.url, client.get("/openapi.json").json()


@pytest.fixture()
def client(served) -> Iterator[httpx.Client]:
    url, _ = served
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60,
                      trust_env=False) as client:
        yield client


def test_the_spec_documents_the_error_shape_sent_not_fastapis(served) -> None:
    _, spec = served
    assert "HTTPValidationError" not in spec["components"]["schemas"]
    for template, operations in spec["paths"].items():
        for method, operation in operations.items():
            for status in ("401", "403", "405", "500", "503"):
                assert status in operation["responses"], (method, template, status)
            for status, response in operation["responses"].items():
                assert response["content"], (method, template, status)


@pytest.mark.model
@pytest.mark.parametrize("method,path,template,body", [
    ("post", "/v1/route", "/v1/route", {"query": QUERY}),
    ("post", "/v1/route", "/v1/route", {"messages": [{"role": "user", "content": QUERY}], "pin": ["pdf-form-filling"]}),
    ("post", "/v1/route/batch", "/v1/route/batch", {"requests": [{"query": QUERY}, {"query": "fill a PDF form"}]}),
    ("get", "/v1/skills", "/v1/skills", None),
    ("get", "/v1/skills?q=weather%20tomorrow&k=3", "/v1/skills", None),
    ("get", "/v1/skills/weather-forecast", "/v1/skills/{name}", None),
    ("get", "/v1/skills/weather-forecast?body=true", "/v1/skills/{name}", None),
    ("post", "/v1/tool", "/v1/tool", {"name": "weather-forecast"}),
    ("post", "/v1/inject", "/v1/inject", {"messages": [{"role": "user", "content": QUERY}]}),
    ("post", "/v1/hooks/claude-code", "/v1/hooks/{harness}", HOOK),
    ("post", "/v1/hooks/codex", "/v1/hooks/{harness}", HOOK),
    ("post", "/v1/hooks/codex", "/v1/hooks/{harness}", {"prompt": QUERY, "hook_event_name": "Stop"}),
    ("post", "/v1/reindex", "/v1/reindex", None),
    ("get", "/healthz", "/healthz", None),
    ("get", "/readyz", "/readyz", None),
    ("get", "/metrics", "/metrics", None),
])
def test_every_endpoint_answers_what_the_spec_says(served, client, method, path, template, body) -> None:
    _, spec = served
    answer = client.request(method.upper(), path, json=body) if body is not None else client.request(method, path)
    check(spec, method, template, answer, 200)


@pytest.mark.model
def test_the_answers_hold_what_they_name(served, client) -> None:
    """The 200 bodies carry real values, not only the right shape."""
    routed = client.post("/v1/route", json={"query": QUERY}).json()
    best = routed["matches"][0]["name"]
    assert best in ("weather-forecast", "current-weather") and best in routed["shown"]
    hook = client.post("/v1/hooks/claude-code", json=HOOK).json()
    assert hook["hookSpecificOutput"]["additionalContext"].splitlines()[1].startswith(f"- {best}: ")
    assert client.post("/v1/hooks/codex", json={"prompt": QUERY, "hook_event_name": "Stop"}).json() == {}
    detail = client.get("/v1/skills/weather-forecast?body=true").json()
    assert detail["name"] == "weather-forecast" and detail["body"].strip() and isinstance(detail["metadata"], dict)


@pytest.mark.model
@pytest.mark.parametrize("method,path,template,body,headers,status,kind", [
    ("post", "/v1/route", "/v1/route", {"query": QUERY}, {"Authorization": "Bearer wrong"}, 401, "unauthorized"),
    ("post", "/v1/route", "/v1/route", {"query": QUERY}, {"Host": "rebind.example"}, 403, "forbidden_host"),
    ("get", "/v1/skills/no-such-skill", "/v1/skills/{name}", None, {}, 404, "skill_not_found"),
    ("post", "/v1/hooks/genkit", "/v1/hooks/{harness}", HOOK, {}, 404, "unknown_harness"),
    ("get", "/v1/route", "/v1/route", None, {}, 405, "http_error"),
    ("post", "/v1/route", "/v1/route", "x" * (2 << 20), {"Content-Type": "application/json"}, 413,
     "body_too_large"),
    ("post", "/v1/route", "/v1/route", "query=x", {"Content-Type": "text/plain"}, 415, "unsupported_media_type"),
    ("post", "/v1/route", "/v1/route", {"qeury": QUERY}, {}, 422, "invalid_request"),
    ("post", "/v1/route/batch", "/v1/route/batch", {"requests": []}, {}, 422, "invalid_request"),
    ("post", "/v1/tool", "/v1/tool", {"name": "no-such-skill"}, {}, 422, "tool_call_failed"),
    ("post", "/v1/inject", "/v1/inject", {"messages": []}, {}, 422, "invalid_request"),
    ("get", "/v1/skills?k=0", "/v1/skills", None, {}, 422, "invalid_request"),
    ("post", "/v1/hooks/claude-code", "/v1/hooks/{harness}", {"session_id": "s"}, {}, 422, "invalid_request"),
])
def test_every_error_has_the_documented_shape(served, client, method, path, template, body, headers, status,
                                              kind) -> None:
    _, spec = served
    if isinstance(body, str):
        answer = client.request(method.upper(), path, content=body.encode(), headers=headers)
    elif body is not None:
        answer = client.request(method.upper(), path, json=body, headers=headers)
    else:
        answer = client.request(method.upper(), path, headers=headers)
    check(spec, method, template, answer, status)
    assert answer.json()["error"]["type"] == kind


@pytest.mark.model
def test_an_unknown_path_answers_the_error_shape(served, client) -> None:
    _, spec = served
    answer = client.get("/v2/nowhere")
    assert answer.status_code == 404
    schema = {"$ref": "#/components/schemas/ErrorAnswer", "components": spec["components"]}
    jsonschema.Draft202012Validator(schema).validate(answer.json())
    assert answer.json() == {"error": {"type": "http_error", "message": "no such endpoint: see /openapi.json"}}


@contextmanager
def not_loaded(tmp_path: Path) -> Iterator[str]:
    """A real server whose library is never loaded (``load=False``): every route answers 503."""
    import uvicorn

    from router.cli.serve import build_service
    from router.serve.app import create_app

    service, _ = build_service(serve_args(["--skills", str(tmp_path), "--no-watch"]))
    server = uvicorn.Server(uvicorn.Config(create_app(service, mcp=False, load=False), host="127.0.0.1", port=0,
                                           log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        service.close()


def test_a_server_still_loading_answers_503_as_documented(tmp_path: Path) -> None:
    with not_loaded(tmp_path) as url, httpx.Client(base_url=url, timeout=30, trust_env=False) as client:
        spec = client.get("/openapi.json").json()
        routed = client.post("/v1/route", json={"query": QUERY})
        check(spec, "post", "/v1/route", routed, 503)
        assert routed.json()["error"]["type"] == "not_ready"
        hooked = client.post("/v1/hooks/codex", json=HOOK)
        check(spec, "post", "/v1/hooks/{harness}", hooked, 503)
        ready = client.get("/readyz")
        assert (ready.status_code, ready.json()) == (503, {"status": "loading", "error": None})
        schema = {**documented(spec, "get", "/readyz", 503)["content"]["application/json"]["schema"],
                  "components": spec["components"]}
        jsonschema.Draft202012Validator(schema).validate(ready.json())
        check(spec, "get", "/healthz", client.get("/healthz"), 200)
