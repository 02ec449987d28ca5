"""The decision log: one JSONL record per routed request and one per skill loaded, and what it teaches.

Records (one JSON object a line, UTF-8)::

    {"type": "route", "time": ISO-8601, "id": request id, "source": "route" | "hook:claude-code" | "mcp" | ...,
     "session": str | null, "request": text (--log-requests text) | "sha256": hex (hash) | neither (off),
     "k": int | null, "shown": [{"id", "name", "score", "rank"}], "abstained": bool, "confidence": float}
    {"type": "load", "time": ..., "id": ..., "source": "tool" | "mcp", "session": ..., "skill": skill id,
     "after": id of the routing it follows | null, "route_id": the request id the caller named | null,
     "shown": bool | null, "rank": int | null}

A load is linked to the routing named by the caller (``route_id``), else to the last routing of the same session,
else to the last routing of any session within :data:`LINK_WINDOW_S`. Each record is appended and flushed on its
own, so a crash loses nothing already answered; the file rotates by size (``LOG.1`` is the newest old file).

Records may hold prompts: the file is created 0600, in a folder created 0700. A failure to log never fails the
request being answered: a log deleted or replaced while serving is reopened (as ``WatchedFileHandler`` does), a
rotation that fails (a folder at ``LOG.1``, a full disk) leaves the current file open and is retried at most every
:data:`RETRY_S` seconds, and each failure is counted and named by :meth:`DecisionLog.health` (``/readyz``), the
``on_failure`` callback (``/metrics``) and the server log.

``skill-router learn --from-log`` turns each load that names its routing's request id (``route_id``), when that
routing logged its text, into an example request of the loaded skill (shown or not: a skill loaded although the
router did not show it is the most useful example). A load that names no request id is counted, never learned
from: the last routing before it may be any other request (a search, another user), and learning its text would
teach the router a wrong example. ``skill-router eval --from-log`` reports how often the loaded skill was among
those shown.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import secrets
import stat
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence, TextIO

from router.errors import CatalogError, ConfigError
from router.files import NotRegularFileError, open_text
from router.safetext import safe_value

if TYPE_CHECKING:
    from router.ranking import Routing

#: One decision-log record, or a report built from them: JSON values by key (read back from JSON lines).
Record = dict[str, Any]

LINK_WINDOW_S = 15 * 60
RETRY_S = 30.0  # a failed rotation or reopen is tried again at most this often
_REMEMBERED = 4096

log = logging.getLogger("router.serve")


class RequestLogging(str, Enum):
    """What a routing record keeps of the request."""

    TEXT = "text"
    HASH = "hash"
    OFF = "off"

    @classmethod
    def parse(cls, value: "str | RequestLogging") -> "RequestLogging":
        try:
            return cls(value)
        except ValueError:
            raise ConfigError(f"--log-requests must be one of text, hash, off; got '{value}'") from None


def new_request_id() -> str:
    return secrets.token_hex(8)


def request_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class _Routed:
    time: float
    shown: tuple[str, ...]
    session: str | None


class DecisionLog:
    """Append-only JSONL decision log with size rotation; thread-safe.

    ``path=None`` keeps the in-memory links (so loads still report whether they were shown) but writes nothing.
    """

    def __init__(self, path: str | None, *, requests: str | RequestLogging = RequestLogging.HASH,
                 max_bytes: int = 10_000_000, backups: int = 5,
                 on_failure: Callable[[], object] | None = None) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
            raise ConfigError(f"--log-max-bytes must be a size in bytes of at least 1, got {max_bytes}: give e.g. "
                              "10000000, or --no-log to write no log")
        if isinstance(backups, bool) or not isinstance(backups, int) or backups < 1:
            raise ConfigError(f"the decision log keeps at least 1 old file, got {backups}")
        self.path = path
        self.requests = RequestLogging.parse(requests)
        self.max_bytes = max_bytes
        self.backups = backups
        self.on_failure = on_failure
        self.failures = 0
        self.error: str | None = None  # why the last write, rotation or reopen failed; None once one succeeds
        self._retry_at = 0.0
        self._lock = threading.Lock()
        self._handle: TextIO | None = None
        self._identity: tuple[int, int] | None = None
        self._recent: OrderedDict[str, _Routed] = OrderedDict()
        self._by_session: dict[str, str] = {}
        self._last: deque[str] = deque(maxlen=1)
        if path:
            try:
                self._open()
            except OSError as exc:
                raise ConfigError(f"cannot open the decision log '{path}': {exc.strerror or exc}") from None

    def close(self) -> None:
        with self._lock:
            self._close()

    def health(self) -> dict[str, str | bool | int | None]:
        """What ``/readyz`` reports of the log: ``ok`` false while writing fails, with the reason. Read without the
        lock, which a write stuck on a slow disk may hold: ``/readyz`` must answer even then."""
        error = self.error
        return {"path": self.path, "ok": error is None, "failures": self.failures, "error": error}

    # -- records ------------------------------------------------------------------------------------------------
    def routed(self, request_id: str, source: str, text: str, routing: Routing, *, k: int | None = None,
               session: str | None = None) -> None:
        """Record one routing (``routing`` is a :class:`router.routing.Routing`)."""
        shown_ids = {s.id for s in routing.shown}
        by_id = {m.id: m for m in routing.matches}
        shown = []
        for skill in routing.shown:
            match = by_id.get(skill.id)
            shown.append({"id": skill.id, "name": skill.name,
                          "score": round(match.score, 6) if match else None,
                          "rank": match.rank if match else None})
        record: Record = {"type": "route", "time": _now(), "id": request_id, "source": source,
                                  "session": session}
        if self.requests is RequestLogging.TEXT:
            record["request"] = text
        elif self.requests is RequestLogging.HASH:
            record["sha256"] = request_hash(text)
        record.update({"k": k, "shown": shown, "abstained": bool(routing.abstained),
                       "confidence": round(float(routing.confidence), 6), "routed": bool(routing.routed)})
        ordered = tuple(s["id"] for s in shown if s["id"] in shown_ids)
        with self._lock:
            self._recent[request_id] = _Routed(time.monotonic(), ordered, session)
            while len(self._recent) > _REMEMBERED:
                self._recent.popitem(last=False)
            if session:
                self._by_session[session] = request_id
                if len(self._by_session) > _REMEMBERED:
                    self._by_session.pop(next(iter(self._by_session)))
            self._last.append(request_id)
            self._write(record)

    def loaded(self, skill_id: str, source: str, *, route_id: str | None = None,
               session: str | None = None) -> Record:
        """Record that ``skill_id`` was loaded; returns the record (with the routing it was linked to)."""
        with self._lock:
            after = self._link(route_id, session)
            routed = self._recent.get(after) if after else None
            shown = None if routed is None else skill_id in routed.shown
            rank = routed.shown.index(skill_id) + 1 if routed is not None and shown else None
            record = {"type": "load", "time": _now(), "id": new_request_id(), "source": source, "session": session,
                      "skill": skill_id, "after": after, "route_id": route_id or None, "shown": shown, "rank": rank}
            self._write(record)
        return record

    def _link(self, route_id: str | None, session: str | None) -> str | None:
        if route_id:
            return route_id if route_id in self._recent else None
        candidate = self._by_session.get(session) if session else None
        if candidate is None and self._last:
            candidate = self._last[-1]
        routed = self._recent.get(candidate) if candidate else None
        if routed is None or time.monotonic() - routed.time > LINK_WINDOW_S:
            return None
        return candidate

    # -- writing (under the lock) --------------------------------------------------------------------------------
    def _open(self) -> None:
        """Open ``path`` for appending: the file 0600 (tightened if it was wider), a missing folder 0700."""
        assert self.path is not None
        folder = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(folder):
            os.makedirs(folder, mode=0o700, exist_ok=True)
        # Non-blocking: a FIFO at the path would block the open until a reader came; it is refused instead.
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK |
                         getattr(os, "O_CLOEXEC", 0), 0o600)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # a FIFO with no reader
                raise NotRegularFileError(errno.EINVAL, "not a regular file (a FIFO, a device or a socket)",
                                          self.path) from None
            raise
        try:
            status = os.fstat(fd)
            if not stat.S_ISREG(status.st_mode):
                raise NotRegularFileError(errno.EINVAL, "not a regular file (a FIFO, a device or a socket)",
                                          self.path)
            os.set_blocking(fd, True)
            if status.st_mode & 0o077:
                try:
                    os.fchmod(fd, 0o600)
                except OSError:  # not the owner: still written, as the file's owner allowed
                    pass
            handle = os.fdopen(fd, "a", encoding="utf-8", errors="replace")
        except BaseException:
            os.close(fd)
            raise
        self._handle = handle
        self._identity = (status.st_dev, status.st_ino)

    def _close(self) -> None:
        handle, self._handle, self._identity = self._handle, None, None
        if handle is not None:
            try:
                handle.close()
            except OSError:  # a flush that fails on close: the records it held were counted when written
                pass

    def _moved(self) -> bool:
        """True when ``path`` no longer names the open file (deleted, or replaced by another file)."""
        assert self.path is not None
        try:
            status = os.stat(self.path)
        except OSError:
            return True
        return (status.st_dev, status.st_ino) != self._identity

    def _failed(self, what: str, exc: BaseException | str) -> None:
        other = getattr(exc, "filename2", None)
        reason = (f"{what} '{self.path}': {getattr(exc, 'strerror', None) or exc}"
                  + (f" ('{other}')" if other else ""))
        self._retry_at = time.monotonic() + RETRY_S
        self._count()
        if reason != self.error:
            log.error("decision log: %s; requests are still answered (failures so far: %d)", reason, self.failures)
        self.error = reason

    def _count(self) -> None:
        self.failures += 1
        if self.on_failure is not None:
            try:
                self.on_failure()
            except Exception:  # a metric must never fail a request either
                pass

    def _write(self, record: Mapping[str, object]) -> None:
        if not self.path:
            return
        line = json.dumps(record, ensure_ascii=False) + "\n"
        retry = time.monotonic() >= self._retry_at
        if self._handle is None or self._moved():
            if self._handle is None and not retry:
                self._count()  # no file to write to, and too soon to try again: this record is lost
                return
            if self._handle is not None:
                log.error("decision log '%s' was removed or replaced while serving: writing a new one", self.path)
            self._close()
            try:
                self._open()
            except OSError as exc:
                self._failed("cannot reopen the decision log", exc)
                return
        handle = self._handle
        if handle is None:  # _open() always sets it; kept for the type checker
            return
        try:
            size = handle.tell()
            if size + len(line) > self.max_bytes and size > 0 and retry:
                self._rotate()
                handle = self._handle or handle
            handle.write(line)
            handle.flush()  # one record at a time: a crash loses nothing already answered
        except (OSError, ValueError) as exc:  # a full disk must not fail the request that is being answered
            self._failed("cannot write the decision log", exc)
            return
        if self.error is not None and time.monotonic() >= self._retry_at:
            self.error = None  # written, and nothing failed since the last retry: healthy again
            log.error("decision log '%s' is being written again", self.path)

    def _rotate(self) -> None:
        """Shift the old files and start a new one; on failure keep appending to the current file."""
        assert self.path is not None
        for n in range(1, self.backups + 1):  # only log files are moved: never a folder or a link put there
            older = f"{self.path}.{n}"
            if os.path.lexists(older) and not stat.S_ISREG(os.lstat(older).st_mode):
                self._failed("cannot rotate the decision log", f"'{older}' is not a log file: remove or rename it")
                return
        try:
            for n in range(self.backups - 1, 0, -1):
                older = f"{self.path}.{n}"
                if os.path.lexists(older):
                    os.replace(older, f"{self.path}.{n + 1}")
            os.replace(self.path, f"{self.path}.1")
        except OSError as exc:
            self._failed("cannot rotate the decision log", exc)
            return  # the current file stays open: the record is appended to it
        self._close()
        self._open()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


# -- reading ----------------------------------------------------------------------------------------------------
def log_files(path: str) -> list[str]:
    """``path`` and its rotated files, oldest first."""
    rotated = []
    n = 1
    while os.path.exists(f"{path}.{n}"):
        rotated.append(f"{path}.{n}")
        n += 1
    files = list(reversed(rotated))
    if os.path.exists(path):
        files.append(path)
    if not files:
        raise CatalogError(f"decision log '{path}' does not exist: start 'skill-router serve --log {path}' first")
    return files


def read_log(path: str) -> tuple[list[Record], int]:
    """(records, unreadable lines) from ``path`` and its rotated files; a torn last line is skipped."""
    records, bad = [], 0
    for name in log_files(path):
        try:
            with open_text(name, errors="replace") as handle:
                for line in handle:
                    if not line.strip():
                        continue
                    try:
                        record = json.loads(line)
                    except json.JSONDecodeError:
                        bad += 1
                        continue
                    if isinstance(record, dict) and record.get("type") in ("route", "load"):
                        records.append(safe_value(record))
                    else:
                        bad += 1
        except OSError as exc:
            raise CatalogError(f"cannot read decision log '{name}': {exc.strerror or exc}") from None
    return records, bad


def _pairs(records: Sequence[Record]) -> Iterator[tuple[Record | None, Record]]:
    routes = {r.get("id"): r for r in records if r.get("type") == "route"}
    for record in records:
        if record.get("type") == "load":
            yield routes.get(record.get("after")), record


def examples_from_log(path: str, known: set[str]) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Example requests by skill id: the text of the routing each load names by its request id (``route_id``).

    Counted, not used: loads that name no request id (``no_request_id``; also every load of a log written before
    loads kept the id they named), loads naming a routing the log does not hold (``unlinked``), routings logged
    without their text (``no_text``) and skills not in ``known`` (``unknown_skill``)."""
    records, bad = read_log(path)
    routes = {r.get("id"): r for r in records if r.get("type") == "route"}
    examples: dict[str, list[str]] = {}
    counts = {"loads": 0, "used": 0, "shown": 0, "not_shown": 0, "no_request_id": 0, "unlinked": 0, "no_text": 0,
              "unknown_skill": 0, "unreadable_lines": bad}
    for load in records:
        if load.get("type") != "load":
            continue
        counts["loads"] += 1
        named = load.get("route_id")
        if not isinstance(named, str) or not named:
            counts["no_request_id"] += 1
            continue
        route = routes.get(named)
        if route is None:
            counts["unlinked"] += 1
            continue
        text = route.get("request")
        if not isinstance(text, str) or not text.strip():
            counts["no_text"] += 1
            continue
        skill = load.get("skill")
        if skill not in known:
            counts["unknown_skill"] += 1
            continue
        shown = [row.get("id") for row in route.get("shown") or () if isinstance(row, dict)]
        counts["shown" if skill in shown else "not_shown"] += 1
        counts["used"] += 1
        examples.setdefault(skill, []).append(text)
    return examples, counts


