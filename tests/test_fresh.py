"""A library read once is kept beside its index with the stamp of every file and folder it was read from, and
read back without a parse while none of them changed (router.fresh)."""

from __future__ import annotations

import datetime
import os
import time
from pathlib import Path

import pytest

from router import fresh
from router.spec import LibrarySpec
from serve_support import copy_bundled

LATER = time.time() + 3600  # "saved an hour later": the copied files' stamps are not too recent to trust


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = tmp_path / "project"
    copy_bundled(project / ".claude" / "skills")
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return project


def spec_of(project: Path) -> LibrarySpec:
    return LibrarySpec.create(profile="claude-code", cwd=project, index_dir=project.parent / "index")


def described(loaded: object) -> list[tuple[str, str, str, tuple[str, ...], dict[str, object]]]:
    return [(s.name, s.description, s.body, s.examples, dict(s.metadata)) for s in loaded.registry]  # type: ignore[attr-defined]


def test_an_unchanged_library_comes_back_as_it_was_read_without_opening_a_skill_file(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = spec_of(project)
    (project / ".claude" / "skills" / "weather-forecast" / "routing-examples.txt").write_text("rain in Lyon?\n")
    loaded = spec.load()
    assert fresh.save(spec, loaded, now=LATER)
    from router.profiles import base, claude_code

    def refuse(path: str, *args: object, **kwargs: object) -> bytes:
        raise AssertionError(f"{path} was read")

    monkeypatch.setattr(claude_code, "read_skill_file", refuse)
    monkeypatch.setattr(base, "read_bytes_stat", refuse)  # how the discovery reads a SKILL.md
    again = fresh.read(spec)
    assert again is not None and len(again.registry) == len(loaded.registry) == 52
    assert described(again) == described(loaded)
    assert again.registry.lookup("weather-forecast").examples == ("rain in Lyon?",)  # type: ignore[union-attr]
    assert again.registry.discovery.skills == loaded.registry.discovery.skills  # type: ignore[union-attr]
    assert (again.notes, again.profile) == (loaded.notes, spec.profile)
    # another library, another package version or other confinement: not this one
    assert fresh.read(spec, confine=True) is None


@pytest.mark.parametrize("change", ["edit", "same-size edit", "new skill", "removed skill", "new sidecar",
                                    "new personal skill"])
def test_any_change_the_discovery_would_see_is_noticed(project: Path, change: str) -> None:
    spec = spec_of(project)
    assert fresh.save(spec, spec.load(), now=LATER)
    skills = project / ".claude" / "skills"
    skill = skills / "weather-forecast" / "SKILL.md"
    text = skill.read_text()
    if change == "edit":
        skill.write_text(text.replace("Give the weather forecast", "Forecast the weather"))
    elif change == "same-size edit":
        stat = skill.stat()
        skill.write_text(text.replace("Give", "Show"))
        os.utime(skill, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # even with its old mtime: the ctime moved
        assert skill.stat().st_size == stat.st_size
    elif change == "new skill":
        (skills / "tide-tables").mkdir()
        (skills / "tide-tables" / "SKILL.md").write_text("---\nname: tide-tables\ndescription: Tides.\n---\n")
    elif change == "removed skill":
        skill.unlink()
    elif change == "new sidecar":
        (skill.parent / "routing-examples.txt").write_text("umbrella?\n")
    else:
        personal = project.parent / "home" / ".claude" / "skills" / "mine"
        personal.mkdir(parents=True)
        (personal / "SKILL.md").write_text("---\nname: mine\ndescription: Mine.\n---\n")
    assert fresh.read(spec) is None
    if change == "edit":
        assert spec.load().registry.lookup("weather-forecast").description.startswith(  # type: ignore[union-attr]
            "Forecast the weather")


def test_files_written_a_moment_ago_are_not_trusted(project: Path) -> None:
    spec = spec_of(project)
    assert not fresh.save(spec, spec.load())  # the copy was just made: a change in the same tick could hide
    assert fresh.read(spec) is None and not os.path.exists(fresh.path(spec))


def odd_library(project: Path, value: object):  # type: ignore[no-untyped-def]
    from router.library import Library
    from router.profiles import Discovery
    from router.registry import SkillRegistry
    from router.skill import Skill

    odd = Skill(name="odd", description="Odd.", path=str(project / "odd" / "SKILL.md"), metadata={"value": value})
    return Library(SkillRegistry([odd], discovery=Discovery(skills=(odd,))), spec_of(project).profile)


@pytest.mark.parametrize("value", [datetime.date(2024, 1, 1), datetime.datetime(2024, 1, 1, 9, 30),
                                   datetime.datetime(2024, 1, 1, 9, 30, tzinfo=datetime.timezone.utc), ("a", "b"),
                                   {1: "one"}, {"\0date": "2024-01-01"}, [{"\0tuple": ["x"]}, (1, (2, 3))]])
def test_frontmatter_values_json_has_no_type_for_come_back_as_they_were(project: Path, value: object) -> None:
    """YAML's dates and times (a frontmatter's ``date: 2024-01-01``), tuples and mappings whose keys are not text."""
    spec = spec_of(project)
    assert fresh.save(spec, odd_library(project, value), now=LATER)
    again = fresh.read(spec)
    assert again is not None
    kept = again.registry.lookup("odd").metadata["value"]  # type: ignore[union-attr]
    assert kept == value and type(kept) is type(value)


@pytest.mark.parametrize("value", [{"a", "b"}, b"bytes", float("nan"), object()])
def test_a_library_json_cannot_hold_is_not_kept(project: Path, value: object) -> None:
    spec = spec_of(project)
    assert not fresh.save(spec, odd_library(project, value), now=LATER)
    assert fresh.read(spec) is None


def test_a_corrupt_or_foreign_file_is_not_used(project: Path) -> None:
    spec = spec_of(project)
    assert fresh.save(spec, spec.load(), now=LATER)
    Path(fresh.path(spec)).write_text("{not json")
    assert fresh.read(spec) is None
    assert fresh.save(spec, spec.load(), now=LATER)
    whole = Path(fresh.path(spec)).read_bytes()
    assert whole.count(b"\n") > 1 and b"\n" not in whole[:whole.index(b"}\n") + 1]  # one line, then the bodies
    for damaged in (whole[:len(whole) // 2], whole[:-1], whole + b"x", b"\xff\xfe" + whole,
                    whole.replace(b'"stamps"', b'"st\xe9mps"'), whole[:-1] + b"\xff"):
        Path(fresh.path(spec)).write_bytes(damaged)  # cut, longer, or not UTF-8: read again from the skills
        assert fresh.read(spec) is None
    other = LibrarySpec.create(profile="claude-code", cwd=project / ".claude", index_dir=project.parent / "index")
    assert fresh.save(spec, spec.load(), now=LATER) and fresh.read(other) is None


def test_what_a_paused_collection_made_counts_as_old_and_its_cycles_are_still_collected() -> None:
    """After :func:`router.fresh.collection_paused` what the block made is in the oldest generation (the young
    collections that follow do not walk it), a cycle made there is still freed by a full collection, and objects
    someone froze stay frozen (a server freezes what its first load made)."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(f"""
        import gc, sys, weakref
        sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
        from router.fresh import collection_paused

        class Node:
            pass

        def made() -> tuple[list[Node], weakref.ref]:
            with collection_paused():
                kept = [Node() for _ in range(5000)]
                cycle = Node()
                cycle.me = cycle
                return kept, weakref.ref(cycle)

        kept, cycle = made()
        old = {{id(o) for o in gc.get_objects(generation=2)}}
        young = {{id(o) for g in (0, 1) for o in gc.get_objects(generation=g)}}
        print(all(id(n) in old and id(n) not in young for n in kept), gc.get_count()[0] < 700, cycle() is not None)
        gc.collect()
        print(cycle() is None)
        gc.freeze()
        frozen = gc.get_freeze_count()
        again, _ = made()
        print(gc.get_freeze_count() == frozen, id(again[0]) not in {{id(o) for o in gc.get_objects(generation=2)}})
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True"] * 6, done.stdout
