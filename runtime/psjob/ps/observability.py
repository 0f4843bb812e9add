"""Prometheus metrics of a pserver process, fed by the RPC front end.

`PserverTelemetry.observe_rpc` is the observer psjob.rpc.server calls after
every request (method, status code name, seconds, request and reply bytes).
The /metrics endpoint listens on PSJOB_METRICS_PORT (0 = any free port; the
bound port is logged) when that variable is set, so a pserver started by
hand without it opens no extra port.
"""
from __future__ import annotations

import logging
import os

from prometheus_client import CollectorRegistry

from .. import metrics

log = logging.getLogger("psjob.pserver")


class PserverTelemetry:
    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = registry or CollectorRegistry()
        self.m = metrics.pserver_metrics(registry=self.registry)
        self.server: metrics.MetricsServer | None = None

    def serve(self, port: int) -> int:
        self.server = metrics.MetricsServer(port, self.registry)
        return self.server.port

    def observe_rpc(self, method: str, status: str, seconds: float, bytes_in: int, bytes_out: int,
                    reason: str = ""):
        m = self.m
        m.rpc_duration.labels(method).observe(seconds)
        m.rpc_requests.labels(method, status).inc()
        m.received_bytes.labels(method).inc(bytes_in)
        m.sent_bytes.labels(method).inc(bytes_out)
        if status == "UNAUTHENTICATED":
            m.auth_failures.labels(reason or "invalid").inc()
        if method == "Barrier" and status == "OK":
            m.barrier_wait.labels("round").observe(seconds)

    def close(self):
        if self.server is not None:
            self.server.close()
            self.server = None


def telemetry_from_env(environ=None) -> PserverTelemetry | None:
    env = os.environ if environ is None else environ
    if "PSJOB_METRICS_PORT" not in env:
        return None
    tel = PserverTelemetry()
    port = tel.serve(metrics.metrics_port_from_env(env))
    log.warning("pserver metrics at http://0.0.0.0:%d/metrics", port)
    print(f"[psjob] pserver metrics on port {port}", flush=True)
    return tel
