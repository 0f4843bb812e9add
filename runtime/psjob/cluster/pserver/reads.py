"""Reads: pulls of variables and prefetches of table rows.

Sync mode: a trainer that has sent its round's barrier reads after that round is
applied (sync_rounds.py), under the core's condition, and gets copies. Async mode: a
pull takes no lock (as Hogwild-style pservers do) and no copy — the transport encodes
(copies) the live values before replying, which may mix old and new rows of one step, as
a copy taken here would; DC-ASGD copies under the lock and keeps each trainer's backup.
A prefetch reads the table directly when its prefetch block is the one lookup_sparse_table
op a transpiled pserver has (the op's kernel, without the executor or scratch variables:
the table serializes its own updates), else runs that block under the block's own lock.
Async reads tell the staleness tracker what the trainer has seen.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from psjob.cluster.pserver.async_apply import AsyncApply
from psjob.cluster.pserver.state_core import PserverCore
from psjob.cluster.pserver.sync_rounds import SyncRounds
from psjob.fluid.core import to_numpy
from psjob.fluid.ops.dist_ops import sparse_table_rows


class Reads:
    def __init__(self, core: PserverCore, rounds: SyncRounds, updates: AsyncApply):
        self.core, self.rounds, self.updates = core, rounds, updates
        self._plans: dict[str, _DirectLookup | _PrefetchBlock] = {}  # table → how to read it

    def get(self, t: int, names: Iterable[str]) -> tuple[dict[str, Any], int]:
        """Trainer t's pull of `names` → ({name: value}, version)."""
        core = self.core
        names = list(names)
        if not core.sync_mode:
            self.updates.staleness.on_read(t, names)
        if not core.sync_mode and not core.dc_asgd:
            return self.live(names), core.version
        with core._cond:
            self.rounds.wait_for_round(t)
            out = {}
            core.check_readable(names)
            for name in names:
                value: Any = core.scope.vars[name]
                out[name] = value.copy() if core.placement is None else value
                if core.dc_asgd:
                    bak = f"{name}.trainer_{t}_bak"
                    if bak in core.scope.vars:
                        core.scope.vars[bak] = value.copy()
            if core.placement is not None:
                out = core.placement.to_host(out)  # device → pinned → reply, under the lock
            return out, core.version

    def live(self, names: Iterable[str]) -> dict[str, Any]:
        """The variables as they are now, no lock, no copy (host copies on a device pserver)."""
        core = self.core
        names = list(names)
        core.check_readable(names)
        out = {name: core.scope.vars[name] for name in names}
        return out if core.placement is None else core.placement.to_host(out)

    def prefetch(self, t: int, table: str, ids: Any) -> Any:
        """Rows of `table` for `ids` (a new array per call: SparseTable.lookup)."""
        core = self.core
        plan = self._plans.get(table)
        if plan is None:
            plan = self._plans[table] = self._plan(table)
        ids = np.asarray(to_numpy(ids), dtype=np.int64).reshape(-1)
        if core.sync_mode:
            with core._cond:
                self.rounds.wait_for_round(t)
                return plan.run(ids)
        self.updates.staleness.on_read(t, (table,))
        if plan.lock is None:
            return plan.run(ids)
        with plan.lock:
            return plan.run(ids)

    def _plan(self, table: str) -> _DirectLookup | _PrefetchBlock:
        core = self.core
        block = core.prefetch_blocks.get(table)
        if block is None:
            raise KeyError(f"pserver {core.endpoint} serves no table {table!r}")
        ops = core.program.block(block).ops
        run_block = _PrefetchBlock(core, block, self.updates.block_locks[block])
        if core.placement is None and len(ops) == 1 and ops[0].type == "lookup_sparse_table":
            return _DirectLookup(core, ops[0], run_block)
        return run_block


class _DirectLookup:
    """A prefetch block that is one lookup_sparse_table op on a host pserver, read without
    the executor: the op's own kernel (psjob.fluid.ops.dist_ops.sparse_table_rows) on the
    table, no scratch variables, hence no block lock (the table serializes itself). A read
    that fails runs the block after all, so its error is the executor's, naming the op."""

    lock = None

    def __init__(self, core: PserverCore, op: Any, block: _PrefetchBlock) -> None:
        self.core, self.table_var, self.block = core, op.input("W")[0], block
        padding = op.attr("padding_idx")
        self.padding = -1 if padding is None else int(padding)

    def run(self, ids: np.ndarray) -> Any:
        if self.core.placement is not None:  # placed on a device after the plan was made
            with self.block.lock:
                return self.block.run(ids)
        try:
            return sparse_table_rows(self.core.scope.vars.get(self.table_var), self.table_var, ids, self.padding)
        except Exception:
            with self.block.lock:
                return self.block.run(ids)


class _PrefetchBlock:
    """Any other prefetch block (a device pserver's, a customized one): run by the executor
    under the block's lock (its scratch variables are per block)."""

    def __init__(self, core: PserverCore, block: int, lock: Any) -> None:
        self.core, self.block, self.lock = core, block, lock
        op = core.program.block(block).ops[0]
        self.ids_var, self.out_var = op.input("Ids")[0], op.output("Out")[0]

    def run(self, ids: np.ndarray) -> Any:
        core = self.core
        ids = ids.reshape(-1, 1)
        xp = core.xp_for(self.ids_var)
        core.scope.vars[self.ids_var] = xp.asarray(ids) if xp is not np else ids
        core.run_block(self.block)
        out = core.scope.vars[self.out_var]
        return out if core.placement is None else core.placement.to_host({self.out_var: out})[self.out_var]
