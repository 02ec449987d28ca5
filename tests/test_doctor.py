"""``skill-router doctor``: each broken step of the hook's chain is named with the command that fixes it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Iterator

import pytest

from router import daemon
from router.cli import doctor, setup
from serve_support import copy_bundled


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    (tmp_path / "home").mkdir()
    project = tmp_path / "project"
    copy_bundled(project / ".claude" / "skills")
    monkeypatch.chdir(project)
    yield project
    daemon.stop_all()  # the servers a sample prompt started


def test_a_missing_hook_index_and_server_are_each_named_with_their_fix(project: Path) -> None:
    library = daemon.Library.of("claude-code", str(project))
    assert doctor._skills(library, "skill-router setup claude-code") == doctor.Step("skills", True, "52 skills",
                                                                                     "skill-router lint --profile "
                                                                                     "claude-code")
    index = doctor._index(library, daemon.index_folder(library), "skill-router setup claude-code")
    assert not index.ok and index.fix == "skill-router setup claude-code"
    assert index.found.startswith(f"not built ({daemon.index_folder(library)} has no manifest.json)")
    server = doctor._server(library, "claude-code")
    assert server == doctor.Step("server", False, "none runs; the next prompt starts one but gets nothing itself",
                                 'skill-router route --daemon --profile claude-code "test"')
    gone = daemon.State(pid=2 ** 22 + 7, port=1, token_file=None, key=library.key, version=daemon.version(),
                        started=0.0)
    daemon.write_state(daemon.state_file(library), gone)
    assert doctor._server(library, "claude-code").found.startswith("its state file names a process that is gone")
    hook = doctor._hook("claude-code", project, "skill-router setup claude-code")
    assert not hook.ok and hook.fix == "skill-router setup claude-code"
    assert hook.found.startswith("no skill-router UserPromptSubmit hook in ")


def test_the_hook_setup_wrote_is_found_and_a_moved_executable_is_not(project: Path, capsys) -> None:
    from cli_support import run

    assert run(capsys, "setup", "claude-code", "--settings-only")[0] == 0
    settings = Path.home() / ".claude" / "settings.json"
    found = doctor._hook("claude-code", project, "skill-router setup claude-code")
    assert found == doctor.Step("hook", True, f"{settings}: {setup.hook_command('claude-code')}")
    moved = json.loads(settings.read_text())
    moved["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"] = "/nowhere/skill-router hook claude-code"
    settings.write_text(json.dumps(moved))
    broken = doctor._hook("claude-code", project, "skill-router setup claude-code")
    assert broken == doctor.Step("hook", False, f"{settings} runs /nowhere/skill-router, which does not exist",
                                 "skill-router setup claude-code")


def test_recent_hook_failures_fail_the_check_until_a_prompt_gets_its_context(project: Path) -> None:
    assert doctor._failures("claude-code", False).ok
    daemon.record_failure("claude-code", "no warm server was running")
    failing = doctor._failures("claude-code", False)
    assert not failing.ok and failing.found.startswith("1 recent, last 0 min ago: ")
    assert failing.found.endswith(": no warm server was running")
    assert doctor._failures("claude-code", True).ok
    assert doctor._failures("codex", False).ok


def test_doctor_exits_1_and_prints_each_failure_with_its_fix(project: Path) -> None:
    import subprocess

    done = subprocess.run([sys.executable, "-m", "router.cli", "doctor", "--json"], capture_output=True, text=True,
                          timeout=120, cwd=project, env={**__import__("os").environ, "SKILL_ROUTER_ONNX": "0"})
    assert done.returncode == 1
    report = json.loads(done.stdout)
    failed = {s["name"]: s["fix"] for s in report["steps"] if not s["ok"]}
    assert report["ok"] is False and set(failed) >= {"index", "server", "hook", "sample prompt"}
    assert failed["hook"] == "skill-router setup claude-code"


@pytest.mark.model
def test_the_export_step_says_what_embeds_requests(project: Path, encoder: object,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from indexes.onnx_encoder import INT8_DATA_FILE, INT8_MODEL_FILE, MANIFEST, export_dir
    from indexes.onnx_export import ensure_onnx_encoder

    library = daemon.Library.of("claude-code", str(project))
    folder = ensure_onnx_encoder(encoder).folder  # type: ignore[arg-type]
    assert folder == export_dir(None)
    assert doctor._export(library, "x") == doctor.Step("model export", True, f"{folder}, requests by its int8 copy")
    monkeypatch.setenv("SKILL_ROUTER_INT8", "0")
    assert doctor._export(library, "x").found == f"{folder}, requests by the float graph (SKILL_ROUTER_INT8=0)"
    monkeypatch.delenv("SKILL_ROUTER_INT8")
    for name in (INT8_MODEL_FILE, INT8_DATA_FILE):
        (folder / name).unlink()  # this test's own cache (XDG_CACHE_HOME)
    step = doctor._export(library, "x")
    assert step.ok and step.found == (f"{folder}, requests by the float graph (no int8 copy yet: 'skill-router "
                                      "setup' or the next index build makes it)")
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    manifest["int8"] = {"passed": False, "min_cosine": 0.91}
    (folder / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    assert doctor._export(library, "x").found == (f"{folder}, requests by the float graph (its int8 copy failed "
                                                  "its check: cosine 0.91)")
