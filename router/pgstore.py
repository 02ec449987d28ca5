"""The index in PostgreSQL + pgvector: one table set per library epoch, generations committed in one transaction.

Selected by ``--index-url postgresql://...`` (installed with the ``postgres`` extra: psycopg 3, psycopg-pool and
pgvector). The file store (:mod:`router.store`) stays the default. Only candidate retrieval and the scores of the
candidates come from the database; fusion, the ranking rules, abstention and rendering stay in the router, which
calls :meth:`PgSignals.score` exactly where it calls :meth:`router.signals.Signals.score`.

Schema (``SCHEMA_VERSION``; :func:`migrate` brings a database up to it and only ``skill-router index`` calls it, a
reader that finds another version says to run ``index``)::

    skill_router_schema       (version)                                         one row
    skill_router_libraries    (key, prefix, generation, signature, ...)         one row per library (roots + profile)
    skill_router_generations  (id, key, epoch, n, signature, params, moments,   the committed generations, each
                               chance, centrality)                              with its no-skill chance level
                                                                                and its rows' centrality
    <prefix>_embeddings       (content_hash, embedding vector(dim))             the embedding cache, by content
    <prefix>_e<epoch>_docs    (slot, born, died, skill_id, name, row_hash,      each skill's row: what a replica
                               record, dl0, dl1, embedding)                     shows, its lengths and its vector
    <prefix>_e<epoch>_examples (slot, born, died, embedding)                    every example request's vector
    <prefix>_e<epoch>_postings (field, term, slot, born, died, tf, dl)          BM25 postings (field 0 text, 1 body)
    <prefix>_e<epoch>_vectors (signal, slot, born, died, vector_hash,           the rows of the signals whose index
                               embedding)                                       is one vector a skill (schema 4)

Row vectors. A signal that declares ``row_vectors`` (``passage_dense``: the mean of the embedded head passages of
a body) is built by its own ``build`` when the writer's config wants it, its passages embedded through the
embedding cache (batch by batch, committed: a killed build resumes), and its vectors (one a skill) written to the
epoch's vectors table; an edit writes only the rows whose vector changed (by the hash of its bytes), so a change
of how the signal cuts or averages rewrites what it changes and nothing else. The generation's ``params`` say
which of these signals its writer wanted and which the library has (``row_signals``); a reader whose config wants
one the writer did not is told to index with its config. Scored in SQL over every live row (the inner product),
on the request's connection with the other statements.

Generations. Rows carry the generation that wrote them (``born``) and the one that replaced or removed them
(``died``, :data:`ALIVE` while current): generation ``g`` reads the rows with ``born <= g < died``. A build whose
parameters (model, profile, BM25 fields and tokenizer) match the current generation's writes only the rows whose
content hash changed, their postings and the statistics that change (document count, total length per field, the
sums of the vectors and of their outer products); any other build starts a new epoch (new tables, the HNSW
indexes built once over them). The ``keep`` newest generations stay readable; rows only older ones read are
deleted, and an epoch's tables dropped once no kept generation reads them.

A build embeds, in batches over the ONNX encoder, only the texts whose content hash the cache lacks, and commits
each batch (a build killed while embedding resumes where it stopped). The generation itself (its rows, the
library's pointer and a ``NOTIFY``) is one transaction: a writer killed before its commit leaves the previous
generation serving, and a reader reads one generation or the next, never a mix. The generation's no-skill chance
level (:mod:`router.abstain`: the everyday sample scored against it) and its rows' ``centrality`` (each vector's
inner product with their mean: a pass over every vector) are computed in that transaction, over the generation as
it will be read, and kept in its row (the level with its recipe), so a replica that swaps to it scores no sample
and scans no vector (a replica whose config feeds the level other signals computes its own, once per generation).

Readers. ``route``/``prompt`` read the library from its files and check it against the generation's signature.
``serve`` (:class:`Replica`) reads nothing but the database: each live row's slot, id and name (a new generation
as the rows it changed), and a skill's other fields from its row only when it is shown or loaded.

Scores. Dense: cosine = inner product of unit vectors (``<#>`` is its negative). Lexical: the project's BM25
(:mod:`indexes.bm25`, Lucene idf) from the postings' term frequencies and lengths with the generation's
statistics, the float64 expression of :func:`indexes.bm25.fit_counts` summed in request order, so the scores are
the in-process ones to the last bit. Below ``EXACT_BELOW`` skills every skill's scores are read (exact, as the
file store), BM25 computed in SQL. From there on (:mod:`router.pgquery`) the postings of the request's terms are
read while the request is embedded, on a connection of their own, and a worker thread scores every skill's BM25
from them meanwhile (the whole row exact; the postings of its generation's frequent terms it keeps, weighed, in a
bounded cache); then one statement returns the HNSW top list (``m`` 24 and ``ef_construction`` 128, ``ef_search`` the
list's depth), as deep as 20 times the requested k, with the cosines of the BM25 top
list of the same depth. The skills in neither get the dense two-point fill of :func:`indexes.fill.fill_unretrieved`
(from the generation's moments of the vectors), whose mean and variance are those of the skills left out, so every
candidate's z-score (the default fusion) is the exact one. Statements are never prepared: a generic plan cannot
use the HNSW index for the request's own vector.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import sys
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from router.errors import ConfigError, SkillRouterError
from router.ranking import KeyIndex
from router.registry import SkillRegistry
from router.skill import Skill
from router.store import text_key

if TYPE_CHECKING:
    from router.config import RouterConfig
    from router.index import LibrarySource, Scorer
    from router.routing import Router
    from router.signals import BuildReport
    from router.spec import LibrarySpec

SCHEMA_VERSION = 4
#: What a generation's rows are: part of every signature and build key, so a migration that only adds a column
#: (schema 3: the generations' chance level) keeps every generation current.
ROW_FORMAT = 2
#: Libraries with fewer skills are scored exactly (every skill's scores read); HNSW top lists from here on.
EXACT_BELOW = 5000
#: Candidates per signal above EXACT_BELOW: at least this many, and at least 20 times the routed k.
MIN_DEPTH = 100
#: ``hnsw.ef_search`` per requested k (at least 40, pgvector's default, at most 1000, its maximum), and never below
#: the top list's depth: a first pass of ef_search 40 filled a list of 100 by ``hnsw.iterative_scan``'s further
#: passes, which cost more than one pass as wide as the list (at 100,000 skills 5.7 against 7.0 ms a statement, the
#: exact top-5 for 99.8% of 1,000 requests against 99.9%; benchmarks/scale.py). The iterative scan stays on for
#: the rows a generation's filter drops.
EF_SEARCH_PER_K = 8
#: The HNSW graphs' build parameters: at 100,000 skills (1,000 requests, the top list for k = 5) m 24 and
#: ef_construction 128 find the exact top-5 for 99.9% of the requests, where pgvector's defaults (16, 64) find it
#: for 96%, at 2.6 times the build time (benchmarks/scale.py)
HNSW_M = 24
HNSW_EF_CONSTRUCTION = 128
CHANNEL = "skill_router_index"
EMBED_BATCH = 256
COPY_ROWS = 5000
CONNECT_TIMEOUT_S = 3.0
FIELDS = {"bm25": 0, "body_bm25": 1}
NO_BODY_EMBEDDINGS = ("the PostgreSQL store does not index body embeddings (body_dense weight > 0): set the "
                      "body_dense weight to 0 or use the file store")


class StoreUnavailable(SkillRouterError):
    """The index database cannot be reached right now (a server answers 503 and recovers when it is back)."""

    status = 503
    kind = "index_unavailable"


def redacted(url: str) -> str:
    """``url`` without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = (parts.username or "") + ":***"
    return urlunsplit(parts._replace(netloc=f"{user}@{netloc[-1]}"))


def is_index_url(value: str | None) -> bool:
    return bool(value) and str(value).startswith(("postgresql://", "postgres://"))


def _require() -> Any:
    try:
        import psycopg
        import psycopg_pool  # noqa: F401
        from pgvector.psycopg import register_vector  # noqa: F401
    except ImportError:
        raise ConfigError("--index-url needs the postgres extra: pip install 'skill-router[postgres]'") from None
    return psycopg


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:300]


def connection_error(url: str, exc: BaseException) -> SkillRouterError:
    """The one-line error for a failed connection: bad credentials or database are the user's to fix (exit 2);
    a server that does not answer is :class:`StoreUnavailable`."""
    reason = _first_line(exc)
    reason = re.sub(r'^connection failed: (connection to server .*? failed: )?', "", reason)
    if re.search(r"password authentication failed|no password supplied|role .* does not exist|"
                 r"database .* does not exist|no pg_hba.conf entry", reason):
        return ConfigError(f"cannot log in to the index database {redacted(url)}: {reason}; fix the user, password "
                           f"or database name in --index-url")
    return StoreUnavailable(f"the index database {redacted(url)} does not answer ({reason}); start it or fix the "
                            f"host in --index-url")


def library_prefix(key: str) -> str:
    return "sr_" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]


# -- connections ----------------------------------------------------------------------------------------------------
class Database:
    """A connection pool to one database (psycopg 3); every error of the server becomes a one-line error."""

    def __init__(self, url: str, *, max_size: int = 4) -> None:
        psycopg = _require()
        from psycopg_pool import ConnectionPool

        self.url = url
        self._psycopg = psycopg
        self._probed = False
        # The pool's own warnings repeat what the one-line errors below say, once per attempt.
        logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
        self.pool = ConnectionPool(url, min_size=1, max_size=max_size, open=True, timeout=CONNECT_TIMEOUT_S,
                                   kwargs={"connect_timeout": int(CONNECT_TIMEOUT_S), "autocommit": False,
                                           "prepare_threshold": None},
                                   configure=self._configure,
                                   name="skill-router")  # opens in the background: nothing waits here

    def _configure(self, conn: Any) -> None:
        from pgvector.psycopg import register_vector

        conn.autocommit = True
        try:
            register_vector(conn)
        except self._psycopg.ProgrammingError:
            pass  # the extension is not there yet: index creates it (migrate), then registers
        conn.autocommit = False

    def probe(self) -> None:
        """Connect once now, so that a wrong URL is a one-line error before anything else runs."""
        try:
            with self._psycopg.connect(self.url, connect_timeout=int(CONNECT_TIMEOUT_S)):
                pass
        except self._psycopg.OperationalError as exc:
            raise connection_error(self.url, exc) from None
        self._probed = True

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """A pooled connection in a transaction (committed on success); the server going away mid-way is
        :class:`StoreUnavailable`."""
        from psycopg_pool import PoolTimeout

        if not self._probed:
            self.probe()
        try:
            with self.pool.connection() as conn:
                yield conn
        except PoolTimeout:
            raise StoreUnavailable(f"the index database {redacted(self.url)} does not answer (no connection within "
                                   f"{CONNECT_TIMEOUT_S:g} s); requests succeed again once it is back") from None
        except self._psycopg.OperationalError as exc:
            raise connection_error(self.url, exc) from None

    def close(self) -> None:
        self.pool.close()




# -- schema ---------------------------------------------------------------------------------------------------------
def _drop_per_generation_tables(conn: Any) -> None:
    """Schema 1 kept one table set per generation; schema 2 keeps one per epoch, rows tagged with generations."""
    rows = conn.execute("SELECT l.prefix, g.id FROM skill_router_generations g JOIN skill_router_libraries l "
                        "ON l.key = g.key").fetchall()
    for prefix, gen_id in rows:
        for kind in ("docs", "examples", "postings"):
            conn.execute(_sql("DROP TABLE IF EXISTS {t}", t=_ident(prefix, f"g{gen_id}", kind)))
    conn.execute("UPDATE skill_router_libraries SET generation = NULL, signature = NULL")
    conn.execute("DELETE FROM skill_router_generations")


def _index_births_and_deaths(conn: Any) -> None:
    """Schema 3: every epoch's rows indexed by the generation that wrote them and the one that replaced them, so a
    replica reads the rows a new generation changed without a pass over every row (:func:`read_generation`)."""
    rows = conn.execute("SELECT DISTINCT l.prefix, g.epoch FROM skill_router_generations g JOIN skill_router_libraries "
                        "l ON l.key = g.key").fetchall()
    for prefix, epoch in rows:
        _index_generations(conn, prefix, int(epoch))


def _index_generations(conn: Any, prefix: str, epoch: int) -> None:
    docs = _ident(prefix, f"e{epoch}", "docs")
    for column in ("born", "died"):
        conn.execute(_sql("CREATE INDEX IF NOT EXISTS {i} ON {d} ({c})", d=docs, c=_ident(column),
                          i=_ident(prefix, f"e{epoch}", f"docs_{column}")))


