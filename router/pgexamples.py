"""The ``examples`` signal on the HNSW path of the PostgreSQL store (:mod:`router.pgstore`), with its exact mean
and spread.

A skill's ``examples`` score is the larger of its ``dense`` cosine and its nearest example request's cosine
(:mod:`router.signals.examples`). Past ``pgstore.EXACT_BELOW`` skills the database returns top lists, and the
skills no list retrieved get a fill (:func:`indexes.fill.fill_unretrieved`) with the mean and variance of the
skills left out, so that every candidate's z-score is the in-process one. For ``examples`` those are known
exactly: every skill that has example requests is scored (one scan of the generation's examples, grouped by
owner, joined to the owner's own vector), and every other skill scores its ``dense`` cosine, whose sum and sum
of squares follow from the generation's moments of the vectors.

The scan costs about 4 µs per example request (measured on a busy 2-core machine with PostgreSQL 18 + pgvector
0.8: 6,000 rows 25 ms p50, 30,000 rows 170-200 ms), so past :data:`EXACT_EXAMPLES` example requests it is not
made: only the candidates' example scores are read and the skills left out get ``dense``'s fill, which leaves out
the lift their examples give them (the candidates' ``examples`` z-scores are then close, not exact; on the
bundled library with 30 of 52 skills given examples the mean of the row was off by up to 0.05).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

#: Up to this many example requests in a generation, every one is scored (exact moments of ``examples``): about
#: 8 ms a request at the bound.
EXACT_EXAMPLES = 2_000


def exact(generation: Any) -> bool:
    """Whether the generation's example requests are few enough to score them all."""
    return int(generation.params.get("examples", 0)) <= EXACT_EXAMPLES


def query(conn: Any, generation: Any, vector: np.ndarray) -> Any:
    """The cursor of every live owner's (slot, best example cosine, own dense cosine) in ``generation`` (rows
    ``born <= g < died`` of its epoch's tables); the caller maps slots to positions. Made only when
    :func:`exact`; past it the candidates' best examples come with the retrieval statement."""
    from psycopg import sql

    examples, docs = generation.table("examples"), generation.table("docs")
    return conn.execute(sql.SQL(
        "WITH e AS (SELECT slot, max(-(embedding <#> %(q)s)) AS best FROM {x} WHERE born <= %(g)s AND died > %(g)s "
        "GROUP BY slot) SELECT e.slot, e.best, -(d.embedding <#> %(q)s) FROM e JOIN {d} d ON d.slot = e.slot AND "
        "d.born <= %(g)s AND d.died > %(g)s"
    ).format(x=examples, d=docs), {"q": vector, "g": generation.id})


def scores(rows: Sequence[tuple[Any, ...]], dense: np.ndarray, where: np.ndarray, dense_values: np.ndarray,
           dense_total: float, dense_total_sq: float, ceiling: float | None) -> np.ndarray:
    """The ``examples`` row of one request: ``dense`` (the filled dense row), ``where`` / ``dense_values`` the
    candidates and their exact dense cosines, ``dense_total`` / ``dense_total_sq`` the sum and sum of squares of
    every skill's dense cosine, ``rows`` :func:`query`'s rows by position (owner, best, own), or past
    :data:`EXACT_EXAMPLES` the candidates' (owner, best)."""
    from indexes.fill import fill_unretrieved

    if rows and len(rows[0]) == 2:  # past EXACT_EXAMPLES: the candidates' example scores over dense's fill
        best = dense.copy()
        for owner, value in rows:
            best[owner] = max(best[owner], value)
        return best
    known = {int(p): float(v) for p, v in zip(where, dense_values)}
    total, total_sq = float(dense_total), float(dense_total_sq)
    for owner, value, own in rows:
        lifted = max(float(own), float(value))
        known[int(owner)] = lifted
        total += lifted - float(own)
        total_sq += lifted * lifted - float(own) * float(own)
    positions = np.fromiter(known, dtype=np.int64, count=len(known))
    values = np.fromiter(known.values(), dtype=np.float64, count=len(known))
    out, _ = fill_unretrieved(len(dense), positions, values, total, total_sq, ceiling)
    return out
