"""A bounded run of the property-based fuzzing in ``benchmarks/fuzz.py``: every target, every profile.

The benchmark runs 100,000+ cases; here each target gets a few dozen derandomized examples (a few hundred in
all, every tenth also through the command line), so a regression in input handling fails the suite in seconds.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "fuzz.py"
_spec = importlib.util.spec_from_file_location("skill_router_fuzz", SCRIPT)
assert _spec is not None and _spec.loader is not None
fuzz = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = fuzz
_spec.loader.exec_module(fuzz)

EXAMPLES = {"frontmatter": 60, "skill_file": 50, "catalogue": 40, "labels": 50, "config": 40, "tool_call": 60,
            "messages": 60}


@pytest.fixture
def ctx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.chdir(tmp_path)
    return fuzz.Context(tmp_path / "fuzz", cli_every=10)


def test_every_target_is_fuzzed() -> None:
    assert set(EXAMPLES) == set(fuzz.TARGETS) == set(fuzz.SHARES)


@pytest.mark.parametrize("target", sorted(EXAMPLES))
def test_fuzz_target(ctx: Any, target: str) -> None:
    strategy, check = fuzz.TARGETS[target]

    @settings(max_examples=EXAMPLES[target], deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def case(value: Any) -> None:
        check(ctx, value)

    case()
    assert ctx.cases[target] >= EXAMPLES[target] // 2
