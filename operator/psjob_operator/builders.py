"""Pure builders: a parsed ParameterServerJob → the manifests of its children.

No API calls, no clocks, no randomness (the auth token is an argument), so
every manifest is unit-tested for exact values and validated against the
Kubernetes OpenAPI schema. The reconciler decides *which* state to build
(`Activity`: running, suspended, finished) and applies the result.

Children, in the order they are applied (dependencies first):
Secret, ConfigMap, PersistentVolumeClaim, NetworkPolicy, pserver Service +
StatefulSet, optional heter Service + StatefulSet, worker Job. A collective job
(spec.mode: collective) has no pservers: its trainers' headless Service (the
worker Job's pods' subdomain, so trainer i is <job>-worker-i.<job>-worker.<ns>.svc,
its ring endpoint) comes in their place. Every child
carries an owner reference to the job (controller=true), so deleting the job
deletes them through Kubernetes' garbage collector.
"""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from psjob.foundation import jobspec, roles
from psjob.foundation.jobspec import ParameterServerJob
from psjob_operator import naming, pods


@dataclass(frozen=True)
class Owner:
    """The job object the children belong to (uid comes from the API server)."""
    name: str
    uid: str


@dataclass(frozen=True)
class Activity:
    """Which pods should exist right now.

    servers: pserver/heter StatefulSets at spec.replicas (else 0);
    workers_suspended: the worker Job's `suspend` (Kubernetes stops its pods);
    worker_job: False deletes the worker Job with its pods (cleanPodPolicy All).
    """
    servers: bool = True
    workers_suspended: bool = False
    worker_job: bool = True


RUNNING = Activity()
SUSPENDED = Activity(servers=False, workers_suspended=True)


def owner_reference(owner: Owner) -> dict[str, Any]:
    return {"apiVersion": jobspec.API_VERSION_FULL, "kind": jobspec.KIND, "name": owner.name,
            "uid": owner.uid, "controller": True, "blockOwnerDeletion": True}


def _metadata(job: ParameterServerJob, owner: Owner, name: str,
              role: str | None = None) -> dict[str, Any]:
    labels = naming.job_labels(job.name)
    if role is not None:
        labels[naming.LABEL_ROLE] = role
    return {"name": name, "namespace": job.namespace, "labels": labels,
            "ownerReferences": [owner_reference(owner)]}


def build_children(job: ParameterServerJob, owner: Owner, auth_token: str,
                   activity: Activity = RUNNING) -> list[dict[str, Any]]:
    topology = roles.kubernetes_topology(job, job.namespace)
    spec = job.spec
    children = [build_auth_secret(job, owner, auth_token), build_config_map(job, owner, topology)]
    if spec.checkpoint.uses_claim and not spec.checkpoint.existing_claim:
        children.append(build_checkpoint_claim(job, owner))
    if spec.network_policy.enabled:
        children.append(build_network_policy(job, owner))
    if topology.collective:
        children.append(build_trainer_service(job, owner))
    else:
        children.append(build_server_service(job, owner, naming.ROLE_PSERVER))
        children.append(build_server_statefulset(job, owner, topology, naming.ROLE_PSERVER, activity))
    if spec.heter_worker is not None:
        children.append(build_server_service(job, owner, naming.ROLE_HETER))
        children.append(build_server_statefulset(job, owner, topology, naming.ROLE_HETER,
                                                 activity))
    if activity.worker_job:
        children.append(build_worker_job(job, owner, topology, activity))
    return children


def build_auth_secret(job: ParameterServerJob, owner: Owner, token: str) -> dict[str, Any]:
    """The per-job RPC token; created once, never rotated while the job lives."""
    encoded = base64.b64encode(token.encode()).decode()
    return {"apiVersion": "v1", "kind": "Secret",
            "metadata": _metadata(job, owner, naming.auth_secret(job.name)),
            "type": "Opaque", "immutable": True, "data": {naming.AUTH_TOKEN_KEY: encoded}}


