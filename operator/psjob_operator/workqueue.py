"""A tiny asyncio work queue with per-key exclusivity and coalescing.

Watch events arrive in bursts (a job with 100 workers produces hundreds of pod
events); reconciling once per event would hammer the API server. Instead each
event only marks its job "due", and workers take due jobs one at a time:

- a key is never processed by two workers at once;
- adding a key that is already due keeps the earlier due time (coalescing);
- adding a key while it is being processed defers it until `done(key)`;
- `add(key, delay)` schedules resyncs, deadlines and retries.

Everything runs on one event loop; nothing here is thread-safe by design.
"""
from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Hashable


class WorkQueue:
    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._due: dict[Hashable, float] = {}
        self._deferred: dict[Hashable, float] = {}
        self._processing: set[Hashable] = set()
        self._wakeup = asyncio.Event()

    def add(self, key: Hashable, delay: float = 0.0) -> None:
        due = self._clock() + max(0.0, delay)
        target = self._deferred if key in self._processing else self._due
        target[key] = min(target.get(key, math.inf), due)
        self._wakeup.set()

    def forget(self, key: Hashable) -> None:
        self._due.pop(key, None)
        self._deferred.pop(key, None)

    def done(self, key: Hashable) -> None:
        self._processing.discard(key)
        if key in self._deferred:
            self._due[key] = min(self._due.get(key, math.inf), self._deferred.pop(key))
            self._wakeup.set()

    async def get(self) -> Hashable:
        while True:
            self._wakeup.clear()
            now = self._clock()
            ready = [(due, key) for key, due in self._due.items() if due <= now]
            if ready:
                _, key = min(ready, key=lambda item: item[0])
                del self._due[key]
                self._processing.add(key)
                return key
            # A timer instead of asyncio.wait_for: wait_for wraps the wait in a new task
            # per call, which kopf would count as a hung task on shutdown.
            timer = None
            if self._due:
                timeout = min(self._due.values()) - now
                timer = asyncio.get_running_loop().call_later(timeout, self._wakeup.set)
            try:
                await self._wakeup.wait()
            finally:
                if timer is not None:
                    timer.cancel()

    def __len__(self) -> int:
        return len(self._due) + len(self._deferred)

    @property
    def processing(self) -> int:
        return len(self._processing)
