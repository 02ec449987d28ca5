"""How long does ``skill-router hook claude-code`` take on ~700 real skills, with and without its warm server?

    .venv/bin/python benchmarks/hook_start.py             # about 5 minutes on 2 cores (the first build included)
    .venv/bin/python benchmarks/hook_start.py --runs 40
    .venv/bin/python benchmarks/hook_start.py --compare da8fba8   # and the code of that commit, run alternately

The ~700 SKILL.md folders of the ../shared/corpora folders are laid out under a temporary project's
``.claude/skills`` (one folder each, as Claude Code reads them) with a fresh HOME, ``skill-router setup
claude-code`` indexes them and starts the warm server, and each hook is then timed as a whole process, from spawn
to exit, the way the harness runs it:

- ``warm``: the hook asks the library's warm server (the default path);
- ``in_process``: no server (``--no-start``): the hook routes in-process from the index ``setup`` built;
- ``after_stop``: the default hook (2 s budget) right after ``skill-router stop``, each run: it starts the server
  and answers in-process, or prints nothing, and must never take longer than its budget.

Reports wall-clock p50/p99, the CPU time p50 (user + system of the hook and of every process it starts, counted by
a wrapper that reaps them all: what the hook costs on a shared machine whatever the load), how many runs carried a
context, the load average before and after, and the top entries of
``python -X importtime`` for one warm hook (what a prompt pays before its one HTTP request). The code is
byte-compiled first, as ``pip install`` does (``--no-compile``: as it is; with ``PYTHONDONTWRITEBYTECODE`` set and
no ``__pycache__``, every hook compiles the modules it imports). ``--compare COMMIT`` times that commit's
``router`` and ``indexes`` (``git archive``) against this tree's, run after run, on the same library, server and
index, so their ratio holds on a shared machine whose load changes. Writes benchmarks/results/hook_start.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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

PROMPTS = ["review my code for bugs before I commit", "will it rain in Lyon this weekend?",
           "make a pdf report from this csv", "write unit tests for this python module",
           "design a REST API for orders"]
CLI = [sys.executable, "-m", "router.cli"]


def lay_out(skills: Path) -> int:
    """Copy each corpus skill folder to ``skills/<folder>`` (a clash gets a numbered name); the count."""
    seen: set[str] = set()
    for folder in sorted({p.parent for p in CORPORA.rglob("SKILL.md")}):
        if any(parent in seen for parent in map(str, folder.parents)):
            continue  # a skill inside another skill's folder comes with it
        name, n = folder.name, 2
        while (skills / name).exists():
            name, n = f"{folder.name}-{n}", n + 1
        shutil.copytree(folder, skills / name, ignore=shutil.ignore_patterns("*.pdf", "*.png", "*.jpg", "*.zip"))
        seen.add(str(folder))
    return len(seen)


def payload(project: Path, i: int) -> str:
    return json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": PROMPTS[i % len(PROMPTS)],
                       "cwd": str(project)})


#: Runs one command as a child subreaper (Linux), so that every process the hook leaves behind (a child it does not
#: wait for) is reaped here and its CPU time counted: prints the hook's wall seconds (spawn to exit, what the
#: harness waits for), the CPU seconds of the whole tree, and its stdout.
REAPER = """
import ctypes, json, os, resource, subprocess, sys, time
try:
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
except (OSError, AttributeError):
    pass
start = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdin=sys.stdin, capture_output=True)
wall = time.perf_counter() - start
give_up = time.monotonic() + 5  # a server the hook started lives on: not waited for
while time.monotonic() < give_up:
    try:
        if os.waitpid(-1, os.WNOHANG) == (0, 0):
            time.sleep(0.005)
    except ChildProcessError:
        break
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
json.dump({"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "stdout": done.stdout.decode()}, sys.stdout)
"""


def timed_hook(project: Path, env: dict[str, str], i: int, *options: str) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the hook and every process it started, stdout) of one hook."""
    done = subprocess.run([sys.executable, "-c", REAPER, *CLI, "hook", "claude-code", *options],
                          input=payload(project, i), capture_output=True, text=True, cwd=project, env=env,
                          timeout=120, check=True)
    result = json.loads(done.stdout)
    return result["wall"], result["cpu"], result["stdout"]


def time_hooks(project: Path, envs: dict[str, dict[str, str]], runs: int, *options: str) -> dict[str, Any]:
    """Each tree's hooks (``envs``: its environment by name), run after run in turn."""
    seconds: dict[str, list[float]] = {name: [] for name in envs}
    cpu: dict[str, list[float]] = {name: [] for name in envs}
    carried = dict.fromkeys(envs, 0)
    loads = [os.getloadavg()[0]]
    for i in range(runs):
        for name, env in envs.items():
            wall, used, stdout = timed_hook(project, env, i, *options)
            seconds[name].append(wall)
            cpu[name].append(used)
            carried[name] += bool(stdout.strip())
    loads.append(os.getloadavg()[0])
    out: dict[str, Any] = {}
    for name in envs:
        wall = sorted(seconds[name])
        out[name] = {"runs": runs, "carried": carried[name], "p50_ms": round(statistics.median(wall) * 1000),
                     "p99_ms": round(wall[min(runs - 1, int(runs * 0.99))] * 1000),
                     "cpu_p50_ms": round(statistics.median(cpu[name]) * 1000)}
    if len(envs) == 2:
        new, old = (out[name]["p50_ms"] for name in envs)
        out["p50_ratio_to_compared"] = round(new / old, 2) if old else None
    out["load_average_1min"] = [round(x, 1) for x in loads]
    return out


def after_stop(project: Path, envs: dict[str, dict[str, str]], runs: int) -> dict[str, Any]:
    """Each tree's default hook right after ``stop``, run after run in turn: wall seconds and what it printed."""
    seconds: dict[str, list[float]] = {name: [] for name in envs}
    carried = dict.fromkeys(envs, 0)
    loads = [os.getloadavg()[0]]
    for i in range(runs):
        for name, env in envs.items():
            subprocess.run([*CLI, "stop"], env=env, capture_output=True, timeout=60)
            for estimate in Path(env["XDG_RUNTIME_DIR"], "skill-router").glob("*.inprocess"):
                estimate.unlink()  # each run tries in-process, as the first prompt after a stop does
            start = time.perf_counter()  # this hook starts a server, which must not be waited for
            done = subprocess.run([*CLI, "hook", "claude-code"], input=payload(project, i), capture_output=True,
                                  text=True, cwd=project, env=env, timeout=120)
            seconds[name].append(time.perf_counter() - start)
            carried[name] += bool(done.stdout.strip())
    loads.append(os.getloadavg()[0])
    out: dict[str, Any] = {name: {"runs": runs, "carried": carried[name], "max_ms": round(max(seconds[name]) * 1000),
                                  "over_2s": sum(s > 2.0 for s in seconds[name]),
                                  "p50_ms": round(statistics.median(seconds[name]) * 1000)} for name in envs}
    out["load_average_1min"] = [round(x, 1) for x in loads]
    return out


def import_times(project: Path, env: dict[str, str], top: int = 12) -> list[dict[str, Any]]:
    """The ``top`` modules by cumulative import time in one warm hook (``python -X importtime``)."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "router.cli", "hook", "claude-code"],
                          input=payload(project, 0), capture_output=True, text=True, cwd=project, env=env,
                          timeout=120)
    rows = []
    for line in done.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[0].strip().isdigit():
            rows.append({"module": parts[2].strip(), "self_us": int(parts[0]), "cumulative_us": int(parts[1]),
                         "depth": (len(parts[2]) - len(parts[2].lstrip()) - 1) // 2})
    return sorted(rows, key=lambda r: -r["cumulative_us"])[:top]


def tree_of(commit: str, work: Path) -> Path:
    """``router`` and ``indexes`` as they were at ``commit``, in a folder of their own."""
    folder = work / f"tree-{commit}"
    folder.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "router", "indexes"], capture_output=True,
                             check=True, timeout=120).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True, timeout=120)
    return folder


def byte_compile(tree: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "router"), str(tree / "indexes")],
                   env=env, check=True, capture_output=True, timeout=600)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--compare", metavar="COMMIT", help="also time this commit's code, run after run")
    parser.add_argument("--no-compile", action="store_true", help="do not byte-compile the code first")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        base = Path(work)
        project = base / "project"
        count = lay_out(project / ".claude" / "skills")
        (base / "home").mkdir()
        (base / "run").mkdir()
        env = {**os.environ, "HOME": str(base / "home"), "XDG_RUNTIME_DIR": str(base / "run"),
               "PYTHONPATH": str(ROOT)}
        env.pop("XDG_CACHE_HOME", None)
        env.pop("SKILL_ROUTER_URL", None)
        start = time.perf_counter()
        done = subprocess.run([*CLI, "setup", "claude-code"], cwd=project, env=env, capture_output=True, text=True,
                              timeout=1800)
        if done.returncode != 0:
            raise SystemExit(f"setup failed: {done.stderr.strip()[-500:]}")
        setup_s = time.perf_counter() - start
        envs = {"this": env}
        if args.compare:
            envs[args.compare] = {**env, "PYTHONPATH": str(tree_of(args.compare, base))}
        if not args.no_compile:
            for tree_env in envs.values():
                byte_compile(Path(tree_env["PYTHONPATH"]))
        imports = {name: import_times(project, tree_env) for name, tree_env in envs.items()}
        warm = time_hooks(project, envs, args.runs)
        print(json.dumps({"warm": warm}), flush=True)
        subprocess.run([*CLI, "stop"], env=env, capture_output=True, timeout=60)
        cold = time_hooks(project, envs, args.runs, "--no-start", "--timeout", "30")
        print(json.dumps({"in_process": cold}), flush=True)
        stopped = after_stop(project, envs, max(5, args.runs // 2))
        subprocess.run([*CLI, "stop"], env=env, capture_output=True, timeout=60)
    result = {"skills": count, "setup_s": round(setup_s, 1), "byte_compiled": not args.no_compile,
              "warm": warm, "in_process": cold, "after_stop": stopped, "warm_import_top": imports}
    print(json.dumps(result, indent=2))
    save("hook_start", result)


if __name__ == "__main__":
    main()
