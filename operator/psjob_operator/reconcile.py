"""One reconcile pass over one ParameterServerJob (level-based, idempotent).

A pass reads the job and everything it owns, decides, acts, and writes the
status once:

1. take the job from the watch cache (`cache.py`: the controller hands over a
   snapshot, merged here with the pass's own recent writes); gone or being
   deleted → forget it (children go with it through their owner references);
2. parse the spec (`psjob.foundation.jobspec`) and the cluster-specific checks; an error
   ends the job Failed with a message naming the field and the fix;
3. find the children (by their deterministic names) and the job's pods in the
   snapshot — no API reads, except a user's `checkpoint.existingClaim`;
4. unless the job already finished: build the desired children (running or
   suspended) and apply them, removing children the spec no longer wants;
5. read the newest checkpoint from pserver 0's metrics (when due);
6. compute the status (pure, `status.py`); when it became Succeeded or Failed
   apply `runPolicy.cleanPodPolicy`;
7. write the status if it changed and post an Event per transition;
8. delete the job when `ttlSecondsAfterFinished` has passed; otherwise say
   when the next pass is due (deadline, checkpoint poll, resync).

Nothing is kept between passes except probe timestamps, so an operator restart
resumes every job from what the cluster shows.
"""
from __future__ import annotations

import copy
import datetime as dt
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from psjob.foundation import roles
from psjob.foundation.jobspec import CleanPodPolicy, JobSpecError, ParameterServerJob, parse_job
from psjob_operator import builders, checkpoints, gang, naming
from psjob_operator import resize as resizing
from psjob_operator.apply import (
    Applier,
    ApplyReport,
    ChildRejected,
    WaitForChild,
    controller_uid,
    job_finished,
    job_inputs,
)
from psjob_operator.cache import Overlay, Snapshot
from psjob_operator.events import EventRecorder
from psjob_operator.kube import (
    BATCH_JOBS,
    CLAIMS,
    CONFIGMAPS,
    JOBS,
    NETWORK_POLICIES,
    PODS,
    SERVICES,
    STATEFULSETS,
    ApiError,
    KubeApi,
    merge_diff,
)
from psjob_operator.observe import Children, format_time, parse_time, pod_view, server_set_view, worker_job_view
from psjob_operator.settings import ReconcileSettings, SchedulingSettings
from psjob_operator.status import (
    TERMINAL,
    Observation,
    Phase,
    Reason,
    StatusUpdate,
    Verdict,
    compute_status,
    previous_phase,
)
from psjob_operator.validation import validate_for_cluster

log = logging.getLogger(__name__)
STATUS_KEYS = frozenset({"phase", "conditions", "observedGeneration", "replicaStatuses",
                         "pserversReady", "workersReady", "startTime", "completionTime",
                         "lastCheckpoint", "pserverResize"})
OPTIONAL_CHILDREN = ((STATEFULSETS, naming.heter), (SERVICES, naming.heter),
                     (NETWORK_POLICIES, naming.network_policy), (BATCH_JOBS, naming.worker),
                     (SERVICES, naming.worker))  # a collective job's trainer Service
OBSERVED = (STATEFULSETS, SERVICES, CONFIGMAPS, NETWORK_POLICIES, BATCH_JOBS, CLAIMS)
RESOURCES_BY_KIND = {r.kind: r for r in OBSERVED}
WAIT_SECONDS = 1.0
RESIZE_RECHECK_SECONDS = 5.0


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@dataclass(frozen=True)
class Outcome:
    phase: str | None = None
    requeue_after: float | None = None
    forget: bool = False
    startup_seconds: float | None = None
    transitions: tuple = ()


