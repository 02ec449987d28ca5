"""Candidate retrieval past ``pgstore.EXACT_BELOW`` skills: the lexical read started before the request is
embedded, then one dense statement.

A request's BM25 needs no vector, so it is scored first, in a worker thread while the router embeds the request
(:func:`in_background`, ``PgSignals.prefetch``), its postings read on a pooled connection of its own: one statement
returns the live postings of the request's terms, per BM25 field and term, as one ``bytea`` of (slot, term
frequency, document length) triples. The router weighs them itself (:func:`weigh`: the float64 expression of
:func:`indexes.bm25.fit_counts`, Lucene idf from the postings' count) and adds each term's weights in request order,
repeats included (:func:`bm25_row`): every skill's BM25 score is the in-process one to the last bit, the whole row
and not only the candidates', so BM25 needs no fill. The database reads each posting once and computes nothing per
posting. Scoring every posting in SQL (three scans of them, a hash aggregate by skill, the moments) cost 15-17 ms of
database CPU a request at 100,000 skills; reading them as bytes costs about 4 ms, and the scoring moves to the
replicas, of which there can be many, away from the one database. The weighed postings of a generation's frequent
terms, which are most of what requests read, are kept by the router (:class:`TermCache`, bounded), so most requests
read only their rarer terms' postings.

The BM25 top list is known before the vector, so the same worker then reads its skills' rows (vectors and
catalogue records, :func:`read_candidates`) while the embedding still runs, and their cosines are taken in the
router once the vector is there (:class:`Candidates`). The dense statement (:func:`dense_sql`) then needs only the
request's vector: the HNSW top ``depth`` with the cosines (and, with example requests, whose best example per
candidate the statement reads, the cosine of every BM25 top-list skill outside it, the example requests' top list
and each candidate's best example, as :mod:`router.pgexamples` reads them). At 100,000 skills this took 0.7-1.0
ms off a routing's 18-20 ms through ``serve`` (``benchmarks/README.md``).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from indexes.fusion import kth_largest

#: (field number, term) -> (slots, term frequencies, document lengths) of the live postings, int64 / float64
Postings = Mapping[tuple[int, str], tuple[np.ndarray, np.ndarray, np.ndarray]]

T = TypeVar("T")

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


def fetch(conn: Any, generation: Any, fields: Sequence[int], terms: Sequence[str], *,
          commit: bool = False) -> dict[tuple[int, str], Any]:
    """The postings of ``terms`` (distinct) in ``fields`` of ``generation``, read on ``conn`` (``commit``: the
    transaction committed in the same round trip)."""
    if not terms:
        return {}
    with conn.pipeline():
        cursor = conn.execute(postings_sql(generation), {"fields": list(fields), "terms": list(terms),
                                                         "g": generation.id})
        if commit:
            conn.commit()
    out: dict[tuple[int, str], Any] = {}
    for field, term, raw in cursor.fetchall():
        triples = np.frombuffer(bytes(raw), dtype=">i4").reshape(-1, 3)
        out[(int(field), term)] = (triples[:, 0].astype(np.int64), triples[:, 1].astype(np.float64),
                                   triples[:, 2].astype(np.float64))
    return out


def in_background(function: Callable[..., T], *args: Any) -> Future[T]:
    """``function(*args)`` in a worker thread (:data:`WORKERS`): a request's lexical scoring, started before the
    request is embedded; its result (or the one-line error of a database gone away) is read by the request's
    scoring."""
    return _executor().submit(function, *args)


#: (field number, term) -> (positions, BM25 weights) of a term's postings in one generation
Weighted = dict[tuple[int, str], tuple[np.ndarray, np.ndarray]]


def weigh(fetched: Postings, stats: Mapping[int, tuple[int, float]], position: np.ndarray, k1: float,
          b: float) -> Weighted:
    """Each posting's BM25 weight: :func:`indexes.bm25.fit_counts`'s float64 expression with Lucene idf, ``stats``
    the (documents, average length) of each field; ``position`` maps a slot to its skill's position."""
    out: Weighted = {}
    for (field, term), (slots, tf, dl) in fetched.items():
        n, avgdl = stats[field]
        df = len(slots)
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        out[(field, term)] = (position[slots].astype(np.int32),  # 12 bytes a posting kept, with its weight
                              idf * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))))
    return out


def bm25_row(field: int, terms: Sequence[str], weighted: Weighted, size: int) -> np.ndarray:
    """Every skill's BM25 score in ``field`` (``size`` skills, by position) for the request's tokens ``terms`` in
    order, repeats included: the terms' weights added in request order, as :class:`indexes.bm25.BM25Index` adds
    them, so every score is the in-process one to the last bit."""
    out = np.zeros(size)
    for term in terms:
        found = weighted.get((field, term))
        if found is not None:
            at, values = found
            out[at] += values  # a term's postings name distinct skills
    return out


