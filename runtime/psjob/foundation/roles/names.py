"""The names a job's processes share: roles, modes, default ports and exit codes, the
paths the operator mounts, and the variables psjob sets itself (RESERVED_ENV)."""
from __future__ import annotations

import enum

PSERVER = "PSERVER"
TRAINER = "TRAINER"
HETER_TRAINER = "HETER_TRAINER"
ROLES = (PSERVER, TRAINER, HETER_TRAINER)


class Mode(enum.StrEnum):
    """A job's training mode. The communicator modes (Paddle's DistributedStrategy a_sync /
    a_sync_configs) and COLLECTIVE (NCCL2-mode jobs: no pservers; the trainers all-reduce
    among themselves, psjob.cluster.collective). A StrEnum: it renders as its name in the
    environment and in messages; Paddle-facing APIs that take the name still take it, and
    `Mode(name)` converts at that boundary."""

    SYNC = "sync"
    ASYNC = "async"
    HALF_ASYNC = "half_async"
    GEO = "geo"
    COLLECTIVE = "collective"

    @property
    def is_async(self) -> bool:
        """Async or half-async: the trainers' communicator sends without a barrier."""
        return self in (Mode.ASYNC, Mode.HALF_ASYNC)

    @property
    def uses_pservers(self) -> bool:
        return self is not Mode.COLLECTIVE


COLLECTIVE = Mode.COLLECTIVE
# Geo mode's local steps between exchanges when a job does not say: Paddle's own default
# (GeoStrategy(update_frequency=100), DistributeTranspilerConfig.geo_sgd_need_push_nums = 100).
DEFAULT_GEO_K_STEPS = 100
DEVICES = ("cpu", "gpu")

AUTO = "auto"
DEFAULT_PSERVER_PORT = 6174  # Paddle's customary pserver port
DEFAULT_HETER_PORT = 6175
DEFAULT_METRICS_PORT = 9100
DEFAULT_TRAINER_PORT = 6170  # a collective trainer's ring port (Paddle's launch starts at 6170)
# A trainer that cannot reach its pservers past their recovery window exits with this
# status (BSD's EX_TEMPFAIL: "try again later"). The worker Job's podFailurePolicy and
# `psjob run` restart it without counting a failure against runPolicy.backoffLimit.
PSERVER_UNREACHABLE_EXIT = 75
# Trainer 0 that sees the pservers being replaced (a resize: its topology file lists other
# endpoints) checkpoints, then exits with this status: the launcher or the operator replaces
# every process and they resume from that checkpoint; not a failure, not counted against
# backoffLimit (the worker Job's podFailurePolicy ignores it).
RESIZE_HOLD_EXIT = 76
# A collective trainer whose ring lost a peer during an all-reduce exits with this status
# (psjob.cluster.collective): the peer that died is the failure, counted against backoffLimit; the
# survivors are restarted to form the ring again without counting (the worker Job's
# podFailurePolicy and `psjob run` ignore it).
PEER_LOST_EXIT = 77
LOCAL_HOST = "127.0.0.1"
# "1": once every trainer completed, a pserver or heter trainer stays up until stopped
# (SIGTERM) instead of exiting. A StatefulSet pod restarts a container that exits, so
# resolve_identity sets it for servers that take their index from their pod's name; local
# runs leave it unset and their servers exit with the job. psjob.cluster.pserver.lifecycle reads it.
STAY_UNTIL_STOPPED_ENV = "PSJOB_STAY_UNTIL_STOPPED"

# spec.asPaddle: the command every process of the job runs is prefixed with this, which puts
# psjob's `paddle` alias first on PYTHONPATH and execs the rest (psjob.launcher.aspaddle, `psjob as-paddle`).
AS_PADDLE_COMMAND = ("psjob", "as-paddle", "--")

# Where the operator mounts things inside pods; the local launcher uses paths
# under its workdir instead.
KUBERNETES_CHECKPOINT_DIR = "/var/lib/psjob/checkpoints"
KUBERNETES_AUTH_TOKEN_FILE = "/var/run/psjob/auth/token"


# Variables psjob sets itself; a job spec that sets one of them is rejected
# (psjob.foundation.jobspec) because the user's value would silently fight the topology.


RESERVED_ENV = (
    "PADDLE_TRAINING_ROLE", "PADDLE_PSERVER_IPS", "PADDLE_PSERVER_PORT",
    "PADDLE_PSERVER_ENDPOINTS", "PADDLE_TRAINERS", "PADDLE_TRAINER_ID",
    "PADDLE_CURRENT_IP", "PADDLE_PORT", "PADDLE_HETER_TRAINER_IP_PORT_LIST",
    "PSJOB_JOB_NAME", "PSJOB_NAMESPACE", "PSJOB_CHECKPOINT_DIR", "PSJOB_MODE",
    "PSJOB_K_STEPS", "PSJOB_METRICS_PORT", "PSJOB_AUTH_TOKEN_FILE",
    "PSJOB_PSERVERS", "PSJOB_PSERVER_INDEX", "PSJOB_CURRENT_ENDPOINT",
    "PSJOB_TRAINER_ID", "PSJOB_HETER_TRAINERS", "PSJOB_HETER_TRAINER_ID",
    "PSJOB_DEVICE", "PSJOB_CHECKPOINT_INTERVAL_STEPS",
    "PSJOB_CHECKPOINT_INTERVAL_SECONDS", "PSJOB_CHECKPOINT_KEEP",
    "PSJOB_CHECKPOINT_INCREMENTAL", "PSJOB_CHECKPOINT_BASE_EVERY",
    "PSJOB_TOPOLOGY_FILE", "JOB_COMPLETION_INDEX", "POD_IP", "PSJOB_MAX_TRAINERS",
    "PADDLE_CURRENT_ENDPOINT",
    "PSJOB_DATA_STREAM",
    # Paddle 2.x launchers' names (paddle.distributed.launch, fleetrun), set alongside.
    "TRAINING_ROLE", "PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_TRAINER_ENDPOINTS",
    "PADDLE_TRAINERS_NUM",
)
