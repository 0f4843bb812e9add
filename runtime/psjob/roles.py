"""The role environment of every psjob process: one function, three callers.

A psjob job is a set of processes — pservers, trainers (workers) and optional
heterogeneous trainers — that find each other through environment variables.
The Kubernetes operator writes them into pod templates, the local launcher
(`psjob run`) passes them to child processes, and the runtime reads them. All
three call `role_environment()` here so the names and values cannot drift.

Lifecycle of an identity:

1. A builder (`kubernetes_topology()` or `local_topology()`) turns a parsed
   `ParameterServerJob` into a `JobTopology`: endpoints, counts, mode, paths.
2. `role_environment(topology, role, index)` renders the variables of one
   process. When the index is known (local runs) everything is concrete.
   When it is not known until the process runs (`index=None`: one pod
   template serves all replicas) the index variables say "auto".
3. At start-up the process calls `resolve_identity(os.environ, hostname)`,
   which fills in what a pod derives at run time: a StatefulSet pod's ordinal
   from its hostname (`<job>-pserver-3` → pserver 3), an Indexed Job pod's
   trainer id from `JOB_COMPLETION_INDEX`, the pod IP from `POD_IP`. A trainer
   left with `PSJOB_TRAINER_ID=auto` gets its id from a rendezvous with
   pserver 0 (the runtime's job, not this module's).

The variable names are the Fluid ones (PADDLE_*) so that Fluid-style scripts
run unchanged, plus psjob's own (PSJOB_*). Stdlib only: the operator, the
launcher and the runtime all import this module.
"""
from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# The topology builders take a psjob.jobspec.ParameterServerJob. They read its
# fields and do not import it: jobspec imports this module's defaults (ports,
# the reserved variables), so roles stays below jobspec.

PSERVER = "PSERVER"
TRAINER = "TRAINER"
HETER_TRAINER = "HETER_TRAINER"
ROLES = (PSERVER, TRAINER, HETER_TRAINER)
MODES = ("sync", "async", "half_async", "geo")
DEVICES = ("cpu", "gpu")

AUTO = "auto"
DEFAULT_PSERVER_PORT = 6174  # Paddle's customary pserver port
DEFAULT_HETER_PORT = 6175
DEFAULT_METRICS_PORT = 9100
# A trainer that cannot reach its pservers past their recovery window exits with this
# status (BSD's EX_TEMPFAIL: "try again later"). The worker Job's podFailurePolicy and
# `psjob run` restart it without counting a failure against runPolicy.backoffLimit.
PSERVER_UNREACHABLE_EXIT = 75
LOCAL_HOST = "127.0.0.1"

# Where the operator mounts things inside pods; the local launcher uses paths
# under its workdir instead.
KUBERNETES_CHECKPOINT_DIR = "/var/lib/psjob/checkpoints"
KUBERNETES_AUTH_TOKEN_FILE = "/var/run/psjob/auth/token"

