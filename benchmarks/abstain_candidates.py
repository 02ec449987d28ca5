"""Numbers that might help the "no skill fits" model, each measured by the rule of benchmarks/abstain_fit.py.

    python benchmarks/abstain_candidates.py              # every candidate at the penalties of --l2
    python benchmarks/abstain_candidates.py --l2 100     # one penalty

Each candidate is added as a sixth number to the five of ``router.abstain.features`` and the model is fitted,
cut and cross-validated exactly as ``abstain_fit.py`` does (logistic regression with the L2 penalty, each class of
each library weighing the same, the 1.5% budget cut plus the transfer margin, 10 folds x 5 repeats) on the same
users' dev requests. Reported per candidate: the margin, the cross-validated shares of no-skill requests given
nothing and of single-skill requests dropped (pooled, per library), the model fitted on one library and applied to
the other, and, never fitted on, the project's first dev sets (``corpora-dev``: its no-skill rows are coding
tasks in tools no corpus skill covers) and ``users-corpora-dev-tech.jsonl`` (the same kind of request written as
users write them), and how often ``u-104`` is dropped in the cross-validation. ``--with-tech`` fits on the tech
set too.

Candidates (every one against the library's chance level, the mean over the first ``CHANCE_SAMPLE`` everyday
requests, unless it is a difference within one request):

- relative evidence: the best description cosine minus the best cosine with any everyday request;
- rank: the top cosine minus the mean of the next nine (descriptions, body heads) and the same of the fused score;
- per-library standardisation: the best cosine as a z-score over the everyday sample's best cosines;
- breadth: how many skills' body heads score above the everyday sample's 90th percentile;
- the mean of the top five cosines (descriptions, body heads);
- lexical rank: log(1 + best BM25) minus the mean of the next nine (body passages), minus the second (name and
  description BM25, the body's first words);
- words the library does not know: the share of the request's tokens absent from the body passages' vocabulary,
  and log(1 + how many Latin-script tokens are).

Then the ceiling: the five numbers (and the five with the unknown words) fitted on the technical no-skill requests
against the corpora's single-skill requests alone, in-sample: how many of them the 1.5% budget gives nothing. And
where each technical no-skill request sits among the corpora's single-skill requests under the five numbers'
model. Writes benchmarks/results/abstain_candidates.json.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import Any, cast

import numpy as np

import abstain_fit as fitting
from common import read_jsonl, save
from router import abstain
from users import DATA, query_of

TECH = DATA / "users-corpora-dev-tech.jsonl"
LATIN = re.compile(r"^[a-z0-9_]*[a-z][a-z0-9_]*$")
Candidate = Callable[[dict[str, Any]], np.ndarray]


def measure(library: str) -> dict[str, Any]:
    """Each request's five numbers and what the candidates are made of, over one library."""
    fitted = fitting.requests(library)
    tech = [{**row, "set": "tech"} for row in read_jsonl(TECH)] if library == "corpora" else []
    rows = fitted + tech + fitting.older(library, "dev")
    router = fitting.load(library)
    queries = [query_of(r) for r in rows]
    scored = router.score_many(queries)
    sample = router.score_many(list(abstain.EVERYDAY[:abstain.CHANCE_SAMPLE]))
    everyday = abstain.everyday_vectors(router.encoder.model_id, router.encode, int(scored.vectors.shape[1]))
    routings = router.route_many(queries, k=10)
    words = cast(Any, router.signals).indexes["passages"].index  # the built signals (router.signals.Signals)
    return {"rows": rows, "features": router.no_skill_features(scored), "library": library,
            "named": np.array([any(m.reason == "named" for m in r.matches) for r in routings]),
            "scores": {**scored.signals, "fused": router.fuse(scored)},
            "sample": {**sample.signals, "fused": router.fuse(sample)},
            "everyday": scored.vectors @ everyday.T,
            "unknown": unknown(words, [r["query"] for r in rows]),
            "sample_unknown": unknown(words, list(abstain.EVERYDAY[:abstain.CHANCE_SAMPLE]))}


def unknown(index: Any, texts: list[str]) -> np.ndarray:
    """Per text: its share of distinct tokens the passages' BM25 vocabulary lacks, and how many Latin-script ones."""
    known = set(index.vocabulary)
    out = []
    for text in texts:
        tokens = list(dict.fromkeys(index.tokenizer(text)))
        missing = [t for t in tokens if t not in known]
        out.append((len(missing) / len(tokens) if tokens else 0.0, sum(bool(LATIN.match(t)) for t in missing)))
    return np.array(out, dtype=np.float64).reshape(-1, 2)


