"""The ParameterServerJob spec: typed model, parser, and the schema they share.

One YAML document describes a job, whether the operator runs it on Kubernetes
or `psjob run` runs it on this machine. This module turns that document into
frozen dataclasses, or raises `JobSpecError` naming the field path (for
example `spec.pserver.replicas`) and the fix.

Every dataclass field carries a `Schema` (JSON key, description, range,
pattern, CEL rules). The parser enforces it here; the operator's CRD
generator (`psjob_operator.crd`) walks the same metadata to emit the CRD's
openAPIV3Schema, so the cluster's validation and this parser cannot drift
(a test compares the checked-in CRD with the generated one). Cross-field
rules are written twice, side by side in one `Rule`: as a CEL expression for
the API server and as a Python check for `psjob run` and the operator.

Stdlib only at import time; `load_job_file` imports PyYAML when called.
"""
from __future__ import annotations

import dataclasses
import difflib
import enum
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass
from typing import Any, ClassVar, NewType

from psjob import roles

API_GROUP = "psjob.dev"
API_VERSION = "v1alpha1"
API_VERSION_FULL = f"{API_GROUP}/{API_VERSION}"
KIND = "ParameterServerJob"
PLURAL = "parameterserverjobs"
SINGULAR = "parameterserverjob"
SHORT_NAMES = ("psjob", "psj")
DEFAULT_GEO_K_STEPS = 100
# Child names must stay valid: the pserver StatefulSet `<name>-pserver` stamps
# pods with a controller-revision-hash label `<sts>-<10 chars>` (<= 63), so the
# StatefulSet name is capped at 52 and the job name at 52 - len("-pserver").
MAX_JOB_NAME_LENGTH = 44
DNS_1035 = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
DNS_1123_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"
ENV_NAME = r"^[-._a-zA-Z][-._a-zA-Z0-9]*$"
QUANTITY = r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|[numkMGTPE]|[KMGTPE]i)?$"
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
S3_URI = r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$"

RawObject = NewType("RawObject", dict)
"""A Kubernetes object passed through as is (EnvVarSource, NetworkPolicyPeer)."""
PodTemplate = NewType("PodTemplate", dict)
"""A Kubernetes PodTemplateSpec (metadata + spec); the operator merges psjob's pod into it."""


class JobSpecError(ValueError):
    """A job spec problem: `field` is the path, the message says the fix."""

    def __init__(self, field: str, message: str):
        self.field = field
        self.detail = message
        super().__init__(f"{field}: {message}")


@dataclass(frozen=True)
class Rule:
    """A cross-field rule, once as CEL (API server) and once in Python.

    `check(obj)` returns None when the object is fine, else the error text;
    `field` is the sub-path the error is reported at (CEL `fieldPath`).
    """
    cel: str
    message: str
    check: Callable[[Any], str | None]
    field: str = ""


@dataclass(frozen=True)
class Schema:
    key: str
    doc: str
    minimum: int | None = None
    maximum: int | None = None
    pattern: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    max_items: int | None = None
    quantity: bool = False
    list_map_key: str | None = None
    rules: tuple[Rule, ...] = ()
    fix: str = ""


def spec_field(key: str, doc: str, default: Any = MISSING, *, factory: Any = MISSING,
               **schema: Any) -> Any:
    return dataclasses.field(default=default, default_factory=factory,
                             metadata={"schema": Schema(key=key, doc=doc, **schema)})


class Mode(str, enum.Enum):
    SYNC = "sync"
    ASYNC = "async"
    HALF_ASYNC = "half_async"
    GEO = "geo"


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


