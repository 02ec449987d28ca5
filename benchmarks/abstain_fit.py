"""Fit the "no skill fits" model of router/abstain.py on the users' dev requests, cross-validate it, choose its cut.

    python benchmarks/abstain_fit.py            # fit, cross-validate, compare with the rule before, print constants

Requests: benchmarks/data/users-{corpora,bundled}-dev.jsonl (the first set), users-*-dev-abstain.jsonl (written
for this decision: chit-chat, knowledge, short single-skill requests) and users-*-dev-tasks.jsonl (everyday tasks
no skill serves, single-skill tasks in other words), over the two libraries of benchmarks/users.py, all dev, their
bodies' passages embedded (``passage_dense`` weighing 0.5; its own index folders). Every request gets the five
numbers of ``router.abstain.features`` (through ``Router.no_skill_features``, exactly as routing computes them);
requests that name a skill are left out (routing never drops them).

- The models: the five numbers (``COEFFICIENTS``, ``CUT``), and the first four (``FALLBACK_COEFFICIENTS``,
  ``FALLBACK_CUT``: a library without embedded passages), each by logistic regression, standardised, an L2 penalty
  on the weights (:data:`L2`: 100 for the five, 1 for the four), each class of each library weighing the same in
  total (so the 700-skill library does not outvote the 50-skill one, nor the many single-skill requests the few
  no-skill ones); fitted by Newton's method.
- The cut: the lowest logit at which no library's single-skill requests are dropped more than ``--target``
  (1.5%, so that held-out requests have room below the 3% goal), halfway to the next lower request, plus the
  *transfer margin* (:func:`transfer`): fitted on one library (model and cut) and applied to the other, how much
  higher the cut must sit for the other library's single-skill requests to be dropped within the same budget; the
  largest of the two directions (0 when both are within it). Without it a cut fitted on one library drops 3-8% of
  another's (the logit of a library it was not fitted on sits higher); the penalty of the five numbers is the one
  of 1, 3, 10, 30, 50, 100, 200, 300 whose cross-validated no-skill share at its margin is highest (``--sweep``:
  100 and up give the same; a weaker one needs a margin of 0.6-1.3 logits), the four keep theirs (1: a stronger
  penalty needs a larger margin).
- Cross-validation: 10 folds x 5 repeats, model and cut (the margin added) fitted on nine folds and applied to the
  tenth (the five numbers, and the four on the same folds); the transfer test, fitted on one library and applied to
  the other, with and without the margin and at budgets of 0.5-3%.
- The comparison: per library and set, the share of no-skill requests given nothing and of single-skill requests
  wrongly dropped, by the first rule (confidence floor 0.15, margin 0.05 over the first 54 everyday requests), by
  the previous default (the four numbers, as fitted before the fifth), by the fitted model, cross-validated and
  across libraries; the paired bootstrap of the correct decisions (``router.evaluation.stats.paired_comparison``)
  pairs the cross-validated decisions with those of the four numbers cross-validated on the same folds, and with
  the previous default's as fitted (on the held-out sets of ``--older``: the fitted model's with the previous
  default's).

``--three``: a library neither fit saw, three times over: the corpora split by where the skills come from into two
libraries (anthropic + scientific, 142 skills; awesome, 544), each of those and the bundled library held out in turn,
the rule (model, budget cut, transfer margin between the other two) fitted on the other two and applied to it.
``--sweep``: the transfer margin and cross-validation of each penalty of ``SWEEP``.

``--older``: also the same two shares, before and fitted, on the first sets of the project (``bundled-*.jsonl``,
``corpora-*.jsonl``, dev and test: written by someone who had read the skills; their no-skill rows over the corpora
are plausible tasks no skill serves, which this decision is not meant to catch); the test halves are never fitted
on, the held-out check. ``--first-dev`` fits on those dev halves too (not the default: see benchmarks/README.md).

Writes benchmarks/results/abstain_fit.json (the constants, the CV numbers, each request's numbers).
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from common import CORPORA, ROOT, read_jsonl, save
from router import Router, abstain
from router.config import RouterConfig
from router.evaluation.stats import paired_comparison
from router.ranking import confidences
from users import DATA, ROOTS, query_of

LIBRARIES = ("corpora", "bundled")
SETS = {"first": "", "added": "-abstain", "tasks": "-tasks"}
OLD_FLOOR, OLD_MARGIN, OLD_EVERYDAY = 0.15, 0.05, 54  # the rule before: its floor, margin and everyday list
#: The default before the embedded passages: the model over the first four numbers and its cut (the paired
#: comparison's baseline).
PREVIOUS, PREVIOUS_CUT = (-0.2128, -20.4224, 12.4366, -2.8242, -0.4304), 1.3816
#: The five-number model before the transfer margin (penalty 1, no margin): the second baseline.
FIVE_BEFORE, FIVE_BEFORE_CUT = (0.1729, -5.5274, 13.2380, -2.8247, -0.5540, -23.5069), 1.6437
#: The L2 penalty of each model, by its number of features (``--sweep`` shows the choice).
L2 = {5: 100.0, 4: 1.0}
SWEEP = (1.0, 3.0, 10.0, 30.0, 50.0, 100.0, 200.0, 300.0)
BUDGETS = (0.005, 0.01, 0.015, 0.02, 0.03)
#: The bodies' passages embedded, so that the fifth number is there (router.signals.passage_dense).
CONFIG = RouterConfig(weights={"passage_dense": 0.5})
INDEX = "/tmp/skill-router-abstain-fit"
#: ``--three``: the corpora split by where the skills come from into two libraries of 142 and 544 skills.
SPLIT = {"science": ("anthropic-skills/skills", "scientific-skills/scientific-skills"),
         "awesome": ("awesome-skills/skills",)}


def requests(library: str, first_dev: bool = False) -> list[dict[str, Any]]:
    rows = []
    for name, suffix in SETS.items():
        rows.extend({**row, "set": name} for row in read_jsonl(DATA / f"users-{library}-dev{suffix}.jsonl"))
    return rows + (older(library, "dev") if first_dev else [])


def older(library: str, split: str) -> list[dict[str, Any]]:
    rows = read_jsonl(DATA / f"{library}-{split}.jsonl")
    kinds = {0: "none", 1: "single"}
    return [{**row, "set": f"{library}-{split}", "kind": row.get("kind") or kinds.get(len(row["gold"]), "multi")}
            for row in rows]


def load(library: str) -> Router:
    roots = [str(r) for r in ROOTS] if library == "corpora" else [str(CORPORA / r) for r in SPLIT[library]] \
        if library in SPLIT else [str(ROOT / "skills")]
    return Router.from_skills(roots, "agentskills", CONFIG, index_folder=f"{INDEX}/{library}")


def measure(library: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Each request's features, kind and set, and the old rule's decision, over one library."""
    router = load(library)
    queries = [query_of(r) for r in rows]
    scored = router.score_many(queries)
    features = router.no_skill_features(scored)
    routings = router.route_many(queries, k=10)
    chance = abstain.chance_level(router.signals, router.signals.score, confidences, abstain.everyday_vectors(
        router.encoder.model_id, router.encode, int(scored.vectors.shape[1])), router.encoder.model_id)
    best = features[:, 0] + chance.best
    everyday = (scored.vectors @ abstain.everyday_vectors(router.encoder.model_id, router.encode, int(
        scored.vectors.shape[1]))[:OLD_EVERYDAY].T).max(axis=1)
    old = (best < OLD_FLOOR) | (everyday - best > OLD_MARGIN)
    named = np.array([any(m.reason == "named" for m in r.matches) for r in routings])
    return {"rows": rows, "features": features, "old": old & ~named, "named": named, "chance": chance,
            "library": np.array([library] * len(rows))}


