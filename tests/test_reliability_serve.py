"""Nothing a library, a request or a disk can do takes ``skill-router serve`` down: one test per row of the
reliability table (a huge skill, a failing decision log, a library folder that goes away, a busy port), each
against a real uvicorn server on a free loopback port.

The router embeds with a deterministic hash encoder here: these tests are about the server, not about ranking."""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import json
import logging
import os
import shutil
import socket
import stat
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import httpx
import numpy as np
import pytest

from router.routing import Router
from router.serve.log import DecisionLog, read_log
from router.serve.metrics import Metrics
from router.serve.payload import MetadataTooLarge, metadata_json
from router.serve.service import Service
from serve_support import write_skill

ROOT = Path(__file__).resolve().parents[1]


class HashEncoder:
    """A fixed vector per text (no model): routing works, its ranking is not under test."""

    model_id, dim = "test/hash-encoder", 8

    def encode(self, texts: Any, **_: Any) -> np.ndarray:
        rows = [np.frombuffer(hashlib.sha256(t.encode("utf-8", "replace")).digest()[:8], dtype=np.uint8)
                for t in texts]
        vectors = np.array(rows, dtype=np.float32) + 1
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def library(root: Path) -> Path:
    for name, text in [("weather", "Get the weather forecast and rain for a city."),
                       ("git-commit", "Write a git commit message from the staged diff."),
                       ("sql-query", "Write and optimise SQL queries for PostgreSQL."),
                       ("slides", "Make presentation slides with speaker notes."),
                       ("translate", "Translate text between English and French."),
                       ("csv-clean", "Clean broken dates and encodings in a CSV file.")]:
        write_skill(root, name, text)
    return root


def service_for(skills: Path, index: Path, **options: Any) -> Service:
    encoder = HashEncoder()
    return Service(lambda shared: Router.from_skills([str(skills)], "agentskills", index_folder=str(index),
                                                     encoder=shared or encoder),
                   model=encoder, metrics=Metrics(), **options)


@contextmanager
def serving(service: Service, watch: list[str] | None = None) -> Iterator[httpx.Client]:
    """A client of a real server over ``service`` (loaded, watching ``watch``), stopped on exit."""
    import uvicorn

    from router.serve.app import create_app

    app = create_app(service, mcp=False, watch=watch or [])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30, trust_env=False) as client:
            while client.get("/readyz").status_code != 200:
                assert time.monotonic() < deadline, "the library did not load"
                time.sleep(0.05)
            yield client
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        service.close()


