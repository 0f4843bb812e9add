"""`strided_slice`: what `x[1:3]`, `x[:, 0]`, `x[::-1, i]` build on a Variable
(layers/indexing.py), as Paddle's static-graph indexing builds it.

Attributes as Paddle's op: `axes`, `starts`, `ends`, `strides` (one per sliced axis)
and `decrease_axis`, the axes indexed by an integer, which the output drops (each
must have exactly one element after slicing). Bounds follow Python's slices
(`slice(start, end, stride).indices(size)`: negative bounds count from the end,
out-of-range bounds clamp), so an INT32 max or min stands for "to the end" in either
direction. When every axis is dropped the output has shape [1], as in Paddle before
2.5 (psjob's reductions give [1] too). The gradient scatters Out@GRAD into zeros
of X's shape.

Bounds held in Variables (`x[a:b]` with `a` or `b` a Variable) come, as in Paddle's op,
in the inputs `StartsTensorList` / `EndsTensorList`: one one-element int tensor per
sliced axis, read when the op runs (the attributes then hold placeholders); those axes'
lengths are unknown when the program is built.
"""
from __future__ import annotations

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import in_var, register_op, set_out, simple_grad
from psjob.fluid.ops.shape_ops import _norm_axis


def _check_attrs(attrs, ndim):
    axes, starts, ends, strides = (list(attrs.get(k, ())) for k in ("axes", "starts", "ends", "strides"))
    if not len(axes) == len(starts) == len(ends) == len(strides):
        raise GraphError(f"strided_slice: axes {axes}, starts {starts}, ends {ends} and strides {strides} "
                         "must have one length")
    if any(int(s) == 0 for s in strides):
        raise GraphError(f"strided_slice: a stride of 0 in {strides}")
    axes = [_norm_axis(a, ndim, "strided_slice") for a in axes]
    if len(set(axes)) != len(axes):
        raise GraphError(f"strided_slice: an axis repeats in {axes}")
    decrease = [_norm_axis(a, ndim, "strided_slice") for a in attrs.get("decrease_axis", ())]
    if not set(decrease) <= set(axes):
        raise GraphError(f"strided_slice: decrease_axis {decrease} must be among the sliced axes {axes}")
    return list(zip(axes, (int(s) for s in starts), (int(e) for e in ends), (int(s) for s in strides))), decrease


# Paddle's bound inputs: a 1-D int tensor per bound (StartsTensor...) or a list of one-element
# int tensors (StartsTensorList...), read when the op runs; slice has no strides.
_TENSOR_BOUNDS = ("StartsTensorList", "EndsTensorList", "StridesTensorList",
                  "StartsTensor", "EndsTensor", "StridesTensor")


def _run_attrs(ctx, op_type="strided_slice"):
    """The op's attributes with the bounds its tensors hold at this run (a 1-D tensor before
    a list, as Paddle reads them)."""
    attrs = ctx.attrs
    n = len(attrs.get("axes", ()))
    for key in ("starts", "ends", "strides"):
        cap = key.capitalize()
        whole, names = ctx.ins.get(cap + "Tensor"), ctx.ins.get(cap + "TensorList")
        if whole:
            values = [int(v) for v in ctx.xp.asarray(ctx.vals[whole[0]]).reshape(-1)]
        elif names:
            values = [int(ctx.xp.asarray(ctx.vals[m]).reshape(-1)[0]) for m in names]
        else:
            continue
        if len(values) != n:
            raise GraphError(f"{op_type}: {len(values)} {key} at run time for {n} axes")
        attrs = dict(attrs, **{key: values})
    return attrs


def _index(shape, attrs):
    """The numpy index tuple, and per sliced axis the slice object."""
    sliced, decrease = _check_attrs(attrs, len(shape))
    index = [slice(None)] * len(shape)
    for axis, start, end, stride in sliced:
        index[axis] = slice(start, end, stride)
    return tuple(index), decrease


def _out_shape(sliced_shape, decrease):
    out = [d for i, d in enumerate(sliced_shape) if i not in set(decrease)]
    return out or [1]


def _infer(op):
    x = in_var(op, "Input")
    index, decrease = _index(x.shape, op.attrs)
    unknown = set(op.attrs.get("axes", ())) if any(op.input(slot) for slot in _TENSOR_BOUNDS) else set()
    shape = []
    for axis, (size, s) in enumerate(zip(x.shape, index)):
        if size < 0 or axis in unknown:
            shape.append(1 if axis in decrease else -1)
            continue
        length = len(range(*s.indices(size)))
        if axis in decrease and length != 1:
            raise GraphError(f"index {s.start} is out of range for axis {axis} of {x.name}{list(x.shape)}")
        shape.append(length)
    set_out(op, "Out", _out_shape(shape, decrease), x.dtype)


@register_op("strided_slice", infer_shape=_infer, no_grad_inputs=_TENSOR_BOUNDS,
             grad=simple_grad("strided_slice_grad", inputs=("Input",) + _TENSOR_BOUNDS, grad_of=("Input",)))
def strided_slice(ctx):
    x = ctx.input("Input")
    index, decrease = _index(x.shape, _run_attrs(ctx))
    part = x[index]
    for axis in decrease:
        if part.shape[axis] != 1:
            raise IndexError(f"strided_slice: index {index[axis].start} is out of range for axis {axis} "
                             f"of {ctx.ins['Input'][0]} (shape {list(x.shape)})")
    ctx.set_output("Out", part.reshape(_out_shape(part.shape, decrease)))


@register_op("strided_slice_grad")
def strided_slice_grad(ctx):
    x, dout = ctx.input("Input"), ctx.input("Out@GRAD")
    index, _ = _index(x.shape, _run_attrs(ctx))
    dx = ctx.xp.zeros_like(x)
    dx[index] = dout.reshape(dx[index].shape)
    ctx.set_output("Input@GRAD", dx)
