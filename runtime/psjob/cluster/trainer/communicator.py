"""The trainer-side communicator of async and half-async training (the modes of Paddle Fleet's a_sync).

It wraps the RPC client with the same verbs, so the transpiled program's
send/recv kernels need not know the mode:

- `push` enqueues: one bounded queue per (pserver, variable). A step's
  gradients leave together as one round — each pserver's batch in one
  request, all pservers concurrently — merging up to `max_merge_var_num`
  queued gradients of a variable into their mean (SelectedRows concatenated
  and scaled — the pserver merges duplicate rows). One round is in flight at
  a time. The push that completes a step (every queue holds a gradient, or
  one holds two) sends the round itself when none is in flight (first reading
  the previous round's replies, if the sender has not, when they arrived or
  the staleness bound needs them): the request leaves from the trainer's
  thread, as a data-plane call does, with no wake-up of the sender before it.
  A sender thread reads each round's replies while the trainer computes (read
  on the trainer's thread instead, the decoding and caching lengthened every
  step more than the wake-up cost: docs/performance.md), sends the steps
  queued while a round was in flight (the trainer runs ahead: merging), and a
  partial step once the trainer pushed nothing for `send_wait_s`. A full queue
  blocks the trainer (it sends and reads rounds itself meanwhile): that bounds
  staleness and memory when the pservers fall behind. A thread that must wait
  for the queues (flush, a pull held by the staleness bound) likewise sends or
  reads the next round itself when the sender has not.
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

Arrays given to `push` are copied or encoded (the round it sends) before it
returns: the caller may reuse them. Arrays returned by `pull` are shared
read-only cache entries.
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
    # How long the gradients of an incomplete step wait for the rest of it (one per queue)
    # after the trainer's latest push, before the sender sends what is queued (Paddle's
    # communicator_send_wait_times): the send ops of one step fire over its backward pass,
    # and one request per pserver per step costs less than one per gradient. Counted from
    # the latest push, not the step's first: a long backward pass (large batches, a busy
    # core) is not cut into rounds. 0 sends at once. Figures: docs/performance.md.
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


class _Round:
    """One round of requests (each pserver's merged gradients) sent and not yet read.
    Communicator._finish reads its replies once, on the first thread that needs them; `lock`
    is held from before the requests leave until they are read."""
    __slots__ = ("batch", "pulls", "refreshes", "by_sender", "handles", "lock", "started", "done", "failed")

    def __init__(self, batch, pulls, refreshes, by_sender):
        self.batch, self.pulls, self.refreshes, self.by_sender = batch, pulls, refreshes, by_sender
        self.handles: list = []
        self.lock = threading.Lock()
        self.started = time.monotonic()
        self.done = self.failed = False

    def answered(self) -> bool:
        """Whether every reply began to arrive (a handle without done() counts as answered)."""
        return all(getattr(h, "done", lambda: True)() for h in self.handles)

    def gradients(self) -> int:
        return sum(len(items) for per_name in self.batch.values() for items in per_name.values())


# The sender thread looks at the queues at least this often when nothing wakes it (pushes of
# a step do not): a partial step the trainer stopped pushing to send_wait_s ago leaves.
_POLL_S = 0.05


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
        self._lods: dict[str, object] = {}
        lock = threading.Lock()
        self._cond = threading.Condition(lock)  # trainers, flush and tests wait on it
        self._wake = threading.Condition(lock)  # only the sender waits on it: notified when it has work
        self._round: _Round | None = None  # the round in flight (one at a time)
        self._handover = False  # the trainer left the round in flight and its step to the sender
        self._last_push = 0.0  # time.monotonic() of the trainer's latest push
        self._cache: dict[str, np.ndarray] = {}
        self._pulled: dict[str, np.ndarray] = {}  # name -> its latest pulled value (predict_pulls)
        self._watched: dict[str, list] = collections.defaultdict(list)  # endpoint -> names
        self._recv_due = threading.Event()
        self._stopped = False
        self._error: BaseException | None = None
        self.sends = 0
        self.trainer_sends = 0  # of them, rounds sent by the trainer's own thread (no hand-off)
        self.merged = 0
        self.merged_sends = 0  # (variable, round) pairs sent: merged / merged_sends = gradients per merge
        self.recvs = 0  # cache refreshes completed (pulls riding on pushes, and the receiver's)
        self._last_pull = 0.0  # time.monotonic() when the latest refresh began (recv_interval_s)
        self._sent_since_recv = 0  # gradients sent since the latest cache refresh began
        self._flushing = 0  # callers blocked in flush()
        self._refreshes = 0  # refresh() calls: a background pull that began before one is dropped
        self._pushed = 0  # gradients the trainer pushed
        self._queued = 0  # of them, still queued (not taken for a round)
        self._applied = 0  # of them, sent and confirmed by the pservers
        self._cache_basis = 0  # gradients applied before the pull that last refreshed the cache began
        self.on_staleness = None  # callable(int): the pservers' staleness of each confirmed send
        # Seconds spent waiting, by where (bench/step_latency.py reads them): the trainer in
        # pull (stale cache) and push (full queue) and on prefetch replies; the sender for the
        # rest of a step's gradients, and whichever thread reads a round's replies on them.
        # "send_wait_timeouts" counts rounds that left because send_wait_s ran out, not
        # because the step was complete.
        self.waits = collections.Counter()
        self._sender = threading.Thread(target=self._send_loop, name="psjob-send", daemon=True)
        self._receiver = threading.Thread(target=self._recv_loop, name="psjob-recv", daemon=True)
        self._sender.start()
        if config.mode is Mode.ASYNC:
            self._receiver.start()

    # -- verbs --------------------------------------------------------------------------
    def push(self, endpoint, values: dict, *, is_delta=False, lods=None):
        if is_delta:
            return self.client.push(endpoint, values, is_delta=True, lods=lods)
        self._raise_if_failed()
        keys = [(endpoint, name) for name in values]
        with self._cond:
            pending = self._round
            if pending is not None and (pending.by_sender or not self._step_queued(keys)):
                pending = None
            if pending is not None and not (self._bound_needs_round(len(keys)) or pending.answered()):
                # The trainer runs ahead of its pservers: the sender reads the round and sends
                # the steps queued meanwhile, merged.
                self._handover = True
                self._wake.notify()
                pending = None
        if pending is not None:  # this push completes a step: read the last round, send this one
            self._finish(pending)
            self._raise_if_failed()
        rnd = None
        with self._cond:
            self._wait_for_room(keys)
            self._last_push = time.monotonic()
            for key, (name, value) in zip(keys, values.items()):
                self._queues.setdefault(key, collections.deque()).append(value)
                if lods and name in lods:
                    self._lods[name] = lods[name]
            self._pushed += len(keys)
            self._queued += len(keys)
            if self._round is None and self._step_queued():
                rnd = self._begin_round(by_sender=False)
            else:
                # Queued past this call: copied, as the caller may reuse its arrays. A round
                # sent here encodes (copies) them before push returns instead.
                for key in keys:
                    q = self._queues[key]
                    q[-1] = _copy(q[-1])
                if self.config.send_wait_s <= 0:
                    self._wake.notify()
        if rnd is not None:
            self._send(rnd)
            self.trainer_sends += 1
            with self._cond:
                self._wake.notify()  # the sender reads the replies while the trainer computes
            if rnd.failed:
                self._finish(rnd)
                self._raise_if_failed()
        return _Done()

    def _step_queued(self, adding=()) -> bool:
        """Whether the queues hold a whole step's gradients (under the lock), counting one
        more in each queue of `adding`: every queue has one, or one has two — the trainer
        began another step, so a queue still empty is a variable that step did not push (it
        is not waited for)."""
        complete = True
        for key, q in self._queues.items():
            n = len(q) + (key in adding)
            if n > 1:
                return True
            complete = complete and n > 0
        return complete

    def _bound_needs_round(self, adding: int) -> bool:
        """Whether the next pull, after `adding` more gradients, must wait for the round in
        flight (under the lock): the trainer then reads it now rather than later."""
        limit = self.config.max_stale_steps
        return (self.config.mode is Mode.ASYNC and limit is not None and bool(self._watched)
                and self._pushed + adding - self._cache_basis > limit * max(len(self._queues), 1))

    def _wait_for_room(self, keys) -> None:
        """Block while a queue of `keys` is full (under the lock), sending or reading rounds
        meanwhile: a full queue bounds how far the trainer runs ahead of its pservers."""
        size = self.config.send_queue_size
        while not self._stopped and any(len(self._queues.get(key, ())) >= size for key in keys):
            t0 = time.perf_counter()
            self._raise_if_failed()
            if not self._drive():
                self._cond.wait(0.5)
            self.waits["push_block"] += time.perf_counter() - t0
        self._raise_if_failed()

    def pull(self, endpoint, names):
        names = list(names)
        if self.config.mode is Mode.HALF_ASYNC:
            self.flush()
            return self.client.pull(endpoint, names)
        t0 = time.perf_counter()
        self._wait_for_fresh_cache()
        self.waits["pull"] += time.perf_counter() - t0
        cache = self._cache
        if any(n not in cache for n in names):
            missing = [n for n in names if n not in cache]
            fresh = self.client.pull(endpoint, missing).wait()
            with self._cond:
                self._store(fresh)
                self._watched[endpoint].extend(n for n in missing if n not in self._watched[endpoint])
        return _Done({n: cache[n] for n in names})

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
        gradients (a step: one gradient per queue): read the round in flight or send the
        queued gradients here, else ask the receiver for a pull."""
        limit = self.config.max_stale_steps
        if limit is None:
            return
        with self._cond:
            while self._pushed - self._cache_basis > limit * max(len(self._queues), 1) and not self._stopped:
                self._raise_if_failed()
                if not self._drive():
                    self._recv_due.set()
                    self._cond.wait(0.1)
        self._raise_if_failed()

    def prefetch(self, endpoint, table, ids):
        return _TimedHandle(self.client.prefetch(endpoint, table, ids), self.waits, "prefetch")

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
        """Block until every queued gradient has been sent and confirmed (sending and
        reading here what the sender has not taken)."""
        t_end = time.monotonic() + timeout_s
        with self._cond:
            self._flushing += 1
            try:
                while any(self._queues.values()) or self._round is not None:
                    self._raise_if_failed()
                    if time.monotonic() > t_end:
                        raise TimeoutError(f"communicator could not send its queue within {timeout_s:.0f}s")
                    if not self._drive():
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
            self._wake.notify_all()
        self._recv_due.set()
        self._sender.join(timeout=10)
        if self._receiver.is_alive():
            self._receiver.join(timeout=10)
        if self.sends:
            # How far the trainer outran its pservers: each send averages this many gradients.
            print(f"[psjob] communicator: {self.merged} gradients sent as {self.merged_sends} merged "
                  f"ones in {self.sends} rounds ({self.merged / max(self.merged_sends, 1):.1f} per merge, "
                  f"{self.trainer_sends} sent by the trainer's thread); "
                  f"{self.recvs} cache refreshes (pulls)",
                  flush=True)

    def _raise_if_failed(self):
        if self._error is not None:
            raise CommunicatorError(f"communicator failed: {self._error}") from self._error

    # -- rounds -------------------------------------------------------------------------
    def _take_batch(self):
        """Pop up to max_merge_var_num items of every non-empty queue (under the lock)."""
        batch = collections.defaultdict(dict)
        for (ep, name), q in self._queues.items():
            if q:
                n = min(len(q), self.config.max_merge_var_num)
                items = [q.popleft() for _ in range(n)]
                self._queued -= n
                batch[ep][name] = items
        return batch

    def _begin_round(self, by_sender: bool) -> _Round:
        """Take the queued gradients as the round in flight (under the lock, none in flight);
        its lock stays held until _send has sent it."""
        batch = self._take_batch()
        rnd = _Round(batch, self._pulls_riding_on(batch), self._refreshes, by_sender)
        rnd.lock.acquire()
        self._round = rnd
        self._cond.notify_all()  # wake trainers blocked on full queues
        return rnd

    def _send(self, rnd: _Round) -> None:
        """Merge and send a begun round, one request per pserver (not under the lock)."""
        try:
            for ep, per_name in rnd.batch.items():
                merged = {name: _merge(items) for name, items in per_name.items()}
                self.merged += sum(len(items) for items in per_name.values())
                self.merged_sends += len(merged)
                lods = {n: self._lods[n] for n in merged if n in self._lods}
                rnd.handles.append(self.client.push_pull(ep, merged, rnd.pulls[ep], lods=lods) if ep in rnd.pulls
                                   else self.client.push(ep, merged, lods=lods))
        except BaseException as exc:  # surfaced to the trainer by _raise_if_failed
            rnd.failed = True
            self._error = self._error or exc
        finally:
            rnd.started = time.monotonic()
            rnd.lock.release()

    def _finish(self, rnd: _Round) -> None:
        """Read a round's replies, once (not under the lock): the staleness of each push,
        the cache's refresh when the round carried one. A failure is kept in _error."""
        with rnd.lock:
            if rnd.done:
                return
            try:
                if not rnd.failed:
                    self._read_replies(rnd)
            except BaseException as exc:  # surfaced to the trainer by _raise_if_failed
                self._error = self._error or exc
            finally:
                rnd.done = True
                with self._cond:
                    if self._round is rnd:
                        self._round = None
                        self._handover = False
                    if not rnd.pulls:
                        self._sent_since_recv += sum(len(per_name) for per_name in rnd.batch.values())
                    # Refresh parameters once a step's worth of gradients went out (one per
                    # queue; Paddle's min_send_grad_num_before_recv), not after every round:
                    # a step's gradients may leave in several rounds.
                    due = self._sent_since_recv >= len(self._queues)
                    self._cond.notify_all()
                    if self._stopped or self._flushing:
                        self._wake.notify()
                if due:
                    self._recv_due.set()

    def _read_replies(self, rnd: _Round) -> None:
        fresh = {}
        t0 = time.perf_counter()
        for ep, h in zip(rnd.batch, rnd.handles):
            staleness = h.wait()
            if ep in rnd.pulls:
                staleness, values = staleness
                fresh.update(values)
            record_staleness(self.on_staleness, staleness)
        self.waits["send_reply"] += time.perf_counter() - t0
        with self._cond:
            self.sends += 1
            self._applied += rnd.gradients()
            if rnd.pulls:  # read after every gradient of this round was applied
                self._refreshed(fresh, rnd.refreshes, self._applied)

    def _drive(self) -> bool:
        """Do the next piece of sending on this thread (under the lock, released meanwhile):
        read the round in flight, or send the queued gradients and read their replies, for a
        thread that would otherwise wait for the sender to. False: nothing is queued or in flight."""
        rnd = self._round
        fresh = rnd is None
        if fresh:
            if not any(self._queues.values()):
                return False
            rnd = self._begin_round(by_sender=False)
        self._cond.release()
        try:
            if fresh:
                self._send(rnd)
                self.trainer_sends += 1
            self._finish(rnd)
        finally:
            self._cond.acquire()
        return True

    # -- threads ------------------------------------------------------------------------
    def _send_loop(self):
        try:
            while True:
                with self._cond:
                    job = self._next_job()
                if job is None:
                    return
                rnd, begun = job
                if begun:
                    self._send(rnd)
                self._finish(rnd)
        except BaseException as exc:  # surfaced to the trainer on its next push/flush
            self._error = exc
            with self._cond:
                self._cond.notify_all()

    def _next_job(self):
        """(round, whether the sender began it) for the sender to send and read next, waiting
        until there is one (under the lock); None: stop. A round the trainer sent is read here
        at once; queued gradients leave once they make a step, or the trainer pushed nothing
        for send_wait_s."""
        while True:
            if self._error is not None:
                return None
            now = time.monotonic()
            rnd = self._round
            if rnd is not None:
                return rnd, False
            if any(self._queues.values()):
                left = self.config.send_wait_s - (now - self._last_push)
                step = self._step_queued()
                if step or self._stopped or self._flushing or left <= 0:
                    if not (step or self._stopped or self._flushing):
                        self.waits["send_wait_timeouts"] += 1
                    return self._begin_round(by_sender=True), True
                self._wake.wait(min(left, _POLL_S))
                self.waits["send_wait"] += time.monotonic() - now
                continue
            if self._stopped:
                return None
            self._wake.wait(_POLL_S)

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
