"""Does the prompt hook reach the model through the real harnesses? 20 real ``claude -p`` and ``codex exec`` prompts.

    .venv/bin/python benchmarks/hook_real.py                      # both harnesses, 20 prompts a row (~10 minutes)
    .venv/bin/python benchmarks/hook_real.py --harness codex --runs 40
    .venv/bin/python benchmarks/hook_real.py --quick --out /tmp/hook_real.json   # 2 prompts, ~115 skills
    .venv/bin/python benchmarks/hook_real.py --set no_skill=false   # as the project's skill-router.json

Everything runs offline in a temporary folder: each harness gets a fresh HOME with the ~700 SKILL.md folders of
the ../shared/corpora folders laid out where it reads them (``~/.claude/skills`` for Claude Code,
``$CODEX_HOME/skills`` for Codex), then ``skill-router setup`` installs the hook, and every prompt goes through the
pinned binary (Claude Code 2.1.332, Codex 0.171.0; installed by npm into ``~/.cache/skill-router/oracle/`` as the
oracle tests do, with their loopback fake Messages API and Responses API: ``tests/oracle_claude.py``,
``tests/oracle_codex.py``). A prompt carries the context when the hook printed one (Claude Code's debug file quotes
the hook's output; for Codex, ``skill-router hook codex`` is asked the same prompt again) and every conversation
request the fake API received holds it verbatim (for Codex: as the developer message right after the prompt).
A prompt without one is ``abstained`` when the hook logged no failure (the router found no skill that fits),
else ``failed``.

The hook's time is what the harness logs:

- Claude Code, command form: the debug file's ``Hooks: UserPromptSubmit [<command>] finished with status 0 (N ms)``;
- Claude Code, http form: the time between its ``Hooks: HTTP hook POST to <url>`` and ``Hooks: HTTP hook response
  status`` lines (millisecond timestamps; the http form logs no duration);
- Codex: the time between the app-server events ``hook/started`` and ``hook/completed`` that
  ``RUST_LOG=codex_app_server::outgoing_message=trace`` prints (microsecond timestamps); each ``codex exec``'s
  wall time is reported beside it.

Rows (the "Done when" table of the prompt-hook issue):

- ``setup claude-code``, then the prompts (command form): how many carry the context, hook p50/p99;
- the same prompts with two CPU-bound processes running;
- ``skill-router stop``, then one prompt (context or nothing, within the hook's budget), then, once the server
  the hook started is ready, the next prompt;
- ``setup claude-code --http`` (a free port), then the prompts through the http form;
- ``setup codex``, then the prompts through ``codex exec``: carried, hook p50/p99;
- ``setup`` twice, then ``setup --remove``: the settings files byte for byte as they were;
- ``doctor`` with the server killed, the hook removed, the index deleted (each alone, against a run with nothing
  broken): the step it names, its fix, the exit code.

Prints a table and writes benchmarks/results/hook_real.json (``--out``), with the machine's load average, the
versions and the date. Every server binds 127.0.0.1 on a free port; the warm servers are stopped
(``skill-router stop``) and the burners killed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pytest  # noqa: E402  (the oracles report an install failure with pytest.fail)

from benchmarks.common import CORPORA, RESULTS, parsed_config  # noqa: E402
from benchmarks.hook_start import lay_out  # noqa: E402
from router.config import DEFAULT_CONFIG_FILE, RouterConfig  # noqa: E402
from router.serve.hooks import DEFAULT_BUDGET_S  # noqa: E402
from tests import oracle_claude, oracle_codex  # noqa: E402

#: Every 7th English single-skill request of benchmarks/data/users-corpora-dev.jsonl (written as users write,
#: before any routing), the first 20; copied here so that edits to the dev data do not change this benchmark.
PROMPTS = (
    ("u-001", "find which of the last 300 commits made the login test start failing"),
    ("u-008", "colours and fonts of the company that makes claude, apply them to my deck"),
    ("u-027", "goroutines leak when the client disconnects, how do i cancel them"),
    ("u-034", "page me when p99 latency stays over 300ms for 5 minutes"),
    ("u-041", "prisma migrate keeps generating a drop table when I change a relation"),
    ("u-048", "someone changed the number in the url from 1041 to 1042 and saw another user's invoice. how do I "
              "check the rest of the app for this"),
    ("u-055", "tailwind v4 removed my config file?? where do theme colors go now"),
    ("u-062", "the background job that emails invoices sometimes runs twice, node + redis"),
    ("u-069", "recall of our hnsw index dropped once we passed 20M vectors"),
    ("u-076", "i want to work on two branches at the same time without stashing all the time"),
    ("u-083", "go through spoofing, tampering and the rest for our new file sharing feature"),
    ("u-090", "lambda cold starts are 4 seconds on our api"),
    ("u-097", "flaky browser test: the click happens before the modal is ready"),
    ("u-104", "give people a month free when they bring a friend"),
    ("u-111", "5-year projection with revenue, burn and runway for the seed round"),
    ("u-118", "treated vs control, 3 replicates each, counts matrix from featureCounts. which genes change?"),
    ("u-125", "simulate the protein in water for 10 ns and plot the RMSD"),
    ("u-132", "differentiate and simplify this expression, then solve for x"),
    ("u-139", "run my training script on a cloud GPU without managing servers"),
    ("u-150", "how do i speeed up my pyhton loop over a dataframe of 2m rows"),
)
HEADER = "Skills most relevant to this request (skill-router):"
CLI = [sys.executable, "-m", "router.cli"]
#: A settings file with something of the user's in it: setup must keep it, --remove must give it back byte for byte.
CLAUDE_SETTINGS = b'{"model": "sonnet",\n "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}\n'
#: Longest one skill-router command (setup indexes ~700 skills and makes the ONNX export) may take.
COMMAND_TIMEOUT_S = 1800
#: Longest a burner runs if this process dies before it kills them.
BURNER_LIFETIME_S = 1800
#: Longest the benchmark waits for a warm server to be ready after a hook started it.
READY_TIMEOUT_S = 180
#: ``--quick`` keeps every QUICK_EVERY-th corpus skill (about 115): its setup indexes in seconds, not minutes.
QUICK_EVERY = 6
CODEX_LOG = "error,codex_app_server::outgoing_message=trace"
GOALS = {"claude_command": "20/20; hook p50 <= 200 ms, p99 <= 400 ms",
         "claude_http": "20/20; hook p50 <= 50 ms, p99 <= 150 ms",
         "claude_burners": "20/20",
         "claude_after_stop": f"context or nothing within the {DEFAULT_BUDGET_S:g} s budget; server back after",
         "codex_exec": "20/20; hook p50 <= 300 ms",
         "setup_remove": "byte-identical",
         "doctor": "names the broken step and its fix, exit 1"}


# -- the harnesses' logs -------------------------------------------------------------------------------------------
_COMMAND_DONE = re.compile(r"Hooks: UserPromptSubmit \[.*\] finished with status (\d+) \((\d+)ms\)")
_STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z")
_SUCCESS = "Hook UserPromptSubmit (UserPromptSubmit) success:\n"


def _stamp(line: str) -> float | None:
    found = _STAMP.match(line)
    return datetime.fromisoformat(found.group(1)).timestamp() if found else None


def _between(lines: Sequence[str], start: str, end: str) -> float | None:
    """Milliseconds from the first line holding ``start`` to the next holding ``end`` (None when either is
    missing)."""
    began = None
    for line in lines:
        if began is None and start in line:
            began = _stamp(line)
        elif began is not None and end in line:
            ended = _stamp(line)
            return None if ended is None else round((ended - began) * 1000, 1)
    return None


def claude_hook_ms(debug: str) -> float | None:
    """The UserPromptSubmit hook's time as Claude Code's debug file gives it (command form: its own duration;
    http form: from the POST line to the response line)."""
    found = _COMMAND_DONE.search(debug)
    if found:
        return float(found.group(2))
    return _between(debug.splitlines(), "Hooks: HTTP hook POST to ", "Hooks: HTTP hook response status")


def claude_hook_context(debug: str) -> str | None:
    """The additionalContext the hook gave, as the debug file's ``Hook UserPromptSubmit ... success`` line quotes
    the hook's output (None when it gave none)."""
    for line in debug.splitlines():
        quoted = line.partition("[DEBUG] ")[2]
        if not quoted.startswith('"Hook UserPromptSubmit'):
            continue
        try:
            text = json.loads(quoted)
            output = json.loads(text.partition(_SUCCESS)[2])
        except ValueError:
            continue
        context = (output.get("hookSpecificOutput") or {}).get("additionalContext")
        if isinstance(context, str) and context:
            return context
    return None


