"""The ``skill-router`` command end to end: every fixture is a real folder of SKILL.md files in tmp_path.

Commands run in-process through :func:`router.cli.main` (the embedding model is cached per process, so it loads
once for the whole file); output is captured with capsys.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import write_skill
from cli_support import as_routed_cosines, run
from router.cli import main
from router.profiles.agentskills import INSTRUCTIONS
from router.profiles.genkit import FOOTER, HEADER
from router.profiles.unreal import PREAMBLE

BUNDLED = Path(__file__).resolve().parent.parent / "skills"

LIBRARY = {
    "current-weather": "Report the weather conditions right now at a place, temperature, wind, humidity and rain "
                       "from live observations.",
    "weather-forecast": "Forecast the weather for the coming days at a place, tomorrow's temperature, chance of "
                        "rain and wind.",
    "go-code-review": "Review Go source code for bugs, goroutine leaks, error handling and idiomatic style.",
    "python-code-review": "Review Python code for bugs, type hints, exceptions and PEP 8 style.",
    "sql-query-optimization": "Speed up slow SQL queries with indexes, EXPLAIN plans and rewritten joins.",
    "pirate-speak": "Rewrite text in the voice of a pirate, arr matey, with nautical slang.",
    "haiku-writer": "Write a haiku poem of three lines with five, seven and five syllables.",
    "pdf-form-filling": "Fill in the fields of a PDF form and flatten the filled PDF document.",
    "git-commit-messages": "Write clear git commit messages with a short summary line and a body.",
    "dockerfile-hardening": "Harden a Dockerfile with a non-root user, pinned base image, multi-stage build, smaller "
                            "container images.",
    "timezone-conversion": "Convert a date and time between time zones, handling daylight saving time.",
    "regex-builder": "Build and explain a regular expression that matches a text pattern.",
    "resume-tailoring": "Tailor a resume or CV to a job posting, highlighting matching experience.",
    "meeting-minutes": "Turn a meeting transcript into formal minutes with attendees, decisions and action items.",
    "csv-data-cleaning": "Clean a messy CSV file, fix encodings, drop duplicate rows, normalise dates and "
                         "missing values.",
    "kubernetes-debugging": "Debug failing Kubernetes pods, CrashLoopBackOff, pending pods, kubectl logs and "
                            "events.",
    "tls-certificate-check": "Check a TLS certificate chain for expiry, hostname mismatch and weak ciphers.",
    "recipe-scaling": "Scale a cooking recipe up or down for more or fewer servings and convert kitchen units.",
}

REQUESTS = [
    ("r01", "is it raining in Paris right now?", ["current-weather"]),
    ("r02", "what will the weather be like tomorrow in Lyon", ["weather-forecast"]),
    ("r03", "please review my Go code for goroutine leaks", ["go-code-review"]),
    ("r04", "check my python function for bugs and missing type hints", ["python-code-review"]),
    ("r05", "this SQL query is slow, which index should I add?", ["sql-query-optimization"]),
    ("r06", "say this like a pirate would", ["pirate-speak"]),
    ("r07", "write a haiku about autumn leaves", ["haiku-writer"]),
    ("r08", "fill in this PDF form for me", ["pdf-form-filling"]),
    ("r09", "write a commit message for this diff", ["git-commit-messages"]),
    ("r10", "make my Dockerfile run as a non-root user", ["dockerfile-hardening"]),
    ("r11", "what time is 3pm Tokyo in New York?", ["timezone-conversion"]),
    ("r12", "regular expression to match an email address", ["regex-builder"]),
    ("r13", "adapt my CV for this job posting", ["resume-tailoring"]),
    ("r14", "turn this meeting transcript into minutes and a haiku", ["meeting-minutes", "haiku-writer"]),
    ("r15", "my CSV file has duplicate rows and broken dates", ["csv-data-cleaning"]),
    ("r16", "my kubernetes pod is stuck in CrashLoopBackOff", ["kubernetes-debugging"]),
    ("r17", "is the TLS certificate of my site about to expire?", ["tls-certificate-check"]),
    ("r18", "double this cookie recipe for twelve servings", ["recipe-scaling"]),
    ("r19", "who won the football match last night?", []),
    ("r20", "tell me a joke about cats", []),
]


# -- fixtures and helpers ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    """Encode on one thread: on a busy machine torch's default thread pool makes each single-request encode take
    a second where one thread takes milliseconds, and the results are the same."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(autouse=True)
