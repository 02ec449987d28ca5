"""The one description of a library (router/spec.py): the CLI, serve, the hook's in-process fallback and the
Python API read the same folders and keep the index in the same place, computed here from the documented rules."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from pathlib import Path

import pytest

from cli_support import run
from router.errors import ConfigError
from router.routing import Router
from router.spec import LibrarySpec, in_git_work_tree
from serve_support import write_skill


def digest(folders: list[str], profile: str) -> str:
    """The documented library hash: sha256 of the sorted-keys JSON of its absolute sources and profile, 10 digits."""
    key = json.dumps({"sources": folders, "profile": profile}, sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:10]


@pytest.fixture()
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``repo`` (a git work tree) whose prompts run from ``repo/pkg/sub``, with a private home and cache."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "pkg" / "sub").mkdir(parents=True)
    write_skill(home / ".codex" / "skills", "release-notes", "Write release notes from the merged pull requests.")
    write_skill(home / ".agents" / "skills", "sql-tuning", "Speed up a slow SQL query.")
    write_skill(repo / ".agents" / "skills", "go-review", "Review Go code for bugs and style.")
    write_skill(repo / "pkg" / ".agents" / "skills", "proto-lint", "Lint protobuf files.")
    write_skill(repo / "pkg" / "sub" / ".codex" / "skills", "sub-build", "Build the sub package.")
    write_skill(home / ".claude" / "skills", "commit-messages", "Write a commit message for the staged diff.")
    write_skill(repo / ".claude" / "skills", "weather-forecast", "Give the weather forecast for a city.")
    write_skill(repo / "pkg" / "sub" / ".claude" / "skills", "unit-conversion", "Convert between units.")
    return repo


def expected_folders(harness: str, repo: Path) -> list[str]:
    """What each harness reads from repo/pkg/sub (harness-profiles.md): codex the working folder's .codex, the
    user's two folders, and every .agents/skills from the repository root down; claude-code the personal folder
    and every .claude/skills from the working folder up to the repository root."""
    home = repo.parent / "home"
    sub = repo / "pkg" / "sub"
    if harness == "codex":
        folders = [sub / ".codex/skills", home / ".codex/skills", home / ".agents/skills", repo / ".agents/skills",
                   repo / "pkg/.agents/skills"]
    else:
        folders = [home / ".claude/skills", sub / ".claude/skills", repo / ".claude/skills"]
    return [str(f) for f in folders]


def expected_index(harness: str, repo: Path) -> Path:
    folders = expected_folders(harness, repo)
    return repo.parent / "cache" / "skill-router" / "indexes" / f"skills-{harness}-{digest(folders, harness)}"


def no_index_in(folder: Path) -> None:
    strays = [d for d, dirs, _ in os.walk(folder) if ".skill-router-index" in dirs or d.endswith(".index")]
    assert strays == []


@pytest.mark.parametrize("harness", ["codex", "claude-code"])
def test_a_harness_library_has_one_set_of_folders_and_one_index_in_the_user_cache(
        harness: str, repo: Path, tmp_path: Path) -> None:
    spec = LibrarySpec.create(profile=harness, cwd=repo / "pkg" / "sub")
    assert spec.harness and spec.in_user_cache
    assert list(spec.folders) == expected_folders(harness, repo)
    assert spec.index_folder == str(expected_index(harness, repo))
    assert spec.learned_folder == str(repo.parent / "cache" / "skill-router" / "indexes" /
                                      f"skills-learned-{digest(expected_folders(harness, repo), '')}")


@pytest.mark.parametrize("harness", ["codex", "claude-code"])
def test_cli_serve_and_hook_fallback_agree_on_folders_and_index(harness: str, repo: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from router.cli import build_parser
    from router.cli.serve import build_service
    from router.serve import hooks

    sub = repo / "pkg" / "sub"
    config = tmp_path / "route-all.json"
    config.write_text(json.dumps({"route_above": 0, "k": 2, "no_skill": False}))  # folders, not abstention
    index = expected_index(harness, repo)
    folders = expected_folders(harness, repo)

    # The hook runs from elsewhere; the working folder comes in its payload.
    monkeypatch.chdir(tmp_path)
    parser = argparse.ArgumentParser()
    hooks.add_arguments(parser)
    hook_args = parser.parse_args([harness, "--config", str(config)])
    context = hooks.route_in_process(harness, "convert 5 miles to kilometres", hook_args, str(sub))
    assert context.startswith("Skills most relevant to this request (skill-router):\n")
    assert (index / "manifest.json").is_file()
    manifest = json.loads((index / "manifest.json").read_text())
    assert json.loads(manifest["library"])["sources"] == folders

    # The command line from the same working folder reads the same folders and finds the index current.
    monkeypatch.chdir(sub)
    status, out, _ = run(capsys, "index", "--profile", harness, "--config", str(config), "--json")
    summary = json.loads(out)
    assert status == 0 and summary["index"] == str(index) and summary["embedded"] == 0
    assert summary["skills"] == (5 if harness == "codex" else 3)

    # serve watches exactly those folders and logs beside that index.
    service, watch = build_service(build_parser().parse_args(["serve", "--profile", harness, "--config",
                                                              str(config)]))
    try:
        assert watch == folders
        assert service.decision_log.path == str(index / "decisions.jsonl")
    finally:
        service.close()
    no_index_in(repo)
    no_index_in(repo.parent / "home")


def test_a_library_inside_a_git_work_tree_keeps_its_index_in_the_user_cache(repo: Path, tmp_path: Path) -> None:
    library = repo / "pkg" / ".agents" / "skills"
    spec = LibrarySpec.create([str(library)], profile="genkit")
    assert in_git_work_tree(str(library)) and not spec.harness
    assert spec.index_folder == str(tmp_path / "cache" / "skill-router" / "indexes" /
                                    f"skills-genkit-{digest([str(library)], 'genkit')}")
    outside = tmp_path / "plain" / "skills"
    write_skill(outside, "one", "One skill.")
    beside = LibrarySpec.create([str(outside)], profile="genkit")
    assert not in_git_work_tree(str(outside))
    assert beside.index_folder == str(tmp_path / "plain" / ".skill-router-index" /
                                      f"skills-genkit-{digest([str(outside)], 'genkit')}")
    catalog = repo / "tools.jsonl"
    catalog.write_text('{"id": "a", "name": "a", "description": "A tool."}\n')
    label = f"tools.jsonl-agentskills-{digest([str(catalog)], 'agentskills')}"
    assert LibrarySpec.create(catalog=catalog).index_folder == str(tmp_path / "cache" / "skill-router" / "indexes" /
                                                                   label)


def test_the_python_api_builds_from_the_same_spec(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo / "pkg" / "sub")
    router = Router.from_skills(None, "claude-code")
    assert router.index_folder == str(expected_index("claude-code", repo))
    assert [s.name for s in router.skills] == ["commit-messages", "unit-conversion", "weather-forecast"]


def test_a_spec_is_frozen_and_refuses_both_sources(tmp_path: Path) -> None:
    spec = LibrarySpec.create(["skills"], profile="genkit")
    with pytest.raises(AttributeError):
        spec.roots = ("other",)  # type: ignore[misc]
    with pytest.raises(ConfigError, match=r"^give either skill folders \(--skills\) or a catalogue \(--catalog\), "
                                          r"not both$"):
        LibrarySpec.create(["skills"], catalog=tmp_path / "c.jsonl")
    with pytest.raises(ConfigError, match="^--harness-model needs a harness whose budget depends on its model"):
        LibrarySpec.create(["skills"], profile="genkit", harness_model="gpt-5")