def codex_hook_ms(stderr: str) -> float | None:
    return _between(stderr.splitlines(), "app-server event: hook/started", "app-server event: hook/completed")


def texts(value: Any) -> Iterator[str]:
    """Every string inside a request body."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from texts(item)


def carries(requests: Sequence[Any], context: str | None) -> bool:
    """The hook gave a context in the router's format and every model request holds it verbatim."""
    return bool(context and context.startswith(HEADER + "\n- ") and requests
                and all(any(context in text for text in texts(body)) for body in requests))


def skill_names(context: str | None) -> list[str]:
    return [line[2:].split(":", 1)[0] for line in (context or "").splitlines()[1:]]


# -- statistics and the machine ------------------------------------------------------------------------------------
def quantiles(values: Sequence[float | None]) -> dict[str, Any]:
    found = sorted(v for v in values if v is not None)
    if not found:
        return {"p50_ms": None, "p99_ms": None, "timed": 0}
    return {"p50_ms": round(statistics.median(found)), "p99_ms": round(found[min(len(found) - 1,
                                                                                   int(len(found) * 0.99))]),
            "timed": len(found)}


def outcome(printed: str | None, carried: bool, failures: int) -> str:
    """``context`` (carried to the model), ``lost`` (the hook gave one that a request lacks), ``failed`` (nothing,
    and the hook logged why) or ``abstained`` (nothing and no failure: the router found no skill that fits)."""
    if carried:
        return "context"
    if printed:
        return "lost"
    return "failed" if failures else "abstained"


