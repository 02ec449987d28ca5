"""The real Claude Code as a test oracle: the pinned binary, a loopback fake Messages API, isolated runs.

``claude_binary`` (a session fixture) installs ``@anthropic-ai/claude-code@HARNESS_VERSION`` with npm into
``${XDG_CACHE_HOME:-~/.cache}/skill-router/oracle/claude-code-<version>`` when it is not there yet, and checks
``claude --version``. :func:`run_claude` runs ``claude -p PROMPT --output-format stream-json --verbose`` with its
home and XDG folders inside a temporary folder, every model request going to a :class:`FakeMessagesAPI` on
127.0.0.1 and every other connection (through ``HTTPS_PROXY``, which points at the same server) recorded and
refused, so a run needs no network and shows if the binary tried to reach anything else.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Sequence

import pytest

from router.profiles.claude_code import HARNESS_VERSION

PACKAGE = "@anthropic-ai/claude-code"
#: Longest a single ``claude -p`` run may take before the test fails.
RUN_TIMEOUT_S = 180
#: Most requests one fake API answers before it refuses everything (a run makes a handful).
MAX_REQUESTS = 40
QUIET_ENV = {"DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
             "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1"}


def oracle_folder(version: str = HARNESS_VERSION) -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "skill-router" / "oracle" / f"claude-code-{version}"


def installed_version(binary: Path) -> str:
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60,
                         env=_base_env(Path(os.environ.get("TMPDIR", "/tmp"))))
    return out.stdout.strip().split(" ")[0]


def install(version: str = HARNESS_VERSION) -> Path:
    """The ``claude`` binary of exactly ``version``, installed with npm when absent; fails the session with the
    reason when npm cannot install it."""
    folder = oracle_folder(version)
    binary = folder / "node_modules" / ".bin" / "claude"
    if not (binary.exists() and installed_version(binary) == version):
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail(f"the Claude Code oracle needs npm to install {PACKAGE}@{version}: install Node.js and npm")
        folder.mkdir(parents=True, exist_ok=True)
        done = subprocess.run([npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund",
                               "--no-save", f"{PACKAGE}@{version}"], capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
            pytest.fail(f"npm install {PACKAGE}@{version} into {folder} failed (exit {done.returncode}): "
                        + " | ".join(tail) + "; check that the npm registry is reachable")
    if not binary.exists():
        pytest.fail(f"npm installed {PACKAGE}@{version} into {folder} but {binary} is missing")
    found = installed_version(binary)
    if found != version:
        pytest.fail(f"{binary} reports version {found!r}, not {version}: remove {folder} and run again")
    return binary


@pytest.fixture(scope="session")
def claude_binary() -> Path:
    return install()


# --- the fake Messages API ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """What the fake model says: plain text, a ``tool_use`` of ``tool`` with ``input``, or several ``tool_use``
    blocks in one message (``calls``: (tool, input) each, answered together in the next request)."""

    text: str = "Done."
    tool: str | None = None
    input: dict[str, Any] | None = None
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()

    def tool_uses(self, number: int) -> list[dict[str, Any]]:
        """The ``tool_use`` blocks of this reply (none for plain text)."""
        calls = self.calls or (((self.tool, self.input or {}),) if self.tool else ())
        suffix = [""] if len(calls) == 1 else [f"_{i:03d}" for i in range(len(calls))]
        return [{"type": "tool_use", "id": f"toolu_{number:04d}{end}", "name": tool, "input": arguments}
                for (tool, arguments), end in zip(calls, suffix)]


@dataclass
class Recorded:
    """What the fake API saw."""

    messages: list[dict[str, Any]] = field(default_factory=list)  # POST /v1/messages bodies, in order
    other: list[str] = field(default_factory=list)  # every other request line (counted, answered 404)
    outside: list[str] = field(default_factory=list)  # proxied connections to anything else (refused)


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _message_events(reply: Reply, model: str, number: int) -> bytes:
    out = [_sse("message_start", {"type": "message_start", "message": {
        "id": f"msg_{number}", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}})]
    uses = reply.tool_uses(number)
    blocks: list[tuple[dict[str, Any], dict[str, Any]]] = [
        ({**use, "input": {}}, {"type": "input_json_delta", "partial_json": json.dumps(use["input"])}) for use in uses]
    if not blocks:
        blocks = [({"type": "text", "text": ""}, {"type": "text_delta", "text": reply.text})]
    for index, (block, delta) in enumerate(blocks):
        out.append(_sse("content_block_start", {"type": "content_block_start", "index": index,
                                                "content_block": block}))
        out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    stop = "tool_use" if uses else "end_turn"
    out.append(_sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                      "usage": {"output_tokens": 5}}))
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return b"".join(out)


def _message_json(reply: Reply, model: str, number: int) -> dict[str, Any]:
    uses = reply.tool_uses(number)
    content: list[dict[str, Any]] = uses or [{"type": "text", "text": reply.text}]
    return {"id": f"msg_{number}", "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": "tool_use" if uses else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5}}


class FakeMessagesAPI:
    """A loopback Anthropic Messages API: answers the main conversation's requests with ``replies`` in turn (then
    plain text), every side request (one without tools) with plain text, and records every body. Bounded to
    :data:`MAX_REQUESTS` requests; stops when the ``with`` block ends."""

    def __init__(self, replies: Sequence[Reply] = ()) -> None:
        self.replies = list(replies)
        self.recorded = Recorded()
        self._lock = threading.Lock()
        self._count = 0
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
                return

            def _refuse(self, code: int) -> None:
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_CONNECT(self) -> None:  # noqa: N802
                with api._lock:
                    api.recorded.outside.append(self.path)
                self._refuse(403)
                self.close_connection = True

            def do_GET(self) -> None:  # noqa: N802
                self._other()

            def do_HEAD(self) -> None:  # noqa: N802
                self._other()

            def _other(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                with api._lock:
                    if self.path.startswith("http"):
                        api.recorded.outside.append(self.path)
                    else:
                        api.recorded.other.append(f"{self.command} {self.path}")
                self._refuse(404)

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if not self.path.split("?")[0].endswith("/v1/messages") or self.path.startswith("http"):
                    with api._lock:
                        if self.path.startswith("http"):
                            api.recorded.outside.append(self.path)
                        else:
                            api.recorded.other.append(f"POST {self.path}")
                    self._refuse(404)
                    return
                body = json.loads(raw or b"{}")
                with api._lock:
                    api._count += 1
                    number = api._count
                    if number > MAX_REQUESTS:
                        reply = None
                    else:
                        api.recorded.messages.append(body)
                        main = bool(body.get("tools"))
                        reply = api.replies.pop(0) if main and api.replies else Reply()
                if reply is None:
                    self._refuse(429)
                    return
                model = body.get("model", "claude")
                if body.get("stream"):
                    data = _message_events(reply, model, number)
                    kind = "text/event-stream"
                else:
                    data = json.dumps(_message_json(reply, model, number)).encode()
                    kind = "application/json"
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FakeMessagesAPI:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


# --- one run -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """One ``claude -p`` run: what it sent, what it printed, its debug log."""

    recorded: Recorded
    events: list[dict[str, Any]]
    stderr: str
    debug: str
    returncode: int

    @property
    def main_requests(self) -> list[dict[str, Any]]:
        """The conversation's requests (the ones that carry tools), in order."""
        return [body for body in self.recorded.messages if body.get("tools")]


