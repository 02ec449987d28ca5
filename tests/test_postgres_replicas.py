"""Stateless replicas over one PostgreSQL index, on the real engine: two ``skill-router serve --index-url``
processes answering a client loop while a writer process commits edits, is killed mid-generation, or the database
goes away for 10 s. Every replica is a real process on a free 127.0.0.1 port, stopped by the test and by its own
``--exit-after``."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.pg_support import kill_inside_transaction, missing_reason
from tests.serve_support import copy_bundled, write_skill

pytestmark = [pytest.mark.model, pytest.mark.skipif(missing_reason() is not None, reason=str(missing_reason()))]

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
EXIT_AFTER_S = 300  # a replica the test failed to stop stops itself
QUERY = {"query": "when is high tide at the harbour", "k": 3}
MARKED = "zz-tide-tables"



def tide(library: Path, revision: int) -> None:
    """The marked skill at ``revision``: its description names the revision, so that the description a replica
    shows and the scores it ranks by tell which generation answered."""
    extra = ["spring and neap tides", "tidal streams and currents", "chart datum and heights", "lunar tide times"]
    write_skill(library, MARKED, f"Predict tide heights and times for a harbour from tide tables, revision "
                                 f"{revision}, covering {extra[revision % len(extra)]}.")


def index(library: Path, url: str) -> dict:
    """``skill-router index --index-url`` in a process of its own (the writer); its JSON summary."""
    done = subprocess.run([sys.executable, "-m", "router.cli", "index", "--skills", str(library), "--index-url", url,
                           "--json"], capture_output=True, text=True, env=ENV, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


class Replica:
    """``skill-router serve --index-url`` in its own process, on a free port; its stderr is drained."""

    def __init__(self, library: Path, url: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "router.cli", "serve", "--skills", str(library), "--index-url", url, "--port", "0",
             "--no-log", "--no-mcp", "--exit-after", str(EXIT_AFTER_S)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV)
        self.lines: list[str] = []
        listening = threading.Event()
        self.url = ""

        def drain() -> None:
            assert self.process.stderr is not None
            for line in self.process.stderr:
                self.lines.append(line)
                found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
                if found:
                    self.url = found.group(1)
                    listening.set()

        self._drain = threading.Thread(target=drain, daemon=True)
        self._drain.start()
        deadline = time.monotonic() + 180
        assert listening.wait(180), "".join(self.lines)
        with httpx.Client(base_url=self.url, timeout=30, trust_env=False) as client:
            while True:
                try:
                    if client.get("/readyz").status_code == 200:
                        break
                except httpx.ConnectError:  # bound, not listening yet
                    pass
                assert self.process.poll() is None and time.monotonic() < deadline, "".join(self.lines)
                time.sleep(0.1)

    def generation(self) -> int | None:
        with httpx.Client(base_url=self.url, timeout=30, trust_env=False) as client:
            return client.get("/readyz").json()["last_reload"]["generation"]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self._drain.join(timeout=10)
        if self.process.stderr is not None:
            self.process.stderr.close()


@dataclass
class Answer:
    replica: int
    sent: float
    status: int
    body: dict | None
    text: str


@dataclass
class Load:
    """Two clients per replica, each posting :data:`QUERY` in a loop until :meth:`stop`."""

    replicas: list[Replica]
    answers: list[Answer] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> Load:
        for number, replica in enumerate(self.replicas):
            for _ in range(2):
                thread = threading.Thread(target=self._loop, args=(number, replica.url), daemon=True)
                thread.start()
                self._threads.append(thread)
        return self

    def _loop(self, number: int, url: str) -> None:
        with httpx.Client(base_url=url, timeout=60, trust_env=False) as client:
            while not self._stop.is_set():
                sent = time.monotonic()
                try:
                    answer = client.post("/v1/route", json=QUERY)
                except httpx.HTTPError as exc:  # counted as a failed request
                    self.answers.append(Answer(number, sent, 0, None, repr(exc)))
                    continue
                try:
                    body = answer.json()
                except ValueError:
                    body = None
                self.answers.append(Answer(number, sent, answer.status_code, body, answer.text[:300]))

    def stop(self) -> list[Answer]:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=90)
        return list(self.answers)


def revision(answer: Answer) -> tuple[int, float]:
    """(the revision of the marked skill that answer showed, the dense score it ranked that skill by)."""
    assert answer.body is not None
    found = re.search(r"revision (\d+)", answer.body["catalogue"])
    assert found, answer.body["catalogue"][:300]
    match = next(m for m in answer.body["matches"] if m["id"] == MARKED)
    return int(found.group(1)), match["scores"]["dense"]


def one_generation_each(answers: list[Answer]) -> dict[int, float]:
    """Each revision shown with exactly one dense score (the one its generation computes), and no two revisions
    with the same one: a response that showed one generation's texts and ranked by another's would break this."""
    scores: dict[int, list[float]] = {}
    for answer in answers:
        shown, score = revision(answer)
        scores.setdefault(shown, []).append(score)
    expected = {shown: sorted(values)[len(values) // 2] for shown, values in scores.items()}
    for shown, values in scores.items():
        assert max(abs(v - expected[shown]) for v in values) < 1e-4, (shown, sorted(set(values)))
    distinct = sorted(expected.values())
    assert all(b - a > 1e-3 for a, b in zip(distinct, distinct[1:])), expected
    return expected


def serving(replicas: list[Replica], generation: int, committed: float) -> None:
    """Wait until every replica serves ``generation``, committed at ``committed`` (monotonic): within 10 s."""
    while [r.generation() for r in replicas] != [generation] * len(replicas):
        assert time.monotonic() - committed < 10, [r.generation() for r in replicas]
        time.sleep(0.02)


def test_two_replicas_follow_a_writer_committing_edits_under_load(pg, tmp_path) -> None:
    library = copy_bundled(tmp_path / "skills")
    tide(library, 0)
    first = index(library, pg.url)["generation"]
    replicas = [Replica(library, pg.url), Replica(library, pg.url)]
    try:
        assert [r.generation() for r in replicas] == [first, first]
        load = Load(replicas).start()
        generations, reached = [first], []
        for edit in (1, 2, 3):
            time.sleep(1.0)  # answers of the generation before, under load
            tide(library, edit)
            summary = index(library, pg.url)
            committed = time.monotonic()
            assert summary["embedded"] == 1 and summary["generation"] > generations[-1]
            generations.append(summary["generation"])
            serving(replicas, summary["generation"], committed)
            reached.append(time.monotonic() - committed)
        time.sleep(1.0)
        answers = load.stop()
    finally:
        for replica in replicas:
            replica.stop()
    failed = Counter((a.status, a.text[:120]) for a in answers if a.status != 200)
    assert not failed, failed
    per_replica = Counter(a.replica for a in answers)
    assert len(answers) >= 40 and min(per_replica.values()) >= 10, per_replica
    expected = one_generation_each(answers)
    assert sorted(expected) == [0, 1, 2, 3]  # every generation answered, each with its own texts and scores
    for number in (0, 1):  # and each replica ended on the last one
        last = max((a for a in answers if a.replica == number), key=lambda a: a.sent)
        assert revision(last)[0] == 3
    assert max(reached) < 5, reached
    print(f"edit visible in both replicas after {', '.join(f'{s:.2f}' for s in reached)} s; "
          f"{len(answers)} requests, 0 failed")




def test_a_writer_killed_mid_generation_leaves_the_replicas_serving_the_previous_one(pg, tmp_path) -> None:
    library = copy_bundled(tmp_path / "skills")
    tide(library, 0)
    before = index(library, pg.url)["generation"]
    replicas = [Replica(library, pg.url), Replica(library, pg.url)]
    try:
        load = Load(replicas).start()
        time.sleep(1.0)
        tide(library, 1)
        # an edit writes only the changed rows' postings (few): paused at the first
        kill_inside_transaction(library, pg.url, ENV, pause_at=0, sleep_s=120)
        killed = time.monotonic()
        time.sleep(2.0)  # the server rolls the killed writer's transaction back; the replicas keep answering
        assert [r.generation() for r in replicas] == [before, before]
        rerun = time.monotonic()
        summary = index(library, pg.url)  # the next writer commits, and the replicas swap to it
        assert summary["generation"] > before and summary["embedded"] == 0  # embedded before the kill, kept
        committed = time.monotonic()
        serving(replicas, summary["generation"], committed)
        time.sleep(1.0)
        answers = load.stop()
    finally:
        for replica in replicas:
            replica.stop()
    failed = Counter((a.status, a.text[:120]) for a in answers if a.status != 200)
    assert not failed, failed
    expected = one_generation_each(answers)
    assert sorted(expected) == [0, 1]
    while_killed = [a for a in answers if killed <= a.sent < rerun]
    assert len(while_killed) >= 10 and {revision(a)[0] for a in while_killed} == {0}


def test_the_database_away_for_10_s_under_load_answers_only_503_then_recovers_without_restart(pg, tmp_path) -> None:
    library = copy_bundled(tmp_path / "skills")
    tide(library, 0)
    index(library, pg.url)
    replicas = [Replica(library, pg.url), Replica(library, pg.url)]
    pids = [r.process.pid for r in replicas]
    try:
        load = Load(replicas).start()
        time.sleep(1.0)
        stopping = time.monotonic()
        pg.stop()
        try:
            time.sleep(10.0)
        finally:
            pg.start()
        started = time.monotonic()
        deadline = started + 60
        while True:  # recovered: the last four answers of every replica are 200
            time.sleep(0.5)
            latest = {n: [a.status for a in sorted(load.answers, key=lambda a: a.sent) if a.replica == n][-4:]
                      for n in (0, 1)}
            if all(statuses == [200] * 4 for statuses in latest.values()):
                break
            assert time.monotonic() < deadline, latest
        recovered = time.monotonic()
        time.sleep(1.0)
        answers = load.stop()
        assert [r.process.poll() for r in replicas] == [None, None]  # the same processes throughout
        assert [r.process.pid for r in replicas] == pids
    finally:
        for replica in replicas:
            replica.stop()
    refused = [a for a in answers if a.status != 200]
    assert refused and all(a.status == 503 for a in refused), Counter((a.status, a.text[:120]) for a in refused)
    kinds = Counter(a.body["error"]["type"] for a in refused if a.body is not None and set(a.body) == {"error"})
    assert sum(kinds.values()) == len(refused), [a.text for a in refused if a.body is None][:3]
    assert set(kinds) <= {"index_unavailable", "deadline_exceeded", "busy"}, kinds
    assert kinds["index_unavailable"] >= 1
    assert all(pg.password not in a.text for a in refused)
    # every answer but those sent while the database was away (or just before, still under way) is 200
    outside = [a for a in answers if a.sent < stopping - 1 or a.sent > recovered]
    assert outside and all(a.status == 200 for a in outside), \
        [(a.replica, round(a.sent - stopping, 2), a.status, a.text[:150]) for a in outside if a.status != 200]
    assert {revision(a)[0] for a in answers if a.status == 200} == {0}
    print(f"database away 10 s: {len(refused)} answers 503 ({dict(kinds)}), {len(answers) - len(refused)} 200; "
          f"recovered {recovered - started:.1f} s after it was back")
