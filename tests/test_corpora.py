"""Every profile loads the real public skill libraries in ../shared/corpora, finding what its harness finds.

Expectations are computed here from the files themselves (os.walk, glob, a plain read of the ``name:`` line),
never by asking a profile.
"""

from __future__ import annotations

import glob
import json
import os
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from router.profiles import get_profile, profile_names


def shared_folder() -> Path | None:
    candidates = [Path(__file__).resolve().parents[2] / "shared"]
    if os.environ.get("SKILL_ROUTER_SHARED"):
        candidates.append(Path(os.environ["SKILL_ROUTER_SHARED"]))
    return next((c for c in candidates if (c / "corpora").is_dir()), None)


SHARED = shared_folder()
if SHARED is None:
    pytest.skip("the shared corpora folder (../shared relative to the repository, or $SKILL_ROUTER_SHARED) is not "
                "present", allow_module_level=True)

CORPORA = SHARED / "corpora"
FOLDERS = ["anthropic-skills/skills", "scientific-skills/scientific-skills", "awesome-skills/skills"]


def all_skill_files(root: Path) -> list[Path]:
    """Every SKILL.md below ``root``, depth first: a folder's own file, then its sub-folders in sorted order."""
    found = []
    for folder, dirs, files in os.walk(root, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d not in (".git", "node_modules"))
        if "SKILL.md" in files and Path(folder) != root:
            found.append(Path(folder) / "SKILL.md")
    return found


def line_name(path: Path) -> str:
    """The ``name:`` value as a line parser reads it: the last exact ``name:`` line before the closing fence."""
    lines = path.read_bytes().decode("utf-8", "replace").split("\n")
    name = ""
    for line in lines[1:]:
        line = line.rstrip("\r")
        if line.strip() == "---":
            break
        if line.startswith("name:"):
            name = line[len("name:"):].strip()
    return name


def yaml_name(path: Path) -> str:
    text = path.read_text(encoding="utf-8").lstrip("\ufeff").replace("\r\n", "\n")
    data = yaml.safe_load(text.split("---", 2)[1])
    return str(data["name"]).strip()


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("profile_name", profile_names())
def test_every_skill_file_parses_without_an_exception(folder, profile_name):
    profile = get_profile(profile_name)
    files = all_skill_files(CORPORA / folder)
    assert files
    for path in files:
        try:
            skill = profile.parse(str(path), path.read_bytes(), path.parent.name)
        except ValueError:
            # Codex rejects a file with its own message (e.g. a description over 1,024 characters): which files,
            # and the message, are checked in test_corpora_harnesses.py.
            assert profile_name == "codex"
            continue
        assert skill.name and skill.description


@pytest.mark.parametrize("folder", FOLDERS)
def test_genkit_finds_exactly_the_first_level(folder):
    root = CORPORA / folder
    expected = sorted(
        (d.name for d in root.iterdir()
         if d.is_dir() and not d.is_symlink() and not d.name.startswith(".") and (d / "SKILL.md").is_file()),
        key=os.fsencode)
    found = get_profile("genkit").discover([root])
    assert [s.name for s in found.skills] == expected
    assert found.errors == () and found.warnings == ()


@pytest.mark.parametrize("folder", FOLDERS)
def test_unreal_reports_duplicate_names_and_keeps_the_first(folder):
    root = CORPORA / folder
    # Go's Glob sorts the names inside each folder, so "a/" comes before "a-b/" (a whole-path sort differs).
    matches = sorted(glob.glob(os.path.join(glob.escape(str(root)), "*", "SKILL.md"), include_hidden=True),
                     key=lambda match: os.fsencode(Path(match).parent.name))
    kept, duplicates, seen = [], [], set()
    for match in matches:
        name = line_name(Path(match))
        if name in seen:
            duplicates.append(f"skill {json.dumps(match)}: duplicate name {json.dumps(name)}")
        else:
            seen.add(name)
            kept.append(match)
    found = get_profile("unreal").discover([root])
    assert [s.path for s in found.skills] == kept
    assert found.errors == tuple(duplicates)


@pytest.mark.parametrize("folder", FOLDERS)
def test_agentskills_finds_nested_skills(folder):
    root = CORPORA / folder
    kept, first_of = [], {}
    for path in all_skill_files(root):
        name = yaml_name(path)
        if name not in first_of:
            first_of[name] = path
            kept.append(str(path))
    found = get_profile("agentskills").discover([root])
    assert [s.path for s in found.skills] == kept
    assert not [w for w in found.warnings if w.startswith("skipping ") and "is already used by" not in w]


def test_awesome_skills_has_the_known_shape():
    root = CORPORA / "awesome-skills" / "skills"
    files = all_skill_files(root)
    nested = [p for p in files if len(p.relative_to(root).parts) > 2]
    assert len(files) == 555 and len(nested) == 11
    assert sorted({p.relative_to(root).parts[0] for p in nested}) == ["app-builder", "game-development"]
    pairs = [name for name, count in Counter(line_name(p) for p in files).items() if count > 1]
    assert sorted(pairs) == ["brand-guidelines", "internal-comms"]
    counts = {name: len(get_profile(name).discover([root]).skills) for name in profile_names()}
    # codex: breadth first, nested and same-name skills kept, no description here over 1,024 characters;
    # claude-code: the 544 first-level folders (Claude Code 2.1.332 lists same-name skills once per folder).
    assert counts == {"genkit": 544, "unreal": 542, "agentskills": 553, "codex": 555, "claude-code": 544}


@pytest.mark.parametrize("profile_name", profile_names())
def test_the_largest_folder_loads_quickly(profile_name):
    root = CORPORA / "awesome-skills" / "skills"
    start = time.perf_counter()
    get_profile(profile_name).discover([root])
    assert time.perf_counter() - start < 30.0
