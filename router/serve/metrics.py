"""Prometheus metrics of one server, in a registry of its own (so that several servers can live in one process)."""

from __future__ import annotations

# Latency buckets in seconds: a warm route takes milliseconds; the tail matters up to a second.
LATENCY_BUCKETS = (0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0)


class Metrics:
    """Requests and errors by route, request latency, batch sizes, skills indexed, reloads, and failures to log."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = CollectorRegistry()
        self.requests = Counter("skill_router_requests", "HTTP requests by route template, method and status",
                                ["route", "method", "status"], registry=self.registry)
        self.errors = Counter("skill_router_request_errors", "HTTP responses with status >= 400 by route template",
                              ["route", "status"], registry=self.registry)
        self.latency = Histogram("skill_router_request_seconds", "HTTP request latency by route template",
                                 ["route"], buckets=LATENCY_BUCKETS, registry=self.registry)
        self.batch_size = Histogram("skill_router_batch_size", "requests routed together in one batch",
                                    buckets=(1, 2, 4, 8, 16, 32, 64), registry=self.registry)
        self.skills = Gauge("skill_router_skills_indexed", "skills in the library being served",
                            registry=self.registry)
        self.reloads = Counter("skill_router_reloads", "library reloads by outcome", ["outcome"],
                               registry=self.registry)
        self.log_failures = Counter("skill_router_log_failures", "decision-log writes, rotations and reopens that "
                                    "failed (the requests were answered)", registry=self.registry)
        self.reload_failing = Gauge("skill_router_reload_failing", "1 while the last reload failed (the previous "
                                    "library is served), else 0", registry=self.registry)

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        self.requests.labels(route=route, method=method, status=str(status)).inc()
        self.latency.labels(route=route).observe(seconds)
        if status >= 400:
            self.errors.labels(route=route, status=str(status)).inc()

    def text(self) -> tuple[bytes, str]:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return generate_latest(self.registry), CONTENT_TYPE_LATEST