def evaluate_log(path: str) -> Record:
    """How often the skill an agent loaded was among the skills the router had shown just before."""
    records, bad = read_log(path)
    routes = sum(1 for r in records if r.get("type") == "route")
    linked = shown = 0
    loads = unlinked = 0
    ranks: dict[str, int] = {}
    missed: dict[str, int] = {}
    for route, load in _pairs(records):
        loads += 1
        if route is None:
            unlinked += 1
            continue
        linked += 1
        if load.get("shown"):
            shown += 1
            ranks[str(load.get("rank"))] = ranks.get(str(load.get("rank")), 0) + 1
        else:
            missed[str(load.get("skill"))] = missed.get(str(load.get("skill")), 0) + 1
    return {"schema": "skill-router.log-eval/1", "routings": routes, "loads": loads, "linked_loads": linked,
            "unlinked_loads": unlinked, "loaded_was_shown": shown,
            "shown_rate": round(shown / linked, 4) if linked else None,
            "rank_of_loaded": dict(sorted(ranks.items())),
            "loaded_not_shown": dict(sorted(missed.items(), key=lambda kv: (-kv[1], kv[0]))),
            "unreadable_lines": bad}


def format_log_report(report: Record) -> str:
    rate = report["shown_rate"]
    lines = [f"{report['routings']} routings, {report['loads']} loads ({report['linked_loads']} linked to a routing, "
             f"{report['unlinked_loads']} not)",
             f"loaded skill was among those shown: {report['loaded_was_shown']} of {report['linked_loads']}"
             + (f" ({rate:.1%})" if rate is not None else "")]
    if report["rank_of_loaded"]:
        lines.append("rank of the loaded skill: " + ", ".join(f"{k}: {v}" for k, v in report["rank_of_loaded"].items()))
    if report["loaded_not_shown"]:
        lines.append("loaded although not shown: " + ", ".join(
            f"{k} ({v})" for k, v in list(report["loaded_not_shown"].items())[:10]))
    if report["unreadable_lines"]:
        lines.append(f"{report['unreadable_lines']} unreadable lines skipped")
    return "\n".join(lines) + "\n"
