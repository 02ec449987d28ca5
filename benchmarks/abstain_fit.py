"""Fit the "no skill fits" model of router/abstain.py on the users' dev requests, cross-validate it, choose its cut.

    python benchmarks/abstain_fit.py            # fit, cross-validate, compare with the rule before, print constants

Requests: benchmarks/data/users-{corpora,bundled}-dev.jsonl (the first set), users-*-dev-abstain.jsonl (written
for this decision: chit-chat, knowledge, short single-skill requests) and users-*-dev-tasks.jsonl (everyday tasks
no skill serves, single-skill tasks in other words), over the two libraries of benchmarks/users.py, all dev, their
bodies' passages embedded (``passage_dense`` weighing 0.5; its own index folders). Every request gets the five
numbers of ``router.abstain.features`` (through ``Router.no_skill_features``, exactly as routing computes them);
requests that name a skill are left out (routing never drops them).

- The models: the five numbers (``COEFFICIENTS``, ``CUT``), and the first four (``FALLBACK_COEFFICIENTS``,
  ``FALLBACK_CUT``: a library without embedded passages), each by logistic regression, standardised, L2 penalty 1
  on the weights, each class of each library weighing the same in total (so the 700-skill library does not outvote
  the 50-skill one, nor the many single-skill requests the few no-skill ones); fitted by Newton's method.
- The cut: the lowest logit at which no library's single-skill requests are dropped more than ``--target``
  (1.5%, so that held-out requests have room below the 3% goal; in the cross-validation it gives the no-skill
  requests the same share given nothing as 2% does, with fewer single-skill requests dropped), halfway to the
  next lower request.
- Cross-validation: 10 folds x 5 repeats, model and cut fitted on nine folds and applied to the tenth (the five
  numbers, and the four on the same folds); and the transfer test, fitted on one library and applied to the other.
- The comparison: per library and set, the share of no-skill requests given nothing and of single-skill requests
  wrongly dropped, by the first rule (confidence floor 0.15, margin 0.05 over the first 54 everyday requests), by
  the previous default (the four numbers, as fitted before the fifth), by the fitted model, cross-validated and
  across libraries; the paired bootstrap of the correct decisions (``router.evaluation.stats.paired_comparison``)
  pairs the cross-validated decisions with those of the four numbers cross-validated on the same folds, and with
  the previous default's as fitted (on the held-out sets of ``--older``: the fitted model's with the previous
  default's).

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

from common import ROOT, read_jsonl, save
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
#: The bodies' passages embedded, so that the fifth number is there (router.signals.passage_dense).
CONFIG = RouterConfig(weights={"passage_dense": 0.5})
INDEX = "/tmp/skill-router-abstain-fit"


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
    roots = [str(r) for r in ROOTS] if library == "corpora" else [str(ROOT / "skills")]
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


def cross_validate(x: np.ndarray, y: np.ndarray, library: np.ndarray, target: float, folds: int = 10,
                   repeats: int = 5) -> np.ndarray:
    """Each request's share of repeats in which the fold model dropped it."""
    dropped = np.zeros(len(y))
    for repeat in range(repeats):
        fold = np.random.default_rng(repeat).permutation(len(y)) % folds
        for k in range(folds):
            train, test = fold != k, fold == k
            model = fit(x[train], y[train], balanced(y[train], library[train]))
            cut = choose_cut(logits(x[train], model), y[train], library[train], target)
            dropped[test] += logits(x[test], model) >= cut
    return dropped / repeats


