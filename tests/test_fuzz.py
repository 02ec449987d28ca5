"""A bounded run of the property-based fuzzing in ``benchmarks/fuzz.py``: every target, every profile.

The benchmark runs 200,000 cases; here each target gets a few dozen derandomized examples (a few hundred in
all, every tenth also through the command line), so a regression in input handling fails the suite in seconds.
The classes of issue 16 (lone surrogates and undecodable bytes in every text field, alias structures, a FIFO
behind ``read_skill_file``, a dripping server behind the hook) also get a small test each, named after the row.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "fuzz.py"
_spec = importlib.util.spec_from_file_location("skill_router_fuzz", SCRIPT)
assert _spec is not None and _spec.loader is not None
fuzz = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = fuzz
_spec.loader.exec_module(fuzz)

EXAMPLES = {"frontmatter": 60, "skill_file": 50, "catalogue": 40, "labels": 50, "config": 40, "tool_call": 60,
            "messages": 60, "hostile_skill": 40, "hostile_files": 40, "http": 60, "mcp": 40, "hook": 40}


@pytest.fixture
def ctx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.chdir(tmp_path)
    yield fuzz.Context(tmp_path / "fuzz", cli_every=10)
    fuzz.Server.close()


def run_examples(ctx: Any, target: str, strategy: Any, examples: int) -> None:
    check = fuzz.TARGETS[target][1]

    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])
    @given(strategy)
    def case(value: Any) -> None:
        check(ctx, value)

    case()


def test_every_target_is_fuzzed() -> None:
    assert set(EXAMPLES) == set(fuzz.TARGETS) == set(fuzz.SHARES)
    assert abs(sum(fuzz.SHARES.values()) - 1.0) < 1e-9


@pytest.mark.parametrize("target", sorted(EXAMPLES))
def test_fuzz_target(ctx: Any, target: str) -> None:
    run_examples(ctx, target, fuzz.TARGETS[target][0], EXAMPLES[target])
    assert ctx.cases[target] >= EXAMPLES[target] // 2


# -- the classes of issue 16, one small test each ------------------------------------------------------------------
def skill_with(description: str, extra: str = "") -> bytes:
    return f"---\nname: lone\ndescription: {description}\n{extra}---\n\n# Lone\n".encode("utf-8", "surrogatepass")


@settings(max_examples=13, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.generate])
@given(escape=fuzz.YAML_ESCAPES)
def test_row01_yaml_escapes_are_made_safe_in_every_profile(tmp_path_factory: Any, escape: str) -> None:
    ctx = fuzz.Context(tmp_path_factory.mktemp("row01"), cli_every=10**9)
    fuzz.check_hostile_skill(ctx, (b"lone", skill_with(escape)))


def test_row01_the_boundary_check_names_a_lone_surrogate() -> None:
    with pytest.raises(fuzz.UnsafeText, match="the description holds"):
        fuzz._strict("lone \ud800 surrogate", "the description")
    fuzz._strict("caf\u00e9 \U0001F600", "the description")  # any valid text passes
    fuzz._shown("file name byte \udcff", "a rendering")  # an undecodable file-name byte, written back byte-exact
    with pytest.raises(fuzz.UnsafeText):
        fuzz._shown("\ud800", "a rendering")


def test_row01_a_catalogue_row_with_a_lone_surrogate_is_made_safe(tmp_path: Path) -> None:
    ctx = fuzz.Context(tmp_path, cli_every=10**9)
    fuzz.check_hostile_file(ctx, ("catalogue", b'{"id": "a", "name": "a", "description": "lone \\ud800"}\n'))


def test_row01_a_labelled_request_with_a_lone_surrogate_is_made_safe(tmp_path: Path) -> None:
    ctx = fuzz.Context(tmp_path, cli_every=10**9)
    fuzz.check_hostile_file(ctx, ("labels", b'{"id": "q1", "query": "km \\udfff", "gold": ["alpha"]}\n'))


def test_row02_an_alias_bomb_is_bounded_as_parsed(tmp_path: Path) -> None:
    ctx = fuzz.Context(tmp_path, cli_every=10**9)
    levels = [f"  b{i}: &b{i} [{', '.join([f'*b{i - 1}'] * 9)}]" for i in range(1, 9)]
    bomb = "metadata:\n  b0: &b0 [x, x, x, x, x, x, x, x, x]\n" + "\n".join(levels) + "\n"
    fuzz.check_hostile_skill(ctx, (b"bomb", skill_with("An alias bomb.", bomb)))


def test_row02_small_anchors_and_aliases_still_load(tmp_path: Path) -> None:
    ctx = fuzz.Context(tmp_path, cli_every=10**9)
    fuzz.check_hostile_skill(ctx, (b"anchors", skill_with("Small anchors.", "metadata:\n  t: &t [a, b]\n  u: *t\n")))
    assert fuzz.expanded_size({"t": ["a", "b"], "u": ["a", "b"]}) == 9


def test_row02_expanded_size_stops_counting_past_the_limit() -> None:
    shared: list[Any] = ["x"] * 9
    for _ in range(8):
        shared = [shared] * 9  # 9^9 leaves, 9 distinct lists: what an alias bomb parses to
    started = time.monotonic()
    assert fuzz.expanded_size(shared, limit=1000) == 1001
    assert time.monotonic() - started < 1.0


def test_row05_read_skill_file_refuses_a_fifo_at_once(ctx: Any) -> None:
    fuzz.check_mcp(ctx, ("read_skill_file", {"name": "alpha", "path": "pipe"}))


def test_row05_read_skill_file_reads_a_reference(ctx: Any) -> None:
    server = fuzz.Server.get(ctx)
    result = server.run(server.mcp.call_tool("read_skill_file", {"name": "alpha", "path": "ref.md"}), 5.0)
    assert "a reference" in result.model_dump_json()


def test_row06_the_hook_budget_holds_against_a_dripping_server(ctx: Any) -> None:
    answer = b'{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "x"}}'
    fuzz.check_hook(ctx, (b'{"prompt": "convert 3 miles"}', "fake", ("drip", fuzz._http(answer)), 0.3))


@pytest.mark.parametrize("plan", [("silent", b""), ("reply", b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n{")])
def test_row06_the_hook_budget_holds_against_silent_and_lying_servers(ctx: Any, plan: tuple[str, bytes]) -> None:
    fuzz.check_hook(ctx, (b'{"prompt": "convert 3 miles"}', "fake", plan, 0.3))


@settings(max_examples=10, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.generate])
@given(folder=st.sampled_from([b"caf\xff", b"t\xed\xa0\x80", b"\xc3\x28"]))
def test_row07_a_folder_name_that_is_not_utf8_is_shown_escaped(tmp_path_factory: Any, folder: bytes) -> None:
    ctx = fuzz.Context(tmp_path_factory.mktemp("row07"), cli_every=10**9)
    fuzz.check_hostile_skill(ctx, (folder, skill_with("Brew coffee.")))


@settings(max_examples=30, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(text=fuzz.HOSTILE_TEXT)
def test_row01_requests_with_hostile_text_get_no_5xx(ctx: Any, text: str) -> None:
    import json

    for path, body in (("/v1/route", {"query": text}), ("/v1/hooks/claude-code", {"prompt": text}),
                       ("/v1/inject", {"messages": [{"role": "user", "content": text}]})):
        data = json.dumps(body).encode("utf-8")
        fuzz.check_http(ctx, ("POST", path, data, {"Content-Type": "application/json"}))
