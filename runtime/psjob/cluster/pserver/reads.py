"""Reads: pulls of variables and prefetches of table rows.

Sync mode: a trainer that has sent its round's barrier reads after that round is
applied (sync_rounds.py), under the core's condition, and gets copies. Async mode: a
pull takes no lock (as Hogwild-style pservers do) and no copy — the transport encodes
(copies) the live values before replying, which may mix old and new rows of one step, as
a copy taken here would; DC-ASGD copies under the lock and keeps each trainer's backup.
A prefetch runs the table's prefetch block under that block's own lock (its scratch
variables are per block; the table serializes its own updates). Async reads tell the
staleness tracker what the trainer has seen.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from psjob.cluster.pserver.async_apply import AsyncApply
from psjob.cluster.pserver.state_core import PserverCore
from psjob.cluster.pserver.sync_rounds import SyncRounds
from psjob.fluid.core import to_numpy


class Reads:
    def __init__(self, core: PserverCore, rounds: SyncRounds, updates: AsyncApply):
        self.core, self.rounds, self.updates = core, rounds, updates

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
        block = core.prefetch_blocks.get(table)
        if block is None:
            raise KeyError(f"pserver {core.endpoint} serves no table {table!r}")
        op = core.program.block(block).ops[0]
        ids = np.asarray(to_numpy(ids), dtype=np.int64).reshape(-1, 1)
        if not core.sync_mode:
            self.updates.staleness.on_read(t, [table])
        with (self.updates.block_locks[block] if not core.sync_mode else core._cond):
            self.rounds.wait_for_round(t)
            ids_name = op.input("Ids")[0]
            xp = core.xp_for(ids_name)
            core.scope.vars[ids_name] = xp.asarray(ids) if xp is not np else ids
            core.run_block(block)
            name = op.output("Out")[0]
            out = core.scope.vars[name]
            return out if core.placement is None else core.placement.to_host({name: out})[name]
