"""The library stays live: an edited SKILL.md is picked up in the background (only it is re-embedded), the
router is swapped atomically (no request fails, each sees the old or the new library), and a SKILL.md edited
into a broken state is reported the way the profile reports it."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import httpx
import pytest

from serve_support import copy_bundled, running, write_skill

OLD = "Convert quantities between metric, imperial and US customary units."
pytestmark = pytest.mark.model  # a real server with the real model

NEW = "Convert quantities between units, including nautical miles, furlongs and light years."


def wait_for(check, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@pytest.fixture()
def live(tmp_path: Path):
    library = copy_bundled(tmp_path / "skills")
    write_skill(library, "unit-conversion", OLD)
    argv = ["--skills", str(library), "--profile", "agentskills", "--index-dir", str(tmp_path / "idx"), "--no-log"]
    with running(argv, mcp=False) as (url, service):
        with httpx.Client(base_url=url, timeout=30, trust_env=False) as client:
            yield client, service, library


def description(client: httpx.Client) -> str:
    return client.get("/v1/skills/unit-conversion").json()["description"]


def replace_skill(library: Path, description: str) -> None:
    """Save as most editors do (a new file renamed over the old one): one change, never a half-written file."""
    staged = write_skill(library.parent / "staging", "unit-conversion", description)
    os.replace(staged, library / "unit-conversion" / "SKILL.md")


def test_an_edited_skill_is_reindexed_alone_and_served(live) -> None:
    client, service, library = live
    replace_skill(library, NEW)
    wait_for(lambda: description(client) == NEW)
    ready = client.get("/readyz").json()
    assert ready["reloads"] >= 1 and ready["last_reload"]["ok"] is True
    assert ready["last_reload"]["embedded"] == 1, service.router.notes  # only the changed text
    assert "light years" in client.post("/v1/route", json={"query": "how far is a light year in furlongs", "k": 3}
                                        ).json()["catalogue"]


def test_a_broken_skill_is_reported_and_the_rest_keeps_working(live) -> None:
    client, _, library = live
    (library / "unit-conversion" / "SKILL.md").write_text("---\nname: unit-conversion\n---\nno description\n")
    wait_for(lambda: client.get("/v1/skills/unit-conversion").status_code == 404)
    ready = client.get("/readyz").json()
    assert any("unit-conversion" in line and "description" in line for line in ready["errors"] + ready["warnings"])
    assert client.post("/v1/route", json={"query": "rain in Lyon?"}).status_code == 200
    write_skill(library, "unit-conversion", OLD)
    wait_for(lambda: client.get("/v1/skills/unit-conversion").status_code == 200)


def test_no_request_fails_during_reloads_and_each_sees_one_library(live) -> None:
    client, service, library = live
    statuses: list[int] = []
    seen: set[tuple[bool, bool]] = set()
    stop = threading.Event()

    def hammer() -> None:
        with httpx.Client(base_url=str(client.base_url), timeout=30, trust_env=False) as own:
            while not stop.is_set():
                answer = own.post("/v1/route", json={"query": "convert 3 furlongs to metres",
                                                     "pin": ["unit-conversion"]})
                statuses.append(answer.status_code)
                if answer.status_code == 200:
                    catalogue = answer.json()["catalogue"]
                    seen.add((OLD in catalogue, NEW in catalogue))

    workers = [threading.Thread(target=hammer) for _ in range(4)]
    for worker in workers:
        worker.start()
    before = service.reloads
    try:
        for i in range(6):
            write_skill(library, "unit-conversion", NEW if i % 2 == 0 else OLD)
            time.sleep(0.7)
        wait_for(lambda: service.reloads >= before + 2)
    finally:
        stop.set()
        for worker in workers:
            worker.join()
    assert statuses and set(statuses) == {200}
    assert len(statuses) > 20
    assert seen == {(True, False), (False, True)}  # the old description or the new one, never both or neither


@pytest.mark.parametrize("profile, folder", [("claude-code", ".claude/skills"), ("codex", ".agents/skills")])
def test_without_skills_the_harness_folders_are_watched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        profile: str, folder: str) -> None:
    """codex and claude-code with no --skills read the folders their harness reads; those are the ones watched."""
    from router.cli.serve import build_service
    from serve_support import serve_args

    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    write_skill(project / folder, "unit-conversion", OLD)
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.chdir(project)
    _, watch = build_service(serve_args(["--profile", profile, "--index-dir", str(tmp_path / "idx"), "--no-log"]))
    assert watch == [str(project / folder)]
    _, watch = build_service(serve_args(["--profile", profile, "--index-dir", str(tmp_path / "idx"), "--no-log",
                                         "--no-watch"]))
    assert watch == []
