"""The real Codex CLI as a test oracle: installed once with npm into a cache folder, asked offline.

``codex`` is pinned to the profile's :data:`CODEX_VERSION` (a version bump is that one line plus what the suite
then reports).
It is installed with ``npm install --prefix <cache>`` (``$XDG_CACHE_HOME/skill-router/oracle/codex-<version>``,
default ``~/.cache``), never into the repository, and every run gets an isolated ``$HOME`` and ``$CODEX_HOME``
whose ``config.toml`` turns analytics, feedback, telemetry, update checks and the plugin marketplace sync off.
Three ways to ask it:

- :meth:`CodexWorld.prompt_input`: ``codex debug prompt-input`` prints the model-visible input (no server);
- :meth:`CodexWorld.skills_list`: ``codex app-server`` answers JSON-RPC ``skills/list`` (every discovered skill,
  its ``enabled`` flag, the parse errors) and ``hooks/list`` (each hook's trust key and hash);
- :meth:`CodexWorld.exec`: ``codex exec`` against :class:`FakeResponses`, a loopback Responses API that records
  every request and answers each with one short assistant message.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator, Sequence

import pytest

from router.profiles.codex_listing import CODEX_VERSION  # the release the profile reproduces is the one asked
PACKAGE = f"@openai/codex@{CODEX_VERSION}"
#: Seconds one binary run may take before the test fails.
RUN_TIMEOUT = 60
INSTALL_TIMEOUT = 900

_BASE_CONFIG = """\
check_for_update_on_startup = false
[analytics]
enabled = false
[feedback]
enabled = false
[otel]
exporter = "none"
metrics_exporter = "none"
trace_exporter = "none"
log_user_prompt = false
[features]
# the plugin marketplace sync looks github.com up at start-up
plugins = false
"""


class OracleError(RuntimeError):
    """The oracle binary could not be installed or run."""


def cache_folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "skill-router" / "oracle" / f"codex-{CODEX_VERSION}"


def _version(binary: Path) -> str:
    done = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          env={"PATH": os.environ.get("PATH", ""), "HOME": str(cache_folder())})
    return done.stdout.strip()


def install_codex() -> Path:
    """The pinned ``codex`` (installed now when absent); raises OracleError naming the problem and the fix."""
    folder = cache_folder()
    binary = folder / "node_modules" / ".bin" / "codex"
    expected = f"codex-cli {CODEX_VERSION}"
    if binary.exists() and _version(binary) == expected:
        return binary
    npm = shutil.which("npm")
    if npm is None:
        raise OracleError("npm is not on PATH: install Node.js and npm to run the Codex oracle tests "
                          f"(they install {PACKAGE} into {folder})")
    folder.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run([npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund",
                               "--loglevel=error", PACKAGE], capture_output=True, text=True,
                              timeout=INSTALL_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise OracleError(f"npm install {PACKAGE} took over {INSTALL_TIMEOUT} s: check the npm registry is "
                          "reachable (npm config get registry)") from None
    if done.returncode != 0:
        tail = " ".join((done.stderr or done.stdout).split())[-600:]
        raise OracleError(f"npm install {PACKAGE} into {folder} failed (exit {done.returncode}): {tail}")
    found = _version(binary) if binary.exists() else "nothing"
    if found != expected:
        raise OracleError(f"npm installed {found!r} at {binary}, expected {expected!r}: remove {folder} and rerun")
    return binary


@pytest.fixture(scope="session")
def codex_binary() -> Path:
    """The pinned Codex CLI, installed into the cache folder on first use."""
    try:
        return install_codex()
    except OracleError as exc:
        pytest.fail(str(exc), pytrace=False)


# --- a fake Responses API on loopback ---------------------------------------------------------------------------


def _sse(events: Sequence[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def _answer(number: int) -> bytes:
    rid, mid = f"resp_{number}", f"msg_{number}"
    usage = {"input_tokens": 1, "input_tokens_details": None, "output_tokens": 1,
             "output_tokens_details": None, "total_tokens": 2}
    message = {"type": "message", "role": "assistant", "id": mid,
               "content": [{"type": "output_text", "text": "done"}]}
    return _sse([{"type": "response.created", "response": {"id": rid}},
                 {"type": "response.output_item.done", "item": message},
                 {"type": "response.completed", "response": {"id": rid, "usage": usage}}])


class FakeResponses:
    """A Responses API on 127.0.0.1 (free port): records each request (path, JSON body) and answers POST
    ``/v1/responses`` with one assistant message; anything else is a 404. Use as a context manager."""

    def __init__(self, max_requests: int = 50) -> None:
        self.requests: list[tuple[str, str, Any]] = []
        self.max_requests = max_requests
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _record(self, method: str) -> Any:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                owner.requests.append((method, self.path, body))
                return body

            def do_GET(self) -> None:
                self._record("GET")
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                self._record("POST")
                if len(owner.requests) > owner.max_requests or not self.path.endswith("/responses"):
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = _answer(len(owner.requests))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> "FakeResponses":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)

    def model_requests(self) -> list[Any]:
        return [body for method, path, body in self.requests if method == "POST" and path.endswith("/responses")]


# --- an isolated world ------------------------------------------------------------------------------------------


@dataclass
class Exec:
    """One ``codex exec --json`` run: its events, stderr, and the model requests it sent."""

    events: list[dict[str, Any]]
    stderr: str
    requests: list[Any]
    returncode: int

    def after_prompt(self, prompt: str) -> list[tuple[str, str]]:
        """(role, text) of the input items after the user's ``prompt`` in the first model request (where a
        ``UserPromptSubmit`` hook's context goes); raises ValueError when the request does not hold the prompt."""
        items = [(item.get("role"), content["text"]) for item in self.requests[0]["input"]
                 if item.get("type") == "message" for content in item.get("content") or []
                 if content.get("type") == "input_text"]
        return items[items.index(("user", prompt)) + 1:]

    def warnings(self) -> list[str]:
        out = []
        for event in self.events:
            item = event.get("item") or {}
            if event.get("type") == "error":
                out.append(event.get("message", ""))
            elif item.get("type") == "error":
                out.append(item.get("message", ""))
        return out


