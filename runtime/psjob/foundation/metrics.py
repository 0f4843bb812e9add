"""The Prometheus metric catalog of psjob: one place that names every metric.

Lifecycle: a process builds its metrics once at start-up with one factory —
`pserver_metrics(registry=...)`, `trainer_metrics(...)`, `heter_metrics(...)`,
`operator_metrics(...)` — keeps the returned frozen dataclass, updates its fields in the hot path and
exposes the registry with `serve_metrics(port, registry)`. Quantities that
already live in a data structure (sparse table sizes, admission counters) are
not counted twice: `SparseTableCollector` (pservers) and `JobPhaseCollector`
(the operator's jobs by phase) read them from a callable when Prometheus
scrapes, so the hot loops pay nothing for them.

Every factory takes `registry=` so tests build a fresh `CollectorRegistry`
and several roles can share one process without name clashes. docs/user/metrics.md
is the one human-readable table of these names; a test keeps the two equal,
and another checks that the chart's Grafana dashboard queries only names
listed here.

Label conventions: `method` is the RPC name (small fixed set), `status` a gRPC
status code name (`OK`, `UNAUTHENTICATED`, ...). No metric sets a label named
`namespace`, `pod` or `job`: Prometheus adds those as target labels.

`python -m psjob.foundation.metrics healthcheck` is the images' HEALTHCHECK: it fetches
/metrics on $PSJOB_METRICS_PORT and exits 0 or 1.
"""
from __future__ import annotations

import dataclasses
import logging
import sys
import threading
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

# The port the images and the operator's pods use when PSJOB_METRICS_PORT is unset.
from psjob.foundation.roles import DEFAULT_METRICS_PORT  # noqa: F401  (the operator's and the tests' default)
from psjob.foundation.settings import METRICS_PORT, process_settings

_log = logging.getLogger(__name__)

PREFIX = "psjob_"
METRICS_PORT_ENV = METRICS_PORT  # the variable; psjob.foundation.settings parses it

# RPC latencies of the data plane: sub-millisecond loopback up to multi-second
# pulls of large dense blocks over a busy network.
RPC_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# Waits and steps that can stretch to minutes (a barrier waiting on a slow trainer).
STEP_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
# Checkpoints of large tables take seconds to many minutes.
CHECKPOINT_BUCKETS = (0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)
# How many pserver versions a gradient was behind (async / geo modes).
STALENESS_BUCKETS = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256)
# A stream folder's done marker to the first published checkpoint holding it: seconds to hours.
FRESHNESS_BUCKETS = (1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0, 7200.0)
# Creation to all pods running: image pulls and GPU scheduling take minutes.
STARTUP_BUCKETS = (5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0)


@dataclasses.dataclass(frozen=True)
class PserverMetrics:
    """Metrics of one parameter-server process (the table stats come from a Collector)."""

    rpc_duration: Histogram
    rpc_requests: Counter
    received_bytes: Counter
    sent_bytes: Counter
    barrier_wait: Histogram
    optimizer_duration: Histogram
    checkpoint_duration: Histogram
    last_checkpoint_timestamp: Gauge
    last_checkpoint_step: Gauge
    checkpoint_failures: Counter
    last_checkpoint_failure_timestamp: Gauge
    last_checkpoint_failure_step: Gauge
    auth_failures: Counter
    nonfinite_pushes: Counter
    stream_published_until: Gauge
    stream_behind_since: Gauge


@dataclasses.dataclass(frozen=True)
class TrainerMetrics:
    """Metrics of one trainer process."""

    examples: Counter
    examples_per_second: Gauge
    steps: Counter
    batch_duration: Histogram
    loss: Gauge
    auc: Gauge
    staleness: Histogram
    rpc_retries: Counter
    stream_freshness: Histogram
    stream_lag: Gauge
    stream_folders: Counter


@dataclasses.dataclass(frozen=True)
class HeterMetrics:
    """Metrics of one heter-trainer process (role HETER_TRAINER)."""

    rpc_duration: Histogram
    rpc_requests: Counter
    received_bytes: Counter
    sent_bytes: Counter
    auth_failures: Counter
    batches: Counter
    stage_duration: Histogram
    staleness: Histogram


