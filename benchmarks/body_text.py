"""Does indexing part of each skill's body help routing? ``RouterConfig.body`` compared on two measurements.

    python benchmarks/body_text.py              # both measurements (about 17 minutes on 2 cores)
    python benchmarks/body_text.py bundled      # labelled requests on skills/ only (about 2 minutes)
    python benchmarks/body_text.py corpora      # heading proxy on the shared corpora only (about 15 minutes)

Body modes (router/texts.py): ``none`` indexes the name words and the description; ``headings`` adds the body's
Markdown headings; ``lead-50`` / ``lead-150`` add the first 50 / 150 words of the body.

1. Labelled requests (``bundled``). The bundled library ``skills/`` with benchmarks/data/bundled-dev.jsonl and
   bundled-test.jsonl (written by hand before any routing result was seen; see benchmarks/data/README.md). For each
   body mode and each retriever (``bm25``, ``dense``, ``default`` = the fused router), hit@1, recall@3, recall@5 and
   MRR on the requests that have a gold skill. The choice is made on dev; test is reported beside it and is not
   used to choose.

2. Heading proxy (``corpora``). The real libraries under ``corpora/`` (anthropic-skills, scientific-skills,
   awesome-skills, loaded together with the agentskills profile) have no labelled requests, so a stand-in request
   is made from each skill: its first body heading that is not the title (the title is the first heading when
   it is a level-1 heading, or any heading that equals the skill's name words); skills without such a heading are
   skipped. The name and the description are never used as the request, since they are indexed in every mode.
   The score is recall@5 of finding the skill from that heading. Two request sets are reported:
   ``first-heading`` (exactly that rule; most of these are generic, "Use this skill when", "Overview",
   "Capabilities", so every mode scores low) and ``unique-heading`` (each skill's first section heading whose
   text is a heading of no other skill in the corpus, e.g. "Authentication Setup" for pyzotero; skills without
   one are skipped).

   THIS IS A PROXY WITH A BIAS TOWARDS BODY TEXT: the request text is copied from the body, so under
   ``headings`` it is literally in the indexed text of its own skill, and under ``lead`` it usually is (the first
   heading tends to fall within the first 50-150 words). It measures whether body text makes a skill findable
   from its own content, not whether real requests route better; read it as an upper bound on what body text
   can add, and trust measurement 1 for the choice of default.

What the numbers said (2026-11-30). On the labelled requests no body mode beats ``none`` for the router: dev MRR
0.963 (none), 0.948 (headings, significantly worse, p = 0.03), 0.966 (lead-50), 0.958 (lead-150); test 0.928,
0.921, 0.941, 0.939, every interval of the difference from ``none`` spanning zero. BM25 alone gains a little
from ``lead`` (+0.02 to +0.03 MRR, not significant). The heading proxy gains a lot from every mode (unique-heading
recall@5 of the router 0.58 -> 0.86 with headings), which is the bias described above, not evidence about real
requests. The default stays ``body="none"``.

Results: benchmarks/results/body_text.json (running one part keeps the other part's saved numbers; each part
records the command and date that produced it).
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from common import CORPORA, RESULTS, ROOT, save
from router import Router
from router.evaluation.retrievers import retrievers_for
from router.config import RouterConfig
from router.evaluation import evaluate, load_requests
from router.evaluation.labels import Request
from router.evaluation.stats import paired_comparison
from router.texts import name_words

DATA = ROOT / "benchmarks" / "data"
MODES: dict[str, dict[str, Any]] = {
    "none": {"body": "none"},
    "headings": {"body": "headings"},
    "lead-50": {"body": "lead", "body_tokens": 50},
    "lead-150": {"body": "lead", "body_tokens": 150},
}
RETRIEVERS = ("bm25", "dense", "default")
METRICS = ("hit@1", "recall@3", "recall@5", "mrr")
CORPUS_FOLDERS = ("anthropic-skills", "scientific-skills", "awesome-skills")
# Level kept (unlike router.texts, which only needs the text) so the title can be told from section headings.
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)
_FENCED = re.compile(r"^ {0,3}(```|~~~).*?(?:^ {0,3}\1[^\n]*$|\Z)", re.MULTILINE | re.DOTALL)


def build(roots: Sequence[Path], mode: str, folder: str) -> Router:
    """A router over ``roots`` that indexes body text as ``mode`` says; every request is routed (route_above=0)."""
    config = RouterConfig(route_above=0, **MODES[mode])
    return Router.from_skills([str(r) for r in roots], "agentskills", config, index_folder=folder)


def score(router: Router, requests: list[Request]) -> tuple[dict[str, dict[str, float]], dict[str, Any]]:
    """hit@1, recall@3, recall@5 and MRR per retriever over the requests that have a gold skill, and the
    per-request values (same request order for every mode) that the paired comparisons resample."""
    retrievers = retrievers_for(router, requests, list(RETRIEVERS), depth=10)
    result = evaluate(requests, retrievers, ks=(1, 3, 5, 10), progress=False)
    metrics = {r.name: {m: round(float(r.metrics[m]), 4) for m in METRICS} for r in result.retrievers}
    return metrics, {r.name: r.per_request for r in result.retrievers}


def against_none(per_request: dict[str, dict[str, Any]], metric: str) -> dict[str, dict[str, dict[str, float]]]:
    """Paired bootstrap of each body mode against ``none`` on ``metric`` (Efron and Tibshirani 1993, 16.4):
    mean difference, 95% interval, p-value and requests won / lost."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for mode in MODES:
        if mode == "none":
            continue
        for retriever in RETRIEVERS:
            paired = paired_comparison(per_request["none"][retriever][metric], per_request[mode][retriever][metric])
            out.setdefault(mode, {})[retriever] = {
                "diff": round(paired.mean_diff, 4), "low": round(paired.low, 4), "high": round(paired.high, 4),
                "p": round(paired.p_value, 4), "wins": paired.wins, "losses": paired.losses}
    return out


