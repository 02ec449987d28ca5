"""The warm server a hook starts by itself: one ``skill-router serve`` per library, found through a state file.

A prompt hook is a fresh process on every prompt; routing a real library in it costs half a second or more, so
the hook asks a server that stays warm between prompts. No one has to start that server: the first hook that
finds none starts it detached (``serve --idle-exit 30m``, its output going to a log file) and every later hook
asks it. Files, all in :func:`run_folder` (``$XDG_RUNTIME_DIR/skill-router``, else
``${XDG_CACHE_HOME:-~/.cache}/skill-router/run``)::

    token                 the bearer token every auto-started server requires (0600; made once)
    <key>.json            the state of the server for library <key>: pid, port, token file, library, version
    <key>.lock            held (flock) while a hook decides whether to start that server: exactly one starts
    <key>.log             the server's stdout and stderr
    <key>.inprocess       how long the last in-process answer for that library took (a hook with less time left
                          than that does not try one)
    hook-failures.log     one line per hook that printed nothing because something failed (``doctor`` reads it)

A library is what a hook routes against: the harness profile, the working folder its harness discovery starts
from, and any explicit ``--skills``/``--catalog``/``--config``. Its key names its index folder in the user cache
folder too (:func:`index_folder`), so ``setup``, the server and the in-process fallback share one index.
Only the standard library is imported here: the hook imports this module on every prompt.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import subprocess

#: How long an auto-started server waits without a request before it exits.
IDLE_EXIT_S = 30 * 60
#: Largest server log kept: a longer one is emptied when the next server starts.
MAX_LOG_BYTES = 1 << 20
#: How long a measured in-process answer time is trusted (the machine's load changes).
ESTIMATE_TTL_S = 10 * 60
#: Lines kept in the hook failure log (older ones are dropped as new ones come).
MAX_FAILURES = 200
STATE_FORMAT = 1
#: The servers this process started: kept so that they outlive their Popen objects without a warning.
_STARTED: list[subprocess.Popen[bytes]] = []


def _sha256_hex(data: bytes) -> str:
    """SHA-256 of ``data`` in hex, from the interpreter's built-in implementation when it has one: :mod:`hashlib`
    loads OpenSSL (2-10 ms), and a hook pays that on every prompt for one short library key."""
    try:
        from _sha256 import sha256  # CPython 3.11 (3.12 renamed it _sha2)
    except ImportError:
        try:
            from _sha2 import sha256
        except ImportError:
            from hashlib import sha256
    return str(sha256(data).hexdigest())


def _cache_home() -> str:
    return os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")


def run_folder() -> str:
    """Where state files, the token and logs live: the user runtime folder when there is one, else the cache."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return os.path.join(runtime, "skill-router")
    return os.path.join(_cache_home(), "skill-router", "run")


def failure_log() -> str:
    return os.path.join(run_folder(), "hook-failures.log")


def version() -> str:
    from router import __version__

    return __version__


class Library(NamedTuple):
    """One library a hook routes against, as the options and the harness's working folder name it (an immutable
    value; a NamedTuple rather than a frozen dataclass because :mod:`dataclasses` imports :mod:`inspect`, 4-5 ms
    that a hook would pay on every prompt)."""

    profile: str
    cwd: str
    skills: tuple[str, ...] = ()
    catalog: str | None = None
    config: str | None = None
    model: str | None = None
    index_dir: str | None = None

    @classmethod
    def of(cls, profile: str, cwd: str, *, skills: Any = None, catalog: str | None = None,
           config: str | None = None, model: str | None = None, index_dir: str | None = None) -> Library:
        """Paths made absolute against ``cwd``; a ``skill-router.json`` in ``cwd`` is the config when none is
        named (as every command reads it)."""
        cwd = os.path.abspath(cwd)

        def absolute(path: str) -> str:
            return os.path.normpath(os.path.join(cwd, os.path.expanduser(path)))

        if config is None and os.path.isfile(os.path.join(cwd, "skill-router.json")):
            config = "skill-router.json"
        return cls(profile, cwd, tuple(absolute(s) for s in skills or ()), absolute(catalog) if catalog else None,
                   absolute(config) if config else None, model, absolute(index_dir) if index_dir else None)

    @property
    def key(self) -> str:
        """A short name for this library: what a state file, a log and an index folder are named by."""
        described = {"profile": self.profile, "cwd": self.cwd, "skills": list(self.skills), "catalog": self.catalog,
                     "config": self.config, "model": self.model, "index_dir": self.index_dir}
        text = json.dumps(described, sort_keys=True)
        return f"{self.profile}-{_sha256_hex(text.encode('utf-8', 'surrogatepass'))[:16]}"

    def describe(self) -> str:
        what = (f"catalogue {self.catalog}" if self.catalog else
                ", ".join(self.skills) if self.skills else f"the {self.profile} skills seen from {self.cwd}")
        return f"{what} (profile {self.profile})"

    def options(self) -> list[str]:
        """The command-line options that name this library (run from :attr:`cwd`)."""
        args = ["--profile", self.profile, "--index-dir", index_folder(self)]
        for root in self.skills:
            args += ["--skills", root]
        if self.catalog:
            args += ["--catalog", self.catalog]
        if self.config:
            args += ["--config", self.config]
        if self.model:
            args += ["--model", self.model]
        return args


