"""The codex profile reproduces the OpenAI Codex CLI (harness-profiles.md, "codex").

Expected values are read off the specification and Codex's own tests (``render.rs``, ``loader_tests.rs``), not off
the implementation. Tests whose expectation is not stated by a public source say ``inferred`` in their names.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from router.errors import SkillToolError
from router.profiles import get_profile
from router.profiles.codex import (Budget, CodexProfile, Root, Scope, build_listing, extract_mentions, inject,
                                   mentioned, read_fields)
from router.library import discover
from router.registry import SkillRegistry
from router.skill import Skill

INSTRUCTIONS_HEAD = """<skills_instructions>
## Skills
A skill is a set of local instructions to follow that is stored in a `SKILL.md` file. Below is the list of skills \
that can be used. Each entry includes a name, description, and a short path that can be expanded into an absolute \
path using the skill roots table.
### Skill roots
"""
INSTRUCTIONS_TAIL = "</skills_instructions>"
#: Far more than any test listing costs.
BIG = Budget(10**9)


def block(*lines: str, roots: tuple[str, ...] = ("/lib",)) -> str:
    """The message Codex 0.171.0 sends for these lines (its default model adds no usage section)."""
    table = "".join(f"- `r{i}` = `{root}`\n" for i, root in enumerate(roots))
    return INSTRUCTIONS_HEAD + table + "### Available skills\n" + "".join(line + "\n" for line in lines) + \
        INSTRUCTIONS_TAIL


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def skill_md(folder: Path, name: str | None = None, description: str = "Does things") -> Path:
    head = f"name: {name}\n" if name else ""
    return write(folder / "SKILL.md", f"---\n{head}description: {description}\n---\nBody\n")


def make(name: str, scope: Scope = Scope.REPO, description: str = "desc", path: str | None = None) -> Skill:
    """A skill found in the root ``/lib``."""
    return Skill(name, description, path or f"/lib/{name}/SKILL.md", metadata={"scope": scope.value, "root": "/lib"})


def tokens(text: str) -> int:
    """Codex's approximate tokens: UTF-8 bytes / 4, rounded up."""
    return (len(text.encode("utf-8")) + 3) // 4


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


def test_instructions_text_and_line_format_are_byte_exact(tmp_path):
    # Observed on Codex 0.171.0: the roots table and rN/ paths even for plain listings, no escaping.
    skills = [make("beta", description="Second <b> & \"raw\""), make("alpha", description="First")]
    assert CodexProfile(codex_home=tmp_path).render(skills) == block(
        "- alpha: First (file: r0/alpha/SKILL.md)",
        '- beta: Second <b> & "raw" (file: r0/beta/SKILL.md)',
    )


def test_empty_description_line():
    assert build_listing([make("bare", description="")], BIG).text == block("- bare: (file: r0/bare/SKILL.md)")


def test_backslashes_in_paths_are_listed_as_slashes():
    skill = Skill("win", "desc", "C:\\skills\\win\\SKILL.md",
                  metadata={"root": "C:\\skills", "found_path": "C:\\skills/win\\SKILL.md"})
    assert build_listing([skill], BIG).text == block("- win: desc (file: r0/win/SKILL.md)", roots=("C:/skills",))


def test_the_usage_section_follows_only_when_the_model_asks_for_it(tmp_path):
    # gpt-5.5's metadata has include_skills_usage_instructions; the default model and unknown ones do not.
    skills = [make("alpha")]
    with_usage = CodexProfile(codex_home=tmp_path, model="gpt-5.5").render(skills)
    assert with_usage.startswith(block("- alpha: desc (file: r0/alpha/SKILL.md)").removesuffix(INSTRUCTIONS_TAIL)
                                 + "### How to use skills\n- Discovery: The list above is the skills available in "
                                   "this session (name + description + short path).")
    for model in (None, "gpt-6.2-sol", "some-unknown-model"):
        assert "### How to use skills" not in CodexProfile(codex_home=tmp_path, model=model).render(skills)


def test_the_model_comes_from_the_user_config_unless_given(tmp_path):
    write(tmp_path / "config.toml", 'model = "gpt-5.5"\nmodel_context_window = 100000\n')
    profile = CodexProfile(codex_home=tmp_path)
    assert (profile.harness_model, profile.budget) == ("gpt-5.5", Budget(2000))
    assert CodexProfile(codex_home=tmp_path, model="gpt-6.2-sol", context_window=500_000).budget == Budget(10_000)


