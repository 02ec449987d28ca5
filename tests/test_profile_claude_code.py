"""The claude-code profile reproduces Claude Code (harness-profiles.md, "claude-code").

Expected values are read off what the real Claude Code 2.1.332 does (tests/test_oracle_claude_code.py checks the
profile against the binary itself; the tests here name the oracle fixture that shows a rule), then the
documentation for what the oracle does not cover.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from router.errors import SkillToolError
from router.profiles import get_profile
from router.profiles.claude_code import (ClaudeCodeProfile, PermissionRequired, edit_distance, label, listing_cost,
                                         suggestion, tool_error_content)
from router.profiles.claude_code_builtins import BUILTIN_ANSWERS, BUILTIN_SKILLS, SUGGESTED_ALIASES, SUGGESTED_NAMES
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
    root = tmp_path / f"skills-{folder}"
    write(root / folder / "SKILL.md", content)
    (skill,) = CLAUDE.discover([root]).skills
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


def test_a_command_stands_in_for_a_skill_of_its_name_the_model_may_not_use(tmp_path):  # [same-name-skill-dmi]
    cwd = tmp_path / "work"
    skill_md(tmp_path / "home" / ".claude" / "skills" / "deploy", description="Personal, manual",
             extra="disable-model-invocation: true\n")
    skill_md(cwd / ".claude" / "skills" / "aaa", description="A skill")
    write(cwd / ".claude" / "commands" / "deploy.md", "---\ndescription: The command\n---\nRun it\n")
    write(cwd / ".claude" / "commands" / "bbb.md", "---\ndescription: Another command\n---\nB\n")
    profile = isolated(tmp_path, cwd)
    found = profile.discover()
    assert [(s.name, s.description, s.metadata["kind"]) for s in found.skills] == [
        ("aaa", "A skill", "skill"), ("bbb", "Another command", "command"), ("deploy", "The command", "command")]
    assert any("it is disable-model-invocation, so Claude Code lists and loads" in w for w in found.warnings)
    assert profile.call_tool(SkillRegistry(found.skills), {"skill": "deploy"}) == "Launching skill: deploy\n\nRun it\n"


def test_a_skill_with_paths_is_not_there_at_the_start(tmp_path):  # [skill-keys]
    skill_md(tmp_path / "skills" / "conditional", extra="paths: src/**\n")
    found = CLAUDE.discover([tmp_path / "skills"])
    assert found.skills == ()
    assert [w.split(": ", 1)[1] for w in found.warnings] == [
        "it has paths, so Claude Code loads it only once a file they match is touched"]


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


def test_one_level_hidden_folders_listed_symlinks_followed(tmp_path):
    # 2.1.332 reads hidden folders too (oracle fixture .hidden-skill); order is case-insensitive by folder
    root = tmp_path / "skills"
    skill_md(root / "top", "top")
    skill_md(root / "top" / "inner", "inner")
    skill_md(root / ".hidden", "hidden")
    skill_md(tmp_path / "elsewhere" / "linked", "linked")
    root.joinpath("link").symlink_to(tmp_path / "elsewhere" / "linked")
    found = CLAUDE.discover([root])
    assert [(s.name, s.path) for s in found.skills] == [
        (".hidden", str(root / ".hidden" / "SKILL.md")), ("link", str(root / "link" / "SKILL.md")),
        ("top", str(root / "top" / "SKILL.md"))]
    assert [label(s) for s in found.skills] == [".hidden (hidden)", "link (linked)", "top"]


def test_order_is_case_insensitive_punctuation_first(tmp_path):
    for folder in ("beta", "Alpha", "_under", ".dot", "1digit", "alpha-2"):
        skill_md(tmp_path / "skills" / folder)
    assert [s.name for s in CLAUDE.discover([tmp_path / "skills"]).skills] == [
        "_under", ".dot", "1digit", "Alpha", "alpha-2", "beta"]


def test_explicit_folders_earlier_wins(tmp_path):
    skill_md(tmp_path / "one" / "dup", "dup", "First")
    skill_md(tmp_path / "two" / "dup", "dup", "Second")
    found = CLAUDE.discover([tmp_path / "one", tmp_path / "two"])
    assert [(s.name, s.description) for s in found.skills] == [("dup", "First")]


def test_same_name_in_two_folders_lists_both_and_the_second_loses_its_name(tmp_path):
    skill_md(tmp_path / "skills" / "dup-a", "dup", "First")
    skill_md(tmp_path / "skills" / "dup-b", "dup", "Second")
    found = CLAUDE.discover([tmp_path / "skills"]).skills
    assert [label(s) for s in found] == ["dup-a (dup)", "dup-b"]
    registry = SkillRegistry(found)
    assert CLAUDE.tool_result(registry, {"skill": "dup"}).text.startswith(
        f"Base directory for this skill: {tmp_path / 'skills' / 'dup-a'}\n")


# --- frontmatter ----------------------------------------------------------------------------------------------


def test_name_is_the_folder_and_description_defaults_to_the_first_line(tmp_path):
    # 2.1.332: the body's first non-blank line, a heading's '#' removed (oracle fixtures nodesc-*)
    skill = one(tmp_path, "---\nallowed-tools: Read\n---\n# Title\n\nFirst paragraph\ncontinues here.\n")
    assert (skill.name, skill.description) == ("my-skill", "Title")
    assert one(tmp_path, "---\n---\n", folder="empty").description == "Skill"


def test_frontmatter_name_is_shown_beside_the_folder(tmp_path):
    # 2.1.332 identifies skills by folder (oracle fixture folder-x)
    skill = one(tmp_path, "---\nname: other-name\ndescription: D\n---\n")
    assert (skill.name, label(skill)) == ("my-skill", "my-skill (other-name)")
    assert label(one(tmp_path, '---\nname: "has space"\ndescription: D\n---\n', folder="sp")) == "sp"


def test_when_to_use_is_appended_inferred(tmp_path):
    skill = one(tmp_path, "---\ndescription: Reviews code\nwhen_to_use: When asked for a review\n---\n")
    assert skill.description == "Reviews code - When asked for a review"


def test_unquoted_colon_is_read_leniently(tmp_path):
    # 2.1.332 quotes such values and parses again (oracle fixture colon)
    skill = one(tmp_path, "---\nname: x\ndescription: Use when: a colon breaks YAML\n---\nThe body says it.\n")
    assert (skill.name, label(skill), skill.description) == (
        "my-skill", "my-skill (x)", "Use when: a colon breaks YAML")


def test_bad_yaml_ignores_the_metadata(tmp_path):
    path = write(tmp_path / "skills" / "my-skill" / "SKILL.md",
                 "---\nname: x\ndescription: ok\n  - weird: [\n---\nThe body says it.\n")
    found = CLAUDE.discover([tmp_path / "skills"])
    assert [(s.name, s.description) for s in found.skills] == [("my-skill", "The body says it.")]
    assert len(found.warnings) == 1 and found.warnings[0].startswith(
        f"{path}: frontmatter is not YAML, so Claude Code ignores its metadata (")


def test_yaml_is_read_as_yaml_1_2(tmp_path):
    # oracle fixtures d-yes, d-float, d-exp, d-octal
    assert [one(tmp_path, f"---\ndescription: {v}\n---\n", folder=f"f{i}").description
            for i, v in enumerate(("yes", "1.0", "1e3", "012", "0x1A"))] == ["yes", "1", "1000", "12", "26"]


def test_no_length_limits_at_load(tmp_path):
    skill = one(tmp_path, f"---\nname: {'n' * 80}\ndescription: {'d' * 2000}\n---\n")
    assert (len(skill.metadata["declared_name"]), len(skill.description)) == (80, 2000)


def test_crlf_and_byte_order_mark(tmp_path):
    skill = one(tmp_path, "\ufeff---\r\nname: w\r\ndescription: Windows file\r\n---\r\nBody\r\n")
    assert (label(skill), skill.description, skill.body) == ("my-skill (w)", "Windows file", "Body\r\n")


# --- listing --------------------------------------------------------------------------------------------------


def builtin_lines() -> str:
    return "\n".join(f"- {n}: {d}" for n, d, _ in BUILTIN_SKILLS)


def test_listing_text_is_byte_exact():
    # 2.1.332: a system-role paragraph, built-in skills after the user's, < and > escaped (oracle: edge listing)
    skills = [Skill("pdf", "Read PDFs", "/s/pdf/SKILL.md"), Skill("xlsx", "Edit <sheets> & more", "/s/x/SKILL.md")]
    assert CLAUDE.render(skills) == (
        "The following skills are available for use with the Skill tool:\n"
        "\n"
        "- pdf: Read PDFs\n"
        "- xlsx: Edit &lt;sheets&gt; & more\n" + builtin_lines())
    assert CLAUDE.render([]) == "The following skills are available for use with the Skill tool:\n\n" + builtin_lines()


def test_older_models_get_a_system_reminder():
    profile = ClaudeCodeProfile(model="claude-sonnet-4-5")
    assert profile.render([Skill("pdf", "Read PDFs", "/s/pdf/SKILL.md")]) == (
        "<system-reminder>\nThe following skills are available for use with the Skill tool:\n\n- pdf: Read PDFs\n"
        + builtin_lines() + "\n</system-reminder>")
    assert profile.hook_block("ctx") == (
        "<system-reminder>\nUserPromptSubmit hook additional context: ctx\n</system-reminder>")
    assert CLAUDE.hook_block("ctx") == "UserPromptSubmit hook additional context: ctx"


def test_disable_model_invocation_is_never_listed(tmp_path):
    skill_md(tmp_path / "skills" / "manual", "manual", extra="disable-model-invocation: true\n")
    skill_md(tmp_path / "skills" / "auto", "auto")
    found = CLAUDE.discover([tmp_path / "skills"]).skills
    assert [s.name for s in found] == ["auto", "manual"]
    assert CLAUDE.render(found) == ("The following skills are available for use with the Skill "
                                    "tool:\n\n- auto: Does things\n" + builtin_lines())


def test_descriptions_are_cut_to_1535_utf16_units_and_an_ellipsis():
    skill = Skill("long", "x" * 1600, "/s/long/SKILL.md")
    assert CLAUDE.entries([skill], budget=10**6)[0] == ("long", "x" * 1535 + "…")
    assert CLAUDE.entries([Skill("e", "a" * 1534 + "🎉🎉", "/s/e/SKILL.md")], budget=10**6)[0] == (
        "e", "a" * 1534 + "\ufffd…")
    assert CLAUDE.entries([Skill("ok", "y" * 1536, "/s/ok/SKILL.md")], budget=10**6)[0] == ("ok", "y" * 1536)


def test_budget_depends_on_the_model(monkeypatch):
    # oracle: budget-sonnet-4-5, budget-haiku-4-5, all-default-30000, all-sonnet-4-5-1m-40000
    monkeypatch.delenv("SLASH_COMMAND_TOOL_CHAR_BUDGET", raising=False)
    assert ClaudeCodeProfile().budget_chars() == 30_000
    assert ClaudeCodeProfile(model="claude-sonnet-4-5").budget_chars() == 8000
    assert ClaudeCodeProfile(model="claude-haiku-4-5").budget_chars() == 8000
    assert ClaudeCodeProfile(model="claude-sonnet-4-5[1m]").budget_chars() == 40_000
    monkeypatch.setenv("SLASH_COMMAND_TOOL_CHAR_BUDGET", "1234")
    assert ClaudeCodeProfile().budget_chars() == 1234


def test_over_budget_all_start_name_only_and_come_back_greedily_by_usage():
    skills = [Skill(n, "d" * 20, f"/s/{n}/SKILL.md", metadata={"position": i}) for i, n in enumerate("abc")]
    fixed = [(n, d) for n, d, keep in BUILTIN_SKILLS if keep]
    bare = listing_cost([("a", ""), ("b", ""), ("c", "")] + fixed + [("init", ""), ("security-review", "")])
    two = bare + 2 * 22  # room for two of the three descriptions
    profile = ClaudeCodeProfile(char_budget=two, usage={"a": 1, "c": 5})
    assert profile.entries(skills)[:3] == [("a", "d" * 20), ("b", ""), ("c", "d" * 20)]
    assert ClaudeCodeProfile(char_budget=two).entries(skills)[:3] == [("a", "d" * 20), ("b", "d" * 20), ("c", "")]
    rows = ClaudeCodeProfile(char_budget=0).entries(skills)
    assert rows == [("a", ""), ("b", ""), ("c", "")] + fixed + [("init", ""), ("security-review", "")]


def test_skill_overrides(tmp_path):
    for name in ("normal", "terse", "manual", "gone"):
        skill_md(tmp_path / "skills" / name, name, f"About {name}")
    profile = ClaudeCodeProfile(char_budget=10**6, overrides={"terse": "name-only", "manual": "user-invocable-only",
                                                                "gone": "off", "normal": "on"})
    found = profile.discover([tmp_path / "skills"]).skills
    assert [s.name for s in found] == ["gone", "manual", "normal", "terse"]
    assert profile.render(found) == ("The following skills are available for use with the Skill "
                                     "tool:\n\n- normal: About normal\n- terse\n" + builtin_lines())
    with pytest.raises(SkillToolError) as caught:
        profile.call_tool(SkillRegistry(found), {"skill": "manual"})
    assert str(caught.value) == "Skill manual is disabled for model invocation in skillOverrides settings"
    with pytest.raises(SkillToolError) as caught:
        profile.call_tool(SkillRegistry(found), {"skill": "gone"})
    assert str(caught.value) == "Skill gone is disabled for model invocation in skillOverrides settings"


def test_unknown_skill_override_value_is_refused():
    from router.errors import ConfigError

    with pytest.raises(ConfigError, match="^skillOverrides: 'hidden' is not a valid Override; use one of on, "
                                          "name-only, user-invocable-only, off$"):
        ClaudeCodeProfile(overrides={"x": "hidden"})


# --- tool -----------------------------------------------------------------------------------------------------


def test_skill_tool_takes_the_skill_and_optional_args():
    spec = CLAUDE.tool([])
    assert spec.name == "Skill"
    assert spec.parameters["required"] == ["skill"]
    assert list(spec.parameters["properties"]) == ["skill", "args"]
    assert spec.parameters["additionalProperties"] is False


def test_skill_tool_returns_launching_and_the_body_as_in_the_file(tmp_path):
    skill_md(tmp_path / "skills" / "pdf", "pdf", body="# PDF\n\nUse scripts/extract.py.\n")
    registry = discover([tmp_path / "skills"], CLAUDE)
    result = CLAUDE.tool_result(registry, {"skill": "pdf"})
    assert (result.content, result.text) == (
        "Launching skill: pdf",
        f"Base directory for this skill: {tmp_path / 'skills' / 'pdf'}\n\n# PDF\n\nUse scripts/extract.py.\n")
    assert CLAUDE.call_tool(registry, '{"skill": "/pdf"}') == f"Launching skill: pdf\n\n{result.text}"


def test_commands_get_their_body_alone(tmp_path):
    cwd = tmp_path / "work"
    write(cwd / ".claude" / "commands" / "sub" / "deep.md", "---\ndescription: nested\n---\nRun it\n")
    profile = isolated(tmp_path, cwd)
    registry = SkillRegistry(profile.discover().skills)
    result = profile.tool_result(registry, {"skill": "sub:deep"})
    assert (result.content, result.text) == ("Launching skill: sub:deep", "Run it\n")


def test_skill_tool_errors(tmp_path):
    skill_md(tmp_path / "skills" / "manual", "manual", extra="disable-model-invocation: true\n")
    registry = discover([tmp_path / "skills"], CLAUDE)
    assert CLAUDE.tool_errors_fail is True
    with pytest.raises(SkillToolError, match="^Unknown skill: xyzzy$"):
        CLAUDE.call_tool(registry, {"skill": "xyzzy"})
    with pytest.raises(SkillToolError, match=r"^Unknown skill: mnaual\. Did you mean manual\?$"):
        CLAUDE.call_tool(registry, {"skill": "mnaual"})
    with pytest.raises(SkillToolError, match=r"^Unknown skill: nope\. Did you mean copy\?$"):  # a built-in command
        CLAUDE.call_tool(registry, {"skill": "nope"})
    with pytest.raises(SkillToolError) as caught:
        CLAUDE.call_tool(registry, {"skill": "manual"})
    assert str(caught.value) == (
        "Skill manual cannot be used with Skill tool due to disable-model-invocation. Ask the user to run /manual "
        "themselves — it cannot be invoked via the Skill tool. Do not replicate this skill's workflow by other "
        "means — it is reserved for explicit user invocation.")


def test_skills_that_ask_first_or_fork(tmp_path):  # [skill-keys]
    skill_md(tmp_path / "skills" / "tools", extra="allowed-tools: [Read]\n")
    skill_md(tmp_path / "skills" / "forked", extra="context: fork\n")
    skill_md(tmp_path / "skills" / "plain", extra="allowed-tools: 1\n")
    registry = discover([tmp_path / "skills"], CLAUDE)
    with pytest.raises(PermissionRequired) as caught:
        CLAUDE.call_tool(registry, {"skill": "tools"})
    assert tool_error_content(caught.value) == (
        "Execute skill: tools. The user can add the allow rule Skill(tools) to .claude/settings.local.json to let it "
        "run without asking.")
    assert CLAUDE.call_tool(registry, {"skill": "forked"}) == 'Skill "forked" completed (forked execution).'
    assert CLAUDE.call_tool(registry, {"skill": "plain"}).startswith("Launching skill: plain\n\nBase directory")


@pytest.mark.parametrize(("name", "content"), [
    ("copy", "<tool_use_error>copy is a UI command, not a skill. Ask the user to run /copy themselves — it cannot be "
             "invoked via the Skill tool.</tool_use_error>"),
    ("/reset", "<tool_use_error>reset is a built-in CLI command, not a skill. Ask the user to run /reset themselves "
               "— it cannot be invoked via the Skill tool.</tool_use_error>"),
    ("proactive", "Execute skill: proactive. The user can add the allow rule Skill(loop) to "
                  ".claude/settings.local.json to let it run without asking."),
    ("debug", "<tool_use_error>Skill debug cannot be used with Skill tool due to disable-model-invocation. Ask the "
              "user to run /debug themselves — it cannot be invoked via the Skill tool. Do not replicate this skill's "
              "workflow by other means — it is reserved for explicit user invocation.</tool_use_error>"),
    ("dataviz", "Launching skill: dataviz"),
    ("review", 'Skill "review" completed (forked execution).'),
])
def test_builtin_names_get_the_binarys_answer(tmp_path, name, content):  # [builtin-answers]
    registry = SkillRegistry([])
    try:
        answer = CLAUDE.call_tool(registry, {"skill": name})
    except SkillToolError as exc:
        answer = tool_error_content(exc)
    assert answer == content


def test_every_builtin_name_has_an_answer():
    assert {SUGGESTED_ALIASES.get(n, n) for n in SUGGESTED_NAMES} == set(BUILTIN_ANSWERS)
    assert len(SUGGESTED_NAMES) == len(set(SUGGESTED_NAMES)) == 111


def test_edit_distance_counts_a_transposition_as_one_edit():
    assert [edit_distance(a, b) for a, b in [("alpha", "alpha"), ("alpah", "alpha"), ("alph", "alpha"),
                                              ("Alpha", "alpha"), ("ALPHA", "alpha"), ("ab", "ba"),
                                              ("ca", "abc"), ("a", "abcd")]] == [0, 1, 1, 1, 3, 1, 3, 3]


def test_suggestion_is_the_first_nearest_within_two_edits():
    assert suggestion("zet", ["zeta-long", "zed", "zeta"]) == "zed"  # both one edit away: the first wins
    assert suggestion("zeta1", ["zeta12", "zeta"]) == "zeta12"
    assert suggestion("ab", ["abcd", "xy"]) == "abcd"
    assert suggestion("a", ["abcd"]) is None  # three characters longer: never compared
    assert suggestion("UPPEr", ["upper", "UPPER"]) == "UPPER"  # case counts
    assert suggestion("xyzzy", ["alpha", "beta"]) is None


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
@given(descriptions=st.lists(st.text(alphabet="ab é", min_size=1, max_size=50), min_size=1, max_size=8),
       budget=st.integers(min_value=0, max_value=8000))
def test_descriptions_go_only_while_the_listing_fits(descriptions, budget):
    skills = [Skill(f"s{i}", d, f"/s/{i}/SKILL.md", metadata={"position": i}) for i, d in enumerate(descriptions)]
    entries = CLAUDE.entries(skills, budget)
    assert [n for n, _ in entries[:len(skills)]] == [s.name for s in skills]
    full = CLAUDE.entries(skills, 10**9)
    if listing_cost(full) <= budget:
        assert entries == full
        return
    # over budget: the built-in skills keep their lines, the listing fits unless those alone are over, and
    # every line left without its description would not fit back
    fixed = {n for n, _, keep in BUILTIN_SKILLS if keep}
    assert [d for n, d in entries if n in fixed] == [d for n, d in full if n in fixed]
    cost = listing_cost(entries)
    bare = listing_cost([(n, d if n in fixed else "") for n, d in full])
    assert cost <= budget or cost == bare
    for (_, shown), (_, whole) in zip(entries, full):
        if whole and not shown:
            assert cost + len(whole) + 2 > budget