#: Postings a router keeps weighed, of the frequent terms (:class:`TermCache`): 500,000 of them are 6 MB.
CACHE_POSTINGS = 500_000
#: Only a term with at least this many postings is kept: below it reading them is about as cheap as keeping them.
CACHE_MIN_POSTINGS = 1_000


class TermCache:
    """The weighed postings of one generation's frequent terms, the most recently used first out of
    ``budget`` postings. A generation's postings never change, so an entry is never stale; a router of the next
    generation starts its own. At 100,000 skills the terms with 1,000 postings or more are 94% of the postings
    1,000 benchmark requests read, and with 500,000 postings kept 90% of what they read is found here
    (``benchmarks/scale.py``)."""

    def __init__(self, budget: int = CACHE_POSTINGS, min_postings: int = CACHE_MIN_POSTINGS) -> None:
        from collections import OrderedDict

        self.budget, self.min_postings = budget, min_postings
        self._entries: OrderedDict[str, tuple[int, Weighted]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, term: str) -> Weighted | None:
        with self._lock:
            found = self._entries.get(term)
            if found is None:
                self.misses += 1
                return None
            self._entries.move_to_end(term)
            self.hits += 1
            return found[1]

    def put(self, weighted: Weighted) -> None:
        """Keep the terms of ``weighted`` (every field's postings of each) that have enough postings."""
        by_term: dict[str, Weighted] = {}
        for (field, term), entry in weighted.items():
            by_term.setdefault(term, {})[(field, term)] = entry
        with self._lock:
            for term, entries in by_term.items():
                size = sum(len(at) for at, _ in entries.values())
                if size < self.min_postings or size > self.budget or term in self._entries:
                    continue
                self._entries[term] = (size, entries)
                self._size += size
                while self._size > self.budget:
                    _, (dropped, _) = self._entries.popitem(last=False)
                    self._size -= dropped

    @property
    def postings(self) -> int:
        return self._size


def top_positions(row: np.ndarray, slot_of: np.ndarray, depth: int) -> np.ndarray:
    """The positions of the ``depth`` best scores of ``row`` above 0, ties in slot order (as ``ORDER BY score
    DESC, slot``), best first."""
    matched = np.flatnonzero(row > 0)
    values = row[matched]
    if len(matched) > depth:
        kth = kth_largest(values, depth)  # the depth-th best score
        keep = values >= kth
        matched, values = matched[keep], values[keep]
    order = np.lexsort((slot_of[matched], -values))
    return matched[order[:depth]]


def candidates_sql(generation: Any, *, records: bool = False) -> Any:
    """The live rows of the skills ``%(slots)s`` (slots, an ``int4[]`` literal) of generation ``%(g)s``: (slot, the
    vector in pgvector's binary form), with ``records`` also (generation of birth, catalogue record). The vectors come
    as ``bytea``, decoded all at once (:func:`vectors_of`) rather than by pgvector's loader one at a time, and the
    slots as one literal rather than a parameter a slot: the read took 2.22 instead of 2.73 ms p50 at 100,000 skills,
    and it ends after the request's embedding (``benchmarks/README.md``)."""
    from psycopg import sql

    kept = ", born, record" if records else ""
    return sql.SQL("SELECT slot, vector_send(embedding)" + kept + " FROM {docs} WHERE slot = ANY(%(slots)s::int4[]) "
                   "AND born <= %(g)s AND died > %(g)s").format(docs=generation.table("docs"))


def int4_array(values: Sequence[int]) -> str:
    """``values`` as the text of a PostgreSQL ``int4[]`` (one string instead of a parameter an element)."""
    return "{" + ",".join(map(str, values)) + "}"


def vectors_of(sent: Sequence[bytes], dim: int) -> np.ndarray:
    """pgvector's binary form of ``dim``-dimensional vectors (``vector_send``: int16 dimension, int16 unused, then
    big-endian float4s) as one float32 array, a row each; ``StoreUnavailable`` for a vector of another dimension."""
    from router.pgstore import StoreUnavailable

    width = 4 + 4 * dim
    if any(len(one) != width for one in sent):
        raise StoreUnavailable(f"the index holds vectors that are not {dim}-dimensional; run 'skill-router index' "
                               "again with the model it was built with")
    rows = np.frombuffer(b"".join(sent), dtype=np.uint8).reshape(len(sent), width)[:, 4:]
    return np.ascontiguousarray(rows).view(">f4").astype(np.float32)


