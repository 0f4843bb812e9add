"""Building one pserver's startup program (Fluid's DistributeTranspiler.get_startup_program).

A pserver initializes exactly the variables its program holds, with their
pserver shapes. Initial values must agree with what a single machine would
have drawn — trainers fetch their starting parameters from the pservers, and
the sync-mode equivalence with single-machine training depends on it — so a
block of a randomly initialized parameter is not drawn with the block's
shape (that would give different numbers) but cut out of the full draw:

    uniform_random(shape=<full>, seed=<the op's seed>) -> w
    split_byref(w, sections) -> [@EMPTY@, w.block1, @EMPTY@]   (this pserver's blocks only)
    delete_var(w)

Constant fills (biases, accumulators) are simply emitted with the block's
shape. With a seeded startup program every pserver and every trainer
therefore computes identical values.

A distributed table is not drawn at all: `create_sparse_table` makes an
empty `psjob.foundation.tables.SparseTable` whose rows appear on first use, drawn by a
per-id initializer derived from the table's init op (`table_initializer`).
Every pserver gets the same TableConfig (name, seed, initializer, per-row
optimizer), so an id's initial row does not depend on which pserver holds it.
"""
from __future__ import annotations

import json

from psjob.fluid.framework import EMPTY_VAR_NAME, GraphError, Program
from psjob.fluid.transpiler.details import clone_var_decl
from psjob.fluid.transpiler.optimize_pass import is_param_shaped
from psjob.fluid.transpiler.plan import TablePlan, TranspilePlan


def build_pserver_startup(plan: TranspilePlan, endpoint: str, pserver_program: Program,
                          origin_startup: Program) -> Program:
    s = Program()
    s.random_seed = origin_startup.random_seed
    sb = s.global_block()
    pvars = pserver_program.global_block().vars
    for var in pvars.values():
        clone_var_decl(sb, var)
    sliced = _sliced_targets(plan, endpoint)
    tables = {t.name: t for t in plan.tables}
    osb = origin_startup.global_block()

    for op in osb.ops:
        outs = op.output_arg_names
        if len(outs) != 1:
            if outs and all(n in pvars for n in outs):
                sb.append_op(op.type, inputs=op.inputs, outputs=op.outputs, attrs=op.attrs)
            continue
        name = outs[0]
        slot = next(iter(op.outputs))
        if name in tables:
            _init_table(sb, tables[name], op)
        elif name in sliced:
            _init_blocks(sb, op, slot, osb.var(name), sliced[name])
        elif name in pvars:
            sb.append_op(op.type, inputs=op.inputs, outputs=op.outputs, attrs=op.attrs)

    if plan.dc_asgd:  # every trainer's backup starts as the initial parameter
        for _, b, _ in plan.blocks_on(endpoint):
            for t in range(plan.trainer_num):
                sb.append_op("assign", inputs={"X": [b.name]}, outputs={"Out": [f"{b.name}.trainer_{t}_bak"]})
    s.current_block_idx = 0
    return s


def _sliced_targets(plan: TranspilePlan, endpoint: str) -> dict:
    """origin name -> (sections, [(pserver name or None, shape)] per block) for sliced
    parameters and their parameter-shaped accumulators; origin-shaped accumulators of a
    sliced parameter map to per-block copies (sections None)."""
    targets: dict = {}
    for pp in plan.params.values():
        if not pp.sliced:
            continue
        mine = [b.endpoint == endpoint for b in pp.blocks]
        if not any(mine):
            continue
        targets[pp.param] = (pp.sections(), [(b.name if m else None, b.shape) for b, m in zip(pp.blocks, mine)])
        op = plan.opt.optimizer_of[pp.param]
        for slot, names in op.inputs.items():
            if slot in ("Param", "Grad", "LearningRate"):
                continue
            for acc in names:
                per_block = [plan.accumulator_blocks(pp.param, b)[acc] if m else (None, None)
                             for b, m in zip(pp.blocks, mine)]
                sections = pp.sections() if is_param_shaped(op.type, slot) else None
                targets[acc] = (sections, per_block)
    return targets


def _copy_with_output(sb, op, slot, out_name, shape=None):
    attrs = dict(op.attrs)
    if shape is not None and "shape" in attrs:
        attrs["shape"] = list(shape)
    sb.append_op(op.type, inputs=op.inputs, outputs={slot: [out_name]}, attrs=attrs)


def _init_blocks(sb, op, slot, full_var, target) -> None:
    sections, per_block = target
    if sections is None or op.type == "fill_constant":
        for name, shape in per_block:
            if name is not None:
                _copy_with_output(sb, op, slot, name, shape)
        return
    # Draw the whole parameter as one machine would, keep this pserver's blocks.
    full = clone_var_decl(sb, full_var, persistable=False)
    _copy_with_output(sb, op, slot, full.name)
    outs = [name if name is not None else EMPTY_VAR_NAME for name, _ in per_block]
    sb.append_op("split_byref", inputs={"X": [full.name]}, outputs={"Out": outs},
                 attrs={"sections": list(sections), "copy": True})
    sb.append_op("delete_var", inputs={"X": [full.name]}, outputs={})


def table_initializer(op) -> dict:
    """InitializerConfig fields (psjob.foundation.tables) equivalent to the table's startup init op."""
    if op.type == "uniform_random":
        return {"kind": "uniform", "low": float(op.attr("min", -1.0)), "high": float(op.attr("max", 1.0))}
    if op.type == "gaussian_random":
        return {"kind": "normal", "mean": float(op.attr("mean", 0.0)), "std": float(op.attr("std", 1.0))}
    if op.type == "truncated_gaussian_random":
        return {"kind": "truncated_normal", "mean": float(op.attr("mean", 0.0)), "std": float(op.attr("std", 1.0))}
    if op.type == "fill_constant":
        return {"kind": "constant", "value": float(op.attr("value", 0.0))}
    raise GraphError(f"the distributed table is initialized by {op.type!r}; a sparse table supports "
                     "uniform_random, gaussian_random, truncated_gaussian_random and fill_constant")


def table_seed(op, program) -> int:
    """The op's seed, else the program's random_seed: the same on every pserver (0 is a fixed seed
    here, not 'random', since every pserver must draw an id's row alike)."""
    seed = int(op.attr("seed", 0) or 0) or int(program.random_seed or 0)
    return seed % (1 << 64)


def _init_table(sb, table: TablePlan, op) -> None:
    attrs = {"table_name": table.name, "dim": int(table.width),
             "seed": table_seed(op, sb.program),
             "initializer": json.dumps(table_initializer(op)),
             # The per-row rule; the learning rate is not here: every push
             # passes the program's LR variable (schedules included).
             "optimizer": json.dumps(table.optimizer, sort_keys=True)}
    if table.accessor:   # Paddle's accessor (sparse_table_configs), when the strategy gives one
        attrs["accessor"] = json.dumps(table.accessor, sort_keys=True)
    sb.append_op("create_sparse_table", inputs={}, outputs={"Out": [table.name]}, attrs=attrs)
