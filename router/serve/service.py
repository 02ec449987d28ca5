"""The warm router behind every surface of ``skill-router serve`` and ``skill-router mcp``.

One :class:`Service` holds the current :class:`~router.routing.Router` (model and index loaded once) and replaces
it atomically on reload: each request takes the router once and uses only that one, so it sees the old library or
the new one, never a mix. Reloads build the new router in the background (only changed texts are embedded, the
embedding model is shared) while the old one keeps answering.

Routing goes through one worker thread (:class:`Batcher`): requests that arrive while it is busy are taken
together and routed with ``Router.route_many``, which embeds their texts in one model call. Every other piece of
CPU work a request needs (rendering, encoding skill data, calling the skill tool, reading a file) runs in a small
worker pool (:meth:`Service.run`): the event loop only moves bytes, so ``/healthz`` answers while the workers are
busy, and a request that runs past its deadline (:attr:`Service.deadline_s`) is answered 503.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import logging
import queue
import threading
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Sequence, TypeVar

from router.errors import ConfigError, SkillRouterError
from router.serve.payload import DeadlineExceeded

if TYPE_CHECKING:
    from router.ranking import Routing
    from router.routing import Query, Router
    from router.serve.log import DecisionLog
    from router.serve.metrics import Metrics

log = logging.getLogger("router.serve")

T = TypeVar("T")
#: An embedding model (:class:`indexes.Encoder` or its ONNX twin) as the router calls it.
Model = Any
Factory = Callable[["Model"], "Router"]  # the shared encoder -> a router, its index built as it is made
#: Reads the library as its folders hold it now and commits it to a shared store with the shared encoder
#: (router.pgwrite); returns how many texts it embedded.
Publish = Callable[["Model"], int]
DEFAULT_DEADLINE_S = 10.0


class SharedEncoder:
    """The embedding model shared by successive routers, one call at a time: the batcher and a reload building
    the next router both encode, and the fast tokenizer is not re-entrant."""

    def __init__(self, encoder: Model) -> None:
        self._encoder = encoder
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._encoder, name)

    def encode(self, texts: Sequence[str], **options: object) -> Model:
        with self._lock:
            return self._encoder.encode(texts, **options)

    def encode_requests(self, texts: Sequence[str]) -> Model:
        embed = getattr(self._encoder, "encode_requests", None)
        with self._lock:
            return self._encoder.encode(texts) if embed is None else embed(texts)


def route_many(router: Router, queries: Sequence[Query], k: int | None = None, pin: Sequence[str] = (),
               exclude: Sequence[str] = ()) -> list[Routing]:
    """Route several requests together with ``Router.route_many`` (one embedding call for all), pinning and
    excluding these skills (names or ids) for these requests only: the shared router is never changed."""
    return list(router.route_many(list(queries), k, pin=pin, exclude=exclude))


# -- micro-batching -------------------------------------------------------------------------------------------------
@dataclass
class _Job:
    router: Router
    query: Query
    k: int | None
    pin: tuple[str, ...]
    exclude: tuple[str, ...]
    future: concurrent.futures.Future[Routing] = field(default_factory=concurrent.futures.Future)
    queued: float = field(default_factory=time.perf_counter)
    started: float = 0.0
    finished: float = 0.0

    @property
    def key(self) -> tuple[int, int | None, tuple[str, ...], tuple[str, ...]]:
        return (id(self.router), self.k, self.pin, self.exclude)


class Busy(Exception):
    """Too many requests are waiting to be routed."""


class Batcher:
    """One worker thread that routes queued requests, all those waiting at once in one batch."""

    def __init__(self, *, max_batch: int = 64, max_pending: int = 2048,
                 on_batch: Callable[[int], None] | None = None) -> None:
        self.max_batch = max_batch
        self.max_pending = max_pending
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._on_batch = on_batch
        self._thread = threading.Thread(target=self._run, name="skill-router-batcher", daemon=True)
        self._thread.start()

    def submit(self, router: Router, query: Query, k: int | None, pin: Sequence[str] = (),
               exclude: Sequence[str] = ()) -> _Job:
        if self._queue.qsize() >= self.max_pending:
            raise Busy(f"{self.max_pending} requests are already waiting: retry shortly")
        job = _Job(router, query, k, tuple(pin), tuple(exclude))
        self._queue.put(job)
        return job

    async def route(self, router: Router, query: Query, k: int | None, pin: Sequence[str] = (),
                    exclude: Sequence[str] = ()) -> tuple[Routing, _Job]:
        job = self.submit(router, query, k, pin, exclude)
        return await asyncio.wrap_future(job.future), job

    def stop(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            batch = [job]
            stop = False
            while len(batch) < self.max_batch:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stop = True
                    break
                batch.append(more)
            live = [j for j in batch if j.future.set_running_or_notify_cancel()]
            if self._on_batch and live:
                self._on_batch(len(live))
            groups: dict[tuple[int, int | None, tuple[str, ...], tuple[str, ...]], list[_Job]] = {}
            for j in live:
                groups.setdefault(j.key, []).append(j)
            for jobs in groups.values():
                self._route(jobs)
            if stop:
                return

    @staticmethod
    def _route(jobs: list[_Job]) -> None:
        started = time.perf_counter()
        for job in jobs:
            job.started = started
        try:
            results = route_many(jobs[0].router, [j.query for j in jobs], jobs[0].k, jobs[0].pin, jobs[0].exclude)
        except Exception as exc:
            if len(jobs) == 1:
                jobs[0].finished = time.perf_counter()
                jobs[0].future.set_exception(exc)
                return
            for job in jobs:  # one bad request must not fail the others routed with it
                Batcher._route([job])
            return
        finished = time.perf_counter()
        for job, result in zip(jobs, results):
            job.finished = finished
            job.future.set_result(result)


# -- the service ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReloadResult:
    ok: bool
    skills: int
    embedded: int
    seconds: float
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    message: str = ""
    generation: int | None = None  # the store's generation the router reads (PostgreSQL); None for files

    def to_json(self) -> dict[str, bool | int | float | str | list[str] | None]:
        return {"ok": self.ok, "skills": self.skills, "embedded": self.embedded, "seconds": round(self.seconds, 3),
                "errors": list(self.errors), "warnings": list(self.warnings), "message": self.message,
                "generation": self.generation}


class Service:
    """The current router, its reloads, the batcher, and the decision log, shared by HTTP and MCP."""

    def __init__(self, factory: Factory, *, decision_log: DecisionLog | None = None, metrics: Metrics | None = None,
                 max_batch: int = 64, torch_threads: int | None = 1, reload_interval: float = 1.0,
                 encoder: str = "auto", deadline_s: float = DEFAULT_DEADLINE_S, workers: int = 4,
                 model: Model | None = None, model_name: str | None = None, publish: Publish | None = None) -> None:
        """``factory(encoder)`` builds a router embedding with ``encoder`` (its index built as it is made);
        ``model``: an encoder to embed with, else the encoder of the model ``model_name`` (the config's ``model``;
        None for the bundled one) is chosen by :meth:`load`. ``publish``: how :meth:`reindex` commits the library
        to a shared store (None: the index folder, which a reload's build writes itself)."""
        if not deadline_s > 0:
            raise ConfigError(f"--request-timeout must be a number of seconds above 0, got {deadline_s}")
        self._factory = factory
        self._model = model
        self._publish = publish
        self._publishing = threading.Lock()
        self.model_name = model_name
        self.deadline_s = deadline_s
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers,
                                                           thread_name_prefix="skill-router-worker")
        self.encoder_kind = encoder
        self.notes: list[str] = []
        self.torch_threads = torch_threads
        self.reload_interval = reload_interval
        self.decision_log = decision_log
        self.metrics = metrics
        self._router: Router | None = None
        self._encoder: SharedEncoder | None = None
        self._reload_state = threading.Condition()
        self._reloading = False
        self._requested = 0  # reload requests so far
        self._covered = 0  # requests that a finished reload started after
        self.reloads = 0
        self.last_reload: ReloadResult | None = None
        self.load_error: str | None = None
        self.reload_error: str | None = None  # why the last reload failed, until one succeeds
        self._loaded = threading.Event()
        self.batcher = Batcher(max_batch=max_batch,
                               on_batch=metrics.batch_size.observe if metrics is not None else None)
        if decision_log is not None and metrics is not None:
            decision_log.on_failure = metrics.log_failures.inc

    # The router is read once per request and never mutated after the swap, so a plain attribute is atomic.
    @property
    def router(self) -> Router:
        if self._router is None:
            raise NotReady("the library is still loading")
        return self._router

    @property
    def ready(self) -> bool:
        return self._router is not None

    def load(self) -> ReloadResult:
        """Build the first router (blocking): discover, then index what the index folder does not hold."""
        start = time.perf_counter()
        limit_blas_threads()
        return_large_blocks()
        self._encoder = SharedEncoder(self._model if self._model is not None else self._choose_encoder())
        router = self._factory(self._encoder)
        # A warm index loads without the model; load it now, so that the first request is not the one to wait.
        self._encoder.encode_requests(["warm up"])
        for note in router.notes:
            log.warning("%s", note)
        result = self._result(router, time.perf_counter() - start)
        self._swap(router, result)
        self._loaded.set()
        release_memory()
        # What the first load made lives as long as the server, or is freed by its reference count when a reload
        # replaces it: the collection after each reload walks only what was made since (a replica's next
        # generation shares the skills of the first), not the whole library again while requests wait.
        gc.freeze()
        return result

    def _choose_encoder(self) -> Model:
        """The ONNX export of the router's model on onnxruntime where it can be had (``auto``: exported once and
        cached; 2-4x the requests per CPU-second of torch, and no torch in the process), else the torch encoder."""
        from router import encoders

        notes: list[str] = []
        # One intra-op thread: requests are answered on every core at once (router.encoders, "Threads").
        encoder = encoders.choose(self.model_name, notes, kind=encoders.encoder_kind(self.encoder_kind),
                                  export=True, threads=1)
        for reason in notes:
            self.notes.append(reason)
            log.warning("%s", reason)
        from indexes import Encoder

        if not isinstance(encoder, Encoder):
            return encoder
        if self.torch_threads:
            # One thread per model call: the worker encodes one batch at a time, and a multi-threaded torch pool
            # collapses on a shared machine (its threads spin while other processes hold the cores).
            import torch

            torch.set_num_threads(self.torch_threads)
        return encoder  # the model a failed export already loaded is not loaded twice

    def reload(self) -> ReloadResult:
        """Rebuild from the skill folders and swap; on failure the current router stays and the error is kept.

        Requests coalesce: a caller waits for a running reload, and callers who asked while it ran share the one
        reload that starts after it (which sees every change made before they asked)."""
        self._loaded.wait()  # a change seen while the first load runs is reloaded after it
        with self._reload_state:
            self._requested += 1
            ticket = self._requested
            while self._reloading:
                self._reload_state.wait()
            if self._covered >= ticket:
                assert self.last_reload is not None
                return self.last_reload
            self._reloading = True
            covers = self._requested
        try:
            return self._reload()
        finally:
            with self._reload_state:
                self._reloading = False
                self._covered = covers
                self._reload_state.notify_all()

    def reindex(self) -> ReloadResult:
        """``POST /v1/reindex``: :meth:`reload`, after committing the library as its folders hold it now to the
        shared store when there is one (every replica reading that store swaps to it; this one by the reload).
        A commit that fails leaves the current router serving and is reported as a failed reload."""
        if self._publish is None:
            return self.reload()
        self._loaded.wait()
        start = time.perf_counter()
        try:
            with self._publishing:  # one commit at a time from this process; the store orders the others
                embedded = self._publish(self._encoder)
        except Exception as exc:
            message = failure_reason(exc)
            log.error("reindex failed, still serving the previous library: %s", message)
            return ReloadResult(False, len(self._router.skills) if self._router else 0, 0,
                                time.perf_counter() - start, message=message,
                                generation=self.last_reload.generation if self.last_reload else None)
        result = self.reload()
        if not result.ok:
            return result
        return replace(result, embedded=embedded, seconds=time.perf_counter() - start)

    def _reload(self) -> ReloadResult:
        start = time.perf_counter()
        before = set(self.last_reload.errors) if self.last_reload else set()
        try:
            router = self._factory(self._encoder)
        except Exception as exc:  # a broken library must not take the running service down
            message = failure_reason(exc)
            result = ReloadResult(False, len(self._router.skills) if self._router else 0, 0,
                                  time.perf_counter() - start, message=message)
            log.error("reload failed, still serving the previous library: %s", message)
            self.last_reload = result
            self.reload_error = message
            self._count_reload("error")
            return result
        result = self._result(router, time.perf_counter() - start)
        self._swap(router, result)
        self.reload_error = None
        for error in result.errors:
            if error not in before:
                log.warning("skill not loaded: %s", error)
        self._count_reload("ok")
        del router  # the only reference to the new router left is the service's: the old one can be freed
        release_memory()
        return result

    def watch(self, folders: Sequence[str], stop: threading.Event) -> None:
        """Reload in the background whenever a SKILL.md under ``folders`` changes, until ``stop`` is set."""
        from router.serve.reload import watch_folders

        threading.Thread(target=watch_folders, args=(list(folders), self.reload, stop), daemon=True,
                         name="skill-router-watch", kwargs={"interval_s": self.reload_interval}).start()

    def _result(self, router: Router, seconds: float) -> ReloadResult:
        found = router.registry.discovery
        generation = getattr(router.signals, "generation", None)  # router.pgstore.PgSignals: the one it reads
        return ReloadResult(True, len(router.skills), router.embedded_count, seconds,
                            tuple(found.errors) if found else (), tuple(found.warnings) if found else (),
                            generation=int(generation.id) if generation is not None else None)

    def _swap(self, router: Router, result: ReloadResult) -> None:
        # the report first: whoever sees the new library also sees the reload that made it
        self.last_reload = result
        self._router = router
        if self.metrics is not None:
            self.metrics.skills.set(len(router.skills))

    def _count_reload(self, outcome: str) -> None:
        self.reloads += 1
        if self.metrics is not None:
            self.metrics.reloads.labels(outcome=outcome).inc()
            self.metrics.reload_failing.set(0 if outcome == "ok" else 1)

    async def run(self, fn: Callable[..., T], *args: object) -> T:
        """``fn(*args)`` in the worker pool. The caller's deadline (the HTTP guard's, or :meth:`bounded`) stops
        the waiting; work that has not started yet is then dropped."""
        return await asyncio.wrap_future(self._pool.submit(fn, *args))

    async def bounded(self, awaitable: Awaitable[T]) -> T:
        """``awaitable`` under the request deadline: :class:`DeadlineExceeded` past it."""
        try:
            return await asyncio.wait_for(awaitable, self.deadline_s)
        except TimeoutError:
            raise DeadlineExceeded(self.deadline_s) from None

    async def route(self, query: Query, k: int | None = None, pin: Sequence[str] = (),
                    exclude: Sequence[str] = ()) -> tuple[Router, Routing, dict[str, float]]:
        """(router used, routing, timings in ms) for one request, batched with whatever else is waiting."""
        router = self.router
        start = time.perf_counter()
        routing, job = await self.batcher.route(router, query, k, pin, exclude)
        end = time.perf_counter()
        timings = {"queued_ms": round((job.started - job.queued) * 1000, 3),
                   "route_ms": round((job.finished - job.started) * 1000, 3),
                   "total_ms": round((end - start) * 1000, 3)}
        return router, routing, timings

    def close(self) -> None:
        self.batcher.stop()
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self.decision_log is not None:
            self.decision_log.close()


