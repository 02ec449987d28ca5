"""Commands that put the router in front of agents: serve (HTTP + MCP), mcp (stdio), hook."""

from __future__ import annotations

import argparse
import errno
import ipaddress
import os
import socket
import sys
import threading
from typing import Any, Callable

from router.cli.common import (add_library_options, add_router_options, index_store, library_source, make_router,
                               report_notes, router_config, spec_from)
from router.errors import ConfigError
from router.files import MAX_TOKEN_FILE_BYTES, read_user_text

DEFAULT_PORT = 8765
LOG_FILE = "decisions.jsonl"


def register(commands: Any) -> None:
    from router.serve import hooks

    p = commands.add_parser("serve", help="serve the router over HTTP and MCP (one warm process)")
    add_library_options(p)
    add_router_options(p)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; any other "
                                                       "address needs --token-file)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 picks a free one)")
    p.add_argument("--token-file", metavar="FILE", help="require 'Authorization: Bearer <token>' with the token "
                                                        "in FILE on every request")
    p.add_argument("--max-body", type=int, default=None, metavar="BYTES", help="largest request body (default 1 MiB)")
    p.add_argument("--no-mcp", action="store_true", help="do not mount the MCP endpoint at /mcp")
    p.add_argument("--exit-after", type=float, metavar="SECONDS", help="stop after this many seconds (tests, "
                                                                       "benchmarks)")
    p.add_argument("--idle-exit", type=duration, metavar="TIME", help="stop after this long without a request "
                                                                      "(e.g. 30m, 90s, 2h)")
    p.add_argument("--state-file", metavar="FILE", help="write the pid and port here once listening, and remove "
                                                        "it on exit (what hooks find an auto-started server by)")
    _service_arguments(p)
    p.set_defaults(run=cmd_serve)

    p = commands.add_parser("stop", help="stop the servers that hooks started by themselves")
    p.add_argument("--key", help="stop only the server of this library key (as 'doctor' shows it)")
    p.set_defaults(run=cmd_stop)

    p = commands.add_parser("mcp", help="serve the router as an MCP server on stdio")
    add_library_options(p)
    add_router_options(p)
    _service_arguments(p)
    p.set_defaults(run=cmd_mcp)

    p = commands.add_parser("hook", help="answer a Claude Code or Codex UserPromptSubmit hook (JSON on stdin)",
                            description="Reads the hook JSON on stdin and prints the skills that fit as "
                                        "additionalContext. Always exits 0: on any failure it prints nothing and "
                                        "one line on stderr.")
    hooks.add_arguments(p)
    p.set_defaults(run=lambda args: hooks.answer(args, sys.stdin, sys.stdout, sys.stderr))


def _service_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--log", metavar="FILE", help=f"decision log (default: {LOG_FILE} in the index folder)")
    p.add_argument("--no-log", action="store_true", help="write no decision log")
    p.add_argument("--log-requests", choices=("text", "hash", "off"), default="hash",
                   help="what the log keeps of each request: its text (needed by learn --from-log), its SHA-256 "
                        "(default), or nothing")
    p.add_argument("--log-max-bytes", type=int, default=10_000_000, metavar="BYTES",
                   help="rotate the log past this size (default 10 MB; 5 old files kept)")
    p.add_argument("--no-watch", action="store_true", help="do not reload when a SKILL.md changes")
    p.add_argument("--request-timeout", type=float, default=10.0, metavar="SECONDS",
                   help="give up a request (HTTP 503, or an MCP tool error) not answered within this time "
                        "(default 10; /v1/reindex and the /mcp stream itself have no deadline)")
    p.add_argument("--reload-interval", type=float, default=1.0, metavar="SECONDS",
                   help="start watched reloads at most this often (default 1; edits made meanwhile are gathered)")
    p.add_argument("--encoder", choices=("auto", "onnx", "torch"), default="auto",
                   help="how requests are embedded: onnxruntime on the model's ONNX export (exported once and "
                        "cached; the same vectors), or torch; auto: onnx where it works (default)")
    p.add_argument("--threads", type=int, default=1, metavar="N",
                   help="torch threads for embedding requests (default 1: batches are encoded one at a time, and "
                        "one thread keeps latency steady on a shared machine; 0 leaves torch's default)")


