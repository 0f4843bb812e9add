"""Search, sort and index ops behind paddle.argsort, paddle.unique, paddle.gather_nd,
paddle.scatter, paddle.index_select, paddle.take_along_axis, ... (Paddle's op types and
attribute names, Paddle 2.x API docs; Fluid 1.8 for `unique` and `unique_with_counts`).

* `arg_min` (as arg_max), `argsort` (Out and Indices; `descending`; a stable sort, so ties keep
  their order), `where_index` (the int64 [N, rank] coordinates of the true elements).
* `unique`: with `is_sorted` (Paddle 2.x) the sorted distinct values and, as asked, `Indices`
  (first occurrences), `Index` (inverse) and `Counts`; without it (Fluid 1.x) the values in
  order of first appearance and `Index`. `unique_with_counts` (Fluid): Out, Index, Count.
  Index dtypes follow the `dtype` attribute (int64 by default).
* `searchsorted` (SortedSequence, Values; `right`, `out_int32`).
* with gradients into X (and Updates/Value where Paddle has one): `index_select` (dim),
  `index_sample` (per-row indices), `gather_nd`, `scatter` (`overwrite`: the last write of a
  repeated id wins; otherwise repeated ids add, after the rows they hit are zeroed),
  `scatter_nd_add`, `take_along_axis` / `put_along_axis` (`Axis`; `Reduce` assign, add or mul),
  `unstack` (axis, num) and `unbind` (axis).
"""
from __future__ import annotations

import numpy as np

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, set_out, simple_grad
from psjob.fluid.ops.shape_ops import _norm_axis
from psjob.fluid.ops.tensor_math_ops import arg_shape

_INT = ("int32", "int64")


def _host(ctx, a):
    return np.asarray(a if ctx.xp is np else ctx.xp.asnumpy(a))


def _dev(ctx, a):
    return a if ctx.xp is np else ctx.xp.asarray(a)


def _int_index(op, slot, what):
    v = in_var(op, slot)
    if v.dtype not in _INT:
        raise GraphError(f"{what}: {slot} {v.name} must be int32 or int64, got {v.dtype}")
    return v


# -- arg_min, argsort, where_index -----------------------------------------------------------

@register_op("arg_min", infer_shape=arg_shape)
def arg_min(ctx):
    x, xp = ctx.input("X"), ctx.xp
    dtype = ctx.attr("dtype", "int64")
    if ctx.attr("flatten", False):
        ctx.set_output("Out", xp.asarray([xp.argmin(x)], dtype=dtype))
        return
    axis = int(ctx.attr("axis", -1))
    out = xp.argmin(x, axis=axis)
    if ctx.attr("keepdims", False):
        out = xp.expand_dims(out, axis)
    ctx.set_output("Out", out.astype(dtype).reshape(out.shape or (1,)))


def _argsort_shape(op):
    x = in_var(op, "X")
    _norm_axis(op.attr("axis", -1), len(x.shape), "argsort")
    set_out(op, "Out", x.shape, x.dtype)
    set_out(op, "Indices", x.shape, "int64")


def _argsort_order(xp, x, axis, descending):
    if descending:
        # Stable descending: sort the reversed array ascending by negated keys would break ties'
        # order; flipping twice keeps equal elements in their original order.
        flipped = xp.flip(x, axis)
        idx = xp.argsort(flipped, axis=axis, kind="stable")
        idx = x.shape[axis] - 1 - idx
        return xp.flip(idx, axis)
    return xp.argsort(x, axis=axis, kind="stable")


@register_op("argsort", infer_shape=_argsort_shape,
             grad=lambda op: [GradOpSpec("argsort_grad", {"X": op.input("X"), "Indices": op.output("Indices"),
                                                          "Out@GRAD": [grad_name(op.output("Out")[0])]},
                                         {"X@GRAD": [grad_name(op.input("X")[0])]}, dict(op.attrs))])
