"""The command-line contract: every user error, of every command, is one line on stderr and exit status 2.

Each command is run with each kind of bad option and bad file it can be given: an unknown option, an option the
command does not take, a bad option value, a skills folder that is missing or is a file, a catalogue, config or
requests file that is missing, a folder, not UTF-8, not JSON or YAML, nested too deeply, or holds a bad value.
No case may print a Python traceback. Most run in-process; a representative subset runs as a real process,
where nothing (a logging handler, an unflushed buffer) can hide extra output.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from router.cli import build_parser, main

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = ("list", "prompt", "use", "lint", "index", "route", "learn", "eval", "overlap", "tune")
ROUTER_COMMANDS = ("prompt", "index", "route", "learn", "eval", "overlap", "tune")
QUERY_COMMANDS = ("route", "learn", "eval", "overlap", "tune")
DEEP = "[" * 600 + "]" * 600


def make_files(base: Path) -> dict[str, Path]:
    """A small library and one file of every bad kind, under ``base``."""
    skills = base / "skills"
    for name in ("alpha", "beta", "gamma"):
        (skills / name).mkdir(parents=True)
        (skills / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Skill {name}.\n---\n",
                                                encoding="utf-8")
    files = {"skills": skills, "missing": base / "missing", "folder": base / "a-folder"}
    files["folder"].mkdir()
    contents: dict[str, bytes] = {
        "afile": b"plain text\n",
        "latin1.jsonl": '{"id": "a", "query": "caf\u00e9", "gold": []}\n'.encode("latin-1"),
        "notjson.jsonl": b'{"id": "a", "query": "ok", "gold": []}\n{not json\n',
        "nogold.jsonl": b'{"id": "a", "query": "ok"}\n',
        "badgold.jsonl": b'{"id": "a", "query": "ok", "gold": "alpha"}\n',
        "unknowngold.jsonl": b'{"id": "a", "query": "ok", "gold": ["nope"]}\n',
        "deep.yaml": f"- id: a\n  query: ok\n  gold: {DEEP}\n".encode(),
        "badcatalog.jsonl": b'{"id": 3, "name": "x"}\n',
        "latin1.json": b'{"model": "caf\xe9"}',
        "notjson.json": b"{k: 3",
        "badvalue.json": b'{"k": 0}',
        "infinite.json": b'{"weights": {"bm25": 1e999}}',
        "unknownkey.json": b'{"fusoin": "rrf"}',
        "list.json": b"[1, 2]",
    }
    for name, data in contents.items():
        files[name] = base / name
        files[name].write_bytes(data)
    return files


Case = tuple[str, Callable[[dict[str, Path]], list[str]]]


def _needs(command: str) -> list[str]:
    """The arguments a command needs besides the library, so that only the bad part is bad."""
    return {"use": ["alpha"], "prompt": ["hello"], "route": ["hello"]}.get(command, [])


def _queries(command: str, path: str) -> list[str]:
    return ["--queries", path] if command in QUERY_COMMANDS else []


def _cases() -> list[tuple[str, str, Case]]:
    cases: list[tuple[str, str, Case]] = []

    def add(command: str, kind: str, argv: Callable[[dict[str, Path]], list[str]]) -> None:
        cases.append((command, kind, (command, argv)))

    for command in COMMANDS:
        add(command, "unknown option", lambda f, c=command: [c, "--nope", *_needs(c), "--skills", str(f["skills"])])
        add(command, "missing skills folder", lambda f, c=command: [c, *_needs(c), "--skills", str(f["missing"]),
                                                                     *_queries(c, "{good}")])
        add(command, "skills is a file", lambda f, c=command: [c, *_needs(c), "--skills", str(f["afile"]),
                                                                *_queries(c, "{good}")])
        add(command, "unknown profile", lambda f, c=command: [c, *_needs(c), "--profile", "nosuch"])
        if command != "lint":
            for bad in ("missing", "folder", "latin1.jsonl", "notjson.jsonl", "badcatalog.jsonl"):
                add(command, f"catalog {bad}", lambda f, c=command, b=bad: [c, *_needs(c), "--catalog", str(f[b]),
                                                                           *_queries(c, "{good}")])
            add(command, "skills and catalog", lambda f, c=command: [c, *_needs(c), "--skills", str(f["skills"]),
                                                                      "--catalog", str(f["notjson.jsonl"])])
        else:
            add(command, "confine not taken", lambda f: ["lint", "--confine", "--skills", str(f["skills"])])
            add(command, "catalog not taken", lambda f: ["lint", "--catalog", str(f["notjson.jsonl"])])
        if command in ROUTER_COMMANDS:
            for bad in ("missing", "folder", "latin1.json", "notjson.json", "badvalue.json", "infinite.json",
                        "unknownkey.json", "list.json"):
                add(command, f"config {bad}", lambda f, c=command, b=bad: [c, *_needs(c), "--skills",
                                                                          str(f["skills"]), "--config", str(f[b]),
                                                                          *_queries(c, "{good}")])
        else:
            for option in ("--config", "--model", "--index-dir"):
                add(command, f"{option} not taken", lambda f, c=command, o=option: [
                    c, *_needs(c), "--skills", str(f["skills"]), o, str(f["afile"])])
        if command in QUERY_COMMANDS:
            for bad in ("missing", "folder", "latin1.jsonl", "notjson.jsonl", "deep.yaml"):
                add(command, f"queries {bad}", lambda f, c=command, b=bad: [c, "--skills", str(f["skills"]),
                                                                           "--queries", str(f[b])])
        if command in ("learn", "eval", "tune"):  # the commands that read gold labels
            for bad in ("nogold.jsonl", "unknowngold.jsonl", "badgold.jsonl"):
                add(command, f"queries {bad}", lambda f, c=command, b=bad: [c, "--skills", str(f["skills"]),
                                                                           "--queries", str(f[b])])
    for command in ("prompt", "route", "eval"):
        for value in ("0", "-1", "x"):
            add(command, f"-k {value}", lambda f, c=command, v=value: [c, *_needs(c), "-k", v, "--skills",
                                                                      str(f["skills"]), *_queries(c, "{good}")])
    add("route", "empty request", lambda f: ["route", " ", "--skills", str(f["skills"])])
    add("prompt", "empty request", lambda f: ["prompt", "", "--skills", str(f["skills"])])
    add("route", "request and --queries", lambda f: ["route", "hi", "--queries", "{good}", "--skills",
                                                     str(f["skills"])])
    add("prompt", "unknown pin", lambda f: ["prompt", "--pin", "ghost", "--skills", str(f["skills"])])
    add("route", "unknown exclude", lambda f: ["route", "hi", "--exclude", "ghost", "--skills", str(f["skills"])])
    add("use", "no name", lambda f: ["use", "--skills", str(f["skills"])])
    add("learn", "no --queries", lambda f: ["learn", "--skills", str(f["skills"])])
    add("eval", "unknown retriever", lambda f: ["eval", "--queries", "{good}", "--retrievers", "bm25,magic",
                                                "--skills", str(f["skills"])])
    add("eval", "compare without colon", lambda f: ["eval", "--queries", "{good}", "--compare", "bm25",
                                                    "--skills", str(f["skills"])])
    add("eval", "compare unknown", lambda f: ["eval", "--queries", "{good}", "--compare", "x:y", "--skills",
                                              str(f["skills"])])
    add("eval", "malformed gate", lambda f: ["eval", "--queries", "{good}", "--fail-under", "recall@5",
                                             "--skills", str(f["skills"])])
    add("eval", "gate above 1", lambda f: ["eval", "--queries", "{good}", "--fail-under", "recall@5=80",
                                           "--skills", str(f["skills"])])
    add("eval", "seed not a number", lambda f: ["eval", "--queries", "{good}", "--seed", "x", "--skills",
                                                str(f["skills"])])
    add("overlap", "top 0", lambda f: ["overlap", "--top", "0", "--skills", str(f["skills"])])
    add("overlap", "fail-above inf", lambda f: ["overlap", "--fail-above", "inf", "--skills", str(f["skills"])])
    add("tune", "folds 1", lambda f: ["tune", "--queries", "{good}", "--folds", "1", "--skills",
                                      str(f["skills"])])
    add("tune", "objective unknown", lambda f: ["tune", "--queries", "{good}", "--objective", "f1", "--skills",
                                                str(f["skills"])])
    add("tune", "output is a folder", lambda f: ["tune", "--queries", "{good}", "-o", str(f["folder"]),
                                                 "--skills", str(f["skills"])])
    add("tune", "output folder missing", lambda f: ["tune", "--queries", "{good}", "-o",
                                                    str(f["missing"] / "x.json"), "--skills", str(f["skills"])])
    return cases


CASES = _cases()


def _argv(case: Case, files: dict[str, Path], good: Path) -> list[str]:
    return [arg.replace("{good}", str(good)) for arg in case[1](files)]


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Path], Path]:
    monkeypatch.chdir(tmp_path)
    made = make_files(tmp_path)
    good = tmp_path / "good.jsonl"
    good.write_text('{"id": "q1", "query": "skill alpha please", "gold": ["alpha"]}\n'
                    '{"id": "q2", "query": "skill beta please", "gold": ["beta"]}\n', encoding="utf-8")
    return made, good


# The long-running commands: their bad options and files fail before anything listens. ``hook`` is not here on
# purpose: a hook never fails a prompt, so its every failure is exit 0 with one stderr line (test_serve_hooks.py).
SERVICE_CASES = [
    ("serve", "unknown option", lambda f: ["serve", "--skills", str(f["skills"]), "--bogus"]),
    ("serve", "bad port", lambda f: ["serve", "--skills", str(f["skills"]), "--port", "eighty"]),
    ("serve", "skills missing", lambda f: ["serve", "--skills", str(f["missing"]), "--port", "0", "--exit-after",
                                           "1"]),
    ("serve", "config not JSON", lambda f: ["serve", "--skills", str(f["skills"]), "--config", str(f["notjson.json"]),
                                            "--port", "0", "--exit-after", "1"]),
    ("mcp", "unknown option", lambda f: ["mcp", "--skills", str(f["skills"]), "--bogus"]),
    ("mcp", "skills is a file", lambda f: ["mcp", "--skills", str(f["afile"])]),
    ("serve", "bad idle time", lambda f: ["serve", "--skills", str(f["skills"]), "--idle-exit", "soon"]),
    ("stop", "unknown option", lambda f: ["stop", "--bogus"]),
    ("setup", "unknown harness", lambda f: ["setup", "cursor"]),
    ("doctor", "unknown profile", lambda f: ["doctor", "--profile", "cursor"]),
]


def test_every_command_is_covered() -> None:
    assert {command for command, _, _ in CASES} == set(COMMANDS)
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command")
    assert set(commands.choices) == set(COMMANDS) | {c for c, _, _ in SERVICE_CASES} | {"hook"}


@pytest.mark.parametrize(("command", "kind", "case"), SERVICE_CASES, ids=[f"{c}-{k}" for c, k, _ in SERVICE_CASES])
def test_service_commands_refuse_bad_input_in_one_line(files, capsys, command: str, kind: str, case) -> None:
    made, _ = files
    try:
        status = main(case(made))
    except SystemExit as exc:
        status = exc.code
    out, err = capsys.readouterr()
    assert status == 2 and out == "" and "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"skill-router {command}: error: "), err


@pytest.mark.parametrize(("command", "kind", "case"), CASES, ids=[f"{c}-{k}" for c, k, _ in CASES])
def test_user_error_is_one_line_and_exit_2(files, capsys, command: str, kind: str, case: Case) -> None:
    made, good = files
    argv = _argv(case, made, good)
    try:
        status = main(argv)
    except SystemExit as exc:
        status = exc.code
    out, err = capsys.readouterr()
    assert status == 2, (argv, out, err)
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, (argv, err)
    assert lines[0].startswith(f"skill-router {command}: error: "), lines[0]
    assert out == ""


SUBPROCESS = ["list-unknown option", "lint-catalog not taken", "route-config latin1.json", "eval-queries deep.yaml",
              "tune-output is a folder", "use-catalog notjson.jsonl", "learn-queries nogold.jsonl",
              "overlap-top 0", "index-skills is a file", "prompt-config infinite.json"]


@pytest.mark.parametrize("name", SUBPROCESS)
def test_user_error_in_a_real_process(files, tmp_path: Path, name: str) -> None:
    made, good = files
    case = next(case for command, kind, case in CASES if f"{command}-{kind}" == name)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "router.cli", *_argv(case, made, good)], capture_output=True,
                          text=True, timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stdout == ""


def test_every_option_has_help() -> None:
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command")
    for name, sub in commands.choices.items():
        for action in sub._actions:
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"
            if "-k" in action.option_strings:
                assert "(default 5)" not in action.help and "from the config" in action.help  # not hard-coded


def test_library_commands_take_no_router_options() -> None:
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command")
    for name in ("list", "use", "lint"):
        options = {o for a in commands.choices[name]._actions for o in a.option_strings}
        assert not options & {"--config", "--model", "--index-dir"}, name
    lint_options = {o for a in commands.choices["lint"]._actions for o in a.option_strings}
    assert not lint_options & {"--catalog", "--confine"}  # --profile only says where to look
    for name in ROUTER_COMMANDS:
        options = {o for a in commands.choices[name]._actions for o in a.option_strings}
        assert {"--config", "--model", "--index-dir", "--skills", "--catalog", "--profile"} <= options, name
