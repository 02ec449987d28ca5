"""Methods for the vocabulary gap and for description-only catalogues, measured on the dev sets before any is kept.

    python benchmarks/vocab_choice.py                      # every family below on the six dev sets
    python benchmarks/vocab_choice.py --only prf           # one family (repeatable)
    python benchmarks/vocab_choice.py --only prf --gated   # feedback only where BM25 finds little

The sets are name_choice.py's dev sets (single-skill rows of users-corpora-dev, corpora-dev, users-bundled-dev and
bundled-dev; MetaTool single-tool dev; Seal-Tools dev with its multi-tool recall@5). The skill libraries are built
with ``passage_dense`` 0.5 so that both baselines come from one scoring: "off" is the default (passage_dense left
out), "on" weighs it 0.5 (the catalogues have no bodies: their "on" is their "off"). Every method re-ranks a
baseline's fused scores ``F`` (requests x skills); the request split's and the conversation context's shares of
``F`` are kept as they are, and a changed signal is fused again by the default weights ("refused", a check,
reproduces the baseline):

- ``tnx`` (term neighbours, a soft match through the library's own words): every word of the library's names and
  descriptions (``desc``) or of those and its bodies (``all``) is embedded once, at its surface form (the most
  frequent one of its BM25 stem). A request's unit embedding picks its ``K`` nearest words with cosine above
  ``tau`` that the request does not contain; their BM25 contributions, weighted by ``cos - tau``, are added to the
  ``bm25`` (and ``passages``) scores times ``alpha``, or fused apart (``apart``: ``0.1 * zscore``).
- ``rocchio-gated`` (query-side dense feedback on confident requests only): when the first skill leads the second
  by at least ``margin`` (fused units), ``q' = q + beta * v(top 1)``; ``w * zscore(cos(q', descriptions))`` is added.
- ``reliab`` (per-request signal reliability): each signal's z-scores weighted by ``(max z / sqrt(2 ln n)) **
  gamma`` (``n`` skills); ``zrrf``: ``lam * zscore`` of the same signals' weighted RRF added to ``F``; ``mnz``:
  ``lam`` times how many signals rank a skill in their top ``top`` (CombMNZ's count).
- ``qtw`` (query words weighted by meaning): each request word's BM25 contribution times ``cos(request, word) **
  power`` over the request's mean of those weights (``desc-only``: the ``bm25`` signal only).
- ``prf`` (RM3-style feedback filtered by meaning): the words of the top ``m`` skills' descriptions, weighted by
  ``softmax(F)`` over them, their BM25 weight there and ``cos(request, word) - tau`` (below ``tau``: none), the
  request's own words left out, the best 10 normalised to sum 1; their BM25 contributions added to ``bm25`` times
  ``alpha`` or apart. ``--gated``: only for requests whose best ``bm25`` z-score is below ``gate``.

Prints, per baseline, every method's hit@1 / hit@5 / MRR per set, the mean MRR over the sets and the worst set's
MRR change (the project's rule: the best mean MRR with no set more than 0.5 below the baseline); wins and losses
per measure are in the JSON. Writes benchmarks/results/vocab_choice[-FAMILY][-gated].json.
"""

from __future__ import annotations

import argparse
import itertools
import math
import time
from collections import Counter
from typing import Any

import numpy as np

from common import save
from indexes.fusion import normalise
from indexes.tokenize import Tokenizer
from name_choice import Rows, catalogue_set, paired
from passage_dense_choice import ranked as outcomes
from router import Router, glossary
from router import passages as passage_index
from router.config import RouterConfig
from router.signals.name_dense import name_weights
from router.texts import index_text
from users import DATA, load, query_of
from common import read_jsonl

RNG_SEED = 20
SURFACE = Tokenizer(stem="none")


def library_sets() -> dict[str, tuple[Router, Rows]]:
    out = {}
    config = RouterConfig(weights={"passage_dense": 0.5})
    for library, names in (("corpora", ("users-corpora-dev", "corpora-dev")),
                           ("bundled", ("users-bundled-dev", "bundled-dev"))):
        router, by = load(library, config)
        for name in names:
            rows = [r for r in read_jsonl(DATA / f"{name}.jsonl") if r["gold"] and r.get("kind", "single") == "single"]
            out[name] = (router, [(query_of(r), [{by[g] for g in r["gold"] if g in by}]) for r in rows])
    return out