@dataclass
class CodexWorld:
    """A private ``$HOME``, ``$CODEX_HOME`` (with its config.toml) and working folder under ``root``."""

    binary: Path
    root: Path
    config: str = ""
    extra_env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for folder in (self.home, self.codex_home, self.cwd):
            folder.mkdir(parents=True, exist_ok=True)

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def codex_home(self) -> Path:
        return self.root / "codex-home"

    @property
    def cwd(self) -> Path:
        return self.root / "work"

    @property
    def user_skills(self) -> Path:
        return self.codex_home / "skills"

    def write_config(self, provider_url: str | None = None) -> None:
        text = _BASE_CONFIG
        if provider_url is not None:
            text = (f'model_provider = "oracle"\n{text}[model_providers.oracle]\nname = "oracle"\n'
                    f'base_url = "{provider_url}"\nwire_api = "responses"\nrequest_max_retries = 0\n'
                    "stream_max_retries = 0\nsupports_websockets = false\n")
        (self.codex_home / "config.toml").write_text(text + "\n" + self.config, encoding="utf-8")

    def env(self) -> dict[str, str]:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home),
               "CODEX_HOME": str(self.codex_home), "LANG": "C.UTF-8", "NO_COLOR": "1", "RUST_LOG": "error",
               "TMPDIR": str(self.root)}
        env.update(self.extra_env)
        return env

    def _run(self, args: Sequence[str], *, stdin: str | None = None, timeout: int = RUN_TIMEOUT,
             wrap: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run([*wrap, str(self.binary), *args], cwd=self.cwd, env=self.env(), input=stdin,
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"codex {' '.join(args[:2])} did not finish in {timeout} s") from None

    def prompt_input(self, prompt: str = "hello", overrides: Sequence[str] = ()) -> list[dict[str, Any]]:
        """The model-visible input items ``codex debug prompt-input`` prints."""
        self.write_config()
        done = self._run(["debug", "prompt-input", *_flags(overrides), prompt])
        if done.returncode != 0:
            raise AssertionError(f"codex debug prompt-input failed ({done.returncode}): {done.stderr[-2000:]}")
        return json.loads(done.stdout)

    def skills_text(self, overrides: Sequence[str] = ()) -> str | None:
        """The ``<skills_instructions>`` text the model sees, or None."""
        return skills_instructions(self.prompt_input("hello", overrides))

    def app_server(self, requests: Sequence[tuple[str, dict[str, Any]]],
                   overrides: Sequence[str] = ()) -> list[Any]:
        """The results of these JSON-RPC requests to ``codex app-server`` (after ``initialize``), in order."""
        self.write_config()
        lines = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
                  "params": {"clientInfo": {"name": "oracle", "version": "1"}}},
                 {"jsonrpc": "2.0", "method": "initialized"}]
        lines += [{"jsonrpc": "2.0", "id": number, "method": method, "params": params}
                  for number, (method, params) in enumerate(requests, start=1)]
        process = subprocess.Popen([str(self.binary), "app-server", *_flags(overrides)], cwd=self.cwd,
                                   env=self.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True)
        assert process.stdin is not None and process.stdout is not None
        results: dict[int, Any] = {}
        try:
            timer = threading.Timer(RUN_TIMEOUT, process.kill)
            timer.start()
            for line in lines:
                process.stdin.write(json.dumps(line) + "\n")
            process.stdin.flush()
            for text in process.stdout:
                message = json.loads(text)
                if "id" in message and ("result" in message or "error" in message):
                    results[message["id"]] = message.get("result", message.get("error"))
                    if all(n in results for n in range(len(requests) + 1)):
                        break
            timer.cancel()
        finally:
            process.stdin.close()
            process.kill()
            process.wait(timeout=10)
            process.stdout.close()
        missing = [n for n in range(len(requests) + 1) if n not in results]
        assert not missing, f"codex app-server gave no answer to requests {missing}"
        return [results[n] for n in range(1, len(requests) + 1)]

    def skills_list(self, overrides: Sequence[str] = ()) -> dict[str, Any]:
        """``skills/list`` for the working folder: {"skills": [...], "errors": [...]}."""
        [result] = self.app_server([("skills/list", {"cwds": [str(self.cwd)]})], overrides)
        return result["data"][0]

    def exec(self, prompt: str, overrides: Sequence[str] = (), wrap: Sequence[str] = ()) -> Exec:
        """``codex exec --json`` against a fresh :class:`FakeResponses`."""
        with FakeResponses() as fake:
            self.write_config(fake.base_url)
            done = self._run(["exec", "--json", "--skip-git-repo-check", "--ephemeral", *_flags(overrides),
                              prompt], stdin="", wrap=wrap)
            requests = fake.model_requests()
        events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        return Exec(events, done.stderr, requests, done.returncode)


def _flags(overrides: Sequence[str]) -> list[str]:
    flags: list[str] = []
    for item in overrides:
        flags += ["-c", f"model={json.dumps(item[2:])}"] if item.startswith("m=") else ["-c", item]
    return flags


def skills_instructions(items: Sequence[dict[str, Any]]) -> str | None:
    """The text of the ``<skills_instructions>`` content item, or None."""
    for text in input_texts(items):
        if text.startswith("<skills_instructions>"):
            return text
    return None


def input_texts(items: Sequence[dict[str, Any]], role: str | None = None) -> Iterator[str]:
    for item in items:
        if item.get("type") != "message" or (role is not None and item.get("role") != role):
            continue
        for content in item.get("content") or []:
            if content.get("type") == "input_text":
                yield content["text"]
