"""``skill-router`` with ``--profile codex`` and ``--profile claude-code``: harness discovery when no ``--skills``
is given, the skill tool through ``use``, and ``prompt --emit-config``. Home folders are always in tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import write_skill
from cli_support import run

LIBRARY = {
    "current-weather": "Report the weather conditions right now at a place, temperature, wind and rain.",
    "weather-forecast": "Forecast the weather for the coming days at a place.",
    "go-code-review": "Review Go source code for bugs, goroutine leaks and error handling.",
    "python-code-review": "Review Python code for bugs, type hints and exceptions.",
    "sql-query-optimization": "Speed up slow SQL queries with indexes and EXPLAIN plans.",
    "pirate-speak": "Rewrite text in the voice of a pirate.",
    "haiku-writer": "Write a haiku poem of three lines.",
    "pdf-form-filling": "Fill in the fields of a PDF form.",
    "git-commit-messages": "Write clear git commit messages.",
    "dockerfile-hardening": "Harden a Dockerfile with a non-root user and pinned base image.",
    "timezone-conversion": "Convert a date and time between time zones.",
    "regex-builder": "Build and explain a regular expression.",
    "resume-tailoring": "Tailor a resume to a job posting.",
    "meeting-minutes": "Turn a meeting transcript into minutes.",
    "csv-data-cleaning": "Clean a messy CSV file.",
    "kubernetes-debugging": "Debug failing Kubernetes pods.",
    "recipe-scaling": "Scale a cooking recipe up or down.",
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository as the working folder, with an empty home and CODEX_HOME in tmp_path."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    monkeypatch.delenv("SLASH_COMMAND_TOOL_CHAR_BUDGET", raising=False)
    monkeypatch.chdir(repo)
    return repo


def test_list_codex_without_skills_discovers_as_codex(project: Path, tmp_path: Path, capsys) -> None:
    repo_skill = write_skill(project / ".agents" / "skills", "repo-skill", "In the repository")
    user_skill = write_skill(tmp_path / "home" / ".agents" / "skills", "user-skill", "In the home folder")
    write_skill(project / "skills", "not-a-codex-root", "The router's old default folder")
    status, out, err = run(capsys, "list", "--json", "--profile", "codex")
    assert (status, err) == (0, "")
    assert json.loads(out) == [
        {"id": "repo-skill", "name": "repo-skill", "description": "In the repository", "path": str(repo_skill)},
        {"id": "user-skill", "name": "user-skill", "description": "In the home folder", "path": str(user_skill)},
    ]


def test_list_claude_code_without_skills_discovers_as_claude_code(project: Path, tmp_path: Path, capsys) -> None:
    personal = write_skill(tmp_path / "home" / ".claude" / "skills", "mine", "Personal")
    here = write_skill(project / ".claude" / "skills", "ours", "Project")
    status, out, err = run(capsys, "list", "--json", "--profile", "claude-code")
    assert (status, err) == (0, "")
    assert [(row["name"], row["path"]) for row in json.loads(out)] == [("mine", str(personal)), ("ours", str(here))]


def test_explicit_skills_still_win_over_harness_discovery(project: Path, tmp_path: Path, capsys) -> None:
    write_skill(project / ".claude" / "skills", "ours", "Project")
    write_skill(tmp_path / "lib", "given", "Given on the command line")
    status, out, _ = run(capsys, "prompt", "--profile", "claude-code", "--skills", str(tmp_path / "lib"))
    assert status == 0
    assert out.startswith("The following skills are available for use with the Skill tool:\n\n"
                          "- given: Given on the command line\n- dataviz: ")  # then Claude Code's built-in skills


def test_use_answers_with_each_harness_loading(project: Path, capsys) -> None:
    path = write_skill(project / ".claude" / "skills", "ours", "Project")
    assert run(capsys, "use", "ours", "--profile", "claude-code") == (
        0, f"Launching skill: ours\n\nBase directory for this skill: {path.parent}\n\n\nSteps.\n", "")
    codex_path = write_skill(project / ".agents" / "skills", "ours", "Project")
    assert run(capsys, "use", "ours", "--profile", "codex") == (
        0, f"<skill>\n<name>ours</name>\n<path>{codex_path}</path>\n{codex_path.read_text()}\n</skill>", "")
    status, out, err = run(capsys, "use", "missing", "--profile", "claude-code")
    assert (status, out, err) == (1, "", "Unknown skill: missing\n")


def test_lint_without_skills_checks_the_harness_folders(project: Path, capsys) -> None:
    write_skill(project / ".agents" / "skills", "fine-skill", "Does a fine thing")
    status, out, _ = run(capsys, "lint", "--profile", "codex")
    assert (status, out) == (0, "1 SKILL.md checked: 0 errors, 0 warnings\n")


def test_emit_config_needs_a_harness_with_a_switch(tmp_path: Path, capsys) -> None:
    write_skill(tmp_path / "lib", "only", "One skill")
    status, out, err = run(capsys, "prompt", "--profile", "genkit", "--skills", str(tmp_path / "lib"), "--emit-config")
    assert (status, out) == (2, "")
    assert err == ("skill-router prompt: error: --emit-config needs a harness with its own switch: use --profile "
                   "claude-code or --profile codex, not genkit\n")


def test_emit_config_leaves_only_the_routed_skills_enabled(tmp_path: Path, capsys) -> None:
    lib = tmp_path / "lib"
    paths = {name: write_skill(lib, name, description) for name, description in LIBRARY.items()}
    query = "is it raining in Paris right now?"
    common = ["--skills", str(lib), "--index-dir", str(tmp_path / "index"), "-k", "3"]
    status, out, _ = run(capsys, "prompt", "--profile", "codex", "--json", *common, query)
    shown = json.loads(out)["shown"]
    assert status == 0 and len(shown) == 3

    status, out, _ = run(capsys, "prompt", "--profile", "codex", "--emit-config", *common, query)
    disabled = sorted((p for name, p in paths.items() if name not in shown), key=lambda p: str(p))
    assert status == 0
    assert out == ("# skill-router: 3 routed skills stay enabled, 14 disabled (add to $CODEX_HOME/config.toml)\n"
                   + "\n".join(f'[[skills.config]]\npath = "{p}"\nenabled = false\n' for p in disabled))

    status, out, _ = run(capsys, "prompt", "--profile", "claude-code", "--emit-config", *common, query)
    assert status == 0
    assert out == ("# skill-router: Claude Agent SDK option listing only the routed skills\n"
                   f"ClaudeAgentOptions(skills={json.dumps(shown)})\n")