@dataclasses.dataclass(frozen=True)
class OperatorMetrics:
    """Metrics of the operator process (jobs by phase come from a scrape-time Collector)."""

    reconciles: Counter
    errors: Counter
    duration: Histogram
    startup: Histogram
    transitions: Counter


def pserver_metrics(*, registry: CollectorRegistry) -> PserverMetrics:
    """Create and register the pserver metrics in `registry`."""
    return PserverMetrics(
        rpc_duration=Histogram(
            "psjob_pserver_rpc_duration_seconds",
            "Time the pserver spent serving one RPC, by RPC method.",
            ["method"], buckets=RPC_BUCKETS, registry=registry),
        rpc_requests=Counter(
            "psjob_pserver_rpc_requests_total",
            "RPCs served, by method and gRPC status code name.",
            ["method", "status"], registry=registry),
        received_bytes=Counter(
            "psjob_pserver_received_bytes_total",
            "Tensor payload bytes received from trainers, by RPC method.",
            ["method"], registry=registry),
        sent_bytes=Counter(
            "psjob_pserver_sent_bytes_total",
            "Tensor payload bytes sent to trainers, by RPC method.",
            ["method"], registry=registry),
        barrier_wait=Histogram(
            "psjob_pserver_barrier_wait_seconds",
            "Time a barrier waited for all trainers (sync mode), by barrier kind.",
            ["barrier"], buckets=STEP_BUCKETS, registry=registry),
        optimizer_duration=Histogram(
            "psjob_pserver_optimizer_seconds",
            "Time spent running the optimize blocks for one update.",
            buckets=STEP_BUCKETS, registry=registry),
        checkpoint_duration=Histogram(
            "psjob_pserver_checkpoint_duration_seconds",
            "Time to write one checkpoint of this pserver's shard, by outcome.",
            ["outcome"], buckets=CHECKPOINT_BUCKETS, registry=registry),
        last_checkpoint_timestamp=Gauge(
            "psjob_pserver_last_checkpoint_timestamp_seconds",
            "Unix time of the newest checkpoint whose manifest was written.",
            registry=registry),
        last_checkpoint_step=Gauge(
            "psjob_pserver_last_checkpoint_step",
            "Training step of the newest checkpoint whose manifest was written; `path` is its directory.",
            ["path"], registry=registry),
        checkpoint_failures=Counter(
            "psjob_pserver_checkpoint_failures_total",
            "Checkpoint saves trainer 0 reported failed (no manifest written: a full disk, a "
            "pserver lost mid-save), since this pserver started.",
            registry=registry),
        last_checkpoint_failure_timestamp=Gauge(
            "psjob_pserver_last_checkpoint_failure_timestamp_seconds",
            "Unix time trainer 0 reported the newest failed checkpoint save.",
            registry=registry),
        last_checkpoint_failure_step=Gauge(
            "psjob_pserver_last_checkpoint_failure_step",
            "Training step of the newest failed checkpoint save; `error` is why it failed.",
            ["error"], registry=registry),
        auth_failures=Counter(
            "psjob_pserver_auth_failures_total",
            "RPCs rejected as UNAUTHENTICATED, by reason (missing or invalid token).",
            ["reason"], registry=registry),
        nonfinite_pushes=Counter(
            "psjob_pserver_nonfinite_pushes_total",
            "Pushes refused because a value held NaN or an infinity (nothing of them applied), by variable.",
            ["variable"], registry=registry),
        stream_published_until=Gauge(
            "psjob_pserver_stream_published_until_timestamp_seconds",
            "Stream jobs: done-marker time of the newest stream folder the newest checkpoint holds; "
            "`folder` is its name.",
            ["folder"], registry=registry),
        stream_behind_since=Gauge(
            "psjob_pserver_stream_behind_since_timestamp_seconds",
            "Stream jobs: done-marker time of the oldest complete folder the newest checkpoint did not "
            "hold yet when it was published (0: it held every complete folder).",
            registry=registry),
    )


