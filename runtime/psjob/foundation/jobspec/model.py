"""The ParameterServerJob model: frozen dataclasses whose fields carry their Schema,
and the cross-field rules: each a CEL expression, a Python predicate and one message."""
from __future__ import annotations

import enum
import re
import time
from dataclasses import dataclass
from typing import Any, ClassVar

from psjob.foundation import roles
from psjob.foundation.jobspec.schema import (
    DEFAULT_GEO_K_STEPS,
    DNS_1035,
    DNS_1123_SUBDOMAIN,
    ENV_NAME,
    MAX_JOB_NAME_LENGTH,
    S3_URI,
    PodTemplate,
    RawObject,
    Rule,
    spec_field,
)
from psjob.foundation.roles.names import Mode  # noqa: F401  (the job spec's spec.mode)


class Device(str, enum.Enum):
    CPU = "cpu"
    GPU = "gpu"


class CleanPodPolicy(str, enum.Enum):
    ALL = "All"
    RUNNING = "Running"
    NONE = "None"


class ImagePullPolicy(str, enum.Enum):
    ALWAYS = "Always"
    IF_NOT_PRESENT = "IfNotPresent"
    NEVER = "Never"


class AccessMode(str, enum.Enum):
    READ_WRITE_MANY = "ReadWriteMany"
    READ_WRITE_ONCE = "ReadWriteOnce"


class TolerationOperator(str, enum.Enum):
    EXISTS = "Exists"
    EQUAL = "Equal"


class TaintEffect(str, enum.Enum):
    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"


def _no_reserved_env(env: tuple[EnvVar, ...]) -> str | None:
    for var in env:
        if var.name in roles.RESERVED_ENV:
            return (f"{var.name} is set by psjob from the job topology: remove it "
                    f"(set replicas, mode, ports or checkpoint fields instead)")
    return None


_RESERVED_CEL = "[" + ", ".join(f"'{n}'" for n in roles.RESERVED_ENV) + "]"


@dataclass(frozen=True)
class EnvVar:
    RULES: ClassVar = (Rule("!(has(self.value) && has(self.valueFrom))",
                            "set either value or valueFrom, not both",
                            lambda v: v.value is not None and v.value_from is not None),)
    name: str = spec_field("name", "Variable name.", pattern=ENV_NAME, max_length=253)
    value: str | None = spec_field("value", "Literal value.", None)
    value_from: RawObject | None = spec_field(
        "valueFrom", "A Kubernetes EnvVarSource (secretKeyRef, configMapKeyRef, fieldRef, "
        "resourceFieldRef); the operator passes it through; `psjob run` cannot resolve it.", None)


@dataclass(frozen=True)
class Toleration:
    RULES: ClassVar = (
        Rule("self.operator != 'Exists' || !has(self.value) || self.value == ''",
             "operator Exists must not set value: remove value or use operator Equal",
             lambda t: t.operator is TolerationOperator.EXISTS and bool(t.value), ".value"),
        Rule("(has(self.key) && self.key != '') || self.operator == 'Exists'",
             "a toleration without key must use operator Exists",
             lambda t: not t.key and t.operator is not TolerationOperator.EXISTS, ".operator"),
        Rule("!has(self.tolerationSeconds) || (has(self.effect) && self.effect == 'NoExecute')",
             "tolerationSeconds only applies to effect NoExecute",
             lambda t: t.toleration_seconds is not None and t.effect is not TaintEffect.NO_EXECUTE,
             ".tolerationSeconds"),
    )
    key: str | None = spec_field("key", "Taint key; empty with operator Exists matches all.", None)
    operator: TolerationOperator = spec_field("operator", "Exists or Equal.",
                                              TolerationOperator.EQUAL)
    value: str | None = spec_field("value", "Taint value (operator Equal).", None)
    effect: TaintEffect | None = spec_field("effect", "Taint effect; empty matches all.", None)
    toleration_seconds: int | None = spec_field(
        "tolerationSeconds", "How long a NoExecute taint is tolerated.", None, minimum=0)


