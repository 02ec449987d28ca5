"""The index in PostgreSQL + pgvector: one table set per library, generations committed in one transaction.

Selected by ``--index-url postgresql://...`` (installed with the ``postgres`` extra: psycopg 3, psycopg-pool and
pgvector). The file store (:mod:`router.store`) stays the default. Only candidate retrieval and the scores of the
candidates come from the database; fusion, the ranking rules, abstention and rendering stay in the router, which
calls :meth:`PgSignals.score` exactly where it calls :meth:`router.signals.Signals.score`.

Schema (``SCHEMA_VERSION``; :func:`migrate` brings a database up to it and only ``skill-router index`` calls it, a
reader that finds another version says to run ``index``)::

    skill_router_schema       (version)                                  one row
    skill_router_libraries    (key, prefix, generation, signature, ...)  one row per library key (roots + profile)
    skill_router_generations  (id, key, n, signature, params, moments)   the committed generations
    <prefix>_embeddings       (content_hash, embedding vector(dim))      the embedding cache, kept by content
    <prefix>_g<id>_docs       (position, skill_id, embedding)            one generation: each skill's vector,
    <prefix>_g<id>_examples   (owner, embedding)                         every example request's vector,
    <prefix>_g<id>_postings   (field, term, position, weight)            BM25 weights (field 0 text, 1 body)

A build embeds, in batches over the ONNX encoder, only the texts whose content hash the cache lacks, and commits
each batch (a build killed while embedding resumes where it stopped). The generation itself (its tables, the
HNSW index, the library's pointer and a ``NOTIFY``) is one transaction: a writer killed before its commit leaves
the previous generation serving, and a reader reads one generation or the next, never a mix.

Scores. Dense: cosine = inner product of unit vectors (``<#>`` is its negative). Lexical: the project's BM25
(:mod:`indexes.bm25`, Lucene idf) as the weight of each (term, skill), computed by :class:`indexes.BM25Index`
itself, so a skill's score is the sum of its postings' weights over the request's tokens. Below
``EXACT_BELOW`` skills every skill's scores are read (exact, as the file store). From there on the database returns
top lists (HNSW with ``ef_search`` from the candidate depth, BM25 ordered in SQL) plus, per signal, the sum and sum
of squares of every skill's score (BM25 in the same query, dense from the generation's first and second moments of
the vectors). Every candidate of any list gets its exact score in every signal; the others get the two-point fill
of :func:`indexes.fill.fill_unretrieved`, whose mean and variance are those of the skills left out, so every
candidate's z-score (the default fusion) is the exact one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from router.errors import ConfigError, SkillRouterError
from router.store import text_key

if TYPE_CHECKING:
    from router.index import LibrarySource, Scorer
    from router.signals import BuildReport
    from router.spec import LibrarySpec

SCHEMA_VERSION = 1
#: Libraries with fewer skills are scored exactly (every skill's scores read); HNSW top lists from here on.
EXACT_BELOW = 5000
#: Candidates per signal above EXACT_BELOW: at least this many, and at least 20 times the routed k.
MIN_DEPTH = 100
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
                                   kwargs={"connect_timeout": int(CONNECT_TIMEOUT_S), "autocommit": False},
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
MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        "CREATE EXTENSION IF NOT EXISTS vector",
        "CREATE TABLE IF NOT EXISTS skill_router_schema (version integer NOT NULL)",
        "CREATE TABLE IF NOT EXISTS skill_router_libraries (key text PRIMARY KEY, prefix text NOT NULL UNIQUE, "
        "dim integer NOT NULL, generation bigint, signature text, updated timestamptz NOT NULL DEFAULT now())",
        "CREATE TABLE IF NOT EXISTS skill_router_generations (id bigserial PRIMARY KEY, key text NOT NULL "
        "REFERENCES skill_router_libraries(key), n integer NOT NULL, signature text NOT NULL, params jsonb NOT NULL, "
        "moments bytea NOT NULL, created timestamptz NOT NULL DEFAULT now())",
    ),
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


# -- what a generation holds ----------------------------------------------------------------------------------------
def library_signature(router: LibrarySource) -> str:
    """What a generation is built from: every skill's fields that its texts are made of, in order, with the
    parameters that make texts of them, the profile and the model (cheaper than the texts themselves: a replica
    checks it on every reload)."""
    config = router.config
    digest = hashlib.sha256(json.dumps([SCHEMA_VERSION, router.encoder.model_id, router.profile.name, config.body,
                                        config.body_tokens, config.dense_name]).encode())
    for s in router.skills:  # one row at a time: no list of 100,000 rows for the collector to walk
        row = "\0".join((s.id, s.name, s.description, s.index_description, s.body, *s.examples))
        digest.update(f"{len(s.examples)}\0{len(row)}\0{row}\1".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


@dataclass(frozen=True)
class Generation:
    """One committed generation of one library, as a reader holds it (tables, size, moments of the vectors)."""

    id: int
    prefix: str
    ids: tuple[str, ...]
    signature: str
    params: Mapping[str, Any]
    mean: np.ndarray  # (dim,) mean of the skills' vectors
    second: np.ndarray  # (dim, dim) mean of v v^T

    @property
    def n(self) -> int:
        return len(self.ids)

    def table(self, kind: str) -> Any:
        return _ident(self.prefix, f"g{self.id}", kind)

    @property
    def has_examples(self) -> bool:
        return bool(self.params.get("examples"))

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(self.params.get("fields", ("bm25",)))


def _moments_bytes(vectors: np.ndarray) -> bytes:
    v = np.asarray(vectors, dtype=np.float64)
    n = max(len(v), 1)
    return np.concatenate([v.sum(axis=0) / n, (v.T @ v).ravel() / n]).astype(np.float64).tobytes()


def _moments(raw: bytes, dim: int) -> tuple[np.ndarray, np.ndarray]:
    values = np.frombuffer(raw, dtype=np.float64)
    return values[:dim].copy(), values[dim:].reshape(dim, dim).copy()


def read_generation(conn: Any, key: str, url: str) -> Generation:
    check_schema(conn, url)
    row = conn.execute("SELECT l.prefix, l.dim, g.id, g.signature, g.params, g.moments FROM skill_router_libraries l "
                       "JOIN skill_router_generations g ON g.id = l.generation WHERE l.key = %s", (key,)).fetchone()
    if row is None:
        raise ConfigError(f"the database {redacted(url)} holds no index of this library: run 'skill-router index "
                          f"--index-url ...' with the same --skills/--catalog and --profile first")
    prefix, dim, gen_id, signature, params, moments = row
    ids = conn.execute(_sql("SELECT skill_id FROM {t} ORDER BY position", t=_ident(prefix, f"g{gen_id}", "docs"))
                       ).fetchall()
    mean, second = _moments(bytes(moments), int(dim))
    return Generation(int(gen_id), prefix, tuple(r[0] for r in ids), signature, params, mean, second)


# -- writing --------------------------------------------------------------------------------------------------------
@dataclass
class PublishReport:
    generation: int = 0
    embedded: int = 0
    reused: int = 0
    seconds_embedding: float = 0.0
    seconds_commit: float = 0.0
    unchanged: bool = False


def publish(db: Database, router: LibrarySource, key: str, *, progress: Callable[[str], None] | None = None,
            batch: int = EMBED_BATCH, keep: int = 2, after_embedding: Callable[[], None] | None = None
            ) -> PublishReport:
    """Build the library's index in the database: migrate, embed what the cache lacks (committed batch by batch),
    then commit a new generation in one transaction and notify the readers. ``keep`` generations are kept (the
    new one and the one before it, which readers that have not swapped yet still read)."""
    from indexes import BM25Index

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
    with db.connection() as conn:
        current = conn.execute("SELECT signature FROM skill_router_libraries WHERE key = %s", (key,)).fetchone()[0]
    if current == signature:
        report.unchanged = True
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
    report.reused = len(wanted) - len(missing)
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
            progress(f"embedded {report.reused + report.embedded:,} of {len(wanted):,} texts")
    report.seconds_embedding = time.perf_counter() - start
    if after_embedding is not None:
        after_embedding()

    start = time.perf_counter()
    ids = [s.id for s in skills]
    lexical = {"bm25": BM25Index.from_texts(ids, router.index_texts())}
    bodies = router.body_texts()
    if any(t.strip() for t in bodies):
        lexical["body_bm25"] = BM25Index.from_texts(ids, bodies)
    with db.connection() as conn:
        register_vector(conn)
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (key,))
        gen_id = conn.execute("SELECT nextval(pg_get_serial_sequence('skill_router_generations', 'id'))"
                              ).fetchone()[0]
        docs, examples, postings = (_ident(prefix, f"g{gen_id}", kind) for kind in ("docs", "examples", "postings"))
        cache = _ident(prefix, "embeddings")
        staged = _ident(prefix, f"g{gen_id}", "staged")
        conn.execute(_sql("CREATE TEMP TABLE {s} (position integer, skill_id text, content_hash text) ON COMMIT DROP",
                          s=staged))
        with conn.cursor().copy(_sql("COPY {s} FROM STDIN", s=staged)) as copy:
            for position, (skill_id, content) in enumerate(zip(ids, doc_keys)):
                copy.write_row((position, skill_id, content))
        conn.execute(_sql("CREATE TABLE {d} AS SELECT s.position, s.skill_id, e.embedding FROM {s} s JOIN {c} e "
                          "ON e.content_hash = s.content_hash", d=docs, s=staged, c=cache))
        conn.execute(_sql("ALTER TABLE {d} ADD PRIMARY KEY (position)", d=docs))
        conn.execute(_sql("TRUNCATE {s}", s=staged))
        with conn.cursor().copy(_sql("COPY {s} FROM STDIN", s=staged)) as copy:
            for (owner, _), content in zip(pairs, example_keys):
                copy.write_row((owner, "", content))
        conn.execute(_sql("CREATE TABLE {x} AS SELECT s.position AS owner, e.embedding FROM {s} s JOIN {c} e "
                          "ON e.content_hash = s.content_hash", x=examples, s=staged, c=cache))
        conn.execute(_sql("CREATE INDEX ON {x} (owner)", x=examples))
        conn.execute(_sql("CREATE TABLE {p} (field smallint NOT NULL, term text NOT NULL, position integer NOT NULL, "
                          "weight double precision NOT NULL)", p=postings))
        with conn.cursor().copy(_sql("COPY {p} FROM STDIN WITH (FORMAT BINARY)", p=postings)) as copy:
            copy.set_types(["int2", "text", "int4", "float8"])
            for name, index in lexical.items():
                for term, position, weight in _postings(index):
                    copy.write_row((FIELDS[name], term, position, weight))
        conn.execute(_sql("CREATE INDEX ON {p} (field, term)", p=postings))
        n = len(ids)
        if n >= EXACT_BELOW:
            conn.execute("SET LOCAL maintenance_work_mem = '512MB'")
            conn.execute(_sql("CREATE INDEX ON {d} USING hnsw (embedding vector_ip_ops)", d=docs))
            if pairs:
                conn.execute(_sql("CREATE INDEX ON {x} USING hnsw (embedding vector_ip_ops)", x=examples))
        rows = conn.execute(_sql("SELECT embedding FROM {d} ORDER BY position", d=docs)).fetchall()
        vectors = np.array([r[0].to_numpy() for r in rows], dtype=np.float32).reshape(n, dim)
        params = {"model": model, "dim": dim, "examples": len(pairs), "fields": list(lexical),
                  "tokenizer": lexical["bm25"].tokenizer.to_dict(), "profile": router.profile.name}
        conn.execute("INSERT INTO skill_router_generations (id, key, n, signature, params, moments) VALUES "
                     "(%s, %s, %s, %s, %s, %s)", (gen_id, key, n, signature, json.dumps(params),
                                                  _moments_bytes(vectors)))
        conn.execute("UPDATE skill_router_libraries SET generation = %s, signature = %s, updated = now() "
                     "WHERE key = %s", (gen_id, signature, key))
        old = conn.execute("SELECT id FROM skill_router_generations WHERE key = %s AND id < %s ORDER BY id DESC "
                           "OFFSET %s", (key, gen_id, max(keep - 1, 0))).fetchall()
        for (old_id,) in old:
            for kind in ("docs", "examples", "postings"):
                conn.execute(_sql("DROP TABLE IF EXISTS {t}", t=_ident(prefix, f"g{old_id}", kind)))
            conn.execute("DELETE FROM skill_router_generations WHERE id = %s", (old_id,))
        conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, json.dumps({"key": key, "generation": gen_id})))
    report.generation = int(gen_id)
    report.seconds_commit = time.perf_counter() - start
    return report


def _literal(value: int) -> Any:
    from psycopg import sql

    return sql.SQL(str(int(value)))


def _postings(index: Any) -> Iterator[tuple[str, int, float]]:
    """(term, skill position, BM25 weight) of every posting of a built :class:`indexes.BM25Index`."""
    weights = index._weights
    if np.any(index._term_constant):
        raise ConfigError("the PostgreSQL store keeps BM25 with a zero per-term constant (the lucene and okapi "
                          "variants), not BM25+")
    vocabulary = index.vocabulary
    indptr, indices, data = weights.indptr, weights.indices, weights.data
    for row, term in enumerate(vocabulary):
        for j in range(indptr[row], indptr[row + 1]):
            yield term, int(indices[j]), float(data[j])


# -- reading --------------------------------------------------------------------------------------------------------
class PgSignals:
    """The signals of one library read from the database: :meth:`score` returns what
    :meth:`router.signals.Signals.score` returns (one score per skill and signal), computed by the database."""

    def __init__(self, db: Database, generation: Generation, tokenizer: Any, k: int = 5) -> None:
        self.db = db
        self.generation = generation
        self.tokenizer = tokenizer
        self.depth = max(MIN_DEPTH, 20 * k)
        self.cut = 0  # requests whose fill was cut at the lowest retrieved score (see indexes.fill)

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
        return cls(db, generation, Tokenizer.from_dict(generation.params["tokenizer"]), router.config.k)

    @property
    def ids(self) -> tuple[str, ...]:
        return self.generation.ids

    @property
    def has_examples(self) -> bool:
        return self.generation.has_examples

    def score(self, texts: Sequence[str], vectors: np.ndarray) -> dict[str, np.ndarray]:
        g = self.generation
        names = ["bm25", "dense"] + (["examples"] if g.has_examples else []) + \
            [f for f in g.fields if f != "bm25"]
        out = {name: np.zeros((len(texts), g.n)) for name in names}
        if not len(texts):
            return out
        from psycopg import errors

        for attempt in range(2):  # a pooled connection the server closed (a restart) fails once, then is replaced
            try:
                with self.db.connection() as conn:
                    for row, (text, vector) in enumerate(zip(texts, vectors)):
                        scores = self._exact(conn, text, vector) if g.n < EXACT_BELOW else \
                            self._retrieved(conn, text, vector)
                        for name in names:
                            out[name][row] = scores[name]
                return out
            except errors.UndefinedTable:
                raise StoreUnavailable("the index generation this router read was replaced twice while it was "
                                       "serving; the next request reads the new one") from None
            except StoreUnavailable:
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def _terms(self, text: str) -> list[str]:
        """The request's tokens, repeats included, in order: summed in this order, as :class:`indexes.BM25Index`
        sums them (so equal BM25 scores stay equal and ties break as they do in process)."""
        return list(self.tokenizer(text))

    def _exact(self, conn: Any, text: str, vector: np.ndarray) -> dict[str, np.ndarray]:
        g = self.generation
        q = np.asarray(vector, dtype=np.float32)
        dense = np.array(conn.execute(_sql("SELECT array_agg(-(embedding <#> %s) ORDER BY position) FROM {d}",
                                           d=g.table("docs")), (q,)).fetchone()[0], dtype=np.float64)
        out = {"dense": dense}
        terms = self._terms(text)
        for name in g.fields:
            values = np.zeros(g.n)
            for position, value in conn.execute(_BM25_ALL.format(p=g.table("postings")),
                                                (terms, FIELDS[name])):
                values[position] = value
            out[name] = values
        if g.has_examples:
            best = dense.copy()
            for owner, value in conn.execute(_sql("SELECT owner, max(-(embedding <#> %s)) FROM {x} GROUP BY owner",
                                                  x=g.table("examples")), (q,)):
                best[owner] = max(best[owner], value)
            out["examples"] = best
        return out

    def _retrieved(self, conn: Any, text: str, vector: np.ndarray) -> dict[str, np.ndarray]:
        """Two pipelined round trips: the top lists (and BM25's moments), then every candidate's exact scores."""
        from indexes.fill import fill_unretrieved
        from router import pgexamples

        g = self.generation
        q = np.asarray(vector, dtype=np.float32)
        depth = self.depth
        terms = self._terms(text)
        with conn.pipeline():
            conn.execute("SELECT set_config('hnsw.ef_search', %s, true), set_config('hnsw.iterative_scan', "
                         "'relaxed_order', true)", (str(min(1000, max(40, 2 * depth))),))
            dense_cursor = conn.execute(_sql("SELECT position, -(embedding <#> %s) FROM {d} ORDER BY embedding <#> %s "
                                             "LIMIT %s", d=g.table("docs")), (q, q, depth))
            lexical_cursors = {name: conn.execute(_BM25_TOP.format(p=g.table("postings")),
                                                  (terms, FIELDS[name], depth)) for name in g.fields}
            example_cursor = conn.execute(_sql("SELECT owner FROM {x} ORDER BY embedding <#> %s LIMIT %s",
                                               x=g.table("examples")), (q, depth)) if g.has_examples else None
        dense_top = dense_cursor.fetchall()
        lexical_top: dict[str, list[tuple[int, float]]] = {}
        lexical_moments: dict[str, tuple[float, float]] = {}
        for name, cursor in lexical_cursors.items():
            rows = cursor.fetchall()
            lexical_top[name] = [(r[0], r[1]) for r in rows]
            lexical_moments[name] = (float(rows[0][2]), float(rows[0][3])) if rows else (0.0, 0.0)
        example_owners = [r[0] for r in example_cursor.fetchall()] if example_cursor is not None else []
        dense_exact = {int(p): float(v) for p, v in dense_top}
        candidates = sorted(set(dense_exact) | {p for rows in lexical_top.values() for p, _ in rows}
                            | set(example_owners))
        others = [p for p in candidates if p not in dense_exact]
        with conn.pipeline():
            dense_cursor = conn.execute(_sql("SELECT position, -(embedding <#> %s) FROM {d} WHERE position = ANY(%s)",
                                             d=g.table("docs")), (q, others)) if others else None
            lexical_cursors = {name: conn.execute(_BM25_AT.format(p=g.table("postings")),
                                                  (terms, FIELDS[name], candidates)) for name in g.fields}
            example_cursor = pgexamples.query(conn, g, q, candidates) if g.has_examples else None
        if dense_cursor is not None:
            dense_exact.update((int(p), float(v)) for p, v in dense_cursor.fetchall())
        where = np.array(candidates, dtype=np.int64)
        dense_values = np.array([dense_exact[p] for p in candidates], dtype=np.float64)
        q64 = q.astype(np.float64)
        mu, second = float(g.mean @ q64), float(q64 @ g.second @ q64)
        ceiling = min(v for _, v in dense_top) if len(dense_top) >= depth else None
        dense, cut = fill_unretrieved(g.n, where, dense_values, mu * g.n, second * g.n, ceiling)
        out = {"dense": dense}
        self.cut += cut
        for name, cursor in lexical_cursors.items():
            exact = dict(cursor.fetchall())
            values = np.array([exact.get(p, 0.0) for p in candidates], dtype=np.float64)
            top = lexical_top[name]
            floor = min(v for _, v in top) if len(top) >= depth else 0.0
            out[name], _ = fill_unretrieved(g.n, where, values, *lexical_moments[name], floor)
        if example_cursor is not None:
            out["examples"] = pgexamples.scores(example_cursor.fetchall(), dense, where, dense_values, mu * g.n,
                                                second * g.n, ceiling)
        return out


def _bm25_sql(text: str) -> Any:
    from psycopg import sql

    return sql.SQL(text)


_QUERY = "unnest(%s::text[]) WITH ORDINALITY AS q(term, ord)"
_BM25_ALL = _bm25_sql("SELECT p.position, sum(p.weight ORDER BY q.ord) FROM {p} p JOIN " + _QUERY +
                      " ON p.term = q.term WHERE p.field = %s GROUP BY p.position")
_BM25_AT = _bm25_sql("SELECT p.position, sum(p.weight ORDER BY q.ord) FROM {p} p JOIN " + _QUERY +
                     " ON p.term = q.term WHERE p.field = %s AND p.position = ANY(%s) GROUP BY p.position")
_BM25_TOP = _bm25_sql("WITH s AS (SELECT p.position, sum(p.weight ORDER BY q.ord) AS score FROM {p} p JOIN " +
                      _QUERY + " ON p.term = q.term WHERE p.field = %s GROUP BY p.position) SELECT position, score, "
                      "sum(score) OVER (), sum(score * score) OVER () FROM s ORDER BY score DESC, position LIMIT %s")


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
        return beside(signals, source, ("passages",)), BuildReport()


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