def trainer_metrics(*, registry: CollectorRegistry) -> TrainerMetrics:
    """Create and register the trainer metrics in `registry`."""
    return TrainerMetrics(
        examples=Counter(
            "psjob_trainer_examples_total",
            "Training examples consumed.",
            registry=registry),
        examples_per_second=Gauge(
            "psjob_trainer_examples_per_second",
            "Examples per second over the trainer's last progress window.",
            registry=registry),
        steps=Counter(
            "psjob_trainer_steps_total",
            "Mini-batch steps completed.",
            registry=registry),
        batch_duration=Histogram(
            "psjob_trainer_batch_seconds",
            "Time of one mini-batch, split by phase (compute, push, pull).",
            ["phase"], buckets=STEP_BUCKETS, registry=registry),
        loss=Gauge(
            "psjob_trainer_loss",
            "Loss of the last mini-batch.",
            registry=registry),
        auc=Gauge(
            "psjob_trainer_auc",
            "Running AUC reported by the trainer's metric op.",
            registry=registry),
        staleness=Histogram(
            "psjob_trainer_staleness_steps",
            "Pserver updates a gradient was behind when applied (async, half-async, geo).",
            buckets=STALENESS_BUCKETS, registry=registry),
        rpc_retries=Counter(
            "psjob_trainer_rpc_retries_total",
            "RPCs to pservers retried after a transient failure, by method.",
            ["method"], registry=registry),
        stream_freshness=Histogram(
            "psjob_trainer_stream_freshness_seconds",
            "Stream jobs (trainer 0): seconds from a folder's done marker to the publication of the "
            "first checkpoint that holds it.",
            buckets=FRESHNESS_BUCKETS, registry=registry),
        stream_lag=Gauge(
            "psjob_trainer_stream_lag_seconds",
            "Stream jobs (trainer 0): seconds since the done marker of the oldest complete folder no "
            "published checkpoint holds (0: none).",
            registry=registry),
        stream_folders=Counter(
            "psjob_trainer_stream_folders_published_total",
            "Stream jobs (trainer 0): folders that published checkpoints hold.",
            registry=registry),
    )


def heter_metrics(*, registry: CollectorRegistry) -> HeterMetrics:
    """Create and register the heter-trainer metrics in `registry`.

    Its RPCs are the ones CPU trainers send it (RunStage, Complete, Status);
    `stage` is the index of a heter stage (a forward or backward run of one
    section, docs/user/heter.md), a small fixed set per program."""
    return HeterMetrics(
        rpc_duration=Histogram(
            "psjob_heter_rpc_duration_seconds",
            "Time the heter trainer spent serving one RPC from a CPU trainer, by RPC method.",
            ["method"], buckets=STEP_BUCKETS, registry=registry),
        rpc_requests=Counter(
            "psjob_heter_rpc_requests_total",
            "RPCs served to CPU trainers, by method and gRPC status code name.",
            ["method", "status"], registry=registry),
        received_bytes=Counter(
            "psjob_heter_received_bytes_total",
            "Request bytes received from CPU trainers (activations, gradients), by RPC method.",
            ["method"], registry=registry),
        sent_bytes=Counter(
            "psjob_heter_sent_bytes_total",
            "Reply bytes sent to CPU trainers, by RPC method.",
            ["method"], registry=registry),
        auth_failures=Counter(
            "psjob_heter_auth_failures_total",
            "RPCs rejected as UNAUTHENTICATED, by reason (missing or invalid token).",
            ["reason"], registry=registry),
        batches=Counter(
            "psjob_heter_batches_total",
            "Mini-batches the heter trainer ran its section for (runs of stage 0).",
            registry=registry),
        stage_duration=Histogram(
            "psjob_heter_stage_seconds",
            "Time running one stage's ops on the heter trainer's device, by stage index.",
            ["stage"], buckets=STEP_BUCKETS, registry=registry),
        staleness=Histogram(
            "psjob_heter_staleness_steps",
            "Pserver updates the section's gradients were behind when applied (async, half-async).",
            buckets=STALENESS_BUCKETS, registry=registry),
    )


