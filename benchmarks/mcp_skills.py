"""Latency of the MCP Skills extension: ``skills/list``, ``skills/get``, a ranked listing and ``resources/list``.

    python benchmarks/mcp_skills.py                  # the bundled library, then the ~700 corpus skills
    python benchmarks/mcp_skills.py --only bundled   # a quick look

For each library, ``skill-router mcp`` (stdio) is started as a subprocess and the official ``mcp`` client talks to it
at protocol 2026-07-28, as a host would. Measured, in milliseconds on the client's clock:

- ``skills/list`` through every page (100 skills a page): the first pass (each file read and hashed once) and the
  median of the next ``--repeat`` passes (digests kept while a file's size and modification time stay the same);
- ``skills/get`` of every skill once: median and 95th percentile;
- ``skills/list`` ranked for a request (``_meta["skill-router/query"]``, k 5): median over ``--queries`` requests
  (the first sentence of randomly chosen skills' bodies);
- ``resources/list`` through every page (200 files a page).

The index is built by the server's first start (not timed). Writes benchmarks/results/mcp_skills.json.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import CORPORA, ROOT, save

ROOTS = ["anthropic-skills/skills", "scientific-skills/scientific-skills", "awesome-skills/skills"]
SCRIPT = Path(sys.executable).parent / "skill-router"


def _first_sentence(path: Path) -> str:
    body = path.read_text(encoding="utf-8", errors="replace").split("---", 2)[-1]
    lines = [line.strip() for line in body.splitlines() if line.strip() and not line.startswith(("#", "`", "|"))]
    return re.split(r"(?<=[.!?])\s", lines[0])[0][:300] if lines else ""


async def _pages(client: Any, method: str, key: str) -> tuple[float, int, int]:
    """(ms, pages, items) of one pass through a paginated method."""
    start = time.perf_counter()
    cursor, pages, items = None, 0, 0
    while True:
        page = await _raw(client, method, {"cursor": cursor} if cursor else {})
        pages, items = pages + 1, items + len(page[key])
        cursor = page.get("nextCursor")
        if cursor is None:
            return (time.perf_counter() - start) * 1000, pages, items


async def _raw(client: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    import mcp_types as types
    from pydantic import TypeAdapter

    request = types.Request[dict[str, Any], str](method=method, params=params)
    return await client.session.send_request(request, TypeAdapter(dict[str, Any]))


async def _measure(roots: list[str], index: Path, queries: list[str], repeat: int) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters

    argv = ["mcp", *[a for r in roots for a in ("--skills", r)], "--index-dir", str(index), "--no-log",
            "--no-watch"]
    params = StdioServerParameters(command=str(SCRIPT), args=argv, env={"PYTHONPATH": str(ROOT)})
    async with Client(params, cache=None, read_timeout_seconds=600) as client:
        assert client.protocol_version == "2026-07-28", client.protocol_version
        first, pages, skills = await _pages(client, "skills/list", "skills")
        warm = [(await _pages(client, "skills/list", "skills"))[0] for _ in range(repeat)]
        uris, cursor = [], None
        while True:
            page = await _raw(client, "skills/list", {"cursor": cursor} if cursor else {})
            uris += [s["uri"] for s in page["skills"]]
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        gets = []
        for uri in uris:
            start = time.perf_counter()
            await _raw(client, "skills/get", {"uri": uri})
            gets.append((time.perf_counter() - start) * 1000)
        ranked = []
        for query in queries:
            start = time.perf_counter()
            await _raw(client, "skills/list", {"_meta": {"skill-router/query": query, "skill-router/k": 5}})
            ranked.append((time.perf_counter() - start) * 1000)
        resources_ms, resource_pages, files = await _pages(client, "resources/list", "resources")
    gets.sort()
    return {"skills": skills, "skills_list_pages": pages, "files": files, "resource_pages": resource_pages,
            "skills_list_first_ms": round(first, 1), "skills_list_warm_p50_ms": round(statistics.median(warm), 1),
            "skills_get_p50_ms": round(statistics.median(gets), 2),
            "skills_get_p95_ms": round(gets[int(0.95 * (len(gets) - 1))], 2),
            "ranked_list_p50_ms": round(statistics.median(ranked), 1) if ranked else None,
            "resources_list_ms": round(resources_ms, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=("bundled", "corpus"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--queries", type=int, default=20)
    args = parser.parse_args()
    work = Path(tempfile.gettempdir()) / "skill-router-bench-mcp-skills"
    rng = random.Random(0)
    libraries = {"bundled": [str(ROOT / "skills")], "corpus": [str(CORPORA / r) for r in ROOTS]}
    out = {}
    for name, roots in libraries.items():
        if args.only and name != args.only:
            continue
        files = sorted(p for r in roots for p in Path(r).rglob("SKILL.md"))
        queries = [q for q in (_first_sentence(p) for p in rng.sample(files, min(len(files), args.queries * 2))) if q]
        result = asyncio.run(_measure(roots, work / f"idx-{name}", queries[:args.queries], args.repeat))
        print(name, result, flush=True)
        out[name] = result
    print(save("mcp_skills", out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
