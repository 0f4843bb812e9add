"""Shape ops: concat, split, reshape2, flatten_contiguous_range, transpose2, squeeze2,
unsqueeze2, fill_zeros_like.

Shapes at build time may hold -1 (the batch); inference keeps -1 wherever
the answer depends on it. `reshape2`/`transpose2`/`squeeze2`/`unsqueeze2`
follow Fluid 1.x: besides Out they write `XShape`, an empty array shaped
[0, *X.shape] that tells the gradient op X's shape without keeping X alive.

Gradients of concat/split are views into Out@GRAD where numpy gives views;
kernels never write their inputs, so sharing the buffer is safe.
"""
from __future__ import annotations

import math

import numpy as np

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, set_out


def _norm_axis(axis, ndim, what):
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise GraphError(f"{what}: axis {axis} is out of range for {ndim}-D input")
    return axis + ndim if axis < 0 else axis


# -- concat ------------------------------------------------------------------------------

def _concat_shape(op):
    xs = [in_var(op, "X", i) for i in range(len(op.input("X")))]
    if not xs:
        raise GraphError("concat needs at least one input")
    nd = len(xs[0].shape)
    axis = _norm_axis(op.attr("axis", 0), nd, "concat")
    total = 0
    for v in xs:
        if len(v.shape) != nd:
            raise GraphError(f"concat: input {v.name}{list(v.shape)} has {len(v.shape)} dimensions, "
                             f"{xs[0].name}{list(xs[0].shape)} has {nd}")
        for d, (a, b) in enumerate(zip(v.shape, xs[0].shape)):
            if d != axis and a >= 0 and b >= 0 and a != b:
                raise GraphError(f"concat along axis {axis}: {v.name}{list(v.shape)} and "
                                 f"{xs[0].name}{list(xs[0].shape)} differ in dimension {d}")
        total = -1 if (total < 0 or v.shape[axis] < 0) else total + v.shape[axis]
    shape = list(xs[0].shape)
    shape[axis] = total
    set_out(op, "Out", shape, xs[0].dtype, xs[0].lod_level)


def _concat_grad(op):
    return [GradOpSpec("concat_grad",
                       {"X": op.input("X"), "Out@GRAD": [grad_name(op.output("Out")[0])]},
                       {"X@GRAD": [grad_name(n) for n in op.input("X")]}, dict(op.attrs))]


@register_op("concat", infer_shape=_concat_shape, grad=_concat_grad)
def concat(ctx):
    xs = ctx.input_list("X")
    axis = int(ctx.attr("axis", 0))
    lod = ctx.input_lod("X") if (axis % xs[0].ndim) != 0 else None
    ctx.set_output("Out", ctx.xp.concatenate(xs, axis=axis), lod=lod)


def _split_points(sizes):
    return np.cumsum(sizes)[:-1].tolist()


@register_op("concat_grad")
def concat_grad(ctx):
    xs, dout = ctx.input_list("X"), ctx.input("Out@GRAD")
    axis = int(ctx.attr("axis", 0)) % dout.ndim
    parts = ctx.xp.split(dout, _split_points([x.shape[axis] for x in xs]), axis=axis)
    for i, part in enumerate(parts):
        ctx.set_output("X@GRAD", part, i=i)


# -- split -------------------------------------------------------------------------------

