"""The same request against the same library gets the same shortlist everywhere: the warm server the hook asks,
the hook's in-process fallback, ``route`` (in-process and ``--daemon``) and ``prompt``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from router import daemon
from router.cli import setup
from serve_support import copy_bundled

REQUESTS = ["review my go code for bugs before I commit", "will it rain in Lyon this weekend?",
            "turn these meeting notes into action items"]


@pytest.fixture(scope="module")
def onnx(encoder: object) -> object:
    from indexes.onnx_export import ensure_onnx_encoder

    return ensure_onnx_encoder(encoder)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, onnx: object) -> Iterator[Path]:
    monkeypatch.setenv("XDG_CACHE_HOME", os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.delenv("SKILL_ROUTER_URL", raising=False)
    (tmp_path / "home").mkdir()
    project = tmp_path / "project"
    copy_bundled(project / ".claude" / "skills")
    monkeypatch.chdir(project)
    yield project
    daemon.stop_all()


def cli(project: Path, *argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "router.cli", *argv], input=stdin, capture_output=True, text=True,
                          timeout=120, cwd=project, env=dict(os.environ))


def hook_names(project: Path, prompt: str, *options: str) -> list[str]:
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": prompt, "cwd": str(project)})
    done = cli(project, "hook", "claude-code", "--timeout", "30", *options, stdin=payload)
    assert done.stdout, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    return [line[2:].split(":", 1)[0] for line in context.splitlines()[1:]]


@pytest.mark.model
def test_server_fallback_route_and_prompt_give_one_shortlist(project: Path) -> None:
    library = daemon.Library.of("claude-code", str(project))
    setup.index_library(library)
    index = ["--index-dir", daemon.index_folder(library)]
    fallback = {r: hook_names(project, r, "--no-start") for r in REQUESTS}  # no server: in-process
    route = {r: [m["name"] for m in json.loads(cli(project, "route", r, "--profile", "claude-code", *index,
                                                   "--json").stdout)] for r in REQUESTS}
    prompt = {r: json.loads(cli(project, "prompt", r, "--profile", "claude-code", *index, "--json").stdout)["shown"]
              for r in REQUESTS}
    daemon.start(library)
    assert daemon.wait_ready(library, 120) is not None
    server = {r: hook_names(project, r, "--no-fallback") for r in REQUESTS}
    by_daemon = {r: [m["name"] for m in json.loads(cli(project, "route", "--daemon", r, "--profile", "claude-code",
                                                       "--json").stdout)] for r in REQUESTS}
    for request in REQUESTS:
        assert len(server[request]) == 5
        assert fallback[request] == server[request] == route[request] == by_daemon[request], request
        assert sorted(prompt[request]) == sorted(server[request]), request  # the catalogue lists in its own order
