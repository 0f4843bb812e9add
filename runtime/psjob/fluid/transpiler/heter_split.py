"""The heterogeneous split: one transpiled trainer program → a CPU part and a heter part.

Input: the program `DistributeTranspiler.get_trainer_program()` returned for
trainer t (forward, backward, split/send of gradients, barriers, recv), its
startup program and the transpile plan. Forward ops built inside
`fluid.device_guard("gpu")` (or "xpu") carry `op_device`; they form the heter
section. Output, by rewriting in place and returning a `HeterSplit`:

* the CPU trainer's program: every run of consecutive heter ops is replaced
  by one `send_and_recv` op (a *stage*) whose inputs are the values the heter
  trainer needs from the CPU side and whose outputs are the values the CPU
  side reads back; the rest (IO, embedding lookups and prefetch, the ops
  around the section, sends of the CPU parameters' gradients, barriers) stays;
* the heter program for trainer t: block k+1 holds stage k's ops. The first
  forward stage starts with the recv (and concat) of the section's
  parameters; the backward stage ends with the split/send of their gradients,
  so the heter trainer talks to the pservers for its own parameters.

Where each op runs:

* forward ops: the heter section if their `op_device` kind is gpu or xpu;
* gradient ops: with the forward op they differentiate — found through the
  forward variable a gradient input belongs to (`x@GRAD…` → the producer of
  `x`; a parameter's gradient → where the parameter is used);
* split/send of a gradient: where the gradient is computed; recv/concat of a
  parameter: where it is used; barriers, prefetch: the CPU trainer.

A forward stage and a backward stage are never merged, so a `clone(for_test=True)`
of the CPU program keeps the forward stages and drops the backward ones.
What crosses the wire is computed by following, op by op, which side holds
the current value of each variable: a value is sent only when the reader's
side lacks it, and control-only (RAW) variables never travel — the stage call
itself orders the two sides. Heter-computed forward values nothing reads
afterwards (a loss, a prediction) are returned too, so they can be fetched.

Every process computes the split itself from the same plan; `signature`
(a CRC of the stage's ops and transfers) lets the heter trainer refuse a
stage built from a different program.
"""
from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field

from psjob.fluid.device_guard import HETER_DEVICE_KINDS, device_kind
from psjob.fluid.framework import (
    EMPTY_VAR_NAME,
    GRAD_SUFFIX,
    OP_DEVICE_ATTR_NAME,
    OP_ROLE_ATTR_NAME,
    GraphError,
    Operator,
    OpRole,
    Program,
    VarType,
)
from psjob.fluid.transpiler.details import delete_ops
from psjob.fluid.transpiler.plan import TranspilePlan

CPU, HETER = "cpu", "heter"
STAGE_OP = "send_and_recv"
_NOT_FORWARD = int(OpRole.Backward | OpRole.Optimize | OpRole.RPC | OpRole.Dist | OpRole.LRSched)
_RPC_OR_DIST = int(OpRole.RPC | OpRole.Dist)
# Talk to every pserver for the trainer as a whole, or serve the distributed
# table: always the CPU trainer's.
_CPU_ONLY_OPS = frozenset({"send_barrier", "fetch_barrier", "prefetch", "merge_ids", "merge_ids_pool", "checkpoint_notify",
                           "geo_sgd_step"})


class HeterSplitError(GraphError):
    """The program cannot be split between CPU and heter trainers; the message says why."""


def is_forward(op) -> bool:
    return not (int(op.attr(OP_ROLE_ATTR_NAME, 0)) & _NOT_FORWARD)


def marked_heter_ops(program: Program) -> list:
    """Forward ops of the global block that a device guard put on gpu or xpu."""
    return [op for op in program.global_block().ops
            if is_forward(op) and device_kind(op.attr(OP_DEVICE_ATTR_NAME)) in HETER_DEVICE_KINDS]


def heter_device_of(ops) -> str:
    """The one device kind of the heter section ('gpu' or 'xpu')."""
    kinds = sorted({device_kind(op.attr(OP_DEVICE_ATTR_NAME)) for op in ops})
    if len(kinds) != 1:
        raise HeterSplitError(f"the heter section mixes devices {kinds}: put all its ops under one "
                              "fluid.device_guard kind (a job's heter trainers share one device)")
    return kinds[0]


@dataclass(frozen=True)
class HeterStage:
    index: int
    forward: bool
    block_idx: int          # the heter program's block that runs this stage
    inputs: tuple           # names sent by the CPU trainer
    outputs: tuple          # names returned to it
    op_types: tuple
    signature: str