def summary(prompts: list[dict[str, Any]]) -> dict[str, Any]:
    ends = [p["outcome"] for p in prompts]
    return {"prompts": len(prompts), "carried": sum(p["carried"] for p in prompts),
            "outcomes": {name: ends.count(name) for name in ("context", "abstained", "failed", "lost")},
            "abstained": [p["id"] for p in prompts if p["outcome"] == "abstained"],
            "hook": quantiles([p["hook_ms"] for p in prompts]),
            "wall": quantiles([p["wall_ms"] for p in prompts]), "per_prompt": prompts, "load_average_after": load()}


def load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def version_of(command: Sequence[str], env: dict[str, str]) -> str:
    try:
        done = subprocess.run(list(command), capture_output=True, text=True, timeout=60, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    return done.stdout.strip()


def commit() -> str:
    """The checkout's commit, with ``+changes`` when its tracked files differ from it."""
    head = version_of(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], dict(os.environ))
    changed = version_of(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"], dict(os.environ))
    return head + ("+changes" if changed else "")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def burners(count: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``count`` CPU-bound processes, each stopping by itself after :data:`BURNER_LIFETIME_S`, killed on exit."""
    code = f"import time\nend = time.monotonic() + {BURNER_LIFETIME_S}\nwhile time.monotonic() < end:\n    pass\n"
    started = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(count)]
    try:
        yield started
    finally:
        for process in started:
            process.kill()
            process.wait(timeout=30)


# -- one private world ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class World:
    """A harness's fresh HOME (XDG folders inside it), the run folder of its warm servers and the working folder
    its prompts start from."""

    root: Path
    cwd: Path
    extra: tuple[tuple[str, str], ...] = ()

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def run_folder(self) -> Path:
        return self.root / "run"

    def hook_env(self) -> dict[str, str]:
        """What the harness passes on to its hooks beyond its own HOME: this checkout and the run folder."""
        return {"PYTHONPATH": str(ROOT), "XDG_RUNTIME_DIR": str(self.run_folder)}

    def env(self) -> dict[str, str]:
        """What a skill-router command run by the user of this HOME sees."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SKILL_ROUTER_", "XDG_", "CODEX_"))}
        home = self.home
        env.update({"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
                    "XDG_CACHE_HOME": str(home / ".cache"), "XDG_DATA_HOME": str(home / ".local" / "share"),
                    "XDG_STATE_HOME": str(home / ".local" / "state"), **self.hook_env(), **dict(self.extra)})
        return env

    def cli(self, *args: str, timeout: float = COMMAND_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*CLI, *args], cwd=self.cwd, env=self.env(), capture_output=True, text=True,
                              timeout=timeout)

    def configure(self, config: RouterConfig | None) -> None:
        """``config`` as the project's ``skill-router.json``, which ``setup``, the hook and the server it starts
        read from the working folder; None: the defaults."""
        if config is not None:
            self.cwd.mkdir(parents=True, exist_ok=True)
            config.save(self.cwd / DEFAULT_CONFIG_FILE)

    def setup(self, *args: str) -> subprocess.CompletedProcess[str]:
        done = self.cli("setup", *args)
        if done.returncode != 0 and "--remove" not in args:
            raise SystemExit(f"skill-router setup {' '.join(args)} failed (exit {done.returncode}): "
                             f"{(done.stderr or done.stdout).strip()[-800:]}")
        return done

    def states(self) -> list[dict[str, Any]]:
        """The warm servers' state files in this world's run folder."""
        found = []
        for path in sorted((self.run_folder / "skill-router").glob("*.json")):
            try:
                found.append(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError):
                continue
        return found

    def ready_server(self) -> dict[str, Any] | None:
        """The state of a server that answers ``/readyz`` with 200, or None."""
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        for state in self.states():
            if not state.get("port") or not _alive(int(state.get("pid") or 0)):
                continue
            token = Path(state["token_file"]).read_text().strip() if state.get("token_file") else ""
            request = urllib.request.Request(f"http://127.0.0.1:{state['port']}/readyz",
                                             headers={"Authorization": f"Bearer {token}"} if token else {})
            try:
                with opener.open(request, timeout=5) as answer:
                    if answer.status == 200:
                        return state
            except OSError:
                continue
        return None

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> float | None:
        """Seconds until a server is ready (None when none is within ``timeout``)."""
        start = time.perf_counter()
        while time.perf_counter() - start < timeout:
            if self.ready_server() is not None:
                return time.perf_counter() - start
            time.sleep(0.1)
        return None

    def failures(self) -> int:
        """Lines in the hook failure log (one a hook that printed nothing because something failed)."""
        try:
            with open(self.run_folder / "skill-router" / "hook-failures.log", encoding="utf-8") as log:
                return sum(1 for _ in log)
        except OSError:
            return 0

    def stop(self) -> None:
        self.cli("stop", timeout=120)


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def doctor_steps(world: World, profile: str) -> dict[str, Any]:
    done = world.cli("doctor", "--profile", profile, "--json", timeout=300)
    try:
        steps = json.loads(done.stdout)["steps"]
    except (ValueError, KeyError):
        raise SystemExit(f"doctor printed no JSON (exit {done.returncode}): {done.stderr.strip()[-500:]}") from None
    failing = {s["name"]: {"found": s["found"], "fix": s["fix"]} for s in steps if not s["ok"]}
    return {"exit": done.returncode, "failing": failing}