def test_listing_order_is_system_admin_repo_user_then_name_then_path():
    skills = [make("u", Scope.USER), make("b", Scope.REPO, path="/lib/z/b/SKILL.md"), make("s", Scope.SYSTEM),
              make("b", Scope.REPO, path="/lib/a/b/SKILL.md"), make("a", Scope.ADMIN), make("B", Scope.REPO)]
    listing = build_listing(skills, BIG)
    assert listing.included == ("s", "a", "B", "b", "b", "u")
    assert "- b: desc (file: r0/a/b/SKILL.md)\n- b: desc (file: r0/z/b/SKILL.md)\n" in listing.text


def test_nothing_listable_gives_no_message(tmp_path):
    assert CodexProfile(codex_home=tmp_path).render([]) == ""
    hidden = Skill("quiet", "desc", "/q/SKILL.md", metadata={"allow_implicit_invocation": False})
    assert build_listing([hidden], BIG).text == ""


def test_budget_is_two_percent_of_the_models_context_window():
    # Observed on Codex 0.171.0: tokens for every model, the fallback window (272,000) included.
    assert Budget.for_model() == Budget(10_000)                              # gpt-6.2-sol: 500,000
    assert Budget.for_model("gpt-5.5") == Budget(5440)                       # 272,000
    assert Budget.for_model("some-unknown-model") == Budget(5440)            # the fallback window
    assert Budget.for_model(None, 200_000) == Budget(4000)                   # model_context_window
    assert Budget.for_model(None, 600_000) == Budget(12_000)                 # up to 872,000 for the default
    assert Budget.for_model("gpt-5.5", 400_000) == Budget(5440)              # gpt-5.5 goes no higher than 272,000
    assert Budget.for_model(None, 1) == Budget(1)
    assert Budget.for_model("gpt-5.5", None, 8000) == Budget(8000)           # skills.max_context_tokens
    assert Budget.for_model(None, None, 60_000) == Budget(10_000)            # ... at most 10,000


def test_full_lines_that_fit_are_kept_whole():
    line = "- alpha-skill: abcdef (file: r0/alpha-skill/SKILL.md)"
    listing = build_listing([make("alpha-skill", description="abcdef")], Budget(tokens(line + "\n")))
    assert listing.text == block(line)
    assert listing.warning is None and listing.truncated_chars == 0


def test_descriptions_are_cut_round_robin_before_any_skill_is_dropped_and_no_warning_says_so():
    skills = [make(f"skill-{i}", description="abcdefghijklmnopqrstuvwxyz" * 8) for i in range(3)]
    bare = sum(tokens(f"- skill-{i}: (file: r0/skill-{i}/SKILL.md)\n") for i in range(3))
    listing = build_listing(skills, Budget(bare + 30))
    cut = [line.split(": ", 1)[1].split(" (file:")[0] for line in listing.text.splitlines() if line.startswith("- s")]
    assert len(cut) == 3 and max(len(c) for c in cut) - min(len(c) for c in cut) <= 4
    assert all(c == skills[0].description[:len(c)] for c in cut)  # cut with no ellipsis
    assert (listing.omitted, listing.warning) == (0, None)         # Codex 0.171.0 shows nothing for a cut


def test_bare_lines_are_kept_in_priority_order_when_even_they_do_not_fit():
    system, user, repo, admin = (make("system-skill", Scope.SYSTEM), make("user-skill", Scope.USER),
                                 make("repo-skill", Scope.REPO), make("admin-skill", Scope.ADMIN))
    first_two = [f"- {n}: (file: r0/{n}/SKILL.md)" for n in ("system-skill", "admin-skill")]
    listing = build_listing([system, user, repo, admin], Budget(sum(tokens(line + "\n") for line in first_two)))
    assert listing.text == block(*first_two)
    assert listing.warning == ("Exceeded skills context budget. All skill descriptions were removed and 2 additional "
                               "skills were not included in the model-visible skills list.")  # no " of 2%"


