"""The claude-code profile reproduces Claude Code (harness-profiles.md, "claude-code").

Expected values are read off the specification (Claude Code's documentation and changelog, public code), not off
the implementation. Rules with no public source are marked [inferred] in the specification; their tests say
``inferred`` in their names.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from router.errors import SkillToolError
from router.profiles import get_profile
from router.profiles.claude_code import ClaudeCodeProfile
from router.library import discover
from router.registry import SkillRegistry
from router.skill import Skill

CLAUDE = get_profile("claude-code")


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def skill_md(folder: Path, name: str | None = None, description: str | None = "Does things", extra: str = "",
             body: str = "Body\n") -> Path:
    head = (f"name: {name}\n" if name else "") + (f"description: {description}\n" if description else "") + extra
    return write(folder / "SKILL.md", f"---\n{head}---\n{body}")


def isolated(tmp_path: Path, cwd: Path, **options) -> ClaudeCodeProfile:
    """A profile whose home lives in tmp_path (never the real one)."""
    return ClaudeCodeProfile(cwd=cwd, home=tmp_path / "home", **options)


def one(tmp_path: Path, content: str | bytes, folder: str = "my-skill") -> Skill:
    write(tmp_path / "skills" / folder / "SKILL.md", content)
    (skill,) = CLAUDE.discover([tmp_path / "skills"]).skills
    return skill


def test_profile_is_registered_as_claude_code():
    assert CLAUDE.name == "claude-code"


# --- discovery ------------------------------------------------------------------------------------------------


def test_personal_and_project_skills_up_to_the_repository_root(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    cwd = repo / "app" / "web"
    skill_md(tmp_path / "home" / ".claude" / "skills" / "mine", "mine", "Personal")
    skill_md(cwd / ".claude" / "skills" / "here", "here", "Start folder")
    skill_md(repo / "app" / ".claude" / "skills" / "middle", "middle", "Parent")
    skill_md(repo / ".claude" / "skills" / "top", "top", "Repository root")
    skill_md(tmp_path / ".claude" / "skills" / "above", "above", "Above the repository")
    found = isolated(tmp_path, cwd).discover()
    assert [(s.name, s.metadata["scope"]) for s in found.skills] == [
        ("mine", "personal"), ("here", "project"), ("middle", "project"), ("top", "project")]
    assert found.errors == () and found.warnings == ()


def test_outside_a_repository_only_the_start_folder_is_read_inferred(tmp_path):
    cwd = tmp_path / "plain" / "sub"
    skill_md(cwd / ".claude" / "skills" / "here", "here")
    skill_md(tmp_path / "plain" / ".claude" / "skills" / "parent", "parent")
    assert [s.name for s in isolated(tmp_path, cwd).discover().skills] == ["here"]


def test_personal_beats_project_on_a_clash(tmp_path):
    cwd = tmp_path / "work"
    personal = skill_md(tmp_path / "home" / ".claude" / "skills" / "review", "review", "Personal review")
    project = skill_md(cwd / ".claude" / "skills" / "review", "review", "Project review")
    found = isolated(tmp_path, cwd).discover()
    assert [(s.name, s.description) for s in found.skills] == [("review", "Personal review")]
    assert found.warnings == (f"skipping {project}: 'review' is already defined by {personal}",)


def test_managed_beats_personal(tmp_path):
    skill_md(tmp_path / "managed" / "policy", "policy", "Managed")
    skill_md(tmp_path / "home" / ".claude" / "skills" / "policy", "policy", "Personal")
    profile = isolated(tmp_path, tmp_path / "work", managed=tmp_path / "managed")
    assert [(s.description, s.metadata["scope"]) for s in profile.discover().skills] == [("Managed", "managed")]


def test_a_skill_beats_a_command_of_the_same_name(tmp_path):
    cwd = tmp_path / "work"
    skill_md(cwd / ".claude" / "skills" / "deploy", "deploy", "The skill")
    write(cwd / ".claude" / "commands" / "deploy.md", "---\ndescription: The command\n---\nRun it\n")
    write(cwd / ".claude" / "commands" / "lint.md", "Check the code style.\n\nMore text.\n")
    found = isolated(tmp_path, cwd).discover()
    assert [(s.name, s.description, s.metadata["kind"]) for s in found.skills] == [
        ("deploy", "The skill", "skill"), ("lint", "Check the code style.", "command")]


def test_add_dir_skills_are_read(tmp_path):
    skill_md(tmp_path / "extra" / ".claude" / "skills" / "shared", "shared")
    profile = isolated(tmp_path, tmp_path / "work", add_dirs=[tmp_path / "extra"])
    assert [(s.name, s.metadata["scope"]) for s in profile.discover().skills] == [("shared", "add-dir")]


def test_plugin_skills_are_named_plugin_colon_name(tmp_path):
    named = tmp_path / "plugins" / "folder-a"
    write(named / ".claude-plugin" / "plugin.json", json.dumps({"name": "toolkit"}))
    skill_md(named / "skills" / "fmt", "fmt")
    unnamed = tmp_path / "plugins" / "folder-b"
    skill_md(unnamed / "skills" / "fmt", "fmt")
    profile = isolated(tmp_path, tmp_path / "work", plugins=[named, unnamed])
    assert [s.name for s in profile.discover().skills] == ["toolkit:fmt", "folder-b:fmt"]


def test_nested_skills_are_left_out_until_asked_for(tmp_path):
    cwd = tmp_path / "mono"
    skill_md(cwd / ".claude" / "skills" / "build", "build", "Root build")
    skill_md(cwd / "packages" / "web" / ".claude" / "skills" / "build", "build", "Web build")
    skill_md(cwd / "packages" / "web" / ".claude" / "skills" / "bundle", "bundle", "Web bundle")
    assert [s.name for s in isolated(tmp_path, cwd).discover().skills] == ["build"]


def test_nested_skill_clash_is_named_dir_colon_name_inferred(tmp_path):
    cwd = tmp_path / "mono"
    skill_md(cwd / ".claude" / "skills" / "build", "build", "Root build")
    skill_md(cwd / "packages" / "web" / ".claude" / "skills" / "build", "build", "Web build")
    skill_md(cwd / "packages" / "web" / ".claude" / "skills" / "bundle", "bundle", "Web bundle")
    found = isolated(tmp_path, cwd, include_nested=True).discover()
    assert [(s.name, s.description) for s in found.skills] == [
        ("build", "Root build"), ("web:build", "Web build"), ("bundle", "Web bundle")]


def test_one_level_hidden_folders_skipped_symlinks_followed_inferred(tmp_path):
    root = tmp_path / "skills"
    skill_md(root / "top", "top")
    skill_md(root / "top" / "inner", "inner")
    skill_md(root / ".hidden", "hidden")
    skill_md(tmp_path / "elsewhere" / "linked", "linked")
    root.joinpath("link").symlink_to(tmp_path / "elsewhere" / "linked")
    found = CLAUDE.discover([root])
    assert [(s.name, s.path) for s in found.skills] == [
        ("linked", str(root / "link" / "SKILL.md")), ("top", str(root / "top" / "SKILL.md"))]


def test_explicit_folders_earlier_wins(tmp_path):
    skill_md(tmp_path / "one" / "dup", "dup", "First")
    skill_md(tmp_path / "two" / "dup", "dup", "Second")
    found = CLAUDE.discover([tmp_path / "one", tmp_path / "two"])
    assert [(s.name, s.description) for s in found.skills] == [("dup", "First")]


# --- frontmatter ----------------------------------------------------------------------------------------------


def test_name_defaults_to_the_folder_and_description_to_the_first_paragraph(tmp_path):
    skill = one(tmp_path, "---\nallowed-tools: Read\n---\n# Title\n\nFirst paragraph\ncontinues here.\n\nSecond.\n")
    assert (skill.name, skill.description) == ("my-skill", "First paragraph continues here.")


def test_frontmatter_name_is_the_skill_name(tmp_path):
    assert one(tmp_path, "---\nname: other-name\ndescription: D\n---\n").name == "other-name"


def test_when_to_use_is_appended_inferred(tmp_path):
    skill = one(tmp_path, "---\ndescription: Reviews code\nwhen_to_use: When asked for a review\n---\n")
    assert skill.description == "Reviews code - When asked for a review"


def test_bad_yaml_loads_the_body_with_empty_metadata(tmp_path):
    path = write(tmp_path / "skills" / "my-skill" / "SKILL.md",
                 "---\nname: x\ndescription: Use when: a colon breaks YAML\n---\nThe body says it.\n")
    found = CLAUDE.discover([tmp_path / "skills"])
    assert [(s.name, s.description) for s in found.skills] == [("my-skill", "The body says it.")]
    assert found.warnings == (f"{path}: frontmatter is not YAML, so Claude Code loads the body with empty metadata "
                              "(mapping values are not allowed here at line 2, column 22)",)


def test_no_length_limits_at_load(tmp_path):
    skill = one(tmp_path, f"---\nname: {'n' * 80}\ndescription: {'d' * 2000}\n---\n")
    assert (len(skill.name), len(skill.description)) == (80, 2000)


def test_crlf_and_byte_order_mark_inferred(tmp_path):
    skill = one(tmp_path, "\ufeff---\r\nname: w\r\ndescription: Windows file\r\n---\r\nBody\r\n")
    assert (skill.name, skill.description) == ("w", "Windows file")


# --- listing --------------------------------------------------------------------------------------------------


def test_listing_text_is_byte_exact_inferred():
    skills = [Skill("pdf", "Read PDFs", "/s/pdf/SKILL.md"), Skill("xlsx", "Edit <sheets> & more", "/s/x/SKILL.md")]
    assert CLAUDE.render(skills) == (
        "<system-reminder>\n"
        "The following skills are available for use with the Skill tool:\n"
        "\n"
        "- pdf: Read PDFs\n"
        "- xlsx: Edit <sheets> & more\n"
        "</system-reminder>")
    assert CLAUDE.render([]) == ""


def test_disable_model_invocation_is_never_listed(tmp_path):
    skill_md(tmp_path / "skills" / "manual", "manual", extra="disable-model-invocation: true\n")
    skill_md(tmp_path / "skills" / "auto", "auto")
    found = CLAUDE.discover([tmp_path / "skills"]).skills
    assert [s.name for s in found] == ["auto", "manual"]
    assert CLAUDE.render(found) == ("<system-reminder>\nThe following skills are available for use with the Skill "
                                    "tool:\n\n- auto: Does things\n</system-reminder>")


def test_descriptions_are_cut_at_1536_characters():
    skill = Skill("long", "x" * 1600, "/s/long/SKILL.md")
    assert CLAUDE.entries([skill], budget=10**6) == [("long", "x" * 1536)]


def test_budget_is_one_percent_of_the_context_at_four_characters_a_token_inferred(monkeypatch):
    monkeypatch.delenv("SLASH_COMMAND_TOOL_CHAR_BUDGET", raising=False)
    assert ClaudeCodeProfile().budget_chars() == 8000
    assert ClaudeCodeProfile(context_window=1_000_000).budget_chars() == 40_000
    monkeypatch.setenv("SLASH_COMMAND_TOOL_CHAR_BUDGET", "1234")
    assert ClaudeCodeProfile().budget_chars() == 1234


def test_over_budget_names_stay_and_the_least_used_lose_descriptions_inferred():
    skills = [Skill(n, "d" * 20, f"/s/{n}/SKILL.md") for n in ("a", "b", "c")]
    full = 3 * len("- a: " + "d" * 20 + "\n")
    profile = ClaudeCodeProfile(char_budget=full - 1, usage={"a": 1, "c": 5})
    assert profile.entries(skills) == [("a", "d" * 20), ("b", ""), ("c", "d" * 20)]
    assert ClaudeCodeProfile(char_budget=full - 1).entries(skills) == [("a", "d" * 20), ("b", "d" * 20), ("c", "")]
    assert ClaudeCodeProfile(char_budget=0).render(skills) == (
        "<system-reminder>\nThe following skills are available for use with the Skill tool:\n\n- a\n- b\n- c\n"
        "</system-reminder>")


def test_skill_overrides(tmp_path):
    for name in ("normal", "terse", "manual", "gone"):
        skill_md(tmp_path / "skills" / name, name, f"About {name}")
    profile = ClaudeCodeProfile(char_budget=10**6, overrides={"terse": "name-only", "manual": "user-invocable-only",
                                                                "gone": "off", "normal": "on"})
    found = profile.discover([tmp_path / "skills"]).skills
    assert [s.name for s in found] == ["manual", "normal", "terse"]
    assert profile.render(found) == ("<system-reminder>\nThe following skills are available for use with the Skill "
                                     "tool:\n\n- normal: About normal\n- terse\n</system-reminder>")
    with pytest.raises(SkillToolError, match="^Skill manual cannot be used with Skill tool"):
        profile.call_tool(SkillRegistry(found), {"skill": "manual"})


def test_unknown_skill_override_value_is_refused():
    from router.errors import ConfigError

    with pytest.raises(ConfigError, match="^skillOverrides: 'hidden' is not a valid Override; use one of on, "
                                          "name-only, user-invocable-only, off$"):
        ClaudeCodeProfile(overrides={"x": "hidden"})


# --- tool -----------------------------------------------------------------------------------------------------


def test_skill_tool_takes_the_skill_name():
    spec = CLAUDE.tool([])
    assert spec.name == "Skill"
    assert spec.parameters["required"] == ["skill"]
    assert list(spec.parameters["properties"]) == ["skill"]


def test_skill_tool_returns_the_base_directory_and_body_inferred(tmp_path):
    skill_md(tmp_path / "skills" / "pdf", "pdf", body="# PDF\n\nUse scripts/extract.py.\n")
    registry = discover([tmp_path / "skills"], CLAUDE)
    assert CLAUDE.call_tool(registry, {"skill": "pdf"}) == (
        f"Base directory for this skill: {tmp_path / 'skills' / 'pdf'}\n\n# PDF\n\nUse scripts/extract.py.")
    assert CLAUDE.call_tool(registry, '{"skill": "/pdf"}').startswith("Base directory for this skill: ")


def test_skill_tool_errors_inferred(tmp_path):
    skill_md(tmp_path / "skills" / "manual", "manual", extra="disable-model-invocation: true\n")
    registry = discover([tmp_path / "skills"], CLAUDE)
    assert CLAUDE.tool_errors_fail is True
    with pytest.raises(SkillToolError, match="^Unknown skill: nope$"):
        CLAUDE.call_tool(registry, {"skill": "nope"})
    with pytest.raises(SkillToolError, match="^Skill manual cannot be used with Skill tool due to "
                                             "disable-model-invocation$"):
        CLAUDE.call_tool(registry, {"skill": "manual"})


# --- what the router adds -------------------------------------------------------------------------------------


def test_hook_context_is_the_specified_text():
    skills = [Skill("pdf", "Read PDFs", "/s/pdf/SKILL.md"), Skill("xlsx", "Edit sheets", "/s/xlsx/SKILL.md")]
    assert CLAUDE.hook_context(skills) == ("Skills most relevant to this request (skill-router):\n"
                                           "- pdf: Read PDFs\n"
                                           "- xlsx: Edit sheets")
    assert CLAUDE.hook_context([]) == ""


def test_hook_context_limits_five_skills_250_characters_and_no_manual_skills():
    manual = Skill("manual", "Manual", "/s/m/SKILL.md", metadata={"disable_model_invocation": True})
    skills = [manual] + [Skill(f"s{i}", "x" * 300, f"/s/{i}/SKILL.md") for i in range(7)]
    text = CLAUDE.hook_context(skills)
    assert text == "Skills most relevant to this request (skill-router):\n" + "\n".join(
        f"- s{i}: {'x' * 250}" for i in range(5))
    assert len(text) <= 2000


def test_hook_context_drops_later_skills_to_stay_within_2000_characters():
    skills = [Skill(f"{'n' * 200}{i}", "x" * 250, f"/s/{i}/SKILL.md") for i in range(5)]
    text = CLAUDE.hook_context(skills)
    # header 52 + each "\n- <201 chars>: <250 chars>" 456: four make 1,876, five would make 2,332
    assert text == "Skills most relevant to this request (skill-router):" + "".join(
        f"\n- {'n' * 200}{i}: {'x' * 250}" for i in range(4))
    assert len(text) == 52 + 4 * 456


def test_restrict_config_is_the_agent_sdk_skills_option():
    keep = [Skill("pdf", "d", "/s/pdf/SKILL.md"), Skill("toolkit:fmt", "d", "/s/fmt/SKILL.md")]
    assert CLAUDE.restrict_config(keep + [Skill("other", "d", "/s/o/SKILL.md")], keep) == (
        "# skill-router: Claude Agent SDK option listing only the routed skills\n"
        'ClaudeAgentOptions(skills=["pdf", "toolkit:fmt"])\n')


@settings(max_examples=200, deadline=None)
@given(descriptions=st.lists(st.text(alphabet="ab é", max_size=50), min_size=1, max_size=8),
       budget=st.integers(min_value=0, max_value=400))
def test_descriptions_go_only_until_the_listing_fits(descriptions, budget):
    skills = [Skill(f"s{i}", d, f"/s/{i}/SKILL.md") for i, d in enumerate(descriptions)]
    entries = CLAUDE.entries(skills, budget)
    assert [n for n, _ in entries] == [s.name for s in skills]
    assert all(d in ("", s.description) for (_, d), s in zip(entries, skills))
    size = sum(len(f"- {n}: {d}" if d else f"- {n}") + 1 for n, d in entries)
    assert size <= budget or not any(d for _, d in entries)
    # removal runs from the last listed skill up and stops once the lines fit: the last one removed (the
    # earliest listed) would not fit back
    removed = [i for i, ((_, d), s) in enumerate(zip(entries, skills)) if s.description and not d]
    if removed:
        assert size + len(skills[min(removed)].description) + 2 > budget
