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

An input may be refused only with a :class:`router.errors.SkillRouterError` (or, from the profile parsers whose
harness reports parse errors, the documented ``ValueError``); a command may only return or exit. Anything else is
an uncaught exception and fails the run. Commands that embed use a small deterministic hashing encoder (this
script measures input handling, not ranking; the real model would make each case take seconds).

    python benchmarks/fuzz.py                    # 100,000+ cases, about 10 minutes on 2 cores
    python benchmarks/fuzz.py --cases 2000       # a quick look

Writes ``benchmarks/results/fuzz.json``: cases per target, command-line runs, seconds, failures.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

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
SHARES = {"frontmatter": 0.22, "skill_file": 0.22, "catalogue": 0.12, "labels": 0.14, "config": 0.12,
          "tool_call": 0.1, "messages": 0.08}


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


TARGETS: dict[str, tuple[Any, Callable[[Context, Any], None]]] = {
    "frontmatter": (frontmatter_text(), check_frontmatter),
    "skill_file": (skill_file(), check_skill_file),
    "catalogue": (catalogue_text(), check_catalogue),
    "labels": (labels_file(), check_labels),
    "config": (config_text(), check_config),
    "tool_call": (TOOL_ARGUMENTS, check_tool_call),
    "messages": (st.one_of(st.lists(message(), max_size=4), JSON), check_messages),
}

HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
          HealthCheck.large_base_example]


def run_target(ctx: Context, target: str, examples: int, seed_value: int) -> str | None:
    """Run ``examples`` generated cases of ``target``; the first uncaught exception's traceback, or None."""
    strategy, check = TARGETS[target]

    @seed(seed_value)
    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=HEALTH,
              phases=[Phase.generate, Phase.shrink])
    @given(strategy)
    def case(value: Any) -> None:
        check(ctx, value)

    try:
        case()
    except Exception:  # noqa: BLE001 - the point of the script is to report any exception at all
        return traceback.format_exc()
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=100_000, help="generated cases in all (default 100,000)")
    parser.add_argument("--seed", type=int, default=0, help="hypothesis seed (default 0)")
    parser.add_argument("--cli-every", type=int, default=25, help="every n-th case also runs commands (default 25)")
    parser.add_argument("--targets", default=",".join(TARGETS), help="comma-separated targets")
    parser.add_argument("--output", default=str(RESULTS), help="results JSON")
    args = parser.parse_args()
    targets = [t for t in args.targets.split(",") if t]
    total_share = sum(SHARES[t] for t in targets)
    failures: dict[str, str] = {}
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="skill-router-fuzz-") as folder:
        ctx = Context(Path(folder), cli_every=args.cli_every)
        os.chdir(folder)  # no skill-router.json of the caller's may leak in
        start = time.perf_counter()
        for target in targets:
            examples = max(1, round(args.cases * SHARES[target] / total_share))
            began = time.perf_counter()
            failure = run_target(ctx, target, examples, args.seed)
            seconds[target] = round(time.perf_counter() - began, 1)
            if failure:
                failures[target] = failure
            print(f"{target:12} {ctx.cases.get(target, 0):>8,} cases {seconds[target]:>8.1f} s "
                  f"{'FAILED' if failure else 'ok'}", flush=True)
        elapsed = time.perf_counter() - start
    total = sum(ctx.cases.values())
    print(f"{'total':12} {total:>8,} cases {elapsed:>8.1f} s; {ctx.cli_runs:,} command runs "
          f"(exit codes {dict(sorted(EXITS.items()))}); {len(failures)} targets with an uncaught exception")
    print("refused with: " + ", ".join(f"{name} {n:,}" for name, n in REFUSALS.most_common()))
    for target, text in failures.items():
        print(f"\n--- {target} ---\n{text}")
    report = {"command": " ".join(["python benchmarks/fuzz.py", *sys.argv[1:]]), "date": time.strftime("%Y-%m-%d"),
              "seed": args.seed, "profiles": list(profile_names()), "cases": total, "cases_by_target": ctx.cases,
              "command_runs": ctx.cli_runs, "seconds": round(elapsed, 1), "seconds_by_target": seconds,
              "refusals": dict(REFUSALS.most_common()),
              "command_exit_codes": {str(k): v for k, v in sorted(EXITS.items())},
              "uncaught": len(failures), "failures": failures}
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