@dataclass
class HeterSplit:
    trainer_id: int
    endpoint: str            # the heter trainer serving this CPU trainer
    device: str              # 'gpu' or 'xpu': what the section was marked for
    params: tuple            # parameters the heter trainer pulls and pushes
    stages: list
    program: Program         # the heter program: block k+1 runs stage k

    def stage(self, index: int) -> HeterStage:
        if not 0 <= index < len(self.stages):
            raise ValueError(f"trainer {self.trainer_id} has heter stages 0..{len(self.stages) - 1}, "
                             f"not {index}")
        return self.stages[index]


@dataclass(eq=False)
class _Stage:
    forward: bool
    ops: list
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)


def heter_endpoint_for(trainer_id: int, heter_endpoints) -> str:
    """CPU trainer t is served by heter trainer t mod K."""
    return list(heter_endpoints)[trainer_id % len(heter_endpoints)]


def served_trainers(heter_index: int, heter_count: int, trainers: int) -> list[int]:
    return [t for t in range(trainers) if t % heter_count == heter_index]


def split_heter_program(program: Program, startup: Program, plan: TranspilePlan,
                        heter_endpoints) -> HeterSplit:
    """Rewrite trainer `plan.trainer_id`'s programs into the CPU part; return the heter part."""
    heter_endpoints = list(heter_endpoints or [])
    block = program.global_block()
    marked = marked_heter_ops(program)
    if not marked:
        raise HeterSplitError("the job has heter trainers but no op runs on them: build the layers they "
                              "should run inside fluid.device_guard('gpu') (a heter section with no ops)")
    device = heter_device_of(marked)
    if not heter_endpoints:
        raise HeterSplitError(
            f"{len(marked)} op(s) ({_op_list(marked)}) are placed on '{device}' by fluid.device_guard but "
            "the job has no heter trainers: start it with `psjob launch --heter_worker_num K` "
            "(or set PADDLE_HETER_TRAINER_IP_PORT_LIST)")
    params = _heter_params(block, marked, plan)
    param_blocks = {b.name for p in params for b in plan.params[p].blocks}
    sides = _assign_sides(block, params, param_blocks)
    _check_heter_state(block, sides, params, param_blocks)

    param_ops = [op for op, s in zip(block.ops, sides) if s == HETER and _moves_params(op)]
    moved = {id(op) for op in param_ops}
    items = _group(block, sides, moved)
    stages = [it for it in items if isinstance(it, _Stage)]
    first_forward = next(st for st in stages if st.forward)
    first_forward.ops[:0] = param_ops
    dropped = _plan_transfers(block, items)
    _add_sinks(block, items)

    endpoint = heter_endpoint_for(plan.trainer_id, heter_endpoints)
    heter_program, infos = _build_heter_program(program, stages, dropped, moved)
    _rewrite_cpu_program(program, items, infos, dropped, endpoint, plan, param_blocks)
    _rewrite_cpu_startup(startup, set(params), param_blocks)
    return HeterSplit(plan.trainer_id, endpoint, device, tuple(params), infos, heter_program)


# -- where each op runs ------------------------------------------------------------------

def _op_list(ops, limit=6) -> str:
    types = [op.type for op in ops]
    return ", ".join(types[:limit]) + (", ..." if len(types) > limit else "")


def _heter_params(block, marked, plan: TranspilePlan) -> list[str]:
    """Parameters the section reads; a parameter read on both sides is refused."""
    trainable = set(plan.params)
    marked_ids = {id(op) for op in marked}
    heter_read, cpu_read = {}, {}
    for op in block.ops:
        if not is_forward(op):
            continue
        target = heter_read if id(op) in marked_ids else cpu_read
        for n in op.input_arg_names:
            if n in trainable:
                target.setdefault(n, op.type)
    both = sorted(set(heter_read) & set(cpu_read))
    if both:
        p = both[0]
        raise HeterSplitError(f"parameter {p!r} is read inside the heter section (by {heter_read[p]}) and "
                              f"outside it (by {cpu_read[p]}): a parameter belongs to one side; share it "
                              "by computing the shared value on one side")
    return [p for p in plan.params if p in heter_read]  # plan order: stable on every process


def _grad_base(name: str) -> str | None:
    return name.split(GRAD_SUFFIX, 1)[0] if GRAD_SUFFIX in name else None


