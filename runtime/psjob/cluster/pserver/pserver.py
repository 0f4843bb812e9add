"""The pserver process: a transpiled pserver program served over gRPC.

Lifecycle, as a Fluid script drives it:

    exe.run(pserver_startup)      # initializes this pserver's slices in the scope
    exe.run(pserver_program)      # listen_and_serv → serve() below, blocks
                                  # returns when every trainer has completed

`serve` wraps the program in a PserverState (the transport-agnostic pserver
logic), exposes it through psjob.cluster.rpc.server, and returns once every trainer
has sent Complete — so the process exits 0 and a job can finish, unlike
Fluid's servers. SIGTERM stops serving at once (Kubernetes deletes pods that
way); the process then exits non-zero only if trainers were still active.
In a StatefulSet pod (PSJOB_STAY_UNTIL_STOPPED=1, which psjob.foundation.roles sets for a
pserver indexed by its pod's name; cluster/pserver/lifecycle.py) it stays up after the
trainers until that SIGTERM instead: the pod would restart a pserver that exits.

Settings come from the role's settings (a RoleEnv's, which the Fleet passes
down: `role_service`; the process environment for a Fluid script that runs
listen_and_serv on its own executor): the endpoint to
bind is the listen_and_serv op's `endpoint` attribute, the auth token from
PSJOB_AUTH_TOKEN_FILE, metrics on PSJOB_METRICS_PORT, optional TLS from
PSJOB_TLS_CERT_FILE / PSJOB_TLS_KEY_FILE (psjob.cluster.rpc.tls, docs/user/security.md). With
PSJOB_CHECKPOINT_DIR set, the pserver loads its part of the newest good
checkpoint there before serving (a restarted pserver rejoins where the job's
last checkpoint left its shard).

Device (ServeOptions.device; PSJOB_PSERVER_DEVICE, else PSJOB_DEVICE, which
the job's `spec.pserver.device` renders): "cpu", "gpu" or "gpu:N". On a GPU
the dense blocks, their optimizer state and the sparse tables' value and
state columns live on the device after start-up (and checkpoint restore);
the optimize blocks run on CUDAPlace (the fused kernels of psjob.foundation.cuda);
requests cross through pinned staging buffers (device_staging.py); table
blocks run on a host executor, since the table keeps its id index on the
host and does its own one-copy transfers. docs/user/cuda.md.
"""
from __future__ import annotations

import functools
import logging
import os
import sys
import threading
from dataclasses import dataclass

import numpy as np

from psjob.cluster.pserver.device_staging import DeviceStaging, array_module_for, parse_device
from psjob.cluster.pserver.lifecycle import wait_for_stop, wait_stoppable
from psjob.cluster.pserver.observability import pserver_telemetry, table_stats_source
from psjob.cluster.pserver.pserver_state import PserverOptions, PserverState
from psjob.cluster.rpc.auth import job_token
from psjob.cluster.rpc.base_server import READ_TIMEOUT_S
from psjob.cluster.rpc.server import MAX_PREFETCH_IDS, start_server
from psjob.cluster.rpc.tls import TlsFiles
from psjob.fluid.core import CPUPlace, CUDAPlace, SelectedRows, to_numpy
from psjob.fluid.executor import Executor
from psjob.fluid.framework import Program
from psjob.foundation.checkpoint import storage
from psjob.foundation.roles import Mode, split_endpoint
from psjob.foundation.settings import Settings, process_settings

log = logging.getLogger("psjob.pserver")

# How long a serving pserver's thread may hold the GIL while another waits for it (Python's
# default: 5 ms). A trainer's prefetch arrives while the push before it is being applied on
# another connection's thread; with the default it waited for that thread's Python work to
# yield, on the trainer step's critical path. Measured with bench/step_latency.py (1+1, batch
# 32, interleaved): the trainer's prefetch wait 3.8-4.0 ms per step against 5.0-6.1, its wait
# for the push's reply 6.8-9.2 against 10.3-13.2.
SWITCH_INTERVAL_S = 0.0005


