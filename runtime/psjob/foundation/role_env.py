"""RoleEnv: who this process is in its job, read once from the environment.

A process of a job learns its role from the variables psjob.foundation.roles renders
(Paddle's PADDLE_* names and psjob's PSJOB_*). `RoleEnv.from_environ` reads
them once, at process start — completing what a pod learns only at run time
(roles.resolve_identity: a StatefulSet pserver's index from its hostname, an
Indexed-Job trainer's id from JOB_COMPLETION_INDEX) — checks them, and gives a
typed, immutable object that is passed down: the container entrypoints build
one and hand it to the built-in job and its role maker, so the identity is not
resolved twice.

Every problem is a RoleEnvError naming the variable and what it should hold.
Stdlib only, like psjob.foundation.roles.

With psjob.foundation.settings, this module owns the environment contract: only they
read the process environment (tests/unit/test_environment_reads.py checks it). A RoleEnv
keeps the environment it was built from as `environ` and its parsed settings (RPC, TLS,
checkpoints, metrics, serving: psjob.foundation.settings.Settings) as `settings`, so
whoever holds one passes `role_env.settings` down instead of reading again.
"""
from __future__ import annotations

import json
import socket
import types
from collections.abc import Mapping
from dataclasses import dataclass, field

# Names, not `from . import roles`: this module is imported while the package root is still
# loading (checkpoint.s3client), where `from . import` would reach psjob.__getattr__.
from psjob.foundation.roles import (
    AUTO,
    COLLECTIVE,
    DEFAULT_PSERVER_PORT,
    HETER_TRAINER,
    PSERVER,
    ROLES,
    TRAINER,
    Mode,
    fluid_environment,
    job_environment,
    resolve_identity,
    split_endpoint,
    topology_from_dict,
)
from psjob.foundation.settings import Settings, SettingsError, parse_mode, process_environment

__all__ = ["CollectiveEnv", "RoleEnv", "RoleEnvError", "names_no_job", "process_environment"]

# What a launcher sets (Paddle 2.x's names, then the Fluid ones psjob's launchers also set):
# an environment with none of them belongs to a process started by hand.
_JOB_NAMES = ("TRAINING_ROLE", "PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_TRAINING_ROLE",
              "PADDLE_PSERVER_ENDPOINTS", "PADDLE_PSERVER_IPS")


def names_no_job(environ: Mapping[str, str] | None = None) -> bool:
    """Whether `environ` (this process's by default) names neither a role nor pservers, in
    Paddle 2.x's names or Fluid's: a script run without a launcher, which Paddle 2.x's
    PaddleCloudRoleMaker runs as a single, non-distributed worker (RoleEnv.non_distributed)."""
    env = process_environment() if environ is None else environ
    return not any(env.get(name) for name in _JOB_NAMES)


class RoleEnvError(ValueError):
    """The role environment is incomplete or contradicts itself; the message names the variable."""


