"""Executor.train_from_dataset / infer_from_dataset: run a program over a dataset's batches.

A dataset (psjob.distributed.InMemoryDataset, QueueDataset) hands out its
batches as feed dicts split into `thread` disjoint streams
(`dataset._thread_feeds(thread)`). With one thread the batches are fed in
order through `Executor.run`, exactly as a loop of exe.run calls would, with
the sparse path pipelined where reads may lag (async: the next batch's
embedding prefetches travel while one runs, fluid/pipeline.py). With
more, each stream runs in its own Python thread over the same program as
Paddle's Hogwild trainer does: the persistable variables (parameters,
optimizer state, metric state) are shared and updated without locks, every
other variable (activations, gradients, the feeds) lives in a per-thread
scope, so threads never read each other's intermediate values.

Statistics variables (`program._fleet_opt["stat_var_names"]`, which fleet 2.x's
minimize fills from `DistributedStrategy.trainer_desc_configs` and PaddleRec sets
to the AUC histograms) are handled as Paddle's Hogwild workers handle them:
thread 0 accumulates into the shared variable, every other thread into its own
zero-initialised copy, and when all threads are done each copy is added into the
shared one — so concurrent threads never lose each other's counts.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import MutableMapping

from psjob.fluid.base import GraphError
from psjob.fluid.core import Scope, global_scope
from psjob.fluid.pipeline import pipelined

log = logging.getLogger("psjob.fluid")
# _fleet_opt keys of Paddle's trainer that psjob's train_from_dataset does not act on.
_UNHONOURED = ("dump_fields", "dump_param", "dump_fields_path", "worker_skipped_ops")

class _Overlay(MutableMapping):
    """Thread-local names over a shared dict: `shared_names` read and write `shared`."""

    def __init__(self, shared: dict, shared_names: frozenset):
        self._shared, self._names, self._local = shared, shared_names, {}

    def _home(self, name):
        return self._shared if name in self._names else self._local

    def __getitem__(self, name):
        if name in self._local:
            return self._local[name]
        return self._shared[name]

    def __setitem__(self, name, value):
        self._home(name)[name] = value

    def __delitem__(self, name):
        del self._home(name)[name]

    def __iter__(self):
        yield from self._local
        yield from (n for n in self._shared if n not in self._local)

    def __len__(self):
        return len(self._local) + sum(1 for n in self._shared if n not in self._local)


class ThreadScope(Scope):
    """A trainer thread's scope: persistables shared with `parent`, the rest its own."""

    def __init__(self, parent: Scope, persistable: frozenset):
        super().__init__()
        self.vars = _Overlay(parent.vars, persistable)
        self.lods = _Overlay(parent.lods, persistable)


def _stat_var_names(program, scope) -> list:
    """`stat_var_names` of the program's _fleet_opt, each checked to be a variable the
    scope holds (Paddle fails on a missing one too, at the merge)."""
    opt_info = getattr(program, "_fleet_opt", None) or {}
    if not isinstance(opt_info, dict):
        raise TypeError(f"program._fleet_opt must be a dict, got {type(opt_info).__name__}")
    names = list(opt_info.get("stat_var_names") or ())
    for key in _UNHONOURED:
        if opt_info.get(key):
            log.warning("program._fleet_opt[%r] is set; psjob's train_from_dataset does not act on it", key)
    for name in names:
        if not isinstance(name, str) or name not in scope.vars:
            raise GraphError(f"_fleet_opt['stat_var_names'] names {name!r}, which is not a variable of the scope "
                             "(run the startup program first; the names are the metric's persistable state)")
    return names


def _merge_stats(scope, thread_scopes, names) -> None:
    """Add every thread's copy of the statistics into the shared variable (Paddle's
    MergeToRootScope), once all threads are done."""
    for name in names:
        total = scope.vars[name]
        for ts in thread_scopes:
            total = total + ts.vars[name]
        scope.vars[name] = total.astype(scope.vars[name].dtype, copy=False)


def _persistable_names(program) -> frozenset:
    return frozenset(v.name for block in program.blocks for v in block.vars.values() if v.persistable)


def _check_threads(program, thread: int) -> None:
    if thread > 1 and any(op.type == "send_barrier" for op in program.global_block().ops):
        raise ValueError(f"train_from_dataset(thread={thread}) on a sync-mode trainer program: the sync "
                         "barrier counts one step per trainer, not per thread; use thread=1, or async/geo "
                         "mode (a_sync=True) for Hogwild threads")


def run_dataset(executor, program, dataset, scope, thread, names, fetch_info, print_period, debug):
    """The body of train_from_dataset/infer_from_dataset (see the module docstring);
    `program` is a Program, `names` the fetch targets' names."""
    if dataset is None:
        raise ValueError("train_from_dataset needs a dataset (paddle.distributed.InMemoryDataset or QueueDataset)")
    if not hasattr(dataset, "_thread_feeds"):
        raise TypeError(f"dataset must be an InMemoryDataset or QueueDataset, got {type(dataset).__name__}")
    scope = scope if scope is not None else global_scope()
    thread = int(thread) if thread else dataset.thread_num
    if thread < 1:
        raise ValueError(f"thread must be >= 1, got {thread}")
    _check_threads(program, thread)
    labels = list(fetch_info or names)
    if len(labels) != len(names):
        raise ValueError(f"fetch_info names {len(labels)} values but fetch_list has {len(names)}")
    period = max(1, int(print_period))
    streams = dataset._thread_feeds(thread)

    def run_stream(index, feeds, run_scope):
        for step, feed in enumerate(feeds, 1):
            values = executor.run(program, feed=feed, fetch_list=names, scope=run_scope)
            if names and (debug or step % period == 0):
                shown = ", ".join(f"{label}: {value}" for label, value in zip(labels, values))
                print(f"[thread {index}] batch {step}: {shown}", flush=True)

    stats = _stat_var_names(program, scope)
    if thread == 1:   # the next batch's embedding rows are fetched while this one runs
        run_stream(0, pipelined(executor, program, streams[0]), scope)
        return None
    shared = _persistable_names(program)
    errors: list[BaseException] = []
    # Thread 0 counts into the shared statistics; the others into zeroed copies of their own.
    scopes = [ThreadScope(scope, shared if i == 0 else shared - set(stats)) for i in range(len(streams))]
    for ts in scopes[1:]:
        for name in stats:
            ts.vars[name] = scope.vars[name] * 0

    def guarded(index, feeds):
        try:
            run_stream(index, feeds, scopes[index])
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)

    workers = [threading.Thread(target=guarded, args=(i, feeds), name=f"psjob-hogwild-{i}", daemon=True)
               for i, feeds in enumerate(streams)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if errors:
        raise errors[0]
    _merge_stats(scope, scopes[1:], stats)
    return None
