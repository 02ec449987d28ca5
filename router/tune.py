"""Fit the router's fusion and abstention threshold on labelled dev requests, by k-fold cross-validation.

    from router.evaluation import load_requests
    from router.tune import tune

    result = tune(router, load_requests("dev.jsonl"), examples_from_requests=True)
    result.save("skill-router.json")          # read back by RouterConfig.load / --config

What is fitted, and on what:

- the fusion method (``zscore``, ``rrf``) and the weights each signal declares (its ``tuning``,
  :class:`router.signals.base.Tuning`; the bundled ones: BM25 0, 0.3, 0.5, 0.75, 1 with dense fixed at 1, when
  examples exist the example weight 0.5, 1, 2, 4, and when skills have bodies the body signals' weights 0, 1 or 2
  times the configured body_bm25, body_dense and passages), maximising the mean ``objective`` (``mrr``, ``hit@1`` or
  ``recall@5``) over the gold requests, each scored in its own cross-validation fold (Stone 1974);
- the abstention threshold, when some requests have no gold skill: the F1-best cut on the routing confidence
  (:func:`router.evaluation.metrics.best_threshold`).

With ``examples_from_requests`` the gold requests of the *other* folds serve as example requests of their gold
skills, so that the example signal is scored as a library trained on dev labels would score a new request, and
no request is ever its own example. Without it the folds change nothing (no parameter is estimated from the
requests themselves), and the cross-validated numbers are the plain dev means.

Tune on a dev split only; ``held_out`` reports the chosen setting on data the choice never saw.

Whether the tuned config is better than the one in force (the router's config) is judged on requests the choice
never saw: the ``held_out`` requests when given, else the held-out folds of a nested cross-validation (each fold
scored with the setting chosen on the other folds, Varma and Simon 2006; plain cross-validated means of the best
of 120 settings are biased upward). :attr:`TuneResult.loses` says whether the tuned config scores lower there on
the objective; ``skill-router tune`` then refuses to write it. A fitted threshold that abstains on more than
:data:`MAX_FALSE_ABSTENTION` of the held-out requests that have a gold skill is dropped, never returned.

Dev requests whose text is already an example of a skill (``skill-router learn`` on the same file) would be
scored against themselves: a confidence of 1.0 for every one and a threshold just below it. They are scored
with those examples left out, and the result says so in :attr:`TuneResult.notes`.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, Mapping, Sequence, get_args

import numpy as np

from router import progress as steps
from router.config import RouterConfig
from router.errors import ConfigError
from router.evaluation.labels import Request
from router.evaluation.metrics import abstention_metrics, best_threshold
from router.evaluation.retrievers import routed_query
from router.ranking import confidence_scores, confidences
from router.routing import Scored
from router.signals import example_scores, registry

if TYPE_CHECKING:
    from router.routing import Router

Objective = Literal["mrr", "hit@1", "recall@5"]
OBJECTIVES: tuple[Objective, ...] = get_args(Objective)
TUNED_FUSIONS = ("zscore", "rrf")
# The weights tried for each signal are the signal's own (its ``tuning``, router/signals/<name>.py).
RECALL_K = 5
#: A fitted threshold abstaining on more than this share of held-out requests that have a gold skill is dropped.
MAX_FALSE_ABSTENTION = 0.5
_BLOCK = 2048  # rows per similarity block: bounds memory on test splits of tens of thousands of requests


@dataclass(frozen=True)
class TuneResult:
    """The tuned configuration and the evidence for it.

    Parameters
    ----------
    config: the router's config with the fitted fusion, weights and threshold.
    dev: cross-validated ``hit@1``, ``recall@5``, ``mrr`` of the chosen setting, the same three for the router's
        starting config prefixed ``default_``, and, when a threshold was fitted, the abstention scores at it
        (``abstention_precision``, ``abstention_recall``, ``abstention_f1``, ``false_abstention_rate``).
    held_out: the chosen config on the ``held_out`` requests (same keys, no ``default_``), or None.
    grid: every setting tried with its cross-validated metrics, in the order tried.
    folds, seed, objective: how the choice was made.
    check: the objective of the tuned config and of the config in force on requests the choice never saw
        (``{"metric", "tuned", "in_force", "on"}``, ``on`` being ``held-out requests`` or ``held-out folds``).
    notes: what the caller should be told: a dropped threshold, dev requests scored without their own examples.
    """

    config: RouterConfig
    dev: dict[str, float]
    held_out: dict[str, float] | None
    grid: list[dict[str, Any]]
    folds: int
    seed: int
    objective: Objective = "mrr"
    check: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()

    @property
    def loses(self) -> bool:
        """Whether the tuned config scores lower than the config in force on the held-out requests or folds."""
        return self.check is not None and round(self.check["tuned"], 12) < round(self.check["in_force"], 12)

    def to_json(self) -> dict[str, Any]:
        return {"config": self.config.to_json(), "dev": dict(self.dev),
                "held_out": None if self.held_out is None else dict(self.held_out),
                "check": None if self.check is None else dict(self.check), "notes": list(self.notes),
                "grid": [dict(g) for g in self.grid], "folds": self.folds, "seed": self.seed,
                "objective": self.objective}

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the config file, with how it was tuned under its ``tuning`` key."""
        self.config.save(path, extra={"dev": dict(self.dev), "held_out": self.held_out, "check": self.check,
                                      "folds": self.folds, "seed": self.seed, "objective": self.objective})


