"""``skill-router prompt`` with ``--profile claude-code``: the listing budget by ``--harness-model``, the budget
report with Claude Code's built-in skills counted, and ``--emit-config`` naming skills by folder. Home folders are
always in tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_support import run
from router.profiles.claude_code import ClaudeCodeProfile, listing_cost
from router.profiles.claude_code_builtins import BUILTIN_SKILLS


@pytest.fixture
def lib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SLASH_COMMAND_TOOL_CHAR_BUDGET", raising=False)
    root = tmp_path / "lib"
    for folder, name, size in (("alpha", "alpha", 3000), ("folder-x", "differs", 3000), ("zeta", "zeta", 10)):
        path = root / folder / "SKILL.md"
        path.parent.mkdir(parents=True)
        path.write_text(f"---\nname: {name}\ndescription: {'d' * size}\n---\nBody\n", encoding="utf-8")
    return root


def test_budget_report_counts_the_built_in_skills(lib: Path, capsys) -> None:
    status, out, err = run(capsys, "prompt", "--json", "--profile", "claude-code", "--skills", str(lib))
    assert (status, err) == (0, "")
    data = json.loads(out)
    rows = [("alpha", "d" * 1535 + "…"), ("folder-x (differs)", "d" * 1535 + "…"), ("zeta", "d" * 10)]
    chars = listing_cost(rows + [(n, d) for n, d, _ in BUILTIN_SKILLS])
    assert data["harness"] == {"version": "2.1.332", "model": "claude-opus-5-5"}
    assert data["budget"] == {"model": "claude-opus-5-5", "budget": 30_000, "chars": chars, "lines": 16,
                              "full": 16, "builtin": 13, "user_full": 3}
    assert data["block"] == ClaudeCodeProfile().render(ClaudeCodeProfile().discover([lib]).skills)


def test_harness_model_sets_the_budget_and_the_layout(lib: Path, capsys) -> None:
    status, out, _ = run(capsys, "prompt", "--json", "--profile", "claude-code", "--skills", str(lib),
                         "--harness-model", "claude-sonnet-4-5")
    data = json.loads(out)
    assert status == 0
    # 8,000 characters, over budget: everything but the 11 built-in skills starts name-only; the refill gives
    # alpha its 1,537 characters back, folder-x's no longer fit, zeta's 12 still do
    assert data["budget"]["budget"] == 8000 and data["budget"]["chars"] > 8000
    assert data["block"].startswith("<system-reminder>\nThe following skills are available for use with the "
                                    "Skill tool:\n\n- alpha: ddd")
    assert "\n- folder-x (differs)\n- zeta: dddddddddd\n" in data["block"]
    assert data["budget"]["user_full"] == 2


def test_harness_model_needs_a_harness_with_model_budgets(lib: Path, capsys) -> None:
    status, out, err = run(capsys, "prompt", "--profile", "genkit", "--skills", str(lib), "--harness-model", "x")
    assert (status, out) == (2, "")
    assert err == ("skill-router prompt: error: --harness-model needs a harness whose budget depends on its model "
                   "(--profile claude-code or codex), not genkit\n")


def test_emit_config_names_skills_by_folder(lib: Path, capsys) -> None:
    status, out, _ = run(capsys, "prompt", "--profile", "claude-code", "--skills", str(lib), "--emit-config",
                         "--exclude", "zeta")
    assert (status, out) == (0, "# skill-router: Claude Agent SDK option listing only the routed skills\n"
                                'ClaudeAgentOptions(skills=["alpha", "folder-x"])\n')
