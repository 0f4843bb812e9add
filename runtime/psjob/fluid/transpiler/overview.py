"""Deriving the distributed-variable overview and the distributed program attributes."""
from __future__ import annotations

from psjob.fluid.framework import GraphError, Program
from psjob.fluid.transpiler.plan import TranspilePlan
from psjob.fluid.transpiler.vars_distributed import VarsDistributed, VarStruct


def find_distributed_lookup_tables(program: Program) -> list[str]:
    """Names of the tables read by lookup_table(is_distributed=True), in first-lookup order.

    Each is its own pserver table (Paddle 2.x's parameter-server mode makes every sparse
    embedding one; Fluid 1.x allowed a single table)."""
    block = program.global_block()
    names = list(dict.fromkeys(op.input("W")[0] for op in block.ops
                               if op.type == "lookup_table" and op.attr("is_distributed")))
    for name in names:
        _check_table_readers(block, name)
    return names


def _check_table_readers(block, name: str) -> None:
    for op in block.ops:
        if op.type == "lookup_table" and op.input("W") == [name] and not op.attr("is_distributed"):
            raise GraphError(f"every lookup_table reading the distributed table {name!r} must set "
                             "is_distributed=True")
        if op.type not in ("lookup_table", "lookup_table_grad") and name in op.input_arg_names \
                and int(op.attr("op_role", 0)) & 0x2 == 0:
            raise GraphError(f"op {op.type!r} reads the distributed table {name!r}; only lookup_table "
                             "may (the table lives on the pservers)")


def build_overview(plan: TranspilePlan, program: Program) -> VarsDistributed:
    """Param pieces in plan order, then Optimizer pieces per endpoint (Fluid's order)."""
    gb = program.global_block()
    vd = VarsDistributed()
    for pp in plan.params.values():
        origin = gb.var(pp.param)
        for b in pp.blocks:
            piece = VarStruct(b.name, tuple(b.shape), pp.dtype) if b.sliced else origin
            vd.add_distributed_var(origin, piece, is_slice=b.sliced, block_id=b.block_id,
                                   offset=b.element_offset, vtype="Param", endpoint=b.endpoint)
    for ep in plan.endpoints:
        for pp, b, _ in plan.blocks_on(ep):
            for acc, (name, shape) in plan.accumulator_blocks(pp.param, b).items():
                origin = gb.var(acc)
                if not b.sliced:
                    vd.add_distributed_var(origin, origin, vtype="Optimizer", endpoint=ep)
                    continue
                is_slice = tuple(shape) != tuple(origin.shape)
                piece = VarStruct(name, tuple(shape), origin.dtype, persistable=origin.persistable)
                vd.add_distributed_var(origin, piece, is_slice=is_slice, block_id=b.block_id,
                                       offset=b.element_offset if is_slice else 0, vtype="Optimizer",
                                       endpoint=ep)
    return vd


def mark_distributed(program: Program, plan: TranspilePlan, overview: VarsDistributed,
                     ps_endpoint: str = "", is_chief: bool = False) -> None:
    """The attributes the I/O code reads off a transpiled program."""
    program._is_distributed = True
    program._endpoints = list(plan.endpoints)
    program._ps_endpoint = ps_endpoint
    program._is_chief = is_chief
    program._distributed_lookup_tables = [t.name for t in plan.tables]
    program._parameters_on_pservers = overview