def test_a_line_that_does_not_fit_is_skipped_and_the_scan_goes_on():
    oversized = make("oversized-system-skill-" + "x" * 40, Scope.SYSTEM)
    repo = make("repo-skill", Scope.REPO)
    listing = build_listing([oversized, repo], Budget(tokens("- repo-skill: (file: r0/repo-skill/SKILL.md)\n")))
    assert listing.included == ("repo-skill",)
    assert listing.warning == ("Exceeded skills context budget. All skill descriptions were removed and 1 additional "
                               "skill was not included in the model-visible skills list.")


def test_when_not_one_line_fits_the_list_is_empty_and_has_no_roots_table():
    text = build_listing([make("alpha")], Budget(1)).text
    assert text.startswith("<skills_instructions>\n## Skills\nA skill is a set of instructions provided through a "
                           "`SKILL.md` source.")
    assert text.endswith("\n### Available skills\n</skills_instructions>") and "### Skill roots" not in text


def test_the_roots_table_lists_the_roots_of_listed_skills_in_scan_order_and_costs_nothing(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    skill_md(first / "b", "b")
    skill_md(second / "a", "a")
    profile = CodexProfile(admin_root=None, codex_home=tmp_path)
    found = profile.discover([first, second]).skills
    lines = ["- a: Does things (file: r1/a/SKILL.md)", "- b: Does things (file: r0/b/SKILL.md)"]
    listing = profile.listing(found, Budget(sum(tokens(line + "\n") for line in lines)))
    assert listing.text == block(*lines, roots=(os.path.realpath(first), os.path.realpath(second)))


def test_descriptions_over_1024_characters_are_listed_cut_to_1021_and_an_ellipsis(tmp_path):
    found = one(tmp_path, f"---\nname: n\ndescription: {'é' * 1100}\n---\n")
    assert [len(s.description) for s in found.skills] == [1100] and found.errors == ()
    assert f"- n: {'é' * 1021}... (file: r0/my-skill/SKILL.md)\n" in get_profile("codex").listing(found.skills,
                                                                                                    BIG).text


# --- discovery ------------------------------------------------------------------------------------------------


def test_harness_roots_and_their_scopes_in_codex_order(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    cwd = repo / "pkg"
    skill_md(cwd / ".codex" / "skills" / "a", "a")
    skill_md(repo / ".codex" / "skills" / "not-a-root", "x")   # Codex 0.171.0 reads only the working folder's .codex
    skill_md(repo / ".agents" / "skills" / "b", "b")
    skill_md(cwd / ".agents" / "skills" / "c", "c")
    skill_md(tmp_path / "codex-home" / "skills" / "d", "d")
    skill_md(tmp_path / "home" / ".agents" / "skills" / "e", "e")
    skill_md(tmp_path / "codex-home" / "skills" / ".system" / "f", "f")
    skill_md(tmp_path / "admin" / "g", "g")
    skill_md(tmp_path / ".agents" / "skills" / "outside", "outside")   # above the project root: not a root
    profile = isolated(tmp_path, cwd)

    assert [(r.path, r.scope) for r in profile.harness_roots()] == [
        (str(cwd / ".codex" / "skills"), Scope.REPO),
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
        pytest.param("---\nname: n\ndescription: Has: colon\n---\n", "n", "Has: colon", id="unquoted-colon-parses"),
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
        pytest.param("---\nname: n\ndescription: [a, b]\n---\n",
                     "invalid YAML: description: invalid type: sequence, expected a string at line 2 column 14",
                     id="description-not-a-string-inferred"),
        pytest.param(b"---\nname: n\ndescription: caf\xe9\n---\n",
                     "failed to read file: invalid utf-8 sequence of 1 bytes from index 28", id="not-utf8"),
    ],
)
def test_errors_are_reported_per_path_and_the_scan_goes_on(tmp_path, content, message):
    skill_md(tmp_path / "root" / "fine", "fine")
    found = one(tmp_path, content)
    assert [s.name for s in found.skills] == ["fine"]
    assert found.errors == (f"{os.path.realpath(tmp_path / 'root' / 'my-skill')}/SKILL.md: {message}",)


LIBYAML_ONLY = pytest.mark.skipif(not yaml.__with_libyaml__, reason="libyaml's wording needs PyYAML's libyaml binding")


# Observed on Codex 0.171.0 (tests/test_oracle_codex.py compares the same shapes with the binary).
@pytest.mark.parametrize(
    ("front", "expected"),
    [
        pytest.param("name: n\ndescription: [\nother: - x\n",
                     "description: invalid type: sequence, expected a string at line 2 column 14",
                     id="type-error-before-a-later-syntax-error"),
        pytest.param("name: n\nname: ,\ndescription: d\n", "duplicate field `name`",
                     id="duplicate-before-a-later-syntax-error"),
        pytest.param("other: !]{x\nname: n\ndescription: d\n",
                     "did not find expected whitespace or line break at line 1 column 9, while scanning a tag at "
                     "line 1 column 8", id="libyaml-bad-tag", marks=LIBYAML_ONLY),
        pytest.param("name: n\ndescription: !%\u00e9 x\n",
                     "did not find URI escaped octet at line 2 column 15, while parsing a tag at line 2 column 14",
                     id="libyaml-bad-tag-escape", marks=LIBYAML_ONLY),
        pytest.param("description: |\n  \tx\nname: n\n",
                     "found a tab character where an indentation space is expected at line 2 column 3, while scanning "
                     "a block scalar at line 1 column 14", id="libyaml-tab-after-block-indent",
                     marks=LIBYAML_ONLY),
        pytest.param("description: [ # c\nname: n] # x\n", {"description": "[", "name": "n]"},
                     id="type-error-read-again-quoted"),
        pytest.param("name: n\nother: a: b\ndescription: [a]\n",
                     "mapping values are not allowed in this context at line 2 column 9",
                     id="whole-flow-value-not-quoted"),
        pytest.param("name: n: x\ndescription:  #: comment\n", {"name": "n: x", "description": None},
                     id="comment-only-value-stays-empty"),
        pytest.param('name: n\ndescription: d\nmetadata: \u00e9\tx "q" \\\n',
                     'metadata: invalid type: string "\u00e9\\tx \\"q\\" \\\\", expected struct '
                     "SkillFrontmatterMetadata at line 3 column 11", id="rust-debug-string",
                     marks=LIBYAML_ONLY),  # PyYAML's own reader needs the tab read as a blank
        pytest.param("name: n\ndescription: d\nmetadata: ~\n",
                     "metadata: invalid type: unit value, expected struct SkillFrontmatterMetadata at line 3 column 11",
                     id="metadata-null-is-a-unit-value"),
        pytest.param("name: n\ndescription: d\nmetadata: 0x1f\n",
                     "metadata: invalid type: integer `31`, expected struct SkillFrontmatterMetadata at line 3 "
                     "column 11",
                     id="metadata-hex-integer"),
        pytest.param("name: n\ndescription: d\nmetadata: 1e5\n",
                     "metadata: invalid type: floating point `100000.0`, expected struct SkillFrontmatterMetadata at "
                     "line 3 column 11", id="metadata-float"),
        pytest.param("name: n\ndescription: d\nmetadata: 18446744073709551616\n",
                     "metadata: invalid type: integer `18446744073709551616` as u128, expected struct "
                     "SkillFrontmatterMetadata at line 3 column 11", id="metadata-u128"),
        pytest.param("name: n\ndescription: d\nmetadata: 01\n",
                     'metadata: invalid type: string "01", expected struct SkillFrontmatterMetadata at line 3 '
                     "column 11",
                     id="metadata-leading-zero-is-a-string"),
        pytest.param("name: n\ndescription: d\nmetadata: !!str\n", {"name": "n", "description": "d"},
                     id="metadata-empty-plain-is-an-empty-map"),
        pytest.param("- n\n", "invalid type: sequence, expected struct SkillFrontmatter",
                     id="no-position-at-the-start"),
        pytest.param("name: n\ndescription: !!str ~\n", {"name": "n", "description": "~"}, id="str-tag"),
        pytest.param("name: !!null x\ndescription: d\n", 'invalid value: string "x", expected null', id="null-tag"),
        pytest.param('name: n\ndescription: "\\x4"\n', "did not find expected hexadecimal number at line 2 column 17, "
                     "while parsing a quoted scalar at line 2 column 14", id="libyaml-0.2.5-wording",
                     marks=LIBYAML_ONLY),
        pytest.param("name: n\ndescription: \u2028 \x07\n", "control characters are not allowed at position 25",
                     id="control-character-at-its-utf8-offset"),
        pytest.param("name: n\ndescription: d\n...\n%YAML 1.2\nother: x\n",
                     "deserializing from YAML containing more than one document is not supported",
                     id="second-document"),
        pytest.param("name: a: b # c\x07\ndescription: d\n", "control characters are not allowed at position 14",
                     id="quoted-reading-keeps-the-comment"),
        pytest.param("name: n\ndescription: a: b\u00a0#c\n",
                     "mapping values are not allowed in this context at line 2 column 15",
                     id="comment-after-a-no-break-space-stops-the-quoted-reading"),
        pytest.param("name: n\ndescription: a: b\u2028#c\n", {"name": "n", "description": "a: b"},
                     id="comment-after-a-line-separator"),
        pytest.param("name: n\ndescription: d\n? [a]\n: b\n",
                     "invalid type: sequence, expected field identifier at line 3 column 3", id="collection-key"),
        pytest.param("name: n\ndescription: d\nmetadata:\n  {x: 1}: y\n",
                     "metadata: invalid type: map, expected field identifier at line 4 column 3",
                     id="collection-key-in-metadata"),
    ],
)
def test_frontmatter_reads_as_serde_yaml_reads_it(front, expected):
    if isinstance(expected, dict):
        assert read_fields(front) == expected
    else:
        with pytest.raises(ValueError) as caught:
            read_fields(front)
        assert str(caught.value) == expected


def test_limits_count_characters_not_bytes(tmp_path):
    found = one(tmp_path, f"---\nname: {'é' * 64}\ndescription: {'é' * 1024}\n---\n")
    assert [len(s.description) for s in found.skills] == [1024]


def test_invalid_yaml_message_follows_serde_yaml_inferred(tmp_path):
    # serde_yaml reports libyaml's problem and position; the text here is libyaml's wording, not PyYAML's. The
    # colon alone parses once quoted; the indented next line keeps even the quoted reading from parsing, so the
    # first error stands (observed on Codex 0.171.0).
    found = one(tmp_path, "---\nname: n\ndescription: Use this skill when: the user asks\n  more\n---\n")
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
        "- pdf: Read PDFs (file: /lib/pdf/SKILL.md)\n"
        "- xlsx: Edit sheets (file: /lib/xlsx/SKILL.md)")
    assert get_profile("codex").hook_context([]) == ""


