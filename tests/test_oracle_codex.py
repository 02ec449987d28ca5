"""The codex profile against the real Codex CLI (:data:`tests.oracle_codex.CODEX_VERSION`), byte for byte.

Each case lays out a library in an isolated ``$CODEX_HOME`` / ``$HOME`` / working folder, asks the binary what the
model sees (``codex debug prompt-input``), what it discovered (``app-server`` ``skills/list``) or what it sent
(``codex exec`` against a loopback Responses API), and compares the profile's answer for the same folders.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

from router.profiles.codex import CodexProfile, inject
from tests.oracle_codex import (CODEX_VERSION, CodexWorld, OracleError, codex_binary, install_codex,
                                skills_instructions)

__all__ = ["codex_binary"]  # the session fixture, imported so that pytest finds it

OFF = "skills.bundled.enabled=false"
CORPORA = Path("/work/shared/corpora")
CORPUS_ROOTS = (CORPORA / "anthropic-skills" / "skills", CORPORA / "awesome-skills" / "skills",
                CORPORA / "scientific-skills" / "scientific-skills")


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def md(root: Path, folder: str, front: str | bytes, body: str = "Body\n") -> Path:
    """``root/folder/SKILL.md`` with this frontmatter text (between the fences) or these raw bytes."""
    if isinstance(front, bytes):
        return write(root / folder / "SKILL.md", front)
    return write(root / folder / "SKILL.md", f"---\n{front}---\n{body}")


def fm(name: str | None, description: str | None) -> str:
    return (f"name: {name}\n" if name is not None else "") + \
        (f"description: {description}\n" if description is not None else "")


def profile_for(world: CodexWorld, overrides: tuple[str, ...] = (OFF,)) -> CodexProfile:
    """The profile for this world and these ``-c`` settings (``m=MODEL`` is ``-m MODEL``)."""
    options: dict[str, Any] = {}
    for item in overrides:
        key, _, value = item.partition("=")
        if key == "m":
            options["model"] = value
        elif key == "model_context_window":
            options["context_window"] = int(value)
        elif key == "skills.max_context_tokens":
            options["max_context_tokens"] = int(value)
        elif key == "skills.bundled.enabled":
            options["bundled"] = value == "true"
    return CodexProfile(cwd=world.cwd, codex_home=world.codex_home, home=world.home, admin_root=None, **options)


def ours(world: CodexWorld, overrides: tuple[str, ...] = (OFF,)) -> str | None:
    profile = profile_for(world, overrides)
    text = profile.listing(list(profile.discover().skills)).text
    return text or None


def discovered(world: CodexWorld, overrides: tuple[str, ...] = (OFF,)) -> tuple[list[tuple], list[tuple]]:
    found = profile_for(world, overrides).discover()
    skills = [(s.name, s.description, s.metadata.get("canonical_path", s.path), s.metadata.get("scope"),
               s.metadata.get("enabled", True)) for s in found.skills]
    errors = [tuple(line.split(": ", 1)) for line in found.errors]
    return skills, errors


def theirs_discovered(world: CodexWorld, overrides: tuple[str, ...] = (OFF,)) -> tuple[list[tuple], list[tuple]]:
    answer = world.skills_list(overrides)
    skills = [(s["name"], s["description"], s["path"], s["scope"], s["enabled"]) for s in answer["skills"]]
    return skills, [(e["path"], e["message"]) for e in answer["errors"]]


# --- the cases ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    layout: Callable[[CodexWorld], Any]
    overrides: tuple[str, ...] = (OFF,)


def _user(front: str | bytes, folder: str = "s", body: str = "Body\n") -> Callable[[CodexWorld], Any]:
    return lambda w: md(w.user_skills, folder, front, body)


def _symlinked_folder(w: CodexWorld) -> None:
    md(w.root / "elsewhere", "real", fm("linked", "Reached through a link."))
    w.user_skills.mkdir(parents=True, exist_ok=True)
    os.symlink(w.root / "elsewhere" / "real", w.user_skills / "link")


def _symlinked_file(w: CodexWorld) -> None:
    target = md(w.root / "elsewhere", "real", fm("filelink", "A linked SKILL.md file."))
    (w.user_skills / "f").mkdir(parents=True)
    os.symlink(target, w.user_skills / "f" / "SKILL.md")


def _symlinked_root(w: CodexWorld) -> None:
    md(w.root / "lib", "one", fm("one", "In a linked root."))
    os.symlink(w.root / "lib", w.user_skills)


def _duplicates(w: CodexWorld) -> None:
    md(w.user_skills, "b-folder", fm("same", "Second by path."))
    md(w.user_skills, "a-folder", fm("same", "First by path."))


def _names_vs_folders(w: CodexWorld) -> None:
    md(w.user_skills, "folder-x", fm("differs-from-folder", "Name is not the folder."))
    md(w.user_skills, "no-name", fm(None, "Takes the folder name."))
    md(w.user_skills, "Upper", fm("Zebra", "Capitals sort first."))
    md(w.user_skills, "lower", fm("apple", "Lower case."))


def _hidden_and_nested(w: CodexWorld) -> None:
    md(w.user_skills, ".hidden", fm("hidden", "In a hidden folder."))
    md(w.user_skills, "a/b/c/d/e/deep", fm("deep", "Six levels down."))
    md(w.user_skills, "a/b/c/d/e/f/g/deeper", fm("deeper", "Too deep."))
    md(w.user_skills, "outer", fm("outer", "Holds another skill."))
    md(w.user_skills, "outer/inner", fm("inner", "Inside another skill."))
    md(w.user_skills, "x/.dot/y", fm("under-dot", "Below a hidden folder."))


def _all_roots(w: CodexWorld) -> None:
    (w.cwd / ".git").mkdir()
    md(w.cwd / ".agents" / "skills", "repo-agents", fm("repo-agents", "Repo .agents."))
    md(w.cwd / ".codex" / "skills", "repo-codex", fm("repo-codex", "Repo .codex."))
    md(w.user_skills, "user-codex", fm("user-codex", "User CODEX_HOME."))
    md(w.home / ".agents" / "skills", "user-agents", fm("user-agents", "User ~/.agents."))


def _sub_folder_project(w: CodexWorld) -> None:
    (w.root / ".git").mkdir()  # the project root is above the working folder
    md(w.root / ".agents" / "skills", "top", fm("top", "At the project root."))
    md(w.cwd / ".agents" / "skills", "sub", fm("sub", "In the working folder."))
    md(w.root / ".codex" / "skills", "top-codex", fm("top-codex", "Project .codex."))


def _openai_yaml(policy: str) -> Callable[[CodexWorld], Any]:
    def layout(w: CodexWorld) -> None:
        md(w.user_skills, "visible", fm("visible", "Always listed."))
        md(w.user_skills, "flagged", fm("flagged", "Policy decides."))
        write(w.user_skills / "flagged" / "agents" / "openai.yaml", policy)
    return layout


def _config(rules: str, *, extra: Callable[[CodexWorld], Any] | None = None) -> Callable[[CodexWorld], Any]:
    def layout(w: CodexWorld) -> None:
        md(w.user_skills, "keep", fm("keep", "Stays enabled."))
        md(w.user_skills, "drop", fm("drop", "Disabled by the config."))
        md(w.user_skills, "twin-a", fm("twin", "Twin A."))
        md(w.user_skills, "twin-b", fm("twin", "Twin B."))
        w.config = rules.replace("{skills}", str(w.user_skills))
        if extra:
            extra(w)
    return layout


def _many(count: int, description: str = "Does thing {i} with enough words to make the line longer.",
          folder: str = "s{i:03d}") -> Callable[[CodexWorld], Any]:
    def layout(w: CodexWorld) -> None:
        for i in range(count):
            md(w.user_skills, folder.format(i=i), fm(folder.format(i=i), description.format(i=i)))
    return layout


LONG = "Use when " + "x" * 1100
EXACT = "y" * 1024
CASES = [
    # names, folders, roots
    Case("names-vs-folders", _names_vs_folders),
    Case("duplicate-names", _duplicates),
    Case("hidden-and-nested", _hidden_and_nested),
    Case("symlinked-folder", _symlinked_folder),
    Case("symlinked-file", _symlinked_file),
    Case("symlinked-root", _symlinked_root),
    Case("all-roots", _all_roots),
    Case("sub-folder-project", _sub_folder_project),
    Case("plugin-like-name", _user(fm("ns:skill", "A colon in the name."))),
    Case("long-name", _user(fm("n" * 65, "Name over 64."))),
    Case("name-64", _user(fm("n" * 64, "Name of 64."))),
    # YAML shapes
    Case("unquoted-colon", _user(fm("colon", "Use when: the user asks for: things"))),
    Case("unquoted-colon-space", _user("name: colon2\ndescription: key: value: more\n")),
    Case("invalid-yaml-bracket", _user("name: [unclosed\ndescription: broken\n")),
    Case("invalid-yaml-indent", _user("name: bad\n  description: indented\n")),
    Case("block-literal", _user("name: lit\ndescription: |\n  First line.\n  Second  line.\n\n  Third.\n")),
    Case("block-folded", _user("name: fold\ndescription: >-\n  Folded\n  text here.\n")),
    Case("quoted", _user("name: 'q'\ndescription: \"Quoted \\\"text\\\" with \\u00e9\"\n")),
    Case("multi-line-plain", _user("name: plain\ndescription: first line\n  continues here\n  and here\n")),
    Case("missing-description", _user(fm("nodesc", None))),
    Case("empty-description", _user("name: empty\ndescription: \"\"\n")),
    Case("null-description", _user("name: nul\ndescription: ~\n")),
    Case("number-description", _user("name: num\ndescription: 42\n")),
    Case("bool-name", _user("name: true\ndescription: A boolean name.\n")),
    Case("list-description", _user("name: lst\ndescription:\n  - a\n  - b\n")),
    Case("map-description", _user("name: mp\ndescription:\n  a: b\n")),
    Case("long-description", _user(fm("long", LONG))),
    Case("description-1024", _user(fm("exact", EXACT))),
    Case("long-multibyte-description", _user(fm("multi", "é" * 1030))),
    Case("short-description", _user("name: sd\ndescription: Long one.\nmetadata:\n  short-description: Short.\n")),
    Case("bom", _user(b"\xef\xbb\xbf---\nname: bom\ndescription: Starts with a BOM.\n---\nBody\n")),
    Case("crlf", _user(b"---\r\nname: crlf\r\ndescription: Windows lines.\r\n---\r\nBody\r\n")),
    Case("no-frontmatter", _user(b"# Just a title\n\nBody\n")),
    Case("unclosed-frontmatter", _user(b"---\nname: open\ndescription: never closed\n")),
    Case("indented-fences", _user(b"  ---\nname: ind\ndescription: Fences with spaces.\n  ---  \nBody\n")),
    Case("extra-keys", _user("name: extra\ndescription: Has more keys.\nallowed-tools:\n  - Read\nversion: 2\n"
                             "when_to_use: Never shown.\n")),
    Case("duplicate-key", _user("name: dupkey\ndescription: one\ndescription: two\n")),
    Case("not-utf8", _user(b"---\nname: latin\ndescription: caf\xe9\n---\n")),
    Case("whitespace", _user("name: '  spaced   name '\ndescription: \"  lots\\t of \\n space  \"\n")),
    Case("angle-brackets", _user(fm("angles", "Use <tags> & \"quotes\" as is."))),
    Case("disable-model-invocation", _user(fm("dmi", "Claude flag.") + "disable-model-invocation: true\n")),
    # invocation policy and config
    Case("openai-yaml-implicit-false", _openai_yaml("policy:\n  allow_implicit_invocation: false\n")),
    Case("openai-yaml-implicit-true", _openai_yaml("policy:\n  allow_implicit_invocation: true\n")),
    Case("openai-yaml-invalid", _openai_yaml("policy: [broken\n")),
    Case("config-path-disable", _config('[[skills.config]]\npath = "{skills}/drop/SKILL.md"\nenabled = false\n')),
    Case("config-name-disable", _config('[[skills.config]]\nname = "twin"\nenabled = false\n')),
    Case("config-name-then-path", _config('[[skills.config]]\nname = "twin"\nenabled = false\n'
                                          '[[skills.config]]\npath = "{skills}/twin-b/SKILL.md"\nenabled = true\n')),
    Case("config-both-selectors", _config('[[skills.config]]\nname = "drop"\npath = "{skills}/drop/SKILL.md"\n'
                                          'enabled = false\n')),
    Case("two-links-same-target", lambda w: (_symlinked_folder(w), os.symlink(w.root / "elsewhere" / "real",
                                                                            w.user_skills / "another-link"))),
    Case("link-cycle", lambda w: (md(w.user_skills, "loop", fm("loop", "Holds a link to its parent.")),
                                  os.symlink(w.user_skills, w.user_skills / "loop" / "back"))),
    Case("long-short-description", _user(f"name: lsd\ndescription: Fine.\nmetadata:\n  short-description: "
                                         f"{'s' * 1030}\n")),
    Case("long-multibyte-name", _user(fm("é" * 65, "Name of 65 characters, 130 bytes."))),
    Case("trusted-project-parent-codex", lambda w: (_sub_folder_project(w), setattr(
        w, "config", f'[projects."{w.root}"]\ntrust_level = "trusted"\n'))),
    # the surrounding text and the model
    Case("model-prefix", _many(2), (OFF, "m=gpt-5.5-codex")),
    Case("model-upper-case", _many(2), (OFF, "m=GPT-5.5")),
    Case("empty-library", lambda w: None),
    Case("model-gpt-5.5", _many(2), (OFF, "m=gpt-5.5")),
    Case("model-unknown", _many(2), (OFF, "m=oracle-unknown-model")),
    Case("bundled-system-skills", _many(1), ()),
    # budgets: 2% of the context window in tokens, the table not charged
    Case("budget-window-4000", _many(12), (OFF, "model_context_window=4000")),
    Case("budget-window-10000", _many(12), (OFF, "model_context_window=10000")),
    Case("budget-window-1000", _many(12), (OFF, "model_context_window=1000")),
    Case("budget-window-1", _many(3), (OFF, "model_context_window=1")),
    Case("budget-max-tokens", _many(6, "word " * 150), (OFF, "skills.max_context_tokens=100")),
    Case("budget-max-tokens-cap", _many(100, "d{i} " + "z" * 440), (OFF, "skills.max_context_tokens=11000")),
    Case("budget-max-tokens-above-window", _many(100, "d{i} " + "z" * 440),
         (OFF, "m=gpt-5.5", "skills.max_context_tokens=8000")),
    Case("budget-window-above-max", _many(100, "d{i} " + "z" * 440), (OFF, "m=gpt-5.5", "model_context_window=400000")),
    Case("budget-window-600000", _many(100, "d{i} " + "z" * 440), (OFF, "model_context_window=600000")),
    Case("budget-unknown-window-above-max", _many(60, "d{i} " + "z" * 400),
         (OFF, "m=oracle-unknown-model", "model_context_window=400000")),
    Case("budget-shortened-only", _many(6, "word " * 150), (OFF, "model_context_window=20000")),
    Case("budget-multibyte", _many(8, "ünïcödé → 描述 {i} " * 8), (OFF, "model_context_window=6000")),
    Case("budget-gpt-5.5", _many(60, "d{i} " + "z" * 400), (OFF, "m=gpt-5.5")),
    Case("budget-model-prefix", _many(60, "d{i} " + "z" * 400), (OFF, "m=gpt-5.5-codex")),
    Case("budget-model-prefix-default", _many(110, "d{i} " + "z" * 400), (OFF, "m=gpt-6.2-sol-preview")),
    Case("budget-unknown-model", _many(60, "d{i} " + "z" * 400), (OFF, "m=oracle-unknown-model")),
    Case("budget-default-model", _many(110, "d{i} " + "z" * 400), (OFF,)),
]

#: Frontmatter shapes (folder -> the text between the fences), read by one app-server run: unquoted colons, YAML
#: indicators, comments, block scalars, quotes, anchors, tags, tabs, CRLF, nested and unrelated broken keys.
FRONTMATTER_SHAPES = {
    'a': 'name: a\ndescription: Use when: a\n  continued line\n',
    'b': 'name: b\ndescription: it\'s "quoted" inside: yes\n',
    'c': "name: c\ndescription: 'unterminated\n",
    'd': 'name: d\ndescription: - dash: x\n',
    'e': 'name: e\ndescription: #comment: x\n',
    'f': 'name: f\ndescription: a: b # trailing comment\n',
    'g': 'name: g\ndescription: ok\nmetadata:\n  short-description: x: y\n',
    'h': 'description: "ok"\nname: h: b\n',
    'i': 'name: i\ndescription: valid\nother: [broken\n',
    'j': 'name: j\ndescription: \ttab: after\n',
    'k': 'name: k\ndescription: {broken\n',
    'l': 'name: l\ndescription: Use when: x\nallowed-tools: [a, b\n',
    'm': 'name: m\ndescription: "Use when: x" extra\n',
    'n': 'name: n\ndescription: >\n  folded: with colon\n',
    'o': 'name: o\ndescription: *alias\n',
    'p': 'name: p\ndescription: &anchor value: x\n',
    'q': 'name: q\ndescription: !tag value: x\n',
    'r': 'name: r\ndescription: a:b\n',
    's': 'name: s\ndescription: trailing colon:\n',
    't': 'name: t\ndescription: %percent: x\n',
    'u': 'name: u\ndescription: @at: x\n',
    'v': 'name: v\ndescription: `tick: x\n',
    'w': 'name: w  \ndescription:   spaced: x   \n',
    'x': '  name: x\n  description: indented all: y\n',
    'y': 'name: y\ndescription: [a, b]\n',
    'z': 'name: z\ndescription: value with "dq: colon" inside\n',
    'aa': 'name: aa\ndescription: back\\slash: x\n',
    'ab': 'name: ab\ndescription: Use when: x\ndescription2: dup: y\n',
    'ac': 'name: ac\r\ndescription: crlf: yes\r\n',
    'ad': 'name: ad\ndescription: |\n  block: fine\nbad: [x\n',
    'a1': 'name: a1\ndescription: %percent\n',
    'a2': 'name: a2\ndescription: @at\n',
    'a3': 'name: a3\ndescription: `tick\n',
    'a4': 'name: a4\ndescription: &anchor value\n',
    'a5': 'name: a5\ndescription: !tag value\n',
    'a6': 'name: a6\ndescription: - dash\n',
    'a7': 'name: a7\ndescription: *alias x: y\n',
    'a8': 'name: a8\ndescription: [x: y\n',
    'a9': 'name: a9\ndescription: a :b\n',
    'b1': 'name: b1\ndescription: value:\twith tab\n',
    'b2': "name: b2\ndescription: fine\nother: 'unterminated\n",
    'b3': "name: b3\ndescription: fine: x\nother: 'unterminated\n",
    'b4': 'name: b4\ndescription: fine: x\nother:\n  nested: a: b\n',
    'b5': 'name: b5\ndescription: x: y\nname2: *alias\n',
    'b6': 'name: b6\ndescription: x: y\n  - list item\n',
    'b7': 'name: b7\ndescription: x: y\n# a comment line\n',
    'b8': 'name: b8\ndescription: x: y\n\nmetadata:\n  a: 1\n',
    'b9': 'name: b9\ndescription: x: y # c: d\n',
    'c1': 'name: c1\ndescription: x: y#nocomment\n',
    'c2': 'name: "c2: q"\ndescription: x: y\n',
    'c3': "name: c3\ndescription: it's: fine\n",
    'c4': 'name: c4\ndescription: x: y\n---\n',
    'c5': 'name: c5\ndescription: x: y\nbad line without colon\n',
    'c6': 'name: c6\ndescription: x: y\nkey with space: v: w\n',
    'c7': 'name: c7\ndescription: "a" : b\n',
    'c8': 'name: c8\ndescription: trailing: \n',
    'c9': 'name: c9\ndescription: x: y\n- top list\n',
    'd1': 'name: d1\ndescription:x: y\n',
    'd2': 'name: d2\ndescription: a\\: b\n',
    'd3': 'name: d3\ndescription: |x: y\n',
    'd4': 'name: d4\ndescription: >x: y\n',
    'd5': 'name: d5\ndescription: ? x: y\n',
    'd6': "name: d6\ndescription: x: y\nmetadata:\n  short-description: a: b\n  other: 'bad\n",
    'e1': 'name: e1\ndescription: x: y\nother: - a [b\n',
    'e2': 'name: e2\ndescription: x: y\nother: % a [b\n',
    'e3': 'name: e3\ndescription: x: y\nkey2: - a: b\n',
    'e4': 'name: e4\ndescription: x: y\na.b: - c: d\n',
    'e5': 'name: e5\ndescription: x: y\n"qk": - c: d\n',
    'e6': 'name: e6\ndescription: x: y\nother: - a ]b\n',
    'e7': 'name: e7\ndescription: x: y\nother: - a }b\n',
    'e8': 'name: e8\ndescription: x: y\nother: - a @b\n',
    'e9': 'name: e9\ndescription: x: y\nother: - a `b\n',
    'f1': 'name: f1\ndescription: x: y\nother: - a *b\n',
    'f2': 'name: f2\ndescription: x: y\nother: - a &b\n',
    'f3': 'name: f3\ndescription: x: y\nother: - a !b\n',
    'f4': 'name: f4\ndescription: x: y\nother: - a |b\n',
    'f5': 'name: f5\ndescription: x: y\nother: - a >b\n',
    'f6': 'name: f6\ndescription: x: y\nother: - a %b\n',
    'f7': 'name: f7\ndescription: x: y\nother: - a #b\n',
    'f8': 'name: f8\ndescription: x: y\nother: - a ,b\n',
    'f9': 'name: f9\ndescription: x: y\nother: - a ?b\n',
    'g1': "name: g1\ndescription: x: y\nother: - a 'b\n",
    'g2': 'name: g2\ndescription: x: y\nother: - a "b\n',
    'g3': 'name: g3\ndescription: x: y\nother: - a\n',
    'g4': 'name: g4\ndescription: "x\\" y: z\n',
    'g5': 'name: g5\ndescription: x \\ "y": z\n',
    'g6': "name: g6\ndescription: x 'y': z\n",
    'g7': 'name: g7\ndescription:  x: y  # c\n',
    'g8': 'name: g8\ndescription: x: y\t# c\n',
    'g9': 'name: g9\ndescription: x:  y\n',
    'h1': 'name: h1\ndescription: x: y\nother: ]x\n',
    'h1d': 'name: h1d\ndescription: ]x\n',
    'h2': 'name: h2\ndescription: x: y\nother: }x\n',
    'h2d': 'name: h2d\ndescription: }x\n',
    'h3': 'name: h3\ndescription: x: y\nother: ,x\n',
    'h3d': 'name: h3d\ndescription: ,x\n',
    'h4': 'name: h4\ndescription: x: y\nother: |x\n',
    'h4d': 'name: h4d\ndescription: |x\n',
    'h5': 'name: h5\ndescription: x: y\nother: >x\n',
    'h5d': 'name: h5d\ndescription: >x\n',
    'h6': 'name: h6\ndescription: x: y\nother: !\n',
    'h6d': 'name: h6d\ndescription: !\n',
    'h7': 'name: h7\ndescription: x: y\nother: &\n',
    'h7d': 'name: h7d\ndescription: &\n',
    'h8': 'name: h8\ndescription: x: y\nother: *\n',
    'h8d': 'name: h8d\ndescription: *\n',
    'h9': 'name: h9\ndescription: x: y\nother: ?\n',
    'h9d': 'name: h9d\ndescription: ?\n',
    'i1': 'name: i1\ndescription: x: y\nother: -\n',
    'i1d': 'name: i1d\ndescription: -\n',
    'i2': 'name: i2\ndescription: x: y\nother: x ]\n',
    'i2d': 'name: i2d\ndescription: x ]\n',
    'i3': 'name: i3\ndescription: x: y\nother: @\n',
    'i3d': 'name: i3d\ndescription: @\n',
    'i4': 'name: i4\ndescription: x: y\nother: a\tb: c\n',
    'i4d': 'name: i4d\ndescription: a\tb: c\n',
    'i5': 'name: i5\ndescription: x: y\nother: "a": b\n',
    'i5d': 'name: i5d\ndescription: "a": b\n',
    'i6': 'name: i6\ndescription: x: y\nother: x:\ty\n',
    'i6d': 'name: i6d\ndescription: x:\ty\n',
    'i7': 'name: i7\ndescription: x: y\nother: [a]: b\n',
    'i7d': 'name: i7d\ndescription: [a]: b\n',
    'i8': 'name: i8\ndescription: x: y\nother: x: y   \n',
    'i8d': 'name: i8d\ndescription: x: y   \n',
    'i9': 'name: i9\ndescription: x: y\nother: x: y #\n',
    'i9d': 'name: i9d\ndescription: x: y #\n',
    'j1': 'name: j1\ndescription: x: y\nother: x: y#z # w\n',
    'j1d': 'name: j1d\ndescription: x: y#z # w\n',
    'j2': "name: j2\ndescription: x: y\nother: x: 'y'\n",
    'j2d': "name: j2d\ndescription: x: 'y'\n",
    # Rules observed on Codex 0.171.0 with generated frontmatters (seeds 101-116, 201-221), one shape each.
    # serde_yaml deserializes the events before libyaml's first syntax error: a type error, a duplicate field
    # or an unknown anchor met there is reported, not the syntax error after it.
    'type-error-first': 'name: type-error-first\ndescription: [\nother: - x\n',
    'duplicate-first': 'name: duplicate-first\nname: ,\ndescription: d\n',
    'unknown-anchor-first': 'name: unknown-anchor-first\ndescription: d\nother: *Use when"\n',
    # libyaml's own syntax errors: a bad tag, a bad URI escape in a tag, a tab after a block scalar's indent.
    'tag-error': 'other: !]{x\nname: tag-error\ndescription: d\n',
    'tag-escape-error': 'name: tag-escape-error\ndescription: !%\u00e9 x\n',
    'block-scalar-tab': 'description: |\n  \tx\nname: block-scalar-tab\n',
    # The second, quoted reading: it follows type errors too; a flow value is quoted only when it is no YAML
    # alone; a value that is all comment stays empty.
    'type-error-read-again': 'description: [ # c\nname: type-error-read-again] # x\n',
    'flow-whole-not-quoted': 'name: flow-whole-not-quoted\nother: a: b\ndescription: [a]\n',
    'flow-comment-not-quoted': 'name: flow-comment-not-quoted\nother: a: b\ndescription: [a]#x\n',
    'flow-broken-quoted': 'name: flow-broken-quoted\nother: a: b\ndescription: [a] b\n',
    'comment-only-value': 'name: comment-only-value: x\ndescription:  #: comment\n',
    # serde's words for a value of the wrong type: Rust's {:?} of a string, null as a unit value, YAML 1.2
    # booleans and numbers; no position at the document's start; tags as written.
    'debug-string': 'name: debug-string\ndescription: d\nmetadata: \u00e9\tx "q" \\\n',
    'metadata-null': 'name: metadata-null\ndescription: d\nmetadata: ~\n',
    'metadata-hex': 'name: metadata-hex\ndescription: d\nmetadata: 0x1f\n',
    'metadata-float': 'name: metadata-float\ndescription: d\nmetadata: 1e5\n',
    'metadata-leading-zero': 'name: metadata-leading-zero\ndescription: d\nmetadata: 01\n',
    'metadata-u128': 'name: metadata-u128\ndescription: d\nmetadata: 18446744073709551616\n',
    'metadata-bool': 'name: metadata-bool\ndescription: d\nmetadata: TRUE\n',
    'metadata-tagged-empty': 'name: metadata-tagged-empty\ndescription: d\nmetadata: !!str\n',
    'metadata-tagged-null': 'name: metadata-tagged-null\ndescription: d\nmetadata: !t ~\n',
    'root-sequence': '- root-sequence\n',
    'root-sequence-later': '# c\n- root-sequence-later\n',
    'str-tag': 'name: str-tag\ndescription: !!str ~\n',
    'null-tag': 'name: !!null x\ndescription: d\n',
    # libyaml 0.2.5's words where PyYAML's libyaml (0.2.6) words otherwise, and its reader's byte offsets.
    'hex-escape': 'name: hex-escape\ndescription: "\\x4"\n',
    'control-character': 'name: control-character\ndescription: \u2028 \x07\n',
    # A first document that reads well, then anything: serde_yaml refuses the second document.
    'second-document': 'name: second-document\ndescription: d\n...\n%YAML 1.2\nother: x\n',
    'document-end-only': 'name: document-end-only\ndescription: d\n...\n# c\n',
    # The quoted reading keeps a line's comment: a control character there still stops it.
    'comment-kept': 'name: comment-kept: b # c\x07\ndescription: d\n',
    'comment-kept-flow': 'name: comment-kept-flow\ndescription: {a # \x07\n',
    # A comment starts after any Unicode blank; what follows the quoted value is kept, so libyaml, for which
    # only U+2028, U+2029 and U+0085 of those break a line, reads it again.
    'comment-after-nbsp': 'name: comment-after-nbsp\ndescription: a: b\u00a0#c\n',
    'comment-after-line-separator': 'name: comment-after-line-separator\ndescription: a: b\u2028#c\n',
    'comment-after-nel': 'description: : \x85#x\nname: comment-after-nel\n',
    # A key that is a collection is no field name.
    'collection-key': 'name: collection-key\ndescription: d\n{a: 1}: b\n',
    'collection-key-in-metadata': 'name: collection-key-in-metadata\ndescription: d\nmetadata:\n  [x]: y\n',
}

XFAIL: dict[str, str] = {}


def _params() -> list[Any]:
    return [pytest.param(case, id=case.id, marks=[pytest.mark.xfail(strict=True, reason=XFAIL[case.id])]
                         if case.id in XFAIL else []) for case in CASES]


@pytest.fixture
def world(codex_binary: Path, tmp_path: Path) -> CodexWorld:
    return CodexWorld(codex_binary, tmp_path)


@pytest.mark.parametrize("case", _params())
def test_listing_matches_codex(world: CodexWorld, case: Case) -> None:
    case.layout(world)
    theirs = world.skills_text(case.overrides)  # writes the world's config.toml, which the profile reads too
    assert ours(world, case.overrides) == theirs


@pytest.mark.parametrize("case", _params())
def test_discovery_matches_codex(world: CodexWorld, case: Case) -> None:
    """What ``skills/list`` reports: each skill's name, description, canonical path, scope and enabled flag, in
    order, and each rejected file's error."""
    case.layout(world)
    theirs = theirs_discovered(world, case.overrides)
    assert discovered(world, case.overrides) == theirs


