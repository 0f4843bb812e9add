"""The pserver process: a transpiled pserver program served over gRPC.

Lifecycle, as a Fluid script drives it:

    exe.run(pserver_startup)      # initializes this pserver's slices in the scope
    exe.run(pserver_program)      # listen_and_serv → serve() below, blocks
                                  # returns when every trainer has completed

`serve` wraps the program in a PserverState (the transport-agnostic pserver
logic), exposes it through psjob.rpc.server, and returns once every trainer
has sent Complete — so the process exits 0 and a job can finish, unlike
Fluid's servers. SIGTERM stops serving at once (Kubernetes deletes pods that
way); the process then exits non-zero only if trainers were still active.

Settings come from the process environment (psjob.roles): the endpoint to
bind is the listen_and_serv op's `endpoint` attribute, the auth token from
PSJOB_AUTH_TOKEN_FILE, metrics on PSJOB_METRICS_PORT, optional TLS from
PSJOB_TLS_CERT_FILE / PSJOB_TLS_KEY_FILE (psjob.rpc.tls, docs/security.md). With
PSJOB_CHECKPOINT_DIR set, the pserver loads its part of the newest good
checkpoint there before serving (a restarted pserver rejoins where the job's
last checkpoint left its shard).
"""
from __future__ import annotations

import logging
import os
import signal
import threading
from dataclasses import dataclass

from ..fluid.framework import Program
from ..fluid.transpiler.pserver_state import PserverOptions, PserverState
from ..rpc.server import start_server
from ..rpc.tls import TlsFiles, tls_from_env
from .auth import token_from_env
from .observability import table_stats_source, telemetry_from_env

log = logging.getLogger("psjob.pserver")


@dataclass(frozen=True)
class ServeOptions:
    endpoint: str = ""            # override of the program's endpoint ("" = use the program's)
    bind_all_interfaces: bool = False  # bind 0.0.0.0:<port> (pods) instead of the endpoint's host
    token: str = ""
    max_workers: int = 0          # 0 = sized from the number of trainers
    barrier_timeout_s: float = 600.0
    grace_s: float = 2.0          # let in-flight replies drain before stopping
    max_message_bytes: int = 0    # 0 = the transport default (1 GiB)
    checkpoint_dir: str = ""      # PSJOB_CHECKPOINT_DIR: restore the newest good checkpoint before serving
    tls: TlsFiles | None = None   # PSJOB_TLS_*: serve TLS (None = plaintext)


def options_from_env(environ=None) -> ServeOptions:
    env = os.environ if environ is None else environ
    return ServeOptions(token=token_from_env(env),
                        bind_all_interfaces=env.get("PSJOB_BIND_ALL", "") == "1",
                        max_message_bytes=int(env.get("PSJOB_RPC_MAX_MESSAGE_BYTES", "0") or 0),
                        checkpoint_dir=env.get("PSJOB_CHECKPOINT_DIR", "") or "",
                        tls=tls_from_env(env))


def _listen_op(program: Program):
    for op in program.global_block().ops:
        if op.type == "listen_and_serv":
            return op
    raise ValueError("not a pserver program: it has no listen_and_serv op")


class PserverProcess:
    """A PserverState behind a gRPC server; `wait()` until the trainers are done."""

    def __init__(self, program: Program, scope, executor, options: ServeOptions, metrics=None):
        op = _listen_op(program)
        self.endpoint = options.endpoint or op.attr("endpoint")
        self.state = PserverState(program, scope=scope, executor=executor,
                                  options=PserverOptions(barrier_timeout_s=options.barrier_timeout_s))
        self.state.telemetry = metrics  # checkpoint duration / last checkpoint (psjob.checkpoint)
        table = op.attr("distributed_lookup_table", "")
        if metrics is not None and table:
            metrics.watch_tables(table_stats_source(scope, {table: int(op.attr("pserver_index", 0))}))
        # The scope was initialized by the startup program the script ran.
        self.state.run_startup(Program())
        if options.checkpoint_dir:
            # A restarted pserver (or a resumed job) rejoins from its shard of the newest
            # good checkpoint, before it answers anyone (psjob.checkpoint, docs/checkpoints.md).
            if self.state.restore_from_checkpoints(options.checkpoint_dir) is not None:
                # ... and learns from its peers which trainers completed while it was away.
                from ..checkpoint.pserver_side import adopt_peer_completions
                adopt_peer_completions(self.state, options.token)
        fanin = int(op.attr("Fanin", 1))
        workers = options.max_workers or max(16, 4 * fanin + 4)
        host, _, port = self.endpoint.rpartition(":")
        bind = f"0.0.0.0:{port}" if options.bind_all_interfaces else self.endpoint
        observer = metrics.observe_rpc if metrics is not None else None
        self.server, self.port = start_server(self.state, bind, token=options.token, max_workers=workers,
                                              observer=observer, max_message_bytes=options.max_message_bytes,
                                              tls=options.tls)
        self.options = options
        self._stop = threading.Event()
        log.info("pserver %s serving %d trainers (%s mode)", self.endpoint, fanin,
                 "sync" if self.state.sync_mode else "async")

    def wait(self) -> bool:
        """Block until every trainer completed (True) or stop() was called (False)."""
        while not self._stop.is_set():
            if self.state.wait_done(timeout_s=0.5):
                self.server.stop(self.options.grace_s).wait()
                log.info("pserver %s: every trainer completed; exiting", self.endpoint)
                return True
        self.server.stop(0).wait()
        return False

    def stop(self):
        self._stop.set()


def serve(program: Program, scope, executor, options: ServeOptions | None = None):
    """The `executor.services["pserver"]` callable: serve until the trainers complete."""
    telemetry = executor.services.get("pserver_metrics") or telemetry_from_env()
    proc = PserverProcess(program, scope, executor, options or options_from_env(), metrics=telemetry)
    executor.services["pserver_process"] = proc
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, lambda *_: proc.stop())
    try:
        if not proc.wait():
            raise SystemExit(143)
    finally:
        if telemetry is not None and "pserver_metrics" not in executor.services:
            telemetry.close()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def make_service(executor, op=None):
    """Default factory for executor.services["pserver"] (see fluid.executor)."""
    return serve
