"""Pseudo-relevance feedback and a near-twin decider, measured on the dev sets before any is made a default.

    python benchmarks/feedback_choice.py

Single-skill rows of users-corpora-dev, users-bundled-dev and corpora-dev (the ~700 corpus skills), each scored
by the default router; every method below re-ranks the default's fused scores ``F`` (requests x skills):

- ``rm3-desc`` / ``rm3-passages`` (lexical feedback, RM3-style, Lavrenko & Croft 2001; Abdul-Jaleel et al. 2004):
  the top ``m`` skills by ``F`` are the feedback set, weighted by ``softmax(F)`` over it; a term's feedback weight
  is the weighted sum of its BM25 contributions in those skills' texts (the description index, or the passages of
  the bodies summed per skill), the request's own terms left out, the best ``T`` terms kept and normalised to sum
  1; the expansion score of a skill is the weighted sum of those terms' BM25 contributions in it, added to ``F``
  as ``w * zscore(expansion)``.
- ``rocchio`` (dense feedback, Rocchio 1971): ``q' = q + beta * mean(top m description embeddings)``, cosine of
  ``q'`` with every description, added as ``w * zscore(cosine)``.
- ``twin`` (near-twins): when the first two skills' descriptions have cosine >= ``tau``, the two swap if the
  request's idf mass over the words only the second skill's name, description and body hold exceeds that over the
  words only the first holds.

Prints hit@1 / hit@5 / MRR per set and the vocab and zh groups, and the paired bootstrap of each method against
the default (hit@1 and MRR, ``router.evaluation.stats.paired_comparison``). Writes
benchmarks/results/feedback_choice.json.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
from scipy import sparse

from common import ROOT, read_jsonl, save
from indexes.fusion import normalise
from router import glossary
from router.config import RouterConfig
from router.evaluation.stats import paired_comparison
from router.texts import index_text
from users import DATA, load, query_of

SETS = [("users-corpora", "corpora", DATA / "users-corpora-dev.jsonl"),
        ("users-bundled", "bundled", DATA / "users-bundled-dev.jsonl"),
        ("corpora-dev", "corpora", ROOT / "benchmarks" / "data" / "corpora-dev.jsonl")]


def firsts(fused: np.ndarray, golds: list[set[int]]) -> list[int | None]:
    out = []
    for row, gold in zip(fused, golds, strict=True):
        order = np.argsort(-row, kind="stable")[:10]
        out.append(next((k + 1 for k, d in enumerate(order) if d in gold), None))
    return out


def values(found: list[int | None]) -> dict[str, np.ndarray]:
    return {"hit@1": np.array([float(f == 1) for f in found]),
            "hit@5": np.array([float(f is not None and f <= 5) for f in found]),
            "mrr": np.array([1.0 / f if f else 0.0 for f in found])}


def rm3(weights: sparse.csr_matrix, fused: np.ndarray, own: list[set[int]], m: int, terms: int) -> np.ndarray:
    by_doc, by_term = weights.tocsc(), weights.tocsr()
    out = np.zeros_like(fused)
    for i in range(len(fused)):
        top = np.argsort(-fused[i], kind="stable")[:m]
        share = np.exp(fused[i, top] - fused[i, top].max())
        feedback = np.asarray(by_doc[:, top] @ (share / share.sum())).ravel()
        feedback[list(own[i])] = 0
        if (feedback > 0).sum() > terms:
            feedback[feedback < np.partition(feedback, -terms)[-terms]] = 0
        if feedback.sum() > 0:
            out[i] = np.asarray(by_term.T @ (feedback / feedback.sum())).ravel()
    return out


def twin_swap(router: Any, texts: tuple[str, ...], fused: np.ndarray, vectors: np.ndarray, tau: float) -> np.ndarray:
    tokenizer = router.signals.bm25.tokenizer
    words = [set(tokenizer(index_text(s) + " " + (s.body or ""))) for s in router.skills]
    df: dict[str, int] = {}
    for found in words:
        for word in found:
            df[word] = df.get(word, 0) + 1
    n = len(words)
    idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}
    out = fused.copy()
    for i, text in enumerate(texts):
        first, second = np.argsort(-fused[i], kind="stable")[:2]
        if vectors[first] @ vectors[second] < tau:
            continue
        asked = set(tokenizer(glossary.with_glosses(text)))
        if sum(idf[w] for w in asked & (words[second] - words[first])) > \
                sum(idf[w] for w in asked & (words[first] - words[second])):
            out[i, second] = fused[i, first] + 1e-9
    return out


def main() -> None:
    config = RouterConfig()
    table: dict[str, dict[str, Any]] = {}
    for name, library, path in SETS:
        rows = [r for r in read_jsonl(path) if r["gold"] and r.get("kind", "single") == "single"
                and len(r.get("needs") or []) < 2]
        router, by_key = load(library, config)
        position = {s.id: i for i, s in enumerate(router.skills)}
        golds = [{position[by_key[g]] for g in r["gold"] if g in by_key} for r in rows]
        groups = {"all": list(range(len(rows))),
                  "vocab": [i for i, r in enumerate(rows) if "vocab" in r.get("tags", [])],
                  "zh": [i for i, r in enumerate(rows) if r.get("lang") == "zh"]}
        scored = router.score_many([query_of(r) for r in rows])
        fused = router.fuse(scored)
        descriptions = router.signals.dense.vectors.astype(np.float64)
        methods: dict[str, np.ndarray] = {"default": fused}
        passages = router.passages
        sources = {"desc": (router.signals.bm25, router.signals.bm25._weights)}
        if passages is not None:
            owners = sparse.csr_matrix((np.ones(len(passages.owners)), (np.arange(len(passages.owners)),
                                        passages.owners)), shape=(len(passages.owners), len(router.skills)))
            sources["passages"] = (passages.index, (passages.index._weights @ owners).tocsr())
        routed = [glossary.with_glosses(t) for t in scored.texts]
        for source, (index, weights) in sources.items():
            own = [set(index._query_rows(t)) for t in routed]
            for m, terms, w in itertools.product((3, 10), (10, 30), (0.2, 0.4)):
                methods[f"rm3-{source} m={m} T={terms} w={w}"] = \
                    fused + w * normalise(rm3(weights, fused, own, m, terms), "zscore")
        for m, beta, w in itertools.product((3, 5, 10), (0.5, 1.0), (0.3, 0.6, 1.0)):
            top = np.argsort(-fused, axis=1, kind="stable")[:, :m]
            query = scored.vectors.astype(np.float64) + beta * descriptions[top].mean(axis=1)
            methods[f"rocchio m={m} beta={beta} w={w}"] = fused + w * normalise(query @ descriptions.T, "zscore")
        for tau in (0.6, 0.7):
            methods[f"twin tau={tau}"] = twin_swap(router, scored.texts, fused, descriptions, tau)
        base = values(firsts(fused, golds))
        for method, scores in methods.items():
            got = values(firsts(scores, golds))
            entry = table.setdefault(method, {})
            entry[name] = {group: {m: round(100 * float(v[rows_of].mean()), 1) if rows_of else None
                                   for m, v in got.items()} | {"n": len(rows_of)}
                           for group, rows_of in groups.items()}
            for measure in ("hit@1", "mrr"):
                test = paired_comparison(base[measure], got[measure])
                entry[name]["all"][f"{measure} p"] = round(test.p_value, 3)
                entry[name]["all"][f"{measure} won/lost"] = f"{test.wins}/{test.losses}"
    print(f"{'method':34} " + " ".join(f"{n:>34}" for n, _, _ in SETS) + f" {'users-corpora vocab':>20}")
    for method, entry in table.items():
        cells = []
        for name, _, _ in SETS:
            row = entry[name]["all"]
            cells.append(f"{row['hit@1']:5.1f} {row['hit@5']:5.1f} {row['mrr']:5.1f} p={row['mrr p']:<5} "
                         f"{row['mrr won/lost']:>6}")
        vocab = entry["users-corpora"]["vocab"]
        print(f"{method:34} " + " ".join(f"{c:>34}" for c in cells) + f" {vocab['hit@1']:9.1f} {vocab['mrr']:9.1f}")
    save("feedback_choice", {"table": table})


if __name__ == "__main__":
    main()
