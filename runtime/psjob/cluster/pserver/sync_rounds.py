"""Sync mode's rounds: the send and fetch barriers, and the one update per round.

Per round, each trainer pushes its gradient blocks (stored in its own slots,
`<grad>.trainer_<t>` when there are several trainers; a repeated push overwrites, so
retries are harmless), then sends a "send" barrier. When every member has, the LR block
runs once and each optimize block runs (it merges the trainers' slots with sum + scale
1/trainers, then optimizes); the version (rounds applied) goes up. A trainer's pull,
prefetch, push and "fetch" barrier wait until the round it took part in is applied, and
the fetch barrier ends its round: a trainer pulls only from the pservers that hold its
dense parameters, so at one that holds only table rows its fetch barrier is what keeps
it from reading rows from before the round, or overwriting the gradient the round has
yet to apply with its next step's. A repeated barrier in the same phase is ignored, so a
retried barrier is not counted twice.

Elastic jobs: each round averages over the members it had (the `trainer_mean` scale ops
are reset to 1/members before it runs); membership.py says who they are.

Every method here is called holding the core's condition.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable

from psjob.cluster.pserver.state_core import PserverCore, PserverStopping
from psjob.fluid.transpiler.pserver_pass import TRAINER_MEAN_ATTR

log = logging.getLogger("psjob.pserver")

_SENDING, _BARRIERED = "sending", "barriered"


class SyncRounds:
    def __init__(self, core: PserverCore, members: set[int]):
        """`members`: the live member set (membership.py's, shared): a round waits for them."""
        self.core, self.members = core, members
        self._phase = {t: _SENDING for t in range(core.fanin)}
        self._awaiting = {t: 0 for t in range(core.fanin)}  # the round a barriered trainer waits for
        self._changed_at: float | None = None  # elastic: monotonic time of the last membership change

    def barrier(self, t: int, kind: str) -> int:
        """Trainer t's "send" or "fetch" barrier (a no-op in async mode); → the version."""
        core = self.core
        if not core.sync_mode:
            return core.version
        if kind == "send" and self._phase[t] == _SENDING:
            self._phase[t] = _BARRIERED
            self._awaiting[t] = core.version + 1
            self.maybe_apply()
        elif kind == "fetch" and self._phase[t] == _BARRIERED:
            self.wait_for_round(t)
            self._phase[t] = _SENDING
        return core.version

    def wait_for_round(self, t: int) -> None:
        """Sync: a trainer that has sent its "send" barrier waits for that round."""
        if self.core.sync_mode and self._phase[t] == _BARRIERED:
            self._wait(lambda: self.core.version >= self._awaiting[t], f"round {self._awaiting[t]}")

    def maybe_apply(self) -> None:
        """Apply the round if every member has sent its barrier for it."""
        core = self.core
        if not self.members or any(self._phase[t] != _BARRIERED or self._awaiting[t] != core.version + 1
                                   for t in self.members):
            return
        if core.elastic:
            self._set_trainer_mean(1.0 / len(self.members))
        if core.lr_block >= 0:
            core.run_block(core.lr_block)
        for idx in core.optimize_blocks:
            if idx != core.lr_block:
                core.run_block(idx)
        core.version += 1
        if self._changed_at is not None:
            # The time to resume: how long the first round with the new members took to apply.
            log.info("pserver %s: round %d applied with members %s, %.2fs after they changed",
                     core.endpoint, core.version, sorted(self.members), time.monotonic() - self._changed_at)
            self._changed_at = None
        core._cond.notify_all()

    def rejoin(self, t: int) -> None:
        """Trainer t (re)joins between rounds: its next barrier is a send."""
        self._phase[t], self._awaiting[t] = _SENDING, 0

    def members_changed(self) -> None:
        self._changed_at = time.monotonic() if self.core.sync_mode and self.members else None

    def _set_trainer_mean(self, scale: float) -> None:
        # The ops read their attributes when they run: no recompile.
        for block in self.core.program.blocks:
            for op in block.ops:
                if op.type == "scale" and op.attr(TRAINER_MEAN_ATTR, False):
                    op._set_attr("scale", scale)

    def _wait(self, ready: Callable[[], bool], what: str) -> None:
        core = self.core
        if not core._cond.wait_for(lambda: core._closed or ready(), timeout=core.options.barrier_timeout_s):
            missing = sorted(t for t in self.members if self._phase[t] != _BARRIERED)
            raise TimeoutError(f"pserver {core.endpoint}: {what} not complete after "
                               f"{core.options.barrier_timeout_s:.0f}s; waiting for trainers {missing}")
        if not ready():
            raise PserverStopping(f"pserver {core.endpoint} is stopping: {what} will not complete")
