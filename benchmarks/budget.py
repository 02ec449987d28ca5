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
- Claude Code (2.1.332): the listing budget of its default model claude-opus-5-5 (30,000 characters), of the 4.5
  models (8,000) and of ``[1m]`` models (40,000), its 13 built-in skills counted (``budget_report``, the numbers
  the oracle tests check against the binary). Counted: user skills listed with a description and by name only
  (over budget every skill starts name-only and full lines come back, most used first, while they fit; no usage
  is known here).

Routed, the harness sees the shortlist: the router's hook context and the listing restricted to the routed skills
(``prompt --emit-config``). No request is needed to bound that: the 5 skills with the longest listing lines are the
worst case, so if they fit with full descriptions, every routed top 5 does. Writes benchmarks/results/budget.json.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from common import CORPORA, save
from router.profiles.claude_code import DEFAULT_MODEL, SHORTLIST_MAX_DESCRIPTION, ClaudeCodeProfile
from router.profiles.codex import Budget, CodexProfile

FOLDERS = ["anthropic-skills/skills", "scientific-skills/scientific-skills", "awesome-skills/skills"]
CONTEXT_WINDOW = 200_000
ROUTED = 5
CLAUDE_MODELS = {"claude_code_default_model": DEFAULT_MODEL, "claude_code_sonnet-4.5": "claude-sonnet-4-5",
                 "claude_code_sonnet-4.5[1m]": "claude-sonnet-4-5[1m]"}


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


def claude_row(skills, model: str) -> dict:
    claude = ClaudeCodeProfile().with_model(model)
    report = claude.budget_report(skills)
    listed = claude.listed(skills)
    worst = sorted(listed, key=lambda s: len(s.description), reverse=True)[:ROUTED]
    routed = claude.budget_report(worst)
    return {"model": model, "budget": f"{report['budget']} characters", "full_listing_chars": report["chars"],
            "skills": len(skills), "listed": len(listed), "with_description": report["user_full"],
            "name_only": len(listed) - report["user_full"],
            "descriptions_over_250": sum(1 for s in listed if len(s.description) > SHORTLIST_MAX_DESCRIPTION),
            "routed_worst_5": {"with_description": routed["user_full"],
                               "hook_chars": len(claude.hook_context(worst))}}


def main() -> None:
    libraries = {folder: [str(CORPORA / folder)] for folder in FOLDERS}
    libraries["all three"] = [str(CORPORA / folder) for folder in FOLDERS]
    out: dict = {"context_window_tokens": CONTEXT_WINDOW, "libraries": {}}
    for label, roots in libraries.items():
        with tempfile.TemporaryDirectory() as scratch:
            found = codex_skills(FOLDERS if label == "all three" else [label], Path(scratch))
            row = {key: codex_row(found, budget) for key, budget in CODEX_BUDGETS.items()}
        claude_skills = ClaudeCodeProfile().discover(roots).skills
        for key, model in CLAUDE_MODELS.items():
            row[key] = claude_row(claude_skills, model)
        out["libraries"][label] = row
        for key, value in row.items():
            print(f"{label:40} {key:26} {value}", flush=True)
    print("wrote", save("budget", out))


if __name__ == "__main__":
    main()