def _add_vector_tables(conn: Any) -> None:
    """Schema 4: every epoch gets its (empty) table of row vectors; its generations hold none (their writers
    wanted no such signal, as their params say by having no ``row_signals``)."""
    rows = conn.execute("SELECT DISTINCT l.prefix, g.epoch, l.dim FROM skill_router_generations g JOIN "
                        "skill_router_libraries l ON l.key = g.key").fetchall()
    for prefix, epoch, dim in rows:
        _create_vectors(conn, prefix, int(epoch), int(dim))
        _index_vectors(conn, prefix, int(epoch))


def _create_vectors(conn: Any, prefix: str, epoch: int, dim: int) -> None:
    conn.execute(_sql("CREATE TABLE IF NOT EXISTS {v} (signal text NOT NULL, slot integer NOT NULL, born bigint NOT "
                      "NULL, died bigint NOT NULL, vector_hash text NOT NULL, embedding vector({n}) NOT NULL)",
                      v=_ident(prefix, f"e{epoch}", "vectors"), n=_literal(dim)))


def _index_vectors(conn: Any, prefix: str, epoch: int) -> None:
    vectors = _ident(prefix, f"e{epoch}", "vectors")
    conn.execute(_sql("CREATE INDEX IF NOT EXISTS {i} ON {v} (signal, slot)", v=vectors,
                      i=_ident(prefix, f"e{epoch}", "vectors_slot")))
    conn.execute(_sql("CREATE INDEX IF NOT EXISTS {i} ON {v} (died)", v=vectors,
                      i=_ident(prefix, f"e{epoch}", "vectors_died")))


Migration = str | Callable[[Any], None]
MIGRATIONS: dict[int, tuple[Migration, ...]] = {
    1: (
        "CREATE EXTENSION IF NOT EXISTS vector",
        "CREATE TABLE IF NOT EXISTS skill_router_schema (version integer NOT NULL)",
        "CREATE TABLE IF NOT EXISTS skill_router_libraries (key text PRIMARY KEY, prefix text NOT NULL UNIQUE, "
        "dim integer NOT NULL, generation bigint, signature text, updated timestamptz NOT NULL DEFAULT now())",
        "CREATE TABLE IF NOT EXISTS skill_router_generations (id bigserial PRIMARY KEY, key text NOT NULL "
        "REFERENCES skill_router_libraries(key), n integer NOT NULL, signature text NOT NULL, params jsonb NOT NULL, "
        "moments bytea NOT NULL, created timestamptz NOT NULL DEFAULT now())",
    ),
    2: (
        _drop_per_generation_tables,
        "ALTER TABLE skill_router_generations ADD COLUMN epoch bigint NOT NULL",
    ),
    3: (
        "ALTER TABLE skill_router_generations ADD COLUMN chance jsonb, ADD COLUMN centrality bytea",
        _index_births_and_deaths,
    ),
    4: (_add_vector_tables,),
}


def schema_version(conn: Any) -> int:
    row = conn.execute("SELECT to_regclass('skill_router_schema') IS NOT NULL").fetchone()
    if not row[0]:
        return 0
    found = conn.execute("SELECT max(version) FROM skill_router_schema").fetchone()
    return int(found[0] or 0)


def migrate(conn: Any) -> int:
    """Bring the database's schema to :data:`SCHEMA_VERSION` (one transaction, one migrator at a time); returns
    the version it found."""
    conn.execute("SELECT pg_advisory_xact_lock(hashtext('skill_router_schema'))")
    found = schema_version(conn)
    if found > SCHEMA_VERSION:
        raise ConfigError(f"the index database has schema version {found}, newer than this skill-router's "
                          f"{SCHEMA_VERSION}: upgrade skill-router")
    for version in range(found + 1, SCHEMA_VERSION + 1):
        for statement in MIGRATIONS[version]:
            if callable(statement):
                statement(conn)
            else:
                conn.execute(statement)
        conn.execute("DELETE FROM skill_router_schema")
        conn.execute("INSERT INTO skill_router_schema (version) VALUES (%s)", (version,))
    return found


def check_schema(conn: Any, url: str) -> None:
    found = schema_version(conn)
    if found != SCHEMA_VERSION:
        what = "has no skill-router index yet" if found == 0 else f"has schema version {found}, this version reads " \
                                                                  f"{SCHEMA_VERSION}"
        raise ConfigError(f"the database {redacted(url)} {what}: run 'skill-router index --index-url ...' first")


def _ident(*parts: str) -> Any:
    from psycopg import sql

    return sql.Identifier("_".join(parts))


def _sql(text: str, **names: Any) -> Any:
    from psycopg import sql

    return sql.SQL(text).format(**names)


def _literal(value: int) -> Any:
    from psycopg import sql

    return sql.SQL(str(int(value)))


