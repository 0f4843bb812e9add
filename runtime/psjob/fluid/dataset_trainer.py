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
"""
from __future__ import annotations

import threading
from collections.abc import MutableMapping

from .core import Scope, global_scope
from .pipeline import pipelined


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

    if thread == 1:   # the next batch's embedding rows are fetched while this one runs
        run_stream(0, pipelined(executor, program, streams[0]), scope)
        return None
    shared = _persistable_names(program)
    errors: list[BaseException] = []

    def guarded(index, feeds):
        try:
            run_stream(index, feeds, ThreadScope(scope, shared))
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
    return None