@dataclass(frozen=True)
class Resources:
    requests: dict[str, str] = spec_field(
        "requests", "Minimum resources, e.g. cpu: 2, memory: 8Gi.", factory=dict, quantity=True,
        fix="use a Kubernetes quantity such as 500m, 2, 8Gi")
    limits: dict[str, str] = spec_field(
        "limits", "Maximum resources, e.g. memory: 16Gi, nvidia.com/gpu: 1.", factory=dict,
        quantity=True, fix="use a Kubernetes quantity such as 500m, 2, 8Gi")


def _env_field() -> Any:
    return spec_field("env", "Extra environment variables of this role's processes.",
                      factory=tuple, max_items=128, list_map_key="name",
                      rules=(Rule(f"self.all(e, !(e.name in {_RESERVED_CEL}))",
                                  "sets a variable psjob derives from the job topology; remove it",
                                  problem=_no_reserved_env),))


@dataclass(frozen=True)
class RoleSpec:
    """Fields every role (pserver, worker, heterWorker) has."""
    replicas: int = spec_field("replicas", "Number of processes of this role.", 1, minimum=1)
    device: Device = spec_field("device", "cpu, or gpu for the CUDA path (adds an "
                                "nvidia.com/gpu: 1 limit unless resources set one).", Device.CPU)
    resources: Resources = spec_field("resources", "Compute resources of each pod.",
                                      factory=Resources)
    env: tuple[EnvVar, ...] = _env_field()
    node_selector: dict[str, str] = spec_field("nodeSelector", "Node labels pods must match.",
                                               factory=dict)
    tolerations: tuple[Toleration, ...] = spec_field("tolerations", "Taints pods tolerate.",
                                                     factory=tuple, max_items=64)
    priority_class_name: str | None = spec_field("priorityClassName",
                                                 "PriorityClass of the pods.", None)
    command: tuple[str, ...] = spec_field("command", "Overrides spec.command for this role.",
                                          factory=tuple)
    args: tuple[str, ...] = spec_field("args", "Overrides spec.args for this role.",
                                       factory=tuple)
    image: str | None = spec_field(
        "image", "Overrides spec.image for this role (e.g. the CPU image for the pservers of a "
        "job whose trainers use the CUDA image).", None, min_length=1)
    template: PodTemplate | None = spec_field(
        "template", "A Kubernetes PodTemplateSpec (metadata.labels/annotations and any pod "
        "spec field: volumes, serviceAccountName, affinity, initContainers, ...). psjob merges "
        "its container named `psjob` into it; env, envFrom, volumeMounts and resources the "
        "template gives that container are merged, other psjob-managed fields are rejected "
        "naming the field. `psjob run` ignores it.", None)


@dataclass(frozen=True)
class PserverSpec(RoleSpec):
    replicas: int = spec_field("replicas", "Number of pservers; sparse tables and dense blocks "
                               "are sharded across them.", 1, minimum=1, maximum=256)
    port: int = spec_field("port", "Port the pserver's gRPC service listens on.",
                           roles.DEFAULT_PSERVER_PORT, minimum=1024, maximum=65535,
                           fix="pods run as non-root: pick a port from 1024 to 65535")


@dataclass(frozen=True)
class WorkerSpec(RoleSpec):
    RULES: ClassVar = (
        Rule("!has(self.maxReplicas) || self.maxReplicas >= self.replicas",
             "maxReplicas must be at least replicas: raise maxReplicas or lower replicas",
             lambda w: w.max_replicas is not None and w.max_replicas < w.replicas, ".maxReplicas"),
    )
    replicas: int = spec_field("replicas", "Number of trainers; the job succeeds when all of "
                               "them complete. With maxReplicas set it may change while the "
                               "job runs (docs/user/operator.md, Elasticity).", 1, minimum=1, maximum=4096)
    max_replicas: int | None = spec_field(
        "maxReplicas", "Makes the trainers elastic: the most trainers the job may scale to. "
        "The pservers keep a gradient slot per possible trainer and learn the running ones at "
        "run time, so changing replicas restarts no pod.", None, minimum=1, maximum=4096)
    port: int | None = spec_field(
        "port", f"mode collective: the port of each trainer's all-reduce ring (default "
        f"{roles.DEFAULT_TRAINER_PORT}).", None, minimum=1024, maximum=65535,
        fix="pods run as non-root: pick a port from 1024 to 65535")