def argsort(ctx):
    xp, x = ctx.xp, ctx.input("X")
    axis = _norm_axis(ctx.attr("axis", -1), x.ndim, "argsort")
    idx = _argsort_order(xp, x, axis, bool(ctx.attr("descending", False)))
    ctx.set_output("Out", xp.take_along_axis(x, idx, axis=axis))
    ctx.set_output("Indices", idx.astype("int64"))


@register_op("argsort_grad")
def argsort_grad(ctx):
    xp, x = ctx.xp, ctx.input("X")
    axis = _norm_axis(ctx.attr("axis", -1), x.ndim, "argsort")
    dx = xp.zeros_like(x)
    dx[_along_where(xp, ctx.input("Indices"), axis)] = ctx.input("Out@GRAD")  # a permutation: no repeats
    ctx.set_output("X@GRAD", dx)


@register_op("where_index", infer_shape=lambda op: set_out(op, "Out", [-1, len(in_var(op, "Condition").shape)],
                                                           "int64"))
def where_index(ctx):
    cond = ctx.input("Condition")
    ctx.set_output("Out", ctx.xp.stack(ctx.xp.nonzero(cond), axis=1).astype("int64").reshape(-1, cond.ndim))


# -- unique ------------------------------------------------------------------------------------

def _unique_shape(op):
    x = in_var(op, "X")
    dtype = op.attr("dtype", "int64")
    if dtype not in _INT:
        raise GraphError(f"unique: dtype must be int32 or int64, got {dtype}")
    axis = op.attr("axis", [])
    if axis:
        raise GraphError("unique: axis is not supported by psjob (unique over the flattened input only)")
    set_out(op, "Out", [-1], x.dtype)
    for slot in ("Indices", "Counts", "Count"):
        set_out(op, slot, [-1], dtype)
    n = int(np.prod(x.shape)) if all(d >= 0 for d in x.shape) else -1
    set_out(op, "Index", [n], dtype)


def _unique_parts(host, is_sorted):
    flat = host.reshape(-1)
    values, first, inverse, counts = np.unique(flat, return_index=True, return_inverse=True, return_counts=True)
    if not is_sorted:
        # Fluid 1.x: distinct values in order of first appearance.
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        values, first, counts, inverse = values[order], first[order], counts[order], rank[inverse.reshape(-1)]
    return values, first, inverse.reshape(-1), counts


@register_op("unique", infer_shape=_unique_shape)
def unique(ctx):
    dtype = ctx.attr("dtype", "int64")
    values, first, inverse, counts = _unique_parts(_host(ctx, ctx.input("X")), bool(ctx.attr("is_sorted", False)))
    ctx.set_output("Out", _dev(ctx, values))
    ctx.set_output("Indices", _dev(ctx, first.astype(dtype)))
    ctx.set_output("Index", _dev(ctx, inverse.astype(dtype)))
    ctx.set_output("Counts", _dev(ctx, counts.astype(dtype)))


@register_op("unique_with_counts", infer_shape=_unique_shape)
def unique_with_counts(ctx):
    dtype = ctx.attr("dtype", "int64")
    values, _, inverse, counts = _unique_parts(_host(ctx, ctx.input("X")), False)
    ctx.set_output("Out", _dev(ctx, values))
    ctx.set_output("Index", _dev(ctx, inverse.astype(dtype)))
    ctx.set_output("Count", _dev(ctx, counts.astype(dtype)))


# -- searchsorted ------------------------------------------------------------------------------

def _searchsorted_shape(op):
    seq, values = in_var(op, "SortedSequence"), in_var(op, "Values")
    if len(seq.shape) > 1 and list(seq.shape[:-1]) != list(values.shape[:-1]):
        raise GraphError(f"searchsorted: sorted_sequence {seq.name}{list(seq.shape)} and values "
                         f"{values.name}{list(values.shape)} must agree in all but the last dimension")
    set_out(op, "Out", values.shape, "int32" if op.attr("out_int32", False) else "int64")