def test_hook_context_keeps_five_skills_codex_would_invoke():
    quiet = Skill("quiet", "Hidden", "/q/SKILL.md", metadata={"allow_implicit_invocation": False})
    skills = [quiet] + [make(f"s{i}", description=f"Skill {i}") for i in range(7)]
    assert get_profile("codex").hook_context(skills) == (
        "Skills most relevant to this request (skill-router):\n"
        + "\n".join(f"- s{i}: Skill {i} (file: /lib/s{i}/SKILL.md)" for i in range(5)))


def test_restrict_config_disables_every_other_skill_by_path():
    keep, drop1, drop2 = make("keep"), make("drop", path='/x/"q"/SKILL.md'), make("other")
    assert get_profile("codex").restrict_config([keep, drop1, drop2], [keep]) == (
        "# skill-router: 1 routed skills stay enabled, 2 disabled (add to $CODEX_HOME/config.toml)\n"
        "[[skills.config]]\n"
        'path = "/x/\\"q\\"/SKILL.md"\n'
        "enabled = false\n"
        "\n"
        "[[skills.config]]\n"
        'path = "/lib/other/SKILL.md"\n'
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
       limit=st.integers(min_value=0, max_value=200))
def test_listed_lines_never_exceed_the_budget_and_every_skill_is_accounted_for(descriptions, limit):
    skills = [make(f"s{i}", description=d) for i, d in enumerate(descriptions)]
    budget = Budget(limit)
    listing = build_listing(skills, budget)
    lines = [line for line in listing.text.split("### Available skills\n", 1)[1].splitlines() if line.startswith("- s")]
    assert sum(budget.cost(line + "\n") for line in lines) <= limit
    assert len(listing.included) + listing.omitted == len(skills)
    full = [f"- {s.name}: {s.description} (file: r0/{s.name}/SKILL.md)\n" for s in skills]
    fits_whole = sum(budget.cost(line) for line in full) <= limit
    assert (listing.truncated_chars == 0 and listing.omitted == 0) == fits_whole