# -- what a generation holds ----------------------------------------------------------------------------------------
def library_signature(router: LibrarySource) -> str:
    """What a generation is built from: every skill's fields that its texts are made of, in order, with the
    parameters that make texts of them, the profile and the model (cheaper than the texts themselves: a reader
    from files checks it before it routes)."""
    config = router.config
    digest = hashlib.sha256(json.dumps([ROW_FORMAT, router.encoder.model_id, router.profile.name, config.body,
                                        config.body_tokens, config.dense_name]).encode())
    for s in router.skills:  # one row at a time: no list of 100,000 rows for the collector to walk
        row = "\0".join((s.id, s.name, s.description, s.index_description, s.body, *s.examples))
        digest.update(f"{len(s.examples)}\0{len(row)}\0{row}\1".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def skill_record(skill: Skill) -> str:
    """Everything a replica needs to show and load ``skill`` (its row in the catalogue table), as JSON."""
    return json.dumps({"name": skill.name, "description": skill.description, "path": skill.path, "id": skill.id,
                       "body": skill.body, "metadata": dict(skill.metadata), "index_description":
                       skill.index_description, "examples": list(skill.examples), "os_path": skill.os_path},
                      ensure_ascii=False, default=str)


def _live(alias: str = "") -> str:
    """The rows of generation ``%(g)s``: born at or before it and not dead yet."""
    a = f"{alias}." if alias else ""
    return f"{a}born <= %(g)s AND {a}died > %(g)s"


@dataclass(frozen=True)
class Generation:
    """One committed generation of one library as a reader holds it: its epoch's tables, each live row's slot,
    id, name and birth, BM25's statistics and the moments of the vectors.

    Rows live in one table set per *epoch* (a build from scratch starts one) and carry the generation that wrote
    them (``born``) and the one that replaced or removed them (``died``, :data:`ALIVE` while current); generation
    ``g`` is the rows with ``born <= g < died``. An edit writes only the rows that changed."""

    id: int
    prefix: str
    epoch: int
    slots: np.ndarray  # int64, the live rows' slots, ascending
    ids: tuple[str, ...]  # in slot order
    names: tuple[str, ...]
    born: np.ndarray  # int64, each live row's generation of birth (its row key with the slot)
    signature: str
    params: Mapping[str, Any]
    mean: np.ndarray  # (dim,) mean of the skills' vectors
    second: np.ndarray  # (dim, dim) mean of v v^T
    chance: Mapping[str, Any] | None = None  # the no-skill chance level kept with it (router.abstain.stored_chance)

    @property
    def n(self) -> int:
        return len(self.ids)

    def table(self, kind: str) -> Any:
        return _ident(self.prefix, f"e{self.epoch}", kind)

    @property
    def has_examples(self) -> bool:
        return bool(self.params.get("examples"))

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(self.params.get("fields", ("bm25",)))

    def stats(self, field: str) -> tuple[int, float]:
        """(documents, average length) of a BM25 field, as :func:`indexes.bm25.fit_counts` computes them."""
        n, total = self.params["stats"][field]
        return int(n), int(total) / int(n) if n else 0.0


ALIVE = 2 ** 63 - 1


def _moments_bytes(first: np.ndarray, second: np.ndarray) -> bytes:
    return np.concatenate([np.asarray(first, np.float64).ravel(), np.asarray(second, np.float64).ravel()]).tobytes()


def _sums(raw: bytes, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """(sum of the vectors, sum of v v^T) as stored with a generation."""
    values = np.frombuffer(raw, dtype=np.float64)
    return values[:dim].copy(), values[dim:].reshape(dim, dim).copy()


def generation_header(conn: Any, key: str, url: str) -> tuple[Any, ...]:
    """(prefix, dim, id, epoch, n, signature, params, moments, chance) of the library's current generation, none
    of its rows; :class:`ConfigError` when the database holds no index of the library (or another schema)."""
    check_schema(conn, url)
    row = conn.execute("SELECT l.prefix, l.dim, g.id, g.epoch, g.n, g.signature, g.params, g.moments, g.chance FROM "
                       "skill_router_libraries l JOIN skill_router_generations g ON g.id = l.generation WHERE l.key = "
                       "%s", (key,)).fetchone()
    if row is None:
        raise ConfigError(f"the database {redacted(url)} holds no index of this library: run 'skill-router index "
                          f"--index-url ...' with the same --skills/--catalog and --profile first")
    return tuple(row)


def read_generation(conn: Any, key: str, url: str, previous: Generation | None = None) -> Generation:
    """The library's current generation; from ``previous`` (a generation of the same epoch) only the rows that
    changed between the two are read."""
    prefix, dim, gen_id, epoch, n, signature, params, moments, chance = generation_header(conn, key, url)
    gen_id, epoch, n = int(gen_id), int(epoch), int(n)
    if previous is not None and previous.id == gen_id:
        return previous
    docs = _ident(prefix, f"e{epoch}", "docs")
    if previous is not None and previous.epoch == epoch and previous.id < gen_id:
        changes = conn.execute(_sql("SELECT slot, skill_id, name, born, died FROM {d} WHERE (born > %(p)s AND born <= "
                                    "%(g)s) OR (died > %(p)s AND died <= %(g)s)", d=docs),
                               {"p": previous.id, "g": gen_id}).fetchall()
        gone = {int(r[0]) for r in changes if int(r[3]) <= previous.id}
        added = sorted((int(r[0]), r[1], r[2], int(r[3])) for r in changes if int(r[3]) > previous.id
                       and int(r[4]) > gen_id)
        if gone == {a[0] for a in added} and len(added) == len(gone):  # rows edited in place: same slots
            at = np.searchsorted(previous.slots, [a[0] for a in added])
            born = previous.born.copy()
            born[at] = [a[3] for a in added]
            ids_list, names_list = list(previous.ids), list(previous.names)
            for i, (_, skill_id, name, _) in zip(at.tolist(), added):
                ids_list[i], names_list[i] = skill_id, name
            same = all(previous.ids[i] == a[1] and previous.names[i] == a[2] for i, a in zip(at.tolist(), added))
            ids, names = (previous.ids, previous.names) if same else (tuple(ids_list), tuple(names_list))
            first, second = _sums(bytes(moments), int(dim))
            scale = 1.0 / max(n, 1)
            return Generation(gen_id, prefix, epoch, previous.slots, ids, names, born, signature, params,
                              first * scale, second * scale, chance)
        keep = ~np.isin(previous.slots, np.fromiter(gone, np.int64, len(gone))) if gone else \
            np.ones(previous.n, dtype=bool)
        kept = np.flatnonzero(keep)
        slots = np.concatenate([previous.slots[kept], np.array([a[0] for a in added], np.int64)])
        order = np.argsort(slots, kind="stable")
        ids_all = [previous.ids[i] for i in kept.tolist()] + [a[1] for a in added]
        names_all = [previous.names[i] for i in kept.tolist()] + [a[2] for a in added]
        born_all = np.concatenate([previous.born[kept], np.array([a[3] for a in added], np.int64)])
        ids = tuple(ids_all[i] for i in order.tolist())
        names = tuple(names_all[i] for i in order.tolist())
        slots, born = slots[order], born_all[order]
    else:
        rows = conn.execute(_sql("SELECT slot, skill_id, name, born FROM {d} WHERE " + _live() + " ORDER BY slot",
                                 d=docs), {"g": gen_id}).fetchall()
        slots = np.fromiter((r[0] for r in rows), np.int64, len(rows))
        ids = tuple(r[1] for r in rows)
        names = tuple(r[2] for r in rows)
        born = np.fromiter((r[3] for r in rows), np.int64, len(rows))
    if len(ids) != n:
        raise StoreUnavailable(f"generation {gen_id} in {redacted(url)} reads {len(ids)} rows for its {n} skills: "
                               f"it was pruned while being read; the next request reads the current one")
    first, second = _sums(bytes(moments), int(dim))
    scale = 1.0 / max(n, 1)
    return Generation(gen_id, prefix, epoch, slots, ids, names, born, signature, params, first * scale,
                      second * scale, chance)


def scored_rows(generation: Generation, config: RouterConfig, url: str) -> tuple[str, ...]:
    """The row-vector signals (:func:`row_signals`) a reader under ``config`` scores from ``generation``: those
    its config wants and the library has; :class:`ConfigError` for one the generation's writer did not want (it
    holds no rows of it)."""
    built = generation.params.get("row_signals") or {}
    out = []
    for signal in row_signals(config):
        if signal.name not in built:
            raise ConfigError(f"the index in {redacted(url)} was built without the {signal.name} signal, which this "
                              f"config weighs: run 'skill-router index --index-url ...' with this config, or set its "
                              f"{signal.name} weight to 0")
        if built[signal.name] is not None:
            out.append(signal.name)
    return tuple(out)


def chance_recipe(generation: Generation, signals: Scorer, model_id: str) -> str:
    """The recipe (:func:`router.abstain.chance_recipe`) of ``generation``'s chance level scored by ``signals``:
    its content is the generation itself (its id, signature and build key)."""
    from router import abstain
    from router.index import scored_names

    content = json.dumps(["postgresql", generation.id, generation.signature, generation.params.get("build")])
    return abstain.chance_recipe(model_id, scored_names(signals), content)


def kept_chance(generation: Generation, signals: Scorer, model_id: str) -> Any:
    """The chance level (:class:`router.abstain.Chance`) ``generation`` keeps, when its recipe is that of
    ``signals`` (the reader's own); None: the reader computes it."""
    from router import abstain

    return abstain.read_stored(generation.chance, chance_recipe(generation, signals, model_id))


class _Within:
    """A database whose one connection is a writer's open transaction: the generation it is writing is scored
    as readers will read it, before the commit that shows it to them."""

    def __init__(self, conn: Any, url: str) -> None:
        self.conn, self.url = conn, url

    @contextmanager
    def connection(self) -> Iterator[Any]:
        yield self.conn


def _keep_derived(db: Any, conn: Any, router: LibrarySource, key: str) -> Generation:
    """Keep in the row of the library's current generation, as ``conn`` reads it, what every reader would derive
    from it: its chance level in its stored form, scored as a replica with ``router``'s config scores it (the
    passage index beside it in memory, as far as it reaches), and its rows' centrality in slot order (read while
    scoring)."""
    from indexes.tokenize import Tokenizer

    from router import abstain
    from router.index import beside, chance_now

    generation = read_generation(conn, key, db.url)
    database = PgSignals(db, generation, Tokenizer.from_dict(generation.params["tokenizer"]), router.config.k,
                         [s.id for s in router.skills], scored_rows(generation, router.config, db.url))
    signals = beside(database, router, ("passages",))
    chance = cast(abstain.Chance, chance_now(signals, router))
    stored = abstain.stored_chance(chance, chance_recipe(generation, signals, router.encoder.model_id))
    central = database._centrality(conn)[database._positions(generation.slots)]
    conn.execute("UPDATE skill_router_generations SET chance = %s, centrality = %s WHERE id = %s",
                 (json.dumps(stored), np.ascontiguousarray(central, dtype=np.float64).tobytes(), generation.id))
    return generation


def _keep_chance(db: Database, router: LibrarySource, key: str) -> None:
    """For a current generation committed without its chance level and centrality (before schema 3), or with a
    level of another recipe: both computed now and kept in its row."""
    from indexes.tokenize import Tokenizer

    from router.index import beside

    with db.connection() as conn:
        generation = read_generation(conn, key, db.url)
        has_centrality = conn.execute("SELECT centrality IS NOT NULL FROM skill_router_generations WHERE id = %s",
                                      (generation.id,)).fetchone()[0]
    signals = beside(PgSignals(db, generation, Tokenizer.from_dict(generation.params["tokenizer"]), router.config.k,
                               [s.id for s in router.skills], scored_rows(generation, router.config, db.url)), router,
                     ("passages",))
    if has_centrality and kept_chance(generation, signals, router.encoder.model_id) is not None:
        return
    with db.connection() as conn:
        _keep_derived(_Within(conn, db.url), conn, router, key)


# -- writing --------------------------------------------------------------------------------------------------------
@dataclass
class PublishReport:
    generation: int = 0
    embedded: int = 0
    reused: int = 0
    seconds_embedding: float = 0.0
    seconds_commit: float = 0.0
    #: of the commit: scoring the everyday sample against the generation (its chance level) and its centrality
    seconds_chance: float = 0.0
    #: when the generation's transaction committed (``time.monotonic()`` of this process; 0: none committed)
    committed_at: float = 0.0
    unchanged: bool = False
    #: rows written by the generation (all of them for a build from scratch, the changed ones for an edit)
    written: int = 0
    #: row vectors written (:func:`row_signals`: the rows whose vector changed)
    vectors_written: int = 0
    removed: int = 0
    incremental: bool = False


@dataclass(frozen=True)
class _Row:
    """One skill's row to write: where it goes and what it holds."""

    slot: int
    position: int  # in the router's skill order
    skill_id: str
    name: str
    row_hash: str
    record: str
    content: str  # the cache key of its dense text
    terms: tuple[Mapping[str, int], ...]  # per BM25 field: term -> count
    examples: tuple[str, ...]  # cache keys of its example requests


def _build_key(router: LibrarySource, fields: Sequence[str], dim: int, rows: Sequence[str] = ()) -> str:
    """What every row of an epoch shares: a generation with another key starts a new epoch (a build from
    scratch)."""
    from indexes.bm25 import BM25Params
    from indexes.tokenize import DEFAULT_TOKENIZER

    config = router.config
    params = BM25Params()
    return hashlib.sha256(json.dumps([ROW_FORMAT, router.encoder.model_id, dim, router.profile.name, list(fields),
                                      DEFAULT_TOKENIZER.to_dict(), params.k1, params.b, params.variant, config.body,
                                      config.body_tokens, config.dense_name, *([sorted(rows)] if rows else [])],
                                     sort_keys=True, default=str).encode()).hexdigest()


def _create_epoch(conn: Any, prefix: str, epoch: int, dim: int) -> None:
    docs, examples, postings = (_ident(prefix, f"e{epoch}", kind) for kind in ("docs", "examples", "postings"))
    conn.execute(_sql("CREATE TABLE {d} (slot integer NOT NULL, born bigint NOT NULL, died bigint NOT NULL, skill_id "
                      "text NOT NULL, name text NOT NULL, row_hash text NOT NULL, record text NOT NULL, dl0 integer "
                      "NOT NULL, dl1 integer NOT NULL, embedding vector({n}) NOT NULL)", d=docs, n=_literal(dim)))
    conn.execute(_sql("CREATE TABLE {x} (slot integer NOT NULL, born bigint NOT NULL, died bigint NOT NULL, "
                      "embedding vector({n}) NOT NULL)", x=examples, n=_literal(dim)))
    conn.execute(_sql("CREATE TABLE {p} (field smallint NOT NULL, term text NOT NULL, slot integer NOT NULL, born "
                      "bigint NOT NULL, died bigint NOT NULL, tf integer NOT NULL, dl integer NOT NULL)", p=postings))
    _create_vectors(conn, prefix, epoch, dim)


HNSW_OPTIONS = f"(m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"


def _index_epoch(conn: Any, prefix: str, epoch: int) -> None:
    """The epoch's indexes, made after its first rows are in (a bulk build is faster than one row at a time)."""
    docs, examples, postings = (_ident(prefix, f"e{epoch}", kind) for kind in ("docs", "examples", "postings"))
    conn.execute("SET LOCAL maintenance_work_mem = '512MB'")
    conn.execute(_sql("ALTER TABLE {d} ADD PRIMARY KEY (slot, born)", d=docs))
    conn.execute(_sql("CREATE INDEX ON {d} USING hnsw (embedding vector_ip_ops) WITH " + HNSW_OPTIONS, d=docs))
    conn.execute(_sql("CREATE INDEX ON {x} (slot)", x=examples))
    conn.execute(_sql("CREATE INDEX ON {x} USING hnsw (embedding vector_ip_ops) WITH " + HNSW_OPTIONS, x=examples))
    conn.execute(_sql("CREATE INDEX ON {p} (field, term)", p=postings))
    conn.execute(_sql("CREATE INDEX ON {p} (slot)", p=postings))
    _index_generations(conn, prefix, epoch)
    _index_vectors(conn, prefix, epoch)
    for table in (docs, examples, postings, _ident(prefix, f"e{epoch}", "vectors")):  # the planner's statistics,
        # before the first reader plans a query
        conn.execute(_sql("ANALYZE {t}", t=table))


def row_signals(config: RouterConfig) -> list[Any]:
    """The signals ``config`` wants whose index is one vector a skill (``row_vectors``), in registry order: a
    generation written under ``config`` keeps their rows, a reader under ``config`` scores them."""
    from router.signals import registry

    return [signal for signal in registry().values() if signal.row_vectors and
            signal.wanted(config)]


def _embed_missing(db: Database, router: LibrarySource, prefix: str, missing: Sequence[str],
                   text_of: Mapping[str, str], report: PublishReport, batch: int,
                   progress: Callable[[str], None] | None, total: int) -> None:
    """Embed the texts of the cache keys ``missing`` over the encoder in batches of ``batch``, each batch committed
    into the embedding cache by COPY (a build killed meanwhile resumes after the last batch)."""
    from pgvector.psycopg import register_vector

    for low in range(0, len(missing), batch):
        chunk = missing[low:low + batch]
        vectors = router.encode([text_of[k] for k in chunk])
        with db.connection() as conn:
            register_vector(conn)
            with conn.cursor().copy(_sql("COPY {t} (content_hash, embedding) FROM STDIN WITH (FORMAT BINARY)",
                                         t=_ident(prefix, "embeddings"))) as copy:
                copy.set_types(["text", "vector"])
                for k, v in zip(chunk, vectors):
                    copy.write_row((k, np.asarray(v, dtype=np.float32)))
        report.embedded += len(chunk)
        if progress:
            progress(f"embedded {report.reused + report.embedded:,} of {total:,} texts")


def _cached(db: Database, prefix: str, keys: Sequence[str], dim: int) -> np.ndarray:
    """The cached vectors of ``keys`` (all in the cache), in order (float32, one row a key). Read in binary: at
    100,000 skills parsing the vectors' text took 10-15 s of an edit's ``index``, their bytes are the same floats."""
    from pgvector.psycopg import register_vector

    unique = list(dict.fromkeys(keys))
    with db.connection() as conn:
        register_vector(conn)
        found = {k: v.to_numpy() for k, v in conn.execute(_sql(
            "SELECT content_hash, embedding FROM {c} WHERE content_hash = ANY(%s)", c=_ident(prefix, "embeddings")),
            (unique,), binary=True)}
    return np.array([found[k] for k in keys], dtype=np.float32).reshape(len(keys), dim)


class _CachedDense:
    """The ``dense`` index a row-vector signal starts from (a skill without a body keeps its description's
    vector): the cached vectors of the skills' dense texts, read only if the signal uses them."""

    def __init__(self, db: Database, prefix: str, keys: Sequence[str], dim: int) -> None:
        self._read = lambda: _cached(db, prefix, keys, dim)
        self._vectors: np.ndarray | None = None

    @property
    def vectors(self) -> np.ndarray:
        if self._vectors is None:
            self._vectors = self._read()
        return self._vectors


def _build_row_vectors(db: Database, router: LibrarySource, prefix: str, doc_keys: Sequence[str],
                       report: PublishReport, batch: int, progress: Callable[[str], None] | None
                       ) -> dict[str, np.ndarray | None]:
    """Each row-vector signal's vectors (skills x dim, as its ``build`` makes them in process; None: the library
    does not have the signal), the texts it embeds embedded through the cache as the skills' own are."""
    from router.signals import BuildJob

    config, model, dim = router.config, router.encoder.model_id, int(router.encoder.dim)
    skills = router.skills

    def embed(keys: Sequence[str], texts: Sequence[str]) -> np.ndarray:
        text_of = dict(zip(keys, texts))
        unique = list(text_of)
        with db.connection() as conn:
            have = {r[0] for r in conn.execute(_sql("SELECT content_hash FROM {t} WHERE content_hash = ANY(%s)",
                                                    t=_ident(prefix, "embeddings")), (unique,))}
        missing = [k for k in unique if k not in have]
        report.reused += len(unique) - len(missing)
        _embed_missing(db, router, prefix, missing, text_of, report, batch, progress,
                       report.reused + report.embedded + len(missing))
        return _cached(db, prefix, keys, dim)

    out: dict[str, np.ndarray | None] = {}
    for signal in row_signals(config):
        texts = {signal.name: [signal.text(s, config) for s in skills]}
        job = BuildJob(tuple(s.id for s in skills), skills, texts, embed, lambda text: text_key(model, text), {},
                       {"dense": _CachedDense(db, prefix, doc_keys, dim)}, config, persist=False)
        index = signal.build(job)
        out[signal.name] = None if index is None else np.asarray(index.vectors, dtype=np.float64)
    return out


def publish(db: Database, router: LibrarySource, key: str, *, progress: Callable[[str], None] | None = None,
            batch: int = EMBED_BATCH, keep: int = 2, after_embedding: Callable[[], None] | None = None
            ) -> PublishReport:
    """Build the library's index in the database: migrate, embed what the cache lacks (committed batch by batch),
    then commit a new generation in one transaction and notify the readers. A generation of the same epoch as
    the current one writes only the rows whose content changed (by hash), the rows' BM25 postings and the
    statistics that change; ``keep`` generations stay readable (the new one and the one before it, which readers
    that have not swapped yet still read)."""
    report = PublishReport()
    if router.config.embeds_bodies:
        raise ConfigError(NO_BODY_EMBEDDINGS)
    encoder = router.encoder
    dim, model = int(encoder.dim), encoder.model_id
    prefix = library_prefix(key)
    with db.connection() as conn:
        migrate(conn)
        conn.execute("INSERT INTO skill_router_libraries (key, prefix, dim) VALUES (%s, %s, %s) ON CONFLICT (key) "
                     "DO NOTHING", (key, prefix, dim))
        found = conn.execute("SELECT dim FROM skill_router_libraries WHERE key = %s", (key,)).fetchone()[0]
        if int(found) != dim:
            conn.execute(_sql("DROP TABLE IF EXISTS {t}", t=_ident(prefix, "embeddings")))
            conn.execute("UPDATE skill_router_libraries SET dim = %s WHERE key = %s", (dim, key))
        conn.execute(_sql("CREATE TABLE IF NOT EXISTS {t} (content_hash text PRIMARY KEY, embedding vector({d}))",
                          t=_ident(prefix, "embeddings"), d=_literal(dim)))
    from pgvector.psycopg import register_vector

    skills = router.skills
    signature = library_signature(router)
    wanted_rows = [signal.name for signal in row_signals(router.config)]
    with db.connection() as conn:
        current, built_rows = conn.execute(
            "SELECT l.signature, g.params -> 'row_signals' FROM skill_router_libraries l LEFT JOIN "
            "skill_router_generations g ON g.id = l.generation WHERE l.key = %s", (key,)).fetchone()
    vectors_of: dict[str, np.ndarray | None] | None = None
    if current == signature and sorted(built_rows or {}) == sorted(wanted_rows) and wanted_rows:
        # the library is the same, the signals' vectors may not be (another cut or head): built, then compared
        vectors_of = _build_row_vectors(db, router, prefix, [text_key(model, t) for t in router.dense_texts()],
                                        report, batch, progress)
        if {name: _digest(v) for name, v in vectors_of.items()} != built_rows:
            current = None
    if current == signature and sorted(built_rows or {}) == sorted(wanted_rows):
        report.unchanged = True
        _keep_chance(db, router, key)
        return report
    dense_texts = router.dense_texts()
    doc_keys = [text_key(model, t) for t in dense_texts]
    pairs = [(i, e) for i, s in enumerate(skills) for e in s.examples if e.strip()]
    example_keys = [text_key(model, e) for _, e in pairs]
    text_of = dict(zip(doc_keys, dense_texts))
    text_of.update(zip(example_keys, (e for _, e in pairs)))
    wanted = list(dict.fromkeys(doc_keys + example_keys))
    start = time.perf_counter()
    with db.connection() as conn:
        register_vector(conn)
        have = {r[0] for r in conn.execute(_sql("SELECT content_hash FROM {t} WHERE content_hash = ANY(%s)",
                                                t=_ident(prefix, "embeddings")), (wanted,))}
    missing = [k for k in wanted if k not in have]
    report.reused += len(wanted) - len(missing)
    _embed_missing(db, router, prefix, missing, text_of, report, batch, progress, len(wanted))
    if vectors_of is None:
        vectors_of = _build_row_vectors(db, router, prefix, doc_keys, report, batch, progress) if wanted_rows else {}
    report.seconds_embedding = time.perf_counter() - start
    if after_embedding is not None:
        after_embedding()

    start = time.perf_counter()
    from indexes.tokenize import DEFAULT_TOKENIZER

    bodies = router.body_texts()
    field_texts = {"bm25": router.index_texts()}
    if any(t.strip() for t in bodies):
        field_texts["body_bm25"] = bodies
    fields = list(field_texts)
    build_key = _build_key(router, fields, dim, wanted_rows)
    examples_of: dict[int, list[str]] = {}
    for (owner, _), content in zip(pairs, example_keys):
        examples_of.setdefault(owner, []).append(content)
    records = [skill_record(s) for s in skills]
    hashes = [hashlib.sha256(f"{r}\0{c}".encode("utf-8", "surrogatepass")).hexdigest()
              for r, c in zip(records, doc_keys)]
    with db.connection() as conn:
        register_vector(conn)
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (key,))
        gen_id = int(conn.execute("SELECT nextval(pg_get_serial_sequence('skill_router_generations', 'id'))"
                                  ).fetchone()[0])
        previous = conn.execute("SELECT g.id, g.epoch, g.params, g.moments FROM skill_router_libraries l JOIN "
                                "skill_router_generations g ON g.id = l.generation WHERE l.key = %s", (key,)).fetchone()
        incremental = previous is not None and previous[2].get("build") == build_key
        live: dict[str, tuple[int, str, int, int]] = {}
        if incremental:
            old_id, epoch, old_params = int(previous[0]), int(previous[1]), previous[2]
            docs = _ident(prefix, f"e{epoch}", "docs")
            live = {r[1]: (int(r[0]), r[2], int(r[3]), int(r[4])) for r in conn.execute(
                _sql("SELECT slot, skill_id, row_hash, dl0, dl1 FROM {d} WHERE " + _live(), d=docs), {"g": old_id})}
            next_slot = int(old_params["next_slot"])
            first, second = _sums(bytes(previous[3]), dim)
            stats = {f: [len(skills), int(old_params["stats"][f][1])] for f in fields}
        else:
            old_id, epoch, next_slot = 0, gen_id, 0
            first, second = np.zeros(dim), np.zeros((dim, dim))
            stats = {f: [len(skills), 0] for f in fields}
            _create_epoch(conn, prefix, epoch, dim)
            docs = _ident(prefix, f"e{epoch}", "docs")
        examples_table, postings = (_ident(prefix, f"e{epoch}", kind) for kind in ("examples", "postings"))
        wanted_ids = {s.id for s in skills}
        rows: list[_Row] = []
        killed: list[int] = []
        for position, (skill, row_hash) in enumerate(zip(skills, hashes)):
            old = live.get(skill.id)
            if old is not None and old[1] == row_hash:
                continue
            if old is not None:
                slot = old[0]
                killed.append(slot)
                for f, dl in zip(("bm25", "body_bm25"), old[2:]):
                    if f in stats:
                        stats[f][1] -= dl
            else:
                slot, next_slot = next_slot, next_slot + 1
            terms = tuple(Counter(DEFAULT_TOKENIZER(field_texts[f][position])) for f in fields)
            for f, counted in zip(fields, terms):
                stats[f][1] += sum(counted.values())
            rows.append(_Row(slot, position, skill.id, skill.name, row_hash, records[position], doc_keys[position],
                             terms, tuple(examples_of.get(position, ()))))
        removed = [old for skill_id, old in live.items() if skill_id not in wanted_ids]
        for old in removed:
            killed.append(old[0])
            for f, dl in zip(("bm25", "body_bm25"), old[2:]):
                if f in stats:
                    stats[f][1] -= dl
        cache = _ident(prefix, "embeddings")
        if killed:
            gone = conn.execute(_sql("SELECT embedding FROM {d} WHERE slot = ANY(%(s)s) AND " + _live(), d=docs),
                                {"s": killed, "g": old_id}).fetchall()
            for (vector,) in gone:
                v = vector.to_numpy().astype(np.float64)
                first -= v
                second -= np.outer(v, v)
            for table in (docs, examples_table, postings, _ident(prefix, f"e{epoch}", "vectors")):
                conn.execute(_sql("UPDATE {t} SET died = %(n)s WHERE slot = ANY(%(s)s) AND died = %(a)s", t=table),
                             {"n": gen_id, "s": killed, "a": ALIVE})
        staged = _ident(prefix, f"g{gen_id}", "staged")
        conn.execute(_sql("CREATE TEMP TABLE {s} (slot integer, skill_id text, name text, row_hash text, record text, "
                          "dl0 integer, dl1 integer, content_hash text) ON COMMIT DROP", s=staged))
        with conn.cursor().copy(_sql("COPY {s} FROM STDIN", s=staged)) as copy:
            for r in rows:
                lengths = [sum(t.values()) for t in r.terms] + [0, 0]
                copy.write_row((r.slot, r.skill_id, r.name, r.row_hash, r.record, lengths[0], lengths[1], r.content))
        conn.execute(_sql("INSERT INTO {d} SELECT s.slot, %(n)s, %(a)s, s.skill_id, s.name, s.row_hash, s.record, "
                          "s.dl0, s.dl1, e.embedding FROM {s} s JOIN {c} e ON e.content_hash = s.content_hash",
                          d=docs, s=staged, c=cache), {"n": gen_id, "a": ALIVE})
        conn.execute(_sql("TRUNCATE {s}", s=staged))
        with conn.cursor().copy(_sql("COPY {s} (slot, content_hash) FROM STDIN", s=staged)) as copy:
            for r in rows:
                for content in r.examples:
                    copy.write_row((r.slot, content))
        conn.execute(_sql("INSERT INTO {x} SELECT s.slot, %(n)s, %(a)s, e.embedding FROM {s} s JOIN {c} e ON "
                          "e.content_hash = s.content_hash", x=examples_table, s=staged, c=cache),
                     {"n": gen_id, "a": ALIVE})
        with conn.cursor().copy(_sql("COPY {p} FROM STDIN WITH (FORMAT BINARY)", p=postings)) as copy:
            copy.set_types(["int2", "text", "int4", "int8", "int8", "int4", "int4"])
            written = _postings([(r.slot, dict(zip(fields, r.terms))) for r in rows])
            if not incremental:  # a term's postings side by side: a request reads a few pages, not one per posting
                written = iter(sorted(written, key=lambda posting: (posting[0], posting[1])))
            for field, term, slot, tf, dl in written:
                copy.write_row((field, term, slot, gen_id, ALIVE, tf, dl))
        if vectors_of:
            slot_at = {r.position: r.slot for r in rows}
            slots_now = [slot_at[i] if i in slot_at else live[s.id][0] for i, s in enumerate(skills)]
            report.vectors_written = _write_row_vectors(conn, _ident(prefix, f"e{epoch}", "vectors"), vectors_of,
                                                        slots_now, {r.slot for r in rows}, gen_id,
                                                        old_id if incremental else None)
        if rows:
            contents = list(dict.fromkeys(r.content for r in rows))
            vector_of = {c: v.to_numpy() for c, v in conn.execute(_sql(
                "SELECT content_hash, embedding FROM {c} WHERE content_hash = ANY(%s)", c=cache), (contents,))}
            added = np.array([vector_of[r.content] for r in rows], dtype=np.float64).reshape(-1, dim)
            first += added.sum(axis=0)
            second += added.T @ added
        if not incremental:
            _index_epoch(conn, prefix, epoch)
        n = len(skills)
        params = {"model": model, "dim": dim, "examples": len(pairs), "fields": fields, "build": build_key,
                  "tokenizer": DEFAULT_TOKENIZER.to_dict(), "profile": router.profile.name, "stats": stats,
                  "next_slot": next_slot, "killed": killed,
                  "row_signals": {name: _digest(vectors) for name, vectors in vectors_of.items()}}
        conn.execute("INSERT INTO skill_router_generations (id, key, n, signature, params, moments, epoch) VALUES "
                     "(%s, %s, %s, %s, %s, %s, %s)", (gen_id, key, n, signature, json.dumps(params),
                                                      _moments_bytes(first, second), epoch))
        conn.execute("UPDATE skill_router_libraries SET generation = %s, signature = %s, updated = now() "
                     "WHERE key = %s", (gen_id, signature, key))
        start_chance = time.perf_counter()
        _keep_derived(_Within(conn, db.url), conn, router, key)
        report.seconds_chance = time.perf_counter() - start_chance
        _prune(conn, key, prefix, keep)
        conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, json.dumps({"key": key, "generation": gen_id})))
        conn.commit()
        report.committed_at = time.monotonic()
    report.generation = gen_id
    report.written, report.removed, report.incremental = len(rows), len(removed), incremental
    report.seconds_commit = time.perf_counter() - start
    return report


