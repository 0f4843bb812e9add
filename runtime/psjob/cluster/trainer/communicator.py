"""The trainer-side communicator of async and half-async training (the modes of Paddle Fleet's a_sync).

It wraps the RPC client with the same verbs, so the transpiled program's
send/recv kernels need not know the mode:

- `push` only enqueues: one bounded queue per (pserver, variable). A sender
  thread drains the queues — after waiting up to `send_wait_s` for every
  queue to hold a gradient, so one step's gradients leave together —
  merging up to `max_merge_var_num` queued gradients of a variable into
  their mean (SelectedRows concatenated and scaled — the pserver merges
  duplicate rows), and sends each pserver's batch in one request, all
  pservers concurrently. A full queue blocks the trainer: that bounds
  staleness and memory when the pservers fall behind.
- `pull` answers from a cache refreshed once a step's worth of gradients (one
  per queue) has been sent since its last pull (async). The refresh rides on
  the round of pushes that completes the step (`push_pull`: each pserver
  replies with the parameters the cache holds of it, read right after the
  push is applied — one request per pserver per step instead of a push and a
  pull); an independent receiver thread pulls when a round cannot carry it
  (a cached pserver that got no gradient in that round). The first pull of a
  name is synchronous.
  A pull waits while the cache misses more than `max_stale_steps` steps' worth of this
  trainer's own gradients (queued, in flight, or applied after the cache's pull began).
  The cache holds each background pull extrapolated `predict_pulls` pull intervals
  ahead along the change since the previous pull (weight prediction: the gradient a
  read produces is applied that much later).
  In half-async mode a pull first waits until this trainer's queued gradients
  are sent, then pulls fresh values: each step sees its own updates, and no
  trainer ever waits for another.
- `prefetch` (embedding rows the forward pass needs now) goes straight through.
- `complete`/`checkpoint_notify` flush the queues first, so nothing a trainer
  computed is lost when it stops or a checkpoint is taken.
- staleness: each confirmed send reports the pservers' staleness of it (the
  int a push handle's `wait()` returns) to `on_staleness`, a callable(int)
  the trainer's telemetry sets (None = not recorded). The trainer's own
  `push` returns a handle whose `wait()` is None: nothing is applied yet.

Arrays given to `push` are copied before it returns (the caller may reuse
them), unless pushed `owned` (nothing writes them afterwards); arrays returned
by `pull` are shared read-only cache entries.
"""
from __future__ import annotations

import collections
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from psjob.cluster.protocol import PSClient
from psjob.fluid.core import SelectedRows
from psjob.fluid.ops.dist_ops import record_staleness
from psjob.foundation.kernels import native
from psjob.foundation.roles import Mode


@dataclass(frozen=True)
class CommunicatorConfig:
    mode: Mode = Mode.ASYNC          # async | half_async
    max_merge_var_num: int = 20      # gradients of one variable merged into one send
    send_queue_size: int = 20        # per-variable queue bound (trainer blocks beyond it)
    recv_interval_s: float = 0.0     # minimum time between two cache refreshes (pulls)
    # How long the sender waits for the rest of a step's gradients (one per queue) before it
    # sends what it has (Paddle's communicator_send_wait_times): the send ops of one step fire
    # over its backward pass, and one request per pserver per step costs less than one per
    # gradient. Long enough for a CTR backward pass on a busy core; it adds no staleness (a
    # step's table gradient comes last anyway). 0 sends at once. Figures: docs/performance.md.
    send_wait_s: float = 0.05
    # How many steps of its own gradients the parameters a trainer reads may miss (async).
    # Without this bound the trainer's only brake is a full queue: a trainer whose steps never
    # block (no prefetch RPC: a 2.x Embedding is a plain parameter) holds the GIL, starves the
    # sender and receiver threads, runs send_queue_size steps ahead of its own updates, and
    # can diverge where sync learns. None: no bound (only send_queue_size).
    max_stale_steps: int | None = 1
    # Async reads are extrapolated this many pull intervals ahead: with a background pull's
    # values p and the previous pull's p0, the cache holds p + predict_pulls * (p - p0) (weight
    # prediction, as SpecTrain (Chen et al., 2018) and PipeMare (Yang et al., 2021) do for
    # pipeline staleness). A gradient computed from a pull is applied ~2 intervals after the
    # pull's snapshot, and with Adam's momentum successive updates point the same way. Off by
    # default here: it suits optimizers whose successive updates agree (Adam, momentum); plain
    # SGD at a high rate overshoots with it. Floating-point values only; max_stale_steps=0
    # (exact reads) turns it off; refresh() stores exact values. Fleet: a_sync_configs
    # ["predict_pulls"]; Fleet's default decides per parameter from its pserver optimizer
    # (psjob.fleet.strategy.predict_pulls_by_name), given here as {pulled name: intervals}
    # (names absent: 0). What it buys in first-epoch AUC: docs/performance.md.
    predict_pulls: float | Mapping[str, float] = 0.0

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "mode", Mode(self.mode))  # a Mode, or its name
        except ValueError:
            raise ValueError(f"Communicator mode must be async or half_async, got {self.mode!r}") from None