def failure_reason(exc: BaseException) -> str:
    """What a failed load or reload reports: the message of an error skill-router raised on purpose, else the
    kind of error and the operating system's reason (never ``None``)."""
    if isinstance(exc, SkillRouterError):
        return str(exc)
    if isinstance(exc, OSError):
        where = f" '{exc.filename}'" if exc.filename else ""
        return f"{type(exc).__name__}{where}: {exc.strerror or exc}"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def limit_blas_threads() -> None:
    """One BLAS thread for the whole process. A request's scores are small matrix products; with OpenBLAS's
    default pool (one thread per core) each product waited for a second thread that the encoder or another process
    held: 6.6 ms per request against 0.5 ms with one thread, measured on the ~700 corpus skills."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # an install of the serve extra from before it was declared: slower, still correct
        log.warning("threadpoolctl is not installed: BLAS keeps its thread pool (pip install 'skill-router[serve]')")
        return
    threadpool_limits(limits=1, user_api="blas")


#: Blocks from this size on are mapped on their own and unmapped when freed (glibc's M_MMAP_THRESHOLD).
LARGE_BLOCK = 1 << 20
#: Free memory glibc keeps at the top of a heap instead of handing it back at once (M_TRIM_THRESHOLD): about what
#: one request makes and frees at 100,000 skills.
KEEP_FREED = 8 << 20
#: glibc heaps ("arenas") the server's threads share (M_ARENA_MAX; by default up to 8 a core).
ARENAS = 2


def return_large_blocks() -> None:
    """Hand every freed block of :data:`LARGE_BLOCK` bytes or more back to the OS at once. glibc raises its
    threshold for that past each large block freed (up to 32 MB), after which one batch of long requests (the
    encoder's activations) stays in the heap: 150 MB kept after 64 requests of 256 tokens, against 10 MB with a
    fixed threshold. A fixed threshold also fixes the one for trimming the heap's top at its 128 KiB default, so
    it is set too (:data:`KEEP_FREED`): below it, the score arrays of a 100,000-skill library (800 KB each, a few
    dozen made and freed a request) were handed back to the OS at each free and faulted in again at the next
    request, 18% of a replica's CPU (``benchmarks/README.md``); a freed batch of long requests' blocks above
    :data:`LARGE_BLOCK` are unmapped as before."""
    _mallopt((-3, LARGE_BLOCK), (-1, KEEP_FREED))  # M_MMAP_THRESHOLD, M_TRIM_THRESHOLD


def limit_arenas() -> None:
    """At most :data:`ARENAS` glibc heaps for the process: called before the server starts its threads (the
    batcher, the workers, the pool's), each of which would otherwise get a heap of its own, each keeping what it
    freed. Python runs one thread at a time, so they rarely wait for a heap's lock."""
    _mallopt((-8, ARENAS))  # M_ARENA_MAX


def _mallopt(*settings: tuple[int, int]) -> None:
    """glibc's ``mallopt(option, value)`` for each of ``settings``; nothing where the allocator is not glibc's."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        for option, value in settings:
            libc.mallopt(option, value)
    except (OSError, AttributeError):  # not glibc: its allocator decides
        pass


def release_memory() -> None:
    """Free the replaced router now and hand the freed pages back to the OS: without this a server reloading
    every few seconds grows by the size of a library's indexes each time (glibc keeps freed arenas)."""
    gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: the collector's work is all there is
        pass


class NotReady(Exception):
    """The first router is not built yet."""