def top(values: np.ndarray) -> np.ndarray:
    return -np.sort(-values, axis=1)


def against_chance(name: str, statistic: Callable[[np.ndarray], np.ndarray]) -> Candidate:
    """``statistic`` of a signal's scores per request, minus its mean over the everyday sample."""
    return lambda m: statistic(m["scores"][name]) - float(np.mean(statistic(m["sample"][name])))


def gap(values: np.ndarray, k: int = 10, log: bool = False) -> np.ndarray:
    """The top score minus the mean of the next ``k - 1`` (in log(1 + score) for BM25)."""
    ranked = top(values)[:, :k]
    ranked = np.log1p(np.maximum(ranked, 0.0)) if log else ranked
    return ranked[:, 0] - ranked[:, 1:].mean(axis=1)


def z_best(name: str) -> Candidate:
    def column(m: dict[str, Any]) -> np.ndarray:
        sample = m["sample"][name].max(axis=1)
        return (m["scores"][name].max(axis=1) - sample.mean()) / sample.std()
    return column


def breadth(name: str) -> Candidate:
    def column(m: dict[str, Any]) -> np.ndarray:
        level = np.quantile(m["sample"][name].max(axis=1), 0.9)
        return np.log1p((m["scores"][name] > level).sum(axis=1)) - float(
            np.mean(np.log1p((m["sample"][name] > level).sum(axis=1))))
    return column


CANDIDATES: dict[str, Candidate] = {
    "description minus everyday": lambda m: m["scores"]["dense"].max(axis=1) - m["everyday"].max(axis=1),
    "description top-1 - next 9": against_chance("dense", gap),
    "body head top-1 - next 9": against_chance("passage_dense", gap),
    "fused top-1 - next 9": against_chance("fused", gap),
    "description z-score": z_best("dense"),
    "body head z-score": z_best("passage_dense"),
    "body heads above the sample's 90%": breadth("passage_dense"),
    "description top-5 mean": against_chance("dense", lambda v: top(v)[:, :5].mean(axis=1)),
    "body head top-5 mean": against_chance("passage_dense", lambda v: top(v)[:, :5].mean(axis=1)),
    "passages BM25 top-1 - next 9": against_chance("passages", lambda v: gap(v, log=True)),
    "description BM25 top-1 - second": against_chance("bm25", lambda v: gap(v, 2, log=True)),
    "body start BM25 top-1 - second": against_chance("body_bm25", lambda v: gap(v, 2, log=True)),
    "share of unknown tokens": lambda m: m["unknown"][:, 0] - float(m["sample_unknown"][:, 0].mean()),
    "unknown Latin tokens": lambda m: np.log1p(m["unknown"][:, 1]) - float(np.mean(np.log1p(
        m["sample_unknown"][:, 1]))),
}


def columns(measured: list[dict[str, Any]], candidate: Candidate | None) -> dict[str, np.ndarray]:
    """The rows of every library (named ones left out, as routing never drops them): numbers and labels."""
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("x", "kind", "set", "id", "library")}
    for m in measured:
        keep = ~m["named"]
        x = m["features"] if candidate is None else np.column_stack([m["features"], candidate(m)])
        parts["x"].append(x[keep])
        for key, field in (("kind", "kind"), ("set", "set"), ("id", "id")):
            parts[key].append(np.array([r[field] for r in m["rows"]])[keep])
        parts["library"].append(np.array([m["library"]] * int(keep.sum())))
    return {k: np.vstack(v) if k == "x" else np.concatenate(v) for k, v in parts.items()}


def judge(data: dict[str, np.ndarray], l2: float, target: float, with_tech: bool) -> dict[str, Any]:
    """The rule of abstain_fit.py on the users' dev requests (and the tech set with ``with_tech``)."""
    x, kind, sets, library = data["x"], data["kind"], data["set"], data["library"]
    fit_on = np.isin(sets, [*fitting.SETS, *(("tech",) if with_tech else ())])
    y, single = kind == "none", kind == "single"
    xf, yf, lf = x[fit_on], y[fit_on], library[fit_on]
    margin, _, above, _ = fitting.transfer(xf, yf, lf, target, l2)
    model = fitting.fit(xf, yf, fitting.balanced(yf, lf), l2)
    cut = fitting.choose_cut(fitting.logits(xf, model), yf, lf, target) + margin
    cv = fitting.cross_validate(xf, yf, lf, target, l2, margin)
    dropped = fitting.logits(x, model) >= cut

    def pair(decided: np.ndarray, mask: np.ndarray, none: np.ndarray, one: np.ndarray) -> list[float]:
        return [fitting.share(decided[mask & none]), fitting.share(decided[mask & one])]

    out: dict[str, Any] = {"margin": round(margin, 4), "cv": pair(cv, np.ones(len(yf), bool), yf, single[fit_on])}
    for lib in fitting.LIBRARIES:
        out[f"cv {lib}"] = pair(cv, lf == lib, yf, single[fit_on])
        out[f"-> {lib}"] = pair(above >= margin, lf == lib, yf, single[fit_on])
        out[f"{lib}-dev"] = pair(dropped, sets == f"{lib}-dev", y, single)
    # the tech set: cross-validated where it is fitted on, else the fitted model's decisions
    out["tech"] = pair(cv, sets[fit_on] == "tech", yf, single[fit_on]) if with_tech \
        else pair(dropped, sets == "tech", y, single)
    out["u-104 dropped"] = float(cv[data["id"][fit_on] == "u-104"][0])
    return out


