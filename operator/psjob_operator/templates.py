"""Merge a role's pod template (`spec.<role>.template`) with the pod psjob builds.

A user's PodTemplateSpec carries what psjob cannot guess (training-data volumes,
serviceAccountName for Workload Identity / IRSA, affinity, topology spread,
sidecar-disabling annotations, schedulerName, initContainers, ...); psjob's own
pod (`pods.pod_template`) carries what it must control (the `psjob` container's
command, ports, probes and role environment, its volumes, restartPolicy).
The merge keeps both, field by field:

- fields only one side sets are taken as they are;
- maps (labels, annotations, nodeSelector, securityContext) are merged key by
  key; lists of named things (volumes, containers, env, volumeMounts) by name;
  tolerations and imagePullSecrets are concatenated;
- `automountServiceAccountToken`, `enableServiceLinks` and
  `terminationGracePeriodSeconds` are psjob's defaults: the template may change them
  (e.g. a token for IRSA);
- on the container named `psjob`, the template's env, envFrom, volumeMounts and
  resources are merged into psjob's; any other field psjob sets (command, args,
  image, ports, probes, securityContext) must not be set differently;
- any other disagreement is a `JobSpecError` naming the template field and the fix.

Afterwards the math-library thread counts are sized from the container's final
CPU resources (`size_math_threads`): the limit, else the request, never the
node's core count.

Pure functions: dicts in, new dicts out (the inputs are never modified).
"""
from __future__ import annotations

import copy
from typing import Any

from psjob.foundation import roles
from psjob.foundation.jobspec import JobSpecError
from psjob_operator import naming

# Pod-spec fields psjob sets as defaults the template may override.
OVERRIDABLE = frozenset({"automountServiceAccountToken", "enableServiceLinks",
                         "terminationGracePeriodSeconds"})
# Pod-spec maps merged key by key (a key both sides set must agree).
MERGED_MAPS = frozenset({"nodeSelector", "securityContext"})
# Pod-spec lists both sides contribute to.
CONCATENATED = frozenset({"tolerations", "imagePullSecrets"})
# Fields of the `psjob` container the template adds to.
CONTAINER_MERGED = frozenset({"env", "envFrom", "volumeMounts", "resources"})
# Set on every pod of a role with extra containers, so `kubectl logs POD` shows psjob's.
DEFAULT_CONTAINER_ANNOTATION = "kubectl.kubernetes.io/default-container"
# Why a field psjob manages cannot be changed, and what to set instead.
MANAGED_HINTS = {
    "command": "set spec.command (or spec.<role>.command)",
    "args": "set spec.args (or spec.<role>.args)",
    "image": "set spec.image (or spec.<role>.image)",
    "imagePullPolicy": "set spec.imagePullPolicy",
    "ports": "psjob opens the pserver and metrics ports (spec.pserver.port, spec.metricsPort)",
    "securityContext": "psjob runs the container non-root with a read-only root filesystem",
    "restartPolicy": "psjob chooses it per role (Always for pservers, Never for trainers)",
    "priorityClassName": "set spec.<role>.priorityClassName only once",
    "runAsUser": "set spec.securityContext.runAsUser", "runAsGroup":
    "set spec.securityContext.runAsGroup", "fsGroup": "set spec.securityContext.fsGroup",
}


def merge_pod_template(ours: dict[str, Any], template: dict[str, Any] | None,
                       path: str) -> dict[str, Any]:
    """psjob's pod template merged with the user's; `path` names the template field
    (e.g. spec.worker.template) in errors."""
    merged = copy.deepcopy(ours)
    if not template:
        return merged
    template = copy.deepcopy(template)
    meta = template.get("metadata") or {}
    merged_meta = merged.setdefault("metadata", {})
    for key in ("labels", "annotations"):
        if meta.get(key):
            merged_meta[key] = _merge_map(meta[key], merged_meta.get(key) or {},
                                          f"{path}.metadata.{key}")
    spec = merged["spec"]
    theirs = template.get("spec") or {}
    for key, value in theirs.items():
        field = f"{path}.spec.{key}"
        if key == "containers":
            spec["containers"] = _merge_containers(spec["containers"], value, field)
        elif key == "volumes":
            spec["volumes"] = _merge_named(spec.get("volumes") or [], value, field,
                                           "psjob mounts it into its container")
        elif key not in spec or key in OVERRIDABLE:
            spec[key] = value
        elif key in MERGED_MAPS:
            spec[key] = _merge_map(value, spec[key], field)
        elif key in CONCATENATED:
            spec[key] = spec[key] + [item for item in value if item not in spec[key]]
        elif value != spec[key]:
            raise _conflict(field, key, spec[key])
    if len(spec["containers"]) > 1:
        annotations = merged_meta.setdefault("annotations", {})
        annotations.setdefault(DEFAULT_CONTAINER_ANNOTATION, naming.CONTAINER)
    return merged


