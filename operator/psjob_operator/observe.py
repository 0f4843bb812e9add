"""Read-only views of children as the status computation needs them.

The API returns big nested dicts; these frozen views keep only the facts the
status rules use (and name the Kubernetes fields they come from), so
`status.py` stays a readable set of rules over plain values.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from psjob_operator import naming

CRASH_REASONS = frozenset({"CrashLoopBackOff", "RunContainerError"})
IMAGE_REASONS = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName",
                           "ErrImageNeverPull"})
CONFIG_REASONS = frozenset({"CreateContainerConfigError", "CreateContainerError"})


def format_time(moment: dt.datetime) -> str:
    """RFC 3339 in UTC with seconds precision, as Kubernetes writes times."""
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass(frozen=True)
class PodView:
    name: str
    role: str
    phase: str  # status.phase: Pending, Running, Succeeded, Failed, Unknown
    ready: bool  # condition Ready == True
    restarts: int  # sum of containerStatuses[].restartCount
    waiting_reason: str = ""  # containerStatuses[].state.waiting.reason
    waiting_message: str = ""
    exit_code: int | None = None  # state.terminated or lastState.terminated
    exit_reason: str = ""  # e.g. Error, OOMKilled, Completed
    unschedulable: str = ""  # PodScheduled=False/Unschedulable message
    failure_reason: str = ""  # status.reason of a failed pod, e.g. Evicted
    failure_message: str = ""
    disrupted: bool = False  # condition DisruptionTarget == True (evicted, preempted)
    deleting: bool = False  # metadata.deletionTimestamp set
    index: int | None = None  # Indexed Job completion index
    ip: str = ""
    node: str = ""  # spec.nodeName (set once scheduled)
    scheduled: bool = False  # bound to a node (spec.nodeName, or PodScheduled == True)

    @property
    def crash_looping(self) -> bool:
        return self.waiting_reason in CRASH_REASONS

    @property
    def exit_text(self) -> str:
        if self.exit_code is None:
            return ""
        return f"exit code {self.exit_code}" + (f" ({self.exit_reason})" if self.exit_reason else "")


def pod_view(pod: Mapping[str, Any]) -> PodView:
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    statuses = status.get("containerStatuses") or []
    waiting_reason = waiting_message = exit_reason = ""
    exit_code = None
    for cs in statuses:
        state = cs.get("state") or {}
        waiting = state.get("waiting") or {}
        if waiting.get("reason") and not waiting_reason:
            waiting_reason, waiting_message = waiting["reason"], waiting.get("message", "")
        terminated = state.get("terminated") or (cs.get("lastState") or {}).get("terminated")
        if terminated and exit_code is None:
            exit_code = terminated.get("exitCode")
            exit_reason = terminated.get("reason", "")
    scheduled = conditions.get("PodScheduled") or {}
    unschedulable = ""
    if scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable":
        unschedulable = scheduled.get("message") or "no node fits the pod"
    index_text = (meta.get("annotations") or {}).get(naming.ANNOTATION_COMPLETION_INDEX, "")
    return PodView(
        name=meta.get("name", ""),
        role=(meta.get("labels") or {}).get(naming.LABEL_ROLE, ""),
        phase=status.get("phase", "Pending"),
        ready=(conditions.get("Ready") or {}).get("status") == "True",
        restarts=sum(int(cs.get("restartCount", 0)) for cs in statuses),
        waiting_reason=waiting_reason, waiting_message=waiting_message,
        exit_code=exit_code, exit_reason=exit_reason, unschedulable=unschedulable,
        failure_reason=status.get("reason", ""), failure_message=status.get("message", ""),
        disrupted=(conditions.get("DisruptionTarget") or {}).get("status") == "True",
        deleting=bool(meta.get("deletionTimestamp")),
        index=int(index_text) if index_text.isdigit() else None,
        ip=status.get("podIP", ""),
        node=(pod.get("spec") or {}).get("nodeName", ""),
        scheduled=bool((pod.get("spec") or {}).get("nodeName"))
        or scheduled.get("status") == "True",
    )


@dataclass(frozen=True)
class ServerSetView:
    """A pserver or heter StatefulSet (absent: exists=False)."""
    exists: bool = False
    replicas: int = 0  # spec.replicas
    ready: int = 0  # status.readyReplicas


def server_set_view(sts: Mapping[str, Any] | None) -> ServerSetView:
    if not sts:
        return ServerSetView()
    return ServerSetView(True, int((sts.get("spec") or {}).get("replicas", 0)),
                         int((sts.get("status") or {}).get("readyReplicas", 0)))


@dataclass(frozen=True)
class WorkerJobView:
    exists: bool = False
    suspended: bool = False  # spec.suspend
    active: int = 0  # status.active
    succeeded: int = 0  # status.succeeded
    failed: int = 0  # status.failed (disruptions excluded by podFailurePolicy)
    complete: bool = False  # condition Complete == True
    failed_reason: str = ""  # condition Failed == True: reason, message
    failed_message: str = ""
    deleting: bool = False


def worker_job_view(job: Mapping[str, Any] | None) -> WorkerJobView:
    if not job:
        return WorkerJobView()
    status = job.get("status") or {}
    conds = {c.get("type"): c for c in status.get("conditions") or []
             if c.get("status") == "True"}
    failed = conds.get("Failed") or {}
    return WorkerJobView(
        exists=True, suspended=bool((job.get("spec") or {}).get("suspend")),
        active=int(status.get("active", 0)), succeeded=int(status.get("succeeded", 0)),
        failed=int(status.get("failed", 0)), complete="Complete" in conds,
        failed_reason=failed.get("reason", "") if failed else "",
        failed_message=failed.get("message", "") if failed else "",
        deleting=bool((job.get("metadata") or {}).get("deletionTimestamp")))


@dataclass(frozen=True)
class Children:
    """Everything observed about one job's children at one moment."""
    pods: tuple[PodView, ...] = ()
    pserver: ServerSetView = ServerSetView()
    heter: ServerSetView = ServerSetView()
    workers: WorkerJobView = WorkerJobView()
    claim_phase: str = ""  # PersistentVolumeClaim status.phase ("" if none)
    claim_access_modes: tuple[str, ...] = ()  # the claim's spec.accessModes
    gang: Any = None  # gang.GangView of the job's PodGroup (None: no gang scheduler)

    def role_pods(self, role: str) -> list[PodView]:
        return [p for p in self.pods if p.role == role]
