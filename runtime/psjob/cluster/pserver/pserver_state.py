"""PserverState: a pserver's behaviour, independent of any transport.

It interprets one pserver program — the `listen_and_serv` op's attributes
say which block optimizes which gradient — with a real Executor over its own
Scope, and answers the request kinds of `transport.ServerHandler`. The gRPC
server (psjob.cluster.rpc.server) wraps it unchanged; the in-memory transport
(inmemory.py) calls it directly, which is how the tests drive real pserver
programs in one process.

Lifecycle: `PserverState(program)` → `run_startup(startup_program)` (state
SERVING) → requests from trainers → every trainer `on_complete` (state STOPPING).

Sync mode, per round: each trainer pushes its gradient blocks (stored in its
own slots, `<grad>.trainer_<t>` when there are several trainers; a repeated
push overwrites, so retries are harmless), then sends a "send" barrier. When
every active trainer has, the LR block runs once and each optimize block
runs (it merges the trainers' slots with sum + scale 1/trainers, then
optimizes); the version (rounds applied) goes up. A trainer's pull, prefetch,
push and "fetch" barrier wait until the round it took part in is applied, and
the fetch barrier ends its round: a trainer pulls only from the pservers that
hold its dense parameters, so at one that holds only table rows its fetch
barrier is what keeps it from reading rows from before the round, or
overwriting the gradient the round has yet to apply with its next step's. A repeated barrier in the same phase is ignored, so a retried barrier
is not counted twice. A trainer that completes leaves the round; its slots
are zeroed, so it contributes nothing from then on.

Elastic jobs (listen_and_serv `elastic`): the member set starts empty and
trainers join it (`on_join`) before their first step and leave it by
completing; Fanin is only the capacity (ids 0..Fanin-1, one gradient slot
each). A sync join takes effect at once, which is a step boundary for the
joiner: its first pull sees the current version, so its first gradient belongs
to the round in progress, which now waits for it too. A member that completes
between rounds leaves at that boundary; each round averages over the members
it had (the `trainer_mean` scale ops are reset to 1/members before it runs).
Async, half-async and geo members join and leave immediately. The pserver is
done when the last member has left.

Async mode: every pushed gradient block is optimized at once by its block;
barriers return immediately. The LR block runs once per as many pushed
blocks as this pserver optimizes (about once per trainer step).

Non-finite values: a push (gradient or geo delta, dense or sparse rows) holding a
NaN or an infinity is refused as a whole before anything of it is stored or
applied — one NaN would turn the parameter NaN for every trainer and every later
checkpoint. The trainer gets INVALID_ARGUMENT naming the variable; the refusal
is counted (`psjob_pserver_nonfinite_pushes_total{variable}`).
"""
from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np

from psjob.cluster.protocol import ServerHandler
from psjob.cluster.pserver import checkpoint_service
from psjob.cluster.pserver.pserver_staleness import StalenessTracker, param_of_grad
from psjob.cluster.pserver.trainer_gather import TrainerGather
from psjob.fluid.core import CPUPlace, Scope, SelectedRows, scatter_add, to_numpy
from psjob.fluid.executor import Executor
from psjob.fluid.framework import GraphError, VarType
from psjob.fluid.transpiler.pserver_pass import TRAINER_ID_VAR, TRAINER_MEAN_ATTR
from psjob.fluid.transpiler.slicing import get_varname_parts

log = logging.getLogger("psjob.pserver")

STARTING, SERVING, DONE = "STARTING", "SERVING", "STOPPING"
_SENDING, _BARRIERED = "sending", "barriered"


@dataclass(frozen=True)
class PserverOptions:
    # A sync round waits for the slowest trainer; past this a pull or barrier fails.
    barrier_timeout_s: float = 600.0
    # A trainer silent this long may have its id given to a newly registering
    # pod (a Deployment replaced a dead trainer pod under a new name).
    reclaim_after_s: float = 30.0


def _block_map(entries, what) -> dict:
    out = {}
    for e in entries or []:
        name, sep, idx = str(e).rpartition(":")
        if not sep or not idx.isdigit():
            raise GraphError(f"listen_and_serv: malformed {what} entry {e!r} (want 'name:block')")
        out[name] = int(idx)
    return out


