"""Score retrievers on labelled requests in one pass, and check quality gates.

A retriever is any callable ``Request -> [(skill id, score), ...]`` best first, so the same runner scores BM25,
dense, fused or a third-party router. :func:`evaluate` returns an :class:`EvalResult`, whose
:meth:`EvalResult.to_json` has this stable schema (``"schema": "skill-router.eval/1"``)::

    {
      "schema": "skill-router.eval/1",
      "requests": int,                  # all requests
      "no_gold_requests": int,          # requests with gold [] (scored for abstention only)
      "ks": [int, ...],
      "route_k": int,                   # how many skills the router renders (per-skill recall, tokens)
      "tokenizer": str | null,          # encoding of the token counts, null when tokens were not measured
      "retrievers": [{
        "name": str,
        "metrics": {"hit@K", "recall@K", "all@K", "ndcg@K" for each K, "mrr", "top1": float | null},
        "ci": {"hit@1" | "recall@5" | "mrr": [low, high]},          # 95 % percentile bootstrap, when present
        "abstention": null | {"threshold", "threshold_source": "configured" | "best-f1", "precision",
                              "recall", "f1", "false_abstention_rate", "abstentions", "no_gold_requests",
                              "gold_requests"},
        "tokens": null | {"routed_mean", "full", "saving", "route_k"},
        "latency_ms": {"p50", "p95", "mean"},
        "per_skill": [{"id", "support", "recall"}],                  # recall@route_k, worst first
        "confusions": [{"gold", "predicted", "count"}]              # top-1 mistakes, most frequent first
      }],
      "comparisons": [{"a", "b", "metric", "mean_diff", "low", "high", "p_value", "wins", "losses", "ties"}]
    }

Metric values are fractions in [0, 1], averaged over requests that have gold ids; ``null`` when there are none.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from router.evaluation import metrics as m
from router.evaluation.labels import Request
from router.evaluation.stats import bootstrap_ci, paired_comparison

SCHEMA = "skill-router.eval/1"
HEADLINE: tuple[str, ...] = ("hit@1", "recall@5", "mrr")
"""Metrics that get bootstrap intervals and paired comparisons (those among the computed ones)."""
CONFIDENCE = 0.95
MAX_CONFUSIONS = 20

Retriever = Callable[[Request], Sequence[tuple[str, float]]]


class TokenCounterLike(Protocol):
    name: str

    def count(self, text: str) -> int: ...


@dataclass(frozen=True)
class SkillRecall:
    """Recall@route_k of one gold skill over the ``support`` requests that need it."""

    id: str
    support: int
    recall: float


@dataclass(frozen=True)
class Confusion:
    """``count`` requests needing ``gold`` whose top-1 was ``predicted`` (not a gold id of theirs)."""

    gold: str
    predicted: str
    count: int


@dataclass(frozen=True)
class Comparison:
    """Paired bootstrap of ``b - a`` on ``metric`` (see :func:`router.evaluation.stats.paired_comparison`)."""

    a: str
    b: str
    metric: str
    mean_diff: float
    low: float
    high: float
    p_value: float
    wins: int
    losses: int
    ties: int


@dataclass(frozen=True)
class RetrieverResult:
    """Everything measured for one retriever.

    ``per_request`` maps each metric to its values on the gold requests, in the order of
    :attr:`EvalResult.gold_request_ids` (what the intervals and paired tests resample).
    """

    name: str
    metrics: Mapping[str, float | None]
    per_request: Mapping[str, tuple[float, ...]]
    ci: Mapping[str, tuple[float, float]]
    abstention: Mapping[str, Any] | None
    tokens: Mapping[str, Any] | None
    latency_ms: Mapping[str, float]
    per_skill: tuple[SkillRecall, ...]
    confusions: tuple[Confusion, ...]


@dataclass(frozen=True)
class EvalResult:
    """The outcome of :func:`evaluate`; :meth:`to_json` is the stable, documented form."""

    requests: int
    no_gold_requests: int
    ks: tuple[int, ...]
    route_k: int
    tokenizer: str | None
    retrievers: tuple[RetrieverResult, ...]
    comparisons: tuple[Comparison, ...]
    gold_request_ids: tuple[str, ...]

    def retriever(self, name: str) -> RetrieverResult:
        """The result of the retriever called ``name``; KeyError names the known ones."""
        for r in self.retrievers:
            if r.name == name:
                return r
        raise KeyError(f"no retriever {name!r}; known: {', '.join(r.name for r in self.retrievers)}")

    def to_json(self) -> dict[str, Any]:
        """A JSON-serialisable dict in the ``skill-router.eval/1`` schema (module docstring)."""
        return {
            "schema": SCHEMA,
            "requests": self.requests,
            "no_gold_requests": self.no_gold_requests,
            "ks": list(self.ks),
            "route_k": self.route_k,
            "tokenizer": self.tokenizer,
            "retrievers": [
                {
                    "name": r.name,
                    "metrics": dict(r.metrics),
                    "ci": {k: [lo, hi] for k, (lo, hi) in r.ci.items()},
                    "abstention": dict(r.abstention) if r.abstention is not None else None,
                    "tokens": dict(r.tokens) if r.tokens is not None else None,
                    "latency_ms": dict(r.latency_ms),
                    "per_skill": [{"id": s.id, "support": s.support, "recall": s.recall} for s in r.per_skill],
                    "confusions": [
                        {"gold": c.gold, "predicted": c.predicted, "count": c.count} for c in r.confusions
                    ],
                }
                for r in self.retrievers
            ],
            "comparisons": [
                {
                    "a": c.a,
                    "b": c.b,
                    "metric": c.metric,
                    "mean_diff": c.mean_diff,
                    "low": c.low,
                    "high": c.high,
                    "p_value": c.p_value,
                    "wins": c.wins,
                    "losses": c.losses,
                    "ties": c.ties,
                }
                for c in self.comparisons
            ],
        }


def _metric_names(ks: Sequence[int]) -> list[str]:
    names = [f"{metric}@{k}" for metric in ("hit", "recall", "all", "ndcg") for k in ks]
    return names + ["mrr", "top1"]


def _score(ranking: Sequence[str], gold: tuple[str, ...], ks: Sequence[int]) -> dict[str, float]:
    values: dict[str, float] = {}
    for k in ks:
        values[f"hit@{k}"] = m.hit_at_k(ranking, gold, k)
        values[f"recall@{k}"] = m.recall_at_k(ranking, gold, k)
        values[f"all@{k}"] = m.all_at_k(ranking, gold, k)
        values[f"ndcg@{k}"] = m.ndcg_at_k(ranking, gold, k)
    values["mrr"] = m.reciprocal_rank(ranking, gold)
    values["top1"] = m.top1(ranking, gold)
    return values


def _progress(requests: Sequence[Request], enabled: bool, description: str) -> Iterable[Request]:
    if not enabled:
        return requests
    from router import progress

    return progress.track(requests, description)


def _validate(
    requests: Sequence[Request],
    retrievers: Mapping[str, Retriever],
    ks: Sequence[int],
    route_k: int,
    thresholds: Mapping[str, float],
    compare: Sequence[tuple[str, str]],
    render: Callable[[Sequence[str]], str] | None,
    catalogue: Sequence[str] | None,
) -> None:
    if not requests:
        raise ValueError("no requests to evaluate; load a labels file with at least one request")
    if not retrievers:
        raise ValueError("no retrievers to evaluate; pass a mapping of name -> retriever")
    if not ks or any(not isinstance(k, int) or k < 1 for k in ks):
        raise ValueError(f"ks must be positive integers, got {list(ks)!r}")
    if route_k < 1:
        raise ValueError(f"route_k must be at least 1, got {route_k}")
    unlabelled = [r.id for r in requests if r.gold is None]
    if unlabelled:
        raise ValueError(f"{len(unlabelled)} requests have no gold labels (first: {unlabelled[0]!r}); label them")
    known = ", ".join(retrievers)
    for name in thresholds:
        if name not in retrievers:
            raise ValueError(f"threshold given for unknown retriever {name!r}; known: {known}")
    for pair in compare:
        for name in pair:
            if name not in retrievers:
                raise ValueError(f"comparison names unknown retriever {name!r}; known: {known}")
    if render is not None and catalogue is None:
        raise ValueError("render needs catalogue (every skill id) to measure the full-catalogue prompt")


def evaluate(
    requests: Sequence[Request],
    retrievers: Mapping[str, Retriever],
    *,
    ks: Sequence[int] = (1, 3, 5, 10),
    render: Callable[[Sequence[str]], str] | None = None,
    catalogue: Sequence[str] | None = None,
    route_k: int = 5,
    thresholds: Mapping[str, float] | None = None,
    token_counter: TokenCounterLike | None = None,
    compare: Sequence[tuple[str, str]] = (),
    progress: bool = True,
    seed: int = 0,
) -> EvalResult:
    """Run every retriever on every request and measure quality, abstention, prompt size and latency.

    Parameters
    ----------
    requests:
        Labelled requests (:func:`router.evaluation.labels.load_requests`); each needs ``gold`` (possibly empty).
    retrievers:
        Name -> callable returning ``(id, score)`` pairs best first. The first score is the one abstention
        thresholds apply to; an empty list abstains.
    ks:
        Cut-offs for hit / recall / all / nDCG.
    render, catalogue:
        When ``render`` is given, the prompt for a request is ``render(top route_k ids)`` and the baseline prompt is
        ``render(catalogue)`` (every skill id, rendered once); tokens are counted with ``token_counter``
        (default :class:`router.tokens.TokenCounter` ``("cl100k_base")``).
    route_k:
        How many skills the router renders; also the cut-off of per-skill recall.
    thresholds:
        Name -> abstention threshold; retrievers without one get the F1-best threshold on these requests
        (optimistic: tune on a dev split and pass it here when reporting on test).
    compare:
        ``(a, b)`` pairs for paired bootstrap tests of ``b - a``; by default every retriever is compared with the
        one named ``"baseline"`` if present, else with the first.
    progress:
        Show a progress bar on stderr when it is a terminal.
    seed:
        Seed of the bootstrap resampling.

    Raises ValueError on empty inputs, unlabelled requests, bad ``ks`` / ``route_k``, unknown retriever names in
    ``thresholds`` or ``compare``, ``render`` without ``catalogue``, or a ranking that repeats an id.
    """
    thresholds = dict(thresholds or {})
    ks = tuple(sorted(set(ks)))
    _validate(requests, retrievers, ks, route_k, thresholds, compare, render, catalogue)
    counter = None
    full_tokens = None
    if render is not None:
        if token_counter is None:
            from router.tokens import TokenCounter

            token_counter = TokenCounter()
        counter = token_counter
        full_tokens = counter.count(render(list(catalogue or ())))

    names = list(retrievers)
    rankings: dict[str, list[list[str]]] = {name: [] for name in names}
    top_scores: dict[str, list[float | None]] = {name: [] for name in names}
    latencies: dict[str, list[float]] = {name: [] for name in names}
    for request in _progress(requests, progress, f"evaluating {len(names)} retrievers"):
        for name in names:
            start = time.perf_counter()
            pairs = list(retrievers[name](request))
            latencies[name].append((time.perf_counter() - start) * 1000.0)
            ids = [str(pair[0]) for pair in pairs]
            if len(set(ids)) != len(ids):
                repeated = sorted({i for i in ids if ids.count(i) > 1})
                raise ValueError(f"retriever {name!r} repeated ids {repeated} for request {request.id!r}")
            rankings[name].append(ids)
            top_scores[name].append(float(pairs[0][1]) if pairs else None)

    gold_index = [i for i, r in enumerate(requests) if r.gold]
    has_gold = [bool(r.gold) for r in requests]
    results = []
    for name in names:
        results.append(
            _summarise(
                name, requests, gold_index, has_gold, rankings[name], top_scores[name], latencies[name], ks,
                route_k, thresholds.get(name), render, counter, full_tokens, seed,
            )
        )
    comparisons = _compare(results, list(compare) or _default_pairs(names), seed)
    return EvalResult(
        requests=len(requests),
        no_gold_requests=len(requests) - len(gold_index),
        ks=ks,
        route_k=route_k,
        tokenizer=counter.name if counter is not None else None,
        retrievers=tuple(results),
        comparisons=tuple(comparisons),
        gold_request_ids=tuple(requests[i].id for i in gold_index),
    )


def _summarise(
    name: str,
    requests: Sequence[Request],
    gold_index: list[int],
    has_gold: list[bool],
    rankings: list[list[str]],
    top_scores: list[float | None],
    latencies: list[float],
    ks: tuple[int, ...],
    route_k: int,
    threshold: float | None,
    render: Callable[[Sequence[str]], str] | None,
    counter: TokenCounterLike | None,
    full_tokens: int | None,
    seed: int,
) -> RetrieverResult:
    metric_names = _metric_names(ks)
    per_request: dict[str, list[float]] = {metric: [] for metric in metric_names}
    support: Counter[str] = Counter()
    found: Counter[str] = Counter()
    confusions: Counter[tuple[str, str]] = Counter()
    for i in gold_index:
        gold = requests[i].gold or ()
        ranking = rankings[i]
        for metric, value in _score(ranking, gold, ks).items():
            per_request[metric].append(value)
        routed = set(ranking[:route_k])
        for g in gold:
            support[g] += 1
            found[g] += g in routed
        if ranking and ranking[0] not in gold:
            for g in gold:
                confusions[(g, ranking[0])] += 1

    means = {metric: (float(np.mean(v)) if v else None) for metric, v in per_request.items()}
    ci = {}
    for metric in HEADLINE:
        if per_request.get(metric):
            _, low, high = bootstrap_ci(per_request[metric], confidence=CONFIDENCE, seed=seed)
            ci[metric] = (low, high)

    abstention = None
    if not all(has_gold):
        source = "configured" if threshold is not None else "best-f1"
        if threshold is None:
            threshold = m.best_threshold(top_scores, has_gold)
        abstention = {"threshold_source": source, **m.abstention_metrics(top_scores, has_gold, threshold)}

    tokens = None
    if render is not None and counter is not None and full_tokens is not None:
        cache: dict[tuple[str, ...], int] = {}
        counts = []
        for ranking in rankings:
            key = tuple(ranking[:route_k])
            if key not in cache:
                cache[key] = counter.count(render(list(key)))
            counts.append(cache[key])
        routed_mean = float(np.mean(counts))
        tokens = {
            "routed_mean": routed_mean,
            "full": full_tokens,
            "saving": 1.0 - routed_mean / full_tokens if full_tokens else 0.0,
            "route_k": route_k,
        }

    per_skill = sorted(
        (SkillRecall(g, support[g], found[g] / support[g]) for g in support),
        key=lambda s: (s.recall, -s.support, s.id),
    )
    top_confusions = sorted(confusions.items(), key=lambda item: (-item[1], item[0]))[:MAX_CONFUSIONS]
    return RetrieverResult(
        name=name,
        metrics=means,
        per_request={metric: tuple(v) for metric, v in per_request.items()},
        ci=ci,
        abstention=abstention,
        tokens=tokens,
        latency_ms={
            "p50": float(np.percentile(latencies, 50)),
            "p95": float(np.percentile(latencies, 95)),
            "mean": float(np.mean(latencies)),
        },
        per_skill=tuple(per_skill),
        confusions=tuple(Confusion(g, p, n) for (g, p), n in top_confusions),
    )


def _default_pairs(names: list[str]) -> list[tuple[str, str]]:
    base = "baseline" if "baseline" in names else names[0]
    return [(base, name) for name in names if name != base]


def _compare(results: list[RetrieverResult], pairs: Sequence[tuple[str, str]], seed: int) -> list[Comparison]:
    by_name = {r.name: r for r in results}
    out = []
    for a, b in pairs:
        for metric in HEADLINE:
            va, vb = by_name[a].per_request.get(metric), by_name[b].per_request.get(metric)
            if not va or not vb:
                continue
            p = paired_comparison(va, vb, confidence=CONFIDENCE, seed=seed)
            out.append(Comparison(a, b, metric, p.mean_diff, p.low, p.high, p.p_value, p.wins, p.losses, p.ties))
    return out


def check_gates(result: EvalResult, gates: Sequence[str]) -> list[str]:
    """Check minimum-quality gates; returns one line per failed gate (empty when all pass).

    A gate is ``METRIC=VALUE`` (applies to the retriever named ``"default"`` if present, else the first) or
    ``RETRIEVER.METRIC=VALUE``; it passes when the metric is at least VALUE, a fraction in [0, 1]. A failure
    reads ``default recall@5 = 0.7612 < 0.8000``; a metric with no value (no gold requests) fails as
    ``default recall@5 = n/a < 0.8000``.

    Raises ValueError for a malformed gate, a value outside [0, 1], or an unknown retriever or metric (the
    message lists the known ones).
    """
    names = [r.name for r in result.retrievers]
    default = "default" if "default" in names else names[0]
    failures = []
    for gate in gates:
        left, sep, raw = gate.partition("=")
        if not sep or not left.strip() or not raw.strip():
            raise ValueError(f"gate {gate!r} must read METRIC=VALUE or RETRIEVER.METRIC=VALUE, e.g. recall@5=0.8")
        retriever, dot, metric = left.strip().rpartition(".")
        retriever = retriever if dot else default
        try:
            bar = float(raw)
        except ValueError:
            raise ValueError(f"gate {gate!r}: {raw.strip()!r} is not a number; write a fraction such as 0.8") from None
        if not 0.0 <= bar <= 1.0 or math.isnan(bar):
            raise ValueError(f"gate {gate!r}: metrics are fractions in [0, 1], got {raw.strip()} (write 0.8, not 80)")
        if retriever not in names:
            raise ValueError(f"gate {gate!r}: unknown retriever {retriever!r}; known: {', '.join(names)}")
        metrics = result.retriever(retriever).metrics
        if metric not in metrics:
            raise ValueError(f"gate {gate!r}: unknown metric {metric!r}; known: {', '.join(metrics)}")
        value = metrics[metric]
        if value is None:
            failures.append(f"{retriever} {metric} = n/a < {bar:.4f}")
        elif value < bar:
            failures.append(f"{retriever} {metric} = {value:.4f} < {bar:.4f}")
    return failures
