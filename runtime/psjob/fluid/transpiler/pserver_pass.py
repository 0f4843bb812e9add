"""Building one pserver's program (Fluid's DistributeTranspiler.get_pserver_program).

Layout of the program for endpoint E:

    block 0   declarations: the parameter blocks E holds, their merged
              gradients (and, in sync mode with several trainers, one
              receiving slot per trainer: `<grad>.trainer_<t>`), accumulators,
              the learning rate; one op: `listen_and_serv`.
    LR block  the learning-rate schedule ops (if any), run once per round.
    one optimize block per parameter block E holds:
              [sum of the trainers' slots, scale 1/trainers]   (sync, >1 trainer)
              the ops connected to the parameter's optimizer op (weight decay,
              clipping), in program order, then the optimizer op itself —
              renamed onto the block (`w` → `w.block1`, `w@GRAD` →
              `w@GRAD.block1`, `w_moment1_0` → `w_moment1_0.block1`), with
              parameter-shaped accumulators cut to the block's shape.
    table blocks (per distributed lookup table, a `psjob.foundation.tables.SparseTable` in
              the scope, created by the startup program's `create_sparse_table`):
              optimize ([sum, scale] in sync mode, `sparse_table_push` of the
              rows keyed by feature id), prefetch (`lookup_sparse_table`);
              then one checkpoint block (a `sparse_table_save` per table, rows
              keyed by id).

`listen_and_serv` carries what a server needs to dispatch requests:
`optimize_blocks`, `grad_to_block_id` ("<grad>:<block idx>"), `Fanin`
(trainers), `sync_mode`, `endpoint`, `pserver_index`, `lr_decay_block_id`,
`prefetch_var_name_to_block_id` ("<table>:<block idx>", one per table),
`checkpoint_block_id`, `distributed_lookup_tables` (the table names), `dc_asgd`, `elastic` (Fanin is then the trainer
capacity and the members join at run time: the `scale` ops that average the
trainers' slots carry `trainer_mean`, which the pserver resets to
1/members before each round).

Names of accumulators and temporaries of a sliced parameter get the
`.block<i>` suffix so two blocks of one parameter on the same pserver (which
HashName can produce) never share state.
"""
from __future__ import annotations

import logging

from psjob.fluid.framework import OP_ROLE_VAR_ATTR_NAME, GraphError, Operator, Program, VarType
from psjob.fluid.transpiler.details import clone_block_attr, clone_var_decl
from psjob.fluid.transpiler.plan import TablePlan, TranspilePlan
from psjob.fluid.transpiler.slicing import block_name, trainer_name
from psjob.fluid.transpiler.trainer_pass import table_grad_names

log = logging.getLogger("psjob.transpiler")

TRAINER_ID_VAR = "@TRAINER_ID@"
TABLE_PATH_VAR = "kLookupTablePath"
# On the `scale` ops that average the trainers' gradient slots (sync mode).
TRAINER_MEAN_ATTR = "trainer_mean"


def build_pserver_program(plan: TranspilePlan, endpoint: str, origin: Program) -> Program:
    prog = Program()
    prog.random_seed = origin.random_seed
    gb = prog.global_block()
    ogb = origin.global_block()
    on_ep = plan.blocks_on(endpoint)

    recv_inputs = []
    for pp, b, g in on_ep:
        gb.create_var(name=b.name, shape=b.shape, dtype=pp.dtype, persistable=True)
        gvar = ogb.var(pp.grad)
        gb.create_var(name=g.name, shape=g.shape, dtype=gvar.dtype, type=gvar.type, persistable=True)
        if plan.per_trainer_grads:
            for t in range(plan.trainer_num):
                recv_inputs.append(gb.create_var(name=trainer_name(g.name, t), shape=g.shape,
                                                 dtype=gvar.dtype, type=gvar.type))
        else:
            recv_inputs.append(g.name)

    optimize_blocks, grad_to_block_id = [], []
    lr_block_id = -1
    if plan.opt.lr_ops:
        lr_block = _build_lr_block(prog, origin, plan.opt.lr_ops)
        optimize_blocks.append(lr_block)
        lr_block_id = lr_block.idx

    baks = _declare_dc_asgd_baks(gb, plan, on_ep) if plan.dc_asgd else {}
    for held in on_ep:
        blk = prog._create_block(0)
        _append_grad_merge(blk, plan, held.grad_block.name)
        _append_component(blk, plan, origin, held, baks.get(held.block.name))
        grad_to_block_id.append(f"{held.grad_block.name}:{blk.idx}")
        optimize_blocks.append(blk)

    attrs: dict = {}
    if plan.tables:
        k = plan.endpoints.index(endpoint)
        prefetch = []
        for table in plan.tables:
            table_blk, table_recv, table_key = _build_table_optimize_block(prog, plan, table, origin, k)
            recv_inputs.extend(table_recv)
            optimize_blocks.append(table_blk)
            grad_to_block_id.append(f"{table_key}:{table_blk.idx}")
            prefetch.append(f"{table.name}:{_build_prefetch_block(prog, table).idx}")
        attrs["prefetch_var_name_to_block_id"] = prefetch
        attrs["checkpoint_block_id"] = _build_checkpoint_block(prog, plan, k).idx
        attrs["distributed_lookup_tables"] = [t.name for t in plan.tables]

    if not optimize_blocks:
        log.warning("pserver %s holds no parameter block: it gets an empty optimize block", endpoint)
        optimize_blocks.append(prog._create_block(0))

    attrs.update({
        "optimize_blocks": optimize_blocks,
        "endpoint": endpoint,
        "pserver_index": plan.endpoints.index(endpoint),
        "Fanin": plan.trainer_num,
        "sync_mode": plan.sync_mode,
        "grad_to_block_id": list(dict.fromkeys(grad_to_block_id)),
        "lr_decay_block_id": lr_block_id,
        "dc_asgd": plan.dc_asgd,
        "elastic": plan.elastic,
    })
    prog.current_block_idx = 0
    gb.append_op("listen_and_serv", inputs={"X": recv_inputs}, outputs={}, attrs=attrs)
    return prog


