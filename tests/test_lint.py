"""skill-router lint: the reference validator's error messages and the cross-harness warnings."""

from __future__ import annotations

from pathlib import Path

import pytest

from router.lint import Finding, lint, lint_file

ALLOWED = "['allowed-tools', 'compatibility', 'description', 'license', 'metadata', 'name']"


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def messages(root: Path, folder: str, content: str | bytes) -> list[tuple[str, str]]:
    path = write(root / folder / "SKILL.md", content)
    findings = lint_file(str(path), str(root))
    assert all(f.path == str(path) for f in findings)
    return [(f.level, f.message) for f in findings]


@pytest.mark.parametrize(
    ("folder", "content", "expected"),
    [
        pytest.param("My-Skill", "---\nname: My-Skill\ndescription: d\n---\n",
                     [("error", "Skill name 'My-Skill' must be lowercase")], id="uppercase"),
        pytest.param("a--b", "---\nname: a--b\ndescription: d\n---\n",
                     [("error", "Skill name cannot contain consecutive hyphens")], id="consecutive-hyphens"),
        pytest.param("-lead", "---\nname: -lead\ndescription: d\n---\n",
                     [("error", "Skill name cannot start or end with a hyphen")], id="leading-hyphen"),
        pytest.param("trail-", "---\nname: trail-\ndescription: d\n---\n",
                     [("error", "Skill name cannot start or end with a hyphen")], id="trailing-hyphen"),
        pytest.param("folder", "---\nname: other\ndescription: d\n---\n",
                     [("error", "Directory name 'folder' must match skill name 'other'")], id="name-folder-mismatch"),
        pytest.param("x" * 65, f"---\nname: {'x' * 65}\ndescription: d\n---\n",
                     [("error", f"Skill name '{'x' * 65}' exceeds 64 character limit (65 chars)")], id="name-over-64"),
        pytest.param("long", f"---\nname: long\ndescription: {'d' * 1025}\n---\n",
                     [("error", "Description exceeds 1024 character limit (1025 chars)")], id="description-over-1024"),
        pytest.param("ok", f"---\nname: ok\ndescription: {'d' * 1024}\n---\n", [], id="description-at-1024"),
        pytest.param("nodesc", "---\nname: nodesc\n---\n",
                     [("error", "Missing required field in frontmatter: description")], id="missing-description"),
        pytest.param("noname", "---\ndescription: d\n---\n",
                     [("error", "Missing required field in frontmatter: name")], id="missing-name"),
        pytest.param("extra", "---\nname: extra\ndescription: d\nversion: 1\nauthor: me\nlicense: MIT\n---\n",
                     [("error", f"Unexpected fields in frontmatter: author, version. Only {ALLOWED} are allowed.")],
                     id="unexpected-fields"),
        pytest.param("bad_char", "---\nname: bad_char\ndescription: d\n---\n",
                     [("error", "Skill name 'bad_char' contains invalid characters. Only letters, digits, and hyphens "
                                "are allowed.")], id="invalid-characters"),
        pytest.param("clean", "---\nname: clean\ndescription: A clean skill.\nlicense: MIT\n---\n# Body\n", [],
                     id="clean"),
    ],
)
def test_reference_validator_errors(tmp_path, folder, content, expected):
    assert messages(tmp_path, folder, content) == expected


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param("---\nname: w\ndescription: |\n  Line\n---\n",
                     [("warning", "description is a YAML block scalar ('|'): the unreal harness shows '|' as the "
                                  "description; write it on one line")], id="block-scalar"),
        pytest.param("---\nname: w\ndescription: >-\n  Line\n---\n",
                     [("warning", "description is a YAML block scalar ('>-'): the unreal harness shows '>-' as the "
                                  "description; write it on one line")], id="folded-block-scalar"),
        pytest.param('---\nname: w\ndescription: "Quoted"\n---\n',
                     [("warning", "description is quoted: the unreal harness keeps the quotes in its catalogue")],
                     id="quoted"),
        pytest.param("---\nname: w\ndescription:\n  Next line\n---\n",
                     [("warning", "description starts on the next line: the unreal harness reads an empty "
                                  "description and rejects the skill; write it on the same line")], id="next-line"),
        pytest.param("---\r\nname: w\r\ndescription: d\r\n---\r\n", [("warning", "file has CRLF line endings")],
                     id="crlf"),
    ],
)
def test_cross_harness_warnings(tmp_path, content, expected):
    assert messages(tmp_path, "w", content) == expected


