"""Prompt hooks: the exact context text for Claude Code and Codex, the server endpoints, and the command's
promise never to break a prompt (exit 0, no output and one stderr line on any failure, within its budget)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from router.config import RouterConfig
from router.routing import Match, Routing
from router.serve import hooks
from router.skill import Skill
from serve_support import copy_bundled, running, write_skill

SCRIPT = Path(sys.executable).parent / "skill-router"
HEADER = "Skills most relevant to this request (skill-router):"

# The documented stdin of each harness (harness-profiles.md, claude-code and codex sections).
CLAUDE_STDIN = {"session_id": "abc123", "prompt_id": "p1", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp",
                "permission_mode": "default", "effort": "medium", "hook_event_name": "UserPromptSubmit",
                "prompt": "what will the weather be like tomorrow in Lyon?"}
CODEX_STDIN = {"session_id": "s-1", "turn_id": "t-1", "transcript_path": None, "cwd": "/tmp",
               "hook_event_name": "UserPromptSubmit", "model": "gpt-5", "permission_mode": "default",
               "prompt": "write a commit message for this diff"}


def skill(name: str, description: str, path: str = "", **metadata: object) -> Skill:
    return Skill(name=name, description=description, path=path, metadata=metadata)


# -- the text -----------------------------------------------------------------------------------------------------
def test_claude_code_context_is_the_spec_format_best_first() -> None:
    skills = [skill("weather-forecast", "Give the forecast. Use when asked about tomorrow."),
              skill("current-weather", "Report the weather now.")]
    assert hooks.hook_context("claude-code", skills) == (
        "Skills most relevant to this request (skill-router):\n"
        "- weather-forecast: Give the forecast. Use when asked about tomorrow.\n"
        "- current-weather: Report the weather now.")


def test_codex_context_lists_paths(tmp_path: Path) -> None:
    path = str(write_skill(tmp_path / "lib", "git-commit-messages", "Write commit messages."))
    skills = [skill("git-commit-messages", "Write commit messages.", path), skill("empty", "", path)]
    assert hooks.hook_context("codex", skills) == (
        "Skills most relevant to this request (skill-router):\n"
        f"- git-commit-messages: Write commit messages. (file: {path})\n"
        f"- empty: (file: {path})")


def test_claude_code_cuts_descriptions_at_250_and_drops_uninvocable_skills() -> None:
    long = "word " * 100
    skills = [skill("hidden", "Never named.", **{"disable-model-invocation": True}), skill("long", long)]
    text = hooks.hook_context("claude-code", skills)
    assert text == f"{HEADER}\n- long: {long[:250]}"


def test_at_most_five_skills_and_2000_characters() -> None:
    many = [skill(f"s{i}", f"short {i}") for i in range(9)]
    assert hooks.hook_context("claude-code", many).count("\n- ") == 5
    wide = [skill(f"w{i}", "x" * 1000) for i in range(5)]  # codex keeps whole descriptions: two lines would not fit
    text = hooks.hook_context("codex", wide)
    assert len(text) <= 2000 and text.count("\n- ") == 1
    assert hooks.hook_context("codex", [skill("huge", "y" * 2500)]) == ""


def test_nothing_when_the_router_abstains_or_does_not_route() -> None:
    shown = (skill("a", "first"), skill("b", "second"))
    matches = (Match("b", "b", 2.0, 1), Match("a", "a", 1.0, 2))
    routed = Routing(matches=matches, shown=shown)
    assert hooks.routing_context("claude-code", routed) == f"{HEADER}\n- b: second\n- a: first"
    assert hooks.routing_context("claude-code", Routing(matches, shown, abstained=True, confidence=0.1)) == ""
    assert hooks.routing_context("claude-code", Routing((), shown, routed=False)) == ""
    assert hooks.hook_output("") == {}
    assert hooks.hook_output("x") == {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                                             "additionalContext": "x"}}


# -- through a server ---------------------------------------------------------------------------------------------
SERVER_OPTIONS = ["--profile", "agentskills"]
SERVER_MCP = False


def run_hook(harness: str, stdin: bytes | str, *options: str,
             timeout: float = 30) -> tuple[subprocess.CompletedProcess, float]:
    data = stdin if isinstance(stdin, bytes) else stdin.encode()
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    start = time.monotonic()
    done = subprocess.run([str(SCRIPT), "hook", harness, *options], input=data, capture_output=True,
                          timeout=timeout, env=env)
    return done, time.monotonic() - start


@pytest.mark.model
@pytest.mark.parametrize("harness,stdin", [("claude-code", CLAUDE_STDIN), ("codex", CODEX_STDIN)])
def test_the_command_prints_what_the_server_endpoint_answers(server, harness, stdin) -> None:
    url, service, _, _ = server
    done, _ = run_hook(harness, json.dumps(stdin), "--url", url)
    assert done.returncode == 0 and done.stderr == b""
    printed = json.loads(done.stdout)
    with httpx.Client(base_url=url, trust_env=False) as client:
        assert printed == client.post(f"/v1/hooks/{harness}", json=stdin).json()
    assert list(printed) == ["hookSpecificOutput"]
    assert list(printed["hookSpecificOutput"]) == ["hookEventName", "additionalContext"]
    context = printed["hookSpecificOutput"]["additionalContext"]
    assert context.startswith(HEADER + "\n- ") and len(context) <= 2000
    routing = service.router.route(stdin["prompt"])
    assert context == hooks.routing_context(harness, routing)


@pytest.mark.model
def test_the_hook_answered_by_a_server_does_not_import_torch(server) -> None:
    url, _, _, _ = server
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "router.cli", "hook", "claude-code", "--url",
                           url], input=json.dumps(CLAUDE_STDIN).encode(), capture_output=True, timeout=30)
    assert done.returncode == 0 and json.loads(done.stdout)["hookSpecificOutput"]
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.decode().splitlines()
                if line.startswith("import time:") and "imported package" not in line]
    assert "router.serve.hooks" in imported
    assert [m for m in imported if m.split(".")[0] in ("torch", "sentence_transformers", "numpy", "fastapi",
                                                        "mcp")] == []


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_no_server_and_no_index_exits_0_within_budget(tmp_path: Path) -> None:
    library = tmp_path / "skills"
    for i in range(20):
        write_skill(library, f"skill-{i}", f"Skill number {i} does task {i}.")
    done, elapsed = run_hook("claude-code", json.dumps(CLAUDE_STDIN), "--url", f"http://127.0.0.1:{free_port()}",
                             "--timeout", "1.5", "--skills", str(library), "--index-dir", str(tmp_path / "idx"))
    assert done.returncode == 0
    assert elapsed < 1.5 + 1.0  # the budget, plus the interpreter's start and exit
    assert done.stdout == b"" or json.loads(done.stdout)["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert len(done.stderr.decode().splitlines()) <= 1


@pytest.mark.parametrize("stdin,options", [
    (b"not json", ()),
    (b"\xff\xfe", ()),
    (b"[1, 2]", ()),
    (json.dumps({"hook_event_name": "UserPromptSubmit"}).encode(), ()),
    (json.dumps(CLAUDE_STDIN).encode(), ("--timeout", "nope")),
    (json.dumps(CLAUDE_STDIN).encode(), ("--unknown-option",)),
    (json.dumps({**CLAUDE_STDIN, "hook_event_name": "Stop"}).encode(), ()),
    (json.dumps(CLAUDE_STDIN).encode(), ("--no-fallback",)),
])
def test_any_failure_exits_0_with_no_output_and_one_stderr_line(stdin, options) -> None:
    done, _ = run_hook("claude-code", stdin, "--url", f"http://127.0.0.1:{free_port()}", *options)
    assert done.returncode == 0 and done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("skill-router hook: ")


def test_an_unknown_harness_also_exits_0() -> None:
    done, _ = run_hook("cursor", b"{}")
    assert done.returncode == 0 and done.stdout == b"" and len(done.stderr.splitlines()) == 1


@pytest.mark.model
def test_an_empty_prompt_prints_nothing_silently(server) -> None:
    url, _, _, _ = server
    done, _ = run_hook("codex", json.dumps({**CODEX_STDIN, "prompt": "  "}), "--url", url)
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""


@pytest.mark.model
def test_an_abstaining_router_prints_nothing(tmp_path: Path) -> None:
    library = copy_bundled(tmp_path / "skills")
    config = tmp_path / "strict.json"
    RouterConfig(threshold=0.99).save(config)
    argv = ["--skills", str(library), "--config", str(config), "--index-dir", str(tmp_path / "idx"), "--no-log",
            "--no-watch"]
    with running(argv, mcp=False) as (url, _):
        with httpx.Client(base_url=url, trust_env=False) as client:
            assert client.post("/v1/hooks/claude-code", json=CLAUDE_STDIN).json() == {}
        done, _ = run_hook("claude-code", json.dumps(CLAUDE_STDIN), "--url", url)
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""


def readme_hook_snippets() -> list[dict]:
    import re

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    fenced = re.findall(r"^ *```json\n(.*?)\n *```", text, re.DOTALL | re.MULTILINE)
    blocks = [json.loads(b) for b in fenced if "UserPromptSubmit" in b]
    return [hook for block in blocks for entry in block["hooks"]["UserPromptSubmit"] for hook in entry["hooks"]]


@pytest.mark.model
def test_the_readme_snippets_work_as_pasted(server) -> None:
    import shlex
    from urllib.parse import urlsplit

    url, _, _, _ = server
    snippets = readme_hook_snippets()
    assert {h["type"] for h in snippets} == {"command", "http"}
    assert {h.get("command") for h in snippets} >= {"skill-router hook claude-code", "skill-router hook codex"}
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env["SKILL_ROUTER_URL"] = url  # the snippets rely on the default URL; the test server has its own port
    env["PATH"] = f"{SCRIPT.parent}{os.pathsep}{env.get('PATH', '')}"
    for hook in snippets:
        harness = "codex" if "codex" in hook.get("command", hook.get("url", "")) else "claude-code"
        stdin = CODEX_STDIN if harness == "codex" else CLAUDE_STDIN
        if hook["type"] == "command":
            done = subprocess.run(shlex.split(hook["command"]), input=json.dumps(stdin).encode(), env=env,
                                  capture_output=True, timeout=hook.get("timeout", 60))
            assert done.returncode == 0 and done.stderr == b"", done.stderr
            answer = json.loads(done.stdout)
        else:
            with httpx.Client(base_url=url, trust_env=False) as client:
                answer = client.post(urlsplit(hook["url"]).path, json=stdin, timeout=hook.get("timeout", 60)).json()
        assert answer["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
        assert answer["hookSpecificOutput"]["additionalContext"].startswith(HEADER)