def _build_lr_block(prog: Program, origin: Program, lr_ops):
    blk = prog._create_block(0)
    gb, ogb = prog.global_block(), origin.global_block()
    for op in lr_ops:
        for n in op.input_arg_names + op.output_arg_names:
            if ogb.has_var(n):
                clone_var_decl(gb, ogb.var(n))
        # Sub-blocks (a conditional LR schedule) are cloned under the LR block.
        attrs = {k: clone_block_attr(origin, v, prog, blk.idx) for k, v in op.attrs.items()}
        blk.ops.append(Operator(blk, op.type, op.inputs, op.outputs, attrs))
    prog._bump()
    return blk


def _append_grad_merge(blk, plan: TranspilePlan, merged: str) -> None:
    """Average the trainers' gradients of one block: sum, then scale by 1/trainers."""
    if not plan.per_trainer_grads:
        return
    slots = [trainer_name(merged, t) for t in range(plan.trainer_num)]
    blk.append_op("sum", inputs={"X": slots}, outputs={"Out": [merged]})
    blk.append_op("scale", inputs={"X": [merged]}, outputs={"Out": [merged]},
                  attrs={"scale": 1.0 / plan.trainer_num, TRAINER_MEAN_ATTR: True})


class _Renamer:
    """Maps the original names in one parameter's optimize ops onto one of its blocks."""

    def __init__(self, plan, origin, held, gb):
        pp, block = held.param_plan, held.block
        self.pp, self.b, self.g, self.gb = pp, block, held.grad_block, gb
        self.ogb = origin.global_block()
        self.acc = plan.accumulator_blocks(pp.param, block)
        self.lr_names = plan.opt.lr_var_names()

    def __call__(self, name: str) -> str:
        pp, b, gb = self.pp, self.b, self.gb
        if name == pp.param:
            return b.name
        if name == pp.grad:
            return self.g.name
        var = self.ogb.vars.get(name)
        if var is None:
            raise GraphError(f"optimize op of {pp.param!r} uses {name!r}, which the program does not declare")
        if name in self.acc:
            new, shape = self.acc[name]
            clone_var_decl(gb, var, name=new, shape=shape)
            return new
        if name in self.lr_names or var.persistable:
            clone_var_decl(gb, var)
            return name
        new = block_name(name, b.block_id) if b.sliced else name
        shape = b.shape if tuple(var.shape) == tuple(pp.shape) else var.shape
        clone_var_decl(gb, var, name=new, shape=shape, persistable=False)
        return new

    def slots(self, slots: dict) -> dict:
        return {k: [self(n) for n in names] for k, names in slots.items()}


def _append_component(blk, plan, origin, held, baks) -> None:
    pp, b, g = held
    rename = _Renamer(plan, origin, held, blk.program.global_block())
    opt_op = plan.opt.optimizer_of[pp.param]
    for op in plan.opt.components[pp.param]:
        inputs, outputs = rename.slots(op.inputs), rename.slots(op.outputs)
        attrs = dict(op.attrs)
        if op is opt_op:
            attrs[OP_ROLE_VAR_ATTR_NAME] = [b.name, g.name]
            if baks is not None:
                inputs["Grad"] = [_append_dc_asgd(blk, b, inputs["Grad"][0], baks)]
        blk.append_op(op.type, inputs=inputs, outputs=outputs, attrs=attrs)


def _declare_dc_asgd_baks(gb, plan: TranspilePlan, on_ep) -> dict:
    if plan.sync_mode:
        raise GraphError("enable_dc_asgd needs async training: transpile with sync_mode=False")
    baks = {}
    for pp, b, _ in on_ep:
        if pp.sparse_grad:
            raise GraphError(f"enable_dc_asgd supports dense gradients only; {pp.param!r} has a sparse one")
        baks[b.name] = [gb.create_var(name=f"{b.name}.trainer_{t}_bak", shape=b.shape, dtype=pp.dtype,
                                      persistable=True).name for t in range(plan.trainer_num)]
    if not gb.has_var(TRAINER_ID_VAR):
        gb.create_var(name=TRAINER_ID_VAR, shape=(1,), dtype="int64")
    return baks


