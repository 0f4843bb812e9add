"""Async mode (and geo's deltas): every push is applied at once, without a round.

Each pushed gradient block is optimized at once by its block; barriers return
immediately. The LR block runs once per as many pushed blocks as this pserver optimizes
(about once per trainer step). Geo deltas are added to their parameters in place.

Updates take no global lock: one lock per block (a block's ops share its scratch
variables), so a prefetch never waits for a dense optimizer step and two parameters
update in parallel. `wait_for_updates` lets a checkpoint freeze wait for the updates
running at its cut. Every applied gradient's staleness (pserver_staleness.py) is
returned to the pushing trainer.
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from psjob.cluster.pserver.leases import FreezeLease
from psjob.cluster.pserver.pserver_staleness import StalenessTracker, param_of_grad
from psjob.cluster.pserver.pushes import apply_delta
from psjob.cluster.pserver.state_core import PserverCore
from psjob.fluid.transpiler.pserver_pass import TRAINER_ID_VAR


class AsyncApply:
    def __init__(self, core: PserverCore, lease: FreezeLease):
        self.core, self.lease = core, lease
        program = core.program
        self.staleness = StalenessTracker({g: param_of_grad(program, g, b) for g, b in core.grad_blocks.items()})
        self.block_locks = {idx: threading.Lock() for idx in range(len(program.blocks))}
        self._updates_in_flight = 0
        # Callers of wait_for_updates waiting now: an update that ends notifies the core's
        # condition only for them. Notifying on every push woke every waiter of that
        # condition (the process's main thread waits on it for the job's end) once per push.
        self._draining = 0
        self._pushes = 0  # gradient blocks optimized: the LR block runs every len(grad_blocks)

    def apply(self, t: int, checked: dict[str, Any], is_delta: bool) -> int:
        """Apply one checked push of trainer t; → its staleness (the most updates from other
        pushes any of its blocks missed since t last read it)."""
        core = self.core
        with core._cond:
            self.lease.wait_while_frozen()
            self._updates_in_flight += 1
        staleness = 0
        try:
            for name, value in checked.items():
                block = core.grad_blocks.get(name, 0)  # a geo delta names a parameter: block 0's lock
                with self.block_locks.get(block, self.block_locks[0]):
                    staleness = max(staleness, self.staleness.on_update(t, name))
                    if is_delta:
                        apply_delta(core, name, value)
                    else:
                        core.scope.vars[name] = value
                        self._optimize(t, name)
        finally:
            with core._cond:
                self._updates_in_flight -= 1
                if self._draining and not self._updates_in_flight:
                    core._cond.notify_all()
        return staleness

    def wait_for_updates(self) -> None:
        """Block (holding the core's condition) until no async update is running."""
        self._draining += 1
        try:
            self.core._cond.wait_for(lambda: self._updates_in_flight == 0)
        finally:
            self._draining -= 1

    def _optimize(self, t: int, name: str) -> None:
        """Run the optimize block of gradient `name` (the caller holds that block's lock)."""
        core = self.core
        block = core.grad_blocks.get(name)
        if block is None:
            return
        if core.lr_block >= 0:
            with core._cond:
                self._pushes += 1
                due = (self._pushes - 1) % max(1, len(core.grad_blocks)) == 0
            if due:
                with self.block_locks[core.lr_block]:
                    core.run_block(core.lr_block)
        if core.dc_asgd:
            core.scope.vars[TRAINER_ID_VAR] = core.exe.xp.asarray([t], dtype=np.int64)
        core.run_block(block)
        with core._cond:
            core.version += 1
