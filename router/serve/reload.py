"""Watching the skill folders: a change to a SKILL.md (or a routing-examples.txt) triggers a reload.

``watchfiles`` batches the events of one burst (an editor's save, a ``git checkout``) into one set; the reload
runs in this watcher's thread, so changes that arrive while it runs are gathered into the next one. Nothing else
in a skill folder is indexed, and the index folder's own writes must not trigger reloads, so only those two file
names count, and folders added (a skill copied in whole). A watched folder that goes away is looked for again
every second, and the library reloaded when it comes back; a reload that fails is retried with backoff.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import time
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

if TYPE_CHECKING:
    from watchfiles import Change

log = logging.getLogger("router.serve")

WATCHED_NAMES = frozenset({"SKILL.md", "routing-examples.txt"})
MAX_BACKOFF_S = 30.0


def relevant(path: str) -> bool:
    return os.path.basename(path) in WATCHED_NAMES


def _keeper(roots: Sequence[str]) -> Callable[[Change, str], bool]:
    """The changes that count: a watched file name, or a folder added (a skill copied in whole: its SKILL.md is
    written before the watch of the new folder starts, so no event names it). Hidden folders, the index
    folder's temporary ones among them, never count."""
    from watchfiles import Change

    absolute = [os.path.abspath(r) for r in roots]

    def keep(change: Change, path: str) -> bool:
        if relevant(path):
            return True
        if change != Change.added:
            return False
        inside = next((os.path.relpath(path, r) for r in absolute if path.startswith(r + os.sep)),
                      os.path.basename(path))
        return not any(part.startswith(".") for part in inside.split(os.sep)) and os.path.isdir(path)

    return keep


def _present(folders: Sequence[str]) -> tuple[tuple[str, int, int], ...]:
    """The folders that exist now, each with its identity: a folder removed and made again is another folder,
    which a watch of the old one never hears about."""
    found = []
    for folder in folders:
        try:
            status = os.stat(folder)
        except OSError:
            continue
        if stat.S_ISDIR(status.st_mode):
            found.append((folder, status.st_dev, status.st_ino))
    return tuple(found)


def watch_folders(folders: Sequence[str], reload: Callable[[], object], stop: threading.Event,
                  debounce_ms: int = 200, interval_s: float = 1.0, poll_s: float = 1.0,
                  max_backoff_s: float = MAX_BACKOFF_S) -> None:
    """Call ``reload`` after each burst of relevant changes under ``folders`` until ``stop`` is set, starting
    reloads at most every ``interval_s`` seconds: a reload re-reads every SKILL.md (about 0.2 s of
    interpreter time for 700 skills), and a folder that changes every second must not keep it busy.

    The watch outlives its folders: every ``poll_s`` seconds it looks whether a folder went away or came (back),
    reloads then and watches what exists now. A reload that fails (its result's ``ok`` is false, or it raises)
    is retried after 1, 2, 4 ... up to ``max_backoff_s`` seconds until one succeeds; the previous library is
    served meanwhile."""
    from watchfiles import watch

    backoff = 0.0  # 0: the last reload succeeded
    retry_at = 0.0

    def run_reload() -> None:
        nonlocal backoff, retry_at
        try:
            result = reload()
            ok = bool(getattr(result, "ok", True))
        except Exception as exc:  # the server keeps serving the library it has
            log.error("reload failed: %s", exc)
            ok = False
        backoff = 0.0 if ok else min(max_backoff_s, max(1.0, backoff * 2))
        retry_at = time.monotonic() + backoff

    present = _present(folders)
    while not stop.is_set():
        restart = False
        try:
            if not present:  # nothing to watch: wait for a folder to appear
                if stop.wait(poll_s):
                    return
                changes: set[tuple[Change, str]] = set()
                batches: Iterator[set[tuple[Change, str]]] = iter([changes])
            else:
                watched = [f for f, _, _ in present]
                batches = watch(*watched, watch_filter=_keeper(watched),
                                debounce=debounce_ms, stop_event=stop, raise_interrupt=False,
                                rust_timeout=int(poll_s * 1000), yield_on_timeout=True)
            for changes in batches:
                if stop.is_set():
                    return
                now = _present(folders)
                moved = now != present
                due = backoff > 0 and time.monotonic() >= retry_at
                if not (changes or moved or due):
                    continue
                started = time.monotonic()
                if moved:
                    log.info("skill folders changed (%d of %d present): reloading", len(now), len(folders))
                elif changes:
                    log.info("%d skill file(s) changed: reloading", len(changes))
                else:
                    log.info("retrying the reload that failed")
                present = now
                run_reload()
                # changes made meanwhile are gathered by watchfiles and come as one set on the next turn
                if stop.wait(max(0.0, interval_s - (time.monotonic() - started))):
                    return
                if moved:
                    restart = True  # watch the folders that exist now
                    break
            if not restart and present and not stop.is_set():
                present = _present(folders)  # the watch ended by itself: start it again
        except Exception as exc:  # the server keeps serving the library it has; /v1/reindex still works
            log.error("watching the skill folders failed (%s): trying again", exc)
            if stop.wait(max(poll_s, backoff or 1.0)):
                return
            present = _present(folders)
