"""The whole table of issue 16 re-tried against the real command line and a real server, counted per row.

Every case runs ``python -m router.cli ...`` in its own process (with a timeout) or a real ``skill-router serve``
on a free 127.0.0.1 port, and states the behaviour the fix promises (issue 16, "What to build"). A case fails
when the behaviour differs; it is also counted as

- a **crash**: a traceback on stderr, or an exit status other than the documented 0 / 1 / 2;
- a **hang**: no answer (or no exit) within the case's deadline;
- a **5xx**: a server answer with status 500-599 where the fix promises none (503 "busy" or "past the deadline"
  is allowed where the issue allows it);
- a **record lost**: a request answered 200 whose decision-log record is not in any log file.

Rows: 1 surrogates in text (+ undecodable bytes in every text field: SKILL.md, catalogue rows, label files,
config, requests on the command line, stdin, HTTP and MCP), 2 YAML alias bombs (+ small legitimate anchors), 3 the
decision log removed / rotated into a folder / on a full disk, 4 the library folder removed and restored while
serving, 5 FIFOs, devices and folders at every path the router opens, 6 dripping, silent and lying servers (and a
dripping stdin) for the hook, 7 folder names that are not UTF-8, 8 empty libraries, 9 a busy port, 10 ``tune`` and
``learn`` on real labelled data, 11 ``learn --from-log`` after an unrelated search, 12 the low ones (log file
modes, log sizes, failed-reload reasons, a 3 MB description, the codex size cap) and a full disk under the index.

The failing disk is a 64 KiB tmpfs when ``mount`` works (root in a container that allows it); otherwise those
cases say "skipped: no tmpfs" (a read-only folder does not stop root, so it would not emulate anything).

Embedding uses the project's real model through its ONNX export (about 0.5 s per cold command), as users run it.

    python benchmarks/breakit.py                 # every row, a few minutes on 2 cores
    python benchmarks/breakit.py --rows 1,6      # some rows
    python benchmarks/breakit.py -v              # also print every case

Writes ``benchmarks/results/breakit.json``; exits 1 when any case fails.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "breakit.json"
DATA = ROOT / "benchmarks" / "data"
BUNDLED = ROOT / "skills"
PROFILES = ("agentskills", "claude-code", "codex", "genkit", "unreal")
DOCUMENTED_EXITS = (0, 1, 2)
CLI_TIMEOUT = 60.0
HOOK_BUDGET = 2.0
HOOK_MARGIN = 0.5  # interpreter start-up on a busy machine
SPECIAL_TIMEOUT = 10.0  # a command whose input is a FIFO or a device: reading a small file takes ms
HEALTHZ_LIMIT = 0.5  # the issue asks for 50 ms; a shared 2-core machine gets this much slack


# -- what one case found ------------------------------------------------------------------------------------------
@dataclass
class Case:
    row: int
    name: str
    expected: str
    ok: bool = True
    crash: bool = False
    hang: bool = False
    errors_5xx: int = 0
    records_lost: int = 0
    skipped: bool = False
    detail: str = ""
    seconds: float = 0.0
    reasons: dict[str, int] = field(default_factory=dict)

    def fail(self, why: str) -> None:
        """Record why the case failed; the same reason again is counted, not repeated."""
        self.ok = False
        why = why[:300]
        self.reasons[why] = self.reasons.get(why, 0) + 1

    def why(self) -> str:
        return "; ".join(f"{reason}{f' (x{n})' if n > 1 else ''}" for reason, n in self.reasons.items())


@dataclass
class Run:
    code: int | None
    out: str
    err: str
    seconds: float
    hung: bool
    max_rss_mb: float = 0.0

    @property
    def crashed(self) -> bool:
        return "Traceback (most recent call last)" in self.err or (
            self.code is not None and self.code not in DOCUMENTED_EXITS)

    def summary(self) -> str:
        tail = (self.err.strip().splitlines() or [""])[-1][:200]
        return f"exit {self.code} in {self.seconds:.1f} s{' (hung)' if self.hung else ''}: {tail}"


@dataclass
class Env:
    """The scratch folder, the environment of every command, and the options."""

    folder: Path
    verbose: bool = False
    tmpfs: bool | None = None
    procs: list[subprocess.Popen] = field(default_factory=list)

    def path(self, *parts: str) -> Path:
        return self.folder.joinpath(*parts)

    def fresh(self, name: str) -> Path:
        path = self.folder / name
        if path.exists() or path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True, exist_ok=True)
        return path

    def environ(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SKILL_ROUTER_")}
        env.update({"PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "NO_COLOR": "1", "COLUMNS": "200",
                    "HOME": str(self.folder / "home"), "XDG_CACHE_HOME": os.environ.get(
                        "XDG_CACHE_HOME", os.path.join(os.path.expanduser("~"), ".cache"))})
        env.update(extra or {})
        return env


def run_cli(env: Env, argv: Sequence[str | bytes], *, cwd: Path | None = None, timeout: float = CLI_TIMEOUT,
            stdin: bytes | None = None, extra_env: dict[str, str] | None = None) -> Run:
    """``python -m router.cli ARGV`` in its own process group, killed at ``timeout``; its peak RSS from wait4."""
    cwd = cwd or env.path("cwd")
    cwd.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "router.cli", *argv], cwd=cwd, stdout=out, stderr=err,
                                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                env=env.environ(extra_env), start_new_session=True)
        if stdin is not None:
            threading.Thread(target=_feed, args=(proc, stdin), daemon=True).start()
        hung, status, rss = False, 0, 0.0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                rss = usage.ru_maxrss / 1024
                break
            if time.monotonic() - start > timeout:
                hung = True
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                _, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.01)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        seconds = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        return Run(None if hung else proc.returncode, out.read().decode("utf-8", "replace"),
                   err.read().decode("utf-8", "replace"), seconds, hung, rss)


def _feed(proc: subprocess.Popen, data: bytes) -> None:
    assert proc.stdin is not None
    with contextlib.suppress(OSError):
        proc.stdin.write(data)
        proc.stdin.close()


def check_run(case: Case, run: Run, *, codes: Sequence[int] = (0,), one_line: bool = False,
              contains: str | None = None, out_contains: str | None = None) -> Run:
    """The common expectations: no hang, no crash, an expected exit status, and for a refusal one line."""
    if run.hung:
        case.hang = True
        case.fail(f"no exit within the deadline ({run.seconds:.1f} s)")
        return run
    if run.crashed:
        case.crash = True
        case.fail("crash: " + run.summary())
        return run
    if run.code not in codes:
        case.fail(f"expected exit {'/'.join(map(str, codes))}: " + run.summary())
    if one_line and run.code == 2:
        lines = [line for line in run.err.splitlines() if line.strip() and not line.startswith(
            ("note:", "using ./skill-router.json"))]  # notes, and the promised word on a config picked up
        if len(lines) != 1:
            case.fail(f"expected one error line, got {len(lines)}: {run.err[:200]!r}")
    if contains is not None and contains not in run.err:
        case.fail(f"stderr lacks {contains!r}: {run.err[-200:]!r}")
    if out_contains is not None and out_contains not in run.out:
        case.fail(f"stdout lacks {out_contains!r}: {run.out[-200:]!r}")
    return run


# -- libraries ----------------------------------------------------------------------------------------------------
GOOD = ("convert", "---\nname: convert\ndescription: Convert units of length, mass and temperature.\n---\n\n"
                   "# Convert\n\nSteps.\n")
GOOD2 = ("haiku", "---\nname: haiku\ndescription: Write haiku poems about nature.\n---\n\n# Haiku\n")


def library(env: Env, name: str, skills: Sequence[tuple[str | bytes, str | bytes]]) -> Path:
    """``name/`` with one folder per (folder, SKILL.md text or bytes); folder names may be bytes."""
    root = env.fresh(name)
    for folder, text in [GOOD, GOOD2, *skills]:
        base = os.path.join(os.fsencode(root), folder if isinstance(folder, bytes) else os.fsencode(folder))
        os.makedirs(base, exist_ok=True)
        data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
        with open(os.path.join(base, b"SKILL.md"), "wb") as handle:
            handle.write(data)
    return root


def skill_text(name: str, description: str, extra: str = "", body: str = "# Title\n\nSteps.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n\n{body}"


def alias_bomb(levels: int = 9, width: int = 9, indent: str = "") -> str:
    lines = [f"{indent}b0: &b0 [{', '.join(['lol'] * width)}]"]
    for level in range(1, levels):
        lines.append(f"{indent}b{level}: &b{level} [{', '.join([f'*b{level - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def lib_args(root: Path, profile: str = "agentskills") -> list[str]:
    return ["--skills", str(root), "--profile", profile]


# -- a real server ------------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    proc: subprocess.Popen
    url: str
    err_path: Path
    ready: bool
    readyz: Any = None
    readyz_status: int = 0

    def not_ready(self, case: Case) -> None:
        """The case fails because the server never became ready (a 5xx from /readyz is counted)."""
        if self.readyz_status >= 500:
            case.errors_5xx += 1
        case.fail(f"not ready: /readyz {self.readyz_status or 'unanswered'} {str(self.readyz)[:160]}")

    def stderr(self) -> str:
        return self.err_path.read_text(encoding="utf-8", errors="replace")


@contextlib.contextmanager
def serving(env: Env, argv: Sequence[str], *, ready_timeout: float = 90.0, cwd: Path | None = None
            ) -> Iterator[Server]:
    """``skill-router serve ARGV --port P`` until the block ends (SIGTERM, then SIGKILL after 10 s)."""
    import httpx

    port = free_port()
    cwd = cwd or env.path("cwd")
    cwd.mkdir(parents=True, exist_ok=True)
    err_path = env.path(f"serve-{port}.err")
    with open(err_path, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "router.cli", "serve", "--port", str(port),
                                 "--exit-after", "600", *argv], cwd=cwd, stdout=subprocess.DEVNULL, stderr=err,
                                stdin=subprocess.DEVNULL, env=env.environ(), start_new_session=True)
    env.procs.append(proc)
    server = Server(proc, f"http://127.0.0.1:{port}", err_path, False)
    deadline = time.monotonic() + ready_timeout
    with httpx.Client(base_url=server.url, timeout=5, trust_env=False) as client:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                answer = client.get("/readyz")
                server.readyz_status = answer.status_code
                server.readyz = answer.json()
                if answer.status_code == 200:
                    server.ready = True
                    break
                if answer.status_code >= 500 and answer.status_code != 503:
                    break
                if isinstance(server.readyz, dict) and server.readyz.get("status") == "failed":
                    break
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(0.1)
    try:
        yield server
    finally:
        stop(proc)


def stop(proc: subprocess.Popen, grace: float = 10.0) -> bool:
    """SIGTERM, then SIGKILL after ``grace`` seconds; True when SIGTERM was enough."""
    if proc.poll() is not None:
        return True
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace)
        return True
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return False


def client(server: Server, timeout: float = 20.0) -> Any:
    import httpx

    return httpx.Client(base_url=server.url, timeout=timeout, trust_env=False)


def request(case: Case, http: Any, method: str, path: str, *, allowed: Sequence[int] = (200,), **kw: Any) -> Any:
    """One request; a timeout is a hang, 5xx is counted, any status outside ``allowed`` fails the case."""
    import httpx

    try:
        answer = http.request(method, path, **kw)
    except httpx.TimeoutException:
        case.hang = True
        case.fail(f"{method} {path}: no answer within {http.timeout.read} s")
        return None
    except httpx.HTTPError as exc:
        case.fail(f"{method} {path}: {type(exc).__name__}: {exc}")
        return None
    if answer.status_code >= 500 and answer.status_code not in allowed:
        case.errors_5xx += 1
    if answer.status_code not in allowed:
        try:
            kind = answer.json()["error"]["type"]
        except (ValueError, KeyError, TypeError):
            kind = answer.text[:80]
        case.fail(f"{method} {path}: HTTP {answer.status_code} {kind}")
    return answer


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class MCP:
    """A minimal MCP client over streamable HTTP: initialize once, then tools/call."""

    def __init__(self, server: Server, timeout: float = 10.0) -> None:
        import httpx

        self.http = httpx.Client(base_url=server.url, timeout=timeout, trust_env=False)
        self.headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        self.next_id = 1
        answer = self.http.post("/mcp", json=self._message("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "breakit", "version": "1"}}),
            headers=self.headers)
        session = answer.headers.get("mcp-session-id")
        if session:
            self.headers["mcp-session-id"] = session
        self.headers["mcp-protocol-version"] = "2025-06-18"
        self.http.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=self.headers)

    def _message(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        return {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}

    def call(self, tool: str, arguments: dict[str, Any], timeout: float | None = None) -> tuple[int, Any]:
        """(HTTP status, the JSON-RPC message); raises httpx.TimeoutException on a hang."""
        body = json.dumps(self._message("tools/call", {"name": tool, "arguments": arguments}))
        answer = self.http.post("/mcp", content=body.encode("utf-8", "surrogatepass"), headers=self.headers,
                                timeout=timeout or self.http.timeout)
        return answer.status_code, _rpc_body(answer.text)

    def close(self) -> None:
        self.http.close()


def _rpc_body(text: str) -> Any:
    for line in text.splitlines():
        if line.startswith("data:"):
            with contextlib.suppress(ValueError):
                return json.loads(line[5:])
    with contextlib.suppress(ValueError):
        return json.loads(text)
    return text


# -- fake servers for the hook ------------------------------------------------------------------------------------
class FakeServer:
    """A loopback TCP server that answers every connection with ``behaviour(conn)``; stops at close()."""

    def __init__(self, behaviour: Callable[[socket.socket], None]) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = int(self.sock.getsockname()[1])
        self.behaviour = behaviour
        self.stopped = threading.Event()
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            conn.settimeout(0.5)
            with contextlib.suppress(OSError):
                conn.recv(65536)
            self.behaviour_with_stop(conn)

    def behaviour_with_stop(self, conn: socket.socket) -> None:
        self.behaviour(conn)

    def sleep(self, seconds: float) -> bool:
        return not self.stopped.wait(seconds)

    def close(self) -> None:
        self.stopped.set()
        self.sock.close()
        for conn in self.conns:
            with contextlib.suppress(OSError):
                conn.close()


HOOK_JSON = b'{"hook_event_name": "UserPromptSubmit", "prompt": "convert 3 miles to km", "session_id": "s"}'
OK_ANSWER = json.dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                               "additionalContext": "Skills: convert"}}).encode()


def http_answer(body: bytes, status: str = "200 OK", length: int | None = None, extra: str = "") -> bytes:
    size = len(body) if length is None else length
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {size}\r\n{extra}"
            f"Connection: close\r\n\r\n").encode() + body


def fake_behaviours(fake: Callable[[], FakeServer]) -> dict[str, Callable[[socket.socket], None]]:
    """What each fake server does with a connection (``fake()`` is the server itself, for its stop flag)."""
    def drip(data: bytes, every: float = 0.5) -> Callable[[socket.socket], None]:
        def go(conn: socket.socket) -> None:
            for i in range(len(data)):
                if not fake().sleep(every):
                    return
                conn.sendall(data[i:i + 1])
        return go

    def drip_body(conn: socket.socket) -> None:
        whole = http_answer(OK_ANSWER)
        head, body = whole.split(b"\r\n\r\n", 1)
        conn.sendall(head + b"\r\n\r\n")
        drip(body)(conn)

    def silent(conn: socket.socket) -> None:
        fake().sleep(30)

    def lying_length(conn: socket.socket) -> None:
        conn.sendall(http_answer(b'{"hookSp', length=100000))
        fake().sleep(30)

    def lying_close(conn: socket.socket) -> None:
        conn.sendall(http_answer(b'{"hookSp', length=100000))

    def endless(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"10000\r\n" + b" " * 0x10000 + b"\r\n"
        while fake().sleep(0):
            conn.sendall(chunk)

    def endless_headers(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\n")
        while fake().sleep(0.05):
            conn.sendall(b"X-Pad: " + b"a" * 1000 + b"\r\n")

    def reply(data: bytes) -> Callable[[socket.socket], None]:
        return lambda conn: conn.sendall(data)

    return {
        "drip-status-line": drip(http_answer(OK_ANSWER)),
        "drip-body": drip_body,
        "silent": silent,
        "close-at-once": lambda conn: None,
        "lying-content-length": lying_length,
        "lying-content-length-then-close": lying_close,
        "endless-chunked-body": endless,
        "endless-headers": endless_headers,
        "not-json": reply(http_answer(b"<html>hello</html>")),
        "json-array": reply(http_answer(b"[1, 2, 3]")),
        "wrong-shape": reply(http_answer(b'{"hookSpecificOutput": {"additionalContext": 5}}')),
        "http-500": reply(http_answer(b'{"error": "x"}', status="500 Internal Server Error")),
        "redirect-loop": lambda conn: conn.sendall(http_answer(
            b"", status="302 Found", extra=f"Location: http://127.0.0.1:{fake().port}/v1/hooks/claude-code\r\n")),
        "surrogate-in-answer": reply(http_answer(
            b'{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "a \\ud800 b"}}')),
        "invalid-utf8-answer": reply(http_answer(b'{"hookSpecificOutput": {"additionalContext": "\xff\xfe"}}')),
        "huge-context": reply(http_answer(json.dumps({"hookSpecificOutput": {
            "hookEventName": "UserPromptSubmit", "additionalContext": "x" * 5_000_000}}).encode())),
    }


# -- tmpfs ----------------------------------------------------------------------------------------------------------
@contextlib.contextmanager
def small_disk(env: Env, name: str, size: str = "64k") -> Iterator[Path | None]:
    """A tmpfs of ``size`` mounted at a fresh folder, or None when mounting is not allowed here."""
    path = env.fresh(name)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)],
                             capture_output=True).returncode == 0 if shutil.which("mount") else False
    env.tmpfs = mounted
    try:
        yield path if mounted else None
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(folder: Path) -> Path:
    """Fill the disk under ``folder``; the filler file (delete it to free the space)."""
    filler = folder / "filler"
    with contextlib.suppress(OSError), open(filler, "wb") as handle:
        while True:
            handle.write(b"\0" * 4096)
            handle.flush()
    return filler


# -- the rows -------------------------------------------------------------------------------------------------------
CaseFn = Callable[[Env], list[Case]]
ROWS: dict[int, list[CaseFn]] = {}


def row(number: int) -> Callable[[CaseFn], CaseFn]:
    def register(fn: CaseFn) -> CaseFn:
        ROWS.setdefault(number, []).append(fn)
        return fn
    return register


ROUTE_OK = "exit 0, no traceback, the good skill still routed"


@row(1)
def surrogate_description(env: Env) -> list[Case]:
    cases = []
    root = library(env, "lib-surrogate", [("lone", skill_text("lone", '"lone \\ud800 surrogate"'))])
    for profile in PROFILES:
        for argv in (["route", "convert miles to km"], ["prompt", "convert miles to km"], ["index"]):
            case = Case(1, f"{profile}: {argv[0]} with description \"\\ud800\"", ROUTE_OK)
            run = check_run(case, run_cli(env, [*argv, *lib_args(root, profile),
                                                "--index-dir", str(env.path("idx-1", profile))]))
            if argv[0] == "route" and run.code == 0 and "convert" not in run.out:
                case.fail("the good skill is not in the ranking")
            cases.append(case)
    case = Case(1, "serve with description \"\\ud800\": /readyz", "/readyz 200 within 90 s, both skills loaded")
    with serving(env, [*lib_args(root), "--index-dir", str(env.path("idx-1s"))]) as server:
        if not server.ready:
            server.not_ready(case)
        else:
            with client(server) as http:
                answer = request(case, http, "GET", "/v1/skills")
                if answer is not None and answer.status_code == 200 and answer.json().get("total") != 3:
                    case.fail(f"expected 3 skills, got {answer.json().get('total')}")
    cases.append(case)
    return cases


@row(1)
def undecodable_text_everywhere(env: Env) -> list[Case]:
    cases = []
    raw = b"---\nname: rawbyte\ndescription: Broken \xff\xfe bytes in a description.\n---\n\nBody \xc3\x28.\n"
    variants = {"raw bytes \\xff in description": ("rawbyte", raw),
                "surrogate escape in name": ("sname", skill_text('"s\\udc80name"', "A skill with a surrogate name.")),
                "surrogate in body": ("sbody", skill_text("sbody", "Body holds a surrogate.", body="x \udc80 y\n")),
                "surrogate in metadata": ("smeta", skill_text("smeta", "Metadata holds a surrogate.",
                                                              'metadata:\n  note: "\\udfff"\n'))}
    for label, (folder, text) in variants.items():
        root = library(env, "lib-bytes", [(folder, text)])
        for profile in ("agentskills", "genkit"):
            for argv in (["route", "convert miles to km"], ["prompt"], ["list", "--json"], ["lint"]):
                case = Case(1, f"{profile}: {argv[0]} with {label}", "exit 0 (lint: 0 or 1), no traceback")
                opts = ["--skills", str(root)] if argv[0] == "lint" else lib_args(root, profile)
                check_run(case, run_cli(env, [*argv, *opts, *(["--index-dir", str(env.path("idx-1b"))]
                                                               if argv[0] == "route" else [])]),
                          codes=(0, 1) if argv[0] == "lint" else (0,))
                cases.append(case)
    # a catalogue row, a label file, a config, a request argument and stdin
    cat = env.fresh("cat-1") / "tools.jsonl"
    cat.write_bytes(b'{"id": "a", "name": "a", "description": "lone \\ud800 escape"}\n'
                    b'{"id": "b", "name": "b", "description": "raw \xff byte"}\n'
                    b'{"id": "c", "name": "c", "description": "Convert units of length."}\n')
    for argv in (["list"], ["prompt", "convert"], ["route", "convert units"]):
        case = Case(1, f"catalogue rows with \\ud800 and \\xff: {argv[0]}",
                    "exit 0 (the rows load with the text made safe), or exit 2 with one line naming the row")
        check_run(case, run_cli(env, [*argv, "--catalog", str(cat), "--index-dir", str(env.path("idx-1c"))]),
                  codes=(0, 2), one_line=True)
        cases.append(case)
    root = library(env, "lib-1l", [])
    labels = env.fresh("labels-1") / "q.jsonl"
    labels.write_bytes(b'{"id": "q1", "query": "convert \\ud800 miles", "gold": ["convert"]}\n'
                       b'{"id": "q2", "query": "haiku \xff poem", "gold": ["haiku"]}\n')
    for argv in (["eval", "--queries", str(labels), "--retrievers", "bm25,default"],
                 ["learn", "--queries", str(labels)], ["route", "--queries", str(labels)]):
        case = Case(1, f"label file with \\ud800 and \\xff: {argv[0]}",
                    "exit 0 with the text made safe, or exit 2 with one line naming the line")
        check_run(case, run_cli(env, [*argv, *lib_args(root), "--index-dir", str(env.fresh("idx-1l"))]),
                  codes=(0, 2), one_line=True)
        cases.append(case)
    config = env.fresh("config-1") / "c.json"
    config.write_bytes(b'{"k": 3, "_comment": "lone \\ud800 and raw \xff"}')
    case = Case(1, "config with \\ud800 and \\xff: route", "exit 0 or exit 2 with one line")
    check_run(case, run_cli(env, ["route", "convert", "--config", str(config), *lib_args(root), "--index-dir",
                                  str(env.path("idx-1l"))]), codes=(0, 2), one_line=True)
    cases.append(case)
    for label, argv, stdin in [("argument with an undecodable byte", [b"route", b"convert \xff miles"], None),
                               ("stdin with an undecodable byte", ["route", "-"], b"convert \xff\xfe miles\n"),
                               ("prompt argument with an undecodable byte", [b"prompt", b"haiku \xed\xa0\x80"], None)]:
        case = Case(1, f"request {label}", ROUTE_OK)
        run = check_run(case, run_cli(env, [*argv, *lib_args(root), "--index-dir", str(env.path("idx-1l"))],
                                      stdin=stdin))
        cases.append(case)
        del run
    # requests over HTTP, MCP and the hook
    with serving(env, [*lib_args(root), "--index-dir", str(env.path("idx-1l"))]) as server:
        bodies = {"POST /v1/route query": ("POST", "/v1/route", b'{"query": "convert \\ud800 miles"}'),
                  "POST /v1/route messages": ("POST", "/v1/route",
                                              b'{"messages": [{"role": "user", "content": "a \\udc80 b"}]}'),
                  "POST /v1/route/batch": ("POST", "/v1/route/batch", b'{"requests": [{"query": "\\ud800"}]}'),
                  "POST /v1/inject": ("POST", "/v1/inject",
                                      b'{"messages": [{"role": "user", "content": "haiku \\ud800"}]}'),
                  "POST /v1/tool": ("POST", "/v1/tool", b'{"name": "conv\\ud800ert"}'),
                  "POST /v1/hooks/claude-code": ("POST", "/v1/hooks/claude-code",
                                                 b'{"hook_event_name": "UserPromptSubmit", "prompt": "\\ud800 km"}'),
                  "POST /v1/hooks/codex": ("POST", "/v1/hooks/codex", b'{"prompt": "miles \\udfff"}'),
                  "GET /v1/skills?q=": ("GET", "/v1/skills?q=convert%ED%A0%80", None),
                  "GET /v1/skills/NAME": ("GET", "/v1/skills/conv%ED%A0%80", None),
                  "raw \\xff in a JSON body": ("POST", "/v1/route", b'{"query": "convert \xff"}')}
        with client(server) as http:
            for label, (method, path, body) in bodies.items():
                case = Case(1, f"HTTP {label} with a lone surrogate", "no 5xx (200, or a 4xx JSON error)")
                if not server.ready:
                    server.not_ready(case)
                else:
                    request(case, http, method, path, allowed=(200, 400, 404, 422), content=body,
                            headers={"Content-Type": "application/json"})
                cases.append(case)
        for tool, arguments in [("search_skills", {"query": "convert \ud800 miles"}),
                                ("load_skill", {"name": "conv\udc80"}),
                                ("read_skill_file", {"name": "convert", "path": "a\udc80.md"})]:
            case = Case(1, f"MCP {tool} with a lone surrogate", "a tool result or a tool error, no 5xx, no hang")
            mcp_call(case, server, tool, arguments)
            cases.append(case)
        for label, stdin in [("prompt \\ud800", b'{"hook_event_name": "UserPromptSubmit", "prompt": "km \\ud800"}'),
                             ("raw \\xff", b'{"prompt": "km \xff"}'), ("not JSON", b"\xff\xfe\x00"),
                             ("empty", b""), ("2 MB", b'{"prompt": "' + b"a" * 2_000_000 + b'"}')]:
            case = Case(1, f"hook stdin {label} against the server", "exit 0 within the budget, no traceback")
            run = check_run(case, run_cli(env, ["hook", "claude-code", "--url", server.url, "--no-fallback"],
                                          stdin=stdin, timeout=HOOK_BUDGET + HOOK_MARGIN + 3))
            if run.seconds > HOOK_BUDGET + HOOK_MARGIN:
                case.fail(f"took {run.seconds:.2f} s on a {HOOK_BUDGET} s budget")
            cases.append(case)
    return cases


def mcp_call(case: Case, server: Server, tool: str, arguments: dict[str, Any], timeout: float = 10.0) -> Any:
    import httpx

    if not server.ready:
        server.not_ready(case)
        return None
    try:
        mcp = MCP(server, timeout=timeout)
        try:
            status, message = mcp.call(tool, arguments)
        finally:
            mcp.close()
    except httpx.TimeoutException:
        case.hang = True
        case.fail(f"MCP {tool}: no answer within {timeout} s")
        return None
    except httpx.HTTPError as exc:
        case.fail(f"MCP {tool}: {type(exc).__name__}")
        return None
    if status >= 500:
        case.errors_5xx += 1
        case.fail(f"MCP {tool}: HTTP {status}")
    elif not isinstance(message, dict) or ("result" not in message and "error" not in message):
        case.fail(f"MCP {tool}: HTTP {status}, not a JSON-RPC answer: {str(message)[:160]}")
    return message


@row(2)
def alias_bombs(env: Env) -> list[Case]:
    cases = []
    top = skill_text("bomb", "A skill whose frontmatter is an alias bomb.", alias_bomb())
    nested = skill_text("bomb", "A skill whose metadata is an alias bomb.",
                        "metadata:\n" + alias_bomb(indent="  "))
    for label, text in (("top-level keys", top), ("under metadata", nested)):
        root = library(env, "lib-bomb", [("bomb", text)])
        for profile in ("agentskills", "claude-code"):
            case = Case(2, f"{profile}: GET /v1/skills/bomb?body=true, bomb in {label}",
                        f"an answer (any non-5xx) within 10 s; /healthz answers within {HEALTHZ_LIMIT} s meanwhile; "
                        "server RSS grows < 100 MB")
            with serving(env, [*lib_args(root, profile), "--index-dir", str(env.path("idx-2", profile))]) as server:
                if not server.ready:
                    server.not_ready(case)
                else:
                    before = rss_mb(server.proc.pid)
                    worst = [0.0]
                    done = threading.Event()

                    def probe(srv: Server = server) -> None:
                        import httpx

                        with client(srv, timeout=5) as h:
                            while not done.is_set():
                                began = time.monotonic()
                                try:
                                    h.get("/healthz")
                                except httpx.HTTPError:
                                    pass
                                worst[0] = max(worst[0], time.monotonic() - began)
                                time.sleep(0.05)
                    thread = threading.Thread(target=probe, daemon=True)
                    thread.start()
                    with client(server, timeout=10) as http:
                        request(case, http, "GET", "/v1/skills/bomb?body=true", allowed=(200, 404, 413, 422, 503))
                    done.set()
                    thread.join(6)
                    grown = rss_mb(server.proc.pid) - before
                    if worst[0] > HEALTHZ_LIMIT:
                        case.fail(f"/healthz took {worst[0]:.2f} s")
                    if grown > 100:
                        case.fail(f"RSS grew {grown:.0f} MB")
                case.detail += f" (healthz worst {worst[0] if server.ready else 0:.3f} s)"
            cases.append(case)
        for profile in PROFILES:
            for argv in (["list", "--json"], ["prompt"], ["use", "bomb"]):
                # `use` of a skill its profile refused (agentskills skips a frontmatter that is not YAML) fails the
                # tool call as that harness fails it: exit 1, the harness's own message.
                codes = (0, 1, 2) if argv[0] == "use" else (0, 2)
                case = Case(2, f"{profile}: {argv[0]}, bomb in {label}",
                            f"exit {' or '.join(map(str, codes))} within 10 s, no traceback, RSS < 500 MB")
                run = check_run(case, run_cli(env, [*argv, *lib_args(root, profile)], timeout=SPECIAL_TIMEOUT),
                                codes=codes)
                if run.max_rss_mb > 500:
                    case.fail(f"peak RSS {run.max_rss_mb:.0f} MB")
                cases.append(case)
    # MCP load_skill on the bomb, and a bomb in a labels YAML file
    root = library(env, "lib-bomb", [("bomb", nested)])
    with serving(env, [*lib_args(root), "--index-dir", str(env.path("idx-2m"))]) as server:
        case = Case(2, "MCP load_skill on the bomb", "a tool result or error within 10 s")
        mcp_call(case, server, "load_skill", {"name": "bomb"})
        cases.append(case)
    labels = env.fresh("labels-2") / "q.yaml"
    labels.write_text(alias_bomb() + "requests: *b8\n", encoding="utf-8")
    case = Case(2, "eval --queries with an alias-bomb YAML", "exit 2 with one line within 10 s")
    check_run(case, run_cli(env, ["eval", "--queries", str(labels), *lib_args(root), "--index-dir",
                                  str(env.path("idx-2m"))], timeout=SPECIAL_TIMEOUT), codes=(2,), one_line=True)
    cases.append(case)
    # small legitimate anchors still work
    anchors = skill_text("anchors", "Uses a small YAML anchor.", "metadata:\n  tags: &t [units, maths]\n"
                                                                "  also: *t\n")
    root = library(env, "lib-anchor", [("anchors", anchors)])
    for profile in PROFILES:
        case = Case(2, f"{profile}: list with a small anchor and alias", "exit 0 and the skill is listed")
        check_run(case, run_cli(env, ["list", *lib_args(root, profile)]), out_contains="anchors")
        cases.append(case)
    return cases


def route_many(case: Case, http: Any, n: int, log_files: Callable[[], list[Path]] | None = None,
               query: str = "convert miles to km") -> list[tuple[str, bool]]:
    """``n`` POST /v1/route; (request id, whether a log file existed just before) of those answered 200."""
    ids = []
    for i in range(n):
        existed = bool(log_files and any(p.exists() for p in log_files()[:1]))
        answer = request(case, http, "POST", "/v1/route", json={"query": f"{query} {i}"})
        if answer is not None and answer.status_code == 200:
            ids.append((answer.json()["request_id"], existed))
    return ids


def logged_ids(log: Path) -> set[str]:
    found: set[str] = set()
    for path in [log, *sorted(log.parent.glob(log.name + ".*"))]:
        if path.is_file():
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                with contextlib.suppress(ValueError, AttributeError):
                    found.add(json.loads(line).get("id"))
    return found


@row(3)
def log_failures(env: Env) -> list[Case]:
    cases = []
    root = library(env, "lib-3", [])
    # 3a: the log deleted while serving
    case = Case(3, "decision log deleted while serving (--log-max-bytes 2000), 60 routes",
                "60 x 200; the log is reopened; 0 records lost among requests after it reappears")
    logdir = env.fresh("log-3a")
    log = logdir / "decisions.jsonl"
    with serving(env, [*lib_args(root), "--index-dir", str(env.path("idx-3")), "--log", str(log),
                       "--log-max-bytes", "2000", "--log-requests", "text"]) as server:
        if not server.ready:
            server.not_ready(case)
        else:
            with client(server) as http:
                route_many(case, http, 3)
                log.unlink()
                ids = route_many(case, http, 60, lambda: [log])
            after = [i for i, existed in ids if existed]
            if not log.exists():
                case.fail("the log file never came back")
            # Rotation keeps five old files of 2,000 bytes: the oldest records age out by design. Lost is a record
            # missing after the oldest one still kept.
            kept = logged_ids(log)
            first = next((n for n, i in enumerate(after) if i in kept), len(after))
            case.records_lost = len(set(after[first:]) - kept)
            if first == len(after):
                case.fail("no record of the routes after the log reappeared was kept")
            if case.records_lost:
                case.fail(f"{case.records_lost} records lost")
    cases.append(case)
    # 3b: a folder where the rotation puts LOG.1
    case = Case(3, "a folder at LOG.1 while serving (--log-max-bytes 2000), 60 routes",
                "60 x 200; /readyz and /metrics report the log failure")
    logdir = env.fresh("log-3b")
    log = logdir / "decisions.jsonl"
    (logdir / "decisions.jsonl.1").mkdir()
    with serving(env, [*lib_args(root), "--index-dir", str(env.path("idx-3")), "--log", str(log),
                       "--log-max-bytes", "2000"]) as server:
        if not server.ready:
            server.not_ready(case)
        else:
            with client(server) as http:
                ids = route_many(case, http, 60)
                readyz = request(case, http, "GET", "/readyz")
                metrics = request(case, http, "GET", "/metrics")
            if readyz is not None and "log" not in json.dumps(readyz.json()).lower():
                case.fail("/readyz does not mention the log failure")
            if metrics is not None and not re.search(r"^\w*log\w*(fail|error)\w*(\{[^}]*\})? [1-9]", metrics.text,
                                                     re.M):
                case.fail("/metrics has no non-zero log failure counter")
            case.records_lost = len({i for i, _ in ids} - logged_ids(log))
    cases.append(case)
    # 3c: the log on a full disk, then space freed
    with small_disk(env, "disk-3") as disk:
        case = Case(3, "decision log on a full 64 KiB tmpfs, 30 routes, then space freed, 10 routes",
                    "40 x 200; /readyz reports the log failure; 0 records lost once space is free")
        if disk is None:
            case.skipped = True
            case.detail = "skipped: no tmpfs (mount not allowed)"
        else:
            log = disk / "decisions.jsonl"
            with serving(env, [*lib_args(root), "--index-dir", str(env.path("idx-3")), "--log", str(log)]) as server:
                if not server.ready:
                    server.not_ready(case)
                else:
                    filler = fill(disk)
                    with client(server) as http:
                        route_many(case, http, 30)
                        readyz = request(case, http, "GET", "/readyz")
                        filler.unlink()
                        later = route_many(case, http, 10)
                    if readyz is not None and "log" not in json.dumps(readyz.json()).lower():
                        case.fail("/readyz does not mention the log failure")
                    case.records_lost = len({i for i, _ in later} - logged_ids(log))
                    if case.records_lost:
                        case.fail(f"{case.records_lost} records lost after space was freed")
        cases.append(case)
    return cases


@row(4)
def library_removed(env: Env) -> list[Case]:
    case = Case(4, "library folder removed while serving, POST /v1/reindex, folder restored with one more skill",
                "reindex not 5xx; routes 200 from the old library; /readyz names the reason (not 'None'); "
                "after the folder returns, a watched reload within 15 s")
    root = library(env, "lib-4", [])
    with serving(env, [*lib_args(root), "--index-dir", str(env.path("idx-4")), "--reload-interval", "0.2"]) as server:
        if not server.ready:
            server.not_ready(case)
            return [case]
        with client(server) as http:
            moved = env.path("lib-4-away")
            shutil.rmtree(moved, ignore_errors=True)
            root.rename(moved)
            time.sleep(1.0)
            request(case, http, "POST", "/v1/reindex", allowed=(200, 409, 422, 503))
            route_many(case, http, 5)
            readyz = request(case, http, "GET", "/readyz")
            text = json.dumps(readyz.json()) if readyz is not None else ""
            if ": None" in text:
                case.fail("/readyz reports the failed reload as '...Error: None'")
            if readyz is not None and str(root.name) not in text and "lib-4" not in text:
                case.fail(f"/readyz does not name the missing folder: {text[:200]}")
            moved.rename(root)
            (root / "gamma").mkdir()
            (root / "gamma" / "SKILL.md").write_text(skill_text("gamma", "Review Go code."), encoding="utf-8")
            deadline = time.monotonic() + 15
            skills = None
            while time.monotonic() < deadline:
                answer = request(case, http, "GET", "/readyz", allowed=(200, 503))
                skills = answer.json().get("skills") if answer is not None and answer.status_code == 200 else None
                if skills == 3:
                    break
                time.sleep(0.3)
            if skills != 3:
                case.fail(f"no reload after the folder returned (skills: {skills})")
    return [case]


SPECIALS = ("fifo", "char device (/dev/zero)", "symlink to /dev/zero", "folder")


def make_special(path: Path, kind: str) -> None:
    if path.exists() or path.is_symlink():
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind.startswith("char device"):
        os.mknod(path, 0o600 | 0o020000, os.makedev(1, 5))
    elif kind.startswith("symlink"):
        os.symlink("/dev/zero", path)
    else:
        path.mkdir()


@row(5)
def special_files_mcp(env: Env) -> list[Case]:
    cases = []
    root = library(env, "lib-5", [])
    folder = root / "convert"
    for kind in SPECIALS:
        make_special(folder / f"special-{kind.split()[0]}", kind)
    with serving(env, [*lib_args(root), "--index-dir", str(env.path("idx-5"))]) as server:
        for kind in SPECIALS:
            case = Case(5, f"MCP read_skill_file on a {kind} in the skill folder", "a tool error within 5 s")
            message = mcp_call(case, server, "read_skill_file", {"name": "convert",
                                                                 "path": f"special-{kind.split()[0]}"}, timeout=5)
            if isinstance(message, dict) and "result" in message and not message["result"].get("isError"):
                case.fail(f"answered content: {json.dumps(message)[:120]}")
            cases.append(case)
        case = Case(5, "48 concurrent MCP read_skill_file on the FIFO, then search_skills, then SIGTERM",
                    "every call answers within 5 s; search_skills still answers; SIGTERM stops the server in 10 s")
        if server.ready:
            results: list[Case] = []

            def one() -> None:
                sub = Case(5, "", "")
                mcp_call(sub, server, "read_skill_file", {"name": "convert", "path": "special-fifo"}, timeout=5)
                results.append(sub)
            threads = [threading.Thread(target=one, daemon=True) for _ in range(48)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(15)
            hung = sum(r.hang for r in results) + sum(t.is_alive() for t in threads)
            if hung:
                case.hang = True
                case.fail(f"{hung} of 48 calls hung")
            after = Case(5, "", "")
            mcp_call(after, server, "search_skills", {"query": "convert miles"}, timeout=5)
            if not after.ok:
                case.hang = case.hang or after.hang
                case.fail("search_skills afterwards: " + after.detail)
        else:
            server.not_ready(case)
        began = time.monotonic()
        if not stop(server.proc):
            case.hang = True
            case.fail("SIGTERM did not stop the server within 10 s")
        case.detail += f" (stopped in {time.monotonic() - began:.1f} s)"
        cases.append(case)
    return cases


@row(5)
def special_files_cli(env: Env) -> list[Case]:
    cases = []
    for kind in SPECIALS:
        # SKILL.md itself
        root = library(env, "lib-5c", [])
        make_special(root / "weird" / "SKILL.md", kind)
        for profile in PROFILES:
            case = Case(5, f"{profile}: list with SKILL.md a {kind}", "exit 0 within 10 s, the good skills listed")
            check_run(case, run_cli(env, ["list", *lib_args(root, profile)], timeout=SPECIAL_TIMEOUT),
                      out_contains="convert")
            cases.append(case)
        for argv in (["lint", "--skills", str(root)], ["route", "convert", *lib_args(root), "--index-dir",
                                                       str(env.path("idx-5c"))]):
            case = Case(5, f"{argv[0]} with SKILL.md a {kind}", "exit 0 or 1 within 10 s, no traceback")
            check_run(case, run_cli(env, argv, timeout=SPECIAL_TIMEOUT), codes=(0, 1))
            cases.append(case)
        # a file the SKILL.md references
        root = library(env, "lib-5r", [("refs", skill_text("refs", "Refers to a file.",
                                                          body="See [ref](ref.md) and [more](scripts/run.py).\n"))])
        make_special(root / "refs" / "ref.md", kind)
        make_special(root / "refs" / "scripts" / "run.py", kind)
        for profile in PROFILES:
            for argv in (["use", "refs"], ["prompt", "refer"]):
                case = Case(5, f"{profile}: {argv[0]} with a referenced file a {kind}", "exit 0 within 10 s")
                check_run(case, run_cli(env, [*argv, *lib_args(root, profile), "--index-dir",
                                              str(env.path("idx-5r", profile))][:None if argv[0] != "use" else -2],
                                        timeout=SPECIAL_TIMEOUT))
                cases.append(case)
        case = Case(5, f"lint with a referenced file a {kind}", "exit 0 or 1 within 10 s")
        check_run(case, run_cli(env, ["lint", "--skills", str(root)], timeout=SPECIAL_TIMEOUT), codes=(0, 1))
        cases.append(case)
        # paths given on the command line
        good = library(env, "lib-5g", [])
        target = env.fresh("special-5") / "thing"
        make_special(target, kind)
        labels = str(target)
        for label, argv, codes in [
                ("--config", ["route", "convert", *lib_args(good), "--config", labels], (2,)),
                ("--catalog", ["list", "--catalog", labels], (2,)),
                ("--queries (eval)", ["eval", "--queries", labels, *lib_args(good)], (2,)),
                ("--queries (route)", ["route", "--queries", labels, *lib_args(good)], (2,)),
                ("--queries (learn)", ["learn", "--queries", labels, *lib_args(good)], (2,)),
                ("--from-log (learn)", ["learn", "--from-log", labels, *lib_args(good)], (2,)),
                ("--index-dir", ["route", "convert", *lib_args(good), "--index-dir", labels], (0, 2)),
                ("--token-file (serve)", ["serve", *lib_args(good), "--token-file", labels, "--port", "0",
                                          "--exit-after", "3"], (2,)),
                ("--log (serve)", ["serve", *lib_args(good), "--log", labels, "--port", "0", "--exit-after", "3",
                                   "--index-dir", str(env.path("idx-5g"))], (0, 2))]:
            if label != "--index-dir" and "--index-dir" not in argv and argv[0] != "list":
                argv = [*argv, "--index-dir", str(env.path("idx-5g"))]
            case = Case(5, f"{label} is a {kind}", f"exit {'/'.join(map(str, codes))} within 10 s "
                                                    "(2: one line naming the path)")
            check_run(case, run_cli(env, argv, timeout=SPECIAL_TIMEOUT), codes=codes, one_line=True)
            cases.append(case)
        case = Case(5, f"hook --token-file a {kind}", "exit 0 within the budget")
        run = check_run(case, run_cli(env, ["hook", "claude-code", "--token-file", labels, "--url",
                                            f"http://127.0.0.1:{free_port()}", "--no-fallback"], stdin=HOOK_JSON,
                                      timeout=HOOK_BUDGET + HOOK_MARGIN + 3))
        if run.seconds > HOOK_BUDGET + HOOK_MARGIN:
            case.fail(f"took {run.seconds:.2f} s")
        cases.append(case)
        cwd = env.fresh("cwd-5")
        make_special(cwd / "skill-router.json", kind)
        case = Case(5, f"./skill-router.json is a {kind}: prompt", "exit 0 or 2 (one line) within 10 s")
        check_run(case, run_cli(env, ["prompt", "convert", *lib_args(good)], cwd=cwd, timeout=SPECIAL_TIMEOUT),
                  codes=(0, 2), one_line=True)
        cases.append(case)
    return cases


@row(6)
def hook_fake_servers(env: Env) -> list[Case]:
    cases = []
    holder: dict[str, FakeServer] = {}
    names = list(fake_behaviours(lambda: holder["fake"]))
    for name in names:
        fake = FakeServer(lambda conn, n=name: fake_behaviours(lambda: holder["fake"])[n](conn))
        holder["fake"] = fake
        try:
            case = Case(6, f"hook against a server that does: {name}",
                        f"exit 0 within {HOOK_BUDGET} s + {HOOK_MARGIN} s start-up, stdout empty or one hook JSON")
            run = check_run(case, run_cli(env, ["hook", "claude-code", "--url", f"http://127.0.0.1:{fake.port}",
                                                "--timeout", str(HOOK_BUDGET), "--no-fallback"], stdin=HOOK_JSON,
                                          timeout=HOOK_BUDGET * 5))
            if run.seconds > HOOK_BUDGET + HOOK_MARGIN:
                case.fail(f"took {run.seconds:.2f} s on a {HOOK_BUDGET} s budget")
            if run.out.strip():
                try:
                    output = json.loads(run.out)
                    assert set(output) == {"hookSpecificOutput"}
                    assert len(output["hookSpecificOutput"]["additionalContext"]) <= 2000
                except (ValueError, AssertionError, KeyError, TypeError):
                    case.fail(f"stdout is not one hook JSON: {run.out[:120]!r}")
            case.detail += f" ({run.seconds:.2f} s)"
            cases.append(case)
        finally:
            fake.close()
    # a dripping stdin, and the in-process fallback under a small budget
    case = Case(6, "hook whose stdin drips (never closes within the budget)", "exit 0 within the budget + start-up")
    run = hook_dripping_stdin(env)
    check_run(case, run)
    if run.seconds > HOOK_BUDGET + HOOK_MARGIN:
        case.fail(f"took {run.seconds:.2f} s on a {HOOK_BUDGET} s budget")
    cases.append(case)
    root = library(env, "lib-6", [])
    for budget in (0.3, 1.0):
        case = Case(6, f"hook with no server, in-process fallback, --timeout {budget}",
                    f"exit 0 within {budget} s + {HOOK_MARGIN} s start-up")
        run = check_run(case, run_cli(env, ["hook", "claude-code", "--url", f"http://127.0.0.1:{free_port()}",
                                            "--timeout", str(budget), "--skills", str(root), "--index-dir",
                                            str(env.path("idx-6"))], stdin=HOOK_JSON, timeout=30))
        if run.seconds > budget + HOOK_MARGIN:
            case.fail(f"took {run.seconds:.2f} s on a {budget} s budget")
        case.detail += f" ({run.seconds:.2f} s)"
        cases.append(case)
    return cases


def hook_dripping_stdin(env: Env) -> Run:
    cwd = env.path("cwd")
    cwd.mkdir(exist_ok=True)
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "router.cli", "hook", "claude-code", "--url",
                             f"http://127.0.0.1:{free_port()}", "--no-fallback"], cwd=cwd, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env.environ(),
                            start_new_session=True)
    assert proc.stdin is not None

    def drip() -> None:
        with contextlib.suppress(OSError):
            for byte in HOOK_JSON[:20]:
                assert proc.stdin is not None
                proc.stdin.write(bytes([byte]))
                proc.stdin.flush()
                time.sleep(0.5)
                if proc.poll() is not None:
                    return
    threading.Thread(target=drip, daemon=True).start()
    try:
        out, err = proc.communicate(timeout=15)
        hung = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        hung = True
    return Run(None if hung else proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
               time.monotonic() - start, hung)


@row(7)
def undecodable_folder_names(env: Env) -> list[Case]:
    cases = []
    root = library(env, "lib-7", [(b"caf\xff", skill_text("cafe", "Brew coffee with a French press.")),
                                  (b"t\xed\xa0\x80", skill_text("tea", "Brew green tea."))])
    for profile in PROFILES:
        for argv in (["prompt", "brew coffee"], ["route", "brew coffee"], ["list"], ["prompt"]):
            case = Case(7, f"{profile}: {argv[0]}{' (query)' if len(argv) > 1 else ''} with folders "
                           "'caf\\xff' and 't\\xed\\xa0\\x80'",
                        "exit 0, no traceback; the skills still work (4 listed)")
            run = check_run(case, run_cli(env, [*argv, *lib_args(root, profile), *(
                ["--index-dir", str(env.path("idx-7", profile))] if argv[0] == "route" else [])]))
            if argv[0] == "list" and run.code == 0 and len([ln for ln in run.out.splitlines() if ln.strip()]) < 4:
                case.fail(f"expected 4 skills listed: {run.out[:200]!r}")
            cases.append(case)
    case = Case(7, "serve with non-UTF-8 folder names: GET /v1/skills, POST /v1/route, hook endpoint", "no 5xx")
    with serving(env, [*lib_args(root), "--index-dir", str(env.path("idx-7s"))]) as server:
        if not server.ready:
            server.not_ready(case)
        else:
            with client(server) as http:
                request(case, http, "GET", "/v1/skills")
                request(case, http, "GET", "/v1/skills?q=brew%20coffee")
                request(case, http, "POST", "/v1/route", json={"query": "brew coffee"})
                request(case, http, "GET", "/v1/skills/cafe?body=true")
                request(case, http, "POST", "/v1/hooks/claude-code", json={"prompt": "brew coffee"})
    cases.append(case)
    return cases


@row(8)
def empty_libraries(env: Env) -> list[Case]:
    cases = []
    empty = env.fresh("lib-8")
    labels = env.fresh("labels-8") / "q.jsonl"
    labels.write_text('{"id": "q1", "query": "convert miles"}\n', encoding="utf-8")
    for profile in PROFILES:
        for label, argv in [("route", ["route", "convert miles"]), ("route --queries", ["route", "--queries",
                                                                                        str(labels)])]:
            case = Case(8, f"{profile}: {label} on an empty --skills folder",
                        "exit 2, one line 'no skills found in ...' naming the folder")
            run = check_run(case, run_cli(env, [*argv, *lib_args(empty, profile), "--index-dir",
                                                str(env.path("idx-8"))]), codes=(2,), one_line=True,
                            contains="no skills found in")
            if run.code == 2 and str(empty) not in run.err:
                case.fail("the error does not name the folder")
            cases.append(case)
    for profile in ("claude-code", "codex"):
        case = Case(8, f"{profile}: route with no skills folder at all (empty HOME and cwd)",
                    "exit 2, one line 'no skills found in ...'")
        check_run(case, run_cli(env, ["route", "convert", "--profile", profile, "--index-dir",
                                      str(env.path("idx-8"))], cwd=env.fresh("cwd-8"),
                                extra_env={"CODEX_HOME": str(env.path("no-codex"))}),
                  codes=(2,), one_line=True, contains="no skills found in")
        cases.append(case)
        case = Case(8, f"{profile}: prompt --emit-config with no skills",
                    "refused: exit 2 with one line, never a config that hides every skill")
        check_run(case, run_cli(env, ["prompt", "--emit-config", *lib_args(empty, profile)]), codes=(2,),
                  one_line=True)
        cases.append(case)
    for label, argv in [("prompt", ["prompt", "convert"]), ("eval", ["eval", "--queries", str(labels)]),
                        ("tune", ["tune", "--queries", str(labels), "-o", str(env.path("cwd", "t.json"))]),
                        ("index", ["index"])]:
        case = Case(8, f"{label} on an empty --skills folder", "exit 0 or 2 (one line), no traceback")
        check_run(case, run_cli(env, [*argv, *lib_args(empty), "--index-dir", str(env.path("idx-8"))]),
                  codes=(0, 2), one_line=True)
        cases.append(case)
    return cases


@row(9)
def busy_port(env: Env) -> list[Case]:
    root = library(env, "lib-9", [])
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        case = Case(9, "serve on a port already in use",
                    "exit 2, one line naming the port, 'listening' never printed, within 30 s")
        run = check_run(case, run_cli(env, ["serve", *lib_args(root), "--port", str(port), "--index-dir",
                                            str(env.path("idx-9")), "--exit-after", "20"], timeout=30),
                        codes=(2,), one_line=True)
        if "listening" in run.err:
            case.fail("printed 'listening' before failing")
        if run.code == 2 and str(port) not in run.err:
            case.fail("the error does not name the port")
    return [case]


def eval_metric(env: Env, root: Path, queries: Path, index: Path, config: Path | None, metric: str) -> float | None:
    out = env.path("eval-10.json")
    run = run_cli(env, ["eval", "--queries", str(queries), "--skills", str(root), "--retrievers", "default",
                        "--index-dir", str(index), "--json", str(out), *(["--config", str(config)] if config else [])],
                  cwd=env.fresh("cwd-10e"), timeout=300)
    if run.code != 0 or not out.exists():
        return None
    return find_metric(json.loads(out.read_text()), metric)


def find_metric(report: Any, metric: str) -> float | None:
    """The value of ``metric`` for the 'default' retriever anywhere in an eval report."""
    if isinstance(report, dict):
        if metric in report and isinstance(report[metric], (int, float)):
            return float(report[metric])
        for key in ("default", "retrievers", "results", "metrics", "overall"):
            if key in report:
                found = find_metric(report[key], metric)
                if found is not None:
                    return found
        for value in report.values():
            found = find_metric(value, metric)
            if found is not None:
                return found
    if isinstance(report, list):
        for value in report:
            found = find_metric(value, metric)
            if found is not None:
                return found
    return None


@row(10)
def tune_and_learn(env: Env) -> list[Case]:
    cases = []
    dev, test = DATA / "bundled-dev.jsonl", DATA / "bundled-test.jsonl"
    index = env.fresh("idx-10")
    shutil.copytree(BUNDLED, env.path("lib-10"), dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(".skill-router-index", "README.md"))
    root = env.path("lib-10")
    baseline = eval_metric(env, root, test, index, None, "mrr")
    for step in ("tune", "learn then tune"):
        if step.startswith("learn"):
            check_run(Case(10, "", ""), run_cli(env, ["learn", "--queries", str(dev), "--skills", str(root),
                                                      "--index-dir", str(index)], timeout=300))
            baseline = eval_metric(env, root, test, index, None, "mrr")
        out = env.path("cwd-10", f"{step.split()[0]}.json")
        out.parent.mkdir(exist_ok=True)
        out.unlink(missing_ok=True)
        case = Case(10, f"{step} on the bundled library (dev: bundled-dev, held out: bundled-test)",
                    "a written config is no worse than the config in force on held-out mrr and has false "
                    "abstention <= 0.5 on held-out; or exit 1 printing both numbers and writing nothing")
        run = check_run(case, run_cli(env, ["tune", "--skills", str(root), "--queries", str(dev), "--held-out",
                                            str(test), "--index-dir", str(index), "-o", str(out)],
                                      cwd=env.path("cwd-10"), timeout=600), codes=(0, 1))
        if run.code == 0 and out.exists():
            tuned = eval_metric(env, root, test, index, out, "mrr")
            held = json.loads(out.read_text()).get("tuning", {}).get("held_out", {})
            false_abstention = held.get("false_abstention_rate")
            case.detail = (f"held-out mrr in force {baseline}, written {tuned}; threshold "
                           f"{json.loads(out.read_text()).get('threshold')}, false abstention {false_abstention}")
            if tuned is None or baseline is None or tuned < baseline - 1e-9:
                case.fail("wrote a config that is worse on held-out requests")
            if isinstance(false_abstention, (int, float)) and false_abstention > 0.5:
                case.fail("wrote a degenerate threshold")
        elif run.code == 1:
            if out.exists():
                case.fail("exit 1 but the config was written")
            if len(re.findall(r"\d\.\d+", run.out + run.err)) < 2:
                case.fail("exit 1 without both numbers")
        cases.append(case)
    # every command that picks up ./skill-router.json says so
    cwd = env.fresh("cwd-10j")
    (cwd / "skill-router.json").write_text('{"k": 3}', encoding="utf-8")
    small = library(env, "lib-10s", [])
    labels = cwd / "q.jsonl"
    labels.write_text('{"id": "q1", "query": "convert miles to km", "gold": ["convert"]}\n', encoding="utf-8")
    for argv in (["route", "convert miles"], ["prompt", "convert miles"], ["eval", "--queries", str(labels)]):
        case = Case(10, f"{argv[0]} with ./skill-router.json present", "stderr says 'using ./skill-router.json' once")
        run = check_run(case, run_cli(env, [*argv, *lib_args(small), "--index-dir", str(env.path("idx-10s"))],
                                      cwd=cwd), codes=(0, 2))
        if run.err.count("using ./skill-router.json") != 1:
            case.fail(f"stderr: {run.err[-200:]!r}")
        cases.append(case)
    return cases


@row(11)
def learn_from_log(env: Env) -> list[Case]:
    case = Case(11, "learn --from-log after a routing, an unrelated search and a load without a request id",
                "only the load that names its routing is learned (1 example); the unlinked load is counted")
    root = library(env, "lib-11", [])
    log = env.fresh("log-11") / "decisions.jsonl"
    index = env.path("idx-11")
    with serving(env, [*lib_args(root), "--index-dir", str(index), "--log", str(log), "--log-requests",
                       "text"]) as server:
        if not server.ready:
            server.not_ready(case)
            return [case]
        with client(server) as http:
            first = request(case, http, "POST", "/v1/route", json={"query": "convert 3 miles to km"})
            route_id = first.json()["request_id"] if first is not None else None
            request(case, http, "POST", "/v1/tool", json={"name": "convert", "route_id": route_id})
            request(case, http, "GET", "/v1/skills", params={"q": "x"})
            request(case, http, "POST", "/v1/tool", json={"name": "haiku"})
    run = check_run(case, run_cli(env, ["learn", "--from-log", str(log), *lib_args(root), "--index-dir",
                                        str(index)]))
    match = re.search(r"learned (\d+) new example", run.out)
    learned = (index / "learned-examples.jsonl")
    rows = [json.loads(line) for line in learned.read_text().splitlines()] if learned.exists() else []
    if not match or int(match.group(1)) != 1 or any(r.get("query") == "x" for r in rows):
        case.fail(f"learned {match.group(1) if match else '?'} examples: {rows}")
    return [case]


@row(12)
def low_ones(env: Env) -> list[Case]:
    cases = []
    root = library(env, "lib-12", [])
    case = Case(12, "decisions.jsonl mode and folder mode", "log 0600 in a 0700 folder the server made")
    index = env.path("idx-12-new")
    shutil.rmtree(index, ignore_errors=True)
    with serving(env, [*lib_args(root), "--index-dir", str(index)]) as server:
        if server.ready:
            with client(server) as http:
                request(case, http, "POST", "/v1/route", json={"query": "convert"})
        else:
            server.not_ready(case)
    log = index / "decisions.jsonl"
    if log.exists():
        mode, folder_mode = log.stat().st_mode & 0o777, index.stat().st_mode & 0o777
        case.detail = f"log {mode:o}, folder {folder_mode:o}"
        if mode & 0o077 or folder_mode & 0o077:
            case.fail(f"log {mode:o}, folder {folder_mode:o}")
    else:
        case.fail("no decision log written")
    cases.append(case)
    for size in ("-1", "0"):
        case = Case(12, f"serve --log-max-bytes {size}", "exit 2, one line, before listening")
        run = check_run(case, run_cli(env, ["serve", *lib_args(root), "--log-max-bytes", size, "--port", "0",
                                            "--exit-after", "5", "--index-dir", str(env.path("idx-12"))], timeout=30),
                        codes=(2,), one_line=True)
        if "listening" in run.err:
            case.fail("printed 'listening'")
        cases.append(case)
    big = "Convert units. " + "lorem ipsum dolor " * (3_000_000 // 18)
    root = library(env, "lib-12b", [("big", f"---\nname: big\ndescription: {big}\n---\n\nBody.\n")])
    for argv in (["prompt", "convert miles"], ["route", "convert miles"]):
        case = Case(12, f"{argv[0]} with a 3 MB description", "exit 0 within 10 s, peak RSS < 500 MB")
        run = check_run(case, run_cli(env, [*argv, *lib_args(root), "--index-dir", str(env.path("idx-12b"))],
                                      timeout=90))
        case.detail += f" ({run.seconds:.1f} s, {run.max_rss_mb:.0f} MB)"
        if run.seconds > 10 or run.max_rss_mb > 500:
            case.fail(f"{run.seconds:.1f} s, {run.max_rss_mb:.0f} MB")
        cases.append(case)
    huge = f"---\nname: huge\ndescription: Huge.\n---\n\n{'x' * (5 << 20)}\n"
    root = library(env, "lib-12h", [("huge", huge)])
    for profile in PROFILES:
        case = Case(12, f"{profile}: list with a 5 MB SKILL.md (over the 4 MiB cap)",
                    "exit 0, the huge skill is not loaded (the cap applies in every profile)")
        run = check_run(case, run_cli(env, ["list", *lib_args(root, profile)], timeout=30))
        if run.code == 0 and "huge" in run.out.split():
            case.fail("the 5 MB SKILL.md was read and listed")
        elif run.code == 0 and re.search(r"^\S*huge\b", run.out, re.M):
            case.fail("the 5 MB SKILL.md was read and listed")
        cases.append(case)
    # a failed reload names its reason
    case = Case(12, "a failed reload's reason in /readyz", "the real reason, never 'SkillsFolderError: None'")
    root = library(env, "lib-12r", [])
    with serving(env, [*lib_args(root), "--index-dir", str(env.path("idx-12r")), "--no-watch"]) as server:
        if server.ready:
            shutil.rmtree(root)
            with client(server) as http:
                request(case, http, "POST", "/v1/reindex", allowed=(200, 409, 422, 503))
                readyz = request(case, http, "GET", "/readyz", allowed=(200, 503))
            text = json.dumps(readyz.json()) if readyz is not None else ""
            if ": None" in text:
                case.fail(f"/readyz: {text[:200]}")
        else:
            server.not_ready(case)
    cases.append(case)
    # a failing disk under the index
    with small_disk(env, "disk-12") as disk:
        root = library(env, "lib-12d", [])
        for argv in (["index"], ["route", "convert miles"]):
            case = Case(12, f"{argv[0]} with --index-dir on a full 64 KiB tmpfs",
                        "exit 0 (routing without persisting) or exit 2 with one line naming the disk problem")
            if disk is None:
                case.skipped = True
                case.detail = "skipped: no tmpfs (mount not allowed)"
            else:
                fill(disk)
                check_run(case, run_cli(env, [*argv, *lib_args(root), "--index-dir", str(disk / "index")]),
                          codes=(0, 2), one_line=True)
            cases.append(case)
    return cases


# -- the run ----------------------------------------------------------------------------------------------------------
def run_rows(env: Env, rows: Sequence[int]) -> list[Case]:
    cases: list[Case] = []
    for number in rows:
        for fn in ROWS.get(number, []):
            began = time.monotonic()
            try:
                found = fn(env)
            except Exception as exc:  # noqa: BLE001 - a broken case is reported, never hidden
                found = [Case(number, fn.__name__, "the case itself runs", ok=False,
                              detail=f"the case raised {type(exc).__name__}: {exc}")]
            spent = (time.monotonic() - began) / max(len(found), 1)
            for case in found:
                case.seconds = round(spent, 2)
                if env.verbose or not case.ok:
                    mark = "skip" if case.skipped else ("ok  " if case.ok else "FAIL")
                    print(f"  row {case.row:>2} {mark} {case.name}" + (f": {case.why()}" if not case.ok else "")
                          + (f" [{case.detail.strip()}]" if case.detail else ""), flush=True)
            cases.extend(found)
    return cases


def totals(cases: Sequence[Case]) -> dict[str, int]:
    tried = [c for c in cases if not c.skipped]
    return {"cases": len(tried), "failed": sum(not c.ok for c in tried), "crashes": sum(c.crash for c in tried),
            "hangs": sum(c.hang for c in tried), "5xx": sum(c.errors_5xx for c in tried),
            "records_lost": sum(c.records_lost for c in tried), "skipped": len(cases) - len(tried)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rows", default=",".join(str(r) for r in sorted(ROWS)), help="comma-separated rows")
    parser.add_argument("--output", default=str(RESULTS), help="results JSON")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case, not only failures")
    args = parser.parse_args(argv)
    rows = [int(r) for r in args.rows.split(",") if r.strip()]
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="skill-router-breakit-") as folder:
        env = Env(Path(folder), verbose=args.verbose)
        env.fresh("home")
        try:
            cases = run_rows(env, rows)
        finally:
            for proc in env.procs:
                stop(proc, grace=2)
    elapsed = time.monotonic() - start
    by_row = {str(r): totals([c for c in cases if c.row == r]) for r in rows}
    print(f"\n{'row':>5} {'cases':>6} {'failed':>6} {'crashes':>7} {'hangs':>5} {'5xx':>4} {'lost':>5} {'skipped':>7}")
    for number, t in by_row.items():
        print(f"{number:>5} {t['cases']:>6} {t['failed']:>6} {t['crashes']:>7} {t['hangs']:>5} {t['5xx']:>4} "
              f"{t['records_lost']:>5} {t['skipped']:>7}")
    total = totals(cases)
    print(f"{'total':>5} {total['cases']:>6} {total['failed']:>6} {total['crashes']:>7} {total['hangs']:>5} "
          f"{total['5xx']:>4} {total['records_lost']:>5} {total['skipped']:>7}   ({elapsed:.0f} s)")
    report = {"command": " ".join(["python benchmarks/breakit.py", *(argv if argv is not None else sys.argv[1:])]),
              "date": time.strftime("%Y-%m-%d"), "seconds": round(elapsed, 1),
              "failing_disk": "tmpfs" if env.tmpfs else ("unavailable" if env.tmpfs is False else "not tried"),
              "total": total, "rows": by_row, "cases": [asdict(c) for c in cases]}
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(report, indent=1, ensure_ascii=True) + "\n", encoding="utf-8")
    return 1 if total["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
