"""The MCP Skills extension (SEP-2640) and the skill resources, through the official ``mcp`` client at protocol
2026-07-28 and 2025-11-25, on streamable HTTP (``skill-router serve``) and stdio (``skill-router mcp``), and through
``@modelcontextprotocol/inspector --cli`` (npm). Every expected entry is computed here from the files."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from router.serve import mcp_extension
from serve_support import copy_bundled, running

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Path(sys.executable).parent / "skill-router"
EXTENSION = "io.modelcontextprotocol/skills"
PAGES = {"skills/list": 20, "resources/list": 25, "resources/directory/read": 2}
INSPECTOR = "@modelcontextprotocol/inspector"
INSPECTOR_VERSION = "2.12.0"
pytestmark = pytest.mark.model  # a real server with the real model


def add_files(library: Path, root: Path) -> None:
    """Files beside weather-forecast's SKILL.md: served ones, and ones that must never be served."""
    folder = library / "weather-forecast"
    (folder / "references").mkdir()
    (folder / "references" / "codes.md").write_text("# WMO codes\n61: rain\n")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "plot.py").write_text("print('plot')\n")
    (folder / "assets").mkdir()
    (folder / "assets" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (folder / ".env").write_text("API_KEY=secret\n")
    (root / "secret.txt").write_text("outside the skill folder")
    (folder / "escape.md").symlink_to(root / "secret.txt")


def served(folder: Path) -> list[str]:
    """The files the extension serves, by its rules: regular files, no symlinks out, no dot-names; SKILL.md first."""
    found = [p.relative_to(folder).as_posix() for p in folder.rglob("*")
             if p.is_file() and not p.is_symlink() and not any(s.startswith(".") for s in p.relative_to(folder).parts)]
    return sorted(found, key=lambda r: (r != "SKILL.md", r))


def expected_entry(library: Path, name: str) -> dict[str, Any]:
    folder = library / name
    front = yaml.safe_load((folder / "SKILL.md").read_text(encoding="utf-8").split("---", 2)[1])
    resources = []
    for relative in served(folder):
        data = (folder / relative).read_bytes()
        resources.append({"uri": f"skill://{name}/{relative}", "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
                          "size": len(data)})
    return {"uri": f"skill://{name}/SKILL.md", "frontmatter": front, "resources": resources}


async def raw(client: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    import mcp_types as types
    from pydantic import TypeAdapter

    request = types.Request[dict[str, Any], str](method=method, params=params)
    return await client.session.send_request(request, TypeAdapter(dict[str, Any]))


async def refused(client: Any, method: str, params: dict[str, Any]) -> tuple[int, str]:
    from mcp.shared.exceptions import MCPError

    with pytest.raises(MCPError) as caught:
        await raw(client, method, params)
    return caught.value.error.code, caught.value.error.message


async def all_pages(client: Any, method: str, key: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
    pages, cursor = [], None
    while True:
        page = await raw(client, method, {**(params or {}), **({"cursor": cursor} if cursor else {})})
        assert page["resultType"] == "complete"
        pages.append(page[key])
        cursor = page.get("nextCursor")
        if cursor is None:
            return pages


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("mcp-skills")
    library = copy_bundled(root / "skills")
    add_files(library, root)
    argv = ["--skills", str(library), "--index-dir", str(root / "idx"), "--log", str(root / "decisions.jsonl"),
            "--log-requests", "text", "--no-watch"]
    with pytest.MonkeyPatch.context() as patch:
        for method, size in PAGES.items():
            patch.setitem(mcp_extension.PAGE_SIZES, method, size)
        with running(argv) as (url, service):
            yield f"{url}/mcp", service, library, root


def connect(url: Any, mode: str, work: Any) -> Any:
    from mcp import Client

    async def session() -> Any:
        async with Client(url, mode=mode, cache=None, read_timeout_seconds=120) as client:
            return await work(client)

    return asyncio.run(session())


def names(service: Any) -> list[str]:
    return [s.name for s in service.router.skills]


def test_a_2026_client_sees_the_extension_and_every_skill_page_by_page(server) -> None:
    url, service, library, _ = server

    async def work(client):
        return (client.protocol_version, client.server_capabilities,
                await all_pages(client, "skills/list", "skills"), await raw(client, "skills/list", {}))

    version, capabilities, pages, first = connect(url, "auto", work)
    assert version == "2026-07-28"
    assert capabilities.extensions == {EXTENSION: {"directoryRead": True}}
    assert capabilities.resources is not None
    skills = names(service)
    assert len(skills) == 52 and [len(p) for p in pages] == [20, 20, 12]
    assert [entry for page in pages for entry in page] == [expected_entry(library, n) for n in skills]
    assert (first["ttlMs"], first["cacheScope"]) == (60_000, "public")
    weather = next(e for p in pages for e in p if e["uri"] == "skill://weather-forecast/SKILL.md")
    assert [r["uri"] for r in weather["resources"]] == [
        "skill://weather-forecast/SKILL.md", "skill://weather-forecast/assets/logo.png",
        "skill://weather-forecast/references/codes.md", "skill://weather-forecast/scripts/plot.py"]


def test_skills_get_answers_every_skill_and_refuses_what_is_not_one(server) -> None:
    url, service, library, _ = server

    async def work(client):
        got = [await raw(client, "skills/get", {"uri": f"skill://{n}/SKILL.md"}) for n in names(service)]
        by_name = await raw(client, "skills/get", {"name": "weather-forecast"})
        assert by_name["skill"] == expected_entry(library, "weather-forecast")
        bad = [await refused(client, "skills/get", params) for params in (
            {"uri": "skill://wether-forecast/SKILL.md"}, {"uri": "skill://weather-forecast/references/codes.md"},
            {}, {"uri": 7}, {"uri": "https://example.com/SKILL.md"})]
        return got, bad

    got, bad = connect(url, "auto", work)
    for name, answer in zip(names(service), got):
        assert answer["skill"] == expected_entry(library, name)
        assert (answer["ttlMs"], answer["cacheScope"], answer["resultType"]) == (60_000, "public", "complete")
    assert bad == [
        (-32602, "No skill is served at skill://wether-forecast/SKILL.md: did you mean "
                 "skill://weather-forecast/SKILL.md or skill://time-series-forecasting/SKILL.md?"),
        (-32602, "skills/get takes the URI of a skill's SKILL.md (skill://<skill-path>/SKILL.md), got "
                 "skill://weather-forecast/references/codes.md"),
        (-32602, "skills/get needs params.uri, the URI of a skill's SKILL.md (skill://<skill-path>/SKILL.md, as "
                 "skills/list gives it)"),
        (-32602, "uri must be a skill:// URI (text), got 7"),
        (-32602, "https://example.com/SKILL.md is not a skill:// URI: this server serves skill files as "
                 "skill://<skill-path>/<file-path> (see resources/list or skills/list)"),
    ]


def test_resources_are_every_served_file_page_by_page_and_read_as_the_digests_say(server) -> None:
    url, service, library, _ = server
    manifest = {r["uri"]: r for n in names(service) for r in expected_entry(library, n)["resources"]}

    async def work(client):
        pages, cursor = [], None
        while True:
            page = await client.list_resources(cursor=cursor)
            pages.append(page.resources)
            cursor = page.next_cursor
            if cursor is None:
                break
        reads = {uri: (await client.read_resource(uri)).contents[0] for uri in manifest}
        return pages, reads

    pages, reads = connect(url, "auto", work)
    listed = [r for page in pages for r in page]
    assert [len(p) for p in pages[:-1]] == [25] * (len(pages) - 1) and 0 < len(pages[-1]) <= 25
    assert [r.uri for r in listed] == list(manifest)
    assert [r.size for r in listed] == [m["size"] for m in manifest.values()]
    weather = next(r for r in listed if r.uri == "skill://weather-forecast/SKILL.md")
    skill = service.router.registry.find("weather-forecast")
    assert (weather.name, weather.description, weather.mime_type) == ("weather-forecast", skill.description,
                                                                     "text/markdown")
    for uri, content in reads.items():
        data = content.text.encode("utf-8") if hasattr(content, "text") else base64.b64decode(content.blob)
        assert "sha256:" + hashlib.sha256(data).hexdigest() == manifest[uri]["digest"], uri
    logo = reads["skill://weather-forecast/assets/logo.png"]
    assert (logo.mime_type, base64.b64decode(logo.blob)) == (
        "image/png", (library / "weather-forecast" / "assets" / "logo.png").read_bytes())


def test_reads_outside_what_is_served_are_invalid_params_naming_the_problem(server) -> None:
    url, _, library, root = server

    async def work(client):
        return [await refused(client, "resources/read", {"uri": uri}) for uri in (
            "skill://weather-forecast/escape.md", "skill://weather-forecast/../go-code-review/SKILL.md",
            "skill://weather-forecast/.env", "skill://weather-forecast/nope.md", "skill://nowhere/SKILL.md")]

    answers = connect(url, "auto", work)
    assert answers == [
        (-32602, "skill://weather-forecast/escape.md leaves the folder of skill 'weather-forecast' (a symlink out of "
                 "it): only files inside a skill folder are served"),
        (-32602, "skill://weather-forecast/../go-code-review/SKILL.md holds an empty, '.' or '..' segment: address "
                 "a skill's files by their path inside the skill folder"),
        (-32602, "skill://weather-forecast/.env is not served: files and folders named like '.env' (a leading '.', "
                 "or __pycache__) are kept out of skill resources"),
        (-32602, "skill 'weather-forecast' has no file 'nope.md' (skill://weather-forecast/nope.md): see its entry "
                 "in skills/get for the files it has"),
        (-32602, "No skill is served at skill://nowhere/SKILL.md: call skills/list (or resources/list) for the URIs "
                 "this server serves"),
    ]
    assert not any(str(root) in message for _, message in answers)


def test_directories_are_read_page_by_page(server) -> None:
    url, _, library, _ = server

    async def work(client):
        return (await all_pages(client, "resources/directory/read", "resources",
                                {"uri": "skill://weather-forecast"}),
                await refused(client, "resources/directory/read", {"uri": "skill://weather-forecast/SKILL.md"}))

    pages, not_a_folder = connect(url, "auto", work)
    size = (library / "weather-forecast" / "SKILL.md").stat().st_size
    assert pages == [
        [{"uri": "skill://weather-forecast/SKILL.md", "name": "SKILL.md", "mimeType": "text/markdown", "size": size},
         {"uri": "skill://weather-forecast/assets", "name": "assets", "mimeType": "inode/directory"}],
        [{"uri": "skill://weather-forecast/references", "name": "references", "mimeType": "inode/directory"},
         {"uri": "skill://weather-forecast/scripts", "name": "scripts", "mimeType": "inode/directory"}]]
    assert not_a_folder == (-32602, "skill://weather-forecast/SKILL.md is not a directory resource: read it with "
                                    "resources/read")


def test_a_listing_ranked_for_a_request_holds_the_routed_skills_best_first(server) -> None:
    url, service, library, root = server
    query = "will it rain in Lyon tomorrow?"

    async def work(client):
        ranked = await raw(client, "skills/list", {"_meta": {"skill-router/query": query, "skill-router/k": 3}})
        bad = [await refused(client, "skills/list", params) for params in (
            {"_meta": {"skill-router/query": ""}}, {"_meta": {"skill-router/query": query, "skill-router/k": 99}},
            {"cursor": "not-a-cursor"})]
        return ranked, bad

    ranked, bad = connect(url, "auto", work)
    routing = service.router.route(query, 3)
    shown = {s.id for s in routing.shown}
    expected = [m.name for m in routing.matches if m.id in shown]
    assert len(expected) == 3 and expected[0] == "weather-forecast"
    assert ranked["skills"] == [expected_entry(library, n) for n in expected]
    assert "nextCursor" not in ranked
    assert ranked["_meta"]["skill-router/abstained"] is False
    records = [json.loads(line) for line in (root / "decisions.jsonl").read_text().splitlines()]
    assert [r["id"] for r in records if r["type"] == "route" and r.get("request") == query] == [
        ranked["_meta"]["skill-router/request_id"]]
    assert bad == [
        (-32602, "_meta['skill-router/query'] must be the user's request as non-empty text, got \"\""),
        (-32602, "_meta['skill-router/k'] must be a whole number from 1 to 50, got 99"),
        (-32602, "cursor 'not-a-cursor' is not one this server issued for skills/list: call skills/list without a "
                 "cursor to start from the first page"),
    ]


def test_the_prompt_is_the_routed_listing_as_the_profile_renders_it(server) -> None:
    url, service, _, _ = server
    request = "convert 10 miles to kilometres"

    async def work(client):
        from mcp.shared.exceptions import MCPError

        listed = await client.list_prompts()
        got = await client.get_prompt("use_skills_for", {"request": request})
        errors = []
        for name, args in (("use_skills_for", {}), ("use_skills_for", {"request": "  "}), ("nope", {})):
            with pytest.raises(MCPError) as caught:
                await client.get_prompt(name, args)
            errors.append((caught.value.error.code, caught.value.error.message))
        return listed, got, errors

    listed, got, errors = connect(url, "auto", work)
    assert [(p.name, [(a.name, a.required) for a in p.arguments]) for p in listed.prompts] == [
        ("use_skills_for", [("request", True)])]
    assert [(m.role, m.content.text) for m in got.messages] == [("user", service.router.render(request)),
                                                                ("user", request)]
    assert "unit-conversion" in got.messages[0].content.text
    assert errors == [
        (-32602, "use_skills_for needs the argument 'request': the user's request as non-empty text"),
        (-32602, "use_skills_for needs the argument 'request': the user's request as non-empty text"),
        (-32602, "there is no prompt named 'nope': the prompt is use_skills_for, with the argument 'request'"),
    ]


def test_a_2025_client_keeps_tools_resources_and_the_prompt_without_the_extension(server) -> None:
    url, service, library, _ = server

    async def work(client):
        resources, cursor = [], None
        while True:
            page = await client.list_resources(cursor=cursor)
            resources += [r.uri for r in page.resources]
            cursor = page.next_cursor
            if cursor is None:
                break
        return (client.protocol_version, client.server_capabilities, await client.list_tools(), resources,
                await client.read_resource("skill://weather-forecast/references/codes.md"),
                await client.get_prompt("use_skills_for", {"request": "will it rain tomorrow?"}),
                [await refused(client, m, {"uri": "skill://weather-forecast/SKILL.md"})
                 for m in ("skills/list", "skills/get", "resources/directory/read")])

    version, capabilities, tools, resources, read, prompt, refusals = connect(url, "legacy", work)
    assert version == "2025-11-25" and capabilities.extensions is None and capabilities.resources is not None
    assert {t.name for t in tools.tools} == {"search_skills", "load_skill", "read_skill_file"}
    assert resources == [r["uri"] for n in names(service) for r in expected_entry(library, n)["resources"]]
    assert read.contents[0].text == "# WMO codes\n61: rain\n"
    assert prompt.messages[0].content.text == service.router.render("will it rain tomorrow?")
    assert refusals == [(-32601, f"{m} is a method of the MCP Skills extension ({EXTENSION}), which this server "
                                 "serves at protocol 2026-07-28; this session uses 2025-11-25: connect at "
                                 "2026-07-28 for it, or read the skills' files with resources/list and "
                                 "resources/read") for m in ("skills/list", "skills/get", "resources/directory/read")]


@pytest.fixture(scope="module")
def stdio_library(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    root = tmp_path_factory.mktemp("mcp-stdio")
    library = copy_bundled(root / "skills")
    add_files(library, root)
    argv = ["mcp", "--skills", str(library), "--index-dir", str(root / "idx"), "--no-log", "--no-watch"]
    return library, argv


def stdio_params(argv: list[str]) -> Any:
    from mcp import StdioServerParameters

    # The SDK starts the server with a minimal environment: name the code under test.
    return StdioServerParameters(command=str(SCRIPT), args=argv, env={"PYTHONPATH": str(ROOT)})


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_stdio_serves_the_extension_at_2026_only(stdio_library, mode: str) -> None:
    library, argv = stdio_library

    async def work(client):
        seen = (client.protocol_version, client.server_capabilities.extensions)
        first = await client.list_resources()
        if mode == "legacy":
            return seen, first, await refused(client, "skills/list", {}), None
        return (seen, first, await raw(client, "skills/list", {}),
                await raw(client, "skills/get", {"uri": "skill://weather-forecast/SKILL.md"}))

    (version, extensions), resources, listing, got = connect(stdio_params(argv), mode, work)
    skills = sorted(p.parent.name for p in library.glob("*/SKILL.md"))
    files = [r["uri"] for n in skills for r in expected_entry(library, n)["resources"]]
    assert [r.uri for r in resources.resources] == files[:200] and len(files) < 200
    if mode == "legacy":
        assert (version, extensions) == ("2025-11-25", None)
        assert listing[0] == -32601
        return
    assert (version, extensions) == ("2026-07-28", {EXTENSION: {"directoryRead": True}})
    assert listing["skills"] == [expected_entry(library, n) for n in skills] and "nextCursor" not in listing
    assert got["skill"] == expected_entry(library, "weather-forecast")


def inspector_binary() -> Path:
    """``mcp-inspector`` of exactly INSPECTOR_VERSION, installed with npm into the cache on first use."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(cache) / "skill-router" / "oracle" / f"mcp-inspector-{INSPECTOR_VERSION}"
    binary = folder / "node_modules" / ".bin" / "mcp-inspector"
    if not binary.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip(f"npm is not installed, so {INSPECTOR}@{INSPECTOR_VERSION} cannot be installed: install "
                        "Node.js and npm to run the inspector checks")
        folder.mkdir(parents=True, exist_ok=True)
        done = subprocess.run([npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund", "--no-save",
                               f"{INSPECTOR}@{INSPECTOR_VERSION}"], capture_output=True, text=True, timeout=900)
        if done.returncode != 0 or not binary.exists():
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            pytest.fail(f"npm install {INSPECTOR}@{INSPECTOR_VERSION} into {folder} failed (exit {done.returncode}): "
                        + " | ".join(tail) + "; check that the npm registry is reachable")
    return binary


def inspect(argv: list[str], *options: str) -> subprocess.CompletedProcess[str]:
    command = [str(inspector_binary()), "--cli", "-e", f"PYTHONPATH={ROOT}", "--format", "json", "--quiet",
               *options, str(SCRIPT), *argv]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def test_the_inspector_lists_tools_and_resources_and_verifies_every_skill(stdio_library) -> None:
    library, argv = stdio_library
    skills = sorted(p.parent.name for p in library.glob("*/SKILL.md"))
    tools = inspect(argv, "--method", "tools/list")
    assert tools.returncode == 0, tools.stderr
    assert [t["name"] for t in json.loads(tools.stdout)["result"]["tools"]] == [
        "search_skills", "load_skill", "read_skill_file"]
    resources = inspect(argv, "--method", "resources/list")
    assert resources.returncode == 0, resources.stderr
    assert [r["uri"] for r in json.loads(resources.stdout)["result"]["resources"]] == [
        r["uri"] for n in skills for r in expected_entry(library, n)["resources"]]
    # The inspector's own SEP-2640 conformance check: each entry's shape, name rules and frontmatter, and every
    # file read back and compared with its digest and size.
    verified = inspect(argv, "--protocol-era", "modern", "--method", "skills/list", "--verify")
    assert verified.returncode == 0, verified.stdout[-2000:] + verified.stderr[-2000:]
    reports = [json.loads(line) for line in verified.stdout.splitlines() if line.strip()]
    assert [r["uri"] for r in reports] == [f"skill://{n}/SKILL.md" for n in skills]
    assert all(r["ok"] and r["outcome"] == "verified" and r["conformance"] == [] for r in reports)
    assert sum(len(r["files"]) for r in reports) == sum(len(served(library / n)) for n in skills)


def test_the_inspector_pages_through_the_http_server_and_verifies_every_skill(server) -> None:
    url, service, library, _ = server
    binary = str(inspector_binary())
    skills = names(service)

    def run(*options: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([binary, "--cli", "--format", "json", "--quiet", *options, url], capture_output=True,
                              text=True, timeout=300)

    resources = run("--method", "resources/list")
    assert resources.returncode == 0, resources.stderr
    listed = json.loads(resources.stdout)["result"]
    files = [r["uri"] for n in skills for r in expected_entry(library, n)["resources"]]
    assert len(files) > 3 * PAGES["resources/list"]
    assert [r["uri"] for r in listed["resources"]] == files  # it followed every nextCursor
    verified = run("--protocol-era", "modern", "--method", "skills/list", "--verify")
    assert verified.returncode == 0, verified.stdout[-2000:] + verified.stderr[-2000:]
    reports = [json.loads(line) for line in verified.stdout.splitlines() if line.strip()]
    assert [r["uri"] for r in reports] == [f"skill://{n}/SKILL.md" for n in skills]  # all three pages
    assert all(r["outcome"] == "verified" for r in reports)


def test_params_the_sdk_refuses_are_named_field_by_field(server) -> None:
    url, _, _, _ = server

    async def work(client):
        return [await refused(client, method, params) for method, params in (
            ("resources/list", {"cursor": 5}), ("resources/read", {}), ("prompts/get", {}),
            ("prompts/get", {"name": "use_skills_for", "arguments": {"request": 5}}))]

    assert connect(url, "auto", work) == [
        (-32602, "resources/list was called with bad params (params.cursor: input should be a valid string)"),
        (-32602, "resources/read was called with bad params (params.uri: field required)"),
        (-32602, "prompts/get was called with bad params (params.name: field required)"),
        (-32602, "prompts/get was called with bad params (params.arguments.request: input should be a valid "
                 "string)"),
    ]


def test_after_a_reload_entries_follow_the_files_and_old_cursors_are_refused(server) -> None:
    url, service, library, _ = server
    skill_md = library / "haiku-responder" / "SKILL.md"
    skill_md.write_text(skill_md.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")

    async def before(client):
        return (await raw(client, "skills/list", {}))["nextCursor"]

    cursor = connect(url, "auto", before)
    assert service.reload().ok

    async def after(client):
        return (await raw(client, "skills/get", {"uri": "skill://haiku-responder/SKILL.md"}),
                await refused(client, "skills/list", {"cursor": cursor}))

    got, stale = connect(url, "auto", after)
    assert got["skill"] == expected_entry(library, "haiku-responder")
    assert got["skill"]["resources"][0]["size"] == len(skill_md.read_bytes())
    assert stale == (-32602, f"cursor {cursor[:80]!r} belongs to a listing from before the library was reloaded: "
                             "call skills/list without a cursor to start from the first page")