@register_op("searchsorted", infer_shape=_searchsorted_shape)
def searchsorted(ctx):
    xp, seq, values = ctx.xp, ctx.input("SortedSequence"), ctx.input("Values")
    side = "right" if ctx.attr("right", False) else "left"
    if seq.ndim == 1:
        out = xp.searchsorted(seq, values, side=side)
    else:
        rows_s, rows_v = seq.reshape(-1, seq.shape[-1]), values.reshape(-1, values.shape[-1])
        out = xp.stack([xp.searchsorted(s, v, side=side) for s, v in zip(rows_s, rows_v)]).reshape(values.shape)
    ctx.set_output("Out", out.astype("int32" if ctx.attr("out_int32", False) else "int64"))


# -- index_select, index_sample -----------------------------------------------------------------

def _index_select_shape(op):
    x, index = in_var(op, "X"), _int_index(op, "Index", "index_select")
    if len(index.shape) != 1:
        raise GraphError(f"index_select: index {index.name}{list(index.shape)} must be 1-D")
    dim = _norm_axis(op.attr("dim", 0), len(x.shape), "index_select")
    shape = list(x.shape)
    shape[dim] = index.shape[0]
    set_out(op, "Out", shape, x.dtype)


def _check_range(index, size, what):
    if index.size and (int(index.min()) < -size or int(index.max()) >= size):
        raise IndexError(f"{what}: an index is outside [0, {size})")


@register_op("index_select", infer_shape=_index_select_shape,
             grad=simple_grad("index_select_grad", inputs=("X", "Index"), grad_of=("X",)), no_grad_inputs=("Index",))
def index_select(ctx):
    x, index = ctx.input("X"), ctx.input("Index")
    dim = _norm_axis(ctx.attr("dim", 0), x.ndim, "index_select")
    _check_range(index, x.shape[dim], "index_select")
    ctx.set_output("Out", ctx.xp.take(x, index, axis=dim))


@register_op("index_select_grad")
def index_select_grad(ctx):
    xp, x, index = ctx.xp, ctx.input("X"), ctx.input("Index")
    dim = _norm_axis(ctx.attr("dim", 0), x.ndim, "index_select")
    dx = xp.zeros_like(x)
    where = [slice(None)] * x.ndim
    where[dim] = index
    xp.add.at(dx, tuple(where), ctx.input("Out@GRAD"))
    ctx.set_output("X@GRAD", dx)


def _index_sample_shape(op):
    x, index = in_var(op, "X"), _int_index(op, "Index", "index_sample")
    if len(x.shape) != 2 or len(index.shape) != 2:
        raise GraphError(f"index_sample: x {x.name}{list(x.shape)} and index {index.name}{list(index.shape)} "
                         "must both be 2-D")
    set_out(op, "Out", index.shape, x.dtype)


@register_op("index_sample", infer_shape=_index_sample_shape,
             grad=simple_grad("index_sample_grad", inputs=("X", "Index"), grad_of=("X",)), no_grad_inputs=("Index",))
def index_sample(ctx):
    x, index = ctx.input("X"), ctx.input("Index")
    if x.shape[0] != index.shape[0]:
        raise ValueError(f"index_sample: x has {x.shape[0]} rows but index has {index.shape[0]}")
    _check_range(index, x.shape[1], "index_sample")
    ctx.set_output("Out", ctx.xp.take_along_axis(x, index.astype("int64") % x.shape[1], axis=1))


@register_op("index_sample_grad")
def index_sample_grad(ctx):
    xp, x, index = ctx.xp, ctx.input("X"), ctx.input("Index").astype("int64")
    dx = xp.zeros_like(x)
    rows = xp.broadcast_to(xp.arange(x.shape[0])[:, None], index.shape)
    xp.add.at(dx, (rows, index % x.shape[1]), ctx.input("Out@GRAD"))
    ctx.set_output("X@GRAD", dx)


