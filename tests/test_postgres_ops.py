"""The operations over an index in PostgreSQL, on the real engine: ``eval --index-url``, ``POST /v1/reindex`` on a
PostgreSQL-backed ``serve``, and what the HNSW path serves of the signals the in-process router fuses."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from tests.cli_support import run
from tests.pg_support import missing_reason
from tests.serve_support import copy_bundled

pytestmark = [pytest.mark.model, pytest.mark.skipif(missing_reason() is not None, reason=str(missing_reason()))]

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data"



def _without_latency(report: dict) -> tuple[dict, list[float]]:
    """The report without what is measured rather than computed (latency), and its abstention thresholds (scores
    summed in another order by the database: equal to ~1e-8, not bit for bit)."""
    thresholds = []
    for retriever in report["retrievers"]:
        retriever.pop("latency_ms")
        abstention = retriever.get("abstention") or {}
        if "threshold" in abstention:
            thresholds.append(abstention.pop("threshold"))
    return report, thresholds


def test_eval_over_the_database_gives_the_file_stores_numbers_on_the_bundled_library(pg, capsys, tmp_path) -> None:
    library = copy_bundled(tmp_path / "skills")
    assert run(capsys, "index", "--skills", str(library), "--index-url", pg.url)[0] == 0
    queries = ["--queries", str(DATA / "bundled-dev.jsonl"), "--queries", str(DATA / "bundled-test.jsonl")]
    reports = {}
    for store, option in (("files", ["--index-dir", str(tmp_path / "index")]), ("database", ["--index-url", pg.url])):
        status, out, err = run(capsys, "eval", "--skills", str(library), *option, *queries,
                               "--retrievers", "bm25,dense,rrf,default", "--json", "-")
        assert status == 0, err
        reports[store] = _without_latency(json.loads(out))
    (files, file_thresholds), (database, database_thresholds) = reports["files"], reports["database"]
    assert files["requests"] == 342
    assert [r["name"] for r in database["retrievers"]] == ["bm25", "dense", "rrf", "default"]
    assert database == files  # every metric, interval and paired comparison
    assert len(database_thresholds) == len(file_thresholds) == 4
    assert database_thresholds == pytest.approx(file_thresholds, abs=1e-6)


def test_eval_with_examples_over_the_database_is_refused_in_one_line(pg, capsys, tmp_path) -> None:
    library = copy_bundled(tmp_path / "skills")
    assert run(capsys, "index", "--skills", str(library), "--index-url", pg.url)[0] == 0
    status, out, err = run(capsys, "eval", "--skills", str(library), "--index-url", pg.url, "--queries",
                           str(DATA / "bundled-test.jsonl"), "--examples", str(DATA / "bundled-dev.jsonl"))
    assert status == 2 and out == ""
    assert err == ("skill-router eval: error: --examples cannot be used with --index-url: the index in the database "
                   "holds the library's own examples only; drop --index-url to evaluate with the file store, or add "
                   "the requests to the skills' routing-examples.txt and run 'skill-router index'\n")


TIDE = "Predict tide heights and times for a harbour from tide tables."
TIDE_QUERY = {"query": "when is high tide at the harbour", "k": 1}


def _generation(pg, library: Path) -> int:
    import psycopg

    from router.store import library_key

    with psycopg.connect(pg.url) as conn:
        return conn.execute("SELECT generation FROM skill_router_libraries WHERE key = %s",
                            (library_key([str(library)], None, "agentskills"),)).fetchone()[0]


def test_reindex_on_a_database_backed_server_commits_a_generation_every_replica_swaps_to(pg, capsys,
                                                                                        tmp_path) -> None:
    import httpx

    from tests.serve_support import running, write_skill
    from tests.test_serve_openapi import check

    library = copy_bundled(tmp_path / "skills")
    assert run(capsys, "index", "--skills", str(library), "--index-url", pg.url)[0] == 0
    before = _generation(pg, library)
    token = tmp_path / "token"
    token.write_text("s3cret-token\n", encoding="utf-8")
    options = ["--skills", str(library), "--index-url", pg.url, "--no-log", "--no-mcp"]
    with running(options, token="s3cret-token") as (writer_url, _), running(options) as (reader_url, _):
        with httpx.Client(base_url=writer_url, timeout=60, trust_env=False) as anonymous, \
                httpx.Client(base_url=writer_url, timeout=60, trust_env=False,
                             headers={"Authorization": "Bearer s3cret-token"}) as writer, \
                httpx.Client(base_url=reader_url, timeout=60, trust_env=False) as reader:
            spec = writer.get("/openapi.json").json()
            assert "commits that library as a new index generation" in \
                spec["paths"]["/v1/reindex"]["post"]["description"]
            assert reader.get("/readyz").json()["last_reload"]["generation"] == before
            write_skill(library, "zz-tide-tables", TIDE)
            # guarded as with the file store: no token, no commit
            refused = anonymous.post("/v1/reindex")
            check(spec, "post", "/v1/reindex", refused, 401)
            assert _generation(pg, library) == before
            assert reader.post("/v1/route", json=TIDE_QUERY).json()["matches"][0]["id"] != "zz-tide-tables"

            committed = writer.post("/v1/reindex")
            check(spec, "post", "/v1/reindex", committed, 200)
            answer = committed.json()
            assert answer["ok"] is True and answer["skills"] == 53
            assert answer["embedded"] == 2  # the new description and its body's one head passage
            assert answer["generation"] == _generation(pg, library) > before
            assert writer.post("/v1/route", json=TIDE_QUERY).json()["matches"][0]["id"] == "zz-tide-tables"
            # the other replica swaps on the commit's NOTIFY, without a request to it
            deadline = time.monotonic() + 10
            while reader.get("/readyz").json()["last_reload"]["generation"] != answer["generation"]:
                assert time.monotonic() < deadline, "the other replica did not swap to the new generation"
                time.sleep(0.05)
            assert reader.post("/v1/route", json=TIDE_QUERY).json()["matches"][0]["id"] == "zz-tide-tables"

            again = writer.post("/v1/reindex").json()  # nothing changed: nothing embedded, no new generation
            assert again["ok"] is True and again["embedded"] == 0 and again["generation"] == answer["generation"]

            pg.stop()
            try:
                away = writer.post("/v1/reindex")
                check(spec, "post", "/v1/reindex", away, 503)
                error = away.json()["error"]
                assert error["type"] == "reload_failed"
                assert error["message"].startswith("reload failed, still serving the previous library: the index "
                                                   "database postgresql://postgres:***@/postgres?host=")
                assert "does not answer" in error["message"] and pg.password not in away.text
                assert error["details"]["generation"] == answer["generation"]
            finally:
                pg.start()
            deadline = time.monotonic() + 30
            while (back := writer.post("/v1/reindex")).status_code != 200:
                assert time.monotonic() < deadline, back.text
                time.sleep(0.2)
            assert back.json()["generation"] == answer["generation"]


def _requests(name: str) -> list[dict]:
    with open(DATA / name, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def library_with_examples(tmp_path: Path) -> Path:
    """The bundled library with the dev requests as examples of their skills: the first 30 of the 52 skills (by
    name) get theirs, the others none."""
    library = copy_bundled(tmp_path / "skills")
    owners: dict[str, list[str]] = {}
    for request in _requests("bundled-dev.jsonl"):
        if len(request.get("gold") or ()) == 1:
            owners.setdefault(request["gold"][0], []).append(request["query"])
    assert len(owners) == 52
    for skill in sorted(owners)[:30]:
        (library / skill / "routing-examples.txt").write_text("\n".join(owners[skill]) + "\n", encoding="utf-8")
    return library


def example_routers(pg, capsys, tmp_path: Path, monkeypatch) -> tuple:
    """:func:`library_with_examples` indexed in the database on the HNSW path (``skill-router index``), and the
    routers over it from the file store and from the database (no request split)."""
    from router import pgstore
    from router.config import RouterConfig
    from router.routing import Router

    library = library_with_examples(tmp_path)
    _hnsw(monkeypatch)
    assert run(capsys, "index", "--skills", str(library), "--index-url", pg.url)[0] == 0
    whole = RouterConfig(split_weight=0)
    files = Router.from_skills([str(library)], config=whole, index_folder=str(tmp_path / "index"))
    return files, Router.from_skills([str(library)], config=whole, store=pgstore.PgStore(pg.url))


def _hnsw(monkeypatch, depth: int = 12) -> None:
    """As a catalogue past the HNSW threshold: top lists of ``depth`` and no passage index (over
    router.passages.MAX_SKILLS), on the 52 skills of the bundled library."""
    from router import passages, pgstore

    monkeypatch.setattr(pgstore, "EXACT_BELOW", 10)
    monkeypatch.setattr(pgstore, "MIN_DEPTH", depth)
    monkeypatch.setattr(passages, "MAX_SKILLS", 10)


def _retrieved(exact, retrieved, row: int) -> np.ndarray:
    """The skills the database retrieved for ``row`` (their dense cosine is exact, the others are a fill)."""
    return np.flatnonzero(np.abs(retrieved.signals["dense"][row] - exact.signals["dense"][row]) < 1e-6)


def test_the_hnsw_path_scores_example_requests_with_their_exact_spread(pg, capsys, tmp_path, monkeypatch) -> None:
    files, database = example_routers(pg, capsys, tmp_path, monkeypatch)
    assert database.signals.has_examples and database.signals.generation.n == 52
    database.signals.depth = 12
    queries = [r["query"] for r in _requests("bundled-test.jsonl")]
    exact, retrieved = files.score_many(queries), database.score_many(queries)
    exact_fused, fused = files.fuse(exact), database.fuse(retrieved)
    agree = same = 0
    for row in range(len(queries)):
        where = _retrieved(exact, retrieved, row)
        assert 12 <= len(where) < 52
        # every candidate's example score, and the mean and spread of all 52, are the in-process ones
        assert np.allclose(retrieved.signals["examples"][row][where], exact.signals["examples"][row][where],
                           atol=1e-6)
        for moment in (np.mean, np.std):
            assert abs(moment(retrieved.signals["examples"][row]) - moment(exact.signals["examples"][row])) < 1e-6
        # so every candidate's fused score is exact, unless a lexical fill had to be cut (indexes.fill)
        if all(abs(retrieved.signals[n][row].mean() - exact.signals[n][row].mean()) < 1e-6 for n in exact.signals):
            same += 1
            assert np.allclose(fused[row][where], exact_fused[row][where], atol=1e-5)
        agree += list(np.argsort(-fused[row])[:5]) == list(np.argsort(-exact_fused[row])[:5])
    assert same / len(queries) >= 0.95 and agree / len(queries) >= 0.95, f"{same}, {agree} of {len(queries)}"


def test_body_embeddings_are_refused_by_the_writer_and_the_readers_in_one_line(pg, capsys, tmp_path) -> None:
    """The gap, stated: the database holds no body embeddings, so a config that weighs body_dense is refused by
    index, route and serve alike (a reader would otherwise fuse without the signal its config weighs)."""
    library = copy_bundled(tmp_path / "skills")
    assert run(capsys, "index", "--skills", str(library), "--index-url", pg.url)[0] == 0
    config = tmp_path / "skill-router.json"
    config.write_text(json.dumps({"weights": {"body_dense": 0.5}}), encoding="utf-8")
    message = ("the PostgreSQL store does not index body embeddings (body_dense weight > 0): set the body_dense "
               "weight to 0 or use the file store\n")
    for command in (["index"], ["route", "make a pdf"], ["eval", "--queries", str(DATA / "bundled-test.jsonl")]):
        status, out, err = run(capsys, *command, "--skills", str(library), "--index-url", pg.url, "--config",
                               str(config))
        assert status == 2 and out == "", out
        assert err == f"skill-router {command[0]}: error: {message}"
    from router.cli.serve import build_service
    from router.errors import ConfigError
    from tests.serve_support import serve_args

    service, _ = build_service(serve_args(["--skills", str(library), "--index-url", pg.url, "--config", str(config),
                                           "--no-log", "--no-mcp"]))
    try:
        with pytest.raises(ConfigError) as refused:  # what /readyz then names as the reason
            service.load()
        assert str(refused.value) == message.strip()
    finally:
        service.close()


def test_on_the_hnsw_path_a_requests_parts_retrieve_their_own_candidates(pg, capsys, tmp_path, monkeypatch) -> None:
    from router import pgstore
    from router.config import RouterConfig
    from router.routing import Router
    from router.split import parts

    library = copy_bundled(tmp_path / "skills")
    _hnsw(monkeypatch, depth=5)
    assert run(capsys, "index", "--skills", str(library), "--index-url", pg.url)[0] == 0
    single = [r for r in _requests("bundled-test.jsonl") if len(r.get("gold") or ()) == 1]
    pairs = [(a, b) for a, b in zip(single, single[1:]) if a["gold"] != b["gold"]]
    texts = [f"{a['query'].rstrip('.?! ')}. Then {b['query']}" for a, b in pairs]
    assert len(texts) == 51 and all(len(parts(t)) >= 2 for t in texts)
    config = RouterConfig()  # split_weight 0.5: the parts' best scores count
    files = Router.from_skills([str(library)], config=config, index_folder=str(tmp_path / "index"))
    database = Router.from_skills([str(library)], config=config, store=pgstore.PgStore(pg.url))
    signals = database.signals
    signals.depth = 5
    asked: list[str] = []
    retrieve = signals._retrieved_many

    def spy(conn, texts, vectors):
        asked.extend(texts)
        return retrieve(conn, texts, vectors)

    monkeypatch.setattr(signals, "_retrieved_many", spy)
    ranked = database.rank_many(texts, 3)
    # every part went to the database on its own (its own top lists), after the whole requests
    assert asked == texts + [p for t in texts for p in parts(t)]
    in_process = files.rank_many(texts, 3)
    same = sum([m.id for m in x] == [m.id for m in y] for x, y in zip(ranked, in_process))
    def both(rankings) -> int:  # requests with the gold skills of both parts in the top 3
        return sum({a["gold"][0], b["gold"][0]} <= {m.id for m in x} for x, (a, b) in zip(rankings, pairs))

    assert same / len(texts) >= 0.9 and both(ranked) >= both(in_process) - 1, (same, both(ranked), both(in_process))


def test_below_the_passage_limit_a_replica_scores_passages_as_the_file_store(pg, capsys, tmp_path) -> None:
    """Passages (router.passages) are not in the database: a replica finds them from the skills' bodies it reads,
    as the file store does, below router.passages.MAX_SKILLS skills; past it neither store has them."""
    from router import passages, pgstore
    from router.routing import Router

    library = copy_bundled(tmp_path / "skills")
    assert run(capsys, "index", "--skills", str(library), "--index-url", pg.url)[0] == 0
    queries = [r["query"] for r in _requests("bundled-test.jsonl")]
    files = Router.from_skills([str(library)], index_folder=str(tmp_path / "index"))
    database = Router.from_skills([str(library)], store=pgstore.PgStore(pg.url))
    exact, retrieved = files.score_many(queries), database.score_many(queries)
    assert 52 < passages.MAX_SKILLS and set(retrieved.signals) == set(exact.signals) >= {"passages", "dense"}
    assert np.allclose(retrieved.signals["passages"], exact.signals["passages"], atol=1e-5)
    assert not (tmp_path / "skills" / ".skill-router-index").exists()


def test_reindex_by_a_replica_whose_database_user_may_only_read_is_a_503_naming_the_fix(pg, capsys,
                                                                                       tmp_path) -> None:
    import httpx
    import psycopg

    from tests.serve_support import running, write_skill
    from tests.test_serve_openapi import check

    library = copy_bundled(tmp_path / "skills")
    assert run(capsys, "index", "--skills", str(library), "--index-url", pg.url)[0] == 0
    before = _generation(pg, library)
    with psycopg.connect(pg.url, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS reader")
        conn.execute("CREATE ROLE reader LOGIN PASSWORD 'read-only-pw'")
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader")
    reader_url = pg.url.replace(f"postgres:{pg.password}@", "reader:read-only-pw@")
    try:
        with running(["--skills", str(library), "--index-url", reader_url, "--no-log", "--no-mcp"]) as (url, _):
            with httpx.Client(base_url=url, timeout=60, trust_env=False) as client:
                assert client.post("/v1/route", json=TIDE_QUERY).status_code == 200  # reading is all it may do
                write_skill(library, "zz-tide-tables", TIDE)
                refused = client.post("/v1/reindex")
                check(client.get("/openapi.json").json(), "post", "/v1/reindex", refused, 503)
                error = refused.json()["error"]
                assert error["type"] == "reload_failed"
                assert error["message"].startswith("reload failed, still serving the previous library: the index "
                                                   "database user may not write (permission denied for table ")
                assert error["message"].endswith("): reindex with a user that owns the index tables in "
                                                 "--index-url, or run 'skill-router index --index-url ...' as one")
                assert "read-only-pw" not in refused.text
                assert client.post("/v1/route", json=TIDE_QUERY).status_code == 200
        assert _generation(pg, library) == before
    finally:
        with psycopg.connect(pg.url, autocommit=True) as conn:
            conn.execute("DROP OWNED BY reader")
            conn.execute("DROP ROLE reader")


def test_past_the_exact_bound_example_scores_are_read_for_the_candidates_only(pg, capsys, tmp_path,
                                                                              monkeypatch) -> None:
    """The gap past router.pgexamples.EXACT_EXAMPLES, stated: candidates keep their exact example scores, the
    skills left out get dense's fill (their examples' lift is not counted, so the row's mean is low)."""
    from router import pgexamples

    files, database = example_routers(pg, capsys, tmp_path, monkeypatch)
    database.signals.depth = 12
    examples = database.signals.generation.params["examples"]
    assert pgexamples.exact(database.signals.generation) and examples > 30
    monkeypatch.setattr(pgexamples, "EXACT_EXAMPLES", examples - 1)
    queries = [r["query"] for r in _requests("bundled-test.jsonl")]
    exact, retrieved = files.score_many(queries), database.score_many(queries)
    low = 0
    for row in range(len(queries)):
        where = _retrieved(exact, retrieved, row)
        assert np.allclose(retrieved.signals["examples"][row][where], exact.signals["examples"][row][where],
                           atol=1e-6)
        low += retrieved.signals["examples"][row].mean() < exact.signals["examples"][row].mean() - 1e-3
    assert low >= 0.9 * len(queries), low