def doctor_breaks(world: World, profile: str, index_folder: Path) -> dict[str, Any]:
    """``doctor`` once with nothing broken, then with each break alone (mended before the next): the step a break
    adds to the failing ones, its fix and the exit code."""
    baseline = doctor_steps(world, profile)

    def kill_server() -> None:
        for state in world.states():
            if _alive(int(state.get("pid") or 0)):
                os.kill(int(state["pid"]), signal.SIGKILL)
        deadline = time.monotonic() + 30
        while any(_alive(int(s.get("pid") or 0)) for s in world.states()) and time.monotonic() < deadline:
            time.sleep(0.05)

    def restart_server() -> None:
        world.cli("route", "--daemon", "--profile", profile, "test", timeout=300)
        world.wait_ready()

    aside = index_folder.with_name(index_folder.name + ".aside")
    breaks: dict[str, tuple[str, Callable[[], Any], Callable[[], Any]]] = {
        "server killed": ("server", kill_server, restart_server),
        "hook removed": ("hook", lambda: world.setup(profile, "--remove"),
                         lambda: world.setup(profile, "--settings-only")),
        "index deleted": ("index", lambda: index_folder.rename(aside), lambda: put_back(aside, index_folder)),
    }
    out: dict[str, Any] = {"nothing broken": baseline}
    for name, (step, breaking, mending) in breaks.items():
        breaking()
        try:
            found = doctor_steps(world, profile)
        finally:
            mending()
        added = sorted(set(found["failing"]) - set(baseline["failing"]))
        out[name] = {**found, "added": added, "named": step in added and found["exit"] == 1,
                     "fix": found["failing"].get(step, {}).get("fix"), "step": step,
                     "also_failing": [other for other in added if other != step]}
    return out