# -- term neighbours ------------------------------------------------------------------------------------------------
def surface_words(texts: list[str], stemmed: Tokenizer) -> dict[str, str]:
    """Stem -> its most frequent surface word over ``texts`` (alphabetic words of 3+ letters)."""
    counts: dict[str, Counter[str]] = {}
    for text in texts:
        for surface, stem in zip(SURFACE(text), stemmed(text), strict=True):
            if len(surface) >= 3 and surface.isascii() and surface.isalpha():
                counts.setdefault(stem, Counter())[surface] += 1
    return {stem: c.most_common(1)[0][0] for stem, c in counts.items()}


class TermNeighbours:
    def __init__(self, router: Router, source: str) -> None:
        bm25 = router.signals.bm25
        self.desc_index = bm25
        texts = [index_text(s) for s in router.skills]
        self.passages = router.signals.indexes.get("passages") if source == "all" else None
        if self.passages is not None:
            texts = texts + [s.body or "" for s in router.skills]
        words = surface_words(texts, bm25.tokenizer)
        self.stems = sorted(words)
        start = time.perf_counter()
        self.vectors = router.encode([words[s] for s in self.stems]).astype(np.float32)
        self.embed_seconds = time.perf_counter() - start
        # each stem's row in the description index and in the passage index (-1: absent)
        self.desc_rows = np.array([bm25._term_row.get(s, -1) for s in self.stems])
        self.pass_rows = np.array([self.passages.index._term_row.get(s, -1) for s in self.stems]) \
            if self.passages is not None else None
        self.n = len(router.skills)

    def extra(self, routed: list[str], vectors: np.ndarray, k: int, tau: float) -> tuple[np.ndarray, np.ndarray]:
        """The expansion's BM25 contributions to each skill's description, and to its best passage."""
        sims = vectors.astype(np.float32) @ self.vectors.T
        out = np.zeros((len(routed), self.n))
        body = np.zeros((len(routed), self.n))
        tokenizer = self.desc_index.tokenizer
        for i, text in enumerate(routed):
            own = set(tokenizer(text))
            row = sims[i]
            top = np.argpartition(-row, min(k + len(own), len(row) - 1))[:k + len(own)]
            top = top[np.argsort(-row[top])]
            chosen = [(t, float(row[t]) - tau) for t in top if row[t] > tau and self.stems[t] not in own][:k]
            for t, weight in chosen:
                r = self.desc_rows[t]
                if r >= 0:
                    w = self.desc_index._weights
                    out[i, w.indices[w.indptr[r]:w.indptr[r + 1]]] += weight * w.data[w.indptr[r]:w.indptr[r + 1]]
            if self.pass_rows is not None:
                p = self.passages
                scores = np.zeros(len(p.owners))
                for t, weight in chosen:
                    r = self.pass_rows[t]
                    if r >= 0:
                        w = p.index._weights
                        scores[w.indices[w.indptr[r]:w.indptr[r + 1]]] += weight * w.data[w.indptr[r]:w.indptr[r + 1]]
                best = np.zeros(self.n)
                np.maximum.at(best, p.owners, scores)
                body[i] = best
        return out, body


    def weighted_terms(self, index: Any, routed: list[str], vectors: np.ndarray, power: float,
                       passages: Any = None) -> np.ndarray:
        """BM25 of ``index`` with each request word weighted by ``cos(request, word) ** power`` over the mean of
        those weights in the request (words without a vector weigh that mean); ``passages``: the best passage."""
        row_of = {s: i for i, s in enumerate(self.stems)}
        sims = vectors.astype(np.float32) @ self.vectors.T
        width = passages.skills if passages is not None else len(index.ids)
        out = np.zeros((len(routed), width))
        for i, text in enumerate(routed):
            tokens = [t for t in index.tokenizer(text) if t in index._term_row]
            if not tokens:
                continue
            raw = np.array([max(float(sims[i, row_of[t]]), 0.0) ** power if t in row_of else np.nan
                            for t in tokens])
            mean = np.nanmean(raw) if np.isfinite(raw).any() else 1.0
            weights = np.where(np.isfinite(raw), raw, mean) / (mean or 1.0)
            w = index._weights
            scores = np.zeros(len(index.ids))
            for t, weight in zip(tokens, weights):
                r = index._term_row[t]
                scores[w.indices[w.indptr[r]:w.indptr[r + 1]]] += weight * w.data[w.indptr[r]:w.indptr[r + 1]]
            if passages is not None:
                best = np.zeros(width)
                np.maximum.at(best, passages.owners, scores)
                scores = best
            out[i] = scores
        return out


    def feedback(self, routed: list[str], vectors: np.ndarray, fused: np.ndarray, m: int, terms: int,
                 tau: float) -> np.ndarray:
        """RM3-style feedback filtered by meaning: the words of the top ``m`` skills' descriptions (by ``fused``,
        weighted by its softmax over them and the word's BM25 weight there) whose cosine with the request exceeds
        ``tau``, weighted by ``cos - tau``, the request's own words left out, the best ``terms`` of them;
        returns their BM25 contributions to each description."""
        w = self.desc_index._weights
        by_doc = sparse_matrix(w, self.n).tocsc()
        term_vec = np.full(len(self.desc_index.vocabulary), -1)
        term_vec[self.desc_rows[self.desc_rows >= 0]] = np.flatnonzero(self.desc_rows >= 0)
        sims = vectors.astype(np.float32) @ self.vectors.T
        out = np.zeros((len(routed), self.n))
        tokenizer = self.desc_index.tokenizer
        for i, text in enumerate(routed):
            top = np.argsort(-fused[i], kind="stable")[:m]
            share = np.exp(fused[i, top] - fused[i, top].max())
            mass = np.asarray(by_doc[:, top] @ (share / share.sum())).ravel()
            cos = np.where(term_vec >= 0, sims[i][np.maximum(term_vec, 0)], 0.0)
            mass = mass * np.clip(cos - tau, 0.0, None)
            for t in set(tokenizer(text)):
                row = self.desc_index._term_row.get(t)
                if row is not None:
                    mass[row] = 0.0
            if (mass > 0).sum() > terms:
                mass[mass < np.partition(mass, -terms)[-terms]] = 0.0
            if mass.sum() > 0:
                out[i] = np.asarray(by_doc.T.dot(mass / mass.sum())).ravel()
        return out