def tune(router: "Router", requests: Sequence[Request], *, folds: int = 5, seed: int = 0,
         examples_from_requests: bool = False, held_out: Sequence[Request] = (),
         objective: str = "mrr") -> TuneResult:
    """Choose fusion, weights and threshold for ``router`` on labelled dev ``requests``.

    Parameters
    ----------
    router: a router over the catalogue the requests were labelled for; it is not modified.
    requests: labelled dev requests; ``gold == ()`` rows only serve the threshold.
    folds: cross-validation folds (>= 2, at most the number of gold requests). Gold and no-gold requests are
        dealt into folds separately from one permutation drawn with ``numpy.random.default_rng(seed)``.
    examples_from_requests: use the other folds' gold requests as example requests of their gold skills.
    held_out: requests to report the chosen config on (with all dev gold requests as examples when
        ``examples_from_requests``).
    objective: ``mrr``, ``hit@1`` or ``recall@5``, averaged over gold requests.

    Every request is embedded once; each setting is then a few array operations, so the grid costs far less
    than the embedding. Rankings follow :meth:`Router.rank_scored`: named skills included, excluded skills never,
    ties by id; a conversation is scored as the router scores it (its earlier user turns as context).
    """
    if objective not in OBJECTIVES:
        raise ConfigError(f"unknown objective '{objective}': choose one of {', '.join(OBJECTIVES)}")
    requests, held_out = list(requests), list(held_out)
    known = {s.id for s in router.skills}
    _check_labels(requests, known, "requests")
    _check_labels(held_out, known, "held_out")
    gold_rows = np.array([i for i, r in enumerate(requests) if r.gold], dtype=np.int64)
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        raise ConfigError(f"folds must be a whole number >= 2, got {folds!r}")
    if folds > len(gold_rows):
        raise ConfigError(f"{folds} folds but only {len(gold_rows)} requests with gold skills: use at most "
                          f"{len(gold_rows)} folds or label more requests")
    fold_of = assign_folds([bool(r.gold) for r in requests], folds, seed)
    notes: list[str] = []
    scoring = _without_own_examples(router, requests, notes)

    with steps.step(f"scoring {len(requests):,} dev requests"):
        dev = _Scored.build(scoring, requests)
    if examples_from_requests:
        base = confidence_scores(dev.signals)
        examples = base.copy()
        for fold in range(folds):
            test = np.flatnonzero(fold_of == fold)
            rows, owners = _example_pairs(dev, [i for i in gold_rows if fold_of[i] != fold])
            examples[test] = example_scores(dev.vectors[test], dev.vectors[rows], owners, base[test])
        dev.with_examples(examples)
    grid_axes = _axes(dev.signals)

    grid: list[dict[str, Any]] = []
    per_request: list[np.ndarray] = []  # each setting's objective per gold request, for the nested folds
    settings: list[tuple[Any, ...]] = list(itertools.product(TUNED_FUSIONS, *(axis.values for axis in grid_axes)))
    for setting in steps.track(settings, f"trying {len(settings)} fusion settings"):
        fusion, chosen = setting[0], dict(zip((axis.key for axis in grid_axes), setting[1:]))
        objectives = dev.per_request(fusion, _weights(router.config, grid_axes, chosen, trial=True),
                                     router.config.rrf_k)
        per_request.append(objectives[objective])
        row = {"fusion": fusion, **_named(grid_axes, chosen),
               **{name: float(np.mean(v)) for name, v in objectives.items()},
               **{axis.key: chosen[axis.key] for axis in grid_axes if axis.group and axis.present}}
        grid.append(row)
    # Rounding lets mathematically equal objectives tie exactly; argmax then keeps the first setting tried.
    best = grid[_first_best([g[objective] for g in grid])]
    weights = _weights(router.config, grid_axes, {axis.key: best.get(axis.key) for axis in grid_axes}, trial=False)

    summary: dict[str, float] = {name: best[name] for name in OBJECTIVES}
    default = dev.metrics(router.config.fusion, router.config.weights, router.config.rrf_k)
    summary.update({f"default_{name}": value for name, value in default.items()})
    threshold = None
    has_gold = [bool(r.gold) for r in requests]
    if not all(has_gold):
        confidence = dev.confidence()
        threshold = best_threshold(confidence.tolist(), has_gold)
        summary.update(_abstention(confidence, has_gold, threshold))
    config = replace(router.config, fusion=best["fusion"], weights=weights, threshold=threshold)
    gold_folds = fold_of[[i for i, cols in enumerate(dev.gold_cols) if cols]]
    check = {"metric": objective, "on": "held-out folds",
             "tuned": _nested(np.array(per_request), gold_folds, folds), "in_force": default[objective]}
    false_abstention = (_nested_false_abstention(dev.confidence(), np.array(has_gold), fold_of, folds)
                        if threshold is not None else None)

    held = None
    if held_out:
        scored_test = _Scored.build(router, held_out)
        if examples_from_requests:
            rows, owners = _example_pairs(dev, gold_rows.tolist())
            base = confidence_scores(scored_test.signals)
            scored_test.with_examples(example_scores(scored_test.vectors, dev.vectors[rows], owners, base))
        held = scored_test.metrics(config.fusion, config.weights, config.rrf_k) if scored_test.gold_count else {}
        if scored_test.gold_count:
            in_force = scored_test.metrics(router.config.fusion, router.config.weights, router.config.rrf_k)
            check = {"metric": objective, "on": "held-out requests", "tuned": held[objective],
                     "in_force": in_force[objective]}
        gold_flags = [bool(r.gold) for r in held_out]
        if threshold is not None and not all(gold_flags):
            held.update(_abstention(scored_test.confidence(), gold_flags, threshold))
        if threshold is not None and any(gold_flags):
            false_abstention = float(np.mean(scored_test.confidence()[np.array(gold_flags)] < threshold))
    if threshold is not None and false_abstention is not None and false_abstention > MAX_FALSE_ABSTENTION:
        notes.append(f"dropped the fitted abstention threshold {threshold:.7g}: it abstains on "
                     f"{false_abstention:.0%} of the {check['on']} that have a gold skill (more than "
                     f"{MAX_FALSE_ABSTENTION:.0%}); the config keeps no threshold")
        config = replace(config, threshold=None)
        summary = {k: v for k, v in summary.items() if not k.startswith(("abstention_", "false_abstention"))}
        if held is not None:
            held = {k: v for k, v in held.items() if not k.startswith(("abstention_", "false_abstention"))}
    return TuneResult(config=config, dev=summary, held_out=held, grid=grid, folds=folds, seed=seed,
                      objective=objective, check=check, notes=tuple(notes))


