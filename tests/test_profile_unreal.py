"""The unreal profile reproduces the Unreal Agent Harness (harness-profiles.md, "unreal").

Every expected value below is read off the specification, not off the implementation.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from router.profiles import get_profile
from router.skill import Skill

UNREAL = get_profile("unreal")


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def q(text: str) -> str:
    """Go's %q for the plain ASCII paths and names used here."""
    return json.dumps(text)


def discover_one(root: Path, folder: str, content: str | bytes):
    path = write(root / folder / "SKILL.md", content)
    return UNREAL.discover([root]), str(path)


@pytest.mark.parametrize(
    ("content", "name", "description"),
    [
        pytest.param("---\r\nname: crlf\r\ndescription: Windows line ends\r\n---\r\nBody\r\n", "crlf",
                     "Windows line ends", id="crlf"),
        pytest.param('---\nname: q\ndescription: "Quoted: value"\n---\n', "q", '"Quoted: value"', id="quotes-kept"),
        pytest.param("---\nname: q\ndescription: 'single'\n---\n", "q", "'single'", id="single-quotes-kept"),
        pytest.param("---\nname: b\ndescription: |\n  Line one\n  Line two\n---\n", "b", "|", id="literal-block"),
        pytest.param("---\nname: b\ndescription: >\n  Folded one\n---\n", "b", ">", id="folded-block"),
        pytest.param("---\nname: c\ndescription: Use this skill when: the user asks\n---\n", "c",
                     "Use this skill when: the user asks", id="unquoted-colon"),
        pytest.param("---\nname: Upper-Name\ndescription: Has extras\nversion: 1.0\nauthor: me\n---\n", "Upper-Name",
                     "Has extras", id="uppercase-name-extra-keys"),
        pytest.param("---\nname:   spaced  \ndescription: \t padded \t\n---\n", "spaced", "padded", id="trimmed"),
        pytest.param("---\nname: last\ndescription: First\ndescription: Second\n---\n", "last", "Second",
                     id="last-occurrence-wins"),
        pytest.param("---\nname: k\n description: indented key is not the key\ndescription: Kept\n---\n", "k",
                     "Kept", id="indented-key-ignored"),
        pytest.param("---\nname: k\nDescription: wrong case\ndescription: Exact key\n---\n", "k", "Exact key",
                     id="key-case-sensitive"),
        pytest.param("  ---  \nname: f\ndescription: Fences are trimmed\n  ---\t\nBody\n", "f", "Fences are trimmed",
                     id="fences-trimmed"),
        pytest.param("---\nname: n\ndescription: a\n---\ndescription: after the fence\n", "n", "a",
                     id="stops-at-closing-fence"),
    ],
)
def test_line_parser_edge_cases(tmp_path, content, name, description):
    found, path = discover_one(tmp_path / "skills", "folder", content)
    assert found.errors == ()
    assert [(s.name, s.description, s.path) for s in found.skills] == [(name, description, path)]


@pytest.mark.parametrize(
    ("content", "error"),
    [
        pytest.param("\ufeff---\nname: bom\ndescription: Starts with a BOM\n---\n",
                     "parse skill {p}: missing opening YAML frontmatter delimiter", id="bom"),
        pytest.param("# Title\n", "parse skill {p}: missing opening YAML frontmatter delimiter", id="no-frontmatter"),
        pytest.param(b"\x89PNG\r\n\x1a\n\x00\x00", "parse skill {p}: missing opening YAML frontmatter delimiter",
                     id="binary"),
        pytest.param("", "parse skill {p}: missing opening YAML frontmatter delimiter", id="empty-file"),
        pytest.param("---\nname: m\ndescription: d\n", "parse skill {p}: missing closing YAML frontmatter delimiter",
                     id="no-closing-fence"),
        pytest.param("---\nname: n\ndescription:\n  On the next line\n---\n",
                     "validate skill {p}: skill description must be set", id="next-line-value"),
        pytest.param("---\ndescription: No name\n---\n", "validate skill {p}: skill name must be set", id="no-name"),
        pytest.param("---\nname: '   '\n---\n", "validate skill {p}: skill description must be set",
                     id="no-description"),
        pytest.param("---\nname:    \ndescription: d\n---\n", "validate skill {p}: skill name must be set",
                     id="blank-name"),
    ],
)
def test_rejected_skills_are_reported_and_discovery_goes_on(tmp_path, content, error):
    root = tmp_path / "skills"
    write(root / "zz-good" / "SKILL.md", "---\nname: good\ndescription: Still loaded\n---\n")
    found, path = discover_one(root, "bad", content)
    assert found.errors == (error.format(p=q(path)),)
    assert [s.name for s in found.skills] == ["good"]