@dataclass(frozen=True)
class HeterWorkerSpec(RoleSpec):
    replicas: int = spec_field("replicas", "Number of heterogeneous trainers (they run the "
                               "compute-heavy part of the network).", 1, minimum=1, maximum=256)
    device: Device = spec_field("device", "Device of the heterogeneous trainers.", Device.GPU)
    port: int = spec_field("port", "Port the heterogeneous trainer listens on.",
                           roles.DEFAULT_HETER_PORT, minimum=1024, maximum=65535,
                           fix="pods run as non-root: pick a port from 1024 to 65535")


@dataclass(frozen=True)
class IncrementalCheckpoints:
    enabled: bool = spec_field(
        "enabled", "Write delta checkpoints between bases: only the sparse table rows changed since "
        "the previous checkpoint, tombstones for rows evicted since, and the dense parameters "
        "(docs/user/checkpoints.md, Incremental checkpoints).", False)
    base_every: int = spec_field(
        "baseEvery", "Every N-th checkpoint is a base (whole); the N-1 in between are deltas, so a "
        "restore reads at most one base and N-1 deltas. 1 writes every checkpoint whole.", 10,
        minimum=1, maximum=10000, fix="use a whole number from 1 to 10000")


@dataclass(frozen=True)
class CheckpointSpec:
    RULES: ClassVar = (
        Rule("!has(self.existingClaim) || !has(self.storageClassName)",
             "existingClaim and storageClassName exclude each other: keep one",
             lambda c: bool(c.existing_claim and c.storage_class_name), ".existingClaim"),
        Rule("!self.enabled || self.intervalSteps > 0 || self.intervalSeconds > 0",
             "checkpoints are enabled but intervalSteps and intervalSeconds are both 0: set one, "
             "or set enabled: false",
             lambda c: c.enabled and not c.interval_steps and not c.interval_seconds, ".intervalSeconds"),
        Rule("!has(self.uri) || (!has(self.existingClaim) && !has(self.storageClassName))",
             "uri stores checkpoints in object storage, without a claim: drop existingClaim and "
             "storageClassName, or drop uri",
             lambda c: bool(c.uri and (c.existing_claim or c.storage_class_name)), ".uri"),
        Rule("!self.incremental.enabled || self.enabled",
             "incremental.enabled needs checkpoints: set enabled: true, or incremental.enabled: false",
             lambda c: c.incremental.enabled and not c.enabled, ".incremental.enabled"),
        Rule("!has(self.credentialsSecret) || has(self.uri)",
             "credentialsSecret is for an object store: set uri (s3://BUCKET/PREFIX) too",
             lambda c: bool(c.credentials_secret and not c.uri), ".credentialsSecret"),
    )
    enabled: bool = spec_field("enabled", "Write checkpoints (pserver restarts and suspend/"
                               "resume recover from the newest one).", True)
    storage_class_name: str | None = spec_field(
        "storageClassName", "StorageClass of the job's shared claim; empty uses the cluster "
        "default.", None)
    size: str = spec_field("size", "Size of the checkpoint claim.", "10Gi", quantity=True,
                           fix="use a Kubernetes quantity such as 50Gi")
    access_mode: AccessMode = spec_field(
        "accessMode", "Access mode of the claim psjob creates: ReadWriteMany (pods on any "
        "node; needs a storage class that provides it, e.g. NFS, EFS, Filestore, Azure Files) "
        "or ReadWriteOnce (every default storage class; all of the job's pods must then run "
        "on one node, e.g. kind, or pinned with a template's affinity).",
        AccessMode.READ_WRITE_MANY)
    existing_claim: str | None = spec_field(
        "existingClaim", "Use this PersistentVolumeClaim instead of creating one "
        "(it survives deleting the job).", None, pattern=DNS_1123_SUBDOMAIN, max_length=253)
    interval_steps: int = spec_field("intervalSteps", "Checkpoint every N steps (0: off).",
                                     0, minimum=0)
    interval_seconds: int = spec_field("intervalSeconds", "Checkpoint every N seconds (0: off).",
                                       600, minimum=0)
    keep: int = spec_field("keep", "How many newest checkpoints to keep.", 3,
                           minimum=1, maximum=1000)
    uri: str | None = spec_field(
        "uri", "Keep checkpoints in object storage instead of a claim: s3://BUCKET/PREFIX on any "
        "S3-compatible store (endpoint, region and keys from the standard AWS_* variables, e.g. "
        "from credentialsSecret). No claim is created or mounted. Use one prefix per job.", None,
        pattern=S3_URI, max_length=1024, fix="use s3://BUCKET/PREFIX with a valid bucket name")
    credentials_secret: str | None = spec_field(
        "credentialsSecret", "A Secret in the job's namespace whose keys become environment "
        "variables of every pod (envFrom): AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, and "
        "optionally AWS_ENDPOINT_URL, AWS_REGION, AWS_SESSION_TOKEN.", None,
        pattern=DNS_1123_SUBDOMAIN, max_length=253)
    incremental: IncrementalCheckpoints = spec_field(
        "incremental", "Incremental (delta) checkpoints between whole ones.", factory=IncrementalCheckpoints)

    @property
    def uses_claim(self) -> bool:
        """Checkpoints on the job's (or an existing) PersistentVolumeClaim, not object storage."""
        return self.enabled and not self.uri


