"""Which passages and weight for the full-body signal (router.passages), on the dev sets with SKILL.md bodies.

    python benchmarks/passage_choice.py

Single-skill rows of users-corpora-dev, corpora-dev (the ~700 corpus skills), users-bundled-dev and bundled-dev
(skills/): hit@1 and hit@5 for windows of 150 words (stride 100), 80 (stride 40) and whole sections, each at
passage weights 0.5 / 0.8 / 1.0, with the body lead's BM25 (body_bm25) kept at 0.5 / 0.25 or dropped ("none" is
the previous default: the lead at 0.5, no passages). "UNION" pools the four sets. The other settings are the
defaults. Writes benchmarks/results/passage_choice.json.
"""

from __future__ import annotations

from typing import Any


from common import read_jsonl, save
from indexes.fusion import fuse_score_arrays, ranking
from router.config import RouterConfig
from router.passages import PassageIndex
from users import DATA, load, query_of

SHAPES = {"w150": {}, "w80": {"window": 80, "stride": 40}, "sections": {"window": 10**6, "stride": 10**6 - 1}}
WEIGHTS = {"none": {"passages": 0.0}, "0.5": {"passages": 0.5}, "0.5-lead0.25": {"passages": 0.5, "body_bm25": 0.25},
           "0.8-nolead": {"passages": 0.8, "body_bm25": 0.0}, "1.0-nolead": {"passages": 1.0, "body_bm25": 0.0}}
SETS = {"corpora": ["users-corpora-dev", "corpora-dev"], "bundled": ["users-bundled-dev", "bundled-dev"]}


def main() -> None:
    total: dict[str, list[int]] = {}
    per_set: dict[str, Any] = {}
    for library, names in SETS.items():
        router, by = load(library, RouterConfig())
        ids, bodies = [s.id for s in router.skills], [s.body or "" for s in router.skills]
        indexes = {shape: PassageIndex.build(ids, bodies, **options) for shape, options in SHAPES.items()}
        for name in names:
            rows = [r for r in read_jsonl(DATA / f"{name}.jsonl") if r["gold"] and r.get("kind", "single") == "single"]
            scored = router.score_many([query_of(r) for r in rows])
            base = {**router.config.weights, "passages": 0.0, "body_bm25": 0.5}
            for shape, index in indexes.items():
                signals = {**scored.signals, "passages": index.scores_many(list(scored.texts))}
                for label, change in WEIGHTS.items():
                    weights = {**base, **change}
                    fused = fuse_score_arrays(signals, weights, method="zscore", tie_order=router.order)
                    if len(scored.context_rows):
                        fused[scored.context_rows] += router.config.context_weight * fuse_score_arrays(
                            scored.context, weights, method="zscore", tie_order=router.order)
                    first = five = 0
                    for i, row in enumerate(rows):
                        gold = {by[g] for g in row["gold"] if g in by}
                        top = [router.skills[j].id for j in ranking(fused[i], router.order)[:5]]
                        first += top[0] in gold
                        five += bool(gold & set(top))
                    key = f"{shape}/{label}"
                    counts = total.setdefault(key, [0, 0, 0])
                    counts[0] += first
                    counts[1] += five
                    counts[2] += len(rows)
                    per_set.setdefault(name, {})[key] = {"hit@1": round(100 * first / len(rows), 1),
                                                         "hit@5": round(100 * five / len(rows), 1), "n": len(rows)}
                    print(f"{name:18} {key:22} hit@1 {per_set[name][key]['hit@1']:5.1f} "
                          f"hit@5 {per_set[name][key]['hit@5']:5.1f}")
    union = {k: {"hit@1": round(100 * a / n, 1), "hit@5": round(100 * b / n, 1), "n": n}
             for k, (a, b, n) in total.items()}
    for key, value in union.items():
        print(f"UNION {key:22} hit@1 {value['hit@1']:5.1f} hit@5 {value['hit@5']:5.1f}")
    save("passage_choice", {"union": union, "sets": per_set})


if __name__ == "__main__":
    main()