# -- gather_nd, scatter, scatter_nd_add -----------------------------------------------------------

def _gather_nd_shape(op):
    x, index = in_var(op, "X"), _int_index(op, "Index", "gather_nd")
    k = index.shape[-1] if index.shape else 0
    if k < 0 or k > len(x.shape):
        raise GraphError(f"gather_nd: index {index.name}{list(index.shape)}'s last dimension must be known "
                         f"and at most x {x.name}{list(x.shape)}'s rank")
    set_out(op, "Out", list(index.shape[:-1]) + list(x.shape[k:]), x.dtype)


def _nd_where(index):
    return tuple(index[..., i] for i in range(index.shape[-1]))


@register_op("gather_nd", infer_shape=_gather_nd_shape,
             grad=simple_grad("gather_nd_grad", inputs=("X", "Index"), grad_of=("X",)), no_grad_inputs=("Index",))
def gather_nd(ctx):
    x, index = ctx.input("X"), ctx.input("Index")
    ctx.set_output("Out", x[_nd_where(index)] if index.shape[-1] else ctx.xp.broadcast_to(
        x, index.shape[:-1] + x.shape).copy())


@register_op("gather_nd_grad")
def gather_nd_grad(ctx):
    xp, x, index = ctx.xp, ctx.input("X"), ctx.input("Index")
    dout = ctx.input("Out@GRAD")
    if not index.shape[-1]:
        ctx.set_output("X@GRAD", dout.reshape((-1,) + x.shape).sum(axis=0))
        return
    dx = xp.zeros_like(x)
    xp.add.at(dx, _nd_where(index), dout)
    ctx.set_output("X@GRAD", dx)


def _scatter_shape(op):
    x = in_var(op, "X")
    _int_index(op, "Ids", "scatter")
    set_out(op, "Out", x.shape, x.dtype)


def _scatter_grad(op):
    return [GradOpSpec("scatter_grad", {"Ids": op.input("Ids"), "Updates": op.input("Updates"),
                                        "Out@GRAD": [grad_name(op.output("Out")[0])]},
                       {"X@GRAD": [grad_name(op.input("X")[0])],
                        "Updates@GRAD": [grad_name(op.input("Updates")[0])]}, dict(op.attrs))]


@register_op("scatter", infer_shape=_scatter_shape, grad=_scatter_grad, no_grad_inputs=("Ids",))
def scatter(ctx):
    xp, x, ids, updates = ctx.xp, ctx.input("X"), ctx.input("Ids").reshape(-1), ctx.input("Updates")
    _check_range(ids, x.shape[0], "scatter")
    out = x.copy()
    if ctx.attr("overwrite", True):
        out[ids] = updates  # numpy's fancy assignment: the last of repeated ids wins
    else:
        out[ids] = 0
        xp.add.at(out, ids, updates)
    ctx.set_output("Out", out)


@register_op("scatter_grad")
def scatter_grad(ctx):
    """Paddle's scatter_grad: X's gradient is dout with the scattered rows zeroed; Updates' is
    dout gathered at Ids (every update, also one overwritten by a later repeat)."""
    ids, dout = ctx.input("Ids").reshape(-1), ctx.input("Out@GRAD")
    if ctx.has_output("X@GRAD"):
        dx = dout.copy()
        dx[ids] = 0
        ctx.set_output("X@GRAD", dx)
    if ctx.has_output("Updates@GRAD"):
        ctx.set_output("Updates@GRAD", dout[ids])


def _scatter_nd_add_shape(op):
    x = in_var(op, "X")
    _int_index(op, "Index", "scatter_nd_add")
    set_out(op, "Out", x.shape, x.dtype)


