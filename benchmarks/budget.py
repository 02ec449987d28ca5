"""How many skills keep their description in the Codex and Claude Code listings, with and without routing.

    python benchmarks/budget.py

Both harnesses cut their skill listing to a budget. For each corpus folder of ../shared/corpora, and for all
three together (one user's library), this loads the skills with the codex and claude-code profiles and renders
each harness's own listing:

- Codex (0.171.0, the corpus folders symlinked into ``$CODEX_HOME/skills`` as the oracle tests lay them out):
  2% of the context window in tokens at 4 bytes a token, for its default model gpt-6.2-sol (500,000: 10,000
  tokens), for gpt-5.5 and any model it does not know (272,000: 5,440 tokens) and for a 200,000-token window
  (4,000 tokens). Counted: skills listed with their full description, listed with a cut description, listed with
  none, and left out.
- Claude Code: 1% of a 200,000-token window at 4 characters a token (8,000 characters). Counted: skills listed
  with a description and listed by name only (the least used lose theirs; no usage is known here, so the last
  listed lose theirs first).

Routed, the harness sees the shortlist: the router's hook context and the listing restricted to the routed skills
(``prompt --emit-config``). No request is needed to bound that: the 5 skills with the longest listing lines are the
worst case, so if they fit with full descriptions, every routed top 5 does. Writes benchmarks/results/budget.json.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from common import CORPORA, save
from router.profiles.claude_code import SHORTLIST_MAX_DESCRIPTION, ClaudeCodeProfile
from router.profiles.codex import Budget, CodexProfile

FOLDERS = ["anthropic-skills/skills", "scientific-skills/scientific-skills", "awesome-skills/skills"]
CONTEXT_WINDOW = 200_000
ROUTED = 5


CODEX_BUDGETS = {"codex_gpt-6.2-sol": Budget.for_model("gpt-6.2-sol"), "codex_gpt-5.5": Budget.for_model("gpt-5.5"),
                 "codex_2pct_of_200k": Budget.for_context(CONTEXT_WINDOW)}


def codex_skills(folders: list[str], scratch: Path) -> list:
    """The skills Codex finds with these corpus folders symlinked into ``$CODEX_HOME/skills``."""
    skills_dir = scratch / "codex-home" / "skills"
    skills_dir.mkdir(parents=True)
    for folder in folders:
        os.symlink(CORPORA / folder, skills_dir / folder.split("/")[0])
    (scratch / "work").mkdir()
    codex = CodexProfile(cwd=scratch / "work", codex_home=scratch / "codex-home", home=scratch / "home",
                         admin_root=None, bundled=False)
    return list(codex.discover().skills)


def codex_row(skills, budget: Budget) -> dict:
    codex = CodexProfile(admin_root=None)
    listing = codex.listing(skills, budget)
    lines = [line for line in listing.text.split("\n### Available skills\n", 1)[1].split("\n")
             if line.startswith("- ") and line.endswith(")")]
    bare = sum(1 for line in lines if ": (file: " in line)  # every description is non-empty
    full = 0 if listing.omitted else len(listing.included) - listing.truncated_count
    worst = sorted(skills, key=lambda s: len(f"- {s.name}: {s.description} (file: {s.path})"), reverse=True)
    routed = codex.listing(worst[:ROUTED], budget)
    return {"budget": f"{budget.limit} tokens", "skills": len(skills), "listed": len(listing.included),
            "full_description": full, "cut_description": len(listing.included) - full - bare,
            "no_description": bare, "left_out": listing.omitted, "warning": listing.warning,
            "routed_worst_5": {"listed": len(routed.included), "full_description": routed.truncated_chars == 0}}


def claude_row(skills) -> dict:
    claude = ClaudeCodeProfile(context_window=CONTEXT_WINDOW)
    budget = claude.budget_chars()
    entries = claude.entries(skills, budget)
    worst = sorted(claude.listed(skills), key=lambda s: len(s.description), reverse=True)[:ROUTED]
    routed = claude.entries(worst, budget)
    hook = claude.hook_context(worst)
    listed = claude.listed(skills)
    return {"budget": f"{budget} characters", "skills": len(skills), "listed": len(entries),
            "with_description": sum(1 for _, d in entries if d), "name_only": sum(1 for _, d in entries if not d),
            "descriptions_over_250": sum(1 for s in listed if len(s.description) > SHORTLIST_MAX_DESCRIPTION),
            "routed_worst_5": {"listed_with_full_description": sum(
                1 for (_, d), s in zip(routed, worst) if d == s.description[:1536]),
                "hook_chars": len(hook)}}


def main() -> None:
    libraries = {folder: [str(CORPORA / folder)] for folder in FOLDERS}
    libraries["all three"] = [str(CORPORA / folder) for folder in FOLDERS]
    out: dict = {"context_window_tokens": CONTEXT_WINDOW, "libraries": {}}
    for label, roots in libraries.items():
        with tempfile.TemporaryDirectory() as scratch:
            found = codex_skills(FOLDERS if label == "all three" else [label], Path(scratch))
            row = {key: codex_row(found, budget) for key, budget in CODEX_BUDGETS.items()}
        claude_skills = ClaudeCodeProfile().discover(roots).skills
        row["claude_code_1pct_of_200k"] = claude_row(claude_skills)
        out["libraries"][label] = row
        for key, value in row.items():
            print(f"{label:40} {key:26} {value}", flush=True)
    print("wrote", save("budget", out))


if __name__ == "__main__":
    main()
