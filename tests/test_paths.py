"""Relative paths in a skill resolve against the skill directory, the parent of SKILL.md."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from router.errors import PathEscapeError
from router.paths import resolve_skill_path
from router.skill import Skill


def make_skill(tmp_path: Path, folder: str = "pdf") -> Skill:
    directory = tmp_path / "skills" / folder
    (directory / "scripts").mkdir(parents=True)
    (directory / "SKILL.md").write_text("---\nname: pdf\ndescription: d\n---\n")
    (directory / "scripts" / "run.py").write_text("print()")
    return Skill("pdf", "d", str(directory / "SKILL.md"))


def test_resolves_against_the_parent_of_skill_md(tmp_path):
    skill = make_skill(tmp_path)
    assert skill.directory == str(tmp_path / "skills" / "pdf")
    assert resolve_skill_path(skill, "scripts/run.py") == str(tmp_path / "skills" / "pdf" / "scripts" / "run.py")
    assert resolve_skill_path(skill, "./scripts/../scripts/run.py") == \
        str(tmp_path / "skills" / "pdf" / "scripts" / "run.py")


def test_dot_dot_is_normalised_in_lenient_mode(tmp_path):
    skill = make_skill(tmp_path)
    assert resolve_skill_path(skill, "../x") == str(tmp_path / "skills" / "x")
    assert resolve_skill_path(skill, "scripts/../../other/y.md") == str(tmp_path / "skills" / "other" / "y.md")


def test_the_path_need_not_exist(tmp_path):
    skill = make_skill(tmp_path)
    assert resolve_skill_path(skill, "references/missing.md") == \
        str(tmp_path / "skills" / "pdf" / "references" / "missing.md")


def test_strict_refuses_dot_dot_escape(tmp_path):
    skill = make_skill(tmp_path)
    real_dir = os.path.realpath(tmp_path / "skills" / "pdf")
    with pytest.raises(PathEscapeError) as caught:
        resolve_skill_path(skill, "../x", strict=True)
    outside = os.path.realpath(tmp_path / "skills" / "x")
    assert str(caught.value) == (f"path '../x' in skill 'pdf' resolves to '{outside}'"
                                 f", outside the skill folder '{real_dir}'; only files inside the skill folder can "
                                 "be read")


def test_strict_refuses_a_symlink_pointing_outside(tmp_path):
    skill = make_skill(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("x")
    os.symlink(secret, tmp_path / "skills" / "pdf" / "scripts" / "link.txt")
    with pytest.raises(PathEscapeError) as caught:
        resolve_skill_path(skill, "scripts/link.txt", strict=True)
    assert "'scripts/link.txt'" in str(caught.value) and "skill 'pdf'" in str(caught.value)
    assert f"resolves to '{os.path.realpath(secret)}'" in str(caught.value)


def test_strict_refuses_an_absolute_path_and_a_sibling_with_a_common_prefix(tmp_path):
    skill = make_skill(tmp_path)
    (tmp_path / "skills" / "pdf-evil").mkdir()
    with pytest.raises(PathEscapeError):
        resolve_skill_path(skill, "/etc/passwd", strict=True)
    with pytest.raises(PathEscapeError):
        resolve_skill_path(skill, "../pdf-evil/x", strict=True)


def test_strict_allows_a_symlink_inside(tmp_path):
    skill = make_skill(tmp_path)
    os.symlink(tmp_path / "skills" / "pdf" / "scripts" / "run.py", tmp_path / "skills" / "pdf" / "alias.py")
    assert resolve_skill_path(skill, "alias.py", strict=True) == \
        os.path.realpath(tmp_path / "skills" / "pdf" / "scripts" / "run.py")
    assert resolve_skill_path(skill, "scripts/run.py", strict=True) == \
        os.path.realpath(tmp_path / "skills" / "pdf" / "scripts" / "run.py")


def test_strict_works_through_a_symlinked_skill_folder(tmp_path):
    skill = make_skill(tmp_path)
    os.symlink(tmp_path / "skills" / "pdf", tmp_path / "alias")
    linked = Skill("pdf", "d", str(tmp_path / "alias" / "SKILL.md"))
    assert resolve_skill_path(linked, "scripts/run.py", strict=True) == \
        os.path.realpath(tmp_path / "skills" / "pdf" / "scripts" / "run.py")
    assert resolve_skill_path(skill, "scripts/run.py") == str(tmp_path / "skills" / "pdf" / "scripts" / "run.py")


def test_catalogue_rows_have_no_folder():
    with pytest.raises(PathEscapeError) as caught:
        resolve_skill_path(Skill("row", "d"), "x.md")
    assert str(caught.value) == ("skill 'row' has no folder (it comes from a catalogue), so 'x.md' cannot be "
                                 "resolved against it")
