"""Pure status computation: (job, previous status, children, now) → new status.

The phase is decided by rules applied in order (first match wins):

1. invalid spec                       → Failed (InvalidSpec / ChildRejected)
2. already Succeeded or Failed        → unchanged (terminal phases are sticky;
   an InvalidSpec/ChildRejected failure is re-evaluated after a spec edit)
3. all worker indexes completed       → Succeeded
4. worker failures > backoffLimit     → Failed (BackoffLimitExceeded)
5. activeDeadlineSeconds passed       → Failed (DeadlineExceeded)
6. runPolicy.suspend                  → Suspended
7. a pserver/heter pod crash-looping, failed, missing or not ready after the
   job was running; a failed worker not yet replaced → Restarting
8. every pod running (pservers ready) → Running
9. otherwise                          → Created, with the reason pods wait
   (the gang not yet schedulable, image pull, unschedulable, claim pending,
   config error)

Conditions (Created, Running, Restarting, Suspended, Succeeded, Failed) follow
the phase: the phase's condition is True, the others already present are
False; lastTransitionTime moves only when a condition's status flips, and a
transition is reported (for a Kubernetes Event) when a status flips or a True
condition's reason changes. Messages never contain clocks, so an unchanged
world produces an identical status and no write.
"""
from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from psjob.foundation import roles
from psjob.foundation.jobspec import JobSpec, Mode
from psjob_operator import naming
from psjob_operator.observe import CONFIG_REASONS, IMAGE_REASONS, Children, PodView, format_time, parse_time


class Phase(str, enum.Enum):
    """A job's phase, and the type of its condition of the same name (one set of values:
    the phase is the condition that is True)."""
    CREATED = "Created"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    SUSPENDED = "Suspended"
    RESIZING = "Resizing"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


class Reason(str, enum.Enum):
    CHILDREN_CREATED = "ChildrenCreated"
    WAITING_FOR_PODS = "WaitingForPods"
    WAITING_FOR_GANG = "WaitingForGang"
    UNSCHEDULABLE = "Unschedulable"
    IMAGE_PULL = "ImagePullBackOff"
    CONTAINER_CONFIG = "CreateContainerConfigError"
    CLAIM_PENDING = "CheckpointClaimPending"
    CLAIM_MULTI_ATTACH = "CheckpointClaimMultiAttach"
    ALL_PODS_RUNNING = "AllPodsRunning"
    PSERVER_RESTARTING = "PserverRestarting"
    HETER_RESTARTING = "HeterWorkerRestarting"
    WORKER_RESTARTING = "WorkerRestarting"
    SUSPENDED = "Suspended"
    RESUMED = "Resumed"
    ALL_WORKERS_COMPLETED = "AllWorkersCompleted"
    BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    INVALID_SPEC = "InvalidSpec"
    CHILD_REJECTED = "ChildRejected"
    PSERVER_RESIZE = "PserverResize"
    RESIZE_REFUSED = "PserverResizeRefused"


class ConditionStatus(str, enum.Enum):
    TRUE = "True"
    FALSE = "False"


TERMINAL = frozenset({Phase.SUCCEEDED, Phase.FAILED})
# A failure the user can fix by editing the spec: not sticky across generations.
REVIVABLE = frozenset({Reason.INVALID_SPEC.value, Reason.CHILD_REJECTED.value})
CONDITION_ORDER = tuple(Phase)
# The conditions that follow the phase (Created is set once the children exist).
PHASE_CONDITIONS = tuple(p for p in Phase if p is not Phase.CREATED)


@dataclass(frozen=True)
class Verdict:
    phase: Phase
    reason: Reason
    message: str


@dataclass(frozen=True)
class Transition:
    type: Phase
    status: ConditionStatus
    reason: str
    message: str


@dataclass(frozen=True)
class Observation:
    job_name: str
    generation: int
    now: dt.datetime
    spec: JobSpec | None
    previous: Mapping[str, Any] = field(default_factory=dict)
    children: Children = Children()
    problem: Verdict | None = None  # InvalidSpec / ChildRejected found by the reconciler
    last_checkpoint: Mapping[str, Any] | None = None
    resize: Any = None  # resize.Resize: a change of spec.pserver.replicas in progress (or refused)
    resize_record: Mapping[str, Any] | None = None  # status.pserverResize after this pass