def _layout_problem(layout: str) -> str | None:
    if not all(f in layout for f in ("%Y", "%m", "%d")):
        return "layout must contain %Y, %m and %d (e.g. %Y%m%d/%H%M, PaddleRec's day/HHMM folders)"
    return None


def _start_problem(s: StreamSpec) -> str | None:
    if s.start is None or _layout_problem(s.layout):
        return None
    try:
        time.strptime(s.start, s.layout)
    except ValueError:
        return (f"start {s.start!r} is no folder of the layout {s.layout!r}: name a folder, e.g. "
                f"{time.strftime(s.layout, time.gmtime(0))}")
    return None


_LAYOUT_LENGTH = ("self.layout.replace('%Y', 'YYYY').replace('%m', 'mm').replace('%d', 'dd')"
                  ".replace('%H', 'HH').replace('%M', 'MM').size()")


@dataclass(frozen=True)
class StreamSpec:
    """A stream of time-partitioned folders (docs/user/online-learning.md)."""
    RULES: ClassVar = (
        Rule("self.layout.contains('%Y') && self.layout.contains('%m') && self.layout.contains('%d')",
             "layout must contain %Y, %m and %d (e.g. %Y%m%d/%H%M, PaddleRec's day/HHMM folders)",
             problem=lambda s: _layout_problem(s.layout), field=".layout"),
        Rule(f"!has(self.start) || self.start.size() == {_LAYOUT_LENGTH}",
             "start must name a folder of the layout, e.g. 20261128/2300 for %Y%m%d/%H%M",
             problem=_start_problem, field=".start"),
    )
    root: str = spec_field(
        "root", "Directory the folders appear in: a path every trainer sees (a volume) or "
        "s3://BUCKET/PREFIX (AWS_* variables, e.g. from checkpoint.credentialsSecret).",
        min_length=1, max_length=1024, fix="set root to a directory or s3://BUCKET/PREFIX")
    layout: str = spec_field(
        "layout", "Folder names below root as time fields %Y %m %d %H %M, '/' between levels: "
        "%Y%m%d/%H%M (PaddleRec's day/HHMM, the default), %Y%m%d/%H, %Y%m%d%H, ...",
        "%Y%m%d/%H%M", pattern=r"^(%[YmdHM]|[A-Za-z0-9_.=-])+(/(%[YmdHM]|[A-Za-z0-9_.=-])+)*$",
        max_length=64, fix="use the fields %Y %m %d %H %M and '/' between folder levels, e.g. %Y%m%d/%H%M")
    done_file: str = spec_field(
        "doneFile", "File whose presence marks a folder complete (PaddleRec's runner.data_donefile).",
        "_SUCCESS", pattern=r"^[A-Za-z0-9_.-]+$", max_length=255, fix="use a plain file name such as _SUCCESS")
    poll_seconds: int = spec_field(
        "pollSeconds", "Seconds between looks for the next folder while the stream is idle "
        "(PaddleRec's runner.data_sleep_second).", 10, minimum=1, maximum=3600)
    start: str | None = spec_field(
        "start", "First folder to train (e.g. 20261128/2300); default the oldest present. A job "
        "resumed from a checkpoint continues where the checkpoint says instead.", None,
        max_length=64)