@pytest.fixture(scope="module")
def shapes(codex_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict]:
    """(Codex's, the profile's) reading of every frontmatter shape: folder -> (name, description,
    short description) or the error."""
    world = CodexWorld(codex_binary, tmp_path_factory.mktemp("shapes"))
    for folder, front in FRONTMATTER_SHAPES.items():
        write(world.user_skills / folder / "SKILL.md", f"---\n{front}---\nBody\n")
    answer = world.skills_list((OFF,))
    theirs: dict[str, Any] = {s["path"].split("/")[-2]: (s["name"], s["description"], s.get("shortDescription"))
                              for s in answer["skills"]}
    theirs.update({e["path"].split("/")[-2]: e["message"] for e in answer["errors"]})
    found = profile_for(world).discover()
    mine: dict[str, Any] = {s.path.split("/")[-2]: (s.name, s.description, s.metadata.get("short_description"))
                            for s in found.skills}
    mine.update({line.split(": ", 1)[0].split("/")[-2]: line.split(": ", 1)[1] for line in found.errors})
    return theirs, mine


@pytest.mark.parametrize("folder", list(FRONTMATTER_SHAPES))
def test_frontmatter_shape_matches_codex(shapes: tuple[dict, dict], folder: str) -> None:
    theirs, mine = shapes
    assert mine.get(folder) == theirs.get(folder)


