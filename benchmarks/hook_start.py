"""How long does ``skill-router hook claude-code`` take on ~700 real skills, with and without its warm server?

    .venv/bin/python benchmarks/hook_start.py             # about 5 minutes on 2 cores (the first build included)
    .venv/bin/python benchmarks/hook_start.py --runs 40

The ~700 SKILL.md folders of the ../shared/corpora folders are laid out under a temporary project's
``.claude/skills`` (one folder each, as Claude Code reads them) with a fresh HOME, ``skill-router setup
claude-code`` indexes them and starts the warm server, and each hook is then timed as a whole process, from spawn
to exit, the way the harness runs it:

- ``warm``: the hook asks the library's warm server (the default path);
- ``in_process``: no server (``--no-start``): the hook routes in-process from the index ``setup`` built.

Reports p50/p99 and how many runs carried a context. Writes benchmarks/results/hook_start.json.
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


def time_hooks(project: Path, env: dict[str, str], runs: int, *options: str) -> dict[str, Any]:
    seconds, carried = [], 0
    for i in range(runs):
        payload = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": PROMPTS[i % len(PROMPTS)],
                              "cwd": str(project)})
        start = time.perf_counter()
        done = subprocess.run([*CLI, "hook", "claude-code", *options], input=payload, capture_output=True,
                              text=True, cwd=project, env=env, timeout=120)
        seconds.append(time.perf_counter() - start)
        carried += bool(done.stdout.strip())
    seconds.sort()
    return {"runs": runs, "carried": carried, "p50_ms": round(statistics.median(seconds) * 1000),
            "p99_ms": round(seconds[min(runs - 1, int(runs * 0.99))] * 1000)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
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
        warm = time_hooks(project, env, args.runs)
        subprocess.run([*CLI, "stop"], env=env, capture_output=True, timeout=60)
        cold = time_hooks(project, env, args.runs, "--no-start", "--timeout", "30")
        load = os.getloadavg()[0]
    result = {"skills": count, "setup_s": round(setup_s, 1), "warm": warm, "in_process": cold,
              "load_average_1min": round(load, 1)}
    print(json.dumps(result, indent=2))
    save("hook_start", result)


if __name__ == "__main__":
    main()
