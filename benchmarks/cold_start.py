"""How long does a one-shot ``skill-router route`` take from a fresh process, with and without torch?

    .venv/bin/python benchmarks/cold_start.py            # about 10 minutes on 2 cores
    .venv/bin/python benchmarks/cold_start.py --runs 7
    .venv/bin/python benchmarks/cold_start.py --libraries corpora --no-cold-build   # the ~700 skills only: ~2 min
    .venv/bin/python benchmarks/cold_start.py --libraries corpora --no-cold-build --against /path/to/other/checkout

For three libraries, each indexed once beforehand (``skill-router index``, which also makes the ONNX export):

- ``bundled``: the 52 skills of ``skills/``;
- ``corpora``: the ~700 SKILL.md files of the three ../shared/corpora folders (three ``--skills`` roots);
- ``catalog-10000``: a 10,000-row JSONL catalogue (real corpus descriptions, then seeded variants; speed.py's).

each path is timed as whole processes (``--runs`` runs, median; wall clock from spawn to exit, CPU time (user +
system, which the machine's load does not change), peak RSS from the kernel's accounting of the child):

- ``onnx``: the default: the request is embedded by the cached onnxruntime export; no torch is imported;
- ``torch``: the same command with ``SKILL_ROUTER_ONNX=0``: sentence-transformers embeds the request, as before.

- ``against`` (with ``--against``): the ``onnx`` path of another checkout (its own index folder), so that the
  two checkouts' ratio holds on a busy machine.

The two paths' rankings are compared on every run (same ids in the same order). Also measured: a cold build of
the 10,000-row catalogue (a new index folder, every text embedded) with each path. The paths run in the same
session, alternating, so their ratio holds on a shared machine.

Every process loads the modules' bytecode, as an installed package does: the children's bytecode goes to a
folder of the session (``PYTHONPYCACHEPREFIX``), written by the first process, even where the environment sets
``PYTHONDONTWRITEBYTECODE`` (which made every timed process compile the modules it imports again: about 0.25 s of
CPU of a one-shot route). Writes benchmarks/results/cold_start.json (``--name``: another name).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import CORPORA, save  # noqa: E402
from benchmarks.speed import library, real_skills, write_catalog  # noqa: E402

QUERY = "will it rain in Lyon this weekend?"
CLI = [sys.executable, "-m", "router.cli"]
ROOTS = ["anthropic-skills/skills", "scientific-skills/scientific-skills", "awesome-skills/skills"]
SEED = 20240611
LIBRARIES = ("bundled", "corpora", "catalog-10000")


def run(args: list[str], env: dict[str, str]) -> tuple[float, str, float]:
    """(wall seconds, stdout, CPU seconds: user + system, whatever the machine's load) of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(CLI + args, env=env, capture_output=True, text=True, timeout=600, cwd=env["PYTHONPATH"])
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return wall, done.stdout, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def measure_rss(args: list[str], env: dict[str, str]) -> float:
    """Peak RSS of one process: a fresh wrapper process runs it, so its children's maxrss is that process's."""
    code = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, "
            "stderr=subprocess.DEVNULL, check=True); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    done = subprocess.run([sys.executable, "-c", code, *CLI, *args], env=env, capture_output=True, text=True,
                          timeout=600, check=True, cwd=env["PYTHONPATH"])
    return round(int(done.stdout.strip()) / 1024, 1)


