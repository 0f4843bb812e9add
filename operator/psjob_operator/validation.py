"""Checks that need Kubernetes knowledge, beyond what `psjob.foundation.jobspec` checks.

`psjob.foundation.jobspec` validates what any runner needs (types, ranges, cross-field
rules mirrored in the CRD). Here: rules that only matter when pods are
scheduled, written so the user sees the job's field and the fix instead of a
rejected StatefulSet later.
"""
from __future__ import annotations

from kubernetes.utils.quantity import parse_quantity

from psjob.foundation.jobspec import Device, JobSpecError, ParameterServerJob, RoleSpec
from psjob_operator import builders
from psjob_operator.pods import GPU_RESOURCE


def validate_for_cluster(job: ParameterServerJob) -> None:
    spec = job.spec
    roles = [("spec.pserver", spec.pserver), ("spec.worker", spec.worker)]
    if spec.heter_worker is not None:
        roles.append(("spec.heterWorker", spec.heter_worker))
    for path, role in roles:
        _check_resources(path, role)
        if spec.tls is not None:
            _check_tls_env(path, role)
    # Merging the pod templates (spec.<role>.template) raises JobSpecError naming the
    # template field that conflicts with psjob's pod: build the children once to find out.
    builders.build_children(job, builders.Owner(job.name, ""), auth_token="")


TLS_ENV = ("PSJOB_TLS_CERT_FILE", "PSJOB_TLS_KEY_FILE", "PSJOB_TLS_CA_FILE", "PSJOB_TLS_SERVER_NAME")


def _check_tls_env(path: str, role: RoleSpec) -> None:
    """With spec.tls the operator sets PSJOB_TLS_*; a second value would silently win or lose."""
    for i, var in enumerate(role.env):
        if var.name in TLS_ENV:
            raise JobSpecError(f"{path}.env[{i}]",
                               f"{var.name} is set by spec.tls (the Secret's files are mounted "
                               f"and named for you): remove it, or remove spec.tls")


def _check_resources(path: str, role: RoleSpec) -> None:
    requests, limits = role.resources.requests, role.resources.limits
    for name, request in requests.items():
        if name in limits and parse_quantity(request) > parse_quantity(limits[name]):
            raise JobSpecError(
                f"{path}.resources.requests.{name}",
                f"{request} exceeds the limit {limits[name]}: lower the request or raise "
                f"{path}.resources.limits.{name}")
    if role.device is Device.GPU and GPU_RESOURCE in limits and \
            parse_quantity(limits[GPU_RESOURCE]) < 1:
        raise JobSpecError(f"{path}.resources.limits.{GPU_RESOURCE}",
                           f"is {limits[GPU_RESOURCE]} but {path}.device is gpu: request at "
                           f"least 1 GPU or set device: cpu")
    if role.device is Device.CPU and GPU_RESOURCE in requests | limits:
        gpus = limits.get(GPU_RESOURCE) or requests.get(GPU_RESOURCE)
        if parse_quantity(gpus) > 0:
            raise JobSpecError(f"{path}.device",
                               f"is cpu but the pods request {gpus} {GPU_RESOURCE}: set "
                               f"{path}.device: gpu so psjob uses the GPU, or drop the GPU "
                               f"resource")
