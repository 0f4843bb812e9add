"""Identity at run time: what a process learns only once it runs (resolve_identity): a
StatefulSet pserver's index from its hostname, an Indexed-Job trainer's id; and the Fluid
names of a Paddle 2.x launcher's variables (fluid_environment)."""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from psjob.foundation.roles.names import (
    AUTO,
    COLLECTIVE,
    HETER_TRAINER,
    PSERVER,
    ROLES,
    STAY_UNTIL_STOPPED_ENV,
    TRAINER,
)
from psjob.foundation.roles.topology import heter_service, pserver_service, split_endpoint

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


def _server_identity(endpoints: Sequence[str], index: int, index_var: str) -> dict[str, str]:
    host, port = split_endpoint(endpoints[index])
    return {
        "PADDLE_CURRENT_IP": host,
        "PADDLE_PSERVER_PORT": str(port),
        "PSJOB_CURRENT_ENDPOINT": endpoints[index],
        index_var: str(index),
    }


_ORDINAL = re.compile(r"^(?P<prefix>.+)-(?P<ordinal>\d+)$")


def resolve_identity(env: Mapping[str, str], hostname: str) -> dict[str, str]:
    """Fill in what a process learns only at run time; returns a new dict.

    - PSERVER / HETER_TRAINER with index "auto": the index is the ordinal of
      the StatefulSet pod name (`<job>-pserver-<i>`, `<job>-heter-<i>`);
      sets PADDLE_CURRENT_IP, PADDLE_PSERVER_PORT (PADDLE_PORT for heter
      trainers), PSJOB_CURRENT_ENDPOINT and the index variable, and (unless
      set) PSJOB_STAY_UNTIL_STOPPED=1: the pod restarts a server that exits,
      so once the job is done it waits for the scale-down instead.
    - TRAINER with PSJOB_TRAINER_ID "auto": JOB_COMPLETION_INDEX (set by
      Kubernetes in Indexed Job pods) becomes the trainer id; without it the
      id stays "auto" for the runtime's rendezvous with pserver 0.
    - PADDLE_CURRENT_IP of trainers defaults to POD_IP when that is set; a collective
      trainer's PADDLE_CURRENT_ENDPOINT is its entry of PADDLE_TRAINER_ENDPOINTS.

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
        resolved.setdefault(STAY_UNTIL_STOPPED_ENV, "1")
    elif role == HETER_TRAINER and resolved.get("PSJOB_HETER_TRAINER_ID", AUTO) == AUTO:
        endpoints = _endpoints(resolved, "PADDLE_HETER_TRAINER_IP_PORT_LIST")
        index = _ordinal(hostname, heter_service(job), len(endpoints))
        identity = _server_identity(endpoints, index, "PSJOB_HETER_TRAINER_ID")
        identity["PADDLE_PORT"] = identity.pop("PADDLE_PSERVER_PORT")
        resolved.update(identity)
        resolved.setdefault(STAY_UNTIL_STOPPED_ENV, "1")
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
        ring = [e for e in resolved.get("PADDLE_TRAINER_ENDPOINTS", "").split(",") if e]
        trainer_id = resolved.get("PADDLE_TRAINER_ID", "")
        if (resolved.get("PSJOB_MODE") == COLLECTIVE and not resolved.get("PADDLE_CURRENT_ENDPOINT")
                and trainer_id.isdigit() and int(trainer_id) < len(ring)):
            resolved["PADDLE_CURRENT_ENDPOINT"] = ring[int(trainer_id)]  # its place in the ring
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