def sparse_matrix(w: Any, documents: int) -> Any:
    """The BM25 postings as a terms x documents CSR matrix."""
    from scipy import sparse

    return sparse.csr_matrix((w.data, w.indices, w.indptr), shape=(len(w.indptr) - 1, documents))


# -- per-request reliability ----------------------------------------------------------------------------------------
def whole_fusion(router: Router, signals: dict[str, np.ndarray], gamma: float) -> np.ndarray:
    config = router.config
    weights = config.weights if "passages" in signals else passage_index.weights_without(dict(config.weights))
    if "name_dense" in signals:
        weights = name_weights(weights, config)
    n = next(iter(signals.values())).shape[1]
    chance = math.sqrt(2 * math.log(n))
    total = np.zeros(next(iter(signals.values())).shape)
    for name in sorted(signals):
        weight = float(weights.get(name, 0.0))
        if weight == 0 or name == "centrality":
            if weight and name == "centrality":
                total += weight * normalise(signals[name], "zscore")
            continue
        z = normalise(signals[name], "zscore")
        factor = np.clip(z.max(axis=1, keepdims=True) / chance, 0.05, None) ** gamma
        total += weight * factor * z
    return total


def agreement_count(router: Router, signals: dict[str, np.ndarray], top: int) -> np.ndarray:
    """How many of the weighted request signals rank each skill in their top ``top`` (CombMNZ's count)."""
    from indexes.fusion import ranks_by_score

    weights = name_weights(router.config.weights, router.config) if "name_dense" in signals else router.config.weights
    out = np.zeros(next(iter(signals.values())).shape)
    for name, values in signals.items():
        if name == "centrality" or not weights.get(name, 0.0):
            continue
        out += (ranks_by_score(values, router.order) <= top) & (values > 0 if name in ("bm25", "passages") else True)
    return out


