"""Two speed goals, measured for one checkout or for two alternately on the same machine (so that their ratio holds
on a busy one): the warm route at ~700 skills, and the refresh after one SKILL.md edit at 10,000 skills.

    python benchmarks/speed_goals.py                                   # this checkout, 3 rounds
    python benchmarks/speed_goals.py --against /path/to/other/checkout --rounds 5 --name speed_goals-vs-main
    python benchmarks/speed_goals.py --only warm --against /path/to/other/checkout   # the warm route alone

Libraries (skill folders, genkit profile, the default configuration: passages on), written once to a temporary
folder:

- ``683``: body_cost.py's library, the first SKILL.md of each folder name of the three corpora (676 skills);
- ``10000``: 10,000 folders, each its own description and body: the corpora's real descriptions, then variants
  spliced from two real ones (``speed.library``, fixed seed), each with the body of a real SKILL.md starting with
  its variant number in words (``body_cost.variant``). Past ``passages.MAX_SKILLS`` there is no passage index; the
  body lead's BM25 stands in.

The index of each library is built once (every description embedded by the bundled model) and copied for each
checkout, with its own copy of the 10,000 library, since the edits change it. Each round runs, for each checkout
(the order alternating from round to round), two child processes with that checkout first on ``PYTHONPATH``:

- ``warm``: a router over the 683 index, then ``Router.route`` (what ``POST /v1/route`` and the hook call) and
  ``Router.rank`` of each of the real-library dev requests (benchmarks/data/corpora-dev.jsonl) after 5 to warm up:
  p50 / p95 wall and CPU ms per request;
- ``refresh``: one body edited, then ``Router.from_skills`` over the 10,000 folder in this new process (what
  ``skill-router route`` / ``index`` do after an edit, the embedding model loaded among it; the imports are timed
  apart), then ``--edits`` more bodies edited one at a time, each followed by a new router in the same process
  with the encoder shared (what ``skill-router serve``'s watcher does on a change: ``Service._reload`` builds the
  router with the loaded model): wall and CPU seconds, texts embedded.

Every child loads the modules' bytecode, as an installed package does: each checkout's is compiled once into a
folder of the work folder (``PYTHONPYCACHEPREFIX``), and ``PYTHONDONTWRITEBYTECODE`` is not passed on (where it
was set every child compiled the modules its refresh imports, inside the timed part).

``--only warm`` (or ``refresh``) runs one of the two children a round; ``--only warm`` neither writes nor builds
the 10,000 library. Each row records the load average. Writes benchmarks/results/<name>.json (default
``speed_goals``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SMALL, LARGE = 683, 10000
WARMUP = 5
SEED = 20240611
GOALS = {"route_p50_ms": 10.0, "refresh_s": 1.0}


# -- the libraries ---------------------------------------------------------------------------------------------------
def write_large(folder: Path, n: int = LARGE) -> None:
    """``n`` skill folders, each with its own description and body (see the module docstring)."""
    from body_cost import sources, variant
    from speed import library, real_skills

    bodies = [t.partition("\n---\n")[2] for t in sources() if t.startswith("---")]
    rows = library(real_skills(), n, random.Random(SEED))
    for i, row in enumerate(rows):
        skill = folder / f"s{i:05d}"
        skill.mkdir(parents=True)
        description = json.dumps(row["description"], ensure_ascii=False)  # a JSON string is a YAML string
        text = f"---\nname: s{i:05d}\ndescription: {description}\n---\n{bodies[i % len(bodies)]}"
        (skill / "SKILL.md").write_text(text if i < len(bodies) else variant(text, i), encoding="utf-8")


def prepare(work: Path, sizes: tuple[str, ...] = ("683", "10000")) -> dict[str, Path]:
    from body_cost import sources, write_library

    texts = sources()
    small, large = work / "683" / "skills", work / "10000" / "skills"
    if "683" in sizes:
        write_library(small, texts, len(texts))
    if "10000" in sizes:
        write_large(large)
    return {size: path for size, path in (("683", small), ("10000", large)) if size in sizes}


def build(skills: Path, index: Path) -> float:
    from router import Router
    from router.config import RouterConfig

    start = time.perf_counter()
    Router.from_skills([str(skills)], "genkit", RouterConfig(route_above=0), index_folder=str(index))
    return time.perf_counter() - start


# -- the children ----------------------------------------------------------------------------------------------------
def timed(call: Any) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    value = call()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def child_warm(skills: str, index: str) -> dict[str, Any]:
    from router import Router
    from router.config import RouterConfig

    lines = (ROOT / "benchmarks/data/corpora-dev.jsonl").read_text(encoding="utf-8").splitlines()
    queries = [json.loads(line)["query"] for line in lines if line.strip()]
    router = Router.from_skills([skills], "genkit", RouterConfig(route_above=0), index_folder=index)
    assert router.embedded_count == 0, "the index was not warm"
    out: dict[str, Any] = {"skills": len(router.skills), "requests": len(queries),
                           "signals": sorted(router.signals.indexes)}
    for name, call in (("route", router.route), ("rank", router.rank)):
        for query in queries[:WARMUP]:
            call(query)
        walls, cpus = [], []
        for query in queries:
            _, wall, cpu = timed(lambda: call(query))
            walls.append(1000 * wall)
            cpus.append(1000 * cpu)
        walls.sort()
        out[name] = {"p50_ms": round(statistics.median(walls), 2), "p95_ms": round(walls[int(0.95 * len(walls))], 2),
                     "cpu_p50_ms": round(statistics.median(cpus), 2)}
    return out


def child_refresh(skills: str, index: str, edits: int, imports: tuple[float, float]) -> dict[str, Any]:
    from body_cost import variant
    from router import Router
    from router.config import RouterConfig

    folders = sorted(Path(skills).iterdir())
    rng = random.Random(time.time_ns())

    def edit() -> None:  # a body changes: a line at its top (body_cost's rule, with a number not used before)
        path = rng.choice(folders) / "SKILL.md"
        path.write_text(variant(path.read_text(encoding="utf-8"), rng.randrange(10**5, 10**6)), encoding="utf-8")

    def make(encoder: Any = None) -> Any:
        return Router.from_skills([skills], "genkit", RouterConfig(route_above=0), index_folder=index,
                                  encoder=encoder)

    edit()
    router, wall, cpu = timed(make)
    out: dict[str, Any] = {"skills": len(router.skills), "imports_s": round(imports[0], 3),
                           "imports_cpu_s": round(imports[1], 3), "new_process_s": round(wall, 3),
                           "new_process_cpu_s": round(cpu, 3), "new_process_embedded": router.embedded_count,
                           "passages": "passages" in router.signals.indexes}
    walls, cpus, embedded = [], [], []
    encoder = router.encoder
    for _ in range(edits):
        edit()
        again, wall, cpu = timed(lambda: make(encoder))
        walls.append(wall)
        cpus.append(cpu)
        embedded.append(again.embedded_count)
    out.update({"same_process_s": round(statistics.median(walls), 3),
                "same_process_cpu_s": round(statistics.median(cpus), 3), "same_process_embedded": embedded,
                "same_process_all_s": [round(w, 3) for w in walls]})
    return out


# -- the parent ------------------------------------------------------------------------------------------------------
def child_env(checkout: Path, bytecode: Path) -> dict[str, str]:
    """The children's environment: ``checkout`` first on the path, its bytecode in ``bytecode`` (see the module
    docstring)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update({"PYTHONPATH": str(checkout), "PYTHONPYCACHEPREFIX": str(bytecode)})
    env.setdefault("SKILL_ROUTER_SHARED", str(ROOT.parent / "shared"))
    return env