@dataclass(frozen=True)
class StatusUpdate:
    status: dict[str, Any]
    phase: Phase
    transitions: tuple[Transition, ...]
    became_running: bool = False  # entered Running from Created: startup finished


def previous_phase(previous: Mapping[str, Any], generation: int) -> Phase | None:
    """The phase the rules start from (None: start afresh)."""
    try:
        phase = Phase(previous.get("phase"))
    except ValueError:
        return None
    failed = _condition(previous, Phase.FAILED)
    if (phase is Phase.FAILED and failed.get("reason") in REVIVABLE
            and previous.get("observedGeneration") != generation):
        return None
    return phase


def compute_status(obs: Observation) -> StatusUpdate:
    prev = obs.previous
    prev_phase = previous_phase(prev, obs.generation)
    conditions = {c["type"]: dict(c) for c in prev.get("conditions") or []}
    times = {k: prev.get(k) for k in ("startTime", "completionTime")}
    if prev_phase is None and prev.get("phase") == Phase.FAILED.value:
        conditions.pop(Phase.FAILED.value, None)  # the spec changed: try again
        times["completionTime"] = None
    if prev_phase in TERMINAL:
        verdict = None
        phase = prev_phase
    else:
        verdict = obs.problem or _decide(obs, prev_phase, parse_time(times["startTime"]))
        phase = verdict.phase
    transitions: list[Transition] = []
    if verdict is not None:
        transitions = _update_conditions(conditions, verdict, obs, prev_phase)
        now = format_time(obs.now)
        if phase is Phase.SUSPENDED:
            times["startTime"] = None  # the deadline clock restarts on resume, as for Jobs
        elif times["startTime"] is None and obs.problem is None:
            times["startTime"] = now
        if phase in TERMINAL and times["completionTime"] is None:
            times["completionTime"] = now
    status: dict[str, Any] = {
        "phase": phase.value,
        "conditions": [conditions[t.value] for t in CONDITION_ORDER if t.value in conditions],
        "observedGeneration": obs.generation,
    }
    if obs.spec is not None:
        status.update(_replica_statuses(obs.spec, obs.children))
    for key, value in times.items():
        if value is not None:
            status[key] = value
    checkpoint = obs.last_checkpoint or prev.get("lastCheckpoint")
    if checkpoint:
        status["lastCheckpoint"] = dict(checkpoint)
    resize = obs.resize_record or prev.get("pserverResize")
    if resize:
        status["pserverResize"] = dict(resize)
    became_running = phase is Phase.RUNNING and prev_phase in (None, Phase.CREATED)
    return StatusUpdate(status, phase, tuple(transitions), became_running)


def _condition(status: Mapping[str, Any], ctype: Phase) -> Mapping[str, Any]:
    conditions: list[Mapping[str, Any]] = status.get("conditions") or []
    for c in conditions:
        if c.get("type") == ctype.value:
            return c
    return {}


