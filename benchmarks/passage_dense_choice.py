"""Which body head and weight for the passage_dense signal (the embedded head of each SKILL.md body), on dev only.

    python benchmarks/passage_dense_choice.py           # dev sets: heads of 8 / 6 / 4 / 3 / 2 / 1 passages, weights
                                                        # 0 / 0.25 / 0.5 / 0.75 / 1.0
    python benchmarks/passage_dense_choice.py --maxp    # also the best passage of the whole body (MaxP), which
                                                        # embeds every passage (about 5 min of CPU for the corpora)
    python benchmarks/passage_dense_choice.py --shapes  # cheaper heads: passages cut to their first words
                                                        # (SHAPES), with the tokens each embeds
    python benchmarks/passage_dense_choice.py --shapes 4 3x16 4x12   # some of them: passages x words
    python benchmarks/passage_dense_choice.py --test    # once, after choosing: the test sets, 0 against CHOSEN

The sets are name_choice.py's dev sets (single-skill rows of users-corpora-dev, corpora-dev, users-bundled-dev and
bundled-dev; MetaTool single-tool dev; Seal-Tools dev with its multi-tool recall@5). The skill libraries are built
once per head size (``router.signals.passage_dense.HEAD``, largest first, so every smaller head is read from the
embedding cache of the index folder /tmp/skill-router-passage-dense-bench); the catalogues have no bodies, so the
signal is absent there and every weight ranks them as weight 0 (their rows show 0 wins and 0 losses). Each set is
scored once per head; every weight then fuses the same scores (weight 0 leaves the signal out: the default before
it). hit@1, hit@5 and MRR (first gold in the top 10) with a paired sign-flip test (10,000 flips) against weight 0.
The rule: the best mean MRR over the dev sets with no dev set more than 0.5 below weight 0. MaxP rows replace the
signal's scores by each skill's best passage cosine (a request's parts, when it is split, are still scored by the
built head). With --shapes: the heads of SHAPES (or those named), each passage cut to its first words, with the
distinct passages of the corpus library's heads and the tokens the model reads for them (what a cold build's cost
grows with); CHOSEN is 3 x 16 words at 0.5, the rule's choice among them at a quarter of the tokens of 4 whole
passages. With --test: name_choice.py's test sets (the single-skill rows of corpora-test and bundled-test,
MetaTool single-tool test and multi, Seal-Tools test), weight 0 against CHOSEN with the same paired test. Writes
benchmarks/results/passage_dense_choice[-shapes[-...]|-test].json.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

import users
from common import best_of_pieces, outcome, save
from name_choice import Rows, catalogue_set, choice_sets, library_sets, paired
from router import Router
from router import passages as passage_cut
from router.routing import Scored
from router.signals import passage_dense

HEADS = (8, 6, 4, 3, 2, 1)
#: (passages, words of each, window, stride) of the cheaper heads --shapes compares with the head of 4 whole
#: passages: the model's cost grows with the tokens it reads, so each is a point of accuracy against build time.
SHAPES = ((4, None, 150, 100), (1, None, 150, 100), (2, 32, 150, 100), (2, 48, 150, 100), (3, 24, 150, 100),
          (4, 16, 150, 100), (3, 16, 150, 100), (2, 24, 150, 100), (3, 12, 150, 100), (4, 12, 150, 100),
          (5, 12, 150, 100), (6, 8, 150, 100), (3, 20, 150, 100))
WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
#: The head (passages, words of each, window, stride) and weight chosen on the dev sets: the default.
CHOSEN = ((3, 16, 150, 100), 0.5)
INDEX = Path("/tmp/skill-router-passage-dense-bench")
METRICS = ("hit@1", "hit@5", "mrr", "multi_recall@5")


Shape = tuple[int, "int | None", int, int]


def shape_now() -> Shape:
    return passage_dense.HEAD, passage_dense.WORDS, passage_dense.WINDOW, passage_dense.STRIDE


def set_shape(shape: Shape) -> None:
    passage_dense.HEAD, passage_dense.WORDS, passage_dense.WINDOW, passage_dense.STRIDE = shape


def shape_label(shape: Shape) -> str:
    head, words, window, stride = shape
    return f"head {head}" + (f"x{words}" if words else "") + ("" if (window, stride) == (150, 100) else
                                                                f" cut {window}/{stride}")


def parse_shape(text: str) -> Shape:
    head, _, words = text.partition("x")
    return int(head), int(words) if words else None, 150, 100


def head_tokens(router: Router) -> dict[str, int]:
    """The distinct head passages of ``router``'s library and the tokens the model reads for them (its cost)."""
    texts = sorted({p for s in router.skills for p in passage_dense.head_passages(s.body or "")})
    tokenizer = getattr(router._index.source.encoder, "_tokenizer", None)  # the ONNX encoder's; None on torch
    count = sum(len(e.ids) for e in tokenizer.encode_batch(texts)) if tokenizer is not None else -1
    return {"passages": len(texts), "tokens": count}