def byte_compile(checkout: Path, bytecode: Path) -> None:
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(checkout / "router"), str(checkout / "indexes"),
                    str(checkout / "benchmarks")], env=child_env(checkout, bytecode), check=True,
                   capture_output=True, timeout=600)


def run_child(checkout: Path, bytecode: Path, args: list[str]) -> dict[str, Any]:
    env = child_env(checkout, bytecode)
    before = os.getloadavg()
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", *args], env=env, cwd=checkout,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the child {args[0]} of {checkout} failed:\n{done.stderr[-3000:]}")
    row = json.loads(done.stdout.strip().splitlines()[-1])
    row["loadavg"] = [round(x, 2) for x in (*before[:1], *os.getloadavg()[:1])]
    return row


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    warm = [r for r in rows if "route" in r]
    refresh = [r for r in rows if "new_process_s" in r]

    def median(key: str) -> float:
        return round(statistics.median(r[key] for r in refresh), 3)

    return {
        "route_p50_ms": round(statistics.median(r["route"]["p50_ms"] for r in warm), 2) if warm else None,
        "route_cpu_p50_ms": round(statistics.median(r["route"]["cpu_p50_ms"] for r in warm), 2) if warm else None,
        "rank_p50_ms": round(statistics.median(r["rank"]["p50_ms"] for r in warm), 2) if warm else None,
        "refresh_new_process_s": median("new_process_s") if refresh else None,
        "refresh_new_process_cpu_s": median("new_process_cpu_s") if refresh else None,
        "refresh_same_process_s": median("same_process_s") if refresh else None,
        "refresh_same_process_cpu_s": median("same_process_cpu_s") if refresh else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, help="another checkout, measured alternately with this one")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--edits", type=int, default=3, help="same-process refreshes per round")
    parser.add_argument("--name", default="speed_goals")
    parser.add_argument("--work", type=Path, help="keep the libraries and indexes here (default: a temporary folder)")
    parser.add_argument("--only", choices=("warm", "refresh"), help="run only this child each round")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, skills, index, *rest = args.child
        if kind == "warm":
            print(json.dumps(child_warm(skills, index)))
        else:
            print(json.dumps(child_refresh(skills, index, int(rest[0]), (float(rest[1]), float(rest[2])))))
        return
    if args.rounds < 1 or args.edits < 1:
        parser.error("--rounds and --edits must be at least 1")

    checkouts = {"this": ROOT} | ({"against": args.against.resolve()} if args.against else {})
    work = args.work or Path(tempfile.mkdtemp(prefix="speed-goals-"))
    started = time.time()
    load_start = os.getloadavg()
    sizes = {"warm": ("683",), "refresh": ("10000",)}.get(args.only or "", ("683", "10000"))
    try:
        missing = tuple(size for size in sizes if not (work / size / "index").exists())
        if missing:
            libraries = prepare(work, missing)
            cold = {size: round(build(path, work / size / "index"), 1) for size, path in libraries.items()}
            print("cold builds (s, once):", cold, flush=True)
        for label in checkouts:  # each checkout its own copy of the indexes and of the library it edits
            for size in sizes:
                own = work / label / size
                if not own.exists():
                    shutil.copytree(work / size / "index", own / "index")
                    if size == "10000":
                        shutil.copytree(work / size / "skills", own / "skills")
        bytecode = {label: work / label / "bytecode" for label in checkouts}
        for label, checkout in checkouts.items():
            byte_compile(checkout, bytecode[label])
        rows: dict[str, list[dict[str, Any]]] = {label: [] for label in checkouts}
        for round_ in range(args.rounds):
            order = list(checkouts) if round_ % 2 == 0 else list(reversed(checkouts))
            for label in order:
                own = work / label
                said = f"round {round_ + 1} {label:8}"
                if args.only != "refresh":
                    warm = run_child(checkouts[label], bytecode[label],
                                     ["warm", str(work / "683" / "skills"), str(own / "683" / "index")])
                    rows[label].append(warm)
                    said += (f" route p50 {warm['route']['p50_ms']} ms (cpu {warm['route']['cpu_p50_ms']}), "
                             f"load {warm['loadavg']}")
                if args.only != "warm":
                    refresh = run_child(checkouts[label], bytecode[label],
                                        ["refresh", str(own / "10000" / "skills"), str(own / "10000" / "index"),
                                         str(args.edits)])
                    rows[label].append(refresh)
                    said += (f", refresh new process {refresh['new_process_s']} s "
                             f"(cpu {refresh['new_process_cpu_s']}), same process {refresh['same_process_s']} s "
                             f"(cpu {refresh['same_process_cpu_s']}), load {refresh['loadavg']}")
                print(said, flush=True)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    from common import save

    result = {"checkouts": {label: str(path) for label, path in checkouts.items()}, "goals": GOALS, "only": args.only,
              "summary": {label: summary(found) for label, found in rows.items()}, "rows": rows,
              "rounds": args.rounds, "minutes": round((time.time() - started) / 60, 1),
              "loadavg": {"start": [round(x, 2) for x in load_start], "end": [round(x, 2) for x in os.getloadavg()]}}
    print(json.dumps(result["summary"], indent=1))
    save(args.name, result)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        # The checkout measured is the first on PYTHONPATH: import it before the benchmark modules put this one's
        # root on sys.path. A new process's imports are timed apart from the refresh.
        start, cpu = time.perf_counter(), time.process_time()
        import router.routing

        sys.argv += [str(time.perf_counter() - start), str(time.process_time() - cpu)]
        measured = os.environ.get("PYTHONPATH", "").split(os.pathsep)[0]
        if measured and not Path(router.routing.__file__).resolve().is_relative_to(Path(measured).resolve()):
            raise SystemExit(f"router was imported from {router.routing.__file__}, not from {measured}")
    main()
