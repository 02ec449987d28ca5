"""Through the real Claude Code: ``skill-router setup claude-code`` in a fresh HOME, and the next ``claude -p``
carries the routed context; ``setup --remove`` then gives back the settings file byte for byte."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

import oracle_claude
from router import daemon
from serve_support import copy_bundled

HEADER = "Skills most relevant to this request (skill-router):"
SETTINGS = b'{"model": "sonnet",\n "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}\n'


@pytest.fixture(scope="module")
def binary() -> Path:
    try:
        return oracle_claude.install()
    except pytest.fail.Exception as exc:  # no npm or no registry: nothing to run the check against
        pytest.skip(f"Claude Code {oracle_claude.HARNESS_VERSION} cannot be installed: {exc}")


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path, dict[str, str]]]:
    home, project = tmp_path / "home", tmp_path / "project"
    copy_bundled(project / ".claude" / "skills")
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_bytes(SETTINGS)
    # what the harness gives its hooks: the run's own HOME and XDG folders (run_claude), and this checkout
    env = {"HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"), "XDG_RUNTIME_DIR": str(tmp_path / "run"),
           "PYTHONPATH": os.pathsep.join(p for p in (str(Path(__file__).resolve().parents[1]),
                                                     os.environ.get("PYTHONPATH")) if p)}
    (tmp_path / "run").mkdir()
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    yield home, project, env
    daemon.stop_all()


@pytest.mark.model
def test_setup_then_claude_p_carries_the_routed_context(binary: Path, fresh: tuple[Path, Path, dict[str, str]]
                                                        ) -> None:
    home, project, env = fresh
    done = subprocess.run([sys.executable, "-m", "router.cli", "setup", "claude-code"], cwd=project,
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "indexed 52 skills" in done.stdout and "through the warm server" in done.stdout
    run = oracle_claude.run_claude(binary, home, project, "will it rain in Lyon this weekend?",
                                   env={k: env[k] for k in ("PYTHONPATH", "XDG_RUNTIME_DIR")})
    sent = json.dumps(run.main_requests[0])
    assert HEADER in sent and "weather-forecast" in sent
    assert "UserPromptSubmit [" in run.debug and "finished with status 0" in run.debug
    removed = subprocess.run([sys.executable, "-m", "router.cli", "setup", "claude-code", "--remove"],
                             cwd=project, env={**os.environ, **env}, capture_output=True, text=True, timeout=60)
    assert "restored from its backup, byte for byte" in removed.stdout
    assert (home / ".claude" / "settings.json").read_bytes() == SETTINGS