def size_math_threads(pod_template: dict[str, Any]) -> None:
    """Give the math libraries of the `psjob` container as many threads as it has CPUs:
    its CPU limit, else its CPU request (both rounded up by the downward API), else 1.
    Without a limit the downward API's limits.cpu is the *node's* allocatable CPUs, and
    the libraries' own default is the node's core count (96 threads on a 4-CPU request
    of a big node). A value the user set in env wins. Changes the template in place."""
    container = _psjob_container(pod_template["spec"]["containers"])
    env = container.setdefault("env", [])
    user_set = {var["name"] for var in env}
    cpu = container.get("resources") or {}
    source = next((kind for kind in ("limits", "requests") if "cpu" in (cpu.get(kind) or {})),
                  None)
    for var in roles.MATH_THREAD_ENV:
        if var in user_set:
            continue
        if source is None:
            env.append({"name": var, "value": "1"})
        else:
            env.append({"name": var, "valueFrom": {"resourceFieldRef": {
                "containerName": naming.CONTAINER, "resource": f"{source}.cpu",
                "divisor": "1"}}})


def _psjob_container(containers: list[dict[str, Any]]) -> dict[str, Any]:
    return next(c for c in containers if c.get("name") == naming.CONTAINER)


def _merge_containers(ours: list[dict[str, Any]], theirs: Any, field: str) -> list[dict]:
    _require_list(theirs, field)
    result = [copy.deepcopy(c) for c in ours]
    names = {c["name"] for c in ours}
    for i, container in enumerate(theirs):
        item = f"{field}[{i}]"
        if not isinstance(container, dict) or not container.get("name"):
            raise JobSpecError(f"{item}.name", "every container needs a name")
        if container["name"] == naming.CONTAINER:
            _merge_psjob_container(_psjob_container(result), container, item)
        elif container["name"] in names or any(c["name"] == container["name"] for c in theirs[:i]):
            raise JobSpecError(f"{item}.name", f"{container['name']!r} is used twice: rename it")
        else:
            result.append(container)
    return result


def _merge_psjob_container(ours: dict[str, Any], theirs: dict[str, Any], field: str) -> None:
    for key, value in theirs.items():
        item = f"{field}.{key}"
        if key == "name":
            continue
        if key == "env":
            ours["env"] = _merge_named(ours.get("env") or [], value, item,
                                       "psjob sets it from the job topology")
        elif key == "volumeMounts":
            ours["volumeMounts"] = _merge_mounts(ours.get("volumeMounts") or [], value, item)
        elif key == "envFrom":
            _require_list(value, item)
            ours["envFrom"] = (ours.get("envFrom") or []) + value
        elif key == "resources":
            if not isinstance(value, dict):
                raise JobSpecError(item, "must be a mapping (requests, limits)")
            resources = ours.setdefault("resources", {})
            for kind, amounts in value.items():
                if kind not in ("requests", "limits") or not isinstance(amounts, dict):
                    resources[kind] = amounts
                    continue
                resources[kind] = _merge_map(amounts, resources.get(kind) or {},
                                             f"{item}.{kind}", "also set by "
                                             "spec.<role>.resources: set it in one place")
        elif key not in ours:
            ours[key] = value
        elif ours[key] != value:
            raise _conflict(item, key, ours[key])


def _merge_named(ours: list[dict], theirs: Any, field: str, why: str) -> list[dict]:
    """Lists keyed by `name` (volumes, env): the template's items are added; one with
    a name psjob uses must be identical to psjob's."""
    _require_list(theirs, field)
    result = list(ours)
    by_name = {item["name"]: item for item in ours}
    for i, item in enumerate(theirs):
        if not isinstance(item, dict) or "name" not in item:
            raise JobSpecError(f"{field}[{i}].name", "is required")
        mine = by_name.get(item["name"])
        if mine is None:
            result.append(item)
            by_name[item["name"]] = item
        elif mine != item:
            raise JobSpecError(f"{field}[{i}]", f"{item['name']!r} is psjob's ({why}): "
                               f"use another name")
    return result


def _merge_mounts(ours: list[dict], theirs: Any, field: str) -> list[dict]:
    _require_list(theirs, field)
    taken = {m["mountPath"]: m["name"] for m in ours}
    for i, mount in enumerate(theirs):
        path = mount.get("mountPath") if isinstance(mount, dict) else None
        if not path:
            raise JobSpecError(f"{field}[{i}].mountPath", "is required")
        if path in taken:
            raise JobSpecError(f"{field}[{i}].mountPath",
                               f"{path} is where psjob mounts its {taken[path]!r} volume: "
                               f"mount yours elsewhere")
        taken[path] = mount.get("name", "")
    return ours + list(theirs)


def _merge_map(theirs: Any, ours: dict, field: str, why: str = "") -> dict:
    if not isinstance(theirs, dict):
        raise JobSpecError(field, "must be a mapping")
    result = dict(ours)
    for key, value in theirs.items():
        if key in ours and ours[key] != value:
            raise JobSpecError(f"{field}.{key}", f"is {value!r} but psjob sets {ours[key]!r}: "
                               f"{why or MANAGED_HINTS.get(key, 'remove it from the template')}")
        result[key] = value
    return result


def _conflict(field: str, key: str, ours: Any) -> JobSpecError:
    hint = MANAGED_HINTS.get(key, "remove it from the template")
    return JobSpecError(field, f"psjob manages this field (it sets {ours!r}): {hint}")


def _require_list(value: Any, field: str) -> None:
    if not isinstance(value, list):
        raise JobSpecError(field, "must be a list")