def _first_best(values: Sequence[float]) -> int:
    """The position of the best value; the first among equals (rounding lets equal objectives tie exactly)."""
    return int(np.argmax(np.round(np.asarray(values, dtype=float), 12)))


def _nested(per_request: np.ndarray, gold_folds: np.ndarray, folds: int) -> float:
    """The mean objective when each fold's gold requests are scored with the setting that is best on the other
    folds (``per_request``: settings x gold requests)."""
    outcome = np.empty(per_request.shape[1])
    for fold in range(folds):
        test = gold_folds == fold
        if test.any():
            chosen = _first_best(per_request[:, ~test].mean(axis=1))
            outcome[test] = per_request[chosen, test]
    return float(outcome.mean())


def _nested_false_abstention(confidence: np.ndarray, has_gold: np.ndarray, fold_of: np.ndarray,
                             folds: int) -> float:
    """The share of gold requests abstained on when each fold's threshold is fitted on the other folds."""
    abstained = 0
    for fold in range(folds):
        train, test = fold_of != fold, fold_of == fold
        if (~has_gold[train]).any() and has_gold[train].any():
            cut = best_threshold(confidence[train].tolist(), has_gold[train].tolist())
            abstained += int((confidence[test & has_gold] < cut).sum())
    return abstained / max(int(has_gold.sum()), 1)