@dataclass(frozen=True)
class DataSpec:
    stream: StreamSpec | None = spec_field(
        "stream", "Train on a stream of time-partitioned folders that the job follows as they "
        "appear, until suspended or deleted (psjob's built-in job; docs/user/online-learning.md).", None)


@dataclass(frozen=True)
class SchedulingPolicy:
    """Kubeflow's `runPolicy.schedulingPolicy`, read when the operator runs with a gang
    scheduler (--gang-scheduler) or a queue system (--queue-system)."""
    min_available: int | None = spec_field(
        "minAvailable", "Pods that must be schedulable together before any of them starts (the "
        "gang); default: every pserver, heter worker and trainer.", None, minimum=1)
    queue: str | None = spec_field(
        "queue", "Queue the job waits in: a Volcano Queue, or a Kueue LocalQueue with "
        "--queue-system kueue.", None, min_length=1, max_length=253, pattern=DNS_1123_SUBDOMAIN)
    priority_class: str | None = spec_field(
        "priorityClass", "PriorityClass of the gang (the PodGroup's priorityClassName).", None,
        min_length=1, max_length=253, pattern=DNS_1123_SUBDOMAIN)
    schedule_timeout_seconds: int | None = spec_field(
        "scheduleTimeoutSeconds", "How long the gang may wait to be scheduled before the "
        "scheduler gives its place up (scheduler-plugins' PodGroup).", None, minimum=1)


@dataclass(frozen=True)
class RunPolicy:
    backoff_limit: int = spec_field("backoffLimit", "Worker failures tolerated before the job "
                                    "fails (pserver restarts do not count).", 3,
                                    minimum=0, maximum=1000)
    active_deadline_seconds: int | None = spec_field(
        "activeDeadlineSeconds", "Fail the job when it has run this long.", None, minimum=1)
    ttl_seconds_after_finished: int | None = spec_field(
        "ttlSecondsAfterFinished", "Delete the finished job (and its children) after this "
        "many seconds.", None, minimum=0)
    clean_pod_policy: CleanPodPolicy = spec_field(
        "cleanPodPolicy", "Pods to stop when the job finishes: Running (default: pservers and "
        "unfinished workers), All (also completed workers), None.", CleanPodPolicy.RUNNING)
    suspend: bool = spec_field("suspend", "Stop all pods, keep the checkpoint volume; setting "
                               "it back to false resumes from the newest checkpoint.", False)
    scheduling_policy: SchedulingPolicy = spec_field(
        "schedulingPolicy", "Gang scheduling and queueing (Kubeflow's shape).",
        factory=SchedulingPolicy)


