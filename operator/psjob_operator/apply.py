"""Apply built manifests to the cluster: create, patch, recreate, remove.

Level-based and idempotent: for each desired child, read the live object and
do the least that makes it match.

- Missing → create (with a hash of the manifest and, for patchable kinds, the
  manifest itself in annotations: the "last applied" state).
- Present, hash equal → nothing; a StatefulSet whose replicas drifted (someone
  ran `kubectl scale`) is patched back.
- Present, hash different → a JSON merge patch from the last applied state to
  the desired one (keys we stopped setting become null; fields defaulted by
  the server are left alone).
- Secrets and PersistentVolumeClaims are created once and never changed (the
  token must not rotate under running pods; claims are mostly immutable).
- The worker Job's pod template is immutable in Kubernetes: a changed Job is
  deleted (Foreground, so its pods go first) and created again on a later
  pass; only `spec.suspend` is patched in place, and, for an elastic job's
  worker Job (annotated `psjob.dev/elastic`), the scale: `completions` and
  `parallelism` together (an elastic Indexed Job). Its pod template does not
  depend on the trainer count (psjob.foundation.roles: PADDLE_TRAINERS is the capacity),
  so a resize restarts no pod.

Pod-owning children (the StatefulSets, the worker Job) also carry the job's
*inputs* (`job_inputs`: its generation and the stage a resize or suspension
put it in). A live one whose manifest differs while its inputs are the same
was rendered by another operator version (an upgrade) or other operator flags:
it is left as it is — replacing the template would restart every running job's
pods — except for its scale and `suspend`; the new rendering reaches it with
the job's next spec edit.

A live object with our name that is not controlled by this job is never
touched: it is reported (`ChildRejected`) or, if it belongs to a deleted job
of the same name that the garbage collector has not removed yet, waited for.
The watch cache only holds objects with the job's label, so an object made by
someone else usually shows up as a 409 on create: its metadata is then read by
name (`_existing`) and judged the same way — a foreign Secret included, which
is never taken for the job's token.
"""
from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from psjob.foundation import jobspec
from psjob_operator import naming
from psjob_operator.kube import (
    BATCH_JOBS,
    CLAIMS,
    CONFIGMAPS,
    NETWORK_POLICIES,
    SECRETS,
    SERVICES,
    STATEFULSETS,
    ApiError,
    KubeApi,
    Resource,
    merge_diff,
    resource_for,
)

log = logging.getLogger(__name__)
CREATE_ONLY = (SECRETS, CLAIMS)
POD_OWNERS = ("StatefulSet", "Job")  # whose template changes restart running pods
# Children the operator deletes itself (recreation, specs that drop them, cleanPodPolicy All).
# Never claims: checkpoint volumes leave only with the job, through the garbage collector.
REMOVABLE = (STATEFULSETS, SERVICES, NETWORK_POLICIES, BATCH_JOBS, CONFIGMAPS)


class ChildRejected(Exception):
    """The API refused a child, or a foreign object holds its name: the spec
    (or the cluster) must change before this job can run."""


class WaitForChild(Exception):
    """A child is being deleted (recreation, garbage collection): try again soon."""


@dataclass
class ApplyReport:
    created: list[str] = field(default_factory=list)
    patched: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)