def _no_reserved_env(env: tuple["EnvVar", ...]) -> str | None:
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
                            lambda v: "set either value or valueFrom, not both"
                            if v.value is not None and v.value_from is not None else None),)
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
             lambda t: "operator Exists must not set value: remove value or use operator Equal"
             if t.operator is TolerationOperator.EXISTS and t.value else None, ".value"),
        Rule("(has(self.key) && self.key != '') || self.operator == 'Exists'",
             "a toleration without key must use operator Exists",
             lambda t: "a toleration without key must use operator Exists"
             if not t.key and t.operator is not TolerationOperator.EXISTS else None, ".operator"),
        Rule("!has(self.tolerationSeconds) || (has(self.effect) && self.effect == 'NoExecute')",
             "tolerationSeconds only applies to effect NoExecute",
             lambda t: "tolerationSeconds only applies to effect NoExecute"
             if t.toleration_seconds is not None and t.effect is not TaintEffect.NO_EXECUTE
             else None, ".tolerationSeconds"),
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
                                  _no_reserved_env),))


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
             lambda w: "maxReplicas must be at least replicas: raise maxReplicas or lower replicas"
             if w.max_replicas is not None and w.max_replicas < w.replicas else None, ".maxReplicas"),
    )
    replicas: int = spec_field("replicas", "Number of trainers; the job succeeds when all of "
                               "them complete. With maxReplicas set it may change while the "
                               "job runs (docs/operator.md, Elasticity).", 1, minimum=1, maximum=4096)
    max_replicas: int | None = spec_field(
        "maxReplicas", "Makes the trainers elastic: the most trainers the job may scale to. "
        "The pservers keep a gradient slot per possible trainer and learn the running ones at "
        "run time, so changing replicas restarts no pod.", None, minimum=1, maximum=4096)


@dataclass(frozen=True)
class HeterWorkerSpec(RoleSpec):
    replicas: int = spec_field("replicas", "Number of heterogeneous trainers (they run the "
                               "compute-heavy part of the network).", 1, minimum=1, maximum=256)
    device: Device = spec_field("device", "Device of the heterogeneous trainers.", Device.GPU)
    port: int = spec_field("port", "Port the heterogeneous trainer listens on.",
                           roles.DEFAULT_HETER_PORT, minimum=1024, maximum=65535,
                           fix="pods run as non-root: pick a port from 1024 to 65535")


@dataclass(frozen=True)
class CheckpointSpec:
    RULES: ClassVar = (
        Rule("!has(self.existingClaim) || !has(self.storageClassName)",
             "existingClaim and storageClassName exclude each other: keep one",
             lambda c: "existingClaim and storageClassName exclude each other: keep one"
             if c.existing_claim and c.storage_class_name else None, ".existingClaim"),
        Rule("!self.enabled || self.intervalSteps > 0 || self.intervalSeconds > 0",
             "checkpoints are enabled but intervalSteps and intervalSeconds are both 0: set one, "
             "or set enabled: false",
             lambda c: "checkpoints are enabled but intervalSteps and intervalSeconds are both 0: "
             "set one, or set enabled: false"
             if c.enabled and not c.interval_steps and not c.interval_seconds else None,
             ".intervalSeconds"),
        Rule("!has(self.uri) || (!has(self.existingClaim) && !has(self.storageClassName))",
             "uri stores checkpoints in object storage, without a claim: drop existingClaim and "
             "storageClassName, or drop uri",
             lambda c: "uri stores checkpoints in object storage, without a claim: drop existingClaim and "
             "storageClassName, or drop uri" if c.uri and (c.existing_claim or c.storage_class_name) else None,
             ".uri"),
        Rule("!has(self.credentialsSecret) || has(self.uri)",
             "credentialsSecret is for an object store: set uri (s3://BUCKET/PREFIX) too",
             lambda c: "credentialsSecret is for an object store: set uri (s3://BUCKET/PREFIX) too"
             if c.credentials_secret and not c.uri else None, ".credentialsSecret"),
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

    @property
    def uses_claim(self) -> bool:
        """Checkpoints on the job's (or an existing) PersistentVolumeClaim, not object storage."""
        return self.enabled and not self.uri


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
    run_as_user: int = spec_field("runAsUser", "Non-root user id of every container.", 1000,
                                  minimum=1, fix="pods run as non-root: use a uid >= 1")
    run_as_group: int = spec_field("runAsGroup", "Group id of every container.", 1000, minimum=0)
    fs_group: int = spec_field("fsGroup", "Group that owns the mounted volumes.", 1000, minimum=0)


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


@dataclass(frozen=True)
class JobSpec:
    RULES: ClassVar = (
        Rule("!has(self.kSteps) || self.mode == 'geo'",
             "kSteps only applies to mode geo: remove kSteps or set mode: geo",
             lambda s: "kSteps only applies to mode geo: remove kSteps or set mode: geo"
             if s.k_steps is not None and s.mode is not Mode.GEO else None, ".kSteps"),
        Rule("self.pserver.port != self.metricsPort",
             "metricsPort and pserver.port must differ: change one of them",
             lambda s: "metricsPort and pserver.port must differ: change one of them"
             if s.pserver.port == s.metrics_port else None, ".metricsPort"),
        Rule("!has(self.heterWorker) || self.heterWorker.port != self.metricsPort",
             "metricsPort and heterWorker.port must differ: change one of them",
             lambda s: "metricsPort and heterWorker.port must differ: change one of them"
             if s.heter_worker and s.heter_worker.port == s.metrics_port else None,
             ".metricsPort"),
        Rule("!has(self.heterWorker) || !has(self.worker.maxReplicas)",
             "elastic trainers (worker.maxReplicas) are not supported with heterWorker: remove one",
             lambda s: "elastic trainers (worker.maxReplicas) are not supported with heterWorker: "
             "remove one" if s.heter_worker and s.worker.max_replicas is not None else None,
             ".worker.maxReplicas"),
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
    mode: Mode = spec_field("mode", "Communicator mode: sync, async, half_async or geo.",
                            Mode.SYNC)
    k_steps: int | None = spec_field("kSteps", f"Geo mode: local steps between pushes "
                                     f"(default {DEFAULT_GEO_K_STEPS}).", None, minimum=1)
    metrics_port: int = spec_field("metricsPort", "Prometheus port of every process.",
                                   roles.DEFAULT_METRICS_PORT, minimum=1024, maximum=65535,
                                   fix="pods run as non-root: pick a port from 1024 to 65535")
    pserver: PserverSpec = spec_field("pserver", "Parameter servers.", factory=PserverSpec)
    worker: WorkerSpec = spec_field("worker", "Trainers.", factory=WorkerSpec)
    heter_worker: HeterWorkerSpec | None = spec_field(
        "heterWorker", "Optional heterogeneous (GPU) trainers.", None)
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
         lambda name: f"must be at most {MAX_JOB_NAME_LENGTH} characters (children append "
         f"-pserver-N): shorten metadata.name" if len(name) > MAX_JOB_NAME_LENGTH else None),
    Rule(f"self.metadata.name.matches('{DNS_1035}')",
         "the job name must be a DNS label starting with a letter (a-z, 0-9, '-')",
         lambda name: "must be lower-case letters, digits and '-', starting with a letter and "
         "ending with a letter or digit: rename the job"
         if not re.match(DNS_1035, name) else None),
)


