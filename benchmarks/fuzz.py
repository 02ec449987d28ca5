"""Does any input a user or a file system can hand the router crash it? Property-based fuzzing, counted.

Generated inputs (hypothesis) go through every profile (``router.profiles.profile_names()``, so a new profile is
fuzzed as soon as it exists) and through the command-line entry points (``router.cli.main`` in-process):

- ``frontmatter``: SKILL.md frontmatter text -> each profile's parse, render, tool and tool call; the shared
  frontmatter parser; the text the router indexes.
- ``skill_file``: whole SKILL.md files (BOMs, CRLF, invalid UTF-8, missing fences, deep nesting, aliases, tags)
  in a small library -> each profile's discovery and rendering, ``lint``; every ``--cli-every``-th case also
  ``list``, ``prompt``, ``use``, ``lint`` and ``route`` on the command line.
- ``catalogue``: JSONL catalogue files -> ``load_catalog``, a router over them; CLI ``list``, ``prompt``,
  ``route``.
- ``labels``: labelled-request files, JSONL and YAML -> ``load_requests``; CLI ``eval`` and ``learn``.
- ``config``: config files -> ``RouterConfig.load``; CLI ``prompt``, ``route``, ``index``.
- ``tool_call``: skill-tool arguments of any JSON shape -> each profile's ``call_tool``.
- ``messages``: chat messages of any JSON shape -> ``inject`` and ``strip_markers``.
- ``hostile_skill``: SKILL.md files whose name, description, metadata and body hold lone surrogates (YAML escapes
  such as ``"\\ud800"`` and raw surrogate bytes), undecodable bytes, anchors, aliases and alias bombs, in folders
  whose names are not UTF-8 -> every profile's discovery, rendering, indexed text, skill tool and the JSON the
  server sends for the skill; every ``--cli-every``-th case also ``list``, ``prompt`` and ``route``.
- ``hostile_files``: catalogue, labelled-request and config files with the same text -> their loaders.
- ``http``: requests of any shape (bodies, query strings, skill names with surrogates) to every HTTP endpoint of
  ``skill-router serve``, in-process over ASGI (httpx), against one service over a small library with a FIFO.
- ``mcp``: arguments of any shape to every MCP tool (``search_skills``, ``load_skill``, ``read_skill_file``),
  called directly on the MCP server.
- ``hook``: hook stdin of any shape (JSON, bytes) against a fake server that answers anything, lies about its
  length, fails, drips, says nothing, or is not there; the hook must return within its budget.

An input may be refused only with a :class:`router.errors.SkillRouterError` (or, from the profile parsers whose
harness reports parse errors, the documented ``ValueError``; from MCP, a tool error); a command may only return or
exit. Counted as failures, by target and class (the run goes on after each):

- **uncaught**: any other exception, including the boundary's promises (issue 16): a string that strict UTF-8
  cannot encode reaching a name, a description, the indexed text or a JSON answer (``UnsafeText``), and
  frontmatter that expands past 100,000 nodes once its aliases are followed (``Unbounded``);
- **hangs**: a case past 30 s, an HTTP request past 10 s, an MCP call past 0.9 s, a hook past its budget + 0.5 s;
- **5xx**: an HTTP answer of 500 or more.

Commands that embed, and the served router, use a small deterministic hashing encoder (this script measures
input handling, not ranking; the real model would make each case take seconds).

    python benchmarks/fuzz.py                    # 200,000 cases on 2 processes
    python benchmarks/fuzz.py --cases 20000      # a shorter run
    python benchmarks/fuzz.py --targets http,hook --cases 2000 --jobs 1

Exits 1 when any case failed. Writes ``benchmarks/results/fuzz.json``: cases, seconds and failures per target and
class, with the first input and traceback of each class.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import logging
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
import zlib
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from router.catalog import load_catalog  # noqa: E402
from router.cli import main as cli_main  # noqa: E402
from router.config import RouterConfig  # noqa: E402
from router.errors import SkillRouterError  # noqa: E402
from router.evaluation.labels import load_requests  # noqa: E402
from router.frontmatter import FrontmatterError, load_frontmatter, split_frontmatter  # noqa: E402
from router.inject import inject, strip_markers  # noqa: E402
from router.lint import lint  # noqa: E402
from router.profiles import get_profile, profile_names  # noqa: E402
from router.registry import SkillRegistry  # noqa: E402
from router.skill import Skill  # noqa: E402
from router.texts import body_text, index_text  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "fuzz.json"
SHARES = {"frontmatter": 0.12, "skill_file": 0.06, "catalogue": 0.05, "labels": 0.05, "config": 0.08,
          "tool_call": 0.1, "messages": 0.07, "hostile_skill": 0.12, "hostile_files": 0.08, "http": 0.12,
          "mcp": 0.08, "hook": 0.07}


# -- a stand-in encoder for the commands that embed -----------------------------------------------------------
class HashEncoder:
    """Deterministic unit vectors from a hash of the text: the same interface as :class:`indexes.Encoder`."""

    model_id = "fuzz/hash-encoder"
    dim = 16

    def __init__(self, model: str | None = None, *, device: str = "cpu") -> None:
        self.encoded_count = 0

    def encode(self, texts: Any, *, batch_size: int = 64, progress: bool = False) -> np.ndarray:
        rows = []
        for text in texts:
            digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=self.dim * 4).digest()
            vector = np.frombuffer(digest, dtype=np.uint32).astype(np.float64) - 2.0 ** 31
            rows.append(vector / (np.linalg.norm(vector) or 1.0))
        self.encoded_count += len(rows)
        return np.array(rows, dtype=np.float32).reshape(len(rows), self.dim)


@contextlib.contextmanager
def hash_encoder():
    """Route every ``Encoder`` the router makes to :class:`HashEncoder` while the block runs."""
    import indexes

    saved = indexes.__dict__.get("Encoder")
    indexes.Encoder = HashEncoder  # type: ignore[attr-defined]
    try:
        yield
    finally:
        if saved is None:
            del indexes.Encoder
        else:
            indexes.Encoder = saved


# -- strategies ---------------------------------------------------------------------------------------------------
KEYS = ["name", "description", "license", "metadata", "allowed-tools", "compatibility", "1", "true", "null", "",
        "x", "description ", " name", "name:", "? name"]
TRICKY = ["|", ">", "|-", ">+", '"quoted"', "'single'", "a: b: c", "[1, 2", "{a: 1}", "&a anchor", "*a", "*nope",
          "!!python/object:os.system ls", "!!binary aGk=", "!!str 1", "~", "null", "true", "0x1F", "1e999", ".nan",
          "\t", "\x1b[2J", "\u202e", "\ufeff", "caf\u00e9", "\U0001F600", "---", "...", "#", "%YAML 1.2", "<skill>",
          "&a [*a]", "x" * 300]
NAMES = st.one_of(st.sampled_from(["alpha", "beta", "a-b", "A", "-x", "x--y", "x" * 70, "", " ", "..", "a/b",
                                   "caf\u00e9", "\x1b[2J", "n\u0000ul"]), st.text(max_size=12))


@st.composite
def nested(draw: Any) -> str:
    depth = draw(st.integers(1, 700))
    kind = draw(st.sampled_from(["[", "{a: ", "- "]))
    if kind == "- ":
        return "\n".join("  " * i + "- " for i in range(min(depth, 200))) + "x"
    close = "]" if kind == "[" else "}"
    return kind * depth + close * draw(st.integers(0, depth))


@st.composite
def alias_bomb(draw: Any) -> str:
    levels = draw(st.integers(1, 9))
    width = draw(st.integers(1, 9))
    lines = ["a0: &a0 [x, x]"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * width)}]")
    lines.append(f"{draw(st.sampled_from(['description', 'name', 'gold']))}: *a{levels - 1}")
    return "\n".join(lines)


VALUES = st.one_of(st.sampled_from(TRICKY), st.text(max_size=40), nested(),
                   st.lists(st.text(max_size=8), max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"))


@st.composite
def frontmatter_text(draw: Any) -> str:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.text(max_size=200))
    if draw(st.integers(0, 14)) == 0:
        return draw(alias_bomb())
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        key = draw(st.one_of(st.sampled_from(KEYS), st.text(max_size=6)))
        sep = draw(st.sampled_from([": ", ":", " : ", ":\n  ", ": |\n  ", "\n"]))
        lines.append(f"{key}{sep}{draw(VALUES)}")
    return "\n".join(lines)


@st.composite
def skill_file(draw: Any) -> bytes:
    head = draw(st.sampled_from(["---\n", "---\r\n", "\ufeff---\n", " ---\n", "--- \n", "", "----\n", "---"]))
    tail = draw(st.sampled_from(["\n---\n", "\n---", "\n--- \n", "\n", "", "\n...\n", "---\n"]))
    body = draw(st.one_of(st.text(max_size=120), st.sampled_from(["# Title\n\nSee [x](missing.md).\n", "", "---\n"])))
    text = head + draw(frontmatter_text()) + tail + body
    if draw(st.integers(0, 4)) == 0:
        text = text.replace("\n", "\r\n")
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 5)) == 0:
        junk = draw(st.binary(min_size=1, max_size=8))
        cut = draw(st.integers(0, len(data)))
        data = data[:cut] + junk + data[cut:]
    return data


JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                         st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20))
JSON = st.recursive(JSON_SCALARS, lambda children: st.one_of(
    st.lists(children, max_size=4), st.dictionaries(st.text(max_size=6), children, max_size=4)), max_leaves=12)


def json_line(value: Any) -> str:
    return json.dumps(value, allow_nan=True, ensure_ascii=False)


@st.composite
def catalogue_text(draw: Any) -> str:
    rows = []
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.integers(0, 5)) == 0:
            rows.append(draw(st.one_of(st.text(max_size=30), JSON.map(json_line))))
            continue
        row = {"id": draw(st.one_of(NAMES, JSON)), "name": draw(st.one_of(NAMES, JSON)),
               "description": draw(st.one_of(st.text(max_size=60), JSON)),
               "examples": draw(st.one_of(st.lists(st.text(max_size=20), max_size=3), JSON))}
        for key in draw(st.lists(st.sampled_from(list(row)), max_size=2)):
            row.pop(key, None)
        rows.append(json_line(row))
    return "\n".join(rows) + draw(st.sampled_from(["", "\n", "\n\n", "\r\n"]))


@st.composite
def message(draw: Any) -> Any:
    if draw(st.integers(0, 6)) == 0:
        return draw(JSON)
    content = draw(st.one_of(st.text(max_size=40), JSON, st.lists(st.one_of(
        st.fixed_dictionaries({"type": st.sampled_from(["text", "image"]), "text": st.one_of(st.text(max_size=20),
                                                                                            JSON)},
                              optional={"metadata": st.one_of(JSON, st.just({"skills-instructions": True}))}),
        JSON), max_size=3)))
    return {"role": draw(st.one_of(st.sampled_from(["user", "system", "assistant"]), JSON)), "content": content}


@st.composite
def label_rows(draw: Any) -> list[Any]:
    rows: list[Any] = []
    for index in range(draw(st.integers(0, 5))):
        if draw(st.integers(0, 6)) == 0:
            rows.append(draw(JSON))
            continue
        row: dict[str, Any] = {"id": draw(st.one_of(st.just(f"q{index}"), JSON)),
                               "query": draw(st.one_of(st.text(max_size=40), JSON)),
                               "gold": draw(st.one_of(st.lists(st.sampled_from(["alpha", "beta", "ghost", ""]),
                                                               max_size=3), JSON))}
        if draw(st.booleans()):
            row["messages"] = draw(st.lists(message(), max_size=3))
        for key in draw(st.lists(st.sampled_from(list(row)), max_size=2)):
            row.pop(key, None)
        rows.append(row)
    return rows


@st.composite
def labels_file(draw: Any) -> tuple[str, str]:
    rows = draw(label_rows())
    kind = draw(st.sampled_from(["jsonl", "yaml", "yaml-raw"]))
    if kind == "jsonl":
        lines = [json_line(r) for r in rows]
        if draw(st.integers(0, 6)) == 0:
            lines.append(draw(st.text(max_size=20)))
        return ".jsonl", "\n".join(lines)
    if kind == "yaml":
        import yaml

        return ".yaml", yaml.safe_dump(json.loads(json.dumps(rows, allow_nan=True)), allow_unicode=True)
    return ".yaml", draw(st.one_of(frontmatter_text(), alias_bomb(), nested(),
                                   st.just("- {id: q1, query: hi, gold: [alpha]}\n")))


CONFIG_KEYS = ["k", "route_above", "fusion", "weights", "rrf_k", "threshold", "on_abstain", "body", "body_tokens",
               "model", "context_weight", "confine", "schema", "tuning", "_comment", "serve"]
CONFIG_VALUES = st.one_of(JSON, st.sampled_from([0, 1, 5, -1, 1e999, -1e999, 0.5, True, "rrf", "zscore", "lead",
                                                 "top-k", "empty", {"bm25": 1e999}, {"dense": -1}, {"bm25": 0.5},
                                                 {"title": 1}, None]))


@st.composite
def config_text(draw: Any) -> str:
    if draw(st.integers(0, 7)) == 0:
        return draw(st.one_of(st.text(max_size=40), JSON.map(json_line)))
    data = draw(st.dictionaries(st.sampled_from(CONFIG_KEYS), CONFIG_VALUES, max_size=4))
    text = json_line(data)
    if draw(st.integers(0, 9)) == 0:
        text = text.replace("1e+999", "Infinity")
    return text


TOOL_ARGUMENTS = st.one_of(JSON, JSON.map(json_line), st.text(max_size=30),
                           st.fixed_dictionaries({}, optional={"name": st.one_of(NAMES, JSON),
                                                               "skillName": st.one_of(NAMES, JSON)}))


# -- what one case does ---------------------------------------------------------------------------------------------
@dataclass
class Context:
    """A scratch folder, how often a case also goes through the command line, and the counts."""

    folder: Path
    cli_every: int = 25
    cases: dict[str, int] = field(default_factory=dict)
    cli_runs: int = 0

    def count(self, target: str, value: Any) -> int:
        """Count a case; returns a number drawn from the value itself (not from the count), so that a case replayed
        while hypothesis shrinks a failure takes the same command-line path as the first time."""
        self.cases[target] = self.cases.get(target, 0) + 1
        return zlib.crc32(repr(value).encode("utf-8", "backslashreplace")) + 1

    def fresh(self, name: str) -> Path:
        path = self.folder / name
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        return path

    def cli(self, *argv: str) -> int:
        """A command in-process; only returning or exiting is allowed."""
        self.cli_runs += 1
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), hash_encoder():
            try:
                status = cli_main([*argv])
            except SystemExit as exc:
                status = int(exc.code or 0) if not isinstance(exc.code, str) else 2
        EXITS[status] += 1
        if status == 2:  # a user error: one line, no traceback
            lines = err.getvalue().splitlines()
            assert len(lines) == 1 and lines[0].startswith(f"skill-router {argv[0]}: error: "), (argv, lines)
        return status


REFUSALS: Counter[str] = Counter()
EXITS: Counter[int] = Counter()


def _refused(call: Callable[[], Any], *allowed: type[BaseException]) -> Any:
    """Run ``call``; a SkillRouterError (or one of ``allowed``) is a refusal, anything else propagates."""
    try:
        return call()
    except (SkillRouterError, *allowed) as exc:
        REFUSALS[type(exc).__name__] += 1
        return None


def _skills_library(ctx: Context, data: bytes) -> Path:
    root = ctx.fresh("lib")
    (root / "alpha").mkdir()
    (root / "alpha" / "SKILL.md").write_text("---\nname: alpha\ndescription: Convert units.\n---\nBody.\n",
                                              encoding="utf-8")
    (root / "fuzzed").mkdir()
    (root / "fuzzed" / "SKILL.md").write_bytes(data)
    return root


def check_frontmatter(ctx: Context, text: str) -> None:
    number = ctx.count("frontmatter", text)
    _refused(lambda: load_frontmatter(text), FrontmatterError)
    raw = f"---\n{text}\n---\nbody\n".encode("utf-8", "surrogatepass")
    for name in profile_names():
        profile = get_profile(name)
        skill = _refused(lambda: profile.parse("/lib/fuzzed/SKILL.md", raw, "fuzzed"), ValueError)
        if skill is None:
            continue
        skills = [skill, Skill(name="alpha", description="Convert units.", path="/lib/alpha/SKILL.md")]
        profile.render(skills)
        spec = profile.tool(skills)
        if spec is not None:
            spec.openai(), spec.anthropic()
        _refused(lambda: index_text(skill))
        body_text(skill.body, "headings")
        if number % ctx.cli_every == 0:
            registry = _refused(lambda: SkillRegistry(skills))
            if registry is not None:
                _refused(lambda: profile.call_tool(registry, {"name": skill.name, "skillName": skill.name}))


def check_skill_file(ctx: Context, data: bytes) -> None:
    number = ctx.count("skill_file", data)
    root = _skills_library(ctx, data)
    text = data.decode("utf-8", "replace")
    _refused(lambda: split_frontmatter(text), FrontmatterError)
    for name in profile_names():
        profile = get_profile(name)
        found = profile.discover([root])
        profile.render(list(found.skills))
        registry = _refused(lambda: SkillRegistry(found.skills))
        if registry is not None:
            for skill in found.skills:
                index_text(skill)
                body_text(skill.body, "lead")
                _refused(lambda: profile.call_tool(registry, {"name": skill.name, "skillName": skill.name}))
    lint([str(root)])
    if number % ctx.cli_every == 0:
        profile = profile_names()[number // ctx.cli_every % len(profile_names())]
        for argv in (["list"], ["list", "--json"], ["prompt"], ["prompt", "convert units"], ["use", "fuzzed"],
                     ["lint"]):
            ctx.cli(*argv, "--skills", str(root), *(["--profile", profile] if argv[0] != "lint" else []))
        if number % (ctx.cli_every * 4) == 0:
            ctx.cli("route", "convert units", "--json", "--skills", str(root), "--profile", profile, "--index-dir",
                    str(ctx.fresh("index")))


def check_catalogue(ctx: Context, text: str) -> None:
    number = ctx.count("catalogue", text)
    path = ctx.fresh("catalogue") / "tools.jsonl"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    skills = _refused(lambda: load_catalog(path))
    if skills:
        for name in profile_names():
            get_profile(name).render(skills)
    if number % ctx.cli_every == 0:
        ctx.cli("list", "--catalog", str(path))
        ctx.cli("prompt", "convert units", "--catalog", str(path))
        if number % (ctx.cli_every * 4) == 0:
            ctx.cli("route", "convert units", "--catalog", str(path), "--index-dir", str(ctx.fresh("index")))


def check_labels(ctx: Context, generated: tuple[str, str]) -> None:
    number = ctx.count("labels", generated)
    suffix, text = generated
    path = ctx.fresh("labels") / f"labels{suffix}"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    _refused(lambda: load_requests(path, known_ids={"alpha", "beta"}))
    _refused(lambda: load_requests(path, require_gold=False))
    if number % ctx.cli_every == 0:
        root = _skills_library(ctx, b"---\nname: beta\ndescription: Write haiku.\n---\n")
        ctx.cli("eval", "--queries", str(path), "--skills", str(root), "--retrievers", "bm25,default",
                "--index-dir", str(ctx.fresh("index")))
        ctx.cli("learn", "--queries", str(path), "--skills", str(root), "--index-dir", str(ctx.fresh("index")))


def check_config(ctx: Context, text: str) -> None:
    number = ctx.count("config", text)
    path = ctx.fresh("config") / "skill-router.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    config = _refused(lambda: RouterConfig.load(path))
    if config is not None:
        json.dumps(config.to_json(), allow_nan=False)  # what tune writes must be valid JSON
    if number % ctx.cli_every == 0:
        root = _skills_library(ctx, b"---\nname: beta\ndescription: Write haiku.\n---\n")
        ctx.cli("prompt", "write a haiku", "--config", str(path), "--skills", str(root))
        if number % (ctx.cli_every * 4) == 0:
            ctx.cli("route", "write a haiku", "--json", "--config", str(path), "--skills", str(root), "--index-dir",
                    str(ctx.fresh("index")))


_TOOL_SKILLS = (Skill(name="alpha", description="Convert units.", path="/nonexistent/alpha/SKILL.md"),)


def check_tool_call(ctx: Context, arguments: Any) -> None:
    ctx.count("tool_call", arguments)
    registry = SkillRegistry(_TOOL_SKILLS)
    for name in profile_names():
        profile = get_profile(name)
        for call_name in (None, "SkillUse", "other"):
            _refused(lambda: profile.call_tool(registry, arguments, call_name))


def check_messages(ctx: Context, messages: Any) -> None:
    ctx.count("messages", messages)
    for block in ("", "<skills>\nblock\n</skills>"):
        out = _refused(lambda: inject(messages, block))
        if out is not None:
            assert inject(out, block) == out, "injecting twice must equal injecting once"
            strip_markers(out)


# -- hostile text: lone surrogates, undecodable bytes, YAML escapes, anchors and aliases (issue 16) ----------------
LONE = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff", "\udc80", "\udcff", "\ud83d"])
HOSTILE_TEXT = st.one_of(
    st.text(st.characters(exclude_categories=()), max_size=24),  # every code point, surrogates included
    st.builds(lambda a, lone, b: a + lone + b, st.text(max_size=8), LONE, st.text(max_size=8)),
    st.binary(max_size=16).map(lambda b: b.decode("utf-8", "surrogateescape")),  # what undecodable bytes become
    st.sampled_from(["", " ", "caf\u00e9", "\x00", "\x1b[2J", "\u202e", "\ufeff", "x" * 200]))
YAML_ESCAPES = st.sampled_from(['"\\ud800"', '"lone \\ud800 surrogate"', '"\\udfff"', '"\\udc80\\udcff"',
                                '"\\ud83d\\ude00"', '"\\ud83d"', '"\\x00"', '"\\uffff"', '"\\U0010FFFF"', '"\\N\\_"',
                                '"\\L\\P"', "'\\ud800'", '"\\U0000d800"'])


def _yaml_quoted(text: str) -> str:
    return json.dumps(text)  # JSON's escapes (\ud800 for a lone surrogate) are YAML double-quoted escapes too


@st.composite
def anchors(draw: Any) -> str:
    """Anchor and alias structures: small legitimate reuse, merges, self-reference attempts and bombs."""
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return "metadata:\n  tags: &t [a, b]\n  again: *t\n"
    if kind == 1:
        return "base: &b {x: 1, y: [1, 2]}\nmetadata:\n  <<: *b\n  z: *b\n"
    if kind == 2:
        return f"metadata: &m\n  note: {draw(YAML_ESCAPES)}\nmore: *m\n"
    if kind == 3:
        return "metadata: *undefined\n"
    return "metadata:\n" + "\n".join("  " + line for line in draw(alias_bomb()).splitlines()) + "\n"


HOSTILE_VALUE = st.one_of(YAML_ESCAPES, HOSTILE_TEXT.map(_yaml_quoted), HOSTILE_TEXT, st.just("ok"))
FOLDER_NAMES = st.one_of(st.sampled_from([b"caf\xff", b"t\xed\xa0\x80", b"\xc3\x28", b"ok", b"\xef\xbb\xbfbom",
                                          b"sp ace", b"x" * 200]),
                         st.binary(min_size=1, max_size=12).filter(
                             lambda b: b"/" not in b and b"\x00" not in b and b not in (b".", b"..")))


@st.composite
def hostile_skill(draw: Any) -> tuple[bytes, bytes]:
    """(folder name bytes, SKILL.md bytes) with hostile text in the name, description, metadata and body."""
    lines = [f"name: {draw(st.one_of(st.just('hostile'), HOSTILE_VALUE))}",
             f"description: {draw(HOSTILE_VALUE)}"]
    if draw(st.booleans()):
        lines.append(f"metadata:\n  note: {draw(HOSTILE_VALUE)}")
    if draw(st.integers(0, 2)) == 0:
        lines.append(draw(anchors()).rstrip("\n"))
    if draw(st.integers(0, 4)) == 0:
        lines.append(f"allowed-tools: {draw(HOSTILE_VALUE)}")
    body = draw(st.one_of(HOSTILE_TEXT, st.just("# Title\n\nSee [ref](ref.md).\n")))
    data = ("---\n" + "\n".join(lines) + "\n---\n\n" + body + "\n").encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 4)) == 0:
        junk = draw(st.binary(min_size=1, max_size=6))
        cut = draw(st.integers(0, len(data)))
        data = data[:cut] + junk + data[cut:]
    return draw(FOLDER_NAMES), data


def _strict(text: Any, what: str) -> None:
    """The boundary's promise: no string downstream that strict UTF-8 (the encoder, JSON answers) cannot take."""
    if isinstance(text, str):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise UnsafeText(f"{what} holds {text[exc.start:exc.end]!r}, which UTF-8 cannot encode") from None