def put_back(aside: Path, folder: Path) -> None:
    """The index folder moved aside comes back (replacing one a server may have rebuilt meanwhile)."""
    if folder.exists():
        shutil.rmtree(folder)
    aside.rename(folder)


def setup_twice_then_remove(world: World, harness: str, files: Sequence[Path], *extra: str
                            ) -> tuple[dict[str, Any], dict[str, Any]]:
    """``setup`` twice, then ``setup --remove``: the second run changes nothing, and the files come back byte for
    byte (a file that did not exist is gone again). Also the first setup's time and what it printed."""
    def snapshot() -> list[bytes | None]:
        return [path.read_bytes() if path.exists() else None for path in files]

    before = snapshot()
    start = time.perf_counter()
    first = world.setup(harness, *extra)
    seconds = time.perf_counter() - start
    once = snapshot()
    world.setup(harness, *extra)
    twice = snapshot()
    removed = world.setup(harness, "--remove")
    after = snapshot()
    check = {"files": [str(p.relative_to(world.root)) for p in files], "changed_by_setup": once != before,
             "second_setup_identical": twice == once, "identical_after_remove": after == before,
             "remove_said": removed.stdout.strip().splitlines()}
    return check, {"seconds": round(seconds, 1), "said": first.stdout.strip().splitlines()}


def index_folder_of(setup_said: Sequence[str]) -> Path:
    """The index folder setup names (``indexed N skills in S s: FOLDER``)."""
    for line in setup_said:
        if line.startswith("indexed "):
            return Path(line.rsplit(": ", 1)[1])
    raise SystemExit(f"setup did not say where it indexed: {' | '.join(setup_said)}")


def library(skills: Path, every: int) -> int:
    """The corpus skills laid out in ``skills`` (every ``every``-th of them); how many there are."""
    lay_out(skills)
    for number, folder in enumerate(sorted(skills.iterdir())):
        if number % every:
            shutil.rmtree(folder)
    return sum(1 for _ in skills.iterdir())


# -- Claude Code ---------------------------------------------------------------------------------------------------
def claude_prompt(binary: Path, world: World, prompt: tuple[str, str]) -> dict[str, Any]:
    failures = world.failures()
    start = time.perf_counter()
    run = oracle_claude.run_claude(binary, world.home, world.cwd, prompt[1], env=world.hook_env())
    wall = (time.perf_counter() - start) * 1000
    context = claude_hook_context(run.debug)
    carried = carries(run.main_requests, context)
    return {"id": prompt[0], "carried": carried, "outcome": outcome(context, carried, world.failures() - failures),
            "skills": skill_names(context), "hook_ms": claude_hook_ms(run.debug), "wall_ms": round(wall),
            "exit": run.returncode}


