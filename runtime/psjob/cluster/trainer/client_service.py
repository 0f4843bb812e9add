"""The trainer's default RPC service: a gRPC client configured from the program and environment.

Created by Executor.service("rpc") the first time a trainer-side RPC op runs
(usually the `recv` ops of the trainer startup program), so a Fluid script
needs no set-up beyond transpiling:

- endpoints: every pserver named by the program's RPC ops, else
  PADDLE_PSERVER_ENDPOINTS;
- trainer id: the op's `trainer_id` attribute, else PADDLE_TRAINER_ID;
- auth token: PSJOB_AUTH_TOKEN_FILE;
- it waits (bounded by PSJOB_WAIT_SERVER_TIMEOUT, default 300 s) until every
  pserver serves, so trainers started before their pservers do not crash — unless
  the pservers say this trainer had completed already (a trainer killed after
  its completion and started again): then it exits 0 (`wait_until_serving`);
- async programs (send ops with `sync_mode` false, i.e. transpiled with
  sync_mode=False) get a Communicator around the client; PSJOB_MODE=half_async
  selects half-async.

`exe.close()` flushes, tells every pserver this trainer completed, says so in
the trainer's output (`announce_completion`) and closes the channels.

`trainer_service` is the one place a trainer's RPC service is built around its
client, by the job's mode: here, in the Fleet's init_worker and in a heter
trainer's sections.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from psjob.cluster.protocol import PSClient
from psjob.cluster.rpc.auth import job_token
from psjob.cluster.rpc.client import GrpcPSClient, RpcError
from psjob.cluster.trainer.communicator import Communicator, CommunicatorConfig
from psjob.cluster.trainer.geo import GeoCommunicator
from psjob.foundation.roles import Mode
from psjob.foundation.settings import Settings, process_settings


@dataclass(frozen=True)
class GeoSettings:
    """What a geo trainer's GeoCommunicator needs besides its client."""
    scope: object
    overview: object          # the transpiler's VarsDistributed
    param_names: list
    trainers: int
    k_steps: int


def trainer_service(client: PSClient, mode: Mode, *, max_merge_var_num: int = CommunicatorConfig.max_merge_var_num,
                    send_queue_size: int = CommunicatorConfig.send_queue_size,
                    max_stale_steps: int | None = CommunicatorConfig.max_stale_steps,
                    predict_pulls: float | dict = CommunicatorConfig.predict_pulls, geo: GeoSettings | None = None):
    """The trainer's RPC service of `mode` around `client`: the client itself (sync), a
    Communicator (async, half_async) or a GeoCommunicator (geo, which needs `geo`)."""
    mode = Mode(mode)
    if mode.is_async:
        return Communicator(client, CommunicatorConfig(mode=mode, max_merge_var_num=max_merge_var_num,
                                                       send_queue_size=send_queue_size,
                                                       max_stale_steps=max_stale_steps,
                                                       predict_pulls=predict_pulls))
    if mode is Mode.GEO:
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
            # The transpiler writes Fluid's inverted flag: send.sync_mode = not sync_mode.
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


def announce_completion(trainer_id: int) -> None:
    """Say in the trainer's output that every pserver acknowledged its completion: from here
    on its part of the job is done, and a launcher that sees it die before it exits does not
    start it again (psjob.launcher.supervisor.COMPLETED_LINE)."""
    print(f"[psjob] trainer {trainer_id} completed: every pserver recorded it", flush=True)


class TrainerAlreadyCompleted(SystemExit):
    """A trainer started again after its part of the job was done (it was killed after the
    pservers recorded its completion, before it exited): it exits 0 at once instead of
    training its share a second time or waiting for pservers that will not serve it again.
    A SystemExit, so it ends a Fleet script the same way as the built-in job."""

    def __init__(self, trainer_id: int, why: str):
        super().__init__(0)
        self.trainer_id, self.why = trainer_id, why


