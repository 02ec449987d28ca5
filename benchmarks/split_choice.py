"""Where a request should be cut into parts (router/split.py), on the six dev sets, singles and multi together.

    python benchmarks/split_choice.py                  # every rule of RULES
    python benchmarks/split_choice.py --rules now next # some of them
    python benchmarks/split_choice.py --rules now and --weights 0.5 0.75 1 --name split_choice-weights

Rules (each adds to the one before it, except ``now``):

- ``now``: the cuts of router/split.py before this study (sentences, list items, then / also / plus / ...);
- ``next``: a joiner word only as a word of its own, not the start of a name ("next.js", "plus-size");
- ``cjk``: also at the Chinese and Japanese clause commas (``，``, ``、``), a kana counting as a word as a Han
  character does (a part of fewer than ``split.MIN_WORDS`` words is glued to its neighbour);
- ``and``: also before "and" (a part of fewer than ``split.MIN_WORDS`` words is glued back, as every part).

Sets: the single-skill rows of users-corpora-dev, corpora-dev, users-bundled-dev and bundled-dev, MetaTool
single-tool dev (4,212) and Seal-Tools dev (hit@1 / hit@5 / MRR over its single-tool rows; multi-tool recall@5
over the 500 needing several), and the multi-skill rows of corpora-dev and users-corpora-dev (recall@5: the share
of needs met in the top 5). Each set is scored once; each rule then fuses the same scores, scoring only its parts.
The rule of benchmarks/README.md ("Choosing the defaults"): the best mean MRR over the six sets with no set more
than 0.5 below the default (``now``), with the multi-skill recall beside it. Writes
benchmarks/results/split_choice.json.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

import numpy as np

from common import outcome, read_jsonl, save
from name_choice import catalogue_set
from router import Router, split
from router.config import RouterConfig
from users import DATA, load, query_of

Rows = list[tuple[Any, list[set[str]]]]
_WORDS = r"(?:then|also|plus|additionally|finally|after\s+that|afterwards|next|lastly)"
#: Each rule's (sentence cuts, joiners) patterns, in the form of router/split.py's ``_SENTENCE`` and ``_JOINER``.
RULES: dict[str, tuple[str, str]] = {
    "now": (r"(?<=[.?!;])\s+|[。？！；]+|\s*\n+\s*",
            r"[,;]?(?<!\band)\s+(?=(?:and\s+)?" + _WORDS + r"\b)|(?=然后|另外|并且|接着|最后|同时)"),
    "next": (r"(?<=[.?!;])\s+|[。？！；]+|\s*\n+\s*",
             r"[,;]?(?<!\band)\s+(?=(?:and\s+)?" + _WORDS + r"\b(?![.\-]\w))|(?=然后|另外|并且|接着|最后|同时)"),
    "cjk": (r"(?<=[.?!;])\s+|[。？！；，、]+|\s*\n+\s*",
            r"[,;]?(?<!\band)\s+(?=(?:and\s+)?" + _WORDS + r"\b(?![.\-]\w))|(?=然后|另外|并且|接着|最后|同时)"),
    "and": (r"(?<=[.?!;])\s+|[。？！；，、]+|\s*\n+\s*",
            r"[,;]?(?<!\band)\s+(?=(?:and\s+)?" + _WORDS + r"\b(?![.\-]\w))|[,;]?\s+(?=and\s+\w)"
            r"|(?=然后|另外|并且|接着|最后|同时)"),
    "and-only": (r"(?<=[.?!;])\s+|[。？！；]+|\s*\n+\s*",
                 r"[,;]?(?<!\band)\s+(?=(?:and\s+)?" + _WORDS + r"\b(?![.\-]\w))|[,;]?\s+(?=and\s+\w)"
                 r"|(?=然后|另外|并且|接着|最后|同时)"),
}


_PLAIN_WORDS = split._words


def _words_with_kana(text: str) -> int:
    # a kana counts as a word too, as a Han character does: Japanese has no spaces either
    return _PLAIN_WORDS(text) + sum(1 for c in text if "\u3040" <= c <= "\u30ff")


def use(rule: str) -> None:
    sentence, joiner = RULES[rule]
    split._SENTENCE = re.compile(sentence)
    split._JOINER = re.compile(joiner, re.IGNORECASE)
    split._words = _words_with_kana if rule in ("cjk", "and") else _PLAIN_WORDS  # type: ignore[assignment]


def library_sets() -> dict[str, tuple[Router, Rows]]:
    out: dict[str, tuple[Router, Rows]] = {}
    for library, names in (("corpora", ("users-corpora-dev", "corpora-dev")),
                           ("bundled", ("users-bundled-dev", "bundled-dev"))):
        router, by = load(library, RouterConfig())
        for name in names:
            rows = read_jsonl(DATA / f"{name}.jsonl")
            out[name] = (router, [(query_of(r), [{by[g] for g in r["gold"] if g in by}]) for r in rows
                                  if r["gold"] and r.get("kind", "single") == "single"])
            multi = [(query_of(r), [{by[p] for p in need if p in by} for need in r["needs"]]) for r in rows
                     if r.get("needs")]
            if multi and library == "corpora":
                out[f"{name} multi"] = (router, multi)
    return out


def outcomes(router: Router, rows: Rows, scored: Any) -> np.ndarray:
    """Per request: (a needed skill first, hit@5 or recall@5 over several needs, reciprocal rank, several needs)."""
    out = []
    for (_, needs), matches in zip(rows, router.rank_scored(scored, 10, fused=router.fuse(scored))):
        ids = [m.id for m in matches]
        out.append((*outcome(ids, needs), len(needs) > 1))
    return np.array(out, dtype=float)


def summary(values: np.ndarray) -> dict[str, Any]:
    pct = lambda xs: round(100 * float(np.mean(xs)), 1) if len(xs) else None  # noqa: E731
    single, several = values[values[:, 3] == 0], values[values[:, 3] > 0]
    return {"n": len(single), "hit@1": pct(single[:, 0]), "hit@5": pct(single[:, 1]), "mrr": pct(single[:, 2]),
            "multi_n": len(several), "multi_recall@5": pct(several[:, 1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", nargs="*", default=list(RULES), choices=list(RULES))
    parser.add_argument("--weights", nargs="*", type=float, default=[0.5], help="split_weight values (0.5: the "
                        "default)")
    parser.add_argument("--name", default="split_choice", help="results file name")
    args = parser.parse_args()
    sets = {**library_sets(), "metatool-dev": catalogue_set("metatool", "queries_single_dev.jsonl"),
            "sealtools-dev": catalogue_set("sealtools", "dev.jsonl")}
    results: dict[str, dict[str, Any]] = {}
    try:
        for name, (router, rows) in sets.items():
            scored = router.score_many([q for q, _ in rows])
            for rule in args.rules:
                use(rule)
                for weight in args.weights:
                    label = rule if weight == 0.5 else f"{rule} split_weight {weight}"
                    row = summary(outcomes(router.with_config(split_weight=weight), rows, scored))
                    row["split_requests"] = sum(len(split.parts(t)) > 1 for t in scored.texts)
                    results.setdefault(label, {})[name] = row
                    print(f"{label:9} {name:24} {row}", flush=True)
    finally:
        use("now")
    table = {}
    for rule, by_set in results.items():
        single = [s for s, row in by_set.items() if row["mrr"] is not None]
        mean_mrr = round(float(np.mean([by_set[s]["mrr"] for s in single])), 2)
        allowed = all(by_set[s]["mrr"] >= results["now"][s]["mrr"] - 0.5 for s in single) if "now" in results \
            else True
        multi = {s: row["multi_recall@5"] for s, row in by_set.items() if row["multi_recall@5"] is not None}
        table[rule] = {"mean_mrr": mean_mrr, "allowed": allowed, **multi}
        print(f"{rule:9} mean MRR {mean_mrr:6.2f}{'' if allowed else ' (a set > 0.5 below now)'} multi {multi}")
    save(args.name, {"rules": {r: RULES[r] for r in args.rules}, "weights": args.weights, "table": table,
                     "results": results})


if __name__ == "__main__":
    main()
