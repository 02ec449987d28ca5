"""``skill-router serve`` over real HTTP: the /v1 API, its bounds and errors, security, metrics and OpenAPI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from router.profiles import get_profile
from router.library import from_folders
from serve_support import running, write_skill

pytestmark = pytest.mark.model  # a real server with the real model


@pytest.fixture(scope="module")
def http(server):
    """(client, service, library, root) of the module's server (conftest ``server``)."""
    with httpx.Client(base_url=server.url, timeout=30, trust_env=False) as client:
        yield client, server.service, server.library, server.root


def test_route_answers_the_ranking_the_catalogue_and_timings(http) -> None:
    client, service, _, _ = http
    answer = client.post("/v1/route", json={"query": "review my Go code for goroutine leaks", "k": 3})
    assert answer.status_code == 200
    body = answer.json()
    assert [m["rank"] for m in body["matches"]] == [1, 2, 3]
    assert body["matches"][0]["name"] == "go-code-review"
    assert set(body["matches"][0]["scores"]) >= {"bm25", "dense"} and set(body["matches"][0]["ranks"]) >= {"bm25"}
    routing = service.router.route("review my Go code for goroutine leaks", 3)
    assert body["shown"] == [s.name for s in routing.shown]
    assert body["catalogue"] == service.router.profile.render(list(routing.shown))
    assert body["profile"] == "genkit" and body["routed"] is True and body["abstained"] is False
    assert {"queued_ms", "route_ms", "render_ms", "total_ms"} <= set(body["timings"])


def test_the_server_scores_on_one_blas_thread(http) -> None:
    """A pool of BLAS threads made each request's small matrix products wait for a busy core (12x slower)."""
    import numpy
    from threadpoolctl import threadpool_info

    # numpy's own BLAS (in numpy.libs/ beside the package); torch and scipy bring theirs
    numpy_blas = [pool["num_threads"] for pool in threadpool_info()
                  if pool["user_api"] == "blas" and pool["filepath"].startswith(os.path.dirname(numpy.__file__))]
    assert numpy_blas == [1]