def _assign_sides(block, params, param_blocks) -> list[str]:
    params = set(params)
    home = {}     # forward variable -> side of its forward producer
    writer = {}   # variable -> side of its latest writer so far

    def home_of(var):
        return home.get(var, HETER if var in params else CPU)

    def side(op):
        role = int(op.attr(OP_ROLE_ATTR_NAME, 0))
        outs = [n for n in op.output_arg_names if n != EMPTY_VAR_NAME]
        if op.type in _CPU_ONLY_OPS:
            return CPU
        if op.type == "recv":
            flags = {n in param_blocks for n in outs}
            if flags == {True, False}:
                raise HeterSplitError(f"a recv fetches parameters of both sides: {outs}")
            return HETER if flags == {True} else CPU
        if role & int(OpRole.Dist) and op.type == "concat":
            return HETER if outs and outs[0] in params else CPU
        if role & _RPC_OR_DIST:  # split/send of a gradient: where it is computed
            found = {writer.get(n, CPU) for n in op.input_arg_names
                     if n != EMPTY_VAR_NAME and block.has_var(n) and block.var(n).type != VarType.RAW}
            return HETER if found == {HETER} else CPU
        if is_forward(op):
            return HETER if device_kind(op.attr(OP_DEVICE_ATTR_NAME)) in HETER_DEVICE_KINDS else CPU
        if role & int(OpRole.Backward):
            bases = {_grad_base(n) for n in op.input_arg_names} - {None}
            if not bases:  # fill_constant of the loss gradient, fill_zeros_like
                bases = {_grad_base(n) for n in outs} - {None}
            found = {home_of(b) for b in bases}
            return HETER if found == {HETER} else CPU
        return CPU

    sides = []
    for op in block.ops:
        s = side(op)
        sides.append(s)
        for n in op.output_arg_names:
            writer[n] = s
            if is_forward(op):
                home[n] = s
    return sides


def _check_heter_state(block, sides, params, param_blocks) -> None:
    """Heter trainers keep activations per request, not state: refuse persistable writes."""
    allowed = set(params) | set(param_blocks)
    for i, (op, s) in enumerate(zip(block.ops, sides)):
        if s != HETER:
            continue
        for n in op.output_arg_names:
            var = block._find_var_recursive(n) if n != EMPTY_VAR_NAME else None
            if var is not None and var.persistable and n not in allowed:
                raise HeterSplitError(
                    f"op #{i} {op.type!r} in the heter section writes the persistable variable {n!r}; a "
                    "heter section holds parameters only — keep stateful layers (batch_norm statistics, "
                    "metrics such as auc) outside fluid.device_guard")


def _moves_params(op) -> bool:
    """The recv of a parameter, or the concat reassembling its blocks (not a layer's concat)."""
    dist = bool(int(op.attr(OP_ROLE_ATTR_NAME, 0)) & int(OpRole.Dist))
    return op.type == "recv" or (op.type == "concat" and dist)


def _group(block, sides, moved) -> list:
    """CPU ops stay; each maximal run of heter ops of one phase becomes a stage."""
    items = []
    for op, s in zip(block.ops, sides):
        if id(op) in moved:
            continue
        if s == CPU:
            items.append(op)
            continue
        fwd = is_forward(op)
        if items and isinstance(items[-1], _Stage) and items[-1].forward == fwd:
            items[-1].ops.append(op)
        else:
            items.append(_Stage(fwd, [op]))
    return items


# -- what crosses the wire ----------------------------------------------------------------

def _is_raw(block, name) -> bool:
    var = block._find_var_recursive(name)
    return var is not None and var.type == VarType.RAW


def _plan_transfers(block, items) -> set:
    """Fill each stage's inputs/outputs; return the (op id, name) control inputs to drop."""
    on_heter = set()     # names whose current value the heter trainer holds
    stale_cpu = {}       # name -> stage that wrote it last (the CPU copy is missing or old)
    dropped = set()
    for item in items:
        if isinstance(item, _Stage):
            for op in item.ops:
                for n in op.input_arg_names:
                    if n == EMPTY_VAR_NAME or n in on_heter:
                        continue
                    if _is_raw(block, n):
                        dropped.add((id(op), n))
                        continue
                    item.inputs.append(n)
                    on_heter.add(n)
                for n in op.output_arg_names:
                    if n != EMPTY_VAR_NAME:
                        on_heter.add(n)
                        stale_cpu[n] = item
            continue
        for n in item.input_arg_names:
            stage = stale_cpu.pop(n, None)
            if stage is None:
                continue
            if _is_raw(block, n):
                dropped.add((id(item), n))
            elif n not in stage.outputs:
                stage.outputs.append(n)
        for n in item.output_arg_names:
            on_heter.discard(n)
            stale_cpu.pop(n, None)
    return dropped