# --- codex exec: what reaches the model ------------------------------------------------------------------------


def _mention_library(w: CodexWorld) -> None:
    md(w.user_skills, "alpha", fm("alpha", "Alpha."), body="Alpha body\n\nwith lines\n")
    write(w.user_skills / "crlf" / "SKILL.md", b"---\r\nname: crlf\r\ndescription: CRLF.\r\n---\r\nBody\r\n")
    md(w.user_skills, "twin-a", fm("twin", "Twin A."))
    md(w.user_skills, "twin-b", fm("twin", "Twin B."))
    md(w.user_skills, "path", fm("path", "Named like an environment variable."))
    md(w.user_skills, "hidden-policy", fm("quiet", "Not listed, still mentionable."))
    write(w.user_skills / "hidden-policy" / "agents" / "openai.yaml", "policy:\n  allow_implicit_invocation: false\n")
    md(w.user_skills, "off", fm("off", "Disabled by the config."))
    md(w.root / "elsewhere", "real", fm("linked", "Through a link."))
    os.symlink(w.root / "elsewhere" / "real", w.user_skills / "link")
    w.config = f'[[skills.config]]\npath = "{w.user_skills}/off/SKILL.md"\nenabled = false\n'


MENTIONS = [
    pytest.param("use $alpha now", id="one-name"),
    pytest.param("$crlf and $alpha, then $alpha again", id="two-names-repeated"),
    pytest.param("try $twin", id="ambiguous-name"),
    pytest.param("echo $PATH and $path", id="env-name"),
    pytest.param("$quiet please", id="not-implicit"),
    pytest.param("$off please", id="disabled"),
    pytest.param("$linked please", id="symlinked"),
    pytest.param("open [$twin](TWIN_B) here", id="linked-mention"),
    pytest.param("no mention at all, $ 5 dollars", id="none"),
]


