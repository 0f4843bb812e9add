"""Objects the job does not own, holding a child's name, through the real operator.

The operator's watch cache only sees objects labelled `psjob.dev/job-name`; an object a
user (or another tool) made under a child's name usually carries no such label, so the
cache says the child is absent and the operator's create answers 409 AlreadyExists. The
job must then end `Failed` (`ChildRejected`, with an Event), the foreign object must stay
as it was, and a foreign auth Secret must never be taken for the job's token.
"""
from __future__ import annotations

import base64

import pytest
from opkit_cluster import NAMESPACE, wait_for
from opkit_jobs import child, condition, event_reasons, job_manifest, patch_spec, phase, submit
from opkit_rbac import TEST_CLIENT_AGENT, uncovered

METADATA_ONLY = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
FOREIGN_TOKEN = base64.b64encode(b"someone else's token").decode()


def foreign(kind: str, name: str) -> dict:
    meta = {"name": name, "namespace": NAMESPACE, "labels": {"app": "someone-else"}}
    if kind == "services":
        return {"apiVersion": "v1", "kind": "Service", "metadata": meta,
                "spec": {"clusterIP": "None", "selector": {"app": "someone-else"},
                         "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}}
    if kind == "secrets":
        return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "Opaque",
                "data": {"token": FOREIGN_TOKEN}}
    assert kind == "persistentvolumeclaims"
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta,
            "spec": {"accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}}}


@pytest.mark.parametrize(("kind", "suffix", "what"), [
    ("services", "pserver", "Service"),
    ("secrets", "auth", "Secret"),
    ("persistentvolumeclaims", "checkpoint", "PersistentVolumeClaim"),
])
def test_a_foreign_object_with_a_childs_name_fails_the_job_and_is_left_alone(
        operator, plane, kind, suffix, what):
    name = f"foreign-{suffix}"
    mine = plane.kube.create(plane.path(kind), foreign(kind, f"{name}-{suffix}"))
    submit(plane, job_manifest(name, pservers=1, workers=1))

    wait_for(lambda: phase(plane, name) == "Failed", what="the job Failed")
    failed = condition(plane, name, "Failed")
    assert failed["reason"] == "ChildRejected"
    assert failed["message"] == (f"a {what} named {name}-{suffix} already exists and is not "
                                 f"controlled by this job: delete it or rename the job")
    wait_for(lambda: "ChildRejected" in event_reasons(plane, name), what="a ChildRejected Event")
    after = child(plane, kind, f"{name}-{suffix}")
    assert after["metadata"]["uid"] == mine["metadata"]["uid"]
    assert after["metadata"]["resourceVersion"] == mine["metadata"]["resourceVersion"]
    assert "ownerReferences" not in after["metadata"]
    if kind == "secrets":
        assert after["data"] == {"token": FOREIGN_TOKEN}
    # Nothing that would start pods was created next to the foreign object.
    assert child(plane, "statefulsets", f"{name}-pserver") is None
    assert child(plane, "jobs", f"{name}-worker") is None


def test_the_job_runs_once_the_foreign_object_is_gone_and_the_spec_is_edited(operator, plane):
    name = "renamed"
    plane.kube.create(plane.path("services"), foreign("services", f"{name}-pserver"))
    submit(plane, job_manifest(name, pservers=1, workers=1))
    wait_for(lambda: phase(plane, name) == "Failed", what="the job Failed")

    plane.kube.delete(plane.path("services", f"{name}-pserver"))
    patch_spec(plane, name, {"worker": {"replicas": 2}})  # a new generation: try again
    wait_for(lambda: phase(plane, name) == "Created", what="the job Created")
    service = wait_for(lambda: child(plane, "services", f"{name}-pserver"), what="its Service")
    assert service["metadata"]["ownerReferences"][0]["name"] == name


def test_the_jobs_own_secret_is_recognised_after_a_conflict(cluster, operator, plane):
    # --secret-recheck-seconds 5: the operator POSTs the Secret again, gets 409, reads it
    # and finds it its own; the job keeps running.
    name = "own-secret"
    submit(plane, job_manifest(name, pservers=1, workers=1))
    wait_for(lambda: phase(plane, name) == "Created", what="Created")
    plane.sync(name)
    plane.run(name)
    wait_for(lambda: phase(plane, name) == "Running", what="Running")
    secret = plane.path("secrets", f"{name}-auth")

    def reads() -> list[str]:
        return [accept for method, path, _, agent, accept in cluster.requests_with_accept()
                if method == "GET" and path == secret and not agent.startswith(TEST_CLIENT_AGENT)]
    found = wait_for(lambda: len(reads()) >= 2 and reads(), timeout=30,
                     what="two re-POSTs of the Secret answered 409 and read back")
    # Its metadata only: the operator has no use for anyone's Secret data.
    assert set(found) == {METADATA_ONLY}
    assert phase(plane, name) == "Running"


def test_every_api_call_made_above_is_covered_by_the_required_rbac(cluster, operator):
    assert uncovered(cluster.requests()) == []
