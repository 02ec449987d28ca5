"""Routing accuracy on real skill libraries: the ~700 SKILL.md files of ../shared/corpora, real requests.

    python benchmarks/real_libraries.py            # test split (report); about 5 minutes on 2 cores
    python benchmarks/real_libraries.py dev        # the dev split the defaults were chosen on

Requests: benchmarks/data/corpora-{dev,test}.jsonl (written before any routing; see benchmarks/data/README.md).
Gold skills are folders relative to ../shared/corpora; the three folders are loaded together with the agentskills
profile (a copied skill whose name repeats is kept once, as the profile keeps it), and a gold path maps to the
skill the profile registered for it.

Retrievers: ``bm25`` and ``dense`` alone, ``old default`` (the configuration before body signals: name words and
description only), ``previous default`` (before issue 20: the body lead's BM25, no passages, no split),
``default`` (today's RouterConfig) and ``without body head`` (the default with ``passage_dense`` at 0). For each: hit@1,
hit@5 and MRR over requests with gold, multi-skill recall@5 (requests that need two or more skills: the share of
needed skills, each need met by any of its equally good paths, in the top 5), with 95% bootstrap intervals, a paired
bootstrap against the old default (the default against the previous default and against itself without its body
head), and a row per language group (English, not English). Writes benchmarks/results/real_libraries-<split>.json.
"""

from __future__ import annotations

import sys
import tempfile
from typing import Any

import numpy as np

from common import CORPORA, ROOT, corpus_folder, read_jsonl, save
from router import Router
from router.config import RouterConfig
from router.evaluation.labels import Request
from router.evaluation.retrievers import retrievers_for
from router.evaluation.stats import bootstrap_ci, paired_comparison

DATA = ROOT / "benchmarks" / "data"
ROOTS = [CORPORA / "anthropic-skills/skills", CORPORA / "scientific-skills/scientific-skills",
         CORPORA / "awesome-skills/skills"]
OLD_DEFAULT = {"body": "none", "dense_name": True, "split_weight": 0.0, "glosses": False,
               "weights": {"bm25": 0.5, "dense": 1.0, "examples": 2.0, "body_bm25": 0.0, "body_dense": 0.0,
                           "passages": 0.0}}
# The default before issue 20: the body lead's BM25 at 0.5, no passages, no split of several-part requests, no
# glosses of Chinese words.
PREVIOUS = {"split_weight": 0.0, "glosses": False, "weights": {"body_bm25": 0.5, "passages": 0.0,
                                                               "passage_dense": 0.0}}
# The default without the embedded body head (router.signals.passage_dense), what it adds is measured against.
NO_HEAD = {"weights": {"passage_dense": 0.0}}
DEPTH = 10


def rankings(router: Router, requests: list[Request], names: list[str]) -> dict[str, list[list[str]]]:
    retrievers = retrievers_for(router, requests, names, depth=DEPTH)
    return {name: [[pair[0] for pair in retrievers[name](r)] for r in requests] for name in names}


def per_request(ranking: list[str], gold: set[str], needs: list[set[str]] | None) -> dict[str, float]:
    first = next((i + 1 for i, ident in enumerate(ranking) if ident in gold), None)
    out = {"hit@1": float(first == 1), "hit@5": float(first is not None and first <= 5),
           "mrr": 1.0 / first if first else 0.0}
    if needs:
        top = set(ranking[:5])
        out["multi_recall@5"] = sum(bool(need & top) for need in needs) / len(needs)
    return out


def summarise(values: list[dict[str, float]], metric: str) -> dict[str, Any]:
    xs = [v[metric] for v in values if metric in v]
    if not xs:
        return {"mean": None, "n": 0}
    _, low, high = bootstrap_ci(xs, confidence=0.95, seed=0)
    return {"mean": round(100 * float(np.mean(xs)), 1), "low": round(100 * low, 1), "high": round(100 * high, 1),
            "n": len(xs)}