def _append_dc_asgd(blk, b, grad: str, baks) -> str:
    """Delay compensation: g + g * g * (w - w_bak[trainer]) (Fluid's DC-ASGD ops; Zheng et al., Asynchronous SGD with Delay Compensation, ICML 2017)."""
    gb = blk.program.global_block()

    def tmp(suffix):
        return gb.create_var(name=f"{b.name}.dc_{suffix}", shape=b.shape, dtype=gb.var(b.name).dtype).name
    local_bak = tmp("local_bak")
    blk.append_op("ref_by_trainer_id", inputs={"X": baks, "TrainerId": [TRAINER_ID_VAR]},
                  outputs={"Out": [local_bak]})
    o1, o2, o3, o4 = tmp("diff"), tmp("diff_g"), tmp("diff_gg"), tmp("grad")
    blk.append_op("elementwise_sub", inputs={"X": [b.name], "Y": [local_bak]}, outputs={"Out": [o1]})
    blk.append_op("elementwise_mul", inputs={"X": [o1], "Y": [grad]}, outputs={"Out": [o2]})
    blk.append_op("elementwise_mul", inputs={"X": [o2], "Y": [grad]}, outputs={"Out": [o3]})
    blk.append_op("elementwise_add", inputs={"X": [grad], "Y": [o3]}, outputs={"Out": [o4]})
    return o4


# -- the distributed lookup table ---------------------------------------------------------

def _build_table_optimize_block(prog, plan: TranspilePlan, table: TablePlan, origin, k: int):
    """Merge the trainers' rows for this shard (sync), push them into the SparseTable."""
    gb, ogb = prog.global_block(), origin.global_block()
    # The table is a SparseTable object keyed by id: no height, rows appear on first use.
    gb.create_var(name=table.name, shape=(-1, table.width), dtype=table.dtype, persistable=True)
    clone_var_decl(gb, ogb.var(table.lr_var))
    blk = prog._create_block(0)
    grad_shape = (-1, table.width)
    if plan.sync_mode:
        slots = [table_grad_names(plan, table, t)[k] for t in range(plan.trainer_num)]
        for s in slots:
            gb.create_var(name=s, shape=grad_shape, dtype=table.dtype, type=VarType.SELECTED_ROWS)
        merged = table.grad
        gb.create_var(name=merged, shape=grad_shape, dtype=table.dtype, type=VarType.SELECTED_ROWS,
                      persistable=True)
        blk.append_op("sum", inputs={"X": slots}, outputs={"Out": [merged]})
        # The mean over trainers, like dense gradients (Fluid's transpiler only sums
        # table gradients); this keeps N trainers x batch b equal to one
        # trainer with batch N*b under a mean loss. See docs/dev/transpiler.md.
        blk.append_op("scale", inputs={"X": [merged]}, outputs={"Out": [merged]},
                      attrs={"scale": 1.0 / plan.trainer_num, TRAINER_MEAN_ATTR: True})
        recv = slots
    else:
        merged = table_grad_names(plan, table)[k]
        gb.create_var(name=merged, shape=grad_shape, dtype=table.dtype, type=VarType.SELECTED_ROWS,
                      persistable=True)
        recv = [merged]
    if table.optimizer["name"] != table.optimizer_type:
        log.info("the distributed lookup table %r is updated with %s on the pservers "
                 "(table_optimizer; its program's op is %r)", table.name, table.optimizer["name"],
                 table.optimizer_type)
    # The table's own per-row rule (create_sparse_table's optimizer attribute) runs
    # here, with the learning rate read at push time so LR schedules apply.
    blk.append_op("sparse_table_push", inputs={"W": [table.name], "Grad": [merged],
                                               "LearningRate": [table.lr_var]},
                  outputs={}, attrs={OP_ROLE_VAR_ATTR_NAME: [table.name, merged]})
    return blk, recv, merged


def _build_prefetch_block(prog, table: TablePlan):
    gb = prog.global_block()
    ids = gb.create_var(name=f"{table.name}.prefetch_ids", shape=(-1, 1), dtype="int64")
    rows = gb.create_var(name=f"{table.name}.prefetch_rows", shape=(-1, table.width), dtype=table.dtype)
    blk = prog._create_block(0)
    blk.append_op("lookup_sparse_table", inputs={"Ids": [ids.name], "W": [table.name]},
                  outputs={"Out": [rows.name]},
                  attrs={"is_sparse": True, "is_distributed": True, "padding_idx": table.padding_idx})
    return blk


def _build_checkpoint_block(prog, plan: TranspilePlan, k: int):
    gb = prog.global_block()
    gb.create_var(name=TABLE_PATH_VAR, type=VarType.RAW, persistable=True)
    blk = prog._create_block(0)
    for table in plan.tables:
        files = gb.create_var(name=f"{table.name}.saved_files", type=VarType.RAW)
        blk.append_op("sparse_table_save", inputs={"X": [table.name], "Path": [TABLE_PATH_VAR]},
                      outputs={"Out": [files.name]},
                      attrs={"table_name": table.name, "shard_index": k, "shard_num": len(plan.endpoints)})
    return blk
