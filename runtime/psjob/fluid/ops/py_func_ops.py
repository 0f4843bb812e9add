"""`py_func`: a Python function as an op (Paddle 1.8 API docs, fluid.layers.py_func; Paddle 2.x's
paddle.static.py_func). The functions live in a process-wide list and the op names them by
index (`forward_callable_id`, `backward_callable_id`: -1 for none), as Paddle's
PyFuncRegistry does, so a program holding py_func runs only in the process that built it.

Forward: the function gets one LoDTensor per input X (None for one that holds no value) and
returns one value per output Out (a numpy array, anything np.array takes, a LoDTensor, or
None to leave that output unset); the values are stored as returned, dtype included, as Paddle
stores them. Backward (only when a backward function was given; otherwise no gradient flows
through the op, as in Paddle): the same op type calling the backward function with the
forward inputs, then the forward outputs, then the outputs' gradients (minus the names in
`backward_skip_vars`), which returns one gradient per forward input.
"""
from __future__ import annotations

import inspect
import threading

import numpy as np

from psjob.fluid.base import EMPTY_VAR_NAME
from psjob.fluid.core import LoDTensor
from psjob.fluid.ops.registry import GradOpSpec, grad_name, register_op

_CALLABLES: list = []
_lock = threading.Lock()


def register_callable(func) -> int:
    """Keep func for py_func ops and return its id."""
    if func is None or not callable(func):
        raise TypeError(f"py_func: func must be a Python function, got {func!r}")
    with _lock:
        _CALLABLES.append(func)
        return len(_CALLABLES) - 1


def registered_callable(idx: int):
    try:
        return _CALLABLES[idx]
    except IndexError:
        raise ValueError(f"py_func: no Python function with id {idx} was registered in this process "
                         "(py_func programs run only where they were built)") from None


def _takes_no_arguments(func) -> bool:
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):  # builtins without a signature get the arguments
        return False
    return not any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in params)


def _py_func_grad(op):
    bwd = int(op.attr("backward_callable_id", -1))
    if bwd < 0:
        return []  # Paddle makes no gradient op: nothing flows back through the function
    skip = set(op.attr("backward_skip_vars", []) or [])
    xs, outs = op.input("X"), op.output("Out")
    ins = [n for n in xs + outs if n not in skip] + [grad_name(n) for n in outs]
    return [GradOpSpec("py_func", {"X": ins}, {"Out": [grad_name(n) for n in xs]},
                       {"forward_callable_id": bwd, "backward_callable_id": -1, "backward_skip_vars": []})]


def _as_value(ctx, value, i):
    if isinstance(value, LoDTensor):
        lod = value._scope.lods.get(value._name)
        return ctx.xp.asarray(np.asarray(value)), lod
    if not isinstance(value, np.ndarray):
        value = np.array(value)
    return ctx.xp.asarray(value), None


@register_op("py_func", grad=_py_func_grad)
def py_func(ctx):
    func = registered_callable(int(ctx.attr("forward_callable_id")))
    names = ctx.ins.get("X", [])
    args = [LoDTensor(ctx.scope, n) if n != EMPTY_VAR_NAME and n in ctx.vals else None for n in names]
    ret = func() if _takes_no_arguments(func) else func(*args)
    outs = ctx.outs.get("Out", [])
    if not isinstance(ret, (list, tuple)):
        ret = [ret] if outs or ret is not None else []
    if len(ret) != len(outs):
        raise ValueError(f"py_func: {getattr(func, '__name__', func)!r} returned {len(ret)} values for "
                         f"{len(outs)} outputs {outs}")
    for i, value in enumerate(ret):
        if value is not None:
            arr, lod = _as_value(ctx, value, i)
            ctx.set_output("Out", arr, i, lod=lod)