def _row_hashes(vectors: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """``vectors`` as the table stores them (float32) and each row's hash (of those bytes)."""
    rows = np.ascontiguousarray(vectors, dtype=np.float32)
    return rows, [hashlib.sha256(row.tobytes()).hexdigest() for row in rows]


def _digest(vectors: np.ndarray | None) -> str | None:
    """What a generation keeps of a row-vector signal's rows (``params['row_signals']``): the hash of its rows'
    hashes in skill order; None for a signal the library does not have."""
    if vectors is None:
        return None
    return hashlib.sha256("".join(_row_hashes(vectors)[1]).encode()).hexdigest()


def _write_row_vectors(conn: Any, table: Any, vectors_of: Mapping[str, np.ndarray | None], slots: Sequence[int],
                       rewritten: set[int], gen_id: int, old_id: int | None) -> int:
    """Write each row-vector signal's rows that the previous generation ``old_id`` (None: none) does not hold as
    they are now (by the hash of the vector's float32 bytes, what the table stores), and the rows of the skills
    rewritten (``rewritten`` slots: their old rows died with their skill's); a signal the library no longer has
    (None) leaves no live row. ``slots``: each skill's slot, in the order of the vectors' rows."""
    written = 0
    for name, vectors in vectors_of.items():
        stored: dict[int, str] = {}
        if old_id is not None:
            stored = {int(slot): h for slot, h in conn.execute(_sql(
                "SELECT slot, vector_hash FROM {v} WHERE signal = %(s)s AND " + _live(), v=table),
                {"s": name, "g": old_id})}
        if vectors is None:
            if stored:
                conn.execute(_sql("UPDATE {v} SET died = %(n)s WHERE signal = %(s)s AND died = %(a)s", v=table),
                             {"n": gen_id, "s": name, "a": ALIVE})
            continue
        rows, hashes = _row_hashes(vectors)
        changed = [i for i, (slot, h) in enumerate(zip(slots, hashes)) if slot in rewritten or stored.get(slot) != h]
        stale = [slots[i] for i in changed if slots[i] not in rewritten and slots[i] in stored]
        if stale:
            conn.execute(_sql("UPDATE {v} SET died = %(n)s WHERE signal = %(s)s AND slot = ANY(%(l)s) AND died = "
                              "%(a)s", v=table), {"n": gen_id, "s": name, "l": stale, "a": ALIVE})
        with conn.cursor().copy(_sql("COPY {v} (signal, slot, born, died, vector_hash, embedding) FROM STDIN WITH "
                                     "(FORMAT BINARY)", v=table)) as copy:
            copy.set_types(["text", "int4", "int8", "int8", "text", "vector"])
            for i in changed:
                copy.write_row((name, slots[i], gen_id, ALIVE, hashes[i], rows[i]))
        written += len(changed)
    return written


def _prune(conn: Any, key: str, prefix: str, keep: int) -> None:
    """Forget the generations past the newest ``keep``: the rows only they read, and the epochs no kept generation
    reads."""
    generations = conn.execute("SELECT id, epoch, params FROM skill_router_generations WHERE key = %s ORDER BY id "
                               "DESC", (key,)).fetchall()
    kept, dropped = generations[:max(keep, 1)], generations[max(keep, 1):]
    kept_epochs = {int(e) for _, e, _ in kept}
    oldest_id, oldest_epoch, oldest_params = kept[-1]
    if oldest_params.get("killed"):
        # rows that died with the oldest kept generation were read only by the generations before it
        for kind in ("docs", "examples", "postings"):
            conn.execute(_sql("DELETE FROM {t} WHERE slot = ANY(%(s)s) AND died = %(g)s",
                              t=_ident(prefix, f"e{oldest_epoch}", kind)),
                         {"s": oldest_params["killed"], "g": int(oldest_id)})
    # a row vector also dies alone (its signal's vector changed, not its row): by generation (indexed)
    conn.execute(_sql("DELETE FROM {v} WHERE died = %(g)s", v=_ident(prefix, f"e{oldest_epoch}", "vectors")),
                 {"g": int(oldest_id)})
    for old_id, old_epoch, _ in dropped:
        if int(old_epoch) not in kept_epochs:
            for kind in ("docs", "examples", "postings", "vectors"):
                conn.execute(_sql("DROP TABLE IF EXISTS {t}", t=_ident(prefix, f"e{old_epoch}", kind)))
        conn.execute("DELETE FROM skill_router_generations WHERE id = %s", (old_id,))


def _postings(rows: Sequence[tuple[int, Mapping[str, Mapping[str, int]]]]) -> Iterator[tuple[int, str, int, int, int]]:
    """(field, term, slot, term frequency, document length) of every posting of ``rows`` ((slot, field -> term
    counts), in the order :func:`indexes.bm25.count_terms` meets the terms)."""
    for slot, fields in rows:
        for name, counted in fields.items():
            length = sum(counted.values())
            for term, tf in counted.items():
                yield FIELDS[name], term, slot, tf, length


# -- reading --------------------------------------------------------------------------------------------------------
def depth_for(k: int) -> int:
    """The depth of each signal's top list on the HNSW path for a requested ``k``."""
    return max(MIN_DEPTH, 20 * k)


def ef_search_for(k: int, depth: int | None = None) -> int:
    """``hnsw.ef_search`` for a requested ``k`` (:data:`EF_SEARCH_PER_K`): at least the top list's ``depth``
    (None: :func:`depth_for` ``k``)."""
    return min(1000, max(40, EF_SEARCH_PER_K * k, depth_for(k) if depth is None else depth))


class PgSignals:
    """The signals of one library read from the database: :meth:`score` returns what
    :meth:`router.signals.Signals.score` returns (one score per skill and signal), computed by the database.

    ``ids``: the router's skills in its own order (a router that read the library from files); by default the
    generation's own order (a replica that reads the catalogue from the database)."""

    def __init__(self, db: Database, generation: Generation, tokenizer: Any, k: int = 5,
                 ids: Sequence[str] | None = None, rows: Sequence[str] = ()) -> None:
        from router import pgquery

        self.db = db
        self.generation = generation
        self.rows = tuple(rows)  # the row-vector signals scored (:func:`scored_rows`)
        self.tokenizer = tokenizer
        self.k = k
        self.depth = depth_for(k)  # the top lists' depth for the config's k
        self.cut = 0  # requests whose fill was cut at the lowest retrieved score (see indexes.fill)
        self._central: tuple[int, np.ndarray] | None = None  # (generation id, centrality): read once per generation
        g = generation
        self._position = np.full(int(g.slots[-1]) + 1 if g.n else 0, -1, dtype=np.int64)  # slot -> position
        if ids is None or tuple(ids) == g.ids:
            self._ids = g.ids
            self._position[g.slots] = np.arange(g.n)
        else:
            at = {skill_id: i for i, skill_id in enumerate(ids)}
            self._ids = tuple(ids)
            self._position[g.slots] = [at[skill_id] for skill_id in g.ids]
        self._slot_of = np.zeros(g.n, dtype=np.int64)  # position -> slot: ties in a BM25 top list go in slot order
        self._slot_of[self._position[g.slots]] = g.slots
        self._pending = threading.local()  # a request's BM25 scored while it is embedded (prefetch)
        #: Given the (slot, generation of birth, record text) of each request's candidates when set (a replica's
        #: :meth:`StoredRows.offer`): the dense statement then reads them too.
        self.offer: Callable[[Sequence[tuple[int, int, str]]], None] | None = None
        self.terms = pgquery.TermCache()  # the frequent terms' weighed postings of this generation

    def wanted(self) -> tuple[int, int]:
        """(top-list depth, ``hnsw.ef_search``) for the requests being scored, from their requested k
        (:data:`router.index.REQUESTED_K`; the config's k outside a request): a k above the config's gets deeper
        lists."""
        from router.index import REQUESTED_K

        k = REQUESTED_K.get() or self.k
        depth = self.depth if k <= self.k else max(self.depth, depth_for(k))
        return depth, ef_search_for(k, depth)  # depth is at least depth_for(k)

    @classmethod
    def current(cls, db: Database, key: str, router: LibrarySource) -> PgSignals:
        from indexes.tokenize import Tokenizer

        if router.config.embeds_bodies:  # a reader would fuse without the signal its config weighs
            raise ConfigError(NO_BODY_EMBEDDINGS)
        with db.connection() as conn:
            generation = read_generation(conn, key, db.url)
        signature = library_signature(router)
        if generation.signature != signature:
            raise ConfigError(f"the index in {redacted(db.url)} was built from other skills, texts or model than "
                              f"the library has now: run 'skill-router index --index-url ...' to refresh it")
        return cls(db, generation, Tokenizer.from_dict(generation.params["tokenizer"]), router.config.k,
                   [s.id for s in router.skills], scored_rows(generation, router.config, db.url))

    @property
    def ids(self) -> tuple[str, ...]:
        return self._ids

    @property
    def has_examples(self) -> bool:
        return self.generation.has_examples

    @property
    def names(self) -> tuple[str, ...]:
        """The signals :meth:`score` scores."""
        return (*self._database_names(), "centrality")

    def _database_names(self) -> list[str]:
        g = self.generation
        return ["bm25", "dense"] + (["examples"] if g.has_examples else []) + [f for f in g.fields if f != "bm25"] + \
            list(self.rows)

    def _row_cursors(self, conn: Any, q: np.ndarray) -> dict[str, Any]:
        """The statements scoring the row-vector signals (every live row's inner product with ``q``), sent in the
        caller's pipeline."""
        g = self.generation
        return {name: conn.execute(_sql("SELECT slot, -(embedding <#> %(q)s) FROM {v} WHERE signal = %(s)s AND " +
                                        _live(), v=g.table("vectors")), {"q": q, "s": name, "g": g.id})
                for name in self.rows}

    def _row_scores(self, cursors: Mapping[str, Any], out: dict[str, np.ndarray]) -> None:
        for name, cursor in cursors.items():
            values = np.zeros(self.generation.n)
            found = cursor.fetchall()
            if found:
                values[self._positions([r[0] for r in found])] = [r[1] for r in found]
            out[name] = values

    def prefetch(self, texts: Sequence[str]) -> None:
        """Start the BM25 scoring of ``texts`` (the requests about to be embedded, then scored by :meth:`score` on
        this thread): past :data:`EXACT_BELOW`, in a worker thread while the requests are embedded (onnxruntime lets
        go of the interpreter meanwhile), the postings the router does not keep (:class:`router.pgquery.TermCache`)
        read on a connection of their own (:mod:`router.pgquery`), then every skill's BM25 and the BM25 top lists:
        the dense statement that follows the embedding finds them ready."""
        from router import pgquery

        g = self.generation
        if g.n < EXACT_BELOW or not texts or not self.postings_in_replica:
            return
        texts = tuple(texts)
        depth, _ = self.wanted()  # the request's k is read here: a worker thread does not see its context
        self._pending.read = (texts, depth, pgquery.in_background(self._lexical_ahead, texts, depth))

    def _lexical_ahead(self, texts: Sequence[str], depth: int) -> list[tuple[dict[str, np.ndarray], list[int],
                                                                               Any]]:
        """:meth:`_lexical` on pooled connections, then the rows of each request's BM25 top-list skills
        (:func:`router.pgquery.read_candidates`): the dense statement that follows the embedding reads the HNSW
        top list alone, and :meth:`_retrieved_many` takes their cosines once the vector is there (at 100,000 skills
        the lookups of a hundred skills by key were 1.2-1.6 ms of a 5.5 ms statement; read here, they are read
        while the request is embedded). With example requests the statement reads the candidates' best examples
        too: their rows are left to it (None)."""
        from router import pgquery

        g = self.generation
        if g.has_examples:
            return [(rows, extra, None) for rows, extra in self._lexical(texts, depth, None)]
        with self.db.connection() as conn:
            lexical = self._lexical(texts, depth, conn)
            ahead = pgquery.read_candidates(conn, g, [extra for _, extra in lexical], len(g.mean),
                                            records=self.offer is not None)
        return [(rows, extra, found) for (rows, extra), found in zip(lexical, ahead)]

    def _lexical(self, texts: Sequence[str], depth: int, conn: Any) -> list[tuple[dict[str, np.ndarray], list[int]]]:
        """For each of ``texts``: every skill's BM25 in each field (by position) and the slots of the fields' top
        ``depth`` lists, the postings read on ``conn`` (None: a pooled connection of its own)."""
        from router import pgquery

        g = self.generation
        requests = [self._terms(text) for text in texts]
        weighted = self._postings(conn, sorted({t for terms in requests for t in terms}))
        out = []
        for terms in requests:
            rows: dict[str, np.ndarray] = {}
            extra: set[int] = set()
            for name in g.fields:
                rows[name] = pgquery.bm25_row(FIELDS[name], terms, weighted, g.n)
                extra.update(self._slot_of[pgquery.top_positions(rows[name], self._slot_of, depth)].tolist())
            out.append((rows, sorted(extra)))
        return out

    def _postings(self, conn: Any, terms: Sequence[str]) -> Any:
        """The weighed postings of ``terms`` (:func:`router.pgquery.weigh`): those the router keeps, and the others
        read on ``conn`` (None: on a pooled connection of their own, committed in the same round trip)."""
        from indexes.bm25 import BM25Params

        from router import pgquery

        g = self.generation
        wanted = set(terms)
        kept = {t: found for t in wanted if (found := self.terms.get(t)) is not None}
        missing = sorted(wanted - kept.keys())
        fields = [FIELDS[f] for f in g.fields]
        if not missing:
            fetched = {}
        elif conn is None:
            with self.db.connection() as own:
                fetched = pgquery.fetch(own, g, fields, missing, commit=True)
        else:
            fetched = pgquery.fetch(conn, g, fields, missing)
        params = BM25Params()
        weighted = pgquery.weigh(fetched, {FIELDS[f]: g.stats(f) for f in g.fields}, self._position, params.k1,
                                 params.b)
        self.terms.put(weighted)
        for term in kept:
            weighted.update(kept[term])
        return weighted

    def score(self, texts: Sequence[str], vectors: np.ndarray) -> dict[str, np.ndarray]:
        try:
            return self._score(texts, vectors)
        finally:
            self._pending.read = None  # a prefetch serves the one scoring that follows it

    def _score(self, texts: Sequence[str], vectors: np.ndarray) -> dict[str, np.ndarray]:
        g = self.generation
        names = self._database_names()
        if not len(texts):
            return {name: np.zeros((0, g.n)) for name in (*names, "centrality")}
        from psycopg import errors

        pending = getattr(self._pending, "read", None)
        for attempt in range(2):  # a pooled connection the server closed (a restart) fails once, then is replaced
            try:
                if pending is not None:  # waited for before a second connection is taken: no request holds two
                    try:                 # at once
                        pending[2].result()
                    except StoreUnavailable:
                        self._pending.read = pending = None  # read again on the request's own connection
                        raise
                with self.db.connection() as conn:
                    if g.n < EXACT_BELOW or not self.postings_in_replica:
                        rows = [self._exact(conn, text, vector) if g.n < EXACT_BELOW else
                                self._retrieved(conn, text, vector) for text, vector in zip(texts, vectors)]
                    else:
                        rows = self._retrieved_many(conn, texts, vectors)
                    # one request's rows are its arrays themselves (a batch's are stacked): nothing is zeroed or
                    # copied over every skill again
                    out = {name: rows[0][name][None, :] if len(rows) == 1 else np.stack([r[name] for r in rows])
                           for name in names}
                    central = self._centrality(conn)
                # the same row for every request: a read-only view of the generation's array, not a copy each
                out["centrality"] = np.broadcast_to(central, (len(texts), g.n))
                return out
            except errors.UndefinedTable:
                raise StoreUnavailable("the index epoch this router read was replaced while it was serving; the "
                                       "next request reads the new one") from None
            except StoreUnavailable:
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def _centrality(self, conn: Any) -> np.ndarray:
        """The ``centrality`` signal (:mod:`router.signals.centrality`): each live description vector's inner
        product with their mean, as the generation's row keeps it (in slot order, computed by this statement when
        it was committed), else by one statement over every vector; once per generation."""
        g = self.generation
        if self._central is None or self._central[0] != g.id:
            values = np.zeros(g.n)
            kept = conn.execute("SELECT centrality FROM skill_router_generations WHERE id = %s", (g.id,)).fetchone()
            if kept is not None and kept[0] is not None and len(kept[0]) == 8 * g.n:
                values[self._positions(g.slots)] = np.frombuffer(bytes(kept[0]), dtype=np.float64)
            else:
                live = _live()
                rows = conn.execute(_sql("SELECT slot, -(embedding <#> (SELECT avg(embedding) FROM {d} WHERE " +
                                         live + ")) FROM {d} WHERE " + live, d=g.table("docs")),
                                    {"g": g.id}).fetchall()
                if rows:
                    values[self._positions([r[0] for r in rows])] = [r[1] for r in rows]
            self._central = (g.id, values)
        return self._central[1]

    def _terms(self, text: str) -> list[str]:
        """The request's tokens, repeats included, in order: summed in this order, as :class:`indexes.BM25Index`
        sums them (so equal BM25 scores stay equal and ties break as they do in process)."""
        return list(self.tokenizer(text))

    def _bm25_params(self, name: str, terms: list[str], **more: Any) -> dict[str, Any]:
        from indexes.bm25 import BM25Params

        n, avgdl = self.generation.stats(name)
        params = BM25Params()
        return {"terms": terms, "field": FIELDS[name], "g": self.generation.id, "n": n, "avgdl": avgdl,
                "k1": params.k1, "k1p": params.k1 + 1, "b": params.b, "one_b": 1 - params.b, **more}

    def _positions(self, slots: Sequence[int] | np.ndarray) -> np.ndarray:
        return self._position[np.asarray(slots, dtype=np.int64)]

    def _exact(self, conn: Any, text: str, vector: np.ndarray) -> dict[str, np.ndarray]:
        """Every skill's scores, the statements pipelined (one round trip)."""
        g = self.generation
        q = np.asarray(vector, dtype=np.float32)
        terms = self._terms(text)
        with conn.pipeline():
            dense_cursor = conn.execute(_sql("SELECT slot, -(embedding <#> %(q)s) FROM {d} WHERE " + _live(),
                                             d=g.table("docs")), {"q": q, "g": g.id})
            lexical_cursors = {name: conn.execute(_bm25_sql(g.table("postings")), self._bm25_params(name, terms))
                               for name in g.fields}
            example_cursor = conn.execute(_sql("SELECT slot, max(-(embedding <#> %(q)s)) FROM {x} WHERE " + _live() +
                                               " GROUP BY slot", x=g.table("examples")), {"q": q, "g": g.id}) \
                if g.has_examples else None
            row_cursors = self._row_cursors(conn, q)
            conn.commit()  # in the same round trip: the pool finds the connection idle, and sends nothing more
        rows = dense_cursor.fetchall()
        dense = np.zeros(g.n)
        dense[self._positions([r[0] for r in rows])] = [r[1] for r in rows]
        out = {"dense": dense}
        for name, cursor in lexical_cursors.items():
            values = np.zeros(g.n)
            found = cursor.fetchall()
            if found:
                values[self._positions([r[0] for r in found])] = [r[1] for r in found]
            out[name] = values
        if example_cursor is not None:
            best = dense.copy()
            for slot, value in example_cursor.fetchall():
                at = self._position[slot]
                best[at] = max(best[at], value)
            out["examples"] = best
        self._row_scores(row_cursors, out)
        return out

    #: Past EXACT_BELOW: BM25 from the postings (:mod:`router.pgquery`); False: scored in SQL
    #: (:func:`_retrieval_sql`, the earlier formulation, which ``benchmarks/scale.py`` measures against)
    postings_in_replica = True

    def _retrieved(self, conn: Any, text: str, vector: np.ndarray) -> dict[str, np.ndarray]:
        """Past :data:`EXACT_BELOW`, one request (:meth:`_retrieved_many`)."""
        if not self.postings_in_replica:
            return self._retrieved_in_sql(conn, text, vector)
        return self._retrieved_many(conn, [text], np.asarray(vector)[None, :])[0]

    def _retrieved_many(self, conn: Any, texts: Sequence[str], vectors: np.ndarray) -> list[dict[str, np.ndarray]]:
        """Past :data:`EXACT_BELOW`: every skill's exact BM25 from the postings of the requests' terms (read while
        the requests were embedded, :meth:`prefetch`, else in one statement for all of them), then for each request
        one statement for the HNSW top list and the cosines of the BM25 top list (:func:`router.pgquery.dense_sql`),
        all of them sent in one round trip; the skills left out of both get :func:`indexes.fill`'s dense fill.
        Scored together (the no-skill sample of a commit, a batch of a server), each request's scores are the ones
        it gets alone."""
        from router import pgexamples, pgquery

        g = self.generation
        depth, ef_search = self.wanted()
        pending = getattr(self._pending, "read", None)
        if pending is not None and pending[0] == tuple(texts) and pending[1] == depth:
            lexical = pending[2].result()  # scored while the requests were embedded (prefetch)
        else:
            lexical = [(rows, extra, None) for rows, extra in self._lexical(texts, depth, conn)]
        outs: list[dict[str, np.ndarray]] = []
        sent: list[tuple[Any, ...]] = []
        with conn.pipeline():
            # no parallel workers or JIT for a statement of a few milliseconds
            conn.execute("SELECT set_config('hnsw.ef_search', %s, true), set_config('hnsw.iterative_scan', "
                         "'relaxed_order', true), set_config('max_parallel_workers_per_gather', '0', true), "
                         "set_config('jit', 'off', true)", (str(ef_search),))
            for (rows, extra, ahead), vector in zip(lexical, vectors):
                q = np.asarray(vector, dtype=np.float32)
                out = dict(rows)
                looked_up = () if ahead is not None else extra  # the BM25 top list's rows read ahead, or here
                cursor = conn.execute(pgquery.dense_sql(g, records=self.offer is not None),
                                      {"q": q, "g": g.id, "k": depth,
                                       "extra": "{" + ",".join(map(str, looked_up)) + "}"})
                example_cursor = pgexamples.query(conn, g, q) if g.has_examples and pgexamples.exact(g) else None
                sent.append((q, cursor, example_cursor, self._row_cursors(conn, q), ahead))
                outs.append(out)
            conn.commit()  # in the same round trip
        for out, (q, cursor, example_cursor, row_cursors, ahead) in zip(outs, sent):
            rows = cursor.fetchall()
            if not rows:
                raise StoreUnavailable(f"generation {g.id} of the index returned no candidates; the next request "
                                       f"reads the current generation")
            if ahead is not None:
                rows += ahead.rows(q, {r[0] for r in rows})
            if self.offer is not None:  # the candidates' catalogue rows, for the skills the routing will show
                self.offer([(r[0], r[-2], r[-1]) for r in rows if r[-1] is not None])
            self._row_scores(row_cursors, out)
            where, dense_values, mu, second, ceiling, dense, cut = self._dense_of(rows, q, depth)
            out["dense"] = dense
            self.cut += cut
            if g.has_examples:
                found: list[tuple[Any, ...]]
                if example_cursor is not None:  # every owner's best example and own cosine: exact moments
                    found = [(int(self._position[slot]), best, own) for slot, best, own in example_cursor.fetchall()]
                else:  # past pgexamples.EXACT_EXAMPLES: the candidates' best example only
                    found = [(int(at), r[3]) for at, r in zip(where.tolist(), rows) if r[3] is not None]
                out["examples"] = pgexamples.scores(found, dense, where, dense_values, mu * g.n, second * g.n,
                                                    ceiling) if found or example_cursor is not None else dense.copy()
        return outs

    def _dense_of(self, rows: Sequence[Sequence[Any]], q: np.ndarray, depth: int) -> tuple[Any, ...]:
        """From retrieval ``rows`` (slot, cosine, in the HNSW top list, ...): the candidates' positions, their
        cosines, the generation's mean and second moment of the cosine with ``q``, the top list's floor when it
        was full (None when it was not), and every skill's dense score with :func:`indexes.fill`'s fill, with the
        number of skills filled."""
        from indexes.fill import fill_unretrieved

        g = self.generation
        slots = np.array([r[0] for r in rows], dtype=np.int64)
        where = self._positions(slots)
        dense_values = np.array([r[1] for r in rows], dtype=np.float64)
        in_dense_top = np.array([r[2] for r in rows], dtype=bool)
        q64 = q.astype(np.float64)
        mu, second = float(g.mean @ q64), float(q64 @ g.second @ q64)
        ceiling = float(dense_values[in_dense_top].min()) if in_dense_top.sum() >= depth else None
        dense, cut = fill_unretrieved(g.n, where, dense_values, mu * g.n, second * g.n, ceiling)
        return where, dense_values, mu, second, ceiling, dense, cut

    def _retrieved_in_sql(self, conn: Any, text: str, vector: np.ndarray) -> dict[str, np.ndarray]:
        """One round trip, one statement (:func:`_retrieval_sql`): the top lists, their union, every candidate's
        exact score in every signal, and BM25's moments; the skills left out get :func:`indexes.fill`'s fill."""
        from indexes.fill import fill_unretrieved
        from router import pgexamples

        g = self.generation
        q = np.asarray(vector, dtype=np.float32)
        depth, ef_search = self.wanted()
        terms = self._terms(text)
        params: dict[str, Any] = {"q": q, "g": g.id, "k": depth, "terms": terms}
        for i, name in enumerate(g.fields):
            params.update({f"{key}{i}": value for key, value in self._bm25_params(name, terms).items()
                           if key not in ("terms", "g")})
        with conn.pipeline():
            # no nested loop over the BM25 scores of every matching skill: the planner cannot know how many
            # skills a request's terms match (a hash join, whatever it estimates)
            # and no parallel workers or JIT for a statement of a few milliseconds
            conn.execute("SELECT set_config('hnsw.ef_search', %s, true), set_config('hnsw.iterative_scan', "
                         "'relaxed_order', true), set_config('enable_nestloop', 'off', true), "
                         "set_config('max_parallel_workers_per_gather', '0', true), set_config('jit', 'off', true)",
                         (str(ef_search),))
            cursor = conn.execute(_retrieval_sql(g, len(g.fields)), params)
            example_cursor = pgexamples.query(conn, g, q) if g.has_examples and pgexamples.exact(g) else None
            row_cursors = self._row_cursors(conn, q)
            conn.commit()  # in the same round trip
        rows = cursor.fetchall()
        if not rows:
            raise StoreUnavailable(f"generation {g.id} of the index returned no candidates; the next request reads "
                                   f"the current generation")
        count = len(g.fields)
        where, dense_values, mu, second, ceiling, dense, cut = self._dense_of(rows, q, depth)
        out = {"dense": dense}
        self._row_scores(row_cursors, out)
        self.cut += cut
        for i, name in enumerate(g.fields):
            base = 3 + 5 * i
            values = np.array([r[base] or 0.0 for r in rows], dtype=np.float64)
            in_top = np.array([r[base + 1] for r in rows], dtype=bool)
            floor = float(values[in_top].min()) if in_top.sum() >= depth else 0.0
            total, total_sq = float(rows[0][base + 2]), float(rows[0][base + 3])
            if int(rows[0][base + 4]) == sum(r[base] is not None for r in rows):
                # every matching skill is a candidate: the others score exactly 0, whatever the last bit of the
                # moments (summed in another order than the candidates' scores) says
                total, total_sq = float(values.sum()), float(np.dot(values, values))
            out[name], _ = fill_unretrieved(g.n, where, values, total, total_sq, floor)
        if g.has_examples:
            found: list[tuple[Any, ...]]
            if example_cursor is not None:  # every owner's best example and own cosine: exact moments
                found = [(int(self._position[slot]), best, own) for slot, best, own in example_cursor.fetchall()]
            else:  # past pgexamples.EXACT_EXAMPLES: the candidates' best example only
                found = [(int(at), r[3 + 5 * count]) for at, r in zip(where.tolist(), rows)
                         if r[3 + 5 * count] is not None]
            out["examples"] = pgexamples.scores(found, dense, where, dense_values, mu * g.n, second * g.n, ceiling) \
                if found or example_cursor is not None else dense.copy()
        return out


def _retrieval_sql(g: Generation, fields: int) -> Any:
    """One request's retrieval past :data:`EXACT_BELOW` as one statement: the HNSW top ``%(k)s`` of the skills'
    vectors with their cosines (and the top of the example requests'), the BM25 top ``%(k)s`` of each field, and
    for each candidate of any list: (slot, cosine, in the dense top, then per field: score, in its top, sum and sum
    of squares of every skill's score, and how many skills match, then the best example cosine).

    BM25 is scored twice. Every skill sharing a term is scored once, its terms summed in whatever order the hash
    aggregate meets them (the top list and the moments, which the last bit of a sum does not change); then the
    candidates alone are scored as :func:`_bm25_sql` scores them, summed in request order, which is what the router
    reads (the in-process scores to the last bit). Only a candidate outside the dense top reads its vector by key
    (a lateral lookup: the only nested loop here)."""
    from psycopg import sql

    def live(alias: str) -> str:
        return _live(alias)

    parts = ["q AS (SELECT term, ord FROM unnest(%(terms)s::text[]) WITH ORDINALITY AS q(term, ord))",
             "qm AS (SELECT term, count(*)::float8 AS repeats FROM q GROUP BY term)",
             "dt AS MATERIALIZED (SELECT slot, -(embedding <#> %(q)s) AS cosine FROM {docs} WHERE " + live("") +
             " ORDER BY embedding <#> %(q)s LIMIT %(k)s)"]
    union = ["SELECT slot FROM dt"]
    if g.has_examples:
        parts.append("xt AS MATERIALIZED (SELECT slot FROM {examples} WHERE " + live("") + " ORDER BY embedding <#> "
                     "%(q)s LIMIT %(k)s)")
        union.append("SELECT slot FROM xt")

    def term_score(i: int, p: str, f: str) -> str:
        return (f"{f}.idf * ({p}.tf * %(k1p{i})s::float8 / ({p}.tf + %(k1{i})s::float8 * (%(one_b{i})s::float8 + "
                f"%(b{i})s::float8 * {p}.dl / %(avgdl{i})s::float8)))")

    for i in range(fields):
        parts += [
            # read where it is used (three times), cheaper than a materialised copy of every posting
            f"p{i} AS NOT MATERIALIZED (SELECT term, slot, tf::float8 AS tf, dl::float8 AS dl FROM {{postings}} WHERE "
            f"field = %(field{i})s AND term = ANY(%(terms)s) AND " + live("") + ")",
            f"f{i} AS MATERIALIZED (SELECT term, ln(1::float8 + ((%(n{i})s::float8 - count(*)::float8) + "
            f"0.5::float8) / (count(*)::float8 + 0.5::float8)) AS idf FROM p{i} GROUP BY term)",
            f"w{i} AS MATERIALIZED (SELECT f.term, f.idf, qm.repeats FROM f{i} f JOIN qm ON qm.term = f.term)",
            f"s{i} AS MATERIALIZED (SELECT p.slot, sum(w.repeats * " + term_score(i, "p", "w") + ") AS score "
            f"FROM p{i} p JOIN w{i} w ON w.term = p.term GROUP BY p.slot)",
            f"t{i} AS MATERIALIZED (SELECT slot FROM s{i} ORDER BY score DESC, slot LIMIT %(k)s)",
            f"m{i} AS (SELECT coalesce(sum(score), 0) AS total, coalesce(sum(score * score), 0) AS total_sq, "
            f"count(*) AS matched FROM s{i})",
        ]
        union.append(f"SELECT slot FROM t{i}")
    parts.append("c AS MATERIALIZED (" + " UNION ".join(union) + ")")
    columns = ["c.slot", "coalesce(dt.cosine, d.cosine)", "dt.slot IS NOT NULL"]
    joins = ["LEFT JOIN dt ON dt.slot = c.slot",
             "LEFT JOIN LATERAL (SELECT -(embedding <#> %(q)s) AS cosine FROM {docs} WHERE dt.slot IS NULL AND "
             "slot = c.slot AND " + live("") + " LIMIT 1) d ON true"]
    for i in range(fields):
        parts.append(f"e{i} AS (SELECT p.slot, sum(" + term_score(i, "p", "f") + " ORDER BY q.ord) AS score FROM "
                     f"p{i} p JOIN c ON c.slot = p.slot JOIN f{i} f ON f.term = p.term JOIN q ON q.term = p.term "
                     f"GROUP BY p.slot)")
        columns += [f"e{i}.score", f"c.slot IN (SELECT slot FROM t{i})", f"m{i}.total", f"m{i}.total_sq",
                    f"m{i}.matched"]
        joins += [f"LEFT JOIN e{i} ON e{i}.slot = c.slot", f"CROSS JOIN m{i}"]
    if g.has_examples:
        columns.append("x.best")
        joins.append("LEFT JOIN LATERAL (SELECT max(-(e.embedding <#> %(q)s)) AS best FROM {examples} e WHERE "
                     "e.slot = c.slot AND " + live("e") + ") x ON true")
    text = "WITH " + ", ".join(parts) + " SELECT " + ", ".join(columns) + " FROM c " + " ".join(joins)
    return sql.SQL(text).format(docs=g.table("docs"), examples=g.table("examples"), postings=g.table("postings"))


def _bm25_sql(postings: Any) -> Any:
    """Each skill's BM25 score over the request's tokens, from the live postings' term frequencies and document
    lengths with the generation's document count and average length: the float64 expression of
    :func:`indexes.bm25.fit_counts` (Lucene idf), the terms summed in request order (as :func:`_retrieval_sql`
    computes it for a top list)."""
    from psycopg import sql

    text = (
        "WITH q AS (SELECT term, ord FROM unnest(%(terms)s::text[]) WITH ORDINALITY AS q(term, ord)), "
        "p AS (SELECT term, slot, tf::float8 AS tf, dl::float8 AS dl FROM {p} WHERE field = %(field)s AND term = "
        "ANY(%(terms)s) AND " + _live() + "), "
        "f AS (SELECT term, ln(1::float8 + ((%(n)s::float8 - count(*)::float8) + 0.5::float8) / "
        "(count(*)::float8 + 0.5::float8)) AS idf FROM p GROUP BY term) "
        "SELECT p.slot, sum(f.idf * (p.tf * %(k1p)s::float8 / (p.tf + %(k1)s::float8 * (%(one_b)s::float8 + "
        "%(b)s::float8 * p.dl / %(avgdl)s::float8))) ORDER BY q.ord) FROM p JOIN f ON f.term = p.term "
        "JOIN q ON q.term = p.term GROUP BY p.slot"
    )
    return sql.SQL(text).format(p=postings)


# -- the router over the database -----------------------------------------------------------------------------------
_DATABASES: dict[str, Database] = {}
_DATABASES_LOCK = threading.Lock()


def database(url: str) -> Database:
    """The process's one pool for ``url`` (a server's reloads share it)."""
    with _DATABASES_LOCK:
        if url not in _DATABASES:
            _DATABASES[url] = Database(url)
        return _DATABASES[url]


class PgStore:
    """The index store (:class:`router.index.IndexStore`) of an index in the database at ``url``: a router's
    signals are its library's current generation there (:class:`PgSignals`; nothing is built in process, no index
    file is read or written), and the passage index, which the database does not hold, is built in memory beside
    them (:func:`router.index.beside`). ``Router.from_spec(spec, config, store=PgStore(url))``."""

    def __init__(self, url: str, db: Database | None = None) -> None:
        self.url = url
        self.database = db or database(url)

    def index_folder(self, spec: LibrarySpec) -> str | None:
        return None

    def build(self, source: LibrarySource, *, persist: bool, progress: bool) -> tuple[Scorer, BuildReport]:
        from router.index import beside
        from router.signals import BuildReport

        signals = PgSignals.current(self.database, source.spec.key, source)
        scorer = beside(signals, source, ("passages",))
        return scorer, BuildReport(chance=kept_chance(signals.generation, scorer, source.encoder.model_id))


def cmd_index_database(router: LibrarySource, store: PgStore, *, json_output: bool = False) -> int:
    """``skill-router index --index-url``: migrate, embed what is missing, commit a generation, print a summary."""
    db = store.database
    db.probe()
    start = time.perf_counter()
    tty = sys.stderr.isatty()
    report = publish(db, router, router.spec.key,
                     progress=(lambda line: print(f"\r{line}", end="", file=sys.stderr, flush=True)) if tty else None)
    if tty and report.embedded:
        print(file=sys.stderr)
    elapsed = time.perf_counter() - start
    summary = {"skills": len(router.skills), "embedded": report.embedded, "reused": report.reused,
               "generation": report.generation or None, "unchanged": report.unchanged,
               "rows_written": report.written, "rows_removed": report.removed, "incremental": report.incremental,
               "vectors_written": report.vectors_written,
               "index": redacted(db.url), "model": router.encoder.model_id, "seconds": round(elapsed, 3)}
    if json_output:
        print(json.dumps(summary, indent=2))
    elif report.unchanged:
        print(f"the index of {summary['skills']} skills in {summary['index']} is current (nothing to do)")
    else:
        print(f"indexed {summary['skills']} skills in {elapsed:.2f} s ({report.embedded} texts embedded, "
              f"{report.reused} reused) -> {summary['index']} generation {report.generation}")
    return 0


class Listener:
    """Calls ``on_change`` when a new generation of any library is committed (``LISTEN``), reconnecting while the
    database is away; a daemon thread, stopped by :meth:`stop`."""

    def __init__(self, url: str, on_change: Callable[[str], None]) -> None:
        self.url = url
        self.on_change = on_change
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="skill-router-listen", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        psycopg = _require()
        while not self._stop.is_set():
            try:
                with psycopg.connect(self.url, autocommit=True, connect_timeout=int(CONNECT_TIMEOUT_S)) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self.on_change("connected")  # a commit while we were away is picked up now
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=0.5, stop_after=1):
                            self.on_change(note.payload)
            except psycopg.Error as exc:
                print(f"note: waiting for the index database ({_first_line(exc)})", file=sys.stderr)
                self._stop.wait(1.0)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def follow(service: Any, url: str) -> Listener:
    """Reload ``service`` (a :class:`router.serve.service.Service`) whenever a generation is committed, and once
    after the database comes back (a commit made meanwhile); the listener stops when the service closes."""
    connects = 0

    def changed(payload: str) -> None:
        nonlocal connects
        if payload == "connected":
            connects += 1
            if connects == 1:
                return
        if service.ready:
            service.reload()

    listener = Listener(url, changed)
    close = service.close

    def closing() -> None:
        listener.stop()
        close()

    service.close = closing
    return listener


