"""How fast is skill-router at 100, 1,000 and 10,000 skills: index builds, refreshes, routing latency, memory.

    .venv/bin/python benchmarks/speed.py            # torch threads chosen from the load average
    .venv/bin/python benchmarks/speed.py --threads 2  # or fixed

Libraries are JSONL catalogues (``Router.from_catalog``) in a temporary folder. The first skills are the real
descriptions of the SKILL.md files under the shared corpora; beyond them, variants are generated with a fixed
seed by splicing sentences (or, for one-sentence descriptions, halves) of two different real descriptions and
adding a variant number in words, so every id has a distinct text and every text is embedded once.

For each size, measured in a fresh subprocess (``speed.py --one N``) so the peak resident set is that size's own:

- cold build: every text embedded with the bundled all-MiniLM-L6-v2 (texts/second) and the index folder's size;
- warm load: a new Router over the same index folder builds with 0 embeddings;
- refresh: one description changed, a new Router over the same folder embeds exactly 1 text;
- latency p50/p95 over 200 distinct requests (sentences of real descriptions, truncated and phrased as requests)
  for query encoding, BM25 scores, dense scores (given the query vector), fusion (``Router.fuse``), ranking
  (``Router.rank_scored``) and the full hybrid ``Router.rank(query, 5)``; the components of one request are
  timed back to back, so their ratios are comparable even on a busy machine;
- peak memory (``ru_maxrss``) after loading the model alone, and at the end.

At 10,000 skills the hybrid route is also profiled with cProfile (top functions by own time). The machine is
shared: torch's thread count and the load average at start and end are recorded. Prints a table and writes
benchmarks/results/speed.json.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import CORPORA, save  # noqa: E402

SIZES = (100, 1000, 10000)
QUERIES = 200
WARMUP = 10
K = 5
SEED = 20240611
TARGETS_MS = {1000: 15.0, 10000: 25.0}
REFRESH_TARGET_S = 1.0
PROFILE_QUERIES = 60

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
         "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_OPENERS = ["", "", "please ", "can you ", "I need to ", "help me ", "how do I ", "I want to ", "could you "]


def number_words(n: int) -> str:
    """English words for 0 <= n < 1,000,000 (variant numbers, so generated texts differ in words, not digits)."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else "-" + _ONES[n % 10])
    if n < 1000:
        return _ONES[n // 100] + " hundred" + ("" if n % 100 == 0 else " " + number_words(n % 100))
    return number_words(n // 1000) + " thousand" + ("" if n % 1000 == 0 else " " + number_words(n % 1000))


def real_skills() -> list[tuple[str, str]]:
    """(name, description) of every SKILL.md under the corpora with a distinct, non-empty description."""
    found: dict[str, str] = {}
    for path in sorted(CORPORA.rglob("SKILL.md")):
        text = path.read_text(encoding="utf-8", errors="replace").replace("\r\n", "\n")
        front: Any = None
        if text.startswith("---"):
            try:
                front = yaml.safe_load(text.split("---", 2)[1])
            except yaml.YAMLError:
                front = None
        if isinstance(front, dict) and isinstance(front.get("description"), str):
            description = front["description"]
            name = str(front.get("name") or path.parent.name)
        else:  # the raw line, for frontmatter YAML cannot parse
            line = re.search(r"^description:\s*(.+)$", text, re.MULTILINE)
            if not line:
                continue
            description, name = line.group(1).strip().strip("\"'"), path.parent.name
        description = " ".join(description.split())
        if description and description not in found:
            found[description] = name
    return [(name, description) for description, name in found.items()]


def _pieces(description: str) -> list[str]:
    sentences = [s for s in _SENTENCE.split(description) if s.strip()]
    if len(sentences) > 1:
        return sentences
    words = description.split()
    return [" ".join(words[: len(words) // 2 + 1]), " ".join(words[len(words) // 2 + 1:])]


def library(base: list[tuple[str, str]], n: int, rng: random.Random) -> list[dict[str, str]]:
    """``n`` catalogue rows: the real skills first, then variants spliced from two different real ones."""
    rows = [{"id": f"s{i:05d}-{name}", "name": name, "description": d} for i, (name, d) in enumerate(base[:n])]
    seen = {row["description"] for row in rows}
    while len(rows) < n:
        (left_name, left), (_, right) = rng.sample(base, 2)
        a, b = _pieces(left), _pieces(right)
        head = a[: max(1, len(a) // 2)]
        tail = b[len(b) // 2:] or b[-1:]
        number = len(rows)
        text = " ".join(head + tail + [f"Variant {number_words(number)}."])
        if text in seen:
            continue
        seen.add(text)
        rows.append({"id": f"s{number:05d}-{left_name}", "name": f"{left_name}-{number}", "description": text})
    return rows


def requests(base: list[tuple[str, str]], rng: random.Random) -> list[str]:
    """``QUERIES`` distinct requests: a sentence of a real description, truncated, phrased as a request."""
    sentences = [s for _, d in base for s in _SENTENCE.split(d) if len(s.split()) >= 5]
    chosen: list[str] = []
    while len(chosen) < QUERIES:
        words = rng.choice(sentences).rstrip(".").split()
        start = rng.randrange(0, max(1, len(words) // 3))
        length = rng.randint(5, 16)
        text = rng.choice(_OPENERS) + " ".join(words[start:start + length]).lower()
        if text not in chosen:
            chosen.append(text)
    return chosen


def write_catalog(path: Path, rows: list[dict[str, str]]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def percentiles(seconds: list[float]) -> dict[str, float]:
    ms = sorted(1000 * s for s in seconds)
    return {"p50_ms": round(statistics.median(ms), 3), "p95_ms": round(ms[round(0.95 * (len(ms) - 1))], 3),
            "mean_ms": round(statistics.fmean(ms), 3)}


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def max_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # Linux reports KiB


def choose_threads() -> tuple[int, str]:
    """Torch threads for this machine now: every core when it is idle, one when other work already fills them.

    On a busy 2-core machine two intra-op threads wait on each other at every barrier while the scheduler runs
    someone else: encoding one request measured 180-450 ms with 2 threads against 26-30 ms with 1, and batch
    encoding 19-37 against 60 texts/s.
    """
    cpus = len(os.sched_getaffinity(0))
    load = os.getloadavg()[0]
    if load < cpus - 0.5:
        return cpus, f"load average {load:.2f} < {cpus} cores - 0.5: one thread per core"
    return 1, f"load average {load:.2f} >= {cpus} cores - 0.5: the cores are busy, one thread avoids barrier waits"


def run_one(n: int, threads: int, kind: str = "onnx") -> dict[str, Any]:
    """Every measurement for a library of ``n`` skills, in this process, embedding with ``kind`` (``onnx``: the
    router's own choice, the cached onnxruntime export; ``torch``: sentence-transformers on ``threads`` threads)."""
    import numpy as np

    from router.routing import Router, Scored

    load_start = os.getloadavg()
    rss_start = max_rss_mb()
    if kind == "onnx":
        from indexes.onnx_encoder import find_onnx_encoder

        found = find_onnx_encoder()
        if found is None:
            raise SystemExit("no ONNX export of the bundled model yet: run 'skill-router index' once")
        encoder: Any = found
    else:
        import torch

        from indexes import Encoder

        torch.set_num_threads(threads)
        encoder = Encoder()
    _, model_load = timed(lambda: encoder.encode(["load the model"]))
    rss_model = max_rss_mb()

    rng = random.Random(SEED)
    base = real_skills()
    rows = library(base, n, rng)
    queries = requests(base, random.Random(SEED + 1))
    work = Path(tempfile.mkdtemp(prefix="skill-router-speed-"))
    try:
        catalog, folder = work / "catalog.jsonl", work / "index"
        write_catalog(catalog, rows)

        cold, cold_s = timed(lambda: Router.from_catalog(catalog, index_folder=str(folder), encoder=encoder))
        assert cold.embedded_count == n, f"cold build embedded {cold.embedded_count} texts, expected {n}"
        index_bytes = folder_bytes(folder)
        del cold

        warm, warm_s = timed(lambda: Router.from_catalog(catalog, index_folder=str(folder), encoder=encoder))
        assert warm.embedded_count == 0, f"warm load embedded {warm.embedded_count} texts, expected 0"
        del warm

        changed = len(rows) // 2
        rows[changed] = {**rows[changed], "description": rows[changed]["description"] + " Now also handles YAML."}
        write_catalog(catalog, rows)
        router, refresh_s = timed(lambda: Router.from_catalog(catalog, index_folder=str(folder), encoder=encoder))
        refresh_embedded = router.embedded_count

        signals = router.signals
        parts: dict[str, list[float]] = {"encode": [], "bm25": [], "dense": [], "fuse": [], "rank": [],
                                         "fuse+rank": [], "hybrid": []}
        top_agree = 0
        for position, query in enumerate(queries[:WARMUP] + queries):
            vector, t_encode = timed(lambda: router.encode([query]))
            bm25, t_bm25 = timed(lambda: signals.bm25.scores(query))
            dense, t_dense = timed(lambda: signals.dense.scores(vector[0]))
            scored = Scored((query,), vector, signals.score([query], vector), {}, np.zeros(0, dtype=np.int64))
            fused, t_fuse = timed(lambda: router.fuse(scored))
            ranked, t_rank = timed(lambda: router.rank_scored(scored, K, fused=fused)[0])
            hybrid, t_hybrid = timed(lambda: router.rank(query, K))
            if position < WARMUP:
                continue
            top_agree += [m.id for m in ranked] == [m.id for m in hybrid]
            for name, seconds in (("encode", t_encode), ("bm25", t_bm25), ("dense", t_dense), ("fuse", t_fuse),
                                  ("rank", t_rank), ("fuse+rank", t_fuse + t_rank), ("hybrid", t_hybrid)):
                parts[name].append(seconds)

        result: dict[str, Any] = {
            "n": n,
            "encoder": kind,
            "torch_threads": threads if kind == "torch" else None,
            "model_load_s": round(model_load, 3),
            "cold_build_s": round(cold_s, 3),
            "cold_texts_per_s": round(n / cold_s, 1),
            "index_bytes": index_bytes,
            "warm_load_s": round(warm_s, 4),
            "warm_embedded": 0,
            "refresh_s": round(refresh_s, 4),
            "refresh_embedded": refresh_embedded,
            "refresh_target_met": refresh_embedded == 1 and refresh_s < REFRESH_TARGET_S,
            "latency": {name: percentiles(seconds) for name, seconds in parts.items()},
            "component_and_hybrid_rankings_agree": f"{top_agree}/{QUERIES}",
            "rss_mb": {"start": rss_start, "after_model_load": rss_model, "peak": max_rss_mb()},
        }
        if n >= max(SIZES):
            result["profile_hybrid"] = profile_hybrid(router, queries[:PROFILE_QUERIES])
        result["loadavg"] = {"start": [round(x, 2) for x in load_start],
                             "end": [round(x, 2) for x in os.getloadavg()]}
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def profile_hybrid(router: Any, queries: list[str]) -> dict[str, Any]:
    """cProfile of ``router.rank`` over ``queries``: the functions with the most own time, and the total."""
    profiler = cProfile.Profile()
    profiler.enable()
    for query in queries:
        router.rank(query, K)
    profiler.disable()
    stats = pstats.Stats(profiler, stream=io.StringIO())
    total = stats.total_tt  # type: ignore[attr-defined]
    rows = []
    for (filename, line, function), (_, calls, own, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append({"function": f"{Path(filename).name}:{line}({function})", "calls": calls,
                     "own_ms_per_query": round(1000 * own / len(queries), 3),
                     "cumulative_ms_per_query": round(1000 * cumulative / len(queries), 3)})
    rows.sort(key=lambda r: -r["own_ms_per_query"])
    by_cumulative = sorted(rows, key=lambda r: -r["cumulative_ms_per_query"])
    return {"queries": len(queries), "total_ms_per_query": round(1000 * total / len(queries), 3),
            "top_own_time": rows[:15], "top_cumulative": by_cumulative[:25]}


def print_table(results: dict[str, dict[str, Any]]) -> None:
    print(f"\n{'N':>6} {'cold s':>8} {'texts/s':>8} {'index MB':>9} {'warm s':>8} {'refresh s':>9} {'emb':>4} "
          f"{'model MB':>9} {'peak MB':>8}")
    for n, r in results.items():
        print(f"{n:>6} {r['cold_build_s']:>8.2f} {r['cold_texts_per_s']:>8.1f} {r['index_bytes'] / 1e6:>9.2f} "
              f"{r['warm_load_s']:>8.3f} {r['refresh_s']:>9.3f} {r['refresh_embedded']:>4} "
              f"{r['rss_mb']['after_model_load']:>9.1f} {r['rss_mb']['peak']:>8.1f}")
    names = ("encode", "bm25", "dense", "fuse", "rank", "fuse+rank", "hybrid")
    print(f"\nlatency, ms p50 / p95 over {QUERIES} requests")
    print(f"{'N':>6} " + " ".join(f"{name:>15}" for name in names))
    for n, r in results.items():
        cells = [f"{r['latency'][name]['p50_ms']:.2f} / {r['latency'][name]['p95_ms']:.2f}" for name in names]
        print(f"{n:>6} " + " ".join(f"{c:>15}" for c in cells))
    for n, r in results.items():
        profile = r.get("profile_hybrid")
        if profile:
            print(f"\ncProfile of rank() at N={n}: {profile['total_ms_per_query']:.2f} ms/query; most own time:")
            for row in profile["top_own_time"][:10]:
                print(f"  {row['own_ms_per_query']:>8.3f} ms  {row['calls']:>6} calls  {row['function']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one", type=int, help="measure one size in this process and print its JSON")
    parser.add_argument("--threads", type=int, help="torch threads (default: chosen from the load average)")
    parser.add_argument("--encoder", choices=("onnx", "torch"), default="onnx",
                        help="embed with the ONNX export (the router's default) or sentence-transformers")
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(run_one(args.one, args.threads or choose_threads()[0], args.encoder)))
        return
    if args.encoder == "onnx":
        from indexes.onnx_export import ensure_onnx_encoder

        ensure_onnx_encoder()
    load_start = os.getloadavg()
    threads, why = (args.threads, "given with --threads") if args.threads else choose_threads()
    print(f"torch threads: {threads} ({why})", flush=True)
    started = time.perf_counter()
    results: dict[str, dict[str, Any]] = {}
    for n in SIZES:
        print(f"measuring {n} skills ...", flush=True)
        command = [sys.executable, __file__, "--one", str(n), "--threads", str(threads), "--encoder", args.encoder]
        done = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "TOKENIZERS_PARALLELISM": "false"})
        results[str(n)] = json.loads(done.stdout.strip().splitlines()[-1])
    targets = {str(n): {"hybrid_p50_ms": results[str(n)]["latency"]["hybrid"]["p50_ms"], "target_ms": target,
                        "met": results[str(n)]["latency"]["hybrid"]["p50_ms"] < target}
               for n, target in TARGETS_MS.items()}
    print_table(results)
    print("\ntargets: " + "; ".join(f"hybrid p50 at {n}: {t['hybrid_p50_ms']:.2f} ms < {t['target_ms']} ms "
                                     f"{'met' if t['met'] else 'MISSED'}" for n, t in targets.items())
          + "; refresh < 1 s with 1 embedding: "
          + ", ".join(f"{n} {'met' if r['refresh_target_met'] else 'MISSED'}" for n, r in results.items()))
    path = save("speed" if args.encoder == "onnx" else "speed-torch", {
        "setup": {"sizes": list(SIZES), "queries": QUERIES, "warmup": WARMUP, "k": K, "seed": SEED,
                  "cpus": len(os.sched_getaffinity(0)), "encoder": args.encoder, "torch_threads": threads,
                  "torch_threads_why": why,
                  "python": sys.version.split()[0]},
        "loadavg": {"start": [round(x, 2) for x in load_start], "end": [round(x, 2) for x in os.getloadavg()]},
        "wall_s": round(time.perf_counter() - started, 1),
        "targets": targets,
        "results": results,
    })
    print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
