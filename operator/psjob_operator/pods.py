"""Pod templates of the three roles: entrypoint, environment, volumes, security.

Pure functions of the parsed spec and the job topology. The environment comes
from `psjob.foundation.roles.role_environment` — the same function the local launcher
calls — with two Kubernetes-specific sources added: the pod IP (downward API)
and, for trainers, the Indexed Job completion index as the trainer id.

Security defaults (Kubernetes' restricted Pod Security Standard): non-root user, read-only root filesystem (with
an emptyDir /tmp for scratch and caches), no privilege escalation, all
capabilities dropped, RuntimeDefault seccomp, no service-account token (the
pods never call the Kubernetes API), no service-link environment variables.
"""
from __future__ import annotations

import os
from typing import Any

from psjob.foundation import roles
from psjob.foundation.jobspec import Device, JobSpec, Mode, RoleSpec
from psjob_operator import naming, templates

# Loading a large checkpoint can take minutes: liveness only starts after the
# startup probe passed, so give the pserver up to 10 minutes to come up.
STARTUP_PERIOD_SECONDS = 10
STARTUP_FAILURE_THRESHOLD = 60
SERVER_TERMINATION_GRACE_SECONDS = 60  # time to flush a checkpoint on SIGTERM
GPU_RESOURCE = "nvidia.com/gpu"
TMP_DIR = "/tmp"
# spec.tls: the Secret's files, read by psjob.cluster.rpc.tls from the PSJOB_TLS_* variables.
TLS_DIR = "/var/run/psjob/tls"
TLS_CERT_KEY, TLS_KEY_KEY, TLS_CA_KEY = "tls.crt", "tls.key", "ca.crt"

SUBCOMMANDS = {naming.ROLE_PSERVER: "pserver", naming.ROLE_WORKER: "worker",
               naming.ROLE_HETER: "heter-worker"}
ROLE_NAMES = {naming.ROLE_PSERVER: roles.PSERVER, naming.ROLE_WORKER: roles.TRAINER,
              naming.ROLE_HETER: roles.HETER_TRAINER}


ROLE_FIELDS = {naming.ROLE_PSERVER: "spec.pserver", naming.ROLE_WORKER: "spec.worker",
               naming.ROLE_HETER: "spec.heterWorker"}


def role_image(spec: JobSpec, role_spec: RoleSpec) -> str:
    """spec.<role>.image, else spec.image (e.g. CPU pservers beside CUDA trainers)."""
    return role_spec.image or spec.image


def container_command(spec: JobSpec, role: str, role_spec: RoleSpec) -> tuple[list[str], list[str]]:
    """(command, args): the role's override, else the job's, else `psjob <role>`; under
    `psjob as-paddle --` with spec.asPaddle (`import paddle` gives psjob: psjob.launcher.aspaddle)."""
    command = list(role_spec.command or spec.command or ("psjob", SUBCOMMANDS[role]))
    args = list(role_spec.args or spec.args)
    if spec.as_paddle:
        command = [*roles.AS_PADDLE_COMMAND, *command]
    return command, args


