"""PserverState: a pserver's behaviour, independent of any transport.

It interprets one pserver program — the `listen_and_serv` op's attributes say which
block optimizes which gradient — with a real Executor over its own Scope, and answers
the request kinds of `psjob.cluster.protocol.ServerHandler`. The gRPC server
(psjob.cluster.rpc.server) serves it unchanged; the in-memory transport
(psjob.cluster.inmemory) calls it directly, which is how the tests drive real pserver
programs in one process.

Lifecycle: `PserverState(program)` → `run_startup(startup_program)` (state SERVING) →
requests from trainers → every trainer `on_complete` (state STOPPING).

This class only routes each request to the part that owns it, one module each:

- state_core.py: the program's facts, the Scope, the lock, state and version (the base);
- pushes.py: what a push may hold (refused whole when it holds a NaN) and geo deltas;
- sync_rounds.py: sync mode's barriers and the one update per round;
- async_apply.py: async mode's immediate updates, per-block locks, staleness;
- reads.py: pulls and prefetches;
- leases.py: checkpoint freezes (a lease during which no update applies);
- membership.py: trainer ids, registration, elastic joins, completions;
- trainer_gather.py: fleet.util's collectives among the members;
- checkpoint_service.py: the checkpoint commands and restores (it keeps its bookkeeping
  in the attributes set at the end of __init__).
"""
from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from psjob.cluster.protocol import ServerHandler
from psjob.cluster.pserver import checkpoint_service
from psjob.cluster.pserver.async_apply import AsyncApply
from psjob.cluster.pserver.leases import FreezeLease
from psjob.cluster.pserver.membership import Membership
from psjob.cluster.pserver.pushes import apply_delta, check_owner, check_value
from psjob.cluster.pserver.reads import Reads
from psjob.cluster.pserver.state_core import (
    DONE,
    SERVING,
    STARTING,
    PserverCore,
    PserverOptions,
    PserverStopping,
)
from psjob.cluster.pserver.sync_rounds import SyncRounds
from psjob.cluster.pserver.trainer_gather import TrainerGather
from psjob.fluid.core import Scope
from psjob.fluid.executor import Executor
from psjob.foundation.checkpoint.backend import Storage

__all__ = ["DONE", "SERVING", "STARTING", "PserverOptions", "PserverState", "PserverStopping"]


