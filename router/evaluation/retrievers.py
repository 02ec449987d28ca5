"""The retrievers an evaluation compares, all computed from one batch scoring of the requests.

    retrievers = retrievers_for(router, requests, ["bm25", "dense", "default"], depth=10)
    ranking = retrievers["default"](requests[0])     # [(skill id, score), ...] best first

- one per signal (:mod:`router.signals`: ``bm25``, ``dense``, ``examples``, ``body_bm25``, ``body_dense``): that
  signal alone, ranked by score then id (a lexical signal ranks only the skills sharing a word with the request).
- ``rrf``: the signals that read the request fused by reciprocal rank with equal weights (Cormack et al. 2009),
  each lexical signal ranking only the skills it scores. A steady signal (``centrality``: the same row for every
  request) is a prior the router weighs, not a retriever's vote, and is left out.
- ``default``: exactly what :meth:`router.routing.Router.rank_many` returns (the router's fusion, the context of a
  conversation's earlier turns, the ranking rules); ``default-no-examples`` the same without the example signal.

Every request is embedded once (:meth:`Router.score_many`), which is what makes dataset-sized evaluations take
seconds rather than minutes. A conversation is routed from its ``messages`` exactly as the router routes it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from indexes.fusion import fuse_score_arrays, ranking
from router.errors import ConfigError
from router.evaluation.labels import Request
from router.ranking import confidence_scores
from router.signals import lexical_names, steady_names
from router.signals import names as signal_names

if TYPE_CHECKING:
    from router.routing import Query, Router

#: The retrievers over fused scores; each signal is also a retriever of its own.
FUSED = ("rrf", "default", "default-no-examples")
RETRIEVERS = (*signal_names(), *FUSED)
Ranked = list[tuple[str, float]]


def routed_query(request: Request) -> "Query":
    """What the router routes for a labelled request: its conversation when it has one, else its query."""
    return list(request.messages) if request.messages else request.query


def retrievers_for(router: "Router", requests: Sequence[Request], names: Sequence[str], depth: int, *,
                   progress: bool = False) -> dict[str, Callable[[Request], Ranked]]:
    """Retrievers (``Request -> [(id, score), ...]``, at most ``depth`` long) over scores computed in one batch.

    The score reported with each id is the routing confidence of that skill (its best example cosine, else its
    description cosine), which is what an abstention threshold applies to; a single signal reports its own
    scores.
    """
    known = (*signal_names(), *FUSED)  # every signal registered now
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown retriever(s) {', '.join(unknown)}: choose from {', '.join(known)}")
    from router import progress as steps

    with steps.step(f"scoring {len(requests):,} requests against {len(router.skills):,} skills"):
        scored = router.score_many([routed_query(r) for r in requests], progress=progress)
    row = {r.id: i for i, r in enumerate(requests)}
    ids = [s.id for s in router.skills]
    position = {ident: j for j, ident in enumerate(ids)}
    order = router.order
    signals = scored.signals
    confidence = confidence_scores(signals)

    def ranked(values: np.ndarray, present: np.ndarray | None = None) -> Ranked:
        best = ranking(values, order)
        if present is not None:
            best = best[present[best]]
        return [(ids[j], float(values[j])) for j in best[:depth]]

    lexical = lexical_names()

    def alone(name: str) -> Callable[[Request], Ranked]:
        if name not in signals:
            raise ConfigError(f"retriever '{name}': this library has no {name} signal (it has "
                              f"{', '.join(signals)}); choose one of those")

        def retrieve(request: Request) -> Ranked:
            values = signals[name][row[request.id]]
            return ranked(values, values > 0 if name in lexical else None)
        return retrieve

    steady = steady_names()
    voting = {name: values for name, values in signals.items() if name not in steady}
    equal = fuse_score_arrays(voting, dict.fromkeys(voting, 1.0), method="rrf", tie_order=order,
                              present={n: v > 0 for n, v in voting.items() if n in lexical}) \
        if len(requests) else None

    def rrf(request: Request) -> Ranked:
        i = row[request.id]
        assert equal is not None
        return [(ident, float(confidence[i][position[ident]])) for ident, _ in ranked(equal[i])]

    def routed(without: frozenset[str]) -> Callable[[Request], Ranked]:
        cosine = signals["dense"] if "examples" in without else confidence
        matches = router.rank_scored(scored, depth, without=without) if len(requests) else []

        def retrieve(request: Request) -> Ranked:
            i = row[request.id]
            return [(m.id, float(cosine[i][position[m.id]])) for m in matches[i]]
        return retrieve

    table: dict[str, Callable[[], Callable[[Request], Ranked]]] = {
        **{name: partial(alone, name) for name in signal_names()}, "rrf": lambda: rrf,
        "default": lambda: routed(frozenset()), "default-no-examples": lambda: routed(frozenset({"examples"})),
    }
    return {name: table[name]() for name in names}