def claude_rows(binary: Path, root: Path, prompts: Sequence[tuple[str, str]], every: int,
                report: Callable[[str], None], config: RouterConfig | None = None) -> dict[str, Any]:
    world = World(root, root / "project")
    world.cwd.mkdir(parents=True)
    world.configure(config)
    count = library(world.home / ".claude" / "skills", every)
    settings = world.home / ".claude" / "settings.json"
    settings.write_bytes(CLAUDE_SETTINGS)
    (world.run_folder).mkdir()
    rows: dict[str, Any] = {"skills": count}
    try:
        rows["setup_remove"], rows["setup"] = setup_twice_then_remove(world, "claude-code", [settings])
        report(f"claude-code: setup in {rows['setup']['seconds']} s ({count} skills, fresh HOME)")
        world.setup("claude-code")

        def many(name: str) -> dict[str, Any]:
            done = [claude_prompt(binary, world, p) for p in prompts]
            row = summary(done)
            report(f"claude-code {name}: {row['carried']}/{row['prompts']} carried, hook p50 {row['hook']['p50_ms']} "
                   f"/ p99 {row['hook']['p99_ms']} ms")
            return row

        rows["claude_command"] = many("command form")
        with burners(2):
            rows["claude_burners"] = many("command form, two burners")

        world.stop()
        after = claude_prompt(binary, world, prompts[0])
        ready = world.wait_ready()
        following = claude_prompt(binary, world, prompts[1 % len(prompts)])
        rows["claude_after_stop"] = {
            "first": {**after, "within_budget": after["hook_ms"] is not None
                      and after["hook_ms"] <= DEFAULT_BUDGET_S * 1000},
            "server_ready_s": None if ready is None else round(ready, 1),
            "next": following, "budget_ms": DEFAULT_BUDGET_S * 1000}
        report(f"claude-code after stop: carried {after['carried']} in {after['hook_ms']} ms; server ready in "
               f"{rows['claude_after_stop']['server_ready_s']} s; next carried {following['carried']} in "
               f"{following['hook_ms']} ms")

        rows["doctor"] = doctor_breaks(world, "claude-code", index_folder_of(rows["setup"]["said"]))
        report("claude-code doctor: " + ", ".join(f"{k}: exit {v['exit']} {v.get('added', sorted(v['failing']))}"
                                                  for k, v in rows["doctor"].items()))

        world.setup("claude-code", "--remove")
        rows["restored_after_the_run"] = settings.read_bytes() == CLAUDE_SETTINGS
        port = free_port()
        rows["setup_remove_http"], _ = setup_twice_then_remove(world, "claude-code", [settings], "--http", "--port",
                                                               str(port))
        world.setup("claude-code", "--http", "--port", str(port))
        rows["claude_http"] = {**many("http form"), "port": port}
    finally:
        world.stop()
    return rows


