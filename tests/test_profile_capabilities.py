"""Declared profile capabilities (router.profiles.base): which profile has which, and that a new harness profile
is picked up by the CLI, the hook command and the service's hook endpoint with no other change."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Iterator, Sequence

import httpx
import pytest

import router.profiles as profiles
from cli_support import run
from router.profiles import Capability, get_profile, with_capability
from router.profiles.agentskills import AgentSkillsProfile
from router.profiles.base import Discovery, Profile
from router.serve import hooks
from router.skill import Skill
from serve_support import copy_bundled, running, write_skill


class TinyProfile(AgentSkillsProfile):
    """A harness that reads ``<cwd>/.tiny/skills``, has a prompt hook and a config switch, and nothing else."""

    name = "tiny"

    def __init__(self, cwd: str | os.PathLike[str] | None = None) -> None:
        super().__init__()
        self.cwd = cwd

    def harness_paths(self) -> list[str]:
        return [os.path.join(os.fspath(self.cwd or os.getcwd()), ".tiny", "skills")]

    def in_folder(self, cwd: str | os.PathLike[str]) -> TinyProfile:
        return TinyProfile(cwd)

    def discover(self, roots: Sequence[str | os.PathLike[str]] | None = None) -> Discovery:
        return super().discover(self.harness_folders() if roots is None else roots)

    def hook_context(self, skills: Sequence[Skill]) -> str:
        return "tiny: " + " ".join(s.name for s in skills[:2]) if skills else ""

    def restrict_config(self, skills: Sequence[Skill], keep: Sequence[Skill]) -> str:
        return "".join(f"hide {s.name}\n" for s in skills if s not in keep)


@pytest.fixture(scope="module")
def tiny() -> Iterator[Profile]:
    """The tiny profile registered as the package registers every module's ``PROFILE``."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(profiles._PROFILES, "tiny", TinyProfile())
        yield profiles._PROFILES["tiny"]


def test_each_profile_declares_what_it_overrides() -> None:
    assert {n: sorted(c.name for c in get_profile(n).capabilities) for n in profiles.profile_names()} == {
        "agentskills": [], "genkit": [], "unreal": [],
        "claude-code": ["CONFIG_RESTRICTION", "HARNESS_FOLDERS", "HARNESS_MODEL", "HOOK"],
        "codex": ["CONFIG_RESTRICTION", "HARNESS_FOLDERS", "HARNESS_MODEL", "HOOK"]}
    assert TinyProfile.capabilities == {Capability.HARNESS_FOLDERS, Capability.HOOK, Capability.CONFIG_RESTRICTION}
    assert with_capability(Capability.HOOK) == ("claude-code", "codex")


def test_a_missing_capability_says_so() -> None:
    genkit = get_profile("genkit")
    with pytest.raises(NotImplementedError, match="^the genkit profile has no HOOK capability"):
        genkit.hook_context([])
    assert (genkit.harness_paths(), genkit.harness_folders(), genkit.harness_model, genkit.budget_report([])) \
        == ([], [], None, None)
    assert genkit.in_folder("/elsewhere") is genkit


def test_the_skill_call_names_the_tools_first_required_parameter(tmp_path: Path) -> None:
    skills = [Skill(name="alpha", description="a", path=str(write_skill(tmp_path, "alpha", "a")))]
    assert get_profile("claude-code").skill_call("alpha", skills) == ({"skill": "alpha"}, "Skill")
    assert get_profile("codex").skill_call("alpha", skills) == ({"name": "alpha"}, None)
    assert get_profile("genkit").skill_call("alpha", skills) == ({"skillName": "alpha"}, "use_skill")


def test_a_new_profile_gets_the_cli_and_the_hook_command(tiny, tmp_path: Path, capsys, monkeypatch) -> None:
    lib = tmp_path / "lib"
    for name in ("alpha", "beta"):
        write_skill(lib, name, f"The {name} skill.")
    assert run(capsys, "prompt", "--profile", "tiny", "--skills", str(lib), "--exclude", "beta",
               "--emit-config") == (0, "hide beta\n", "")
    assert hooks.harnesses() == ("claude-code", "codex", "tiny")
    assert hooks.hook_context("tiny", [Skill(name="alpha", description="a")]) == "tiny: alpha"
    with pytest.raises(hooks.HookError, match="^unknown harness 'genkit': choose one of claude-code, codex, tiny$"):
        hooks.hook_context("genkit", [])
    # The in-process fallback reads what the harness reads from the prompt's working folder.
    work = tmp_path / "work"
    write_skill(work / ".tiny" / "skills", "gamma", "The gamma skill.")
    monkeypatch.chdir(tmp_path)
    assert [s.name for s in hooks.in_process_router("tiny", hook_args("tiny"), str(work)).skills] == ["gamma"]


def hook_args(harness: str, *options: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    hooks.add_arguments(parser)
    return parser.parse_args([harness, *options])


@pytest.mark.model
def test_a_new_profile_gets_a_hook_endpoint(tiny, tmp_path: Path) -> None:
    library = copy_bundled(tmp_path / "skills")
    argv = ["--skills", str(library), "--index-dir", str(tmp_path / "idx"), "--no-watch"]
    prompt = {"hook_event_name": "UserPromptSubmit", "prompt": "what will the weather be tomorrow in Lyon?"}
    with running(argv, mcp=False) as (url, service), httpx.Client(base_url=url, trust_env=False) as client:
        answer = client.post("/v1/hooks/tiny", json=prompt)
        best = [m.name for m in service.router.route(prompt["prompt"]).matches[:2]]
        assert answer.json() == {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                                        "additionalContext": "tiny: " + " ".join(best)}}
        unknown = client.post("/v1/hooks/genkit", json=prompt)
        assert (unknown.status_code, unknown.json()) == (404, {"error": {
            "type": "unknown_harness", "message": "unknown harness 'genkit': choose one of claude-code, codex, tiny"}})
        spec = client.get("/openapi.json").json()
        [harness] = spec["paths"]["/v1/hooks/{harness}"]["post"]["parameters"]
        assert harness["schema"]["enum"] == ["claude-code", "codex", "tiny"]


def test_the_hook_fallback_reads_the_harness_folders_of_the_prompts_folder(tmp_path: Path, monkeypatch) -> None:
    """From ``repo/pkg/sub`` Claude Code reads ``repo/.claude/skills`` and Codex ``repo/.agents/skills``: so does
    the hook's in-process router (it used to read only ``<cwd>/.claude/skills`` and ``~/.codex/skills``)."""
    home, repo = tmp_path / "home", tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    sub = repo / "pkg" / "sub"
    sub.mkdir(parents=True)
    write_skill(repo / ".claude" / "skills", "claude-side", "Read by Claude Code.")
    write_skill(repo / ".agents" / "skills", "agents-side", "Read by Codex.")
    write_skill(home / ".codex" / "skills", "codex-home", "Read by Codex from its home.")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    index = ["--index-dir", str(tmp_path / "idx")]
    claude = hooks.in_process_router("claude-code", hook_args("claude-code", *index), str(sub))
    assert [s.name for s in claude.skills] == ["claude-side"]
    codex = hooks.in_process_router("codex", hook_args("codex", *index), str(sub))
    assert sorted(s.name for s in codex.skills) == ["agents-side", "codex-home"]
    out = json.dumps([s.path for s in codex.skills])
    assert str(repo / ".agents" / "skills" / "agents-side" / "SKILL.md") in out
