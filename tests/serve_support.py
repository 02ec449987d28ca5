"""Starting a real ``skill-router serve`` application on a free loopback port, for the serve tests."""

from __future__ import annotations

import shutil
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

import httpx

from conftest import write_skill  # noqa: F401 - the one helper, re-exported for the serve tests

BUNDLED = Path(__file__).resolve().parents[1] / "skills"


def copy_bundled(target: Path) -> Path:
    """A private copy of the bundled library (tests edit it)."""
    shutil.copytree(BUNDLED, target, ignore=shutil.ignore_patterns(".skill-router-index", "README.md"))
    return target


def serve_args(argv: Sequence[str]) -> Any:
    from router.cli import build_parser

    return build_parser().parse_args(["serve", *argv])


@contextmanager
def running(argv: Sequence[str], *, token: str | None = None, loopback: bool = True, mcp: bool = True,
            ready_timeout: float = 180.0) -> Iterator[tuple[str, Any]]:
    """(base URL, service) of a server built from ``skill-router serve`` options, stopped on exit."""
    import uvicorn

    from router.cli.serve import build_service
    from router.serve.app import create_app

    args = serve_args(argv)
    service, watch = build_service(args)
    app = create_app(service, token=token, loopback=loopback, mcp=mcp, watch=watch)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + ready_timeout
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        url = f"http://127.0.0.1:{port}"
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        with httpx.Client(base_url=url, headers=headers, timeout=30, trust_env=False) as client:
            while client.get("/readyz").status_code != 200:
                assert time.monotonic() < deadline, "the library did not load"
                time.sleep(0.1)
        yield url, service
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        service.close()
