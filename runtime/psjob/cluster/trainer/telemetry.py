"""Prometheus metrics of a trainer process (psjob.foundation.metrics.trainer_metrics).

Lifecycle: `TrainerTelemetry.start()` builds the metrics in a fresh
registry and, when PSJOB_METRICS_PORT is set (always in pods and under
`psjob run`), serves /metrics on it — port 0 picks a free one, and the bound
port is printed so a person (or `psjob run`) can find it. The training loop
calls `step()` once per mini-batch; `close()` stops the endpoint.

The batch time is split into push / pull / compute from the executor's
per-op kernel timings (`Executor.collect_timing`): the RPC ops that send
gradients are "push", those that receive parameters or prefetch embedding
rows are "pull", everything else in the step is "compute".

One per process: `start` makes the new telemetry the process's
`current()` one until `close()`. psjob.fleet starts its own for a Fleet
script's trainer only when there is none — the built-in job
(psjob.training.job) makes one before `fleet.init_worker()` and observes its
own loop, so its steps are not counted twice nor /metrics served twice.

Staleness (async, half-async, geo): `attach(executor, service)` registers
`observe_staleness` where confirmed pushes report the pservers' staleness —
the executor's `send` ops (sync: always 0) and a Communicator's or
GeoCommunicator's sender (`on_staleness`). RPC retries come from the client's
`retries`: a Counter by gRPC method (one series per method), or — from a
client that counts every method together — an int (method "all").
"""
from __future__ import annotations

import numbers
from collections.abc import Mapping

from prometheus_client import CollectorRegistry

from psjob.foundation import metrics
from psjob.foundation.settings import Settings

_current: TrainerTelemetry | None = None

PUSH_OPS = frozenset({"send", "send_barrier", "geo_sgd_step"})
PULL_OPS = frozenset({"recv", "fetch_barrier", "prefetch"})


class TrainerTelemetry:
    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = registry or CollectorRegistry()
        self.m = metrics.trainer_metrics(registry=self.registry)
        # The batch-time series by part, looked up once: `labels()` per step costs more than the observation.
        self._durations = {part: self.m.batch_duration.labels(part) for part in ("push", "pull", "compute")}
        self.server: metrics.MetricsServer | None = None
        self._kernel_totals: dict[int, tuple[float, float]] = {}  # id(executor) → (push, pull) seen
        self._retries: dict[str, int] = {}  # method → retries already exported

    @classmethod
    def start(cls, trainer: int, settings: Settings) -> TrainerTelemetry:
        """This trainer's telemetry, serving /metrics when its settings ask for it
        (PSJOB_METRICS_PORT set: pods, `psjob run`)."""
        global _current
        tel = cls()
        if settings.metrics.enabled:
            tel.server = metrics.MetricsServer(settings.metrics.port, tel.registry, host=settings.metrics.host)
            print(f"[psjob] trainer {trainer} metrics on port {tel.server.port}", flush=True)
        _current = tel
        return tel

    def time_executor(self, executor) -> None:
        """Turn on `executor`'s kernel timings (for the push/pull/compute split) from now on:
        what it already counted is not this telemetry's."""
        executor.collect_timing = True
        self._rpc_seconds(executor)

    def step(self, examples: int, seconds: float, loss: float, auc: float, executor=None,
             client=None) -> None:
        m = self.m
        m.steps.inc()
        m.examples.inc(examples)
        m.loss.set(loss)
        m.auc.set(auc)
        push = pull = 0.0
        if executor is not None and executor.collect_timing:
            push, pull = self._rpc_seconds(executor)
            self._durations["push"].observe(push)
            self._durations["pull"].observe(pull)
        self._durations["compute"].observe(max(seconds - push - pull, 0.0))
        if client is not None:
            self.export_retries(getattr(client, "retries", None))

    def export_retries(self, retries) -> None:
        """Add the retries counted since the last call to psjob_trainer_rpc_retries_total{method}."""
        for method, total in retries_by_method(retries).items():
            done = self._retries.get(method, 0)
            if total > done:
                self.m.rpc_retries.labels(method).inc(total - done)
                self._retries[method] = total

    def observe_staleness(self, steps: int) -> None:
        self.m.staleness.observe(steps)

    def attach(self, executor=None, service=None) -> None:
        """Record the staleness of the pushes `executor`'s send ops and `service`
        (a Communicator / GeoCommunicator; a bare client has no sender) confirm."""
        if executor is not None:
            executor.services["staleness"] = self.observe_staleness
        if service is not None and hasattr(service, "on_staleness"):
            service.on_staleness = self.observe_staleness

    def _rpc_seconds(self, executor) -> tuple[float, float]:
        timings = executor.kernel_seconds
        push = sum(timings.get(op, 0.0) for op in PUSH_OPS)
        pull = sum(timings.get(op, 0.0) for op in PULL_OPS)
        last_push, last_pull = self._kernel_totals.get(id(executor), (0.0, 0.0))
        self._kernel_totals[id(executor)] = (push, pull)
        return push - last_push, pull - last_pull

    def window(self, examples_per_second: float) -> None:
        self.m.examples_per_second.set(examples_per_second)

    def close(self) -> None:
        global _current
        if _current is self:
            _current = None
        if self.server is not None:
            self.server.close()
            self.server = None


def current() -> TrainerTelemetry | None:
    """The trainer telemetry this process runs (made by `start`, not yet closed), or None."""
    return _current


def retries_by_method(retries) -> dict[str, int]:
    """{gRPC method: retries} of a client's `retries`: a mapping by method (collections.Counter),
    or one int for every method together ("all"); anything else counts nothing."""
    if isinstance(retries, Mapping):
        return {str(method): int(n) for method, n in retries.items()}
    if isinstance(retries, numbers.Integral) and not isinstance(retries, bool):
        return {"all": int(retries)}
    return {}
