"""``benchmarks/hook_real.py --quick``: 2 prompts a row through the real Claude Code and Codex binaries, and the JSON
it writes holds every row of the hook's table with what each measured (a few minutes: two fresh-HOME setups)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import oracle_claude
from benchmarks.common import CORPORA
from tests import oracle_codex

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not CORPORA.is_dir():
        pytest.skip(f"the corpora are not at {CORPORA}")
    try:
        oracle_claude.install()
        oracle_codex.install_codex()
    except (pytest.fail.Exception, oracle_codex.OracleError) as exc:  # no npm or no registry
        pytest.skip(f"the harness binaries cannot be installed: {exc}")
    out = tmp_path_factory.mktemp("hook-real") / "hook_real.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "hook_real.py"), "--quick", "--out", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| `claude -p`, command form | 2/2 carried; hook p50 " in done.stdout
    return json.loads(out.read_text())


@pytest.mark.model
def test_every_prompt_row_carries_the_context_through_the_real_binaries(quick: dict[str, Any]) -> None:
    claude, codex = quick["claude-code"], quick["codex"]
    for row in (claude["claude_command"], claude["claude_http"], claude["claude_burners"], codex["codex_exec"]):
        assert (row["prompts"], row["carried"], row["hook"]["timed"]) == (2, 2, 2)
        assert row["outcomes"] == {"context": 2, "abstained": 0, "failed": 0, "lost": 0}
        assert 0 < row["hook"]["p50_ms"] <= row["hook"]["p99_ms"] < row["wall"]["p99_ms"]
        assert [p["id"] for p in row["per_prompt"]] == ["u-001", "u-008"]
        assert all(p["skills"] and p["exit"] == 0 for p in row["per_prompt"])
    stop = claude["claude_after_stop"]
    assert stop["first"]["hook_ms"] is not None and stop["budget_ms"] == 2000
    assert stop["server_ready_s"] is not None and stop["next"]["carried"]
    assert claude["skills"] == codex["skills"] > 100


@pytest.mark.model
def test_setup_twice_then_remove_and_each_doctor_break_are_reported(quick: dict[str, Any]) -> None:
    claude, codex = quick["claude-code"], quick["codex"]
    for check in (claude["setup_remove"], claude["setup_remove_http"], codex["setup_remove"]):
        assert check["changed_by_setup"] and check["second_setup_identical"] and check["identical_after_remove"]
    assert claude["restored_after_the_run"]
    doctor = claude["doctor"]
    assert doctor["nothing broken"] == {"exit": 0, "failing": {}}
    killed = doctor["server killed"]  # the sample prompt may then fail too: that hook starts a server, in-process
    assert (killed["exit"], killed["step"], killed["named"], killed["fix"]) == (
        1, "server", True, 'skill-router route --daemon --profile claude-code "test"')
    for name, step in (("hook removed", "hook"), ("index deleted", "index")):
        assert (doctor[name]["exit"], doctor[name]["named"], doctor[name]["added"], doctor[name]["fix"]) == (
            1, True, [step], "skill-router setup claude-code")


@pytest.mark.model
def test_the_run_names_its_machine_and_versions(quick: dict[str, Any]) -> None:
    assert quick["versions"]["claude-code"] == f"{oracle_claude.HARNESS_VERSION} (Claude Code)"
    assert quick["versions"]["codex"] == f"codex-cli {oracle_codex.CODEX_VERSION}"
    assert quick["versions"]["skill-router"].startswith("skill-router ")
    assert len(quick["machine"]["load_average_start"]) == len(quick["machine"]["load_average_end"]) == 3
    assert quick["machine"]["cores"] == os.cpu_count()
    assert quick["command"] == "python benchmarks/hook_real.py --quick --out " + quick["command"].rsplit(" ", 1)[1]
    assert len(quick["prompts"]) == 2 and quick["date"].endswith(" UTC")


def test_set_writes_the_projects_config_and_a_bad_field_is_refused(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import hook_real
    from router.config import RouterConfig

    world = hook_real.World(tmp_path, tmp_path / "project")
    world.configure(RouterConfig().with_(no_skill=False))
    assert RouterConfig.load(tmp_path / "project" / "skill-router.json") == RouterConfig().with_(no_skill=False)
    fresh = hook_real.World(tmp_path / "other", tmp_path / "other" / "project")
    fresh.configure(None)  # the defaults: no file, so a skill-router.json of the user's own is never replaced
    assert not (tmp_path / "other" / "project" / "skill-router.json").exists()
    for bad in ("no_skill=maybe", "no_such_field=1", "no_skill"):
        with pytest.raises(SystemExit) as exited:
            hook_real.main(["--set", bad])
        assert exited.value.code == 2
        assert "--set takes FIELD=JSON with a router config field" in capsys.readouterr().err


def test_config_changes_reads_each_set_item_as_json() -> None:
    from benchmarks.common import config_changes

    assert config_changes(["no_skill=false", "weights={\"bm25\": 0.5}", "k=3", "model=\"x=y\""]) == {
        "no_skill": False, "weights": {"bm25": 0.5}, "k": 3, "model": "x=y"}
    assert config_changes([]) == {}
    for bad, said in (("no_skill", "'no_skill' is not FIELD=JSON"), ("k=three", "Expecting value")):
        with pytest.raises(ValueError, match=said):
            config_changes([bad])