def test_route_takes_a_conversation_and_per_request_pin_and_exclude(http) -> None:
    client, _, _, _ = http
    messages = [{"role": "user", "content": "I have a CSV export"},
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": [{"type": "text", "text": "will it rain in Lyon this weekend?"}]}]
    body = client.post("/v1/route", json={"messages": messages, "k": 2, "pin": ["go-code-review"],
                                          "exclude": ["weather-forecast"]}).json()
    names = [m["name"] for m in body["matches"]]
    assert "weather-forecast" not in names and "weather-forecast" not in body["shown"]
    assert "go-code-review" in body["shown"]
    assert body["matches"][-1]["name"] == "go-code-review" and body["matches"][-1]["reason"] == "pinned"


def test_batch_routes_each_request_as_route_does(http) -> None:
    client, _, _, _ = http
    queries = ["rain in Lyon tomorrow?", "write a commit message for this diff", "convert 5 miles to km"]
    batch = client.post("/v1/route/batch", json={"requests": [{"query": q, "k": 2} for q in queries]}).json()
    single = [client.post("/v1/route", json={"query": q, "k": 2}).json() for q in queries]
    assert [r["shown"] for r in batch["results"]] == [r["shown"] for r in single]
    assert [[m["id"] for m in r["matches"]] for r in batch["results"]] == [[m["id"] for m in r["matches"]]
                                                                           for r in single]
    too_many = client.post("/v1/route/batch", json={"requests": [{"query": "x"}] * 65})
    assert too_many.status_code == 422 and "requests" in too_many.json()["error"]["message"]


def test_skills_listing_ranking_and_metadata(http) -> None:
    client, service, _, _ = http
    listing = client.get("/v1/skills").json()
    assert listing["total"] == len(service.router.skills) == len(listing["skills"])
    ranked = client.get("/v1/skills", params={"q": "weather tomorrow in Paris", "k": 2}).json()
    assert [s["rank"] for s in ranked["skills"]] == [1, 2] and ranked["skills"][0]["score"] is not None
    one = client.get("/v1/skills/weather-forecast").json()
    assert one["name"] == "weather-forecast" and "body" not in one
    full = client.get("/v1/skills/weather-forecast", params={"body": "true"}).json()
    assert full["body"] == service.router.registry.get("weather-forecast").body
    missing = client.get("/v1/skills/wether-forecast")
    assert missing.status_code == 404 and "weather-forecast" in missing.json()["error"]["message"]


def test_tool_returns_exactly_what_the_profile_returns(http) -> None:
    client, _, library, _ = http
    profile = get_profile("genkit")
    registry = from_folders([str(library)], profile).registry
    expected = profile.call_tool(registry, {"skillName": "weather-forecast"}, "use_skill")
    answer = client.post("/v1/tool", json={"name": "weather-forecast"})
    assert answer.status_code == 200 and answer.json()["result"] == expected
    raw = client.post("/v1/tool", json={"arguments": '{"skillName": "weather-forecast"}'})
    assert raw.json()["result"] == expected
    failed = client.post("/v1/tool", json={"name": "no-such-skill"})
    assert failed.status_code == 422 and failed.json()["error"]["type"] == "tool_call_failed"
    with pytest.raises(Exception) as harness_error:
        profile.call_tool(registry, {"skillName": "no-such-skill"}, "use_skill")
    assert failed.json()["error"]["message"] == str(harness_error.value)


def test_inject_is_idempotent(http) -> None:
    client, _, _, _ = http
    messages = [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": "rain in Lyon?"}]
    once = client.post("/v1/inject", json={"messages": messages, "k": 2}).json()
    twice = client.post("/v1/inject", json={"messages": once["messages"], "k": 2}).json()
    assert once["messages"] == twice["messages"]
    block = once["messages"][0]["content"][-1]
    assert block["metadata"] == {"skills-instructions": True} and "<skills>" in block["text"]


MALFORMED = [
    ("/v1/route", {}, "query"),
    ("/v1/route", {"qeury": "x"}, "qeury"),
    ("/v1/route", {"query": "x", "messages": [{"role": "user", "content": "y"}]}, "exactly one"),
    ("/v1/route", {"query": "   "}, "empty"),
    ("/v1/route", {"query": "x", "k": 0}, "body.k"),
    ("/v1/route", {"query": "x", "k": 51}, "body.k"),
    ("/v1/route", {"query": "x", "k": "5"}, "body.k"),
    ("/v1/route", {"query": "x", "k": True}, "body.k"),
    ("/v1/route", {"query": "x", "k": 1.5}, "body.k"),
    ("/v1/route", {"query": 7}, "body.query"),
    ("/v1/route", {"query": "x" * 8001}, "body.query"),
    ("/v1/route", {"query": "x", "pin": ["no-such-skill"]}, "no-such-skill"),
    ("/v1/route", {"query": "x", "exclude": "weather-forecast"}, "body.exclude"),
    ("/v1/route", {"messages": []}, "body.messages"),
    ("/v1/route", {"messages": [{"role": "assistant", "content": "hi"}]}, "user turn"),
    ("/v1/route", {"messages": [{"content": "hi"}]}, "role"),
    ("/v1/route", [1, 2], "body"),
    ("/v1/route/batch", {"requests": []}, "body.requests"),
    ("/v1/route/batch", {"requests": [{"query": "x", "k": -1}]}, "body.requests.0.k"),
    ("/v1/tool", {}, "exactly one"),
    ("/v1/tool", {"name": ""}, "body.name"),
    ("/v1/inject", {"messages": "hello"}, "body.messages"),
    ("/v1/hooks/claude-code", {"session_id": "s"}, "body.prompt"),
    ("/v1/hooks/codex", {"prompt": None}, "body.prompt"),
]


@pytest.mark.parametrize("path,body,named", MALFORMED)
def test_malformed_bodies_get_a_4xx_json_error_naming_the_problem(http, path, body, named) -> None:
    client, _, _, _ = http
    answer = client.post(path, json=body)
    assert 400 <= answer.status_code < 500, answer.text
    error = answer.json()["error"]
    assert named in json.dumps(error), error
    assert "Traceback" not in answer.text and str(Path(__file__).parents[1]) not in answer.text


def test_unreadable_bodies_lone_surrogates_and_wrong_content_types(http) -> None:
    client, _, _, _ = http
    cases = [(b"not json", "application/json", 422, "not valid JSON"),
             (b'{"query": "\\ud800"}', "application/json", 422, "body.query"),
             (b"\xff\xfe{}", "application/json", 422, "JSON"),
             (b"{\"query\": \"\xff\"}", "application/json", 400, "UTF-8"),
             (b"{\"query\": \"x\", \"k\": NaN}", "application/json", 422, "body.k"),
             (b"[" * 50_000 + b"]" * 50_000, "application/json", 400, "nested"),
             (b'{"query": "x"}', "text/plain", 415, "application/json")]
    for content, content_type, status, named in cases:
        answer = client.post("/v1/route", content=content, headers={"Content-Type": content_type})
        assert answer.status_code == status, (content[:20], answer.text)
        assert named in answer.json()["error"]["message"]


def test_bodies_over_the_limit_are_refused_with_413(http) -> None:
    client, _, _, _ = http
    big = json.dumps({"query": "x" * (1 << 20)})
    assert client.post("/v1/route", content=big, headers={"Content-Type": "application/json"}).status_code == 413

    def chunks():  # no Content-Length: counted as it streams
        for _ in range(40):
            yield b"x" * 32768

    streamed = client.post("/v1/route", content=chunks(), headers={"Content-Type": "application/json"})
    assert streamed.status_code == 413 and streamed.json()["error"]["type"] == "body_too_large"


def test_unknown_paths_methods_and_foreign_hosts(http) -> None:
    client, _, _, _ = http
    assert client.get("/v1/nothing").status_code == 404
    assert client.get("/v1/route").status_code == 405
    foreign = client.get("/healthz", headers={"Host": "attacker.example"})
    assert foreign.status_code == 403 and foreign.json()["error"]["type"] == "forbidden_host"
    assert client.get("/healthz", headers={"Host": "localhost:1"}).status_code == 200
    assert "access-control-allow-origin" not in client.options(
        "/v1/route", headers={"Origin": "http://example.com", "Access-Control-Request-Method": "POST"}).headers


def test_readyz_and_reindex_report_the_library(http) -> None:
    client, _, _, _ = http
    ready = client.get("/readyz").json()
    assert ready["status"] == "ready" and ready["skills"] == 52 and ready["errors"] == []
    assert client.get("/healthz").json() == {"status": "alive"}
    again = client.post("/v1/reindex").json()
    assert again["ok"] is True and again["embedded"] == 0 and again["skills"] == 52


def test_metrics_count_requests_errors_skills_and_reloads(http) -> None:
    client, _, _, _ = http
    client.post("/v1/route", json={"query": "rain?"})
    client.post("/v1/route", json={})
    text = client.get("/metrics").text
    assert 'skill_router_requests_total{method="POST",route="/v1/route",status="200"}' in text
    assert 'skill_router_request_errors_total{route="/v1/route",status="422"}' in text
    assert "skill_router_skills_indexed 52.0" in text
    assert "skill_router_request_seconds_bucket" in text and "skill_router_batch_size_count" in text


def test_openapi_has_a_schema_for_every_body(http) -> None:
    client, _, _, _ = http
    spec = client.get("/openapi.json").json()
    for path in ("/v1/route", "/v1/route/batch", "/v1/tool", "/v1/inject", "/v1/hooks/{harness}"):
        body = spec["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
        assert "$ref" in body, path
    [harness] = spec["paths"]["/v1/hooks/{harness}"]["post"]["parameters"]
    assert harness["schema"]["enum"] == ["claude-code", "codex"]
    assert spec["components"]["schemas"]["RouteRequest"]["properties"]["k"]["anyOf"][0]["maximum"] == 50


def test_decision_log_links_a_load_to_the_routing_before_it(http) -> None:
    client, _, _, root = http
    routed = client.post("/v1/route", json={"query": "what will the weather be tomorrow in Lyon?"}).json()
    loaded = client.post("/v1/tool", json={"name": "weather-forecast", "route_id": routed["request_id"]}).json()
    assert loaded["after"] == routed["request_id"]
    records = [json.loads(line) for line in (root / "decisions.jsonl").read_text().splitlines()]
    route = next(r for r in records if r["id"] == routed["request_id"])
    assert route["request"] == "what will the weather be tomorrow in Lyon?" and route["type"] == "route"
    load = [r for r in records if r["type"] == "load"][-1]
    assert load["skill"] == "weather-forecast" and load["after"] == routed["request_id"] and load["shown"] is True


SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
JSON = st.recursive(SCALARS | st.text(max_size=30),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner,
                                                                                 max_size=4), max_leaves=12)
FIELDS = st.fixed_dictionaries({}, optional={
    "query": JSON | st.text(max_size=50), "messages": JSON, "k": JSON, "pin": JSON, "exclude": JSON,
    "requests": JSON, "name": JSON, "arguments": JSON, "prompt": JSON | st.text(max_size=50),
    "hook_event_name": JSON})
PATHS = ["/v1/route", "/v1/route/batch", "/v1/tool", "/v1/inject", "/v1/hooks/claude-code", "/v1/hooks/codex"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(PATHS), body=FIELDS | JSON)
def test_fuzzed_bodies_never_get_a_5xx(http, path, body) -> None:
    client, _, _, _ = http
    answer = client.post(path, json=body)
    assert answer.status_code < 500, (path, body, answer.text)
    assert answer.headers["content-type"].startswith("application/json")


def test_a_token_is_required_when_configured(tmp_path: Path) -> None:
    library = tmp_path / "skills"
    write_skill(library, "one", "The only skill.")
    argv = ["--skills", str(library), "--index-dir", str(tmp_path / "idx"), "--no-log", "--no-watch"]
    with running(argv, token="s3cret-token", mcp=False) as (url, _):
        with httpx.Client(base_url=url, trust_env=False) as client:
            assert client.get("/healthz").status_code == 401
            assert client.get("/healthz", headers={"Authorization": "Bearer wrong"}).status_code == 401
            denied = client.get("/healthz", headers={"Authorization": "Basic s3cret-token"})
            assert denied.status_code == 401 and denied.headers["www-authenticate"] == "Bearer"
            assert client.get("/healthz", headers={"Authorization": "Bearer s3cret-token"}).status_code == 200


def test_non_loopback_host_without_token_refuses_to_start(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "router.cli", "serve", "--host", "0.0.0.0", "--skills",
                           str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "refusing to listen on 0.0.0.0 without --token-file" in done.stderr
