"""Row vectors in PostgreSQL (schema 4): the vectors of a signal whose index is one vector a skill
(``passage_dense``) kept per generation, written by COPY, skipped by hash, resumed after a crash, and scored by a
replica as the file store scores them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.cli_support import run
from tests.pg_support import missing_reason
from tests.serve_support import copy_bundled, write_skill

pytestmark = [pytest.mark.model, pytest.mark.skipif(missing_reason() is not None, reason=str(missing_reason()))]

ROOT = Path(__file__).resolve().parents[1]
WEIGHED = {"weights": {"passage_dense": 0.5}}
OFF = {"weights": {"passage_dense": 0.0}}


def _queries(*names: str) -> list[str]:
    out = []
    for name in names:
        with open(ROOT / "benchmarks" / "data" / name, encoding="utf-8") as handle:
            out.extend(json.loads(line)["query"] for line in handle if line.strip())
    return out


def _top5(router, queries):
    return [[m.id for m in ranked] for ranked in router.rank_many(queries, 5)]


def _config(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _index(capsys, library: Path, url: str, config: Path | None = None) -> dict:
    status, out, err = run(capsys, "index", "--skills", str(library), "--index-url", url, "--json",
                           *(["--config", str(config)] if config else []))
    assert status == 0, err
    return json.loads(out)


def _rows(url: str, library: Path, live_only: bool = True) -> list[tuple]:
    """(signal, slot, born, died) of every row of the vectors table of ``library``'s current epoch."""
    import psycopg

    from router.spec import LibrarySpec

    with psycopg.connect(url) as conn:
        prefix, epoch = conn.execute("SELECT l.prefix, g.epoch FROM skill_router_libraries l JOIN "
                                     "skill_router_generations g ON g.id = l.generation WHERE l.key = %s",
                                     (LibrarySpec.create([str(library)]).key,)).fetchone()
        where = " WHERE died = 9223372036854775807" if live_only else ""
        return conn.execute(f"SELECT signal, slot, born, died FROM {prefix}_e{epoch}_vectors{where} ORDER BY slot, "
                            f"born").fetchall()


def _small_library(root: Path) -> Path:
    """Five skills, three with bodies of several passages (150-word windows), one with a one-passage body and one
    without a body."""
    for i, topic in enumerate(("git bisect", "pandas dates", "docker layers")):
        sections = "".join(f"## Part {p}\n\n" + " ".join(f"{topic} step{p} word{w}" for w in range(60)) + "\n\n"
                           for p in range(5))
        write_skill(root, f"long-{i}", f"Work with {topic}.", body=f"# {topic}\n\n{sections}")
    write_skill(root, "poems", "Write short rhyming poems.", body="# Poems\n\nCount syllables.\n")
    write_skill(root, "weather", "Rain and wind for tomorrow.", body="")
    return root


def test_a_replica_ranks_exactly_as_the_file_store_with_passage_dense_on(pg, capsys, tmp_path) -> None:
    from router import pgstore
    from router.config import RouterConfig
    from router.routing import Router
    from router.spec import LibrarySpec

    library = copy_bundled(tmp_path / "skills")
    config_file = _config(tmp_path, WEIGHED)
    first = _index(capsys, library, pg.url, config_file)
    assert (first["rows_written"], first["vectors_written"], first["incremental"]) == (52, 52, False)
    live = _rows(pg.url, library)
    assert [(signal, born) for signal, _, born, _ in live] == [("passage_dense", first["generation"])] * 52
    config = RouterConfig.load(config_file)
    files = Router.from_skills([str(library)], config=config, index_folder=str(tmp_path / "index"))
    database = Router.from_skills([str(library)], config=config, store=pgstore.PgStore(pg.url))
    replica = pgstore.Replica(LibrarySpec.create([str(library)]), config.with_(index_url=pg.url),
                              pgstore.database(pg.url))(files.encoder)
    queries = _queries("bundled-dev.jsonl", "bundled-test.jsonl")
    expected = files.score_many(queries[:40]).signals
    for router in (database, replica):
        scored = router.score_many(queries[:40]).signals
        assert sorted(scored) == sorted(expected) and "passage_dense" in scored
        np.testing.assert_allclose(scored["passage_dense"], expected["passage_dense"], rtol=0, atol=1e-6)
    # the signal moves rankings: without it some of the 342 top-5 lists differ
    plain = Router.from_skills([str(library)], config=RouterConfig(weights={"passage_dense": 0.0}),
                              index_folder=str(tmp_path / "plain"))
    want = _top5(files, queries)
    assert sum(a != b for a, b in zip(want, _top5(plain, queries))) > 0
    for router in (database, replica):
        same = [a == b for a, b in zip(want, _top5(router, queries))]
        assert len(same) == 342 and all(same), f"{sum(same)} of {len(same)} equal"
    again = _index(capsys, library, pg.url, config_file)
    assert again["unchanged"] is True and again["embedded"] == 0


