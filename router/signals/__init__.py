"""The signals a router fuses: one module per signal in this package, each one score per skill.

A signal (:class:`router.signals.base.Signal`) declares its name (the key of its weight in
``RouterConfig.weights`` and of its scores), whether it is lexical (it scores only the skills sharing a word with
the request: reciprocal rank fusion ranks only those), its default weight, the text it indexes for a skill, how its
index is built and how a request is scored. Every module here that defines ``SIGNAL`` is one; adding a signal is
adding one file (and its tests). The bundled ones:

- ``bm25``: lexical BM25 over the index text (``indexes.bm25``).
- ``dense``: cosine of the request with the index text's embedding (``indexes.dense``).
- ``examples``: cosine of the request with the nearest example request of each skill. A skill's own index text
  counts as one of its examples, so a skill without examples keeps its description's score and is not pushed
  down by skills that have many.
- ``body_bm25`` / ``body_dense``: BM25 over, and cosine with the embedding of, part of each skill's SKILL.md body
  (``RouterConfig.body``). Separate signals, so the description keeps its own weight; a skill without body text
  scores 0 in ``body_bm25`` and keeps its description's cosine in ``body_dense``. Absent when no skill has body
  text (a tool catalogue), so such libraries route exactly as without them; ``body_dense`` is built only when it
  weighs something (the default weighs it 0, so bodies are not embedded).
- ``passages`` / ``passage_dense``: the best BM25 passage of the whole body, and the request's mean cosine with the
  embedded first passages of the body (its head), each absent without bodies.

:func:`build_signals` (:mod:`router.signals.build`) builds them with the index folder as a cache. Importing this
package loads only the declarations (no numpy): the config validates its weights against :func:`registry`.
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from router.signals.base import BuildJob, Signal

if TYPE_CHECKING:
    from router.signals.build import BuildReport, Signals, build_signals, example_scores

__all__ = ["BuildJob", "BuildReport", "Signal", "Signals", "build_signals", "example_scores", "lexical_names",
           "names", "registered", "registry", "steady_names"]

_NOT_SIGNALS = {"base", "build"}


def _load() -> dict[str, Signal]:
    found = []
    for module in pkgutil.iter_modules(__path__):
        if module.name in _NOT_SIGNALS:
            continue
        signal = getattr(importlib.import_module(f"{__name__}.{module.name}"), "SIGNAL", None)
        if signal is not None:
            found.append(signal)
    return {s.name: s for s in sorted(found, key=lambda s: (s.position, s.name))}


_REGISTRY = _load()


@contextlib.contextmanager
def registered(signal: Signal) -> Iterator[Signal]:
    """``signal`` in the registry while the block runs (a signal defined outside this package, as a test defines
    one); the registry is as before afterwards."""
    global _REGISTRY
    before = _REGISTRY
    if signal.name in before:
        raise ValueError(f"a signal named {signal.name!r} is registered already")
    _REGISTRY = {s.name: s for s in sorted([*before.values(), signal], key=lambda s: (s.position, s.name))}
    try:
        yield signal
    finally:
        _REGISTRY = before


def registry() -> dict[str, Signal]:
    """Every signal by name, in their declared order (the order of scores and of weights)."""
    return dict(_REGISTRY)


def names() -> tuple[str, ...]:
    """The signal names, in order: what ``RouterConfig.weights`` may hold."""
    return tuple(_REGISTRY)


def lexical_names() -> frozenset[str]:
    """The lexical signals: under reciprocal rank fusion each ranks only the skills it scores above 0."""
    return frozenset(name for name, s in _REGISTRY.items() if s.lexical)


def steady_names() -> frozenset[str]:
    """The signals that score every request alike: their rows are normalised and ranked once."""
    return frozenset(name for name, s in _REGISTRY.items() if getattr(s, "steady", False))


def __getattr__(name: str) -> Any:
    if name in ("BuildReport", "Signals", "build_signals", "example_scores", "EXAMPLE_BLOCK"):
        from router.signals import build

        return getattr(build, name)
    raise AttributeError(f"module 'router.signals' has no attribute {name!r}")
