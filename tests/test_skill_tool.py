"""Each profile's skill tool: its definition and every answer, exactly as the harness gives it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from router.errors import SkillToolError
from router.library import discover
from router.profiles import get_profile

GENKIT = get_profile("genkit")
UNREAL = get_profile("unreal")
AGENTSKILLS = get_profile("agentskills")

RAW = "---\nname: {name}\ndescription: Does {name} things\n---\n# {name}\n\nSee scripts/run.sh\n"


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def library(root: Path, *names: str) -> Path:
    for name in names:
        write(root / name / "SKILL.md", RAW.format(name=name))
    return root


# --- definitions --------------------------------------------------------------------------------------------

def test_genkit_tool_definition_exists_even_without_skills():
    parameters = {
        "type": "object",
        "properties": {"skillName": {"type": "string", "description": "The name of the skill to use."}},
        "required": ["skillName"],
    }
    for spec in (GENKIT.tool([]), GENKIT.tool([object()])):
        assert spec.openai() == {
            "type": "function",
            "function": {"name": "use_skill", "description": "Use a skill by its name.", "parameters": parameters},
        }
        assert spec.anthropic() == {"name": "use_skill", "description": "Use a skill by its name.",
                                    "input_schema": parameters}


def test_unreal_tool_definition(tmp_path):
    skills = discover([library(tmp_path, "a")], "unreal").skills
    parameters = {"type": "object",
                  "properties": {"name": {"type": "string", "description": "The exact name of the skill to load."}},
                  "required": ["name"]}
    spec = UNREAL.tool(skills)
    assert spec.openai() == {"type": "function", "function": {
        "name": "SkillUse", "description": "Load the instructions for a registered skill.", "parameters": parameters}}
    assert spec.anthropic() == {"name": "SkillUse", "description": "Load the instructions for a registered skill.",
                                "input_schema": parameters}
    assert json.dumps(parameters, separators=(",", ":")) == (
        '{"type":"object","properties":{"name":{"type":"string","description":"The exact name of the skill to '
        'load."}},"required":["name"]}')
    assert UNREAL.tool([]) is None


def test_agentskills_tool_definition_constrains_the_name(tmp_path):
    skills = discover([library(tmp_path, "b", "a")], "agentskills").skills
    assert AGENTSKILLS.tool(skills).anthropic() == {
        "name": "activate_skill",
        "description": "Load a skill's full instructions by name.",
        "input_schema": {"type": "object",
                         "properties": {"name": {"type": "string", "enum": ["a", "b"],
                                                 "description": "The name of the skill to activate."}},
                         "required": ["name"]},
    }
    assert AGENTSKILLS.tool([]) is None


def test_tool_dicts_are_copies(tmp_path):
    spec = GENKIT.tool([])
    spec.openai()["function"]["parameters"]["properties"]["skillName"]["type"] = "number"
    spec.anthropic()["input_schema"]["required"].append("other")
    assert spec.anthropic()["input_schema"] == {
        "type": "object",
        "properties": {"skillName": {"type": "string", "description": "The name of the skill to use."}},
        "required": ["skillName"],
    }


# --- genkit: errors fail the call ---------------------------------------------------------------------------

def test_genkit_returns_the_raw_file_frontmatter_included(tmp_path):
    registry = discover([library(tmp_path, "alpha")], "genkit")
    assert GENKIT.call_tool(registry, {"skillName": "alpha"}) == RAW.format(name="alpha")
    assert GENKIT.call_tool(registry, '{"skillName": "alpha"}') == RAW.format(name="alpha")


def test_genkit_unknown_name_fails(tmp_path):
    registry = discover([library(tmp_path, "alpha")], "genkit")
    with pytest.raises(SkillToolError) as caught:
        GENKIT.call_tool(registry, {"skillName": "nope"})
    assert str(caught.value) == 'skill "nope" not found'
    with pytest.raises(SkillToolError) as caught:
        GENKIT.call_tool(registry, {"skillName": 'say "hi"\n'})
    assert str(caught.value) == r'skill "say \"hi\"\n" not found'
    with pytest.raises(SkillToolError) as caught:
        GENKIT.call_tool(registry, {})
    assert str(caught.value) == 'skill "" not found'


def test_genkit_read_failure_after_discovery_fails(tmp_path):
    registry = discover([library(tmp_path, "x")], "genkit")
    path = tmp_path / "x" / "SKILL.md"
    path.unlink()
    with pytest.raises(SkillToolError) as caught:
        GENKIT.call_tool(registry, {"skillName": "x"})
    assert str(caught.value) == f'failed to read skill "x": open {path}: no such file or directory'


def test_genkit_invalid_utf8_comes_back_as_replacement_characters(tmp_path):
    write(tmp_path / "bin" / "SKILL.md", b"---\ndescription: d\n---\nbad \xff\xfe bytes\n")
    registry = discover([tmp_path], "genkit")
    assert GENKIT.call_tool(registry, {"skillName": "bin"}) == "---\ndescription: d\n---\nbad \ufffd\ufffd bytes\n"


# --- unreal: errors are the result text ---------------------------------------------------------------------

@pytest.fixture
def unreal_registry(tmp_path):
    return discover([library(tmp_path, "foo")], "unreal")


@pytest.mark.parametrize(
    ("call_name", "arguments", "answer"),
    [
        pytest.param("Other", '{"name": "foo"}', 'skill-use call name "Other" does not match static tool "SkillUse"',
                     id="wrong-call-name"),
        pytest.param("SkillUse", "", 'skill-use argument "name" must be set', id="empty-arguments"),
        pytest.param("SkillUse", " \n\t", 'skill-use argument "name" must be set', id="blank-arguments"),
        pytest.param("SkillUse", None, 'skill-use argument "name" must be set', id="no-arguments"),
        pytest.param("SkillUse", "{}", 'skill-use argument "name" must be set', id="no-name"),
        pytest.param("SkillUse", '{"name": null}', 'skill-use argument "name" must be set', id="null-name"),
        pytest.param("SkillUse", '{"name": "  \\t "}', 'skill-use argument "name" must be set', id="whitespace-name"),
        pytest.param("SkillUse", {"name": " "}, 'skill-use argument "name" must be set', id="whitespace-mapping"),
        pytest.param("SkillUse", '{"name": "Foo"}', 'skill "Foo" is not registered', id="case-mismatch"),
        pytest.param("SkillUse", '{"name": " foo "}', 'skill " foo " is not registered', id="untrimmed-lookup"),
        pytest.param("SkillUse", {"name": "bar"}, 'skill "bar" is not registered', id="unknown-mapping"),
    ],
)
def test_unreal_errors_are_returned_as_text(unreal_registry, call_name, arguments, answer):
    assert UNREAL.call_tool(unreal_registry, arguments, call_name) == answer


@pytest.mark.parametrize("bad", ['{"name": }', "{name: 1}", "{", '{"name": "foo"', "[1,"])
def test_unreal_bad_json_is_a_decode_error_text(unreal_registry, bad):
    answer = UNREAL.call_tool(unreal_registry, bad, "SkillUse")
    assert answer.startswith("decode skill-use arguments: ")
    assert len(answer) > len("decode skill-use arguments: ")


def test_unreal_success_returns_the_whole_file(unreal_registry, tmp_path):
    assert UNREAL.call_tool(unreal_registry, '{"name": "foo"}', "SkillUse") == RAW.format(name="foo")
    assert UNREAL.call_tool(unreal_registry, '{"name": "foo"}') == RAW.format(name="foo")
    # An empty call name is not checked (only a non-empty one must equal SkillUse).
    assert UNREAL.call_tool(unreal_registry, '{"name": "foo"}', "") == RAW.format(name="foo")


def test_unreal_invalid_utf8_and_no_size_cap(tmp_path):
    big = "x" * 200_000
    write(tmp_path / "big" / "SKILL.md", ("---\nname: big\ndescription: d\n---\n" + big).encode() + b"\xc3(")
    registry = discover([tmp_path], "unreal")
    assert UNREAL.call_tool(registry, {"name": "big"}, "SkillUse") == \
        "---\nname: big\ndescription: d\n---\n" + big + "\ufffd("


def test_unreal_never_raises_on_a_read_failure(unreal_registry, tmp_path):
    path = tmp_path / "foo" / "SKILL.md"
    path.unlink()
    answer = UNREAL.call_tool(unreal_registry, {"name": "foo"}, "SkillUse")
    assert answer == f'read skill "{path}": open {path}: no such file or directory'


# --- agentskills ---------------------------------------------------------------------------------------------

def test_activate_skill_wraps_the_body(tmp_path):
    write(tmp_path / "pdf" / "SKILL.md", "\ufeff---\r\nname: pdf\r\ndescription: PDFs\r\n---\r\n\r\n# PDF\r\n\r\n"
                                          "Run scripts/x.py\r\n")
    registry = discover([tmp_path], "agentskills")
    assert AGENTSKILLS.call_tool(registry, {"name": "pdf"}) == (
        '<skill_content name="pdf">\n'
        "# PDF\n\nRun scripts/x.py\n\n"
        f"Skill directory: {tmp_path / 'pdf'}\n"
        "Relative paths in this skill are relative to the skill directory.\n"
        "</skill_content>"
    )


def test_activate_skill_replaces_invalid_utf8(tmp_path):
    write(tmp_path / "s" / "SKILL.md", b"---\nname: s\ndescription: d\n---\nbad \xff byte\n")
    registry = discover([tmp_path], "agentskills")
    assert "\nbad \ufffd byte\n" in AGENTSKILLS.call_tool(registry, '{"name": "s"}')


def test_activate_skill_errors_fail(tmp_path):
    registry = discover([library(tmp_path, "a")], "agentskills")
    with pytest.raises(SkillToolError, match=r"^activate_skill: unknown skill 'zz'; known skills: a$"):
        AGENTSKILLS.call_tool(registry, {"name": "zz"})
    with pytest.raises(SkillToolError, match='^activate_skill: argument "name" must be a non-empty string$'):
        AGENTSKILLS.call_tool(registry, {})
    with pytest.raises(SkillToolError, match="^invalid activate_skill arguments: "):
        AGENTSKILLS.call_tool(registry, "{")


# --- every profile --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("profile", [GENKIT, UNREAL, AGENTSKILLS], ids=lambda p: p.name)
def test_a_registered_skill_loads_even_when_not_rendered(tmp_path, profile):
    registry = discover([library(tmp_path, "shown", "hidden-from-catalogue")], profile)
    shown = [registry.get("shown")]
    assert "hidden-from-catalogue" not in profile.render(shown)
    key = "skillName" if profile is GENKIT else "name"
    answer = profile.call_tool(registry, {key: "hidden-from-catalogue"})
    assert "# hidden-from-catalogue\n" in answer


@pytest.mark.parametrize("profile", [GENKIT, UNREAL, AGENTSKILLS], ids=lambda p: p.name)
def test_tool_reads_the_file_at_call_time(tmp_path, profile):
    registry = discover([library(tmp_path, "live")], profile)
    (tmp_path / "live" / "SKILL.md").write_text(RAW.format(name="live") + "Edited after discovery.\n")
    key = "skillName" if profile is GENKIT else "name"
    assert "Edited after discovery." in profile.call_tool(registry, {key: "live"})


def test_symlinked_skill_file_is_read_through_the_link(tmp_path):
    write(tmp_path / "store" / "real.md", RAW.format(name="linked"))
    (tmp_path / "lib" / "linked").mkdir(parents=True)
    os.symlink(tmp_path / "store" / "real.md", tmp_path / "lib" / "linked" / "SKILL.md")
    registry = discover([tmp_path / "lib"], "unreal")
    assert UNREAL.call_tool(registry, {"name": "linked"}, "SkillUse") == RAW.format(name="linked")