def _without_own_examples(router: "Router", requests: Sequence[Request], notes: list[str]) -> "Router":
    """``router``, or when some requests are word for word examples of a skill already (``skill-router learn`` on
    the same file), a router without those examples: a request must never be scored against itself."""
    texts = {r.query for r in requests if isinstance(r.query, str)}
    found = sum(1 for s in router.skills for e in s.examples if e in texts)
    if not found:
        return router
    notes.append(f"{found} example requests of the library are dev requests themselves (learned from this file?): "
                 "the dev requests are scored without them")
    return router.without_examples(texts, persist=False)


@dataclass(frozen=True)
class _Axis:
    """One dimension of the grid, from a signal's :class:`router.signals.base.Tuning`: the weights of one signal
    (``signals`` of one name) or the multiples of a group's configured weights (``group``); ``present`` when the
    dev requests have scores of it (else its one value is None)."""

    key: str
    signals: tuple[str, ...]
    values: tuple[float | None, ...]
    present: bool
    group: str = ""


def _axes(scores: Mapping[str, np.ndarray]) -> list[_Axis]:
    """The grid's dimensions, in the signals' order (the weights of each signal that declares some, then each
    group's scale), as every registered signal's ``tuning`` declares them."""
    single: list[_Axis] = []
    groups: dict[str, tuple[tuple[float, ...], list[str]]] = {}
    for name, signal in registry().items():
        tuning = signal.tuning
        if tuning is None or tuning.fixed is not None:
            continue
        if tuning.weights:
            present = name in scores
            single.append(_Axis(name, (name,), tuning.weights if present else (None,), present))
        elif tuning.scales:
            found = groups.setdefault(tuning.group, (tuning.scales, []))
            found[1].append(name)
    grouped = []
    for group, (scales, members) in groups.items():
        present = any(name in scores for name in members)
        grouped.append(_Axis(f"{group}_scale", tuple(members), scales if present else (None,), present, group))
    return single + grouped


def _named(axes: Sequence[_Axis], chosen: Mapping[str, float | None]) -> dict[str, Any]:
    """A grid row's weights by signal name: each tuned signal's tried weight and each fixed signal's weight."""
    tried = {axis.key: chosen[axis.key] for axis in axes if not axis.group}
    out: dict[str, Any] = {}
    for name, signal in registry().items():
        if signal.tuning is not None and signal.tuning.fixed is not None:
            out[name] = signal.tuning.fixed
        elif name in tried:
            out[name] = tried[name]
    return out


