"""The operator registry: kernel, shape inference and gradient maker per op type.

Adding an op means one `@register_op` on its kernel, naming how to infer its
output shapes (run when the op is appended to a block) and how to build its
gradient ops (run by `append_backward`).

Kernels see only arrays: `ctx.xp` is the array module of the place (numpy or
cupy) handed in by the Executor — kernels never import an array library
themselves, so the same kernel runs on CPU and GPU.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from psjob.fluid.base import EMPTY_VAR_NAME, GRAD_SUFFIX, GraphError, convert_dtype


@dataclass
class GradOpSpec:
    """A gradient op to append: same shape as an Operator, not yet in a block."""

    type: str
    inputs: dict[str, list[str]]
    outputs: dict[str, list[str]]
    attrs: dict = field(default_factory=dict)


@dataclass(frozen=True)
class OpDef:
    type: str
    kernel: Callable
    infer_shape: Callable | None = None
    grad: Callable | None = None  # (op) -> list[GradOpSpec]
    # Inputs through which no gradient ever flows (ids, labels, lengths...).
    no_grad_inputs: frozenset = frozenset()
    # Inputs filled while the op runs (listen_and_serv receives them over the
    # network), so the executor must not require them beforehand.
    inputs_arrive_at_run_time: bool = False


_REGISTRY: dict[str, OpDef] = {}
# Imports every kernel module, which registers its ops (psjob.fluid.ops.load_all, handed in
# by that package when it is imported, before this module can be used). A process that
# imports psjob.fluid's modules directly, not the package's API, gets the kernels on its
# first lookup of an op not registered yet.
_load_kernels: Callable[[], None] | None = None
_kernels_loaded = False
_loading = threading.RLock()  # another thread's first lookup waits for the kernels
_in_load = False  # a lookup made while load_all runs (in that thread) does not load again


def set_kernel_loader(load: Callable[[], None]) -> None:
    global _load_kernels
    _load_kernels = load


def _lookup(type: str) -> OpDef | None:
    opdef = _REGISTRY.get(type)
    if opdef is None and not _kernels_loaded:
        _load_all()
        opdef = _REGISTRY.get(type)
    return opdef


def _load_all() -> None:
    """Import every kernel module once; a module that fails to import is tried again (and
    says so again) at the next lookup."""
    global _kernels_loaded, _in_load
    with _loading:
        if _kernels_loaded or _in_load or _load_kernels is None:
            return
        _in_load = True
        try:
            _load_kernels()
            _kernels_loaded = True
        finally:
            _in_load = False


def register_op(type: str, *, infer_shape=None, grad=None, no_grad_inputs=(),
                inputs_arrive_at_run_time=False):
    def wrap(kernel):
        if type in _REGISTRY:
            raise ValueError(f"op {type!r} registered twice")
        _REGISTRY[type] = OpDef(type, kernel, infer_shape, grad, frozenset(no_grad_inputs),
                                inputs_arrive_at_run_time)
        return kernel
    return wrap


def get_op_def(type: str) -> OpDef:
    opdef = _lookup(type)
    if opdef is None:
        raise GraphError(f"no kernel registered for op type {type!r}")
    return opdef


def has_op(type: str) -> bool:
    return _lookup(type) is not None


def registered_ops() -> list[str]:
    _load_all()
    return sorted(_REGISTRY)


def infer_shape(op):
    opdef = _lookup(op.type)
    if opdef is not None and opdef.infer_shape is not None:
        try:
            opdef.infer_shape(op)
        except GraphError:
            raise
        except (KeyError, IndexError, ValueError) as exc:
            raise GraphError(f"op {op.type!r}: cannot infer output shapes: {exc}") from exc


# -- helpers for shape inference --------------------------------------------------------

def in_var(op, slot: str, i: int = 0):
    names = op.inputs.get(slot)
    if not names:
        raise GraphError(f"op {op.type!r} needs input {slot!r}")
    return op.block._var_recursive(names[i])


def out_var(op, slot: str, i: int = 0):
    name = op.outputs[slot][i]
    var = op.block._find_var_recursive(name)
    if var is None:
        var = op.block.create_var(name=name)
    return var


def set_out(op, slot: str, shape, dtype, lod_level=None, i: int = 0):
    if not op.outputs.get(slot) or op.outputs[slot][i] == EMPTY_VAR_NAME:
        return
    var = out_var(op, slot, i)
    var.shape = tuple(int(d) for d in shape)
    # a dtype attr may be numpy's or Fluid's VarDesc.VarType: the variable keeps the plain name
    var.dtype = dtype if dtype is None or type(dtype) is str else convert_dtype(dtype)
    if lod_level is not None:
        var.lod_level = lod_level


def same_shape(in_slot="X", out_slot="Out"):
    def infer(op):
        x = in_var(op, in_slot)
        set_out(op, out_slot, x.shape, x.dtype, x.lod_level)
    return infer


def grad_name(name: str) -> str:
    return name + GRAD_SUFFIX


def simple_grad(grad_type: str, *, inputs=("X",), outputs=("Out",), keep_outputs=False,
                grad_of=None, extra_attrs=None):
    """A grad maker for the common shape: grad op reads forward inputs, the
    forward outputs (if keep_outputs) and Out@GRAD, and writes X@GRAD."""
    grad_of = grad_of or inputs

    def make(op):
        ins = {slot: op.input(slot) for slot in inputs if op.input(slot)}
        if keep_outputs:
            ins.update({slot: op.output(slot) for slot in outputs})
        for slot in outputs:
            ins[slot + GRAD_SUFFIX] = [grad_name(n) for n in op.output(slot)]
        outs = {slot + GRAD_SUFFIX: [grad_name(n) for n in op.input(slot)]
                for slot in grad_of if op.input(slot)}
        attrs = dict(op.attrs)
        attrs.update(extra_attrs or {})
        return [GradOpSpec(grad_type, ins, outs, attrs)]
    return make


class KernelContext:
    """What a kernel sees: its inputs and outputs by slot, attributes, xp.

    Built once per (op, scope) when the Executor compiles a program, then
    reused every run — it holds references to the scope's dicts, not copies.
    """

    __slots__ = ("op", "op_type", "xp", "place", "vals", "lods", "ins", "outs", "attrs", "executor", "scope")

    def __init__(self, op, xp, place, scope, executor):
        self.op = op
        self.op_type = op.type
        self.xp = xp
        self.place = place
        self.scope = scope
        self.vals = scope.vars
        self.lods = scope.lods
        self.ins = op.inputs
        self.outs = op.outputs
        self.attrs = op.attrs
        self.executor = executor

    def input(self, slot: str, i: int = 0):
        return self.vals[self.ins[slot][i]]

    def input_list(self, slot: str) -> list:
        return [self.vals[n] for n in self.ins.get(slot, ())]

    def has_input(self, slot: str) -> bool:
        names = self.ins.get(slot)
        return bool(names) and names[0] != EMPTY_VAR_NAME and names[0] in self.vals

    def input_lod(self, slot: str, i: int = 0):
        return self.lods.get(self.ins[slot][i])

    def has_output(self, slot: str) -> bool:
        names = self.outs.get(slot)
        return bool(names) and names[0] != EMPTY_VAR_NAME

    def output_name(self, slot: str, i: int = 0) -> str:
        return self.outs[slot][i]

    def set_output(self, slot: str, value, i: int = 0, lod=None):
        names = self.outs.get(slot)
        if not names or names[i] == EMPTY_VAR_NAME:
            return
        name = names[i]
        self.vals[name] = value
        if lod is not None:
            self.lods[name] = lod
        elif name in self.lods:
            del self.lods[name]

    def attr(self, name: str, default=None):
        return self.attrs.get(name, default)