def _scatter_nd_add_grad(op):
    return [GradOpSpec("scatter_nd_add_grad", {"Index": op.input("Index"), "Updates": op.input("Updates"),
                                               "Out@GRAD": [grad_name(op.output("Out")[0])]},
                       {"X@GRAD": [grad_name(op.input("X")[0])],
                        "Updates@GRAD": [grad_name(op.input("Updates")[0])]}, dict(op.attrs))]


@register_op("scatter_nd_add", infer_shape=_scatter_nd_add_shape, grad=_scatter_nd_add_grad,
             no_grad_inputs=("Index",))
def scatter_nd_add(ctx):
    xp, x, index, updates = ctx.xp, ctx.input("X"), ctx.input("Index"), ctx.input("Updates")
    out = x.copy()
    xp.add.at(out, _nd_where(index), updates)
    ctx.set_output("Out", out)


@register_op("scatter_nd_add_grad")
def scatter_nd_add_grad(ctx):
    dout = ctx.input("Out@GRAD")
    ctx.set_output("X@GRAD", dout)
    ctx.set_output("Updates@GRAD", dout[_nd_where(ctx.input("Index"))])


# -- take_along_axis, put_along_axis -------------------------------------------------------------

def _along_shape(op, in_slot, index_slot, out_slot, what):
    x, index = in_var(op, in_slot), _int_index(op, index_slot, what)
    if len(x.shape) != len(index.shape):
        raise GraphError(f"{what}: arr {x.name}{list(x.shape)} and indices {index.name}{list(index.shape)} "
                         "must have the same rank")
    _norm_axis(op.attr("Axis", 0), len(x.shape), what)
    set_out(op, out_slot, index.shape if out_slot == "Result" and what == "take_along_axis" else x.shape, x.dtype)


@register_op("take_along_axis", infer_shape=lambda op: _along_shape(op, "Input", "Index", "Result", "take_along_axis"),
             grad=lambda op: [GradOpSpec("take_along_axis_grad",
                                         {"Input": op.input("Input"), "Index": op.input("Index"),
                                          "Result@GRAD": [grad_name(op.output("Result")[0])]},
                                         {"Input@GRAD": [grad_name(op.input("Input")[0])]}, dict(op.attrs))],
             no_grad_inputs=("Index",))
def take_along_axis(ctx):
    x, index = ctx.input("Input"), ctx.input("Index")
    axis = _norm_axis(ctx.attr("Axis", 0), x.ndim, "take_along_axis")
    _check_range(index, x.shape[axis], "take_along_axis")
    ctx.set_output("Result", ctx.xp.take_along_axis(x, index.astype("int64") % x.shape[axis], axis=axis))


def _along_where(xp, index, axis):
    grids = list(xp.meshgrid(*[xp.arange(n) for n in index.shape], indexing="ij"))
    grids[axis] = index
    return tuple(grids)


@register_op("take_along_axis_grad")
def take_along_axis_grad(ctx):
    xp, x, index = ctx.xp, ctx.input("Input"), ctx.input("Index").astype("int64")
    axis = _norm_axis(ctx.attr("Axis", 0), x.ndim, "take_along_axis")
    dx = xp.zeros_like(x)
    xp.add.at(dx, _along_where(xp, index % x.shape[axis], axis), ctx.input("Result@GRAD"))
    ctx.set_output("Input@GRAD", dx)


def _put_grad(op):
    return [GradOpSpec("put_along_axis_grad", {"Input": op.input("Input"), "Index": op.input("Index"),
                                               "Value": op.input("Value"),
                                               "Result@GRAD": [grad_name(op.output("Result")[0])]},
                       {"Input@GRAD": [grad_name(op.input("Input")[0])],
                        "Value@GRAD": [grad_name(op.input("Value")[0])]}, dict(op.attrs))]


@register_op("put_along_axis", infer_shape=lambda op: _along_shape(op, "Input", "Index", "Result", "put_along_axis"),
             grad=_put_grad, no_grad_inputs=("Index",))
