"""Progress of long steps: nothing unless stderr is a terminal; on one, rich rows, a line per step over a second,
and a one-line note before a first build; stdout stays byte-clean either way."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from router import progress

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Terminal(io.StringIO):
    """A stream that says it is a terminal, so rich draws on it."""

    def isatty(self) -> bool:
        return True


def shown(stream: io.StringIO) -> str:
    """What a terminal keeps on screen, roughly: escape codes dropped, carriage returns as line ends."""
    return ANSI.sub("", stream.getvalue()).replace("\r", "\n")


def test_steps_are_silent_without_a_terminal() -> None:
    stream = io.StringIO()
    with progress.on_terminal(stream):
        assert not progress.active()
        with progress.step("embedding 3 texts", total=3) as advance:
            advance(3)
        assert list(progress.track([1, 2], "two")) == [1, 2]
        progress.note("first build")
    assert stream.getvalue() == ""
    assert not progress.active()


def test_steps_draw_on_a_terminal_and_leave_a_line_when_long(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "KEEP_AFTER_SECONDS", 0.0)  # every step counts as long
    stream = Terminal()
    with progress.on_terminal(stream):
        assert progress.active()
        progress.note("first build of the index of 3 skills: each skill is embedded once")
        with progress.step("building the index of 3 skills"):
            with progress.step("embedding 3 texts", total=3) as advance:
                advance(2)
                advance(1)
        assert [x for x in progress.track(["a"], "scoring [1] request")] == ["a"]
    assert not progress.active()
    lines = [line.strip() for line in shown(stream).split("\n") if line.strip()]
    assert lines[0] == "note: first build of the index of 3 skills: each skill is embedded once"
    assert re.fullmatch(r"done: embedding 3 texts \(0\.\d s\)", next(x for x in lines if "done: embedding" in x))
    assert any(re.fullmatch(r"done: building the index of 3 skills \(0\.\d s\)", x) for x in lines)
    assert any(re.fullmatch(r"done: scoring \[1\] request \(0\.\d s\)", x) for x in lines)  # markup is text
    assert "0/3" in shown(stream)  # the count column of a step with a total


def test_a_short_step_leaves_nothing_behind() -> None:
    stream = Terminal()
    with progress.on_terminal(stream):
        with progress.step("quick"):
            pass
    assert "done:" not in shown(stream)


def _library(root: Path) -> Path:
    for name, text in {"weather-forecast": "Forecast rain and temperature for the coming days.",
                       "git-commit": "Write a conventional commit message from a staged diff.",
                       "sql-query": "Write and optimise SQL queries for PostgreSQL."}.items():
        (root / name).mkdir(parents=True)
        (root / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {text}\n---\n{text}\n")
    return root


def test_index_on_a_terminal_shows_the_first_build_and_keeps_stdout_clean(tmp_path: Path, encoder) -> None:
    library = _library(tmp_path / "skills")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "100"}

    def index(stderr_on_terminal: bool) -> tuple[str, str]:
        argv = [sys.executable, "-m", "router.cli", "index", "--skills", str(library), "--index-dir",
                str(tmp_path / f"idx-{stderr_on_terminal}"), "--json"]
        if not stderr_on_terminal:
            done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
            return done.stdout, done.stderr
        leader, follower = pty.openpty()
        with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=follower, env=env) as child:
            os.close(follower)
            err = b""
            while True:
                try:
                    chunk = os.read(leader, 4096)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                err += chunk
            out = child.stdout.read() if child.stdout else b""
            child.wait(timeout=120)
        os.close(leader)
        return out.decode(), err.decode("utf-8", "replace")

    out, err = index(True)
    summary = json.loads(out)  # stdout is exactly the JSON document
    assert summary["skills"] == 3 and summary["embedded"] == 3
    screen = ANSI.sub("", err).replace("\r", "\n")
    assert "note: first build of the index of 3 skills: each skill is embedded once" in screen
    assert "building the index of 3 skills" in screen
    out, err = index(False)
    assert json.loads(out)["skills"] == 3
    assert "\x1b" not in err and "building the index" not in err and "first build" not in err


def test_worker_threads_of_a_watched_command_draw_nothing() -> None:
    import contextvars
    import threading

    stream = Terminal()
    seen = []
    with progress.on_terminal(stream):
        context = contextvars.copy_context()  # what asyncio's run_in_executor hands a server's worker thread

        def work() -> None:
            seen.append(progress.active())
            with progress.step("embedding 64 texts", total=64) as advance:
                advance(64)
            progress.note("from a worker")

        worker = threading.Thread(target=context.run, args=(work,))
        worker.start()
        worker.join()
        assert progress.active()
    assert seen == [False] and stream.getvalue() == ""