def test_non_utf8_description_keeps_replacement_characters(tmp_path):
    found, _ = discover_one(tmp_path / "skills", "latin1", b"---\nname: latin1\ndescription: caf\xe9\n---\n\xff")
    assert [(s.name, s.description) for s in found.skills] == [("latin1", "caf\ufffd")]


def test_unreadable_skill_files_are_read_errors(tmp_path):
    root = tmp_path / "skills"
    (root / "a-dir" / "SKILL.md").mkdir(parents=True)
    (root / "b-dangling").mkdir()
    os.symlink(tmp_path / "missing.md", root / "b-dangling" / "SKILL.md")
    write(root / "c-good" / "SKILL.md", "---\nname: good\ndescription: d\n---\n")
    found = UNREAL.discover([root])
    a = str(root / "a-dir" / "SKILL.md")
    b = str(root / "b-dangling" / "SKILL.md")
    assert found.errors == (
        f"read skill {q(a)}: read {a}: is a directory",
        f"read skill {q(b)}: open {b}: no such file or directory",
    )
    assert [s.name for s in found.skills] == ["good"]


def test_glob_is_one_level_sorted_follows_symlinks_and_includes_dot_folders(tmp_path):
    root = tmp_path / "skills"
    outside = tmp_path / "elsewhere"
    write(root / "b-second" / "SKILL.md", "---\nname: alpha\ndescription: second folder\n---\n")
    write(root / "a-first" / "SKILL.md", "---\nname: zeta\ndescription: first folder\n---\n")
    write(root / ".hidden" / "SKILL.md", "---\nname: hidden\ndescription: dot folder\n---\n")
    write(root / "outer" / "inner" / "SKILL.md", "---\nname: inner\ndescription: nested\n---\n")
    write(outside / "target" / "SKILL.md", "---\nname: linked\ndescription: through a symlink\n---\n")
    os.symlink(outside / "target", root / "c-linked")
    write(root / "SKILL.md", "---\nname: top\ndescription: file at the root\n---\n")

    found = UNREAL.discover([root])

    assert found.errors == ()
    assert [(s.name, s.path) for s in found.skills] == [
        ("hidden", str(root / ".hidden" / "SKILL.md")),
        ("zeta", str(root / "a-first" / "SKILL.md")),
        ("alpha", str(root / "b-second" / "SKILL.md")),
        ("linked", str(root / "c-linked" / "SKILL.md")),   # the match, not the canonical target
    ]


def test_duplicate_name_keeps_the_first_in_sorted_order(tmp_path):
    root = tmp_path / "skills"
    write(root / "b-copy" / "SKILL.md", "---\nname: dup\ndescription: Second\n---\n")
    write(root / "a-orig" / "SKILL.md", "---\nname: dup\ndescription: First\n---\n")
    found = UNREAL.discover([root])
    second = str(root / "b-copy" / "SKILL.md")
    assert [(s.name, s.description) for s in found.skills] == [("dup", "First")]
    assert found.errors == (f"skill {q(second)}: duplicate name {q('dup')}",)


