"""The operations over an index in PostgreSQL, on the real engine: ``eval --index-url``, ``POST /v1/reindex`` on a
PostgreSQL-backed ``serve``, and what the HNSW path serves of the signals the in-process router fuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_support import run
from tests.pg_support import PgServer, missing_reason
from tests.serve_support import copy_bundled

pytestmark = [pytest.mark.model, pytest.mark.skipif(missing_reason() is not None, reason=str(missing_reason()))]

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data"


@pytest.fixture(scope="module")
def pg():
    server = PgServer()
    yield server
    server.stop(remove=True)


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
