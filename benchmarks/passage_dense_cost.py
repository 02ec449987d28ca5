"""What the passage_dense signal costs on the ~700 corpus skills: the cold build, the index folder, the warm route.

    python benchmarks/passage_dense_cost.py              # 3 rounds
    python benchmarks/passage_dense_cost.py --rounds 5
    python benchmarks/passage_dense_cost.py --profile    # where the cost of the head passages goes, then exit

The corpora are loaded as in real_libraries.py (three roots, agentskills profile, 683 skills). Cold build: a router
built into an empty index folder by each of SETUPS, alternating from round to round: the default configuration
(``passage_dense`` at 0.5 over heads of 3 passages x 16 words, ONNX batches of 4 texts), the same with
``passage_dense`` at 0, and the two as they were before (batches of 16; the signal off, or at 0.5 over heads of 4
whole passages): wall and CPU seconds, texts embedded, the index folder's size on disk (the passage vectors live in
its embedding cache). Current build: a router over the default's index with everything this process remembers of
earlier builds forgotten (what a one-shot ``skill-router route`` pays before routing), the default and ``off``
alternately, CPU seconds. Warm route: over that index, ``Router.route`` of each corpora-dev request (after 5 to warm
up) by both routers, request by request alternately: p50 / p95 wall and CPU ms.
Writes benchmarks/results/passage_dense_cost.json.

--profile: the texts a cold build embeds and the tokens the model reads for them (descriptions; the head of 4 whole
passages the signal had before, by their place in the head; the head of 3 x 16 words it has now), the share of
tokens that is padding (length-sorted batches of the ONNX encoder's BATCH_SIZE, and batches in input order), the
share of passages cut at the model's max sequence length, and the CPU seconds of embedding a sample of 300 of the
former passages and 300 descriptions at ONNX batch sizes 2 / 4 / 8 / 16 / 64 (best of --rounds rounds) and by
sentence-transformers (torch, its batch of 64). Writes benchmarks/results/passage_dense_profile.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from common import read_jsonl, save
from router import Router, passages
from router.config import RouterConfig
from router.index import _TEXTS
from router.profiles.base import _PARSED
from users import DATA, ROOTS

WARM_UP = 5
#: name: (passage_dense weight, head passages, words of each, ONNX batch size).
SETUPS: dict[str, tuple[float, int, int | None, int]] = {
    "default": (0.5, 3, 16, 4), "off": (0.0, 3, 16, 4),
    "before: off": (0.0, 4, None, 16), "before: 4 whole passages": (0.5, 4, None, 16)}


def apply(setup: str) -> RouterConfig:
    """The config of ``setup``, with its head shape and batch size set for the builds that follow."""
    from indexes import onnx_encoder
    from router.signals import passage_dense

    weight, passage_dense.HEAD, passage_dense.WORDS, onnx_encoder.BATCH_SIZE = SETUPS[setup]
    return RouterConfig(route_above=0, weights={"passage_dense": weight})


def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def forget() -> None:
    _TEXTS.clear()
    _PARSED.clear()
    passages._MEMO.clear()
    passages._CUT.clear()


def cold(config: RouterConfig, folder: Path) -> dict[str, Any]:
    forget()
    wall, cpu = time.perf_counter(), time.process_time()
    router = Router.from_skills([str(r) for r in ROOTS], "agentskills", config, index_folder=str(folder))
    return {"wall_s": round(time.perf_counter() - wall, 2), "cpu_s": round(time.process_time() - cpu, 2),
            "embedded": router.embedded_count, "index_mb": round(folder_size(folder) / 2**20, 2),
            "skills": len(router.skills)}


def profile(args_rounds: int) -> None:
    import numpy as np

    from indexes import Encoder
    from indexes.onnx_encoder import BATCH_SIZE, find_onnx_encoder
    from router.signals import passage_dense
    from router.texts import dense_text

    router = Router.from_skills([str(r) for r in ROOTS], "agentskills", RouterConfig(route_above=0),
                                index_folder=str(Path(tempfile.gettempdir()) / "passage-dense-profile"))
    onnx = find_onnx_encoder(None)
    assert onnx is not None, "no ONNX export is cached: run one build first"
    tokenizer = onnx._tokenizer
    descriptions = sorted({dense_text(s) for s in router.skills})
    chosen = passage_dense.HEAD, passage_dense.WORDS
    passage_dense.HEAD, passage_dense.WORDS = 4, None  # the head of 4 whole passages the signal had before
    heads = [passage_dense.head_passages(s.body or "") for s in router.skills]
    passage_dense.HEAD, passage_dense.WORDS = chosen
    texts = sorted({p for head in heads for p in head})
    now = sorted({p for s in router.skills for p in passage_dense.head_passages(s.body or "")})

    def lengths(values: list[str]) -> np.ndarray:
        return np.array([len(e.ids) for e in tokenizer.encode_batch(values)])

    def padding(sizes: np.ndarray, batch: int, ordered: bool) -> float:
        sizes = np.sort(sizes) if ordered else sizes
        padded = sum(int(sizes[i:i + batch].max()) * len(sizes[i:i + batch]) for i in range(0, len(sizes), batch))
        return round(100 * (1 - sizes.sum() / padded), 1)

    out: dict[str, Any] = {"skills": len(router.skills), "batch_size": BATCH_SIZE}
    for name, values in (("descriptions", descriptions), ("passages", texts), ("passages now", now)):
        sizes = lengths(values)
        out[name] = {"texts": len(values), "tokens": int(sizes.sum()), "median_tokens": float(np.median(sizes)),
                     "at_max_seq_length": round(100 * float((sizes >= onnx.max_seq_length).mean()), 1),
                     "padding_sorted_%": padding(sizes, BATCH_SIZE, True),
                     "padding_input_order_%": padding(sizes, BATCH_SIZE, False)}
    out["passages_by_place"] = {place + 1: int(lengths([h[place] for h in heads if len(h) > place]).sum())
                                for place in range(4)}
    print(json.dumps(out, indent=1), flush=True)
    rng = np.random.default_rng(0)
    samples = {"passages": [texts[i] for i in rng.choice(len(texts), 300, replace=False)],
               "descriptions": [descriptions[i] for i in rng.choice(len(descriptions), 300, replace=False)]}
    seconds: dict[str, dict[str, float]] = {name: {} for name in samples}
    for _ in range(args_rounds):
        for name, sample in samples.items():
            for batch in (2, 4, 8, 16, 64):
                cpu = time.process_time()
                onnx.encode(sample, batch_size=batch)
                spent = time.process_time() - cpu
                seconds[name][f"onnx {batch}"] = round(min(spent, seconds[name].get(f"onnx {batch}", spent)), 2)
    torch = Encoder(None)
    torch.load()
    for name, sample in samples.items():
        cpu = time.process_time()
        torch.encode(sample)
        seconds[name]["torch 64"] = round(time.process_time() - cpu, 2)
    out["sample_tokens"] = {name: int(lengths(sample).sum()) for name, sample in samples.items()}
    out["cpu_s"] = seconds
    out["load"] = round(os.getloadavg()[0], 1)
    print(json.dumps({k: out[k] for k in ("sample_tokens", "cpu_s", "load")}, indent=1))
    save("passage_dense_profile", out)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="where the head passages' cost goes, then exit")
    args = parser.parse_args()
    if args.profile:
        profile(args.rounds)
        return
    builds: dict[str, list[dict[str, Any]]] = {name: [] for name in SETUPS}
    work = Path(tempfile.mkdtemp(prefix="passage-dense-cost-"))
    try:
        for round_ in range(args.rounds):
            for name in (list(SETUPS) if round_ % 2 == 0 else list(reversed(SETUPS))):
                folder = work / f"{name.replace(' ', '-').replace(':', '')}-{round_}"
                builds[name].append({**cold(apply(name), folder), "load": round(os.getloadavg()[0], 1)})
                print(f"round {round_ + 1} cold build {name:26}: {builds[name][-1]}", flush=True)
                if round_ < args.rounds - 1 or name != "default":
                    shutil.rmtree(folder)
        index = str(work / f"default-{args.rounds - 1}")
        configs = {name: apply(name) for name in ("off", "default")}  # the same shape and batch size
        current: dict[str, list[float]] = {name: [] for name in configs}
        for round_ in range(2 * args.rounds):
            for name in (list(configs) if round_ % 2 == 0 else list(reversed(configs))):
                forget()
                cpu = time.process_time()
                Router.from_skills([str(r) for r in ROOTS], "agentskills", configs[name], index_folder=index)
                current[name].append(time.process_time() - cpu)
        current_cpu = {name: round(statistics.median(values), 3) for name, values in current.items()}
        print(f"build from the current index, CPU s: {current_cpu}", flush=True)
        routers = {name: Router.from_skills([str(r) for r in ROOTS], "agentskills", config, index_folder=index)
                   for name, config in configs.items()}
        queries = [r["query"] for r in read_jsonl(DATA / "corpora-dev.jsonl")]
        for router in routers.values():
            for query in queries[:WARM_UP]:
                router.route(query)
        times: dict[str, dict[str, list[float]]] = {name: {"wall": [], "cpu": []} for name in routers}
        for round_ in range(args.rounds):
            for i, query in enumerate(queries):
                for name in (list(routers) if (i + round_) % 2 == 0 else list(reversed(routers))):
                    wall, cpu = time.perf_counter(), time.process_time()
                    routers[name].route(query)
                    times[name]["wall"].append(1000 * (time.perf_counter() - wall))
                    times[name]["cpu"].append(1000 * (time.process_time() - cpu))
        warm = {name: {"p50_ms": round(statistics.median(t["wall"]), 3), "p95_ms": percentile(t["wall"], 0.95),
                       "cpu_p50_ms": round(statistics.median(t["cpu"]), 3), "requests": len(t["wall"])}
                for name, t in times.items()}
        for name, row in warm.items():
            print(f"warm route {name:8}: {row}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary = {name: {key: round(statistics.median(b[key] for b in rows), 2) for key in ("wall_s", "cpu_s",
                                                                                         "embedded", "index_mb")}
               for name, rows in builds.items()}
    print(f"cold build medians: {summary}")
    save("passage_dense_cost", {"rounds": args.rounds, "builds": builds, "cold_medians": summary, "warm": warm,
                                "current_build_cpu_s": current_cpu,
                                "load_end": round(os.getloadavg()[0], 1)})


if __name__ == "__main__":
    main()
