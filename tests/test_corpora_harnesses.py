"""codex and claude-code over the real libraries in ../shared/corpora, laid out where each harness looks.

Each corpus folder is symlinked (never copied) into a temporary project: as ``<repo>/.agents/skills`` for Codex
and as ``<repo>/.claude/skills`` for Claude Code, with ``.git`` marking the repository root, the working folder at
the root and an empty home. Expectations are computed from the files with os.walk and a plain YAML read, never by
asking a profile, and the resulting counts are also written out:

- Codex scans breadth first, 6 levels deep, and keeps every SKILL.md, nested ones and same names included, except
  those its loader rejects: here only descriptions over 1,024 characters (anthropic-skills ``claude-api``,
  scientific-skills ``database-lookup``). 13 -> 12, 129 -> 128, 555 -> 555.
- Claude Code reads one level below a skills folder; a repeated name keeps the first folder in sorted order.
  anthropic-skills 13 and scientific-skills 129 have no nested or repeated skills; awesome-skills has 544
  first-level skill folders, two names among them repeated (brand-guidelines, internal-comms): 542.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from router.profiles.claude_code import ClaudeCodeProfile, collation_key, listing_cost
from router.profiles.claude_code_builtins import BUILTIN_SKILLS
from router.profiles.codex import CodexProfile

CORPORA = next((c / "corpora" for c in [Path(__file__).resolve().parents[2] / "shared",
                                         Path(os.environ.get("SKILL_ROUTER_SHARED", "/nonexistent"))]
                if (c / "corpora").is_dir()), None)
if CORPORA is None:
    pytest.skip("the shared corpora folder is not present", allow_module_level=True)

FOLDERS = ["anthropic-skills/skills", "scientific-skills/scientific-skills", "awesome-skills/skills"]
COUNTS = {  # folder: (codex, claude-code)
    "anthropic-skills/skills": (12, 13),
    "scientific-skills/scientific-skills": (128, 129),
    "awesome-skills/skills": (555, 544),
}


def project(tmp_path: Path, corpus: Path, where: str) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / where).mkdir()
    (repo / where / "skills").symlink_to(corpus, target_is_directory=True)
    (tmp_path / "home").mkdir()
    return repo


def frontmatter(path: Path) -> dict:
    text = path.read_text(encoding="utf-8").replace("\r\n", "\n")
    try:
        data = yaml.safe_load(text.split("\n---", 1)[0].removeprefix("---\n"))
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def files_within(root: Path, depth: int) -> list[Path]:
    found = []
    for folder, dirs, files in os.walk(root):
        level = len(Path(folder).relative_to(root).parts)
        dirs[:] = [d for d in dirs if not d.startswith(".") and level < depth]
        if "SKILL.md" in files:
            found.append(Path(folder) / "SKILL.md")
    return found


@pytest.mark.parametrize("folder", FOLDERS)
def test_codex_finds_every_skill_file_and_rejects_only_what_its_loader_rejects(tmp_path, folder):
    corpus = (CORPORA / folder).resolve()  # Codex keeps canonical paths; the corpora may sit behind a symlink
    repo = project(tmp_path, corpus, ".agents")
    profile = CodexProfile(cwd=repo, home=tmp_path / "home", codex_home=tmp_path / "codex-home",
                           admin_root=tmp_path / "admin")
    files = files_within(corpus, 6)

    found = profile.discover()

    # Codex 0.171.0 keeps descriptions over 1,024 characters (it cuts them when listing): every file is a skill.
    assert sorted(s.path for s in found.skills) == sorted(str(p) for p in files)
    assert found.errors == () and found.warnings == ()
    assert len(found.skills) == {"anthropic-skills/skills": 13, "scientific-skills/scientific-skills": 129,
                                 "awesome-skills/skills": 555}[folder]


@pytest.mark.parametrize("folder", FOLDERS)
def test_claude_code_finds_every_first_level_folder(tmp_path, folder):
    # Claude Code 2.1.332 identifies a skill by its folder: same-name skills are all listed, in case-insensitive
    # folder order (tests/test_oracle_claude_code.py checks this against the binary on the same corpora)
    corpus = CORPORA / folder
    repo = project(tmp_path, corpus, ".claude")
    profile = ClaudeCodeProfile(cwd=repo, home=tmp_path / "home")
    folders = sorted((child.name for child in corpus.iterdir() if (child / "SKILL.md").is_file()),
                     key=collation_key)

    found = profile.discover()

    skills_dir = repo / ".claude" / "skills"
    assert [(s.name, s.path) for s in found.skills] == [(f, str(skills_dir / f / "SKILL.md")) for f in folders]
    assert len(found.skills) == COUNTS[folder][1]
    assert profile.render(found.skills).startswith("The following skills are available for use with the Skill tool:")


@pytest.mark.parametrize("folder", FOLDERS)
def test_both_listings_render_within_their_budgets(folder):
    codex = CodexProfile(admin_root=None)
    skills = codex.discover([CORPORA / folder]).skills
    listing = codex.listing(skills)
    assert listing.text.startswith("<skills_instructions>\n") and len(listing.included) + listing.omitted == len(
        skills)
    claude = ClaudeCodeProfile(char_budget=8000)
    entries = claude.entries(claude.discover([CORPORA / folder]).skills)
    kept = {name for name, _, fixed in BUILTIN_SKILLS if fixed}  # the built-in skills keep their lines
    assert listing_cost(entries) <= 8000 or all(not d for n, d in entries if n not in kept)