def _base_env(home: Path) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
           "TERM": "dumb", "TMPDIR": os.environ.get("TMPDIR", "/tmp"), **QUIET_ENV}
    return env


def run_claude(binary: Path, home: Path, cwd: Path, prompt: str, *, replies: Sequence[Reply] = (),
               model: str | None = None, env: dict[str, str] | None = None,
               extra_args: Sequence[str] = (), sdk_skills: Sequence[str] | None = None) -> Run:
    """Run the real ``claude -p`` once, offline, with ``home`` as its home (and XDG folders inside it).

    With ``sdk_skills`` the run speaks the Agent SDK's protocol on stdin instead (``--input-format stream-json``):
    an ``initialize`` control request carrying ``skills`` (what ``ClaudeAgentOptions(skills=[...])`` sends), then
    ``prompt`` as a user message."""
    home, cwd = home.resolve(), cwd.resolve()
    home.mkdir(parents=True, exist_ok=True)
    cwd.mkdir(parents=True, exist_ok=True)
    debug = home.parent / f"claude-debug-{time.monotonic_ns()}.log"
    with FakeMessagesAPI(replies) as api:
        run_env = _base_env(home)
        run_env.update({
            "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_DATA_HOME": str(home / ".local" / "share"), "XDG_STATE_HOME": str(home / ".local" / "state"),
            "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "test",
            "HTTPS_PROXY": api.url, "HTTP_PROXY": api.url, "https_proxy": api.url, "http_proxy": api.url,
            "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1",
        })
        run_env.update(env or {})
        command = [str(binary), "-p", "--output-format", "stream-json", "--verbose", "--debug-file", str(debug),
                   *(["--model", model] if model else []), *extra_args]
        stdin = None
        if sdk_skills is None:
            command.insert(2, prompt)
        else:
            command += ["--input-format", "stream-json"]
            stdin = "".join(json.dumps(line) + "\n" for line in (
                {"type": "control_request", "request_id": "init-1",
                 "request": {"subtype": "initialize", "hooks": None, "skills": list(sdk_skills)}},
                {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": prompt}]},
                 "parent_tool_use_id": None, "session_id": ""}))
        done = subprocess.run(command, cwd=cwd, env=run_env, capture_output=True, text=True,
                              timeout=RUN_TIMEOUT_S, input=stdin if stdin is not None else "")
    events = []
    for line in done.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            events.append(json.loads(line))
    text = debug.read_text(encoding="utf-8", errors="replace") if debug.exists() else ""
    return Run(recorded=api.recorded, events=events, stderr=done.stderr, debug=text, returncode=done.returncode)