def index_folder(library: Library) -> str:
    """The library's index folder: its own ``--index-dir``, else the one every command uses for it
    (:attr:`router.spec.LibrarySpec.index_folder`: the user cache folder for a harness's own folders or a library
    inside a git work tree), so ``skill-router index`` run there prepares what the hook and its server read."""
    if library.index_dir:
        return library.index_dir
    from router.spec import LibrarySpec

    return LibrarySpec.create(list(library.skills) or None, catalog=library.catalog, profile=library.profile,
                              cwd=library.cwd).index_folder


def state_file(library: Library) -> str:
    return os.path.join(run_folder(), f"{library.key}.json")


def log_file(library: Library) -> str:
    return os.path.join(run_folder(), f"{library.key}.log")


def token_file() -> str:
    return os.path.join(run_folder(), "token")


def _private_folder() -> str:
    folder = run_folder()
    os.makedirs(folder, mode=0o700, exist_ok=True)
    return folder


def ensure_token() -> str:
    """The token file's path, made (0600, 32 random bytes as hex) when it does not exist yet."""
    path = token_file()
    _private_folder()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        import secrets

        handle.write(secrets.token_hex(32) + "\n")
    return path


def read_token(path: str) -> str | None:
    from router.files import MAX_TOKEN_FILE_BYTES, read_text

    try:
        return read_text(path, MAX_TOKEN_FILE_BYTES, errors="replace").strip() or None
    except OSError:
        return None


# -- state ----------------------------------------------------------------------------------------------------------
class State(NamedTuple):
    """What a state file says about one server (a NamedTuple, as :class:`Library` is)."""

    pid: int
    port: int | None
    token_file: str | None
    key: str
    version: str
    started: float
    host: str = "127.0.0.1"

    @property
    def url(self) -> str | None:
        return f"http://{self.host}:{self.port}" if self.port else None

    def to_json(self) -> dict[str, Any]:
        return {"format": STATE_FORMAT, "pid": self.pid, "port": self.port, "host": self.host,
                "token_file": self.token_file, "key": self.key, "version": self.version, "started": self.started}