def print_paired(title: str, table: dict[str, dict[str, dict[str, float]]]) -> None:
    print(f"\n{title}")
    for mode, per_retriever in table.items():
        for retriever, c in per_retriever.items():
            print(f"{mode:10} {retriever:9} {c['diff']:+.3f} [{c['low']:+.3f}, {c['high']:+.3f}] p={c['p']:.3f} "
                  f"wins {c['wins']} losses {c['losses']}")


def section_headings(body: str, name: str) -> list[str]:
    """The Markdown headings of ``body`` other than the title, in order (headings in code fences are code)."""
    title = " ".join(name_words(name).lower().split())
    headings = _HEADING.findall(_FENCED.sub("", body))
    return [text.strip() for position, (hashes, text) in enumerate(headings)
            if not ((position == 0 and len(hashes) == 1) or _norm(text) == title)]


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def proxy_requests(router: Router) -> dict[str, list[Request]]:
    """The heading-proxy request sets, one request per skill, gold = that skill.

    ``first-heading``: the first section heading. ``unique-heading``: the first section heading whose text is a
    heading of no other skill in the corpus (skips "Overview", "Use this skill when" and the like).
    """
    headings = {s.id: section_headings(s.body, s.name) for s in router.skills}
    skills_with = Counter(text for texts in headings.values() for text in {_norm(t) for t in texts})
    first = [Request(id=f"h-{sid}", query=texts[0], gold=(sid,)) for sid, texts in headings.items() if texts]
    unique = []
    for sid, texts in headings.items():
        text = next((t for t in texts if skills_with[_norm(t)] == 1), "")
        if text:
            unique.append(Request(id=f"u-{sid}", query=text, gold=(sid,)))
    return {"first-heading": first, "unique-heading": unique}


def print_table(title: str, table: dict[str, dict[str, dict[str, float]]], metrics: Sequence[str]) -> None:
    print(f"\n{title}")
    print(f"{'mode':10} {'retriever':9} " + " ".join(f"{m:>9}" for m in metrics))
    for mode, per_retriever in table.items():
        for retriever, values in per_retriever.items():
            print(f"{mode:10} {retriever:9} " + " ".join(f"{values[m]:9.3f}" for m in metrics))


