"""How the embedded body head should score a skill, judged on single-skill and multi-skill dev requests together.

    python benchmarks/head_choice.py                     # every variant of VARIANTS at every weight of WEIGHTS
    python benchmarks/head_choice.py --variants mean "mean plain5" --weights 0.5 --name head_choice-plain

``passage_dense`` was chosen on the single-skill rows of the dev sets (``passage_dense_choice.py``); this script
adds what that choice did not see: the multi-skill rows of corpora-dev and users-corpora-dev (recall@5: the share
of needs met in the top 5) and the near-twin requests (tag ``twin``), and compares ways of turning a skill's head
passages (the first 16 words of the first 3 passages of its body, ``router.signals.passage_dense``) into a score:

- ``mean``: the request's mean cosine with the head passages (the default before: ``q . mean(v_1..v_3)``);
- ``unit``: the cosine with the head's mean direction (``q . m / |m|``): a head whose passages disagree is not
  shrunk;
- ``desc``: the mean over the description's vector and the head passages' (``q . mean(d, v_1..v_3)``): the
  description is one of the voices, so a head of boilerplate or code cannot sink a skill on its own;
- ``max``: each skill's larger of its description's cosine and its head's mean cosine (the head only adds);
- ``maxp``: the best of the head passages (MaxP over the head);
- ``mean plainN`` / ``desc plainN``: ``mean`` / ``desc`` over a head without the library's boilerplate: a passage
  whose words (the skill's own name words masked) N or more heads repeat ("Instructions - Clarify goals,
  constraints, and required inputs.", 126 of the 683 corpus heads; "Do not use this skill when - The task is
  unrelated to ...", "Quick Start") is skipped for the next one.

Every variant is scored through the router (the parts of a split request too), at each weight. Sets: the
single-skill rows of users-corpora-dev, corpora-dev, users-bundled-dev and bundled-dev (hit@1 / hit@5 / MRR, as
``passage_dense_choice.py``), the multi-skill rows of corpora-dev and users-corpora-dev, and the near-twins.
MetaTool and Seal-Tools have no bodies, so no head and the same ranking under every variant: they are not
scored again. The rule (benchmarks/README.md, "Choosing the defaults"): the best mean MRR over the dev sets with
no dev set more than 0.5 below the default; reported with each row, with the multi-skill recall beside it.
Writes benchmarks/results/head_choice.json.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from common import outcome, read_jsonl, save
from router import Router
from router.config import RouterConfig
from router.signals import passage_dense
from users import DATA, load, query_of

VARIANTS = ("mean", "unit", "desc", "max", "maxp", "mean plain3", "mean plain5", "mean plain10", "desc plain5")
SHARED = (3, 5, 10)
WEIGHTS = (0.0, 0.25, 0.5, 0.75)
DEFAULT = ("mean", 0.5)
WEATHER = "what will the weather be like tomorrow in Lyon?"
Rows = list[tuple[Any, list[set[str]], bool]]  # request, needs, near-twin


@dataclass(frozen=True)
class Head:
    """A stand-in for :class:`router.signals.passage_dense.BodyHeads`: any per-request score of the head."""

    score: Callable[[np.ndarray], np.ndarray]

    def scores_many(self, query_vectors: np.ndarray) -> np.ndarray:
        return self.score(np.asarray(query_vectors, dtype=np.float64))


def plain_heads(router: Router, shared: int) -> list[list[str]]:
    """Each skill's head without the library's boilerplate: of the first ``HEAD + SPARE`` passages, cut to their
    first words, those whose words (the skill's own name words masked) ``shared`` or more heads repeat are skipped
    ("Instructions - Clarify goals, constraints, and required inputs.", "Quick Start"); a passage of name words
    alone is kept."""
    import re
    from collections import Counter

    from router.passages import passages

    cut = [[" ".join(p.split()[:passage_dense.WORDS]) for p in passages(s.body, window=passage_dense.WINDOW,
                                                                          stride=passage_dense.STRIDE,
                                                                          limit=passage_dense.HEAD + SPARE)]
           if (s.body or "").strip() else [] for s in router.skills]
    masked = []
    for skill, ps in zip(router.skills, cut):
        own = set(re.findall(r"[a-z0-9]+", skill.name.lower()))
        masked.append([" ".join("_" if re.sub(r"[^a-z0-9]", "", w.lower()) in own else w.lower() for w in p.split())
                       for p in ps])
    counts = Counter(m for ms in masked for m in set(ms))
    out = []
    for ps, ms in zip(cut, masked):
        kept = [p for p, m in zip(ps, ms) if counts[m] < shared or not m.replace("_", "").strip()]
        out.append((kept or ps)[:passage_dense.HEAD])
    return out


SPARE = 3


def variants(router: Router, shared: int | None = None) -> dict[str, Head]:
    """Each variant's head index for ``router``'s library, from its head passages embedded one by one (without
    the boilerplate ``shared`` or more heads repeat, when given)."""
    heads = [passage_dense.head_passages(s.body or "") for s in router.skills] if shared is None else \
        plain_heads(router, shared)
    vectors = router.encode([p for h in heads for p in h]).astype(np.float64)
    owners = np.array([i for i, h in enumerate(heads) for _ in h], dtype=np.int64)
    desc = np.asarray(router.signals.dense.vectors, dtype=np.float64)
    has = np.zeros(len(heads), dtype=bool)
    has[owners] = True
    counts = np.bincount(owners, minlength=len(heads)).astype(np.float64)
    sums = np.zeros_like(desc)
    np.add.at(sums, owners, vectors)
    mean = np.where(has[:, None], sums / np.maximum(counts, 1)[:, None], desc)
    unit = mean / np.linalg.norm(mean, axis=1, keepdims=True)
    with_desc = np.where(has[:, None], (sums + desc) / (counts + 1)[:, None], desc)

    def maxp(q: np.ndarray) -> np.ndarray:
        out = q @ desc.T
        best = np.full_like(out, -np.inf)
        np.maximum.at(best.T, owners, (q @ vectors.T).T)
        out[:, has] = best[:, has]
        return out

    return {"mean": Head(lambda q: q @ mean.T), "unit": Head(lambda q: q @ unit.T),
            "desc": Head(lambda q: q @ with_desc.T), "max": Head(lambda q: np.maximum(q @ mean.T, q @ desc.T)),
            "maxp": Head(maxp)}


def library_rows(library: str) -> tuple[Router, dict[str, Rows]]:
    router, by = load(library, RouterConfig())
    files = ("users-corpora-dev", "corpora-dev") if library == "corpora" else ("users-bundled-dev", "bundled-dev")
    sets: dict[str, Rows] = {}
    for name in files:
        for row in read_jsonl(DATA / f"{name}.jsonl"):
            twin = "twin" in row.get("tags", [])
            if row.get("needs"):
                sets.setdefault(f"{name} multi", []).append(
                    (query_of(row), [{by[p] for p in need if p in by} for need in row["needs"]], twin))
            elif row["gold"] and row.get("kind", "single") == "single":
                sets.setdefault(name, []).append((query_of(row), [{by[g] for g in row["gold"] if g in by}], twin))
    return router, sets


def outcomes(router: Router, rows: Rows) -> np.ndarray:
    """Per request: (a needed skill first, hit@5 or recall@5 over several needs, reciprocal rank, near-twin)."""
    out = []
    for (_, needs, twin), matches in zip(rows, router.rank_many([q for q, _, _ in rows], 10)):
        ids = [m.id for m in matches]
        out.append((*outcome(ids, needs), twin))
    return np.array(out, dtype=float)


def summary(values: np.ndarray, multi: bool) -> dict[str, Any]:
    pct = lambda xs: round(100 * float(np.mean(xs)), 1) if len(xs) else None  # noqa: E731
    if multi:
        return {"n": len(values), "multi_recall@5": pct(values[:, 1]), "first": pct(values[:, 0])}
    twins = values[values[:, 3] > 0]
    return {"n": len(values), "hit@1": pct(values[:, 0]), "hit@5": pct(values[:, 1]), "mrr": pct(values[:, 2]),
            "twin_n": len(twins), "twin_hit@1": pct(twins[:, 0]) if len(twins) else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--weights", nargs="*", type=float, default=list(WEIGHTS))
    parser.add_argument("--name", default="head_choice", help="results file name (benchmarks/results/NAME.json)")
    args = parser.parse_args()
    results: dict[str, dict[str, Any]] = {}
    weather: dict[str, list[str]] = {}
    for library in ("corpora", "bundled"):
        router, sets = library_rows(library)
        heads = variants(router)
        for shared in SHARED:
            if any(v.endswith(f" plain{shared}") for v in args.variants):
                heads.update({f"{k} plain{shared}": v for k, v in variants(router, shared).items()})
        indexes = router.signals.indexes
        built = indexes["passage_dense"]
        try:
            for variant in args.variants:
                indexes["passage_dense"] = heads[variant]  # type: ignore[index]
                for weight in args.weights:
                    if weight == 0 and variant != args.variants[0]:
                        continue
                    label = "off" if weight == 0 else f"{variant} w {weight}"
                    tuned = router.with_config(weights={"passage_dense": weight})
                    for name, rows in sets.items():
                        row = summary(outcomes(tuned, rows), name.endswith("multi"))
                        results.setdefault(label, {})[name] = row
                        print(f"{label:14} {name:24} {row}", flush=True)
                    if library == "bundled":
                        weather[label] = [m.name for m in tuned.rank(WEATHER, 3)]
                        print(f"{label:14} weather: {weather[label]}", flush=True)
        finally:
            indexes["passage_dense"] = built  # type: ignore[index]
    single = [s for s in next(iter(results.values())) if not s.endswith("multi")]
    base = results[f"{DEFAULT[0]} w {DEFAULT[1]}"] if f"{DEFAULT[0]} w {DEFAULT[1]}" in results else None
    table = {}
    for label, sets in results.items():
        mean_mrr = round(float(np.mean([sets[s]["mrr"] for s in single])), 2)
        allowed = base is None or all(sets[s]["mrr"] >= base[s]["mrr"] - 0.5 for s in single)
        multi = {s: sets[s]["multi_recall@5"] for s in sets if s.endswith("multi")}
        table[label] = {"mean_mrr": mean_mrr, "allowed": allowed, **multi,
                        "twin_hit@1": sets["users-corpora-dev"]["twin_hit@1"]}
        print(f"{label:14} mean MRR {mean_mrr:6.2f}{'' if allowed else ' (a set > 0.5 below the default)'} "
              f"multi {multi} twins {table[label]['twin_hit@1']}")
    save(args.name, {"variants": args.variants, "weights": args.weights, "default": list(DEFAULT),
                         "table": table, "results": results, "weather": weather})


if __name__ == "__main__":
    main()