@dataclass(frozen=True)
class NetworkPolicySpec:
    enabled: bool = spec_field("enabled", "Create a NetworkPolicy so that only this job's pods "
                               "reach its pserver and heter-trainer ports.", True)
    allow_from: tuple[RawObject, ...] = spec_field(
        "allowFrom", "Extra NetworkPolicyPeers allowed to reach the pserver ports.",
        factory=tuple, max_items=32)
    metrics_from: tuple[RawObject, ...] = spec_field(
        "metricsFrom", "NetworkPolicyPeers allowed to scrape the metrics port; empty allows "
        "every source (Prometheus, the operator).", factory=tuple, max_items=32)


@dataclass(frozen=True)
class SecuritySpec:
    run_as_user: int = spec_field("runAsUser", "Non-root user id of every container.", 10001,
                                  minimum=1, fix="pods run as non-root: use a uid >= 1")
    run_as_group: int = spec_field("runAsGroup", "Group id of every container.", 10001, minimum=0)
    fs_group: int = spec_field("fsGroup", "Group that owns the mounted volumes.", 10001, minimum=0)


@dataclass(frozen=True)
class TlsSpec:
    secret_name: str = spec_field(
        "secretName", "A Secret in the job's namespace with tls.crt, tls.key and ca.crt (a "
        "kubernetes.io/tls Secret, e.g. from cert-manager). It is mounted read-only into every "
        "pod: pservers and heter workers serve TLS with tls.crt and tls.key, every process "
        "trusts ca.crt (PSJOB_TLS_* files). tls.crt must name the pservers' DNS names, e.g. "
        "*.<job>-pserver.<namespace>.svc.", min_length=1, max_length=253,
        pattern=DNS_1123_SUBDOMAIN, fix="name a Secret holding tls.crt, tls.key and ca.crt")
    server_name: str | None = spec_field(
        "serverName", "Name the clients check the pserver certificate against instead of "
        "each pserver's DNS name (PSJOB_TLS_SERVER_NAME): for a certificate with one name.",
        None, max_length=253, pattern=DNS_1123_SUBDOMAIN)


_AS_PADDLE_NEEDS_COMMAND = ("asPaddle runs the job's own Paddle script: set spec.command (or a role's "
                            "command), or remove asPaddle")


_COLLECTIVE_NO_PSERVER = ("a collective job has no pservers (its trainers all-reduce among themselves): "
                          "remove spec.pserver, or use a parameter-server mode")
_COLLECTIVE_GANG = ("a collective job's gang is every trainer (a partial ring never takes a step): "
                    "remove minAvailable or set it to worker.replicas")
_COLLECTIVE_NEEDS_COMMAND = ("a collective job runs the job's own training script (Paddle's NCCL2/collective "
                             "form): set spec.command or spec.worker.command")


