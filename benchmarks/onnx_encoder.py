"""How much faster is the onnxruntime encoder than sentence-transformers, and does it give the same vectors?

    .venv/bin/python benchmarks/onnx_encoder.py

Both encoders run the bundled all-MiniLM-L6-v2; the ONNX export is made first in a temporary cache (its time is
reported). Measured, all in one run so the ratios hold on a busy machine:

- bulk throughput (texts/s; each encoder's own batch size, every core) and the max |difference| of the
  vectors over two sets of 2,000 texts: ``metatool``, the 199 MetaTool tool descriptions and the first 1,801
  MetaTool dev requests (short, ~14 words), and ``skills``, the first 2,000 catalogue rows ``speed.py`` builds
  its 10,000-skill library from (real SKILL.md descriptions under ../shared/corpora, then spliced variants; name
  words + description, as the router indexes them). From the ``skills`` throughput, the embedding time of a
  10,000-skill cold build;
- single-request latency, p50/p95 over 200 MetaTool test requests, in a warm process;
- a cold process: ``python -c`` that imports the encoder, loads it and embeds one request, run under
  ``/usr/bin/time`` (wall time and peak resident set of that process alone; a child of this big process would
  inherit its high-water mark), median of 5 runs per encoder.

Prints a table and writes benchmarks/results/onnx_encoder.json.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import DATASETS, read_jsonl, save  # noqa: E402
from benchmarks.speed import SEED, library, real_skills  # noqa: E402

N_TEXTS = 2000
N_LATENCY = 200
COLD_RUNS = 5
TORCH_BATCH = 64  # what the router passes to sentence-transformers
QUERY = "will it rain in Lyon this weekend?"

COLD_ONNX = """
import json, sys, time
start = time.perf_counter()
from pathlib import Path
from indexes.onnx_encoder import find_onnx_encoder
vector = find_onnx_encoder(cache_dir=Path(sys.argv[1])).encode([sys.argv[2]])
heavy = sorted(m for m in ("torch", "transformers", "sentence_transformers", "faiss") if m in sys.modules)
print(json.dumps({"inner_s": time.perf_counter() - start, "heavy": heavy}))
"""
COLD_TORCH = """
import json, sys, time
start = time.perf_counter()
from indexes.encoder import Encoder
vector = Encoder().encode([sys.argv[2]])
print(json.dumps({"inner_s": time.perf_counter() - start, "heavy": []}))
"""


def text_sets() -> dict[str, list[str]]:
    tools = [row["description"] for row in read_jsonl(DATASETS / "metatool" / "tools.jsonl")]
    requests = [row["query"] for row in read_jsonl(DATASETS / "metatool" / "queries_single_dev.jsonl")]
    rows = library(real_skills(), N_TEXTS, random.Random(SEED))
    skills = [f"{row['name'].replace('-', ' ').replace('_', ' ')}. {row['description']}" for row in rows]
    return {"metatool": (tools + requests)[:N_TEXTS], "skills": skills}


def timed(fn: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def timed_cpu(fn: Any) -> tuple[Any, float, float]:
    """Value, wall seconds and CPU seconds of this process (all threads): CPU time is what a busy machine
    inflates least, and divided by the cores it estimates the wall time on an idle machine."""
    start, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - start, time.process_time() - cpu


def latency(encoder: Any, queries: list[str]) -> dict[str, float]:
    for query in queries[:10]:
        encoder.encode([query])
    seconds = []
    for query in queries:
        start = time.perf_counter()
        encoder.encode([query])
        seconds.append(time.perf_counter() - start)
    ms = sorted(1000 * s for s in seconds)
    return {"p50_ms": round(statistics.median(ms), 2), "p95_ms": round(ms[round(0.95 * (len(ms) - 1))], 2)}


def cold(code: str, cache: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    walls, inner, rss = [], [], []
    measures = cache / "time.txt"
    for _ in range(COLD_RUNS):
        done = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", str(measures), sys.executable, "-c", code,
                               str(cache), QUERY], capture_output=True, text=True, env=env, check=True, timeout=300)
        wall, kilobytes = measures.read_text().split()[-2:]
        walls.append(float(wall))
        rss.append(int(kilobytes) / 1024)
        report = json.loads(done.stdout.strip().splitlines()[-1])
        if report["heavy"]:
            raise RuntimeError(f"the cold ONNX process imported {report['heavy']}")
        inner.append(report["inner_s"])
    return {"wall_s": round(statistics.median(walls), 3), "import_load_embed_s": round(statistics.median(inner), 3),
            "peak_rss_mb": round(statistics.median(rss), 1), "runs_wall_s": [round(w, 3) for w in walls]}


def main() -> None:
    from indexes import Encoder
    from indexes.onnx_encoder import BATCH_SIZE, OnnxEncoder
    from indexes.onnx_export import ensure_onnx_encoder

    load_start = os.getloadavg()
    sets = text_sets()
    queries = [row["query"] for row in read_jsonl(DATASETS / "metatool" / "queries_single_test.jsonl")][:N_LATENCY]
    torch_encoder = Encoder()
    torch_encoder.encode(["warm up"])
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        _, export_s = timed(lambda: ensure_onnx_encoder(torch_encoder, cache_dir=cache))
        results["export_s"] = round(export_s, 2)
        onnx_encoder = OnnxEncoder.load(next(p for p in cache.iterdir() if p.is_dir()))
        results["latency"] = {"onnx": latency(onnx_encoder, queries), "torch": latency(torch_encoder, queries)}
        results["batch_size"] = {"onnx": BATCH_SIZE, "torch": TORCH_BATCH}
        results["bulk"] = {}
        for name, texts in sets.items():
            onnx_vectors, onnx_s, onnx_cpu = timed_cpu(lambda: onnx_encoder.encode(texts))
            torch_vectors, torch_s, torch_cpu = timed_cpu(lambda: torch_encoder.encode(texts, batch_size=TORCH_BATCH))
            results["bulk"][name] = {
                "texts": len(texts), "mean_words": round(statistics.fmean(len(t.split()) for t in texts), 1),
                "onnx_texts_per_s": round(len(texts) / onnx_s, 1), "torch_texts_per_s": round(len(texts) / torch_s, 1),
                "speedup": round(torch_s / onnx_s, 2),
                "onnx_texts_per_cpu_s": round(len(texts) / onnx_cpu, 1),
                "torch_texts_per_cpu_s": round(len(texts) / torch_cpu, 1),
                "max_abs_diff": float(np.abs(onnx_vectors - torch_vectors).max()),
            }
        skills, cores = results["bulk"]["skills"], len(os.sched_getaffinity(0))
        results["estimated_10000_skill_embedding_s"] = {
            "onnx_measured": round(10000 / skills["onnx_texts_per_s"], 1),
            "torch_measured": round(10000 / skills["torch_texts_per_s"], 1),
            f"onnx_idle_{cores}_cores": round(10000 / skills["onnx_texts_per_cpu_s"] / cores, 1),
        }
        results["cold_process"] = {"onnx": cold(COLD_ONNX, cache), "torch": cold(COLD_TORCH, cache)}
    payload = {"threads": len(os.sched_getaffinity(0)), "loadavg": {"start": load_start, "end": os.getloadavg()},
               "results": results}
    path = save("onnx_encoder", payload)
    print_table(results)
    print(f"\nwritten to {path.relative_to(ROOT)}")


def print_table(results: dict[str, Any]) -> None:
    print(f"export (once per model): {results['export_s']} s")
    print(f"\n{'bulk':<10} {'texts':>6} {'words':>6} {'onnx/s':>8} {'torch/s':>8} {'speedup':>8} "
          f"{'onnx/cpu-s':>10} {'torch/cpu-s':>11} {'max diff':>9}")
    for name, r in results["bulk"].items():
        print(f"{name:<10} {r['texts']:>6} {r['mean_words']:>6} {r['onnx_texts_per_s']:>8} "
              f"{r['torch_texts_per_s']:>8} {r['speedup']:>8} {r['onnx_texts_per_cpu_s']:>10} "
              f"{r['torch_texts_per_cpu_s']:>11} {r['max_abs_diff']:>9.1e}")
    estimate = ", ".join(f"{k} {v} s" for k, v in results["estimated_10000_skill_embedding_s"].items())
    print(f"10,000-skill cold build, embedding only: {estimate}")
    print(f"\n{'one request':<16} {'p50 ms':>8} {'p95 ms':>8}")
    for name, r in results["latency"].items():
        print(f"{name:<16} {r['p50_ms']:>8} {r['p95_ms']:>8}")
    print(f"\n{'cold process':<16} {'wall s':>8} {'inner s':>8} {'peak MB':>8}")
    for name, r in results["cold_process"].items():
        print(f"{name:<16} {r['wall_s']:>8} {r['import_load_embed_s']:>8} {r['peak_rss_mb']:>8}")


if __name__ == "__main__":
    main()