@pytest.mark.parametrize("prompt", MENTIONS)
def test_mention_injection_matches_codex(world: CodexWorld, prompt: str) -> None:
    """``$name`` mentions: the user texts Codex adds after the prompt are the profile's :func:`inject`."""
    _mention_library(world)
    prompt = prompt.replace("TWIN_B", str(world.user_skills / "twin-b" / "SKILL.md"))
    run = world.exec(prompt, (OFF,))
    assert run.returncode == 0, run.stderr[-2000:]
    theirs = [text for role, text in run.after_prompt(prompt) if role == "user"]
    items, warnings = inject(prompt, list(profile_for(world).discover().skills))
    assert (items, warnings) == (theirs, run.warnings())


# A bare line "- s000: (file: r0/s000/SKILL.md)" and its newline are 33 bytes, 9 tokens: 2% of 4,000 is 80 tokens,
# 8 bare lines (72); 2% of 3,300 is 66 tokens, 7 bare lines (63). The roots table costs nothing.
@pytest.mark.parametrize("window, expected", [
    pytest.param(4000, "Exceeded skills context budget. All skill descriptions were removed and 4 additional "
                       "skills were not included in the model-visible skills list.", id="four-left-out"),
    pytest.param(3300, "Exceeded skills context budget. All skill descriptions were removed and 5 additional "
                       "skills were not included in the model-visible skills list.", id="five-left-out"),
    pytest.param(10000, None, id="only-shortened"),
    pytest.param(100000, None, id="all-fit"),
])
def test_budget_warning_matches_codex(world: CodexWorld, window: int, expected: str | None) -> None:
    """The warning Codex shows (an ``error`` item of ``codex exec --json``) and the listing it sent, against the
    profile's for the same window."""
    _many(12)(world)
    overrides = (OFF, f"model_context_window={window}")
    run = world.exec("hi", overrides)
    profile = profile_for(world, overrides)
    listing = profile.listing(list(profile.discover().skills))
    assert run.warnings() == ([expected] if expected else [])
    assert listing.warning == expected
    assert listing.text == skills_instructions(run.requests[0]["input"])


