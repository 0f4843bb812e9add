"""Fleet 2.x's sparse embeddings as pserver tables.

In Paddle 2.x's parameter-server mode an embedding created with `sparse=True`
(`paddle.nn.Embedding(..., sparse=True)`, `paddle.static.nn.embedding(is_sparse=True)`)
is not a dense parameter that every trainer pulls whole: Fleet makes it a sparse
table on the pservers, and trainers pull only the rows a batch looks up
(paddle.distributed.fleet, "Parameter Server" guide; PaddleRec's rank models rely
on it: their 1,000,001-row tables would otherwise cross the network every step).

In the asynchronous modes every sparse embedding that only lookups read becomes
its own distributed lookup table (embedding(is_distributed=True)), as each is
its own table in Paddle's (PaddleRec's wide_deep has a wide and a deep one).
The trainers keep each table's parameter and write the rows they prefetch into
it, as Paddle's do; a forward-only program that reads one as a parameter (an
evaluation program cloned before minimize) looks its rows up on the pservers
instead (RemoteTableView), so it sees what every trainer trained. Synchronous training keeps every
parameter as written, so it still equals the single-machine program, and geo
mode trains local copies of every parameter.
"""
from __future__ import annotations

import logging
import weakref

from psjob.fluid.framework import Program
from psjob.fluid.transpiler.trainer_pass import TRAINER_KEEPS_ROWS, find_table_lookups, prefetch_table_lookups
from psjob.foundation.roles import Mode

log = logging.getLogger(__name__)

PROMOTING_MODES = (Mode.ASYNC, Mode.HALF_ASYNC)


def _candidates(program: Program) -> dict[str, list]:
    """Sparse-embedding parameters that only lookup_table ops read → their lookups."""
    block = program.global_block()
    lookups: dict[str, list] = {}
    for op in block.ops:
        if op.type == "lookup_table" and op.input("W"):
            lookups.setdefault(op.input("W")[0], []).append(op)
    readers = {}
    for op in block.ops:
        for name in op.input_arg_names:
            if op.type != "lookup_table" or name not in op.input("W"):
                readers[name] = op.type
    out = {}
    for name, ops in lookups.items():
        if name in readers or not block.has_var(name):
            continue
        var = block.var(name)
        if not getattr(var, "trainable", True) or len(var.shape) != 2:
            continue
        if all(op.attr("is_sparse", False) for op in ops):
            out[name] = ops
    return out


def promote_sparse_embedding(program: Program, mode: Mode) -> list[str]:
    """Make every sparse embedding of `program` that only lookups read a distributed lookup
    table (before the optimizer is applied, so it appends each table's per-row update).
    Returns their names in first-lookup order; [] where `mode` keeps parameters dense or the
    program has none. Embeddings the user already made distributed stay as they are."""
    if mode not in PROMOTING_MODES:
        return []
    block = program.global_block()
    found = _candidates(program)
    names = [n for n, ops in found.items() if not any(op.attr("is_distributed", False) for op in ops)]
    for name in names:
        for op in found[name]:
            op._set_attr("is_distributed", True)
            op._set_attr("remote_prefetch", False)
            op._set_attr(TRAINER_KEEPS_ROWS, True)
        log.info("fleet: sparse embedding %r %s is a pserver table", name, list(block.var(name).shape))
    return names


class RemoteTableView:
    """The executor's view of programs on a trainer whose pservers hold `plan.tables`: a
    forward-only program that looks a table up as a parameter runs as a copy whose
    lookups prefetch the rows from the pservers (psjob.foundation.hooks.REMOTE_TABLE_VIEW)."""

    def __init__(self, plan):
        self.plan = plan
        self._views: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # program -> (version, block)

    def __call__(self, program, block):
        if block.idx != 0 or getattr(program, "_is_distributed", False):
            return block
        looked_up = any(find_table_lookups(block, t.name) for t in self.plan.tables)
        if not looked_up or any(op.type.endswith("_grad") for op in block.ops):
            return block  # a training program keeps its parameter (as a single process would)
        cached = self._views.get(program)
        if cached is not None and cached[0] == program._version:
            return cached[1]
        copy = program.clone()
        prefetch_table_lookups(copy.global_block(), self.plan)
        self._views[program] = (program._version, copy.global_block())
        return copy.global_block()
