"""Prefetches first: an async update steps aside, between blocks, while a prefetch runs.

A trainer's step waits on its prefetch (the embedding rows its forward pass needs), never
on its push being applied. Both run as Python threads of one process, so a prefetch that
arrives while a push's optimize blocks run shares the GIL with them slice by slice
(sys.setswitchinterval) and takes several times its own CPU time. `ReadsFirst` lets each
update wait, before its next block, until the prefetches that were in flight when it got
there are answered — not the ones that start later, so a stream of prefetches from many
trainers delays each block by about one prefetch, never more than `max_wait_s`. The
prefetch's own work and the update's blocks are unchanged.
"""
from __future__ import annotations

import threading

# The most an update waits before one of its blocks (a prefetch's work on a loaded core is
# ~0.5-1 ms): a read that stalls (a sync round, a slow device copy) delays updates no more.
MAX_WAIT_S = 0.002


class ReadsFirst:
    """The prefetches in flight (`begin()` → a ticket, `end(ticket)`) that updates wait on."""

    def __init__(self, max_wait_s: float = MAX_WAIT_S) -> None:
        self.max_wait_s = float(max_wait_s)
        self._cond = threading.Condition(threading.Lock())
        self._next = 0                 # the next read's ticket
        self._active: set[int] = set()  # tickets of the reads in flight
        self._waiting = 0              # updates waiting: only then does a read's end notify

    def begin(self) -> int:
        with self._cond:
            ticket = self._next
            self._next += 1
            self._active.add(ticket)
            return ticket

    def end(self, ticket: int) -> None:
        with self._cond:
            self._active.discard(ticket)
            if self._waiting:
                self._cond.notify_all()

    def yield_to_reads(self) -> None:
        """Before an update's next block: wait (up to max_wait_s) for the reads in flight now."""
        if not self._active:  # the common case: no read in flight, no lock
            return
        with self._cond:
            arrived = self._next
            self._waiting += 1
            try:
                self._cond.wait_for(lambda: not self._active or min(self._active) >= arrived,
                                    timeout=self.max_wait_s)
            finally:
                self._waiting -= 1