def _weights(config: RouterConfig, axes: Sequence[_Axis], chosen: Mapping[str, float | None], *,
             trial: bool) -> dict[str, float]:
    """The weights of one setting: a tried weight; a fixed one; a group's configured weights times its scale
    (unchanged for None); the configured weight of a signal without tuning. A signal the dev requests have no
    scores of weighs 0 in a ``trial`` and keeps its configured weight in the tuned config."""
    weights = dict(config.weights)
    for name, signal in registry().items():
        if signal.tuning is not None and signal.tuning.fixed is not None:
            weights[name] = signal.tuning.fixed
    for axis in axes:
        value = chosen.get(axis.key)
        if axis.group:
            factor = 1.0 if value is None else value
            weights.update({name: factor * config.weights[name] for name in axis.signals})
        elif value is not None:
            weights[axis.key] = value
        elif trial:
            weights[axis.key] = 0.0
    return weights


def assign_folds(has_gold: Sequence[bool], folds: int, seed: int) -> np.ndarray:
    """The fold (0 .. folds-1) of each request: gold and no-gold requests are each shuffled by one seeded
    permutation and dealt round-robin, so every fold gets its share of both."""
    rng = np.random.default_rng(seed)
    flags = np.asarray(has_gold, dtype=bool)
    fold_of = np.empty(len(flags), dtype=np.int64)
    for rows in (np.flatnonzero(flags), np.flatnonzero(~flags)):
        fold_of[rows[rng.permutation(len(rows))]] = np.arange(len(rows)) % folds
    return fold_of


def _check_labels(requests: Sequence[Request], known: set[str], what: str) -> None:
    for request in requests:
        if request.gold is None:
            raise ConfigError(f"{what}: request '{request.id}' has no gold label; tuning needs gold skills "
                              "(gold: [] when no skill applies)")
        unknown = [g for g in request.gold if g not in known]
        if unknown:
            raise ConfigError(f"{what}: request '{request.id}' names gold skill(s) {', '.join(unknown)} that are "
                              "not in the library; label it with the library's ids")


def _abstention(confidence: np.ndarray, has_gold: Sequence[bool], threshold: float) -> dict[str, float]:
    scores = abstention_metrics(confidence.tolist(), has_gold, threshold)
    return {"abstention_precision": float(scores["precision"]), "abstention_recall": float(scores["recall"]),
            "abstention_f1": float(scores["f1"]),
            "false_abstention_rate": float(scores["false_abstention_rate"])}