def completed_earlier(client: GrpcPSClient, elastic: bool = False, deadline_s: float = 5.0) -> str:
    """Why this trainer has nothing left to do, or "": a pserver past every trainer
    ("STOPPING"), or — not in an elastic job, where a trainer that left may join again — one
    that lists this trainer among the completed. Then the serving pservers that do not list
    it yet are told (its predecessor died between its Complete calls), so every pserver has
    recorded it. Pservers that do not answer (not up yet, restarting: a restarted pserver
    learns the completions from its peers) are skipped."""
    why, missing = "", []
    for ep in client.endpoints:
        try:
            status = client.probe_status(ep, deadline=deadline_s)
        except RpcError:
            continue
        if status.state == "STOPPING":
            why = why or f"pserver {ep} says every trainer of the job completed"
        elif not elastic and client.trainer_id in status.completed_trainers:
            why = why or f"pserver {ep} recorded its completion"
        elif not elastic and status.state == "SERVING":
            missing.append(ep)
    if why and missing:
        client.complete(endpoints=missing)
    return why


WAIT_CHECK_S = 5.0  # while waiting for the pservers, ask this often whether the job is done


def wait_until_serving(client: GrpcPSClient, settings: Settings, elastic: bool = False) -> None:
    """`client.wait_server_ready` (bounded by PSJOB_WAIT_SERVER_TIMEOUT, 300 s), asking every
    WAIT_CHECK_S whether this trainer had completed already (`completed_earlier`): then it
    raises TrainerAlreadyCompleted. A pserver past every trainer never serves again, so
    without the check such a trainer would wait out the whole timeout, exit
    PSERVER_UNREACHABLE_EXIT and be started again, forever."""
    timeout = settings.rpc.wait_server_timeout_s
    t_end = time.monotonic() + timeout
    while True:
        why = completed_earlier(client, elastic)
        if why:
            print(f"[psjob] trainer {client.trainer_id} had already completed ({why}): nothing left "
                  "to do; exiting 0", flush=True)
            announce_completion(client.trainer_id)
            raise TrainerAlreadyCompleted(client.trainer_id, why)
        left = t_end - time.monotonic()
        try:
            client.wait_server_ready(timeout_s=max(min(WAIT_CHECK_S, left), 0.0))
            return
        except TimeoutError as exc:
            if left <= WAIT_CHECK_S:
                raise TimeoutError(f"{exc}; waited {timeout:.0f}s in all (PSJOB_WAIT_SERVER_TIMEOUT)") from None


def wait_for_pservers(endpoints, settings: Settings | None = None) -> None:
    """Block until every pserver serves (the transpiler's wait_port, a psjob.foundation.hooks hook);
    bounded by PSJOB_WAIT_SERVER_TIMEOUT (300 s), with the job token. settings None: this
    process's environment's (a Fluid script's transpiler calls it)."""
    settings = process_settings() if settings is None else settings
    client = GrpcPSClient(list(endpoints), auth_token=job_token(settings), settings=settings)
    try:
        client.wait_server_ready(timeout_s=settings.rpc.wait_server_timeout_s)
    finally:
        client.close()


def make_client(executor, op=None, settings: Settings | None = None):
    """Default factory of executor.services["rpc"] (see fluid.executor): a Fluid script's, so
    its settings are this process's environment's unless given."""
    if _installed is not None:
        return _installed
    settings = process_settings() if settings is None else settings
    program = op.block.program if op is not None else None
    endpoints = program_endpoints(program) if program is not None else []
    if not endpoints:
        endpoints = list(settings.process.pserver_endpoints)
    if not endpoints:
        raise RuntimeError("no pserver endpoints: the program names none and PADDLE_PSERVER_ENDPOINTS is unset")
    trainer_id = op.attr("trainer_id") if op is not None and op.attr("trainer_id") is not None else None
    if trainer_id is None:
        trainer_id = settings.process.trainer_id
    client = GrpcPSClient(endpoints, int(trainer_id), auth_token=job_token(settings), settings=settings)
    try:
        wait_until_serving(client, settings)
    except BaseException:
        client.close()
        raise
    mode = settings.process.mode
    if (program is not None and _is_async(program)) or mode.is_async:
        service = trainer_service(client, Mode.HALF_ASYNC if mode is Mode.HALF_ASYNC else Mode.ASYNC)
    else:
        service = client

    def close():
        try:
            service.complete()
            announce_completion(client.trainer_id)
        finally:
            client.close()
    executor.add_close_hook(close)
    return service