def library_args(name: str, work: Path) -> list[str]:
    if name == "bundled":
        return ["--skills", str(ROOT / "skills"), "--profile", "genkit"]
    if name == "corpora":
        return [arg for root in ROOTS for arg in ("--skills", str(CORPORA / root))] + ["--profile", "agentskills"]
    return ["--catalog", str(work / "catalog.jsonl")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--libraries", default=",".join(LIBRARIES),
                        help=f"comma-separated, of {', '.join(LIBRARIES)} (default all)")
    parser.add_argument("--no-cold-build", action="store_true", help="skip the cold builds of the 10,000-row "
                                                                      "catalogue")
    parser.add_argument("--against", type=Path, help="another checkout whose onnx path is timed alternately")
    parser.add_argument("--name", default="cold_start", help="writes benchmarks/results/<name>.json")
    args = parser.parse_args()
    names = [n for n in args.libraries.split(",") if n]
    if not names or any(n not in LIBRARIES for n in names):
        parser.error(f"--libraries takes a comma-separated list of {', '.join(LIBRARIES)}")
    work = Path(tempfile.mkdtemp(prefix="skill-router-cold-"))
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": str(ROOT), "PYTHONPYCACHEPREFIX": str(work / "bytecode")}
    torch_env = {**env, "SKILL_ROUTER_ONNX": "0"}
    paths = {"onnx": env, "torch": torch_env}
    if args.against is not None:
        paths["against"] = {**env, "PYTHONPATH": str(args.against.resolve()),
                            "PYTHONPYCACHEPREFIX": str(work / "bytecode-against")}
    if "catalog-10000" in names or not args.no_cold_build:
        write_catalog(work / "catalog.jsonl", library(real_skills(), 10_000, random.Random(SEED)))
    results: dict[str, Any] = {"query": QUERY, "runs": args.runs, "load_average_start": os.getloadavg(),
                               "against": str(args.against.resolve()) if args.against is not None else None}
    for name in names:
        lib = library_args(name, work) + ["--index-dir", str(work / f"index-{name}")]
        start = time.perf_counter()
        run(["index", *lib], env)
        indexed = time.perf_counter() - start
        libs = {path: lib for path in paths}
        if "against" in paths:
            libs["against"] = library_args(name, work) + ["--index-dir", str(work / f"index-{name}-against")]
            run(["index", *libs["against"]], paths["against"])
        walls: dict[str, list[float]] = {path: [] for path in paths}
        cpus: dict[str, list[float]] = {path: [] for path in paths}
        outputs: dict[str, set[str]] = {path: set() for path in paths}
        for _ in range(args.runs):
            for path, path_env in paths.items():
                wall, out, cpu = run(["route", QUERY, *libs[path], "--json"], path_env)
                walls[path].append(wall)
                cpus[path].append(cpu)
                outputs[path].add(json.dumps([row["id"] for row in json.loads(out)]))
        rss = {path: measure_rss(["route", QUERY, *libs[path], "--json"], path_env)
               for path, path_env in paths.items()}
        results[name] = {
            "index_s": round(indexed, 2),
            "route_wall_s": {p: round(statistics.median(w), 3) for p, w in walls.items()},
            "route_wall_all_s": {p: [round(x, 3) for x in w] for p, w in walls.items()},
            "route_cpu_s": {p: round(statistics.median(c), 3) for p, c in cpus.items()},
            "peak_rss_mb": rss,
            "same_ranking": outputs["onnx"] == outputs["torch"] and len(outputs["onnx"]) == 1,
        }
        r = results[name]
        if "against" in paths:
            r["same_ranking_against"] = outputs["against"] == outputs["onnx"]
            r["cpu_ratio_to_against"] = round(r["route_cpu_s"]["onnx"] / r["route_cpu_s"]["against"], 3)
            r["wall_ratio_to_against"] = round(r["route_wall_s"]["onnx"] / r["route_wall_s"]["against"], 3)
        print(f"{name:14} route median wall: onnx {r['route_wall_s']['onnx']:.2f} s (CPU "
              f"{r['route_cpu_s']['onnx']:.2f} s), torch "
              f"{r['route_wall_s']['torch']:.2f} s ({r['route_wall_s']['torch'] / r['route_wall_s']['onnx']:.1f}x); "
              f"peak RSS onnx {rss['onnx']} MB, torch {rss['torch']} MB; same ranking {r['same_ranking']}"
              + (f"; against {r['route_wall_s']['against']:.2f} s (CPU {r['route_cpu_s']['against']:.2f} s, "
                 f"this / against CPU {r['cpu_ratio_to_against']})" if "against" in paths else ""),
              flush=True)
    builds = {}
    for path, path_env in () if args.no_cold_build else (("onnx", env), ("torch", torch_env)):
        folder = work / f"build-{path}"
        start = time.perf_counter()
        run(["index", "--catalog", str(work / "catalog.jsonl"), "--index-dir", str(folder)], path_env)
        builds[path] = round(time.perf_counter() - start, 1)
    if builds:
        results["cold_build_10000_s"] = builds
        print(f"cold build of 10,000 skills: onnx {builds['onnx']} s, torch {builds['torch']} s")
    results["load_average_end"] = os.getloadavg()
    print(f"wrote {save(args.name, results)}")


if __name__ == "__main__":
    main()
