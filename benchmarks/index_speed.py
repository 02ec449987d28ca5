"""How fast are index builds and searches at 100, 1,000 and 10,000 documents?

Texts: descriptions of the SKILL.md files under ../shared/corpora, plus variants generated from them (fixed seed)
up to N. Vectors: random unit 384-d vectors (seeded; the model is not needed), queries are unit vectors near
random documents. For the dense index two paths are timed: ``scores`` (every document's cosine with numpy, what the
router fuses) and ``search`` (top-10 through FAISS's exact flat index, built on first use); the top-10 of both is
checked against a plain numpy product. Encoding one query with the real bundled model is timed separately.

    .venv/bin/python benchmarks/index_speed.py

Prints a table and writes benchmarks/results/index_speed.json.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from indexes import BM25Index, DenseIndex, Encoder  # noqa: E402

CORPORA = ROOT.parent / "shared" / "corpora"
OUT = ROOT / "benchmarks" / "results" / "index_speed.json"
SIZES = (100, 1000, 10000)
QUERIES = 200
SEED = 20240601
DIM = 384


def descriptions() -> list[str]:
    found = []
    for path in sorted(CORPORA.rglob("SKILL.md")):
        text = path.read_text(encoding="utf-8", errors="replace").replace("\r\n", "\n")
        if not text.startswith("---"):
            continue
        try:
            front = yaml.safe_load(text.split("---", 2)[1])
        except yaml.YAMLError:
            continue
        if isinstance(front, dict) and isinstance(front.get("description"), str):
            found.append(" ".join(front["description"].split()))
    return found


def synthetic_texts(base: list[str], n: int, rng: random.Random) -> list[str]:
    """The real descriptions first, then variants: words of two descriptions spliced and lightly shuffled."""
    texts = base[:n]
    while len(texts) < n:
        left, right = rng.choice(base).split(), rng.choice(base).split()
        words = left[: len(left) // 2 + 1] + right[len(right) // 2 :]
        for _ in range(3):
            i, j = rng.randrange(len(words)), rng.randrange(len(words))
            words[i], words[j] = words[j], words[i]
        texts.append(" ".join(words))
    return texts


def percentiles(seconds: list[float]) -> dict[str, float]:
    ms = sorted(1000 * s for s in seconds)
    return {"p50_ms": round(statistics.median(ms), 4), "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 4)}


def timed(fn) -> tuple[object, float]:
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def bench_bm25(texts: list[str], rng: random.Random) -> dict:
    ids = [f"d{i:05d}" for i in range(len(texts))]
    index, build = timed(lambda: BM25Index.from_texts(ids, texts))
    sources = [rng.choice(texts).split() for _ in range(QUERIES)]
    queries = [" ".join(rng.sample(words, k=min(6, len(words)))) for words in sources]
    times = [timed(lambda q=q: index.search(q, 10))[1] for q in queries]
    return {"build_s": round(build, 4), **percentiles(times)}


def bench_dense(n: int, np_rng: np.random.Generator) -> dict:
    vectors = np_rng.standard_normal((n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = [f"d{i:05d}" for i in range(n)]
    noisy = vectors[np_rng.integers(0, n, QUERIES)] + 0.08 * np_rng.standard_normal((QUERIES, DIM)).astype(np.float32)
    queries = noisy / np.linalg.norm(noisy, axis=1, keepdims=True)
    matrix = vectors.astype(np.float64)
    truth = [set(np.argsort(-(matrix @ q.astype(np.float64)), kind="stable")[:10].tolist()) for q in queries]
    index, build = timed(lambda: DenseIndex.from_vectors(ids, vectors))
    index.search(queries[0], 10)  # FAISS is built on first search
    searches = [timed(lambda q=q: index.search(q, 10)) for q in queries]
    scores = [timed(lambda q=q: index.scores(q)) for q in queries]
    agree = np.mean([len({int(h.id[1:]) for h in hits} & want) / 10 for (hits, _), want in zip(searches, truth)])
    agree_scores = np.mean([len(set(np.argsort(-s, kind="stable")[:10].tolist()) & want) / 10
                            for (s, _), want in zip(scores, truth)])
    return {"search": {"build_s": round(build, 4), **percentiles([t for _, t in searches]),
                       "recall@10_near_queries": round(float(agree), 4)},
            "scores": {"build_s": round(build, 4), **percentiles([t for _, t in scores]),
                       "recall@10_near_queries": round(float(agree_scores), 4)}}


def bench_encoder() -> dict:
    encoder = Encoder()
    _, load = timed(lambda: encoder.encode(["warm up the model"]))
    times = [timed(lambda i=i: encoder.encode([f"convert this pdf form number {i} to text"]))[1] for i in range(30)]
    return {"first_encode_including_load_s": round(load, 3), **percentiles(times)}


def main() -> None:
    rng, np_rng = random.Random(SEED), np.random.default_rng(SEED)
    base = descriptions()
    results: dict = {"setup": {"descriptions": len(base), "queries": QUERIES, "k": 10, "dim": DIM, "seed": SEED}}
    print(f"{'N':>6} {'index':<6} {'build s':>9} {'p50 ms':>9} {'p95 ms':>9} {'recall@10':>10}", flush=True)
    for n in SIZES:
        texts = synthetic_texts(base, n, rng)
        row = {"bm25": bench_bm25(texts, rng), **bench_dense(n, np_rng)}
        results[str(n)] = row
        for label, r in row.items():
            recall = r.get("recall@10_near_queries")
            recall_text = f"{recall:>10.3f}" if recall is not None else f"{'':>10}"
            print(f"{n:>6} {label:<6} {r['build_s']:>9.4f} {r['p50_ms']:>9.3f} {r['p95_ms']:>9.3f} {recall_text}")
    results["encode_one_query"] = bench_encoder()
    enc = results["encode_one_query"]
    print(f"\nencode one query (all-MiniLM-L6-v2, CPU): p50 {enc['p50_ms']:.2f} ms, p95 {enc['p95_ms']:.2f} ms; "
          f"first call with model load {enc['first_encode_including_load_s']:.2f} s")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
