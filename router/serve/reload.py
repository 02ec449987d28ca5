"""Watching the skill folders: a change to a SKILL.md (or a routing-examples.txt) triggers a reload.

``watchfiles`` batches the events of one burst (an editor's save, a ``git checkout``) into one set; the reload
runs in this watcher's thread, so changes that arrive while it runs are gathered into the next one. Nothing else
in a skill folder is indexed, and the index folder's own writes must not trigger reloads, so only those two file
names count.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any, Callable, Sequence

log = logging.getLogger("router.serve")

WATCHED_NAMES = frozenset({"SKILL.md", "routing-examples.txt"})


def relevant(path: str) -> bool:
    return os.path.basename(path) in WATCHED_NAMES


def watch_folders(folders: Sequence[str], reload: Callable[[], Any], stop: threading.Event,
                  debounce_ms: int = 200, interval_s: float = 1.0) -> None:
    """Call ``reload`` after each burst of relevant changes under ``folders`` until ``stop`` is set, starting
    reloads at most every ``interval_s`` seconds: a reload re-reads every SKILL.md (about 0.2 s of
    interpreter time for 700 skills), and a folder that changes every second must not keep it busy."""
    import time

    from watchfiles import watch

    try:
        for changes in watch(*folders, watch_filter=lambda _change, path: relevant(path), debounce=debounce_ms,
                             stop_event=stop, raise_interrupt=False):
            if stop.is_set():
                return
            started = time.monotonic()
            log.info("%d skill file(s) changed: reloading", len(changes))
            reload()
            # changes made meanwhile are gathered by watchfiles and come as one set on the next turn
            if stop.wait(max(0.0, interval_s - (time.monotonic() - started))):
                return
    except Exception as exc:  # the server keeps serving the library it has; /v1/reindex still works
        log.error("stopped watching the skill folders: %s", exc)
