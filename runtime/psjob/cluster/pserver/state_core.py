"""What every part of a pserver's state shares: the program's facts, the scope, the lock.

`PserverCore` reads the pserver program's one `listen_and_serv` op (which block
optimizes which gradient, the LR and checkpoint blocks, the trainer capacity, the mode)
and holds what the parts of `pserver_state.PserverState` (sync_rounds, async_apply,
leases, membership, reads) all use: the Scope and Executor, the state's one condition
(`_cond`, held for every change a sync round or a membership change makes), the
lifecycle state and the version (rounds or async updates applied). PserverState is a
PserverCore; each part gets it as `core`.

The process may move the state to a device after it starts (pserver.py sets `exe` and
`placement`), so parts read `core.exe` and `core.placement` at each use.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from psjob.fluid.core import CPUPlace, Scope, SelectedRows
from psjob.fluid.executor import Executor
from psjob.fluid.framework import GraphError, VarType
from psjob.fluid.transpiler.slicing import get_varname_parts

STARTING, SERVING, DONE = "STARTING", "SERVING", "STOPPING"


@dataclass(frozen=True)
class PserverOptions:
    # A sync round waits for the slowest trainer; past this a pull or barrier fails.
    barrier_timeout_s: float = 600.0
    # A trainer silent this long may have its id given to a newly registering
    # pod (a Deployment replaced a dead trainer pod under a new name).
    reclaim_after_s: float = 30.0


class PserverStopping(ConnectionAbortedError):
    """The pserver is stopping (SIGTERM): a call that waited for trainers gets UNAVAILABLE."""


def _block_map(entries: Iterable[Any] | None, what: str) -> dict[str, int]:
    out = {}
    for e in entries or []:
        name, sep, idx = str(e).rpartition(":")
        if not sep or not idx.isdigit():
            raise GraphError(f"listen_and_serv: malformed {what} entry {e!r} (want 'name:block')")
        out[name] = int(idx)
    return out


def slot_owner(name: str) -> int | None:
    """The trainer whose receiving slot `name` is (`….trainer_<t>[.pserver_<k>]`), or None."""
    part = get_varname_parts(name)[2]
    if not part:
        return None
    digits = part[len("trainer_"):].split(".")[0]
    return int(digits) if digits.isdigit() else None


class PserverCore:
    def __init__(self, program: Any, *, scope: Scope | None = None, executor: Executor | None = None,
                 place: Any = None, options: PserverOptions = PserverOptions(),
                 clock: Callable[[], float] = time.monotonic):
        ops = [op for op in program.global_block().ops if op.type == "listen_and_serv"]
        if len(ops) != 1:
            raise GraphError(f"a pserver program has exactly one listen_and_serv op, this one has {len(ops)}")
        op = ops[0]
        self.program, self.options = program, options
        self.scope = scope if scope is not None else Scope()
        self.exe = executor if executor is not None else Executor(place or CPUPlace())
        self.endpoint: str = op.attr("endpoint", "")
        self.fanin = int(op.attr("Fanin", 1))
        self.sync_mode = bool(op.attr("sync_mode", True))
        self.dc_asgd = bool(op.attr("dc_asgd", False))
        self.elastic = bool(op.attr("elastic", False))
        self.grad_blocks = _block_map(op.attr("grad_to_block_id"), "grad_to_block_id")
        self.prefetch_blocks = _block_map(op.attr("prefetch_var_name_to_block_id"), "prefetch")
        self.lr_block = int(op.attr("lr_decay_block_id", -1))
        self.checkpoint_block = int(op.attr("checkpoint_block_id", -1))
        self.optimize_blocks = [b.idx if hasattr(b, "idx") else int(b) for b in op.attr("optimize_blocks") or []]
        self.recv_names = list(op.input("X"))
        self._gb = program.global_block()
        self._cond = threading.Condition()
        self._closed = False  # close(): the process is stopping; nothing waits for trainers any more
        self._clock = clock  # seconds of freeze leases and trainer silence (tests step it by hand)
        self.state = STARTING
        self.version = 0
        # A GPU pserver (psjob.cluster.pserver.pserver, ServeOptions.device) sets this to an object
        # with to_device / to_host (one staged copy per request), executor_for(block)
        # and xp_for(name); None keeps every value in the executor's array module.
        self.placement: Any = None
        self.telemetry: Any = None  # the process's PserverTelemetry, when it exports metrics
        # (name, is_delta) → the declared (dtype, shape) a push's value is checked against (pushes.py)
        self.push_declarations: dict[tuple[str, bool], tuple[np.dtype, tuple]] = {}

    def xp_for(self, name: str) -> Any:
        """The array module variable `name` lives in."""
        return self.exe.xp if self.placement is None else self.placement.xp_for(name)

    def zero(self, name: str) -> Any:
        var = self._gb.var(name)
        xp = self.xp_for(name)
        if var.type == VarType.SELECTED_ROWS:
            return SelectedRows(xp.zeros(0, dtype=np.int64), xp.zeros((0,) + tuple(var.shape[1:]), var.dtype),
                                var.shape[0])
        return xp.zeros(tuple(var.shape), dtype=var.dtype)

    def zero_slots_of(self, t: int) -> None:
        """Zero trainer t's receiving slots: it contributes nothing from now on."""
        for name in self.recv_names:
            if slot_owner(name) == t:
                self.scope.vars[name] = self.zero(name)

    def run_block(self, idx: int) -> None:
        # A GPU pserver runs its table blocks on the host executor (the table does its own
        # one-copy device transfers) and every other block on the device.
        exe = self.exe if self.placement is None else self.placement.executor_for(idx)
        exe.run_block(self.program, idx, self.scope)

    def check_readable(self, names: Iterable[str]) -> None:
        for name in names:
            if name not in self._gb.vars or name not in self.scope.vars:
                raise KeyError(f"pserver {self.endpoint} holds no variable {name!r}")