def _update_conditions(conditions: dict[str, dict], verdict: Verdict, obs: Observation,
                       prev_phase: Phase | None) -> list[Transition]:
    now = format_time(obs.now)
    transitions: list[Transition] = []

    def put(ctype: Phase, status: ConditionStatus, reason: str, message: str) -> None:
        old = conditions.get(ctype.value)
        prior: dict[str, Any] = old or {}
        flipped = old is None or prior.get("status") != status.value
        if not flipped and prior.get("reason") == reason and prior.get("message") == message:
            return
        conditions[ctype.value] = {
            "type": ctype.value, "status": status.value, "reason": reason, "message": message,
            "lastTransitionTime": now if flipped else prior.get("lastTransitionTime", now)}
        if flipped or (status is ConditionStatus.TRUE and prior.get("reason") != reason):
            transitions.append(Transition(ctype, status, reason, message))

    if obs.problem is None:
        put(Phase.CREATED, ConditionStatus.TRUE, Reason.CHILDREN_CREATED.value,
            f"created the children of job {obs.job_name}")
    target = verdict.phase if verdict.phase in PHASE_CONDITIONS else None
    for ctype in PHASE_CONDITIONS:
        old = conditions.get(ctype.value)
        if ctype is target:
            put(ctype, ConditionStatus.TRUE, verdict.reason.value, verdict.message)
        elif ctype is Phase.RUNNING and obs.problem is None:
            # Running=False always says why the job is not running right now.
            put(ctype, ConditionStatus.FALSE, verdict.reason.value, verdict.message)
        elif old is not None and old.get("status") == ConditionStatus.TRUE.value:
            if ctype is Phase.SUSPENDED:
                put(ctype, ConditionStatus.FALSE, Reason.RESUMED.value,
                    "runPolicy.suspend is false: pods start again and resume from the newest "
                    "checkpoint")
            else:
                put(ctype, ConditionStatus.FALSE, verdict.reason.value, verdict.message)
    return transitions


def _decide(obs: Observation, prev_phase: Phase | None, start: dt.datetime | None) -> Verdict:
    spec = obs.spec
    assert spec is not None
    kids = obs.children
    workers = kids.workers
    replicas = spec.worker.replicas
    succeeded = max(workers.succeeded, sum(1 for p in kids.role_pods(naming.ROLE_WORKER)
                                           if p.phase == "Succeeded"))
    if workers.exists and not workers.deleting and (workers.complete or succeeded >= replicas):
        return Verdict(Phase.SUCCEEDED, Reason.ALL_WORKERS_COMPLETED,
                       f"{replicas}/{replicas} workers completed")
    limit = spec.run_policy.backoff_limit
    failures = worker_failures(kids)
    if workers.failed_reason or failures > limit:
        detail = _last_worker_failure(kids) or workers.failed_message
        return Verdict(Phase.FAILED, Reason.BACKOFF_LIMIT_EXCEEDED,
                       f"{failures} worker failure(s) exceed runPolicy.backoffLimit={limit}"
                       + (f"; last: {detail}" if detail else "")
                       + "; fix the cause in the worker logs, or raise runPolicy.backoffLimit")
    deadline = spec.run_policy.active_deadline_seconds
    if deadline and start is not None and (obs.now - start).total_seconds() >= deadline:
        return Verdict(Phase.FAILED, Reason.DEADLINE_EXCEEDED,
                       f"the job ran longer than runPolicy.activeDeadlineSeconds={deadline} "
                       f"(started {format_time(start)}); raise the deadline or shorten the job")
    if spec.run_policy.suspend:
        alive = [p for p in kids.pods if p.phase in ("Pending", "Running", "Unknown")]
        if alive:
            return Verdict(Phase.SUSPENDED, Reason.SUSPENDED,
                           f"runPolicy.suspend is true: stopping {len(alive)} pod(s)")
        return Verdict(Phase.SUSPENDED, Reason.SUSPENDED,
                       "runPolicy.suspend is true: all pods stopped, the checkpoint volume is "
                       "kept; set it to false to resume from the newest checkpoint")
    resize = obs.resize
    if resize is not None and resize.stage and not resize.done:
        # Pods missing or stopping on purpose: not a restart.
        return Verdict(Phase.RESIZING, Reason.PSERVER_RESIZE, resize.message)
    was_running = prev_phase in (Phase.RUNNING, Phase.RESTARTING, Phase.RESIZING)
    for role, count, reason in _server_roles(obs):
        trouble = _server_trouble(obs, role, count, was_running)
        if trouble:
            return Verdict(Phase.RESTARTING, reason, trouble)
    trouble = _worker_trouble(kids, spec)
    if trouble:
        return Verdict(Phase.RESTARTING, Reason.WORKER_RESTARTING, trouble)
    running = [p for p in kids.role_pods(naming.ROLE_WORKER)
               if p.phase == "Running" and not p.deleting]
    servers_ready = all(_ready_count(obs, role, count) >= count
                        for role, count, _ in _server_roles(obs))
    if servers_ready and len(running) + succeeded >= replicas:
        if resize is not None and resize.refused:
            return Verdict(Phase.RUNNING, Reason.RESIZE_REFUSED, resize.refused)
        return Verdict(Phase.RUNNING, Reason.ALL_PODS_RUNNING, _progress(obs, len(running)))
    return _waiting(obs, len(running))


