"""The agentskills profile follows the Agent Skills specification and client guide (harness-profiles.md).

Loading is lenient (warnings, the skill still loads) except for a missing or empty description or frontmatter
that is not YAML, which skip the skill with a warning.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from router.profiles import get_profile
from router.profiles.agentskills import AgentSkillsProfile
from router.skill import Skill

AGENTSKILLS = get_profile("agentskills")


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def discover_one(root: Path, folder: str, content: str | bytes):
    path = write(root / folder / "SKILL.md", content)
    return AGENTSKILLS.discover([root]), str(path)


@pytest.mark.parametrize(
    ("folder", "content", "name", "description", "notes"),
    [
        pytest.param("bom", "\ufeff---\nname: bom\ndescription: Starts with a BOM\n---\nBody\n", "bom",
                     "Starts with a BOM", ["file starts with a byte-order mark"], id="bom"),
        pytest.param("crlf", "---\r\nname: crlf\r\ndescription: Windows line ends\r\n---\r\nBody\r\n", "crlf",
                     "Windows line ends", ["file has CRLF line endings"], id="crlf"),
        pytest.param("q", '---\nname: q\ndescription: "Quoted: value"\n---\n', "q", "Quoted: value", [],
                     id="quoted"),
        pytest.param("b", "---\nname: b\ndescription: |\n  Line one\n  Line two\n---\n", "b", "Line one\nLine two", [],
                     id="literal-block"),
        pytest.param("f", "---\nname: f\ndescription: >\n  Folded one\n  folded two\n---\n", "f",
                     "Folded one folded two", [], id="folded-block"),
        pytest.param("c", "---\nname: c\ndescription: Use this skill when: the user asks\n---\n", "c",
                     "Use this skill when: the user asks",
                     ["frontmatter is not valid YAML (unquoted colon in a value); loaded with the value quoted"],
                     id="unquoted-colon-retried-quoted"),
        pytest.param("n", "---\nname: n\ndescription:\n  On the next line\n---\n", "n", "On the next line", [],
                     id="next-line"),
        pytest.param("upper", "---\nname: Upper-Name\ndescription: Has extras\nversion: '1.0'\n---\n", "Upper-Name",
                     "Has extras", ["Directory name 'upper' must match skill name 'Upper-Name'"],
                     id="uppercase-name-mismatch"),
        pytest.param("nameless", "---\ndescription: No name\n---\n", "nameless", "No name",
                     ["frontmatter has no name; using the folder name 'nameless'"], id="missing-name"),
        pytest.param("x" * 65, f"---\nname: {'x' * 65}\ndescription: Long name\n---\n", "x" * 65, "Long name",
                     [f"Skill name '{'x' * 65}' exceeds 64 character limit (65 chars)"], id="name-over-64"),
        pytest.param("latin1", b"---\nname: latin1\ndescription: caf\xe9\n---\nBody\n", "latin1", "caf\ufffd",
                     ["file is not valid UTF-8; invalid bytes were replaced with U+FFFD"], id="non-utf8"),
    ],
)
def test_lenient_loading(tmp_path, folder, content, name, description, notes):
    found, path = discover_one(tmp_path / "skills", folder, content)
    assert [(s.name, s.description, s.path) for s in found.skills] == [(name, description, path)]
    assert found.warnings == tuple(f"{path}: {note}" for note in notes)
    assert found.errors == ()


def test_extra_keys_are_kept_as_metadata(tmp_path):
    found, _ = discover_one(tmp_path / "skills", "meta",
                            "---\nname: meta\ndescription: d\nlicense: MIT\nversion: '2'\nmetadata:\n  k: v\n---\n")
    assert dict(found.skills[0].metadata) == {"license": "MIT", "version": "2", "metadata": {"k": "v"}}


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        pytest.param("---\nname: s\n---\n", "Missing required field in frontmatter: description", id="no-description"),
        pytest.param('---\nname: s\ndescription: ""\n---\n', "Field 'description' must be a non-empty string",
                     id="empty-description"),
        pytest.param("---\nname: s\ndescription:\n---\n", "Field 'description' must be a non-empty string",
                     id="null-description"),
        pytest.param(b"\x89PNG\r\n\x1a\n\x00", "SKILL.md must start with YAML frontmatter (---)", id="binary"),
        pytest.param("# no frontmatter\n", "SKILL.md must start with YAML frontmatter (---)", id="no-frontmatter"),
        pytest.param("---\nname: s\ndescription: d\n", "SKILL.md frontmatter not properly closed with ---",
                     id="not-closed"),
        pytest.param("---\n- a\n- b\n---\n", "SKILL.md frontmatter must be a YAML mapping", id="not-a-mapping"),
    ],
)
def test_skipped_with_a_warning(tmp_path, content, reason):
    found, path = discover_one(tmp_path / "skills", "s", content)
    assert found.skills == ()
    assert found.warnings == (f"skipping {path}: {reason}",)


def test_yaml_that_stays_broken_after_the_retry_is_skipped(tmp_path):
    found, path = discover_one(tmp_path / "skills", "s", "---\nname: s\ndescription: [unclosed\n---\n")
    assert found.skills == ()
    (warning,) = found.warnings
    assert warning.startswith(f"skipping {path}: Invalid YAML in frontmatter: ")


def test_nested_hidden_and_symlinked_folders_are_searched(tmp_path):
    root = tmp_path / "skills"
    outside = tmp_path / "elsewhere"
    write(root / "outer" / "SKILL.md", "---\nname: outer\ndescription: parent\n---\n")
    write(root / "outer" / "inner" / "SKILL.md", "---\nname: inner\ndescription: nested\n---\n")
    write(root / "group" / "a" / "SKILL.md", "---\nname: a\ndescription: grouped\n---\n")
    write(root / ".hidden" / "SKILL.md", "---\nname: hidden\ndescription: dot folder\n---\n")
    write(root / ".git" / "g" / "SKILL.md", "---\nname: g\ndescription: inside .git\n---\n")
    write(root / "node_modules" / "m" / "SKILL.md", "---\nname: m\ndescription: inside node_modules\n---\n")
    write(outside / "target" / "SKILL.md", "---\nname: linked\ndescription: through a symlink\n---\n")
    os.symlink(outside / "target", root / "linked")
    write(root / "SKILL.md", "---\nname: root\ndescription: the root itself is not a skill\n---\n")
    (root / "dir-skill" / "SKILL.md").mkdir(parents=True)   # a folder named SKILL.md is not a file
    (root / "dangling").mkdir()
    os.symlink(tmp_path / "missing.md", root / "dangling" / "SKILL.md")

    found = AGENTSKILLS.discover([root])

    assert [(s.name, s.path) for s in found.skills] == [
        ("hidden", str(root / ".hidden" / "SKILL.md")),
        ("a", str(root / "group" / "a" / "SKILL.md")),
        ("linked", str(root / "linked" / "SKILL.md")),
        ("outer", str(root / "outer" / "SKILL.md")),
        ("inner", str(root / "outer" / "inner" / "SKILL.md")),
    ]
    hidden = root / ".hidden" / "SKILL.md"
    assert found.warnings == (f"{hidden}: Directory name '.hidden' must match skill name 'hidden'",)


def test_same_name_earlier_scope_wins_with_a_warning(tmp_path):
    project, user = tmp_path / "project", tmp_path / "user"
    first = write(project / "dup" / "SKILL.md", "---\nname: dup\ndescription: Project\n---\n")
    second = write(user / "dup" / "SKILL.md", "---\nname: dup\ndescription: User\n---\n")
    found = AGENTSKILLS.discover([project, user])
    assert [s.description for s in found.skills] == ["Project"]
    assert found.warnings == (f"skipping {second}: skill name 'dup' is already used by {first}",)


def test_same_name_in_one_root_keeps_the_first_in_sorted_order(tmp_path):
    root = tmp_path / "skills"
    first = write(root / "a" / "SKILL.md", "---\nname: dup\ndescription: A\n---\n")
    second = write(root / "b" / "SKILL.md", "---\nname: dup\ndescription: B\n---\n")
    found = AGENTSKILLS.discover([root])
    assert [s.description for s in found.skills] == ["A"]
    assert found.warnings[-1] == f"skipping {second}: skill name 'dup' is already used by {first}"


def test_missing_root_is_skipped_with_a_warning(tmp_path):
    missing = tmp_path / "nowhere"
    write(tmp_path / "skills" / "ok" / "SKILL.md", "---\nname: ok\ndescription: d\n---\n")
    found = AGENTSKILLS.discover([missing, tmp_path / "skills"])
    assert [s.name for s in found.skills] == ["ok"]
    assert found.warnings == (f"skipping skills root {missing}: not a folder",)


def test_default_roots_are_project_then_user(tmp_path, monkeypatch):
    home = tmp_path / "home"
    project = tmp_path / "project"
    write(project / ".agents" / "skills" / "p" / "SKILL.md", "---\nname: same\ndescription: Project\n---\n")
    write(home / ".agents" / "skills" / "u" / "SKILL.md", "---\nname: same\ndescription: User\n---\n")
    write(home / ".agents" / "skills" / "only-user" / "SKILL.md", "---\nname: only-user\ndescription: U\n---\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(project)
    found = AGENTSKILLS.discover()
    assert [(s.name, s.description) for s in found.skills] == [("same", "Project"), ("only-user", "U")]


def test_depth_is_bounded_at_six_levels(tmp_path):
    root = tmp_path / "skills"
    six = root / "1" / "2" / "3" / "4" / "5" / "6"
    write(six / "SKILL.md", "---\nname: six\ndescription: depth six\n---\n")
    write(six / "7" / "SKILL.md", "---\nname: seven\ndescription: depth seven\n---\n")
    assert [s.name for s in AGENTSKILLS.discover([root]).skills] == ["six"]


def test_folder_budget_stops_the_search_with_a_warning(tmp_path):
    root = tmp_path / "skills"
    for name in ("a", "b", "c"):
        write(root / name / "SKILL.md", f"---\nname: {name}\ndescription: d\n---\n")
    exact = AgentSkillsProfile(max_folders=4).discover([root])     # the root and its three folders
    assert [s.name for s in exact.skills] == ["a", "b", "c"]
    assert exact.warnings == ()
    cut = AgentSkillsProfile(max_folders=3).discover([root])
    assert [s.name for s in cut.skills] == ["a", "b"]
    assert cut.warnings == (f"stopped searching {root} after 3 folders",)


def test_symlink_cycle_is_cut(tmp_path):
    root = tmp_path / "skills"
    write(root / "a" / "SKILL.md", "---\nname: a\ndescription: d\n---\n")
    os.symlink(root, root / "a" / "loop")
    found = AGENTSKILLS.discover([root])
    assert [s.name for s in found.skills] == ["a"]


def test_body_is_the_text_after_the_frontmatter_stripped(tmp_path):
    found, _ = discover_one(tmp_path / "skills", "b", "---\nname: b\ndescription: d\n---\n\n# Title\n\nText\n\n")
    assert found.skills[0].body == "# Title\n\nText"


# --- catalogue ------------------------------------------------------------------------------------------------


def test_catalogue_matches_the_specification_example():
    skill = Skill("pdf-processing", "Extract PDF text, fill forms, merge files. Use when handling PDFs.",
                  "/home/user/.agents/skills/pdf-processing/SKILL.md")
    assert AGENTSKILLS.render([skill]) == (
        "The following skills provide specialized instructions for specific tasks.\n"
        "When a task matches a skill's description, use your file-read tool to load\n"
        "the SKILL.md at the listed location before proceeding.\n"
        "When a skill references relative paths, resolve them against the skill's\n"
        "directory (the parent of SKILL.md) and use absolute paths in tool calls.\n"
        "\n"
        "<available_skills>\n"
        "  <skill>\n"
        "    <name>pdf-processing</name>\n"
        "    <description>Extract PDF text, fill forms, merge files. Use when handling PDFs.</description>\n"
        "    <location>/home/user/.agents/skills/pdf-processing/SKILL.md</location>\n"
        "  </skill>\n"
        "</available_skills>"
    )


def test_catalogue_order_and_escaping():
    skills = [Skill("zeta", 'Review <Go> & "tests"', "/s/zeta/SKILL.md"),
              Skill("alpha", "Line one\nLine two", "/s/a&b/SKILL.md")]
    rendered = AGENTSKILLS.render(skills)
    assert rendered.endswith(
        "<available_skills>\n"
        "  <skill>\n"
        "    <name>zeta</name>\n"
        '    <description>Review &lt;Go&gt; &amp; "tests"</description>\n'
        "    <location>/s/zeta/SKILL.md</location>\n"
        "  </skill>\n"
        "  <skill>\n"
        "    <name>alpha</name>\n"
        "    <description>Line one\nLine two</description>\n"
        "    <location>/s/a&amp;b/SKILL.md</location>\n"
        "  </skill>\n"
        "</available_skills>"
    )


def test_instructions_with_the_activate_tool():
    rendered = AGENTSKILLS.render([Skill("s", "d", "/s/SKILL.md")], activate_tool=True)
    assert rendered.startswith(
        "The following skills provide specialized instructions for specific tasks.\n"
        "When a task matches a skill's description, call the activate_skill tool with the skill's name to load its\n"
        "full instructions.\n"
        "When a skill references relative paths, resolve them against the skill's\n"
        "directory (the parent of SKILL.md) and use absolute paths in tool calls.\n\n<available_skills>\n"
    )


def test_empty_library_renders_nothing_and_has_no_tool():
    assert AGENTSKILLS.render([]) == ""
    assert AGENTSKILLS.render([], activate_tool=True) == ""
    assert AGENTSKILLS.tool([]) is None


@pytest.mark.parametrize("text", ["plain", 'say "hi"', "it's", "both \" and '", "a < b & c > d", "tab\there\r\nline",
                                  "&amp; already", ""])
def test_catalogue_and_tool_quote_as_the_standard_library_does(text: str) -> None:
    from xml.sax.saxutils import escape, quoteattr

    from router.profiles import agentskills

    assert agentskills.escape(text) == escape(text)
    assert agentskills.quoteattr(text) == quoteattr(text)


def test_the_profile_imports_no_url_or_http_library() -> None:
    """xml.sax.saxutils imports urllib.request and http.client: a tenth of a one-shot route's imports."""
    import subprocess
    import sys

    code = ("import sys, router.profiles.agentskills\n"
            "print(sorted({'urllib.request', 'http.client'} & set(sys.modules)))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "[]\n"