def _isolated_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No skill-router.json from the working folder may leak into a test."""
    monkeypatch.chdir(tmp_path)


def write_library(root: Path, skills: dict[str, str] = LIBRARY) -> Path:
    for name, description in skills.items():
        write_skill(root, name, name=name, description=description)
    return root


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def labelled(path: Path, requests=REQUESTS) -> Path:
    return write_jsonl(path, [{"id": i, "query": q, "gold": g} for i, q, g in requests])


@pytest.fixture
def library(tmp_path: Path) -> Path:
    return write_library(tmp_path / "lib" / "skills")


def run_exit(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """For argparse errors, which raise SystemExit rather than return."""
    with pytest.raises(SystemExit) as info:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(info.value.code), out, err


def one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


# -- prompt: the exact catalogue each harness renders --------------------------------------------------------------
REF_NAME = "go-review"
REF_DESCRIPTION = 'Review <Go> & "tests"'


def test_prompt_unreal_reference_case_is_exact(tmp_path: Path, capsys) -> None:
    skills = tmp_path / "skills"
    write_skill(skills, "reviewer's", name=REF_NAME, description=REF_DESCRIPTION)
    status, out, err = run(capsys, "prompt", "--profile", "unreal", "--skills", str(skills))
    assert (status, err) == (0, "")
    preamble = ("The following skills provide specialized instructions for specific tasks.\n"
                "Use SkillUse to load a skill's file when the task matches its description.\n"
                "When a skill file references a relative path, resolve it against the skill directory (parent of "
                "SKILL.md / dirname of the path) and use that absolute path in tool calls.")
    assert preamble == PREAMBLE
    expected = (preamble + "\n\n<available_skills><skill><name>go-review</name><description>Review &lt;Go&gt; &amp; "
                "&#34;tests&#34;</description><location>" + str(tmp_path) + "/skills/reviewer&#39;s/SKILL.md"
                "</location></skill></available_skills>")
    assert out == expected


def test_prompt_genkit_block_is_exact(tmp_path: Path, capsys) -> None:
    skills = tmp_path / "skills"
    write_skill(skills, "reviewer's", name=REF_NAME, description=REF_DESCRIPTION)
    write_skill(skills, "a-first", name="ignored-name", description="  Comes first by folder name.  ")
    status, out, _ = run(capsys, "prompt", "--profile", "genkit", "--skills", str(skills))
    assert status == 0
    assert out == ("<skills>\n"
                   "You have access to a library of skills that serve as specialized instructions/personas.\n"
                   "Strongly prefer to use them when working on anything related to them.\n"
                   "Only use them once to load the context.\n"
                   "Here are the available skills:\n"
                   " - a-first - Comes first by folder name.\n"
                   " - reviewer's - Review <Go> & \"tests\"\n"
                   "</skills>")
    assert out.startswith(HEADER) and out.endswith(FOOTER)


def test_prompt_agentskills_block_is_exact(tmp_path: Path, capsys) -> None:
    skills = tmp_path / "skills"
    write_skill(skills, "go-review", name=REF_NAME, description=REF_DESCRIPTION)
    status, out, _ = run(capsys, "prompt", "--profile", "agentskills", "--skills", str(skills))
    assert status == 0
    assert out == (INSTRUCTIONS + "\n\n<available_skills>\n  <skill>\n    <name>go-review</name>\n"
                   "    <description>Review &lt;Go&gt; &amp; \"tests\"</description>\n"
                   f"    <location>{tmp_path}/skills/go-review/SKILL.md</location>\n"
                   "  </skill>\n</available_skills>")
    assert INSTRUCTIONS.startswith("The following skills provide specialized instructions for specific tasks.\n")


@pytest.mark.parametrize("profile", ["unreal", "genkit", "agentskills"])
def test_prompt_empty_library_says_so(tmp_path: Path, capsys, profile: str) -> None:
    (tmp_path / "skills").mkdir()
    status, out, err = run(capsys, "prompt", "--profile", profile, "--skills", str(tmp_path / "skills"))
    assert (status, out) == (2, "") and err.startswith(f"skill-router prompt: error: no skills found in {tmp_path}")


def test_prompt_json_whole_library(tmp_path: Path, capsys) -> None:
    skills = tmp_path / "skills"
    write_skill(skills, "reviewer's", name=REF_NAME, description=REF_DESCRIPTION)
    status, out, _ = run(capsys, "prompt", "--profile", "unreal", "--skills", str(skills), "--json")
    assert status == 0
    data = json.loads(out)
    assert data["shown"] == ["go-review"]
    assert data["block"].startswith(PREAMBLE + "\n\n<available_skills>")
    assert data["tool"]["function"]["name"] == "SkillUse"


# -- prompt with a request: routing a library over the whole-library limit -----------------------------------------
def test_prompt_query_shows_only_k_skills_with_the_right_one(library: Path, capsys) -> None:
    status, out, _ = run(capsys, "prompt", "is it raining in Paris right now?", "--profile", "genkit",
                         "--skills", str(library), "-k", "3")
    assert status == 0
    entries = [line for line in out.splitlines() if line.startswith(" - ")]
    assert len(entries) == 3
    assert " - current-weather - " + LIBRARY["current-weather"] in entries
    assert out.startswith(HEADER) and out.endswith(FOOTER)


def test_prompt_query_json_pin_and_exclude(library: Path, capsys) -> None:
    query = "is it raining in Paris right now?"
    base = ["prompt", query, "--skills", str(library), "-k", "2", "--json"]
    _, out, _ = run(capsys, *base)
    plain = json.loads(out)
    assert len(plain["shown"]) == 2 and "current-weather" in plain["shown"]
    assert plain["tool"]["function"]["name"] == "activate_skill"

    _, out, _ = run(capsys, *base, "--pin", "haiku-writer")
    pinned = json.loads(out)
    assert set(pinned["shown"]) == set(plain["shown"]) | {"haiku-writer"}
    assert "<name>haiku-writer</name>" in pinned["block"]

    _, out, _ = run(capsys, *base, "--exclude", "current-weather")
    excluded = json.loads(out)
    assert len(excluded["shown"]) == 2 and "current-weather" not in excluded["shown"]
    assert "current-weather" not in excluded["block"]


def test_prompt_exclude_without_query_drops_the_skill(tmp_path: Path, capsys) -> None:
    skills = write_library(tmp_path / "skills", {"alpha": "First skill.", "beta": "Second skill."})
    status, out, _ = run(capsys, "prompt", "--skills", str(skills), "--exclude", "alpha", "--json")
    assert status == 0
    assert json.loads(out)["shown"] == ["beta"]


# -- use ------------------------------------------------------------------------------------------------------------
def test_use_genkit_and_unreal(tmp_path: Path, capsys) -> None:
    skills = tmp_path / "skills"
    path = write_skill(skills, "reviewer's", name=REF_NAME, description=REF_DESCRIPTION,
                       body="Raw body\r\nwith CRLF.\n")
    raw = path.read_bytes().decode("utf-8")

    status, out, err = run(capsys, "use", "nope", "--profile", "genkit", "--skills", str(skills))
    assert (status, out, err) == (1, "", 'skill "nope" not found\n')

    status, out, err = run(capsys, "use", "reviewer's", "--profile", "genkit", "--skills", str(skills))
    assert (status, out, err) == (0, raw, "")

    status, out, err = run(capsys, "use", "nope", "--profile", "unreal", "--skills", str(skills))
    assert (status, out, err) == (0, 'skill "nope" is not registered', "")

    status, out, err = run(capsys, "use", "go-review", "--profile", "unreal", "--skills", str(skills))
    assert (status, out, err) == (0, raw, "")


def test_use_agentskills_wraps_the_body(tmp_path: Path, capsys) -> None:
    skills = tmp_path / "skills"
    write_skill(skills, "go-review", name=REF_NAME, description=REF_DESCRIPTION, body="Do the review.\n")
    status, out, _ = run(capsys, "use", "go-review", "--skills", str(skills))
    assert status == 0
    assert out.startswith('<skill_content name="go-review">\n')
    assert "Do the review." in out and f"Skill directory: {skills / 'go-review'}" in out


# -- list and lint ---------------------------------------------------------------------------------------------------
def test_list_json(tmp_path: Path, capsys) -> None:
    skills = write_library(tmp_path / "skills", {"beta": "Second.", "alpha": "First."})
    status, out, _ = run(capsys, "list", "--skills", str(skills), "--json")
    assert status == 0
    assert json.loads(out) == [
        {"id": "alpha", "name": "alpha", "description": "First.", "path": str(skills / "alpha" / "SKILL.md")},
        {"id": "beta", "name": "beta", "description": "Second.", "path": str(skills / "beta" / "SKILL.md")},
    ]


def test_lint_clean_then_with_an_error(tmp_path: Path, capsys) -> None:
    skills = write_library(tmp_path / "skills", {"alpha": "First skill.", "beta": "Second skill."})
    status, out, _ = run(capsys, "lint", "--skills", str(skills))
    assert status == 0
    assert out.splitlines()[-1] == "2 SKILL.md checked: 0 errors, 0 warnings"

    write_skill(skills, "gamma", name="Gamma", description="Third skill.")
    status, out, _ = run(capsys, "lint", "--skills", str(skills))
    assert status == 1
    bad = str(skills / "gamma" / "SKILL.md")
    assert f"{bad}: error: Skill name 'Gamma' must be lowercase" in out.splitlines()
    assert out.splitlines()[-1].startswith("3 SKILL.md checked: ")

    status, out, _ = run(capsys, "lint", "--skills", str(skills), "--json")
    assert status == 1
    report = json.loads(out)
    assert report["schema"] == "skill-router.lint/1" and report["files"] == 3 and report["errors"] >= 1
    assert {"path": bad, "level": "error", "message": "Skill name 'Gamma' must be lowercase"} in report["findings"]


def test_list_json_to_a_closed_pipe_exits_quietly(tmp_path: Path) -> None:
    skills = write_library(tmp_path / "skills", {f"skill-{i:03d}": f"Skill number {i}, described at some length so "
                                                 "that the listing overflows a pipe buffer." for i in range(600)})
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    with subprocess.Popen([sys.executable, "-m", "router.cli", "list", "--skills", str(skills), "--json"],
                          cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.read(2) == b"[\n"
        process.stdout.close()  # like `| head -1`
        err = process.stderr.read()
        status = process.wait(timeout=60)
    assert (status, err) == (0, b"")


def test_text_tables_print_skill_text_and_requests_literally(tmp_path: Path, capsys) -> None:
    skills = write_library(tmp_path / "skills", {"brackets": "Explain [bold]markup[/bold] and a stray [/x] tag.",
                                                 "plain": "Nothing special here."})
    status, out, _ = run(capsys, "list", "--skills", str(skills))
    assert status == 0
    assert "[bold]markup[/bold]" in out and "[/x]" in out
    status, out, _ = run(capsys, "route", "what does [/x] mean in [bold]markup?", "--skills", str(skills))
    assert status == 0
    assert "for: what does [/x] mean in [bold]markup?" in out
    assert out.index("brackets") < out.index("plain")


# -- route, index, learn ---------------------------------------------------------------------------------------------
def test_route_json_structure_and_top_skill(library: Path, capsys) -> None:
    status, out, _ = run(capsys, "route", "please review my Go code for goroutine leaks", "--skills", str(library),
                         "--json", "-k", "4")
    assert status == 0
    matches = json.loads(out)
    assert [m["rank"] for m in matches] == [1, 2, 3, 4]
    assert matches[0]["id"] == matches[0]["name"] == "go-code-review"
    for m in matches:
        assert set(m) == {"rank", "id", "name", "score", "scores", "ranks", "reason"}
        assert set(m["scores"]) == set(m["ranks"]) and {"bm25", "dense"} <= set(m["scores"])
    assert [m["score"] for m in matches] == sorted((m["score"] for m in matches), reverse=True)


def test_route_and_prompt_read_the_request_from_stdin(library: Path, capsys, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("please review my Go code for goroutine leaks\n"))
    status, out, _ = run(capsys, "route", "-", "--skills", str(library), "--json", "-k", "1")
    assert status == 0 and [m["id"] for m in json.loads(out)] == ["go-code-review"]
    monkeypatch.setattr("sys.stdin", io.StringIO("   \n"))
    status, out, err = run(capsys, "prompt", "-", "--skills", str(library))
    assert (status, out) == (2, "") and "the request is empty" in one_error_line(err)


def test_route_small_library_still_ranks(tmp_path: Path, capsys) -> None:
    skills = write_library(tmp_path / "skills", {k: LIBRARY[k] for k in ("haiku-writer", "regex-builder",
                                                                         "pirate-speak")})
    status, out, _ = run(capsys, "route", "write a haiku about autumn", "--skills", str(skills), "--json")
    assert status == 0
    assert [m["id"] for m in json.loads(out)][0] == "haiku-writer"


def test_route_queries_file_one_line_per_row(library: Path, tmp_path: Path, capsys) -> None:
    queries = write_jsonl(tmp_path / "q.jsonl", [{"id": "a", "query": "write a haiku about autumn leaves"},
                                                 {"id": "b", "query": "my kubernetes pod is stuck in CrashLoopBackOff"},
                                                 {"query": "fill in this PDF form\u2028for me"}])
    assert "\u2028" not in queries.read_text(encoding="utf-8")  # json.dumps escapes it; write it raw
    queries.write_text(queries.read_text(encoding="utf-8").replace("\\u2028", "\u2028"), encoding="utf-8")
    status, out, _ = run(capsys, "route", "--queries", str(queries), "--skills", str(library), "--json", "-k", "3")
    assert status == 0
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["id"] for line in lines] == ["a", "b", "3"]
    for line in lines:
        assert set(line) == {"id", "ranking"} and len(line["ranking"]) == 3
        assert all(set(r) == {"id", "score"} for r in line["ranking"])
    assert [line["ranking"][0]["id"] for line in lines] == ["haiku-writer", "kubernetes-debugging", "pdf-form-filling"]


def test_route_over_a_catalog(tmp_path: Path, capsys) -> None:
    catalog = write_jsonl(tmp_path / "tools.jsonl", [{"id": f"t-{name}", "name": name, "description": text}
                                                     for name, text in LIBRARY.items()])
    status, out, _ = run(capsys, "route", "convert 3pm Tokyo time to New York time", "--catalog", str(catalog),
                         "--json", "-k", "2")
    assert status == 0
    assert json.loads(out)[0]["id"] == "t-timezone-conversion"
    status, out, _ = run(capsys, "prompt", "convert 3pm Tokyo time to New York time", "--catalog", str(catalog),
                         "--json", "-k", "2")
    assert status == 0 and "timezone-conversion" in json.loads(out)["shown"]


def test_index_twice_embeds_nothing_the_second_time(library: Path, tmp_path: Path, capsys) -> None:
    index = tmp_path / "index"
    status, out, _ = run(capsys, "index", "--skills", str(library), "--index-dir", str(index), "--json")
    first = json.loads(out)
    assert status == 0
    # every description, once, and the bodies' one head passage ("Steps.", the same body for every skill)
    assert first["skills"] == len(LIBRARY) and first["embedded"] == len(LIBRARY) + 1 and first["index"] == str(index)
    assert (index / "manifest.json").is_file()
    status, out, _ = run(capsys, "index", "--skills", str(library), "--index-dir", str(index), "--json")
    assert status == 0
    assert json.loads(out)["embedded"] == 0


def test_index_that_cannot_be_saved_exits_2(library: Path, tmp_path: Path, capsys) -> None:
    afile = tmp_path / "afile"
    afile.write_text("a regular file, not a folder")
    status, out, err = run(capsys, "index", "--skills", str(library), "--index-dir", str(afile))
    assert status == 2 and out == ""
    assert err.splitlines()[-1] == (f"skill-router index: error: the index could not be saved to {afile}: choose a "
                                    "writable folder with --index-dir")


def test_corrupt_index_is_rebuilt_with_a_note(library: Path, tmp_path: Path, capsys) -> None:
    index = tmp_path / "index"
    assert run(capsys, "index", "--skills", str(library), "--index-dir", str(index))[0] == 0
    generation = json.loads((index / "manifest.json").read_text())["generation"]
    vectors = index / generation / "vectors.npy"
    vectors.write_bytes(vectors.read_bytes()[:200])
    status, out, err = run(capsys, "route", "write a haiku about autumn leaves", "--skills", str(library),
                           "--index-dir", str(index), "--json")
    assert status == 0
    assert json.loads(out)[0]["id"] == "haiku-writer"
    assert "note:" in err and "rebuilding" in err and "vectors.npy" in err
    status, _, err = run(capsys, "route", "write a haiku", "--skills", str(library), "--index-dir", str(index),
                         "--json")
    assert status == 0 and "rebuilding" not in err  # the rebuilt index was saved


def test_learn_then_route(library: Path, tmp_path: Path, capsys) -> None:
    index = tmp_path / "index"
    request = "zorblax the quarterly frobnication widget"
    before = json.loads(run(capsys, "route", request, "--skills", str(library), "--index-dir", str(index),
                            "--json")[1])
    assert before[0]["id"] != "recipe-scaling"
    labels = write_jsonl(tmp_path / "labelled.jsonl", [{"id": "l1", "query": request, "gold": ["recipe-scaling"]},
                                                      {"id": "l2", "query": "nothing applies", "gold": []}])
    status, out, _ = run(capsys, "learn", "--queries", str(labels), "--skills", str(library), "--index-dir",
                         str(index))
    assert status == 0
    assert out == f"learned 1 new example requests for 1 skills -> {index}\n"
    status, out, _ = run(capsys, "learn", "--queries", str(labels), "--skills", str(library), "--index-dir",
                         str(index))
    assert (status, out) == (0, f"learned 0 new example requests for 1 skills -> {index}\n")
    after = json.loads(run(capsys, "route", request, "--skills", str(library), "--index-dir", str(index),
                           "--json")[1])
    assert after[0]["id"] == "recipe-scaling"
    assert "examples" in after[0]["scores"]


# -- errors: one line on stderr, exit status 2 -----------------------------------------------------------------------
def test_empty_query_is_an_error(library: Path, capsys) -> None:
    for command in ("route", "prompt"):
        status, out, err = run(capsys, command, "", "--skills", str(library))
        assert (status, out) == (2, "")
        assert one_error_line(err).startswith(f"skill-router {command}: error: the request is empty")


def test_unknown_profile_names_the_choices(library: Path, capsys) -> None:
    status, out, err = run_exit(capsys, "list", "--profile", "nosuch", "--skills", str(library))
    assert (status, out) == (2, "")
    last = err.splitlines()[-1]
    assert "nosuch" in last and all(name in last for name in ("agentskills", "genkit", "unreal"))


def test_missing_skills_folder_names_it(tmp_path: Path, capsys) -> None:
    missing = tmp_path / "no-such-folder"
    for command in (["list"], ["prompt"], ["route", "hello"], ["lint"], ["index"]):
        status, out, err = run(capsys, *command, "--skills", str(missing))
        assert (status, out) == (2, ""), command
        assert str(missing) in one_error_line(err), command


def test_bad_catalog_line(tmp_path: Path, capsys) -> None:
    catalog = tmp_path / "tools.jsonl"
    catalog.write_text('{"id": "a", "name": "a", "description": "A."}\n{not json\n', encoding="utf-8")
    for command in (["list"], ["route", "hello"]):
        status, out, err = run(capsys, *command, "--catalog", str(catalog))
        assert (status, out) == (2, "")
        assert f"{catalog}:2: not valid JSON" in one_error_line(err)


def test_skills_and_catalog_together(library: Path, tmp_path: Path, capsys) -> None:
    catalog = write_jsonl(tmp_path / "tools.jsonl", [{"id": "a", "name": "a", "description": "A."}])
    for command in (["list"], ["route", "hello"], ["prompt"]):
        status, out, err = run(capsys, *command, "--skills", str(library), "--catalog", str(catalog))
        assert (status, out) == (2, ""), command
        assert "give either --skills or --catalog, not both" in one_error_line(err)


def test_unknown_pin(library: Path, capsys) -> None:
    for command in (["prompt", "hello"], ["route", "hello"], ["prompt"]):
        status, out, err = run(capsys, *command, "--skills", str(library), "--pin", "ghost")
        assert (status, out) == (2, ""), command
        assert "'ghost'" in one_error_line(err)


def test_bad_queries_file_and_k(library: Path, tmp_path: Path, capsys) -> None:
    bad = tmp_path / "q.jsonl"
    bad.write_text('{"id": "a", "query": "ok"}\n{"id": "b"}\n', encoding="utf-8")
    status, _, err = run(capsys, "route", "--queries", str(bad), "--skills", str(library))
    assert status == 2 and f"{bad}:2:" in one_error_line(err)
    latin = tmp_path / "latin1.jsonl"
    latin.write_bytes('{"id": "a", "query": "caf\u00e9"}\n'.encode("latin-1"))
    status, _, err = run(capsys, "route", "--queries", str(latin), "--skills", str(library))
    assert status == 2 and f"'{latin}' cannot be read: not UTF-8" in one_error_line(err)
    status, _, err = run_exit(capsys, "route", "hello", "-k", "0", "--skills", str(library))
    assert status == 2 and "k must be" in one_error_line(err)


# -- eval ------------------------------------------------------------------------------------------------------------
class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs) -> None:
        self.tags.append(tag)


def _tags(path: Path) -> list[str]:
    parser = _Tags()
    parser.feed(path.read_text(encoding="utf-8"))
    parser.close()
    return parser.tags


def test_eval_end_to_end(library: Path, tmp_path: Path, capsys) -> None:
    labels = labelled(tmp_path / "labelled.jsonl")
    out_json, out_md, out_html = tmp_path / "eval.json", tmp_path / "eval.md", tmp_path / "eval.html"
    status, out, err = run(capsys, "eval", "--queries", str(labels), "--skills", str(library), "--json",
                           str(out_json), "--markdown", str(out_md), "--html", str(out_html))
    assert status == 0, err
    assert "FAIL" not in err
    report = json.loads(out_json.read_text(encoding="utf-8"))
    assert report["schema"] == "skill-router.eval/1"
    assert report["requests"] == 20 and report["no_gold_requests"] == 2
    assert [r["name"] for r in report["retrievers"]] == ["bm25", "dense", "rrf", "default"]
    for retriever in report["retrievers"]:
        metrics = retriever["metrics"]
        for prefix in ("hit@", "recall@", "all@", "ndcg@"):
            assert any(key.startswith(prefix) for key in metrics), (prefix, sorted(metrics))
        assert "mrr" in metrics and "recall@5" in metrics
        for value in metrics.values():
            assert value is None or 0.0 <= value <= 1.0
    default = next(r for r in report["retrievers"] if r["name"] == "default")
    assert default["metrics"]["recall@5"] >= 0.8
    assert out_md.read_text(encoding="utf-8").lstrip().startswith("#")
    tags = _tags(out_html)
    assert "svg" in tags and "table" in tags

    # r14 has two gold skills, so no ranking can put both in the top 1: the all@1 gate must fail.
    status, _, err = run(capsys, "eval", "--queries", str(labels), "--skills", str(library), "--fail-under",
                         "all@1=1.0", "--retrievers", "bm25")
    assert status == 1
    fails = [line for line in err.splitlines() if line.startswith("FAIL ")]
    assert len(fails) == 1 and fails[0].startswith("FAIL bm25 all@1 = 0.")

    # A bar above 1 can never be met: it is a usage error (metrics are fractions), not a failed gate.
    status, _, err = run(capsys, "eval", "--queries", str(labels), "--skills", str(library), "--fail-under",
                         "recall@5=1.01", "--retrievers", "bm25")
    assert status == 2 and "FAIL" not in err
    assert err.splitlines()[-1].startswith("skill-router eval: error: --fail-under gate 'recall@5=1.01': ")

    status, out, err = run(capsys, "eval", "--queries", str(labels), "--skills", str(library), "--fail-under",
                         "recall@5=0.0", "--retrievers", "default", "--json", "-")
    assert status == 0 and "FAIL" not in err
    to_stdout = json.loads(out)  # the table went to stderr, so stdout is the report alone
    assert [r["name"] for r in to_stdout["retrievers"]] == ["default"]
    assert "Routing evaluation" in err


def test_eval_unknown_gold_id(library: Path, tmp_path: Path, capsys) -> None:
    labels = labelled(tmp_path / "labelled.jsonl", REQUESTS[:3] + [("x1", "something", ["no-such-skill"])])
    status, out, err = run(capsys, "eval", "--queries", str(labels), "--skills", str(library))
    assert (status, out) == (2, "")
    assert "'no-such-skill'" in one_error_line(err)


def test_eval_unknown_retriever(library: Path, tmp_path: Path, capsys) -> None:
    labels = labelled(tmp_path / "labelled.jsonl")
    status, _, err = run(capsys, "eval", "--queries", str(labels), "--skills", str(library), "--retrievers",
                         "bm25,magic")
    assert status == 2 and "magic" in one_error_line(err)


# -- overlap ---------------------------------------------------------------------------------------------------------
def test_overlap_end_to_end(library: Path, tmp_path: Path, capsys) -> None:
    write_skill(library, "meeting-notes", name="meeting-notes", description=
                "Turn a meeting transcript into formal minutes listing attendees, decisions and action items.")
    index = tmp_path / "index"
    status, out, _ = run(capsys, "overlap", "--skills", str(library), "--index-dir", str(index), "--json", "-",
                         "--top", "5")
    assert status == 0
    report = json.loads(out)
    assert report["schema"] == "skill-router.overlap/1" and report["skills"] == len(LIBRARY) + 1
    assert {report["pairs"][0]["a"], report["pairs"][0]["b"]} == {"meeting-minutes", "meeting-notes"}
    assert len(report["pairs"]) == 5

    html = tmp_path / "overlap.html"
    status, out, err = run(capsys, "overlap", "--skills", str(library), "--index-dir", str(index), "--fail-above",
                           "0.5", "--html", str(html))
    assert status == 1
    assert out.startswith("# Skill description overlap")
    assert any(line.startswith("FAIL overlap ") and "meeting-minutes" in line for line in err.splitlines())
    assert "svg" in _tags(html)

    status, _, err = run(capsys, "overlap", "--skills", str(library), "--index-dir", str(index), "--fail-above",
                         "0.999")
    assert status == 0 and "FAIL" not in err


def test_overlap_of_the_bundled_library(tmp_path: Path, capsys) -> None:
    status, out, _ = run(capsys, "overlap", "--skills", str(BUNDLED), "--index-dir", str(tmp_path / "index"),
                         "--json", "-", "--top", "5")
    assert status == 0
    top = [frozenset((p["a"], p["b"])) for p in json.loads(out)["pairs"]]
    assert len(top) == 5
    assert frozenset(("current-weather", "weather-forecast")) in top
    assert frozenset(("meeting-action-items", "meeting-minutes")) in top


def test_a_model_that_cannot_be_loaded_is_one_error_line(tmp_path: Path, capsys) -> None:
    skills = tmp_path / "skills"
    for i in range(16):
        (skills / f"skill-{i}").mkdir(parents=True)
        (skills / f"skill-{i}" / "SKILL.md").write_text(f"---\nname: skill-{i}\ndescription: Skill number {i}.\n---\n")
    code = main(["route", "number three", "--skills", str(skills), "--model", str(tmp_path / "no-model"),
                 "--index-dir", str(tmp_path / "idx")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith("skill-router route: error: cannot load embedding model ")
    assert str(tmp_path / "no-model") in err[0]


def test_tune_writes_a_config_that_route_reads(tmp_path: Path, capsys) -> None:
    from router.config import RouterConfig

    bundled = Path(__file__).resolve().parents[1] / "skills"
    dev = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "bundled-dev.jsonl"
    out = tmp_path / "tuned.json"
    # The defaults were chosen on this very dev file, so the tuned config does not beat them: --force writes it.
    code = main(["tune", "--skills", str(bundled), "--queries", str(dev), "--folds", "3", "-o", str(out),
                 "--index-dir", str(tmp_path / "idx"), "--force"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["written"] == str(out)
    tuned = RouterConfig.load(out)
    assert tuned.route_above == RouterConfig().route_above  # tuning routes everything; the config keeps the rule
    assert tuned.threshold is not None and 0 < tuned.threshold < 1  # the dev file has no-skill requests
    assert 0 < report["dev"]["mrr"] <= 1
    code = main(["route", "will it rain tomorrow in Lyon", "--skills", str(bundled), "--config", str(out), "--json",
                 "--index-dir", str(tmp_path / "idx")])
    assert code == 0 and json.loads(capsys.readouterr().out)[0]["id"] == "weather-forecast"


# -- learned examples belong to the library, not to one profile ------------------------------------------------------

def test_examples_learned_under_one_profile_route_under_another_and_eval_warns(library: Path, tmp_path: Path,
                                                                             capsys) -> None:
    request = "zorblax the quarterly frobnication widget"
    labels = write_jsonl(tmp_path / "labelled.jsonl", [{"id": "l1", "query": request, "gold": ["recipe-scaling"]}])
    status, out, _ = run(capsys, "learn", "--queries", str(labels), "--skills", str(library), "--profile", "genkit")
    learned = library.parent / ".skill-router-index"
    folders = sorted(p.name for p in learned.iterdir() if (p / "learned-examples.jsonl").exists())
    assert status == 0 and len(folders) == 1 and folders[0].startswith("skills-learned-")
    assert out == f"learned 1 new example requests for 1 skills -> {learned / folders[0]}\n"
    ranked = json.loads(run(capsys, "route", request, "--skills", str(library), "--profile", "claude-code",
                            "--json")[1])
    # The learned example is embedded as a library's texts are, the request as requests are: the example's score is
    # the cosine of those two vectors.
    expected = float(as_routed_cosines([request])[0])
    assert expected > 0.95
    assert ranked[0]["id"] == "recipe-scaling" and ranked[0]["scores"]["examples"] == pytest.approx(expected, abs=1e-5)
    status, _, err = run(capsys, "eval", "--queries", str(labels), "--skills", str(library), "--profile",
                         "agentskills", "--retrievers", "default", "--json", str(tmp_path / "e.json"))
    assert status == 0
    assert (f"warning: 1 of 1 requests are also learned examples of their skills (skill-router learn, in "
            f"{learned / folders[0]}): the scores overstate how new requests route; evaluate on requests that were "
            "not learned\n") in err
    assert json.loads((tmp_path / "e.json").read_text())["learned_overlap"] == 1


def test_examples_learned_in_a_profile_index_folder_are_still_read(library: Path, tmp_path: Path, capsys) -> None:
    from router.learned import append_learned
    from router.store import default_index_folder

    request = "zorblax the quarterly frobnication widget"
    old = default_index_folder([str(library)], None, "genkit")  # where learn kept them before
    append_learned(old, {"recipe-scaling": [request]})
    ranked = json.loads(run(capsys, "route", request, "--skills", str(library), "--profile", "genkit", "--json")[1])
    assert ranked[0]["id"] == "recipe-scaling"
    status, _, err = run(capsys, "eval", "--queries", str(write_jsonl(tmp_path / "other.jsonl", [
        {"id": "o1", "query": "something never learned", "gold": ["recipe-scaling"]}])), "--skills", str(library),
        "--profile", "genkit", "--retrievers", "default")
    assert status == 0 and "learned examples" not in err