def rank_fusion(router: Router, signals: dict[str, np.ndarray]) -> np.ndarray:
    """The same signals and weights fused by reciprocal rank (k = 60), lexical signals ranking only what they score."""
    from indexes.fusion import fuse_score_arrays
    from router.signals import lexical_names

    config = router.config
    weights = config.weights if "passages" in signals else passage_index.weights_without(dict(config.weights))
    if "name_dense" in signals:
        weights = name_weights(weights, config)
    weights = {n: w for n, w in weights.items() if n != "centrality"}
    present = {n: v > 0 for n, v in signals.items() if n in lexical_names()}
    return fuse_score_arrays(signals, weights, method="rrf", tie_order=router.order, present=present)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("tnx", "rocchio", "reliab", "qtw", "prf"), action="append",
                        help="a family of methods (repeatable; reliab includes the z-score + RRF mixtures)")
    parser.add_argument("--sets", action="append", help="only these dev sets (repeatable)")
    parser.add_argument("--gated", action="store_true",
                        help="prf only where the request's best BM25 z-score is below a gate (its second grid)")
    args = parser.parse_args()
    families = args.only or ["tnx", "rocchio", "reliab", "qtw", "prf"]
    sets = {**library_sets(), "metatool-dev": catalogue_set("metatool", "queries_single_dev.jsonl"),
            "sealtools-dev": catalogue_set("sealtools", "dev.jsonl")}
    if args.sets:
        sets = {k: v for k, v in sets.items() if k in args.sets}
    rng = np.random.default_rng(RNG_SEED)
    results: dict[str, Any] = {}
    neighbours: dict[tuple[int, str], TermNeighbours] = {}
    for name, (router, rows) in sets.items():
        t0 = time.perf_counter()
        scored = router.score_many([q for q, _ in rows])
        has_pd = "passage_dense" in scored.signals
        bases = {"off": router.fuse(scored, without={"passage_dense"})}
        if has_pd:
            bases["on"] = router.fuse(scored)
        routed = [glossary.with_glosses(t) if router.config.glosses else t for t in scored.texts]
        descriptions = router.signals.dense.vectors.astype(np.float64)
        methods: dict[str, np.ndarray] = {}
        if "tnx" in families:
            for source in ("desc", "all"):
                if source == "all" and router.signals.indexes.get("passages") is None:
                    continue
                key = (id(router), source)
                if key not in neighbours:
                    neighbours[key] = TermNeighbours(router, source)
                    print(f"{name}: {len(neighbours[key].stems)} words ({source}) embedded in "
                          f"{neighbours[key].embed_seconds:.1f} s", flush=True)
                tn = neighbours[key]
                for k, tau in itertools.product((5, 10), (0.25, 0.3, 0.35)):
                    methods[f"tnx-{source} K={k} tau={tau}"] = tn.extra(routed, scored.vectors, k, tau)
        weighted: dict[str, dict[str, np.ndarray]] = {}
        if "qtw" in families:
            source = "all" if router.signals.indexes.get("passages") is not None else "desc"
            key = (id(router), source)
            if key not in neighbours:
                neighbours[key] = TermNeighbours(router, source)
            tn = neighbours[key]
            for power in (0.5, 1.0, 2.0):
                changed = {"bm25": tn.weighted_terms(router.signals.bm25, routed, scored.vectors, power)}
                if source == "all":
                    p = router.signals.indexes["passages"]
                    changed["passages"] = tn.weighted_terms(p.index, routed, scored.vectors, power, passages=p)
                weighted[f"qtw power={power}"] = changed
                weighted[f"qtw-desc-only power={power}"] = {"bm25": changed["bm25"]}
        print(f"{name}: scored in {time.perf_counter() - t0:.1f} s", flush=True)
        for base_name, fused in bases.items():
            base = outcomes(router, rows, fused, scored)
            several = base[:, 3] > 0
            metrics = (("hit@1", 0, ~several), ("hit@5", 1, ~several), ("mrr", 2, ~several),
                       ("multi_recall@5", 1, several))
            entry = results.setdefault(base_name, {}).setdefault(name, {})
            entry["baseline"] = paired(base, base, metrics, rng, digits=2)
            candidates: dict[str, np.ndarray] = {}
            kept = {n: v for n, v in scored.signals.items() if base_name == "on" or n != "passage_dense"}
            plain = router.with_config(split_weight=0.0, context_weight=0.0).fuse(
                scored, without=set() if base_name == "on" else {"passage_dense"})
            if "prf" in families:
                key = (id(router), "desc")
                if key not in neighbours:
                    neighbours[key] = TermNeighbours(router, "desc")
                tn = neighbours[key]
                bm25_top = normalise(kept["bm25"], "zscore").max(axis=1)
                taus = (0.3,) if args.gated else (0.2, 0.3, 0.35, 0.4)
                grid = itertools.product((3, 5), taus)
                for m, tau in grid:
                    expansion = tn.feedback(routed, scored.vectors, fused, m, 10, tau)
                    if args.gated:
                        for alpha, gate in itertools.product((0.5, 1.0), (None, 2.0, 4.0, 6.0)):
                            use = np.ones(len(fused), dtype=bool) if gate is None else bm25_top < gate
                            candidates[f"prf m={m} tau={tau} alpha={alpha} gate={gate}"] = fused - plain + \
                                whole_fusion(router, {**kept, "bm25": kept["bm25"] + alpha * expansion * use[:, None]},
                                             0.0)
                        continue
                    for alpha in (0.25, 0.5):
                        candidates[f"prf m={m} tau={tau} alpha={alpha}"] = fused - plain + whole_fusion(
                            router, {**kept, "bm25": kept["bm25"] + alpha * expansion}, 0.0)
                    for w in (0.1, 0.2):
                        candidates[f"prf m={m} tau={tau} apart w={w}"] = fused + w * normalise(expansion, "zscore")
            for method, changes in weighted.items():
                candidates[method] = fused - plain + whole_fusion(router, {**kept, **changes}, 0.0)
            for method, (desc, body) in methods.items():
                for alpha in (0.1, 0.25, 0.5):
                    changed = {**kept, "bm25": kept["bm25"] + alpha * desc}
                    if "passages" in kept:
                        changed["passages"] = kept["passages"] + alpha * body
                    candidates[f"{method} alpha={alpha}"] = fused - plain + whole_fusion(router, changed, 0.0)
                candidates[f"{method} apart w=0.1"] = fused + 0.1 * normalise(desc + body, "zscore")
            if "rocchio" in families:
                order = np.argsort(-fused, axis=1, kind="stable")
                rows_i = np.arange(len(fused))
                margin = fused[rows_i, order[:, 0]] - fused[rows_i, order[:, 1]]
                for m, beta in itertools.product((0.5, 1.0, 2.0), (0.5, 1.0)):
                    query = scored.vectors.astype(np.float64) + beta * descriptions[order[:, 0]]
                    extra = normalise(query @ descriptions.T, "zscore")
                    for w in (0.3, 0.6):
                        candidates[f"rocchio-gated margin={m} beta={beta} w={w}"] = \
                            fused + np.where((margin >= m)[:, None], w * extra, 0.0)
            if "reliab" in families:
                candidates["refused"] = fused - plain + whole_fusion(router, kept, 0.0)
                for gamma in (-0.5, -0.25, 0.5, 1.0):
                    candidates[f"reliab gamma={gamma}"] = fused - plain + whole_fusion(router, kept, gamma)
                rrf = normalise(rank_fusion(router, kept), "zscore")
                for lam in (0.25, 0.5, 1.0):
                    candidates[f"zrrf lam={lam}"] = fused + lam * rrf
                for top, lam in itertools.product((5, 10), (0.1, 0.25)):
                    candidates[f"mnz top={top} lam={lam}"] = fused + lam * agreement_count(router, kept, top)
            for method, scores in candidates.items():
                entry[method] = paired(outcomes(router, rows, scores, scored), base, metrics, None, digits=2)
        print(f"{name}: done in {time.perf_counter() - t0:.1f} s", flush=True)
    summary: dict[str, Any] = {}
    for base_name, per_set in results.items():
        names = list(per_set)
        methods_all = [m for m in per_set[names[0]] if all(m in per_set[s] for s in names)]
        rows_out = []
        for method in methods_all:
            mrr = [per_set[s][method]["mrr"] - per_set[s]["baseline"]["mrr"] for s in names]
            mean = float(np.mean([per_set[s][method]["mrr"] for s in names]))
            rows_out.append((mean, min(mrr), method))
        rows_out.sort(reverse=True)
        summary[base_name] = [{"method": m, "mean_mrr": round(a, 2), "worst_delta": round(b, 2)}
                              for a, b, m in rows_out]
        print(f"\n== base {base_name}: sets {', '.join(names)}")
        for mean, worst, method in rows_out[:25]:
            cells = " | ".join(f"{per_set[s][method]['hit@1']}/{per_set[s][method]['hit@5']}/"
                               f"{per_set[s][method]['mrr']}" for s in names)
            print(f"{method:45} mean {mean:6.2f} worst {worst:+5.1f} | {cells}")
    name = "vocab_choice" + ("-" + "-".join(args.only) if args.only else "") + ("-gated" if args.gated else "")
    save(name, {"results": results, "summary": summary})


if __name__ == "__main__":
    main()