def share(values: np.ndarray) -> float:
    return round(100 * float(np.mean(values)), 1) if len(values) else float("nan")


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

    model = fit(x, y, balanced(y, library))
    score = logits(x, model)
    cut = choose_cut(score, y, library, args.target)
    new = score >= cut
    fallback = fit(x[:, :4], y, balanced(y, library))  # a library without embedded passages
    fallback_cut = choose_cut(logits(x[:, :4], fallback), y, library, args.target)
    cv = cross_validate(x, y, library, args.target)
    cv_four = cross_validate(x[:, :4], y, library, args.target)  # the four numbers, on the same folds
    transfer = np.zeros(len(y), dtype=bool)
    for lib in LIBRARIES:
        other = library != lib
        fold_model = fit(x[other], y[other], balanced(y[other], library[other]))
        fold_cut = choose_cut(logits(x[other], fold_model), y[other], library[other], args.target)
        transfer[~other] = logits(x[~other], fold_model) >= fold_cut

    print(f"COEFFICIENTS = ({', '.join(f'{c:.4f}' for c in model)})  # intercept, best - chance, everyday, "
          f"lexical - chance, matched - chance, passage - chance")
    print(f"CUT = {cut:.4f}")
    print(f"FALLBACK_COEFFICIENTS = ({', '.join(f'{c:.4f}' for c in fallback)})")
    print(f"FALLBACK_CUT = {fallback_cut:.4f}")
    for lib, m in measured.items():
        print(f"chance {lib}: best {m['chance'].best:.4f}, lexical {m['chance'].lexical:.4f}, "
              f"matched {m['chance'].matched:.4f}, passage {m['chance'].passage:.4f}")
    labels = ("rule", "previous", "cv_four", "fitted", "cv", "other_library")
    table: dict[str, Any] = {}
    print(f"\n{'library':8} {'set':11} {'none n':>6} {'single n':>8}   none given nothing: rule / previous / CV of "
          "four / fitted / CV / other library   single wrongly dropped: the same")
    for lib in (*LIBRARIES, "pooled"):
        for name in names:
            mask = ((library == lib) | (lib == "pooled")) & ((sets == name) | (name == "all"))
            nones, singles = mask & y, mask & (kinds == "single")
            if not mask.any():
                continue
            entry: dict[str, Any] = {"none_n": int(nones.sum()), "single_n": int(singles.sum())}
            for label, decided in zip(labels, (old, previous, cv_four, new, cv, transfer), strict=True):
                entry[label] = {"none_given_nothing": share(decided[nones]),
                                "single_wrongly_dropped": share(decided[singles])}
            table[f"{lib}/{name}"] = entry
            print(f"{lib:8} {name:11} {entry['none_n']:6} {entry['single_n']:8}   "
                  + " / ".join(f"{entry[k]['none_given_nothing']:5.1f}" for k in labels)
                  + "     " + " / ".join(f"{entry[k]['single_wrongly_dropped']:4.1f}" for k in labels))
    print("\npaired bootstrap, cross-validated minus the four numbers cross-validated on the same folds "
          "(correct decisions, a share of the repeats; mean difference in points [95% CI], p, requests won/lost), then "
          "minus the previous default as fitted:")
    tests: dict[str, Any] = {"cv_four": {}, "previous": {}}
    for lib in (*LIBRARIES, "pooled"):
        for name in names:
            mask = ((library == lib) | (lib == "pooled")) & ((sets == name) | (name == "all"))
            for what, sel in (("none", mask & y), ("single", mask & (kinds == "single"))):
                if not sel.any():
                    continue
                four = tests["cv_four"][f"{lib}/{name}/{what}"] = pair(cv_four[sel], cv[sel], what == "none")
                fitted = tests["previous"][f"{lib}/{name}/{what}"] = pair(previous[sel], cv[sel], what == "none")
                print(f"  {lib:8} {name:6} {what:6} " + "   ".join(
                    f"{t['diff']:+5.1f} [{t['low']:+.1f}, {t['high']:+.1f}] p = {t['p']:.2g}, {t['won']}/{t['lost']}"
                    for t in (four, fitted)))
    print("\nstill wrong (fitted):")
    for i in np.flatnonzero(new != y):
        if kinds[i] == "multi" and not new[i]:
            continue
        print(f"  {rows[i]['id']:7} {kinds[i]:6} {'dropped' if new[i] else 'kept':7} logit {score[i] - cut:+.2f} "
              f"{rows[i]['query'][:70]}")
    checks = {}
    if args.older:
        print("\nthe project's first sets (not fitted on): none given nothing / single wrongly dropped, previous -> "
              "fitted (paired bootstrap p)")
        for lib in LIBRARIES:
            for split in ("dev", "test"):
                m = measure(lib, older(lib, split))
                kind = np.array([r["kind"] for r in m["rows"]])
                fitted = (logits(m["features"], model) >= cut) & ~m["named"]
                before = previous_model(m["features"]) & ~m["named"]
                entry = {}
                for what, sel in (("none", kind == "none"), ("single", kind == "single")):
                    entry[what] = {"n": int(sel.sum()), "rule": share(m["old"][sel]), "previous": share(before[sel]),
                                   "fitted": share(fitted[sel]), **pair(before[sel], fitted[sel], what == "none")}
                checks[f"{lib}-{split}"] = entry
                none, single = entry["none"], entry["single"]
                print(f"  {lib}-{split:5} none {none['previous']:5.1f} -> {none['fitted']:5.1f} of {none['n']} "
                      f"(p = {none['p']:.2g}, rule {none['rule']}); single {single['previous']:4.1f} -> "
                      f"{single['fitted']:4.1f} of {single['n']} (p = {single['p']:.2g}, rule {single['rule']})")
    save("abstain_fit", {"older": checks, "coefficients": [round(float(c), 4) for c in model], "cut": round(cut, 4),
                         "fallback_coefficients": [round(float(c), 4) for c in fallback],
                         "fallback_cut": round(fallback_cut, 4),
                         "target": args.target, "table": table, "paired": tests,
                         "chance": {lib: vars(m["chance"]) for lib, m in measured.items()},
                         "requests": [{"id": r["id"], "kind": r["kind"], "set": r["set"], "library": lib,
                                       "features": [round(float(v), 4) for v in f], "rule": bool(o),
                                       "previous": bool(b), "fitted": bool(n), "cv": round(float(c), 2),
                                       "cv_four": round(float(t), 2)}
                                      for r, lib, f, o, b, n, c, t in zip(rows, library, x, old, previous, new, cv,
                                                                          cv_four, strict=True)]})


if __name__ == "__main__":
    main()
