"""Runs reconcile passes: work queue in, worker threads, retries, metrics.

kopf's watch handlers call `poke()` for every event of a job or of its
children; N async workers take due jobs from the `WorkQueue`, take the job's
snapshot from the watch cache on the event loop (where kopf writes it), and
run the (synchronous, API-bound) `Reconciler` on it in a thread pool. This is the one place
where failures are classified (the role `kopf.TemporaryError` plays in
handler-style operators):

- transient API errors (no response, 429, 5xx, 409 conflict, 403 while RBAC
  is being fixed) → retry with exponential backoff per job, counted;
- anything else is a bug or an impossible cluster state → logged with the
  traceback, counted as `internal`, retried slowly (never a crash loop of the
  whole operator because one job is odd).

Spec errors never get here: the reconciler turns them into a Failed status.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections import Counter
from typing import Any, cast

from psjob_operator.cache import Snapshot, WatchCache
from psjob_operator.kube import ApiError
from psjob_operator.metrics import OperatorMetrics
from psjob_operator.reconcile import Outcome, Reconciler
from psjob_operator.settings import ReconcileSettings
from psjob_operator.workqueue import WorkQueue

log = logging.getLogger(__name__)
Key = tuple[str, str]


class Controller:
    def __init__(self, reconciler: Reconciler, settings: ReconcileSettings, cache: WatchCache,
                 metrics: OperatorMetrics | None = None):
        self.reconciler = reconciler
        self.cache = cache
        self.settings = settings
        self.metrics = metrics
        self.phases: dict[Key, str] = {}  # written by worker threads, read at scrape time
        self._phases_lock = threading.Lock()
        self._failures: dict[Key, int] = {}
        self._queue: WorkQueue | None = None
        self._tasks: list[asyncio.Task] = []
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=settings.workers, thread_name_prefix="reconcile")
        self.passes = 0

    # --- called from kopf handlers (event loop thread) ---------------------------------

    def poke(self, namespace: str, name: str, delay: float = 0.0) -> None:
        if self._queue is not None:
            self._queue.add((namespace, name), delay)

    def forget(self, namespace: str, name: str) -> None:
        key = (namespace, name)
        with self._phases_lock:
            self.phases.pop(key, None)
        self._failures.pop(key, None)
        self.reconciler.forget(namespace, name)
        if self._queue is not None:
            self._queue.forget(key)

    def phase_counts(self) -> dict[str, int]:
        with self._phases_lock:
            return dict(Counter(self.phases.values()))

    def healthy(self) -> bool:
        return bool(self._tasks) and not any(t.done() for t in self._tasks)

    def stats(self) -> dict[str, Any]:
        queue = self._queue
        return {"jobs": len(self.phases), "queued": len(queue) if queue else 0,
                "processing": queue.processing if queue else 0, "passes": self.passes}

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        """Start the workers on the running loop (before kopf starts: kopf treats tasks
        created after its own start as hung and waits for them on shutdown)."""
        self._queue = WorkQueue()
        self._tasks = [asyncio.create_task(self._worker(), name=f"reconcile-{i}")
                       for i in range(self.settings.workers)]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def _worker(self) -> None:
        assert self._queue is not None
        loop = asyncio.get_running_loop()
        while True:
            key = cast(Key, await self._queue.get())
            try:
                seen = self.cache.snapshot(*key)
                delay = await loop.run_in_executor(self._executor, self._run_once, key, seen)
            finally:
                self._queue.done(key)
            if delay is not None:
                self._queue.add(key, delay)

    def _run_once(self, key: Key, seen: Snapshot) -> float | None:
        """One pass in a worker thread; returns when to run again (None: forget)."""
        started = time.monotonic()
        try:
            outcome = self.reconciler.reconcile(*key, seen)
        except ApiError as exc:
            return self._retry(key, exc, "conflict" if exc.conflict else "api")
        except Exception as exc:  # noqa: BLE001 - a bug must not stop other jobs
            log.exception("internal error reconciling %s/%s", *key)
            return self._retry(key, exc, "internal")
        finally:
            self.passes += 1
            if self.metrics:
                self.metrics.duration.observe(time.monotonic() - started)
        self._failures.pop(key, None)
        self._record(key, outcome)
        if outcome.forget:
            with self._phases_lock:
                self.phases.pop(key, None)
            return None
        return outcome.requeue_after if outcome.requeue_after is not None \
            else self.settings.resync_seconds

    def _retry(self, key: Key, exc: Exception, kind: str) -> float:
        count = self._failures.get(key, 0) + 1
        self._failures[key] = count
        delay: float = min(self.settings.retry_max_seconds,
                           self.settings.retry_base_seconds * 2 ** (count - 1))
        if kind != "internal":
            log.warning("reconciling %s/%s failed (%s), retry %d in %.1fs", *key, exc, count,
                        delay)
        if self.metrics:
            self.metrics.reconciles.labels("error").inc()
            self.metrics.errors.labels(kind).inc()
        return delay

    def _record(self, key: Key, outcome: Outcome) -> None:
        if outcome.phase is not None:
            with self._phases_lock:
                self.phases[key] = outcome.phase
        if not self.metrics:
            return
        self.metrics.reconciles.labels("success").inc()
        if outcome.startup_seconds is not None:
            self.metrics.startup.observe(outcome.startup_seconds)
        for t in outcome.transitions:
            self.metrics.transitions.labels(t.type.value, t.status.value).inc()