def _server_roles(obs: Observation) -> list[tuple[str, int, Reason]]:
    spec = obs.spec
    assert spec is not None
    if spec.mode is Mode.COLLECTIVE:
        return []  # trainers only
    out = [(naming.ROLE_PSERVER, spec.pserver.replicas, Reason.PSERVER_RESTARTING)]
    if spec.heter_worker is not None:
        out.append((naming.ROLE_HETER, spec.heter_worker.replicas, Reason.HETER_RESTARTING))
    return out


def _server_name(obs: Observation, role: str) -> str:
    return naming.pserver(obs.job_name) if role == naming.ROLE_PSERVER else naming.heter(obs.job_name)


def _ready_count(obs: Observation, role: str, count: int) -> int:
    names = {f"{_server_name(obs, role)}-{i}" for i in range(count)}
    return sum(1 for p in obs.children.role_pods(role) if p.name in names and p.ready
               and not p.deleting)


def _server_trouble(obs: Observation, role: str, count: int, was_running: bool) -> str:
    label = "pserver" if role == naming.ROLE_PSERVER else "heter-worker"
    recover = "it is recreated with the same index and resumes from the newest checkpoint"
    pods = {p.name: p for p in obs.children.role_pods(role)}
    for i in range(count):
        name = f"{_server_name(obs, role)}-{i}"
        pod = pods.get(name)
        if pod is None:
            if was_running:
                return f"{label} pod {name} is missing; {recover}"
            continue
        if pod.phase == "Failed":
            why = pod.failure_reason or pod.exit_text or "failed"
            more = f": {pod.failure_message}" if pod.failure_message else ""
            return f"{label} pod {name} failed ({why}{more}); {recover}"
        if pod.crash_looping:
            last = f", last {pod.exit_text}" if pod.exit_text else ""
            return (f"{label} pod {name} is in {pod.waiting_reason} ({pod.restarts} restarts"
                    f"{last}); {recover}")
        if was_running and not pod.ready:
            why = pod.waiting_reason or pod.phase
            return f"{label} pod {name} is not ready ({why}) after the job was running; {recover}"
    return ""


def _worker_trouble(kids: Children, spec: JobSpec) -> str:
    workers = kids.role_pods(naming.ROLE_WORKER)
    healthy = {p.index for p in workers if p.phase in ("Running", "Succeeded") and not p.deleting}
    for pod in sorted(workers, key=lambda p: p.name):
        if pod.phase != "Failed" or pod.index in healthy:
            continue
        if pod.disrupted:
            return (f"worker pod {pod.name} was disrupted ({pod.failure_reason or 'evicted'}); "
                    f"it is recreated and does not count against runPolicy.backoffLimit")
        if _pservers_unreachable(pod):
            return (f"worker pod {pod.name} exited {pod.exit_code}: its pservers were "
                    f"unreachable; it is recreated and does not count against "
                    f"runPolicy.backoffLimit")
        if pod.exit_code == roles.PEER_LOST_EXIT and spec.mode is Mode.COLLECTIVE:
            return (f"worker pod {pod.name} exited {pod.exit_code}: its all-reduce ring lost a peer; "
                    f"it is recreated to form the ring again (not counted against "
                    f"runPolicy.backoffLimit) and resumes from the newest checkpoint")
        return (f"worker pod {pod.name} failed ({pod.exit_text or pod.failure_reason or 'error'}); "
                f"retrying: {worker_failures(kids)} of runPolicy.backoffLimit="
                f"{spec.run_policy.backoff_limit} failures used")
    return ""


def _pservers_unreachable(pod: PodView) -> bool:
    return pod.exit_code == roles.PSERVER_UNREACHABLE_EXIT