def _split_sizes(dim, num, sections, what):
    """Sizes of the pieces; dim may be -1 (unknown) at build time."""
    if sections:
        sections = [int(s) for s in sections]
        unknown = [i for i, s in enumerate(sections) if s < 0]
        if len(unknown) > 1:
            raise GraphError(f"{what}: at most one section may be -1, got {sections}")
        if unknown and dim >= 0:
            sections[unknown[0]] = dim - sum(s for s in sections if s >= 0)
            if sections[unknown[0]] < 0:
                raise GraphError(f"{what}: sections {sections} exceed dimension {dim}")
        if dim >= 0 and not unknown and sum(sections) != dim:
            raise GraphError(f"{what}: sections {sections} sum to {sum(sections)}, not to the "
                             f"dimension size {dim}")
        return sections
    num = int(num)
    if num < 1:
        raise GraphError(f"{what}: num must be positive, got {num}")
    if dim < 0:
        return [-1] * num
    if dim % num:
        raise GraphError(f"{what}: dimension {dim} does not divide into {num} equal pieces")
    return [dim // num] * num


def _split_shape(op):
    x = in_var(op, "X")
    axis = _norm_axis(op.attr("axis", 0), len(x.shape), "split")
    sizes = _split_sizes(x.shape[axis], op.attr("num", 0), op.attr("sections", []), "split")
    if len(sizes) != len(op.output("Out")):
        raise GraphError(f"split: {len(sizes)} pieces but {len(op.output('Out'))} outputs")
    for i, s in enumerate(sizes):
        shape = list(x.shape)
        shape[axis] = s
        set_out(op, "Out", shape, x.dtype, x.lod_level, i=i)


def _split_grad(op):
    # Pieces that do not reach the loss get zero grads from append_backward.
    return [GradOpSpec("concat", {"X": [grad_name(n) for n in op.output("Out")]},
                       {"Out": [grad_name(op.input("X")[0])]}, {"axis": op.attr("axis", 0)})]


@register_op("split", infer_shape=_split_shape, grad=_split_grad)
def split(ctx):
    x = ctx.input("X")
    axis = int(ctx.attr("axis", 0)) % x.ndim
    sizes = _split_sizes(x.shape[axis], ctx.attr("num", 0), ctx.attr("sections", []), "split")
    lod = ctx.input_lod("X") if axis != 0 else None
    for i, part in enumerate(ctx.xp.split(x, _split_points(sizes), axis=axis)):
        ctx.set_output("Out", part, i=i, lod=lod)


# -- reshape2 ----------------------------------------------------------------------------

def resolve_shape(in_shape, target, what):
    """Fluid's reshape rule: 0 copies the input dim, one -1 is inferred."""
    out = []
    for i, d in enumerate(target):
        d = int(d)
        if d == 0:
            if i >= len(in_shape):
                raise GraphError(f"{what}: shape {list(target)} copies dimension {i} (0) "
                                 f"that input {list(in_shape)} does not have")
            d = in_shape[i]
        elif d < -1:
            raise GraphError(f"{what}: shape {list(target)} holds {d}; only -1 (infer) and 0 (copy) "
                             "may be non-positive")
        out.append(d)
    if sum(1 for d in target if int(d) == -1) > 1:
        raise GraphError(f"{what}: shape {list(target)} may hold at most one -1")
    known_in = all(d >= 0 for d in in_shape)
    total = int(math.prod(in_shape)) if known_in else -1
    if -1 in out:
        rest = int(math.prod([d for d in out if d != -1]))
        if known_in:
            if rest == 0 or total % rest:
                raise GraphError(f"{what}: cannot reshape {list(in_shape)} ({total} elements) to {list(target)}")
            out[out.index(-1)] = total // rest
    elif known_in and all(d >= 0 for d in out) and int(math.prod(out)) != total:
        raise GraphError(f"{what}: cannot reshape {list(in_shape)} ({total} elements) to {list(target)}")
    return out


def _reshape_shape(op):
    x = in_var(op, "X")
    target = op.attr("shape", [])
    if op.input("Shape") or op.input("ShapeTensor"):
        # sizes read when the op runs (-1 in the attribute): known only where given as ints
        out = [x.shape[i] if d == 0 and i < len(x.shape) else (d if d > 0 else -1) for i, d in enumerate(target)]
    else:
        out = resolve_shape(list(x.shape), target, "reshape")
    set_out(op, "Out", out, x.dtype, x.lod_level)
    set_out(op, "XShape", [0] + list(x.shape), x.dtype)


def _reshape_target(ctx):
    """Paddle's order: the ShapeTensor list, else the Shape tensor, else the attribute."""
    if ctx.has_input("ShapeTensor"):
        return [int(t.reshape(-1)[0]) for t in ctx.input_list("ShapeTensor")]
    if ctx.has_input("Shape"):
        return [int(d) for d in ctx.input("Shape").reshape(-1)]
    return ctx.attr("shape", [])


def _xshape_grad(grad_type):
    def make(op):
        return [GradOpSpec(grad_type,
                           {"XShape": op.output("XShape"), "Out@GRAD": [grad_name(op.output("Out")[0])]},
                           {"X@GRAD": [grad_name(op.input("X")[0])]}, dict(op.attrs))]
    return make


def _set_xshape(ctx, x):
    if ctx.has_output("XShape"):
        ctx.set_output("XShape", ctx.xp.empty((0,) + x.shape, dtype=x.dtype))


@register_op("reshape2", infer_shape=_reshape_shape, grad=_xshape_grad("reshape2_grad"),
             no_grad_inputs=("Shape", "ShapeTensor"))
def reshape2(ctx):
    x = ctx.input("X")
    shape = resolve_shape(list(x.shape), _reshape_target(ctx), "reshape")
    _set_xshape(ctx, x)
    ctx.set_output("Out", x.reshape(shape), lod=ctx.input_lod("X"))


def _back_to_x(ctx):
    """Gradient of a pure re-view: Out@GRAD reshaped to X's shape."""
    shape = ctx.input("XShape").shape[1:]
    ctx.set_output("X@GRAD", ctx.input("Out@GRAD").reshape(shape))


register_op("reshape2_grad")(_back_to_x)


# -- flatten_contiguous_range (paddle.flatten) ----------------------------------------------

def flattened(shape, start, stop, what="flatten"):
    """Paddle's flatten: dimensions start..stop merge into one, unknown (-1) if any of them is."""
    nd = len(shape)
    if nd == 0:
        return [1]
    start, stop = _norm_axis(start, nd, what), _norm_axis(stop, nd, what)
    if start > stop:
        raise GraphError(f"{what}: start_axis {start} comes after stop_axis {stop} for {list(shape)}")
    merged = shape[start:stop + 1]
    size = -1 if any(d < 0 for d in merged) else int(math.prod(merged))
    return list(shape[:start]) + [size] + list(shape[stop + 1:])


def _flatten_shape(op):
    x = in_var(op, "X")
    shape = flattened(list(x.shape), op.attr("start_axis", 1), op.attr("stop_axis", 1))
    set_out(op, "Out", shape, x.dtype, x.lod_level)
    set_out(op, "XShape", [0] + list(x.shape), x.dtype)


@register_op("flatten_contiguous_range", infer_shape=_flatten_shape,
             grad=_xshape_grad("flatten_contiguous_range_grad"))
def flatten_contiguous_range(ctx):
    x = ctx.input("X")
    _set_xshape(ctx, x)
    shape = flattened(list(x.shape), ctx.attr("start_axis", 1), ctx.attr("stop_axis", 1))
    ctx.set_output("Out", x.reshape(shape), lod=ctx.input_lod("X"))


register_op("flatten_contiguous_range_grad")(_back_to_x)


# -- transpose2 --------------------------------------------------------------------------

def _check_perm(perm, ndim, what):
    perm = [int(a) for a in perm]
    if sorted(perm) != list(range(ndim)):
        raise GraphError(f"{what}: axis {perm} is not a permutation of the {ndim} input dimensions")
    return perm


def _transpose_shape(op):
    x = in_var(op, "X")
    perm = _check_perm(op.attr("axis", []), len(x.shape), "transpose")
    set_out(op, "Out", [x.shape[a] for a in perm], x.dtype)
    set_out(op, "XShape", [0] + list(x.shape), x.dtype)


@register_op("transpose2", infer_shape=_transpose_shape, grad=_xshape_grad("transpose2_grad"))
def transpose2(ctx):
    x = ctx.input("X")
    _set_xshape(ctx, x)
    ctx.set_output("Out", ctx.xp.transpose(x, ctx.attr("axis")))


@register_op("transpose2_grad")
def transpose2_grad(ctx):
    inverse = np.argsort(ctx.attr("axis")).tolist()
    ctx.set_output("X@GRAD", ctx.xp.transpose(ctx.input("Out@GRAD"), inverse))


# -- squeeze2 / unsqueeze2 ---------------------------------------------------------------

def squeezed(shape, axes, what):
    nd = len(shape)
    if not axes:
        return [d for d in shape if d != 1]
    drop = set()
    for a in axes:
        a = _norm_axis(a, nd, what)
        if shape[a] not in (1, -1):
            raise GraphError(f"{what}: cannot squeeze dimension {a} of size {shape[a]} in {list(shape)}")
        drop.add(a)
    return [d for i, d in enumerate(shape) if i not in drop]


def unsqueezed(shape, axes, what):
    out = list(shape)
    for a in axes:
        a = int(a)
        nd = len(out) + 1
        if not -nd <= a < nd:
            raise GraphError(f"{what}: axis {a} is out of range for a {nd}-D result")
        out.insert(a + nd if a < 0 else a, 1)
    return out


def _squeeze_shape(op):
    x = in_var(op, "X")
    set_out(op, "Out", squeezed(list(x.shape), op.attr("axes", []), "squeeze"), x.dtype, x.lod_level)
    set_out(op, "XShape", [0] + list(x.shape), x.dtype)


def _unsqueeze_shape(op):
    x = in_var(op, "X")
    set_out(op, "Out", unsqueezed(list(x.shape), op.attr("axes", []), "unsqueeze"), x.dtype, x.lod_level)
    set_out(op, "XShape", [0] + list(x.shape), x.dtype)


@register_op("squeeze2", infer_shape=_squeeze_shape, grad=_xshape_grad("squeeze2_grad"))
def squeeze2(ctx):
    x = ctx.input("X")
    _set_xshape(ctx, x)
    shape = squeezed(list(x.shape), ctx.attr("axes", []), "squeeze")
    ctx.set_output("Out", x.reshape(shape), lod=ctx.input_lod("X"))


@register_op("unsqueeze2", infer_shape=_unsqueeze_shape, grad=_xshape_grad("unsqueeze2_grad"))
def unsqueeze2(ctx):
    x = ctx.input("X")
    _set_xshape(ctx, x)
    shape = unsqueezed(list(x.shape), ctx.attr("axes", []), "unsqueeze")
    ctx.set_output("Out", x.reshape(shape), lod=ctx.input_lod("X"))


register_op("squeeze2_grad")(_back_to_x)
register_op("unsqueeze2_grad")(_back_to_x)


# -- fill_zeros_like ---------------------------------------------------------------------

@register_op("fill_zeros_like", infer_shape=lambda op: set_out(
    op, "Out", in_var(op, "X").shape, in_var(op, "X").dtype))
def fill_zeros_like(ctx):
    x = ctx.input("X")
    if isinstance(x, list):  # a tensor array's gradient: empty slots are zero
        ctx.set_output("Out", [None] * len(x))
        return
    ctx.set_output("Out", ctx.xp.zeros_like(x))
