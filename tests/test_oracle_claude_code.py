"""The claude-code profile against the real Claude Code (``HARNESS_VERSION``), byte for byte.

Each library below is laid out in a temporary home and project, the real binary runs once on it offline
(``tests/oracle_claude.py``: every model request goes to a loopback fake Messages API, everything else is refused
and recorded), and the profile's discovery, labels, descriptions, order, listing text, over-budget lines, tool
results, hook delivery and ``--emit-config`` are compared with what the binary sent. The fixture names are the
ones the profile's docstring cites for each rule. The binary is installed once per machine into the npm cache
folder (``oracle_folder``); nothing is written to the repository.
"""

from __future__ import annotations

import ast
import itertools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from oracle_claude import Reply, Run, run_claude
from router.profiles.claude_code import (BUDGET_ENV, HARNESS_VERSION, LISTING_HEADER, ClaudeCodeProfile,
                                         edit_distance, label, listing_cost, tool_error_content)
from router.profiles.claude_code_builtins import BUILTIN_SKILLS, SUGGESTED_NAMES
from router.errors import SkillToolError
from router.registry import SkillRegistry
from router.skill import Skill

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
if not CORPORA.is_dir():
    CORPORA = Path("/work/shared/corpora")
CORPUS_FOLDERS = {"anthropic-skills": "anthropic-skills/skills", "awesome-skills": "awesome-skills/skills",
                  "scientific-skills": "scientific-skills/scientific-skills"}


def fm(*lines: str, body: str = "Body\n") -> str:
    return "---\n" + "".join(line + "\n" for line in lines) + "---\n" + body


LONG = "x" * 1200 + " " + "y" * 900
#: Project skills, folder -> SKILL.md text: one edge case each (the profile's docstring names them).
EDGE: dict[str, str] = {
    "alpha": fm("name: alpha", "description: Project alpha, shadowed by the personal one"),
    "Beta": fm("name: Beta", "description: Capital folder"),
    "gamma-Upper": fm("name: gamma-upper", "description: folder has upper, name lower"),
    "folder-x": fm("name: differs-from-folder", "description: Name differs"),
    ".hidden-skill": fm("name: hidden-skill", "description: Hidden folder"),
    "dup-a": fm("name: dup", "description: first dup"),
    "dup-b": fm("name: dup", "description: second dup"),
    "bom": "\ufeff" + fm("name: bom", "description: Has a BOM"),
    "crlf": fm("name: crlf", "description: CRLF file", body="Line one\nLine two\n").replace("\n", "\r\n"),
    "colon": fm("name: colon", "description: Use this skill when: the user asks"),
    "unclosed": fm("name: unclosed", "description: [unclosed"),
    "nodesc-heading": fm("name: nodesc-heading", body="# Title Here\n\nParagraph text\n"),
    "nodesc-lines": fm("name: nodesc-lines", body="\nFirst line\nsecond line\n\nmore\n"),
    "nodesc-h2": fm("name: nodesc-h2", body="## Sub *title*\ntext\n"),
    "literal": fm("name: literal", "description: |", "  line one", "  line two", ""),
    "literal-blanks": fm("description: |", "  a ", "    b", "", "  c"),
    "folded": fm("name: folded", "description: >", "  fold a", "  fold b"),
    "plain-multi": fm("name: plain-multi", "description: first part", "  continued part"),
    "long": fm("name: long", "description: " + LONG),
    "len1536": fm("name: len1536", "description: " + "a" * 1536),
    "len1537": fm("name: len1537", "description: " + "b" * 1537),
    "when": fm("name: when", "description: Has when", "when_to_use: When asked nicely"),
    "when-only": fm("name: when-only", "when_to_use: Only when"),
    "when-list": fm("description: wl", "when_to_use: [a, b]"),
    "when-cut": fm("description: " + "d" * 1000, "when_to_use: " + "w" * 1000),
    "dmi": fm("name: dmi", "description: Not for the model", "disable-model-invocation: true"),
    "dmi-str": fm("name: dmi-str", "description: string true", 'disable-model-invocation: "true"'),
    "dmi-yes": fm("description: dmi yes", "disable-model-invocation: yes"),
    "dmi-false": fm("description: dmi false", "disable-model-invocation: false"),
    "dmi-bad": "---\ndescription: dmi in invalid yaml: yes\ndisable-model-invocation: true\n---\nBody\n",
    "both-flags": fm("description: both", "disable-model-invocation: true", "user-invocable: false"),
    "not-user": fm("name: not-user", "description: Model only", "user-invocable: false"),
    "quoted": fm("name: quoted", 'description: "quoted: text"'),
    "number": fm("name: number", "description: 42"),
    "list-desc": fm("name: list-desc", "description: [a, b]"),
    "empty-front": "---\n---\nEmpty front body\n",
    "no-front": "No frontmatter first line\nsecond\n",
    "name-only": fm("name: name-only", body="Body of name-only\n"),
    "spaced": fm('name: "my skill"', "description: Name has a space"),
    "angle": fm("name: angle", "description: Use <b>bold</b> & a > b"),
    "html": fm('description: a &lt; b and <tag attr="x">'),
    "unicode": fm("name: unicode", "description: Café ünïcödé 🎉"),
    "tabbed": fm("name: tabbed", "description: tab\there"),
    "dspace": fm("description: a  b   c"),
    "zeta": fm("name: zeta", "description: Last alphabetically"),
    "_under": fm("name: _under", "description: underscore"),
    "1digit": fm("name: 1digit", "description: digit first"),
    "no-name": fm("description: No name key"),
    "name-empty": fm("name: ''", "description: empty name"),
    "trailing-ws": fm("name: trailing-ws", "description:   padded   "),
    "desc-empty": fm("name: desc-empty", "description: ''", body="Body first line\n"),
    "bad-yaml": "---\nname: bad-yaml\ndescription: ok\n  - weird: [\n---\nBody bad yaml\n",
    "noclose": "---\nname: noclose\ndescription: never closed\nBody\n",
    "esc-cut": fm("description: " + "a" * 1530 + "<<<<<<<<"),
    "emoji-cut": fm("description: " + "a" * 1534 + "🎉🎉"),
    "long-uni": fm("description: " + "é" * 1600),
    "n-upper": fm("name: UPPER", "description: upper name"),
    "n-under": fm("name: with_under", "description: underscore name"),
    "n-dots": fm("name: dots.name", "description: dotted"),
    "n-uni": fm("name: ünïcode", "description: unicode name"),
    "n-colon": fm("name: a:b", "description: colon name"),
    "n-long": fm("name: " + "n" * 70, "description: long name"),
    "n-num": fm("name: 123", "description: numeric name"),
    "n-slash": fm("name: a/b", "description: slash"),
    "n-builtin": fm("name: security-review", "description: takes a built-in skill's name"),
    "c-upper": fm("name: C-UPPER", "description: its name is a folder listed after it"),
    "C-UPPER": fm("description: the folder the name above names"),
    "n-later": fm("name: zeta", "description: its name is the folder of a later skill"),
    "d-null": fm("description: null", body="null body\n"),
    "d-tilde": fm("description: ~", body="tilde body\n"),
    "d-true": fm("description: true"),
    "d-yes": fm("description: yes"),
    "d-float": fm("description: 1.0"),
    "d-exp": fm("description: 1e3"),
    "d-hex": fm("description: 0x1A"),
    "d-octal": fm("description: 012"),
    "d-date": fm("description: 2024-01-01"),
    "d-comment": fm("description: foo # comment"),
    "d-colonhash": fm("description: a: b # c"),
    "d-escq": fm('description: "line\\nbreak \\"q\\""'),
    "d-single": fm("description: 'it''s: fine'"),
    "d-brace": fm("description: {a: 1}"),
    "d-star": fm("description: *alias"),
    "d-amp": fm("description: &anchor text"),
    "d-anchor": fm("description: &!%+é:x> text # comment"),
    "d-alias": fm("description: *nowhere"),
    "d-glued": fm("description: >#=y> b"),
    "d-pipe-colon": fm("description: a | b: c"),
    "d-backtick": fm("description: `code`: yes"),
    "d-dash": fm("description: - item"),
    "d-multi-colon": fm("description: Use when: a, b: c"),
    "fence-space": "--- \nname: fence-space\ndescription: fence with space\n--- \nBody\n",
    "late-fence": "\n---\ndescription: late fence\n---\nBody late\n",
    "heading-only": fm(body="# Only Heading\n"),
    "empty-body": "---\nname: empty-body\n---\n",
    "ws-body": fm(body="   \n\n   indented first\n"),
    "keys-only": fm("name: keys-only", "description:", "  nested: value"),
    "extra-keys": fm("name: extra-keys", "description: has more keys", "allowed-tools: [Read, Grep]",
                     "metadata:", "  version: 2"),
}
#: Folders laid out by hand: nested, symlinked, wrongly named file.
SPECIAL = ["inner", "lower-file", "linked", "broken-link", "file-link"]
PERSONAL = {"personal": fm("name: personal", "description: From home"),
            "alpha": fm("name: alpha", "description: Personal alpha")}