# --- type classification shared with the CRD generator -----------------------------

@dataclass(frozen=True)
class TypeInfo:
    kind: str  # "str" "int" "bool" "enum" "object" "list" "map" "raw" "podtemplate"
    optional: bool = False
    inner: Any = None  # enum class, dataclass, or the list item TypeInfo


def describe(tp: Any) -> TypeInfo:
    optional = False
    args = typing.get_args(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        non_none = [a for a in args if a is not type(None)]
        optional, tp = True, non_none[0]
        args = typing.get_args(tp)
    origin = typing.get_origin(tp)
    if tp is RawObject:
        return TypeInfo("raw", optional)
    if tp is PodTemplate:
        return TypeInfo("podtemplate", optional)
    if origin is tuple:
        return TypeInfo("list", optional, describe(args[0]))
    if origin is dict:
        return TypeInfo("map", optional)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return TypeInfo("enum", optional, tp)
    if dataclasses.is_dataclass(tp):
        return TypeInfo("object", optional, tp)
    if tp in (str, int, bool):
        return TypeInfo(tp.__name__, optional)
    raise TypeError(f"unsupported spec field type {tp!r}")


@dataclass(frozen=True)
class FieldInfo:
    name: str
    schema: Schema
    type: TypeInfo
    default: Any  # MISSING when required
    has_factory: bool


def fields_of(cls: type) -> list[FieldInfo]:
    hints = typing.get_type_hints(cls)
    result = []
    for f in dataclasses.fields(cls):
        result.append(FieldInfo(f.name, f.metadata["schema"], describe(hints[f.name]),
                                f.default, f.default_factory is not MISSING))
    return result


# --- parsing ------------------------------------------------------------------------

def parse_job(manifest: Mapping[str, Any]) -> ParameterServerJob:
    """Parse a ParameterServerJob document; raises JobSpecError naming field and fix."""
    if not isinstance(manifest, Mapping):
        raise JobSpecError("(document)", f"must be a mapping, got {type(manifest).__name__}")
    if manifest.get("apiVersion") != API_VERSION_FULL:
        raise JobSpecError("apiVersion", f"is {manifest.get('apiVersion')!r}: set apiVersion: "
                           f"{API_VERSION_FULL}")
    if manifest.get("kind") != KIND:
        raise JobSpecError("kind", f"is {manifest.get('kind')!r}: set kind: {KIND}")
    metadata = manifest.get("metadata")
    if not isinstance(metadata, Mapping) or not isinstance(metadata.get("name"), str):
        raise JobSpecError("metadata.name", "is required: name the job")
    name = metadata["name"]
    for rule in NAME_RULES:
        problem = rule.check(name)
        if problem:
            raise JobSpecError("metadata.name", f"{name!r} {problem}")
    namespace = metadata.get("namespace") or "default"
    if "spec" not in manifest:
        raise JobSpecError("spec", "is required: add spec with at least spec.image")
    spec = _parse_object(JobSpec, manifest["spec"], "spec")
    return ParameterServerJob(name=name, namespace=namespace, spec=spec)


def load_job_file(path: str) -> ParameterServerJob:
    """Read and parse a job YAML file (one document)."""
    import yaml

    try:
        with open(path, encoding="utf-8") as handle:
            documents = [d for d in yaml.safe_load_all(handle) if d is not None]
    except yaml.YAMLError as exc:
        raise JobSpecError(path, f"is not valid YAML: {exc}") from None
    if len(documents) != 1:
        raise JobSpecError(path, f"must hold exactly one YAML document, found {len(documents)}")
    return parse_job(documents[0])


def _parse_object(cls: type, value: Any, path: str) -> Any:
    if not isinstance(value, Mapping):
        raise JobSpecError(path, f"must be a mapping, got {_kind(value)}")
    infos = fields_of(cls)
    by_key = {info.schema.key: info for info in infos}
    for key in value:
        if key not in by_key:
            close = difflib.get_close_matches(str(key), list(by_key), n=1)
            hint = f": did you mean {close[0]!r}?" if close else \
                f": known fields are {', '.join(sorted(by_key))}"
            raise JobSpecError(f"{path}.{key}", f"unknown field{hint}")
    kwargs = {}
    for info in infos:
        key_path = f"{path}.{info.schema.key}"
        if info.schema.key in value and value[info.schema.key] is not None:
            kwargs[info.name] = _parse_value(info.type, info.schema, value[info.schema.key],
                                             key_path)
        elif info.default is MISSING and not info.has_factory:
            raise JobSpecError(key_path, f"is required{_fix(info.schema)}")
    obj = cls(**kwargs)
    for rule in getattr(cls, "RULES", ()):
        problem = rule.check(obj)
        if problem:
            raise JobSpecError(path + rule.field, problem)
    return obj


def _parse_value(t: TypeInfo, schema: Schema, value: Any, path: str) -> Any:
    if t.kind == "list":
        if not isinstance(value, list):
            raise JobSpecError(path, f"must be a list, got {_kind(value)}")
        if schema.max_items is not None and len(value) > schema.max_items:
            raise JobSpecError(path, f"has {len(value)} items, at most {schema.max_items} allowed")
        items = tuple(_parse_value(t.inner, Schema(key="", doc=""), item, f"{path}[{i}]")
                      for i, item in enumerate(value))
        if schema.list_map_key:
            seen: set = set()
            for i, item in enumerate(items):
                key = getattr(item, schema.list_map_key)
                if key in seen:
                    raise JobSpecError(f"{path}[{i}].{schema.list_map_key}",
                                       f"duplicate {key!r}: each {schema.list_map_key} once")
                seen.add(key)
        for rule in schema.rules:
            problem = rule.check(items)
            if problem:
                raise JobSpecError(path, problem)
        return items
    if t.kind == "map":
        if not isinstance(value, Mapping):
            raise JobSpecError(path, f"must be a mapping, got {_kind(value)}")
        return {str(k): _scalar_string(v, schema, f"{path}.{k}") for k, v in value.items()}
    if t.kind == "object":
        return _parse_object(t.inner, value, path)
    if t.kind == "raw":
        if not isinstance(value, Mapping):
            raise JobSpecError(path, f"must be a mapping, got {_kind(value)}")
        return dict(value)
    if t.kind == "podtemplate":
        return _parse_pod_template(value, path)
    if t.kind == "enum":
        allowed = [m.value for m in t.inner]
        if value not in allowed:
            close = difflib.get_close_matches(str(value), allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise JobSpecError(path, f"is {value!r}; use one of {', '.join(allowed)}{hint}")
        return t.inner(value)
    if t.kind == "bool":
        if not isinstance(value, bool):
            raise JobSpecError(path, f"must be true or false, got {value!r}")
        return value
    if t.kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise JobSpecError(path, f"must be an integer, got {value!r}{_fix(schema)}")
        if schema.minimum is not None and value < schema.minimum:
            raise JobSpecError(path, f"is {value}, must be >= {schema.minimum}{_fix(schema)}")
        if schema.maximum is not None and value > schema.maximum:
            raise JobSpecError(path, f"is {value}, must be <= {schema.maximum}{_fix(schema)}")
        return value
    return _scalar_string(value, schema, path)


POD_TEMPLATE_KEYS = ("metadata", "spec")
POD_TEMPLATE_METADATA_KEYS = ("labels", "annotations")


def _parse_pod_template(value: Any, path: str) -> dict[str, Any]:
    """The shape of a PodTemplateSpec: {metadata: {labels, annotations}, spec: PodSpec}.
    The pod spec itself is checked by the operator's merge and by the API server."""
    if not isinstance(value, Mapping):
        raise JobSpecError(path, f"must be a mapping (a PodTemplateSpec), got {_kind(value)}")
    for key in value:
        if key not in POD_TEMPLATE_KEYS:
            raise JobSpecError(f"{path}.{key}", "unknown field: a PodTemplateSpec has metadata "
                               "and spec")
    metadata = value.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise JobSpecError(f"{path}.metadata", f"must be a mapping, got {_kind(metadata)}")
    for key, items in metadata.items():
        if key not in POD_TEMPLATE_METADATA_KEYS:
            raise JobSpecError(f"{path}.metadata.{key}", "psjob names the pods: only labels and "
                               "annotations may be set")
        if not isinstance(items, Mapping):
            raise JobSpecError(f"{path}.metadata.{key}", f"must be a mapping, got {_kind(items)}")
        for k, v in items.items():
            if not isinstance(v, str):
                raise JobSpecError(f"{path}.metadata.{key}.{k}",
                                   f"must be a string, got {_kind(v)}: quote it")
    spec = value.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise JobSpecError(f"{path}.spec", f"must be a mapping (a PodSpec), got {_kind(spec)}")
    return {"metadata": {k: dict(v) for k, v in metadata.items()}, "spec": dict(spec)}


def _scalar_string(value: Any, schema: Schema, path: str) -> str:
    if schema.quantity and isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise JobSpecError(path, f"must be a string, got {_kind(value)}{_fix(schema)}")
    if schema.quantity and not re.match(QUANTITY, value):
        raise JobSpecError(path, f"{value!r} is not a quantity{_fix(schema)}")
    if schema.min_length is not None and len(value) < schema.min_length:
        raise JobSpecError(path, f"must not be empty{_fix(schema)}")
    if schema.max_length is not None and len(value) > schema.max_length:
        raise JobSpecError(path, f"is longer than {schema.max_length} characters")
    if schema.pattern and not re.match(schema.pattern, value):
        raise JobSpecError(path, f"{value!r} does not match {schema.pattern}{_fix(schema)}")
    return value


def _fix(schema: Schema) -> str:
    return f": {schema.fix}" if schema.fix else ""


def _kind(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "null"}.get(type(value),
                                                                         type(value).__name__)


# --- serialising --------------------------------------------------------------------

def to_manifest(job: ParameterServerJob) -> dict[str, Any]:
    """The job as a document with every default filled in (parse_job round-trips it)."""
    return {"apiVersion": API_VERSION_FULL, "kind": KIND,
            "metadata": {"name": job.name, "namespace": job.namespace},
            "spec": _dump(job.spec)}


def _dump(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        out = {}
        for info in fields_of(type(value)):
            item = getattr(value, info.name)
            if item is None or item == () or item == {}:
                continue
            out[info.schema.key] = _dump(item)
        return out
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple):
        return [_dump(v) for v in value]
    if isinstance(value, dict):
        return {k: _dump(v) for k, v in value.items()}
    return value