def _shown(text: str, what: str) -> None:
    """A harness rendering may hold undecodable file-name bytes as surrogate escapes (written back byte-exact),
    never a lone surrogate from a YAML or JSON escape."""
    try:
        text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        raise UnsafeText(f"{what} holds {text[exc.start:exc.end]!r}, which no output can encode") from None


class UnsafeText(AssertionError):
    """A string that strict UTF-8 cannot encode got past the boundary."""


class Unbounded(AssertionError):
    """Parsed frontmatter that expands far beyond its size (an alias bomb)."""


EXPANDED_LIMIT = 100_000


def expanded_size(value: Any, limit: int = EXPANDED_LIMIT) -> int:
    """How many nodes ``value`` has with every alias expanded, counting stops just past ``limit``."""
    count = 0
    stack = [value]
    while stack and count <= limit:
        item = stack.pop()
        count += 1
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return count


def served_json(value: Any, what: str) -> None:
    """What the server would send for ``value``: JSON, UTF-8 encoded as Starlette encodes it."""
    try:
        json.dumps(value, ensure_ascii=False, default=str).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UnsafeText(f"{what} cannot be sent as JSON: {exc.reason}") from None


def check_hostile_skill(ctx: Context, generated: tuple[bytes, bytes]) -> None:
    number = ctx.count("hostile_skill", generated)
    folder, data = generated
    root = ctx.fresh("hostile")
    (root / "alpha").mkdir()
    (root / "alpha" / "SKILL.md").write_text("---\nname: alpha\ndescription: Convert units.\n---\nBody.\n",
                                              encoding="utf-8")
    target = os.path.join(os.fsencode(root), folder)
    os.makedirs(target, exist_ok=True)
    with open(os.path.join(target, b"SKILL.md"), "wb") as handle:
        handle.write(data)
    from router.serve.app import skill_answer
    from router.serve.payload import MetadataTooLarge

    for name in profile_names():
        profile = get_profile(name)
        found = profile.discover([root])
        skills = list(found.skills)
        for skill in skills:
            if expanded_size(dict(skill.metadata or {})) > EXPANDED_LIMIT:
                raise Unbounded(f"{name}: metadata of '{skill.name[:40]}' expands past {EXPANDED_LIMIT:,} nodes")
            _strict(skill.name, f"{name}: the name")
            _strict(skill.description, f"{name}: the description")
            _strict(index_text(skill), f"{name}: the indexed text")
            try:  # exactly what GET /v1/skills/NAME?body=true encodes, in the worker, under its deadline
                answer = skill_answer(skill, body=True, deadline=time.monotonic() + 10, seconds=10)
            except MetadataTooLarge:
                answer = None  # a 422 naming the skill: refused, not a crash
            if answer is not None:
                served_json(json.loads(bytes(answer.body).decode("utf-8")), f"{name}: GET /v1/skills/NAME?body=true")
        _shown(profile.render(skills), f"{name}: the rendered catalogue")
        registry = _refused(lambda: SkillRegistry(skills))
        if registry is not None:
            for skill in skills:
                result = _refused(lambda: profile.call_tool(registry, {"name": skill.name, "skillName": skill.name}))
                if isinstance(result, str):
                    _shown(result, f"{name}: the skill-tool result")
    if number % ctx.cli_every == 0:
        profile = profile_names()[number // ctx.cli_every % len(profile_names())]
        for argv in (["list", "--json"], ["prompt"], ["route", "convert units", "--json", "--index-dir",
                                                      str(ctx.fresh("index"))]):
            ctx.cli(*argv, "--skills", str(root), "--profile", profile)


@st.composite
def hostile_file(draw: Any) -> tuple[str, bytes]:
    """(kind, bytes) of a catalogue, labelled-requests or config file with hostile text in its strings."""
    kind = draw(st.sampled_from(["catalogue", "labels", "config"]))
    ascii_escapes = draw(st.booleans())  # "\ud800" escapes, or the code points themselves (surrogatepass bytes)
    rows: list[Any]
    if kind == "catalogue":
        rows = [{"id": draw(st.one_of(st.just("alpha"), HOSTILE_TEXT)), "name": draw(HOSTILE_TEXT),
                 "description": draw(HOSTILE_TEXT), "examples": draw(st.lists(HOSTILE_TEXT, max_size=2))}
                for _ in range(draw(st.integers(1, 3)))]
    elif kind == "labels":
        rows = [{"id": f"q{i}", "query": draw(HOSTILE_TEXT), "gold": ["alpha"]} for i in range(draw(st.integers(1, 3)))]
    else:
        rows = [{"k": 3, "_comment": draw(HOSTILE_TEXT), "fusion": draw(st.one_of(st.just("rrf"), HOSTILE_TEXT))}]
    text = "\n".join(json.dumps(r, ensure_ascii=ascii_escapes) for r in rows) + "\n"
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 3)) == 0:
        cut = draw(st.integers(0, len(data)))
        data = data[:cut] + draw(st.binary(min_size=1, max_size=4)) + data[cut:]
    return kind, data


