"""Load and fault test of ``skill-router serve``: is it fast, does it stay up, does a reload ever fail a request?

    python benchmarks/serve_load.py                       # ~700 corpus skills, then 10,000 catalogue rows
    python benchmarks/serve_load.py --only corpus --duration 20 --fuzz 500   # a quick look

For each library a real server is started as a subprocess on a free loopback port (it stops itself after a bounded
time; nothing is sent to any other address) and measured in four steps:

1. Hook round trip through the idle server: ``POST /v1/hooks/claude-code`` (Claude Code's ``type: http`` hook, no
   process start), and the ``skill-router hook claude-code`` command (a new Python process per prompt).
2. Load: ``--clients`` concurrent clients send ``POST /v1/route`` for ``--duration`` seconds while one SKILL.md is
   rewritten every second (the watcher reloads it; for the catalogue, a row is rewritten and ``POST /v1/reindex``
   called), and one more client sends a burst of ``--fuzz`` schema-driven malformed requests.
3. Throughput, p50 / p99 latency, requests by status, failed requests (status >= 500 or no answer), reloads.
4. The server's peak RSS (VmHWM). The index is built before the server starts, as an operator would (with the
   encoder the server uses); the server then loads it warm.

The corpus library is a private copy of ../shared/corpora (the rewrites never touch the shared data). Writes
benchmarks/results/serve_load.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

import httpx

from common import CORPORA, ROOT, save

SCRIPT = Path(sys.executable).parent / "skill-router"
ROOTS = ["anthropic-skills/skills", "scientific-skills/scientific-skills", "awesome-skills/skills"]
HOOK_STDIN = {"session_id": "bench", "prompt_id": "p", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp",
              "permission_mode": "default", "effort": "medium", "hook_event_name": "UserPromptSubmit"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))], 2) if ordered else float("nan")


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


class Server:
    """``skill-router serve`` in a subprocess; stops itself after ``lifetime`` seconds at the latest."""

    def __init__(self, options: list[str], work: Path, lifetime: float) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(work / "server.log", "w")
        self.process = subprocess.Popen([str(SCRIPT), "serve", *options, "--port", str(self.port),
                                         "--exit-after", str(lifetime), "--log", str(work / "decisions.jsonl")],
                                        stdout=self.log, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout: float) -> float:
        start = time.monotonic()
        with httpx.Client(base_url=self.url, trust_env=False, timeout=5) as client:
            while time.monotonic() - start < timeout:
                if self.process.poll() is not None:
                    raise RuntimeError(f"the server exited ({self.process.returncode}); see {self.log.name}")
                try:
                    if client.get("/readyz").status_code == 200:
                        return time.monotonic() - start
                except httpx.TransportError:
                    pass
                time.sleep(0.25)
        raise TimeoutError("the server did not become ready")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()


# -- step 1: hooks ------------------------------------------------------------------------------------------------
def hook_round_trips(url: str, prompts: list[str], samples: int, commands: int) -> dict[str, Any]:
    http_ms = []
    with httpx.Client(base_url=url, trust_env=False, timeout=10) as client:
        for i in range(samples):
            payload = {**HOOK_STDIN, "prompt": prompts[i % len(prompts)]}
            start = time.perf_counter()
            answer = client.post("/v1/hooks/claude-code", json=payload)
            http_ms.append((time.perf_counter() - start) * 1000)
            assert answer.status_code == 200, answer.text
    command_ms, printed = [], 0
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    for i in range(commands):
        payload = json.dumps({**HOOK_STDIN, "prompt": prompts[i % len(prompts)]}).encode()
        start = time.perf_counter()
        done = subprocess.run([str(SCRIPT), "hook", "claude-code", "--url", url], input=payload,
                              capture_output=True, timeout=10, env=env)
        command_ms.append((time.perf_counter() - start) * 1000)
        printed += bool(done.stdout.strip())
    return {"http_hook_ms": {"p50": percentile(http_ms, 0.5), "p99": percentile(http_ms, 0.99), "n": samples},
            "command_hook_ms": {"p50": percentile(command_ms, 0.5), "p99": percentile(command_ms, 0.99),
                                "n": commands, "printed_context": printed}}


# -- step 2: malformed requests -----------------------------------------------------------------------------------
ENDPOINTS = ["/v1/route", "/v1/route/batch", "/v1/tool", "/v1/inject", "/v1/hooks/claude-code", "/v1/hooks/codex",
             "/v1/skills", "/mcp"]
WRONG = [None, True, -1, 0, 51, 10**30, 1.5, "", " ", "x" * 9000, [], {}, [1, "a"], {"a": {"b": [None]}}, "\u0000",
         "\u202e", "skill://../../etc/passwd", "../../etc/passwd"]
FIELDS = ["query", "messages", "k", "pin", "exclude", "requests", "name", "arguments", "call_name", "route_id",
          "prompt", "hook_event_name", "session_id", "qeury", "extra"]


def malformed_cases(n: int, rng: random.Random) -> list[tuple[str, str, bytes, dict[str, str]]]:
    """(method, path, body, headers): valid shapes with one or more fields broken, plus raw byte-level garbage."""
    valid = {"/v1/route": {"query": "rain in Lyon?", "k": 3},
             "/v1/route/batch": {"requests": [{"query": "rain"}, {"query": "commit message"}]},
             "/v1/tool": {"name": "nope"}, "/v1/inject": {"messages": [{"role": "user", "content": "rain?"}]},
             "/v1/hooks/claude-code": {**HOOK_STDIN, "prompt": "rain?"}, "/v1/hooks/codex": {"prompt": "rain?"},
             "/v1/skills": {}, "/mcp": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}}
    raw = [b"", b"{", b"null", b"[]", b'"text"', b"\xff\xfe\x00", b'{"query": "\\ud800"}', b"[" * 20000,
           b'{"query": NaN, "k": Infinity}', b'{"query": "x", "k": 1e999}', b"\x00" * 100,
           b'{"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]}',
           b'{"requests": [' + b'{"query": "x"},' * 100 + b'{"query": "y"}]}', b"x" * ((1 << 20) + 1)]
    cases = []
    for _ in range(n):
        path = rng.choice(ENDPOINTS)
        headers = {"Content-Type": "application/json"}
        roll = rng.random()
        if roll < 0.25:
            body = rng.choice(raw)
        else:
            data: Any = json.loads(json.dumps(valid[path]))
            for _ in range(rng.randint(1, 3)):
                if isinstance(data, dict) and (not data or rng.random() < 0.7):
                    data[rng.choice(FIELDS)] = rng.choice(WRONG)
                elif isinstance(data, dict):
                    data.pop(rng.choice(list(data)))
            if rng.random() < 0.1:
                data = rng.choice(WRONG)
            body = json.dumps(data).encode()
        if rng.random() < 0.08:
            headers["Content-Type"] = rng.choice(["text/plain", "application/x-www-form-urlencoded", "", "json"])
        method = "GET" if path == "/v1/skills" and rng.random() < 0.5 else "POST"
        if path == "/mcp":
            headers["Accept"] = "application/json, text/event-stream"
        cases.append((method, path, body, headers))
    queries = [("GET", "/v1/skills?q=" + q, b"", {}) for q in ["", "%00", "x" * 9000, "rain&k=0", "rain&k=abc",
                                                                "rain&k=51", "rain&body=maybe"]]
    return cases + [("GET", "/v1/skills/" + name, b"", {}) for name in ["..%2F..%2Fetc", "x" * 300, "%ff"]] + queries


def fuzz(url: str, cases: list[tuple[str, str, bytes, dict[str, str]]]) -> dict[str, Any]:
    statuses: Counter[int] = Counter()
    fives = []
    with httpx.Client(base_url=url, trust_env=False, timeout=30) as client:
        for method, path, body, headers in cases:
            try:
                answer = client.request(method, path, content=body or None, headers=headers)
                status = answer.status_code
            except httpx.HTTPError as exc:
                status = -1
                fives.append({"path": path, "error": type(exc).__name__})
            statuses[status] += 1
            if status >= 500 and len(fives) < 5:
                fives.append({"path": path, "status": status, "body": body[:100].decode("latin-1")})
    return {"cases": len(cases), "by_status": dict(sorted(statuses.items())),
            "5xx": sum(n for s, n in statuses.items() if s >= 500 or s < 0), "samples_5xx": fives}


# -- step 3: load -------------------------------------------------------------------------------------------------
def load(url: str, queries: list[str], clients: int, duration: float, rewrite: Callable[[int], None],
         cases: list[tuple[str, str, bytes, dict[str, str]]], every: float = 1.0) -> dict[str, Any]:
    stop = threading.Event()
    latencies: list[float] = []
    server_ms: list[float] = []  # the handler's own time (queue + route), the rest is HTTP and the client
    statuses: Counter[int] = Counter()
    failures: list[str] = []

    async def client(http: httpx.AsyncClient, seed: int) -> None:
        rng = random.Random(seed)
        while not stop.is_set():
            start = time.perf_counter()
            try:
                answer = await http.post("/v1/route", json={"query": rng.choice(queries)})
                status = answer.status_code
                if status == 200:
                    server_ms.append(answer.json()["timings"]["total_ms"])
            except httpx.HTTPError as exc:
                status = -1
                failures.append(type(exc).__name__)
            statuses[status] += 1
            if status == 200:
                latencies.append((time.perf_counter() - start) * 1000)

    async def clients_main() -> None:
        limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
        async with httpx.AsyncClient(base_url=url, trust_env=False, timeout=60, limits=limits) as http:
            await asyncio.gather(*(client(http, i) for i in range(clients)))

    rewrites = 0

    def rewriter() -> None:
        nonlocal rewrites
        while every > 0 and not stop.wait(every):
            rewrite(rewrites)
            rewrites += 1

    with httpx.Client(base_url=url, trust_env=False) as probe:
        reloads_before = probe.get("/readyz").json()["reloads"]
    fuzz_result: dict[str, Any] = {}
    # one asyncio loop for all the clients: 32 threads of a synchronous client cost more CPU than the server
    threads = [threading.Thread(target=lambda: asyncio.run(clients_main())), threading.Thread(target=rewriter)]
    threads.append(threading.Thread(target=lambda: fuzz_result.update(fuzz(url, cases))))
    start = time.monotonic()
    for thread in threads:
        thread.start()
    time.sleep(duration)
    stop.set()
    for thread in threads:
        thread.join()
    wall = time.monotonic() - start
    time.sleep(2)  # the last rewrite's reload
    with httpx.Client(base_url=url, trust_env=False) as probe:
        ready = probe.get("/readyz").json()
        metrics = dict(line.rsplit(" ", 1) for line in probe.get("/metrics").text.splitlines()
                       if line.startswith("skill_router_batch_size_"))
    batches = float(metrics.get("skill_router_batch_size_count", 0))
    ok = statuses.get(200, 0)
    return {"clients": clients, "seconds": round(wall, 1), "requests": sum(statuses.values()),
            "throughput_rps": round(ok / duration, 1), "p50_ms": percentile(latencies, 0.5),
            "p99_ms": percentile(latencies, 0.99),
            "server_p50_ms": percentile(server_ms, 0.5), "server_p99_ms": percentile(server_ms, 0.99),
            "mean_ms": round(statistics.fmean(latencies), 2) if latencies else None,
            "by_status": dict(sorted(statuses.items())),
            "failed": sum(n for s, n in statuses.items() if s != 200), "failure_kinds": dict(Counter(failures)),
            "mean_batch": round(float(metrics.get("skill_router_batch_size_sum", 0)) / batches, 1) if batches else None,
            "rewrites": rewrites, "reloads": ready["reloads"] - reloads_before,
            "last_reload": ready["last_reload"], "fuzz": fuzz_result}


# -- the two libraries --------------------------------------------------------------------------------------------
def run_corpus(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    library = work / "corpora"
    shutil.rmtree(library, ignore_errors=True)  # a fresh copy: the last run left a rewritten SKILL.md
    for root in ROOTS:
        shutil.copytree(CORPORA / root, library / root.replace("/", "-"))
    roots = [str(library / root.replace("/", "-")) for root in ROOTS]
    skills = sorted(library.rglob("SKILL.md"))
    target = next(p for p in skills[len(skills) // 2:] if _plain_description(p))
    original = target.read_text(encoding="utf-8")
    rng = random.Random(0)
    queries = [_first_sentence(p.read_text(encoding="utf-8", errors="replace")) for p in rng.sample(skills, 200)]
    queries = [q for q in queries if q]

    def rewrite(i: int) -> None:  # in place, as an editor would: the watcher may even see a half-written file
        target.write_text(original.replace("description:", f"description: (revision {i})", 1), encoding="utf-8")

    options = [arg for root in roots for arg in ("--skills", root)] + ["--index-dir", str(work / "idx")]
    return measure(args, work, options, queries, rewrite, len(skills), build_first=True)


def run_catalog(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    from speed import library as spliced_library, real_skills, requests as spliced_requests

    rng = random.Random(0)
    base = real_skills()
    rows = spliced_library(base, 10_000, rng)
    catalog = work / "catalog.jsonl"
    write_rows(catalog, rows)
    queries = spliced_requests(base, random.Random(1))
    options = ["--catalog", str(catalog), "--index-dir", str(work / "idx")]
    url_box: dict[str, str] = {}

    def rewrite(i: int) -> None:  # atomically (a reader never sees half a file), then ask for a reindex
        rows[5000] = {**rows[5000], "description": rows[5000]["description"] + f" Revision {i}."}
        write_rows(catalog, rows)
        with httpx.Client(base_url=url_box["url"], trust_env=False, timeout=60) as client:
            client.post("/v1/reindex")

    return measure(args, work, options, queries, rewrite, len(rows), build_first=True, url_box=url_box)


def write_rows(path: Path, rows: list[dict[str, str]]) -> None:
    partial = path.with_suffix(".partial")
    partial.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    os.replace(partial, path)


def _plain_description(path: Path) -> bool:
    """A one-line, unquoted description: the rewrite keeps it valid YAML."""
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("description:"):
            value = line.split(":", 1)[1].strip()
            return bool(value) and value[0] not in "|>\"'" and ": " not in value
    return False


def _first_sentence(text: str) -> str:
    for line in text.splitlines():
        if line.startswith("description:"):
            value = line.split(":", 1)[1].strip().strip("\"'|> ")
            return value.split(". ")[0][:200]
    return ""


# The index is built before the server starts, with the encoder the server uses (the ONNX export when there is one),
# as an operator would; the server then loads it warm.
BUILD = """
import json, sys
from indexes import OnnxUnavailable, ensure_onnx_encoder
from router.cli import build_parser
from router.cli.common import make_router
args = build_parser().parse_args(["index", *json.loads(sys.argv[1])])
try:
    encoder = ensure_onnx_encoder(None)
