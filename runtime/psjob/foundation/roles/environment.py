"""Rendering a process's environment from the topology (role_environment), in Fluid's
names and Paddle 2.x's."""
from __future__ import annotations

from collections.abc import Mapping

from psjob.foundation.roles.identity import _server_identity
from psjob.foundation.roles.names import AUTO, HETER_TRAINER, PSERVER, ROLES, TRAINER
from psjob.foundation.roles.topology import JobTopology, split_endpoint


def role_environment(topology: JobTopology, role: str, index: int | None) -> dict[str, str]:
    """Environment variables of one process of the job.

    `index` is the pserver index, trainer id or heter trainer index, or None
    when it is only known once the process runs (see module docstring).
    """
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")
    if topology.collective and role != TRAINER:
        raise ValueError(f"a collective job has trainers only, no {role}")
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
        if topology.collective and index is not None:
            env["PADDLE_CURRENT_ENDPOINT"] = topology.trainer_endpoints[index]
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
    if topology.collective:  # Paddle's collective launcher: the trainers' ring endpoints
        del env["PADDLE_PSERVERS_IP_PORT_LIST"]
        env["PADDLE_TRAINER_ENDPOINTS"] = ",".join(topology.trainer_endpoints)
        return env
    if role == PSERVER:
        env["PADDLE_PORT"] = str(split_endpoint(topology.pserver_endpoints[index or 0])[1])
    if topology.trainer_host and index is not None and fluid_env.get("PADDLE_CURRENT_IP"):
        env["POD_IP"] = fluid_env["PADDLE_CURRENT_IP"]  # a local run's; a pod's is its own
    if topology.trainer_host and topology.metrics_port_per_process and topology.metrics_port:
        env["PADDLE_TRAINER_ENDPOINTS"] = ",".join(
            f"{topology.trainer_host}:{topology.metrics_port + _process_slot(topology, TRAINER, t)}"
            for t in range(topology.max_trainers or topology.trainers))
    return env


def collective_launch_environment(job_name: str, index: int, ring: list[str], auth_token_file: str,
                                  metrics_port: int | None = None) -> dict[str, str]:
    """The environment of collective trainer `index` of a ring `ring` ("host:port" per trainer)
    as Paddle's collective launcher sets it (paddle.distributed.launch): PADDLE_TRAINER_ID,
    PADDLE_TRAINERS_NUM, PADDLE_TRAINER_ENDPOINTS, PADDLE_CURRENT_ENDPOINT, the gloo backend;
    and psjob's job name, token file and, when given, /metrics port (`psjob launch --gpus`)."""
    n = len(ring)
    env = {"PADDLE_TRAINING_ROLE": TRAINER, "TRAINING_ROLE": TRAINER,
           "PADDLE_TRAINER_ID": str(index), "PSJOB_TRAINER_ID": str(index), "PADDLE_TRAINERS_NUM": str(n),
           "PADDLE_TRAINERS": str(n), "PADDLE_TRAINER_ENDPOINTS": ",".join(ring),
           "PADDLE_CURRENT_ENDPOINT": ring[index], "PSJOB_JOB_NAME": job_name,
           "PSJOB_AUTH_TOKEN_FILE": auth_token_file, "PADDLE_DISTRI_BACKEND": "gloo"}
    if metrics_port is not None:
        env["PSJOB_METRICS_PORT"] = str(metrics_port)
    return env


def job_environment(topology: JobTopology, role: str) -> dict[str, str]:
    """The job-wide variables a process of `role` gets (role_environment less the
    per-process identity): what PSJOB_TOPOLOGY_FILE stands for."""
    return _common_environment(topology, role)


def _common_environment(topology: JobTopology, role: str) -> dict[str, str]:
    hosts = [split_endpoint(e)[0] for e in topology.pserver_endpoints]
    env = {"PADDLE_TRAINING_ROLE": role}
    if not topology.collective:  # a collective job has no pservers
        env.update({"PADDLE_PSERVER_IPS": ",".join(hosts),
                    "PADDLE_PSERVER_PORT": _trainer_side_port(topology),
                    "PADDLE_PSERVER_ENDPOINTS": ",".join(topology.pserver_endpoints)})
    env.update({
        "PADDLE_TRAINERS": str(topology.max_trainers or topology.trainers),
        "PSJOB_JOB_NAME": topology.job_name,
        "PSJOB_NAMESPACE": topology.namespace,
        "PSJOB_PSERVERS": str(topology.pservers),
        "PSJOB_HETER_TRAINERS": str(topology.heter_trainers),
        "PSJOB_MODE": topology.mode.value,  # a plain str: pod specs and child environments
        "PSJOB_K_STEPS": str(topology.k_steps),
        "PSJOB_CHECKPOINT_DIR": topology.checkpoint_dir,
        "PSJOB_CHECKPOINT_INTERVAL_STEPS": str(topology.checkpoint_interval_steps),
        "PSJOB_CHECKPOINT_INTERVAL_SECONDS": str(topology.checkpoint_interval_seconds),
        "PSJOB_CHECKPOINT_KEEP": str(topology.checkpoint_keep),
        "PSJOB_CHECKPOINT_INCREMENTAL": "1" if topology.checkpoint_incremental else "0",
        "PSJOB_CHECKPOINT_BASE_EVERY": str(topology.checkpoint_base_every),
        "PSJOB_METRICS_PORT": str(topology.metrics_port),
        "PSJOB_AUTH_TOKEN_FILE": topology.auth_token_file,
        "PSJOB_DEVICE": {PSERVER: topology.pserver_device, TRAINER: topology.trainer_device,
                         HETER_TRAINER: topology.heter_device}[role],
    })
    if topology.max_trainers:
        env["PSJOB_MAX_TRAINERS"] = str(topology.max_trainers)
    if topology.data_stream:
        env["PSJOB_DATA_STREAM"] = topology.data_stream
    if topology.heter_endpoints:
        env["PADDLE_HETER_TRAINER_IP_PORT_LIST"] = ",".join(topology.heter_endpoints)
    return env


def _trainer_side_port(topology: JobTopology) -> str:
    # Fluid scripts build endpoints from PADDLE_PSERVER_IPS + PADDLE_PSERVER_PORT,
    # which only works when every pserver listens on the same port (Kubernetes).
    # Local runs keep that by giving each pserver its own loopback address
    # (local_pserver_host); PADDLE_PSERVER_ENDPOINTS stays authoritative.
    return str(split_endpoint(topology.pserver_endpoints[0])[1])


def _process_slot(topology: JobTopology, role: str, index: int) -> int:
    if role == PSERVER:
        return index
    if role == HETER_TRAINER:
        return topology.pservers + index
    return topology.pservers + topology.heter_trainers + index