def test_unquoted_colon_warns_and_is_a_yaml_error(tmp_path):
    found = messages(tmp_path, "c", "---\nname: c\ndescription: Use this skill when: asked\n---\n")
    assert found[0] == ("warning", "description holds an unquoted ': ': YAML parsers fail on it and genkit shows 'No "
                                   "description provided.'; quote the value or rephrase")
    assert found[1][0] == "error"
    assert found[1][1].startswith("Invalid YAML in frontmatter: mapping values are not allowed here")
    assert len(found) == 2


def test_bom_warns_and_fails_the_reference_parse(tmp_path):
    assert messages(tmp_path, "b", "\ufeff---\nname: b\ndescription: d\n---\n") == [
        ("warning", "file starts with a byte-order mark: the unreal harness then finds no frontmatter"),
        ("error", "SKILL.md must start with YAML frontmatter (---)"),
    ]


def test_non_utf8_is_an_error(tmp_path):
    assert messages(tmp_path, "n", b"---\nname: n\ndescription: caf\xe9\n---\n")[0] == \
        ("error", "SKILL.md is not valid UTF-8 (byte 28); save it as UTF-8")


def test_unreadable_file_is_an_error(tmp_path):
    (tmp_path / "d" / "SKILL.md").mkdir(parents=True)
    assert [(f.level, f.message) for f in lint_file(str(tmp_path / "d" / "SKILL.md"), str(tmp_path))] == [
        ("error", "cannot read SKILL.md: Is a directory")]


def test_nested_and_same_name_warnings_and_the_report(tmp_path):
    root = tmp_path / "skills"
    outer = write(root / "outer" / "SKILL.md", "---\nname: outer\ndescription: d\n---\n")
    inner = write(root / "outer" / "inner" / "SKILL.md", "---\nname: inner\ndescription: d\n---\n")
    first = write(root / "a" / "SKILL.md", "---\nname: a\ndescription: d\n---\n")
    copy = write(root / "b" / "SKILL.md", "---\nname: a\ndescription: d\n---\n")
    upper = write(root / "upper" / "SKILL.md", "---\nname: Upper\ndescription: d\n---\n")

    report = lint([str(root)])

    assert report.files == 5
    assert list(report.findings) == [
        Finding(str(copy), "error", "Directory name 'b' must match skill name 'a'"),
        Finding(str(copy), "warning", f"skill name 'a' is also used by {first}: harnesses keep only one of them"),
        Finding(str(inner), "warning", "nested skill: genkit and unreal only find skills one folder below a root"),
        Finding(str(upper), "error", "Skill name 'Upper' must be lowercase"),
        Finding(str(upper), "error", "Directory name 'upper' must match skill name 'Upper'"),
    ]
    assert str(outer) not in {f.path for f in report.findings}
    assert (report.errors, report.warnings) == (3, 2)
    assert report.summary() == "5 SKILL.md checked: 3 errors, 2 warnings"
    assert report.to_json()["errors"] == 3
    assert str(report.findings[0]) == f"{copy}: error: Directory name 'b' must match skill name 'a'"
    assert report.rule_summary() == (
        "by rule:\n"
        "  2 errors    Directory name <value> must match skill name <value>\n"
        "  1 error     Skill name <value> must be lowercase\n"
        "  1 warning   nested skill\n"
        "  1 warning   skill name <value> is also used by <path>")
    assert report.to_json()["by_rule"][0] == {"level": "error", "count": 2,
                                              "rule": "Directory name <value> must match skill name <value>"}


def test_summary_counts_in_the_singular_when_there_is_one() -> None:
    from router.lint import LintReport

    one = LintReport(findings=(Finding("a/SKILL.md", "warning", "SKILL.md has 612 lines: keep it under 500"),
                               Finding("b/SKILL.md", "error", "Skill name 'B' must be lowercase")), files=1)
    assert one.summary() == "1 SKILL.md checked: 1 error, 1 warning"
    assert one.rule_summary() == ("by rule:\n  1 error     Skill name <value> must be lowercase\n"
                                  "  1 warning   SKILL.md has N lines")
    assert LintReport(findings=(), files=2).rule_summary() == ""


def test_a_clean_library_has_no_errors(tmp_path):
    write(tmp_path / "good" / "SKILL.md", "---\nname: good\ndescription: Does good things.\n---\n# Good\n")
    report = lint([str(tmp_path)])
    assert (report.files, report.errors, report.warnings) == (1, 0, 0)
    assert report.findings == ()


def test_links_to_missing_files_warn(tmp_path):
    write(tmp_path / "l" / "scripts" / "ok.py", "")
    found = messages(tmp_path, "l", "---\nname: l\ndescription: d\n---\nSee [ok](scripts/ok.py), [gone](ref/gone.md)"
                                    " and [web](https://example.com).\n")
    assert found == [("warning", "links to files the skill folder does not hold: ref/gone.md")]
