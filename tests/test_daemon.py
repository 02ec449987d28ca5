"""The warm server a hook starts by itself: one per library (even when hooks fire at once), found through its
state file, guarded by a token, replaced when stale, gone after ``stop`` or its idle time."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from router import daemon
from router.cli.serve import duration
from serve_support import copy_bundled

HEADER = "Skills most relevant to this request (skill-router):"


@pytest.fixture(scope="module")
def onnx(encoder: object) -> object:
    """The bundled model's export in the user cache (what `skill-router setup` makes), made once."""
    from indexes.onnx_export import ensure_onnx_encoder

    return ensure_onnx_encoder(encoder)


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with the bundled skills under .claude/skills, an empty HOME and its own run folder."""
    project = tmp_path / "project"
    copy_bundled(project / ".claude" / "skills")
    (tmp_path / "home").mkdir()
    (tmp_path / "run").mkdir()
    # the model's ONNX export stays where the onnx fixture made it
    monkeypatch.setenv("XDG_CACHE_HOME", os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.delenv("SKILL_ROUTER_URL", raising=False)
    yield project
    daemon.stop_all()
    stray_servers(tmp_path)


def stray_servers(tmp_path: Path) -> None:
    """Stop any process still running over this test's folders: a server that a hook started just before a failed
    assertion may not have written its state file when ``stop_all`` ran, and would leave only at its idle exit."""
    deadline = time.monotonic() + 10
    while True:
        left = [int(p) for p in os.listdir("/proc")
                if p.isdigit() and int(p) != os.getpid() and str(tmp_path).encode() in _cmdline(int(p))]
        if not left or time.monotonic() > deadline:
            break
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        time.sleep(0.2)


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def library(project: Path) -> daemon.Library:
    return daemon.Library.of("claude-code", str(project), index_dir=str(project.parent / "index"))


def hook(project: Path, prompt: str, *options: str) -> subprocess.CompletedProcess[str]:
    payload = {"hook_event_name": "UserPromptSubmit", "prompt": prompt, "cwd": str(project), "session_id": "s"}
    return subprocess.run([sys.executable, "-m", "router.cli", "hook", "claude-code", "--index-dir",
                           str(project.parent / "index"), "--timeout", "5", *options], input=json.dumps(payload),
                          capture_output=True, text=True, timeout=60, cwd=str(project), env=dict(os.environ))


def test_a_library_is_named_by_its_profile_folder_and_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    one = daemon.Library.of("claude-code", str(tmp_path / "a"), skills=["s"])
    assert one.skills == (str(tmp_path / "a" / "s"),)
    assert one.key == daemon.Library.of("claude-code", str(tmp_path / "a" / "."), skills=[str(tmp_path / "a/s")]).key
    assert one.key != daemon.Library.of("claude-code", str(tmp_path / "b"), skills=["s"]).key
    assert one.key != daemon.Library.of("codex", str(tmp_path / "a"), skills=["s"]).key
    assert one.key.startswith("claude-code-") and len(one.key) == len("claude-code-") + 16
    # the folder every command uses for that library, so 'skill-router index' prepares what the hook reads
    from router.spec import LibrarySpec

    assert daemon.index_folder(one) == LibrarySpec.create([str(tmp_path / "a" / "s")], profile="claude-code",
                                                          cwd=str(tmp_path / "a")).index_folder


@pytest.mark.parametrize(("text", "seconds"), [("30m", 1800.0), ("90s", 90.0), ("2h", 7200.0), ("45", 45.0)])
def test_idle_times_read_with_units(text: str, seconds: float) -> None:
    assert duration(text) == seconds


@pytest.mark.parametrize("text", ["0", "-5m", "soon", "m"])
def test_a_time_that_cannot_work_is_refused(text: str) -> None:
    import argparse

    with pytest.raises(argparse.ArgumentTypeError, match="a time must be above 0"):
        duration(text)


@pytest.mark.model
def test_hooks_fired_at_once_start_exactly_one_server_that_later_prompts_use(world: Path, onnx: object) -> None:
    done: list[subprocess.CompletedProcess[str]] = []
    threads = [threading.Thread(target=lambda: done.append(hook(world, "will it rain in Lyon this weekend?")))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [d.returncode for d in done] == [0, 0, 0, 0]
    [(path, state)] = daemon.states()
    assert path == daemon.state_file(library(world)) and daemon.alive(state.pid)
    servers = [p for p in os.listdir("/proc") if p.isdigit() and daemon.alive(int(p))
               and daemon.state_file(library(world)).encode() in Path(f"/proc/{p}/cmdline").read_bytes()]
    assert servers == [str(state.pid)]
    ready = daemon.wait_ready(library(world), 60)
    assert ready is not None and ready.port and ready.version == daemon.version()
    answered = hook(world, "will it rain in Lyon this weekend?", "--no-fallback")  # only the server can answer this one
    assert answered.stdout, answered.stderr + Path(daemon.log_file(library(world))).read_text()
    context = json.loads(answered.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.splitlines()[0] == HEADER
    assert context.splitlines()[1].startswith("- weather-forecast: Give the weather forecast for a place over")
    stopped = daemon.stop_all()
    assert [s.pid for s in stopped] == [state.pid] and not daemon.alive(state.pid) and daemon.states() == []
    after = hook(world, "will it rain in Lyon this weekend?", "--no-fallback")
    assert after.stdout == "" and "no warm server was running (started one: pid" in after.stderr
    [(_, again)] = daemon.states()
    assert again.pid != state.pid and daemon.wait_ready(library(world), 60) is not None


@pytest.mark.model
def test_an_auto_started_server_wants_the_token_and_listens_on_loopback_only(world: Path, onnx: object) -> None:
    state, started = daemon.start(library(world))
    assert started and state is not None
    ready = daemon.wait_ready(library(world), 60)
    assert ready is not None and ready.host == "127.0.0.1"
    token_file = Path(daemon.token_file())
    assert token_file.stat().st_mode & 0o777 == 0o600 and len(daemon.read_token(str(token_file)) or "") == 64
    body = {"hook_event_name": "UserPromptSubmit", "prompt": "write a commit message", "session_id": "s"}
    url = f"{ready.url}/v1/hooks/claude-code"
    assert httpx.post(url, json=body).status_code == 401
    assert httpx.post(url, json=body, headers={"Authorization": "Bearer wrong"}).status_code == 401
    good = httpx.post(url, json=body, headers=daemon.auth_headers(ready))
    assert good.status_code == 200 and "git-commit-messages" in good.json()["hookSpecificOutput"]["additionalContext"]


def test_a_stale_state_file_is_replaced(world: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    lib = library(world)
    daemon.write_state(daemon.state_file(lib), daemon.State(pid=gone.pid, port=1, token_file=None, key=lib.key,
                                                            version=daemon.version(), started=0.0))
    assert daemon.live_state(lib) is None
    state, started = daemon.start(lib)
    assert started and state is not None and state.pid != gone.pid and daemon.alive(state.pid)
    assert daemon.read_state(daemon.state_file(lib)).pid == state.pid  # type: ignore[union-attr]
    # a server of another version is stopped and replaced
    daemon.write_state(daemon.state_file(lib), daemon.State(pid=state.pid, port=None, token_file=None, key=lib.key,
                                                            version="0.0.0-old", started=0.0))
    newer, started = daemon.start(lib)
    assert started and newer is not None and newer.pid != state.pid and not daemon.alive(state.pid)


def test_a_hook_that_finds_the_lock_taken_starts_nothing(world: Path) -> None:
    import fcntl

    lib = library(world)
    os.makedirs(daemon.run_folder(), exist_ok=True)
    with open(os.path.join(daemon.run_folder(), f"{lib.key}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert daemon.start(lib) == (None, False)
    assert daemon.states() == []


@pytest.mark.model
def test_an_idle_server_exits_and_removes_its_state(world: Path, onnx: object) -> None:
    lib = library(world)
    state, _ = daemon.start(lib, idle_exit_s=2)
    assert state is not None and daemon.wait_ready(lib, 60) is not None
    deadline = time.monotonic() + 30
    while daemon.alive(state.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not daemon.alive(state.pid) and daemon.states() == []
    assert "no request for 2 s: stopping" in Path(daemon.log_file(lib)).read_text()


def test_each_failure_is_one_line_in_the_log_doctor_reads(world: Path) -> None:
    done = hook(world, "route me", "--no-start", "--no-fallback")
    assert done.returncode == 0 and done.stdout == ""
    [failure] = daemon.failures()
    assert failure["harness"] == "claude-code" and failure["message"] == "no warm server was running"
    for n in range(daemon.MAX_FAILURES + 50):
        daemon.record_failure("codex", f"failure {n}")
    assert len(Path(daemon.failure_log()).read_text().splitlines()) == daemon.MAX_FAILURES
    assert [f["message"] for f in daemon.failures(2)] == [f"failure {daemon.MAX_FAILURES + 48}",
                                                          f"failure {daemon.MAX_FAILURES + 49}"]


#: Everything of skill-router a prompt answered by the warm server imports: the state file, the token and one HTTP
#: request need nothing else (the profiles, YAML, numpy and the package metadata stay unloaded).
WARM_MODULES = ["router", "router.cli", "router.daemon", "router.errors", "router.files", "router.safetext",
                "router.serve", "router.serve.hooks", "router.version"]


@pytest.mark.model
def test_a_prompt_the_warm_server_answers_imports_only_the_standard_library_and_the_hook(
        world: Path, onnx: object) -> None:
    lib = library(world)
    daemon.start(lib)
    assert daemon.wait_ready(lib, 60) is not None
    payload = {"hook_event_name": "UserPromptSubmit", "prompt": "will it rain in Lyon this weekend?",
               "cwd": str(world)}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "router.cli", "hook", "claude-code",
                           "--index-dir", str(world.parent / "index"), "--no-fallback", "--timeout", "10"],
                          input=json.dumps(payload), capture_output=True, text=True, timeout=60, cwd=str(world))
    assert done.returncode == 0
    assert "- weather-forecast: " in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    lines = done.stderr.splitlines()
    assert [line for line in lines if not line.startswith("import time:")] == []  # no failure was reported
    modules = sorted(line.rsplit("|", 1)[-1].strip() for line in lines[1:])
    assert [m for m in modules if m.split(".")[0] in ("router", "indexes")] == WARM_MODULES
    assert [m for m in ("numpy", "yaml", "scipy", "onnxruntime", "importlib.metadata", "dataclasses", "inspect",
                        "subprocess", "hashlib") if m in modules] == []


def test_the_version_read_from_the_dist_info_name_is_the_metadata_version(tmp_path: Path) -> None:
    from importlib.metadata import version

    from router.version import dist_info_version

    from router.version import package_version

    # the installed .dist-info names the metadata's version; an .egg-info first on the path (an editable install's
    # source tree) is left to importlib.metadata
    assert dist_info_version() in (None, version("skill-router")) and package_version() == version("skill-router")
    (tmp_path / "a").mkdir()
    (tmp_path / "b" / "skill_router-9.8.7.dist-info").mkdir(parents=True)
    (tmp_path / "b" / "skill_router-9.8.7.dist-info" / "METADATA").write_text("Version: 9.8.7\n")
    (tmp_path / "c" / "Skill_Router-1.0.dist-info").mkdir(parents=True)
    assert dist_info_version([str(tmp_path / "missing"), str(tmp_path / "a"), str(tmp_path / "b")]) == "9.8.7"
    # a folder without METADATA, or an egg, is left to importlib.metadata
    assert dist_info_version([str(tmp_path / "c"), str(tmp_path / "b")]) is None
    assert dist_info_version([str(tmp_path / "a")]) is None


@pytest.mark.model
def test_with_no_server_a_hook_never_runs_past_its_budget_even_when_the_interpreter_starts_slowly(
        world: Path, onnx: object, tmp_path: Path) -> None:
    built = subprocess.run([sys.executable, "-m", "router.cli", "index", "--profile", "claude-code", "--index-dir",
                            str(world.parent / "index")], cwd=str(world), capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    slow = tmp_path / "slow"  # a busy machine: 0.6 s pass before the hook's first line runs
    slow.mkdir()
    (slow / "sitecustomize.py").write_text("import time\ntime.sleep(0.6)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(slow), os.environ.get("PYTHONPATH", "")])}
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "will it rain in Lyon this weekend?",
                          "cwd": str(world)})
    budget = 1.5

    def timed_hook(*options: str, budget: float = budget) -> tuple[float, subprocess.CompletedProcess[str]]:
        start = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "router.cli", "hook", "claude-code", "--index-dir",
                               str(world.parent / "index"), "--timeout", f"{budget}", *options], input=payload,
                              capture_output=True, text=True, timeout=60, cwd=str(world), env=env)
        return time.monotonic() - start, done

    seconds, done = timed_hook()
    assert done.returncode == 0 and seconds < budget, (seconds, done.stderr)
    assert done.stdout == "" or "- weather-forecast: " in done.stdout
    # the server it started keeps starting after the hook left, and answers the prompt after
    [(_, state)] = daemon.states()
    assert daemon.wait_ready(library(world), 60) is not None and daemon.alive(state.pid)
    daemon.stop_all()
    # an in-process answer known to take longer than what is left is not tried: nothing, at once
    daemon.record_in_process(library(world), 50.0)
    seconds, done = timed_hook("--no-start", budget=5.0)  # room for a busy machine to read the input
    assert done.stdout == "" and seconds < 5.0
    assert "routing in-process took 50.00 s last time, more than the " in done.stderr


@pytest.mark.model
def test_the_in_process_fallback_reads_a_skill_edited_since_the_library_was_kept(world: Path, onnx: object) -> None:
    built = subprocess.run([sys.executable, "-m", "router.cli", "index", "--profile", "claude-code", "--index-dir",
                            str(world.parent / "index")], cwd=str(world), capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    time.sleep(2.1)  # older than router.fresh.RACY_S: the library read now is kept
    first = hook(world, "will it rain in Lyon this weekend?", "--no-start", "--timeout", "60")
    assert "- weather-forecast: Give the weather forecast" in first.stdout, first.stderr
    assert (world.parent / "index" / "library.saved").is_file()
    skill = world / ".claude" / "skills" / "weather-forecast" / "SKILL.md"
    skill.write_text(skill.read_text().replace("Give the weather forecast", "Forecast rain and sun"))
    after = hook(world, "will it rain in Lyon this weekend?", "--no-start", "--timeout", "60")
    assert "- weather-forecast: Forecast rain and sun" in after.stdout, after.stderr