@dataclass(frozen=True)
class ServeOptions:
    endpoint: str = ""            # override of the program's endpoint ("" = use the program's)
    bind_all_interfaces: bool = False  # bind 0.0.0.0:<port> (pods) instead of the endpoint's host
    token: str = ""
    max_workers: int = 0          # 0 = sized from the number of trainers
    barrier_timeout_s: float = 600.0
    grace_s: float = 2.0          # let in-flight replies drain before stopping
    max_message_bytes: int = 0    # 0 = the transport default (1 GiB)
    # What one peer may hold (docs/user/security.md): the time a request's body may take to
    # arrive, the request bytes the data plane holds at once (0: twice the message cap),
    # the ids of one prefetch.
    read_timeout_s: float = READ_TIMEOUT_S
    max_in_flight_bytes: int = 0
    max_prefetch_ids: int = MAX_PREFETCH_IDS
    # Where CheckpointNotify may write table shards besides the checkpoint root and the
    # working directory (PSJOB_SAVE_ROOTS, comma-separated: a URI has colons; cluster/pserver/checkpoint_service.py).
    save_roots: tuple = ()
    checkpoint_dir: str = ""      # PSJOB_CHECKPOINT_DIR: restore the newest good checkpoint before serving
    tls: TlsFiles | None = None   # PSJOB_TLS_*: serve TLS (None = plaintext)
    device: str = "cpu"           # cpu | gpu | gpu:N: where the pserver keeps its state
    stay_until_stopped: bool = False  # PSJOB_STAY_UNTIL_STOPPED: after the trainers, wait for SIGTERM
    restore_digest: bool = False  # PSJOB_RESTORE_DIGEST=1: log the restored table's digest (costly)
    incremental: bool = False     # PSJOB_CHECKPOINT_INCREMENTAL=1: track table changes for delta checkpoints
    data_plane: bool = True       # PSJOB_DATA_PLANE=tcp: push, pull and prefetch on their own port too


def serve_options(settings: Settings) -> ServeOptions:
    """The pserver's options from its process's settings (parsed and checked by
    psjob.foundation.settings: a bad PSJOB_RPC_*, PSJOB_DEVICE, ... is named there)."""
    s = settings.serve
    return ServeOptions(token=job_token(settings), bind_all_interfaces=s.bind_all_interfaces,
                        max_message_bytes=s.max_message_bytes,
                        read_timeout_s=READ_TIMEOUT_S if s.read_timeout_s is None else s.read_timeout_s,
                        max_in_flight_bytes=s.max_in_flight_bytes,
                        max_prefetch_ids=MAX_PREFETCH_IDS if s.max_prefetch_ids is None else s.max_prefetch_ids,
                        save_roots=s.save_roots, checkpoint_dir=settings.checkpoint.root,
                        tls=settings.rpc.tls, device=s.device, stay_until_stopped=s.stay_until_stopped,
                        restore_digest=s.restore_digest, incremental=settings.checkpoint.incremental,
                        data_plane=settings.rpc.data_plane)


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
        self.state.telemetry = metrics  # checkpoint duration / last checkpoint (psjob.foundation.checkpoint)
        self.state.incremental_checkpoints = options.incremental  # delta checkpoints (checkpoint_service)
        # With PSJOB_SAVE_ROOTS set, CheckpointNotify writes only there, in the job's checkpoint
        # root and in the working directory (where a relative save_persistables path lands).
        # Unset, anywhere the process may write, as Paddle's pservers: a user's
        # `fleet.save_persistables(exe, "/mnt/out")` must work without configuration.
        if options.save_roots:
            self.state.save_roots = tuple(r for r in (options.checkpoint_dir, os.getcwd(), *options.save_roots) if r)
        # "distributed_lookup_table" (one name): programs transpiled before several tables
        tables = list(op.attr("distributed_lookup_tables", None) or []) or \
            [t for t in [op.attr("distributed_lookup_table", "")] if t]
        if metrics is not None and tables:
            index = int(op.attr("pserver_index", 0))
            metrics.watch_tables(table_stats_source(scope, {t: index for t in tables}))
        # The scope was initialized by the startup program the script ran.
        self.state.run_startup(Program())
        if options.checkpoint_dir:
            # A restarted pserver (or a resumed job) rejoins from its shard of the newest
            # good checkpoint, before it answers anyone (psjob.foundation.checkpoint, docs/user/checkpoints.md).
            # The root is resolved to its store once, here, for the whole restore.
            store = storage.for_path(options.checkpoint_dir)
            if self.state.restore_from_checkpoints(options.checkpoint_dir, options.restore_digest,
                                                   store) is not None:
                # ... and learns from its peers which trainers completed while it was away.
                from psjob.cluster.pserver.checkpoint_service import adopt_peer_completions
                adopt_peer_completions(self.state, options.token, tls=options.tls)
        handler = self.state
        self.placement = None
        if parse_device(options.device)[0] == "gpu":
            # After start-up and restore, so both ran as the script's executor left them.
            self.placement = place_on_device(self.state, options.device)
            handler = OnDevice(self.state, self.placement.staging)
        fanin = int(op.attr("Fanin", 1))
        workers = options.max_workers or max(16, 4 * fanin + 4)
        _, port = split_endpoint(self.endpoint, what="pserver endpoint")
        bind = f"0.0.0.0:{port}" if options.bind_all_interfaces else self.endpoint
        observer = metrics.observe_rpc if metrics is not None else None
        self.server = start_server(handler, bind, token=options.token, max_workers=workers, observer=observer,
                                   max_message_bytes=options.max_message_bytes, tls=options.tls,
                                   read_timeout_s=options.read_timeout_s,
                                   max_in_flight_bytes=options.max_in_flight_bytes,
                                   max_prefetch_ids=options.max_prefetch_ids, data_plane=options.data_plane)
        self.port = self.server.port
        self.options = options
        self._stop = threading.Event()
        log.info("pserver %s serving %d trainers (%s mode, state on %s)", self.endpoint, fanin,
                 Mode.SYNC if self.state.sync_mode else Mode.ASYNC, options.device)

    def wait(self) -> bool:
        """Block until every trainer completed (True) or stop() was called (False). With
        `stay_until_stopped`, a completed job's pserver then waits for stop() (still True)."""
        while not self._stop.is_set():
            if self.state.wait_done(timeout_s=0.5):
                if self.options.stay_until_stopped:
                    # In the pod's log (kubectl logs): why a finished job's pserver still runs.
                    print(f"[psjob] pserver {self.endpoint}: every trainer completed; staying up until "
                          f"stopped", flush=True)
                    wait_for_stop(self._stop)
                self.server.stop(self.options.grace_s)
                log.info("pserver %s: every trainer completed; exiting", self.endpoint)
                return True
        self.state.close()  # free the calls waiting for a round, or the process could not exit
        self.server.stop(0)
        return False

    def stop(self):
        self._stop.set()