# Variables psjob sets itself; a job spec that sets one of them is rejected
# (jobspec.py) because the user's value would silently fight the topology.
# Thread pools of the math libraries under numpy (OpenBLAS, MKL, OpenMP). Each
# defaults to one thread per visible core, and its threads spin while waiting
# for work: with a pserver, a trainer and the trainer's communicator threads on
# the same cores, a 2-thread OpenBLAS matmul measured 2-3x slower than a
# 1-thread one (bench/ps_train.py). The launchers size them to the process's
# share of the cores; a value the user exported wins.
MATH_THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def math_threads(processes_on_host: int, cores: int | None = None) -> int:
    """The math-library threads per process when `processes_on_host` share the cores."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cores // max(1, processes_on_host))


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
    "PSJOB_TOPOLOGY_FILE", "JOB_COMPLETION_INDEX", "POD_IP", "PSJOB_MAX_TRAINERS",
    # Paddle 2.x launchers' names (paddle.distributed.launch, fleetrun), set alongside.
    "TRAINING_ROLE", "PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_TRAINER_ENDPOINTS",
    "PADDLE_TRAINERS_NUM",
)


def pserver_service(job_name: str) -> str:
    """Name of the StatefulSet and of its headless Service."""
    return f"{job_name}-pserver"


def heter_service(job_name: str) -> str:
    return f"{job_name}-heter"


def kubernetes_host(service: str, namespace: str, index: int) -> str:
    """Stable DNS name of StatefulSet pod `index` behind a headless Service."""
    return f"{service}-{index}.{service}.{namespace}.svc"


@dataclass(frozen=True)
class JobTopology:
    """Everything a process needs to know about the job it belongs to.

    `pserver_endpoints[i]` is pserver i as "host:port"; `heter_endpoints[i]`
    the same for heterogeneous trainer i. `trainers` counts the (CPU)
    trainers. `k_steps` only matters in geo mode. `metrics_port_per_process`
    is for local runs, where processes share one host: process n (pservers,
    then heter trainers, then trainers) gets `metrics_port + n`; 0 means
    "any free port".
    """
    job_name: str
    namespace: str
    pserver_endpoints: tuple[str, ...]
    trainers: int
    heter_trainers: int = 0
    mode: str = "sync"
    k_steps: int = 0
    checkpoint_dir: str = ""
    metrics_port: int = DEFAULT_METRICS_PORT
    auth_token_file: str = ""
    heter_endpoints: tuple[str, ...] = ()
    checkpoint_interval_steps: int = 0
    checkpoint_interval_seconds: int = 0
    checkpoint_keep: int = 0
    pserver_device: str = "cpu"
    trainer_device: str = "cpu"
    heter_device: str = "gpu"
    trainer_host: str = ""
    metrics_port_per_process: bool = False
    # Elastic jobs: the most trainers at once (PSJOB_MAX_TRAINERS, and PADDLE_TRAINERS too, so
    # that no process's environment changes when `trainers` does); 0: a fixed trainer count.
    max_trainers: int = 0

    def __post_init__(self) -> None:
        # Normalise lists given by callers into tuples so the object stays hashable.
        object.__setattr__(self, "pserver_endpoints", tuple(self.pserver_endpoints))
        object.__setattr__(self, "heter_endpoints", tuple(self.heter_endpoints))
        if not self.job_name:
            raise ValueError("JobTopology.job_name must not be empty")
        if not self.pserver_endpoints:
            raise ValueError("JobTopology.pserver_endpoints must list at least one pserver")
        for endpoint in self.pserver_endpoints + self.heter_endpoints:
            split_endpoint(endpoint)
        if self.trainers < 1:
            raise ValueError(f"JobTopology.trainers must be >= 1, got {self.trainers}")
        if self.max_trainers and self.max_trainers < self.trainers:
            raise ValueError(f"JobTopology.max_trainers={self.max_trainers} is below "
                             f"trainers={self.trainers}")
        if self.heter_endpoints and self.heter_trainers != len(self.heter_endpoints):
            raise ValueError(
                f"JobTopology.heter_trainers={self.heter_trainers} but "
                f"{len(self.heter_endpoints)} heter_endpoints are listed")
        if self.heter_trainers and not self.heter_endpoints:
            raise ValueError("JobTopology.heter_trainers > 0 needs heter_endpoints")
        if self.mode not in MODES:
            raise ValueError(f"JobTopology.mode must be one of {MODES}, got {self.mode!r}")
        if self.mode == "geo" and self.k_steps < 1:
            raise ValueError("JobTopology.k_steps must be >= 1 in geo mode")
        for device in (self.pserver_device, self.trainer_device, self.heter_device):
            if device not in DEVICES:
                raise ValueError(f"JobTopology devices must be one of {DEVICES}, got {device!r}")
        if not 0 <= self.metrics_port <= 65535:
            raise ValueError(f"JobTopology.metrics_port out of range: {self.metrics_port}")

    @property
    def pservers(self) -> int:
        return len(self.pserver_endpoints)


def split_endpoint(endpoint: str, *, what: str = "endpoint", host_optional: bool = False) -> tuple[str, int]:
    """'host:port' → (host, port), with a clear error naming `what` for anything else: the one
    parser of endpoints. `host_optional` accepts ':port' (a server's "every interface"), host ''."""
    host, sep, port = str(endpoint).rpartition(":")
    if not sep or not (host or host_optional) or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{what} {endpoint!r} is not 'host:port' with a port in 1..65535")
    return host, int(port)


def role_environment(topology: JobTopology, role: str, index: int | None) -> dict[str, str]:
    """Environment variables of one process of the job.

    `index` is the pserver index, trainer id or heter trainer index, or None
    when it is only known once the process runs (see module docstring).
    """
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")
    count = {PSERVER: topology.pservers, TRAINER: topology.trainers,
             HETER_TRAINER: topology.heter_trainers}[role]
    if index is not None and not 0 <= index < count:
        raise ValueError(f"{role} index {index} out of range: the job has {count}")
    env = _common_environment(topology, role)
    if role == PSERVER:
        if index is None:
            env["PSJOB_PSERVER_INDEX"] = AUTO
        else:
            env.update(_server_identity(topology.pserver_endpoints, index, "PSJOB_PSERVER_INDEX"))
    elif role == HETER_TRAINER:
        if index is None:
            env["PSJOB_HETER_TRAINER_ID"] = AUTO
        else:
            env.update(_server_identity(topology.heter_endpoints, index, "PSJOB_HETER_TRAINER_ID"))
            env["PADDLE_PORT"] = env.pop("PADDLE_PSERVER_PORT")
            env["PADDLE_PSERVER_PORT"] = _trainer_side_port(topology)
    else:
        if index is None:
            env["PSJOB_TRAINER_ID"] = AUTO
        else:
            env["PADDLE_TRAINER_ID"] = env["PSJOB_TRAINER_ID"] = str(index)
        if topology.trainer_host:
            env["PADDLE_CURRENT_IP"] = topology.trainer_host
    if topology.metrics_port_per_process and topology.metrics_port and index is not None:
        env["PSJOB_METRICS_PORT"] = str(topology.metrics_port + _process_slot(topology, role, index))
    env.update(_paddle2_environment(topology, role, index, env))
    return env


def _paddle2_environment(topology: JobTopology, role: str, index: int | None,
                         fluid_env: Mapping[str, str]) -> dict[str, str]:
    """The variables Paddle 2.x launchers set, derived from the Fluid ones.

    TRAINING_ROLE, PADDLE_PSERVERS_IP_PORT_LIST and PADDLE_TRAINERS_NUM always;
    a pserver's PADDLE_PORT (every pserver of a Kubernetes job listens on the
    same port, so it is known before the index is); POD_IP in local runs (a pod
    gets its own from the downward API); PADDLE_TRAINER_ENDPOINTS
    only where trainers have addresses — local runs, where trainer t is named
    by its host and its /metrics port (psjob trainers listen on nothing else).
    PADDLE_TRAINER_ID is the Fluid name too."""
    env = {
        "TRAINING_ROLE": role,
        "PADDLE_PSERVERS_IP_PORT_LIST": ",".join(topology.pserver_endpoints),
        "PADDLE_TRAINERS_NUM": fluid_env["PADDLE_TRAINERS"],  # the capacity in an elastic job
    }
    if role == PSERVER:
        env["PADDLE_PORT"] = str(split_endpoint(topology.pserver_endpoints[index or 0])[1])
    if topology.trainer_host and index is not None and fluid_env.get("PADDLE_CURRENT_IP"):
        env["POD_IP"] = fluid_env["PADDLE_CURRENT_IP"]  # a local run's; a pod's is its own
    if topology.trainer_host and topology.metrics_port_per_process and topology.metrics_port:
        env["PADDLE_TRAINER_ENDPOINTS"] = ",".join(
            f"{topology.trainer_host}:{topology.metrics_port + _process_slot(topology, TRAINER, t)}"
            for t in range(topology.max_trainers or topology.trainers))
    return env


# Paddle 2.x name → Fluid name, for processes started by Paddle's own launchers.
PADDLE2_TO_FLUID = {
    "TRAINING_ROLE": "PADDLE_TRAINING_ROLE",
    "PADDLE_PSERVERS_IP_PORT_LIST": "PADDLE_PSERVER_ENDPOINTS",
    "PADDLE_TRAINERS_NUM": "PADDLE_TRAINERS",
}


def fluid_environment(env: Mapping[str, str]) -> dict[str, str]:
    """`env` with the Fluid names filled in from the Paddle 2.x ones where only those are set
    (a script started by `python -m paddle.distributed.launch` or fleetrun conventions).

    A pserver's identity is POD_IP:PADDLE_PORT, which must be one of
    PADDLE_PSERVERS_IP_PORT_LIST (Paddle's rule); a Fluid name already set wins."""
    resolved = dict(env)
    if resolved.get("PADDLE_TRAINING_ROLE") or not resolved.get("TRAINING_ROLE"):
        return resolved
    for new, old in PADDLE2_TO_FLUID.items():
        if resolved.get(new) and not resolved.get(old):
            resolved[old] = resolved[new]
    role = resolved["PADDLE_TRAINING_ROLE"]
    if role == PSERVER and resolved.get("PSJOB_PSERVER_INDEX", AUTO) == AUTO:
        endpoints = _endpoints(resolved, "PADDLE_PSERVER_ENDPOINTS")
        current = f"{resolved.get('POD_IP', '')}:{resolved.get('PADDLE_PORT', '')}"
        if current not in endpoints:
            raise ValueError(f"this pserver's POD_IP:PADDLE_PORT {current} is not in "
                             f"PADDLE_PSERVERS_IP_PORT_LIST ({', '.join(endpoints)})")
        resolved.update(_server_identity(endpoints, endpoints.index(current), "PSJOB_PSERVER_INDEX"))
    elif role == TRAINER and resolved.get("PADDLE_TRAINER_ID"):
        resolved.setdefault("PSJOB_TRAINER_ID", resolved["PADDLE_TRAINER_ID"])
    return resolved


def _common_environment(topology: JobTopology, role: str) -> dict[str, str]:
    hosts = [split_endpoint(e)[0] for e in topology.pserver_endpoints]
    env = {
        "PADDLE_TRAINING_ROLE": role,
        "PADDLE_PSERVER_IPS": ",".join(hosts),
        "PADDLE_PSERVER_PORT": _trainer_side_port(topology),
        "PADDLE_PSERVER_ENDPOINTS": ",".join(topology.pserver_endpoints),
        "PADDLE_TRAINERS": str(topology.max_trainers or topology.trainers),
        "PSJOB_JOB_NAME": topology.job_name,
        "PSJOB_NAMESPACE": topology.namespace,
        "PSJOB_PSERVERS": str(topology.pservers),
        "PSJOB_HETER_TRAINERS": str(topology.heter_trainers),
        "PSJOB_MODE": topology.mode,
        "PSJOB_K_STEPS": str(topology.k_steps),
        "PSJOB_CHECKPOINT_DIR": topology.checkpoint_dir,
        "PSJOB_CHECKPOINT_INTERVAL_STEPS": str(topology.checkpoint_interval_steps),
        "PSJOB_CHECKPOINT_INTERVAL_SECONDS": str(topology.checkpoint_interval_seconds),
        "PSJOB_CHECKPOINT_KEEP": str(topology.checkpoint_keep),
        "PSJOB_METRICS_PORT": str(topology.metrics_port),
        "PSJOB_AUTH_TOKEN_FILE": topology.auth_token_file,
        "PSJOB_DEVICE": {PSERVER: topology.pserver_device, TRAINER: topology.trainer_device,
                         HETER_TRAINER: topology.heter_device}[role],
    }
    if topology.max_trainers:
        env["PSJOB_MAX_TRAINERS"] = str(topology.max_trainers)
    if topology.heter_endpoints:
        env["PADDLE_HETER_TRAINER_IP_PORT_LIST"] = ",".join(topology.heter_endpoints)
    return env


def _trainer_side_port(topology: JobTopology) -> str:
    # Fluid scripts build endpoints from PADDLE_PSERVER_IPS + PADDLE_PSERVER_PORT,
    # which only works when every pserver listens on the same port (Kubernetes).
    # Local runs keep that by giving each pserver its own loopback address
    # (local_pserver_host); PADDLE_PSERVER_ENDPOINTS stays authoritative.
    return str(split_endpoint(topology.pserver_endpoints[0])[1])


def _server_identity(endpoints: Sequence[str], index: int, index_var: str) -> dict[str, str]:
    host, port = split_endpoint(endpoints[index])
    return {
        "PADDLE_CURRENT_IP": host,
        "PADDLE_PSERVER_PORT": str(port),
        "PSJOB_CURRENT_ENDPOINT": endpoints[index],
        index_var: str(index),
    }


def _process_slot(topology: JobTopology, role: str, index: int) -> int:
    if role == PSERVER:
        return index
    if role == HETER_TRAINER:
        return topology.pservers + index
    return topology.pservers + topology.heter_trainers + index


_ORDINAL = re.compile(r"^(?P<prefix>.+)-(?P<ordinal>\d+)$")


def resolve_identity(env: Mapping[str, str], hostname: str) -> dict[str, str]:
    """Fill in what a process learns only at run time; returns a new dict.

    - PSERVER / HETER_TRAINER with index "auto": the index is the ordinal of
      the StatefulSet pod name (`<job>-pserver-<i>`, `<job>-heter-<i>`);
      sets PADDLE_CURRENT_IP, PADDLE_PSERVER_PORT (PADDLE_PORT for heter
      trainers), PSJOB_CURRENT_ENDPOINT and the index variable.
    - TRAINER with PSJOB_TRAINER_ID "auto": JOB_COMPLETION_INDEX (set by
      Kubernetes in Indexed Job pods) becomes the trainer id; without it the
      id stays "auto" for the runtime's rendezvous with pserver 0.
    - PADDLE_CURRENT_IP of trainers defaults to POD_IP when that is set.

    Raises ValueError naming the variable or hostname that does not fit.
    """
    resolved = dict(env)
    role = resolved.get("PADDLE_TRAINING_ROLE", "")
    if role not in ROLES:
        raise ValueError(f"PADDLE_TRAINING_ROLE must be one of {ROLES}, got {role!r}")
    job = resolved.get("PSJOB_JOB_NAME", "")
    if role == PSERVER and resolved.get("PSJOB_PSERVER_INDEX", AUTO) == AUTO:
        endpoints = _endpoints(resolved, "PADDLE_PSERVER_ENDPOINTS")
        index = _ordinal(hostname, pserver_service(job), len(endpoints))
        resolved.update(_server_identity(endpoints, index, "PSJOB_PSERVER_INDEX"))
    elif role == HETER_TRAINER and resolved.get("PSJOB_HETER_TRAINER_ID", AUTO) == AUTO:
        endpoints = _endpoints(resolved, "PADDLE_HETER_TRAINER_IP_PORT_LIST")
        index = _ordinal(hostname, heter_service(job), len(endpoints))
        identity = _server_identity(endpoints, index, "PSJOB_HETER_TRAINER_ID")
        identity["PADDLE_PORT"] = identity.pop("PADDLE_PSERVER_PORT")
        resolved.update(identity)
    elif role == TRAINER:
        if resolved.get("PSJOB_TRAINER_ID", AUTO) == AUTO and resolved.get("JOB_COMPLETION_INDEX"):
            index = resolved["JOB_COMPLETION_INDEX"]
            trainers = max(int(resolved.get("PADDLE_TRAINERS", "0") or 0),
                           int(resolved.get("PSJOB_MAX_TRAINERS", "0") or 0))
            if not index.isdigit() or (trainers and int(index) >= trainers):
                raise ValueError(
                    f"JOB_COMPLETION_INDEX={index!r} is not a trainer id below "
                    f"{trainers} (PADDLE_TRAINERS, or PSJOB_MAX_TRAINERS in an elastic job)")
            resolved["PADDLE_TRAINER_ID"] = resolved["PSJOB_TRAINER_ID"] = index
        if not resolved.get("PADDLE_CURRENT_IP") and resolved.get("POD_IP"):
            resolved["PADDLE_CURRENT_IP"] = resolved["POD_IP"]
    return resolved


def _endpoints(env: Mapping[str, str], name: str) -> list[str]:
    endpoints = [e for e in env.get(name, "").split(",") if e]
    if not endpoints:
        raise ValueError(f"{name} is empty: cannot tell this process's endpoint")
    return endpoints


def _ordinal(hostname: str, service: str, count: int) -> int:
    short = hostname.split(".", 1)[0]
    match = _ORDINAL.match(short)
    if match is None or match.group("prefix") != service:
        raise ValueError(
            f"hostname {hostname!r} is not '{service}-<index>': a process with an 'auto' "
            f"index must run in the StatefulSet pod {service}-N, or be given its index")
    index = int(match.group("ordinal"))
    if index >= count:
        raise ValueError(f"hostname {hostname!r} has index {index} but the job has {count}")
    return index


# --- builders -------------------------------------------------------------------------

def kubernetes_topology(spec: "ParameterServerJob", namespace: str) -> JobTopology:
    """Topology of a job run by the operator: stable StatefulSet DNS names."""
    job = spec
    s = job.spec
    pservers = tuple(
        f"{kubernetes_host(pserver_service(job.name), namespace, i)}:{s.pserver.port}"
        for i in range(s.pserver.replicas))
    heter = ()
    if s.heter_worker is not None:
        heter = tuple(
            f"{kubernetes_host(heter_service(job.name), namespace, i)}:{s.heter_worker.port}"
            for i in range(s.heter_worker.replicas))
    return _topology(job, namespace, pservers, heter,
                     checkpoint_dir=(s.checkpoint.uri or KUBERNETES_CHECKPOINT_DIR) if s.checkpoint.enabled else "",
                     auth_token_file=KUBERNETES_AUTH_TOKEN_FILE,
                     metrics_port=s.metrics_port, trainer_host="", per_process=False)


def local_pserver_host(index: int) -> str:
    """Loopback address of local pserver `index` (127.0.0.1, 127.0.0.2, ...)."""
    if not 0 <= index < 254:
        raise ValueError(f"a local run supports at most 254 pservers, got index {index}")
    return f"127.0.0.{index + 1}"


def local_topology(spec: "ParameterServerJob", ports: Sequence[int], workdir: str | os.PathLike,
                   metrics_port: int = 0) -> JobTopology:
    """Topology of a job run on this machine by `psjob run`.

    `ports` lists one free port per pserver, then one per heter trainer.
    Pserver i listens on its own loopback address 127.0.0.(i+1), as
    `psjob launch` places them (`launcher.launch.loopback_endpoints`), so the
    ports may all be the same one and Fluid scripts that join
    PADDLE_PSERVER_IPS with PADDLE_PSERVER_PORT still find every pserver;
    heter trainers listen on 127.0.0.1.
    Checkpoints go to `<workdir>/checkpoints` (or `spec.checkpoint.uri`); the launcher writes the per-run
    auth token to `<workdir>/auth-token`. `metrics_port` 0 lets every process
    pick a free port; otherwise process n gets `metrics_port + n`.
    """
    job = spec
    s = job.spec
    heter_count = s.heter_worker.replicas if s.heter_worker is not None else 0
    if len(ports) != s.pserver.replicas + heter_count:
        raise ValueError(
            f"local_topology needs {s.pserver.replicas} pserver port(s) + {heter_count} heter "
            f"port(s), got {len(ports)}")
    n = s.pserver.replicas
    pservers = tuple(f"{local_pserver_host(i)}:{int(p)}" for i, p in enumerate(ports[:n]))
    heter = tuple(f"{LOCAL_HOST}:{int(p)}" for p in ports[n:])
    workdir = os.fspath(workdir)
    return _topology(job, job.namespace, pservers, heter,
                     checkpoint_dir=(s.checkpoint.uri or os.path.join(workdir, "checkpoints"))
                     if s.checkpoint.enabled else "",
                     auth_token_file=os.path.join(workdir, "auth-token"),
                     metrics_port=metrics_port, trainer_host=LOCAL_HOST, per_process=True)


def _topology(job: "ParameterServerJob", namespace: str, pservers: tuple[str, ...],
              heter: tuple[str, ...], *, checkpoint_dir: str, auth_token_file: str,
              metrics_port: int, trainer_host: str, per_process: bool) -> JobTopology:
    s = job.spec
    ckpt = s.checkpoint
    return JobTopology(
        job_name=job.name, namespace=namespace, pserver_endpoints=pservers,
        trainers=s.worker.replicas, heter_trainers=len(heter), mode=s.mode.value,
        k_steps=s.effective_k_steps, checkpoint_dir=checkpoint_dir, metrics_port=metrics_port,
        auth_token_file=auth_token_file, heter_endpoints=heter,
        checkpoint_interval_steps=ckpt.interval_steps or 0,
        checkpoint_interval_seconds=ckpt.interval_seconds or 0,
        checkpoint_keep=ckpt.keep,
        pserver_device=s.pserver.device.value, trainer_device=s.worker.device.value,
        heter_device=s.heter_worker.device.value if s.heter_worker else "gpu",
        trainer_host=trainer_host, metrics_port_per_process=per_process,
        max_trainers=s.worker.max_replicas or 0)


def topology_to_dict(topology: JobTopology) -> dict:
    """JSON-ready form (the operator ships it to pods in the job's ConfigMap)."""
    data = dataclasses.asdict(topology)
    data["pserver_endpoints"] = list(topology.pserver_endpoints)
    data["heter_endpoints"] = list(topology.heter_endpoints)
    return data


def topology_from_dict(data: Mapping) -> JobTopology:
    known = {f.name for f in dataclasses.fields(JobTopology)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"unknown JobTopology field(s): {', '.join(unknown)}")
    return JobTopology(**data)