def build_config_map(job: ParameterServerJob, owner: Owner,
                     topology: roles.JobTopology) -> dict[str, Any]:
    text = json.dumps(roles.topology_to_dict(topology), indent=2, sort_keys=True)
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": _metadata(job, owner, naming.config_map(job.name)),
            "data": {naming.TOPOLOGY_KEY: text}}


def build_checkpoint_claim(job: ParameterServerJob, owner: Owner) -> dict[str, Any]:
    """One ReadWriteMany claim shared by every process (see docs/user/operator.md)."""
    ckpt = job.spec.checkpoint
    spec: dict[str, Any] = {"accessModes": ["ReadWriteMany"], "volumeMode": "Filesystem",
                            "resources": {"requests": {"storage": ckpt.size}}}
    if ckpt.storage_class_name:
        spec["storageClassName"] = ckpt.storage_class_name
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": _metadata(job, owner, naming.checkpoint_claim(job.name)), "spec": spec}


def server_ports(job: ParameterServerJob) -> list[int]:
    if job.spec.mode is jobspec.Mode.COLLECTIVE:
        return [ring_port(job)]
    ports = [job.spec.pserver.port]
    if job.spec.heter_worker is not None and job.spec.heter_worker.port not in ports:
        ports.append(job.spec.heter_worker.port)
    return ports


def build_network_policy(job: ParameterServerJob, owner: Owner) -> dict[str, Any]:
    """Ingress to the job's pods: from the job's own pods, the configured extra
    peers (server ports only) and the metrics scrapers (metrics port only)."""
    np = job.spec.network_policy
    own = {naming.LABEL_JOB: job.name}
    ingress: list[dict[str, Any]] = [{"from": [{"podSelector": {"matchLabels": own}}]}]
    if np.allow_from:
        ingress.append({"from": [dict(p) for p in np.allow_from],
                        "ports": [{"protocol": "TCP", "port": p} for p in server_ports(job)]})
    metrics_rule: dict[str, Any] = {"ports": [{"protocol": "TCP", "port": job.spec.metrics_port}]}
    if np.metrics_from:
        metrics_rule["from"] = [dict(p) for p in np.metrics_from]
    ingress.append(metrics_rule)
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": _metadata(job, owner, naming.network_policy(job.name)),
            "spec": {"podSelector": {"matchLabels": own}, "policyTypes": ["Ingress"],
                     "ingress": ingress}}


def ring_port(job: ParameterServerJob) -> int:
    """A collective job's trainer ring port."""
    return job.spec.worker.port or roles.DEFAULT_TRAINER_PORT


def build_trainer_service(job: ParameterServerJob, owner: Owner) -> dict[str, Any]:
    """A collective job's headless Service: the worker Job's pods use it as their subdomain,
    which gives trainer i the DNS name <job>-worker-i.<job>-worker.<ns>.svc (its ring endpoint)."""
    name = naming.worker(job.name)
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": _metadata(job, owner, name, naming.ROLE_WORKER),
            "spec": {
                "clusterIP": "None",
                # The trainers resolve each other while starting, before any is ready.
                "publishNotReadyAddresses": True,
                "selector": naming.role_labels(job.name, naming.ROLE_WORKER),
                "ports": [
                    {"name": naming.PORT_RING, "port": ring_port(job), "targetPort": naming.PORT_RING,
                     "protocol": "TCP"},
                    {"name": naming.PORT_METRICS, "port": job.spec.metrics_port,
                     "targetPort": naming.PORT_METRICS, "protocol": "TCP"},
                ]}}


def _server_role(job: ParameterServerJob, role: str) -> tuple[str, Any, str]:
    if role == naming.ROLE_PSERVER:
        return naming.pserver(job.name), job.spec.pserver, naming.PORT_PSERVER
    assert job.spec.heter_worker is not None
    return naming.heter(job.name), job.spec.heter_worker, naming.PORT_HETER


