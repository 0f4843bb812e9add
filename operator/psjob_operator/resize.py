"""A change of `spec.pserver.replicas` on a running job: the tables move from N pservers to M.

Every pserver and trainer is built for one pserver layout (the endpoints in
its environment and in the transpiled program: which pserver holds which
dense block and which table rows), so a resize replaces them all; the M new
pservers restore a checkpoint resharded N→M (cluster/pserver/checkpoint_restore.py) and the
trainers resume from their positions in it. Level-based, like every pass: the
stage is read from the cluster each time —

    holding             the topology ConfigMap already lists the M endpoints;
                        trainer 0 reads it (its volume is refreshed by the
                        kubelet), checkpoints at its next step — the
                        consistent cut — and exits roles.RESIZE_HOLD_EXIT (the
                        worker Job's podFailurePolicy ignores it). Waited for
                        at most HOLD_TIMEOUT_S (a script that never checkpoints
                        through psjob's Checkpointer): then the newest periodic
                        checkpoint is the one restored;
    stopping trainers   the worker Job (built for N) still exists or has pods:
                        it is deleted, the pservers are left as they are (so
                        nothing restarts against a half-changed layout);
    stopping pservers   no trainer left; the pserver StatefulSet still runs pods
                        built for N: it is scaled to 0 (not rolled: a rolling
                        update would mix N-layout and M-layout pservers);
    starting            no pod of the old layout left: the children of the new
                        spec are applied — the StatefulSet at M replicas (all
                        start together, podManagementPolicy Parallel) and a new
                        worker Job.

The resize is recorded in `status.pserverResize` (from, to, the checkpoint
step restored when the operator knows it, startTime; completionTime once the
M pservers are ready and the trainers run again), the job's phase is
`Resizing` meanwhile (reason PserverResize, an Event), then Running.

Refused, with the job left running on its N pservers (nothing stopped, no
state lost): a job that keeps no checkpoints — its tables live only in the
pservers' memory, there would be nothing to restore — and jobs with heter
trainers. `replicas: 0` is refused by the spec's validation (InvalidSpec).

A suspended job has no pods: it simply resumes with M pservers (the restore
reshards), no resize stage is needed.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from psjob.foundation import roles
from psjob.foundation.jobspec import ParameterServerJob
from psjob_operator import builders, naming
from psjob_operator.observe import Children, parse_time

# How long trainer 0 gets to see the new topology (a ConfigMap volume is refreshed within
# the kubelet's sync period, about a minute) and checkpoint.
HOLD_TIMEOUT_S = 180.0
HOLDING = "waiting for trainer 0's checkpoint"
STOPPING_TRAINERS = "stopping the trainers"
STOPPING_PSERVERS = "stopping the pservers"
STARTING = "starting the new pservers and trainers"


@dataclass(frozen=True)
class Resize:
    old: int                  # pservers the running layout has
    new: int                  # spec.pserver.replicas
    stage: str = ""           # one of the stages above; "" when refused or done
    refused: str = ""         # why it cannot apply (the job keeps `old` pservers)
    checkpoint_step: int | None = None
    done: bool = False        # the M pservers are ready and the trainers run again

    @property
    def summary(self) -> str:
        if self.stage == HOLDING:
            source = "the checkpoint trainer 0 takes now"
        elif self.checkpoint_step is not None:  # the newest known (status.lastCheckpoint)
            source = f"checkpoint step-{self.checkpoint_step}"
        else:
            source = "the newest checkpoint"
        return f"resharding {self.old}→{self.new} pservers from {source}"

    @property
    def message(self) -> str:
        return f"{self.summary}: {self.stage}" if self.stage else self.summary


def layout_of(statefulset: Mapping[str, Any] | None) -> int:
    """The pserver count the StatefulSet's pod template is built for (0: none or unknown)."""
    if not statefulset:
        return 0
    containers = ((((statefulset.get("spec") or {}).get("template") or {}).get("spec") or {})
                  .get("containers") or [])
    for container in containers:
        if container.get("name") != naming.CONTAINER:
            continue
        for var in container.get("env") or []:
            if var.get("name") == "PADDLE_PSERVER_ENDPOINTS" and var.get("value"):
                return len(var["value"].split(","))
    return 0