def _example_pairs(scored: "_Scored", rows: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """(request row, gold skill position) for every gold skill of the given requests: one example each."""
    pairs = [(row, col) for row in rows for col in scored.gold_cols[row]]
    return (np.array([p[0] for p in pairs], dtype=np.int64), np.array([p[1] for p in pairs], dtype=np.int64))


@dataclass
class _Scored:
    """Every signal's scores for a list of requests (:meth:`Router.score_many`), and what ranking them needs."""

    router: "Router"
    scored: Scored
    naming: np.ndarray  # rows whose request names a skill: ranked by the router's rules themselves
    excluded: np.ndarray  # (skills,) bool
    gold_cols: list[list[int]]  # per request, its distinct gold skills' positions

    @classmethod
    def build(cls, router: "Router", requests: Sequence[Request]) -> "_Scored":
        # The requests are embedded once (embedding dominates the cost: minutes on a dev split on CPU), and kept:
        # the cross-validated example similarities need them.
        scored = router.score_many([routed_query(r) for r in requests])
        skills = router.skills
        position = {s.id: i for i, s in enumerate(skills)}
        flat = np.zeros((len(requests), len(skills)))
        named = router.rank_scored(scored, 1, fused=flat) if len(requests) else []
        naming = np.array([row for row, found in enumerate(named) if any(m.reason == "named" for m in found)],
                          dtype=np.int64)
        excluded = np.array([s.id in router.excluded for s in skills], dtype=bool)
        gold_cols = [list(dict.fromkeys(position[g] for g in (r.gold or ()))) for r in requests]
        return cls(router, scored, naming, excluded, gold_cols)

    @property
    def signals(self) -> Mapping[str, np.ndarray]:
        return self.scored.signals

    @property
    def vectors(self) -> np.ndarray:
        return self.scored.vectors

    def with_examples(self, examples: np.ndarray) -> None:
        """Replace the example signal (cross-validated example similarities)."""
        self.scored = replace(self.scored, signals={**self.scored.signals, "examples": examples})

    @property
    def gold_count(self) -> int:
        return sum(1 for cols in self.gold_cols if cols)

    def confidence(self) -> np.ndarray:
        """Per request, the best example score over skills, else the best dense cosine."""
        return confidences(self.signals)

    def fused(self, method: str, weights: Mapping[str, float], rrf_k: int) -> np.ndarray:
        """Every request's fused scores under one setting: :meth:`Router.fuse` of a router with that setting."""
        router = self.router.with_config(fusion=method, weights=dict(weights), rrf_k=rrf_k)
        return router.fuse(self.scored)

    def metrics(self, method: str, weights: Mapping[str, float], rrf_k: int) -> dict[str, float]:
        """Mean hit@1, recall@5 and MRR over the gold requests under one fusion setting, on each request's top
        ``max(10, k)`` (the depth ``skill-router eval`` scores)."""
        values = self.per_request(method, weights, rrf_k)
        return {name: float(np.mean(v)) if len(v) else 0.0 for name, v in values.items()}

    def per_request(self, method: str, weights: Mapping[str, float], rrf_k: int) -> dict[str, np.ndarray]:
        """hit@1, recall@5 and reciprocal rank of each gold request (in request order) under one setting."""
        depth = max(10, RECALL_K, self.router.config.k)
        rows = np.array([r for r, cols in enumerate(self.gold_cols) for _ in cols], dtype=np.int64)
        cols = np.array([c for cols in self.gold_cols for c in cols], dtype=np.int64)
        if not len(rows):
            return {"hit@1": np.zeros(0), "recall@5": np.zeros(0), "mrr": np.zeros(0)}
        fused = self.fused(method, weights, rrf_k)
        order = self.router.order
        ranks = np.empty(len(rows))
        for low in range(0, len(rows), _BLOCK):
            r, c = rows[low:low + _BLOCK], cols[low:low + _BLOCK]
            scores, own = fused[r], fused[r, c][:, None]
            ahead = (scores > own) | ((scores == own) & (order[None, :] < order[c][:, None]))
            ranks[low:low + _BLOCK] = np.where(self.excluded[c], np.inf,
                                               1 + (ahead & ~self.excluded[None, :]).sum(axis=1))
        # A named skill is guaranteed a place in the top-k, which reorders the list: the router itself ranks the
        # few requests that name one, so the rule has one source.
        if len(self.naming):
            subset = replace(self.scored, texts=tuple(self.scored.texts[i] for i in self.naming),
                             signals={n: v[self.naming] for n, v in self.signals.items()})
            listed_rows = self.router.rank_scored(subset, depth, fused=fused[self.naming])
            for row, found in zip(self.naming, listed_rows):
                listed = [m.id for m in found][:depth]
                ids = [self.router.skills[c].id for c in self.gold_cols[row]]
                ranks[rows == row] = [listed.index(i) + 1 if i in listed else np.inf for i in ids]
        ranks[ranks > depth] = np.inf
        starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
        first = np.minimum.reduceat(ranks, starts)
        found_k = np.add.reduceat((ranks <= RECALL_K).astype(np.float64), starts)
        sizes = np.diff(np.r_[starts, len(rows)])
        return {"hit@1": (first == 1).astype(np.float64), "recall@5": found_k / sizes, "mrr": 1.0 / first}