def _hook_command(world: CodexWorld, context: str) -> str:
    script = world.root / "hook.py"
    output = {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": context}}
    script.write_text(f"import sys\nsys.stdin.read()\nprint({json.dumps(json.dumps(output))})\n", encoding="utf-8")
    return f"{sys.executable} {script}"


@pytest.mark.parametrize("where", ["hooks.json", "config.toml"])
def test_hook_context_reaches_the_model_once_trusted(world: CodexWorld, where: str) -> None:
    """The profile's hook context, printed by a ``UserPromptSubmit`` command hook, is the developer message
    right after the prompt, verbatim; until the hook's hash is trusted (``[hooks.state."<key>"] trusted_hash``,
    the key and hash from app-server ``hooks/list``) ``codex exec`` runs without it and says nothing."""
    _many(7)(world)
    profile = profile_for(world)
    context = profile.hook_context(list(profile.discover().skills)[::-1])
    assert context.count("\n") == 5  # the header and at most 5 skills
    command = _hook_command(world, context)
    handler = {"type": "command", "command": command, "timeout": 30}
    if where == "hooks.json":
        write(world.codex_home / "hooks.json", json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [handler]}]}}))
    else:
        world.config = f"[[hooks.UserPromptSubmit]]\n[[hooks.UserPromptSubmit.hooks]]\ntype = \"command\"\n" \
                       f"command = {json.dumps(command)}\ntimeout = 30\n"
    untrusted = world.exec("route me", (OFF,))
    assert untrusted.returncode == 0 and untrusted.warnings() == []
    assert [text for role, text in untrusted.after_prompt("route me")] == []
    [listed] = world.app_server([("hooks/list", {"cwds": [str(world.cwd)]})])
    [hook] = listed["data"][0]["hooks"]
    assert hook["trustStatus"] == "untrusted"
    world.config += f"[hooks.state.{json.dumps(hook['key'])}]\ntrusted_hash = {json.dumps(hook['currentHash'])}\n"
    trusted = world.exec("route me", (OFF,))
    assert trusted.after_prompt("route me") == [("developer", context)]


