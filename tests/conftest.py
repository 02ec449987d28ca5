"""Fixtures the test modules share, and the ``model`` marker.

- every test runs with ``XDG_RUNTIME_DIR`` in a folder of the test run (warm-server state, tokens, hook failures);
- ``write_skill(root, folder, description)``: one SKILL.md (a helper, imported: ``from conftest import write_skill``);
- ``encoder``: the real bundled model, once per session;
- ``benchmark``: imports a script of ``benchmarks/`` by module name, with that folder on the path as when it runs;
- ``bundled``: a built router over the bundled library (genkit, always routed), once per module;
- ``server``: a real ``skill-router serve`` over a private copy of the bundled library, once per module; a module
  sets ``SERVER_OPTIONS`` (serve options after ``--skills``), ``SERVER_MCP``, ``SERVER_TOKEN`` and
  ``prepare_library(library, root)`` to change it.

Tests that need the real bundled all-MiniLM-L6-v2 (the ``encoder`` fixture, directly or through another fixture,
or marked ``@pytest.mark.model``) are marked ``model``; ``pytest -m "not model"`` runs the rest in seconds.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Iterator, NamedTuple

import pytest

from indexes import Encoder
from oracle_claude import claude_binary  # noqa: F401 - the real Claude Code, a session fixture

if TYPE_CHECKING:
    from router.routing import Router

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ROOT / "skills"


@pytest.fixture(scope="session", autouse=True)
def private_runtime_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Warm-server state files, tokens and the hook's failure log (router.daemon) go to a folder of the test run,
    never the user's own runtime folder."""
    old = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = str(tmp_path_factory.mktemp("runtime"))
    yield
    if old is None:
        os.environ.pop("XDG_RUNTIME_DIR", None)
    else:
        os.environ["XDG_RUNTIME_DIR"] = old


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "encoder" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.model)


@pytest.fixture
def benchmark(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], ModuleType]:
    """``benchmark(name)``: the script ``benchmarks/<name>.py`` as a module, ``benchmarks/`` first on the path for
    this test (the scripts import each other by bare name)."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    return importlib.import_module


@pytest.fixture(scope="session")
def encoder() -> Encoder:
    """The real bundled model, loaded once per session and warmed up."""
    model = Encoder()
    model.encode(["warm up"])
    return model


def write_skill(root: Path | str | bytes, folder: str | bytes, description: str = "", *, name: str | None = None,
                body: str = "Steps.\n", extra: str = "", text: str | None = None) -> Path:
    """``root/folder/SKILL.md``, its path returned: ``text`` exactly, else a frontmatter with ``name`` (default: the
    folder), ``description`` and the ``extra`` lines, then a blank line and ``body``. Names may be bytes (folders
    whose names are not UTF-8)."""
    if text is None:
        label = name or os.fsdecode(folder)
        text = f"---\nname: {label}\ndescription: {description}\n{extra}---\n\n{body}"
    folder_path = os.path.join(os.fsencode(root), os.fsencode(folder))
    os.makedirs(folder_path, exist_ok=True)
    path = os.path.join(folder_path, b"SKILL.md")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return Path(os.fsdecode(path))


@pytest.fixture(scope="module")
def bundled(tmp_path_factory: pytest.TempPathFactory, encoder: Encoder) -> Router:
    """The bundled library as genkit reads it, routed whatever its size, built with the shared model."""
    from router.config import RouterConfig
    from router.routing import Router
    from router.serve.service import SharedEncoder

    folder = tmp_path_factory.mktemp("bundled") / "idx"
    return Router.from_skills([str(BUNDLED)], "genkit", RouterConfig(route_above=0), index_folder=str(folder),
                              encoder=SharedEncoder(encoder))


class Served(NamedTuple):
    url: str
    service: Any
    library: Path
    root: Path


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A real server over a private copy of the bundled library (the module's ``SERVER_OPTIONS``, default genkit
    with a decision log that keeps the requests' text), stopped after the module."""
    from serve_support import copy_bundled, running

    root = tmp_path_factory.mktemp("server")
    library = copy_bundled(root / "skills")
    prepare = getattr(request.module, "prepare_library", None)
    if prepare is not None:
        prepare(library, root)
    options = getattr(request.module, "SERVER_OPTIONS", ["--profile", "genkit", "--log-requests", "text"])
    argv = ["--skills", str(library), "--index-dir", str(root / "idx"), "--log", str(root / "decisions.jsonl"),
            "--no-watch", *options]
    with running(argv, mcp=getattr(request.module, "SERVER_MCP", True),
                 token=getattr(request.module, "SERVER_TOKEN", None)) as (url, service):
        yield Served(url, service, library, root)


@pytest.fixture(scope="module")
def pg():
    """A real PostgreSQL + pgvector server for one test module (:class:`tests.pg_support.PgServer`), removed after."""
    from tests.pg_support import PgServer

    server = PgServer()
    yield server
    server.stop(remove=True)