@dataclass(frozen=True)
class JobSpec:
    RULES: ClassVar = (
        Rule("!has(self.kSteps) || self.mode == 'geo'",
             "kSteps only applies to mode geo: remove kSteps or set mode: geo",
             lambda s: s.k_steps is not None and s.mode is not Mode.GEO, ".kSteps"),
        Rule("self.mode == 'collective' || self.pserver.port != self.metricsPort",
             "metricsPort and pserver.port must differ: change one of them",
             lambda s: s.mode is not Mode.COLLECTIVE and s.pserver.port == s.metrics_port, ".metricsPort"),
        Rule("self.mode != 'collective' || !has(self.pserver)",
             _COLLECTIVE_NO_PSERVER,
             lambda s: s.mode is Mode.COLLECTIVE and s.pserver != PserverSpec(), ".pserver"),
        Rule("self.mode != 'collective' || !has(self.heterWorker)",
             "a collective job has no heterogeneous trainers: remove heterWorker or use a "
             "parameter-server mode",
             lambda s: s.mode is Mode.COLLECTIVE and s.heter_worker is not None, ".heterWorker"),
        Rule("self.mode != 'collective' || !has(self.worker.maxReplicas)",
             "a collective job's trainer set is fixed (every step all-reduces among all of them): "
             "remove worker.maxReplicas",
             lambda s: s.mode is Mode.COLLECTIVE and s.worker.max_replicas is not None, ".worker.maxReplicas"),
        Rule("self.mode != 'collective' || (has(self.command) && size(self.command) > 0) || "
             "(has(self.worker.command) && size(self.worker.command) > 0)",
             _COLLECTIVE_NEEDS_COMMAND,
             lambda s: s.mode is Mode.COLLECTIVE and not (s.command or s.worker.command), ".command"),
        Rule("self.mode != 'collective' || !has(self.runPolicy.schedulingPolicy.minAvailable) || "
             "self.runPolicy.schedulingPolicy.minAvailable == self.worker.replicas",
             _COLLECTIVE_GANG,
             lambda s: s.mode is Mode.COLLECTIVE
             and s.run_policy.scheduling_policy.min_available not in (None, s.worker.replicas),
             ".runPolicy.schedulingPolicy.minAvailable"),
        Rule("!has(self.worker.port) || self.mode == 'collective'",
             "worker.port is the ring port of a collective job: remove it or set mode: collective",
             lambda s: s.worker.port is not None and s.mode is not Mode.COLLECTIVE, ".worker.port"),
        Rule("!has(self.worker.port) || self.worker.port != self.metricsPort",
             "metricsPort and worker.port must differ: change one of them",
             lambda s: s.worker.port == s.metrics_port, ".metricsPort"),
        Rule(f"has(self.worker.port) || self.mode != 'collective' || "
             f"self.metricsPort != {roles.DEFAULT_TRAINER_PORT}",
             f"metricsPort and the ring port ({roles.DEFAULT_TRAINER_PORT}) must differ: change "
             "metricsPort or set worker.port",
             lambda s: s.mode is Mode.COLLECTIVE and s.worker.port is None
             and s.metrics_port == roles.DEFAULT_TRAINER_PORT, ".metricsPort"),
        Rule("!has(self.heterWorker) || self.heterWorker.port != self.metricsPort",
             "metricsPort and heterWorker.port must differ: change one of them",
             lambda s: s.heter_worker is not None and s.heter_worker.port == s.metrics_port, ".metricsPort"),
        Rule("!self.asPaddle || " + " || ".join(
                 f"({guard}has(self.{key}command) && size(self.{key}command) > 0)" for guard, key in
                 (("", ""), ("", "pserver."), ("", "worker."), ("has(self.heterWorker) && ", "heterWorker."))),
             _AS_PADDLE_NEEDS_COMMAND,
             lambda s: s.as_paddle and not (
                 s.command or s.pserver.command or s.worker.command
                 or (s.heter_worker is not None and s.heter_worker.command)),
             ".asPaddle"),
        Rule("!has(self.data) || !has(self.data.stream) || !has(self.worker.maxReplicas)",
             "a stream job deals each folder's batches over a fixed trainer count: remove "
             "worker.maxReplicas or data.stream",
             lambda s: s.data.stream is not None and s.worker.max_replicas is not None, ".data.stream"),
        Rule("!has(self.data) || !has(self.data.stream) || (has(self.checkpoint) && has(self.checkpoint.enabled) "
             "&& !self.checkpoint.enabled) || !has(self.checkpoint) || !has(self.checkpoint.intervalSeconds) "
             "|| self.checkpoint.intervalSeconds > 0",
             "a stream job publishes a checkpoint every checkpoint.intervalSeconds: set it above 0",
             lambda s: s.data.stream is not None and s.checkpoint.enabled and not s.checkpoint.interval_seconds,
             ".checkpoint.intervalSeconds"),
        Rule("!has(self.heterWorker) || !has(self.worker.maxReplicas)",
             "elastic trainers (worker.maxReplicas) are not supported with heterWorker: remove one",
             lambda s: s.heter_worker is not None and s.worker.max_replicas is not None, ".worker.maxReplicas"),
    )
    image: str = spec_field("image", "Container image with psjob installed.", min_length=1,
                            fix="set spec.image to an image with psjob installed")
    image_pull_policy: ImagePullPolicy | None = spec_field("imagePullPolicy",
                                                           "Image pull policy.", None)
    image_pull_secrets: tuple[str, ...] = spec_field(
        "imagePullSecrets", "Names of Secrets used to pull the image.", factory=tuple)
    command: tuple[str, ...] = spec_field(
        "command", "Entrypoint of every process; empty runs psjob's own (`psjob pserver`, "
        "`psjob worker`, `psjob heter-worker`). A custom script reads PADDLE_TRAINING_ROLE.",
        factory=tuple)
    args: tuple[str, ...] = spec_field("args", "Arguments of every process.", factory=tuple)
    as_paddle: bool = spec_field(
        "asPaddle", "Run unmodified Paddle code: in every process (and the processes it starts, "
        "such as a dataset's pipe_command) `import paddle` and every paddle.X.Y give psjob; each "
        "process says so on stderr. The container command becomes `psjob as-paddle -- COMMAND` "
        "(`psjob launch --as-paddle` locally). Needs spec.command or a role's command.", False)
    mode: Mode = spec_field("mode", "Communicator mode of a parameter-server job: sync, async, "
                            "half_async or geo; or collective: no pservers, the trainers all-reduce "
                            "their gradients among themselves every step (Paddle's NCCL2 mode; "
                            "docs/user/collective.md).", Mode.SYNC)
    k_steps: int | None = spec_field("kSteps", f"Geo mode: local steps between pushes "
                                     f"(default {DEFAULT_GEO_K_STEPS}).", None, minimum=1)
    metrics_port: int = spec_field("metricsPort", "Prometheus port of every process.",
                                   roles.DEFAULT_METRICS_PORT, minimum=1024, maximum=65535,
                                   fix="pods run as non-root: pick a port from 1024 to 65535")
    pserver: PserverSpec = spec_field("pserver", "Parameter servers (none in mode collective).",
                                      factory=PserverSpec)
    worker: WorkerSpec = spec_field("worker", "Trainers.", factory=WorkerSpec)
    heter_worker: HeterWorkerSpec | None = spec_field(
        "heterWorker", "Optional heterogeneous (GPU) trainers.", None)
    data: DataSpec = spec_field("data", "Where the built-in job's data comes from besides --data: "
                                "a stream of folders.", factory=DataSpec)
    checkpoint: CheckpointSpec = spec_field("checkpoint", "Checkpoint storage and cadence.",
                                            factory=CheckpointSpec)
    run_policy: RunPolicy = spec_field("runPolicy", "Failure, deadline, cleanup, suspension.",
                                       factory=RunPolicy)
    network_policy: NetworkPolicySpec = spec_field("networkPolicy", "Network isolation.",
                                                   factory=NetworkPolicySpec)
    security_context: SecuritySpec = spec_field("securityContext", "Pod user and group ids.",
                                                factory=SecuritySpec)
    tls: TlsSpec | None = spec_field("tls", "Optional TLS for every RPC of the job (trainers, "
                                     "pservers, tools); absent: plaintext, authenticated by the "
                                     "job token.", None)

    @property
    def effective_k_steps(self) -> int:
        if self.mode is not Mode.GEO:
            return 0
        return self.k_steps if self.k_steps is not None else DEFAULT_GEO_K_STEPS


@dataclass(frozen=True)
class ParameterServerJob:
    name: str
    namespace: str
    spec: JobSpec


NAME_RULES = (
    Rule(f"self.metadata.name.size() <= {MAX_JOB_NAME_LENGTH}",
         f"the job name must be at most {MAX_JOB_NAME_LENGTH} characters (children append "
         f"-pserver-N): shorten metadata.name",
         lambda name: len(name) > MAX_JOB_NAME_LENGTH),
    Rule(f"self.metadata.name.matches('{DNS_1035}')",
         "the job name must be lower-case letters, digits and '-', starting with a letter and "
         "ending with a letter or digit: rename the job",
         lambda name: not re.match(DNS_1035, name)),
)
