"""What do the body signals cost? Warm route latency and the refresh after one change, on libraries with bodies.

    .venv/bin/python benchmarks/body_cost.py          # about 5 minutes on 2 quiet cores

Libraries are skill folders (SKILL.md with a body, genkit profile: a skill is named by its folder), written to a
temporary folder:

- ``683``: the SKILL.md files of the three ../shared/corpora folders (the first of each folder name);
- ``1000`` and ``10000``: those files again under new folder names, each copy's body starting with a variant
  number in words (``speed.py``'s rule), so every copy has its own body text to index and embed (copies share
  their description's embedding, as copied skills do in real libraries).

For each: the cold build, the warm route p50 / p95 over the real-library dev requests
(benchmarks/data/corpora-dev.jsonl), and the refresh after one SKILL.md's body changed (a new router over the same
index folder; texts embedded and seconds: the body's first line changes, so body_bm25 is updated; the default
does not embed bodies, so nothing is embedded), each with the default configuration (body BM25 on) and with
``body="none"``. Writes benchmarks/results/body_cost.json.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import CORPORA, save  # noqa: E402
from benchmarks.speed import number_words  # noqa: E402

ROOTS = ["anthropic-skills/skills", "scientific-skills/scientific-skills", "awesome-skills/skills"]
SIZES = (683, 1000, 10000)


def sources() -> list[str]:
    seen: dict[str, str] = {}
    for root in ROOTS:
        for path in sorted((CORPORA / root).glob("*/SKILL.md")):
            seen.setdefault(path.parent.name, path.read_text(encoding="utf-8", errors="replace"))
    return list(seen.values())


def variant(text: str, n: int) -> str:
    """The same SKILL.md with ``Variant <n>`` at the top of its body."""
    marker = f"Variant {number_words(n)}."
    head, sep, body = text.partition("\n---\n")
    return f"{head}{sep}{marker}\n{body}" if sep else text


def write_library(folder: Path, texts: list[str], n: int) -> Path:
    for i in range(n):
        skill = folder / f"s{i:05d}"
        skill.mkdir(parents=True)
        source = texts[i % len(texts)]
        (skill / "SKILL.md").write_text(source if i < len(texts) else variant(source, i), encoding="utf-8")
    return folder


def measure(library: Path, index: Path, queries: list[str], body: str) -> dict[str, Any]:
    from router import Router
    from router.config import RouterConfig

    config = RouterConfig(route_above=0) if body == "default" else RouterConfig(route_above=0, body="none")
    start = time.perf_counter()
    router = Router.from_skills([str(library)], "genkit", config, index_folder=str(index))
    cold = time.perf_counter() - start
    for query in queries[:5]:
        router.rank(query)
    times = []
    for query in queries:
        start = time.perf_counter()
        router.rank(query)
        times.append(1000 * (time.perf_counter() - start))
    times.sort()
    for folder in sorted(library.iterdir()):  # the first skill whose body the variant rule can change
        text = (folder / "SKILL.md").read_text(encoding="utf-8")
        if variant(text, 999_999) != text:
            (folder / "SKILL.md").write_text(variant(text, 999_999), encoding="utf-8")
            break
    start = time.perf_counter()
    again = Router.from_skills([str(library)], "genkit", config, index_folder=str(index))
    refresh = time.perf_counter() - start
    return {"skills": len(router.skills), "cold_build_s": round(cold, 2), "embedded": router.embedded_count,
            "route_p50_ms": round(statistics.median(times), 2),
            "route_p95_ms": round(times[int(0.95 * len(times))], 2),
            "refresh_s": round(refresh, 3), "refresh_embedded": again.embedded_count}


def main() -> None:
    texts = sources()
    lines = (ROOT / "benchmarks/data/corpora-dev.jsonl").read_text().splitlines()
    queries = [json.loads(line)["query"] for line in lines if line.strip()]
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as work:
        for n in SIZES:
            for body in ("default", "none"):
                base = Path(work) / f"{n}-{body}"
                library = write_library(base / "skills", texts, min(n, len(texts)) if n == SIZES[0] else n)
                row = measure(library, base / "index", queries, body)
                results[f"{n}/{body}"] = row
                print(f"{n:>6} {body:8} {row}", flush=True)
    save("body_cost", {"results": results, "queries": len(queries)})


if __name__ == "__main__":
    main()
