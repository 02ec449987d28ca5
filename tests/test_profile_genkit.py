"""The genkit profile reproduces the Genkit Go Skills middleware (harness-profiles.md, "genkit").

Every expected value below is read off the specification, not off the implementation.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from router.profiles import get_profile
from router.profiles.genkit import PLACEHOLDER
from router.skill import Skill

GENKIT = get_profile("genkit")


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def skill_file(root: Path, folder: str, content: str | bytes) -> Path:
    return write(root / folder / "SKILL.md", content)


def only(root: Path, folder: str, content: str | bytes):
    """Discover a root holding exactly one skill folder and return that skill."""
    skill_file(root, folder, content)
    found = GENKIT.discover([root])
    assert [s.name for s in found.skills] == [folder]
    assert found.errors == ()
    return found.skills[0]


def test_placeholder_text():
    assert PLACEHOLDER == "No description provided."


@pytest.mark.parametrize(
    ("content", "description"),
    [
        pytest.param("\ufeff---\nname: bom\ndescription: Starts with a BOM\n---\nBody\n", "Starts with a BOM",
                     id="bom"),
        pytest.param("---\r\nname: crlf\r\ndescription: Windows line ends\r\n---\r\nBody\r\n", "Windows line ends",
                     id="crlf"),
        pytest.param('---\nname: q\ndescription: "Quoted: value"\n---\n', "Quoted: value", id="double-quoted"),
        pytest.param("---\nname: q\ndescription: 'It''s single'\n---\n", "It's single", id="single-quoted"),
        pytest.param("---\nname: b\ndescription: |\n  Line one\n  Line two\n---\n", "Line one\nLine two",
                     id="literal-block"),
        pytest.param("---\nname: b\ndescription: >\n  Folded one\n  folded two\n---\n", "Folded one folded two",
                     id="folded-block"),
        pytest.param("---\nname: c\ndescription: Use this skill when: the user asks\n---\n", PLACEHOLDER,
                     id="unquoted-colon-yaml-fails"),
        pytest.param("---\nname: n\ndescription:\n  On the next line\n---\n", "On the next line", id="next-line"),
        pytest.param("---\nname: e\ndescription:\n---\n", PLACEHOLDER, id="null-description"),
        pytest.param('---\nname: e\ndescription: "   "\n---\n', PLACEHOLDER, id="blank-description"),
        pytest.param("---\nname: p\ndescription: '  padded  '\n---\n", "padded", id="trimmed"),
        # Go's strings.TrimSpace keeps U+001F; Python's str.strip() would remove it.
        pytest.param('---\nname: u\ndescription: "\\x1fTagged\\x1f"\n---\n', "\x1fTagged\x1f", id="go-trim-space"),
        pytest.param("---\nname: d\ndescription: One\ndescription: Two\n---\n", PLACEHOLDER, id="repeated-key"),
        pytest.param("--- \nname: s\ndescription: Space after fence\n---\n", PLACEHOLDER,
                     id="opening-not-followed-by-newline"),
        pytest.param("---\nname: m\ndescription: No closing fence\n", PLACEHOLDER, id="no-closing-fence"),
        pytest.param("# Title\n\nJust markdown.\n", PLACEHOLDER, id="no-frontmatter"),
        # The closing fence is the first "\n---": it need not be a whole line.
        pytest.param("---\ndescription: Dash fence\n-----\nBody\n", "Dash fence", id="closing-fence-not-whole-line"),
        # The search for "\n---" starts at the newline right after the opening "---": "---\n---" is an empty block.
        pytest.param("---\n---\ndescription: After an empty block\n---\n", PLACEHOLDER, id="empty-frontmatter-first"),
        pytest.param("---\ndescription: [a, b]\n---\n", PLACEHOLDER, id="sequence-description"),
        pytest.param("---\n- just\n- a list\n---\n", PLACEHOLDER, id="not-a-mapping"),
    ],
)
def test_frontmatter_edge_cases(tmp_path, content, description):
    skill = only(tmp_path / "skills", "my-skill", content)
    assert skill.description == description
    assert skill.path == str(tmp_path / "skills" / "my-skill" / "SKILL.md")


def test_name_is_the_folder_name_not_frontmatter(tmp_path):
    skill = only(tmp_path / "skills", "upper",
                 "---\nname: Upper-Name\ndescription: Has extras\nversion: '1.0'\nauthor: me\n---\nBody\n")
    assert skill.name == "upper"
    assert skill.id == "upper"
    assert skill.description == "Has extras"


def test_non_utf8_bytes_become_replacement_characters(tmp_path):
    skill = only(tmp_path / "skills", "latin1", b"---\nname: latin1\ndescription: caf\xe9 menu\n---\nBody \xff\n")
    assert skill.description == "caf\ufffd menu"


def test_invalid_bytes_in_the_body_do_not_touch_the_frontmatter(tmp_path):
    skill = only(tmp_path / "skills", "body", b"---\ndescription: Fine\n---\n\xff\xfe\x00 binary tail\n")
    assert skill.description == "Fine"


def test_binary_file_is_listed_with_the_placeholder(tmp_path):
    skill = only(tmp_path / "skills", "png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    assert skill.description == PLACEHOLDER


def test_discovery_is_one_level_sorted_and_skips_what_the_middleware_skips(tmp_path):
    root = tmp_path / "skills"
    outside = tmp_path / "elsewhere"
    for folder in ("beta", "Zeta", "alpha"):
        skill_file(root, folder, f"---\ndescription: {folder} skill\n---\n")
    skill_file(root, ".hidden", "---\ndescription: hidden\n---\n")
    skill_file(root, "outer/inner", "---\ndescription: nested\n---\n")   # outer has no SKILL.md itself
    skill_file(outside, "target", "---\ndescription: via symlink\n---\n")
    os.symlink(outside / "target", root / "linked")
    write(root / "SKILL.md", "---\ndescription: a file at the root\n---\n")
    write(root / "notes.txt", "not a folder")
    (root / "empty").mkdir()
    (root / "dir-skill" / "SKILL.md").mkdir(parents=True)                # unreadable: a directory
    (root / "dangling").mkdir()
    os.symlink(tmp_path / "missing.md", root / "dangling" / "SKILL.md")   # unreadable: a dangling link

    found = GENKIT.discover([root])

    assert [s.name for s in found.skills] == ["Zeta", "alpha", "beta"]   # byte order: uppercase first
    assert [s.description for s in found.skills] == ["Zeta skill", "alpha skill", "beta skill"]
    assert found.errors == ()
    assert found.warnings == ()


def test_nested_skill_is_never_found(tmp_path):
    root = tmp_path / "skills"
    skill_file(root, "outer", "---\ndescription: outer\n---\n")
    skill_file(root, "outer/inner", "---\ndescription: inner\n---\n")
    assert [(s.name, s.description) for s in GENKIT.discover([root]).skills] == [("outer", "outer")]


def test_same_folder_name_in_a_later_root_wins(tmp_path):
    first, second = tmp_path / "one", tmp_path / "two"
    skill_file(first, "dup", "---\ndescription: First\n---\n")
    skill_file(first, "only-first", "---\ndescription: Kept\n---\n")
    skill_file(second, "dup", "---\ndescription: Second\n---\n")

    found = GENKIT.discover([first, second])

    assert [(s.name, s.description, s.path) for s in found.skills] == [
        ("dup", "Second", str(second / "dup" / "SKILL.md")),
        ("only-first", "Kept", str(first / "only-first" / "SKILL.md")),
    ]


def test_relative_roots_are_made_absolute(tmp_path, monkeypatch):
    skill_file(tmp_path / "lib", "rel", "---\ndescription: Relative\n---\n")
    monkeypatch.chdir(tmp_path)
    (skill,) = GENKIT.discover(["lib"]).skills
    assert skill.path == str(tmp_path / "lib" / "rel" / "SKILL.md")


def test_missing_configured_root_is_skipped_with_a_warning(tmp_path, caplog):
    missing = tmp_path / "nowhere"
    present = tmp_path / "skills"
    skill_file(present, "ok", "---\ndescription: Still found\n---\n")
    with caplog.at_level(logging.DEBUG, logger="router.profiles"):
        found = GENKIT.discover([missing, present])
    assert [s.name for s in found.skills] == ["ok"]
    expected = f"skipping skills root {missing}: open {missing}: no such file or directory"
    assert found.warnings == (expected,)
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [(logging.WARNING, expected)]


def test_missing_default_root_is_only_a_debug_line(tmp_path, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)
    with caplog.at_level(logging.DEBUG, logger="router.profiles"):
        found = GENKIT.discover()
    assert found.skills == () and found.warnings == ()
    assert [r.levelno for r in caplog.records] == [logging.DEBUG]
    assert str(tmp_path / "skills") in caplog.records[0].getMessage()


def test_default_root_is_skills(tmp_path, monkeypatch):
    skill_file(tmp_path / "skills", "here", "---\ndescription: Default root\n---\n")
    monkeypatch.chdir(tmp_path)
    assert [s.name for s in GENKIT.discover().skills] == ["here"]


def test_body_is_kept(tmp_path):
    skill = only(tmp_path / "skills", "b", "---\ndescription: D\n---\n# Title\n")
    assert skill.body == "\n# Title\n"


def test_genkit_tool_errors_fail_the_call():
    assert GENKIT.tool_errors_fail is True


# --- catalogue ------------------------------------------------------------------------------------------------


def test_catalogue_is_byte_exact():
    skills = [
        Skill("gamma", "Line one\nLine two", "/s/gamma/SKILL.md"),
        Skill("alpha", "First skill", "/s/alpha/SKILL.md"),
        Skill("beta", PLACEHOLDER, "/s/beta/SKILL.md"),
        Skill("Zulu", 'Review <Go> & "tests"', "/s/Zulu/SKILL.md"),
        Skill("delta", "", "/s/delta/SKILL.md"),
    ]
    assert GENKIT.render(skills) == (
        "<skills>\n"
        "You have access to a library of skills that serve as specialized instructions/personas.\n"
        "Strongly prefer to use them when working on anything related to them.\n"
        "Only use them once to load the context.\n"
        "Here are the available skills:\n"
        ' - Zulu - Review <Go> & "tests"\n'
        " - alpha - First skill\n"
        " - beta\n"
        " - delta\n"
        " - gamma - Line one\n"
        "Line two\n"
        "</skills>"
    )


def test_catalogue_of_one_placeholder_skill():
    assert GENKIT.render([Skill("only", PLACEHOLDER, "/s/only/SKILL.md")]) == (
        "<skills>\n"
        "You have access to a library of skills that serve as specialized instructions/personas.\n"
        "Strongly prefer to use them when working on anything related to them.\n"
        "Only use them once to load the context.\n"
        "Here are the available skills:\n"
        " - only\n"
        "</skills>"
    )


def test_empty_library_renders_nothing():
    assert GENKIT.render([]) == ""


def test_discovered_library_renders_as_the_middleware_does(tmp_path):
    root = tmp_path / "skills"
    skill_file(root, "b-skill", "---\ndescription: |\n  Two\n  lines\n---\n")
    skill_file(root, "a-skill", "---\ndescription: Use this skill when: broken\n---\n")
    assert GENKIT.render(GENKIT.discover([root]).skills).endswith(
        "Here are the available skills:\n - a-skill\n - b-skill - Two\nlines\n</skills>")
