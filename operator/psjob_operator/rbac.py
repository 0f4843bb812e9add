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
- `secrets: create` only — the auth Secret is created once; the operator never
  reads Secrets (an AlreadyExists answer is enough to know it is there).
- `persistentvolumeclaims: get, create` — never patched or deleted: checkpoint
  volumes go only with the job, through the garbage collector.
- `events: create` — one Event per condition transition.
- `list, watch` on the jobs and on every child kind — kopf's watch streams, which
  feed the watch cache the reconciler reads (`cache.py`); the child streams
  carry the labelSelector `psjob.dev/job-name`.
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
    Permission("", "secrets", ("create",)),
    Permission("", "persistentvolumeclaims", ("get", "list", "watch", "create")),
    Permission("", "events", ("create",)),
    Permission("apps", "statefulsets", ("get", "list", "watch", "create", "patch", "delete")),
    Permission("batch", "jobs", ("get", "list", "watch", "create", "patch", "delete")),
    Permission("networking.k8s.io", "networkpolicies",
               ("get", "list", "watch", "create", "patch", "delete")),
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


def required_rbac(gang_scheduler: str = "none") -> tuple[Permission, ...]:
    """Everything an operator running with this --gang-scheduler needs."""
    return REQUIRED_RBAC + GANG_RBAC.get(gang_scheduler, ())


def allows(api_group: str, resource: str, verb: str, gang_scheduler: str | None = None) -> bool:
    """Whether the operator may do this; gang_scheduler None: with any of the schedulers."""
    permissions = required_rbac(gang_scheduler) if gang_scheduler is not None else \
        REQUIRED_RBAC + tuple(p for extra in GANG_RBAC.values() for p in extra)
    return any(p.api_group == api_group and p.resource == resource and verb in p.verbs
               for p in permissions)


def as_rules(gang_scheduler: str = "none") -> list[dict]:
    """The list as Kubernetes PolicyRules (what a Role's `rules:` holds)."""
    return [{"apiGroups": [p.api_group], "resources": [p.resource], "verbs": list(p.verbs)}
            for p in required_rbac(gang_scheduler)]