# -- device residency ------------------------------------------------------------------------

_TABLE_OPS = frozenset({"sparse_table_push", "lookup_sparse_table", "sparse_table_save"})


class DevicePlacement:
    """Which executor runs each block of a GPU pserver and which values live where.

    Blocks that touch a sparse table (its optimize, prefetch and checkpoint
    blocks) run on a host executor: the table keeps its id index on the host
    and moves rows itself (one upload per push, one download per lookup), so
    the gradients those blocks read stay as received and never make a round
    trip through the device. Every other block runs on `device_exe`. The
    array module is injected (numpy in host tests: the same routing).
    """

    def __init__(self, program, device_exe, staging: DeviceStaging, host_exe=None):
        self.program, self.staging = program, staging
        self.device_exe = device_exe
        self.host_exe = host_exe if host_exe is not None else Executor(CPUPlace())
        self.xp = staging.xp
        self.host_blocks = {blk.idx for blk in program.blocks if blk.idx != 0
                            and any(op.type in _TABLE_OPS for op in blk.ops)}
        host_vars, device_vars = set(), set()
        for blk in program.blocks:
            if blk.idx == 0:
                continue
            names = {n for op in blk.ops for ns in (*op.inputs.values(), *op.outputs.values()) for n in ns}
            (host_vars if blk.idx in self.host_blocks else device_vars).update(names)
        # A value read by both kinds of block (the table's learning rate, written by the LR
        # block) lives on the device; host kernels read it with to_numpy.
        self.host_names = frozenset(host_vars - device_vars)

    def executor_for(self, block_idx: int):
        return self.host_exe if block_idx in self.host_blocks else self.device_exe

    def xp_for(self, name: str):
        return np if name in self.host_names else self.xp

    def to_device(self, values: dict) -> dict:
        """Received values bound for device blocks, in one staged copy; table gradients stay."""
        up = {n: v for n, v in values.items() if n not in self.host_names}
        moved = self.staging.to_device(up) if up else {}
        return {n: moved.get(n, v) for n, v in values.items()}

    def to_host(self, values: dict) -> dict:
        """New host copies: device values through one pinned buffer, the host blocks' copied."""
        dev = {n: v for n, v in values.items() if n not in self.host_names}
        moved = self.staging.to_host(dev) if dev else {}
        return {n: moved[n] if n in moved else _host_copy(v) for n, v in values.items()}

    def migrate(self, scope) -> dict:
        """Move the scope's arrays (but the host blocks' own) and sparse tables to the device.
        Returns {"arrays": n, "bytes": b, "tables": t} for the log."""
        from psjob.foundation.tables import SparseTable
        moved = {"arrays": 0, "bytes": 0, "tables": 0}
        xp = self.xp
        for name, value in list(scope.vars.items()):
            if isinstance(value, SparseTable):
                if value.array_module is np:
                    value.to_device(xp, transfer=self.staging)
                    moved["tables"] += 1
            elif name in self.host_names:
                # The table blocks' own values stay on (or come back to) the host: a script
                # whose executor was already CUDAPlace created them as device arrays.
                if isinstance(value, SelectedRows) and not isinstance(value.values, np.ndarray):
                    scope.vars[name] = SelectedRows(to_numpy(value.rows), to_numpy(value.values), value.height)
                elif hasattr(value, "get") and hasattr(value, "dtype") and not isinstance(value, np.ndarray):
                    scope.vars[name] = to_numpy(value)
            elif isinstance(value, np.ndarray):
                # One at a time: a dense block can be far larger than a staging buffer should be.
                scope.vars[name] = xp.asarray(value)
                moved["arrays"] += 1
                moved["bytes"] += value.nbytes
            elif isinstance(value, SelectedRows) and isinstance(value.values, np.ndarray):
                scope.vars[name] = SelectedRows(xp.asarray(value.rows), xp.asarray(value.values),
                                                value.height)
                moved["arrays"] += 1
        return moved