def test_schema_3_is_refused_by_readers_and_migrated_by_index(pg, capsys, tmp_path) -> None:
    import psycopg

    from router import pgstore
    from router.config import RouterConfig
    from router.routing import Router
    from router.spec import LibrarySpec

    library = _small_library(tmp_path / "skills")
    (tmp_path / "off").mkdir()
    off = _config(tmp_path / "off", OFF)  # a generation as schema 3 wrote it: no body heads
    first = _index(capsys, library, pg.url, off)
    with psycopg.connect(pg.url) as conn:  # the database as schema 3 left it: no vectors tables, no row signals
        key = LibrarySpec.create([str(library)]).key
        prefix, epoch = conn.execute("SELECT l.prefix, g.epoch FROM skill_router_libraries l JOIN "
                                     "skill_router_generations g ON g.id = l.generation WHERE l.key = %s",
                                     (key,)).fetchone()
        conn.execute(f"DROP TABLE {prefix}_e{epoch}_vectors")
        conn.execute("UPDATE skill_router_generations SET params = params - 'row_signals' WHERE key = %s", (key,))
        conn.execute("UPDATE skill_router_schema SET version = 3")
    status, out, err = run(capsys, "route", "--skills", str(library), "--index-url", pg.url, "--config", str(off),
                           "rhyming poems")
    assert status == 2 and out == ""
    assert err.strip().endswith("has schema version 3, this version reads 4: run 'skill-router index --index-url "
                                "...' first"), err
    migrated = _index(capsys, library, pg.url, off)
    assert migrated["unchanged"] is True  # the generation is kept: nothing rebuilt
    with psycopg.connect(pg.url) as conn:
        assert conn.execute("SELECT version FROM skill_router_schema").fetchone()[0] == 4
        assert conn.execute(f"SELECT count(*) FROM {prefix}_e{epoch}_vectors").fetchone()[0] == 0
    status, out, err = run(capsys, "route", "--skills", str(library), "--index-url", pg.url, "--config", str(off),
                           "rhyming poems")
    assert status == 0 and "poems" in out
    config_file = _config(tmp_path, WEIGHED)
    status, out, err = run(capsys, "route", "--skills", str(library), "--index-url", pg.url, "--config",
                           str(config_file), "rhyming poems")
    assert status == 2 and out == ""
    assert "was built without the passage_dense signal, which this config weighs: run 'skill-router index " \
           "--index-url ...' with this config, or set its passage_dense weight to 0" in err
    weighed = _index(capsys, library, pg.url, config_file)
    assert weighed["incremental"] is False and weighed["generation"] > first["generation"]  # a new epoch
    assert weighed["vectors_written"] == 5 and len(_rows(pg.url, library)) == 5
    config = RouterConfig.load(config_file)
    files = Router.from_skills([str(library)], config=config, index_folder=str(tmp_path / "index"))
    database = Router.from_skills([str(library)], config=config, store=pgstore.PgStore(pg.url))
    queries = ["find the commit that broke it", "rhyming poems", "docker layers step3", "pandas dates", "rain"]
    np.testing.assert_allclose(database.score_many(queries).signals["passage_dense"],
                               files.score_many(queries).signals["passage_dense"], rtol=0, atol=1e-6)
    assert _top5(database, queries) == _top5(files, queries)


