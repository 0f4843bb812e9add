"""The pipelined sparse path: a batch's embedding prefetches travel while the batch
before it computes (TorchRec's train pipeline).

`pipelined(executor, program, feeds)` is what the training loops use (train_from_dataset
with one thread, the built-in job): it yields the feeds in order, each after the next
one's prefetches were issued by `prefetch_ahead`. The prefetch ops of the next run take
the issued replies when their ids match — they do when the feed is what that run is fed
— and fetch as usual otherwise.

Only where reads may lag pushes anyway (the client is an async or half-async
communicator: `reads_may_lag`): the rows are read before the current batch's gradients
reach the pservers, one step of extra staleness on top of the asynchronous push. For an
exe.run whose backward is deferred (ahead_of_run), no more: a communicator's
`ready_to_read_ahead` first waits until the pservers applied all but the last
max_stale_steps - 1 steps of its pushes (nearly always done: the last push left a step
ago). Sync
programs keep their exact rounds, an async communicator allowed no stale step
(`max_stale_steps=0`: exact reads) its exact rows, and programs whose prefetched ids are
not all fed are left alone: nothing is issued ahead and every prefetch fetches in its own
run.
"""
from __future__ import annotations

import weakref

import numpy as np

from psjob.fluid.core import LoDTensor
from psjob.fluid.framework import default_main_program
from psjob.fluid.ops.dist_ops import PREFETCH_AHEAD, split_wanted_ids

MAX_PREFETCH_AHEAD = 4  # issued batches kept per prefetch op
_PAIRS = weakref.WeakKeyDictionary()  # block -> (its op count, its (split_ids, prefetch) op pairs)
_END = object()


def _prefetch_pairs(block):
    """The (split_ids, prefetch) op pairs of a block, found once per block version."""
    cached = _PAIRS.get(block)
    if cached is not None and cached[0] == len(block.ops):
        return cached[1]
    pairs = []
    for op in block.ops:
        if op.type == "prefetch":
            split = next((s for s in block.ops if s.type == "split_ids" and s.output("Out") == op.input("X")),
                         None)
            if split is None:
                pairs = []
                break
            pairs.append((split, op))
    _PAIRS[block] = (len(block.ops), pairs)
    return pairs


def prefetch_ahead(executor, program, feed: dict) -> bool:
    """Issue the embedding prefetches of the NEXT run of `program` (fed `feed`) now;
    False, issuing nothing, where reads may not lag (sync) or the prefetched ids are not
    all in `feed`. By hand:

        for i, feed in enumerate(feeds):
            if i + 1 < len(feeds):
                prefetch_ahead(exe, program, feeds[i + 1])
            exe.run(program, feed=feed, ...)
    """
    program = default_main_program() if program is None else getattr(program, "_program", program)
    plan = _ahead_plan(executor, program, feed)
    if plan is None:
        return False
    _issue(executor, feed, *plan)
    return True


# What ahead_of_run found (Executor.run's deferred tails, executor.py).
ISSUED, ISSUABLE, ALREADY_ISSUED, CANNOT_ISSUE = "issued", "issuable", "already issued", "cannot issue"


def ahead_of_run(executor, program, feed: dict, issue: bool) -> str:
    """For a run of `program` fed `feed` that is about to start: whether its prefetches
    can travel ahead of it (CANNOT_ISSUE where prefetch_ahead would issue nothing),
    were issued already (ALREADY_ISSUED: `pipelined` or prefetch_ahead by hand), are
    issued now (ISSUED, with `issue`) or could be (ISSUABLE, without)."""
    plan = _ahead_plan(executor, program, feed)
    if plan is None:
        return CANNOT_ISSUE
    pairs, client = plan
    split = pairs[0][0]
    queue = executor.services.get(PREFETCH_AHEAD, {}).get(id(split))
    if queue:
        wanted = _wanted(split, feed)
        if any(len(entry[0]) == len(wanted) and np.array_equal(entry[0], wanted) for entry in queue):
            return ALREADY_ISSUED
    if not issue:
        return ISSUABLE
    # The run before this one pushed a step ago (its backward was deferred to the start of
    # this run): its rows wait until that push is applied, which it nearly always is by now.
    ready = getattr(client, "ready_to_read_ahead", None)
    if ready is not None:
        ready()
    _issue(executor, feed, pairs, client)
    return ISSUED


def _ahead_plan(executor, program, feed: dict):
    """(the (split_ids, prefetch) pairs, the client) when `program`'s prefetches may be
    issued ahead of its run fed `feed`, else None."""
    pairs = _prefetch_pairs(program.global_block())
    if not pairs or not all(name in feed for split, _ in pairs for name in split.input("Ids")):
        return None
    client = executor.service("rpc", pairs[0][1])
    if not getattr(client, "reads_may_lag", False):
        return None
    return pairs, client


def _fed_ids(value) -> np.ndarray:
    """A fed id input as a flat int64 array, as split_ids will read it from the scope."""
    if isinstance(value, tuple):  # (array, lod)
        value = value[0]
    if isinstance(value, LoDTensor):  # its value without settling anything: the caller is a run
        value = value._scope.vars.get(value._name)
    ids = np.asarray(value)
    if ids.dtype.kind not in "iu":  # no prefetch of ids a cast made up: the run's feed check names it
        raise TypeError(f"ids must be integers, got {ids.dtype}")
    return ids.astype(np.int64, copy=False).reshape(-1)


def _wanted(split, feed: dict) -> np.ndarray:
    return np.concatenate([_fed_ids(feed[name]) for name in split.input("Ids")])


def _issue(executor, feed: dict, pairs, client) -> None:
    issued = executor.services.setdefault(PREFETCH_AHEAD, {})
    for split, op in pairs:
        wanted = _wanted(split, feed)
        split_out = split_wanted_ids(wanted, len(op.input("X")), with_index=bool(split.output("Index")))
        requests = [(ids, client.prefetch(ep, table, ids) if ids.size else None)
                    for ids, ep, table in zip(split_out[0], op.attr("epmap"), op.attr("table_names"))]
        # The split_ids op of the next run reuses the split; its prefetch op, the requests.
        for key, entry in ((id(split), (wanted, split_out)), (id(op), requests)):
            queue = issued.setdefault(key, [])
            del queue[:-MAX_PREFETCH_AHEAD + 1]  # batches prepared but never run (a skipped feed)
            queue.append(entry)


def pipelined(executor, program, items, feed_of=None):
    """Yield `items` in order, each once the next one's prefetches are on their way:
    `items` are feed dicts, or anything `feed_of(item)` gives the feed dict of. Reads one
    item ahead of the loop. One thread per executor: Hogwild threads sharing an executor
    would take each other's issued prefetches."""
    items = iter(items)
    current = next(items, _END)
    ahead = True   # until prefetch_ahead says this program or client takes none
    while current is not _END:
        following = next(items, _END)
        if ahead and following is not _END:
            ahead = prefetch_ahead(executor, program, following if feed_of is None else feed_of(following))
        yield current
        current = following