def check_hostile_file(ctx: Context, generated: tuple[str, bytes]) -> None:
    ctx.count("hostile_files", generated)
    kind, data = generated
    folder = ctx.fresh("hostile-files")
    if kind == "catalogue":
        path = folder / "tools.jsonl"
        path.write_bytes(data)
        skills = _refused(lambda: load_catalog(path))
        for skill in skills or ():
            _strict(skill.name, "a catalogue name")
            _strict(skill.description, "a catalogue description")
            _strict(index_text(skill), "a catalogue row's indexed text")
            for example in skill.examples:
                _strict(example, "a catalogue example")
    elif kind == "labels":
        path = folder / "labels.jsonl"
        path.write_bytes(data)
        for request in _refused(lambda: load_requests(path, require_gold=False)) or ():
            _strict(request.query, "a labelled request")
    else:
        path = folder / "skill-router.json"
        path.write_bytes(data)
        config = _refused(lambda: RouterConfig.load(path))
        if config is not None:
            served_json(config.to_json(), "the config tune would write")


# -- the server: every HTTP endpoint in-process (ASGI), every MCP tool directly ----------------------------------
ENDPOINTS = [("POST", "/v1/route"), ("POST", "/v1/route/batch"), ("GET", "/v1/skills"), ("GET", "/v1/skills/{name}"),
             ("POST", "/v1/tool"), ("POST", "/v1/inject"), ("POST", "/v1/hooks/claude-code"),
             ("POST", "/v1/hooks/codex"), ("POST", "/v1/reindex"), ("GET", "/healthz"), ("GET", "/readyz"),
             ("GET", "/metrics")]
