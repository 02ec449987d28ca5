"""The query path past the HNSW threshold, on the real engine: the depth of the top lists and ``hnsw.ef_search``
follow the requested k, the HNSW top-5 is the exact one, and every BM25 score the database returns is the
formula's (Lucene idf, k1 1.5, b 0.75) to the last bit, with the sums of every skill's scores it fills from."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tests.pg_support import missing_reason, recovered
from tests.serve_support import copy_bundled

pytestmark = [pytest.mark.model, pytest.mark.skipif(missing_reason() is not None, reason=str(missing_reason()))]

DATA = Path(__file__).resolve().parents[1] / "benchmarks" / "data"


def _queries(name: str) -> list[str]:
    with open(DATA / name, encoding="utf-8") as handle:
        return [json.loads(line)["query"] for line in handle if line.strip()]


@pytest.fixture(scope="module")
def indexed(pg, tmp_path_factory):
    """The bundled library (52 skills) indexed in the database, and its folder."""
    from router.cli import main

    library = copy_bundled(tmp_path_factory.mktemp("query") / "skills")
    assert main(["index", "--skills", str(library), "--index-url", pg.url]) == 0
    return library


def _database_router(pg, library: Path, monkeypatch, *, min_depth: int, k: int = 5):
    """A router over the database as past the HNSW threshold (top lists of at least ``min_depth``)."""
    from router import passages, pgstore
    from router.config import RouterConfig
    from router.routing import Router

    monkeypatch.setattr(pgstore, "EXACT_BELOW", 10)
    monkeypatch.setattr(pgstore, "MIN_DEPTH", min_depth)
    monkeypatch.setattr(passages, "MAX_SKILLS", 10)
    return Router.from_skills([str(library)], config=RouterConfig(split_weight=0, k=k), store=pgstore.PgStore(pg.url))


def test_the_top_lists_and_ef_search_follow_the_requested_k(pg, indexed, monkeypatch) -> None:
    from router import pgstore

    database = _database_router(pg, indexed, monkeypatch, min_depth=4, k=1)
    signals = database.signals
    assert isinstance(signals, pgstore.PgSignals) and signals.depth == 20  # 20 x the config's k of 1
    files = _files(indexed)
    request = "fill in the fields of this pdf form"
    exact_dense = files.score_many([request]).signals["dense"][0]
    database.route_many([request], 1)  # the no-skill decision's chance level: scored once, before the spy
    seen: list[tuple[str, int]] = []
    retrieve = signals._retrieved_many

    class Committing:  # the request's connection, read just before its transaction commits
        def __init__(self, conn) -> None:
            self.conn, self.ef_search = conn, None

        def __getattr__(self, name):
            return getattr(self.conn, name)

        def commit(self) -> None:
            self.ef_search = self.conn.execute("SELECT current_setting('hnsw.ef_search')").fetchone()[0]
            self.conn.commit()

    def spy(conn, texts, vectors):  # the ef_search in effect in the statements' transaction, the exact cosines
        committing = Committing(conn)
        scored = retrieve(committing, texts, vectors)
        seen.extend((committing.ef_search, int((np.abs(scores["dense"] - exact_dense) < 1e-6).sum()))
                    for scores in scored)
        return scored

    monkeypatch.setattr(signals, "_retrieved_many", spy)
    for k in (1, 2):
        database.rank_many([request], k)
    database.rank_many([request], 6)  # a list of 20 x 6 = 120: past pgvector's default of 40, as wide as the list
    database.route_many([request], 7)
    database.score_many([request])  # outside a ranking: the config's k
    assert [ef for ef, _ in seen] == ["40", "40", "120", "140", "40"]
    # each list as deep as 20 x k (of 52 skills): that many skills get their exact cosine
    cosines = [count for _, count in seen]
    assert 20 <= cosines[0] < 40 <= cosines[1] < 52 and cosines[2] == cosines[3] == 52 and cosines[4] == cosines[0]
    monkeypatch.setattr(pgstore, "MIN_DEPTH", 100)
    assert pgstore.ef_search_for(5) == 100 and pgstore.ef_search_for(10) == 200 and pgstore.ef_search_for(500) == 1000
    monkeypatch.setattr(pgstore, "MIN_DEPTH", 4)
    assert pgstore.ef_search_for(5) == 100 and pgstore.ef_search_for(1) == 40 and pgstore.ef_search_for(6) == 120


def _files(library: Path):
    from router.config import RouterConfig
    from router.routing import Router

    return Router.from_skills([str(library)], config=RouterConfig(split_weight=0), index_folder=str(library.parent /
                                                                                                    "index"))


def test_the_hnsw_top_five_is_the_exact_one_on_the_bundled_library(pg, indexed, monkeypatch) -> None:
    from pgvector.psycopg import register_vector

    from router import pgstore

    database = _database_router(pg, indexed, monkeypatch, min_depth=5)
    signals = database.signals
    signals.depth = 5
    g = signals.generation
    queries = _queries("bundled-dev.jsonl") + _queries("bundled-test.jsonl")
    vectors = database.encode(queries)
    # one generation: every row is live (a 52-row table is scanned, not searched, when a filter gives the planner
    # another index to use)
    top = pgstore._sql("SELECT slot, -(embedding <#> %(q)s) FROM {d} ORDER BY embedding <#> %(q)s LIMIT 5",
                       d=g.table("docs"))

    def ranked(conn, vector) -> list[int]:
        return [r[0] for r in sorted(conn.execute(top, {"q": vector}), key=lambda r: (-r[1], r[0]))]

    with signals.db.connection() as conn:
        register_vector(conn)
        conn.execute("SELECT set_config('hnsw.ef_search', %s, true), set_config('hnsw.iterative_scan', "
                     "'relaxed_order', true), set_config('enable_seqscan', 'off', true), "
                     "set_config('enable_bitmapscan', 'off', true)",
                     (str(pgstore.ef_search_for(5)),))
        plan = "\n".join(r[0] for r in conn.execute(pgstore._sql("EXPLAIN ") + top, {"q": vectors[0]}))
        assert "embedding_idx" in plan  # the HNSW index, not a scan of the table
        hnsw = [ranked(conn, v) for v in vectors]
        conn.execute("SET LOCAL enable_indexscan = off")
        conn.execute("SET LOCAL enable_seqscan = on")
        exact = [ranked(conn, v) for v in vectors]
    assert len(queries) == 342 and hnsw == exact


def test_bm25_on_the_hnsw_path_is_the_formula_to_the_last_bit(pg, indexed, monkeypatch) -> None:
    from indexes.tokenize import DEFAULT_TOKENIZER

    database = _database_router(pg, indexed, monkeypatch, min_depth=8)
    signals = database.signals
    signals.depth = 8
    files = _files(indexed)
    ids = [s.id for s in files.skills]
    assert list(signals.ids) == ids and signals.generation.fields == ("bm25", "body_bm25")
    fields = {"bm25": files.index_texts(), "body_bm25": files.body_texts()}
    counted = {name: [Counter(DEFAULT_TOKENIZER(t)) for t in texts] for name, texts in fields.items()}
    queries = _queries("bundled-test.jsonl")
    retrieved = database.score_many(queries)
    formula_checked = exact = 0
    for row, query in enumerate(queries):
        terms = list(DEFAULT_TOKENIZER(query))
        for name in ("bm25", "body_bm25"):
            docs = counted[name]
            n = len(docs)
            avgdl = sum(sum(c.values()) for c in docs) / n
            df = {t: sum(1 for c in docs if t in c) for t in set(terms)}
            expected = np.zeros(n)
            for i, c in enumerate(docs):
                total = 0.0
                dl = float(sum(c.values()))
                for t in terms:  # in request order, repeats included
                    if t in c:
                        idf = math.log(1.0 + ((n - df[t]) + 0.5) / (df[t] + 0.5))
                        tf = float(c[t])
                        total += idf * (tf * 2.5 / (tf + 1.5 * (0.25 + 0.75 * dl / avgdl)))
                expected[i] = total
            got = retrieved.signals[name][row]
            # the candidates (every skill in the field's top list or with an exact cosine) carry the formula's score
            top = np.argsort(-expected, kind="stable")[:8]
            assert all(got[i] == expected[i] for i in top if expected[i] > 0), (query, name)
            # and the fill keeps the mean and spread of all 52, unless it had to be cut at the lowest score of the
            # top list (indexes.fill): then no skill left out scores above it
            filled = got != expected
            if abs(got.sum() - expected.sum()) < 1e-9 and abs(got.std() - expected.std()) < 1e-9:
                exact += 1
            else:
                assert got[filled].max() <= expected[top].min(), (query, name)
            formula_checked += 1
    assert formula_checked == 2 * len(queries) and exact >= 0.8 * formula_checked, (exact, formula_checked)


def test_past_the_threshold_every_skills_bm25_is_the_file_stores_to_the_last_bit(pg, indexed, monkeypatch) -> None:
    # The postings of the request's terms are read and scored by the router: the whole row is exact, not only the
    # candidates' scores with a fill of the same mean and spread for the others.
    from router import pgquery

    database = _database_router(pg, indexed, monkeypatch, min_depth=8)
    signals = database.signals
    signals.depth = 8
    files = _files(indexed)
    queries = _queries("bundled-dev.jsonl") + _queries("bundled-test.jsonl")
    signals.terms = pgquery.TermCache(budget=100_000, min_postings=4)  # terms in 4 or more skills' texts are kept
    read: list[tuple[str, list[str]]] = []
    fetch = pgquery.fetch

    def spy(conn, generation, fields, terms, **options):
        read.append((__import__("threading").current_thread().name, list(terms)))
        return fetch(conn, generation, fields, terms, **options)

    monkeypatch.setattr(pgquery, "fetch", spy)
    want = files.score_many(queries).signals
    for _ in range(2):  # the second time the kept terms' postings are not read again
        read.clear()
        got = database.score_many(queries).signals
        assert read and all(name.startswith("skill-router-lexical") for name, _ in read)  # read while embedding
        for name in ("bm25", "body_bm25"):
            assert got[name].shape == (342, 52) and (got[name] > 0).sum() > 342
            assert np.array_equal(got[name], want[name]), name
    kept = set(signals.terms._entries)
    assert len(kept) > 50 and not kept & {t for _, terms in read for t in terms}


def test_a_request_whose_postings_read_meets_a_stopped_database_is_a_503_and_the_next_one_recovers(
        pg, indexed, monkeypatch) -> None:
    import threading

    import httpx

    from router import passages, pgquery, pgstore
    from tests.serve_support import running

    monkeypatch.setattr(pgstore, "EXACT_BELOW", 10)
    monkeypatch.setattr(passages, "MAX_SKILLS", 10)
    fetch = pgquery.fetch
    stop_before = threading.Event()
    lexical: list[str] = []
    stopped_in: list[str] = []

    def fetch_after_stop(conn, generation, fields, terms, **options):
        lexical.append(threading.current_thread().name)
        if stop_before.is_set():  # the database goes away while the request is being embedded
            stop_before.clear()
            stopped_in.append(threading.current_thread().name)
            pg.stop()
        return fetch(conn, generation, fields, terms, **options)

    monkeypatch.setattr(pgquery, "fetch", fetch_after_stop)
    body = {"query": "fill in the fields of this pdf form", "k": 3}
    with running(["--skills", str(indexed), "--index-url", pg.url, "--no-log", "--no-mcp"]) as (url, _):
        with httpx.Client(base_url=url, timeout=30, trust_env=False) as client:
            first = client.post("/v1/route", json=body)
            assert first.status_code == 200 and any(n.startswith("skill-router-lexical") for n in lexical)
            stop_before.set()
            try:
                away = client.post("/v1/route", json=body)
                assert away.status_code == 503, away.text
                assert away.json()["error"]["type"] == "index_unavailable"
                assert pg.password not in away.text
                # the read that met the stopped database was the one started before the request was embedded
                assert len(stopped_in) == 1 and stopped_in[0].startswith("skill-router-lexical")
            finally:
                if not pg.running:
                    pg.start()
            assert recovered(client, body).json()["matches"] == first.json()["matches"]


def test_requests_scored_together_read_their_postings_once_and_score_as_alone(pg, indexed, monkeypatch) -> None:
    # the no-skill sample a commit scores (54 requests) and a server's batch: one postings read, one round trip
    from router import pgquery

    database = _database_router(pg, indexed, monkeypatch, min_depth=4)
    signals = database.signals
    requests = ["fill in the fields of this pdf form", "write a changelog", "clean up this csv file", "hello there",
                "debug the failing ci pipeline"]
    vectors = database.encode(requests)
    alone = [signals.score([text], vectors[i:i + 1]) for i, text in enumerate(requests)]
    reads: list[int] = []
    fetch = pgquery.fetch
    monkeypatch.setattr(pgquery, "fetch", lambda conn, g, fields, terms, **kw: reads.append(len(terms)) or
                        fetch(conn, g, fields, terms, **kw))
    signals.terms = pgquery.TermCache()  # nothing kept: every term is read
    together = signals.score(requests, vectors)
    assert len(reads) == 1 and reads[0] == len({t for text in requests for t in signals._terms(text)})
    assert sorted(together) == sorted(alone[0])
    for name, values in together.items():
        np.testing.assert_array_equal(values, np.concatenate([scores[name] for scores in alone]), err_msg=name)


def test_the_bm25_top_lists_rows_read_while_embedding_give_the_scores_and_rows_of_the_dense_statement(
        pg, indexed, monkeypatch) -> None:
    # prefetch reads the BM25 top list's vectors and records ahead: the dense statement then looks none of them up
    import psycopg

    from router import pgquery

    database = _database_router(pg, indexed, monkeypatch, min_depth=4, k=1)  # lists of 20 of 52 skills
    signals = database.signals
    requests = ["fill in the fields of this pdf form", "write a changelog for the release", "merge these csv files"]
    vectors = database.encode(requests)
    looked_up: list[str] = []
    execute = psycopg.Connection.execute
    offered: list[tuple[int, int, str]] = []
    signals.offer = offered.extend

    def spying(conn, query, params=None, **kw):
        if isinstance(params, dict) and "extra" in params:
            looked_up.append(params["extra"])
        return execute(conn, query, params, **kw)

    monkeypatch.setattr(psycopg.Connection, "execute", spying)
    for i, text in enumerate(requests):
        looked_up.clear()
        offered.clear()
        inline = signals.score([text], vectors[i:i + 1])  # no prefetch: the statement looks the BM25 list up
        inline_rows = sorted(offered)
        assert looked_up and looked_up[-1] != "{}"
        offered.clear()
        signals.prefetch([text])
        ahead = signals.score([text], vectors[i:i + 1])
        assert looked_up[-1] == "{}"  # read while embedding, not by the statement
        assert sorted(offered) == inline_rows and len({slot for slot, _, _ in inline_rows}) == len(inline_rows)
        assert sorted(ahead) == sorted(inline)
        for name in inline:
            if name == "dense":  # the cosines of the BM25 list, taken by numpy instead of pgvector: float32 sums
                np.testing.assert_allclose(ahead[name], inline[name], rtol=0, atol=1e-6)
            else:
                np.testing.assert_array_equal(ahead[name], inline[name], err_msg=name)
    rows = pgquery.Candidates(np.array([3, 5]), np.eye(2, 3, dtype=np.float32), ((1, "a"), (2, "b")))
    assert rows.rows(np.array([0.5, 0.25, 1.0], dtype=np.float32), {5}) == [(3, 0.5, False, 1, "a")]


def test_vectors_read_as_pgvector_sends_them_are_its_own_floats(pg, indexed, monkeypatch) -> None:
    """``vector_send``'s bytes, read all at once, are the floats pgvector's own loader reads one vector at a time; a
    vector of another dimension is a one-line error naming the fix."""
    from psycopg import sql

    from router import pgquery, pgstore

    db = pgstore.database(pg.url)
    key = _database_router(pg, indexed, monkeypatch, min_depth=5)._index.spec.key
    with db.connection() as conn:
        generation = pgstore.read_generation(conn, key, pg.url)
        table = generation.table("docs")
        rows = conn.execute(sql.SQL("SELECT embedding, vector_send(embedding) FROM {d} ORDER BY slot LIMIT 7"
                                    ).format(d=table), binary=True).fetchall()
    expected = np.array([row[0].to_numpy() for row in rows], dtype=np.float32)
    read = pgquery.vectors_of([bytes(row[1]) for row in rows], expected.shape[1])
    assert read.dtype == np.float32 and read.tobytes() == expected.tobytes()
    import struct

    assert pgquery.vectors_of([struct.pack(">hh3f", 3, 0, 1.5, -2.0, 0.25)], 3).tolist() == [[1.5, -2.0, 0.25]]
    with pytest.raises(pgstore.StoreUnavailable, match="not 3-dimensional; run 'skill-router index' again"):
        pgquery.vectors_of([struct.pack(">hh3f", 3, 0, 1.5, -2.0, 0.25), struct.pack(">hh2f", 2, 0, 1.0, 2.0)], 3)
    assert pgquery.int4_array([3, 15, 7]) == "{3,15,7}"