@dataclass(frozen=True)
class RoleEnv:
    """This process's role. `index` is the pserver index, the trainer id or the heter trainer id;
    None for a trainer whose id is "auto" (it registers with pserver 0 for one)."""

    role: str
    pserver_endpoints: tuple[str, ...]
    trainers: int
    index: int | None
    current_endpoint: str = ""   # a pserver's or heter trainer's own "host:port"
    heter_endpoints: tuple[str, ...] = ()
    trainer_endpoints: tuple[str, ...] = ()  # PADDLE_TRAINER_ENDPOINTS: trainer t named by its /metrics port
    heter_trainers: int = 0
    job_name: str = ""
    mode: Mode = Mode.SYNC
    k_steps: int = 0
    device: str = "cpu"
    checkpoint_dir: str = ""
    auth_token_file: str = ""
    # The environment this role was read from, completed (resolve_identity), and the
    # settings parsed from it that every component of the process reads (checkpoints,
    # RPC, TLS, metrics, serving): built once here, passed down.
    environ: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    settings: Settings = field(default_factory=Settings, compare=False, repr=False)
    # Elastic jobs (PSJOB_MAX_TRAINERS): the most trainers at once, which the programs are
    # transpiled for; trainer ids run below it. 0: the trainer count is fixed.
    max_trainers: int = 0
    # A trainer's id came from the environment (PADDLE_TRAINER_ID or PSJOB_TRAINER_ID); without
    # one a trainer is trainer 0, as Fluid 1.x's role makers had it (Paddle 2.x's refuses it).
    trainer_id_named: bool = True

    @property
    def is_pserver(self) -> bool:
        return self.role == PSERVER

    @property
    def is_trainer(self) -> bool:
        return self.role == TRAINER

    @property
    def is_heter_trainer(self) -> bool:
        return self.role == HETER_TRAINER

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None, hostname: str | None = None) -> RoleEnv:
        """Read, complete and check the role environment (os.environ and this host by default)."""
        env = dict(process_environment() if environ is None else environ)
        try:
            # Paddle 2.x launcher names (TRAINING_ROLE, PADDLE_PSERVERS_IP_PORT_LIST, ...) where
            # only those are set; then what only the running process can tell.
            env = fluid_environment(env)
            env = _with_topology_file(env)
            env = resolve_identity(env, socket.gethostname() if hostname is None else hostname)
        except ValueError as exc:
            raise RoleEnvError(str(exc)) from None
        role = env["PADDLE_TRAINING_ROLE"]
        try:
            mode = parse_mode(env.get("PSJOB_MODE", ""))
        except SettingsError as exc:
            raise RoleEnvError(str(exc)) from None
        pservers = [] if mode is COLLECTIVE else _pserver_endpoints(env)
        heter = _endpoint_list(env, "PADDLE_HETER_TRAINER_IP_PORT_LIST")
        trainer_endpoints = _endpoint_list(env, "PADDLE_TRAINER_ENDPOINTS")
        trainers = _int(env, "PADDLE_TRAINERS", 1, minimum=1)
        max_trainers = _int(env, "PSJOB_MAX_TRAINERS", 0, minimum=0)
        if max_trainers and max_trainers < trainers:
            raise RoleEnvError(f"PSJOB_MAX_TRAINERS={max_trainers} is below PADDLE_TRAINERS={trainers}")
        current, index = "", None
        if role == PSERVER:
            current = env.get("PSJOB_CURRENT_ENDPOINT") or (
                f"{env.get('PADDLE_CURRENT_IP', '')}:{env.get('PADDLE_PSERVER_PORT', '')}")
            if current not in pservers:
                raise RoleEnvError(f"this pserver's endpoint {current} is not in PADDLE_PSERVER_ENDPOINTS "
                                   f"({', '.join(pservers)})")
            index = pservers.index(current)
        elif role == HETER_TRAINER:
            index = _int(env, "PSJOB_HETER_TRAINER_ID", 0, minimum=0)
            if heter and index >= len(heter):
                raise RoleEnvError(f"PSJOB_HETER_TRAINER_ID {index} out of range "
                                   f"(PADDLE_HETER_TRAINER_IP_PORT_LIST has {len(heter)})")
            current = env.get("PSJOB_CURRENT_ENDPOINT", "") or (heter[index] if heter else "")
        else:
            name = "PADDLE_TRAINER_ID" if "PADDLE_TRAINER_ID" in env else "PSJOB_TRAINER_ID"
            if env.get(name, "0") != AUTO:
                index = _int(env, name, 0, minimum=0)
                if index >= max(trainers, max_trainers):
                    raise RoleEnvError(f"PADDLE_TRAINER_ID {index} out of range (PADDLE_TRAINERS={trainers}"
                                       + (f", PSJOB_MAX_TRAINERS={max_trainers})" if max_trainers else ")"))
        return cls(role=role, pserver_endpoints=tuple(pservers), trainers=trainers, index=index,
                   trainer_id_named=role != TRAINER or any(n in env for n in ("PADDLE_TRAINER_ID", "PSJOB_TRAINER_ID")),
                   current_endpoint=current, heter_endpoints=tuple(heter),
                   trainer_endpoints=tuple(trainer_endpoints),
                   heter_trainers=_int(env, "PSJOB_HETER_TRAINERS", 0, minimum=0),
                   job_name=env.get("PSJOB_JOB_NAME", ""), mode=mode,
                   k_steps=_int(env, "PSJOB_K_STEPS", 0, minimum=0),
                   device=env.get("PSJOB_DEVICE", "") or ("gpu" if role == HETER_TRAINER else "cpu"),
                   checkpoint_dir=env.get("PSJOB_CHECKPOINT_DIR", ""),
                   auth_token_file=env.get("PSJOB_AUTH_TOKEN_FILE", ""), max_trainers=max_trainers,
                   environ=types.MappingProxyType(env), settings=Settings(env))

    @classmethod
    def non_distributed(cls, environ: Mapping[str, str] | None = None) -> RoleEnv:
        """The role of a process no launcher started (names_no_job): the single trainer of a job
        without pservers, as Paddle 2.x's PaddleCloudRoleMaker falls back to when
        PADDLE_PSERVERS_IP_PORT_LIST is unset. Its settings are the environment's."""
        env = dict(process_environment() if environ is None else environ)
        return cls(role=TRAINER, pserver_endpoints=(), trainers=1, index=0,
                   environ=types.MappingProxyType(env), settings=Settings(env))

    @classmethod
    def for_command(cls, role: str, prog: str, environ: Mapping[str, str],
                    hostname: str | None = None) -> tuple[RoleEnv, bool]:
        """The RoleEnv of a built-in job's process started as `prog` for `role` (the container
        entrypoints), and whether a pserver took its index from its hostname. What the command
        implies goes into the environment first: PADDLE_TRAINING_ROLE when unset, PSJOB_BIND_ALL
        for a pserver in a pod. A RoleEnvError names a contradiction with the command."""
        env = dict(environ)
        given = env.get("PADDLE_TRAINING_ROLE", "")
        if not given:
            if not (env.get("PADDLE_PSERVER_ENDPOINTS") or env.get("PADDLE_PSERVER_IPS")):
                raise RoleEnvError(
                    f"{prog} reads its job from the environment (PADDLE_TRAINING_ROLE, "
                    "PADDLE_PSERVER_ENDPOINTS, PADDLE_TRAINERS, ...), and none is set: start it with "
                    "`psjob run JOB.yaml` or through the operator")
            env["PADDLE_TRAINING_ROLE"] = role
        elif given != role:
            expected = {PSERVER: "psjob pserver", TRAINER: "psjob worker",
                        HETER_TRAINER: "psjob heter-worker"}.get(given, "a matching command")
            raise RoleEnvError(f"started with PADDLE_TRAINING_ROLE={given}: run {expected} "
                               f"for that role (or fix the role variable)")
        if env.get("PSJOB_MODE") == COLLECTIVE:
            raise RoleEnvError(f"{prog} is the built-in parameter-server job; a collective job "
                               "(PSJOB_MODE=collective: no pservers) runs its own training script: "
                               "set spec.command to it (docs/user/collective.md)")
        from_hostname = role == PSERVER and env.get("PSJOB_PSERVER_INDEX", AUTO) == AUTO
        if role == PSERVER and (from_hostname or env.get("KUBERNETES_SERVICE_HOST")) \
                and "PSJOB_BIND_ALL" not in env:
            # In a pod: bind 0.0.0.0:<port> (ServeOptions.bind_all_interfaces).
            env["PSJOB_BIND_ALL"] = "1"
        return cls.from_environ(env, hostname), from_hostname


