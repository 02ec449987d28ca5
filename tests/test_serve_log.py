"""The decision log: what a record keeps, how loads link to routings, rotation, crash safety, and what
``learn --from-log`` and ``eval --from-log`` make of it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from router.cli import main
from router.errors import CatalogError, ConfigError
from router.routing import Match, Routing
from router.serve.log import DecisionLog, evaluate_log, examples_from_log, read_log
from router.skill import Skill
from serve_support import copy_bundled

A, B, C = Skill("weather", "forecast"), Skill("commit", "commit messages"), Skill("haiku", "poems")


def routing(*shown: Skill) -> Routing:
    return Routing(matches=tuple(Match(s.id, s.name, 1.0 / i, i) for i, s in enumerate(shown, start=1)),
                   shown=shown, confidence=0.5)


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("mode", ["text", "hash", "off"])
def test_a_routing_record_keeps_the_text_its_hash_or_neither(tmp_path: Path, mode: str) -> None:
    log = DecisionLog(str(tmp_path / "log.jsonl"), requests=mode)
    log.routed("r1", "route", "rain in Lyon?", routing(A, B), k=2, session="s")
    (record,) = records(tmp_path / "log.jsonl")  # flushed: readable while the log is open
    assert record["type"] == "route" and record["id"] == "r1" and record["session"] == "s" and record["k"] == 2
    assert record["shown"] == [{"id": "weather", "name": "weather", "score": 1.0, "rank": 1},
                               {"id": "commit", "name": "commit", "score": 0.5, "rank": 2}]
    assert record.get("request") == ("rain in Lyon?" if mode == "text" else None)
    digest = hashlib.sha256("rain in Lyon?".encode()).hexdigest()
    assert record.get("sha256") == (digest if mode == "hash" else None)
    log.close()


def test_unknown_log_mode_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="text, hash, off"):
        DecisionLog(str(tmp_path / "log.jsonl"), requests="all")


def test_loads_link_to_the_named_routing_then_the_session_then_the_last(tmp_path: Path) -> None:
    log = DecisionLog(str(tmp_path / "log.jsonl"))
    assert log.loaded("weather", "tool")["after"] is None  # nothing routed yet
    log.routed("r1", "route", "q1", routing(A, B), session="s1")
    log.routed("r2", "route", "q2", routing(C), session="s2")
    by_id = log.loaded("weather", "tool", route_id="r1")
    assert (by_id["after"], by_id["shown"], by_id["rank"]) == ("r1", True, 1)
    by_session = log.loaded("haiku", "mcp", session="s1")
    assert (by_session["after"], by_session["shown"], by_session["rank"]) == ("r1", False, None)
    last = log.loaded("haiku", "tool")
    assert (last["after"], last["shown"], last["rank"]) == ("r2", True, 1)
    assert log.loaded("haiku", "tool", route_id="unknown")["after"] is None
    log.close()


def test_the_log_rotates_by_size_and_is_read_oldest_first(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    log = DecisionLog(str(path), requests="text", max_bytes=600, backups=3)
    for i in range(12):
        log.routed(f"r{i}", "route", f"request {i}", routing(A, B))
    log.close()
    assert (tmp_path / "log.jsonl.1").exists() and (tmp_path / "log.jsonl.3").exists()
    assert not (tmp_path / "log.jsonl.4").exists()
    rows, bad = read_log(str(path))
    ids = [r["id"] for r in rows]
    assert bad == 0 and ids == sorted(ids, key=lambda i: int(i[1:])) and ids[-1] == "r11"
    assert all(p.stat().st_size <= 600 for p in tmp_path.glob("log.jsonl*"))


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    log = DecisionLog(str(path), requests="text")
    log.routed("r1", "route", "q", routing(A))
    log.close()
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"type": "load", "skill": "wea')  # the process died mid-write
    rows, bad = read_log(str(path))
    assert [r["id"] for r in rows] == ["r1"] and bad == 1
    with pytest.raises(CatalogError, match="does not exist"):
        read_log(str(tmp_path / "missing.jsonl"))


def hand_log(path: Path) -> None:
    log = DecisionLog(str(path), requests="text")
    log.routed("r1", "route", "will it rain?", routing(A, B))
    log.loaded("weather", "tool", route_id="r1")  # shown, rank 1
    log.routed("r2", "route", "write a poem", routing(A, B))
    log.loaded("haiku", "tool", route_id="r2")  # loaded although not shown
    log.loaded("ghost", "tool", route_id="r2")  # a skill no longer in the library
    log.loaded("commit", "tool", route_id="gone")  # not linked
    log.close()


def test_examples_and_evaluation_from_a_log(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    hand_log(path)
    examples, counts = examples_from_log(str(path), {"weather", "commit", "haiku"})
    assert examples == {"weather": ["will it rain?"], "haiku": ["write a poem"]}
    assert counts == {"loads": 4, "used": 2, "shown": 1, "not_shown": 1, "no_request_id": 0, "unlinked": 1,
                      "no_text": 0, "unknown_skill": 1, "unreadable_lines": 0}
    report = evaluate_log(str(path))
    assert (report["routings"], report["loads"], report["linked_loads"], report["loaded_was_shown"]) == (2, 4, 3, 1)
    assert report["shown_rate"] == round(1 / 3, 4) and report["rank_of_loaded"] == {"1": 1}
    assert report["loaded_not_shown"] == {"ghost": 1, "haiku": 1}


def test_hashed_requests_teach_nothing(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    log = DecisionLog(str(path), requests="hash")
    log.routed("r1", "route", "will it rain?", routing(A))
    log.loaded("weather", "tool", route_id="r1")
    log.close()
    examples, counts = examples_from_log(str(path), {"weather"})
    assert examples == {} and counts["no_text"] == 1


def test_eval_from_log_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "log.jsonl"
    hand_log(path)
    assert main(["eval", "--from-log", str(path)]) == 0
    out = capsys.readouterr().out
    assert "loaded skill was among those shown: 1 of 3 (33.3%)" in out
    assert main(["eval", "--from-log", str(path), "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["schema"] == "skill-router.log-eval/1"
    assert main(["eval"]) == 2


@pytest.mark.model
def test_learn_from_log_command_adds_examples(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    library = copy_bundled(tmp_path / "skills")
    path = tmp_path / "log.jsonl"
    log = DecisionLog(str(path), requests="text")
    log.routed("r1", "route", "is my umbrella needed in Lyon on saturday", routing(Skill("current-weather", "")))
    log.loaded("weather-forecast", "tool", route_id="r1")
    log.close()
    index = tmp_path / "idx"
    assert main(["learn", "--from-log", str(path), "--skills", str(library), "--index-dir", str(index)]) == 0
    assert "learned 1 new example requests for 1 skills" in capsys.readouterr().out
    rows = [json.loads(line) for line in (index / "learned-examples.jsonl").read_text().splitlines()]
    assert rows == [{"id": "weather-forecast", "query": "is my umbrella needed in Lyon on saturday"}]
    assert main(["learn", "--skills", str(library), "--index-dir", str(index)]) == 2


def test_a_log_path_that_is_a_fifo_or_a_device_is_refused_at_once(tmp_path: Path) -> None:
    import os
    import time

    fifo = tmp_path / "decisions.jsonl"
    os.mkfifo(fifo)  # no reader: a blocking open would wait for one for ever
    (tmp_path / "zero").symlink_to("/dev/zero")
    for path in (fifo, tmp_path / "zero"):
        start = time.monotonic()
        with pytest.raises(ConfigError) as refused:
            DecisionLog(str(path))
        assert str(refused.value) == (f"cannot open the decision log '{path}': not a regular file (a FIFO, a device "
                                      "or a socket)")
        assert time.monotonic() - start < 1