except OnnxUnavailable:
    encoder = None
make_router(args, encoder=encoder)
"""


def measure(args: argparse.Namespace, work: Path, options: list[str], queries: list[str],
            rewrite: Callable[[int], None], skills: int, *, build_first: bool,
            url_box: dict[str, str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"skills": skills}
    if build_first:
        start = time.monotonic()
        subprocess.run([sys.executable, "-c", BUILD, json.dumps(options)], check=True, capture_output=True)
        out["index_build_s"] = round(time.monotonic() - start, 1)
    server = Server(options, work, lifetime=args.duration + 900)
    try:
        out["ready_s"] = round(server.wait_ready(timeout=900), 1)
        if url_box is not None:
            url_box["url"] = server.url
        prompts = queries[:50]
        out["hooks"] = hook_round_trips(server.url, prompts, args.hook_samples, args.hook_commands)
        print(f"  hooks: {out['hooks']}", flush=True)
        cases = malformed_cases(args.fuzz, random.Random(2))
        out["load"] = load(server.url, queries, args.clients, args.duration, rewrite, cases, args.rewrite_every)
        out["peak_rss_mb"] = peak_rss_mb(server.process.pid)
    finally:
        server.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=("corpus", "catalog"))
    parser.add_argument("--work", metavar="DIR", help="keep the libraries and indexes here and reuse them next time "
                                                      "(the 10,000-row index takes minutes to build); default: a "
                                                      "temporary folder")
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--fuzz", type=int, default=2000, help="malformed requests per library")
    parser.add_argument("--rewrite-every", type=float, default=1.0, metavar="SECONDS",
                        help="rewrite one skill this often during the load (0: never)")
    parser.add_argument("--hook-samples", type=int, default=300)
    parser.add_argument("--hook-commands", type=int, default=30)
    args = parser.parse_args()
    results: dict[str, Any] = {"parameters": vars(args), "cpus": os.cpu_count(), "load_average": os.getloadavg()}
    for name, run in (("corpus", run_corpus), ("catalog", run_catalog)):
        if args.only and args.only != name:
            continue
        print(f"{name} ...", flush=True)
        if args.work:
            work = Path(args.work) / name
            work.mkdir(parents=True, exist_ok=True)
            results[name] = run(args, work)
        else:
            with tempfile.TemporaryDirectory(prefix="serve-load-") as tmp:
                results[name] = run(args, Path(tmp))
        print(json.dumps(results[name], indent=1), flush=True)
    results["load_average_after"] = os.getloadavg()
    path = save("serve_load" + (f"-{args.only}" if args.only else ""), results)
    print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
