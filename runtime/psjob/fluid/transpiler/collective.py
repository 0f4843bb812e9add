"""Collective (NCCL2-mode) data parallelism: gradient all-reduce ops inserted after backward.

As Paddle's collective transpiler (GradAllReduce) does, every parameter gradient
is all-reduced (`c_allreduce_sum`) once backward has produced it and before the
optimize pass (clipping, decay, the optimizer op) reads it, so every trainer
applies the same update to its own copy of the parameters. The gradients are
first scaled by 1/nranks — BuildStrategy.GradientScaleStrategy.CoeffNumDevice,
Paddle's default, which scales the loss gradient — so the update is the one of
the mean loss over every trainer's batch. The ops write the gradients in place,
so every variable of the program stays fetchable under its own name.

The ring itself is formed by `gen_nccl_id` in the startup program (the NCCL2
DistributeTranspiler's, or `add_gen_nccl_id`) or on the first all-reduce.
"""
from __future__ import annotations

from psjob.fluid.framework import OP_ROLE_ATTR_NAME, OP_ROLE_VAR_ATTR_NAME, GraphError, OpRole, Program


def parameter_gradients(program: Program) -> list[tuple[str, str]]:
    """[(param, grad)] the optimize pass reads: the op_role_var grad no optimize op writes."""
    block = program.global_block()
    opt_ops = [op for op in block.ops if int(op.attr(OP_ROLE_ATTR_NAME, 0) or 0) & int(OpRole.Optimize)]
    written = {n for op in opt_ops for n in op.output_arg_names}
    grads_of: dict = {}
    for op in opt_ops:
        role_var = op.attr(OP_ROLE_VAR_ATTR_NAME) or []
        for param, grad in zip(role_var[0::2], role_var[1::2]):
            grads_of.setdefault(param, []).append(grad)
    pairs = []
    for param, grads in grads_of.items():
        source = [g for g in grads if g not in written] or grads
        pairs.append((param, source[0]))
    return pairs


def has_grad_allreduce(program: Program) -> bool:
    return any(op.type == "c_allreduce_sum" for op in program.global_block().ops)


def insert_grad_allreduce(program: Program, nranks: int, scale: bool = True) -> Program:
    """Insert (scale by 1/nranks and) c_allreduce_sum of every parameter gradient after the
    last backward op of `program`, in place; returns it. A program that has them already
    (a Fleet collective program) is left as it is."""
    nranks = int(nranks)
    if nranks < 2 or has_grad_allreduce(program):
        return program
    pairs = parameter_gradients(program)
    if not pairs:
        raise GraphError("collective training needs an optimize pass: call optimizer.minimize(loss) "
                         "before running the program with num_trainers > 1")
    block = program.global_block()
    backward = [i for i, op in enumerate(block.ops)
                if int(op.attr(OP_ROLE_ATTR_NAME, 0) or 0) & int(OpRole.Backward)
                and not int(op.attr(OP_ROLE_ATTR_NAME, 0) or 0) & int(OpRole.Optimize)]
    at = (backward[-1] + 1) if backward else min(
        i for i, op in enumerate(block.ops) if int(op.attr(OP_ROLE_ATTR_NAME, 0) or 0) & int(OpRole.Optimize))
    role = int(OpRole.Backward)
    for param, grad in pairs:
        if scale:
            block._insert_op(at, "scale", inputs={"X": [grad]}, outputs={"Out": [grad]},
                             attrs={"scale": 1.0 / nranks, OP_ROLE_ATTR_NAME: role})
            at += 1
        block._insert_op(at, "c_allreduce_sum", inputs={"X": [grad]}, outputs={"Out": [grad]},
                         attrs={"ring_id": 0, "use_calc_stream": True, OP_ROLE_ATTR_NAME: role,
                                OP_ROLE_VAR_ATTR_NAME: [param, grad]})
        at += 1
    program._bump()
    return program


def add_gen_nccl_id(startup: Program, trainer_id: int, endpoints, current_endpoint: str = "") -> None:
    """Append the ring's rendezvous to `startup` (what Paddle's NCCL2 transpiler adds), once."""
    block = startup.global_block()
    if any(op.type in ("gen_nccl_id", "c_gen_nccl_id") for op in block.ops):
        return
    endpoints = list(endpoints)
    var = block.create_var(name="NCCLID")
    block.append_op("gen_nccl_id", inputs={}, outputs={"NCCLID": [var.name]},
                    attrs={"trainers": endpoints, "trainer_id": int(trainer_id),
                           "endpoint": current_endpoint or endpoints[int(trainer_id)],
                           "nccl_comm_num": 1})
    startup._bump()