def _add_sinks(block, items) -> None:
    """Return heter forward values no later op reads (losses, predictions: fetch targets)."""
    flat = []
    for item in items:
        if isinstance(item, _Stage):
            flat.extend((op, item) for op in item.ops)
        else:
            flat.append((item, None))
    last_read = {}
    for i, (op, _) in enumerate(flat):
        for n in op.input_arg_names:
            last_read[n] = i
    for i, (op, stage) in enumerate(flat):
        if stage is None or not stage.forward or not is_forward(op):
            continue
        for n in op.output_arg_names:
            if (n != EMPTY_VAR_NAME and last_read.get(n, -1) <= i and not _is_raw(block, n)
                    and n not in stage.outputs):
                stage.outputs.append(n)


# -- building the two programs ------------------------------------------------------------

def _copy_op(block, op, dropped, clear_inputs=False) -> Operator:
    inputs = {slot: ([] if clear_inputs else [n for n in names if (id(op), n) not in dropped])
              for slot, names in op.inputs.items()}
    outputs = {slot: list(names) for slot, names in op.outputs.items()}
    attrs = {k: list(v) if isinstance(v, list) else v for k, v in op.attrs.items()}
    return Operator(block, op.type, inputs, outputs, attrs)


def _signature(block, ops, inputs, outputs) -> str:
    # Control (RAW) variables get process-local generated names: leave them out.
    def named(names):
        return [n for n in names if not _is_raw(block, n)]
    described = [[op.type, {k: named(v) for k, v in op.inputs.items()},
                  {k: named(v) for k, v in op.outputs.items()}, op.to_dict()["attrs"]] for op in ops]
    names = sorted({n for op in ops for n in named(op.input_arg_names + op.output_arg_names)
                    if n != EMPTY_VAR_NAME})
    decls = [[n, list(v.shape), v.dtype, v.lod_level] for n in names
             if (v := block._find_var_recursive(n)) is not None]
    text = json.dumps([described, decls, list(inputs), list(outputs)], sort_keys=True, default=str)
    return f"{zlib.crc32(text.encode()):08x}"


def _build_heter_program(program, stages, dropped, moved):
    hp = Program()
    hp.random_seed = program.random_seed
    gb = hp.global_block()
    for var in program.global_block().vars.values():
        gb._clone_variable(var, force_persistable=False)
    infos = []
    for k, st in enumerate(stages):
        b = hp._create_block(parent_idx=0)
        hp._rollback()
        # The parameter recvs leave their place after the barriers: they only
        # depended on the previous step's sends, which the stage order keeps.
        b.ops = [_copy_op(b, op, dropped, clear_inputs=(id(op) in moved and op.type == "recv"))
                 for op in st.ops]
        infos.append(HeterStage(k, st.forward, b.idx, tuple(st.inputs), tuple(st.outputs),
                                tuple(op.type for op in b.ops), _signature(gb, b.ops, st.inputs, st.outputs)))
    hp._bump()
    return hp, infos


def _rewrite_cpu_program(program, items, infos, dropped, endpoint, plan, param_blocks) -> None:
    block = program.global_block()
    stage_iter = iter(infos)
    new_ops = []
    for item in items:
        if not isinstance(item, _Stage):
            for names in item.inputs.values():
                names[:] = [n for n in names if (id(item), n) not in dropped]
            new_ops.append(item)
            continue
        info = next(stage_iter)
        role = int(OpRole.RPC) if info.forward else int(OpRole.Backward | OpRole.RPC)
        new_ops.append(Operator(block, STAGE_OP, {"X": list(info.inputs)}, {"Out": list(info.outputs)},
                                {"stage": info.index, "endpoint": endpoint, "trainer_id": plan.trainer_id,
                                 "signature": info.signature, "forward": info.forward,
                                 OP_ROLE_ATTR_NAME: role}))
    for op in new_ops:
        if op.type == "fetch_barrier":
            op.outputs["Out"] = [n for n in op.outputs.get("Out", []) if n not in param_blocks]
    block.ops = new_ops
    program._bump()


def _rewrite_cpu_startup(startup, params: set, param_blocks: set) -> None:
    """The CPU trainer neither initializes nor fetches the heter trainer's parameters."""
    held = params | param_blocks
    doomed = []
    for op in startup.global_block().ops:
        outs = [n for n in op.output_arg_names if n != EMPTY_VAR_NAME]
        if op.type != "fetch_barrier" and outs and all(n in held for n in outs):
            doomed.append(op)
    delete_ops(startup.global_block(), doomed)