# The shortest send_wait_s an idle sender polls for a step's first gradient at (below it the
# trainer wakes the sender on that gradient): 100 wake-ups a second at most while idle.
IDLE_POLL_MIN_S = 0.01


class CommunicatorError(RuntimeError):
    """A background send or pull failed; its cause is the RpcError (a lost pserver's is
    retryable: the trainer's entrypoint then exits PSERVER_UNREACHABLE_EXIT)."""


class _Done:
    __slots__ = ("value",)

    def __init__(self, value=None):
        self.value = value

    def wait(self):
        return self.value


class _TimedHandle:
    """A request's handle whose wait() adds the seconds it blocked to waits[key]."""
    __slots__ = ("handle", "waits", "key")

    def __init__(self, handle, waits, key):
        self.handle, self.waits, self.key = handle, waits, key

    def wait(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return self.handle.wait(*args, **kwargs)
        finally:
            self.waits[self.key] += time.perf_counter() - t0

    def __getattr__(self, name):
        return getattr(self.handle, name)


def _copy(value):
    if isinstance(value, SelectedRows):
        return SelectedRows(np.array(value.rows, copy=True), np.array(value.values, copy=True), value.height)
    return np.array(value, copy=True)


def _merge(values: list):
    """The mean of a variable's queued gradients, as Paddle's communicator merges
    for SGD: summing k stale gradients and applying them at once multiplies the
    step by k exactly when the pservers are behind (measured: the CTR model's
    async AUC fell ~0.02 below single-process with sums, within 0.01 with means).
    The price: a trainer that outruns its pservers by far (k large) learns less
    per example — give the pservers the cores to keep up."""
    first = values[0]
    if len(values) == 1:
        return first
    scale = first.values.dtype.type(1.0 / len(values)) if isinstance(first, SelectedRows) else \
        first.dtype.type(1.0 / len(values))
    if isinstance(first, SelectedRows):
        return SelectedRows(np.concatenate([v.rows for v in values]),
                            np.concatenate([v.values for v in values]) * scale, first.height)
    return np.sum(values, axis=0, dtype=first.dtype) * scale


class Communicator:
    @property
    def reads_may_lag(self) -> bool:
        """Whether its reads may lag its pushes, so that a prefetch issued one batch ahead
        (psjob.fluid.pipeline) adds only a step of staleness: async and half-async, except
        async with max_stale_steps=0, which asks for exact reads, embedding rows included."""
        return not (self.config.mode is Mode.ASYNC and self.config.max_stale_steps == 0)

    def __init__(self, client: PSClient, config: CommunicatorConfig = CommunicatorConfig()):
        if not config.mode.is_async:
            raise ValueError(f"Communicator mode must be async or half_async, got {config.mode.value!r}")
        self.client = client
        self.trainer_id = client.trainer_id
        self.config = config
        self._queues: dict[tuple, collections.deque] = {}
        # Of the queues, how many are empty and how many hold two or more (under the lock):
        # _step_queued answers from them on every push instead of walking every queue.
        self._empty_queues = 0
        self._deep_queues = 0
        self._lods: dict[str, object] = {}
        self._cond = threading.Condition()
        self._in_flight = 0
        self._cache: dict[str, np.ndarray] = {}
        self._pulled: dict[str, np.ndarray] = {}  # name -> its latest pulled value (predict_pulls)
        self._watched: dict[str, list] = collections.defaultdict(list)  # endpoint -> names
        self._recv_due = threading.Event()
        self._stopped = False
        self._error: BaseException | None = None
        self.sends = 0
        self.merged = 0
        self.merged_sends = 0  # (variable, round) pairs sent: merged / merged_sends = gradients per merge
        self.recvs = 0  # cache refreshes completed (pulls riding on pushes, and the receiver's)
        self._last_pull = 0.0  # time.monotonic() when the latest refresh began (recv_interval_s)
        self._sent_since_recv = 0  # gradients sent since the latest cache refresh began
        self._flushing = 0  # callers blocked in flush()
        self._first_at = 0.0  # time.monotonic() when the queues last went from empty to holding a gradient
        # The idle sender's timeout, by which it finds a step's first gradient (not woken for
        # it); None: woken for it (send_wait_s below IDLE_POLL_MIN_S: polling would spin).
        wait = config.send_wait_s
        self._idle_wait_s = min(wait, 0.5) if wait >= IDLE_POLL_MIN_S else None
        self._refreshes = 0  # refresh() calls: a background pull that began before one is dropped
        self._pushed = 0  # gradients the trainer pushed
        self._queued = 0  # of them, still queued (not taken by the sender)
        self._applied = 0  # of them, sent and confirmed by the pservers
        self._cache_basis = 0  # gradients applied before the pull that last refreshed the cache began
        self.on_staleness = None  # callable(int): the pservers' staleness of each confirmed send
        # Seconds spent waiting, by where (bench/step_latency.py reads them): the trainer in
        # pull (stale cache) and push (full queue) and on prefetch replies; the sender for the
        # rest of a step's gradients and on its requests' replies. "send_wait_timeouts" counts
        # rounds that left because send_wait_s ran out, not because the step was complete.
        self.waits = collections.Counter()
        self._sender = threading.Thread(target=self._send_loop, name="psjob-send", daemon=True)
        self._receiver = threading.Thread(target=self._recv_loop, name="psjob-recv", daemon=True)
        self._sender.start()
        if config.mode is Mode.ASYNC:
            self._receiver.start()

    # -- verbs --------------------------------------------------------------------------
    def push(self, endpoint, values: dict, *, is_delta=False, lods=None, owned=False):
        """Queue gradients for the sender. `owned`: nothing writes these arrays after the call
        (the send op's program has no op that writes in place: dist_ops.sends_owned), so they
        are queued as they are; otherwise each is copied (the caller may reuse it)."""
        if is_delta:
            return self.client.push(endpoint, values, is_delta=True, lods=lods)
        self._raise_if_failed()
        with self._cond:
            wake = False
            for name, value in values.items():
                q = self._queues.get((endpoint, name))
                if q is None:
                    q = self._queues[(endpoint, name)] = collections.deque()
                    self._empty_queues += 1
                while len(q) >= self.config.send_queue_size and not self._stopped:
                    t0 = time.perf_counter()
                    self._cond.wait(0.5)
                    self.waits["push_block"] += time.perf_counter() - t0
                    self._raise_if_failed()
                q.append(value if owned else _copy(value))
                if len(q) == 1:
                    self._empty_queues -= 1
                elif len(q) == 2:
                    self._deep_queues += 1
                self._pushed += 1
                self._queued += 1
                if self._queued == 1:
                    self._first_at = time.monotonic()
                # Only the sender waits on a push, and only for these: a second gradient in a
                # queue (a step ended), or a full step's set (below); its first gradient only
                # when send_wait_s is below IDLE_POLL_MIN_S. Each wake-up is a futex wake and a GIL
                # hand-off on the trainer's thread; an idle sender notices a first gradient by
                # its own timeout instead (_send_loop), in time for send_wait_s.
                wake = wake or len(q) == 2 or (self._queued == 1 and self._idle_wait_s is None)
                if lods and name in lods:
                    self._lods[name] = lods[name]
            if wake or self._step_queued():
                self._cond.notify_all()
        return _Done()

    def _step_queued(self) -> bool:
        """Whether the queues hold a whole step's gradients (under the lock): every queue
        has one, or one has two — the trainer began another step, so a queue still empty
        is a variable that step did not push (it is not waited for)."""
        return self._empty_queues == 0 or self._deep_queues > 0

    def pull(self, endpoint, names):
        names = list(names)
        if self.config.mode is Mode.HALF_ASYNC:
            self.flush()
            return self.client.pull(endpoint, names)
        t0 = time.perf_counter()
        self._wait_for_fresh_cache()
        self.waits["pull"] += time.perf_counter() - t0
        missing = [n for n in names if n not in self._cache]
        if missing:
            fresh = self.client.pull(endpoint, missing).wait()
            with self._cond:
                self._store(fresh)
                self._watched[endpoint].extend(n for n in missing if n not in self._watched[endpoint])
        return _Done({n: self._cache[n] for n in names})

    def _store(self, fresh: dict, exact=False):
        """Cache pulled values (under the lock): extrapolated by predict_pulls from the
        previous pull of each name, or as pulled (`exact`, a name's first pull, integers)."""
        predict = self.config.predict_pulls if self.config.max_stale_steps != 0 else 0.0
        for name, value in fresh.items():
            alpha = predict.get(name, 0.0) if isinstance(predict, Mapping) else predict
            before = None if exact else self._pulled.get(name)
            self._pulled[name] = value
            if (not alpha or before is None or before.shape != value.shape
                    or not np.issubdtype(value.dtype, np.floating)):
                self._cache[name] = value
                continue
            predicted = native.extrapolate(value, before, alpha)
            if predicted is None:  # not float32 numpy arrays (or no C kernels): numpy's three passes
                predicted = value - before
                predicted *= value.dtype.type(alpha)
                predicted += value
            predicted.flags.writeable = False  # a shared cache entry, like a pulled value
            self._cache[name] = predicted

    def _wait_for_fresh_cache(self):
        """Block until the cache misses at most max_stale_steps steps of this trainer's
        gradients (a step: one gradient per queue), asking the receiver for a pull when the
        sender has nothing left to trigger one."""
        limit = self.config.max_stale_steps
        if limit is None:
            return
        with self._cond:
            while self._pushed - self._cache_basis > limit * max(len(self._queues), 1) and not self._stopped:
                self._raise_if_failed()
                if not any(self._queues.values()) and not self._in_flight:
                    self._recv_due.set()
                self._cond.wait(0.1)
        self._raise_if_failed()

    def prefetch(self, endpoint, table, ids):
        return _TimedHandle(self.client.prefetch(endpoint, table, ids), self.waits, "prefetch")

    def ready_to_read_ahead(self):
        """Block until rows read now, for a step that runs after one more step's pushes
        (psjob.fluid.pipeline.ahead_of_run: an exe.run whose backward was deferred), miss at
        most max_stale_steps steps of this trainer's gradients: every push but the last
        max_stale_steps - 1 steps' applied by the pservers. (pipelined datasets issue right
        after a step's push, so they do not wait: their rows may miss one step more.)"""
        limit = self.config.max_stale_steps
        if limit is None or self.config.mode is not Mode.ASYNC:
            return
        t0 = time.perf_counter()
        with self._cond:
            if self._pushed - self._applied <= (limit - 1) * max(len(self._queues), 1):
                return  # the common case: applied already
            self._flushing += 1  # as flush(): the sender sends what it holds without waiting for more
            self._cond.notify_all()
            try:
                while (self._pushed - self._applied > (limit - 1) * max(len(self._queues), 1)
                       and not self._stopped):
                    self._raise_if_failed()
                    self._cond.wait(0.1)
            finally:
                self._flushing -= 1
        self.waits["prefetch"] += time.perf_counter() - t0
        self._raise_if_failed()

    def barrier(self, kind, endpoints=None):
        return []  # no rounds in async modes

    def checkpoint_notify(self, dirname, step=0, tag="", endpoints=None):
        self.flush()
        return self.client.checkpoint_notify(dirname, step, tag, endpoints)

    def complete(self, endpoints=None):
        self.stop()
        self.client.complete(endpoints)

    def __getattr__(self, name):  # register, status, wait_server_ready, close, retries...
        return getattr(self.client, name)

    # -- lifecycle ----------------------------------------------------------------------
    def flush(self, timeout_s: float = 600.0):
        """Block until every queued gradient has been sent."""
        t_end = time.monotonic() + timeout_s
        with self._cond:
            self._flushing += 1  # the sender stops waiting for more gradients: send now
            self._cond.notify_all()
            try:
                while any(self._queues.values()) or self._in_flight:
                    self._raise_if_failed()
                    if time.monotonic() > t_end:
                        raise TimeoutError(f"communicator could not send its queue within {timeout_s:.0f}s")
                    self._cond.wait(0.1)
            finally:
                self._flushing -= 1
        self._raise_if_failed()

    def refresh(self):
        """Send what is queued, then pull every cached name now: the next pulls see the
        pservers' current values (fleet.barrier_worker, once all workers have sent theirs)."""
        self.flush()
        with self._cond:
            self._refreshes += 1
            watched = {ep: list(names) for ep, names in self._watched.items() if names}
            basis = self._applied
        handles = [self.client.pull(ep, names) for ep, names in watched.items()]
        fresh = {}
        for h in handles:
            fresh.update(h.wait())
        with self._cond:
            self._store(fresh, exact=True)
            self._cache_basis = max(self._cache_basis, basis)
            self._cond.notify_all()

    def stop(self):
        if self._stopped:
            return
        self.flush()
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self._recv_due.set()
        self._sender.join(timeout=10)
        if self._receiver.is_alive():
            self._receiver.join(timeout=10)
        if self.sends:
            # How far the trainer outran its pservers: each send averages this many gradients.
            print(f"[psjob] communicator: {self.merged} gradients sent as {self.merged_sends} merged "
                  f"ones in {self.sends} rounds ({self.merged / max(self.merged_sends, 1):.1f} per merge); "
                  f"{self.recvs} cache refreshes (pulls)",
                  flush=True)

    def _raise_if_failed(self):
        if self._error is not None:
            raise CommunicatorError(f"communicator failed: {self._error}") from self._error

    # -- threads ------------------------------------------------------------------------
    def _take_batch(self):
        """Pop up to max_merge_var_num items of every non-empty queue (under the lock)."""
        batch = collections.defaultdict(dict)
        for (ep, name), q in self._queues.items():
            if q:
                n = min(len(q), self.config.max_merge_var_num)
                self._deep_queues -= len(q) > 1 >= len(q) - n
                self._empty_queues += n == len(q)
                items = [q.popleft() for _ in range(n)]
                self._queued -= n
                batch[ep][name] = items
        if self._queued:  # left over (more than max_merge_var_num queued): timed from now
            self._first_at = time.monotonic()
        return batch

    def _send_loop(self):
        try:
            while True:
                with self._cond:
                    idled = False
                    while not any(self._queues.values()) and not self._stopped:
                        # Not woken by a step's first gradient: a timeout of at most send_wait_s
                        # finds it no later than send_wait_s after it came (the wait began before).
                        idled = True
                        self._cond.wait(self._idle_wait_s or 0.5)
                    if self._stopped and not any(self._queues.values()):
                        return
                    # The rest of the step is waited for until send_wait_s after its first
                    # gradient (the sender idled) or after now (they queued while it sent).
                    t0 = time.monotonic()
                    if idled:
                        t0 = min(self._first_at, t0)
                    t_end = t0 + self.config.send_wait_s
                    while not self._step_queued() and not (self._stopped or self._flushing):
                        left = t_end - time.monotonic()
                        if left <= 0:
                            self.waits["send_wait_timeouts"] += 1
                            break
                        self._cond.wait(left)
                    self.waits["send_wait"] += time.monotonic() - t0
                    batch = self._take_batch()
                    pulls = self._pulls_riding_on(batch)
                    refreshes = self._refreshes
                    self._in_flight += 1
                    self._cond.notify_all()  # wake trainers blocked on full queues
                try:
                    handles = []
                    for ep, per_name in batch.items():
                        merged = {name: _merge(items) for name, items in per_name.items()}
                        self.merged += sum(len(items) for items in per_name.values())
                        self.merged_sends += len(merged)
                        lods = {n: self._lods[n] for n in merged if n in self._lods}
                        # owned: the merged gradients are this thread's (copies or means), left
                        # unchanged until the replies are in, so the client sends them unjoined.
                        handles.append(self.client.push_pull(ep, merged, pulls[ep], lods=lods, owned=True)
                                       if ep in pulls else self.client.push(ep, merged, lods=lods, owned=True))
                    fresh = {}
                    t0 = time.perf_counter()
                    for ep, h in zip(batch, handles):
                        staleness = h.wait()
                        if ep in pulls:
                            staleness, values = staleness
                            fresh.update(values)
                        record_staleness(self.on_staleness, staleness)
                    self.waits["send_reply"] += time.perf_counter() - t0
                    self.sends += 1
                    with self._cond:
                        self._applied += sum(len(items) for per_name in batch.values() for items in per_name.values())
                        if pulls:  # read after every gradient of this round was applied
                            self._refreshed(fresh, refreshes, self._applied)
                finally:
                    with self._cond:
                        self._in_flight -= 1
                        self._cond.notify_all()
                        if not pulls:
                            self._sent_since_recv += sum(len(per_name) for per_name in batch.values())
                        # Refresh parameters once a step's worth of gradients went out (one per
                        # queue; Paddle's min_send_grad_num_before_recv), not after every round:
                        # a step's gradients leave in several rounds as backward produces them.
                        due = self._sent_since_recv >= len(self._queues)
                if due:
                    self._recv_due.set()
        except BaseException as exc:  # surfaced to the trainer on its next push/flush
            self._error = exc
            with self._cond:
                self._cond.notify_all()

    def _pulls_riding_on(self, batch) -> dict:
        """{endpoint: cached names} for this round's pushes to carry (under the lock), or {}.
        A round carries the cache's refresh when it completes a step's worth of gradients —
        what would trigger the receiver — and reaches every pserver the cache reads from;
        the pulled values then include the round's own gradients."""
        if self.config.mode is not Mode.ASYNC:
            return {}
        watched = {ep: list(names) for ep, names in self._watched.items() if names}
        step_done = self._sent_since_recv + sum(len(per_name) for per_name in batch.values()) >= len(self._queues)
        if (not watched or not step_done or not watched.keys() <= batch.keys()
                or time.monotonic() - self._last_pull < self.config.recv_interval_s):
            return {}
        self._sent_since_recv = 0
        self._last_pull = time.monotonic()
        return watched

    def _refreshed(self, fresh: dict, refreshes: int, basis: int) -> None:
        """Cache a refresh that began when `refreshes` refresh() calls had run and `basis` of this
        trainer's gradients were applied (under the lock). Dropped when a refresh() or a later-
        based pull (the receiver's and a push's may overlap) stored newer values meanwhile."""
        if refreshes == self._refreshes and basis >= self._cache_basis:
            self._store(fresh)
            self._cache_basis = basis
        self.recvs += 1
        self._cond.notify_all()

    def _recv_loop(self):
        try:
            while not self._stopped:
                self._recv_due.wait(0.5)
                self._recv_due.clear()
                if self._stopped:
                    return
                wait = self.config.recv_interval_s - (time.monotonic() - self._last_pull)
                if wait > 0:
                    time.sleep(wait)
                with self._cond:
                    self._last_pull = time.monotonic()
                    watched = {ep: list(names) for ep, names in self._watched.items() if names}
                    self._sent_since_recv = 0
                    refreshes = self._refreshes
                    basis = self._applied
                handles = {ep: self.client.pull(ep, names) for ep, names in watched.items()}
                fresh = {}
                for h in handles.values():
                    fresh.update(h.wait())
                with self._cond:
                    self._refreshed(fresh, refreshes, basis)
        except BaseException as exc:
            if not self._stopped:
                self._error = exc