def put_along_axis(ctx):
    xp, x, index = ctx.xp, ctx.input("Input"), ctx.input("Index").astype("int64")
    axis = _norm_axis(ctx.attr("Axis", 0), x.ndim, "put_along_axis")
    _check_range(index, x.shape[axis], "put_along_axis")
    value = xp.broadcast_to(ctx.input("Value").astype(x.dtype), index.shape)
    where = _along_where(xp, index % x.shape[axis], axis)
    out = x.copy()
    reduce = ctx.attr("Reduce", "assign")
    if reduce == "assign":
        out[where] = value
    elif reduce == "add":
        xp.add.at(out, where, value)
    elif reduce in ("mul", "multiply"):
        xp.multiply.at(out, where, value)
    else:
        raise ValueError(f"put_along_axis: reduce must be 'assign', 'add' or 'mul', got {reduce!r}")
    ctx.set_output("Result", out)


@register_op("put_along_axis_grad")
def put_along_axis_grad(ctx):
    """assign: Input's gradient is dout with the written places zeroed, Value's is dout there;
    add: dout passes to Input whole. (mul has no gradient in psjob.)"""
    xp, x, index = ctx.xp, ctx.input("Input"), ctx.input("Index").astype("int64")
    axis = _norm_axis(ctx.attr("Axis", 0), x.ndim, "put_along_axis")
    reduce = ctx.attr("Reduce", "assign")
    if reduce not in ("assign", "add"):
        raise ValueError(f"put_along_axis: no gradient for reduce={reduce!r}")
    where = _along_where(xp, index % x.shape[axis], axis)
    dout = ctx.input("Result@GRAD")
    if ctx.has_output("Input@GRAD"):
        dx = dout.copy()
        if reduce == "assign":
            dx[where] = 0
        ctx.set_output("Input@GRAD", dx)
    if ctx.has_output("Value@GRAD"):
        value = ctx.input("Value")
        dv = dout[where]
        ctx.set_output("Value@GRAD", dv.reshape(value.shape) if dv.size == value.size else
                       dv.sum(axis=tuple(i for i, n in enumerate(value.shape) if n == 1), keepdims=True))


# -- unstack, unbind ------------------------------------------------------------------------------

def _unstack_shape(op, out_slot):
    x = in_var(op, "X")
    axis = _norm_axis(op.attr("axis", 0), len(x.shape), op.type)
    n = len(op.output(out_slot))
    if x.shape[axis] >= 0 and x.shape[axis] != n:
        raise GraphError(f"{op.type}: {x.name}{list(x.shape)} has {x.shape[axis]} slices along axis {axis}, "
                         f"not {n}")
    shape = [d for i, d in enumerate(x.shape) if i != axis]
    for i in range(n):
        set_out(op, out_slot, shape, x.dtype, i=i)


def _unstack_grad(out_slot):
    def make(op):
        return [GradOpSpec("stack", {"X": [grad_name(n) for n in op.output(out_slot)]},
                           {"Y": [grad_name(op.input("X")[0])]}, {"axis": op.attr("axis", 0)})]
    return make


def _unstack_kernel(out_slot):
    def kernel(ctx):
        x = ctx.input("X")
        axis = _norm_axis(ctx.attr("axis", 0), x.ndim, ctx.op_type)
        for i in range(len(ctx.outs.get(out_slot, ()))):
            ctx.set_output(out_slot, ctx.xp.take(x, i, axis=axis), i=i)
    return kernel


register_op("unstack", infer_shape=lambda op: _unstack_shape(op, "Y"), grad=_unstack_grad("Y"))(_unstack_kernel("Y"))
register_op("unbind", infer_shape=lambda op: _unstack_shape(op, "Out"),
            grad=_unstack_grad("Out"))(_unstack_kernel("Out"))


# -- shard_index ---------------------------------------------------------------------------------