COMMANDS = {"cmd.md": fm("description: A command"), "plaincmd.md": "Plain command first line\n",
            "zeta.md": fm("description: command zeta, a skill has this name"),
            "sub/deep.md": fm("description: nested command")}


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))


@dataclass(frozen=True)
class Layout:
    home: Path
    work: Path

    def profile(self, **options: Any) -> ClaudeCodeProfile:
        return ClaudeCodeProfile(cwd=self.work, home=self.home, **options)

    def skills(self, **options: Any) -> list[Skill]:
        return list(self.profile(**options).discover().skills)


def edge_layout(root: Path) -> Layout:
    home, work = root / "home", root / "work"
    skills = work / ".claude" / "skills"
    for folder, text in EDGE.items():
        write(skills / folder / "SKILL.md", text)
    write(skills / "nested" / "inner" / "SKILL.md", fm("name: inner", "description: nested two deep"))
    write(skills / "lower-file" / "skill.md", fm("name: lower-file", "description: lowercase file name"))
    target = root / "outside" / "linked-target"
    write(target / "SKILL.md", fm("name: linked", "description: via symlink"))
    os.symlink(target, skills / "linked")
    os.symlink(root / "nowhere", skills / "broken-link")
    write(root / "outside" / "file-target.md", fm("name: file-link", "description: SKILL.md is a symlink"))
    (skills / "file-link").mkdir()
    os.symlink(root / "outside" / "file-target.md", skills / "file-link" / "SKILL.md")
    for folder, text in PERSONAL.items():
        write(home / ".claude" / "skills" / folder / "SKILL.md", text)
    for name, text in COMMANDS.items():
        write(work / ".claude" / "commands" / name, text)
    return Layout(home, work)


def corpus_layout(root: Path, corpora: list[str]) -> Layout:
    """The corpora's skill folders symlinked into one project's ``.claude/skills`` (the first of a folder name
    wins)."""
    home, work = root / "home", root / "work"
    skills = work / ".claude" / "skills"
    skills.mkdir(parents=True)
    home.mkdir(parents=True)
    for corpus in corpora:
        folder = CORPORA / CORPUS_FOLDERS[corpus]
        for entry in sorted(os.listdir(folder)):
            if (folder / entry / "SKILL.md").is_file() and not (skills / entry).exists():
                os.symlink(folder / entry, skills / entry)
    return Layout(home, work)


# --- reading what the binary sent ----------------------------------------------------------------------------


def checked(run: Run) -> Run:
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.recorded.outside == [], f"the binary tried to reach {run.recorded.outside}"
    assert run.recorded.other == [], f"unexpected requests {run.recorded.other}"
    assert run.main_requests, "the binary sent no conversation request"
    return run


def texts(request: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, text) of every text block of every message of a request, in order."""
    out = []
    for message in request["messages"]:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        out += [(message["role"], b["text"]) for b in blocks if b.get("type") == "text"]
    return out


def sent_listing(run: Run) -> tuple[str, str]:
    """(role, the listing exactly as sent): the paragraph of the system-role message, or the whole
    ``<system-reminder>`` block of the user's message."""
    for role, text in texts(run.main_requests[0]):
        if role == "user" and text.startswith("<system-reminder>\n" + LISTING_HEADER):
            return role, text
        start = text.find(LISTING_HEADER)
        if role == "system" and start >= 0:
            end = text.find("\n\n", start + len(LISTING_HEADER))
            return role, text[start:end if end >= 0 else len(text)]
    raise AssertionError("no skill listing in the first request")


def lines_of(listing: str) -> list[str]:
    body = listing.removeprefix("<system-reminder>\n").removesuffix("\n</system-reminder>")
    return body[len(LISTING_HEADER):].removeprefix("- ").split("\n- ")


def line_for(lines: list[str], folder: str) -> str | None:
    for line in lines:
        head = line.split(": ", 1)[0]
        if head == folder or head.startswith(folder + " ("):
            return line
    return None


