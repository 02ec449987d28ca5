"""The codex profile reproduces the OpenAI Codex CLI (harness-profiles.md, "codex").

Expected values are read off the specification and Codex's own tests (``render.rs``, ``loader_tests.rs``), not off
the implementation. Tests whose expectation is not stated by a public source say ``inferred`` in their names.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from router.errors import SkillToolError
from router.profiles import get_profile
from router.profiles.codex import (Budget, CodexProfile, Root, Scope, build_listing, extract_mentions, inject,
                                   mentioned)
from router.library import discover
from router.registry import SkillRegistry
from router.skill import Skill

INSTRUCTIONS_HEAD = """<skills_instructions>
## Skills
A skill is a set of local instructions to follow that is stored in a `SKILL.md` file. Below is the list of skills \
that can be used. Each entry includes a name, description, and file path so you can open the source for full \
instructions when using a specific skill.
### Available skills
"""
INSTRUCTIONS_TAIL = """### How to use skills
- Discovery: The list above is the skills available in this session (name + description + file path). Skill bodies \
live on disk at the listed paths.
- Trigger rules: If the user names a skill (with `$SkillName` or plain text) OR the task clearly matches a skill's \
description shown above, you must use that skill for that turn. Multiple mentions mean use them all. Do not carry \
skills across turns unless re-mentioned.
- Missing/blocked: If a named skill isn't in the list or the path can't be read, say so briefly and continue with \
the best fallback.
- How to use a skill (progressive disclosure):
  1) After deciding to use a skill, open its `SKILL.md`. Read only enough to follow the workflow.
  2) When `SKILL.md` references relative paths (e.g., `scripts/foo.py`), resolve them relative to the skill \
directory listed above first, and only consider other paths if needed.
  3) If `SKILL.md` points to extra folders such as `references/`, load only the specific files needed for the \
request; don't bulk-load everything.
  4) If `scripts/` exist, prefer running or patching them instead of retyping large code blocks.
  5) If `assets/` or templates exist, reuse them instead of recreating from scratch.
- Coordination and sequencing:
  - If multiple skills apply, choose the minimal set that covers the request and state the order you'll use them.
  - Announce which skill(s) you're using and why (one short line). If you skip an obvious skill, say why.
- Context hygiene:
  - Keep context small: summarize long sections instead of pasting them; only load extra files when needed.
  - Avoid deep reference-chasing: prefer opening only files directly linked from `SKILL.md` unless you're blocked.
  - When variants exist (frameworks, providers, domains), pick only the relevant reference file(s) and note that \