def operator_metrics(*, registry: CollectorRegistry,
                     phases: Callable[[], Mapping[str, int]] = dict) -> OperatorMetrics:
    """Create and register the operator metrics in `registry`.

    `phases` returns the number of ParameterServerJobs in each phase; it is
    called at scrape time (see `JobPhaseCollector`).
    """
    registry.register(JobPhaseCollector(phases))
    return OperatorMetrics(
        reconciles=Counter(
            "psjob_operator_reconciles_total",
            "Reconcile passes over ParameterServerJobs, by result (success, error).",
            ["result"], registry=registry),
        errors=Counter(
            "psjob_operator_reconcile_errors_total",
            "Failed reconcile passes, by kind (api, conflict, internal).",
            ["kind"], registry=registry),
        duration=Histogram(
            "psjob_operator_reconcile_duration_seconds",
            "Time of one reconcile pass.",
            buckets=RPC_BUCKETS, registry=registry),
        startup=Histogram(
            "psjob_operator_job_startup_seconds",
            "Time from a job's creation (or restart) until all of its pods were running.",
            buckets=STARTUP_BUCKETS, registry=registry),
        transitions=Counter(
            "psjob_operator_transitions_total",
            "Job condition changes, by condition type and new status (True, False).",
            ["condition", "status"], registry=registry),
    )


# The phases of ParameterServerJob.status.phase (psjob_operator.status.Phase;
# a test keeps the two equal). Every phase is exported, zero included, so a
# dashboard shows a phase that empties instead of a gap.
JOB_PHASES = ("Created", "Running", "Restarting", "Suspended", "Resizing", "Succeeded", "Failed")


class JobPhaseCollector(Collector):
    """Exports `psjob_operator_jobs{phase}` from `source()` at scrape time."""

    def __init__(self, source: Callable[[], Mapping[str, int]]) -> None:
        if not callable(source):
            raise TypeError(f"JobPhaseCollector needs a callable source, got {source!r}")
        self._source = source

    def describe(self) -> list[Metric]:
        return [GaugeMetricFamily("psjob_operator_jobs", _JOBS_HELP, labels=["phase"])]

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily("psjob_operator_jobs", _JOBS_HELP, labels=["phase"])
        try:
            counts = dict(self._source())
        except Exception:  # noqa: BLE001 — a broken source must not break the scrape
            _log.exception("job phase source failed; exporting no job counts")
            yield family
            return
        for phase in dict.fromkeys((*JOB_PHASES, *counts)):
            family.add_metric([phase], counts.get(phase, 0))
        yield family


_JOBS_HELP = "ParameterServerJobs known to the operator, by phase."


@dataclasses.dataclass(frozen=True)
class SparseTableStats:
    """What one shard of one sparse table reports at scrape time.

    Counts (`admitted` ... `misses`) are cumulative since the process started.
    """

    table: str
    shard: int
    rows: int
    bytes: int
    admitted: int
    rejected: int
    evicted: int
    hits: int
    misses: int

    def __post_init__(self) -> None:
        if not isinstance(self.table, str) or not self.table:
            raise ValueError(f"SparseTableStats.table must be a non-empty string, got {self.table!r}")
        for field in dataclasses.fields(self)[1:]:
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(
                    f"SparseTableStats.{field.name} of table {self.table!r} must be an int >= 0, "
                    f"got {value!r}")


# (metric suffix, SparseTableStats field, help); gauges first, then counters.
_TABLE_GAUGES = (
    ("rows", "rows", "Rows held by this shard of the sparse table."),
    ("bytes", "bytes", "Bytes of parameter and accumulator memory held by this shard."),
)
_TABLE_COUNTERS = (
    ("admitted", "admitted", "New feature ids admitted into the table by the admission policy."),
    ("rejected", "rejected", "New feature ids the admission policy turned away."),
    ("evicted", "evicted", "Rows removed by the eviction policy."),
    ("hits", "hits", "Lookups that found an existing row."),
    ("misses", "misses", "Lookups of ids without a row."),
)
TABLE_PREFIX = "psjob_sparse_table_"
TABLE_LABELS = ("table", "shard")


