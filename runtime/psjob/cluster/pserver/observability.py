"""Prometheus metrics of a pserver process and of a heter-trainer process, fed by the RPC front ends.

`PserverTelemetry.observe_rpc` is the observer psjob.cluster.rpc.server calls after
every request (method, status code name, seconds, request and reply bytes).
`watch_tables(source)` registers a `psjob.foundation.metrics.SparseTableCollector` that
reads the pserver's sparse tables (`SparseTable.stats()`) when Prometheus
scrapes, so the lookup and push paths count nothing for it.
The /metrics endpoint listens on PSJOB_METRICS_PORT (0 = any free port; the
bound port is logged) when that variable is set, so a pserver started by
hand without it opens no extra port.

`HeterTelemetry` is the same for a heter trainer (psjob.foundation.metrics.heter_metrics):
`observe_rpc` for the calls CPU trainers send it, `observe_stage` (stage
index, seconds of its ops; stage 0 counts a batch) from HeterState, and
`observe_staleness` from its sections' pserver pushes.
"""
from __future__ import annotations

import logging
from typing import TypeVar

from prometheus_client import CollectorRegistry

from psjob.foundation import metrics
from psjob.foundation.settings import MetricsSettings

log = logging.getLogger("psjob.pserver")

# (method, status) pairs whose series observe_rpc keeps at hand: the services' methods
# times the status codes, with room to spare.
_MAX_SERIES = 512


class _RpcServerTelemetry:
    """What the pserver's and the heter trainer's metrics share: the registry, the /metrics
    endpoint and the per-request RPC series (both catalogs name them alike)."""

    def __init__(self, catalog, registry: CollectorRegistry | None = None):
        self.registry = registry or CollectorRegistry()
        self.m = catalog(registry=self.registry)
        self.server: metrics.MetricsServer | None = None
        # The labelled series of each (method, status), looked up once: `labels()` validates
        # and hashes its arguments under a lock, four times per request otherwise.
        self._series: dict[tuple[str, str], tuple] = {}

    def serve(self, port: int, host: str = "0.0.0.0") -> int:
        self.server = metrics.MetricsServer(port, self.registry, host)
        return self.server.port

    def observe_rpc(self, method: str, status: str, seconds: float, bytes_in: int, bytes_out: int,
                    reason: str = ""):
        series = self._series.get((method, status))
        if series is None:
            m = self.m
            series = (m.rpc_duration.labels(method), m.rpc_requests.labels(method, status),
                      m.received_bytes.labels(method), m.sent_bytes.labels(method))
            if len(self._series) < _MAX_SERIES:
                self._series[(method, status)] = series
        duration, requests, received, sent = series
        duration.observe(seconds)
        requests.inc()
        received.inc(bytes_in)
        sent.inc(bytes_out)
        if status == "UNAUTHENTICATED":
            self.m.auth_failures.labels(reason or "invalid").inc()

    def close(self):
        if self.server is not None:
            self.server.close()
            self.server = None


class PserverTelemetry(_RpcServerTelemetry):
    def __init__(self, registry: CollectorRegistry | None = None):
        super().__init__(metrics.pserver_metrics, registry)
        self._barrier_round = self.m.barrier_wait.labels("round")
        self._table_source = list
        self._table_collector = False

    def watch_tables(self, source) -> None:
        """Export `source()` (an iterable of metrics.SparseTableStats) at every scrape.

        One collector per registry (its metric names may be registered once); a later
        source (a pserver restarted in the same process) replaces the earlier one."""
        self._table_source = source
        if not self._table_collector:
            self.registry.register(metrics.SparseTableCollector(lambda: self._table_source()))
            self._table_collector = True

    def observe_rpc(self, method: str, status: str, seconds: float, bytes_in: int, bytes_out: int,
                    reason: str = ""):
        super().observe_rpc(method, status, seconds, bytes_in, bytes_out, reason)
        if method == "Barrier" and status == "OK":
            self._barrier_round.observe(seconds)


def table_stats_source(scope, tables: dict):
    """A scrape-time source for `watch_tables`: {table name: shard index} of tables in `scope`."""
    from psjob.foundation.tables import SparseTable

    def source():
        out = []
        for name, shard in tables.items():
            table = scope.vars.get(name)
            if not isinstance(table, SparseTable):
                continue  # not created yet (startup not run) or replaced: nothing to report
            s = table.stats()
            out.append(metrics.SparseTableStats(table=name, shard=int(shard), rows=s.rows, bytes=s.bytes,
                                                admitted=s.admitted, rejected=s.rejected, evicted=s.evicted,
                                                hits=s.hits, misses=s.misses))
        return out
    return source


def pserver_telemetry(settings: MetricsSettings) -> PserverTelemetry | None:
    """Metrics served on PSJOB_METRICS_PORT when it is set (pods, `psjob run`), else None."""
    return _served(PserverTelemetry(), settings, "pserver") if settings.enabled else None


_T = TypeVar("_T", bound=_RpcServerTelemetry)


def _served(tel: _T, settings: MetricsSettings, who: str) -> _T:
    """`tel` serving on the settings' port, which it logs (a free one when the port is 0)."""
    port = tel.serve(settings.port, settings.host)
    log.warning("%s metrics at http://%s:%d/metrics", who, settings.host, port)
    print(f"[psjob] {who} metrics on port {port}", flush=True)
    return tel


class HeterTelemetry(_RpcServerTelemetry):
    """A heter trainer's metrics; `heter_telemetry()` serves them on PSJOB_METRICS_PORT."""

    def __init__(self, registry: CollectorRegistry | None = None):
        super().__init__(metrics.heter_metrics, registry)

    def observe_stage(self, stage: int, seconds: float) -> None:
        self.m.stage_duration.labels(str(stage)).observe(seconds)
        if stage == 0:  # every step of a served trainer runs stage 0 exactly once
            self.m.batches.inc()

    def observe_staleness(self, steps: int) -> None:
        self.m.staleness.observe(steps)


def heter_telemetry(settings: MetricsSettings) -> HeterTelemetry | None:
    """Metrics served on PSJOB_METRICS_PORT when it is set (pods, `psjob run`), else None."""
    return _served(HeterTelemetry(), settings, "heter trainer") if settings.enabled else None