FIELDS = ["query", "messages", "k", "pin", "exclude", "requests", "name", "arguments", "call_name", "route_id",
          "session", "prompt", "hook_event_name", "session_id", "cwd", "skillName"]
HOSTILE_JSON = st.recursive(st.one_of(JSON_SCALARS, HOSTILE_TEXT, st.sampled_from(["alpha", "beta", "UserPromptSubmit",
                                                                                   "user", 0, 5, 65])),
                            lambda children: st.one_of(st.lists(children, max_size=3),
                                                       st.dictionaries(st.one_of(st.sampled_from(FIELDS + [
                                                           "role", "content", "type", "text"]), HOSTILE_TEXT),
                                                           children, max_size=4)), max_leaves=10)


@st.composite
def http_request(draw: Any) -> tuple[str, str, bytes | None, dict[str, str]]:
    """(method, path with query string, body, headers) for one of the endpoints."""
    from urllib.parse import quote

    method, path = draw(st.sampled_from(ENDPOINTS))
    if draw(st.integers(0, 19)) == 0:
        method = draw(st.sampled_from(["GET", "POST", "PUT", "DELETE"]))

    def q(text: str) -> str:
        return quote(text.encode("utf-8", "surrogatepass"), safe="")

    if "{name}" in path:
        path = path.replace("{name}", q(draw(st.one_of(st.sampled_from(["alpha", "beta", "Alpha", "../x"]),
                                                       HOSTILE_TEXT))) or "x")
    params = draw(st.dictionaries(st.sampled_from(["q", "k", "body"]), st.one_of(
        HOSTILE_TEXT, st.sampled_from(["1", "0", "true", "65", "-1", "convert units"])), max_size=2))
    if params:
        path += "?" + "&".join(f"{key}={q(value)}" for key, value in params.items())
    headers = {"Content-Type": draw(st.sampled_from(["application/json"] * 6 + ["text/plain", ""]))}
    kind = draw(st.integers(0, 9))
    body: bytes | None
    if method == "GET":
        body = None
    elif kind == 0:
        body = draw(st.binary(max_size=40))
    else:
        value = draw(st.one_of(
            st.fixed_dictionaries({}, optional={key: HOSTILE_JSON for key in FIELDS}),
            st.fixed_dictionaries({"query": HOSTILE_TEXT}), st.fixed_dictionaries({"prompt": HOSTILE_TEXT}),
            st.fixed_dictionaries({"messages": st.lists(message(), max_size=3)}),
            st.fixed_dictionaries({"requests": st.lists(st.fixed_dictionaries({"query": HOSTILE_TEXT}), max_size=3)}),
            HOSTILE_JSON))
        body = json.dumps(value, ensure_ascii=draw(st.booleans()), allow_nan=True).encode("utf-8", "surrogatepass")
    return method, path, body, headers