def test_same_name_in_two_roots_keeps_the_first_root(tmp_path):
    first, second = tmp_path / "one", tmp_path / "two"
    write(first / "x" / "SKILL.md", "---\nname: dup\ndescription: First root\n---\n")
    write(second / "x" / "SKILL.md", "---\nname: dup\ndescription: Second root\n---\n")
    found = UNREAL.discover([first, second])
    assert [s.description for s in found.skills] == ["First root"]
    assert found.errors == (f'skill {q(str(second / "x" / "SKILL.md"))}: duplicate name "dup"',)


def test_missing_root_finds_nothing_and_reports_nothing(tmp_path):
    found = UNREAL.discover([tmp_path / "nowhere"])
    assert found.skills == () and found.errors == () and found.warnings == ()


def test_default_root_is_workspace_harness_skills(tmp_path, monkeypatch):
    write(tmp_path / ".harness" / "skills" / "ws" / "SKILL.md", "---\nname: ws\ndescription: Workspace skill\n---\n")
    monkeypatch.chdir(tmp_path)
    (skill,) = UNREAL.discover().skills
    assert skill.path == str(tmp_path / ".harness" / "skills" / "ws" / "SKILL.md")


def test_path_is_absolute_but_not_canonicalised(tmp_path, monkeypatch):
    real = tmp_path / "real"
    write(real / "s" / "SKILL.md", "---\nname: s\ndescription: d\n---\n")
    os.symlink(real, tmp_path / "alias")
    monkeypatch.chdir(tmp_path)
    (skill,) = UNREAL.discover(["alias"]).skills
    assert skill.path == str(tmp_path / "alias" / "s" / "SKILL.md")


def test_unreal_tool_errors_are_returned_not_raised():
    assert UNREAL.tool_errors_fail is False


# --- catalogue ------------------------------------------------------------------------------------------------

PREAMBLE_TEXT = (
    "The following skills provide specialized instructions for specific tasks.\n"
    "Use SkillUse to load a skill's file when the task matches its description.\n"
    "When a skill file references a relative path, resolve it against the skill directory (parent of SKILL.md / "
    "dirname of the path) and use that absolute path in tool calls."
)


def test_reference_case_renders_exactly():
    skill = Skill("go-review", 'Review <Go> & "tests"', "/skills/reviewer's/SKILL.md")
    assert UNREAL.render([skill]) == (
        PREAMBLE_TEXT + "\n\n"
        "<available_skills>"
        "<skill><name>go-review</name><description>Review &lt;Go&gt; &amp; &#34;tests&#34;</description>"
        "<location>/skills/reviewer&#39;s/SKILL.md</location></skill>"
        "</available_skills>"
    )


def test_catalogue_keeps_registration_order_and_escapes_whitespace():
    skills = [
        Skill("zeta", "tab\there\nnew line\rcr", "/s/zeta/SKILL.md"),
        Skill("alpha", "|", "/s/alpha/SKILL.md"),
        Skill("quoted", '"Quoted: value"', "/s/q&a/SKILL.md"),
    ]
    assert UNREAL.render(skills) == (
        "The following skills provide specialized instructions for specific tasks.\n"
        "Use SkillUse to load a skill's file when the task matches its description.\n"
        "When a skill file references a relative path, resolve it against the skill directory (parent of SKILL.md / "
        "dirname of the path) and use that absolute path in tool calls.\n"
        "\n"
        "<available_skills>"
        "<skill><name>zeta</name><description>tab&#x9;here&#xA;new line&#xD;cr</description>"
        "<location>/s/zeta/SKILL.md</location></skill>"
        "<skill><name>alpha</name><description>|</description><location>/s/alpha/SKILL.md</location></skill>"
        "<skill><name>quoted</name><description>&#34;Quoted: value&#34;</description>"
        "<location>/s/q&amp;a/SKILL.md</location></skill>"
        "</available_skills>"
    )


def test_characters_outside_xml_become_replacement_characters():
    rendered = UNREAL.render([Skill("c", "bell\x07 and \ufffe", "/s/c/SKILL.md")])
    assert "<description>bell\ufffd and \ufffd</description>" in rendered


def test_empty_library_renders_nothing_and_has_no_tool():
    assert UNREAL.render([]) == ""
    assert UNREAL.tool([]) is None