def _with_topology_file(env: dict[str, str]) -> dict[str, str]:
    """`env` completed from PSJOB_TOPOLOGY_FILE, the job's topology as JSON (the operator's
    ConfigMap, `psjob run`'s workdir): the job-wide variables the environment does not set
    come from it; a variable the environment sets wins (it is what the pod was started with)."""
    path = env.get("PSJOB_TOPOLOGY_FILE", "")
    role = env.get("PADDLE_TRAINING_ROLE", "")
    if not path or role not in ROLES:
        return env  # no file, or no role to render for: the role check below names the problem
    try:
        with open(path) as f:
            topology = topology_from_dict(json.load(f))
    except OSError as exc:
        raise RoleEnvError(f"PSJOB_TOPOLOGY_FILE {path}: cannot read it ({exc.strerror})") from None
    except (ValueError, TypeError) as exc:
        raise RoleEnvError(f"PSJOB_TOPOLOGY_FILE {path}: not a job topology ({exc})") from None
    return {**job_environment(topology, role), **env}


def _pserver_endpoints(env: Mapping[str, str]) -> list[str]:
    endpoints = _endpoint_list(env, "PADDLE_PSERVER_ENDPOINTS")
    if not endpoints:
        ips = [ip for ip in env.get("PADDLE_PSERVER_IPS", "").split(",") if ip]
        port = env.get("PADDLE_PSERVER_PORT", "") or str(DEFAULT_PSERVER_PORT)
        endpoints = [f"{ip}:{port}" for ip in ips]
        for ep in endpoints:
            _check_endpoint(ep, "PADDLE_PSERVER_IPS/PADDLE_PSERVER_PORT")
    if not endpoints:
        raise RoleEnvError("no pservers: set PADDLE_PSERVER_ENDPOINTS (or PADDLE_PSERVER_IPS and "
                           "PADDLE_PSERVER_PORT)")
    return endpoints


