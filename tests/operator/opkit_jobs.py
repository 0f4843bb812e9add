"""Job manifests and status readers shared by the operator scenario tests."""
from __future__ import annotations

import copy
from typing import Any

from opkit_cluster import NAMESPACE
from opkit_fakes import LABEL_JOB, FakeControlPlane

CHILD_KINDS = ("statefulsets", "jobs", "services", "secrets", "configmaps",
               "persistentvolumeclaims", "networkpolicies")


def job_manifest(name: str, pservers: int = 2, workers: int = 3, **spec: Any) -> dict[str, Any]:
    body = {"image": "registry.example/psjob:1.0",
            "args": ["--model", "ctr", "--data", "synthetic"],
            "pserver": {"replicas": pservers}, "worker": {"replicas": workers}}
    for key, value in spec.items():
        body[key] = copy.deepcopy(value)
    return {"apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob",
            "metadata": {"name": name, "namespace": NAMESPACE}, "spec": body}


def submit(plane: FakeControlPlane, manifest: dict[str, Any]) -> dict[str, Any]:
    return plane.kube.create(plane.path("parameterserverjobs"), manifest)


def job(plane: FakeControlPlane, name: str) -> dict[str, Any] | None:
    return plane.kube.get(plane.path("parameterserverjobs", name))


def status(plane: FakeControlPlane, name: str) -> dict[str, Any]:
    return (job(plane, name) or {}).get("status") or {}


def phase(plane: FakeControlPlane, name: str) -> str | None:
    return status(plane, name).get("phase")


def condition(plane: FakeControlPlane, name: str, ctype: str) -> dict[str, Any]:
    for cond in status(plane, name).get("conditions") or []:
        if cond["type"] == ctype:
            return cond
    return {}


def children(plane: FakeControlPlane, name: str) -> set[tuple[str, str]]:
    found = set()
    for kind in CHILD_KINDS:
        for obj in plane.kube.list(plane.path(kind), f"{LABEL_JOB}={name}"):
            found.add((obj["kind"], obj["metadata"]["name"]))
    return found


def child(plane: FakeControlPlane, kind: str, name: str) -> dict[str, Any] | None:
    return plane.kube.get(plane.path(kind, name))


def event_reasons(plane: FakeControlPlane, name: str) -> list[str]:
    events = plane.kube.list(plane.path("events"))
    events = [e for e in events if e["involvedObject"]["name"] == name]
    return [e["reason"] for e in sorted(events, key=lambda e: int(e["metadata"]["resourceVersion"]))]


def patch_spec(plane: FakeControlPlane, name: str, spec: dict[str, Any]) -> None:
    plane.kube.patch(plane.path("parameterserverjobs", name), {"spec": spec})


def env_of(template_owner: dict[str, Any]) -> dict[str, str]:
    container = template_owner["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value") for e in container["env"]}
