"""Text, frontmatter and file reads that took the router down (issue 16, rows 1, 2, 5, 7 and 12).

Each row test is named after the row of the issue's table and was checked to fail on the code before the fix.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import write_skill
from router.cli import main
from router.errors import SkillToolError
from router.evaluation.labels import load_requests
from router.files import MAX_SKILL_FILE_BYTES, NotRegularFileError, read_bytes
from router.frontmatter import MAX_YAML_ALIAS_NODES, YAMLAliasError, load_with_nodes, safe_load
from router.learned import load_learned
from router.library import from_folders
from router.profiles import profile_names
from router.safetext import safe_name, safe_text, safe_value
from router.serve.log import read_log
from router.skill import Skill
from router.texts import MAX_INDEXED_DESCRIPTION_CHARS, dense_text, index_text, indexed_description

ROOT = Path(__file__).resolve().parent.parent
PROFILES = profile_names()


@pytest.fixture(autouse=True)
def _isolated_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def skill_text(name: str, description: str, extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n\n# {name}\n\nSteps.\n"


def library(root: Path) -> Path:
    for name, description in [("beta", "Write haiku poems."), ("gamma", "Review Go code for bugs.")]:
        write_skill(root, name, text=skill_text(name, description))
    return root


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        status = main(list(argv))
    except SystemExit as exc:
        status = int(exc.code or 0)
    out, err = capsys.readouterr()
    return status, out, err


def encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# -- the one function ---------------------------------------------------------------------------------------------
@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(), st.binary(), st.lists(st.sampled_from(["\ud800", "\udcff", "\udfff", "\ud83d", "\ude00",
                                                                    "a", "\u00e9", "\U0001f600", "\\"])).map("".join)))
def test_safe_text_and_safe_name_always_give_encodable_idempotent_text(value: str | bytes) -> None:
    for clean in (safe_text, safe_name):
        result = clean(value)
        assert isinstance(result, str) and encodable(result)
        assert json.loads(json.dumps(result)) == result
        assert json.loads(json.dumps(result, ensure_ascii=False).encode("utf-8")) == result
        assert clean(result) == result
        if isinstance(value, str) and encodable(value):
            assert result is value
    if isinstance(value, bytes):
        assert safe_name(value) == safe_name(value.decode("utf-8", "surrogateescape"))
        try:
            valid = value.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            assert safe_text(value) == safe_name(value) == valid


def test_safe_text_replacements_are_exactly_the_documented_ones() -> None:
    assert safe_text("lone \ud800 surrogate") == "lone \ufffd surrogate"
    assert safe_text("\ud83d\ude00 pair") == "\U0001f600 pair"  # a YAML "\ud83d\ude00" is one character
    assert safe_text("\ude00\ud83d") == "\ufffd\ufffd"  # the wrong order is no pair
    assert safe_text(b"caf\xe9 \xff\xfe") == "caf\ufffd \ufffd\ufffd"
    assert safe_text("caf\udce9") == "caf\ufffd"
    assert safe_name("bad\udcff") == safe_name(b"bad\xff") == "bad\\xff"
    assert safe_name("bad\ud800") == "bad\ufffd"  # not an undecodable byte: no escape to give
    value = {"k\ud800": ["a", ("\udcff",)], "n": 1}
    assert safe_value(value) == {"k\ufffd": ["a", ("\ufffd",)], "n": 1}
    same = {"a": ["b"]}
    assert safe_value(same) is same
    cycle: list[object] = ["\ud800"]
    cycle.append(cycle)
    cleaned = safe_value(cycle)
    assert cleaned[0] == "\ufffd" and cleaned[1] is cycle  # a cycle is left as it is, never walked for ever


def test_a_skill_holds_only_safe_text_and_keeps_the_os_path() -> None:
    skill = Skill(name="bad\udcff", description="d\ud800", path="/x/bad\udcff/SKILL.md", body="b\ud800",
                  metadata={"tags": ["\ud800"]}, examples=("e\ud800",))
    assert (skill.name, skill.id, skill.description, skill.body) == ("bad\\xff", "bad\\xff", "d\ufffd", "b\ufffd")
    assert skill.path == "/x/bad\\xff/SKILL.md" and skill.fs_path == "/x/bad\udcff/SKILL.md"
    assert skill.fs_directory == "/x/bad\udcff" and skill.directory == "/x/bad\\xff"
    assert dict(skill.metadata) == {"tags": ["\ufffd"]} and skill.examples == ("e\ufffd",)
    plain = Skill(name="a", description="b", path="/x/a/SKILL.md")
    assert plain.fs_path == plain.path and plain.os_path == ""


YAML_PIECES = ["\\ud800", "\\udcff", "\\udfff", "\\ud83d\\ude00", "\\ude00\\ud83d", "a", "\u00e9", " ", "x: y",
               "\\\\", "\\x41", "\\u0000"]
yaml_escaped = st.lists(st.sampled_from(YAML_PIECES), min_size=1, max_size=6).map(lambda parts: f'"{"".join(parts)}"')
folder_names = st.binary(min_size=1, max_size=6).filter(
    lambda name: b"/" not in name and b"\0" not in name and not name.startswith(b"."))


@settings(max_examples=40, deadline=None)
@given(folder=folder_names, name=yaml_escaped, description=yaml_escaped, value=yaml_escaped)
def test_any_escapes_and_folder_bytes_load_render_and_index_in_every_profile(folder: bytes, name: str,
                                                                           description: str, value: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        skills = library(Path(tmp) / "skills")
        write_skill(skills, folder, text=f"---\nname: {name}\ndescription: {description}\nmetadata: {{k: {value}}}\n"
                                    f"when_to_use: {value}\n---\n\n# {value}\n\nSteps.\n")
        for profile in PROFILES:
            loaded = from_folders([str(skills)], profile)
            every = list(loaded.registry)
            for skill in every:
                for text in (skill.name, skill.id, skill.path, skill.description, skill.body, index_text(skill),
                             dense_text(skill), json.dumps(dict(skill.metadata), ensure_ascii=False, default=str)):
                    assert encodable(text), (profile, text)
            assert encodable(loaded.profile.render(every))
            spec = loaded.profile.tool(every)
            for skill in every if spec is not None else ():
                try:
                    answer = loaded.profile.call_tool(loaded.registry, {spec.parameters["required"][0]: skill.name},
                                                      spec.name)
                except SkillToolError as exc:  # a harness may refuse a name (codex: not a $mention)
                    answer = str(exc)
                assert encodable(answer)
            assert all(encodable(note) for note in loaded.notes)
            assert all(encodable(w) for w in (loaded.registry.discovery.warnings if loaded.registry.discovery
                                               else ()))


# -- row 1: a lone surrogate from a YAML escape -------------------------------------------------------------------
@pytest.mark.model
@pytest.mark.parametrize("profile", PROFILES)
def test_row1_lone_surrogate_description_routes_in_every_profile(tmp_path: Path, capsys, profile: str) -> None:
    skills = library(tmp_path / "skills")
    write_skill(skills, "alpha", text=skill_text("alpha", '"lone \\ud800 surrogate: convert units of length"'))
    common = ("--skills", str(skills), "--profile", profile, "--index-dir", str(tmp_path / "index"))
    status, out, err = run(capsys, "index", *common)
    assert status == 0, err
    status, out, err = run(capsys, "route", "convert units of length", "--json", *common)
    assert status == 0, err
    ranked = [row["id"] for row in json.loads(out)]
    if profile == "codex":  # Codex 0.171.0 refuses the file (serde_yaml over libyaml): a parse error, no crash
        assert sorted(ranked) == ["beta", "gamma"]
        assert "found invalid Unicode character escape code at line 2 column 22" in err
        return
    assert sorted(ranked) == ["alpha", "beta", "gamma"] and ranked[0] == "alpha"
    status, out, err = run(capsys, "prompt", "convert units of length", "-k", "1", *common)
    assert status == 0 and "Traceback" not in err, err
    assert "alpha" in out and encodable(out)
    if profile != "unreal":  # the unreal harness reads the line as it is, quotes and backslash included
        assert "lone \ufffd surrogate" in out


@pytest.mark.model
def test_row1_lone_surrogates_in_a_catalogue_row_route(tmp_path: Path, capsys) -> None:
    catalog = tmp_path / "catalog.jsonl"
    rows = [{"id": "alpha", "name": "alpha", "description": "lone \ud800 surrogate: convert units of length"},
            {"id": "beta", "name": "be\udcffta", "description": "Write haiku poems."}]
    catalog.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    status, out, err = run(capsys, "route", "convert units of length", "--json", "--catalog", str(catalog),
                           "--index-dir", str(tmp_path / "index"))
    assert status == 0, err
    assert [row["id"] for row in json.loads(out)][0] == "alpha"


@pytest.mark.model
def test_row1_serve_becomes_ready_with_a_lone_surrogate_description(tmp_path: Path) -> None:
    import httpx
    from serve_support import running

    skills = library(tmp_path / "skills")
    write_skill(skills, "alpha", text=skill_text("alpha", '"lone \\ud800 surrogate: convert units of length"'))
    argv = ["--skills", str(skills), "--index-dir", str(tmp_path / "idx"), "--no-watch"]
    with running(argv, ready_timeout=60) as (url, _):  # waits for /readyz to answer 200
        with httpx.Client(base_url=url, timeout=30, trust_env=False) as client:
            alpha = client.get("/v1/skills/alpha", params={"body": "true"})
            ranked = client.post("/v1/route", json={"query": "convert units of length", "k": 1})
    assert alpha.status_code == 200
    assert alpha.json()["description"] == "lone \ufffd surrogate: convert units of length"
    assert ranked.status_code == 200 and ranked.json()["shown"] == ["alpha", "beta", "gamma"]
    assert "<description>lone \ufffd surrogate: convert units of length</description>" in ranked.json()["catalogue"]


@pytest.mark.model
def test_row1_hook_prompt_with_a_lone_surrogate_is_routed_by_the_server(tmp_path: Path) -> None:
    import subprocess
    import sys

    from serve_support import copy_bundled, running

    skills = copy_bundled(tmp_path / "skills")
    argv = ["--skills", str(skills), "--profile", "claude-code", "--index-dir", str(tmp_path / "idx"), "--no-watch"]
    payload = '{"prompt": "will it rain in Lyon tomorrow? \\ud800", "hook_event_name": "UserPromptSubmit"}'
    with running(argv, ready_timeout=60) as (url, _):
        done = subprocess.run([sys.executable, "-m", "router.cli", "hook", "claude-code", "--url", url,
                               "--no-fallback", "--timeout", "20"], input=payload, capture_output=True, text=True,
                              timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert (done.returncode, done.stderr) == (0, "")  # was: "the server ... answered HTTP 422", no context
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "weather-forecast" in context


def test_row1_lone_surrogates_in_labels_learned_examples_and_the_log_are_replaced(tmp_path: Path) -> None:
    labels = tmp_path / "labels.yaml"
    labels.write_text('- id: "q\\ud800"\n  query: "convert \\ud800 units"\n  gold: [alpha]\n', encoding="utf-8")
    [request] = load_requests(labels)
    assert (request.id, request.query) == ("q\ufffd", "convert \ufffd units")
    jsonl = tmp_path / "labels.jsonl"
    jsonl.write_text('{"id": "q1", "query": "caf\\udce9 \\ud83d\\ude00", "gold": ["alpha"]}\n', encoding="utf-8")
    assert load_requests(jsonl)[0].query == "caf\ufffd \U0001f600"
    index = tmp_path / "index"
    index.mkdir()
    (index / "learned-examples.jsonl").write_text('{"id": "alpha", "query": "x \\ud800"}\n', encoding="utf-8")
    assert load_learned(str(index)) == {"alpha": ["x \ufffd"]}
    log = tmp_path / "decisions.jsonl"
    log.write_text('{"type": "route", "id": "r1", "text": "lone \\ud800"}\n', encoding="utf-8")
    records, bad = read_log(str(log))
    assert bad == 0 and records[0]["text"] == "lone \ufffd"


# -- row 7: a folder name that is not UTF-8 ----------------------------------------------------------------------
@pytest.mark.model
def test_row7_non_utf8_folder_name_genkit(tmp_path: Path, capsys) -> None:
    skills = library(tmp_path / "skills")
    raw = write_skill(skills, b"bad\xff", text=skill_text("bad", "Convert units of length."))
    common = ("--skills", str(skills), "--profile", "genkit", "--index-dir", str(tmp_path / "index"))
    status, out, err = run(capsys, "route", "convert units of length", *common)
    assert status == 0 and "Traceback" not in err, err
    assert "bad\\xff" in out
    status, out, err = run(capsys, "route", "convert units of length", "--json", *common)
    assert status == 0, err
    assert json.loads(out)[0]["id"] == "bad\\xff"
    status, out, err = run(capsys, "prompt", "convert units of length", "-k", "1", *common)
    assert status == 0, err
    assert " - bad\\xff - Convert units of length.\n" in out
    # Found by its shown name, and by the raw byte a shell passes (argv arrives with surrogate escapes).
    with open(raw, encoding="utf-8") as handle:
        contents = handle.read()
    for name in ("bad\\xff", os.fsdecode(b"bad\xff")):
        status, out, err = run(capsys, "use", name, *common[:4])
        assert (status, out) == (0, contents), err


@pytest.mark.parametrize("profile", PROFILES)
def test_row7_non_utf8_folder_name_loads_in_every_profile(tmp_path: Path, capsys, profile: str) -> None:
    skills = library(tmp_path / "skills")
    write_skill(skills, b"bad\xff", text=skill_text("bad\\xff", "Convert units of length."))
    write_skill(skills, "bad\\xff", text=skill_text("bad\\xff", "The same name, spelt with a backslash."))
    loaded = from_folders([str(skills)], profile).registry
    skill = loaded.find("bad\\xff")
    assert skill is not None and loaded.find(os.fsdecode(b"bad\xff")) is skill
    assert all(encodable(text) for s in loaded for text in (s.name, s.id, s.path, s.description))
    status, out, err = run(capsys, "prompt", "--skills", str(skills), "--profile", profile)
    assert status == 0 and "Traceback" not in err, err
    from router.serve.mcp import _read_confined

    read = _read_confined(skill, "SKILL.md", ValueError)  # what MCP read_skill_file answers
    assert "Steps." in read["content"]
    rules = from_folders([str(skills)], profile).profile
    spec = rules.tool(list(loaded))
    if spec is not None:  # the skill tool reads the file under the folder's own name
        answer = rules.call_tool(loaded, {spec.parameters["required"][0]: "bad\\xff"}, spec.name)
        assert "Steps." in answer and encodable(answer)


# -- row 2: an alias bomb in the frontmatter ---------------------------------------------------------------------
def alias_bomb(levels: int = 9, fan: int = 9, indent: str = "") -> str:
    lines = [f"{indent}a0: &a0 [{', '.join(['x'] * fan)}]"]
    for level in range(1, levels):
        lines.append(f"{indent}a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * fan)}]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("profile", ["agentskills", "claude-code"])
def test_row2_alias_bomb_is_refused_quickly(tmp_path: Path, profile: str) -> None:
    skills = library(tmp_path / "skills")
    write_skill(skills, "bomb",
                text=skill_text("bomb", "Convert units of length.", "metadata:\n" + alias_bomb(indent="  ")))
    start = time.perf_counter()
    loaded = from_folders([str(skills)], profile).registry
    warnings = " ".join(loaded.discovery.warnings if loaded.discovery else ())
    assert "YAML aliases expand the document by 490329036 nodes" in warnings
    if profile == "agentskills":  # a skill whose frontmatter is not YAML is skipped, with a warning
        assert [s.name for s in loaded] == ["beta", "gamma"]
        assert "skipping" in warnings and "/bomb/SKILL.md: Invalid YAML in frontmatter" in warnings
    else:  # Claude Code loads the body with empty metadata
        bomb = loaded.find("bomb")
        assert bomb is not None and "metadata" not in bomb.metadata
        assert bomb.metadata["invalid_frontmatter"].startswith("YAML aliases expand the document")
    # Whatever is left can be encoded at once (this is what GET /v1/skills/NAME?body=true does).
    json.dumps([dict(s.metadata) for s in loaded])
    assert time.perf_counter() - start < 5


@pytest.mark.model
def test_row2_alias_bomb_skill_answers_over_http_at_once(tmp_path: Path) -> None:
    import httpx
    from serve_support import running

    skills = library(tmp_path / "skills")
    write_skill(skills, "bomb",
                text=skill_text("bomb", "Convert units of length.", "metadata:\n" + alias_bomb(indent="  ")))
    argv = ["--skills", str(skills), "--profile", "claude-code", "--index-dir", str(tmp_path / "idx"), "--no-watch"]
    with running(argv, ready_timeout=60) as (url, _):
        with httpx.Client(base_url=url, timeout=20, trust_env=False) as client:
            start = time.perf_counter()
            bomb = client.get("/v1/skills/bomb", params={"body": "true"})
            elapsed = time.perf_counter() - start
            health = client.get("/healthz")
    assert bomb.status_code == 200 and elapsed < 5
    assert bomb.json()["metadata"]["invalid_frontmatter"].startswith("YAML aliases expand the document by")
    assert health.status_code == 200


def test_row2_aliases_are_counted_as_parsed() -> None:
    start = time.perf_counter()
    with pytest.raises(YAMLAliasError, match="more than the 10000 accepted"):
        safe_load(alias_bomb())
    with pytest.raises(YAMLAliasError):
        load_with_nodes(alias_bomb())
    with pytest.raises(YAMLAliasError, match="names a collection that holds it"):
        safe_load("a: &a [1, *a]\n")
    assert time.perf_counter() - start < 1
    # Ordinary anchors still load, and an asterisk that is no alias costs nothing.
    assert safe_load("base: &b {x: 1}\none: *b\ntwo: {<<: *b, y: 2}\n") == \
        {"base": {"x": 1}, "one": {"x": 1}, "two": {"x": 1, "y": 2}}
    assert safe_load('d: "**bold** and *.py"\n') == {"d": "**bold** and *.py"}
    # Right at the limit: one anchor of MAX_YAML_ALIAS_NODES - 1 items, aliased once, adds the limit exactly.
    fits = "a: &a [" + ", ".join(["x"] * (MAX_YAML_ALIAS_NODES - 1)) + "]\nb: *a\n"
    assert len(safe_load(fits)["b"]) == MAX_YAML_ALIAS_NODES - 1
    with pytest.raises(YAMLAliasError):
        safe_load(fits + "c: *a\n")


@settings(max_examples=60, deadline=None)
@given(levels=st.integers(1, 12), fan=st.integers(1, 12))
def test_any_anchor_structure_loads_or_is_refused_by_its_expanded_size(levels: int, fan: int) -> None:
    text = alias_bomb(levels, fan)
    # Distinct nodes: the root, a key per level, the first sequence and its items, one sequence per later level.
    composed = 1 + levels + (1 + fan) + (levels - 1)
    sizes = [1 + fan]  # a level's sequence expanded: itself and fan copies of the level below
    for _ in range(1, levels):
        sizes.append(1 + fan * sizes[-1])
    expanded = 1 + levels + sum(sizes)
    start = time.perf_counter()
    if expanded - composed > MAX_YAML_ALIAS_NODES:
        with pytest.raises(YAMLAliasError, match=f"expand the document by {expanded - composed} nodes,"):
            safe_load(text)
    else:
        data = safe_load(text)
        assert len(json.dumps(data)) > 0 and len(data) == levels
    assert time.perf_counter() - start < 1


# -- row 12: a 3 MB description ----------------------------------------------------------------------------------
@pytest.mark.model
def test_row12_three_megabyte_description_prompt_is_fast(tmp_path: Path, capsys) -> None:
    words = " ".join(f"word{i % 5000}" for i in range(400_000))[:3_000_000]
    skills = library(tmp_path / "skills")
    write_skill(skills, "big", text=skill_text("big", words))
    big = from_folders([str(skills)], "agentskills").registry.get("big")
    assert big.description == words  # the harness shows all of it
    indexed = indexed_description(words)
    assert len(indexed) <= MAX_INDEXED_DESCRIPTION_CHARS and words.startswith(indexed)
    assert words[len(indexed)] == " "  # cut between words
    assert index_text(big) == f"big. {indexed}"
    assert dense_text(big) == indexed
    status, out, err = run(capsys, "prompt", "--skills", str(skills))
    assert status == 0, err
    assert words in out
    start = time.perf_counter()  # indexed and routed cold: 3.5 s and 620 MB when the whole text was tokenised
    status, out, err = run(capsys, "route", "word17 word42", "--json", "--skills", str(skills), "--index-dir",
                           str(tmp_path / "index"))
    assert status == 0, err
    assert json.loads(out)[0]["id"] == "big"
    assert time.perf_counter() - start < 10
    short = "Convert units of length."
    assert indexed_description(short) is short
    assert indexed_description("x" * 5000) == "x" * MAX_INDEXED_DESCRIPTION_CHARS  # no space: cut at the limit


def test_row12_codex_skill_file_has_the_same_size_cap(tmp_path: Path) -> None:
    skills = library(tmp_path / "skills")
    huge = write_skill(skills, "huge", text=skill_text("huge", "Too big.", "x: " + "y" * MAX_SKILL_FILE_BYTES + "\n"))
    loaded = from_folders([str(skills)], "codex")
    assert [s.name for s in loaded.registry] == ["beta", "gamma"]
    assert loaded.notes == (f"{os.fsdecode(huge)}: failed to read file: file is larger than the limit of "
                            f"{MAX_SKILL_FILE_BYTES} bytes (os error 27)",)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")
def test_row12_codex_skill_file_that_became_a_fifo_or_a_device_does_not_block(tmp_path: Path) -> None:
    import threading

    skills = library(tmp_path / "skills")
    loaded = from_folders([str(skills)], "codex")
    (skills / "beta" / "SKILL.md").unlink()
    os.mkfifo(skills / "beta" / "SKILL.md")  # replaced after discovery: Codex reads the file when it is mentioned
    (skills / "gamma" / "SKILL.md").unlink()
    os.symlink("/dev/zero", skills / "gamma" / "SKILL.md")
    answers: dict[str, str] = {}

    def mention(name: str) -> None:
        try:
            loaded.profile.call_tool(loaded.registry, {"name": name})
        except SkillToolError as exc:
            answers[name] = str(exc)

    threads = [threading.Thread(target=mention, args=(name,), daemon=True) for name in ("beta", "gamma")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    for name in ("beta", "gamma"):
        assert answers.get(name) == (f"Failed to load skill {name} at {skills / name / 'SKILL.md'}: not a regular "
                                     "file (os error 22)")


# -- row 5: a FIFO inside a skill folder, MCP read_skill_file ----------------------------------------------------
@pytest.mark.model
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")
def test_row5_fifo_in_skill_folder_mcp_read_skill_file(tmp_path: Path) -> None:
    from serve_support import running

    skills = library(tmp_path / "skills")
    os.mkfifo(skills / "beta" / "pipe")
    os.symlink("/dev/zero", skills / "beta" / "zero")
    (skills / "beta" / "notes.md").write_text("# notes\n", encoding="utf-8")
    argv = ["--skills", str(skills), "--profile", "genkit", "--index-dir", str(tmp_path / "idx"), "--no-watch"]

    async def session(url: str) -> tuple[list, object, object, float]:
        import httpx2
        from mcp.client.session import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        async with httpx2.AsyncClient(trust_env=False, timeout=httpx2.Timeout(30, read=60)) as http:
            async with streamable_http_client(f"{url}/mcp", http_client=http) as streams:
                async with ClientSession(streams[0], streams[1]) as client:
                    await client.initialize()
                    start = time.perf_counter()
                    answers = []
                    for _ in range(50):  # more than the worker threads a blocked read used to pin
                        answers.append(await asyncio.wait_for(
                            client.call_tool("read_skill_file", {"name": "beta", "path": "pipe"}), 10))
                    elapsed = time.perf_counter() - start
                    zero = await asyncio.wait_for(
                        client.call_tool("read_skill_file", {"name": "beta", "path": "zero"}), 10)
                    notes = await asyncio.wait_for(
                        client.call_tool("read_skill_file", {"name": "beta", "path": "notes.md"}), 10)
                    return answers, zero, notes, elapsed

    with running(argv) as (url, _):
        answers, zero, notes, elapsed = asyncio.run(session(url))
    assert elapsed < 20
    for answer in answers:
        assert answer.is_error
        assert answer.content[0].text == ("'pipe' of skill 'beta' is not a regular file (a FIFO, a device or a "
                                          "socket)")
    assert zero.is_error and "leaves the folder of skill 'beta'" in zero.content[0].text
    assert not notes.is_error and notes.structured_content["content"] == "# notes\n"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")
def test_files_refuse_a_fifo_and_a_device_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    os.symlink("/dev/zero", tmp_path / "zero")
    start = time.perf_counter()
    for name in ("pipe", "zero"):
        with pytest.raises(NotRegularFileError, match="not a regular file"):
            read_bytes(tmp_path / name)
    assert time.perf_counter() - start < 1


# -- the class of row 5: one module reads files ------------------------------------------------------------------
#: Calls that open a file for reading outside router/files.py, each with the reason it may stay.
ALLOWED_READS = {
    ("router/store.py", "_fsync_files"): "opens files this process has just written, to fsync them",
    ("router/daemon.py", "alive"): "reads /proc/<pid>/cmdline and stat, which the kernel makes, not a user",
}
READ_CALLS = {"open", "read_text", "read_bytes", "load"}


def _reads(tree: ast.AST, imported_from_files: set[str]) -> list[tuple[str, int]]:
    """(enclosing function, line) of each call that may read a file."""
    found = []
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node

    def function_of(node: ast.AST) -> str:
        while node in parents:
            node = parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return node.name
        return "<module>"

    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
        if name not in READ_CALLS:
            continue
        if isinstance(func, ast.Name) and name in imported_from_files:
            continue  # router.files.read_text / read_bytes
        if name == "load" and (owner not in ("json", "np", "numpy", "tomllib", "pickle")
                               or node.args and isinstance(node.args[0], ast.Name)):
            continue  # yaml.load parses text; json.load(handle) reads a file some open() above opened
        if name == "open" and owner in ("os", "opener"):
            continue  # os.open is the primitive router.files uses; opener.open is an HTTP request
        mode = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"),
                                                             None)
        if name == "open" and isinstance(mode, ast.Constant) and isinstance(mode.value, str) \
                and any(c in mode.value for c in "wax"):
            continue  # writing
        found.append((function_of(node), node.lineno))
    return found


def test_every_file_read_goes_through_router_files() -> None:
    offenders = []
    for path in sorted((ROOT / "router").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative == "router/files.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        from_files = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                      and node.module == "router.files" for alias in node.names}
        for function, line in sorted(_reads(tree, from_files), key=lambda found: found[1]):
            if (relative, function) not in ALLOWED_READS:
                offenders.append(f"{relative}:{line} ({function})")
    assert offenders == [], "read these through router.files (regular files only, capped): " + ", ".join(offenders)


def test_the_read_check_finds_a_plain_open() -> None:
    tree = ast.parse("def f(p):\n    with open(p) as h:\n        return h.read()\n"
                     "def g(p):\n    return Path(p).read_text()\n"
                     "def h(p):\n    with open(p, 'w') as out:\n        out.write('x')\n"
                     "def i(p):\n    return np.load(p / 'v.npy')\n")
    assert sorted(_reads(tree, set())) == [("f", 2), ("g", 5), ("i", 10)]
    assert _reads(ast.parse("from router.files import read_text\nread_text('x')\n"), {"read_text"}) == []