choice.
- Safety and fallback: If a skill can't be applied cleanly (missing files, unclear instructions), state the issue, \
pick the next-best approach, and continue.
</skills_instructions>"""
CHARS = Budget(10**9)


def block(*lines: str) -> str:
    return INSTRUCTIONS_HEAD + "".join(line + "\n" for line in lines) + INSTRUCTIONS_TAIL


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def skill_md(folder: Path, name: str | None = None, description: str = "Does things") -> Path:
    head = f"name: {name}\n" if name else ""
    return write(folder / "SKILL.md", f"---\n{head}description: {description}\n---\nBody\n")


def make(name: str, scope: Scope = Scope.REPO, description: str = "desc", path: str | None = None) -> Skill:
    return Skill(name, description, path or f"/tmp/{name}/SKILL.md", metadata={"scope": scope.value})


def isolated(tmp_path: Path, cwd: Path | None = None) -> CodexProfile:
    """A profile whose home, CODEX_HOME and admin root all live in tmp_path (never the real ones)."""
    return CodexProfile(cwd=cwd or tmp_path / "work", home=tmp_path / "home", codex_home=tmp_path / "codex-home",
                        admin_root=tmp_path / "admin")


def one(tmp_path: Path, content: str | bytes, folder: str = "my-skill"):
    root = tmp_path / "root"
    write(root / folder / "SKILL.md", content)
    return get_profile("codex").discover([root])


# --- catalogue ------------------------------------------------------------------------------------------------


def test_profile_is_registered_as_codex():
    assert get_profile("codex").name == "codex"


def test_instructions_text_and_line_format_are_byte_exact():
    skills = [make("beta", description="Second <b> & \"raw\""), make("alpha", description="First")]
    assert get_profile("codex").render(skills) == block(
        "- alpha: First (file: /tmp/alpha/SKILL.md)",
        '- beta: Second <b> & "raw" (file: /tmp/beta/SKILL.md)',
    )


def test_empty_description_line():
    assert build_listing([make("bare", description="")], CHARS).text == block("- bare: (file: /tmp/bare/SKILL.md)")


def test_backslashes_in_paths_are_listed_as_slashes():
    skill = make("win", path="C:\\skills\\win\\SKILL.md")
    assert build_listing([skill], CHARS).text == block("- win: desc (file: C:/skills/win/SKILL.md)")


def test_listing_order_is_system_admin_repo_user_then_name_then_path():
    skills = [make("u", Scope.USER), make("b", Scope.REPO, path="/z/b/SKILL.md"), make("s", Scope.SYSTEM),
              make("b", Scope.REPO, path="/a/b/SKILL.md"), make("a", Scope.ADMIN), make("B", Scope.REPO)]
    listing = build_listing(skills, CHARS)
    assert listing.included == ("s", "a", "B", "b", "b", "u")
    assert "- b: desc (file: /a/b/SKILL.md)\n- b: desc (file: /z/b/SKILL.md)\n" in listing.text


def test_nothing_listable_gives_no_message():
    assert get_profile("codex").render([]) == ""
    hidden = Skill("quiet", "desc", "/q/SKILL.md", metadata={"allow_implicit_invocation": False})
    assert build_listing([hidden], CHARS).text == ""


def test_default_budget_is_two_percent_of_the_context_window_else_8000_characters():
    assert Budget.for_context(200_000) == Budget(4000, tokens=True)
    assert Budget.for_context(99) == Budget(1, tokens=True)
    assert Budget.for_context(None) == Budget(8000)
    assert Budget.for_context(-1) == Budget(8000)


def bare_cost(skill: Skill) -> int:
    return len(f"- {skill.name}: (file: {skill.path})") + 1


def test_full_lines_that_fit_are_kept_whole():
    skills = [make("alpha-skill", description="abcdef")]
    exact = len("- alpha-skill: abcdef (file: /tmp/alpha-skill/SKILL.md)") + 1
    listing = build_listing(skills, Budget(exact))
    assert listing.text == block("- alpha-skill: abcdef (file: /tmp/alpha-skill/SKILL.md)")
    assert listing.warning is None and listing.truncated_chars == 0


def test_descriptions_are_cut_equally_round_robin_before_any_skill_is_dropped():
    alpha, beta = make("alpha-skill", description="abcdef"), make("beta-skill", description="uvwxyz")
    listing = build_listing([beta, alpha], Budget(bare_cost(alpha) + bare_cost(beta) + 6))
    # The first character of a description costs 2 (it brings a space), each next one 1: 2 + 1 each.
    assert listing.text == block("- alpha-skill: ab (file: /tmp/alpha-skill/SKILL.md)",
                                 "- beta-skill: uv (file: /tmp/beta-skill/SKILL.md)")
    assert (listing.omitted, listing.truncated_chars, listing.warning) == (0, 8, None)


def test_unused_description_budget_goes_to_longer_descriptions():
    short, long = make("short-skill", description="x"), make("long-skill", description="abcdefghi")
    listing = build_listing([short, long], Budget(bare_cost(short) + bare_cost(long) + 11))
    assert listing.text == block("- long-skill: abcdefgh (file: /tmp/long-skill/SKILL.md)",
                                 "- short-skill: x (file: /tmp/short-skill/SKILL.md)")


def test_shortened_descriptions_warn_when_the_average_cut_exceeds_100_characters():
    long, empty = make("long-skill", description="a" * 250), make("empty-skill", description="")
    listing = build_listing([long, empty], Budget(bare_cost(long) + bare_cost(empty) + 49))
    assert listing.truncated_chars == 202
    assert listing.warning == ("Skill descriptions were shortened to fit the skills context budget. Codex can still "
                               "see every skill, but some descriptions are shorter. Disable unused skills or plugins "
                               "to leave more room for the rest.")


def test_token_budget_shortened_warning_names_two_percent():
    long = make("long-skill", description="a" * 1000)
    bare = (len(f"- long-skill: (file: {long.path})") + 1 + 3) // 4
    listing = build_listing([long], Budget(bare + 1, tokens=True))
    assert listing.warning == ("Skill descriptions were shortened to fit the 2% skills context budget. Codex can "
                               "still see every skill, but some descriptions are shorter. Disable unused skills or "
                               "plugins to leave more room for the rest.")


def test_bare_lines_are_kept_in_priority_order_when_even_they_do_not_fit():
    system, user, repo, admin = (make("system-skill", Scope.SYSTEM), make("user-skill", Scope.USER),
                                 make("repo-skill", Scope.REPO), make("admin-skill", Scope.ADMIN))
    listing = build_listing([system, user, repo, admin], Budget(bare_cost(system) + bare_cost(admin)))
    assert listing.text == block("- system-skill: (file: /tmp/system-skill/SKILL.md)",
                                 "- admin-skill: (file: /tmp/admin-skill/SKILL.md)")
    assert listing.warning == ("Exceeded skills context budget. All skill descriptions were removed and 2 additional "
                               "skills were not included in the model-visible skills list.")


def test_a_line_that_does_not_fit_is_skipped_and_the_scan_goes_on():
    oversized = make("oversized-system-skill", Scope.SYSTEM, description="desc " * 100)
    repo = make("repo-skill", Scope.REPO)
    listing = build_listing([oversized, repo], Budget(len("- repo-skill: desc (file: /tmp/repo-skill/SKILL.md)") + 1))
    assert listing.included == ("repo-skill",)
    assert listing.warning == ("Exceeded skills context budget. All skill descriptions were removed and 1 additional "
                               "skill was not included in the model-visible skills list.")


def test_token_budget_warning_names_two_percent():
    skills = [make(f"skill-{i}") for i in range(3)]
    line_tokens = (len("- skill-0: (file: /tmp/skill-0/SKILL.md)\n") + 3) // 4   # 41 bytes: 11 tokens
    listing = build_listing(skills, Budget(2 * line_tokens, tokens=True))
    assert listing.warning == ("Exceeded skills context budget of 2%. All skill descriptions were removed and 1 "
                               "additional skill was not included in the model-visible skills list.")


def test_cut_listing_switches_to_skill_root_aliases_when_they_fit_more(tmp_path):
    root = tmp_path / ("very-long-shared-prefix-" * 4).rstrip("-")
    for i in range(12):
        skill_md(root / f"skill-{i:02d}", f"shared-root-skill-{i:02d}", "Describes a thing at some length")
    profile = CodexProfile(admin_root=None)
    found = profile.discover([root]).skills
    real = os.path.realpath(root)
    bare = sum(len(f"- {s.name}: (file: {s.path})") + 1 for s in found)
    listing = profile.listing(found, Budget(bare - 1))
    assert listing.aliased and listing.omitted == 0
    text = listing.text
    assert text.startswith("<skills_instructions>\n## Skills\nA skill is a set of local instructions to follow that "
                           "is stored in a `SKILL.md` file. Below is the list of skills that can be used. Each entry "
                           "includes a name, description, and a short path that can be expanded into an absolute "
                           "path using the skill roots table.\n### Skill roots\n- `r0` = `" + real + "`\n"
                           "### Available skills\n")
    assert "\n- shared-root-skill-00: " in text and " (file: r0/skill-00/SKILL.md)\n" in text
    assert ("- Discovery: The list above is the skills available in this session (name + description + short path). "
            "Skill bodies live on disk at the listed paths after expanding the matching alias from `### Skill "
            "roots`.\n") in text


def test_a_shortlist_that_fits_never_uses_aliases(tmp_path):
    for i in range(5):
        skill_md(tmp_path / "lib" / f"s{i}", f"s{i}", "Short")
    profile = CodexProfile(admin_root=None)
    listing = profile.listing(profile.discover([tmp_path / "lib"]).skills)
    assert not listing.aliased and "### Skill roots" not in listing.text


# --- discovery ------------------------------------------------------------------------------------------------


def test_harness_roots_and_their_scopes_in_codex_order(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    cwd = repo / "pkg"
    skill_md(repo / ".codex" / "skills" / "a", "a")
    skill_md(repo / ".agents" / "skills" / "b", "b")
    skill_md(cwd / ".agents" / "skills" / "c", "c")
    skill_md(tmp_path / "codex-home" / "skills" / "d", "d")
    skill_md(tmp_path / "home" / ".agents" / "skills" / "e", "e")
    skill_md(tmp_path / "codex-home" / "skills" / ".system" / "f", "f")
    skill_md(tmp_path / "admin" / "g", "g")
    skill_md(tmp_path / ".agents" / "skills" / "outside", "outside")   # above the project root: not a root
    profile = isolated(tmp_path, cwd)

    assert [(r.path, r.scope) for r in profile.harness_roots()] == [
        (str(repo / ".codex" / "skills"), Scope.REPO),
        (str(tmp_path / "codex-home" / "skills"), Scope.USER),
        (str(tmp_path / "home" / ".agents" / "skills"), Scope.USER),
        (str(tmp_path / "codex-home" / "skills" / ".system"), Scope.SYSTEM),
        (str(tmp_path / "admin"), Scope.ADMIN),
        (str(repo / ".agents" / "skills"), Scope.REPO),
        (str(cwd / ".agents" / "skills"), Scope.REPO),
    ]
    found = profile.discover()
    assert [(s.name, s.metadata["scope"]) for s in found.skills] == [
        ("a", "repo"), ("b", "repo"), ("c", "repo"), ("d", "user"), ("e", "user"), ("f", "system"), ("g", "admin")]
    assert profile.listing(found.skills).included == ("f", "g", "a", "b", "c", "d", "e")


def test_without_a_project_marker_only_the_working_folder_is_searched(tmp_path):
    cwd = tmp_path / "plain" / "sub"
    skill_md(cwd / ".agents" / "skills" / "here", "here")
    skill_md(tmp_path / "plain" / ".agents" / "skills" / "parent", "parent")
    assert [s.name for s in isolated(tmp_path, cwd).discover().skills] == ["here"]


def test_explicit_roots_are_extra_user_roots(tmp_path):
    skill_md(tmp_path / "lib" / "x", "x")
    (skill,) = get_profile("codex").discover([tmp_path / "lib"]).skills
    assert skill.metadata["scope"] == "user"


def test_breadth_first_scan_reaches_depth_six_and_no_further(tmp_path):
    root = tmp_path / "root"
    skill_md(root / "1" / "2" / "3" / "4" / "5" / "6", "six")
    skill_md(root / "a" / "b" / "c" / "d" / "e" / "f" / "g", "seven")
    assert [s.name for s in get_profile("codex").discover([root]).skills] == ["six"]


def test_scan_stops_after_2000_folders_with_the_message(tmp_path):
    root = tmp_path / "root"
    for i in range(2000):
        (root / f"d{i:04d}").mkdir(parents=True)
    skill_md(root / "d0000", "first")
    skill_md(root / "d1999", "last")   # the 2,001st folder counting the root itself
    found = get_profile("codex").discover([root])
    assert [s.name for s in found.skills] == ["first"]
    assert found.warnings == (f"skills scan truncated after 2000 directories (root: {os.path.realpath(root)})",)


def test_hidden_names_are_skipped(tmp_path):
    root = tmp_path / "root"
    skill_md(root / ".hidden", "hidden")
    skill_md(root / "shown" / ".inner", "inner")
    skill_md(root / "shown", "shown")
    assert [s.name for s in get_profile("codex").discover([root]).skills] == ["shown"]


def test_descent_continues_below_a_skill(tmp_path):
    root = tmp_path / "root"
    skill_md(root / "outer", "outer")
    skill_md(root / "outer" / "inner", "inner")
    assert [s.name for s in get_profile("codex").discover([root]).skills] == ["inner", "outer"]


def test_symlinked_folders_are_followed_and_listed_by_canonical_path(tmp_path):
    target = tmp_path / "elsewhere" / "real"
    skill_md(target, "linked")
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(target, root / "link")
    (skill,) = get_profile("codex").discover([root]).skills
    assert skill.path == str(target / "SKILL.md")


def test_symlinked_skill_file_is_not_loaded(tmp_path):
    real = skill_md(tmp_path / "elsewhere", "real")
    folder = tmp_path / "root" / "linked-file"
    folder.mkdir(parents=True)
    os.symlink(real, folder / "SKILL.md")
    assert get_profile("codex").discover([tmp_path / "root"]).skills == ()


def test_symlinks_are_not_followed_under_the_system_root(tmp_path):
    skill_md(tmp_path / "elsewhere" / "target", "via-link")
    system = tmp_path / "codex-home" / "skills" / ".system"
    skill_md(system / "own", "own")
    os.symlink(tmp_path / "elsewhere" / "target", system / "link")
    found = isolated(tmp_path).discover()
    assert [s.name for s in found.skills] == ["own"]


def test_a_path_reached_from_two_roots_keeps_the_first_root(tmp_path):
    user = tmp_path / "home" / ".agents" / "skills"
    skill_md(user / "shared", "shared")
    repo = tmp_path / "work"
    (repo / ".git").mkdir(parents=True)
    (repo / ".agents").mkdir()
    os.symlink(user, repo / ".agents" / "skills")
    found = isolated(tmp_path).discover()
    assert [(s.name, s.metadata["scope"], s.path) for s in found.skills] == [
        ("shared", "user", str(user / "shared" / "SKILL.md"))]


def test_same_names_are_all_kept_in_path_order(tmp_path):
    root = tmp_path / "root"
    skill_md(root / "z-copy", "twin", "Second")
    skill_md(root / "a-copy", "twin", "First")
    found = get_profile("codex").discover([root])
    assert [(s.name, s.description) for s in found.skills] == [("twin", "First"), ("twin", "Second")]
    assert found.errors == ()


def test_same_names_get_distinct_ids_so_the_registry_keeps_both(tmp_path):
    root = tmp_path / "root"
    skill_md(root / "a-copy", "twin", "First")
    skill_md(root / "b-copy", "twin", "Second")
    skill_md(root / "c-copy", "twin", "Third")
    registry = discover([root], "codex")
    assert [(s.id, s.name, s.description) for s in registry] == [
        ("twin", "twin", "First"), ("twin#2", "twin", "Second"), ("twin#3", "twin", "Third")]
    assert registry.find("twin").description == "First"
    assert get_profile("codex").render(list(registry)).count("\n- twin: ") == 3


def test_plugin_roots_name_their_skills_plugin_colon_skill(tmp_path):
    skill_md(tmp_path / "plugin" / "skills" / "fmt", "fmt")
    profile = CodexProfile(cwd=tmp_path / "work", home=tmp_path / "home", codex_home=tmp_path / "codex-home",
                           admin_root=None, plugins=[("tools", tmp_path / "plugin" / "skills")])
    assert [(s.name, s.metadata["scope"]) for s in profile.discover().skills] == [("tools:fmt", "user")]


def test_allow_implicit_invocation_false_is_found_but_not_listed(tmp_path):
    root = tmp_path / "root"
    skill_md(root / "quiet", "quiet")
    write(root / "quiet" / "agents" / "openai.yaml", "policy:\n  allow_implicit_invocation: false\n")
    skill_md(root / "loud", "loud")
    profile = get_profile("codex")
    found = profile.discover([root]).skills
    assert [s.name for s in found] == ["loud", "quiet"]
    assert profile.listing(found).included == ("loud",)


# --- frontmatter ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "name", "description"),
    [
        pytest.param("---\nname: n\ndescription: Plain\n---\n", "n", "Plain", id="plain"),
        pytest.param("---\r\nname: n\r\ndescription: Windows\r\n---\r\n", "n", "Windows", id="crlf"),
        pytest.param("  ---  \nname: n\ndescription: Padded fence\n --- \n", "n", "Padded fence", id="trimmed-fences"),
        pytest.param("---\nname: n\ndescription: |\n  Line one\n    Line two\n---\n", "n", "Line one Line two",
                     id="block-scalar-collapsed"),
        pytest.param("---\nname: '  spaced   name '\ndescription: \"a\\tb   c\"\n---\n", "spaced name", "a b c",
                     id="whitespace-collapsed"),
        pytest.param("---\ndescription: No name\n---\n", "my-skill", "No name", id="name-from-folder"),
        pytest.param("---\nname: 42\ndescription: true\n---\n", "42", "true", id="scalars-as-strings"),
        pytest.param("---\nname: n\ndescription: Has: colon\n---\n", None, None, id="unquoted-colon-fails"),
    ],
)
def test_frontmatter(tmp_path, content, name, description):
    found = one(tmp_path, content)
    if name is None:
        assert found.skills == () and len(found.errors) == 1
    else:
        assert [(s.name, s.description) for s in found.skills] == [(name, description)]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param("# no frontmatter\n", "missing YAML frontmatter delimited by ---", id="none"),
        pytest.param("---\n---\nbody\n", "missing YAML frontmatter delimited by ---", id="empty"),
        pytest.param("---\nname: n\ndescription: d\n", "missing YAML frontmatter delimited by ---", id="unclosed"),
        pytest.param("\ufeff---\nname: n\ndescription: d\n---\n", "missing YAML frontmatter delimited by ---",
                     id="byte-order-mark"),
        pytest.param("---\nname: n\n---\n", "missing field `description`", id="no-description"),
        pytest.param("---\nname: n\ndescription: '   '\n---\n", "missing field `description`", id="blank-description"),
        pytest.param("---\nname: n\ndescription:\n---\n", "missing field `description`", id="null-description"),
        pytest.param(f"---\nname: {'n' * 65}\ndescription: d\n---\n",
                     "invalid name: exceeds maximum length of 64 characters", id="long-name"),
        pytest.param(f"---\nname: n\ndescription: {'d' * 1025}\n---\n",
                     "invalid description: exceeds maximum length of 1024 characters", id="long-description"),
        pytest.param(f"---\nname: n\ndescription: d\nmetadata:\n  short-description: {'s' * 1025}\n---\n",
                     "invalid metadata.short-description: exceeds maximum length of 1024 characters",
                     id="long-short-description"),
        pytest.param("---\nname: n\ndescription: [a, b]\n---\n",
                     "invalid YAML: description: invalid type: sequence, expected a string at line 2 column 14",
                     id="description-not-a-string-inferred"),
        pytest.param(b"---\nname: n\ndescription: caf\xe9\n---\n",
                     "failed to read file: stream did not contain valid UTF-8", id="not-utf8"),
    ],
)
def test_errors_are_reported_per_path_and_the_scan_goes_on(tmp_path, content, message):
    skill_md(tmp_path / "root" / "fine", "fine")
    found = one(tmp_path, content)
    assert [s.name for s in found.skills] == ["fine"]
    assert found.errors == (f"{os.path.realpath(tmp_path / 'root' / 'my-skill')}/SKILL.md: {message}",)


def test_limits_count_characters_not_bytes(tmp_path):
    found = one(tmp_path, f"---\nname: {'é' * 64}\ndescription: {'é' * 1024}\n---\n")
    assert [len(s.description) for s in found.skills] == [1024]


def test_invalid_yaml_message_follows_serde_yaml_inferred(tmp_path):
    # serde_yaml reports libyaml's problem and position; the text here is libyaml's wording, not PyYAML's.
    found = one(tmp_path, "---\nname: n\ndescription: Use this skill when: the user asks\n---\n")
    path = f"{os.path.realpath(tmp_path / 'root' / 'my-skill')}/SKILL.md"
    assert found.errors == (f"{path}: invalid YAML: mapping values are not allowed in this context at line 2 "
                            "column 33",)   # the colon after "when": 0-based column 32


def test_no_errors_are_reported_for_system_skills(tmp_path):
    write(tmp_path / "codex-home" / "skills" / ".system" / "broken" / "SKILL.md", "no frontmatter\n")
    assert isolated(tmp_path).discover().errors == ()


# --- mentions, tool and what the router adds ------------------------------------------------------------------


def library(tmp_path: Path) -> SkillRegistry:
    root = tmp_path / "root"
    skill_md(root / "pdf", "pdf", "Read PDFs")
    skill_md(root / "one" / "twin", "twin", "First twin")
    skill_md(root / "two" / "twin", "twin", "Second twin")
    return discover([root], "codex")


def test_no_skill_tool():
    assert get_profile("codex").tool([make("a")]) is None


def test_dollar_mention_injects_the_file_as_user_text(tmp_path):
    registry = library(tmp_path)
    pdf = registry.get("pdf")
    items, warnings = inject("use $pdf now", list(registry))
    assert items == [f"<skill>\n<name>pdf</name>\n<path>{pdf.path}</path>\n---\nname: pdf\ndescription: Read PDFs\n"
                     "---\nBody\n\n</skill>"]
    assert warnings == []
    assert get_profile("codex").call_tool(registry, {"name": "pdf"}) == items[0]


def test_mentions_skip_common_env_names_and_ambiguous_names(tmp_path):
    root = tmp_path / "root"
    skill_md(root / "path", "path")
    skill_md(root / "a" / "twin", "twin")
    skill_md(root / "b" / "twin", "twin")
    skills = get_profile("codex").discover([root]).skills
    assert extract_mentions("echo $PATH and $path, $twin") == ({"twin"}, set())
    assert mentioned("$twin please", skills) == []
    second = [s for s in skills if s.path.endswith("b/twin/SKILL.md")][0]
    assert mentioned(f"[$twin]({second.path})", skills) == [second]


def test_unknown_or_ambiguous_mention_injects_nothing(tmp_path):
    registry = library(tmp_path)
    with pytest.raises(SkillToolError, match=r"^\$nope names no single listed skill: Codex injects nothing$"):
        get_profile("codex").call_tool(registry, {"name": "nope"})
    with pytest.raises(SkillToolError, match=r"^\$twin names no single listed skill: Codex injects nothing$"):
        get_profile("codex").call_tool(registry, {"name": "twin"})


def test_unreadable_mentioned_skill_gives_codex_warning(tmp_path):
    registry = library(tmp_path)
    pdf = registry.get("pdf")
    os.remove(pdf.path)
    assert inject("$pdf", list(registry)) == (
        [], [f"Failed to load skill pdf at {pdf.path}: No such file or directory (os error 2)"])


def test_hook_context_uses_codex_line_format():
    skills = [make("pdf", description="Read PDFs"), make("xlsx", description="Edit sheets")]
    assert get_profile("codex").hook_context(skills) == (
        "Skills most relevant to this request (skill-router):\n"
        "- pdf: Read PDFs (file: /tmp/pdf/SKILL.md)\n"
        "- xlsx: Edit sheets (file: /tmp/xlsx/SKILL.md)")
    assert get_profile("codex").hook_context([]) == ""


def test_hook_context_keeps_five_skills_codex_would_invoke():
    quiet = Skill("quiet", "Hidden", "/q/SKILL.md", metadata={"allow_implicit_invocation": False})
    skills = [quiet] + [make(f"s{i}", description=f"Skill {i}") for i in range(7)]
    assert get_profile("codex").hook_context(skills) == (
        "Skills most relevant to this request (skill-router):\n"
        + "\n".join(f"- s{i}: Skill {i} (file: /tmp/s{i}/SKILL.md)" for i in range(5)))


def test_restrict_config_disables_every_other_skill_by_path():
    keep, drop1, drop2 = make("keep"), make("drop", path='/x/"q"/SKILL.md'), make("other")
    assert get_profile("codex").restrict_config([keep, drop1, drop2], [keep]) == (
        "# skill-router: 1 routed skills stay enabled, 2 disabled (add to $CODEX_HOME/config.toml)\n"
        "[[skills.config]]\n"
        'path = "/x/\\"q\\"/SKILL.md"\n'
        "enabled = false\n"
        "\n"
        "[[skills.config]]\n"
        'path = "/tmp/other/SKILL.md"\n'
        "enabled = false\n")


def test_roots_given_as_root_objects_keep_their_scope(tmp_path):
    skill_md(tmp_path / "sys" / "s", "s")
    skill_md(tmp_path / "usr" / "u", "u")
    found = CodexProfile().discover_roots([Root(str(tmp_path / "usr"), Scope.USER),
                                           Root(str(tmp_path / "sys"), Scope.SYSTEM)])
    assert [s.name for s in found.skills] == ["u", "s"]
    assert get_profile("codex").listing(found.skills).included == ("s", "u")


def test_user_config_rules_disable_skills_in_order(tmp_path):
    repo = tmp_path / "work"
    (repo / ".git").mkdir(parents=True)
    for name in ("keep", "by-path", "by-name", "re-enabled"):
        skill_md(repo / ".agents" / "skills" / name, name)
    write(tmp_path / "codex-home" / "config.toml",
          "[[skills.config]]\n"
          f'path = "{repo / ".agents" / "skills" / "by-path" / "SKILL.md"}"\n'
          "enabled = false\n\n"
          "[[skills.config]]\nname = \"by-name\"\nenabled = false\n\n"
          "[[skills.config]]\nname = \"re-enabled\"\nenabled = false\n\n"
          "[[skills.config]]\nname = \"re-enabled\"\nenabled = true\n\n"
          "[[skills.config]]\nname = \"x\"\npath = \"/x\"\nenabled = false\n")
    profile = isolated(tmp_path, repo)
    found = profile.discover()
    assert [s.name for s in found.skills] == ["by-name", "by-path", "keep", "re-enabled"]
    assert found.warnings == ("ignoring skills.config entry with both path and name selectors",)
    assert profile.listing(found.skills).included == ("keep", "re-enabled")
    assert mentioned("$by-name and $keep", found.skills) == [found.skills[2]]


def test_emitted_config_round_trips_through_codex_rules(tmp_path):
    repo = tmp_path / "work"
    (repo / ".git").mkdir(parents=True)
    for name in ("a", "b", "c"):
        skill_md(repo / ".agents" / "skills" / name, name)
    profile = isolated(tmp_path, repo)
    skills = profile.discover().skills
    write(tmp_path / "codex-home" / "config.toml", profile.restrict_config(skills, [skills[1]]))
    assert profile.listing(profile.discover().skills).included == ("b",)



@settings(max_examples=200, deadline=None)
@given(descriptions=st.lists(st.text(alphabet="abcé漢 ", min_size=1, max_size=40), min_size=1, max_size=8),
       limit=st.integers(min_value=0, max_value=600), tokens=st.booleans())
def test_listed_lines_never_exceed_the_budget_and_every_skill_is_accounted_for(descriptions, limit, tokens):
    skills = [make(f"s{i}", description=d) for i, d in enumerate(descriptions)]
    budget = Budget(limit, tokens)
    listing = build_listing(skills, budget)
    lines = listing.text.split("### Available skills\n", 1)[1].split("### How to use skills", 1)[0].splitlines()
    assert sum(budget.cost(line + "\n") for line in lines) <= limit
    assert len(listing.included) + listing.omitted == len(skills)
    fits_whole = sum(budget.cost(f"- {s.name}: {s.description} (file: {s.path})\n") for s in skills) <= limit
    assert (listing.truncated_chars == 0 and listing.omitted == 0) == fits_whole