def bundled() -> dict[str, Any]:
    """Measurement 1: labelled requests on the bundled library, dev and test."""
    out: dict[str, Any] = {}
    per_request: dict[str, dict[str, Any]] = {}
    for mode in MODES:
        with tempfile.TemporaryDirectory() as folder:
            router = build([ROOT / "skills"], mode, folder)
            known = {s.id for s in router.skills}
            for split in ("dev", "test"):
                requests = load_requests(DATA / f"bundled-{split}.jsonl", known_ids=known)
                out.setdefault(split, {})[mode], per_request.setdefault(split, {})[mode] = score(router, requests)
    for split in ("dev", "test"):
        print_table(f"bundled {split} ({DATA / f'bundled-{split}.jsonl'})", out[split], METRICS)
        out[f"{split}_mrr_vs_none"] = against_none(per_request[split], "mrr")
        print_paired(f"bundled {split}: MRR difference from none, paired bootstrap", out[f"{split}_mrr_vs_none"])
    best = {r: max(MODES, key=lambda m: (out["dev"][m][r]["mrr"], m == "none")) for r in RETRIEVERS}
    out["best_on_dev_by_mrr"] = best
    # A mode replaces the default only when the router's dev MRR gain is clear of zero; a handful of requests
    # moving either way on 156 requests is noise, and body text makes every index larger and slower to build.
    clear = [m for m, c in out["dev_mrr_vs_none"].items() if c["default"]["low"] > 0]
    out["supported_default"] = max(clear, key=lambda m: out["dev"][m]["default"]["mrr"]) if clear else "none"
    print(f"\nbest body mode on dev by MRR (ties go to none): {best}")
    print(f"default the dev numbers support (router MRR gain with a 95% interval above zero, else none): "
          f"{out['supported_default']}")
    return out


def corpora() -> dict[str, Any]:
    """Measurement 2: the heading proxy on the three real corpora, recall@5 per body mode and retriever."""
    roots = [CORPORA / name for name in CORPUS_FOLDERS]
    out: dict[str, Any] = {"recall@5": {}, "recall@5_vs_none": {}}
    per_request: dict[str, dict[str, Any]] = {}
    for mode in MODES:
        with tempfile.TemporaryDirectory() as folder:
            router = build(roots, mode, folder)
            sets = proxy_requests(router)
            out["skills"] = len(router.skills)
            out["requests"] = {name: len(requests) for name, requests in sets.items()}
            for name, requests in sets.items():
                out["recall@5"].setdefault(name, {})[mode], per_request.setdefault(name, {})[mode] = \
                    score(router, requests)
            print(f"corpora {mode}: {len(router.skills)} skills, {out['requests']}", flush=True)
    for name, table in out["recall@5"].items():
        print_table(f"corpora heading proxy: {name} ({out['requests'][name]} requests)", table, ("recall@5",))
        for per_retriever in table.values():
            for retriever, values in per_retriever.items():
                per_retriever[retriever] = values["recall@5"]
        out["recall@5_vs_none"][name] = against_none(per_request[name], "recall@5")
        print_paired(f"corpora {name}: recall@5 difference from none", out["recall@5_vs_none"][name])
    return out


def main(argv: Sequence[str]) -> None:
    parts = list(argv) or ["bundled", "corpora"]
    unknown = sorted(set(parts) - {"bundled", "corpora"})
    if unknown:
        raise SystemExit(f"unknown part(s) {', '.join(unknown)}: choose bundled and/or corpora")
    payload: dict[str, Any] = {"modes": MODES, "retrievers": list(RETRIEVERS)}
    # Running one part keeps the other part's saved numbers, so a re-run of the fast part leaves a whole file.
    previous = RESULTS / "body_text.json"
    if previous.exists():
        saved = json.loads(previous.read_text())
        for part in ("bundled", "corpora"):
            if part in saved:
                payload[part] = {"command": saved["command"], "date": saved["date"], **saved[part]}
    for part, measure in (("bundled", bundled), ("corpora", corpora)):
        if part in parts:
            payload[part] = {"command": f"python benchmarks/body_text.py {part}", "date": time.strftime("%Y-%m-%d"),
                             **measure()}
    print(f"\nwrote {save('body_text', payload)}")


if __name__ == "__main__":
    main(sys.argv[1:])