def outcomes(router: Router, rows: Rows, weight: float, scored: Scored) -> np.ndarray:
    """Per request: (a needed tool first, hit@5 or recall@5 for several needs, reciprocal rank, several needs)."""
    if not weight:
        return ranked(router, rows, router.fuse(scored, without={"passage_dense"}), scored)
    return ranked(router, rows, router.with_config(weights={"passage_dense": weight}).fuse(scored), scored)


def ranked(router: Router, rows: Rows, fused: np.ndarray, scored: Scored) -> np.ndarray:
    """Per request under the fused scores ``fused``: (a needed skill first, hit@5 or recall@5 for several needs,
    reciprocal rank, several needs)."""
    out = []
    for (_, needs), matches in zip(rows, router.rank_scored(scored, 10, fused=fused)):
        ids = [m.id for m in matches]
        out.append((*outcome(ids, needs), len(needs) > 1))
    return np.array(out, dtype=float)


_PASSAGES: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]] = {}


def every_passage(router: Router) -> tuple[np.ndarray, np.ndarray]:
    """The unit embedding of every passage of every body and the skill each belongs to (embedded once a library)."""
    key = tuple(s.id for s in router.skills)
    if key not in _PASSAGES:
        cut = [passage_cut.passages(s.body) if (s.body or "").strip() else [] for s in router.skills]
        owners = np.array([i for i, c in enumerate(cut) for _ in c], dtype=np.int64)
        _PASSAGES[key] = (router.encode([p for c in cut for p in c]).astype(np.float64), owners)
    return _PASSAGES[key]


def maxp_scores(router: Router, scored: Scored) -> np.ndarray:
    """Each skill's best cosine over every passage of its body (its ``dense`` score without a body)."""
    vectors, owners = every_passage(router)
    return best_of_pieces(scored.vectors.astype(np.float64) @ vectors.T, owners, scored.signals["dense"])


def row_of(values: np.ndarray, base: np.ndarray, rng: np.random.Generator) -> dict[str, Any]:
    several = base[:, 3] > 0
    row: dict[str, Any] = {"n": int((~several).sum()), "multi_n": int(several.sum())}
    row.update(paired(values, base, (("hit@1", 0, ~several), ("hit@5", 1, ~several), ("mrr", 2, ~several),
                                     ("multi_recall@5", 1, several)), rng))
    return row