class SparseTableCollector(Collector):
    """Reads sparse table statistics from `source` each time Prometheus scrapes.

    `source` returns the current `SparseTableStats` of every table shard this
    process holds. It runs on the HTTP server's thread, so it must only read
    (a consistent-enough snapshot is fine; a scrape never blocks training).
    A source that raises is logged and counted in
    `psjob_sparse_table_collect_errors_total`; the scrape still answers.
    """

    def __init__(self, source: Callable[[], Iterable[SparseTableStats]]) -> None:
        if not callable(source):
            raise TypeError(f"SparseTableCollector needs a callable source, got {source!r}")
        self._source = source
        self._errors = 0
        self._lock = threading.Lock()

    def describe(self) -> list[Metric]:
        # Describing without calling the source keeps registration side-effect free.
        return list(self._families([]))

    def collect(self) -> Iterator[Metric]:
        try:
            stats = list(self._source())
            for item in stats:
                if not isinstance(item, SparseTableStats):
                    raise TypeError(f"sparse table source returned {type(item).__name__}, "
                                    "expected SparseTableStats")
        except Exception:  # noqa: BLE001 — a broken source must not break the scrape
            _log.exception("sparse table stats source failed; exporting no table samples")
            with self._lock:
                self._errors += 1
            stats = []
        yield from self._families(stats)

    def _families(self, stats: list[SparseTableStats]) -> Iterator[Metric]:
        for suffix, field, help_text in _TABLE_GAUGES:
            family = GaugeMetricFamily(TABLE_PREFIX + suffix, help_text, labels=TABLE_LABELS)
            for item in stats:
                family.add_metric([item.table, str(item.shard)], getattr(item, field))
            yield family
        for suffix, field, help_text in _TABLE_COUNTERS:
            family = CounterMetricFamily(TABLE_PREFIX + suffix, help_text, labels=TABLE_LABELS)
            for item in stats:
                family.add_metric([item.table, str(item.shard)], getattr(item, field))
            yield family
        with self._lock:
            errors = self._errors
        yield CounterMetricFamily(TABLE_PREFIX + "collect_errors",
                                  "Scrapes whose sparse table stats source raised.", value=errors)


def sparse_table_collector(source: Callable[[], Iterable[SparseTableStats]], *,
                           registry: CollectorRegistry) -> SparseTableCollector:
    """Create a `SparseTableCollector` reading `source` and register it."""
    collector = SparseTableCollector(source)
    registry.register(collector)
    return collector


class MetricsServer:
    """A running /metrics HTTP endpoint; `close()` stops it and frees the port."""

    def __init__(self, port: int, registry: CollectorRegistry, host: str = "0.0.0.0") -> None:
        from prometheus_client import start_http_server

        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"metrics port must be an int in 0..65535 (0 = any free port), got {port!r}")
        self._server, self._thread = start_http_server(port, addr=host, registry=registry)
        self.host: str = host
        self.port: int = self._server.server_address[1]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> MetricsServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve_metrics(port: int, registry: CollectorRegistry, host: str = "0.0.0.0") -> int:
    """Serve `registry` at http://host:port/metrics for the rest of the process.

    Port 0 picks a free port. Returns the bound port. The server runs on a
    daemon thread; use `MetricsServer` directly when it must be stopped.
    """
    return MetricsServer(port, registry, host).port


def healthcheck(host: str = "127.0.0.1", timeout: float = 3.0) -> int:
    """Exit status for a container HEALTHCHECK: 0 when /metrics answers 200."""
    try:
        port = process_settings().metrics.port  # its own entry point: the container's settings
        with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=timeout) as response:
            return 0 if response.status == 200 else 1
    except (OSError, ValueError) as error:
        print(f"psjob healthcheck failed: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    if sys.argv[1:] != ["healthcheck"]:
        sys.exit("usage: python -m psjob.foundation.metrics healthcheck")
    sys.exit(healthcheck())