def test_nothing_leaves_loopback(world: CodexWorld) -> None:
    """Every network connection ``codex exec`` opens (seen by strace) goes to the fake Responses API on
    127.0.0.1: the oracle runs offline."""
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is not installed: cannot watch the binary's connections")
    log = world.root / "connect.log"
    _mention_library(world)
    run = world.exec("use $alpha", (OFF,), wrap=[strace, "-f", "-qq", "-e", "trace=connect", "-o", str(log)])
    if not log.exists():
        pytest.skip(f"strace could not trace here: {run.stderr.strip()[-300:]}")
    assert run.returncode == 0 and run.requests, run.stderr[-2000:]
    calls = [line for line in log.read_text().splitlines() if "connect(" in line]
    inet = [line for line in calls if "AF_INET" in line]
    assert inet, "no connection seen: the trace is not working"
    outside = [line for line in inet if 'inet_addr("127.0.0.1")' not in line and "::1" not in line]
    assert outside == []


# --- the corpora ------------------------------------------------------------------------------------------------


def _corpora(w: CodexWorld) -> None:
    """The three corpus folders, each a symlinked folder in ``$CODEX_HOME/skills``."""
    w.user_skills.mkdir(parents=True, exist_ok=True)
    for root in CORPUS_ROOTS:
        os.symlink(root, w.user_skills / root.parent.name)