_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def duration(text: str) -> float:
    """An argparse type: seconds, or a number followed by s, m or h (``30m``)."""
    value = text.strip().lower()
    scale = _UNITS.get(value[-1:], None)
    try:
        seconds = float(value[:-1] if scale else value) * (scale or 1.0)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"a time must be above 0, as seconds or with s, m or h (30m), got {text!r}")
    return seconds


def check_numbers(args: Any) -> None:
    """Refuse a size, count or time that cannot work, naming the flag and a value that does (exit 2)."""
    def positive(flag: str, value: float | None, example: str, *, zero: str | None = None) -> None:
        if value is None or value > 0 or (zero is not None and value == 0):
            return
        also = f", or 0 to {zero}" if zero else ""
        raise ConfigError(f"{flag} must be above 0, got {value:g}: give e.g. {example}{also}")

    positive("--log-max-bytes", getattr(args, "log_max_bytes", None), "10000000 (10 MB), or --no-log to write no log")
    positive("--reload-interval", getattr(args, "reload_interval", None), "1")
    positive("--threads", getattr(args, "threads", None), "1", zero="leave torch's default")
    positive("--max-body", getattr(args, "max_body", None), "1048576 (1 MiB)")
    positive("--request-timeout", getattr(args, "request_timeout", None), "10")
    positive("--exit-after", getattr(args, "exit_after", None), "60")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def read_token(path: str) -> str:
    token = read_user_text(path, "--token-file", ConfigError, limit=MAX_TOKEN_FILE_BYTES, errors="replace").strip()
    if not token:
        raise ConfigError(f"--token-file '{path}' is empty: put a long random token in it")
    return token


def build_service(args: Any) -> tuple[Any, list[str]]:
    """The service the options describe (not loaded yet) and the folders to watch."""
    from router.serve.log import DecisionLog
    from router.serve.metrics import Metrics
    from router.pgwrite import publish_library
    from router.serve.service import DEFAULT_DEADLINE_S, Service

    check_numbers(args)
    spec = spec_from(args)  # the one description of the library: every reload reads the same folders
    factory: Callable[[Any], Any]
    if getattr(args, "index_url", None):  # a replica: the catalogue comes from the database, each generation as
        from router.pgstore import Replica, database  # its changed rows; no skill folder or catalogue is read

        config = router_config(args, spec)
        replica = Replica(spec, config, getattr(args, "database", None) or database(args.index_url))
        replica.probe()  # a wrong URL, or a database without this library's index, fails here, before listening
        factory = replica
    else:
        first = library_source(args, spec=spec)  # discovery only: a wrong --skills or --catalog fails here, before
        report_notes(first.notes)  # listening
        config = first.config

        def factory(encoder: Any) -> Any:
            return make_router(args, encoder=encoder, spec=spec)
    decision_log = None
    if not args.no_log:
        folder = None if index_store(args, config) is not None else spec.index_folder
        path = args.log or os.path.join(folder or ".", LOG_FILE)
        decision_log = DecisionLog(path, requests=args.log_requests, max_bytes=args.log_max_bytes)
    service = Service(factory, decision_log=decision_log, metrics=Metrics(), torch_threads=args.threads or None,
                      reload_interval=args.reload_interval, encoder=args.encoder, model_name=config.model,
                      deadline_s=getattr(args, "request_timeout", None) or DEFAULT_DEADLINE_S,
                      publish=(lambda encoder: publish_library(library_source(args, encoder=encoder, spec=spec)))
                      if config.index_url else None)
    if config.index_url:  # replicas swap to each generation an index commits, and watch no files
        from router.pgstore import follow

        follow(service, config.index_url)
        return service, []
    # codex and claude-code with no --skills read where their harness reads: those folders are watched
    watch = [] if args.no_watch or spec.catalog is not None else list(spec.folders)
    return service, watch


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (not listening yet), handed to uvicorn: a busy port is refused here, in one
    line, before anything is loaded or "listening" is printed, and no other process can take the port between
    this check and the server's start."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise ConfigError(f"--host {host}: not an address this machine can listen on ({exc.strerror}): give an "
                          "address such as 127.0.0.1") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: a restart needs no wait
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(f"port {port} on {host} is already in use: stop the other server or pass --port N "
                              "(0 picks a free one)") from None
        if exc.errno == errno.EACCES:
            raise ConfigError(f"port {port} on {host} needs privileges this process does not have: pass --port N "
                              "with N above 1023 (0 picks a free one)") from None
        raise ConfigError(f"cannot listen on {host} port {port}: {exc.strerror or exc}: pass another --host or "
                          "--port") from None
    sock.set_inheritable(True)
    return sock


