"""Gang scheduling and queues: the PodGroup of a job and what its pods carry.

A parameter-server job is useless until all its pservers and enough trainers
run: on a busy cluster the default scheduler places some pods and leaves the
rest Pending, and two half-placed jobs can hold each other's resources for
ever. A batch scheduler places a *gang* all at once or not at all; it learns
the gang from a PodGroup object and from a mark on every pod.

Pure functions over the parsed job and the operator's `SchedulingSettings`
(`--gang-scheduler`, `--queue-system`), applied to the manifests `builders`
produced (`schedule`), so the builders stay scheduler-agnostic:

- volcano: PodGroup `scheduling.volcano.sh/v1beta1` (minMember, queue,
  priorityClassName); pods get `schedulerName: volcano` and the annotation
  `scheduling.k8s.io/group-name`;
- scheduler-plugins (coscheduling): PodGroup `scheduling.x-k8s.io/v1alpha1`
  (minMember, scheduleTimeoutSeconds); pods get the scheduler's name and the
  label `scheduling.x-k8s.io/pod-group`;
- kueue (queue system, only when `schedulingPolicy.queue` is set): pods get
  the labels `kueue.x-k8s.io/queue-name`, `kueue.x-k8s.io/pod-group-name`
  and the annotation `kueue.x-k8s.io/pod-group-total-count` of Kueue's
  pod-group integration, which admits the group as one workload.

The PodGroup is named after the job, owned by it (it goes with the job), and
patched when the job is resized (minMember follows the replica counts unless
`minAvailable` is set). `gang_view` reads its state back for the status. A
PodGroup the job owns under another scheduler (the operator's
`--gang-scheduler` changed since it was made) is deleted by the reconciler
(`stale_podgroup_resources` names the kinds to look for).

Kueue reads the total count from every pod of the group and refuses a group
whose pods disagree. An elastic job's resize must not touch the pod templates
(a changed template rolls the pservers and recreates the worker Job), so the
templates keep the count their live children carry (`live_totals`) and the
reconciler writes the new count on the pods themselves
(`pods_with_stale_total`).
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from psjob.foundation.jobspec import JobSpec, Mode, ParameterServerJob
from psjob_operator import builders, naming
from psjob_operator.kube import PLUGINS_PODGROUPS, PODGROUP_KINDS, VOLCANO_PODGROUPS, Resource
from psjob_operator.settings import GangScheduler, QueueSystem, SchedulingSettings

VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
PLUGINS_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
KUEUE_TOTAL_ANNOTATION = "kueue.x-k8s.io/pod-group-total-count"
POD_OWNERS = ("StatefulSet", "Job")  # the children whose pod templates are marked

PODGROUP_RESOURCES = {GangScheduler.VOLCANO: VOLCANO_PODGROUPS,
                      GangScheduler.SCHEDULER_PLUGINS: PLUGINS_PODGROUPS}


def podgroup_resource(settings: SchedulingSettings) -> Resource | None:
    return PODGROUP_RESOURCES.get(settings.gang_scheduler)


def stale_podgroup_resources(settings: SchedulingSettings) -> tuple[Resource, ...]:
    """The PodGroup kinds of the schedulers this operator does not run with."""
    return tuple(r for r in PODGROUP_KINDS if r is not podgroup_resource(settings))


def kueue_queued(job: ParameterServerJob, settings: SchedulingSettings) -> bool:
    return settings.queue_system is QueueSystem.KUEUE and \
        bool(job.spec.run_policy.scheduling_policy.queue)


def total_pods(spec: JobSpec) -> int:
    """Every pod of a running job: pservers, heter workers and trainers (a collective job:
    its trainers, every one of which the ring needs — its gang is always all of them)."""
    if spec.mode is Mode.COLLECTIVE:
        return spec.worker.replicas
    heter = spec.heter_worker.replicas if spec.heter_worker is not None else 0
    return spec.pserver.replicas + heter + spec.worker.replicas


def min_available(spec: JobSpec) -> int:
    policy = spec.run_policy.scheduling_policy
    return policy.min_available if policy.min_available is not None else total_pods(spec)


def build_pod_group(job: ParameterServerJob, owner: builders.Owner,
                    settings: SchedulingSettings) -> dict[str, Any] | None:
    resource = podgroup_resource(settings)
    if resource is None:
        return None
    policy = job.spec.run_policy.scheduling_policy
    spec: dict[str, Any] = {"minMember": min_available(job.spec)}
    if resource is VOLCANO_PODGROUPS:
        if policy.queue:
            spec["queue"] = policy.queue
        if policy.priority_class:
            spec["priorityClassName"] = policy.priority_class
    elif policy.schedule_timeout_seconds is not None:
        spec["scheduleTimeoutSeconds"] = policy.schedule_timeout_seconds
    return {"apiVersion": resource.api_version, "kind": resource.kind,
            "metadata": {"name": job.name, "namespace": job.namespace,
                         "labels": naming.job_labels(job.name),
                         "ownerReferences": [builders.owner_reference(owner)]},
            "spec": spec}


def _mark_template(template: dict[str, Any], job: ParameterServerJob,
                   settings: SchedulingSettings, total: str) -> None:
    policy = job.spec.run_policy.scheduling_policy
    meta = template.setdefault("metadata", {})
    labels = meta.setdefault("labels", {})
    annotations = meta.setdefault("annotations", {})
    pod = template["spec"]
    if settings.gang_scheduler is GangScheduler.VOLCANO:
        annotations[VOLCANO_GROUP_ANNOTATION] = job.name
    elif settings.gang_scheduler is GangScheduler.SCHEDULER_PLUGINS:
        labels[PLUGINS_GROUP_LABEL] = job.name
    if settings.pod_scheduler_name:
        pod["schedulerName"] = settings.pod_scheduler_name
    if settings.queue_system is QueueSystem.KUEUE and policy.queue:
        labels[KUEUE_QUEUE_LABEL] = policy.queue
        labels[KUEUE_GROUP_LABEL] = job.name
        annotations[KUEUE_TOTAL_ANNOTATION] = total
    if policy.priority_class and not pod.get("priorityClassName"):
        pod["priorityClassName"] = policy.priority_class  # a role's own class wins
    if not annotations:
        del meta["annotations"]


def live_totals(job: ParameterServerJob,
                live: Mapping[tuple[str, str], dict | None]) -> dict[tuple[str, str], str]:
    """For an elastic job: the Kueue total count each live pod-owning child's template
    carries, by (kind, name); {} for other jobs (a resize recreates their children)."""
    if not job.spec.worker.max_replicas:
        return {}
    totals = {}
    for (kind, name), obj in live.items():
        meta = (((obj or {}).get("spec") or {}).get("template") or {}).get("metadata") or {}
        value = (meta.get("annotations") or {}).get(KUEUE_TOTAL_ANNOTATION)
        if kind in POD_OWNERS and value is not None:
            totals[(kind, name)] = value
    return totals


def pods_with_stale_total(job: ParameterServerJob, settings: SchedulingSettings,
                          pods: tuple[dict, ...]) -> list[str]:
    """The job's pods (not being deleted) whose Kueue total count is not the job's
    current one; [] unless Kueue queues the job."""
    if not kueue_queued(job, settings):
        return []
    total = str(total_pods(job.spec))
    return [p["metadata"]["name"] for p in pods
            if not p["metadata"].get("deletionTimestamp")
            and (p["metadata"].get("labels") or {}).get(KUEUE_GROUP_LABEL) == job.name
            and (p["metadata"].get("annotations") or {}).get(KUEUE_TOTAL_ANNOTATION) != total]


def schedule(desired: list[dict[str, Any]], job: ParameterServerJob, owner: builders.Owner,
             settings: SchedulingSettings,
             frozen_totals: Mapping[tuple[str, str], str] | None = None) -> list[dict[str, Any]]:
    """`desired` with the PodGroup added and the pod templates marked (new dicts).
    `frozen_totals` (`live_totals`) keeps an elastic job's templates as they are."""
    if settings.gang_scheduler is GangScheduler.NONE and not kueue_queued(job, settings):
        return desired
    out = []
    for manifest in desired:
        if manifest["kind"] in POD_OWNERS:
            key = (manifest["kind"], manifest["metadata"]["name"])
            total = (frozen_totals or {}).get(key, str(total_pods(job.spec)))
            manifest = copy.deepcopy(manifest)
            _mark_template(manifest["spec"]["template"], job, settings, total)
        out.append(manifest)
    group = build_pod_group(job, owner, settings)
    return out + ([group] if group else [])


@dataclass(frozen=True)
class GangView:
    """A PodGroup as the status rules need it."""
    name: str
    min_member: int
    phase: str  # Volcano: Pending, Inqueue, Running, Unknown; coscheduling: Pending, Scheduling, ...
    message: str = ""  # Volcano's Unschedulable condition message


def gang_view(obj: Mapping[str, Any] | None) -> GangView | None:
    if not obj:
        return None
    status = obj.get("status") or {}
    message = next((c.get("message", "") for c in status.get("conditions") or []
                    if c.get("type") == "Unschedulable" and c.get("status") == "True"), "")
    return GangView(name=(obj.get("metadata") or {}).get("name", ""),
                    min_member=int((obj.get("spec") or {}).get("minMember", 0)),
                    phase=status.get("phase", ""), message=message)
