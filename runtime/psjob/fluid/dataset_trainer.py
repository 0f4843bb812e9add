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

Dumps (`program._fleet_opt["dump_fields_path"]` and `["dump_fields"]`, which PaddleRec's
offline inference sets): after every batch, one line per example into
`<dump_fields_path>/part-<rank:03d>-<thread:05d>`, as Paddle's device workers write them
(DeviceWorker::DumpField): the instance id (and content) the dataset parsed, then per
field whose value is [batch, width] (or a one-level LoD over the batch)
`\t<name>:<count>:<v1>,<v2>,...`, floats as C++ streams print them (6 significant
digits), int64 as uint64. `dump_fields_mode` "a" appends to the files, anything else
starts them afresh.

Statistics variables (`program._fleet_opt["stat_var_names"]`, which fleet 2.x's
minimize fills from `DistributedStrategy.trainer_desc_configs` and PaddleRec sets
to the AUC histograms) are handled as Paddle's Hogwild workers handle them:
thread 0 accumulates into the shared variable, every other thread into its own
zero-initialised copy, and when all threads are done each copy is added into the
shared one — so concurrent threads never lose each other's counts.
"""
from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import MutableMapping

import numpy as np

from psjob.fluid.base import GraphError
from psjob.fluid.core import Scope, global_scope
from psjob.fluid.pipeline import pipelined

log = logging.getLogger("psjob.fluid")
# _fleet_opt keys of Paddle's trainer that psjob's train_from_dataset does not act on.
_UNHONOURED = ("dump_param", "worker_skipped_ops")
# Feed keys a dataset's batches carry their instance ids and contents under (set_parse_ins_id /
# set_parse_content, psjob.distributed.dataset): taken out before a batch is fed, and dumped.
INS_ID_KEY, INS_CONTENT_KEY = "@ins_id@", "@ins_content@"

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


class _Dump:
    """One trainer thread's dump file and the instance ids of the batches handed to it
    but not yet run (a pipelined stream takes the next batch before this one runs)."""

    def __init__(self, opt_info: dict, thread_index: int):
        self.fields = [str(f) for f in opt_info.get("dump_fields") or ()]
        folder = str(opt_info.get("dump_fields_path") or "")
        self.path = os.path.join(folder, f"part-{int(opt_info.get('mpi_rank', 0) or 0):03d}-{thread_index:05d}")
        os.makedirs(folder, exist_ok=True)
        self.file = open(self.path, "a" if opt_info.get("dump_fields_mode") == "a" else "w")
        self.pending: deque = deque()

    def take_ids(self, feeds):
        """The batches of `feeds` without their instance ids, which wait in `pending`."""
        for feed in feeds:
            self.pending.append((feed.pop(INS_ID_KEY, None), feed.pop(INS_CONTENT_KEY, None)))
            yield feed

    def write(self, run_scope, values) -> None:
        """The lines of the batch that just ran; `values` are the dump fields' fetched values."""
        ids, contents = self.pending.popleft()
        columns = []
        for name, value in zip(self.fields, values):
            value = np.asarray(value)
            lod = run_scope.lods.get(name)
            columns.append((name, value, lod[0] if lod else None))
        rows = len(ids) if ids is not None else next((len(v) if lod is None else len(lod) - 1
                                                      for _, v, lod in columns if v.ndim == 2), 0)
        lines = []
        for i in range(rows):
            line = "" if ids is None else str(ids[i]) + ("" if contents is None else "\t" + str(contents[i]))
            for name, value, lod in columns:
                if value.ndim != 2 or (value.shape[0] != rows if lod is None else len(lod) != rows + 1):
                    continue  # Paddle skips a field that is not one row (or LoD sequence) per example
                part = value[i] if lod is None else value[lod[i]:lod[i + 1]].reshape(-1)
                line += f"\t{name}:{part.size}:" + ",".join(_dump_number(v) for v in part)
            lines.append(line + "\n")
        self.file.write("".join(lines))

    def close(self):
        self.file.close()


def _dump_number(v) -> str:
    if isinstance(v, np.integer):
        return str(int(v) % 2 ** 64) if v.dtype.kind == "i" else str(int(v))
    return f"{float(v):g}"