class Server:
    """One in-process service and app over a small library, the hash encoder, a decision log; built once."""

    _instance: "Server | None" = None

    def __init__(self, folder: Path) -> None:
        import asyncio

        import httpx

        from router.cli import build_parser
        from router.cli.serve import build_service
        from router.serve.app import create_app
        from router.serve.mcp import build_mcp

        root = folder / "served-lib"
        for name, text in [("alpha", "Convert units of length."), ("beta", "Write haiku poems."),
                           ("gamma", "Review Go code.")]:
            (root / name).mkdir(parents=True, exist_ok=True)
            (root / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {text}\n---\n\n# {name}\n\n"
                                                  "See [ref](ref.md).\n", encoding="utf-8")
            (root / name / "ref.md").write_text("a reference\n", encoding="utf-8")
        self.fifo = root / "alpha" / "pipe"
        self.fifo.unlink(missing_ok=True)
        os.mkfifo(self.fifo)  # a FIFO where read_skill_file may be asked to read
        threading.Thread(target=self._unblock, daemon=True).start()
        args = build_parser().parse_args(["serve", "--skills", str(root), "--index-dir", str(folder / "served-index"),
                                          "--encoder", "torch", "--threads", "0", "--no-watch", "--log",
                                          str(folder / "served-log" / "decisions.jsonl"), "--log-requests", "text",
                                          "--log-max-bytes", "20000"])
        saved = os.environ.get("SKILL_ROUTER_ONNX")
        os.environ["SKILL_ROUTER_ONNX"] = "0"
        try:
            with hash_encoder():  # the service keeps the encoder it loads with; reloads share it
                self.service, _ = build_service(args)
                self.service.load()
        finally:
            if saved is None:
                os.environ.pop("SKILL_ROUTER_ONNX", None)
            else:
                os.environ["SKILL_ROUTER_ONNX"] = saved
        self.app = create_app(self.service, mcp=False, load=False)
        self.mcp = build_mcp(self.service)
        self.runner = asyncio.Runner()
        self.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url="http://127.0.0.1")

    def _unblock(self) -> None:
        """Every second, give a reader blocked on the FIFO its end of file: a blocked call is then measured as a
        hang (see :func:`check_mcp`) instead of holding a worker thread for ever."""
        while True:
            time.sleep(1.0)
            with contextlib.suppress(OSError):
                os.close(os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK))

    @classmethod
    def get(cls, ctx: Context) -> "Server":
        if cls._instance is None:
            cls._instance = Server(ctx.folder)
        return cls._instance

    @classmethod
    def close(cls) -> None:
        if cls._instance is not None:
            server, cls._instance = cls._instance, None
            server.runner.run(server.client.aclose())
            server.runner.close()
            server.service.close()

    def run(self, coroutine: Any, timeout: float) -> Any:
        import asyncio

        async def bounded() -> Any:
            return await asyncio.wait_for(coroutine, timeout)

        try:
            return self.runner.run(bounded())
        except TimeoutError:
            raise Hang(f"no answer within {timeout} s") from None