def environment(topology: roles.JobTopology, role: str, role_spec: RoleSpec) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = []
    for name, value in roles.role_environment(topology, ROLE_NAMES[role], None).items():
        if role == naming.ROLE_WORKER and name == "PSJOB_TRAINER_ID":
            # The Indexed Job gives each pod a stable completion index: it is the
            # trainer id, known before the process starts (no rendezvous needed).
            for id_name in ("PADDLE_TRAINER_ID", "PSJOB_TRAINER_ID"):
                env.append({"name": id_name, "valueFrom": {"fieldRef": {
                    "fieldPath": f"metadata.annotations['{naming.ANNOTATION_COMPLETION_INDEX}']"}}})
            if topology.collective:
                # Its own ring endpoint, Paddle's PADDLE_CURRENT_ENDPOINT: pod i's DNS name
                # (Kubernetes expands $(PADDLE_TRAINER_ID), set just above).
                service = roles.trainer_service(topology.job_name)
                port = roles.split_endpoint(topology.trainer_endpoints[0])[1]
                env.append({"name": "PADDLE_CURRENT_ENDPOINT", "value": (
                    f"{service}-$(PADDLE_TRAINER_ID).{service}.{topology.namespace}.svc:{port}")})
            continue
        env.append({"name": name, "value": value})
    env.append({"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})
    env.append({"name": "PSJOB_TOPOLOGY_FILE",
                "value": f"{naming.CONFIG_DIR}/{naming.TOPOLOGY_KEY}"})
    # Math-library threads are sized after the pod template is merged (its resources
    # count): templates.size_math_threads.
    user_names = {var.name for var in role_spec.env}
    if "HOME" not in user_names:
        env.append({"name": "HOME", "value": TMP_DIR})  # the root filesystem is read-only
    for var in role_spec.env:
        item: dict[str, Any] = {"name": var.name}
        if var.value_from is not None:
            item["valueFrom"] = dict(var.value_from)
        else:
            item["value"] = var.value or ""
        env.append(item)
    return env


def serves_rpc(role: str, spec: JobSpec | None = None) -> bool:
    """Pservers and heter workers serve RPCs (they need the certificate and its key);
    trainers are only clients (they need the CA, never the private key) — except in a
    collective job, where every trainer accepts its ring neighbour's connection."""
    if spec is not None and spec.mode is Mode.COLLECTIVE and role == naming.ROLE_WORKER:
        return True
    return role in (naming.ROLE_PSERVER, naming.ROLE_HETER)


def tls_files(role: str, spec: JobSpec | None = None) -> list[str]:
    """The keys of the spec.tls Secret mounted into this role's pods."""
    return [TLS_CERT_KEY, TLS_KEY_KEY, TLS_CA_KEY] if serves_rpc(role, spec) else [TLS_CA_KEY]


def tls_environment(spec: JobSpec, role: str) -> list[dict[str, Any]]:
    """PSJOB_TLS_* for spec.tls (psjob.cluster.rpc.tls reads them); empty without spec.tls."""
    if spec.tls is None:
        return []
    env = []
    if serves_rpc(role, spec):
        env += [{"name": "PSJOB_TLS_CERT_FILE", "value": f"{TLS_DIR}/{TLS_CERT_KEY}"},
                {"name": "PSJOB_TLS_KEY_FILE", "value": f"{TLS_DIR}/{TLS_KEY_KEY}"}]
    env.append({"name": "PSJOB_TLS_CA_FILE", "value": f"{TLS_DIR}/{TLS_CA_KEY}"})
    if spec.tls.server_name:
        env.append({"name": "PSJOB_TLS_SERVER_NAME", "value": spec.tls.server_name})
    return env


def _before_users(env: list[dict[str, Any]], more: list[dict[str, Any]],
                  role_spec: RoleSpec) -> list[dict[str, Any]]:
    # psjob's variables first, the user's `env` last (as environment() orders them).
    cut = len(env) - len(role_spec.env)
    return env[:cut] + more + env[cut:]


def _bind_all(spec: JobSpec, role_spec: RoleSpec, server_port: int | None) -> list[dict]:
    """PSJOB_BIND_ALL=1 for the servers of a custom command (spec.command): a user's Fleet
    or transpiler script serves through psjob's pserver, which then binds 0.0.0.0:<port>
    instead of its DNS name's address (psjob's own `psjob pserver` decides this itself,
    from the pod's hostname)."""
    custom = bool(role_spec.command or spec.command)
    if server_port is None or not custom or any(v.name == "PSJOB_BIND_ALL" for v in role_spec.env):
        return []
    return [{"name": "PSJOB_BIND_ALL", "value": "1"}]


def resources(role_spec: RoleSpec) -> dict[str, Any]:
    limits = dict(role_spec.resources.limits)
    if role_spec.device is Device.GPU and GPU_RESOURCE not in limits:
        limits[GPU_RESOURCE] = "1"
    out: dict[str, Any] = {}
    if role_spec.resources.requests:
        out["requests"] = dict(role_spec.resources.requests)
    if limits:
        out["limits"] = limits
    return out


def _server_probe(port: int, period: int, failures: int, tls: bool) -> dict[str, Any]:
    # The kubelet's gRPC probe speaks plaintext only (it has no TLS option), so with
    # spec.tls the probe is a TCP connect to the same port: the pserver binds it only
    # once it has restored its checkpoint and serves.
    check: dict[str, Any] = {"tcpSocket": {"port": port}} if tls else {"grpc": {"port": port}}
    return {**check, "periodSeconds": period, "failureThreshold": failures, "timeoutSeconds": 5}


def container(spec: JobSpec, topology: roles.JobTopology, role: str, role_spec: RoleSpec,
              server_port: int | None) -> dict[str, Any]:
    command, args = container_command(spec, role, role_spec)
    ports = [{"name": naming.PORT_METRICS, "containerPort": spec.metrics_port, "protocol": "TCP"}]
    c: dict[str, Any] = {
        "name": naming.CONTAINER,
        "image": role_image(spec, role_spec),
        "command": command,
        "env": _before_users(environment(topology, role, role_spec),
                             tls_environment(spec, role) + _bind_all(spec, role_spec, server_port),
                             role_spec),
        "ports": ports,
        "volumeMounts": volume_mounts(spec, role_spec),
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "privileged": False,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    if args:
        c["args"] = args
    if topology.collective and role == naming.ROLE_WORKER:  # the trainer's ring
        ring_port = roles.split_endpoint(topology.trainer_endpoints[0])[1]
        ports.insert(0, {"name": naming.PORT_RING, "containerPort": ring_port, "protocol": "TCP"})
    if spec.checkpoint.enabled and spec.checkpoint.credentials_secret:
        # The object store's AWS_* settings, every key of the Secret (docs/user/operator.md).
        c["envFrom"] = [{"secretRef": {"name": spec.checkpoint.credentials_secret}}]
    if spec.image_pull_policy is not None:
        c["imagePullPolicy"] = spec.image_pull_policy.value
    res = resources(role_spec)
    if res:
        c["resources"] = res
    if server_port is not None:
        name = naming.PORT_PSERVER if role == naming.ROLE_PSERVER else naming.PORT_HETER
        ports.insert(0, {"name": name, "containerPort": server_port, "protocol": "TCP"})
        # Kubernetes' native gRPC probe calls grpc.health.v1.Health/Check on the port.
        tls = spec.tls is not None
        c["startupProbe"] = _server_probe(server_port, STARTUP_PERIOD_SECONDS,
                                          STARTUP_FAILURE_THRESHOLD, tls)
        c["readinessProbe"] = _server_probe(server_port, 5, 3, tls)
        c["livenessProbe"] = _server_probe(server_port, 10, 6, tls)
    return c


def volume_mounts(spec: JobSpec, role_spec: RoleSpec) -> list[dict[str, Any]]:
    mounts: list[dict[str, Any]] = [
        {"name": "tmp", "mountPath": TMP_DIR},
        {"name": "auth", "mountPath": os.path.dirname(roles.KUBERNETES_AUTH_TOKEN_FILE),
         "readOnly": True},
        {"name": "config", "mountPath": naming.CONFIG_DIR, "readOnly": True},
    ]
    if spec.checkpoint.uses_claim:
        mounts.append({"name": "checkpoints", "mountPath": roles.KUBERNETES_CHECKPOINT_DIR})
    if spec.tls is not None:
        mounts.append({"name": "tls", "mountPath": TLS_DIR, "readOnly": True})
    if role_spec.device is Device.GPU:
        mounts.append({"name": "dshm", "mountPath": "/dev/shm"})
    return mounts


def volumes(job_name: str, spec: JobSpec, role_spec: RoleSpec,
            role: str = naming.ROLE_WORKER) -> list[dict[str, Any]]:
    vols: list[dict[str, Any]] = [
        {"name": "tmp", "emptyDir": {}},
        {"name": "auth", "secret": {
            "secretName": naming.auth_secret(job_name),
            "items": [{"key": naming.AUTH_TOKEN_KEY,
                       "path": os.path.basename(roles.KUBERNETES_AUTH_TOKEN_FILE)}],
            "defaultMode": 0o440}},  # owner root, group fsGroup: readable by the pod's group only
        {"name": "config", "configMap": {"name": naming.config_map(job_name)}},
    ]
    if spec.checkpoint.uses_claim:
        claim = spec.checkpoint.existing_claim or naming.checkpoint_claim(job_name)
        vols.append({"name": "checkpoints", "persistentVolumeClaim": {"claimName": claim}})
    if spec.tls is not None:
        vols.append({"name": "tls", "secret": {
            "secretName": spec.tls.secret_name,
            "items": [{"key": k, "path": k} for k in tls_files(role, spec)],
            "defaultMode": 0o440}})  # like the token: readable by the pod's group only
    if role_spec.device is Device.GPU:
        vols.append({"name": "dshm", "emptyDir": {"medium": "Memory"}})
    return vols


def pod_template(job_name: str, spec: JobSpec, topology: roles.JobTopology, role: str,
                 role_spec: RoleSpec, server_port: int | None,
                 restart_policy: str) -> dict[str, Any]:
    sec = spec.security_context
    pod_spec: dict[str, Any] = {
        "restartPolicy": restart_policy,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": sec.run_as_user,
            "runAsGroup": sec.run_as_group,
            "fsGroup": sec.fs_group,
            "fsGroupChangePolicy": "OnRootMismatch",
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [container(spec, topology, role, role_spec, server_port)],
        "volumes": volumes(job_name, spec, role_spec, role),
    }
    if server_port is not None:
        pod_spec["terminationGracePeriodSeconds"] = SERVER_TERMINATION_GRACE_SECONDS
    if role_spec.node_selector:
        pod_spec["nodeSelector"] = dict(role_spec.node_selector)
    if role_spec.tolerations:
        pod_spec["tolerations"] = [_toleration(t) for t in role_spec.tolerations]
    if role_spec.priority_class_name:
        pod_spec["priorityClassName"] = role_spec.priority_class_name
    if spec.image_pull_secrets:
        pod_spec["imagePullSecrets"] = [{"name": n} for n in spec.image_pull_secrets]
    labels = {**naming.job_labels(job_name), **naming.role_labels(job_name, role)}
    merged = templates.merge_pod_template({"metadata": {"labels": labels}, "spec": pod_spec},
                                          role_spec.template, f"{ROLE_FIELDS[role]}.template")
    templates.size_math_threads(merged)
    return merged


def _toleration(t: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"operator": t.operator.value}
    if t.key:
        out["key"] = t.key
    if t.value:
        out["value"] = t.value
    if t.effect is not None:
        out["effect"] = t.effect.value
    if t.toleration_seconds is not None:
        out["tolerationSeconds"] = t.toleration_seconds
    return out
