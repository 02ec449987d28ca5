"""Progress of the long steps (model export, embedding, index build, eval, overlap, tune), on a terminal only.

Library code reports what it is doing without caring whether anyone watches::

    with progress.step("embedding 542 texts", total=542) as advance:
        for batch in batches:
            ...
            advance(len(batch))

    for request in progress.track(requests, "evaluating 4 retrievers"):
        ...

By default every call is a no-op (a server, a test, a pipe). The command line wraps each command in
:func:`on_terminal`, which shows the steps with ``rich`` on stderr when stderr is a terminal: stdout, ``--json``
and piped output are never touched. A step still shown when it ends, after a second or more, leaves one line
saying how long it took, so a long run shows in a terminal's scrollback what it spent its time on.
:mod:`indexes` never imports this module: it takes the ``advance`` callable as its ``progress`` argument.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from contextvars import ContextVar
from typing import Any, Callable, Iterable, Iterator, TextIO, TypeVar

T = TypeVar("T")

#: A step that ends after this many seconds leaves a line saying what it did and how long it took.
KEEP_AFTER_SECONDS = 1.0

Advance = Callable[[int], None]


class _Quiet:
    """The default reporter: shows nothing."""

    active = False

    @contextlib.contextmanager
    def step(self, description: str, total: int | None) -> Iterator[Advance]:
        yield _ignore

    def note(self, text: str) -> None:
        pass


def _ignore(n: int = 1) -> None:
    pass


class _Rich:
    """Steps as ``rich`` progress rows on one live display (nested steps are rows below their parent)."""

    def __init__(self, stream: TextIO) -> None:
        from rich.console import Console

        self.console = Console(file=stream, stderr=stream is sys.stderr, highlight=False)
        self._progress: Any = None
        self._open = 0
        # Only the command's own thread draws: a server's worker threads (which inherit the context) stay quiet.
        self._thread = threading.get_ident()

    def _display(self) -> Any:
        if self._progress is None:
            from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
            from rich.text import Text

            class Bar(BarColumn):
                def render(self, task: Any) -> Any:
                    return super().render(task) if task.total is not None else Text("")

            # A step without a total shows its spinner and time only: no pulsing bar, no "0/?".
            self._progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), Bar(bar_width=24),
                                      TextColumn("{task.fields[count]}"), TimeElapsedColumn(), console=self.console,
                                      transient=True)
            self._progress.start()
        return self._progress

    @property
    def active(self) -> bool:
        return threading.get_ident() == self._thread

    @contextlib.contextmanager
    def step(self, description: str, total: int | None) -> Iterator[Advance]:
        from rich.markup import escape

        if not self.active:
            yield _ignore
            return
        shown = escape(description)
        display = self._display()
        task = display.add_task(shown, total=total, count=f"0/{total:,}" if total is not None else "")
        self._open += 1
        start = time.perf_counter()
        done = 0

        def advance(n: int = 1) -> None:
            nonlocal done
            done += n
            display.update(task, advance=n, count=f"{done:,}/{total:,}" if total is not None else "")

        try:
            yield advance
        finally:
            display.remove_task(task)
            self._open -= 1
            elapsed = time.perf_counter() - start
            if elapsed >= KEEP_AFTER_SECONDS:
                display.console.print(f"[dim]done: {shown} ({elapsed:.1f} s)[/dim]", soft_wrap=True)
            if not self._open:
                display.stop()
                self._progress = None

    def note(self, text: str) -> None:
        from rich.markup import escape

        if not self.active:
            return
        target = self._progress.console if self._progress is not None else self.console
        target.print(f"note: {escape(text)}", soft_wrap=True)  # one line, however narrow the terminal


_QUIET = _Quiet()
_reporter: ContextVar[_Quiet | _Rich] = ContextVar("skill_router_progress", default=_QUIET)


def active() -> bool:
    """True when steps are shown (a terminal is watching)."""
    return _reporter.get().active


@contextlib.contextmanager
def step(description: str, total: int | None = None) -> Iterator[Advance]:
    """Report one step for the duration of the block; the block calls the yielded ``advance(n)`` as work is done
    (``total`` None shows a spinner and the time spent)."""
    with _reporter.get().step(description, total) as advance:
        yield advance


def track(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """``items``, one at a time, advancing a step of ``total`` (``len(items)`` when it has one)."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    with step(description, total) as advance:
        for item in items:
            yield item
            advance(1)


def note(text: str) -> None:
    """A one-line note for the person watching (nothing when no terminal is watching)."""
    _reporter.get().note(text)


@contextlib.contextmanager
def on_terminal(stream: TextIO | None = None) -> Iterator[None]:
    """Show the steps reported inside the block on ``stream`` (stderr) when it is a terminal; otherwise nothing."""
    stream = stream if stream is not None else sys.stderr
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        terminal = False
    if not terminal:
        yield
        return
    token = _reporter.set(_Rich(stream))
    try:
        yield
    finally:
        _reporter.reset(token)