# Ops infer_from_dataset leaves out: those that push to parameter servers (Paddle's infer
# mode skips its push ops, send among them, in every device worker).
INFER_SKIPPED_OPS = frozenset({"send", "push_dense", "push_sparse", "push_sparse_v2", "distributed_push_sparse"})
_infer_programs: dict = {}  # id(program) -> (program, its version, the copy without pushes)


def infer_program(program):
    """`program` without its push ops (itself when it has none): a copy made once per
    program version."""
    if program is None or not any(op.type in INFER_SKIPPED_OPS for op in program.global_block().ops):
        return program
    seen = _infer_programs.get(id(program))
    if seen is None or seen[0] is not program or seen[1] != program._version:
        copy = program.clone()
        copy._fleet_opt = program._fleet_opt  # the same dict: dump settings made later apply too
        block = copy.global_block()
        gone = {n for op in block.ops if op.type in INFER_SKIPPED_OPS for n in op.output_arg_names}
        block.ops = [op for op in block.ops if op.type not in INFER_SKIPPED_OPS]
        for op in block.ops:  # the recvs' control dependencies on the sends
            for slot, names in op.inputs.items():
                op.inputs[slot] = [n for n in names if n not in gone]
        copy._bump()
        if len(_infer_programs) > 16:
            _infer_programs.clear()
        seen = _infer_programs[id(program)] = (program, program._version, copy)
    return seen[2]


def _dump_fields(program, fields) -> list:
    """The dump fields the program has; Paddle skips (and logs) the others."""
    block = program.global_block()
    missing = [f for f in fields if not block.has_var(f)]
    if missing:
        log.warning("dump_fields names %s, which the program does not have: not dumped", ", ".join(missing[:8]))
    return [f for f in fields if block.has_var(f)]


def _dump_config(program):
    """program._fleet_opt when it asks for dumps (dump_fields_path and dump_fields), else None."""
    opt_info = getattr(program, "_fleet_opt", None) or {}
    if isinstance(opt_info, dict) and opt_info.get("dump_fields_path") and opt_info.get("dump_fields"):
        return opt_info
    return None


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
    # Paddle's data feed writes every use_var into the thread's scope by name, whether or not the
    # program reads it; a slot the program does not have is then simply unread (Paddle 3.0.0
    # trains an empty program from a dataset), so it is not fed.
    absent = [slot.name for slot in getattr(dataset, "_slots", ()) if not program.global_block().has_var(slot.name)]
    if absent:
        streams = [_without(feeds, absent) for feeds in streams]
    dump_info = _dump_config(program)
    dumps = [_Dump(dump_info, i) for i in range(len(streams))] if dump_info else None
    if dumps:
        streams = [dump.take_ids(feeds) for dump, feeds in zip(dumps, streams)]
    elif getattr(dataset, "_parse_ins_id", False):  # ids the batches carry but nothing dumps
        streams = [_without_ids(feeds) for feeds in streams]
    fields = _dump_fields(program, dumps[0].fields) if dumps else []
    for dump in dumps or ():
        dump.fields = fields

    def run_stream(index, feeds, run_scope):
        for step, feed in enumerate(feeds, 1):
            values = executor.run(program, feed=feed, fetch_list=names + fields, scope=run_scope)
            if dumps:
                dumps[index].write(run_scope, values[len(names):])
                values = values[:len(names)]
            if names and (debug or step % period == 0):
                shown = ", ".join(f"{label}: {value}" for label, value in zip(labels, values))
                print(f"[thread {index}] batch {step}: {shown}", flush=True)

    try:
        return _run_streams(executor, program, scope, streams, run_stream, thread)
    finally:
        for dump in dumps or ():
            dump.close()


def _without(feeds, names):
    for feed in feeds:
        for name in names:
            feed.pop(name, None)
        yield feed


def _without_ids(feeds):
    for feed in feeds:
        feed.pop(INS_ID_KEY, None)
        feed.pop(INS_CONTENT_KEY, None)
        yield feed


def _run_streams(executor, program, scope, streams, run_stream, thread):
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