class Crash(Exception):
    pass


def test_a_build_killed_while_embedding_passages_resumes_where_it_stopped(pg, tmp_path) -> None:
    from router import pgstore
    from router.config import RouterConfig
    from router.index import LibrarySource
    from router.spec import LibrarySpec

    library = _small_library(tmp_path / "skills")
    config = RouterConfig(weights={"passage_dense": 0.5})
    source = LibrarySource.read(LibrarySpec.create([str(library)]), config).chosen()
    db = pgstore.database(pg.url)
    lines: list[str] = []

    def crash_at_fourth(line: str) -> None:
        lines.append(line)
        if len(lines) == 4:  # the 5 descriptions (2 batches of 4), then 2 batches of 4 passages, then killed
            raise Crash(line)

    with pytest.raises(Crash):
        pgstore.publish(db, source, source.spec.key, batch=4, progress=crash_at_fourth)
    assert lines == ["embedded 4 of 5 texts", "embedded 5 of 5 texts", "embedded 9 of 15 texts",
                     "embedded 13 of 15 texts"]
    with db.connection() as conn:
        assert conn.execute("SELECT generation FROM skill_router_libraries WHERE key = %s",
                            (source.spec.key,)).fetchone()[0] is None
    report = pgstore.publish(db, source, source.spec.key, batch=4)
    # the head passages: 3 of each long body -> 9, the poem's 1: 10 passages; 8 were kept
    assert (report.embedded, report.reused, report.vectors_written) == (2, 13, 5)
    again = pgstore.publish(db, source, source.spec.key, batch=4)
    assert again.unchanged and again.embedded == 0


def test_an_edit_writes_the_vectors_that_changed_and_only_those(pg, capsys, tmp_path, monkeypatch) -> None:
    from router import pgstore
    from router.config import RouterConfig
    from router.routing import Router
    from router.signals import passage_dense

    library = _small_library(tmp_path / "skills")
    config_file = _config(tmp_path, WEIGHED)
    first = _index(capsys, library, pg.url, config_file)
    write_skill(library, "poems", "Write short rhyming poems.", body="# Poems\n\nCount syllables, then rhyme.\n")
    edited = _index(capsys, library, pg.url, config_file)
    assert (edited["incremental"], edited["rows_written"], edited["vectors_written"]) == (True, 1, 1)
    poems = [r for r in _rows(pg.url, library, live_only=False) if r[2] == edited["generation"]]
    assert len(poems) == 1 and [r for r in _rows(pg.url, library) if r[1] == poems[0][1]] == poems
    # a head of 2 passages instead of 4: the three long bodies' vectors change, no row of the catalogue does
    monkeypatch.setattr(passage_dense, "HEAD", 2)
    shorter = _index(capsys, library, pg.url, config_file)
    assert shorter["unchanged"] is False
    assert (shorter["incremental"], shorter["rows_written"], shorter["vectors_written"]) == (True, 0, 3)
    assert sorted(born for _, _, born, _ in _rows(pg.url, library)) == [first["generation"], edited["generation"],
                                                                         *[shorter["generation"]] * 3]
    config = RouterConfig.load(config_file)
    files = Router.from_skills([str(library)], config=config, index_folder=str(tmp_path / "index"))
    database = Router.from_skills([str(library)], config=config, store=pgstore.PgStore(pg.url))
    queries = ["find the commit that broke it", "rhyme syllables", "docker layers step3 word5", "pandas step4"]
    np.testing.assert_allclose(database.score_many(queries).signals["passage_dense"],
                               files.score_many(queries).signals["passage_dense"], rtol=0, atol=1e-6)
    assert _top5(database, queries) == _top5(files, queries)
    # two generations kept: the rows only the first generation read are gone
    every = _rows(pg.url, library, live_only=False)
    assert {born for _, _, born, _ in every} == {first["generation"], edited["generation"], shorter["generation"]}
    assert len(every) == 5 + 3 and all(died > edited["generation"] for _, _, _, died in every)