def _shard_index_shape(op):
    x = _int_index(op, "X", "shard_index")
    n, shards, shard = int(op.attr("index_num")), int(op.attr("nshards")), int(op.attr("shard_id"))
    if n <= 0 or shards <= 0 or not 0 <= shard < shards:
        raise GraphError(f"shard_index: index_num {n} and nshards {shards} must be positive and shard_id {shard} "
                         f"in [0, {shards})")
    if not x.shape or x.shape[-1] != 1:
        raise GraphError(f"shard_index: input {x.name}{list(x.shape)} must end in a dimension of 1")
    set_out(op, "Out", x.shape, x.dtype, x.lod_level)


@register_op("shard_index", infer_shape=_shard_index_shape)
def shard_index(ctx):
    """An id's position within its shard when the shard is `shard_id` (shards of
    ceil(index_num / nshards) ids each), else `ignore_value`."""
    x = ctx.input("X")
    n, shards = int(ctx.attr("index_num")), int(ctx.attr("nshards"))
    shard, size = int(ctx.attr("shard_id")), (int(ctx.attr("index_num")) + int(ctx.attr("nshards")) - 1) // shards
    if x.size and (int(x.min()) < 0 or int(x.max()) >= n):
        raise ValueError(f"shard_index: ids must lie in [0, {n}), got [{int(x.min())}, {int(x.max())}]")
    out = ctx.xp.where(x // size == shard, x - shard * size, x.dtype.type(ctx.attr("ignore_value", -1)))
    ctx.set_output("Out", out.astype(x.dtype), lod=ctx.input_lod("X"))


# -- top_k_v2 (paddle.topk along any axis, largest or smallest) ------------------------------

def _top_k_v2_shape(op):
    x = in_var(op, "X")
    axis = _norm_axis(op.attr("axis", -1), len(x.shape), "topk")
    k = int(op.attr("k", 1))
    if k < 1 or 0 <= x.shape[axis] < k:
        raise GraphError(f"topk: k={k} must lie in [1, {x.shape[axis]}] (axis {axis} of {x.name}{list(x.shape)})")
    shape = list(x.shape)
    shape[axis] = k
    set_out(op, "Out", shape, x.dtype)
    set_out(op, "Indices", shape, "int64")


@register_op("top_k_v2", infer_shape=_top_k_v2_shape,
             grad=lambda op: [GradOpSpec("top_k_v2_grad", {"X": op.input("X"), "Indices": op.output("Indices"),
                                                           "Out@GRAD": [grad_name(op.output("Out")[0])]},
                                         {"X@GRAD": [grad_name(op.input("X")[0])]}, dict(op.attrs))])
def top_k_v2(ctx):
    """The k largest (or smallest) along axis, in order; among equal values the lower index
    comes first (a stable sort)."""
    xp, x = ctx.xp, ctx.input("X")
    axis = _norm_axis(ctx.attr("axis", -1), x.ndim, "topk")
    k = int(ctx.attr("k", 1))
    if k > x.shape[axis]:
        raise ValueError(f"topk: k={k} exceeds the {x.shape[axis]} entries along axis {axis}")
    order = _argsort_order(xp, x, axis, bool(ctx.attr("largest", True)))
    idx = xp.take(order, xp.arange(k), axis=axis)
    ctx.set_output("Out", xp.take_along_axis(x, idx, axis=axis))
    ctx.set_output("Indices", idx.astype("int64"))


@register_op("top_k_v2_grad")
def top_k_v2_grad(ctx):
    xp, x = ctx.xp, ctx.input("X")
    axis = _norm_axis(ctx.attr("axis", -1), x.ndim, "topk")
    dx = xp.zeros_like(x)
    dx[_along_where(xp, ctx.input("Indices"), axis)] = ctx.input("Out@GRAD")  # distinct indices per line
    ctx.set_output("X@GRAD", dx)