def read_state(path: str) -> State | None:
    """The state in ``path``, or None when there is none or it cannot be read (a stale or torn file)."""
    try:
        from router.files import read_text

        raw = json.loads(read_text(path, 65536))
        return State(pid=int(raw["pid"]), port=int(raw["port"]) if raw.get("port") else None,
                     token_file=raw.get("token_file"), key=str(raw["key"]), version=str(raw["version"]),
                     started=float(raw.get("started", 0)), host=str(raw.get("host", "127.0.0.1")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_state(path: str, state: State) -> None:
    """Write ``state`` atomically (a reader never sees half of it)."""
    _private_folder()
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(state.to_json(), handle)
    os.replace(temporary, path)


def remove_state(path: str, pid: int) -> None:
    """Remove ``path`` if it still names ``pid`` (a newer server's state is left alone)."""
    state = read_state(path)
    if state is not None and state.pid == pid:
        try:
            os.unlink(path)
        except OSError:
            pass


def alive(pid: int) -> bool:
    """True while ``pid`` is a running ``skill-router serve`` (a recycled pid running something else is not)."""
    if pid <= 0:
        return False
    for process in _STARTED:  # started here: it may not have reached exec yet, so its command line is still ours
        if process.pid == pid:
            return process.poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # another user's process: not ours
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            command = handle.read().split(b"\0")
    except OSError:
        return True  # no /proc (macOS): trust the pid
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            if handle.read().rsplit(b")", 1)[-1].split()[0] == b"Z":
                return False  # exited, not reaped yet
    except (OSError, IndexError):
        pass
    return b"serve" in command


def live_state(library: Library) -> State | None:
    """The state of this library's server when it runs this version, else None."""
    state = read_state(state_file(library))
    if state is None or state.key != library.key or state.version != version() or not alive(state.pid):
        return None
    return state


# -- starting and stopping ------------------------------------------------------------------------------------------
def serve_command(library: Library, *, idle_exit_s: float = IDLE_EXIT_S) -> list[str]:
    return [sys.executable, "-m", "router.cli", "serve", *library.options(), "--port", "0", "--no-mcp",
            "--token-file", ensure_token(), "--idle-exit", f"{idle_exit_s:g}", "--state-file", state_file(library)]


def start(library: Library, *, idle_exit_s: float = IDLE_EXIT_S) -> tuple[State | None, bool]:
    """(state, started): the library's running server, or one started now, detached. Exactly one starts when
    several hooks call this at once: a hook that finds the lock taken starts nothing (another is starting it).
    A state file naming a dead process or another version is replaced (the other version's server is stopped)."""
    import fcntl
    import subprocess

    folder = _private_folder()
    lock = os.open(os.path.join(folder, f"{library.key}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return read_state(state_file(library)), False
        path = state_file(library)
        old = read_state(path)
        if old is not None and alive(old.pid):
            if old.version == version() and old.key == library.key:
                return old, False
            stop_pid(old.pid)
        log = log_file(library)
        try:
            if os.path.getsize(log) > MAX_LOG_BYTES:
                os.truncate(log, 0)
        except OSError:
            pass
        with open(log, "ab") as output:
            output.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} starting for {library.describe()}\n".encode())
            output.flush()
            process = subprocess.Popen(serve_command(library, idle_exit_s=idle_exit_s), cwd=library.cwd,
                                       stdin=subprocess.DEVNULL, stdout=output, stderr=output,
                                       start_new_session=True, close_fds=True)
        _STARTED.append(process)
        state = State(pid=process.pid, port=None, token_file=token_file(), key=library.key, version=version(),
                      started=time.time())
        write_state(path, state)  # the server rewrites it with its port once it listens
        return state, True
    finally:
        os.close(lock)


def wait_ready(library: Library, timeout: float) -> State | None:
    """The state once the server listens and its library is loaded (``/readyz`` 200), within ``timeout``."""
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = live_state(library)
        if state is not None and state.url:
            request = urllib.request.Request(state.url + "/readyz", headers=auth_headers(state))
            opener = _opener()
            try:
                with opener.open(request, timeout=max(0.1, min(2.0, deadline - time.monotonic()))) as answer:
                    if answer.status == 200:
                        return state
            except OSError:
                pass
        elif read_state(state_file(library)) is None:
            return None
        time.sleep(0.1)
    return None


def _opener() -> Any:
    import urllib.request

    return urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never through a proxy


def auth_headers(state: State) -> dict[str, str]:
    token = read_token(state.token_file) if state.token_file else None
    return {"Authorization": f"Bearer {token}"} if token else {}


def stop_pid(pid: int, timeout: float = 10.0) -> bool:
    """SIGTERM ``pid`` (a server) and wait for it to go; SIGKILL after ``timeout``. True when it is gone."""
    import signal

    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return True


def states() -> list[tuple[str, State]]:
    """Every state file in the run folder, with its state."""
    folder = run_folder()
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    found = []
    for name in names:
        if name.endswith(".json"):
            state = read_state(os.path.join(folder, name))
            if state is not None:
                found.append((os.path.join(folder, name), state))
    return found


def stop_all(key: str | None = None) -> list[State]:
    """Stop every auto-started server (or the one for library ``key``); the states of those that ran."""
    stopped = []
    for path, state in states():
        if key is not None and state.key != key:
            continue
        if alive(state.pid):
            stop_pid(state.pid)
            stopped.append(state)
        remove_state(path, state.pid)
    return stopped


# -- the hook failure log -------------------------------------------------------------------------------------------
def record_failure(harness: str, message: str) -> None:
    """Append one line to :func:`failure_log` (kept to the last :data:`MAX_FAILURES` lines). Never raises."""
    try:
        path = failure_log()
        _private_folder()
        line = json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "harness": harness, "message": message})
        with open(path, "a+", encoding="utf-8", errors="replace") as handle:
            handle.write(line + "\n")
            handle.seek(0)
            lines = handle.readlines()
        if len(lines) > MAX_FAILURES:  # a failure is rare: reading the small file back costs nothing a user sees
            with open(path, "w", encoding="utf-8") as handle:
                handle.writelines(lines[-MAX_FAILURES:])
    except OSError:
        pass


def in_process_file(library: Library) -> str:
    return os.path.join(run_folder(), f"{library.key}.inprocess")


def in_process_estimate(library: Library, now: float | None = None) -> float | None:
    """Seconds the last in-process answer for ``library`` took (or at least took, when it ran out of time), if
    measured in the last :data:`ESTIMATE_TTL_S` seconds; else None."""
    from router.files import read_text

    try:
        seconds, when = (float(x) for x in read_text(in_process_file(library), 100, errors="replace").split())
    except (OSError, ValueError):
        return None
    now = time.time() if now is None else now
    return seconds if 0 <= now - when <= ESTIMATE_TTL_S and seconds >= 0 else None


def record_in_process(library: Library, seconds: float, *, at_least: bool = False) -> None:
    """Keep how long an in-process answer took (``at_least``: it was abandoned after ``seconds``, so keep the
    larger of that and the last measure). Never raises."""
    if at_least:
        seconds = max(seconds, in_process_estimate(library) or 0.0)
    try:
        path = in_process_file(library)
        _private_folder()
        temporary = f"{path}.{os.getpid()}.tmp"
        with open(temporary, "w", encoding="ascii") as handle:
            handle.write(f"{seconds:.3f} {time.time():.3f}\n")
        os.replace(temporary, path)
    except OSError:
        pass


def failures(limit: int = 5) -> list[dict[str, Any]]:
    """The last ``limit`` hook failures, oldest first."""
    from router.files import read_text

    try:
        lines = read_text(failure_log(), 1 << 20, errors="replace").splitlines()[-limit:]
    except OSError:
        return []
    found = []
    for line in lines:
        try:
            found.append(json.loads(line))
        except ValueError:
            continue
    return found


def ask(library: Library, path: str, body: dict[str, Any], *, timeout: float = 60.0) -> dict[str, Any]:
    """POST ``body`` to ``path`` on the library's warm server, starting it (and waiting for it to load) when none
    runs: for commands (``route --daemon``, ``setup``, ``doctor``), which may wait, unlike a prompt hook."""
    from router.errors import ConfigError

    state = live_state(library)
    if state is None:
        start(library)
    state = wait_ready(library, timeout)
    if state is None or not state.url:
        raise ConfigError(f"the warm server for {library.describe()} did not become ready within {timeout:g} s: "
                          f"see its log {log_file(library)}")
    import urllib.error
    import urllib.request

    request = urllib.request.Request(state.url + path, data=json.dumps(body).encode("utf-8"), method="POST",
                                     headers={"Content-Type": "application/json", **auth_headers(state)})
    opener = _opener()
    try:
        with opener.open(request, timeout=timeout) as answer:
            return dict(json.loads(answer.read().decode("utf-8")))
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace")[:300]
        raise ConfigError(f"the warm server at {state.url} answered HTTP {exc.code} to {path}: {detail}") from None
    except OSError as exc:
        raise ConfigError(f"cannot reach the warm server at {state.url}: {exc}: run 'skill-router stop' and try "
                          "again") from None