def show(name: str, label: str, row: dict[str, Any]) -> None:
    print(f"{name:18} {label:14}: " + ", ".join(f"{m} {row[m]} {row.get(m + '_wins_losses_p', '')}"
                                               for m in METRICS if row.get(m) is not None), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--maxp", action="store_true", help="also MaxP over every passage of the body")
    parser.add_argument("--shapes", nargs="*", metavar="PxW", help="the cheaper heads of SHAPES (or these: P "
                        "passages of W words; the first is the baseline of the rule), not HEADS")
    parser.add_argument("--test", action="store_true", help="the test sets, weight 0 against CHOSEN")
    args = parser.parse_args()
    users.INDEX = INDEX  # its own index folder: the head sizes share one embedding cache
    rng = np.random.default_rng(20)
    if args.test:
        test(rng)
        return
    results: dict[str, Any] = {}
    tokens: dict[str, Any] = {}
    chosen = shape_now()
    shapes = (tuple(parse_shape(x) for x in args.shapes) or SHAPES if args.shapes is not None else
              tuple((head, None, 150, 100) for head in HEADS))
    try:
        for shape in shapes:
            set_shape(shape)
            tag = shape_label(shape)
            for name, (loaded, rows) in library_sets().items():
                router = loaded.with_config(weights={"passage_dense": CHOSEN[1]})  # built with the signal
                if name.endswith("corpora-dev") and tag not in tokens:
                    tokens[tag] = head_tokens(router)
                    print(f"{tag}: {tokens[tag]}", flush=True)
                scored = router.score_many([q for q, _ in rows])
                assert "passage_dense" in scored.signals, "a router weighing passage_dense must build it"
                base = outcomes(router, rows, 0.0, scored)
                for weight in WEIGHTS:
                    row = row_of(outcomes(router, rows, weight, scored), base, rng)
                    label = f"{tag} w {weight}"
                    results.setdefault(name, {})[label] = row
                    show(name, label, row)
                if args.maxp and shape == shapes[0]:
                    maxp = Scored(scored.texts, scored.vectors, {**scored.signals,
                                                                 "passage_dense": maxp_scores(router, scored)},
                                  scored.context, scored.context_rows)
                    for weight in WEIGHTS[1:]:
                        row = row_of(outcomes(router, rows, weight, maxp), base, rng)
                        results[name][f"maxp w {weight}"] = row
                        show(name, f"maxp w {weight}", row)
    finally:
        set_shape(chosen)
    for name, (router, rows) in {"metatool-dev": catalogue_set("metatool", "queries_single_dev.jsonl"),
                                 "sealtools-dev": catalogue_set("sealtools", "dev.jsonl")}.items():
        scored = router.score_many([q for q, _ in rows])
        base = outcomes(router, rows, 0.0, scored)
        row = row_of(base, base, rng)
        row["signal_present"] = "passage_dense" in scored.signals
        for label in results["corpora-dev"]:
            results.setdefault(name, {})[label] = row
        show(name, "every setting", row)
    labels = list(results["corpora-dev"])
    mean_mrr = {label: round(float(np.mean([results[s][label]["mrr"] for s in results])), 2) for label in labels}
    base_label = f"{shape_label(shapes[0])} w 0.0"
    allowed = {label: all(results[s][label]["mrr"] >= results[s][base_label]["mrr"] - 0.5 for s in results)
               for label in labels}
    best = max((label for label in labels if allowed[label]), key=lambda label: mean_mrr[label])
    for label in labels:
        print(f"mean MRR {label:14} {mean_mrr[label]:6.2f}{'' if allowed[label] else '  (a set > 0.5 below)'}")
    print(f"chosen by the rule: {best}")
    save("passage_dense_choice" + ("" if args.shapes is None else "-shapes" + "".join(f"-{x}" for x in args.shapes)),
         {"shapes": [list(s) for s in shapes], "weights": list(WEIGHTS), "chosen": list(CHOSEN), "by_rule": best,
          "mean_mrr": mean_mrr, "allowed": allowed, "corpora_head_tokens": tokens, "results": results})


def test(rng: np.random.Generator) -> None:
    assert shape_now() == CHOSEN[0]
    results: dict[str, Any] = {}
    for name, (loaded, rows) in choice_sets(True).items():
        router = loaded.with_config(weights={"passage_dense": CHOSEN[1]})  # built with the signal, where it applies
        scored = router.score_many([q for q, _ in rows])
        base = outcomes(router, rows, 0.0, scored)
        for weight in (0.0, CHOSEN[1]):
            row = row_of(outcomes(router, rows, weight, scored), base, rng)
            row["signal_present"] = "passage_dense" in scored.signals
            results.setdefault(name, {})[str(weight)] = row
            show(name, f"w {weight}", row)
    save("passage_dense_choice-test", {"chosen": list(CHOSEN), "results": results})


if __name__ == "__main__":
    main()