class Reconciler:
    def __init__(self, api: KubeApi, settings: ReconcileSettings, *,
                 clock: Callable[[], dt.datetime] = utcnow,
                 token_factory: Callable[[], str] = lambda: secrets.token_urlsafe(32),
                 probe: Callable[[str, float], dict | None] = checkpoints.probe,
                 events: EventRecorder | None = None, overlay: Overlay | None = None,
                 scheduling: SchedulingSettings = SchedulingSettings()):
        self.api = api
        self.scheduling = scheduling
        self.overlay = overlay or Overlay()
        self.settings = settings
        self.clock = clock
        self.token_factory = token_factory
        self.probe = probe
        self.applier = Applier(api, recheck_seconds=settings.secret_recheck_seconds)
        self.events = events or EventRecorder(api)
        self._probed: dict[tuple[str, str], dt.datetime] = {}
        self._swept: set[tuple[str, str, str]] = set()  # jobs rid of stale PodGroups

    def forget(self, namespace: str, name: str) -> None:
        self._probed.pop((namespace, name), None)
        self._swept = {k for k in self._swept if k[:2] != (namespace, name)}
        self.overlay.forget(namespace, name)
        self.applier.forget(namespace, {naming.auth_secret(name), naming.checkpoint_claim(name)})

    def reconcile(self, namespace: str, name: str, seen: Snapshot) -> Outcome:
        seen = self.overlay.merge(namespace, name, seen)
        body = copy.deepcopy(seen.job)
        if body is None or body["metadata"].get("deletionTimestamp"):
            self.forget(namespace, name)
            return Outcome(forget=True)
        body.setdefault("metadata", {}).setdefault("namespace", namespace)
        now = self.clock()
        meta = body["metadata"]
        generation = int(meta.get("generation") or 1)
        previous = body.get("status") or {}
        try:
            job = parse_job(body)
            validate_for_cluster(job)
        except JobSpecError as exc:
            invalid = Verdict(Phase.FAILED, Reason.INVALID_SPEC, str(exc))
            update = compute_status(Observation(name, generation, now, None, previous,
                                                problem=invalid))
            # An edit that broke a running job: stop its pods (cleanPodPolicy Running,
            # the default); fixing the spec brings them back from the newest checkpoint.
            self._stop_pods(namespace, name, meta.get("uid", ""), seen)
            self._write(body, update, now)
            return Outcome(update.phase.value, transitions=update.transitions)

        owner = builders.Owner(name, meta.get("uid", ""))
        live, children = self._observe(job, seen)
        report = ApplyReport()
        problem: Verdict | None = None
        self._remove_stale_pod_groups(job, owner)
        resize = applied = None
        if previous_phase(previous, generation) not in TERMINAL:
            resize = resizing.observe(job, live[(STATEFULSETS.kind, naming.pserver(name))], children,
                                      previous, (previous.get("lastCheckpoint") or {}).get("step"),
                                      now)
            # While a resize stops the old layout, or is refused, the pods run the old count.
            applied = resizing.applied_job(job, resize)
            try:
                report = self._apply(applied, owner, live, resizing.activity(resize),
                                     resizing.config_job(job, resize), generation)
                self._update_kueue_totals(applied, seen)
            except ChildRejected as exc:
                problem = Verdict(Phase.FAILED, Reason.CHILD_REJECTED, str(exc))
            except WaitForChild as exc:
                log.info("job %s/%s: %s", namespace, name, exc)
                report.waiting.append(str(exc))
        checkpoint = self._checkpoint(job, children, previous, now)
        record = resizing.record(resize, previous, format_time(now))
        update = compute_status(Observation(name, generation, now, (applied or job).spec, previous,
                                            children, problem=problem, last_checkpoint=checkpoint,
                                            resize=resize, resize_record=record))
        if update.phase in TERMINAL:
            self._finish(job, owner, live)
        self._write(body, update, now)
        startup = None
        started = parse_time(update.status.get("startTime"))
        if update.became_running and started is not None:
            startup = (now - started).total_seconds()
        if update.phase in TERMINAL and self._expired(job, update, now):
            self.api.delete(JOBS, namespace, name, propagation="Background")
            self.forget(namespace, name)
            return Outcome(update.phase.value, forget=True, transitions=update.transitions)
        return Outcome(update.phase.value, self._requeue_after(job, update, report, now),
                       startup_seconds=startup, transitions=update.transitions)

    # --- reading -----------------------------------------------------------------------

    def _observe(self, job: ParameterServerJob, seen: Snapshot) -> tuple[dict, Children]:
        ns, name = job.namespace, job.name
        wanted = [(STATEFULSETS, naming.pserver(name)), (SERVICES, naming.pserver(name)),
                  (CONFIGMAPS, naming.config_map(name))]
        wanted += [(res, child(name)) for res, child in OPTIONAL_CHILDREN]
        podgroups = gang.podgroup_resource(self.scheduling)
        if podgroups is not None:
            wanted.append((podgroups, name))  # the PodGroup is named after the job
        claim = job.spec.checkpoint.existing_claim or naming.checkpoint_claim(name)
        live = {(res.kind, child): seen.child(res, child) for res, child in wanted}
        if job.spec.checkpoint.uses_claim:
            # The user's own claim carries no label of ours: the one read the cache lacks.
            live[(CLAIMS.kind, claim)] = self.api.get(CLAIMS, ns, claim) \
                if job.spec.checkpoint.existing_claim else seen.child(CLAIMS, claim)
        pods = seen.pods
        claim_obj = live.get((CLAIMS.kind, claim))
        children = Children(
            pods=tuple(pod_view(p) for p in pods),
            pserver=server_set_view(live[(STATEFULSETS.kind, naming.pserver(name))]),
            heter=server_set_view(live[(STATEFULSETS.kind, naming.heter(name))]),
            workers=worker_job_view(live[(BATCH_JOBS.kind, naming.worker(name))]),
            claim_phase=((claim_obj or {}).get("status") or {}).get("phase", ""),
            claim_access_modes=tuple(((claim_obj or {}).get("spec") or {}).get("accessModes")
                                     or ()),
            gang=gang.gang_view(seen.child(podgroups, name)) if podgroups else None,
        )
        return live, children

    def _checkpoint(self, job: ParameterServerJob, children: Children, previous: dict,
                    now: dt.datetime) -> dict | None:
        poll = self.settings.checkpoint_poll_seconds
        if poll <= 0 or not job.spec.checkpoint.enabled:
            return None
        key = (job.namespace, job.name)
        last = self._probed.get(key)
        if last is not None and (now - last).total_seconds() < poll:
            return None
        pod = next((p for p in children.pods if p.name == f"{naming.pserver(job.name)}-0"
                    and p.phase == "Running" and p.ip), None)
        if pod is None:
            return None
        self._probed[key] = now
        host = f"[{pod.ip}]" if ":" in pod.ip else pod.ip
        found = self.probe(f"http://{host}:{job.spec.metrics_port}/metrics",
                           self.settings.probe_timeout_seconds)
        before = previous.get("lastCheckpoint") or {}
        if found is None or (found.get("time", "") < before.get("time", "")
                             or found.get("step", 0) < before.get("step", 0)):
            return None  # keep what we had: status never goes backwards
        return found

    # --- acting ------------------------------------------------------------------------

    def _apply(self, job: ParameterServerJob, owner: builders.Owner, live: dict,
               activity: builders.Activity | None = None,
               config_job: ParameterServerJob | None = None, generation: int = 0) -> ApplyReport:
        """Apply the job's children; `activity` (a resize's stage) overrides running/suspended,
        `config_job` (a resize) is the job whose topology the ConfigMap carries, `generation`
        the spec's (with them, the job's inputs: see psjob_operator.apply)."""
        if activity is None:
            activity = builders.SUSPENDED if job.spec.run_policy.suspend else builders.RUNNING
        inputs = job_inputs(generation, activity, job.spec.pserver.replicas,
                            None if config_job is None else config_job.spec.pserver.replicas)
        children = builders.build_children(job, owner, self.token_factory(), activity)
        if config_job is not None:
            topology = roles.kubernetes_topology(config_job, config_job.namespace)
            children = [builders.build_config_map(config_job, owner, topology)
                        if m["kind"] == "ConfigMap" else m for m in children]
        desired = gang.schedule(children, job, owner, self.scheduling, gang.live_totals(job, live))
        report = self.applier.apply(desired, owner.uid, owner.name, live, inputs)
        wanted = {(m["kind"], m["metadata"]["name"]) for m in desired}
        for (kind, child), obj in live.items():
            if (kind, child) not in wanted and kind != CLAIMS.kind:
                self.applier.remove(RESOURCES_BY_KIND[kind], job.namespace, child, owner.uid,
                                    obj, report)
        if report.created or report.patched or report.deleted:
            log.info("job %s/%s: created %s patched %s deleted %s", job.namespace, job.name,
                     report.created, report.patched, report.deleted)
        return report

    def _remove_stale_pod_groups(self, job: ParameterServerJob, owner: builders.Owner) -> None:
        """Once per job and operator process: delete the PodGroups the job controls under
        a scheduler this operator does not run with (--gang-scheduler changed)."""
        key = (job.namespace, job.name, owner.uid)
        if key in self._swept:
            return
        for resource in gang.stale_podgroup_resources(self.scheduling):
            try:
                # rbac: PODGROUP_KINDS
                found = self.api.get(resource, job.namespace, job.name)
                if found is not None and controller_uid(found) == owner.uid:
                    # rbac: PODGROUP_KINDS
                    self.api.delete(resource, job.namespace, job.name)
                    log.info("job %s/%s: deleted its %s %s (the operator now runs with "
                             "--gang-scheduler %s)", job.namespace, job.name,
                             resource.api_version, resource.kind,
                             self.scheduling.gang_scheduler.value)
            except ApiError as exc:
                if exc.transient:
                    raise
                log.warning("job %s/%s: cannot remove a stale %s PodGroup: %s", job.namespace,
                            job.name, resource.group, exc)
        self._swept.add(key)

    def _update_kueue_totals(self, job: ParameterServerJob, seen: Snapshot) -> None:
        """Kueue's pod-group total count on every pod of the job, after an elastic resize."""
        total = str(gang.total_pods(job.spec))
        for pod in gang.pods_with_stale_total(job, self.scheduling, seen.pods):
            self.api.patch(PODS, job.namespace, pod,
                           {"metadata": {"annotations": {gang.KUEUE_TOTAL_ANNOTATION: total}}})

    def _finish(self, job: ParameterServerJob, owner: builders.Owner, live: dict) -> None:
        """Apply cleanPodPolicy once the job has finished (idempotent)."""
        policy = job.spec.run_policy.clean_pod_policy
        if policy is CleanPodPolicy.NONE:
            return
        ns = job.namespace
        for name in (naming.pserver(job.name), naming.heter(job.name)):
            sts = live.get((STATEFULSETS.kind, name))
            if sts and _owned(sts, owner) and (sts.get("spec") or {}).get("replicas"):
                self.api.patch(STATEFULSETS, ns, name, {"spec": {"replicas": 0}})
        workers = live.get((BATCH_JOBS.kind, naming.worker(job.name)))
        if not workers or not _owned(workers, owner):
            return
        if policy is CleanPodPolicy.ALL:
            self.applier.remove(BATCH_JOBS, ns, naming.worker(job.name), owner.uid, workers,
                                ApplyReport())
        elif not job_finished(workers) and not (workers.get("spec") or {}).get("suspend"):
            self.api.patch(BATCH_JOBS, ns, naming.worker(job.name), {"spec": {"suspend": True}})

    def _stop_pods(self, namespace: str, name: str, uid: str, seen: Snapshot) -> None:
        """Stop the pods of a job whose spec cannot be read (children found by name)."""
        for sts in (naming.pserver(name), naming.heter(name)):
            obj = seen.child(STATEFULSETS, sts)
            if obj and controller_uid(obj) == uid and (obj.get("spec") or {}).get("replicas"):
                self.api.patch(STATEFULSETS, namespace, sts, {"spec": {"replicas": 0}})
        workers = seen.child(BATCH_JOBS, naming.worker(name))
        if workers and controller_uid(workers) == uid and not job_finished(workers) \
                and not (workers.get("spec") or {}).get("suspend"):
            self.api.patch(BATCH_JOBS, namespace, naming.worker(name), {"spec": {"suspend": True}})

    def _write(self, body: dict, update: StatusUpdate, now: dt.datetime) -> None:
        previous = {k: v for k, v in (body.get("status") or {}).items() if k in STATUS_KEYS}
        if previous != update.status:
            meta = body["metadata"]
            self.api.patch(JOBS, meta["namespace"], meta["name"],
                           {"status": merge_diff(previous, update.status)}, subresource="status")
        if update.transitions:
            self.events.record(body, update.transitions, now)

    # --- timing ------------------------------------------------------------------------

    def _expired(self, job: ParameterServerJob, update: StatusUpdate, now: dt.datetime) -> bool:
        ttl = job.spec.run_policy.ttl_seconds_after_finished
        done = parse_time(update.status.get("completionTime"))
        return ttl is not None and done is not None and (now - done).total_seconds() >= ttl

    def _requeue_after(self, job: ParameterServerJob, update: StatusUpdate, report: ApplyReport,
                       now: dt.datetime) -> float:
        delays = [self.settings.resync_seconds]
        policy = job.spec.run_policy
        if update.phase in TERMINAL:
            done = parse_time(update.status.get("completionTime"))
            if policy.ttl_seconds_after_finished is not None and done is not None:
                due = done + dt.timedelta(seconds=policy.ttl_seconds_after_finished)
                delays.append((due - now).total_seconds())
            return max(0.1, min(delays))
        start = parse_time(update.status.get("startTime"))
        if policy.active_deadline_seconds and start is not None:
            due = start + dt.timedelta(seconds=policy.active_deadline_seconds)
            delays.append((due - now).total_seconds())
        if update.phase in (Phase.RUNNING, Phase.RESTARTING) and job.spec.checkpoint.enabled \
                and self.settings.checkpoint_poll_seconds > 0:
            delays.append(self.settings.checkpoint_poll_seconds)
        if report.waiting:
            delays.append(WAIT_SECONDS)
        if update.phase is Phase.RESIZING:  # trainer 0's hold has a deadline (resize.HOLD_TIMEOUT_S)
            delays.append(RESIZE_RECHECK_SECONDS)
        return max(0.1, min(delays))


def _owned(obj: dict[str, Any], owner: builders.Owner) -> bool:
    return controller_uid(obj) == owner.uid