def assert_budget_logged(run: Run, profile: ClaudeCodeProfile, skills: list[Skill]) -> None:
    """The binary's own debug line on the budget ("N skills, C chars > B budget") is the profile's report."""
    report = profile.budget_report(skills)
    logged = re.search(r"Skill listing over budget: (\d+) skills, (\d+) chars > (\d+) budget", run.debug)
    over = (report["lines"], report["chars"], report["budget"]) if report["chars"] > report["budget"] else None
    assert (tuple(int(g) for g in logged.groups()) if logged else None) == over


# --- runs, one per library and setting -----------------------------------------------------------------------


HOOK_SKILLS = ["folder-x", "angle", "unicode"]


@pytest.fixture(scope="module")
def edge(tmp_path_factory: pytest.TempPathFactory) -> Layout:
    layout = edge_layout(tmp_path_factory.mktemp("edge"))
    context = layout.profile().hook_context([s for s in layout.skills() if s.name in HOOK_SKILLS])
    output = {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": context}}
    hook_file = layout.home / "hook-output.json"
    hook_file.write_text(json.dumps(output), encoding="utf-8")
    settings = {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": f"cat '{hook_file}'"}]}]}}
    write(layout.home / ".claude" / "settings.json", json.dumps(settings))
    return layout


_RUNS: dict[tuple[Any, ...], Run] = {}


def edge_run(claude_binary: Path, layout: Layout, *, budget: int | None = None, model: str | None = None) -> Run:
    key = ("edge", str(layout.work), budget, model)
    if key not in _RUNS:
        env = {BUDGET_ENV: str(budget)} if budget is not None else {}
        _RUNS[key] = checked(run_claude(claude_binary, layout.home, layout.work, "hello", model=model, env=env))
    return _RUNS[key]


def expected(layout: Layout, *, budget: int | None = None, model: str | None = None) -> str:
    profile = layout.profile(char_budget=budget, model=model)
    return profile.render(list(profile.discover().skills))


def test_the_pinned_binary_is_the_one_installed(claude_binary: Path) -> None:
    import subprocess

    out = subprocess.run([str(claude_binary), "--version"], capture_output=True, text=True, timeout=60,
                         env={"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp")})
    assert out.stdout.strip() == f"{HARNESS_VERSION} (Claude Code)"


# edge cases: the whole listing, then each folder's line


def test_edge_listing_is_the_binarys_byte_for_byte(claude_binary: Path, edge: Layout) -> None:
    role, listing = sent_listing(edge_run(claude_binary, edge))
    assert role == "system"
    assert expected(edge) == listing


CASES = sorted(EDGE) + SPECIAL + ["personal", "cmd", "plaincmd", "sub:deep"]


@pytest.mark.parametrize("folder", CASES)
def test_edge_case_line(claude_binary: Path, edge: Layout, folder: str) -> None:
    """The profile's line for this folder is the binary's (None: not listed by either)."""
    lines = lines_of(sent_listing(edge_run(claude_binary, edge))[1])
    mine = lines_of(expected(edge))
    assert line_for(mine, folder) == line_for(lines, folder)


def test_builtin_skills_follow_the_users_in_the_binarys_order(claude_binary: Path, edge: Layout) -> None:
    lines = lines_of(sent_listing(edge_run(claude_binary, edge))[1])
    names = [name for name, _, _ in BUILTIN_SKILLS]
    assert [line.split(": ", 1)[0] for line in lines[-len(names):]] == names
    assert [f"{n}: {d}" for n, d, _ in BUILTIN_SKILLS] == lines[-len(names):]


def test_hook_context_is_appended_to_the_listings_message(claude_binary: Path, edge: Layout) -> None:
    run = edge_run(claude_binary, edge)
    profile = edge.profile()
    context = profile.hook_context([s for s in edge.skills() if s.name in HOOK_SKILLS])
    assert context.count("\n") == 3
    system = [text for role, text in texts(run.main_requests[0]) if role == "system" and LISTING_HEADER in text]
    assert len(system) == 1
    assert expected(edge) + "\n\n" + profile.hook_block(context) + "\n\n" in system[0]


# budgets: >= 3 budgets and models on the edge library


EDGE_BUDGETS = [pytest.param(3000, None, id="budget-env-3000"), pytest.param(9000, None, id="budget-env-9000"),
                pytest.param(12_000, None, id="budget-env-12000"),
                pytest.param(None, "claude-sonnet-4-5", id="budget-sonnet-4-5"),
                pytest.param(None, "claude-haiku-4-5", id="budget-haiku-4-5")]


@pytest.mark.parametrize(("budget", "model"), EDGE_BUDGETS)
def test_edge_listing_over_budget(claude_binary: Path, edge: Layout, budget: int | None, model: str | None) -> None:
    run = edge_run(claude_binary, edge, budget=budget, model=model)
    role, listing = sent_listing(run)
    profile = edge.profile(char_budget=budget, model=model)
    assert role == ("user" if profile.reminder_style() else "system")
    assert expected(edge, budget=budget, model=model) == listing
    assert_budget_logged(run, profile, list(profile.discover().skills))


def test_older_models_get_the_hook_context_as_a_reminder_of_its_own(claude_binary: Path, edge: Layout) -> None:
    run = edge_run(claude_binary, edge, model="claude-sonnet-4-5")
    profile = edge.profile(model="claude-sonnet-4-5")
    context = profile.hook_context([s for s in edge.skills() if s.name in HOOK_SKILLS])
    assert ("user", profile.hook_block(context)) in texts(run.main_requests[0])


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Layout:
    root = tmp_path_factory.mktemp("small")
    layout = Layout(root / "home", root / "work")
    for number, size in enumerate((120, 40, 300, 75), start=1):
        write(layout.work / ".claude" / "skills" / f"s{number}" / "SKILL.md",
              fm(f"description: {'d' * size}"))
    layout.home.mkdir()
    return layout


def _boundaries(layout: Layout) -> dict[str, int]:
    profile = layout.profile()
    skills = layout.skills()
    rows = profile.entries(skills, budget=10**9)
    full = listing_cost(rows)
    fixed = {name for name, _, keep in BUILTIN_SKILLS if keep}
    bare = [(n, d if n in fixed else "") for n, d in rows]
    first = listing_cost(bare) + len(rows[0][1]) + 2  # exactly room for s1's description
    return {"budget-fits": full, "budget-one-over": full - 1, "budget-exact-fit": first}


@pytest.mark.parametrize("case", ["budget-fits", "budget-one-over", "budget-exact-fit"])
def test_budget_boundaries(claude_binary: Path, small: Layout, case: str) -> None:
    budget = _boundaries(small)[case]
    run = checked(run_claude(claude_binary, small.home, small.work, "hello", env={BUDGET_ENV: str(budget)}))
    listing = sent_listing(run)[1]
    assert expected(small, budget=budget) == listing
    if case == "budget-exact-fit":
        assert "\n- s1: " in listing and "\n- s2\n" in listing


def test_usage_order_decides_which_descriptions_come_back(claude_binary: Path,
                                                          tmp_path: Path) -> None:
    layout = Layout(tmp_path / "home", tmp_path / "work")
    for name in ("s1", "s2", "s3", "s4"):
        write(layout.work / ".claude" / "skills" / name / "SKILL.md", fm(f"description: {name * 100}"))
    usage = {"s3": 1, "s4": 20, "s2": 2}
    now = 1_796_000_000_000
    write(layout.home / ".claude.json", json.dumps(
        {"skillUsage": {k: {"usageCount": v, "lastUsedAt": now} for k, v in usage.items()}}))
    profile = layout.profile(usage=usage)
    skills = list(profile.discover().skills)
    fixed = {name for name, _, keep in BUILTIN_SKILLS if keep}
    bare = [(n, d if n in fixed else "") for n, d in profile.entries(skills, budget=10**9)]
    budget = listing_cost(bare) + 2 * 202 + 10  # room for two descriptions
    run = checked(run_claude(claude_binary, layout.home, layout.work, "hello", env={BUDGET_ENV: str(budget)}))
    listing = sent_listing(run)[1]
    assert layout.profile(usage=usage, char_budget=budget).render(skills) == listing
    assert "\n- s4: " in listing and "\n- s2: " in listing and "\n- s3\n" in listing


# the corpora at several budgets


CORPUS_RUNS = [
    pytest.param(["anthropic-skills"], None, None, id="anthropic-skills-default"),
    pytest.param(["scientific-skills"], None, None, id="scientific-skills-default"),
    pytest.param(["awesome-skills"], None, None, id="awesome-skills-default"),
    pytest.param(["anthropic-skills", "awesome-skills", "scientific-skills"], None, None, id="all-default-30000"),
    pytest.param(["anthropic-skills", "awesome-skills", "scientific-skills"], None, "claude-sonnet-4-5",
                 id="all-sonnet-4-5-8000"),
    pytest.param(["anthropic-skills", "awesome-skills", "scientific-skills"], None, "claude-sonnet-4-5[1m]",
                 id="all-sonnet-4-5-1m-40000"),
    pytest.param(["anthropic-skills", "awesome-skills", "scientific-skills"], 100_000, None, id="all-env-100000"),
    pytest.param(["anthropic-skills", "awesome-skills", "scientific-skills"], 250_000, None, id="all-env-250000"),
]


@pytest.mark.parametrize(("corpora", "budget", "model"), CORPUS_RUNS)
def test_corpus_listing(claude_binary: Path, tmp_path: Path, corpora: list[str], budget: int | None,
                        model: str | None) -> None:
    if not CORPORA.is_dir():
        pytest.fail(f"the corpora are missing: expected them at {CORPORA}")
    layout = corpus_layout(tmp_path, corpora)
    env = {BUDGET_ENV: str(budget)} if budget is not None else {}
    run = checked(run_claude(claude_binary, layout.home, layout.work, "hello", model=model, env=env))
    listing = sent_listing(run)[1]
    mine = expected(layout, budget=budget, model=model)
    assert lines_of(mine) == lines_of(listing)
    assert mine == listing
    profile = layout.profile(char_budget=budget, model=model)
    assert_budget_logged(run, profile, list(profile.discover().skills))


#: folder -> description line: a tag glued to a non-ASCII character ends there, the rest is the value [d-tag]
GLUED_TAGS = {"d-tag": "description: !bx#a&🎉 rest of it", "d-tag-bare": "description: !🎉x",
              "d-tag-secondary": "description: !!str😀 y", "d-tag-spaced": "description: !a é",
              "d-tag-uri": "description: !a/b?c=d&e:f.g~h*i'j(k)l+m$n;o@pé tail"}


def test_yaml_tag_glued_to_text(claude_binary: Path, tmp_path: Path) -> None:
    layout = Layout(tmp_path / "home", tmp_path / "work")
    layout.home.mkdir()
    for folder, line in GLUED_TAGS.items():
        write(layout.work / ".claude" / "skills" / folder / "SKILL.md", fm(line))
    listing = sent_listing(checked(run_claude(claude_binary, layout.home, layout.work, "hello")))[1]
    assert "\n- d-tag: 🎉 rest of it\n" in listing
    assert lines_of(expected(layout)) == lines_of(listing)
    assert expected(layout) == listing


#: folder -> description lines: tabs ending lines of block scalars [literal-tab]
BLOCK_TABS = {
    "literal-tab": ["description: |", "  a \t", "    b", "", "  c"],
    "tab-literal-two": ["description: |", "  a\t\t", "  b"],
    "tab-literal-inner": ["description: |", "  a \t ", "  b"],
    "tab-literal-mid": ["description: |", "  a\tx", "  b"],
    "tab-literal-last": ["description: |", "  a", "  b\t"],
    "tab-literal-strip": ["description: |-", "  a\t \t", "  b"],
    "tab-literal-blank": ["description: |", "  a", "  \t", "  b"],
    "tab-literal-keep": ["name: tab-literal-keep", "description: |+", "  x\t", "  y\t", "when_to_use: w\t"],
    "tab-literal-lead": ["description: |", "  \t\t", "  a\t", "  b"],
    "tab-folded": ["description: >", "  a\t", "  b"],
    "tab-folded-more": ["description: >", "  a \t", "    b", "  c"],
    "tab-folded-blank": ["description: >", "  a\t", "", "  b"],
    "tab-folded-two": ["description: >-", "  a\t\t", "  b\t", "  c"],
    "tab-folded-tabline": ["description: >", "  a\t", "  \t", "  b"],
    "tab-folded-three": ["description: >", "  a\t\t\t", "  b"],
    "tab-folded-mixed": ["description: >", "  a \t\t", "  b"],
    "tab-folded-spaced": ["description: >", "  a\t \t", "  b"],
    "tab-folded-later": ["description: >", "  a", "  b\t\t", "  c"],
}


def test_yaml_block_scalar_trailing_tab(claude_binary: Path, tmp_path: Path) -> None:
    layout = Layout(tmp_path / "home", tmp_path / "work")
    layout.home.mkdir()
    for folder, lines in BLOCK_TABS.items():
        write(layout.work / ".claude" / "skills" / folder / "SKILL.md", fm(*lines))
    listing = sent_listing(checked(run_claude(claude_binary, layout.home, layout.work, "hello")))[1]
    assert "\n- literal-tab: a    b c\n" in listing and "\n- tab-folded-two: a  b  c\n" in listing
    assert lines_of(expected(layout)) == lines_of(listing)
    assert expected(layout) == listing


# the Skill tool


TOOL_CALLS = ["folder-x", "differs-from-folder", "crlf", "bom", "no-front", "cmd", "sub:deep", "dmi", "dup",
              "dup-b", ".hidden-skill", "hidden-skill", "/alpha", "linked", "file-link", "not-user", "when-only",
              "extra-keys", "zeta"]


def sent_result(claude_binary: Path, layout: Layout, name: str) -> list[dict[str, Any]]:
    """The blocks the binary sent back for one ``Skill`` call (one run each: a second call of a skill already
    loaded is answered differently)."""
    run = checked(run_claude(claude_binary, layout.home, layout.work, "hello",
                             replies=[Reply(tool="Skill", input={"skill": name})]))
    assert len(run.main_requests) == 2
    return run.main_requests[1]["messages"][-1]["content"]


def test_tool_schema_is_the_binarys(claude_binary: Path, edge: Layout) -> None:
    run = edge_run(claude_binary, edge)
    (sent,) = [tool for tool in run.main_requests[0]["tools"] if tool["name"] == "Skill"]
    assert edge.profile().tool(edge.skills()).anthropic() == {
        "name": sent["name"], "description": sent["description"], "input_schema": sent["input_schema"]}


@pytest.mark.parametrize("name", TOOL_CALLS, ids=[f"tool-{n}" for n in TOOL_CALLS])
def test_tool_result(claude_binary: Path, edge: Layout, name: str) -> None:
    profile = edge.profile()
    registry = SkillRegistry(profile.discover().skills)
    blocks = sent_result(claude_binary, edge, name)
    try:
        result = profile.tool_result(registry, {"skill": name})
    except SkillToolError as exc:
        assert [(b.get("is_error"), b["content"]) for b in blocks] == [(True, tool_error_content(exc))]
        return
    assert blocks[0]["type"] == "tool_result" and blocks[0]["content"] == result.content
    assert [b["text"] for b in blocks[1:]] == [result.text]


#: Unknown names for the Skill tool, each answered ``Unknown skill: NAME`` with or without ``. Did you mean X?``:
#: typos, case changes, prefixes and suffixes, far names, folder names (never suggested: the frontmatter name is),
#: hidden folders, commands, and the bundled skills and built-in commands the binary also draws on.
UNKNOWN_NAMES = ["nope", "xyzzy", "alpah", "Alpha", "ALPHA", "alph", "alphaa", "beta", "folder-y",
                 "differs-from-foldeX", "hidden-skil", ".hidden-skil", "dup-c", "dmi2", "sub:dee", "sub-deep",
                 "deep", "cmdd", "plaincm", "zet", "zetaa", "n-uppr", "UPPEr", "dots.nam", "a", "ab", "a:c",
                 "dataviz2", "simplfy", "helpp", "verifyy", "security-revie", "copyy", "hepl", "mod", "statu", "cosy",
                 "stat", "tas", "rn", "mc", "inti", "forkk", "diff2", "bashs", "dfp", "naïv", "bu", "estt",
                 "doc", "gits", "chart"]


def sent_errors(claude_binary: Path, layout: Layout, names: list[str]) -> dict[str, Any]:
    """What the binary answered each ``Skill`` call of one run, one call per name in turn."""
    run = checked(run_claude(claude_binary, layout.home, layout.work, "hello",
                             replies=[Reply(tool="Skill", input={"skill": n}) for n in names]))
    messages = run.main_requests[-1]["messages"]
    ids = [b["id"] for m in messages if m["role"] == "assistant" and isinstance(m["content"], list)
           for b in m["content"] if b.get("type") == "tool_use"]
    results = {b["tool_use_id"]: b["content"] for m in messages if isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"}
    assert len(ids) == len(names)
    return {name: results[i] for name, i in zip(names, ids)}


@pytest.mark.parametrize("half", [0, 1], ids=["unknown-names-1", "unknown-names-2"])
def test_tool_result_unknown_skill(claude_binary: Path, edge: Layout, half: int) -> None:
    names = UNKNOWN_NAMES[half::2]
    profile = edge.profile()
    registry = SkillRegistry(profile.discover().skills)
    mine = {}
    for name in names:
        with pytest.raises(SkillToolError) as caught:
            profile.tool_result(registry, {"skill": name})
        mine[name] = f"<tool_use_error>{caught.value}</tool_use_error>"
    assert mine == sent_errors(claude_binary, edge, names)


#: Skills that take Claude Code's command names: folder -> SKILL.md (``*.md`` folders are commands)
COMMAND_NAMES: dict[str, str] = {
    "plan": fm("name: planx", "description: a folder of a command's name: no 'plan' is suggested [shadowed-commands]"),
    "quit": fm("name: quitzz", "description: takes 'quit'"),
    "reset": fm("name: resetzz", "description: 'reset' is an alias of 'clear': still suggested"),
    "review": fm("name: reviewzz", "description: 'review' is an alias too"),
    "build-test": fm("name: plan", "description: a command's name as name is dropped [command-names]"),
    "crlf-unclosed": fm("name: crlfx", "description: [unclosed", body="# Head\ntext\n").replace("\n", "\r\n"),
    "test.md": fm("name: testx", "description: a command ignores its name [command-name]"),
}
SHADOW_NAMES = ["pla", "qui", "exi", "rese", "revie", "clea", "tests", "tes", "crlf", "crlfx", "crlf-unclose", "bu",
                "ne", "hel"]


@pytest.mark.parametrize("exit_folder", [False, True], ids=["quit-kept", "exit-takes-quit"])
def test_command_names_and_shadowed_suggestions(claude_binary: Path, tmp_path: Path, exit_folder: bool) -> None:
    layout = Layout(tmp_path / "home", tmp_path / "work")
    layout.home.mkdir()
    library = dict(COMMAND_NAMES, **({"exit": fm("name: exitzz", "description: takes 'exit' and 'quit'")}
                                     if exit_folder else {}))
    for folder, text in library.items():
        where = ("commands", folder) if folder.endswith(".md") else ("skills", folder, "SKILL.md")
        write(layout.work.joinpath(".claude", *where), text)
    listing = sent_listing(checked(run_claude(claude_binary, layout.home, layout.work, "hello")))[1]
    assert "\n- build-test: " in listing and "\n- crlf-unclosed: Head\n" in listing and "\n- test: " in listing
    assert expected(layout) == listing
    profile = layout.profile()
    registry = SkillRegistry(profile.discover().skills)
    mine = {}
    for name in SHADOW_NAMES:
        with pytest.raises(SkillToolError) as caught:
            profile.tool_result(registry, {"skill": name})
        mine[name] = f"<tool_use_error>{caught.value}</tool_use_error>"
    sent = sent_errors(claude_binary, layout, SHADOW_NAMES)
    assert sent["qui"].endswith("Did you mean tui?</tool_use_error>" if exit_folder else "quit?</tool_use_error>")
    assert mine == sent


def test_commands_of_every_folder_are_listed_together(claude_binary: Path, tmp_path: Path) -> None:
    layout = Layout(tmp_path / "home", tmp_path / "work")
    for base, name in [(layout.home, "aaa"), (layout.home, "mmm"), (layout.work, "zzz"), (layout.work, "bbb"),
                       (layout.work, "sub/ccc"), (layout.home, "sub/aab"), (layout.work, "Ccc")]:
        write(base / ".claude" / "commands" / f"{name}.md", fm(f"description: {name} in {base.name}"))
    write(layout.work / ".claude" / "skills" / "skill" / "SKILL.md", fm("description: a skill"))
    listing = sent_listing(checked(run_claude(claude_binary, layout.home, layout.work, "hello")))[1]
    assert [line.split(":")[0] for line in lines_of(listing)[:8]] == [
        "skill", "aaa", "bbb", "Ccc", "mmm", "sub", "sub", "zzz"]  # [commands-merged]
    assert expected(layout) == listing


# --emit-config


def test_emit_config_names_what_the_agent_sdk_matches(claude_binary: Path, edge: Layout) -> None:
    profile = edge.profile()
    skills = list(profile.discover().skills)
    keep = [s for s in skills if s.name in ("folder-x", "dup-b", ".hidden-skill", "cmd", "alpha", "n-dots")]
    config = profile.restrict_config(skills, keep)
    match = re.search(r"ClaudeAgentOptions\(skills=(\[.*\])\)", config)
    assert match is not None
    names = ast.literal_eval(match.group(1))
    run = checked(run_claude(claude_binary, edge.home, edge.work, "hello", sdk_skills=names))
    sent = lines_of(sent_listing(run)[1])
    # the SDK's list leaves the built-in skills out: the user's lines are the profile's, in its order
    assert sent == lines_of(profile.render(keep))[:len(profile.listed(keep))]
    assert [line.split(": ")[0] for line in sent] == [label(s) for s in profile.listed(keep)]


# the Skill tool: answers in full (content, is_error, the text blocks sent beside the result)


def sent_answers(claude_binary: Path, layout: Layout, names: list[str], *,
                 together: bool = False) -> dict[str, tuple[str, bool, list[str]]]:
    """(tool_result content, is_error, texts sent beside it) per ``Skill`` call of one run: one call per turn, or
    all in one message (``together``; then the texts are not told apart, and are left out)."""
    calls = tuple(("Skill", {"skill": n}) for n in names)
    replies = [Reply(calls=calls)] if together else [Reply(tool="Skill", input={"skill": n}) for n in names]
    run = checked(run_claude(claude_binary, layout.home, layout.work, "hello", replies=replies))
    messages = run.main_requests[-1]["messages"]
    ids = [b["id"] for m in messages if m["role"] == "assistant" and isinstance(m["content"], list)
           for b in m["content"] if b.get("type") == "tool_use"]
    found: dict[str, tuple[str, bool, list[str]]] = {}
    for message in messages:
        if not isinstance(message["content"], list):
            continue
        blocks = message["content"]
        results = [b for b in blocks if b.get("type") == "tool_result"]
        beside = [] if together or len(results) != 1 else [b["text"] for b in blocks if b.get("type") == "text"]
        for block in results:
            found[block["tool_use_id"]] = (block["content"], bool(block.get("is_error")), beside)
    assert len(ids) == len(names)
    return {name: found[i] for name, i in zip(names, ids)}


def profile_answer(profile: ClaudeCodeProfile, registry: SkillRegistry, name: str) -> tuple[str, bool, list[str]]:
    """The profile's (content, is_error, texts) for one ``Skill`` call, as the binary sends them."""
    try:
        result = profile.tool_result(registry, {"skill": name})
    except SkillToolError as exc:
        return tool_error_content(exc), True, []
    return result.content, False, [result.text] if result.text else []


def assert_same_answer(mine: tuple[str, bool, list[str]], sent: tuple[str, bool, list[str]]) -> None:
    content, is_error, texts = mine
    if content.startswith('Skill "') and content.endswith('" completed (forked execution).'):
        content += "\n\nResult:\nDone."  # the subagent's answer: the fake model's plain reply
    assert (content, is_error) == sent[:2]
    if texts or not sent[2]:
        assert texts == sent[2]
    else:  # Claude Code's own instructions for a built-in skill, not reproduced
        assert content.startswith("Launching skill: ") and sent[2] and all(sent[2])


def _skill(base: Path, folder: str, *lines: str) -> None:
    write(base / ".claude" / "skills" / folder / "SKILL.md", fm(*lines, body=f"skill body {base.name}/{folder}\n"))


def _command(base: Path, name: str, *lines: str) -> None:
    write(base / ".claude" / "commands" / f"{name}.md", fm(*lines, body=f"command body {base.name}/{name}\n"))


DMI = "disable-model-invocation: true"
#: A skill and a command of the same name (``foo``), each way round: fixture -> (what to lay out, the body the Skill
#: tool loads for ``foo``: skill or command, personal or project; None: an error). Of all skills and commands of one
#: name the first the model may use is listed and loaded (skills before commands, personal before project); when
#: the model may use none, the first answers.
SAME_NAME: dict[str, tuple[Any, str | None]] = {
    "same-name-project-skill-project-command": (
        lambda h, w: (_skill(w, "foo", "description: proj skill"), _command(w, "foo", "description: proj cmd")),
        "skill body work/foo"),
    "same-name-personal-skill-project-command": (
        lambda h, w: (_skill(h, "foo", "description: user skill"), _command(w, "foo", "description: proj cmd")),
        "skill body home/foo"),
    "same-name-project-skill-personal-command": (
        lambda h, w: (_skill(w, "foo", "description: proj skill"), _command(h, "foo", "description: user cmd")),
        "skill body work/foo"),
    "same-name-personal-skill-personal-command": (
        lambda h, w: (_skill(h, "foo", "description: user skill"), _command(h, "foo", "description: user cmd")),
        "skill body home/foo"),
    "same-name-skill-dmi": (
        lambda h, w: (_skill(w, "foo", "description: proj skill", DMI), _command(w, "foo", "description: proj cmd")),
        "command body work/foo"),
    "same-name-command-dmi": (
        lambda h, w: (_skill(w, "foo", "description: proj skill"), _command(w, "foo", "description: proj cmd", DMI)),
        "skill body work/foo"),
    "same-name-both-dmi": (
        lambda h, w: (_skill(w, "foo", "description: proj skill", DMI),
                      _command(w, "foo", "description: proj cmd", DMI)), None),
    "same-name-personal-skill-dmi-project-command": (
        lambda h, w: (_skill(h, "foo", "description: user skill", DMI), _command(w, "foo", "description: proj cmd")),
        "command body work/foo"),
    "same-name-personal-command-dmi-project-skill": (
        lambda h, w: (_skill(w, "foo", "description: proj skill"), _command(h, "foo", "description: user cmd", DMI)),
        "skill body work/foo"),
    "same-name-personal-skill-dmi-project-skill": (
        lambda h, w: (_skill(h, "foo", "description: user skill", DMI), _skill(w, "foo", "description: proj skill")),
        "skill body work/foo"),
    "same-name-personal-command-dmi-project-command": (
        lambda h, w: (_command(h, "foo", "description: user cmd", DMI), _command(w, "foo", "description: proj cmd")),
        "command body work/foo"),
    "same-name-personal-command-project-command": (
        lambda h, w: (_command(h, "foo", "description: user cmd"), _command(w, "foo", "description: proj cmd")),
        "command body home/foo"),
    "same-name-listed-among-commands": (
        lambda h, w: (_skill(w, "foo", "description: proj skill", DMI), _command(w, "foo", "description: proj cmd"),
                      _skill(w, "aaa", "description: a skill"), _skill(w, "zzz", "description: z skill"),
                      _command(w, "bbb", "description: b cmd"), _command(w, "aab", "description: aab cmd")),
        "command body work/foo"),
    "same-name-frontmatter-name": (
        lambda h, w: (_skill(w, "bar", "name: foo", "description: skill named foo"),
                      _command(w, "foo", "description: proj cmd")), "command body work/foo"),
    "same-name-frontmatter-name-dmi": (
        lambda h, w: (_skill(w, "bar", "name: foo", "description: skill named foo", DMI),
                      _command(w, "foo", "description: proj cmd")), "command body work/foo"),
    "same-name-dmi-builtins": (
        lambda h, w: (_skill(w, "dataviz", "description: mine", DMI), _skill(w, "copy", "description: my copy", DMI),
                      _skill(w, "init", "description: my init", DMI), _skill(w, "loop", "description: my loop", DMI),
                      _command(w, "simplify", "description: my simplify", DMI)), None),
}
SAME_NAME_CALLS = ["foo", "bar", "fo"]
#: the names called in the last case: skills the model may not use, named like built-ins
BUILTIN_NAME_CALLS = ["dataviz", "copy", "init", "loop", "simplify"]


@pytest.mark.parametrize("case", list(SAME_NAME))
def test_same_name_skill_and_command(claude_binary: Path, tmp_path: Path, case: str) -> None:
    layout = Layout(tmp_path / "home", tmp_path / "work")
    layout.home.mkdir()
    lay_out, loaded = SAME_NAME[case]
    lay_out(layout.home, layout.work)
    listing = sent_listing(checked(run_claude(claude_binary, layout.home, layout.work, "hello")))[1]
    assert expected(layout) == listing
    profile = layout.profile()
    registry = SkillRegistry(profile.discover().skills)
    calls = BUILTIN_NAME_CALLS if case == "same-name-dmi-builtins" else SAME_NAME_CALLS
    sent = sent_answers(claude_binary, layout, calls)
    if loaded is not None:
        assert sent["foo"][0] == "Launching skill: foo" and sent["foo"][2][0].endswith(loaded + "\n")
    for name in calls:
        assert_same_answer(profile_answer(profile, registry, name), sent[name])


#: skillOverrides by name: over every skill and command of that name, an ``off`` one still answers the tool
OVERRIDES = {"foo": "user-invocable-only", "bar": "user-invocable-only", "baz": "name-only", "qux": "off"}


def test_overridden_skills_answer_the_overrides_error(claude_binary: Path, tmp_path: Path) -> None:
    layout = Layout(tmp_path / "home", tmp_path / "work")
    layout.home.mkdir()
    _skill(layout.work, "foo", "description: proj skill")
    _command(layout.work, "foo", "description: proj cmd")
    _command(layout.work, "bar", "description: bar cmd")
    _skill(layout.work, "baz", "description: baz skill")
    _skill(layout.work, "qux", "description: qux skill")
    write(layout.work / ".claude" / "settings.json", json.dumps({"skillOverrides": OVERRIDES}))
    listing = sent_listing(checked(run_claude(claude_binary, layout.home, layout.work, "hello")))[1]
    profile = layout.profile(overrides=OVERRIDES)
    assert profile.render(list(profile.discover().skills)) == listing
    registry = SkillRegistry(profile.discover().skills)
    calls = ["foo", "bar", "baz", "qux", "quxx"]
    sent = sent_answers(claude_binary, layout, calls)
    assert sent["foo"][0] == ("<tool_use_error>Skill foo is disabled for model invocation in skillOverrides "
                              "settings</tool_use_error>")
    for name in calls:
        assert_same_answer(profile_answer(profile, registry, name), sent[name])


def test_builtin_names_answer_as_the_binary(claude_binary: Path, tmp_path: Path) -> None:
    """Every built-in command, alias and bundled skill called by its exact name, two with a slash [builtin-answers]."""
    layout = Layout(tmp_path / "home", tmp_path / "work")
    layout.home.mkdir()
    layout.work.mkdir()
    names = list(SUGGESTED_NAMES) + ["/copy", "/loop"]
    sent = sent_answers(claude_binary, layout, names, together=True)
    assert "Unknown skill" not in " ".join(content for content, _, _ in sent.values())
    assert sent["proactive"][0] == ("Execute skill: proactive. The user can add the allow rule Skill(loop) to "
                                    ".claude/settings.local.json to let it run without asking.")
    profile = layout.profile()
    registry = SkillRegistry(profile.discover().skills)
    mine = {name: profile_answer(profile, registry, name)[:2] for name in names}
    for name, (content, _) in mine.items():
        if content.endswith("(forked execution)."):
            mine[name] = (content + "\n\nResult:\nDone.", False)
    assert mine == {name: answer[:2] for name, answer in sent.items()}


def tie_names(names: list[str]) -> dict[str, list[str]]:
    """Strings (not themselves names) that are equally near two or more of ``names`` and no nearer to any other,
    within the two edits the suggestion allows -> the names they tie: which one Claude Code suggests shows the order
    of ``names`` it tries."""
    found: dict[str, list[str]] = {}
    taken = set(names)
    for first, second in itertools.combinations(names, 2):
        if abs(len(first) - len(second)) > 4:
            continue
        for probe in _between(first, second):
            if probe in taken or probe in found:
                continue
            distances = {n: edit_distance(probe, n) for n in names if abs(len(n) - len(probe)) <= 2}
            near = min(distances.values(), default=3)
            if near <= 2 and distances.get(first) == near == distances.get(second):
                found[probe] = [n for n in names if distances.get(n) == near]
                break
    return found


def _between(first: str, second: str) -> list[str]:
    """Strings half-way along the edits that turn ``first`` into ``second`` (2 or 4 single-character edits)."""
    rows = [[max(i, j) if not i or not j else 0 for j in range(len(second) + 1)] for i in range(len(first) + 1)]
    for i in range(1, len(first) + 1):
        for j in range(1, len(second) + 1):
            rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1,
                             rows[i - 1][j - 1] + (first[i - 1] != second[j - 1]))
    edits: list[tuple[str, int, str]] = []
    i, j = len(first), len(second)
    while i or j:
        if i and j and rows[i][j] == rows[i - 1][j - 1] + (first[i - 1] != second[j - 1]):
            if first[i - 1] != second[j - 1]:
                edits.append(("replace", i - 1, second[j - 1]))
            i, j = i - 1, j - 1
        elif i and rows[i][j] == rows[i - 1][j] + 1:
            edits.append(("delete", i - 1, ""))
            i -= 1
        else:
            edits.append(("insert", i, second[j - 1]))
            j -= 1
    if len(edits) not in (2, 4):
        return []
    out = []
    for chosen in itertools.combinations(edits, len(edits) // 2):
        chars = list(first)
        for kind, at, char in sorted(chosen, key=lambda edit: -edit[1]):
            if kind == "replace":
                chars[at] = char
            elif kind == "delete":
                del chars[at]
            else:
                chars.insert(at, char)
        out.append("".join(chars))
    return out


def test_suggestion_order_of_the_builtin_names(claude_binary: Path, tmp_path: Path) -> None:
    """Names equally near two built-in names: the binary suggests the one the profile's order puts first."""
    layout = Layout(tmp_path / "home", tmp_path / "work")
    layout.home.mkdir()
    layout.work.mkdir()
    ties = tie_names(list(SUGGESTED_NAMES))
    assert len(ties) > 300
    profile = layout.profile()
    registry = SkillRegistry(profile.discover().skills)
    mine = {name: profile_answer(profile, registry, name)[0] for name in ties}
    sent = sent_answers(claude_binary, layout, list(ties), together=True)
    assert mine == {name: answer[0] for name, answer in sent.items()}


#: folder -> frontmatter lines of skills whose keys change what the Skill tool answers [skill-keys]: tools granted
#: or taken and hooks ask the user first (no allow rule offered for a name the rule cannot hold), ``context: fork``
#: runs a subagent, ``paths`` keeps the skill out until a matching file is touched [paths]; the others load as
#: usual.
SKILL_KEYS = {"k-allowed": ["allowed-tools: [Read, Grep]"], "k-allowed-str": ["allowed-tools: Read"],
              "k-allowed-empty": ["allowed-tools: []"], "k-allowed-blank": ["allowed-tools: ''"],
              "ünï-allowed": ["allowed-tools: [Read]"], "k-fork": ["context: fork"], "k-inline": ["context: inline"],
              "k-paths": ["paths: src/**"], "k-paths-list": ["paths: [src/**, docs/*.md]"],
              "k-paths-empty": ["paths: []"],
              "k-model": ["model: sonnet"], "k-agent": ["agent: general-purpose"], "k-hint": ["argument-hint: '[x]'"],
              "k-effort": ["effort: high"], "k-hooks": ["hooks: {}"], "k-shell": ["shell: bash"],
              "h-hooks": ["hooks:", "  PreToolUse:", "    - matcher: Bash", "      hooks:", "        - type: command",
                          "          command: 'true'"],
              "h-disallowed": ["disallowed-tools: [Bash]"], "h-allowed-num": ["allowed-tools: 1"],
              "h-allowed-null": ["allowed-tools:"], "h-unknown": ["foo: bar"], "h-background": ["background: true"],
              "h-context-other": ["context: Fork"], "h-fork-agent": ["context: fork", "agent: Explore"]}


def test_frontmatter_keys_that_change_the_tool_result(claude_binary: Path, tmp_path: Path) -> None:
    layout = Layout(tmp_path / "home", tmp_path / "work")
    layout.home.mkdir()
    for folder, lines in SKILL_KEYS.items():
        _skill(layout.work, folder, "description: d", *lines)
    _command(layout.work, "c-allowed", "description: d", "allowed-tools: [Read]")
    _command(layout.work, "c-fork", "description: d", "context: fork")
    listing = sent_listing(checked(run_claude(claude_binary, layout.home, layout.work, "hello")))[1]
    assert "\n- k-paths:" not in listing and "\n- k-paths-list" not in listing and "\n- k-paths-empty: d\n" in listing
    assert expected(layout) == listing
    profile = layout.profile()
    registry = SkillRegistry(profile.discover().skills)
    names = list(SKILL_KEYS) + ["c-allowed", "c-fork"]
    forks = ["k-fork", "c-fork", "h-fork-agent"]  # a subagent takes the fake model's later replies: called together
    sent = sent_answers(claude_binary, layout, [n for n in names if n not in forks])
    sent.update(sent_answers(claude_binary, layout, forks, together=True))
    assert sent["k-allowed"][0] == ("Execute skill: k-allowed. The user can add the allow rule Skill(k-allowed) to "
                                    ".claude/settings.local.json to let it run without asking.")
    assert sent["k-paths"][0] == "<tool_use_error>Unknown skill: k-paths</tool_use_error>"
    for name in names:
        assert_same_answer(profile_answer(profile, registry, name), sent[name])