def _counted(pod: PodView) -> bool:
    """A failed worker pod the Job's podFailurePolicy counts against backoffLimit."""
    return (pod.phase == "Failed" and not pod.disrupted and not _pservers_unreachable(pod)
            and pod.exit_code not in (roles.RESIZE_HOLD_EXIT, roles.PEER_LOST_EXIT))


def worker_failures(kids: Children) -> int:
    """Failures counted against backoffLimit: the Job's count, or the failed pods we
    see if the Job controller has not counted them yet (disruptions and trainers whose
    pservers were unreachable excluded, as the podFailurePolicy ignores them)."""
    seen = sum(1 for p in kids.role_pods(naming.ROLE_WORKER) if _counted(p))
    return max(kids.workers.failed, seen)


def _last_worker_failure(kids: Children) -> str:
    failed = [p for p in kids.role_pods(naming.ROLE_WORKER) if _counted(p)]
    if not failed:
        return ""
    pod = sorted(failed, key=lambda p: p.name)[-1]
    return f"worker pod {pod.name} failed ({pod.exit_text or pod.failure_reason or 'error'})"


def _progress(obs: Observation, running_workers: int) -> str:
    spec = obs.spec
    assert spec is not None
    parts = [] if spec.mode is Mode.COLLECTIVE else [
        f"{_ready_count(obs, naming.ROLE_PSERVER, spec.pserver.replicas)}/{spec.pserver.replicas} pservers ready"]
    if spec.heter_worker is not None:
        parts.append(f"{_ready_count(obs, naming.ROLE_HETER, spec.heter_worker.replicas)}/"
                     f"{spec.heter_worker.replicas} heter workers ready")
    parts.append(f"{running_workers}/{spec.worker.replicas} workers running")
    return ", ".join(parts)


def _waiting(obs: Observation, running_workers: int) -> Verdict:
    spec = obs.spec
    assert spec is not None
    gang = obs.children.gang
    if gang is not None:
        placed = sum(1 for p in obs.children.pods if p.scheduled and not p.deleting)
        if placed < gang.min_member:
            detail = f": {gang.message}" if gang.message else ""
            return Verdict(Phase.CREATED, Reason.WAITING_FOR_GANG,
                           f"waiting for the gang: {placed} of {gang.min_member} pods "
                           f"schedulable (PodGroup {gang.name} {gang.phase or 'Pending'}"
                           f"{detail})")
    for pod in sorted(obs.children.pods, key=lambda p: p.name):
        role_field = {naming.ROLE_PSERVER: "pserver", naming.ROLE_HETER: "heterWorker"}.get(
            pod.role, "worker")
        if pod.waiting_reason in IMAGE_REASONS:
            role_spec = {"pserver": spec.pserver, "heterWorker": spec.heter_worker}.get(
                role_field, spec.worker)
            image, image_field = ((role_spec.image, f"spec.{role_field}.image")
                                  if role_spec is not None and role_spec.image
                                  else (spec.image, "spec.image"))
            return Verdict(Phase.CREATED, Reason.IMAGE_PULL,
                           f"pod {pod.name} cannot pull image {image} ({pod.waiting_reason}"
                           f"{': ' + pod.waiting_message if pod.waiting_message else ''}); "
                           f"check {image_field} and spec.imagePullSecrets (on kind: "
                           f"kind load docker-image {image})")
        if pod.waiting_reason in CONFIG_REASONS:
            return Verdict(Phase.CREATED, Reason.CONTAINER_CONFIG,
                           f"pod {pod.name} cannot start ({pod.waiting_reason}: "
                           f"{pod.waiting_message or 'see kubectl describe pod'})")
        if pod.unschedulable:
            if obs.children.claim_phase == "Pending":
                break  # the claim is the cause; reported below
            return Verdict(Phase.CREATED, Reason.UNSCHEDULABLE,
                           f"pod {pod.name} is unschedulable: {pod.unschedulable}; check "
                           f"spec.{role_field}.resources, nodeSelector and tolerations")
    if obs.children.claim_phase == "Pending":
        claim = spec.checkpoint.existing_claim or naming.checkpoint_claim(obs.job_name)
        modes = "/".join(obs.children.claim_access_modes) or spec.checkpoint.access_mode.value
        return Verdict(Phase.CREATED, Reason.CLAIM_PENDING,
                       f"checkpoint claim {claim} ({modes}) is Pending: no volume is bound to "
                       f"it; the default StorageClass of kind, GKE, EKS and AKS provides no "
                       f"ReadWriteMany volumes; set spec.checkpoint.storageClassName to a "
                       f"class that provides {modes}, spec.checkpoint.accessMode: ReadWriteOnce "
                       f"(all pods on one node), spec.checkpoint.existingClaim, "
                       f"spec.checkpoint.uri: s3://BUCKET/PREFIX (object storage, no claim), or "
                       f"spec.checkpoint.enabled: false (see kubectl describe pvc {claim})")
    stuck = _multi_attach(obs)
    if stuck is not None:
        return stuck
    return Verdict(Phase.CREATED, Reason.WAITING_FOR_PODS,
                   "waiting for pods: " + _progress(obs, running_workers))