# -- a replica's catalogue: ids and names in memory, every other field read from the database when used ------------
ROW_CACHE = 4096  # catalogue rows a replica keeps (the skills it showed lately)
READ_AHEAD = 512  # rows read at once when the skills are walked in order (GET /v1/skills, a tool listing)
OFFERED = 8192  # candidates' record texts a thread keeps until its routing's shown skills are read


class StoredRows:
    """The catalogue rows of one epoch, read by (slot, generation of birth) when a skill's fields are used, the
    last :data:`ROW_CACHE` of them kept."""

    def __init__(self, db: Database, table: Any) -> None:
        self.db = db
        self.table = table
        self._cache: OrderedDict[tuple[int, int], dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()
        self._last = -2
        self.reads = 0
        self._offered = threading.local()  # this thread's routing's candidates' record texts, by (slot, born)

    def offer(self, records: Sequence[tuple[int, int, str]]) -> None:
        """The record texts of a routing's candidates ((slot, generation of birth, text), read by its dense
        statement), kept for this thread until its next :meth:`warm`, which parses those of the skills shown
        instead of reading them (at most :data:`OFFERED` are kept: a thread that scores without showing drops
        them)."""
        offered: dict[tuple[int, int], str] | None = getattr(self._offered, "texts", None)
        if offered is None or len(offered) + len(records) > OFFERED:
            offered = self._offered.texts = {}
        for slot, born, text in records:
            offered[(int(slot), int(born))] = text

    def record(self, slot: int, born: int) -> dict[str, Any]:
        key = (slot, born)
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.move_to_end(key)
                return found
            ahead = slot == self._last + 1
            self._last = slot
        if ahead:
            query = _sql("SELECT slot, born, record FROM {d} WHERE slot >= %(s)s AND slot < %(e)s", d=self.table)
            bounds = {"s": slot, "e": slot + READ_AHEAD}
        else:
            query = _sql("SELECT slot, born, record FROM {d} WHERE slot = %(s)s AND born = %(b)s", d=self.table)
            bounds = {"s": slot, "b": born}
        self._keep(query, bounds)
        with self._lock:
            found = self._cache.get(key)
        if found is None:
            raise StoreUnavailable(f"skill row {slot} of generation {born} is no longer in {redacted(self.db.url)}: "
                                   f"the next request reads the current generation")
        return found

    def warm(self, keys: Sequence[tuple[int, int]]) -> None:
        """Read the rows of ``keys`` ((slot, generation of birth)) that are not kept, in one statement: the
        skills a routing shows, before anything renders them (one round trip instead of one a skill)."""
        offered: dict[tuple[int, int], str] = getattr(self._offered, "texts", None) or {}
        self._offered.texts = None
        with self._lock:
            missing = list(dict.fromkeys(k for k in keys if k not in self._cache))
            self._put((key, json.loads(offered[key])) for key in missing if key in offered)
            missing = [k for k in missing if k not in offered]
        if not missing:
            return
        query = _sql("SELECT d.slot, d.born, d.record FROM {d} d JOIN unnest(%(s)s::int4[], %(b)s::int8[]) AS k(slot, "
                     "born) ON d.slot = k.slot AND d.born = k.born", d=self.table)
        self._keep(query, {"s": [k[0] for k in missing], "b": [k[1] for k in missing]})

    def _keep(self, query: Any, params: Mapping[str, Any]) -> None:
        """Run ``query`` (rows of slot, generation of birth, record) in one round trip with its commit and keep what
        it read, the oldest kept rows dropped past :data:`ROW_CACHE` (or :data:`READ_AHEAD`)."""
        with self.db.connection() as conn, conn.pipeline():
            cursor = conn.execute(query, params)
            conn.commit()  # in the same round trip
        rows = cursor.fetchall()
        self.reads += 1
        with self._lock:
            self._put(((int(slot), int(born)), json.loads(record)) for slot, born, record in rows)

    def _put(self, records: Iterable[tuple[tuple[int, int], dict[str, Any]]]) -> None:
        """Keep ``records`` ((slot, generation of birth), parsed row) as the newest, the oldest kept rows dropped
        past :data:`ROW_CACHE` (or :data:`READ_AHEAD`); the caller holds the lock."""
        for key, record in records:
            self._cache[key] = record
            self._cache.move_to_end(key)
        while len(self._cache) > max(ROW_CACHE, READ_AHEAD):
            self._cache.popitem(last=False)


def _warm(routings: Sequence[Any]) -> None:
    """The catalogue rows of the skills ``routings`` show, read together (:meth:`StoredRows.warm`)."""
    by_table: dict[int, tuple[StoredRows, list[tuple[int, int]]]] = {}
    for routing in routings:
        for skill in routing.shown:
            if isinstance(skill, StoredSkill):
                by_table.setdefault(id(skill._rows), (skill._rows, []))[1].append((skill._slot, skill._born))
    for rows, keys in by_table.values():
        rows.warm(keys)


def _stored_field(name: str, convert: Callable[[Any], Any] = lambda v: v) -> property:
    def read(self: StoredSkill) -> Any:
        return convert(self._rows.record(self._slot, self._born)[name])

    return property(read, doc=f"the skill's {name}, read from its catalogue row")


class StoredSkill(Skill):
    """A skill of a replica's catalogue: its id and name in memory, its other fields read from its row (of one
    generation: a replica's router never sees a mix) when something shows or loads it."""

    description = _stored_field("description")
    path = _stored_field("path")
    body = _stored_field("body")
    metadata = _stored_field("metadata")
    index_description = _stored_field("index_description")
    examples = _stored_field("examples", tuple)
    os_path = _stored_field("os_path")

    @classmethod
    def at(cls, rows: StoredRows, slot: int, born: int, skill_id: str, name: str) -> StoredSkill:
        skill = object.__new__(cls)
        for attribute, value in (("name", name), ("id", skill_id), ("_rows", rows), ("_slot", slot),
                                 ("_born", born)):
            object.__setattr__(skill, attribute, value)
        return skill

    _rows: StoredRows
    _slot: int
    _born: int


class _ByKey(Mapping[str, Skill]):
    """key -> the first skill with that key, over a registry's skills in slot order: the read-only mapping
    :class:`router.registry.SkillRegistry` keeps as a dict."""

    def __init__(self, index: KeyIndex, skills: Sequence[Skill]) -> None:
        self.index, self.skills = index, skills

    def __getitem__(self, key: str) -> Skill:
        position = self.index.first(key)
        if position < 0:
            raise KeyError(key)
        return self.skills[position]

    def __iter__(self) -> Iterator[str]:
        return (k for p, k in enumerate(self.index.keys) if self.index.first(k) == p)

    def __len__(self) -> int:
        return self.index.distinct


class StoredRegistry(SkillRegistry):
    """A registry over :class:`StoredSkill` rows (already unique: the writer's registry refused repeats), found
    by id and name through :class:`KeyIndex` instead of two dicts (7 MB at 100,000 rows)."""

    def __init__(self, skills: tuple[StoredSkill, ...], ids: KeyIndex | None = None,
                 names: KeyIndex | None = None) -> None:
        self._ids = ids if ids is not None else KeyIndex.build(tuple(s.id for s in skills))
        self._names = names if names is not None else KeyIndex.build(tuple(s.name for s in skills))
        self._by_id = _ByKey(self._ids, skills)  # type: ignore[assignment]
        self._by_name = _ByKey(self._names, skills)  # type: ignore[assignment]
        self._paths = set()
        self._snapshot = skills
        self.discovery = None

    def id_index(self) -> KeyIndex:
        return self._ids  # the same keys in the same places: not made again

    def patched(self, generation: Generation, previous: Generation) -> StoredRegistry:
        """This registry for ``generation``, whose rows are ``previous``'s with some edited in place (same slots,
        ids and names): the edited rows' skills are new, every other skill is this registry's own, and the ids'
        and names' index is this one's."""
        skills = list(cast("tuple[StoredSkill, ...]", self._snapshot))
        for i in np.flatnonzero(generation.born != previous.born).tolist():
            old = skills[i]
            skills[i] = StoredSkill.at(old._rows, old._slot, int(generation.born[i]), old.id, old.name)
        return StoredRegistry(tuple(skills), self._ids, self._names)


class Replica:
    """Routers over the database's catalogue for ``serve --index-url``: nothing is read from the skill folders or
    the catalogue file; each new generation is read as the rows that changed since the last one (the rest of the
    catalogue, its name table and tie order are shared)."""

    def __init__(self, spec: LibrarySpec, config: RouterConfig, db: Database) -> None:
        self.spec, self.config, self.db = spec, config, db
        self.last: Router | None = None
        self._lock = threading.Lock()

    def __call__(self, encoder: Any = None) -> Router:
        with self._lock:
            if encoder is None and self.last is not None:
                return self.last
            self.last = self._next(encoder if encoder is not None else None)
            return self.last

    def probe(self) -> None:
        """Read the header of the library's current generation (not its rows, which the first router reads): a
        wrong URL, or a database without this library's index, fails here (before a server listens)."""
        with self.db.connection() as conn:
            generation_header(conn, self.spec.key, self.db.url)

    def _next(self, encoder: Any) -> Router:
        from indexes.tokenize import Tokenizer

        from router import passages

        if self.config.embeds_bodies:  # a replica would fuse without the signal its config weighs
            raise ConfigError(NO_BODY_EMBEDDINGS)
        before = self.last
        old: PgSignals | None = before.signals if before is not None else None  # type: ignore[assignment]
        with self.db.connection() as conn:
            generation = read_generation(conn, self.spec.key, self.db.url, old.generation if old else None)
        if before is not None and old is not None and generation is old.generation:
            if encoder is None or before.encoder is encoder:
                return before
        same_places = before is not None and old is not None and generation.slots is old.generation.slots and \
            generation.ids is old.generation.ids and generation.names is old.generation.names
        if same_places and old is not None and generation is old.generation:  # another encoder, the same rows
            assert before is not None
            registry = cast(StoredRegistry, before.registry)
        elif same_places:  # rows edited in place: only their skills are new, the registry is patched
            assert before is not None and old is not None
            registry = cast(StoredRegistry, before.registry).patched(generation, old.generation)
        else:
            if old is not None and old.generation.epoch == generation.epoch:
                assert before is not None
                previous = cast("tuple[StoredSkill, ...]", before.skills)
                rows = previous[0]._rows if previous else StoredRows(self.db, generation.table("docs"))
                known = {(s._slot, s._born): s for s in previous}
            else:
                rows, known = StoredRows(self.db, generation.table("docs")), {}
            registry = StoredRegistry(tuple(
                known.get((slot, born)) or StoredSkill.at(rows, slot, born, skill_id, name)
                for slot, born, skill_id, name in zip(generation.slots.tolist(), generation.born.tolist(),
                                                      generation.ids, generation.names)),
                KeyIndex.build(generation.ids), KeyIndex.build(generation.names))
        from router.index import LibraryIndex, LibrarySource, beside
        from router.signals import BuildReport

        source = LibrarySource(self.spec, self.config, registry, self.spec.profile,
                               chosen_encoder=encoder).chosen()
        scorer = PgSignals(self.db, generation, Tokenizer.from_dict(generation.params["tokenizer"]), self.config.k,
                           rows=scored_rows(generation, self.config, self.db.url))
        stored = next(iter(registry.skills), None)
        if isinstance(stored, StoredSkill):  # the shown skills' rows come with the dense statement
            scorer.offer = stored._rows.offer
        signals: Scorer = scorer
        if generation.n <= passages.MAX_SKILLS:  # as in process: past it no passage index, so no body is read
            signals = beside(signals, source, ("passages",))
        report = BuildReport(chance=kept_chance(generation, signals, source.encoder.model_id))
        index = LibraryIndex(source, signals, None, PgStore(self.db.url, self.db), report)
        return _replica_router()(index, same_places=before if same_places else None)


def _replica_router() -> type:
    """:class:`router.routing.Router` whose routings read the rows of the skills they show in one statement, those
    the dense statement did not bring with the candidates (:meth:`StoredRows.offer`)."""
    global _REPLICA_ROUTER
    if _REPLICA_ROUTER is None:
        from router.routing import Router

        class ReplicaRouter(Router):
            def route_many(self, *args: Any, **kwargs: Any) -> Any:
                routings = super().route_many(*args, **kwargs)
                _warm(routings)
                return routings

        _REPLICA_ROUTER = ReplicaRouter
    return _REPLICA_ROUTER


_REPLICA_ROUTER: type | None = None
