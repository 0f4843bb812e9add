"""The trainer's default RPC service: a gRPC client configured from the program and environment.

Created by Executor.service("rpc") the first time a trainer-side RPC op runs
(usually the `recv` ops of the trainer startup program), so a Fluid script
needs no set-up beyond transpiling:

- endpoints: every pserver named by the program's RPC ops, else
  PADDLE_PSERVER_ENDPOINTS;
- trainer id: the op's `trainer_id` attribute, else PADDLE_TRAINER_ID;
- auth token: PSJOB_AUTH_TOKEN_FILE;
- it waits (bounded by PSJOB_WAIT_SERVER_TIMEOUT, default 300 s) until every
  pserver serves, so trainers started before their pservers do not crash;
- async programs (send ops with `sync_mode` false, i.e. transpiled with
  sync_mode=False) get a Communicator around the client; PSJOB_MODE=half_async
  selects half-async.

`exe.close()` flushes, tells every pserver this trainer completed, and closes
the channels.

`trainer_service` is the one place a trainer's RPC service is built around its
client, by the job's mode: here, in the Fleet's init_worker and in a heter
trainer's sections.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..rpc.client import PSClient
from .auth import token_from_env
from .communicator import Communicator, CommunicatorConfig
from .geo import GeoCommunicator
from ..role_env import process_environment


@dataclass(frozen=True)
class GeoSettings:
    """What a geo trainer's GeoCommunicator needs besides its client."""
    scope: object
    overview: object          # the transpiler's VarsDistributed
    param_names: list
    trainers: int
    k_steps: int


def trainer_service(client: PSClient, mode: str, *, max_merge_var_num: int = CommunicatorConfig.max_merge_var_num,
                    send_queue_size: int = CommunicatorConfig.send_queue_size,
                    max_stale_steps: int | None = CommunicatorConfig.max_stale_steps,
                    predict_pulls: float | dict = CommunicatorConfig.predict_pulls, geo: GeoSettings | None = None):
    """The trainer's RPC service of `mode` around `client`: the client itself (sync), a
    Communicator (async, half_async) or a GeoCommunicator (geo, which needs `geo`)."""
    if mode in ("async", "half_async"):
        return Communicator(client, CommunicatorConfig(mode=mode, max_merge_var_num=max_merge_var_num,
                                                       send_queue_size=send_queue_size,
                                                       max_stale_steps=max_stale_steps,
                                                       predict_pulls=predict_pulls))
    if mode == "geo":
        if geo is None:
            raise ValueError("a geo trainer's service needs its GeoSettings")
        return GeoCommunicator(client, geo.scope, geo.overview, geo.param_names, geo.trainers, geo.k_steps)
    return client


def program_endpoints(program) -> list[str]:
    seen = []
    for block in program.blocks:
        for op in block.ops:
            for key in ("epmap", "endpoints"):
                for ep in op.attr(key) or []:
                    if ep not in seen:
                        seen.append(ep)
    return seen


def _is_async(program) -> bool:
    for op in program.global_block().ops:
        if op.type == "send":
            # The transpiler writes the seed's inverted flag: send.sync_mode = not sync_mode.
            return bool(op.attr("sync_mode", False))
    return False


_installed = None


def install(service) -> None:
    """Make `service` every Executor's RPC service in this process (the Fleet's
    init_worker does; its stop_worker completes and uninstalls it)."""
    global _installed
    _installed = service


def installed():
    """The service `install` made this process's, or None."""
    return _installed


def _wait_timeout_s(env) -> float:
    return float(env.get("PSJOB_WAIT_SERVER_TIMEOUT", "300") or 300)


def wait_for_pservers(endpoints, environ=None) -> None:
    """Block until every pserver serves (the transpiler's wait_port, a psjob.hooks hook);
    bounded by PSJOB_WAIT_SERVER_TIMEOUT (300 s), with this process's job token."""
    env = process_environment() if environ is None else environ
    client = PSClient(list(endpoints), auth_token=token_from_env(env), settings=env)
    try:
        client.wait_server_ready(timeout_s=_wait_timeout_s(env))
    finally:
        client.close()


def make_client(executor, op=None, environ=None):
    if _installed is not None:
        return _installed
    env = process_environment() if environ is None else environ
    program = op.block.program if op is not None else None
    endpoints = program_endpoints(program) if program is not None else []
    if not endpoints:
        endpoints = [e for e in env.get("PADDLE_PSERVER_ENDPOINTS", "").split(",") if e]
    if not endpoints:
        raise RuntimeError("no pserver endpoints: the program names none and PADDLE_PSERVER_ENDPOINTS is unset")
    trainer_id = op.attr("trainer_id") if op is not None and op.attr("trainer_id") is not None else None
    if trainer_id is None:
        trainer_id = int(env.get("PADDLE_TRAINER_ID", "0") or 0)
    client = PSClient(endpoints, int(trainer_id), auth_token=token_from_env(env), settings=env)
    client.wait_server_ready(timeout_s=_wait_timeout_s(env))
    mode = env.get("PSJOB_MODE", "")
    if (program is not None and _is_async(program)) or mode in ("async", "half_async"):
        service = trainer_service(client, "half_async" if mode == "half_async" else "async")
    else:
        service = client

    def close():
        try:
            service.complete()
        finally:
            client.close()
    executor.add_close_hook(close)
    return service