class Hang(AssertionError):
    """A call past its deadline."""


class ServerError(AssertionError):
    """A 5xx answer."""


HTTP_DEADLINE_S = 10.0


def check_http(ctx: Context, generated: tuple[str, str, bytes | None, dict[str, str]]) -> None:
    ctx.count("http", generated)
    method, path, body, headers = generated
    if path.startswith("/v1/reindex") and ctx.cases["http"] % 50:
        path = "/readyz"  # a reload per case would dominate the run; every 50th one reloads
    server = Server.get(ctx)
    answer = server.run(server.client.request(method, path, content=body, headers=headers), HTTP_DEADLINE_S)
    STATUSES[answer.status_code] += 1
    if answer.status_code >= 500:
        raise ServerError(f"{method} {path.split('?')[0]}: HTTP {answer.status_code} {answer.text[:120]}")
    if answer.status_code != 200 or path.startswith("/metrics"):
        return
    try:
        answer.json()
    except ValueError:
        raise AssertionError(f"{method} {path.split('?')[0]}: 200 that is not JSON") from None


MCP_TOOLS = {"search_skills": ["query", "k"], "load_skill": ["name"], "read_skill_file": ["name", "path"]}
MCP_VALUES: dict[str, list[Any]] = {
    "query": ["convert units"], "k": [1, 5, 0, 65, -1], "name": ["alpha", "beta", "ALPHA"],
    "path": ["ref.md", "SKILL.md", "pipe", "../beta/SKILL.md", "/etc/passwd", ".", "a/../ref.md", "ref.md\x00"]}


@st.composite
def mcp_call(draw: Any) -> tuple[str, dict[str, Any]]:
    tool = draw(st.sampled_from(sorted(MCP_TOOLS)))
    arguments: dict[str, Any] = {}
    for key in MCP_TOOLS[tool]:
        if draw(st.integers(0, 9)) == 0:
            continue
        arguments[key] = draw(st.one_of(
            HOSTILE_TEXT, HOSTILE_JSON,
            st.sampled_from(MCP_VALUES[key])))
    if draw(st.integers(0, 9)) == 0:
        arguments[draw(HOSTILE_TEXT)] = draw(HOSTILE_JSON)
    return tool, arguments


MCP_DEADLINE_S = 5.0
MCP_SLOW_S = 0.9  # the FIFO unblocker runs every second: a call blocked on it takes about that long


def check_mcp(ctx: Context, generated: tuple[str, dict[str, Any]]) -> None:
    ctx.count("mcp", generated)
    tool, arguments = generated
    server = Server.get(ctx)
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.shared.exceptions import MCPError

    began = time.monotonic()
    try:
        result = server.run(server.mcp.call_tool(tool, arguments), MCP_DEADLINE_S)
    except (ToolError, MCPError) as exc:  # the SDK's refusals: sent to the client as a tool error
        REFUSALS[type(exc).__name__] += 1
        result = None
    took = time.monotonic() - began
    if took > MCP_SLOW_S:
        raise Hang(f"MCP {tool} took {took:.2f} s")
    if result is None:
        return
    if tool == "read_skill_file" and arguments.get("path") == "pipe" and not getattr(result, "isError", False):
        raise AssertionError("read_skill_file read a FIFO instead of refusing it")
    served_json(result.model_dump(mode="json") if hasattr(result, "model_dump") else str(result),
                f"MCP {tool}'s answer")


# -- the hook: stdin of any shape, servers that answer anything, drip, or say nothing ------------------------------
class FakeHookServer:
    """A loopback server whose next answer each case sets: (kind, payload)."""

    _instance: "FakeHookServer | None" = None

    def __init__(self) -> None:
        import socket
        import threading

        self.plan: tuple[str, bytes] = ("reply", b"")
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        closed = socket.socket()
        closed.bind(("127.0.0.1", 0))
        self.closed_url = f"http://127.0.0.1:{closed.getsockname()[1]}"  # bound, never listening: refused
        self._closed = closed
        threading.Thread(target=self._serve, daemon=True).start()

    @classmethod
    def get(cls) -> "FakeHookServer":
        if cls._instance is None:
            cls._instance = FakeHookServer()
        return cls._instance

    def _serve(self) -> None:
        import threading

        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn, self.plan), daemon=True).start()

    @staticmethod
    def _answer(conn: Any, plan: tuple[str, bytes]) -> None:
        kind, payload = plan
        with contextlib.suppress(OSError), conn:
            conn.settimeout(1.0)
            with contextlib.suppress(OSError):
                conn.recv(1 << 20)
            if kind == "reply":
                conn.sendall(payload)
            elif kind == "drip":  # one byte every 50 ms, for 2 s at most (a budget of 0.3-0.5 s ends long before)
                for i in range(min(len(payload), 40)):
                    time.sleep(0.05)
                    conn.sendall(payload[i:i + 1])
            elif kind == "silent":
                time.sleep(1.0)


