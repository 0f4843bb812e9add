"""JobTopology: where every process of a job is, built from a ParameterServerJob for
Kubernetes (kubernetes_topology) or this machine (local_topology), and its JSON form."""
from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from psjob.foundation.roles.names import (
    DEFAULT_METRICS_PORT,
    DEFAULT_TRAINER_PORT,
    DEVICES,
    KUBERNETES_AUTH_TOKEN_FILE,
    KUBERNETES_CHECKPOINT_DIR,
    LOCAL_HOST,
    Mode,
)

# The topology builders take a psjob.foundation.jobspec.ParameterServerJob. They read its
# fields and do not import it: jobspec imports this module's defaults (ports,
# the reserved variables), so roles stays below jobspec.


def pserver_service(job_name: str) -> str:
    """Name of the StatefulSet and of its headless Service."""
    return f"{job_name}-pserver"


def heter_service(job_name: str) -> str:
    return f"{job_name}-heter"


def trainer_service(job_name: str) -> str:
    """Name of the trainers' Indexed Job and, in a collective job, of its headless Service
    (the pods' subdomain): trainer i is <job>-worker-i.<job>-worker.<ns>.svc."""
    return f"{job_name}-worker"


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
    "any free port". A collective job (mode "collective") has no pservers:
    `trainer_endpoints[t]` is trainer t's ring "host:port".
    """
    job_name: str
    namespace: str
    pserver_endpoints: tuple[str, ...]
    trainers: int
    heter_trainers: int = 0
    mode: Mode = Mode.SYNC
    k_steps: int = 0
    checkpoint_dir: str = ""
    metrics_port: int = DEFAULT_METRICS_PORT
    auth_token_file: str = ""
    heter_endpoints: tuple[str, ...] = ()
    checkpoint_interval_steps: int = 0
    checkpoint_interval_seconds: int = 0
    checkpoint_keep: int = 0
    checkpoint_incremental: bool = False   # deltas between bases (docs/user/checkpoints.md)
    checkpoint_base_every: int = 10        # every N-th checkpoint a base
    pserver_device: str = "cpu"
    trainer_device: str = "cpu"
    heter_device: str = "gpu"
    trainer_host: str = ""
    metrics_port_per_process: bool = False
    # Elastic jobs: the most trainers at once (PSJOB_MAX_TRAINERS, and PADDLE_TRAINERS too, so
    # that no process's environment changes when `trainers` does); 0: a fixed trainer count.
    max_trainers: int = 0
    trainer_endpoints: tuple[str, ...] = ()
    # A stream job's spec.data.stream as JSON (PSJOB_DATA_STREAM, psjob.training.stream); "": none.
    data_stream: str = ""

    def __post_init__(self) -> None:
        # Normalise lists given by callers into tuples so the object stays hashable.
        object.__setattr__(self, "pserver_endpoints", tuple(self.pserver_endpoints))
        object.__setattr__(self, "heter_endpoints", tuple(self.heter_endpoints))
        object.__setattr__(self, "trainer_endpoints", tuple(self.trainer_endpoints))
        if not self.job_name:
            raise ValueError("JobTopology.job_name must not be empty")
        try:
            object.__setattr__(self, "mode", Mode(self.mode))  # a name (topology files, callers) or a Mode
        except ValueError:
            raise ValueError(f"JobTopology.mode must be one of {tuple(m.value for m in Mode)}, "
                             f"got {self.mode!r}") from None
        if self.mode is Mode.COLLECTIVE:
            self._check_collective()
        elif not self.pserver_endpoints:
            raise ValueError("JobTopology.pserver_endpoints must list at least one pserver")
        elif self.trainer_endpoints:
            raise ValueError("JobTopology.trainer_endpoints is for a collective job (mode collective)")
        for endpoint in self.pserver_endpoints + self.heter_endpoints + self.trainer_endpoints:
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
        if self.mode == Mode.GEO and self.k_steps < 1:
            raise ValueError("JobTopology.k_steps must be >= 1 in geo mode")
        for device in (self.pserver_device, self.trainer_device, self.heter_device):
            if device not in DEVICES:
                raise ValueError(f"JobTopology devices must be one of {DEVICES}, got {device!r}")
        if not 0 <= self.metrics_port <= 65535:
            raise ValueError(f"JobTopology.metrics_port out of range: {self.metrics_port}")

    def _check_collective(self) -> None:
        if self.pserver_endpoints or self.heter_endpoints or self.max_trainers:
            raise ValueError("a collective JobTopology has no pservers, heter trainers or elastic "
                             "trainers")
        if len(self.trainer_endpoints) != self.trainers:
            raise ValueError(f"a collective JobTopology needs one trainer endpoint per trainer: "
                             f"trainers={self.trainers}, {len(self.trainer_endpoints)} listed")

    @property
    def pservers(self) -> int:
        return len(self.pserver_endpoints)

    @property
    def collective(self) -> bool:
        return self.mode is Mode.COLLECTIVE


def split_endpoint(endpoint: str, *, what: str = "endpoint", host_optional: bool = False) -> tuple[str, int]:
    """'host:port' → (host, port), with a clear error naming `what` for anything else: the one
    parser of endpoints. `host_optional` accepts ':port' (a server's "every interface"), host ''."""
    host, sep, port = str(endpoint).rpartition(":")
    if not sep or not (host or host_optional) or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{what} {endpoint!r} is not 'host:port' with a port in 1..65535")
    return host, int(port)


# --- builders -------------------------------------------------------------------------

def kubernetes_topology(spec: ParameterServerJob, namespace: str) -> JobTopology:
    """Topology of a job run by the operator: stable StatefulSet DNS names."""
    job = spec
    s = job.spec
    if s.mode is Mode.COLLECTIVE:  # trainer i: the Indexed Job's pod i behind its headless Service
        port = s.worker.port or DEFAULT_TRAINER_PORT
        ring = tuple(f"{kubernetes_host(trainer_service(job.name), namespace, i)}:{port}"
                     for i in range(s.worker.replicas))
        return _topology(job, namespace, (), (), trainer_endpoints=ring,
                         checkpoint_dir=(s.checkpoint.uri or KUBERNETES_CHECKPOINT_DIR)
                         if s.checkpoint.enabled else "", auth_token_file=KUBERNETES_AUTH_TOKEN_FILE,
                         metrics_port=s.metrics_port, trainer_host="", per_process=False)
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


def local_topology(spec: ParameterServerJob, ports: Sequence[int], workdir: str | os.PathLike,
                   metrics_port: int = 0) -> JobTopology:
    """Topology of a job run on this machine by `psjob run`.

    `ports` lists one free port per pserver, then one per heter trainer; for a
    collective job, one per trainer (its ring port on 127.0.0.1).
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
    workdir = os.fspath(workdir)
    common = dict(checkpoint_dir=(s.checkpoint.uri or os.path.join(workdir, "checkpoints"))
                  if s.checkpoint.enabled else "", auth_token_file=os.path.join(workdir, "auth-token"),
                  metrics_port=metrics_port, trainer_host=LOCAL_HOST, per_process=True)
    if s.mode is Mode.COLLECTIVE:
        if len(ports) != s.worker.replicas:
            raise ValueError(f"local_topology needs {s.worker.replicas} trainer ring port(s), got {len(ports)}")
        return _topology(job, job.namespace, (), (),
                         trainer_endpoints=tuple(f"{LOCAL_HOST}:{int(p)}" for p in ports), **common)
    heter_count = s.heter_worker.replicas if s.heter_worker is not None else 0
    if len(ports) != s.pserver.replicas + heter_count:
        raise ValueError(
            f"local_topology needs {s.pserver.replicas} pserver port(s) + {heter_count} heter "
            f"port(s), got {len(ports)}")
    n = s.pserver.replicas
    pservers = tuple(f"{local_pserver_host(i)}:{int(p)}" for i, p in enumerate(ports[:n]))
    heter = tuple(f"{LOCAL_HOST}:{int(p)}" for p in ports[n:])
    return _topology(job, job.namespace, pservers, heter, **common)


def _topology(job: ParameterServerJob, namespace: str, pservers: tuple[str, ...],
              heter: tuple[str, ...], *, checkpoint_dir: str, auth_token_file: str,
              metrics_port: int, trainer_host: str, per_process: bool,
              trainer_endpoints: tuple[str, ...] = ()) -> JobTopology:
    s = job.spec
    ckpt = s.checkpoint
    return JobTopology(
        job_name=job.name, namespace=namespace, pserver_endpoints=pservers,
        trainers=s.worker.replicas, heter_trainers=len(heter), mode=s.mode,
        k_steps=s.effective_k_steps, checkpoint_dir=checkpoint_dir, metrics_port=metrics_port,
        auth_token_file=auth_token_file, heter_endpoints=heter,
        checkpoint_interval_steps=ckpt.interval_steps or 0,
        checkpoint_interval_seconds=ckpt.interval_seconds or 0,
        checkpoint_keep=ckpt.keep,
        checkpoint_incremental=ckpt.incremental.enabled,
        checkpoint_base_every=ckpt.incremental.base_every,
        pserver_device=s.pserver.device.value, trainer_device=s.worker.device.value,
        heter_device=s.heter_worker.device.value if s.heter_worker else "gpu",
        trainer_host=trainer_host, metrics_port_per_process=per_process,
        max_trainers=s.worker.max_replicas or 0, trainer_endpoints=trainer_endpoints,
        data_stream=_stream_json(s))


def _stream_json(s) -> str:
    stream = s.data.stream
    if stream is None:
        return ""
    doc = {"root": stream.root, "layout": stream.layout, "doneFile": stream.done_file,
           "pollSeconds": stream.poll_seconds}
    if stream.start:
        doc["start"] = stream.start
    return json.dumps(doc, sort_keys=True)


def topology_to_dict(topology: JobTopology) -> dict:
    """JSON-ready form (the operator ships it to pods in the job's ConfigMap)."""
    data = dataclasses.asdict(topology)
    data["mode"] = topology.mode.value
    data["pserver_endpoints"] = list(topology.pserver_endpoints)
    data["heter_endpoints"] = list(topology.heter_endpoints)
    if topology.trainer_endpoints:
        data["trainer_endpoints"] = list(topology.trainer_endpoints)
    else:  # a parameter-server job's topology reads as it did before collective jobs
        del data["trainer_endpoints"]
    return data


def topology_from_dict(data: Mapping) -> JobTopology:
    known = {f.name for f in dataclasses.fields(JobTopology)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"unknown JobTopology field(s): {', '.join(unknown)}")
    return JobTopology(**data)