def ceiling(base: dict[str, np.ndarray], unknown_latin: dict[str, np.ndarray], target: float) -> dict[str, Any]:
    """The technical no-skill requests (tech set, corpora-dev) against the corpora's single-skill ones alone."""
    corpora = base["library"] == "corpora"
    technical = corpora & (base["kind"] == "none") & np.isin(base["set"], ["tech", "corpora-dev"])
    single = corpora & (base["kind"] == "single")
    out: dict[str, Any] = {"technical": int(technical.sum()), "single": int(single.sum())}
    for label, x in (("five", base["x"]), ("five and unknown Latin tokens", unknown_latin["x"])):
        rows = technical | single
        y = technical[rows]
        weight = np.where(y, 0.5 / y.sum(), 0.5 / (~y).sum()) * len(y)
        score = fitting.logits(x[rows], fitting.fit(x[rows], y, weight, 1.0))
        out[label] = fitting.share(score[y] >= np.quantile(score[~y], 1.0 - target))
    fit_on = np.isin(base["set"], list(fitting.SETS))
    y, lib = base["kind"][fit_on] == "none", base["library"][fit_on]
    model = fitting.fit(base["x"][fit_on], y, fitting.balanced(y, lib), fitting.L2[5])
    score = fitting.logits(base["x"], model)
    out["singles above each technical request (%)"] = sorted(
        (fitting.share(score[single] >= s) for s in score[technical]), reverse=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--l2", type=float, nargs="+", default=[100.0, 30.0, 10.0], help="penalties to try")
    parser.add_argument("--target", type=float, default=0.015, help="the budget of dropped single-skill requests")
    parser.add_argument("--with-tech", action="store_true", help="fit on the technical no-skill requests too")
    args = parser.parse_args()
    measured = [measure(lib) for lib in fitting.LIBRARIES]
    base = columns(measured, None)
    results: dict[str, Any] = {"five": judge(base, fitting.L2[5], args.target, args.with_tech)}
    print(f"{'candidate':36} {'L2':>4}  margin  CV none/single (corpora, bundled)  -> corpora, -> bundled  "
          "corpora-dev  bundled-dev  tech  u-104")

    def show(name: str, l2: float, r: dict[str, Any]) -> None:
        print(f"{name:36} {l2:4g}  {r['margin']:.3f}  {r['cv'][0]:5.1f}/{r['cv'][1]:3.1f} ("
              + ", ".join(f"{r[f'cv {lib}'][0]:5.1f}/{r[f'cv {lib}'][1]:3.1f}" for lib in fitting.LIBRARIES) + ")  "
              + ", ".join(f"{r[f'-> {lib}'][0]:5.1f}/{r[f'-> {lib}'][1]:3.1f}" for lib in fitting.LIBRARIES)
              + f"  {r['corpora-dev'][0]:5.1f}/{r['corpora-dev'][1]:3.1f}  {r['bundled-dev'][0]:5.1f}/"
              f"{r['bundled-dev'][1]:3.1f}  {r['tech'][0]:5.1f}  {r['u-104 dropped']:.1f}", flush=True)

    show("the five numbers", fitting.L2[5], results["five"])
    for l2 in args.l2:
        for name, candidate in CANDIDATES.items():
            results[f"{name} / {l2:g}"] = r = judge(columns(measured, candidate), l2, args.target, args.with_tech)
            show(name, l2, r)
    results["ceiling"] = ceiling(base, columns(measured, CANDIDATES["unknown Latin tokens"]), args.target)
    print("ceiling:", results["ceiling"])
    save("abstain_candidates" + ("-with-tech" if args.with_tech else ""), {"target": args.target, "results": results})


if __name__ == "__main__":
    main()