def _endpoint_list(env: Mapping[str, str], name: str) -> list[str]:
    endpoints = [e for e in env.get(name, "").split(",") if e]
    for ep in endpoints:
        _check_endpoint(ep, name)
    return endpoints


def _check_endpoint(endpoint: str, name: str) -> None:
    try:
        split_endpoint(endpoint, what=f"{name} entry")
    except ValueError as exc:
        raise RoleEnvError(str(exc)) from None


def _int(env: Mapping[str, str], name: str, default: int, *, minimum: int) -> int:
    raw = env.get(name, "")
    if raw in ("", None):
        return default
    try:
        value = int(raw)
    except ValueError:
        raise RoleEnvError(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise RoleEnvError(f"{name} must be at least {minimum}, got {value}")
    return value


@dataclass(frozen=True)
class CollectiveEnv:
    """A collective (NCCL2-mode) trainer's place: Paddle's launcher variables
    PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM, PADDLE_TRAINER_ENDPOINTS and
    PADDLE_CURRENT_ENDPOINT (docs/user/collective.md). `endpoints` is empty outside a collective job."""

    rank: int
    world_size: int
    endpoints: tuple[str, ...]
    current_endpoint: str
    auth_token_file: str = ""

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> CollectiveEnv:
        env = process_environment() if environ is None else environ
        endpoints = tuple(_endpoint_list(env, "PADDLE_TRAINER_ENDPOINTS"))
        current = env.get("PADDLE_CURRENT_ENDPOINT", "")
        if "PADDLE_TRAINER_ID" in env:
            rank = _int(env, "PADDLE_TRAINER_ID", 0, minimum=0)
        else:
            rank = endpoints.index(current) if current in endpoints else 0
        size = _int(env, "PADDLE_TRAINERS_NUM", 0, minimum=1) or len(endpoints) or 1
        if endpoints and size != len(endpoints):
            raise RoleEnvError(f"PADDLE_TRAINERS_NUM={size} but PADDLE_TRAINER_ENDPOINTS lists "
                               f"{len(endpoints)} trainers")
        if rank >= size:
            raise RoleEnvError(f"PADDLE_TRAINER_ID {rank} out of range (PADDLE_TRAINERS_NUM={size})")
        if endpoints and current and endpoints[rank] != current:
            raise RoleEnvError(f"PADDLE_CURRENT_ENDPOINT {current} is not entry {rank} of "
                               f"PADDLE_TRAINER_ENDPOINTS ({', '.join(endpoints)})")
        return cls(rank, size, endpoints, current or (endpoints[rank] if endpoints else ""),
                   env.get("PSJOB_AUTH_TOKEN_FILE", ""))
