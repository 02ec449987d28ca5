"""Issue 16, the command-line rows: what a slow server, an empty library, a worse tuned config or a stray load in
the decision log did to the commands, and what they do now. Each test is named after the row of the issue's
table it covers (row 6: a dripping server and the hook's budget; row 8: no skills at all; row 10: ``tune``
writing a worse config; row 11: ``learn --from-log`` linking a load to an unrelated routing)."""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from cli_support import run

HOOK_STDIN = {"session_id": "abc123", "cwd": "/tmp", "hook_event_name": "UserPromptSubmit",
              "prompt": "what will the weather be like tomorrow in Lyon?"}
HOOK_ANSWER = {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                      "additionalContext": "Skills most relevant to this request (skill-router):\n"
                                                           "- weather-forecast: Forecast the weather."}}


@pytest.fixture(autouse=True)
def _isolated_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No skill-router.json from the working folder may leak into a test."""
    monkeypatch.chdir(tmp_path)


# -- row 6: a server that drips its answer ---------------------------------------------------------------------------
DRIP_S = 0.5  # one byte every half second, as in the issue
SERVER_LIFETIME_S = 60.0  # a fake server never outlives this, whatever the test does


def _response(body: bytes, *, length: int | None = None) -> tuple[bytes, bytes]:
    head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
            f"{len(body) if length is None else length}\r\n\r\n").encode()
    return head, body


def _behave(kind: str, conn: socket.socket, stop: threading.Event) -> None:
    """Answer one connection the way a broken server ``kind`` does."""
    body = json.dumps(HOOK_ANSWER).encode()

    def drip(data: bytes) -> None:
        for i in range(len(data)):
            if stop.wait(DRIP_S):
                return
            conn.sendall(data[i:i + 1])

    if kind == "honest":
        head, body = _response(body)
        conn.sendall(head + body)
        return
    if kind == "quick-drip":  # a slow but honest server: the whole answer, a byte every 5 ms
        head, body = _response(body)
        for i in range(len(head + body)):
            time.sleep(0.005)
            conn.sendall((head + body)[i:i + 1])
        return
    if kind == "headers-drip":  # the status line and headers come one byte at a time
        head, body = _response(body)
        drip(head + body)
    elif kind == "body-drip":  # headers at once, then the body one byte at a time
        head, body = _response(body)
        conn.sendall(head)
        drip(body)
    elif kind == "lying-length":  # announces more bytes than it sends, and keeps the connection open
        head, body = _response(body, length=len(body) + 500)
        conn.sendall(head + body)
    elif kind == "short-length":  # announces more bytes than it sends, then closes
        head, body = _response(body, length=len(body) + 500)
        conn.sendall(head + body)
        return
    elif kind == "garbage":  # bytes that are no HTTP at all, and no end to them
        noise = random.Random(16)
        while not stop.wait(0.05):
            conn.sendall(bytes(noise.randrange(256) for _ in range(64)))
    # "silent": accepts, reads the request and never answers
    stop.wait(SERVER_LIFETIME_S)


@contextmanager
def broken_server(kind: str, received: list[bytes] | None = None) -> Iterator[str]:
    """The URL of a server on 127.0.0.1 that answers every connection like ``kind`` (and keeps each request in
    ``received``); stopped on exit."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.1)
    stop = threading.Event()
    deadline = time.monotonic() + SERVER_LIFETIME_S

    def handle(conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(5)
                request = conn.recv(65536)  # the request (the hook sends it in one piece)
                if received is not None:
                    received.append(request)
                _behave(kind, conn, stop)
            except OSError:  # the hook hung up: what a hook at its deadline does
                pass

    def accept() -> None:
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                conn, _ = listener.accept()
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def run_hook(url: str, budget: float, *options: str) -> tuple[subprocess.CompletedProcess, float]:
    """The hook as a harness runs it (a new interpreter, the JSON on stdin), and its wall time from spawn to exit."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "router.cli", "hook", "claude-code", "--url", url, "--timeout",
                           str(budget), *options], input=json.dumps(HOOK_STDIN).encode(), capture_output=True,
                          timeout=120, env=env)
    return done, time.monotonic() - start


# On a busy shared machine the interpreter's exit and the scheduler add a little to the hook's own deadline.
HOOK_TOLERANCE_S = 0.4


@pytest.mark.parametrize("kind", ["headers-drip", "body-drip", "silent", "lying-length", "garbage"])
def test_row_6_the_hook_budget_is_a_deadline_for_the_whole_call(kind: str) -> None:
    budget = 2.0
    with broken_server(kind) as url:
        done, elapsed = run_hook(url, budget)
    assert done.returncode == 0 and done.stdout == b""  # nothing is better than a late or broken answer
    assert elapsed < budget + HOOK_TOLERANCE_S, f"{kind}: the hook ran {elapsed:.2f} s on a {budget} s budget"
    (line,) = done.stderr.decode().splitlines()
    assert line.startswith("skill-router hook: the server at ")


def test_row_6_a_server_that_cuts_its_answer_short_is_reported() -> None:
    sent = len(json.dumps(HOOK_ANSWER).encode())
    with broken_server("short-length") as url:
        done, elapsed = run_hook(url, 2.0)
    assert done.returncode == 0 and done.stdout == b"" and elapsed < 2.0 + HOOK_TOLERANCE_S
    assert done.stderr.decode() == (f"skill-router hook: the server at {url} closed the connection after {sent} of "
                                    f"{sent + 500} announced bytes\n")


def test_row_6_an_answer_in_many_small_pieces_within_the_budget_is_printed() -> None:
    with broken_server("quick-drip") as url:
        done, elapsed = run_hook(url, 3.0)
    assert done.returncode == 0 and done.stderr == b"" and elapsed < 3.0 + HOOK_TOLERANCE_S
    assert json.loads(done.stdout) == HOOK_ANSWER


def test_row_6_the_hook_sends_one_plain_request_with_its_token(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret\n", encoding="utf-8")
    received: list[bytes] = []
    with broken_server("honest", received) as url:
        done, _ = run_hook(url, 3.0, "--token-file", str(token))
    assert done.returncode == 0 and done.stderr == b"" and json.loads(done.stdout) == HOOK_ANSWER
    (request,) = received
    body = json.dumps(HOOK_STDIN).encode()
    assert request == (f"POST /v1/hooks/claude-code HTTP/1.0\r\nHost: {url.removeprefix('http://')}\r\n"
                       f"Content-Length: {len(body)}\r\nConnection: close\r\nContent-Type: application/json\r\n"
                       "Authorization: Bearer s3cret\r\n\r\n").encode() + body


def test_row_6_the_in_process_fallback_keeps_the_deadline(tmp_path: Path) -> None:
    from serve_support import write_skill

    for i in range(20):  # more than route_above: the fallback has to load the model and route
        write_skill(tmp_path / "skills", f"skill-{i}", f"Skill number {i} does task {i}.")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    done, elapsed = run_hook(url, 1.5, "--skills", str(tmp_path / "skills"), "--index-dir", str(tmp_path / "idx"))
    assert done.returncode == 0 and elapsed < 1.5 + HOOK_TOLERANCE_S
    assert done.stdout == b"" or json.loads(done.stdout)["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert len(done.stderr.decode().splitlines()) <= 1


# -- row 8: no skills at all ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["route", "review my Go code"], ["route", "--queries", "requests.jsonl"], ["prompt"], ["prompt", "hello"],
    ["prompt", "--profile", "claude-code", "--emit-config"], ["prompt", "--profile", "codex", "--emit-config"],
    ["index"], ["eval", "--queries", "requests.jsonl"], ["tune", "--queries", "requests.jsonl"],
    ["overlap"], ["learn", "--queries", "requests.jsonl"],
])
def test_row_8_an_empty_skills_folder_is_one_line_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            argv: list[str]) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "requests.jsonl").write_text('{"id": "a", "query": "review my Go code", "gold": []}\n')
    status, out, err = run(capsys, *argv, "--skills", str(tmp_path / "empty"))
    assert (status, out) == (2, "")
    assert err == (f"skill-router {argv[0]}: error: no skills found in {tmp_path / 'empty'}: each skill is a "
                   "sub-folder holding a SKILL.md; pass --skills with the folder that holds them\n")
    assert not (tmp_path / "skill-router.json").exists()


def test_row_8_claude_code_with_no_skills_folder_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.claude/skills, and none in the working folder
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    for argv in (["route", "review my Go code"], ["prompt", "--emit-config"]):
        status, out, err = run(capsys, *argv, "--profile", "claude-code")
        assert (status, out) == (2, "")
        assert err == (f"skill-router {argv[0]}: error: no skills found in {tmp_path}/home/.claude/skills, "
                       f"{tmp_path}/work/.claude/skills (none of the skills folders claude-code reads exists "
                       "here): pass --skills with the folder that holds the skills\n")


@pytest.mark.parametrize("profile", ["claude-code", "codex"])
def test_row_8_emit_config_refuses_to_hide_every_skill(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       profile: str) -> None:
    from serve_support import write_skill

    write_skill(tmp_path / "skills", "go-code-review", "Review Go code.")
    write_skill(tmp_path / "skills", "haiku-writer", "Write a haiku.")
    status, out, err = run(capsys, "prompt", "--emit-config", "--profile", profile, "--skills",
                           str(tmp_path / "skills"), "--exclude", "go-code-review", "--exclude", "haiku-writer")
    assert (status, out) == (2, "")
    assert err == (f"skill-router prompt: error: refusing to emit a {profile} config that hides all 2 skills: every "
                   "skill is excluded; route a request that fits a skill, or drop --exclude\n")
    status, out, _ = run(capsys, "prompt", "--emit-config", "--profile", profile, "--skills",
                         str(tmp_path / "skills"), "--exclude", "haiku-writer")
    haiku = tmp_path / "skills" / "haiku-writer" / "SKILL.md"
    assert status == 0 and out == {
        "claude-code": '# skill-router: Claude Agent SDK option listing only the routed skills\n'
                       'ClaudeAgentOptions(skills=["go-code-review"])\n',
        "codex": '# skill-router: 1 routed skills stay enabled, 1 disabled (add to $CODEX_HOME/config.toml)\n'
                 f'[[skills.config]]\npath = "{haiku}"\nenabled = false\n'}[profile]


def test_row_8_an_empty_library_through_the_python_api_raises_the_projects_error(tmp_path: Path) -> None:
    from router import Router
    from router.errors import EmptyLibraryError, SkillRouterError

    (tmp_path / "empty").mkdir()
    router = Router.from_skills(tmp_path / "empty")
    assert router.skills == () and router.route("review my Go code").shown == ()  # routing: nothing to show
    message = ("the library has no skills, so there is nothing to rank: add skill folders (each with a SKILL.md) "
               "or catalogue rows first")
    for call in (lambda: router.rank("review my Go code"), lambda: router.rank_many(["a", "b"])):
        with pytest.raises(EmptyLibraryError) as info:
            call()
        assert str(info.value) == message and isinstance(info.value, SkillRouterError)


# -- row 11: learn --from-log links a load only to the routing it names -------------------------------------------
def _routing(*names: str):
    from router.routing import Match, Routing
    from router.skill import Skill

    shown = tuple(Skill(name, name) for name in names)
    return Routing(matches=tuple(Match(s.id, s.name, 1.0 / i, i) for i, s in enumerate(shown, start=1)),
                   shown=shown, confidence=0.5)


def write_search_then_stray_load(path: Path) -> None:
    """A real decision log, written by the server's own writer: a routing and the load that names it, then an
    unrelated search for "x", then a load that names no routing (a client that never passed route_id)."""
    from router.serve.log import DecisionLog

    log = DecisionLog(str(path), requests="text")
    log.routed("r1", "route", "review my Go code for goroutine leaks", _routing("go-code-review"))
    log.loaded("go-code-review", "tool", route_id="r1")
    log.routed("r2", "skills", "x", _routing("haiku-writer"))  # someone searched for "x"
    log.loaded("go-code-review", "tool")  # names no routing: the writer links it to the last one, r2
    log.loaded("go-code-review", "mcp", session="s-1")
    log.close()


def test_row_11_a_load_without_a_request_id_is_counted_never_linked(tmp_path: Path) -> None:
    from router.serve.log import examples_from_log

    path = tmp_path / "decisions.jsonl"
    write_search_then_stray_load(path)
    examples, counts = examples_from_log(str(path), {"go-code-review", "haiku-writer"})
    assert examples == {"go-code-review": ["review my Go code for goroutine leaks"]}  # never "x"
    assert counts == {"loads": 3, "used": 1, "shown": 1, "not_shown": 0, "no_request_id": 2, "unlinked": 0,
                      "no_text": 0, "unknown_skill": 0, "unreadable_lines": 0}


@pytest.mark.model
def test_row_11_learn_from_log_reports_the_loads_it_did_not_link(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from serve_support import write_skill

    for name, description in (("go-code-review", "Review Go code for bugs and goroutine leaks."),
                              ("haiku-writer", "Write a haiku of three lines.")):
        write_skill(tmp_path / "skills", name, description)
    path = tmp_path / "decisions.jsonl"
    write_search_then_stray_load(path)
    status, out, err = run(capsys, "learn", "--from-log", str(path), "--skills", str(tmp_path / "skills"),
                           "--index-dir", str(tmp_path / "idx"))
    assert status == 0 and out == f"learned 1 new example requests for 1 skills -> {tmp_path / 'idx'}\n"
    assert err == ("3 loads in the log: 1 used (1 shown, 0 loaded although not shown), 2 without a request id "
                   "(never linked: pass the routing's request_id as route_id when loading), 0 naming a routing not "
                   "in the log, 0 without request text, 0 of skills not in the library\n")
    learned = [json.loads(line) for line in (tmp_path / "idx" / "learned-examples.jsonl").read_text().splitlines()]
    assert learned == [{"id": "go-code-review", "query": "review my Go code for goroutine leaks"}]


# -- row 10: tune never writes a worse config silently --------------------------------------------------------------
# Requests on which a BM25-heavy fusion and the defaults disagree about the best skill (18 skills of test_cli).
DEV_QUERIES = ["weather for my code review", "haiku about kubernetes pods", "write a haiku commit message",
               "regex to find sql queries", "pirate style commit message", "slow sql in my go code",
               "pdf of the meeting minutes", "regex for csv dates"]
# The first four dev requests come back in the held-out file with the defaults' answer as their label (two
# labellers who disagree): whatever setting reproduces the dev labels must lose on them.
HELD_OUT_QUERIES = DEV_QUERIES[:4] + ["clean the csv of tls certificates", "go code that converts time zones",
                                      "tls certificate for my resume site", "scale the recipe for the meeting",
                                      "python script to fill pdf forms"]
LEXICAL = {"fusion": "zscore", "weights": {"bm25": 1.0, "dense": 1.0, "body_bm25": 0.0}}


def _tops(library: Path, encoder, queries: list[str], **config) -> list[str]:
    from router import Router
    from router.config import RouterConfig

    router = Router.from_skills(library, "agentskills", RouterConfig(route_above=0, **config), encoder=encoder,
                                index_folder=str(library.parent / "label-idx"))
    return [found[0].id for found in router.rank_many(queries, 1)]


def _labels(path: Path, queries: list[str], gold: list[str]) -> Path:
    path.write_text("".join(json.dumps({"id": f"q{i}", "query": q, "gold": [g]}) + "\n"
                            for i, (q, g) in enumerate(zip(queries, gold))), encoding="utf-8")
    return path


@pytest.fixture
def disagreeing_labels(tmp_path: Path, encoder) -> tuple[Path, Path, Path]:
    """(library, dev, held-out): dev labelled with what a BM25-heavy fusion ranks first, the held-out requests with
    what the defaults rank first. Tuning on dev then picks a setting the held-out requests prove worse than the
    defaults (hit@1 1.0 there by construction), deterministically."""
    from test_cli import write_library

    library = write_library(tmp_path / "lib" / "skills")
    dev = _labels(tmp_path / "dev.jsonl", DEV_QUERIES, _tops(library, encoder, DEV_QUERIES, **LEXICAL))
    held = _labels(tmp_path / "held.jsonl", HELD_OUT_QUERIES, _tops(library, encoder, HELD_OUT_QUERIES))
    return library, dev, held


def test_row_10_tune_refuses_a_config_that_loses_on_held_out_requests(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], disagreeing_labels: tuple[Path, Path, Path]) -> None:
    library, dev, held = disagreeing_labels
    argv = ["tune", "--skills", str(library), "--queries", str(dev), "--held-out", str(held), "--folds", "2",
            "--objective", "hit@1", "--index-dir", str(tmp_path / "idx")]
    status, out, err = run(capsys, *argv)
    report = json.loads(out)
    tuned = report["check"]["tuned"]
    assert status == 1 and report["written"] is None and not (tmp_path / "skill-router.json").exists()
    assert report["check"] == {"metric": "hit@1", "on": "held-out requests", "tuned": tuned, "in_force": 1.0}
    assert tuned < 1.0 and report["config"]["weights"]["bm25"] > 0.3  # the dev labels reward BM25
    assert err == (f"tune: not writing skill-router.json: the tuned config scores hit@1 {tuned:.3f} on the held-out "
                   "requests, the config in force (the defaults) 1.000; keep it, or pass --force to write the tuned "
                   "one anyway\n")

    status, out, err = run(capsys, *argv, "--force")
    assert status == 0 and json.loads(out)["written"] == "skill-router.json"
    assert err == (f"tune: wrote skill-router.json although it scores lower (--force): hit@1 {tuned:.3f} on the "
                   "held-out requests, the config in force (the defaults) 1.000\n")

    # Every later command that picks the file up from the working folder says so, once.
    from router.config import RouterConfig, config_changes

    summary = config_changes(RouterConfig.load(tmp_path / "skill-router.json"))
    status, out, err = run(capsys, "route", "will it rain tomorrow", "--json", "--skills", str(library),
                           "--index-dir", str(tmp_path / "idx"))
    assert status == 0 and err == f"using ./skill-router.json: {summary}\n"
    assert summary.startswith("weights bm25 ")
    # and now the tuned file is the config in force: the next tune compares with it, and says where it came from
    status, _, err = run(capsys, *argv)
    assert err.splitlines()[0] == f"using ./skill-router.json: {summary}"
    assert "the config in force (./skill-router.json)" in err.splitlines()[1]


def test_row_10_tune_compares_on_held_out_folds_without_a_held_out_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], disagreeing_labels: tuple[Path, Path, Path]) -> None:
    library, dev, held = disagreeing_labels
    both = tmp_path / "both.jsonl"  # the held-out requests with their default-ranked labels join the dev file
    both.write_text(dev.read_text() + held.read_text().replace('"id": "q', '"id": "h'), encoding="utf-8")
    status, out, err = run(capsys, "tune", "--skills", str(library), "--queries", str(both), "--folds", "3",
                           "--objective", "hit@1", "--index-dir", str(tmp_path / "idx"))
    check = json.loads(out)["check"]
    assert check["on"] == "held-out folds" and 0 <= check["tuned"] <= 1 and 0 <= check["in_force"] <= 1
    written = check["tuned"] >= check["in_force"]
    assert status == (0 if written else 1) and (tmp_path / "skill-router.json").exists() == written


def test_row_10_config_changes_names_what_differs_from_the_defaults() -> None:
    from router.config import RouterConfig, config_changes

    assert config_changes(RouterConfig()) == "no change from the defaults"
    assert config_changes(RouterConfig(fusion="rrf", weights={"bm25": 0.5, "examples": 4.0}, threshold=0.9999997)) \
        == "fusion rrf, weights bm25 0.5 examples 4, threshold 0.9999997"


def test_row_10_a_config_named_with_config_is_not_announced(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from router.config import RouterConfig
    from test_cli import write_library

    library = write_library(tmp_path / "lib" / "skills", {"go-code-review": "Review Go code.",
                                                          "haiku-writer": "Write a haiku."})
    RouterConfig(k=1).save(tmp_path / "skill-router.json")
    assert run(capsys, "prompt", "review my Go code", "--skills", str(library))[2] == \
        "using ./skill-router.json: k 1\n"
    assert run(capsys, "prompt", "review my Go code", "--skills", str(library), "--config", "skill-router.json")[2] \
        == ""


def test_row_10_a_threshold_that_abstains_on_most_held_out_requests_is_never_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import re

    import numpy as np

    from cli_support import as_routed_cosines
    from test_cli import LIBRARY, write_jsonl, write_library

    library = write_library(tmp_path / "lib" / "skills")
    # Dev requests that are the descriptions themselves (confidence 1.0, as a request learned from the same file
    # would be): the F1-best threshold sits just below 1 and abstains on every real request.
    dev = write_jsonl(tmp_path / "dev.jsonl", [{"id": f"d{i}", "query": description, "gold": [name]}
                                               for i, (name, description) in enumerate(LIBRARY.items())] +
                      [{"id": f"n{i}", "query": q, "gold": []} for i, q in enumerate(
                          ["the weather and the code", "a poem about docker", "clean the kitchen"])])
    held = write_jsonl(tmp_path / "held.jsonl", [{"id": f"h{i}", "query": q, "gold": [g]} for i, (q, g) in enumerate(
        [("umbrella?", "current-weather"), ("arr", "pirate-speak"), ("pods", "kubernetes-debugging"),
         ("cookies for 12", "recipe-scaling")])])
    status, out, err = run(capsys, "tune", "--skills", str(library), "--queries", str(dev), "--held-out", str(held),
                           "--folds", "3", "--force", "--index-dir", str(tmp_path / "idx"))
    report = json.loads(out)
    assert status == 0 and report["config"]["threshold"] is None
    from router.config import RouterConfig

    assert RouterConfig.load(tmp_path / "skill-router.json").threshold is None
    assert not any(key.startswith(("abstention", "false_abstention")) for key in report["held_out"])
    note = err.splitlines()[0]
    # The threshold is one of the dev requests' confidences: a description's cosine with itself, as routing embeds
    # the request and the library embeds the description.
    fitted = re.fullmatch(r"tune: dropped the fitted abstention threshold (0\.\d+): it abstains on 100% of the "
                          r"held-out requests that have a gold skill \(more than 50%\); the config keeps no threshold",
                          note)
    assert fitted, note
    own = as_routed_cosines(list(LIBRARY.values()))
    assert np.abs(own - float(fitted.group(1))).min() < 1e-6, (note, own)
    assert report["notes"] == [note.removeprefix("tune: ")]


def test_row_10_dev_requests_learned_as_examples_are_scored_without_them(tmp_path: Path, encoder) -> None:
    from router import Router
    from router.config import RouterConfig
    from router.evaluation.labels import Request
    from router.tune import tune
    from test_cli import REQUESTS, write_library

    library = write_library(tmp_path / "skills")
    router = Router.from_skills(library, "agentskills", RouterConfig(route_above=0), encoder=encoder,
                                index_folder=str(tmp_path / "idx"))
    requests = [Request(i, q, tuple(g)) for i, q, g in REQUESTS]
    learned = router.with_examples({g[0]: [q] for _, q, g in REQUESTS if g})  # `learn --queries` on the same file
    plain, after_learn = tune(router, requests, folds=4), tune(learned, requests, folds=4)
    # Scored against themselves, every dev request had a confidence of 1.0 and the threshold sat just below it.
    assert after_learn.grid == plain.grid and after_learn.config.threshold == plain.config.threshold < 0.9
    assert after_learn.notes == ("18 example requests of the library are dev requests themselves (learned from "
                                 "this file?): the dev requests are scored without them",)


def test_every_user_file_fails_in_one_line_naming_it(tmp_path: Path) -> None:
    """files.read_user_text: a missing file, a folder and a file that is not UTF-8, as each reader says it."""
    from router.config import RouterConfig
    from router.errors import CatalogError, ConfigError
    from router.files import read_user_text

    bad = tmp_path / "bad.json"
    bad.write_bytes(b"{\xff}")
    with pytest.raises(ConfigError, match=f"^config file '{tmp_path}/bad.json' cannot be read: not UTF-8 "
                                          r"\(invalid start byte at byte 1\); save it as UTF-8 JSON$"):
        RouterConfig.load(bad)
    with pytest.raises(ConfigError, match=f"^config file '{tmp_path}/none.json' does not exist: run 'skill-router "
                                          "tune' to write one, or drop --config$"):
        RouterConfig.load(tmp_path / "none.json")
    with pytest.raises(CatalogError, match=f"^requests file '{tmp_path}' cannot be read: "):
        read_user_text(tmp_path, "requests file", CatalogError)
    with pytest.raises(CatalogError, match=f"^requests file '{tmp_path}/gone' cannot be read: No such file or "
                                           "directory$"):
        read_user_text(tmp_path / "gone", "requests file", CatalogError)