def _host_copy(value):
    if isinstance(value, SelectedRows):
        return SelectedRows(np.array(value.rows), np.array(value.values), value.height)
    return np.array(value)


def place_on_device(state, device: str, *, xp=None, device_exe=None) -> DevicePlacement:
    """Put a started PserverState's state on `device` ("gpu" / "gpu:N"); returns the placement.

    `xp`/`device_exe` are injectable so tests run the same routing with numpy."""
    if xp is None:
        xp, index = array_module_for(device)
    else:
        index = parse_device(device)[1]
    staging = DeviceStaging(xp, index)
    if device_exe is None:
        device_exe = Executor(CUDAPlace(index))
    placement = DevicePlacement(state.program, device_exe, staging)
    with staging.device():
        moved = placement.migrate(state.scope)
    state.exe = device_exe
    state.placement = placement
    log.info("pserver %s: state on %s (%d arrays, %.1f MiB; %d sparse table(s)); table blocks %s on the host",
             state.endpoint, device, moved["arrays"], moved["bytes"] / 2**20, moved["tables"],
             sorted(placement.host_blocks))
    return placement


class OnDevice:
    """The handler the gRPC server calls on a GPU pserver: every request runs with the
    pserver's GPU current (cupy's current device is per thread; pool threads start on 0)."""

    def __init__(self, state, staging: DeviceStaging):
        self._state, self._staging = state, staging

    def __getattr__(self, name):
        attr = getattr(self._state, name)
        if not (name.startswith("on_") and callable(attr)):
            return attr

        def on_device(*args, **kwargs):
            with self._staging.device():
                return attr(*args, **kwargs)
        return on_device


def serve(program: Program, scope, executor, options: ServeOptions | None = None, *,
          settings: Settings | None = None) -> None:
    """The `executor.services["pserver"]` callable: serve until the trainers complete.

    options None = serve_options(settings); metrics on the settings' PSJOB_METRICS_PORT
    unless the executor has "pserver_metrics". settings None = this process's environment's
    (a Fluid script that runs its pserver program itself: its entry point is here)."""
    settings = process_settings() if settings is None else settings
    telemetry = executor.services.get("pserver_metrics") or pserver_telemetry(settings.metrics)
    proc = PserverProcess(program, scope, executor, options or serve_options(settings), metrics=telemetry)
    executor.services["pserver_process"] = proc
    interval = sys.getswitchinterval()
    sys.setswitchinterval(min(interval, SWITCH_INTERVAL_S))  # while serving: see SWITCH_INTERVAL_S
    try:
        wait_stoppable(proc)
    finally:
        sys.setswitchinterval(interval)
        if telemetry is not None and "pserver_metrics" not in executor.services:
            telemetry.close()


def role_service(settings: Settings):
    """executor.services["pserver"] for a process that holds its role's settings (a RoleEnv's
    `settings`; the Fleet installs it): options, token, TLS and metrics come from them."""
    return functools.partial(serve, settings=settings)


def make_service(executor, op=None):
    """Default factory for executor.services["pserver"] (see fluid.executor): a Fluid script
    that runs its pserver program itself, with the process environment's settings."""
    return serve