def main(split: str) -> None:
    rows = read_jsonl(DATA / f"corpora-{split}.jsonl")
    with tempfile.TemporaryDirectory() as folder:
        roots = [str(r) for r in ROOTS]
        new = Router.from_skills(roots, "agentskills", RouterConfig(route_above=0), index_folder=folder)
        old = new.with_config(RouterConfig(route_above=0, **OLD_DEFAULT))
        by_path = {corpus_folder(s.path): s.id for s in new.skills}
        requests, gold, needs, langs = [], [], [], []
        for row in rows:
            ids = sorted({by_path[g] for g in row["gold"] if g in by_path})
            requests.append(Request(row["id"], row["query"], tuple(ids)))
            gold.append(set(ids))
            needs.append([{by_path[p] for p in need if p in by_path} for need in row["needs"]]
                         if row.get("needs") else None)
            langs.append("English" if row["lang"] == "en" else "not English")
        ranked = rankings(new, requests, ["bm25", "dense", "default"])
        ranked["old default"] = rankings(old, requests, ["default"])["default"]
        ranked["previous default"] = rankings(new.with_config(RouterConfig(route_above=0, **PREVIOUS)), requests,
                                              ["default"])["default"]
        ranked["without body head"] = rankings(new.with_config(RouterConfig(route_above=0, **NO_HEAD)), requests,
                                               ["default"])["default"]
    rows_with_gold = [i for i, g in enumerate(gold) if g]
    table: dict[str, Any] = {}
    values = {name: [per_request(ranked[name][i], gold[i], needs[i]) for i in rows_with_gold] for name in ranked}
    for name in ("bm25", "dense", "old default", "previous default", "without body head", "default"):
        table[name] = {m: summarise(values[name], m) for m in ("hit@1", "hit@5", "mrr", "multi_recall@5")}
        for group in ("English", "not English"):
            chosen = [v for v, i in zip(values[name], rows_with_gold) if langs[i] == group]
            table[name][group] = {m: summarise(chosen, m) for m in ("hit@1", "hit@5", "mrr")}
    paired = {}
    for name in ("bm25", "dense", "default"):
        for metric in ("hit@1", "hit@5", "mrr"):
            p = paired_comparison([v[metric] for v in values["old default"]], [v[metric] for v in values[name]],
                                  confidence=0.95, seed=0)
            paired[f"{name} - old default {metric}"] = {
                "diff": round(100 * p.mean_diff, 1), "low": round(100 * p.low, 1), "high": round(100 * p.high, 1),
                "p": round(p.p_value, 4), "wins": p.wins, "losses": p.losses}
    print(f"real libraries, {split}: {len(rows)} requests, {len(rows_with_gold)} with gold, {len(new.skills)} skills")
    print(f"{'retriever':16} {'hit@1':>18} {'hit@5':>18} {'MRR':>18} {'multi R@5':>18} {'en hit@5':>9} "
          f"{'non-en hit@5':>12}")
    for name, row in table.items():
        cells = [f"{row[m]['mean']:5.1f} [{row[m]['low']:4.1f},{row[m]['high']:5.1f}]"
                 for m in ("hit@1", "hit@5", "mrr", "multi_recall@5")]
        print(f"{name:16} " + " ".join(f"{c:>18}" for c in cells) +
              f" {row['English']['hit@5']['mean']:9.1f} {row['not English']['hit@5']['mean']:12.1f}")
    pairs = (("previous default", "default"), ("without body head", "default"))
    for before, after, metric in [(b, a, m) for b, a in pairs for m in ("hit@1", "hit@5", "mrr")]:
        p = paired_comparison([v[metric] for v in values[before]], [v[metric] for v in values[after]],
                              confidence=0.95, seed=0)
        paired[f"{after} - {before} {metric}"] = {
            "diff": round(100 * p.mean_diff, 1), "low": round(100 * p.low, 1), "high": round(100 * p.high, 1),
            "p": round(p.p_value, 4), "wins": p.wins, "losses": p.losses}
    for key, value in paired.items():
        print(f"{key:38} {value['diff']:+5.1f} [{value['low']:+5.1f}, {value['high']:+5.1f}] p={value['p']:.3f} "
              f"wins {value['wins']} losses {value['losses']}")
    save(f"real_libraries-{split}", {"split": split, "requests": len(rows), "with_gold": len(rows_with_gold),
                                     "skills": len(new.skills), "table": table, "paired": paired,
                                     "old_default": OLD_DEFAULT})


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "test")