def _missing(exc: ImportError) -> ConfigError:
    return ConfigError(f"{exc.name or 'a server package'} is not installed: pip install 'skill-router[serve]'")


def cmd_serve(args: Any) -> int:
    try:
        import uvicorn

        from router.serve.app import create_app
    except ImportError as exc:
        raise _missing(exc) from None
    loopback = is_loopback(args.host)
    if not loopback and not args.token_file:
        raise ConfigError(f"refusing to listen on {args.host} without --token-file: any host that can reach it "
                          "could use it; give --token-file FILE, or keep the default --host 127.0.0.1")
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be 0..65535, got {args.port}")
    token = read_token(args.token_file) if args.token_file else None
    check_numbers(args)
    from router.serve.service import limit_arenas

    limit_arenas()  # before any thread starts
    sock = bind(args.host, args.port)
    try:
        service, watch = build_service(args)
    except BaseException:
        sock.close()
        raise
    from router.serve.schemas import MAX_BODY_BYTES

    app: Any = create_app(service, token=token, loopback=loopback, max_body=args.max_body or MAX_BODY_BYTES,
                     mcp=not args.no_mcp, watch=watch)
    port = sock.getsockname()[1]
    servers: list[Any] = []
    if args.idle_exit:
        app = IdleWatch(app, args.idle_exit, lambda: setattr(servers[0], "should_exit", True))
    server = uvicorn.Server(uvicorn.Config(app, host=args.host, port=port, log_level="warning",
                                           access_log=False, timeout_graceful_shutdown=3))
    servers.append(server)
    if args.exit_after:
        timer = threading.Timer(args.exit_after, lambda: setattr(server, "should_exit", True))
        timer.daemon = True
        timer.start()
    shown = f"[{args.host}]" if ":" in args.host and not args.host.startswith("[") else args.host
    print(f"skill-router serve: listening on http://{shown}:{port} (loading the library; GET /readyz)",
          file=sys.stderr, flush=True)
    if args.state_file:
        write_state_file(args, port)
    try:
        server.run(sockets=[sock])
    finally:
        if args.state_file:
            from router import daemon

            daemon.remove_state(args.state_file, os.getpid())
        service.close()
        sock.close()
    return 0


def write_state_file(args: Any, port: int) -> None:
    import time

    from router import daemon

    key = os.path.basename(args.state_file).removesuffix(".json")
    old = daemon.read_state(args.state_file)
    daemon.write_state(args.state_file, daemon.State(
        pid=os.getpid(), port=port, host=args.host, token_file=os.path.abspath(args.token_file) if args.token_file
        else None, key=old.key if old is not None else key, version=daemon.version(), started=time.time()))


class IdleWatch:
    """ASGI middleware that calls ``stop`` once no request has been under way for ``seconds``."""

    def __init__(self, app: Any, seconds: float, stop: Any) -> None:
        import time

        self.app, self.seconds, self.stop = app, seconds, stop
        self.busy = 0
        self.last = time.monotonic()
        watcher = threading.Thread(target=self._watch, daemon=True, name="skill-router-idle")
        watcher.start()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        import time

        if scope.get("type") != "http":
            return await self.app(scope, receive, send)
        self.busy += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.busy -= 1
            self.last = time.monotonic()

    def _watch(self) -> None:
        import time

        while True:
            time.sleep(min(self.seconds / 4, 5.0))
            if not self.busy and time.monotonic() - self.last >= self.seconds:
                print(f"skill-router serve: no request for {self.seconds:g} s: stopping", file=sys.stderr,
                      flush=True)
                self.stop()
                return


def cmd_stop(args: Any) -> int:
    from router import daemon

    stopped = daemon.stop_all(args.key)
    for state in stopped:
        print(f"stopped the server for {state.key} (pid {state.pid}, port {state.port})")
    if not stopped:
        print("no auto-started server was running")
    return 0


def cmd_mcp(args: Any) -> int:
    try:
        from router.serve.mcp import build_mcp
    except ImportError as exc:
        raise _missing(exc) from None
    service, watch = build_service(args)
    result = service.load()
    for error in result.errors:
        print(f"note: skill not loaded: {error}", file=sys.stderr)
    stop = threading.Event()
    if watch:
        service.watch(watch, stop)
    try:
        build_mcp(service).run()  # stdio: stdout carries the protocol, everything else goes to stderr
    finally:
        stop.set()
        service.close()
    return 0
