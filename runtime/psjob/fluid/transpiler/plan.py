"""The placement plan: which block of which parameter lives on which pserver.

Computed once per `transpile()` from the original program, before anything
is rewritten, and then only read: the trainer rewrite, the pserver programs
and the startup programs are all derived from the same plan, so they agree.
Every process computes the identical plan (slicing and dispatch are
deterministic), which is why a pserver program built by trainer 0's
transpiler equals the one built by trainer 3's.

A parameter block and its gradient block always share an endpoint: the
dispatcher is asked once per parameter block (by the parameter block's
name). The seed dispatched gradients and parameters separately, which with
HashName could send a gradient to a pserver that does not hold its parameter.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from psjob.fluid.framework import GraphError, VarType
from psjob.fluid.transpiler.optimize_pass import UNSLICEABLE, OptimizePass, UnsupportedOptimizerError, is_param_shaped
from psjob.fluid.transpiler.slicing import block_name, block_rows, row_width, slice_variable, trainer_name


@dataclass(frozen=True)
class BlockPlacement:
    """One block of a variable as a pserver holds it."""

    name: str            # name on the pserver: "w.block1", or "w" when not sliced
    origin: str
    block_id: int
    row_offset: int      # first dim-0 row of the block inside the origin
    shape: tuple
    endpoint: str
    sliced: bool         # the origin is cut into more than one block

    @property
    def element_offset(self) -> int:
        return self.row_offset * row_width(self.shape)


@dataclass
class ParamPlan:
    param: str
    grad: str
    dtype: str
    shape: tuple
    sparse_grad: bool                       # the gradient is SelectedRows
    blocks: list = field(default_factory=list)       # param BlockPlacements
    grad_blocks: list = field(default_factory=list)  # merged-gradient BlockPlacements (same endpoints)

    @property
    def sliced(self) -> bool:
        return len(self.blocks) > 1

    def sections(self) -> list[int]:
        return [b.shape[0] for b in self.blocks]


class HeldBlock(NamedTuple):
    """A parameter block a pserver holds, with its gradient block."""

    param_plan: ParamPlan
    block: BlockPlacement
    grad_block: BlockPlacement


@dataclass(frozen=True)
class JobShape:
    """Who takes part: the pservers, the trainers, this trainer, the mode."""

    endpoints: tuple
    trainer_num: int
    trainer_id: int
    sync_mode: bool


@dataclass
class TablePlan:
    """One distributed lookup table (embedding(is_distributed=True)), sharded by id."""

    name: str
    grad: str
    height: int
    width: int
    dtype: str
    padding_idx: int
    optimizer_type: str                     # the program's table op (what a single machine runs)
    lr_var: str
    # The pservers' per-row rule: OptimizerConfig fields {"name", "hyper"} (psjob.foundation.tables),
    # from the program's table op, or sgd when DistributeTranspilerConfig.table_optimizer="sgd".
    optimizer: dict = field(default_factory=lambda: {"name": "sgd", "hyper": {}})
    state_vars: tuple = ()                  # the program's table accumulators (not on trainers)
    # A Paddle 2.x sparse embedding Fleet made a table (fleet/sparse_tables.py): trainers keep
    # the parameter, initialized as the program says, and write each prefetch's rows into it,
    # as Paddle's trainers do, so programs cloned before minimize read it as they would.
    trainer_keeps_rows: bool = False
    # Paddle's accessor for the table (AccessorConfig.to_json(), foundation/tables/accessor.py),
    # from DistributedStrategy.sparse_table_configs; None: the per-row optimizer above.
    accessor: dict | None = None


@dataclass
class TranspilePlan:
    endpoints: list
    trainer_num: int
    trainer_id: int
    sync_mode: bool
    params: OrderedDict                     # param name -> ParamPlan (dispatch order)
    tables: list                            # TablePlans, in first-lookup order (each its own pserver table)
    opt: OptimizePass                       # of the original-program snapshot
    dc_asgd: bool = False
    opt_program: object = None              # the snapshot program the OptimizePass ops belong to
    elastic: bool = False                   # trainer_num is a capacity; members join at run time

    def table_named(self, name: str) -> TablePlan | None:
        return next((t for t in self.tables if t.name == name), None)

    def sent_grad_name(self, merged_name: str, trainer_id: int | None = None) -> str:
        """Name under which a trainer sends a gradient block."""
        t = self.trainer_id if trainer_id is None else trainer_id
        return trainer_name(merged_name, t) if self.per_trainer_grads else merged_name

    @property
    def per_trainer_grads(self) -> bool:
        return self.sync_mode and self.trainer_num > 1

    def blocks_on(self, endpoint: str) -> list[HeldBlock]:
        """The blocks `endpoint` holds, in plan order."""
        return [HeldBlock(pp, b, g) for pp in self.params.values() for b, g in zip(pp.blocks, pp.grad_blocks)
                if b.endpoint == endpoint]

    def accumulator_blocks(self, param: str, block: BlockPlacement) -> dict:
        """accumulator origin name -> (pserver name, shape) for one param block."""
        op = self.opt.optimizer_of[param]
        block_var = self.opt_program.global_block().vars
        out = {}
        for slot, names in op.inputs.items():
            if slot in ("Param", "Grad", "LearningRate"):
                continue
            for n in names:
                orig = block_var[n]
                shape = block.shape if is_param_shaped(op.type, slot) else orig.shape
                out[n] = (block_name(n, block.block_id) if block.sliced else n, tuple(shape))
        return out


def build_plan(program, opt: OptimizePass, job: JobShape, config, tables: list) -> TranspilePlan:
    endpoints = list(job.endpoints)
    block = program.global_block()
    params, grads = [], []
    table_names = {t.name for t in tables}
    for pname, gname in opt.params_grads:
        p = block.var(pname)
        if getattr(p, "trainable", True) is False:
            continue  # not trainable: stays with the trainer, as in Fluid's transpiler
        if pname in table_names:
            continue  # a distributed table is sharded by id, not sliced
        if not block.has_var(gname):
            raise GraphError(f"gradient {gname!r} of {pname!r} is not in the program")
        params.append(p)
        grads.append(block.var(gname))

    count = len(endpoints) if config.slice_var_up else 1
    param_blocks = slice_variable(params, count, config.min_block_size)
    by_var: OrderedDict = OrderedDict()
    for b in param_blocks:
        by_var.setdefault(b.varname, []).append(b)

    order = list(range(len(params)))
    if not config.slice_var_up:
        # Keeps RoundRobin from stacking every weight on one pserver and every
        # bias on another when there are 2k pservers; seeded, so every process
        # shuffles alike.
        np.random.RandomState(program.random_seed or 0).shuffle(order)

    dispatcher = config.split_method(endpoints)
    plans: OrderedDict = OrderedDict()
    for i in order:
        p, g = params[i], grads[i]
        vblocks = by_var[p.name]
        opt_op = opt.optimizer_of.get(p.name)
        if len(vblocks) > 1 and opt_op is not None and opt_op.type in UNSLICEABLE:
            raise UnsupportedOptimizerError(
                f"parameter {p.name!r} ({int(np.prod(p.shape))} elements) would be split into "
                f"{len(vblocks)} blocks across the pservers, but its optimizer {opt_op.type!r} needs the "
                "whole parameter in one place (a norm over all of it): set "
                "DistributeTranspilerConfig.slice_var_up = False (each parameter whole on one pserver), "
                "or raise min_block_size above its size, or use Adam/AdamW")
        rows = block_rows(vblocks, p.shape)
        names = [block_name(p.name, b.block_id) if len(vblocks) > 1 else p.name for b in vblocks]
        eps = dispatcher.dispatch(names)
        pp = ParamPlan(p.name, g.name, p.dtype, tuple(p.shape), g.type == VarType.SELECTED_ROWS)
        offset = 0
        for b, r, name, ep in zip(vblocks, rows, names, eps):
            shape = (r,) + tuple(p.shape[1:])
            sliced = len(vblocks) > 1
            pp.blocks.append(BlockPlacement(name, p.name, b.block_id, offset, shape, ep, sliced))
            gname = block_name(g.name, b.block_id) if sliced else g.name
            pp.grad_blocks.append(BlockPlacement(gname, g.name, b.block_id, offset, shape, ep, sliced))
            offset += r
        plans[p.name] = pp

    return TranspilePlan(endpoints, job.trainer_num, job.trainer_id, job.sync_mode, plans, list(tables), opt,
                         dc_asgd=bool(config.enable_dc_asgd), opt_program=program,
                         elastic=bool(config.elastic))