def fit(x: np.ndarray, y: np.ndarray, weight: np.ndarray, l2: float = 1.0) -> np.ndarray:
    """Logistic regression by Newton's method on standardised features; coefficients on the raw features
    (intercept first)."""
    mean, spread = x.mean(axis=0), x.std(axis=0) + 1e-12
    z = np.column_stack([np.ones(len(x)), (x - mean) / spread])
    beta = np.zeros(z.shape[1])
    penalty = l2 * np.diag(np.r_[0.0, np.ones(z.shape[1] - 1)])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-z @ beta))
        gradient = z.T @ (weight * (p - y)) + penalty @ beta
        hessian = (z * (weight * p * (1 - p))[:, None]).T @ z + penalty
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-10:
            break
    weights = beta[1:] / spread
    return np.r_[beta[0] - weights @ mean, weights]


def balanced(y: np.ndarray, library: np.ndarray) -> np.ndarray:
    """Weights giving each (library, class) the same total."""
    weight = np.zeros(len(y))
    groups = [(lib, c) for lib in np.unique(library) for c in (True, False)]
    for lib, c in groups:
        mask = (library == lib) & (y == c)
        if mask.any():
            weight[mask] = 1.0 / mask.sum()
    return weight * len(y) / weight.sum()


def logits(x: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
    return coefficients[0] + x @ coefficients[1:]


def choose_cut(score: np.ndarray, y: np.ndarray, library: np.ndarray, target: float) -> float:
    """The lowest cut (drop when ``score >= cut``) at which no library's skill requests are dropped more than
    ``target``; halfway to the next score, so a request exactly at a fitted score is not on the edge."""
    cut = float(score.max()) + 1.0
    for candidate in np.sort(np.unique(score))[::-1]:
        fine = all(((score >= candidate) & ~y & (library == lib)).sum() <= target * (~y & (library == lib)).sum()
                   for lib in np.unique(library))
        if not fine:
            break
        cut = float(candidate)
    below = score[score < cut]
    return (cut + float(below.max())) / 2 if below.size else cut


def transfer(x: np.ndarray, y: np.ndarray, library: np.ndarray, target: float, l2: float
             ) -> tuple[float, dict[str, float], np.ndarray, np.ndarray]:
    """Leave one library out: for each library, the model and cut fitted on the others and applied to it. Returns
    the transfer margin (the largest shortfall, at least 0), each library's shortfall (the cut its own single-skill
    requests would need, :func:`choose_cut` on them alone, minus the cut fitted on the others: how much higher the
    cut must sit for it to drop within ``target``), and each request's held-out logit minus the held-out cut."""
    shortfall: dict[str, float] = {}
    above = np.zeros(len(y))
    for lib in np.unique(library):
        other = library != lib
        model = fit(x[other], y[other], balanced(y[other], library[other]), l2)
        cut = choose_cut(logits(x[other], model), y[other], library[other], target)
        held = logits(x[~other], model)
        shortfall[str(lib)] = choose_cut(held, y[~other], library[~other], target) - cut
        above[~other] = held - cut
    return max(0.0, *shortfall.values()), shortfall, above, above >= 0


def held_out(x: np.ndarray, y: np.ndarray, single: np.ndarray, library: np.ndarray, target: float,
             l2: float) -> dict[str, Any]:
    """Each library held out in turn: the rule (model, budget cut and transfer margin, :func:`transfer` among the
    others) fitted on the other libraries and applied to it; its no-skill requests given nothing and single-skill
    requests dropped, without the margin and with it."""
    out: dict[str, Any] = {}
    for lib in np.unique(library):
        other, held = library != lib, library == lib
        margin, _, _, _ = transfer(x[other], y[other], library[other], target, l2)
        model = fit(x[other], y[other], balanced(y[other], library[other]), l2)
        cut = choose_cut(logits(x[other], model), y[other], library[other], target)
        score = logits(x[held], model)
        out[str(lib)] = {"margin": round(margin, 4), "none": share((score >= cut)[y[held]]),
                         "single": share((score >= cut)[single[held]]),
                         "none_margin": share((score >= cut + margin)[y[held]]),
                         "single_margin": share((score >= cut + margin)[single[held]])}
    return out


def cross_validate(x: np.ndarray, y: np.ndarray, library: np.ndarray, target: float, l2: float = 1.0,
                   margin: float = 0.0, folds: int = 10, repeats: int = 5) -> np.ndarray:
    """Each request's share of repeats in which the fold model dropped it (its cut plus ``margin``)."""
    dropped = np.zeros(len(y))
    for repeat in range(repeats):
        fold = np.random.default_rng(repeat).permutation(len(y)) % folds
        for k in range(folds):
            train, test = fold != k, fold == k
            model = fit(x[train], y[train], balanced(y[train], library[train]), l2)
            cut = choose_cut(logits(x[train], model), y[train], library[train], target) + margin
            dropped[test] += logits(x[test], model) >= cut
    return dropped / repeats


def share(values: np.ndarray) -> float:
    return round(100 * float(np.mean(values)), 1) if len(values) else float("nan")


def five_before(features: np.ndarray) -> np.ndarray:
    """The decision of the five numbers before the transfer margin (penalty 1, its cut as fitted then)."""
    return FIVE_BEFORE[0] + features @ np.array(FIVE_BEFORE[1:]) >= FIVE_BEFORE_CUT


def previous_model(features: np.ndarray) -> np.ndarray:
    """The decision of the default before the embedded passages: the model over the first four numbers."""
    return PREVIOUS[0] + features[:, :4] @ np.array(PREVIOUS[1:]) >= PREVIOUS_CUT


def pair(base: np.ndarray, new: np.ndarray, none: bool) -> dict[str, Any]:
    """Paired bootstrap of the correct decisions (a share of repeats for cross-validated ones), ``new`` minus
    ``base``, on requests that are all no-skill (``none``) or all single-skill."""
    right = (lambda d: d.astype(float)) if none else (lambda d: 1.0 - d.astype(float))
    test = paired_comparison(right(base), right(new))
    return {"diff": round(100 * test.mean_diff, 1), "low": round(100 * test.low, 1), "high": round(100 * test.high, 1),
            "p": test.p_value, "won": test.wins, "lost": test.losses}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=float, default=0.015,
                        help="largest share of a library's single-skill requests the cut may drop (default 0.015)")
    parser.add_argument("--older", action="store_true",
                        help="also report the project's first dev and test sets (their test halves never fitted on)")
    parser.add_argument("--sweep", action="store_true",
                        help="also the transfer margin and cross-validation of each L2 penalty of SWEEP, both models")
    parser.add_argument("--three", action="store_true",
                        help="also hold out each of three libraries (bundled, and the corpora split in two by source)")
    parser.add_argument("--first-dev", action="store_true",
                        help="fit on the project's first dev sets too (bundled-dev, corpora-dev), not only the users'")
    args = parser.parse_args()
    measured = {lib: measure(lib, requests(lib, args.first_dev)) for lib in LIBRARIES}
    names = (*SETS, *((f"{lib}-dev" for lib in LIBRARIES) if args.first_dev else ()), "all")
    keep = {lib: ~m["named"] for lib, m in measured.items()}
    x = np.vstack([m["features"][keep[lib]] for lib, m in measured.items()])
    rows = [r for lib, m in measured.items() for r, k in zip(m["rows"], keep[lib], strict=True) if k]
    library = np.concatenate([m["library"][keep[lib]] for lib, m in measured.items()])
    old = np.concatenate([m["old"][keep[lib]] for lib, m in measured.items()])
    previous = previous_model(x)
    y = np.array([r["kind"] == "none" for r in rows])
    sets = np.array([r["set"] for r in rows])
    kinds = np.array([r["kind"] for r in rows])
    single = kinds == "single"

    margin, shortfall, above, _ = transfer(x, y, library, args.target, L2[5])
    four_margin, four_shortfall, four_above, _ = transfer(x[:, :4], y, library, args.target, L2[4])
    model = fit(x, y, balanced(y, library), L2[5])
    score = logits(x, model)
    cut = choose_cut(score, y, library, args.target) + margin
    new = score >= cut
    fallback = fit(x[:, :4], y, balanced(y, library), L2[4])  # a library without embedded passages
    fallback_cut = choose_cut(logits(x[:, :4], fallback), y, library, args.target) + four_margin
    cv = cross_validate(x, y, library, args.target, L2[5], margin)
    cv_four = cross_validate(x[:, :4], y, library, args.target, L2[4], four_margin)  # on the same folds
    cv_before = cross_validate(x, y, library, args.target)  # the five numbers before: penalty 1, no margin
    before = five_before(x)
    other, other_four = above >= margin, four_above >= four_margin

    print(f"transfer margin, five numbers: {margin:.4f} (shortfall " + ", ".join(
        f"{lib} {v:+.4f}" for lib, v in shortfall.items()) + f"); four: {four_margin:.4f} (" + ", ".join(
        f"{lib} {v:+.4f}" for lib, v in four_shortfall.items()) + ")")
    print("\nleave one library out (model and cut fitted on the other library; the shortfall is measured at 1.5%): "
          "none given nothing / single dropped, at the fitted cut, then at the cut plus the margin")
    budgets: dict[str, Any] = {}
    for label, width, l2 in (("four", 4, L2[4]), ("five before", 5, 1.0), ("five", 5, L2[5])):
        for budget in BUDGETS:
            _, gaps, lifted, _ = transfer(x[:, :width], y, library, budget, l2)
            at = margin if width == 5 and l2 == L2[5] else four_margin if width == 4 else 0.0
            entry = {}
            for lib in LIBRARIES:
                held = library == lib
                entry[lib] = {"none": share((lifted >= 0)[held & y]), "single": share((lifted >= 0)[held & single]),
                              "none_margin": share((lifted >= at)[held & y]),
                              "single_margin": share((lifted >= at)[held & single]), "shortfall": round(gaps[lib], 4)}
            budgets[f"{label}/{budget}"] = {"margin": round(at, 4), **entry}
            print(f"  {label:11} budget {100 * budget:3.1f}%  " + "   ".join(
                f"-> {lib}: {e['none']:5.1f} / {e['single']:4.1f}, +{at:.2f}: {e['none_margin']:5.1f} / "
                f"{e['single_margin']:4.1f}" for lib, e in entry.items()))
    sweep: dict[str, Any] = {}
    if args.sweep:
        print("\nthe L2 penalty: transfer margin and the cross-validation at it (none given nothing / single dropped)")
        for width in (5, 4):
            for l2 in SWEEP:
                gap, gaps, _, _ = transfer(x[:, :width], y, library, args.target, l2)
                folds = cross_validate(x[:, :width], y, library, args.target, l2, gap)
                sweep[f"{width}/{l2:g}"] = {"margin": round(gap, 4), "shortfall": {k: round(v, 4) for k, v in
                                                                                   gaps.items()},
                                            "none": share(folds[y]), "single": share(folds[single])}
                print(f"  {width} numbers, L2 {l2:5g}: margin {gap:.3f} (" + ", ".join(
                    f"{k} {v:+.2f}" for k, v in gaps.items()) + f"), CV {share(folds[y]):5.1f} / "
                    f"{share(folds[single]):4.1f}")
    print(f"COEFFICIENTS = ({', '.join(f'{c:.4f}' for c in model)})  # intercept, best - chance, everyday, "
          f"lexical - chance, matched - chance, passage - chance")
    print(f"CUT = {cut:.4f}")
    print(f"FALLBACK_COEFFICIENTS = ({', '.join(f'{c:.4f}' for c in fallback)})")
    print(f"FALLBACK_CUT = {fallback_cut:.4f}")
    for lib, m in measured.items():
        print(f"chance {lib}: best {m['chance'].best:.4f}, lexical {m['chance'].lexical:.4f}, "
              f"matched {m['chance'].matched:.4f}, passage {m['chance'].passage:.4f}")
    labels = ("rule", "previous", "five_before", "cv_four", "cv_before", "fitted", "cv", "other_four",
              "other_library")
    table: dict[str, Any] = {}
    print(f"\n{'library':8} {'set':11} {'none n':>6} {'single n':>8}   none given nothing: rule / four before / "
          "five before / CV of four / CV of five before / fitted / CV / other library four / five   single wrongly "
          "dropped: the same")
    for lib in (*LIBRARIES, "pooled"):
        for name in names:
            mask = ((library == lib) | (lib == "pooled")) & ((sets == name) | (name == "all"))
            nones, singles = mask & y, mask & (kinds == "single")
            if not mask.any():
                continue
            entry: dict[str, Any] = {"none_n": int(nones.sum()), "single_n": int(singles.sum())}
            for label, decided in zip(labels, (old, previous, before, cv_four, cv_before, new, cv, other_four, other),
                                      strict=True):
                entry[label] = {"none_given_nothing": share(decided[nones]),
                                "single_wrongly_dropped": share(decided[singles])}
            table[f"{lib}/{name}"] = entry
            print(f"{lib:8} {name:11} {entry['none_n']:6} {entry['single_n']:8}   "
                  + " / ".join(f"{entry[k]['none_given_nothing']:5.1f}" for k in labels)
                  + "     " + " / ".join(f"{entry[k]['single_wrongly_dropped']:4.1f}" for k in labels))
    print("\npaired bootstrap, cross-validated minus the four numbers cross-validated on the same folds "
          "(correct decisions, a share of the repeats; mean difference in points [95% CI], p, requests won/lost), then "
          "minus the previous default as fitted, then minus the five numbers before cross-validated:")
    tests: dict[str, Any] = {"cv_four": {}, "previous": {}, "cv_before": {}}
    for lib in (*LIBRARIES, "pooled"):
        for name in names:
            mask = ((library == lib) | (lib == "pooled")) & ((sets == name) | (name == "all"))
            for what, sel in (("none", mask & y), ("single", mask & (kinds == "single"))):
                if not sel.any():
                    continue
                four = tests["cv_four"][f"{lib}/{name}/{what}"] = pair(cv_four[sel], cv[sel], what == "none")
                fitted = tests["previous"][f"{lib}/{name}/{what}"] = pair(previous[sel], cv[sel], what == "none")
                was = tests["cv_before"][f"{lib}/{name}/{what}"] = pair(cv_before[sel], cv[sel], what == "none")
                print(f"  {lib:8} {name:6} {what:6} " + "   ".join(
                    f"{t['diff']:+5.1f} [{t['low']:+.1f}, {t['high']:+.1f}] p = {t['p']:.2g}, {t['won']}/{t['lost']}"
                    for t in (four, fitted, was)))
    print("\nstill wrong (fitted):")
    for i in np.flatnonzero(new != y):
        if kinds[i] == "multi" and not new[i]:
            continue
        print(f"  {rows[i]['id']:7} {kinds[i]:6} {'dropped' if new[i] else 'kept':7} logit {score[i] - cut:+.2f} "
              f"{rows[i]['query'][:70]}")
    three: dict[str, Any] = {}
    if args.three:
        print("\nthree libraries (the corpora split by source; its no-skill requests in both, its single-skill ones "
              "where their skill is), each held out, the rule fitted on the other two: none given nothing / single "
              "dropped, without the margin, then with it")
        parts = [(lib, measure(lib, [r for r in requests("corpora") if r["kind"] == "none" or (
            r["kind"] == "single" and all(g.split("/")[0] in {s.split("/")[0] for s in SPLIT[lib]}
                                          for g in r["gold"]))])) for lib in SPLIT]
        bundled = library == "bundled"
        x3 = np.vstack([x[bundled], *(m["features"][~m["named"]] for _, m in parts)])
        kinds3 = np.concatenate([kinds[bundled], *(np.array([r["kind"] for r in m["rows"]])[~m["named"]]
                                                   for _, m in parts)])
        library3 = np.concatenate([library[bundled], *(m["library"][~m["named"]] for _, m in parts)])
        for label, width, l2 in (("four", 4, L2[4]), ("five before", 5, 1.0), ("five", 5, L2[5])):
            three[label] = held_out(x3[:, :width], kinds3 == "none", kinds3 == "single", library3, args.target, l2)
            print(f"  {label:11} " + "   ".join(
                f"{lib} ({int(((library3 == lib) & (kinds3 == 'single')).sum())} single): {e['none']:5.1f} / "
                f"{e['single']:3.1f}, +{e['margin']:.2f}: {e['none_margin']:5.1f} / {e['single_margin']:3.1f}"
                for lib, e in three[label].items()))
    checks = {}
    if args.older:
        print("\nthe project's first sets (not fitted on): none given nothing / single wrongly dropped, four before, "
              "five before, four and five fitted (paired bootstrap p, five fitted against five before)")
        for lib in LIBRARIES:
            for split in ("dev", "test"):
                m = measure(lib, older(lib, split))
                kind = np.array([r["kind"] for r in m["rows"]])
                decided = {"previous": previous_model(m["features"]), "five_before": five_before(m["features"]),
                           "four": logits(m["features"][:, :4], fallback) >= fallback_cut,
                           "fitted": logits(m["features"], model) >= cut}
                decided = {k: v & ~m["named"] for k, v in decided.items()}
                entry = {}
                for what, sel in (("none", kind == "none"), ("single", kind == "single")):
                    entry[what] = {"n": int(sel.sum()), "rule": share(m["old"][sel]),
                                   **{k: share(v[sel]) for k, v in decided.items()},
                                   **pair(decided["five_before"][sel], decided["fitted"][sel], what == "none")}
                checks[f"{lib}-{split}"] = entry
                print(f"  {lib}-{split:5} " + "; ".join(
                    f"{what} " + " / ".join(f"{e[k]:5.1f}" for k in decided) + f" of {e['n']} (p = {e['p']:.2g})"
                    for what, e in entry.items()))
    save("abstain_fit", {"older": checks, "coefficients": [round(float(c), 4) for c in model], "cut": round(cut, 4),
                         "fallback_coefficients": [round(float(c), 4) for c in fallback],
                         "fallback_cut": round(fallback_cut, 4),
                         "target": args.target, "l2": {str(k): v for k, v in L2.items()},
                         "margin": round(margin, 4), "shortfall": {k: round(v, 4) for k, v in shortfall.items()},
                         "fallback_margin": round(four_margin, 4),
                         "fallback_shortfall": {k: round(v, 4) for k, v in four_shortfall.items()},
                         "budgets": budgets, "sweep": sweep, "three": three, "table": table, "paired": tests,
                         "chance": {lib: vars(m["chance"]) for lib, m in measured.items()},
                         "requests": [{"id": r["id"], "kind": r["kind"], "set": r["set"], "library": lib,
                                       "features": [round(float(v), 4) for v in f], "rule": bool(o),
                                       "previous": bool(b), "fitted": bool(n), "cv": round(float(c), 2),
                                       "cv_four": round(float(t), 2), "cv_before": round(float(w), 2)}
                                      for r, lib, f, o, b, n, c, t, w in zip(rows, library, x, old, previous, new,
                                                                             cv, cv_four, cv_before, strict=True)]})


if __name__ == "__main__":
    main()
