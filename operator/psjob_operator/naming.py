"""Names, labels and annotations of a job's children (one place, no guessing).

Every child of job J is named deterministically from J, so the operator can
find them by name after a restart without any state of its own:

    J-pserver      StatefulSet + headless Service (pods J-pserver-0..N-1)
    J-heter        StatefulSet + headless Service (optional heterWorker)
    J-worker       Indexed batch/v1 Job (trainer id = completion index); in a
                   collective job also its headless Service (the pods' subdomain)
    J-checkpoint   PersistentVolumeClaim (shared, ReadWriteMany)
    J-auth         Secret with the per-job RPC token
    J-config       ConfigMap with the job topology
    J-network      NetworkPolicy
"""
from __future__ import annotations

from psjob.foundation import roles

GROUP = "psjob.dev"
LABEL_JOB = "psjob.dev/job-name"
LABEL_ROLE = "psjob.dev/role"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY = "psjob-operator"
ANNOTATION_HASH = "psjob.dev/template-hash"
ANNOTATION_LAST_APPLIED = "psjob.dev/last-applied"
# On pod-owning children: what the job asked for when the child was applied (psjob_operator.apply).
ANNOTATION_JOB_INPUTS = "psjob.dev/job-inputs"
# On the worker Job of an elastic job (spec.worker.maxReplicas): its scale is patched in place.
ANNOTATION_ELASTIC = "psjob.dev/elastic"
# Set by Kubernetes on Indexed Job pods; the trainer id comes from it.
ANNOTATION_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"

ROLE_PSERVER = "pserver"
ROLE_WORKER = "worker"
ROLE_HETER = "heter-worker"
ROLES = (ROLE_PSERVER, ROLE_WORKER, ROLE_HETER)

CONTAINER = "psjob"
PORT_PSERVER = "pserver"
PORT_HETER = "heter"
PORT_METRICS = "metrics"
PORT_RING = "ring"  # a collective trainer's all-reduce ring
AUTH_TOKEN_KEY = "token"
TOPOLOGY_KEY = "topology.json"
CONFIG_DIR = "/etc/psjob"


def pserver(job: str) -> str:
    return roles.pserver_service(job)


def heter(job: str) -> str:
    return roles.heter_service(job)


def worker(job: str) -> str:
    return f"{job}-worker"


def checkpoint_claim(job: str) -> str:
    return f"{job}-checkpoint"


def auth_secret(job: str) -> str:
    return f"{job}-auth"


def config_map(job: str) -> str:
    return f"{job}-config"


def network_policy(job: str) -> str:
    return f"{job}-network"


def job_labels(job: str) -> dict[str, str]:
    return {LABEL_JOB: job, LABEL_MANAGED_BY: MANAGED_BY}


def role_labels(job: str, role: str) -> dict[str, str]:
    return {LABEL_JOB: job, LABEL_ROLE: role}


def job_selector(job: str) -> str:
    return f"{LABEL_JOB}={job}"
