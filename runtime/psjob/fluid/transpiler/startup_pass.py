"""Building one pserver's startup program (the seed's get_startup_program).

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
shape. The distributed table's shard is selected by id placement
(`select_table_shard`). With a seeded startup program every pserver and every
trainer therefore computes identical values.
"""
from __future__ import annotations

from ..framework import EMPTY_VAR_NAME, Program
from .details import clone_var_decl
from .optimize_pass import is_param_shaped
from .plan import TranspilePlan


def build_pserver_startup(plan: TranspilePlan, endpoint: str, pserver_program: Program,
                          origin_startup: Program) -> Program:
    s = Program()
    s.random_seed = origin_startup.random_seed
    sb = s.global_block()
    pvars = pserver_program.global_block().vars
    for var in pvars.values():
        clone_var_decl(sb, var)
    sliced = _sliced_targets(plan, endpoint)
    table = plan.table.name if plan.table is not None else None
    osb = origin_startup.global_block()

    for op in osb.ops:
        outs = op.output_arg_names
        if len(outs) != 1:
            if outs and all(n in pvars for n in outs):
                sb.append_op(op.type, inputs=op.inputs, outputs=op.outputs, attrs=op.attrs)
            continue
        name = outs[0]
        slot = next(iter(op.outputs))
        if name == table:
            _init_table_shard(sb, plan, endpoint, op, slot, osb.var(name))
        elif name in sliced:
            _init_blocks(sb, op, slot, osb.var(name), sliced[name])
        elif name in pvars:
            sb.append_op(op.type, inputs=op.inputs, outputs=op.outputs, attrs=op.attrs)

    if plan.dc_asgd:  # every trainer's backup starts as the initial parameter
        for pp, b, _ in plan.blocks_on(endpoint):
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


def _init_table_shard(sb, plan: TranspilePlan, endpoint, op, slot, full_var) -> None:
    k, n = plan.endpoints.index(endpoint), len(plan.endpoints)
    shard_shape = sb.var(plan.table.name).shape
    if op.type == "fill_constant":
        _copy_with_output(sb, op, slot, plan.table.name, shard_shape)
        return
    full = clone_var_decl(sb, full_var, name=f"{plan.table.name}.full_init", persistable=False)
    _copy_with_output(sb, op, slot, full.name)
    sb.append_op("select_table_shard", inputs={"X": [full.name]}, outputs={"Out": [plan.table.name]},
                 attrs={"shard_index": k, "shard_num": n})
    sb.append_op("delete_var", inputs={"X": [full.name]}, outputs={})
