"""Prefetches first: an async update steps aside, between blocks, while a prefetch runs.

A trainer's step waits on its prefetch (the embedding rows its forward pass needs), never
on its push being applied. Both run as Python threads of one process, so a prefetch that
arrives while a push's optimize blocks run shares the GIL with them slice by slice
(sys.setswitchinterval) and takes several times its own CPU time. `ReadsFirst` lets each
update wait, before its next block, until the prefetches in flight are answered — bounded
by `max_wait_s` per block, so a stream of prefetches from many trainers delays updates
but never starves them. The prefetch's own work and the update's blocks are unchanged.
"""
from __future__ import annotations

import threading

# The most an update waits before one of its blocks: about one prefetch's work on a
# loaded core. Many trainers prefetching back to back thus slow updates by at most this.
MAX_WAIT_S = 0.002


class ReadsFirst:
    """A count of prefetches in flight that updates wait on (`begin()`/`end()` around each read)."""

    def __init__(self, max_wait_s: float = MAX_WAIT_S) -> None:
        self.max_wait_s = float(max_wait_s)
        self._cond = threading.Condition(threading.Lock())
        self._reads = 0

    def begin(self) -> None:
        with self._cond:
            self._reads += 1

    def end(self) -> None:
        with self._cond:
            self._reads -= 1
            if not self._reads:
                self._cond.notify_all()

    def yield_to_reads(self) -> None:
        """Before an update's next block: wait (up to max_wait_s) while a prefetch runs."""
        if not self._reads:  # the common case: no read in flight, no lock
            return
        with self._cond:
            self._cond.wait_for(lambda: not self._reads, timeout=self.max_wait_s)