# -- Codex ---------------------------------------------------------------------------------------------------------
def codex_rows(binary: Path, root: Path, prompts: Sequence[tuple[str, str]], every: int,
               report: Callable[[str], None], config: RouterConfig | None = None) -> dict[str, Any]:
    codex = oracle_codex.CodexWorld(binary, root)
    world = World(root, codex.cwd, (("CODEX_HOME", str(codex.codex_home)),))
    world.configure(config)
    codex.extra_env.update({**world.hook_env(), "XDG_CACHE_HOME": str(world.home / ".cache"), "RUST_LOG": CODEX_LOG})
    count = library(codex.user_skills, every)
    world.run_folder.mkdir()
    codex.write_config()  # the oracle's config (no telemetry, no update checks): the user's file setup merges into
    base = (codex.codex_home / "config.toml").read_text(encoding="utf-8")
    files = [codex.codex_home / "hooks.json", codex.codex_home / "config.toml"]
    rows: dict[str, Any] = {"skills": count}
    try:
        rows["setup_remove"], rows["setup"] = setup_twice_then_remove(world, "codex", files, "--codex", str(binary))
        report(f"codex: setup in {rows['setup']['seconds']} s ({count} skills, fresh HOME)")
        world.setup("codex", "--codex", str(binary))
        written = (codex.codex_home / "config.toml").read_text(encoding="utf-8")
        if not written.startswith(base):
            raise SystemExit("setup codex rewrote the start of config.toml instead of adding the trust entry")
        codex.config = written[len(base):]  # the trust entry; each run writes the fake provider before it

        done = []
        for prompt in prompts:
            failures = world.failures()
            start = time.perf_counter()
            run = codex.exec(prompt[1])
            wall = (time.perf_counter() - start) * 1000
            failed = world.failures() - failures
            expected = hook_output(world, "codex", prompt[1])  # what the hook gives this prompt, asked again
            try:
                after = run.after_prompt(prompt[1])
            except (ValueError, IndexError, KeyError):  # no request, or one without the prompt
                after = []
            printed = after[0][1] if after and after[0][0] == "developer" and after[0][1].startswith(HEADER) else None
            carried = bool(expected) and printed == expected and carries(run.requests, expected)
            done.append({"id": prompt[0], "carried": carried, "outcome": outcome(printed, carried, failed),
                         "skills": skill_names(printed), "hook_ms": codex_hook_ms(run.stderr),
                         "wall_ms": round(wall), "exit": run.returncode})
        rows["codex_exec"] = summary(done)
        row = rows["codex_exec"]
        report(f"codex exec: {row['carried']}/{row['prompts']} carried, hook p50 {row['hook']['p50_ms']} / p99 "
               f"{row['hook']['p99_ms']} ms, wall p50 {row['wall']['p50_ms']} ms")
    finally:
        world.stop()
    return rows


def hook_output(world: World, harness: str, prompt: str) -> str | None:
    """The context ``skill-router hook`` gives this prompt now (the warm server answering), or None."""
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": prompt, "cwd": str(world.cwd),
                          "session_id": "hook-real"})
    done = subprocess.run([*CLI, "hook", harness], input=payload, capture_output=True, text=True, cwd=world.cwd,
                          env=world.env(), timeout=60)
    if not done.stdout.strip():
        return None
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    return context if isinstance(context, str) else None


