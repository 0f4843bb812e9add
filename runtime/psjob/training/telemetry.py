"""Prometheus metrics of a trainer process (psjob.metrics.trainer_metrics).

Lifecycle: `TrainerTelemetry.from_env()` builds the metrics in a fresh
registry and, when PSJOB_METRICS_PORT is set (always in pods and under
`psjob run`), serves /metrics on it — port 0 picks a free one, and the bound
port is printed so a person (or `psjob run`) can find it. The training loop
calls `step()` once per mini-batch; `close()` stops the endpoint.

The batch time is split into push / pull / compute from the executor's
per-op kernel timings (`Executor.collect_timing`): the RPC ops that send
gradients are "push", those that receive parameters or prefetch embedding
rows are "pull", everything else in the step is "compute".
"""
from __future__ import annotations

import ipaddress
import os

from prometheus_client import CollectorRegistry

from .. import metrics

PUSH_OPS = frozenset({"send", "send_barrier", "geo_sgd_step"})
PULL_OPS = frozenset({"recv", "fetch_barrier", "prefetch"})


def metrics_host(env) -> str:
    """Listen on loopback when this process's own address is loopback (local runs),
    else on every interface (pods: Prometheus scrapes the pod IP)."""
    ip = env.get("PADDLE_CURRENT_IP") or env.get("POD_IP", "")
    try:
        if ip and ipaddress.ip_address(ip).is_loopback:
            return "127.0.0.1"
    except ValueError:
        pass
    return "0.0.0.0"


class TrainerTelemetry:
    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = registry or CollectorRegistry()
        self.m = metrics.trainer_metrics(registry=self.registry)
        self.server: metrics.MetricsServer | None = None
        self._kernel_totals: tuple[float, float] = (0.0, 0.0)
        self._retries = 0

    @classmethod
    def from_env(cls, trainer: int, environ=None) -> "TrainerTelemetry":
        env = os.environ if environ is None else environ
        tel = cls()
        if metrics.METRICS_PORT_ENV in env:
            tel.server = metrics.MetricsServer(metrics.metrics_port_from_env(env), tel.registry,
                                               host=metrics_host(env))
            print(f"[psjob] trainer {trainer} metrics on port {tel.server.port}", flush=True)
        return tel

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
            m.batch_duration.labels("push").observe(push)
            m.batch_duration.labels("pull").observe(pull)
        m.batch_duration.labels("compute").observe(max(seconds - push - pull, 0.0))
        retries = getattr(client, "retries", 0) if client is not None else 0
        if retries > self._retries:
            # PSClient counts retries of every method together.
            m.rpc_retries.labels("all").inc(retries - self._retries)
            self._retries = retries

    def _rpc_seconds(self, executor) -> tuple[float, float]:
        timings = executor.kernel_seconds
        push = sum(timings.get(op, 0.0) for op in PUSH_OPS)
        pull = sum(timings.get(op, 0.0) for op in PULL_OPS)
        last_push, last_pull = self._kernel_totals
        self._kernel_totals = (push, pull)
        return push - last_push, pull - last_pull

    def window(self, examples_per_second: float) -> None:
        self.m.examples_per_second.set(examples_per_second)

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None
