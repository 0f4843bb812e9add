"""Typed operator settings, grouped by concern and injected (never globals).

`__main__` builds one `OperatorSettings` from the command line; everything
else receives the group it needs. Defaults suit a production cluster; tests
shorten the intervals through the same flags.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field


@dataclass(frozen=True)
class WatchSettings:
    """Which namespaces to serve: the listed ones, or all of them."""
    namespaces: tuple[str, ...] = ()
    all_namespaces: bool = False

    def __post_init__(self) -> None:
        if bool(self.namespaces) == self.all_namespaces:
            raise ValueError("give --namespace NS (repeatable) or --all-namespaces, not both "
                             "and not neither")


@dataclass(frozen=True)
class ServeSettings:
    """The operator's own HTTP endpoints."""
    host: str = "0.0.0.0"
    metrics_port: int = 8080  # Prometheus /metrics
    liveness_port: int = 8081  # kopf's liveness probe at /healthz


@dataclass(frozen=True)
class ReconcileSettings:
    """How often and how hard the reconciler works."""
    workers: int = 4  # jobs reconciled in parallel (threads)
    resync_seconds: float = 60.0  # every job is re-read at least this often
    child_event_delay_seconds: float = 0.2  # coalesces bursts of pod events per job
    retry_base_seconds: float = 1.0  # first retry after a transient API error ...
    retry_max_seconds: float = 60.0  # ... doubling up to this
    checkpoint_poll_seconds: float = 30.0  # 0 disables reading pserver 0's metrics
    # The auth Secret is not watched (least privilege): it is POSTed again this often to
    # bring back one deleted by hand. Each recheck is two requests per job (the POST, and
    # the 409's metadata read), so this is much longer than the resync: 500 jobs every
    # 600 s cost 1.7 requests/s.
    secret_recheck_seconds: float = 600.0
    probe_timeout_seconds: float = 2.0
    request_timeout_seconds: float = 15.0

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError("workers must be >= 1")
        if self.resync_seconds <= 0:
            raise ValueError("resync_seconds must be > 0")


class GangScheduler(str, enum.Enum):
    NONE = "none"
    VOLCANO = "volcano"  # scheduling.volcano.sh/v1beta1 PodGroup
    SCHEDULER_PLUGINS = "scheduler-plugins"  # scheduling.x-k8s.io/v1alpha1 (coscheduling)


class QueueSystem(str, enum.Enum):
    NONE = "none"
    KUEUE = "kueue"  # Kueue's plain-pod groups: queue-name, pod-group name and total count


# The schedulerName pods get by default: Volcano's, and the name under which the
# scheduler-plugins Helm chart runs its second scheduler.
DEFAULT_SCHEDULER_NAMES = {GangScheduler.VOLCANO: "volcano",
                           GangScheduler.SCHEDULER_PLUGINS: "scheduler-plugins-scheduler"}


@dataclass(frozen=True)
class SchedulingSettings:
    """Which batch scheduler and queue system the cluster runs (docs/user/operator.md, Scheduling)."""
    gang_scheduler: GangScheduler = GangScheduler.NONE
    scheduler_name: str = ""  # "" → DEFAULT_SCHEDULER_NAMES[gang_scheduler]
    queue_system: QueueSystem = QueueSystem.NONE

    @property
    def pod_scheduler_name(self) -> str:
        return self.scheduler_name or DEFAULT_SCHEDULER_NAMES.get(self.gang_scheduler, "")


@dataclass(frozen=True)
class OperatorSettings:
    watch: WatchSettings
    serve: ServeSettings = field(default_factory=ServeSettings)
    reconcile: ReconcileSettings = field(default_factory=ReconcileSettings)
    scheduling: SchedulingSettings = field(default_factory=SchedulingSettings)