def _multi_attach(obs: Observation) -> Verdict | None:
    """A ReadWriteOnce claim attaches to one node: a pod scheduled on another node stays
    in ContainerCreating (the kubelet's Multi-Attach error, visible only in Events)."""
    kids, spec = obs.children, obs.spec
    assert spec is not None
    if not spec.checkpoint.enabled or "ReadWriteOnce" not in kids.claim_access_modes \
            or "ReadWriteMany" in kids.claim_access_modes:
        return None
    nodes = sorted({p.node for p in kids.pods if p.node and not p.deleting})
    stuck = sorted((p for p in kids.pods if p.node and p.phase == "Pending"
                    and p.waiting_reason == "ContainerCreating"), key=lambda p: p.name)
    if len(nodes) < 2 or not stuck:
        return None
    claim = spec.checkpoint.existing_claim or naming.checkpoint_claim(obs.job_name)
    return Verdict(Phase.CREATED, Reason.CLAIM_MULTI_ATTACH,
                   f"pod {stuck[0].name} cannot attach checkpoint claim {claim}: it is "
                   f"ReadWriteOnce and the job's pods run on {len(nodes)} nodes "
                   f"({', '.join(nodes)}) (Multi-Attach); use a ReadWriteMany class "
                   f"(spec.checkpoint.accessMode: ReadWriteMany and storageClassName), keep "
                   f"the pods on one node (an affinity in spec.<role>.template), store them in "
                   f"object storage (spec.checkpoint.uri: s3://BUCKET/PREFIX, no claim), or set "
                   f"spec.checkpoint.enabled: false")


def _replica_statuses(spec: JobSpec, kids: Children) -> dict[str, Any]:
    def server(role: str, replicas: int) -> dict[str, int]:
        pods = [p for p in kids.role_pods(role) if not p.deleting]
        return {"replicas": replicas, "ready": sum(1 for p in pods if p.ready),
                "restarts": sum(p.restarts for p in pods)}

    workers = [p for p in kids.role_pods(naming.ROLE_WORKER) if not p.deleting]
    running = sum(1 for p in workers if p.phase == "Running")
    succeeded = max(kids.workers.succeeded, sum(1 for p in workers if p.phase == "Succeeded"))
    statuses: dict[str, Any] = {
        "pserver": server(naming.ROLE_PSERVER, 0 if spec.mode is Mode.COLLECTIVE else spec.pserver.replicas),
        "worker": {"replicas": spec.worker.replicas, "active": running,
                   "succeeded": succeeded, "failed": worker_failures(kids)},
    }
    if spec.heter_worker is not None:
        statuses["heterWorker"] = server(naming.ROLE_HETER, spec.heter_worker.replicas)
    pservers = statuses["pserver"]
    workers_text = (f"{succeeded}/{spec.worker.replicas} done" if succeeded
                    else f"{running}/{spec.worker.replicas}")
    return {"replicaStatuses": statuses,
            "pserversReady": f"{pservers['ready']}/{pservers['replicas']}",
            "workersReady": workers_text}
