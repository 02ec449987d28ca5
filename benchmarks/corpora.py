"""Overlap and prompt-token savings on the real public skill libraries in ../shared/corpora.

    python benchmarks/corpora.py

For each profile: how many skills it loads from the three corpus folders together, the tokens (cl100k_base) of
the full catalogue it would render, and the mean tokens of a routed top-5 catalogue over 200 requests (the first
sentence of 200 randomly chosen descriptions, seed 0: only the size of the routed catalogue matters here, not
which skills it picks). Then the overlap analysis of the whole library (agentskills profile): time, exact
duplicates, and the top near-duplicate pairs. Writes benchmarks/results/corpora.json.
"""

from __future__ import annotations

import random
import re
import tempfile
import time

from common import CORPORA, save
from router import Router
from router.config import RouterConfig
from router.index import LibraryIndex, LibrarySource
from router.overlap import analyse_overlap
from router.spec import LibrarySpec
from router.tokens import TokenCounter

ROOTS = [str(CORPORA / "anthropic-skills/skills"), str(CORPORA / "scientific-skills/scientific-skills"),
         str(CORPORA / "awesome-skills/skills")]


def main() -> None:
    counter = TokenCounter("cl100k_base")
    out: dict = {"profiles": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for profile in ("genkit", "unreal", "agentskills"):
            start = time.perf_counter()
            source = LibrarySource.read(LibrarySpec.create(ROOTS, profile=profile, index_dir=f"{tmp}/idx"),
                                        RouterConfig(route_above=0))
            load_s = time.perf_counter() - start
            full = counter.count(source.profile.render(list(source.skills)))
            rng = random.Random(0)
            queries = [re.split(r"(?<=[.!?])\s", s.description)[0][:200]
                       for s in rng.sample(list(source.skills), 200)]
            start = time.perf_counter()
            router = Router(LibraryIndex.create(source))
            build_s = time.perf_counter() - start
            routed = [counter.count(router.render(q, 5)) for q in queries]
            row = {"skills": len(router.skills), "load_s": round(load_s, 3), "index_build_s": round(build_s, 2),
                   "full_tokens": full, "routed_top5_mean_tokens": round(sum(routed) / len(routed), 1),
                   "saving": round(1 - sum(routed) / len(routed) / full, 4)}
            out["profiles"][profile] = row
            print(profile, row, flush=True)
        start = time.perf_counter()
        report = analyse_overlap(list(router.skills), encoder=router.encoder, top=40)
        elapsed = time.perf_counter() - start
    exact = [p for p in report.pairs if p.score >= 0.99995]
    near = [p for p in report.pairs if p.score < 0.99995][:10]
    out["overlap"] = {"seconds": round(elapsed, 2), "skills": report.n_skills, "exact_duplicates_in_top40": len(exact),
                      "top_near_duplicates": [{"a": p.a, "b": p.b, "score": p.score, "cosine": round(p.cosine, 4),
                                               "lexical": round(p.lexical, 4)} for p in near],
                      "clusters": len(report.clusters)}
    print(f"overlap of {report.n_skills} skills in {elapsed:.1f} s: {len(exact)} exact duplicates in the top 40")
    for p in near:
        print(f"  {p.score:.3f}  {p.a} ~ {p.b}")
    save("corpora", out)


if __name__ == "__main__":
    main()
