"""Candidate retrieval past ``pgstore.EXACT_BELOW`` skills: two statements, the lexical one started before the
request is embedded.

A request's BM25 needs no vector, so it starts first (:func:`prefetch`, on a pooled connection of its own while the
replica embeds the request): one statement returns the live postings of the request's terms, per BM25 field and
term, as one ``bytea`` of (slot, term frequency, document length) triples. The replica scores them itself with the
float64 expression of :func:`indexes.bm25.fit_counts` (Lucene idf from the postings' count, each term's
contributions added in request order, repeats included): every skill's BM25 score is the in-process one to the
last bit, the whole row and not only the candidates', so BM25 needs no fill. The database reads each posting
once and computes nothing per posting: scoring every posting of a request's terms in SQL (three scans of them, a
hash aggregate by skill, the moments) took 15-17 ms of database CPU at 100,000 skills, the bytes of them about 4 ms
(``benchmarks/scale.py``), and the scoring moves to the replicas, of which there can be many, away from the one
database.

The dense statement (:func:`dense_sql`) then needs the request's vector and the BM25 top list: the HNSW top
``depth`` with the cosines, and the cosine of every BM25 top-list skill outside it (and the example requests' top
list and each candidate's best example, as :mod:`router.pgexamples` reads them).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

#: (field number, term) -> (slots, term frequencies, document lengths) of the live postings, int64 / float64
Postings = Mapping[tuple[int, str], tuple[np.ndarray, np.ndarray, np.ndarray]]

#: Threads that read requests' postings while the requests are embedded (each holds one pooled connection while
#: its statement runs, and none while it waits).
WORKERS = 4
_EXECUTOR: ThreadPoolExecutor | None = None
_EXECUTOR_LOCK = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _EXECUTOR
    with _EXECUTOR_LOCK:
        if _EXECUTOR is None:
            _EXECUTOR = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="skill-router-lexical")
        return _EXECUTOR


def postings_sql(generation: Any) -> Any:
    """The live postings of ``%(terms)s`` in the fields ``%(fields)s`` of generation ``%(g)s``: one row per (field,
    term), its postings as big-endian int4 triples (slot, tf, dl) in one ``bytea``."""
    from psycopg import sql

    return sql.SQL(
        "SELECT field, term, string_agg(int4send(slot) || int4send(tf) || int4send(dl), ''::bytea) FROM {p} "
        "WHERE field = ANY(%(fields)s) AND term = ANY(%(terms)s) AND born <= %(g)s AND died > %(g)s "
        "GROUP BY field, term"
    ).format(p=generation.table("postings"))


def fetch(conn: Any, generation: Any, fields: Sequence[int], terms: Sequence[str]) -> dict[tuple[int, str], Any]:
    """The postings of ``terms`` (distinct) in ``fields`` of ``generation``, read on ``conn``."""
    out: dict[tuple[int, str], Any] = {}
    if not terms:
        return out
    rows = conn.execute(postings_sql(generation), {"fields": list(fields), "terms": list(terms),
                                                   "g": generation.id}).fetchall()
    for field, term, raw in rows:
        triples = np.frombuffer(bytes(raw), dtype=">i4").reshape(-1, 3)
        out[(int(field), term)] = (triples[:, 0].astype(np.int64), triples[:, 1].astype(np.float64),
                                   triples[:, 2].astype(np.float64))
    return out


def prefetch(db: Any, generation: Any, fields: Sequence[int], terms: Sequence[str]) -> Future[dict[tuple[int, str],
                                                                                                    Any]]:
    """:func:`fetch` on a pooled connection of its own, in a worker thread: started before the request is
    embedded; its result (or the one-line error of a database gone away) is read by the request's scoring."""

    def run() -> dict[tuple[int, str], Any]:
        with db.connection() as conn:
            return fetch(conn, generation, fields, terms)

    return _executor().submit(run)


def bm25_row(n: int, avgdl: float, field: int, terms: Sequence[str], postings: Postings, position: np.ndarray,
             size: int, k1: float, b: float) -> np.ndarray:
    """Every skill's BM25 score (``size`` skills, by position; ``position`` maps a slot to its position) for the
    request's tokens ``terms`` in order, repeats included: :func:`indexes.bm25.fit_counts`'s float64 expression
    with Lucene idf over ``n`` documents of average length ``avgdl``, the terms' contributions added in request
    order, as :class:`indexes.bm25.BM25Index` adds them."""
    out = np.zeros(size)
    weights: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for term in terms:
        found = weights.get(term)
        if found is None:
            posted = postings.get((field, term))
            if posted is None:
                continue
            slots, tf, dl = posted
            df = len(slots)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            found = weights[term] = (position[slots], idf * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))))
        at, values = found
        out[at] += values  # a term's postings name distinct skills
    return out


def top_positions(row: np.ndarray, slot_of: np.ndarray, depth: int) -> np.ndarray:
    """The positions of the ``depth`` best scores of ``row`` above 0, ties in slot order (as ``ORDER BY score
    DESC, slot``), best first."""
    matched = np.flatnonzero(row > 0)
    values = row[matched]
    if len(matched) > depth:
        kth = np.partition(values, len(values) - depth)[len(values) - depth]  # the depth-th best score
        keep = values >= kth
        matched, values = matched[keep], values[keep]
    order = np.lexsort((slot_of[matched], -values))
    return matched[order[:depth]]


def dense_sql(generation: Any) -> Any:
    """The HNSW top ``%(k)s`` of the skills' vectors and the skills ``%(extra)s`` (slots): for each, (slot, cosine,
    in the dense top), and with example requests their HNSW top ``%(k)s`` too and each candidate's best example
    cosine. Only a candidate outside the dense top reads its vector by key (a lateral lookup)."""
    from psycopg import sql

    live = "born <= %(g)s AND died > %(g)s"
    parts = ["dt AS MATERIALIZED (SELECT slot, -(embedding <#> %(q)s) AS cosine FROM {docs} WHERE " + live +
             " ORDER BY embedding <#> %(q)s LIMIT %(k)s)"]
    union = ["SELECT slot FROM dt", "SELECT unnest(%(extra)s::int4[])"]
    columns = ["c.slot", "coalesce(dt.cosine, d.cosine)", "dt.slot IS NOT NULL"]
    joins = ["LEFT JOIN dt ON dt.slot = c.slot",
             "LEFT JOIN LATERAL (SELECT -(embedding <#> %(q)s) AS cosine FROM {docs} WHERE dt.slot IS NULL AND "
             "slot = c.slot AND " + live + " LIMIT 1) d ON true"]
    if generation.has_examples:
        parts.append("xt AS MATERIALIZED (SELECT slot FROM {examples} WHERE " + live + " ORDER BY embedding <#> "
                     "%(q)s LIMIT %(k)s)")
        union.append("SELECT slot FROM xt")
        columns.append("x.best")
        joins.append("LEFT JOIN LATERAL (SELECT max(-(e.embedding <#> %(q)s)) AS best FROM {examples} e WHERE "
                     "e.slot = c.slot AND e.born <= %(g)s AND e.died > %(g)s) x ON true")
    parts.append("c AS MATERIALIZED (" + " UNION ".join(union) + ")")
    text = "WITH " + ", ".join(parts) + " SELECT " + ", ".join(columns) + " FROM c " + " ".join(joins)
    return sql.SQL(text).format(docs=generation.table("docs"), examples=generation.table("examples"))