@pytest.fixture(scope="module")
def corpora(codex_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> CodexWorld:
    if not all(root.is_dir() for root in CORPUS_ROOTS):
        pytest.skip(f"the corpora are not at {CORPORA}")
    world = CodexWorld(codex_binary, tmp_path_factory.mktemp("corpora"))
    _corpora(world)
    return world


@pytest.fixture
def corpora_copy(codex_binary: Path, tmp_path: Path) -> CodexWorld:
    """A private world with the corpora laid out (a test may write its config)."""
    if not all(root.is_dir() for root in CORPUS_ROOTS):
        pytest.skip(f"the corpora are not at {CORPORA}")
    world = CodexWorld(codex_binary, tmp_path)
    _corpora(world)
    return world


CORPUS_BUDGETS = [
    pytest.param((OFF,), id="default-model-10000-tokens"),
    pytest.param((OFF, "m=gpt-5.5"), id="gpt-5.5-5440-tokens"),
    pytest.param((OFF, "m=oracle-unknown-model"), id="unknown-model-5440-tokens"),
    pytest.param((OFF, "model_context_window=100000"), id="window-100000-2000-tokens"),
    pytest.param((OFF, "skills.max_context_tokens=60000"), id="max-60000-tokens"),
]


@pytest.mark.parametrize("overrides", CORPUS_BUDGETS)
def test_corpora_listing_matches_codex(corpora: CodexWorld, overrides: tuple[str, ...]) -> None:
    theirs = corpora.skills_text(overrides)
    assert ours(corpora, overrides) == theirs


def test_corpora_discovery_matches_codex(corpora: CodexWorld) -> None:
    theirs = theirs_discovered(corpora)
    assert discovered(corpora) == theirs
    assert len(theirs[0]) > 600


# --- --emit-config pasted into the real config ------------------------------------------------------------------


def _enabled(answer: dict[str, Any]) -> list[str]:
    return sorted(s["path"] for s in answer["skills"] if s["enabled"])


def test_emit_config_leaves_exactly_the_routed_skills(corpora_copy: CodexWorld) -> None:
    """The profile's ``[[skills.config]]`` entries (what ``prompt --emit-config`` prints) pasted into the real
    config: Codex then enables and lists exactly the kept skills, those with descriptions over 1,024 characters
    and those reached through symlinked folders included."""
    world = corpora_copy
    profile = profile_for(world)
    library = list(profile.discover().skills)
    keep = [s for s in library if s.name in ("claude-api", "database-lookup")] + library[:2] + library[-1:]
    assert len({s.path for s in keep}) == 5 and any(len(s.description) > 1024 for s in keep)
    world.config = profile.restrict_config(library, keep)
    answer = world.skills_list((OFF,))
    assert _enabled(answer) == sorted(s.path for s in keep)
    text = world.skills_text((OFF,))
    assert text is not None and text.count("\n- ") - 1 == 5  # the roots line and five skills
    assert ours(world) == text


def test_emit_config_from_the_cli(world: CodexWorld) -> None:
    """``skill-router prompt --profile codex --exclude NAME --emit-config`` run where Codex runs (same HOME,
    CODEX_HOME and working folder), its output pasted into config.toml: Codex disables exactly that skill."""
    _mention_library(world)
    md(world.user_skills, "long", fm("long", LONG))
    world.config = ""
    env = {**world.env(), "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-m", "router.cli", "prompt", "--profile", "codex", "--exclude", "long",
                           "--emit-config"], cwd=world.cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    world.config = done.stdout
    answer = world.skills_list((OFF,))
    assert [s["name"] for s in answer["skills"] if not s["enabled"]] == ["long"]
    assert ours(world) == world.skills_text((OFF,))


@pytest.mark.parametrize("model", [None, "gpt-5.5", "oracle-unknown-model"])
def test_cli_prompt_for_the_harness_model_matches_codex(world: CodexWorld, model: str | None) -> None:
    """``skill-router prompt --profile codex [--harness-model M]`` where Codex runs prints what Codex sends for
    that model (default: Codex's own default), byte for byte; ``--json`` names the Codex version and model."""
    _many(60, "d{i} " + "z" * 400)(world)
    overrides = (OFF,) + ((f"m={model}",) if model else ())
    world.config = "[skills.bundled]\nenabled = false\n"
    theirs = world.skills_text(overrides)
    flags = ["--harness-model", model] if model else []
    env = {**world.env(), "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-m", "router.cli", "prompt", "--profile", "codex", *flags],
                          cwd=world.cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == theirs
    done = subprocess.run([sys.executable, "-m", "router.cli", "prompt", "--profile", "codex", "--json", *flags],
                          cwd=world.cwd, env=env, capture_output=True, text=True, timeout=120)
    assert json.loads(done.stdout)["harness"] == {"version": CODEX_VERSION, "model": model or "gpt-6.2-sol"}


# --- the installer's own errors (no binary needed) ----------------------------------------------------------------


def test_install_without_npm_names_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(OracleError, match=r"^npm is not on PATH: install Node.js and npm to run the Codex oracle "
                                          r"tests \(they install @openai/codex@0\.171\.0 into .*cache/skill-router/"
                                          r"oracle/codex-0\.171\.0\)$"):
        install_codex()


def test_a_failing_npm_install_is_reported_with_its_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    write(bin_dir / "npm", "#!/bin/sh\n"
                           "echo 'npm ERR! 404 Not Found - GET https://registry.example/@openai%2fcodex' >&2\n"
                           "exit 1\n").chmod(0o755)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(OracleError, match=r"^npm install @openai/codex@0\.171\.0 into .* failed \(exit 1\): npm ERR! "
                                          r"404 Not Found - GET https://registry\.example/@openai%2fcodex$"):
        install_codex()


# --- generated libraries ----------------------------------------------------------------------------------------

_PIECES = ["Use when", ":", ": ", " #", "#", "'", '"', "[", "]", "{", "}", "@", "`", "-", "- ", "*", "&", "!", "|",
           ">", "%", "?", ",", "\t", "  ", "é", "漢字", "→", "\\", "x", "word", "Use", "when:", "true", "42", "~"]


def _random_value(rng: Any) -> str:
    return "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 8))).replace("\n", " ")


def _random_front(rng: Any, index: int) -> str:
    lines = []
    if rng.random() < 0.8:
        tail = _random_value(rng) if rng.random() < .2 else ""
        lines.append(f"name: {rng.choice(['', 'n-', 'Skill '])}{index}{tail}")
    style = rng.random()
    value = _random_value(rng)
    if style < 0.55:
        lines.append(f"description: {value}")
    elif style < 0.7:
        lines.append("description: |\n  " + value + "\n  " + _random_value(rng))
    elif style < 0.8:
        lines.append("description: \"" + value.replace("\\", "\\\\").replace('"', '\\"') + '"')
    elif style < 0.9:
        lines.append(f"description: {value}\n  {_random_value(rng)}")
    if rng.random() < 0.3:
        lines.append(f"other: {_random_value(rng)}")
    if rng.random() < 0.2:
        lines.append(f"metadata:\n  short-description: {_random_value(rng)}")
    rng.shuffle(lines)
    return "\n".join(lines) + "\n"


SEEDS = (1, 2, 3)
GENERATED = 80
#: Generated frontmatters the profile still reads otherwise than Codex 0.171.0, and why.
GENERATED_XFAIL: dict[tuple[int, str], str] = {}


def _generated(world: CodexWorld, seed: int, skip: bool) -> None:
    import random

    rng = random.Random(seed)
    for index in range(GENERATED):
        text = _random_front(rng, index)
        eol = "\r\n" if rng.random() < 0.1 else "\n"
        if skip and (seed, f"g{index:02d}") in GENERATED_XFAIL:
            continue
        write(world.user_skills / f"g{index:02d}" / "SKILL.md", f"---{eol}{text.replace(chr(10), eol)}---{eol}Body")


@pytest.fixture(scope="module")
def generated(codex_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple[dict, dict]]:
    """Per seed, (Codex's, the profile's) reading of each generated SKILL.md: folder -> (name, description) or
    the error. One app-server run per seed."""
    out = {}
    for seed in SEEDS:
        world = CodexWorld(codex_binary, tmp_path_factory.mktemp(f"generated-{seed}"))
        _generated(world, seed, skip=False)
        answer = world.skills_list((OFF,))
        theirs: dict[str, Any] = {s["path"].split("/")[-2]: (s["name"], s["description"]) for s in answer["skills"]}
        theirs.update({e["path"].split("/")[-2]: e["message"] for e in answer["errors"]})
        found = profile_for(world).discover()
        mine: dict[str, Any] = {s.path.split("/")[-2]: (s.name, s.description) for s in found.skills}
        mine.update({line.split(": ", 1)[0].split("/")[-2]: line.split(": ", 1)[1] for line in found.errors})
        out[seed] = (theirs, mine)
    return out


def _generated_params() -> list[Any]:
    return [pytest.param(seed, f"g{i:02d}", id=f"{seed}-g{i:02d}", marks=[pytest.mark.xfail(
        strict=True, reason=GENERATED_XFAIL[(seed, f"g{i:02d}")])] if (seed, f"g{i:02d}") in GENERATED_XFAIL else [])
        for seed in SEEDS for i in range(GENERATED)]


@pytest.mark.parametrize("seed, folder", _generated_params())
def test_generated_frontmatter_matches_codex(generated: dict[int, tuple[dict, dict]], seed: int, folder: str) -> None:
    """240 frontmatters drawn from YAML's awkward pieces (fixed seeds), each read as Codex reads it."""
    theirs, mine = generated[seed]
    assert mine.get(folder) == theirs.get(folder)


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_libraries_list_as_codex_lists_them(codex_binary: Path, tmp_path: Path, seed: int) -> None:
    """The generated libraries (the known differences left out) at a budget that cuts: discovery, order and the
    listing, byte for byte."""
    world = CodexWorld(codex_binary, tmp_path)
    _generated(world, seed, skip=True)
    overrides = (OFF, "model_context_window=30000")
    theirs = theirs_discovered(world, overrides), world.skills_text(overrides)
    assert (discovered(world, overrides), ours(world, overrides)) == theirs
