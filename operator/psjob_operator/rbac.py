"""The Kubernetes permissions the operator needs — all of them, and no more.

The Helm chart renders its Role/ClusterRole from this list. Two tests keep it
honest: one reads the operator's source and checks that every API call
(`api.get/list/create/patch/delete(<RESOURCE>, ...)`) is covered; one records
every request the running operator (and kopf inside it) sends to the API
emulator and checks each against this list.

Notes on the less obvious entries:

- `parameterserverjobs/finalizers: update` — children carry ownerReferences
  with blockOwnerDeletion=true, which clusters with the
  OwnerReferencesPermissionEnforcement admission plugin only allow to users
  who may update the owner's finalizers.
- `secrets: create, get` — the auth Secret is created once; after an AlreadyExists
  answer the operator reads the metadata of the Secret by that name
  (PartialObjectMetadata: owner references, never the data) to refuse one it does not
  own instead of taking it for the job's token. No `list` or `watch`: Secrets are not
  cached.
- `persistentvolumeclaims: get, create` — never patched or deleted: checkpoint
  volumes go only with the job, through the garbage collector.
- `events: create` — one Event per condition transition.
- `list, watch` on the jobs and on every child kind — kopf's watch streams, which
  feed the watch cache the reconciler reads (`cache.py`); the child streams
  carry the labelSelector `psjob.dev/job-name`.
- `podgroups: get, delete` of every known batch scheduler, whichever is chosen —
  a job's PodGroup of a scheduler the operator no longer runs with (the
  `--gang-scheduler` flag changed) is deleted once, if the job controls it.
- `pods: patch` only with `--queue-system kueue` — an elastic job's pods get
  Kueue's pod-group total count rewritten when its trainers scale.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Permission:
    api_group: str  # "" is the core group
    resource: str  # plural, or plural/subresource
    verbs: tuple[str, ...]


REQUIRED_RBAC: tuple[Permission, ...] = (
    Permission("psjob.dev", "parameterserverjobs", ("get", "list", "watch", "delete")),
    Permission("psjob.dev", "parameterserverjobs/status", ("patch",)),
    Permission("psjob.dev", "parameterserverjobs/finalizers", ("update",)),
    Permission("", "pods", ("get", "list", "watch")),
    Permission("", "services", ("get", "list", "watch", "create", "patch", "delete")),
    Permission("", "configmaps", ("get", "list", "watch", "create", "patch", "delete")),
    Permission("", "secrets", ("get", "create")),
    Permission("", "persistentvolumeclaims", ("get", "list", "watch", "create")),
    Permission("", "events", ("create",)),
    Permission("apps", "statefulsets", ("get", "list", "watch", "create", "patch", "delete")),
    Permission("batch", "jobs", ("get", "list", "watch", "create", "patch", "delete")),
    Permission("networking.k8s.io", "networkpolicies",
               ("get", "list", "watch", "create", "patch", "delete")),
    # Stale PodGroups of another scheduler (gang.stale_podgroup_resources).
    Permission("scheduling.volcano.sh", "podgroups", ("get", "delete")),
    Permission("scheduling.x-k8s.io", "podgroups", ("get", "delete")),
)


# Granted only with the matching --gang-scheduler (chart value scheduling.gangScheduler):
# the job's PodGroup is created, patched on resize and watched for its phase; it goes
# with the job through its owner reference, so it is never deleted by the operator.
GANG_RBAC: dict[str, tuple[Permission, ...]] = {
    "volcano": (Permission("scheduling.volcano.sh", "podgroups",
                           ("get", "list", "watch", "create", "patch")),),
    "scheduler-plugins": (Permission("scheduling.x-k8s.io", "podgroups",
                                     ("get", "list", "watch", "create", "patch")),),
}


# Granted only with the matching --queue-system (chart value scheduling.queueSystem).
QUEUE_RBAC: dict[str, tuple[Permission, ...]] = {
    "kueue": (Permission("", "pods", ("patch",)),),
}


def required_rbac(gang_scheduler: str = "none",
                  queue_system: str = "none") -> tuple[Permission, ...]:
    """Everything an operator running with this --gang-scheduler and --queue-system needs."""
    return REQUIRED_RBAC + GANG_RBAC.get(gang_scheduler, ()) + QUEUE_RBAC.get(queue_system, ())


def allows(api_group: str, resource: str, verb: str, gang_scheduler: str | None = None,
           queue_system: str | None = None) -> bool:
    """Whether the operator may do this; None: with any of the schedulers (queue systems)."""
    extra = GANG_RBAC.values() if gang_scheduler is None else [GANG_RBAC.get(gang_scheduler, ())]
    queued = QUEUE_RBAC.values() if queue_system is None else [QUEUE_RBAC.get(queue_system, ())]
    permissions = REQUIRED_RBAC + tuple(p for group in [*extra, *queued] for p in group)
    return any(p.api_group == api_group and p.resource == resource and verb in p.verbs
               for p in permissions)


def as_rules(gang_scheduler: str = "none", queue_system: str = "none") -> list[dict]:
    """The list as Kubernetes PolicyRules (what a Role's `rules:` holds)."""
    return [{"apiGroups": [p.api_group], "resources": [p.resource], "verbs": list(p.verbs)}
            for p in required_rbac(gang_scheduler, queue_system)]
