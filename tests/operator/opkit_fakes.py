"""Stand-ins for the Kubernetes controllers and kubelet, driven by the tests.

The emulated API server stores objects but runs no controllers. These helpers
do, explicitly and only when a test calls them, what kube-controller-manager
and the kubelet would do for the operator's children:

- `sync(job)`: the StatefulSet controller (pods `<sts>-<i>` for i < replicas,
  failed pods replaced, extra pods removed, status.readyReplicas) and the Job
  controller for Indexed Jobs (one pod per unfinished index, suspend deletes
  active pods, status.active/succeeded/failed, Complete/Failed conditions);
- `run`, `crash_loop`, `fail`, `evict`, `succeed`: the kubelet reporting pod
  states through the pods/status subresource.

Everything goes through HTTP, so the operator sees the same watch events and
objects it would see from a real cluster.
"""
from __future__ import annotations

import copy
import uuid
from typing import Any

from opkit_cluster import TestClient

LABEL_JOB = "psjob.dev/job-name"
INDEX = "batch.kubernetes.io/job-completion-index"


class FakeControlPlane:
    def __init__(self, client: TestClient, namespace: str):
        self.kube = client
        self.ns = namespace

    # --- paths ---------------------------------------------------------------------------

    def path(self, kind: str, name: str | None = None) -> str:
        base = {
            "pods": f"/api/v1/namespaces/{self.ns}/pods",
            "services": f"/api/v1/namespaces/{self.ns}/services",
            "secrets": f"/api/v1/namespaces/{self.ns}/secrets",
            "configmaps": f"/api/v1/namespaces/{self.ns}/configmaps",
            "persistentvolumeclaims": f"/api/v1/namespaces/{self.ns}/persistentvolumeclaims",
            "events": f"/api/v1/namespaces/{self.ns}/events",
            "statefulsets": f"/apis/apps/v1/namespaces/{self.ns}/statefulsets",
            "jobs": f"/apis/batch/v1/namespaces/{self.ns}/jobs",
            "networkpolicies": f"/apis/networking.k8s.io/v1/namespaces/{self.ns}/networkpolicies",
            "parameterserverjobs": f"/apis/psjob.dev/v1alpha1/namespaces/{self.ns}/parameterserverjobs",
        }[kind]
        return f"{base}/{name}" if name else base

    def pods(self, job: str) -> dict[str, dict]:
        return {p["metadata"]["name"]: p
                for p in self.kube.list(self.path("pods"), f"{LABEL_JOB}={job}")}

    # --- controllers ---------------------------------------------------------------------

    def sync(self, job: str) -> None:
        for sts in self.kube.list(self.path("statefulsets"), f"{LABEL_JOB}={job}"):
            self._sync_statefulset(job, sts)
        for batch in self.kube.list(self.path("jobs"), f"{LABEL_JOB}={job}"):
            self._sync_job(job, batch)

    def _new_pod(self, name: str, template: dict, owner: dict,
                 annotations: dict | None = None) -> dict:
        meta = copy.deepcopy(template.get("metadata") or {})
        meta.update(name=name, namespace=self.ns,
                    annotations={**(meta.get("annotations") or {}), **(annotations or {})},
                    ownerReferences=[{"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                                      "name": owner["metadata"]["name"],
                                      "uid": owner["metadata"]["uid"], "controller": True}])
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                "spec": copy.deepcopy(template["spec"]), "status": {"phase": "Pending"}}

    def _sync_statefulset(self, job: str, sts: dict) -> None:
        name = sts["metadata"]["name"]
        replicas = sts["spec"]["replicas"]
        pods = {n: p for n, p in self.pods(job).items() if n.rsplit("-", 1)[0] == name}
        for pod_name, pod in list(pods.items()):
            index = int(pod_name.rsplit("-", 1)[1])
            if index >= replicas or pod["status"].get("phase") == "Failed":
                self.kube.delete(self.path("pods", pod_name))
                del pods[pod_name]
        for i in range(replicas):
            pod_name = f"{name}-{i}"
            if pod_name not in pods:
                self.kube.create(self.path("pods"),
                                 self._new_pod(pod_name, sts["spec"]["template"], sts))
        self.kube.patch(self.path("statefulsets", name) + "/status",
                        {"status": {"replicas": replicas,
                                    "readyReplicas": self._ready(job, name)}})

    def _ready(self, job: str, prefix: str) -> int:
        return sum(1 for n, p in self.pods(job).items() if n.startswith(prefix + "-") and any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in p["status"].get("conditions") or []))

    def _sync_job(self, job: str, batch: dict) -> None:
        name = batch["metadata"]["name"]
        spec = batch["spec"]
        pods = [p for p in self.pods(job).values() if p["metadata"]["name"].startswith(name + "-")]
        # An Indexed Job scaled down (completions and parallelism lowered together) deletes
        # its pods of the indexes it no longer has and stops counting them.
        for pod in [p for p in pods if int(p["metadata"]["annotations"][INDEX]) >= spec["completions"]]:
            self.kube.delete(self.path("pods", pod["metadata"]["name"]))
            pods.remove(pod)
        phase = lambda p: p["status"].get("phase")
        disrupted = lambda p: any(c.get("type") == "DisruptionTarget"
                                  for c in p["status"].get("conditions") or [])
        succeeded = {p["metadata"]["annotations"][INDEX] for p in pods if phase(p) == "Succeeded"}
        failed = sum(1 for p in pods if phase(p) == "Failed" and not disrupted(p)
                     and _exit_code(p) not in _ignored_exit_codes(spec))
        finished = any(c.get("status") == "True"
                       for c in (batch.get("status") or {}).get("conditions") or [])
        active = [p for p in pods if phase(p) in ("Pending", "Running")]
        conditions = list((batch.get("status") or {}).get("conditions") or [])
        if failed > spec["backoffLimit"] and not finished:
            conditions.append({"type": "Failed", "status": "True",
                               "reason": "BackoffLimitExceeded",
                               "message": "Job has reached the specified backoff limit"})
            finished = True
        if spec.get("suspend") or finished:
            for pod in active:
                self.kube.delete(self.path("pods", pod["metadata"]["name"]))
            active = []
        else:
            busy = {p["metadata"]["annotations"][INDEX] for p in active} | succeeded
            for i in range(spec["completions"]):
                if str(i) not in busy:
                    pod = self._new_pod(f"{name}-{i}-{uuid.uuid4().hex[:5]}",
                                        spec["template"], batch, {INDEX: str(i)})
                    self.kube.create(self.path("pods"), pod)
                    active.append(pod)
        if len(succeeded) >= spec["completions"] and not finished:
            conditions.append({"type": "Complete", "status": "True"})
        self.kube.patch(self.path("jobs", name) + "/status", {"status": {
            "active": len(active), "succeeded": len(succeeded), "failed": failed,
            "conditions": conditions}})

    # --- kubelet -------------------------------------------------------------------------

    def set_status(self, pod: str, status: dict[str, Any]) -> None:
        self.kube.patch(self.path("pods", pod) + "/status", {"status": status})

    def run(self, job: str, ip: str = "127.0.0.1") -> None:
        """Every pending or running pod of the job becomes Running and Ready."""
        for name, pod in self.pods(job).items():
            if pod["status"].get("phase") in ("Pending", "Running"):
                self.set_status(name, {
                    "phase": "Running", "podIP": ip,
                    "conditions": [{"type": "PodScheduled", "status": "True"},
                                   {"type": "Ready", "status": "True"}],
                    "containerStatuses": [{"name": "psjob", "ready": True, "restartCount": 0,
                                           "state": {"running": {}}}]})

    def crash_loop(self, pod: str, restarts: int = 3, exit_code: int = 1) -> None:
        self.set_status(pod, {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [{
                "name": "psjob", "ready": False, "restartCount": restarts,
                "state": {"waiting": {"reason": "CrashLoopBackOff",
                                      "message": "back-off restarting failed container"}},
                "lastState": {"terminated": {"exitCode": exit_code, "reason": "Error"}}}]})

    def fail(self, pod: str, exit_code: int = 1, reason: str = "Error") -> None:
        self.set_status(pod, {
            "phase": "Failed", "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [{"name": "psjob", "ready": False, "restartCount": 0,
                                   "state": {"terminated": {"exitCode": exit_code,
                                                            "reason": reason}}}]})

    def evict(self, pod: str) -> None:
        self.set_status(pod, {
            "phase": "Failed", "reason": "Evicted",
            "message": "The node was low on resource: memory.",
            "conditions": [{"type": "Ready", "status": "False"},
                           {"type": "DisruptionTarget", "status": "True",
                            "reason": "TerminationByKubelet"}]})

    def succeed(self, pod: str) -> None:
        self.set_status(pod, {
            "phase": "Succeeded", "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [{"name": "psjob", "ready": False, "restartCount": 0,
                                   "state": {"terminated": {"exitCode": 0,
                                                            "reason": "Completed"}}}]})

    def unschedulable(self, pod: str, message: str) -> None:
        self.set_status(pod, {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": message}]})


def _exit_code(pod: dict) -> int | None:
    for c in (pod.get("status") or {}).get("containerStatuses") or []:
        terminated = (c.get("state") or {}).get("terminated")
        if terminated:
            return terminated.get("exitCode")
    return None


def _ignored_exit_codes(job_spec: dict) -> set:
    """The exit codes the Job's podFailurePolicy Ignores, as the Job controller honours them."""
    codes = set()
    for rule in (job_spec.get("podFailurePolicy") or {}).get("rules") or []:
        if rule.get("action") == "Ignore" and rule.get("onExitCodes", {}).get("operator") == "In":
            codes.update(rule["onExitCodes"]["values"])
    return codes