def _all_finite(arr, xp) -> bool:
    """No NaN or infinity in a float array (ints cannot hold one). Exact, one pass."""
    if arr.dtype.kind not in "fc" or arr.size == 0:
        return True
    isfinite = np.isfinite if isinstance(arr, np.ndarray) else xp.isfinite
    return bool(isfinite(arr).all())


def _slot_owner(name: str):
    """The trainer whose receiving slot `name` is (`….trainer_<t>[.pserver_<k>]`), or None."""
    part = get_varname_parts(name)[2]
    if not part:
        return None
    digits = part[len("trainer_"):].split(".")[0]
    return int(digits) if digits.isdigit() else None


class PserverStopping(ConnectionAbortedError):
    """The pserver is stopping (SIGTERM): a call that waited for trainers gets UNAVAILABLE."""


class PserverState(ServerHandler):
    def __init__(self, program, *, scope: Scope | None = None, executor: Executor | None = None,
                 place=None, options: PserverOptions = PserverOptions(), clock=time.monotonic):
        ops = [op for op in program.global_block().ops if op.type == "listen_and_serv"]
        if len(ops) != 1:
            raise GraphError(f"a pserver program has exactly one listen_and_serv op, this one has {len(ops)}")
        op = ops[0]
        self.program, self.options = program, options
        self.scope = scope if scope is not None else Scope()
        self.exe = executor if executor is not None else Executor(place or CPUPlace())
        self.endpoint = op.attr("endpoint", "")
        self.fanin = int(op.attr("Fanin", 1))
        self.sync_mode = bool(op.attr("sync_mode", True))
        self.dc_asgd = bool(op.attr("dc_asgd", False))
        self.elastic = bool(op.attr("elastic", False))
        self._changed_at = None  # sync, elastic: monotonic time of the last membership change
        self.grad_blocks = _block_map(op.attr("grad_to_block_id"), "grad_to_block_id")
        self.prefetch_blocks = _block_map(op.attr("prefetch_var_name_to_block_id"), "prefetch")
        self.lr_block = int(op.attr("lr_decay_block_id", -1))
        self.checkpoint_block = int(op.attr("checkpoint_block_id", -1))
        self.optimize_blocks = [b.idx if hasattr(b, "idx") else int(b) for b in op.attr("optimize_blocks") or []]
        self.recv_names = list(op.input("X"))
        self._gb = program.global_block()
        self._cond = threading.Condition()
        self._closed = False  # close(): the process is stopping; nothing waits for trainers any more
        self.state = STARTING
        self.version = 0
        self.active = set() if self.elastic else set(range(self.fanin))
        self.completed: list[int] = []
        self._phase = {t: _SENDING for t in range(self.fanin)}
        self._awaiting = {t: 0 for t in range(self.fanin)}
        self._registered: dict[str, int] = {}
        self._last_seen: dict[int, float] = {}  # trainer id → clock time of its last request
        self._async_pushes = 0
        # fleet.util's collectives, among the live members (joins and leaves passed on)
        self.gathers = TrainerGather(self.fanin, options.barrier_timeout_s, members=self.active)
        # Async staleness of every applied gradient (returned by on_send; pserver_staleness.py).
        self.staleness = StalenessTracker({g: param_of_grad(program, g, b) for g, b in self.grad_blocks.items()})
        # Async mode applies updates without the global lock: one lock per block
        # (a block's ops share its scratch variables), so a prefetch never waits
        # for a dense optimizer step and two parameters update in parallel.
        # `_updates_in_flight` lets a checkpoint freeze wait for running updates.
        self._block_locks = {idx: threading.Lock() for idx in range(len(program.blocks))}
        self._updates_in_flight = 0
        # Checkpoints (psjob.cluster.pserver.checkpoint_service): a random id of this process, so
        # trainer 0 notices a restart mid-checkpoint; updates wait while frozen.
        self.incarnation = uuid.uuid4().hex
        self._clock = clock  # seconds of freeze leases and trainer silence (tests step it by hand)
        self._frozen_until = 0.0  # clock seconds; updates wait while it lies ahead
        self._freeze_id: str | None = None  # the freeze held (one save), or None
        self.updates_held = 0  # pushes waiting out a freeze now (notified under the state's lock)
        self.restored_step = None
        # A GPU pserver (psjob.cluster.pserver.pserver, ServeOptions.device) sets this to an object
        # with to_device / to_host (one staged copy per request), executor_for(block)
        # and xp_for(name); None keeps every value in the executor's array module.
        self.placement = None
        # Directories CheckpointNotify may write under (psjob.cluster.pserver.checkpoint_service); None:
        # anywhere (an in-process pserver; a served one gets its roots from PserverProcess).
        self.save_roots: tuple | None = None
        self.telemetry = None  # the process's PserverTelemetry, when it exports metrics
        # Delta checkpoints (psjob.cluster.pserver.checkpoint_service): the chain link the table's tracked
        # changes are relative to (None: no delta possible, the next save must be a base),
        # whether to track changes from a restore on (PSJOB_CHECKPOINT_INCREMENTAL), and the
        # changes handed to saves not yet committed: [(link id, changed ids, evicted ids)].
        self.delta_base: str | None = None
        self.incremental_checkpoints = False
        self.pending_changes: list = []
        self.last_saved_link: str | None = None

    # -- lifecycle -----------------------------------------------------------------------
    def run_startup(self, startup_program) -> None:
        """Initialize this pserver's variables, then start serving."""
        with self._cond:
            self.exe.run(startup_program, scope=self.scope)
            for name in self.recv_names:
                if name not in self.scope.vars:
                    self.scope.vars[name] = self._zero(name)
            self.state = SERVING
            self._cond.notify_all()

    def _zero(self, name):
        var = self._gb.var(name)
        xp = self.exe.xp if self.placement is None else self.placement.xp_for(name)
        if var.type == VarType.SELECTED_ROWS:
            return SelectedRows(xp.zeros(0, dtype=np.int64), xp.zeros((0,) + tuple(var.shape[1:]), var.dtype),
                                var.shape[0])
        return xp.zeros(tuple(var.shape), dtype=var.dtype)

    def _check_trainer(self, trainer_id: int) -> int:
        t = int(trainer_id)
        if not 0 <= t < self.fanin:
            capacity = " (the job's trainer capacity, PSJOB_MAX_TRAINERS)" if self.elastic else ""
            raise ValueError(f"pserver {self.endpoint}: trainer id {t} is out of range [0, {self.fanin})"
                             f"{capacity}")
        if self.state != SERVING and self.state != DONE:
            raise RuntimeError(f"pserver {self.endpoint} is {self.state}, not serving yet")
        self._last_seen[t] = self._clock()
        return t

    # -- requests ------------------------------------------------------------------------
    def on_send(self, trainer_id: int, values: dict, is_delta: bool = False) -> int:
        """Apply (async) or store (sync) one push; → its staleness: the most updates from other
        pushes any of its blocks missed since this trainer last pulled it (0 in sync mode)."""
        t = self._check_trainer(trainer_id)
        for name in values:
            owner = _slot_owner(name)
            if owner is not None and owner != t:
                raise ValueError(f"trainer {t} sent {name!r}, the slot of trainer {owner}")
        checked = {name: self._check_value(name, value, is_delta) for name, value in values.items()}
        if self.placement is not None:
            checked = self.placement.to_device(checked)  # one staged copy for the whole request
        if not self.sync_mode:
            return self._send_async(t, checked, is_delta)
        with self._cond:
            self._wait_for_round(t)
            self._wait_while_frozen()
            for name, value in checked.items():
                if is_delta:
                    self._apply_delta(name, value)
                    continue
                self.scope.vars[name] = value
        return 0

    def on_send_and_get(self, trainer_id: int, values: dict, names) -> tuple[int, dict, int]:
        """An async push of gradients, then a read of `names` (on_get) after it is applied: the
        communicator's push of one step and its pull for the next in one request. The names
        are checked first, so a request naming an unknown variable applies nothing.
        → (staleness, {name: value}, version)."""
        if self.sync_mode:
            raise ValueError(f"pserver {self.endpoint}: a push that pulls is for async mode "
                             f"(sync trainers pull after the round's barrier)")
        names = list(names)
        self._check_readable(names)
        staleness = self.on_send(trainer_id, values, False)
        fresh, version = self.on_get(trainer_id, names)
        return staleness, fresh, version

    def _send_async(self, t, checked, is_delta):
        with self._cond:
            self._wait_while_frozen()
            self._updates_in_flight += 1
        staleness = 0
        try:
            for name, value in checked.items():
                block = self.grad_blocks.get(name)
                with self._block_locks.get(block, self._block_locks[0]):
                    staleness = max(staleness, self.staleness.on_update(t, name))
                    if is_delta:
                        self._apply_delta(name, value)
                    else:
                        self.scope.vars[name] = value
                        self._optimize_async(t, name)
        finally:
            with self._cond:
                self._updates_in_flight -= 1
                self._cond.notify_all()
        return staleness

    def wait_for_updates(self) -> None:
        """Block (holding the state's condition) until no async update is running."""
        self._cond.wait_for(lambda: self._updates_in_flight == 0)

    def _check_value(self, name, value, is_delta):
        if isinstance(value, tuple):  # (array, lod) from the wire; LoD is irrelevant to gradients
            value = value[0]
        allowed = name in self._gb.vars and self._gb.var(name).persistable if is_delta else name in self.recv_names
        if not allowed:
            raise KeyError(f"pserver {self.endpoint} does not {'hold' if is_delta else 'receive'} {name!r}")
        decl = self._gb.var(name)
        xp = self.exe.xp
        got = (value.values if isinstance(value, SelectedRows) else value).dtype
        if got != np.dtype(decl.dtype):
            raise ValueError(f"{name!r}: dtype {got}, expected {decl.dtype}")
        if not _all_finite(value.values if isinstance(value, SelectedRows) else value, xp):
            if self.telemetry is not None:
                self.telemetry.m.nonfinite_pushes.labels(name).inc()
            raise ValueError(f"{name!r} holds NaN or infinite values: the push is refused and the "
                             f"parameters on pserver {self.endpoint} are unchanged")
        if isinstance(value, SelectedRows):
            if tuple(value.values.shape[1:]) != tuple(decl.shape[1:]):
                raise ValueError(f"{name!r}: rows of width {list(value.values.shape[1:])}, expected "
                                 f"{list(decl.shape[1:])}")
            if len(value.rows) != value.values.shape[0]:
                raise ValueError(f"{name!r}: {len(value.rows)} row ids for {value.values.shape[0]} rows")
            if xp is not np and self.placement is None:
                value = SelectedRows(xp.asarray(value.rows), xp.asarray(value.values), value.height)
            return value
        if tuple(value.shape) != tuple(decl.shape):
            raise ValueError(f"{name!r}: shape {list(value.shape)}, expected {list(decl.shape)}")
        return value if xp is np or self.placement is not None else xp.asarray(value)

    def _apply_delta(self, name, value):
        # Geo-SGD: the trainer sends parameter deltas, added in place.
        param = self.scope.vars[name]
        if isinstance(value, SelectedRows):
            scatter_add(self.exe.xp, param, value.rows, value.values)
        else:
            param += value

    def _optimize_async(self, t, name):
        """Run the optimize block of gradient `name` (the caller holds that block's lock)."""
        block = self.grad_blocks.get(name)
        if block is None:
            return
        if self.lr_block >= 0:
            with self._cond:
                self._async_pushes += 1
                due = (self._async_pushes - 1) % max(1, len(self.grad_blocks)) == 0
            if due:
                with self._block_locks[self.lr_block]:
                    self._run_block(self.lr_block)
        if self.dc_asgd:
            self.scope.vars[TRAINER_ID_VAR] = self.exe.xp.asarray([t], dtype=np.int64)
        self._run_block(block)
        with self._cond:
            self.version += 1

    def _run_block(self, idx):
        # A GPU pserver runs its table blocks on the host executor (the table does its own
        # one-copy device transfers) and every other block on the device.
        exe = self.exe if self.placement is None else self.placement.executor_for(idx)
        exe.run_block(self.program, idx, self.scope)

    def on_barrier(self, trainer_id: int, kind: str) -> int:
        t = self._check_trainer(trainer_id)
        if kind not in ("send", "fetch"):
            raise ValueError(f"barrier kind must be 'send' or 'fetch', got {kind!r}")
        with self._cond:
            if not self.sync_mode:
                return self.version
            if kind == "send" and self._phase[t] == _SENDING:
                self._phase[t] = _BARRIERED
                self._awaiting[t] = self.version + 1
                self._maybe_apply()
            elif kind == "fetch" and self._phase[t] == _BARRIERED:
                self._wait_for_round(t)
                self._phase[t] = _SENDING
            return self.version

    def _wait_for_round(self, t):
        # Sync: a trainer that has sent its "send" barrier waits for that round (the caller
        # holds the condition).
        if self.sync_mode and self._phase[t] == _BARRIERED:
            self._wait(lambda: self.version >= self._awaiting[t], f"round {self._awaiting[t]}")

    def _maybe_apply(self):
        if not self.active or any(self._phase[t] != _BARRIERED or self._awaiting[t] != self.version + 1
                                  for t in self.active):
            return
        if self.elastic:
            self._set_trainer_mean(1.0 / len(self.active))
        if self.lr_block >= 0:
            self._run_block(self.lr_block)
        for idx in self.optimize_blocks:
            if idx != self.lr_block:
                self._run_block(idx)
        self.version += 1
        if self._changed_at is not None:
            # The time to resume: how long the first round with the new members took to apply.
            log.info("pserver %s: round %d applied with members %s, %.2fs after they changed",
                     self.endpoint, self.version, sorted(self.active), time.monotonic() - self._changed_at)
            self._changed_at = None
        self._cond.notify_all()

    def _set_trainer_mean(self, scale: float) -> None:
        # The ops read their attributes when they run: no recompile.
        for block in self.program.blocks:
            for op in block.ops:
                if op.type == "scale" and op.attr(TRAINER_MEAN_ATTR, False):
                    op._set_attr("scale", scale)

    def on_get(self, trainer_id: int, names) -> tuple[dict, int]:
        t = self._check_trainer(trainer_id)
        if not self.sync_mode:
            self.staleness.on_read(t, names)
        if not self.sync_mode and not self.dc_asgd:
            # Async reads take no lock (as Hogwild-style pservers do) and no copy: the
            # transport encodes (copies) the live values before replying, which may mix
            # old and new rows of one step, as a copy taken here would.
            return self._live(names), self.version
        with self._cond:
            self._wait_for_round(t)
            out = {}
            self._check_readable(names)
            for name in names:
                value: Any = self.scope.vars[name]
                out[name] = value.copy() if self.placement is None else value
                if self.dc_asgd:
                    bak = f"{name}.trainer_{t}_bak"
                    if bak in self.scope.vars:
                        self.scope.vars[bak] = value.copy()
            if self.placement is not None:
                out = self.placement.to_host(out)  # device → pinned → reply, under the lock
            return out, self.version

    def _live(self, names) -> dict:
        self._check_readable(names)
        out = {name: self.scope.vars[name] for name in names}
        return out if self.placement is None else self.placement.to_host(out)

    def _check_readable(self, names) -> None:
        for name in names:
            if name not in self._gb.vars or name not in self.scope.vars:
                raise KeyError(f"pserver {self.endpoint} holds no variable {name!r}")

    def _wait(self, ready, what):
        if not self._cond.wait_for(lambda: self._closed or ready(), timeout=self.options.barrier_timeout_s):
            missing = sorted(t for t in self.active if self._phase[t] != _BARRIERED)
            raise TimeoutError(f"pserver {self.endpoint}: {what} not complete after "
                               f"{self.options.barrier_timeout_s:.0f}s; waiting for trainers {missing}")
        if not ready():
            raise PserverStopping(f"pserver {self.endpoint} is stopping: {what} will not complete")

    def close(self) -> None:
        """The process is stopping: calls waiting for a sync round, a collective or the end of a
        checkpoint freeze fail at once (PserverStopping, UNAVAILABLE) and free their threads — a
        stopped pserver would otherwise wait for them, up to barrier_timeout_s or the freeze's
        lease, before it could exit."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self.gathers.close()

    def on_prefetch(self, trainer_id: int, table: str, ids):
        t = self._check_trainer(trainer_id)
        block = self.prefetch_blocks.get(table)
        if block is None:
            raise KeyError(f"pserver {self.endpoint} serves no table {table!r}")
        op = self.program.block(block).ops[0]
        ids = np.asarray(to_numpy(ids), dtype=np.int64).reshape(-1, 1)
        if not self.sync_mode:
            self.staleness.on_read(t, [table])
        # The prefetch block's own lock: its scratch variables are per block, and
        # the table serializes its own updates.
        with (self._block_locks[block] if not self.sync_mode else self._cond):
            self._wait_for_round(t)
            xp = self.exe.xp if self.placement is None else self.placement.xp_for(op.input("Ids")[0])
            self.scope.vars[op.input("Ids")[0]] = xp.asarray(ids) if xp is not np else ids
            self._run_block(block)
            name = op.output("Out")[0]
            out = self.scope.vars[name]  # a new array per call (SparseTable.lookup): no copy
            return out if self.placement is None else self.placement.to_host({name: out})[name]

    # -- checkpoints (psjob.cluster.pserver.checkpoint_service does the work) ---------------------------
    def on_checkpoint(self, dirname: str, step: int = 0, tag: str = "") -> list:
        """Trainer 0's checkpoint commands (freeze / save the table shard / thaw; see
        psjob.cluster.checkpoint_protocol); a plain tag saves the table shard under dirname."""
        return checkpoint_service.handle(self, dirname, step, tag)

    def restore_from_checkpoints(self, root: str, digest: bool = False):
        """At start-up, before serving: load this pserver's part of the newest good
        checkpoint under root (falling back past corrupt ones). Its CheckpointInfo, or None.
        `digest`: log the restored table's digest (checkpoint_restore._table_summary)."""
        return checkpoint_service.restore(self, root, digest)

    def exclusive(self):
        """The state's lock, for `with`: no request changes the state while it is held."""
        return self._cond

    def freeze(self, freeze_id: str, lease_s: float) -> int:
        """Stop applying updates for `lease_s` seconds (replacing any older freeze) once
        the updates already running finished; the version at the cut. Reads go on."""
        with self._cond:
            self._frozen_until = self._clock() + lease_s
            self._freeze_id = freeze_id
            self.wait_for_updates()
            return self.version

    def renew(self, freeze_id: str, lease_s: float) -> bool:
        """Extend freeze `freeze_id` by `lease_s` from now; False when it is no longer held
        (it expired, was thawed or replaced) and nothing changed."""
        with self._cond:
            held = self._freeze_id == freeze_id and self._frozen_until > self._clock()
            if held:
                self._frozen_until = self._clock() + lease_s
            return held

    def thaw(self, freeze_id: str | None = None) -> tuple[bool, bool]:
        """Release freeze `freeze_id`, or whatever is held when it is None (a restarted
        trainer 0). (expired, released): `expired` when the freeze named was no longer
        held (or, id-less, a lease had run out); `released` when an id-less thaw ended a
        live freeze."""
        with self._cond:
            now = self._clock()
            if freeze_id is None:
                released = self._frozen_until > now
                expired = 0 < self._frozen_until <= now
                self._frozen_until, self._freeze_id = 0.0, None
            elif self._freeze_id == freeze_id:
                released, expired = False, not self._frozen_until > now
                self._frozen_until, self._freeze_id = 0.0, None
            else:
                released, expired = False, True  # released by someone else, or replaced: leave it be
            self._cond.notify_all()
            return expired, released

    @property
    def frozen(self) -> bool:
        """A freeze is held and its lease has not run out: no update changes the state."""
        with self._cond:
            return self._frozen_until > self._clock()

    def _wait_while_frozen(self):
        # Called holding the lock; the freeze expires by itself (its lease), and a stopping
        # pserver (close()) fails the update at once: waiting out the lease would hold the
        # request's thread, and so the process's exit, for up to the whole lease.
        held = False
        try:
            while True:
                left = self._frozen_until - self._clock()
                if left <= 0:
                    return
                if self._closed:
                    raise PserverStopping(f"pserver {self.endpoint} is stopping: an update held by a "
                                          f"checkpoint freeze will not be applied")
                if not held:
                    held = True
                    self.updates_held += 1
                    self._cond.notify_all()
                self._cond.wait(left)
        finally:
            if held:
                self.updates_held -= 1

    def on_complete(self, trainer_id: int) -> int:
        t = self._check_trainer(trainer_id)
        with self._cond:
            if t in self.active:
                self.active.discard(t)
                self.completed.append(t)
                self.gathers.leave(t)
                if self.elastic:
                    self._log_membership("left", t)
                for name in self.recv_names:
                    if _slot_owner(name) == t:
                        self.scope.vars[name] = self._zero(name)
                if not self.active:
                    self.state = DONE
                elif self.sync_mode:
                    self._maybe_apply()
                self._cond.notify_all()
            return len(self.active)

    def on_join(self, trainer_id: int) -> tuple[int, list]:
        """Trainer `trainer_id` joins the member set (elastic jobs; a no-op for a member) →
        (version, members). A trainer that completed earlier may join again (an index
        scaled away and back). Refused once every member has left: the pserver is done."""
        t = self._check_trainer(trainer_id)
        with self._cond:
            if self.state == DONE:
                raise RuntimeError(f"pserver {self.endpoint}: every trainer has left and the pserver "
                                   f"is stopping; trainer {t} cannot join")
            if self.elastic and t not in self.active:
                if t in self.completed:
                    self.completed.remove(t)
                self.active.add(t)
                self._phase[t], self._awaiting[t] = _SENDING, 0
                for name in self.recv_names:
                    if _slot_owner(name) == t:
                        self.scope.vars[name] = self._zero(name)
                self._cond.notify_all()
                self._log_membership("joined", t)
            if self.elastic:
                self.gathers.join(t)  # a new process: its collectives count from 0 again
            return self.version, sorted(self.active)

    def _log_membership(self, what, t):
        # Parsed by tests/component/test_elastic_trainers.py: every round's member count.
        log.info("pserver %s: trainer %d %s at version %d; members %s", self.endpoint, t, what,
                 self.version, sorted(self.active))
        self._changed_at = time.monotonic() if self.sync_mode and self.active else None

    def on_register(self, worker_name: str) -> tuple[int, int]:
        """A trainer id for a pod without a stable index (a Deployment's pods).

        The same name always gets the same id. A new name gets the lowest id
        that nobody holds — neither registered nor seen in a request, so that
        after this pserver restarts the running trainers keep theirs. When
        every id is held, the new pod replaced a dead one: it takes the id of
        the unfinished trainer silent longest, once silent for
        `reclaim_after_s`; before that the registration is refused (the pod
        fails and is restarted, and asks again).
        """
        with self._cond:
            if worker_name in self._registered:
                return self._registered[worker_name], self.fanin
            held = set(self._registered.values()) | set(self._last_seen)
            free = [t for t in range(self.fanin) if t not in held]
            now = self._clock()
            if free:
                tid = free[0]
            else:
                silent = sorted((self._last_seen.get(t, 0.0), t) for t in self.active
                                if now - self._last_seen.get(t, 0.0) >= self.options.reclaim_after_s)
                if not silent:
                    raise ValueError(
                        f"pserver {self.endpoint}: all {self.fanin} trainer ids are held by "
                        f"trainers that are running or completed; {worker_name!r} can take the id "
                        f"of a trainer silent for {self.options.reclaim_after_s:.0f}s")
                tid = silent[0][1]
                for name in [n for n, t in self._registered.items() if t == tid]:
                    del self._registered[name]
            self._registered[worker_name] = tid
            self._last_seen[tid] = now
            return tid, self.fanin

    def on_gather(self, trainer_id: int, name: str, round_: int, value) -> list:
        return self.gathers.gather(self._check_trainer(trainer_id), name, round_, np.array(value))

    def on_status(self) -> dict:
        with self._cond:
            return {"state": self.state, "version": self.version, "trainers": self.fanin,
                    "completed": sorted(self.completed), "endpoint": self.endpoint,
                    "members": sorted(self.active)}

    def wait_done(self, timeout_s: float | None = None) -> bool:
        """Block until every trainer completed (what listen_and_serv's loop waits for)."""
        with self._cond:
            return self._cond.wait_for(lambda: self.state == DONE, timeout=timeout_s)