def wait_for(check: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def alias_bomb(levels: int = 9, width: int = 9) -> dict[str, Any]:
    """What PyYAML builds from aliases nested ``levels`` deep: shared lists, ``width ** levels`` leaves once
    expanded (9 ** 9 = 387,420,489), a few hundred bytes in memory."""
    node: Any = [7] * width
    for _ in range(levels - 1):
        node = [node] * width
    return {"bomb": node}


def set_metadata(service: Service, name: str, metadata: Any) -> None:
    skill = service.router.registry.find(name)
    object.__setattr__(skill, "metadata", metadata)  # emulates a SKILL.md that parsed into this


def timed_get(client: httpx.Client, path: str) -> tuple[float, httpx.Response]:
    start = time.perf_counter()
    answer = client.get(path)
    return time.perf_counter() - start, answer


# -- row 2: CPU-heavy work never runs on the event loop ---------------------------------------------------------
def test_row_2_huge_metadata_gets_503_past_the_deadline_while_healthz_answers_within_50_ms(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import router.serve.payload as payload

    monkeypatch.setattr(payload, "MAX_METADATA_BYTES", 1 << 30)  # so that the deadline is what stops it
    service = service_for(library(tmp_path / "skills"), tmp_path / "idx", deadline_s=1.0)
    with serving(service) as client:
        set_metadata(service, "weather", alias_bomb())
        slow: dict[str, Any] = {}

        def fetch() -> None:
            with httpx.Client(base_url=str(client.base_url), timeout=30, trust_env=False) as other:
                slow["seconds"], slow["answer"] = timed_get(other, "/v1/skills/weather?body=true")

        thread = threading.Thread(target=fetch)
        thread.start()
        time.sleep(0.1)  # the slow request is in flight
        latencies = []
        while thread.is_alive():
            seconds, answer = timed_get(client, "/healthz")
            assert answer.json() == {"status": "alive"}
            latencies.append(seconds)
            time.sleep(0.02)
        thread.join()
        assert slow["answer"].status_code == 503
        assert slow["answer"].json()["error"] == {
            "type": "deadline_exceeded",
            "message": "the request took longer than its deadline of 1 s and was given up: retry, or start the "
                       "server with a larger --request-timeout"}
        assert 1.0 <= slow["seconds"] < 3.0
        # within 50 ms; on a shared 2-core machine the scheduler alone stalls an idle server by up to ~30 ms, so
        # one answer in ten may be late, but none waits for the slow request (which took over a second)
        within = sum(1 for seconds in latencies if seconds < 0.05)
        assert len(latencies) >= 10 and within >= 0.9 * len(latencies) and max(latencies) < 0.5, latencies
        # the server is not stuck: the next requests, this skill's included, answer at once
        assert client.get("/v1/skills/weather").json()["name"] == "weather"
        assert client.post("/v1/route", json={"query": "rain in Lyon"}).status_code == 200


def test_row_2_an_alias_bomb_is_refused_by_size_within_seconds_naming_the_skill(tmp_path: Path) -> None:
    service = service_for(library(tmp_path / "skills"), tmp_path / "idx")
    with serving(service) as client:
        set_metadata(service, "weather", alias_bomb())
        seconds, answer = timed_get(client, "/v1/skills/weather?body=true")
        assert answer.status_code == 422 and seconds < 5.0
        assert answer.json()["error"] == {
            "type": "metadata_too_large",
            "message": "the frontmatter metadata of skill 'weather' is larger than 1048576 bytes as JSON (YAML "
                       "aliases can expand a small file): shorten it; without ?body=true the skill is still "
                       "answered"}
        assert client.get("/v1/skills/weather").json()["description"] == "Get the weather forecast and rain for a city."


def test_row_2_metadata_json_cannot_take_is_sent_as_text_never_a_500(tmp_path: Path) -> None:
    service = service_for(library(tmp_path / "skills"), tmp_path / "idx")
    with serving(service) as client:
        loop: list[Any] = []
        loop.append(loop)  # an alias inside itself
        set_metadata(service, "weather", {"released": datetime.date(2024, 5, 1), datetime.date(2020, 1, 2): "x",
                                          1: True, None: "none", "ratio": float("nan"), "tags": ("a", "b")})
        answer = client.get("/v1/skills/weather?body=true")
        assert answer.status_code == 200
        assert answer.json()["metadata"] == {"released": "2024-05-01", "2020-01-02": "x", "1": True, "null": "none",
                                             "ratio": "nan", "tags": ["a", "b"]}
        assert answer.json()["body"] == "Steps."
        set_metadata(service, "weather", {"loop": loop})
        answer = client.get("/v1/skills/weather?body=true")
        assert answer.status_code == 422
        assert answer.json()["error"] == {
            "type": "metadata_too_large",
            "message": "the frontmatter metadata of skill 'weather' nests deeper than 64 levels (YAML aliases can "
                       "expand a small file): shorten it; without ?body=true the skill is still answered"}


def test_row_2_metadata_is_encoded_within_a_byte_limit() -> None:
    far = time.monotonic() + 60
    assert metadata_json("s", {"a": [1, 2]}, deadline=far, seconds=60) == '{"a":[1,2]}'
    with pytest.raises(MetadataTooLarge, match="^the frontmatter metadata of skill 's' is larger than 1000 bytes "):
        metadata_json("s", alias_bomb(), deadline=far, seconds=60, max_bytes=1000)


def test_row_2_mcp_tools_run_in_the_workers_under_the_deadline(tmp_path: Path) -> None:
    from mcp.server.mcpserver.exceptions import ToolError

    from router.serve.mcp import build_mcp

    service = service_for(library(tmp_path / "skills"), tmp_path / "idx", deadline_s=0.5)
    service.load()
    server = build_mcp(service)
    profile = service.router.profile
    release = threading.Event()
    original = type(profile).call_tool

    def stuck(self: Any, *args: Any, **kwargs: Any) -> Any:
        release.wait(10)  # a skill tool that takes far longer than the deadline
        return original(self, *args, **kwargs)

    async def scenario() -> tuple[float, str, float]:
        start = time.perf_counter()
        ticks: list[float] = []

        async def ticker() -> None:  # the event loop keeps turning while the tool is stuck
            while True:
                before = time.perf_counter()
                await asyncio.sleep(0.01)
                ticks.append(time.perf_counter() - before)

        task = asyncio.create_task(ticker())
        try:
            await server.call_tool("load_skill", {"name": "weather"})
        except ToolError as exc:
            message = str(exc)
        else:
            message = "no error"
        task.cancel()
        return time.perf_counter() - start, message, max(ticks)

    type(profile).call_tool = stuck  # type: ignore[method-assign]
    try:
        seconds, message, longest_tick = asyncio.run(scenario())
    finally:
        type(profile).call_tool = original  # type: ignore[method-assign]
        release.set()
        service.close()
    assert "took longer than its deadline of 0.5 s" in message
    assert 0.5 <= seconds < 2.0 and longest_tick < 0.05


# -- row 3: a failure to log never fails a request --------------------------------------------------------------
def routed_all(client: httpx.Client, count: int) -> list[int]:
    return [client.post("/v1/route", json={"query": f"rain in city number {i}"}).status_code for i in range(count)]


def records_in(path: Path) -> int:
    return len(read_log(str(path))[0])


def test_row_3_a_log_deleted_while_serving_is_reopened_and_no_request_fails(tmp_path: Path) -> None:
    log_path = tmp_path / "logs" / "decisions.jsonl"
    service = service_for(library(tmp_path / "skills"), tmp_path / "idx",
                          decision_log=DecisionLog(str(log_path), max_bytes=20000))
    with serving(service) as client:
        assert routed_all(client, 5) == [200] * 5
        for old in tmp_path.joinpath("logs").iterdir():
            old.unlink()
        assert routed_all(client, 60) == [200] * 60
        assert os.path.exists(f"{log_path}.1")  # it rotated since
        assert records_in(log_path) == 60  # and every record written after the deletion is there
        assert client.get("/readyz").json()["log"]["ok"] is True


def test_row_3_a_failed_rotation_is_reported_in_readyz_metrics_and_the_server_log(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    log_path = tmp_path / "decisions.jsonl"
    service = service_for(library(tmp_path / "skills"), tmp_path / "idx",
                          decision_log=DecisionLog(str(log_path), max_bytes=3000))
    (tmp_path / "decisions.jsonl.1").mkdir()  # what a rotation would replace
    with serving(service) as client, caplog.at_level(logging.ERROR, logger="router.serve"):
        assert routed_all(client, 60) == [200] * 60
        ready = client.get("/readyz").json()
        metrics = client.get("/metrics").text
    reason = f"cannot rotate the decision log '{log_path}': '{log_path}.1' is not a log file: remove or rename it"
    assert ready["status"] == "ready"
    assert ready["log"] == {"path": str(log_path), "ok": False, "failures": 1, "error": reason}
    assert "skill_router_log_failures_total 1.0" in metrics
    assert [r.getMessage() for r in caplog.records if "decision log" in r.getMessage()] == [
        f"decision log: {reason}; requests are still answered (failures so far: 1)"]
    lines = log_path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 60 and all(json.loads(line)["type"] == "route" for line in lines)  # the file kept them all


def test_row_3_a_log_that_cannot_be_reopened_counts_each_lost_record_and_recovers(tmp_path: Path,
                                                                                    monkeypatch) -> None:
    import router.serve.log as log_module

    folder = tmp_path / "logs"
    decisions = DecisionLog(str(folder / "decisions.jsonl"))
    failures: list[int] = []
    decisions.on_failure = lambda: failures.append(1)
    decisions.loaded("weather", "tool")
    shutil.rmtree(folder)
    folder.write_text("a file where the log's folder was")
    decisions.loaded("weather", "tool")
    decisions.loaded("weather", "tool")
    assert decisions.health()["ok"] is False and decisions.health()["failures"] == 2 == len(failures)
    assert decisions.health()["error"].startswith(f"cannot reopen the decision log '{folder / 'decisions.jsonl'}'")
    folder.unlink()
    monkeypatch.setattr(log_module, "RETRY_S", 0.0)
    decisions._retry_at = 0.0  # as after RETRY_S seconds
    decisions.loaded("weather", "tool")
    decisions.close()
    assert decisions.health() == {"path": str(folder / "decisions.jsonl"), "ok": True, "failures": 2, "error": None}
    assert records_in(folder / "decisions.jsonl") == 1


def test_row_12_decision_log_records_are_0600_in_a_0700_folder(tmp_path: Path) -> None:
    made = DecisionLog(str(tmp_path / "new" / "deeper" / "decisions.jsonl"))
    made.loaded("weather", "tool")
    made.close()
    assert stat.S_IMODE(os.stat(tmp_path / "new" / "deeper").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(tmp_path / "new" / "deeper" / "decisions.jsonl").st_mode) == 0o600
    wide = tmp_path / "old.jsonl"
    wide.write_text("")
    wide.chmod(0o644)
    DecisionLog(str(wide)).close()
    assert stat.S_IMODE(os.stat(wide).st_mode) == 0o600
    rotated = DecisionLog(str(tmp_path / "r.jsonl"), max_bytes=200)
    for _ in range(5):
        rotated.loaded("weather", "tool")
    rotated.close()
    assert stat.S_IMODE(os.stat(tmp_path / "r.jsonl").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "r.jsonl.1").st_mode) == 0o600


KILLED_WRITER = """
import sys
sys.path.insert(0, {repo!r})
from router.serve.log import DecisionLog
log = DecisionLog({path!r}, max_bytes=20000)
for n in range(1, 100000):
    log.loaded("weather", "tool")
    print(n, flush=True)
"""


def test_row_3_sigkill_loses_no_flushed_record_across_rotations(tmp_path: Path) -> None:
    path = tmp_path / "decisions.jsonl"
    child = subprocess.Popen([sys.executable, "-c", KILLED_WRITER.format(repo=str(ROOT), path=str(path))],
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    written = 0
    for line in child.stdout:
        written = int(line)
        if written >= 300:
            break
    child.kill()
    child.wait(timeout=10)
    child.stdout.close()
    records, torn = read_log(str(path))
    assert os.path.exists(f"{path}.2")  # it rotated twice, and kept every record: 6 files of 20000 bytes hold them
    assert len(records) >= written and torn <= 1
    assert len({r["id"] for r in records}) == len(records)


@pytest.mark.parametrize("flag, value, message", [
    ("--log-max-bytes", "-1", "--log-max-bytes must be above 0, got -1: give e.g. 10000000 (10 MB), or --no-log to "
                              "write no log"),
    ("--log-max-bytes", "0", "--log-max-bytes must be above 0, got 0: give e.g. 10000000 (10 MB), or --no-log to "
                             "write no log"),
    ("--request-timeout", "0", "--request-timeout must be above 0, got 0: give e.g. 10"),
    ("--reload-interval", "-1", "--reload-interval must be above 0, got -1: give e.g. 1"),
    ("--max-body", "0", "--max-body must be above 0, got 0: give e.g. 1048576 (1 MiB)"),
    ("--threads", "-2", "--threads must be above 0, got -2: give e.g. 1, or 0 to leave torch's default"),
])
def test_row_12_sizes_counts_and_times_below_1_are_refused_with_exit_2(tmp_path: Path, flag: str, value: str,
                                                                      message: str) -> None:
    skills = library(tmp_path / "skills")
    done = subprocess.run([sys.executable, "-m", "router.cli", "serve", "--skills", str(skills), "--port", "0",
                           "--exit-after", "3", flag, value], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert (done.returncode, done.stderr) == (2, f"skill-router serve: error: {message}\n")


# -- row 4: a failed reload keeps the old library -----------------------------------------------------------------
def test_row_4_a_removed_library_keeps_serving_names_the_reason_and_is_picked_up_again(tmp_path: Path) -> None:
    skills = library(tmp_path / "skills")
    service = service_for(skills, tmp_path / "idx", reload_interval=0.2)
    with serving(service, watch=[str(skills)]) as client:
        shutil.move(str(skills), str(tmp_path / "away"))
        answer = client.post("/v1/reindex")
        assert answer.status_code == 503
        error = answer.json()["error"]
        assert error["type"] == "reload_failed"
        reason = error["details"]["message"]
        assert str(skills) in reason and "does not exist" in reason
        assert error["message"] == f"reload failed, still serving the previous library: {reason}"
        assert error["details"]["ok"] is False and error["details"]["skills"] == 6
        ready = client.get("/readyz").json()
        assert (ready["status"], ready["skills"], ready["reload_error"]) == ("ready", 6, reason)
        assert ready["last_reload"]["message"] == reason
        assert "skill_router_reload_failing 1.0" in client.get("/metrics").text
        assert client.post("/v1/route", json={"query": "rain in Lyon"}).status_code == 200
        assert client.get("/v1/skills/weather").status_code == 200
        # the folder comes back, with one skill more: the watcher picks it up with no request
        shutil.move(str(tmp_path / "away"), str(skills))
        write_skill(skills, "unit-conversion", "Convert quantities between metric and imperial units.")
        wait_for(lambda: client.get("/readyz").json()["skills"] == 7)
        ready = client.get("/readyz").json()
        assert ready["reload_error"] is None and ready["last_reload"]["ok"] is True
        assert "skill_router_reload_failing 0.0" in client.get("/metrics").text
        # and it still watches the folder it came back as
        write_skill(skills, "unit-conversion", "Convert furlongs and light years.")
        wait_for(lambda: client.get("/v1/skills/unit-conversion").json()["description"]
                 == "Convert furlongs and light years.")


def test_row_4_a_failed_reload_is_retried_with_backoff_until_it_succeeds(tmp_path: Path) -> None:
    from router.serve.reload import watch_folders

    folder = tmp_path / "skills"
    folder.mkdir()
    outcomes = iter([False, False, True])
    calls: list[float] = []

    class Result:
        def __init__(self, ok: bool) -> None:
            self.ok = ok

    def reload() -> Result:
        calls.append(time.monotonic())
        return Result(next(outcomes, True))

    stop = threading.Event()
    thread = threading.Thread(target=watch_folders, args=([str(folder)], reload, stop),
                              kwargs={"interval_s": 0.0, "poll_s": 0.1, "debounce_ms": 50})
    thread.start()
    try:
        time.sleep(0.5)
        write_skill(folder, "weather", "Weather.")
        wait_for(lambda: len(calls) >= 3, timeout=15)
        time.sleep(1.0)
    finally:
        stop.set()
        thread.join(timeout=10)
    assert len(calls) == 3  # the change, then a retry after 1 s and one after 2 s; none after the success
    assert 0.9 <= calls[1] - calls[0] < 1.6 and 1.9 <= calls[2] - calls[1] < 2.6


# -- row 9: a busy port ---------------------------------------------------------------------------------------------
def test_row_9_a_busy_port_is_one_line_and_exit_2_before_listening(tmp_path: Path) -> None:
    skills = library(tmp_path / "skills")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "router.cli", "serve", "--skills", str(skills), "--port",
                               str(port), "--exit-after", "5", "--no-log"], capture_output=True, text=True,
                              timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2
    assert done.stderr == (f"skill-router serve: error: port {port} on 127.0.0.1 is already in use: stop the other "
                           "server or pass --port N (0 picks a free one)\n")


# -- no 500 but the last resort -------------------------------------------------------------------------------------
def test_bad_bodies_are_4xx_and_an_unexpected_error_is_a_logged_json_500(tmp_path: Path,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    service = service_for(library(tmp_path / "skills"), tmp_path / "idx")
    with serving(service) as client:
        headers = {"Content-Type": "application/json"}
        broken = client.post("/v1/route", content=b'{"query": ', headers=headers)
        assert broken.status_code == 422 and broken.json()["error"]["type"] == "invalid_request"
        assert client.post("/v1/route", content=b'{"query": "\xff"}', headers=headers).status_code == 400
        router = service.router
        original = type(router.profile).render

        def fails(self: Any, skills: Any) -> str:
            raise RuntimeError("boom")

        type(router.profile).render = fails  # type: ignore[method-assign]
        try:
            with caplog.at_level(logging.ERROR, logger="router.serve"):
                answer = client.post("/v1/route", json={"query": "rain in Lyon"})
        finally:
            type(router.profile).render = original  # type: ignore[method-assign]
    assert answer.status_code == 500
    error = answer.json()["error"]
    request_id = error["message"].rsplit(" ", 1)[1]
    assert error == {"type": "internal_error",
                     "message": f"unexpected server error; the server log names request {request_id}"}
    assert any(request_id in r.getMessage() and r.exc_info for r in caplog.records)


def test_row_9_the_socket_bound_first_is_the_one_served_and_port_0_prints_the_real_port(tmp_path: Path) -> None:
    skills = library(tmp_path / "skills")
    child = subprocess.Popen([sys.executable, "-m", "router.cli", "serve", "--skills", str(skills), "--port", "0",
                              "--exit-after", "60", "--no-log", "--no-watch", "--index-dir", str(tmp_path / "idx")],
                             stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert child.stderr is not None
        line = child.stderr.readline()
        prefix = "skill-router serve: listening on http://127.0.0.1:"
        assert line.startswith(prefix) and line.endswith(" (loading the library; GET /readyz)\n"), line
        port = int(line[len(prefix):].split(" ", 1)[0])
        assert port > 0
        deadline = time.monotonic() + 30
        while True:
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5, trust_env=False)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and child.poll() is None, "the server did not answer"
                time.sleep(0.1)
        assert answer.json() == {"status": "alive"}
    finally:
        child.terminate()
        child.wait(timeout=30)
        if child.stderr is not None:
            child.stderr.close()