def _http(body: bytes, status: str = "200 OK", length: int | None = None) -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: "
            f"{len(body) if length is None else length}\r\nConnection: close\r\n\r\n").encode() + body


HOOK_ANSWER_JSON = st.one_of(
    st.fixed_dictionaries({"hookSpecificOutput": st.fixed_dictionaries(
        {"hookEventName": st.just("UserPromptSubmit"), "additionalContext": st.one_of(HOSTILE_TEXT, HOSTILE_JSON)})}),
    HOSTILE_JSON, st.just({}))


@st.composite
def hook_case(draw: Any) -> tuple[bytes, str, tuple[str, bytes], float]:
    """(stdin bytes, which server, its plan, budget)."""
    payload = draw(st.one_of(
        st.fixed_dictionaries({"hook_event_name": st.sampled_from(["UserPromptSubmit", "Stop"]),
                               "prompt": st.one_of(HOSTILE_TEXT, st.just("convert 3 miles to km"))},
                              optional={"session_id": HOSTILE_TEXT, "cwd": HOSTILE_TEXT}),
        HOSTILE_JSON))
    stdin = json.dumps(payload, ensure_ascii=draw(st.booleans()), allow_nan=True).encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 7)) == 0:
        stdin = draw(st.binary(max_size=40))
    answer = json.dumps(draw(HOOK_ANSWER_JSON), ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
    plans = [("reply", _http(answer))] * 6 + [
        ("reply", _http(answer, length=len(answer) + 50)),  # a lying Content-Length, then close
        ("reply", _http(answer, status="500 Internal Server Error")),
        ("reply", draw(st.binary(max_size=60))),
        ("reply", b""),
    ]
    plan = draw(st.sampled_from(plans))
    rare = draw(st.integers(0, 79))
    if rare == 0:
        plan = ("drip", _http(answer))
    elif rare == 1:
        plan = ("silent", b"")
    where = "closed" if rare == 2 else "fake"
    return stdin, where, plan, draw(st.sampled_from([0.3, 0.5]))


HOOK_MARGIN_S = 0.5  # thread start-up and a loaded machine; a drip takes 2 s


def check_hook(ctx: Context, generated: tuple[bytes, str, tuple[str, bytes], float]) -> None:
    ctx.count("hook", generated)
    from router.serve import hooks

    stdin_bytes, where, plan, budget = generated
    fake = FakeHookServer.get()
    fake.plan = plan
    url = fake.url if where == "fake" else fake.closed_url
    stdin = io.TextIOWrapper(io.BytesIO(stdin_bytes), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    began = time.monotonic()
    code = hooks.run(["claude-code", "--url", url, "--timeout", str(budget), "--no-fallback"], stdin, out, err)
    took = time.monotonic() - began
    if code != 0:
        raise AssertionError(f"the hook returned {code}")
    if took > budget + HOOK_MARGIN_S:
        raise Hang(f"the hook took {took:.2f} s on a {budget} s budget (server: {plan[0]})")
    if out.getvalue():
        output = json.loads(out.getvalue())
        assert set(output) == {"hookSpecificOutput"}, output
        context = output["hookSpecificOutput"]["additionalContext"]
        assert isinstance(context, str) and len(context) <= hooks.MAX_CONTEXT_CHARS
        out.getvalue().encode("utf-8")
    if len(err.getvalue().splitlines()) > 1:
        raise AssertionError(f"more than one stderr line: {err.getvalue()[:200]!r}")


STATUSES: Counter[int] = Counter()


TARGETS: dict[str, tuple[Any, Callable[[Context, Any], None]]] = {
    "frontmatter": (frontmatter_text(), check_frontmatter),
    "skill_file": (skill_file(), check_skill_file),
    "catalogue": (catalogue_text(), check_catalogue),
    "labels": (labels_file(), check_labels),
    "config": (config_text(), check_config),
    "tool_call": (TOOL_ARGUMENTS, check_tool_call),
    "messages": (st.one_of(st.lists(message(), max_size=4), JSON), check_messages),
    "hostile_skill": (hostile_skill(), check_hostile_skill),
    "hostile_files": (hostile_file(), check_hostile_file),
    "http": (http_request(), check_http),
    "mcp": (mcp_call(), check_mcp),
    "hook": (hook_case(), check_hook),
}

HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
          HealthCheck.large_base_example]
CASE_DEADLINE_S = 30.0  # any one case (commands included) past this is a hang


class _Alarm(BaseException):
    """Raised by SIGALRM in a case past :data:`CASE_DEADLINE_S` (a BaseException: no handler swallows it)."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Alarm()


def kind_of(exc: BaseException) -> str:
    """How a failure is counted: a hang, a 5xx, or an uncaught exception (unsafe text and unbounded frontmatter
    are exceptions the boundary should have prevented)."""
    if isinstance(exc, (Hang, _Alarm)):
        return "hang"
    if isinstance(exc, ServerError):
        return "5xx"
    return "uncaught"


def signature(exc: BaseException) -> str:
    """One failure class: the exception type and the innermost frame of the project that raised it."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/router/" in f.filename or "/indexes/" in f.filename] or frames[-1:]
    where = f"{os.path.relpath(ours[-1].filename, ROOT)}:{ours[-1].lineno}" if ours else "?"
    text = str(exc).splitlines()[0][:120] if str(exc) else ""
    if isinstance(exc, (UnsafeText, Unbounded, Hang, ServerError)):
        text = re.sub(r"'[^']*'|\d+(\.\d+)? s|[0-9a-f]{16}", "...", text)  # one class, whatever the value
        sig = f"{type(exc).__name__}: {text}"
    else:
        sig = f"{type(exc).__name__} at {where}: {text[:80]}"
    return sig.encode("utf-8", "backslashreplace").decode("utf-8")  # printable whatever the input held


@dataclass
class Failures:
    """Failures by target and class: counts, and the first input and traceback of each class."""

    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    kinds: dict[str, dict[str, int]] = field(default_factory=dict)
    examples: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)

    def add(self, target: str, exc: BaseException, value: Any) -> None:
        sig = signature(exc)
        by_sig = self.counts.setdefault(target, {})
        by_sig[sig] = by_sig.get(sig, 0) + 1
        kinds = self.kinds.setdefault(target, {})
        kinds[kind_of(exc)] = kinds.get(kind_of(exc), 0) + 1
        examples = self.examples.setdefault(target, {})
        if sig not in examples and len(examples) < 20:
            examples[sig] = {"input": repr(value)[:600],
                             "traceback": "".join(traceback.format_exception(exc))[-3000:]}

    def total(self, kind: str | None = None) -> int:
        return sum(n for kinds in self.kinds.values() for k, n in kinds.items() if kind in (None, k))


