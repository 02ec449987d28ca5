"""The MCP server, through the official ``mcp`` client: mounted at /mcp of ``skill-router serve`` (streamable HTTP)
and as ``skill-router mcp`` on stdio."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from router.profiles import get_profile
from router.library import from_folders
from serve_support import copy_bundled

SCRIPT = Path(sys.executable).parent / "skill-router"
pytestmark = pytest.mark.model  # a real server with the real model


def prepare_library(library: Path, root: Path) -> None:
    """The server's library (the ``server`` fixture): a reference file, and a link leading out of the skill."""
    (library / "weather-forecast" / "references").mkdir()
    (library / "weather-forecast" / "references" / "codes.md").write_text("# WMO codes\n61: rain\n")
    (root / "secret.txt").write_text("outside the skill folder")
    (library / "weather-forecast" / "escape").symlink_to(root / "secret.txt")


async def _session(url: str, work: Any) -> Any:
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(trust_env=False, timeout=httpx2.Timeout(30, read=60)) as http:
        async with streamable_http_client(f"{url}/mcp", http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                init = await session.initialize()
                return await work(session, init)


def call(url: str, work: Any) -> Any:
    return asyncio.run(_session(url, work))


def test_tools_are_listed_read_only_with_instructions(server) -> None:
    url, _, _, _ = server

    async def work(session, init):
        return init, await session.list_tools()

    init, listed = call(url, work)
    assert "search_skills" in (init.instructions or "")
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == {"search_skills", "load_skill", "read_skill_file"}
    for tool in tools.values():
        assert tool.annotations.read_only_hint is True
    assert tools["search_skills"].output_schema["properties"]["skills"]
    assert tools["search_skills"].input_schema["properties"]["k"]["maximum"] == 50


def test_search_skills_returns_structured_results(server) -> None:
    url, service, library, _ = server

    async def work(session, _):
        return await session.call_tool("search_skills", {"query": "will it rain in Lyon tomorrow?", "k": 3})

    result = call(url, work)
    assert not result.is_error
    found = result.structured_content
    assert found["total"] == 3 and len(found["skills"]) == 3
    first = found["skills"][0]
    routing = service.router.route("will it rain in Lyon tomorrow?", 3)
    assert first["name"] == routing.matches[0].name
    assert first["uri"] == f"skill://{first['name']}/SKILL.md"
    assert first["base_directory"] == str(library / first["name"])
    assert json.loads(result.content[0].text) == found


def test_load_skill_is_the_profile_tool_result_and_is_logged(server) -> None:
    url, _, library, root = server
    profile = get_profile("genkit")
    expected = profile.call_tool(from_folders([str(library)], profile).registry, {"skillName": "weather-forecast"},
                                 "use_skill")

    async def work(session, _):
        await session.call_tool("search_skills", {"query": "forecast for the weekend in Lyon"})
        loaded = await session.call_tool("load_skill", {"name": "weather-forecast"})
        missing = await session.call_tool("load_skill", {"name": "wether-forecast"})
        return loaded, missing

    loaded, missing = call(url, work)
    assert loaded.structured_content == {"name": "weather-forecast",
                                         "base_directory": str(library / "weather-forecast"), "content": expected}
    assert missing.is_error and "weather-forecast" in missing.content[0].text
    records = [json.loads(line) for line in (root / "decisions.jsonl").read_text().splitlines()]
    search = [r for r in records if r["type"] == "route" and r["source"] == "mcp"][-1]
    load = [r for r in records if r["type"] == "load" and r["source"] == "mcp"][-1]
    assert load["after"] == search["id"] and load["skill"] == "weather-forecast" and load["shown"] is True


def test_read_skill_file_is_confined_to_the_skill_folder(server) -> None:
    url, _, library, root = server

    async def work(session, _):
        calls = {"ok": {"name": "weather-forecast", "path": "references/codes.md"},
                 "dotdot": {"name": "weather-forecast", "path": "../go-code-review/SKILL.md"},
                 "absolute": {"name": "weather-forecast", "path": str(root / "secret.txt")},
                 "symlink": {"name": "weather-forecast", "path": "escape"},
                 "missing": {"name": "weather-forecast", "path": "nope.md"},
                 "folder": {"name": "weather-forecast", "path": "references"}}
        return {key: await session.call_tool("read_skill_file", args) for key, args in calls.items()}

    results = call(url, work)
    assert results["ok"].structured_content["content"] == "# WMO codes\n61: rain\n"
    for key in ("dotdot", "absolute", "symlink"):
        assert results[key].is_error and "leaves the folder" in results[key].content[0].text, key
    # the resolved paths are never echoed: only what the caller sent
    assert str(library) not in results["dotdot"].content[0].text
    assert "secret" not in results["symlink"].content[0].text
    assert results["missing"].is_error and "has no file" in results["missing"].content[0].text
    assert results["folder"].is_error and "is a folder" in results["folder"].content[0].text


def test_skill_resource_is_the_skill_file(server) -> None:
    url, _, library, _ = server

    async def work(session, _):
        templates = await session.list_resource_templates()
        read = await session.read_resource("skill://weather-forecast/SKILL.md")
        return templates, read

    templates, read = call(url, work)
    assert [t.uri_template for t in templates.resource_templates] == ["skill://{+path}"]
    assert read.contents[0].text == (library / "weather-forecast" / "SKILL.md").read_text()


def test_bad_tool_arguments_are_tool_errors_not_crashes(server) -> None:
    url, _, _, _ = server

    async def work(session, _):
        return [await session.call_tool("search_skills", args) for args in
                ({"query": "x", "k": 0}, {"query": "x", "k": 99}, {"query": ""}, {"k": 3}, {"query": "  "})]

    for result in call(url, work):
        assert result.is_error


def test_stdio_server_answers_the_official_client(tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters

    library = copy_bundled(tmp_path / "skills")
    # The SDK starts the server with a minimal environment: name the code under test.
    params = StdioServerParameters(command=str(SCRIPT), args=[
        "mcp", "--skills", str(library), "--index-dir", str(tmp_path / "idx"), "--no-log", "--no-watch"],
        env={"PYTHONPATH": str(Path(__file__).resolve().parents[1])})

    async def work():
        async with Client(params, read_timeout_seconds=180) as client:
            tools = await client.list_tools()
            found = await client.call_tool("search_skills", {"query": "convert 10 miles to kilometres", "k": 2})
            return tools, found

    tools, found = asyncio.run(work())
    assert {t.name for t in tools.tools} == {"search_skills", "load_skill", "read_skill_file"}
    assert found.structured_content["skills"][0]["name"] == "unit-conversion"


def test_tool_errors_tell_the_model_which_call_to_make_without_urls_or_cli_advice(server) -> None:
    url, _, _, _ = server

    async def work(session, _):
        return [await session.call_tool(name, args) for name, args in (
            ("search_skills", {"query": "x", "k": 0}), ("search_skills", {"k": 3}), ("search_skills", {"query": " "}),
            ("load_skill", {"name": "wether-forecast"}), ("load_skill", {"name": "zzzz-nothing-like-it"}))]

    texts = [result.content[0].text for result in call(url, work)]
    assert texts == [
        "search_skills was called with bad arguments (k: input should be greater than or equal to 1). Call "
        'search_skills with {"query": "<the user\'s request>", "k": <1 to 50, default 5>}.',
        "search_skills was called with bad arguments (query: field required). Call "
        'search_skills with {"query": "<the user\'s request>", "k": <1 to 50, default 5>}.',
        "query is empty: call search_skills with the user's request as the query.",
        "no skill named 'wether-forecast'. Did you mean 'weather-forecast' or 'time-series-forecasting'? Otherwise, "
        "call search_skills with the user's request, then load_skill with one of the names it returns.",
        "no skill named 'zzzz-nothing-like-it'. Call search_skills with the user's request, then load_skill with "
        "one of the names it returns.",
    ]
    assert not any("http" in t or "skill-router" in t or "Error executing" in t for t in texts)