def build_server_service(job: ParameterServerJob, owner: Owner, role: str) -> dict[str, Any]:
    """Headless Service: gives pod i the DNS name <sts>-i.<sts>.<ns>.svc."""
    name, role_spec, port_name = _server_role(job, role)
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": _metadata(job, owner, name, role),
            "spec": {
                "clusterIP": "None",
                # Peers must resolve each other while starting up, before readiness.
                "publishNotReadyAddresses": True,
                "selector": naming.role_labels(job.name, role),
                "ports": [
                    {"name": port_name, "port": role_spec.port, "targetPort": port_name,
                     "protocol": "TCP"},
                    {"name": naming.PORT_METRICS, "port": job.spec.metrics_port,
                     "targetPort": naming.PORT_METRICS, "protocol": "TCP"},
                ]}}


def build_server_statefulset(job: ParameterServerJob, owner: Owner, topology: roles.JobTopology,
                             role: str, activity: Activity = RUNNING) -> dict[str, Any]:
    """Stable identities: a failed pod is recreated with the same name and index."""
    name, role_spec, _ = _server_role(job, role)
    template = pods.pod_template(job.name, job.spec, topology, role, role_spec,
                                 server_port=role_spec.port, restart_policy="Always")
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": _metadata(job, owner, name, role),
            "spec": {
                "serviceName": name,
                "replicas": role_spec.replicas if activity.servers else 0,
                # All servers start together; none waits for its predecessor.
                "podManagementPolicy": "Parallel",
                "selector": {"matchLabels": naming.role_labels(job.name, role)},
                "updateStrategy": {"type": "RollingUpdate"},
                "template": template,
            }}


def build_worker_job(job: ParameterServerJob, owner: Owner, topology: roles.JobTopology,
                     activity: Activity = RUNNING) -> dict[str, Any]:
    """Indexed Job: completion index = trainer id; success = all indexes done."""
    worker = job.spec.worker
    template = pods.pod_template(job.name, job.spec, topology, naming.ROLE_WORKER, worker,
                                 server_port=None, restart_policy="Never")
    metadata = _metadata(job, owner, naming.worker(job.name), naming.ROLE_WORKER)
    ignored_exits = [roles.PSERVER_UNREACHABLE_EXIT, roles.RESIZE_HOLD_EXIT]
    if topology.collective:
        # Pod i is <job>-worker-i behind the headless Service of that name: its ring endpoint.
        template["spec"]["subdomain"] = naming.worker(job.name)
        # A survivor of a lost peer is not at fault: the trainer that died is counted.
        ignored_exits.append(roles.PEER_LOST_EXIT)
    if worker.max_replicas:
        # Its pod template does not depend on replicas: a resize patches completions and
        # parallelism in place (psjob_operator.apply, docs/user/operator.md "Elasticity").
        metadata["annotations"] = {naming.ANNOTATION_ELASTIC: "true"}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": metadata,
            "spec": {
                "completionMode": "Indexed",
                "completions": worker.replicas,
                "parallelism": worker.replicas,
                "backoffLimit": job.spec.run_policy.backoff_limit,
                "suspend": activity.workers_suspended,
                # Evictions and preemptions are not the trainer's fault: they do
                # not count against backoffLimit (the pod is simply recreated).
                "podFailurePolicy": {"rules": [
                    {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget",
                                                               "status": "True"}]},
                    # A trainer whose pservers stayed unreachable (restarting) is not at fault,
                    # nor trainer 0 holding at its checkpoint for a pserver resize.
                    # (onPodConditions: the OpenAPI schema requires the key; empty is
                    # what the API server expects next to onExitCodes.)
                    {"action": "Ignore", "onPodConditions": [], "onExitCodes": {
                        "containerName": naming.CONTAINER, "operator": "In",
                        "values": ignored_exits}},
                ]},
                "template": template,
            }}
