"""The heter trainer process (role HETER_TRAINER) and the CPU trainer's default heter client.

Heter trainer side. Lifecycle, as the Fleet drives it (fleet/heter.py):

    sections = {t: HeterSection(split_t, executor_t) for each served trainer t}
    state = HeterState(endpoint, sections)      # transport-agnostic (cluster/heter/heter_state.py)
    serve(state)                                # gRPC on the heter endpoint; blocks

`serve` starts the HeterTrainer gRPC service (psjob.cluster.rpc.heter_service) on
this process's endpoint and returns once every CPU trainer it serves has
sent Complete — so the process exits 0 with the job (in a StatefulSet pod,
PSJOB_STAY_UNTIL_STOPPED=1, once stopped after that instead). SIGTERM stops
it at once (non-zero exit when trainers were still active). Its settings are the
role's (a RoleEnv's, which the Fleet passes down; the process environment
otherwise): the auth token comes
from PSJOB_AUTH_TOKEN_FILE; PSJOB_BIND_ALL=1 binds 0.0.0.0 (pods). TLS is on
when the role has PSJOB_TLS_* set (its settings.rpc.tls): the heter
trainer serves TLS with PSJOB_TLS_CERT_FILE/KEY_FILE, as a pserver does, and
its sections' pserver clients use the same settings. With PSJOB_METRICS_PORT
set it serves /metrics (psjob.cluster.pserver.observability.HeterTelemetry): its RPCs,
stage compute times, batches and the staleness of its sections' pushes.

CPU trainer side. The `send_and_recv` kernel asks `executor.services["heter"]`;
when nothing is registered it calls `make_client` here: the client the
Fleet's init_worker installed for the process, or one built from the
environment (PADDLE_HETER_TRAINER_IP_PORT_LIST, PSJOB_AUTH_TOKEN_FILE) that
waits until its heter trainer serves and, on `exe.close()`, completes with
it before the pservers are told (close hooks run newest first).
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from psjob.cluster.heter.heter_state import HeterState
from psjob.cluster.pserver.lifecycle import wait_for_stop, wait_stoppable
from psjob.cluster.pserver.observability import HeterTelemetry, heter_telemetry
from psjob.cluster.rpc import tls as tls_mod
from psjob.cluster.rpc.auth import job_token
from psjob.cluster.rpc.heter_client import HeterClient
from psjob.cluster.rpc.heter_service import start_heter_server
from psjob.foundation.roles import split_endpoint
from psjob.foundation.settings import Settings, process_settings

log = logging.getLogger("psjob.heter")


@dataclass(frozen=True)
class HeterServeOptions:
    token: str = ""
    bind_all_interfaces: bool = False  # bind 0.0.0.0:<port> (pods) instead of the endpoint's host
    max_workers: int = 0               # 0 = sized from the number of trainers served
    grace_s: float = 2.0               # let in-flight replies drain before stopping
    tls: tls_mod.TlsFiles | None = None  # None = plaintext
    stay_until_stopped: bool = False   # PSJOB_STAY_UNTIL_STOPPED: after the trainers, wait for SIGTERM


def serve_options(settings: Settings) -> HeterServeOptions:
    """The heter trainer's serving options from its process's settings."""
    return HeterServeOptions(token=job_token(settings), bind_all_interfaces=settings.serve.bind_all_interfaces,
                             tls=settings.rpc.tls, stay_until_stopped=settings.serve.stay_until_stopped)


class HeterProcess:
    """A HeterState behind a gRPC server; `wait()` until its trainers are done."""

    def __init__(self, state: HeterState, options: HeterServeOptions, telemetry: HeterTelemetry | None = None):
        self.state, self.options, self.telemetry = state, options, telemetry
        _, port = split_endpoint(state.endpoint, what="heter trainer endpoint")
        bind = f"0.0.0.0:{port}" if options.bind_all_interfaces else state.endpoint
        workers = options.max_workers or max(8, 2 * len(state.sections) + 4)
        if telemetry is not None:
            _observe(state, telemetry)
        state.start()
        self.server = start_heter_server(
            state, bind, token=options.token, max_workers=workers, tls=options.tls,
            observer=telemetry.observe_rpc if telemetry is not None else None)
        self.port = self.server.port
        self._stop = threading.Event()
        # One line in the process log says what it serves and how (the TLS tests read it).
        print(f"[psjob] heter trainer {state.endpoint} serves trainers {sorted(state.sections)} on "
              f"{state.device} over {'TLS' if options.tls is not None else 'plaintext'}", flush=True)

    def wait(self) -> bool:
        """Block until every served trainer completed (True) or stop() was called (False). With
        `stay_until_stopped`, it then waits for stop() (still True)."""
        while not self._stop.is_set():
            if self.state.wait_done(timeout_s=0.5):
                if self.options.stay_until_stopped:
                    print(f"[psjob] heter trainer {self.state.endpoint}: every trainer completed; "
                          f"staying up until stopped", flush=True)
                    wait_for_stop(self._stop)
                self.server.stop(self.options.grace_s)
                log.info("heter trainer %s: every trainer completed; exiting", self.state.endpoint)
                return True
        self.server.stop(0)
        self.state.close()
        return False

    def stop(self) -> None:
        self._stop.set()


def _observe(state: HeterState, telemetry: HeterTelemetry) -> None:
    """Route the state's stage timings and its sections' push staleness to `telemetry`."""
    state.observe_stage = telemetry.observe_stage
    for section in state.sections.values():
        section.exe.services["staleness"] = telemetry.observe_staleness  # sync: the send ops
        service = section.exe.services.get("rpc")
        if service is not None and hasattr(service, "on_staleness"):  # async: the Communicator
            service.on_staleness = telemetry.observe_staleness


def serve(state: HeterState, options: HeterServeOptions | None = None, telemetry="env", *,
          settings: Settings | None = None) -> None:
    """Serve until the served trainers complete; SystemExit(143) when stopped by SIGTERM.

    settings: the process's (a RoleEnv's `settings`, which the Fleet passes; None = this
    process's environment's); options None = serve_options(settings); telemetry "env" =
    metrics on the settings' PSJOB_METRICS_PORT when set, None = none, or a HeterTelemetry
    the caller owns (and closes)."""
    settings = process_settings() if settings is None else settings
    owned = isinstance(telemetry, str) and telemetry == "env"
    if owned:
        telemetry = heter_telemetry(settings.metrics)
    try:
        wait_stoppable(HeterProcess(state, options or serve_options(settings), telemetry))
    finally:
        if owned and telemetry is not None:
            telemetry.close()


# -- CPU trainer side ---------------------------------------------------------------------

_installed = None


def install_client(client) -> None:
    """Make `client` every Executor's heter service in this process (Fleet init_worker)."""
    global _installed
    _installed = client


def installed_client():
    return _installed


def make_client(executor, op=None, settings: Settings | None = None):
    """Default factory of executor.services["heter"] (see fluid/ops/heter_ops.py): a Fluid
    script's, so its settings are this process's environment's unless given."""
    if _installed is not None:
        return _installed
    settings = process_settings() if settings is None else settings
    endpoints = list(settings.process.heter_endpoints)
    if not endpoints and op is not None and op.attr("endpoint"):
        endpoints = [op.attr("endpoint")]
    if not endpoints:
        raise RuntimeError("no heter trainer endpoints: the program names none and "
                           "PADDLE_HETER_TRAINER_IP_PORT_LIST is unset")
    trainer_id = op.attr("trainer_id") if op is not None and op.attr("trainer_id") is not None else \
        settings.process.trainer_id
    client = HeterClient(endpoints, int(trainer_id), auth_token=job_token(settings), settings=settings)
    own = op.attr("endpoint") if op is not None and op.attr("endpoint") else client.own_endpoint
    client.wait_server_ready([own])

    def close():
        try:
            client.complete([own])
        finally:
            client.close()
    executor.add_close_hook(close)
    return client