def manifest_hash(manifest: Mapping[str, Any]) -> str:
    canonical = json.dumps(manifest, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


# Fields of a Job's spec patched in place; any other change needs a new Job.
_JOB_IN_PLACE = ("suspend",)
_JOB_SCALE = ("completions", "parallelism")


def _elastic(manifest: Mapping[str, Any]) -> bool:
    return ((manifest.get("metadata") or {}).get("annotations") or {}).get(naming.ANNOTATION_ELASTIC) == "true"


def _job_hash(manifest: Mapping[str, Any]) -> str:
    in_place = _JOB_IN_PLACE + (_JOB_SCALE if _elastic(manifest) else ())
    spec = {k: v for k, v in manifest["spec"].items() if k not in in_place}
    return manifest_hash({**manifest, "spec": spec})


def job_inputs(generation: int, activity: Any, pservers: int, config_pservers: int | None) -> str:
    """What a pass's children are built from, besides the operator's own code and flags: the
    job's spec generation, the pods it keeps (`builders.Activity`) and the pserver counts a
    resize applies (psjob_operator.resize). Equal inputs, equal children — unless the
    operator that rendered them differs."""
    # Named fields, not the dataclass's repr: an operator version adding a field must not
    # change the inputs of every running job.
    return manifest_hash({"generation": generation, "servers": activity.servers,
                          "workers_suspended": activity.workers_suspended,
                          "worker_job": activity.worker_job, "pservers": pservers,
                          "config_pservers": config_pservers})


def _annotated(manifest: Mapping[str, Any], digest: str, last_applied: bool,
               inputs: str = "") -> dict[str, Any]:
    out = dict(manifest)
    meta = dict(out["metadata"])
    annotations = dict(meta.get("annotations") or {})
    annotations[naming.ANNOTATION_HASH] = digest
    if last_applied:
        annotations[naming.ANNOTATION_LAST_APPLIED] = json.dumps(
            manifest, sort_keys=True, separators=(",", ":"))
    if inputs and manifest["kind"] in POD_OWNERS:
        annotations[naming.ANNOTATION_JOB_INPUTS] = inputs
    meta["annotations"] = annotations
    out["metadata"] = meta
    return out


def _same_inputs(current: Mapping[str, Any], inputs: str) -> bool:
    annotations = (current.get("metadata") or {}).get("annotations") or {}
    return bool(inputs) and annotations.get(naming.ANNOTATION_JOB_INPUTS) == inputs


def _inputs_patch(current: Mapping[str, Any], inputs: str) -> dict[str, Any]:
    """A metadata patch recording `inputs` on a child built from them (nothing if it says so)."""
    if not inputs or _same_inputs(current, inputs):
        return {}
    return {"metadata": {"annotations": {naming.ANNOTATION_JOB_INPUTS: inputs}}}


def controller_uid(obj: Mapping[str, Any]) -> str | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == jobspec.KIND:
            uid: str | None = ref.get("uid")
            return uid
    return None


def check_owner(live: Mapping[str, Any], owner_uid: str, owner_name: str) -> None:
    uid = controller_uid(live)
    if uid == owner_uid:
        return
    kind, name = live.get("kind", "object"), live["metadata"]["name"]
    refs = (live.get("metadata") or {}).get("ownerReferences") or []
    if uid is not None and any(r.get("name") == owner_name for r in refs):
        raise WaitForChild(f"{kind} {name} still belongs to a deleted job named {owner_name}; "
                           f"waiting for the garbage collector")
    raise ChildRejected(f"a {kind} named {name} already exists and is not controlled by this "
                        f"job: delete it or rename the job")


class Applier:
    def __init__(self, api: KubeApi, recheck_seconds: float = 60.0,
                 clock: Callable[[], float] = time.monotonic):
        self.api = api
        # Create-only children known to exist (namespace, name, owner uid) → when that was
        # last confirmed. The Secret is not in the watch cache (the operator may not list
        # Secrets), so without this every pass would POST it again; after `recheck_seconds`
        # the next pass POSTs once more, so a Secret deleted by hand comes back within one
        # resync (a 409 when present, and its metadata read to see whose it is).
        self._known: dict[tuple[str, str, str], float] = {}
        self.recheck_seconds = recheck_seconds
        self.clock = clock

    def apply(self, desired: list[dict[str, Any]], owner_uid: str, owner_name: str,
              live: Mapping[tuple[str, str], dict | None], inputs: str = "") -> ApplyReport:
        """`live` maps (kind, name) to objects already read this pass (None: absent);
        `inputs` is `job_inputs` of this pass ("" = apply every difference)."""
        report = ApplyReport()
        for manifest in desired:
            resource = resource_for(manifest)
            key = (manifest["kind"], manifest["metadata"]["name"])
            if resource in CREATE_ONLY:
                known = (manifest["metadata"]["namespace"], key[1], owner_uid)
                now = self.clock()
                # Observed this pass (the claim): trust that; not cached (the Secret):
                # create until one attempt succeeded or found its own there, and again
                # once the confirmation is older than recheck_seconds.
                stale = now - self._known.get(known, float("-inf")) >= self.recheck_seconds
                absent = live[key] is None if key in live else stale
                if absent:
                    self._create(resource, manifest, report, owner_uid, owner_name)
                if absent or key in live:
                    self._known[known] = now
                continue
            meta = manifest["metadata"]
            # rbac: CHILD_RESOURCES - CREATE_ONLY
            current = live[key] if key in live else self.api.get(resource, meta["namespace"],
                                                                  meta["name"])
            if current is None:
                self._create(resource, manifest, report, owner_uid, owner_name, inputs=inputs)
                continue
            check_owner(current, owner_uid, owner_name)
            if (current.get("metadata") or {}).get("deletionTimestamp"):
                report.waiting.append(f"{key[0]}/{key[1]}")
                continue
            if resource is BATCH_JOBS:
                self._apply_job(manifest, current, report, inputs)
            else:
                self._patch_if_changed(resource, manifest, current, report, inputs)
        return report

    def _create(self, resource: Resource, manifest: dict, report: ApplyReport, owner_uid: str,
                owner_name: str, inputs: str = "") -> None:
        meta = manifest["metadata"]
        digest = _job_hash(manifest) if resource is BATCH_JOBS else manifest_hash(manifest)
        body = _annotated(manifest, digest, last_applied=resource not in CREATE_ONLY
                          and resource is not BATCH_JOBS, inputs=inputs)
        try:
            self.api.create(resource, meta["namespace"], body)  # rbac: CHILD_RESOURCES
        except ApiError as exc:
            if exc.conflict:
                self._existing(resource, manifest, owner_uid, owner_name, report)
                return
            if exc.not_found:  # the namespace exists (the job is in it): the kind does not
                raise ChildRejected(
                    f"the cluster does not serve {manifest['apiVersion']} {manifest['kind']}: "
                    f"install its CRD, or run the operator without the option that needs it "
                    f"(--gang-scheduler)") from exc
            if exc.invalid:
                raise ChildRejected(f"Kubernetes rejected {manifest['kind']} {meta['name']}: "
                                    f"{exc.message}") from exc
            raise
        report.created.append(f"{manifest['kind']}/{meta['name']}")

    def _existing(self, resource: Resource, manifest: dict, owner_uid: str, owner_name: str,
                  report: ApplyReport) -> None:
        """After a 409 AlreadyExists. The watch cache holds only objects with the job's label
        and the Secret is never cached, so the name may be held by this job's child (an
        earlier pass made it), a deleted namesake's (wait for the garbage collector) or an
        object someone else made (ChildRejected; left untouched, never adopted: a foreign
        Secret is not the job's token). Its metadata tells which; its content is not read."""
        meta = manifest["metadata"]
        # rbac: CHILD_RESOURCES
        found = self.api.get_metadata(resource, meta["namespace"], meta["name"])
        if found is None or found["metadata"].get("deletionTimestamp"):
            report.waiting.append(f"{manifest['kind']}/{meta['name']}")  # gone: create again
            return
        check_owner(found, owner_uid, owner_name)

    def _patch_if_changed(self, resource: Resource, manifest: dict, current: dict,
                          report: ApplyReport, inputs: str = "") -> None:
        meta = manifest["metadata"]
        digest = manifest_hash(manifest)
        annotations = (current.get("metadata") or {}).get("annotations") or {}
        drifted = (resource is STATEFULSETS and
                   (current.get("spec") or {}).get("replicas") != manifest["spec"]["replicas"])
        pod_owner = manifest["kind"] in POD_OWNERS
        if annotations.get(naming.ANNOTATION_HASH) == digest or (pod_owner and _same_inputs(current, inputs)):
            # Unchanged, or only rendered differently (another operator version): keep the
            # template, put the scale back if someone changed it, note inputs it lacks.
            patch = _inputs_patch(current, inputs) if pod_owner else {}
            if drifted:
                patch["spec"] = {"replicas": manifest["spec"]["replicas"]}
            if patch:
                # rbac: CHILD_RESOURCES - CREATE_ONLY - BATCH_JOBS
                self.api.patch(resource, meta["namespace"], meta["name"], patch)
                report.patched.append(f"{manifest['kind']}/{meta['name']}")
            return
        try:
            last = json.loads(annotations.get(naming.ANNOTATION_LAST_APPLIED, "{}"))
        except ValueError:
            last = {}
        patch = merge_diff(last, manifest) if last else dict(manifest)
        if drifted:
            patch.setdefault("spec", {})["replicas"] = manifest["spec"]["replicas"]
        patch["metadata"] = {**patch.get("metadata", {}), "annotations": {
            **(patch.get("metadata", {}).get("annotations") or {}),
            **_annotated(manifest, digest, True, inputs)["metadata"]["annotations"]}}
        patch.pop("apiVersion", None)
        patch.pop("kind", None)
        try:
            # rbac: CHILD_RESOURCES - CREATE_ONLY - BATCH_JOBS
            self.api.patch(resource, meta["namespace"], meta["name"], patch)
        except ApiError as exc:
            if exc.invalid:
                raise ChildRejected(f"Kubernetes rejected the update of {manifest['kind']} "
                                    f"{meta['name']}: {exc.message}") from exc
            raise
        report.patched.append(f"{manifest['kind']}/{meta['name']}")

    def _apply_job(self, manifest: dict, current: dict, report: ApplyReport, inputs: str = "") -> None:
        meta = manifest["metadata"]
        annotations = (current.get("metadata") or {}).get("annotations") or {}
        name = f"Job/{meta['name']}"
        if annotations.get(naming.ANNOTATION_HASH) != _job_hash(manifest) and not _same_inputs(current, inputs):
            self.api.delete(BATCH_JOBS, meta["namespace"], meta["name"], propagation="Foreground")
            report.deleted.append(name)
            report.waiting.append(name)
            return
        if job_finished(current):
            return
        live = current.get("spec") or {}
        patch = {k: manifest["spec"][k] for k in _JOB_SCALE
                 if _elastic(manifest) and live.get(k) != manifest["spec"][k]}
        want = bool(manifest["spec"].get("suspend"))
        if bool(live.get("suspend")) != want:
            patch["suspend"] = want
        body = {**_inputs_patch(current, inputs), **({"spec": patch} if patch else {})}
        if body:
            # Scale changes completions and parallelism together (Kubernetes accepts that for an
            # Indexed Job only when both move together: an elastic indexed job).
            self.api.patch(BATCH_JOBS, meta["namespace"], meta["name"], body)
            report.patched.append(name)

    def forget(self, namespace: str, names: set[str]) -> None:
        self._known = {k: t for k, t in self._known.items()
                       if not (k[0] == namespace and k[1] in names)}

    def remove(self, resource: Resource, namespace: str, name: str, owner_uid: str,
               live: dict | None, report: ApplyReport) -> None:
        """Delete a child the spec no longer wants, if it is ours."""
        if resource not in REMOVABLE:
            raise ValueError(f"the operator never deletes {resource.plural}")
        if live is None or controller_uid(live) != owner_uid:
            return
        if (live.get("metadata") or {}).get("deletionTimestamp"):
            return
        if self.api.delete(resource, namespace, name):  # rbac: REMOVABLE
            report.deleted.append(f"{resource.kind}/{name}")


def job_finished(job: Mapping[str, Any]) -> bool:
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return True
    return False