class PserverState(PserverCore, ServerHandler):
    def __init__(self, program: Any, *, scope: Scope | None = None, executor: Executor | None = None,
                 place: Any = None, options: PserverOptions = PserverOptions(),
                 clock: Callable[[], float] = time.monotonic):
        super().__init__(program, scope=scope, executor=executor, place=place, options=options, clock=clock)
        members: set[int] = set() if self.elastic else set(range(self.fanin))
        self.rounds = SyncRounds(self, members)
        # fleet.util's collectives, among the live members (joins and leaves passed on)
        self.gathers = TrainerGather(self.fanin, options.barrier_timeout_s, members=members)
        self.members = Membership(self, members, self.rounds, self.gathers)
        self.lease = FreezeLease(self)
        self.updates = AsyncApply(self, self.lease)
        self.reads = Reads(self, self.rounds, self.updates)
        # Checkpoints (checkpoint_service): a random id of this process, so trainer 0 notices
        # a restart mid-checkpoint; the step restored at start-up.
        self.incarnation = uuid.uuid4().hex
        self.restored_step: int | None = None
        # Directories CheckpointNotify may write under; None: anywhere (an in-process pserver;
        # a served one gets its roots from PserverProcess).
        self.save_roots: tuple | None = None
        # Delta checkpoints: the chain link the table's tracked changes are relative to (None:
        # no delta possible, the next save must be a base), whether to track changes from a
        # restore on (PSJOB_CHECKPOINT_INCREMENTAL), and the changes handed to saves not yet
        # committed: [(link id, changed ids, evicted ids)].
        self.delta_base: str | None = None
        self.incremental_checkpoints = False
        self.pending_changes: list = []
        self.last_saved_link: str | None = None

    # -- lifecycle -----------------------------------------------------------------------
    def run_startup(self, startup_program: Any) -> None:
        """Initialize this pserver's variables, then start serving."""
        with self._cond:
            self.exe.run(startup_program, scope=self.scope)
            for name in self.recv_names:
                if name not in self.scope.vars:
                    self.scope.vars[name] = self.zero(name)
            self.state = SERVING
            self._cond.notify_all()

    def close(self) -> None:
        """The process is stopping: calls waiting for a sync round, a collective or the end of a
        checkpoint freeze fail at once (PserverStopping, UNAVAILABLE) and free their threads — a
        stopped pserver would otherwise wait for them, up to barrier_timeout_s or the freeze's
        lease, before it could exit."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self.gathers.close()

    def wait_done(self, timeout_s: float | None = None) -> bool:
        """Block until every trainer completed (what listen_and_serv's loop waits for)."""
        with self._cond:
            return self._cond.wait_for(lambda: self.state == DONE, timeout=timeout_s)

    @property
    def active(self) -> set[int]:
        """The member set: trainers that take part in rounds and collectives."""
        return self.members.active

    @property
    def completed(self) -> list[int]:
        return self.members.completed

    # -- pushes --------------------------------------------------------------------------
    def on_send(self, trainer_id: int, values: dict[str, Any], is_delta: bool = False) -> int:
        """Apply (async) or store (sync) one push; → its staleness: the most updates from other
        pushes any of its blocks missed since this trainer last pulled it (0 in sync mode)."""
        t = self.members.check(trainer_id)
        check_owner(t, values)
        checked = {name: check_value(self, name, value, is_delta) for name, value in values.items()}
        if self.placement is not None:
            checked = self.placement.to_device(checked)  # one staged copy for the whole request
        if not self.sync_mode:
            return self.updates.apply(t, checked, is_delta)
        with self._cond:
            self.rounds.wait_for_round(t)
            self.lease.wait_while_frozen()
            for name, value in checked.items():
                if is_delta:
                    apply_delta(self, name, value)
                    continue
                self.scope.vars[name] = value
        return 0

    def on_send_and_get(self, trainer_id: int, values: dict[str, Any],
                        names: Iterable[str]) -> tuple[int, dict[str, Any], int]:
        """An async push of gradients, then a read of `names` (on_get) after it is applied: the
        communicator's push of one step and its pull for the next in one request. The names
        are checked first, so a request naming an unknown variable applies nothing.
        → (staleness, {name: value}, version)."""
        if self.sync_mode:
            raise ValueError(f"pserver {self.endpoint}: a push that pulls is for async mode "
                             f"(sync trainers pull after the round's barrier)")
        names = list(names)
        self.check_readable(names)
        staleness = self.on_send(trainer_id, values, False)
        fresh, version = self.on_get(trainer_id, names)
        return staleness, fresh, version

    def on_barrier(self, trainer_id: int, kind: str) -> int:
        t = self.members.check(trainer_id)
        if kind not in ("send", "fetch"):
            raise ValueError(f"barrier kind must be 'send' or 'fetch', got {kind!r}")
        with self._cond:
            return self.rounds.barrier(t, kind)

    def wait_for_updates(self) -> None:
        """Block (holding the state's condition) until no async update is running."""
        self.updates.wait_for_updates()

    # -- reads ---------------------------------------------------------------------------
    def on_get(self, trainer_id: int, names: Iterable[str]) -> tuple[dict[str, Any], int]:
        return self.reads.get(self.members.check(trainer_id), names)

    def on_prefetch(self, trainer_id: int, table: str, ids: Any) -> Any:
        return self.reads.prefetch(self.members.check(trainer_id), table, ids)

    # -- checkpoints (psjob.cluster.pserver.checkpoint_service does the work) ------------
    def on_checkpoint(self, dirname: str, step: int = 0, tag: str = "") -> list[str]:
        """Trainer 0's checkpoint commands (freeze / save the table shard / thaw; see
        psjob.cluster.checkpoint_protocol); a plain tag saves the table shard under dirname."""
        return checkpoint_service.handle(self, dirname, step, tag)

    def restore_from_checkpoints(self, root: str, digest: bool = False, store: Storage | None = None) -> Any:
        """At start-up, before serving: load this pserver's part of the newest good
        checkpoint under root (falling back past corrupt ones). Its CheckpointInfo, or None.
        `digest`: log the restored table's digest (checkpoint_restore._table_summary);
        `store`: root's Storage, when the caller resolved it already."""
        return checkpoint_service.restore(self, root, digest, store)

    def exclusive(self) -> Any:
        """The state's lock, for `with`: no request changes the state while it is held."""
        return self._cond

    def freeze(self, freeze_id: str, lease_s: float) -> int:
        """Stop applying updates for `lease_s` seconds (replacing any older freeze) once
        the updates already running finished; the version at the cut. Reads go on."""
        with self._cond:
            self.lease.hold(freeze_id, lease_s)
            self.updates.wait_for_updates()
            return self.version

    def renew(self, freeze_id: str, lease_s: float) -> bool:
        """leases.FreezeLease.renew, under the state's lock."""
        with self._cond:
            return self.lease.renew(freeze_id, lease_s)

    def thaw(self, freeze_id: str | None = None) -> tuple[bool, bool]:
        """leases.FreezeLease.thaw, under the state's lock: (expired, released)."""
        with self._cond:
            return self.lease.thaw(freeze_id)

    @property
    def frozen(self) -> bool:
        """A freeze is held and its lease has not run out: no update changes the state."""
        with self._cond:
            return self.lease.frozen

    @property
    def updates_held(self) -> int:
        """Pushes waiting out a freeze now (notified under the state's lock)."""
        return self.lease.updates_held

    # -- membership and collectives ------------------------------------------------------
    def on_complete(self, trainer_id: int) -> int:
        t = self.members.check(trainer_id)
        with self._cond:
            return self.members.complete(t)

    def on_join(self, trainer_id: int) -> tuple[int, list[int]]:
        """Trainer `trainer_id` joins the member set (elastic jobs; see membership.py) →
        (version, members)."""
        t = self.members.check(trainer_id)
        with self._cond:
            return self.members.join(t)

    def on_register(self, worker_name: str) -> tuple[int, int]:
        """A trainer id for a pod without a stable index (membership.Membership.register)."""
        with self._cond:
            return self.members.register(worker_name)

    def on_gather(self, trainer_id: int, name: str, round_: int, value: Any) -> list[Any]:
        return self.gathers.gather(self.members.check(trainer_id), name, round_, np.array(value))

    def on_status(self) -> dict[str, Any]:
        with self._cond:
            return {"state": self.state, "version": self.version, "trainers": self.fanin,
                    "completed": sorted(self.completed), "endpoint": self.endpoint,
                    "members": sorted(self.active)}