@dataclass(frozen=True)
class Candidates:
    """The BM25 top-list skills of one request, read before its vector is known (:func:`read_candidates`):
    their slots, vectors (float32, one row a skill) and, when read, (generation of birth, record) each."""

    slots: np.ndarray
    vectors: np.ndarray
    records: tuple[tuple[int, str], ...] | None

    def rows(self, q: np.ndarray, skip: set[int]) -> list[tuple[Any, ...]]:
        """What :func:`dense_sql` returns for these skills outside its HNSW top list (``skip``): (slot, cosine with
        ``q``, False) and the record columns when read; the cosine in float32 as the database computes it."""
        cosines = (self.vectors @ np.asarray(q, dtype=np.float32)).tolist() if len(self.slots) else []
        out: list[tuple[Any, ...]] = []
        for i, (slot, cosine) in enumerate(zip(self.slots.tolist(), cosines)):
            if slot not in skip:
                out.append((slot, cosine, False) if self.records is None else (slot, cosine, False, *self.records[i]))
        return out


def read_candidates(conn: Any, generation: Any, requests: Sequence[Sequence[int]], dim: int, *,
                    records: bool = False) -> list[Candidates]:
    """For each request's BM25 top list (slots), those skills' live rows (:class:`Candidates`), all read in one
    statement on ``conn`` (committed in the same round trip), the vectors in binary."""
    wanted = sorted({slot for slots in requests for slot in slots})
    rows: list[Any] = []
    if wanted:
        with conn.pipeline():
            cursor = conn.execute(candidates_sql(generation, records=records),
                                  {"slots": int4_array(wanted), "g": generation.id}, binary=True)
            conn.commit()
        rows = cursor.fetchall()
    vectors = vectors_of([bytes(row[1]) for row in rows], dim) if rows else np.zeros((0, dim), dtype=np.float32)
    at = {int(row[0]): i for i, row in enumerate(rows)}
    out = []
    for slots in requests:
        kept = [slot for slot in slots if slot in at]  # a live skill's postings name a live row
        where = [at[slot] for slot in kept]
        out.append(Candidates(np.array(kept, dtype=np.int64), vectors[where],
                              tuple((int(rows[i][2]), rows[i][3]) for i in where) if records else None))
    return out


def dense_sql(generation: Any, *, records: bool = False) -> Any:
    """The HNSW top ``%(k)s`` of the skills' vectors and the skills ``%(extra)s`` (slots): for each, (slot, cosine,
    in the dense top), and with example requests their HNSW top ``%(k)s`` too and each candidate's best example
    cosine. The candidates outside the dense top are read in one scan of the keys (a bitmap scan: at 100,000
    skills 0.3-0.4 ms less than looking each one up in a nested loop). ``records``: each row ends with the
    candidate's generation of birth and catalogue record (the text of its row, read from the heap tuple the
    statement visits anyway), so that a replica renders the skills it shows without another round trip
    (:meth:`router.pgstore.StoredRows.offer`)."""
    from psycopg import sql

    live = "born <= %(g)s AND died > %(g)s"
    kept = ", born, record" if records else ""
    parts = ["dt AS MATERIALIZED (SELECT slot, -(embedding <#> %(q)s) AS cosine" + kept + " FROM {docs} WHERE " +
             live + " ORDER BY embedding <#> %(q)s LIMIT %(k)s)"]
    wanted = "%(extra)s::int4[]"
    if generation.has_examples:
        parts.append("xt AS MATERIALIZED (SELECT slot FROM {examples} WHERE " + live + " ORDER BY embedding <#> "
                     "%(q)s LIMIT %(k)s)")
        wanted = "array(SELECT unnest(%(extra)s::int4[]) UNION SELECT slot FROM xt)"
    parts.append("c AS MATERIALIZED (SELECT slot, cosine, true AS top" + kept + " FROM dt UNION ALL SELECT slot, "
                 "-(embedding <#> %(q)s), false" + kept + " FROM {docs} d WHERE slot = ANY(" + wanted + ") AND " +
                 live + " AND NOT EXISTS (SELECT 1 FROM dt WHERE dt.slot = d.slot))")
    columns = ["c.slot", "c.cosine", "c.top"]
    joins = []
    if generation.has_examples:
        columns.append("x.best")
        joins.append("LEFT JOIN LATERAL (SELECT max(-(e.embedding <#> %(q)s)) AS best FROM {examples} e WHERE "
                     "e.slot = c.slot AND e.born <= %(g)s AND e.died > %(g)s) x ON true")
    if records:
        columns += ["c.born", "c.record"]
    text = "WITH " + ", ".join(parts) + " SELECT " + ", ".join(columns) + " FROM c " + " ".join(joins)
    return sql.SQL(text).format(docs=generation.table("docs"), examples=generation.table("examples"))