# -- the report ----------------------------------------------------------------------------------------------------
def table(result: dict[str, Any]) -> str:
    lines = ["| measure | result | goal |", "|---|---|---|"]

    def prompts_row(label: str, row: dict[str, Any] | None, key: str) -> None:
        if row is None:
            return
        hook, ends = row["hook"], row["outcomes"]
        rest = [f"{ends[name]} {name}" for name in ("abstained", "failed", "lost") if ends[name]]
        why = f" ({', '.join(rest)}{': ' + ', '.join(row['abstained']) if row['abstained'] else ''})" if rest else ""
        lines.append(f"| {label} | {row['carried']}/{row['prompts']} carried{why}; hook p50 {hook['p50_ms']} / p99 "
                     f"{hook['p99_ms']} ms (load {row['load_average_after'][0]:g}) | {GOALS[key]} |")

    claude = result.get("claude-code") or {}
    prompts_row("`claude -p`, command form", claude.get("claude_command"), "claude_command")
    prompts_row("`claude -p`, http form", claude.get("claude_http"), "claude_http")
    prompts_row("`claude -p`, command form, two CPU burners", claude.get("claude_burners"), "claude_burners")
    stop = claude.get("claude_after_stop")
    if stop:
        first, following = stop["first"], stop["next"]
        said = {True: "context", False: "nothing"}
        lines.append(f"| after `skill-router stop`, the next prompt | {said[first['carried']]} in {first['hook_ms']} "
                     f"ms ({'within' if first['within_budget'] else 'PAST'} the budget); server ready "
                     f"{stop['server_ready_s']} s later, then {said[following['carried']]} in "
                     f"{following['hook_ms']} ms | {GOALS['claude_after_stop']} |")
    codex = result.get("codex") or {}
    prompts_row("`codex exec`", codex.get("codex_exec"), "codex_exec")
    for name, rows in (("claude-code", claude), ("codex", codex)):
        for key in ("setup_remove", "setup_remove_http"):
            check = rows.get(key)
            if check:
                form = " --http" if key.endswith("http") else ""
                verdict = ("byte-identical" if check["identical_after_remove"] and check["second_setup_identical"]
                           else f"DIFFERENT (second setup identical: {check['second_setup_identical']}, after "
                                f"remove: {check['identical_after_remove']})")
                lines.append(f"| `setup {name}{form}` twice, then `--remove` | {verdict} | {GOALS['setup_remove']} |")
    for name, found in (claude.get("doctor") or {}).items():
        if name == "nothing broken":
            failing = ", ".join(found["failing"]) or "none"
            lines.append(f"| `doctor`, nothing broken | exit {found['exit']}; failing: {failing} | exit 0 |")
        else:
            named = f"names {found['step']}" if found["named"] else f"does NOT name {found['step']}"
            also = f" (then also {', '.join(found['also_failing'])})" if found["also_failing"] else ""
            lines.append(f"| `doctor`, {name} | exit {found['exit']}; {named}{also}; fix `{found['fix']}` | "
                         f"{GOALS['doctor']} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=len(PROMPTS), help="prompts a row (the 20 prompts in turn; "
                                                                       "default 20)")
    parser.add_argument("--harness", choices=("claude-code", "codex", "all"), default="all")
    parser.add_argument("--quick", action="store_true", help=f"2 prompts a row, every {QUICK_EVERY}th corpus skill")
    parser.add_argument("--out", type=Path, default=RESULTS / "hook_real.json", help="where the JSON goes")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=JSON",
                        help="a config change from the default, written to the project's skill-router.json, e.g. "
                             "no_skill=false (repeatable)")
    args = parser.parse_args(argv)
    changes, changed = parsed_config(parser, args.set)
    config = changed if changes else None
    runs, every = (2, QUICK_EVERY) if args.quick else (args.runs, 1)
    if runs < 1:
        parser.error("--runs must be 1 or more")
    if not CORPORA.is_dir():
        parser.error(f"the corpora are not at {CORPORA}: put the shared corpora beside the repository")
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(runs)]
    harnesses = ("claude-code", "codex") if args.harness == "all" else (args.harness,)
    try:
        claude = oracle_claude.install() if "claude-code" in harnesses else None
        codex = oracle_codex.install_codex() if "codex" in harnesses else None
    except (pytest.fail.Exception, oracle_codex.OracleError) as exc:
        print(f"hook_real: {exc}", file=sys.stderr)
        return 2

    def interrupted(number: int, frame: Any) -> None:
        raise SystemExit(f"hook_real: stopped by signal {number}")  # the servers and burners are stopped on the way

    signal.signal(signal.SIGTERM, interrupted)

    def report(line: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {line}", flush=True)

    plain = {"PATH": os.environ.get("PATH", ""), "HOME": tempfile.gettempdir()}
    result: dict[str, Any] = {
        "command": "python " + " ".join([os.path.relpath(sys.argv[0], ROOT), *(argv if argv is not None else
                                                                               sys.argv[1:])]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": {"cores": os.cpu_count(), "load_average_start": load()},
        "versions": {"skill-router": version_of([*CLI, "--version"], {**os.environ, "PYTHONPATH": str(ROOT)}),
                     "commit": commit(),
                     "python": sys.version.split()[0]},
        "prompts": [{"id": i, "text": t} for i, t in prompts], "budget_s": DEFAULT_BUDGET_S,
        "config_changes": changes,
    }
    with tempfile.TemporaryDirectory(prefix="hook-real-") as work:
        if claude is not None:
            result["versions"]["claude-code"] = version_of([str(claude), "--version"], plain)
            result["claude-code"] = claude_rows(claude, Path(work) / "claude-code", prompts, every, report,
                                                config)
        if codex is not None:
            result["versions"]["codex"] = version_of([str(codex), "--version"], plain)
            result["codex"] = codex_rows(codex, Path(work) / "codex", prompts, every, report, config)
    result["machine"]["load_average_end"] = load()
    print(table(result))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
