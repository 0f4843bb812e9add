"""The operator's own Prometheus metrics, from psjob's shared metric catalog.

Names, help texts and buckets live in `psjob.foundation.metrics` (documented in
docs/user/metrics.md, queried by the chart's dashboard); this module only binds
them to one injected registry and to the controller's phase counts:

- psjob_operator_reconciles_total{result}        success | error
- psjob_operator_reconcile_errors_total{kind}    api | conflict | internal
- psjob_operator_reconcile_duration_seconds      one pass
- psjob_operator_jobs{phase}                     jobs by phase, read at scrape time
- psjob_operator_job_startup_seconds             (re)start of a job → all pods running
- psjob_operator_transitions_total{condition,status}  condition flips (Events posted)
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

from prometheus_client import CollectorRegistry

from psjob.foundation.metrics import MetricsServer, operator_metrics


class OperatorMetrics:
    def __init__(self, registry: CollectorRegistry,
                 phases: Callable[[], Mapping[str, int]] = dict):
        self.registry = registry
        catalog = operator_metrics(registry=registry, phases=phases)
        self.reconciles = catalog.reconciles
        self.errors = catalog.errors
        self.duration = catalog.duration
        self.startup = catalog.startup
        self.transitions = catalog.transitions

    def serve(self, port: int, host: str = "0.0.0.0") -> MetricsServer:
        """Start /metrics on a daemon thread; `close()` the result to stop it."""
        return MetricsServer(port, self.registry, host)