def run_target(ctx: Context, target: str, examples: int, seed_value: int, failures: Failures) -> None:
    """Run ``examples`` generated cases of ``target``; every failure is counted (the run goes on)."""
    strategy, check = TARGETS[target]

    @seed(seed_value)
    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=HEALTH,
              phases=[Phase.generate])
    @given(strategy)
    def case(value: Any) -> None:
        signal.setitimer(signal.ITIMER_REAL, CASE_DEADLINE_S)
        try:
            check(ctx, value)
        except (Exception, _Alarm) as exc:  # noqa: BLE001 - the point of the script is to count every failure
            failures.add(target, exc, value)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    case()


def worker(job: int, jobs: int, cases: int, seed_value: int, targets: Sequence[str], cli_every: int
           ) -> dict[str, Any]:
    """One process's share: every target, ``cases / jobs`` cases in all, seeded by the job number."""
    signal.signal(signal.SIGALRM, _on_alarm)
    failures = Failures()
    seconds: dict[str, float] = {}
    total_share = sum(SHARES[t] for t in targets)
    with tempfile.TemporaryDirectory(prefix=f"skill-router-fuzz-{job}-") as folder:
        ctx = Context(Path(folder), cli_every=cli_every)
        os.chdir(folder)  # no skill-router.json of the caller's may leak in
        logging.disable(logging.CRITICAL)  # the server's own error log lines are counted, not printed
        for target in targets:
            examples = max(1, round(cases * SHARES[target] / total_share / jobs))
            began = time.perf_counter()
            run_target(ctx, target, examples, seed_value * 1000 + job, failures)
            seconds[target] = round(time.perf_counter() - began, 1)
            if jobs == 1 or job == 0:
                bad = sum(failures.kinds.get(target, {}).values())
                print(f"{target:14} {ctx.cases.get(target, 0):>8,} cases {seconds[target]:>8.1f} s "
                      f"{bad:>7,} failed{f' (job {job} of {jobs})' if jobs > 1 else ''}", flush=True)
        Server.close()
    return {"cases": ctx.cases, "cli_runs": ctx.cli_runs, "seconds": seconds, "refusals": dict(REFUSALS),
            "exits": dict(EXITS), "statuses": dict(STATUSES), "failures": asdict(failures)}


def _merge(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {"cases": Counter(), "cli_runs": 0, "seconds": Counter(), "refusals": Counter(),
                              "exits": Counter(), "statuses": Counter()}
    failures = Failures()
    for result in results:
        for key in ("cases", "seconds", "refusals", "exits", "statuses"):
            merged[key].update(result[key])
        merged["cli_runs"] += result["cli_runs"]
        for target, by_sig in result["failures"]["counts"].items():
            for sig, n in by_sig.items():
                failures.counts.setdefault(target, {})[sig] = failures.counts.get(target, {}).get(sig, 0) + n
        for target, kinds in result["failures"]["kinds"].items():
            for kind, n in kinds.items():
                failures.kinds.setdefault(target, {})[kind] = failures.kinds.get(target, {}).get(kind, 0) + n
        for target, examples in result["failures"]["examples"].items():
            for sig, example in examples.items():
                failures.examples.setdefault(target, {}).setdefault(sig, example)
    merged["failures"] = failures
    return merged


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=200_000, help="generated cases in all (default 200,000)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="processes (default: 2, or 1 on one core)")
    parser.add_argument("--seed", type=int, default=0, help="hypothesis seed (default 0)")
    parser.add_argument("--cli-every", type=int, default=25, help="every n-th case also runs commands (default 25)")
    parser.add_argument("--targets", default=",".join(TARGETS), help="comma-separated targets")
    parser.add_argument("--output", default=str(RESULTS), help="results JSON")
    args = parser.parse_args(argv)
    targets = [t for t in args.targets.split(",") if t]
    unknown = sorted(set(targets) - set(TARGETS))
    if unknown:
        parser.error(f"unknown targets: {', '.join(unknown)}; choose from {', '.join(TARGETS)}")
    start = time.perf_counter()
    jobs = max(1, args.jobs)
    if jobs == 1:
        results = [worker(0, 1, args.cases, args.seed, targets, args.cli_every)]
    else:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            results = pool.starmap(worker, [(job, jobs, args.cases, args.seed, targets, args.cli_every)
                                            for job in range(jobs)])
    elapsed = time.perf_counter() - start
    merged = _merge(results)
    failures: Failures = merged["failures"]
    total = sum(merged["cases"].values())
    print(f"\n{'target':14} {'cases':>9} {'uncaught':>9} {'hangs':>6} {'5xx':>6}")
    for target in targets:
        kinds = failures.kinds.get(target, {})
        print(f"{target:14} {merged['cases'].get(target, 0):>9,} {kinds.get('uncaught', 0):>9,} "
              f"{kinds.get('hang', 0):>6,} {kinds.get('5xx', 0):>6,}")
    print(f"{'total':14} {total:>9,} {failures.total('uncaught'):>9,} {failures.total('hang'):>6,} "
          f"{failures.total('5xx'):>6,}   ({elapsed:.0f} s, {jobs} processes; {merged['cli_runs']:,} command runs, "
          f"exit codes {dict(sorted(merged['exits'].items()))}; "
          f"HTTP statuses {dict(sorted(merged['statuses'].items()))})")
    print("refused with: " + ", ".join(f"{name} {n:,}" for name, n in merged["refusals"].most_common()))
    for target, by_sig in failures.counts.items():
        print(f"\n--- {target}: {sum(by_sig.values()):,} failed cases ---")
        for sig, n in sorted(by_sig.items(), key=lambda item: -item[1]):
            print(f"  {n:>7,}  {sig}")
    report = {"command": " ".join(["python benchmarks/fuzz.py", *(sys.argv[1:] if argv is None else argv)]),
              "date": time.strftime("%Y-%m-%d"), "seed": args.seed, "jobs": jobs, "profiles": list(profile_names()),
              "cases": total, "cases_by_target": dict(merged["cases"]), "command_runs": merged["cli_runs"],
              "seconds": round(elapsed, 1), "seconds_by_target": dict(merged["seconds"]),
              "refusals": dict(merged["refusals"].most_common()),
              "command_exit_codes": {str(k): v for k, v in sorted(merged["exits"].items())},
              "http_statuses": {str(k): v for k, v in sorted(merged["statuses"].items())},
              "uncaught": failures.total("uncaught"), "hangs": failures.total("hang"), "5xx": failures.total("5xx"),
              "failures_by_target": failures.kinds, "failure_classes": failures.counts,
              "failure_examples": failures.examples}
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(report, indent=2, ensure_ascii=True) + "\n", encoding="utf-8")
    return 1 if failures.total() else 0


if __name__ == "__main__":
    sys.exit(main())
