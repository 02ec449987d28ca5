"""Where shared text helpers live: Go-compatible text in router.gotext, frontmatter and YAML in
router.frontmatter, and profiles that need only a lookup from the registry (issue 7, item 4)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import router.frontmatter
import router.gotext
import router.lint
import router.profiles.base
import router.texts
from router.profiles import get_profile, profile_names
from router.profiles.base import SkillLookup
from router.skill import Skill

ROOT = Path(__file__).resolve().parent.parent


def _imports(path: Path) -> set[str]:
    """Every module a file imports from (anywhere in it, function bodies included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_go_helpers_live_in_gotext() -> None:
    assert router.gotext.go_quote('a"b\n') == '"a\\"b\\n"'
    for name in ("go_quote", "go_trim_space", "go_os_error"):
        assert not hasattr(router.profiles.base, name), name
    assert "router.gotext" in _imports(ROOT / "router" / "registry.py")  # its messages follow the unreal registry


def test_texts_and_lint_parse_frontmatter_without_the_agentskills_profile() -> None:
    for module in ("texts.py", "lint.py"):
        imports = _imports(ROOT / "router" / module)
        assert "router.frontmatter" in imports, module
    assert "router.profiles.agentskills" not in _imports(ROOT / "router" / "texts.py")
    assert router.lint.split_frontmatter is router.frontmatter.split_frontmatter


class _Lookup:
    """The least a skill tool needs: find() and iteration."""

    def __init__(self, skills: list[Skill]) -> None:
        self._skills = {s.name: s for s in skills}

    def find(self, name: str) -> Skill | None:
        return self._skills.get(name)

    def __iter__(self):
        return iter(self._skills.values())


def test_profiles_call_tools_through_the_lookup_protocol(tmp_path: Path) -> None:
    path = tmp_path / "alpha" / "SKILL.md"
    path.parent.mkdir()
    path.write_text("---\nname: alpha\ndescription: A.\n---\nBody.\n", encoding="utf-8")
    lookup = _Lookup([Skill(name="alpha", description="A.", path=str(path))])
    for name in profile_names():
        profile = get_profile(name)
        annotation = inspect.signature(profile.call_tool).parameters["registry"].annotation
        assert annotation in (SkillLookup, "SkillLookup"), name
    assert "Body." in get_profile("genkit").call_tool(lookup, {"skillName": "alpha"})
    assert "Body." in get_profile("agentskills").call_tool(lookup, {"name": "alpha"})
    assert "Body." in get_profile("unreal").call_tool(lookup, {"name": "alpha"})
