"""The skill registry: exact, case-sensitive names in registration order; repeated paths or names refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from router.errors import RegistryError, SkillNotFoundError, SkillsFolderError
from router.library import discover
from router.registry import SkillRegistry
from router.skill import Skill


def skill(name: str, path: str | None = None) -> Skill:
    return Skill(name, f"{name} description", f"/lib/{name}/SKILL.md" if path is None else path)


def test_register_keeps_registration_order():
    registry = SkillRegistry([skill("zeta"), skill("alpha")])
    registry.register(skill("mid"))
    assert registry.names == ("zeta", "alpha", "mid")
    assert [s.name for s in registry] == ["zeta", "alpha", "mid"]
    assert [s.name for s in registry.skills] == ["zeta", "alpha", "mid"]
    assert len(registry) == 3


def test_repeated_path_is_refused():
    registry = SkillRegistry([skill("a", "/lib/a/SKILL.md")])
    with pytest.raises(RegistryError) as caught:
        registry.register(skill("b", "/lib/a/SKILL.md"))
    assert str(caught.value) == 'skill path "/lib/a/SKILL.md" is already registered'
    assert registry.names == ("a",)


def test_repeated_name_is_refused():
    registry = SkillRegistry([skill("a")])
    with pytest.raises(RegistryError) as caught:
        registry.register(skill("a", "/elsewhere/a/SKILL.md"))
    assert str(caught.value) == 'skill name "a" is already registered'


def test_messages_quote_like_go():
    registry = SkillRegistry([skill('say "hi"', "/lib/tab\there/SKILL.md")])
    with pytest.raises(RegistryError, match=r'^skill name "say \\"hi\\"" is already registered$'):
        registry.register(skill('say "hi"', "/other/SKILL.md"))
    with pytest.raises(RegistryError, match=r'^skill path "/lib/tab\\there/SKILL.md" is already registered$'):
        registry.register(skill("other", "/lib/tab\there/SKILL.md"))


def test_catalogue_rows_without_paths_can_coexist():
    registry = SkillRegistry([Skill("a", "d"), Skill("b", "d")])
    assert registry.names == ("a", "b")


def test_lookups_are_exact_and_case_sensitive():
    registry = SkillRegistry([skill("pdf"), skill("PDF-tools")])
    assert registry.find("pdf") is registry.get("pdf")
    assert registry.find("PDF") is None
    assert registry.find("pdf ") is None
    assert registry.find("pdf-tools") is None
    assert "pdf" in registry and "PDF" not in registry


def test_get_unknown_raises_with_close_matches():
    registry = SkillRegistry([skill("alpha"), skill("beta")])
    with pytest.raises(SkillNotFoundError) as caught:
        registry.get("alpah")
    assert str(caught.value) == "no skill named 'alpah'; did you mean 'alpha'?"
    with pytest.raises(SkillNotFoundError) as caught:
        registry.get("zzz")
    assert str(caught.value) == "no skill named 'zzz'; run 'skill-router list' to see the registered names"
    assert isinstance(caught.value, KeyError)


def test_get_unknown_raises_naming_close_matches():
    registry = SkillRegistry([skill("alpha"), skill("beta")])
    with pytest.raises(SkillNotFoundError) as caught:
        registry.get("A")
    assert str(caught.value) == "no skill named 'A'; run 'skill-router list' to see the registered names"
    with pytest.raises(SkillNotFoundError) as caught:
        registry.get("alpah")
    assert str(caught.value) == "no skill named 'alpah'; did you mean 'alpha'?"


def test_iteration_is_a_snapshot():
    registry = SkillRegistry([skill("a"), skill("b")])
    seen = []
    for s in registry:
        seen.append(s.name)
        if s.name == "a":
            registry.register(skill("c"))
    assert seen == ["a", "b"]


def test_discover_with_a_profile(tmp_path):
    for name in ("b", "a"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {name} things\n---\n")
    registry = discover([tmp_path], "unreal")
    assert registry.names == ("a", "b")
    assert registry.discovery is not None and registry.discovery.errors == ()
    assert registry.get("a").path == str(tmp_path / "a" / "SKILL.md")


def test_discover_require_roots(tmp_path):
    missing = tmp_path / "missing"
    with pytest.raises(SkillsFolderError) as caught:
        discover([missing], "genkit", require_roots=True)
    assert str(caught.value) == (f"skills folder '{missing}' does not exist: pass --skills with a folder that holds "
                                 "one sub-folder per skill")
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    with pytest.raises(SkillsFolderError, match="is not a folder"):
        discover([a_file], "genkit", require_roots=True)
    assert len(discover([missing], "genkit")) == 0


def test_discover_refuses_an_unknown_profile(tmp_path):
    from router.errors import ConfigError

    with pytest.raises(ConfigError, match="^unknown profile 'nope': choose one of agentskills, claude-code, codex, "
                                          "genkit, unreal$"):
        discover([Path(tmp_path)], "nope")


def test_lookup_takes_an_id_before_a_name() -> None:
    """One order wherever a key may be an id or a name: the id (unique) first, then the first skill of that name."""
    from router.library import with_examples

    first = Skill(name="alpha", description="A.", id="row-1")
    second = Skill(name="beta", description="B.", id="alpha")
    registry = SkillRegistry([first, second])
    assert registry.find("alpha") is first
    assert [registry.lookup(k) for k in ("alpha", "beta", "row-1", "nope")] == [second, second, first, None]
    updated, added = with_examples(registry, {"alpha": ["a request"], "row-1": ["another"]})
    assert added == 2
    assert [(s.id, s.examples) for s in updated] == [("row-1", ("another",)), ("alpha", ("a request",))]