def observe(job: ParameterServerJob, statefulset: Mapping[str, Any] | None, children: Children,
            previous: Mapping[str, Any], checkpoint_step: int | None,
            now: dt.datetime | None = None) -> Resize | None:
    """The resize this job is in (None: none); `previous` is the job's status."""
    spec = job.spec
    wanted = spec.pserver.replicas
    record = previous.get("pserverResize") or {}
    in_progress = record and not record.get("completionTime") and record.get("to") == wanted
    live = layout_of(statefulset)
    if spec.run_policy.suspend or not live:
        return None
    if live == wanted:
        if not in_progress:
            return None
        resize = Resize(int(record["from"]), wanted, STARTING,
                        checkpoint_step=record.get("checkpointStep"))
        return dataclasses.replace(resize, done=_back(job, children))
    known = [x for x in (record.get("checkpointStep") if in_progress else None, checkpoint_step)
             if x is not None]
    step = max(known) if known else None  # the newest seen while the old pservers ran
    if not spec.checkpoint.enabled:
        return Resize(live, wanted, refused=(
            f"spec.pserver.replicas {live}→{wanted} cannot apply: the job keeps no checkpoints "
            f"(spec.checkpoint.enabled is false), and a resize restores the tables from one; still "
            f"running {live} pserver(s): enable spec.checkpoint, or set replicas back to {live}"))
    if spec.heter_worker is not None:
        return Resize(live, wanted, refused=(
            f"spec.pserver.replicas {live}→{wanted} cannot apply: resizing the pservers of a job "
            f"with heterWorker is not supported; still running {live} pserver(s)"))
    workers = children.workers
    started = parse_time(record.get("startTime")) if in_progress else None
    waited = (now - started).total_seconds() if now is not None and started is not None else 0.0
    if (workers.exists and not workers.deleting and _training(children) and not _held(children)
            and waited < HOLD_TIMEOUT_S):
        stage = HOLDING
    elif workers.exists or children.role_pods(naming.ROLE_WORKER):
        stage = STOPPING_TRAINERS
    elif children.role_pods(naming.ROLE_PSERVER) or children.pserver.replicas:
        stage = STOPPING_PSERVERS
    else:
        stage = STARTING
    return Resize(live, wanted, stage, checkpoint_step=step)


def _training(children: Children) -> bool:
    return any(p.phase == "Running" and not p.deleting for p in children.role_pods(naming.ROLE_WORKER))


def _held(children: Children) -> bool:
    """Trainer 0 checkpointed and stopped for the resize."""
    return any(p.index == 0 and p.exit_code == roles.RESIZE_HOLD_EXIT
               for p in children.role_pods(naming.ROLE_WORKER))


def _back(job: ParameterServerJob, children: Children) -> bool:
    """The M pservers are ready and every trainer runs (or has finished) again."""
    spec = job.spec
    ready = sum(1 for p in children.role_pods(naming.ROLE_PSERVER) if p.ready and not p.deleting)
    workers = [p for p in children.role_pods(naming.ROLE_WORKER)
               if p.phase in ("Running", "Succeeded") and not p.deleting]
    return ready >= spec.pserver.replicas and len(workers) >= spec.worker.replicas


def applied_job(job: ParameterServerJob, resize: Resize | None) -> ParameterServerJob:
    """The job whose children this pass applies: while a resize stops the old layout (or is
    refused), the running pserver count, not the spec's."""
    if resize is None or resize.stage == STARTING:
        return job
    pserver = dataclasses.replace(job.spec.pserver, replicas=resize.old)
    return dataclasses.replace(job, spec=dataclasses.replace(job.spec, pserver=pserver))


def config_job(job: ParameterServerJob, resize: Resize | None) -> ParameterServerJob | None:
    """The job whose topology the ConfigMap carries while the old layout stops: the new one
    (trainer 0 holds when it reads it); None when the ConfigMap follows the applied job."""
    if resize is None or resize.refused or resize.stage == STARTING:
        return None
    return job


def activity(resize: Resize | None) -> builders.Activity | None:
    """Which pods this pass keeps (None: as the spec says)."""
    if resize is None or resize.refused:
        return None
    if resize.stage == STOPPING_TRAINERS:
        return builders.Activity(worker_job=False)
    if resize.stage == STOPPING_PSERVERS:
        return builders.Activity(servers=False, worker_job=False)
    return None


def record(resize: Resize | None, previous: Mapping[str, Any], now: str) -> dict | None:
    """status.pserverResize after this pass (None: leave what is there)."""
    if resize is None or resize.refused:
        return None
    rec = dict(previous.get("pserverResize") or {})
    if rec.get("to") != resize.new or rec.get("completionTime"):  # a new resize starts
        rec = {"from": resize.old, "to": resize.new, "startTime": now}
    if resize.checkpoint_step is not None and resize.stage != STARTING:
        rec["checkpointStep"] = resize.checkpoint_step  # trainer 0's hold checkpoint, once probed
    if resize.done:
        rec["completionTime"] = now
    return rec
