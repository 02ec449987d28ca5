"""What the passage_dense signal costs on the ~700 corpus skills: the cold build, the index folder, the warm route.

    python benchmarks/passage_dense_cost.py              # 3 rounds
    python benchmarks/passage_dense_cost.py --rounds 5

The corpora are loaded as in real_libraries.py (three roots, agentskills profile, 683 skills). Cold build: a router
built into an empty index folder with the default configuration (``passage_dense`` at 0) and with it at 0.5 (the
weight chosen on the dev sets), alternating from round to round: wall and CPU seconds, texts embedded, the index
folder's size on disk (the passage vectors live in its embedding cache). Current build: a router over that index
with everything this process remembers of earlier builds forgotten (what a one-shot ``skill-router route`` pays
before routing), both configurations alternately, CPU seconds. Warm route: over one built index, ``Router.route``
of each corpora-dev request (after 5 to warm up) by both routers, request by request alternately: p50 / p95 wall
and CPU ms.
Writes benchmarks/results/passage_dense_cost.json.
"""

from __future__ import annotations

import argparse
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


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    configs = {"with": RouterConfig(route_above=0, weights={"passage_dense": 0.5}),
               "default": RouterConfig(route_above=0)}
    builds: dict[str, list[dict[str, Any]]] = {name: [] for name in configs}
    work = Path(tempfile.mkdtemp(prefix="passage-dense-cost-"))
    try:
        for round_ in range(args.rounds):
            for name in (list(configs) if round_ % 2 == 0 else list(reversed(configs))):
                folder = work / f"{name}-{round_}"
                builds[name].append({**cold(configs[name], folder), "load": round(os.getloadavg()[0], 1)})
                print(f"round {round_ + 1} cold build {name:8}: {builds[name][-1]}", flush=True)
                if round_ < args.rounds - 1:
                    shutil.rmtree(folder)
        index = str(work / f"with-{args.rounds - 1}")
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
