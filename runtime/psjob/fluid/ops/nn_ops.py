"""Embedding lookup, batch normalization and dropout.

`lookup_table` is the hot op of CTR models: its forward is one gather
(`take(W, ids)`) and, with `is_sparse`, its gradient is a SelectedRows whose
rows are the ids exactly as looked up (duplicates kept, the optimizer or the
`sum` op merges them) and whose values are the rows of Out@GRAD — the dense
[vocab, dim] gradient is never materialized. Rows equal to `padding_idx`
read as zeros and receive no gradient.

`batch_norm` and `dropout` carry `is_test`, which `Program.clone(for_test=True)`
switches on: batch_norm then normalizes with its moving statistics and leaves
them alone; dropout stops sampling masks.

Kernels never write their inputs: the moving statistics are replaced by new
arrays, so a value fetched earlier never changes under the caller.
"""
from __future__ import annotations

import numpy as np

from psjob.fluid.core import SelectedRows, scatter_add
from psjob.fluid.framework import GraphError, VarType
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, set_out

NO_PADDING = -1


# -- lookup_table ------------------------------------------------------------------------

def _lookup_operands(op):
    w, ids = in_var(op, "W"), in_var(op, "Ids")
    if len(w.shape) != 2:
        raise GraphError(f"{op.type}: W {w.name}{list(w.shape)} must be a 2-D [vocab, dim] table")
    if not np.issubdtype(np.dtype(ids.dtype), np.integer):
        raise GraphError(f"{op.type}: Ids {ids.name} must hold integer ids (int64), got {ids.dtype}")
    pad = int(op.attr("padding_idx", NO_PADDING))
    if pad != NO_PADDING and not 0 <= pad < w.shape[0]:
        raise GraphError(f"{op.type}: padding_idx {pad} is outside the table of {w.shape[0]} rows")
    return w, ids


def _lookup_shape(op):
    w, ids = _lookup_operands(op)
    if not ids.shape or ids.shape[-1] != 1:
        raise GraphError(f"lookup_table: Ids {ids.name}{list(ids.shape)} must end in a dimension of 1 "
                         "(one id per row, e.g. [-1, 1])")
    set_out(op, "Out", tuple(ids.shape[:-1]) + (w.shape[1],), w.dtype, ids.lod_level)


def _lookup_grad(op):
    return [GradOpSpec("lookup_table_grad",
                       {"W": op.input("W"), "Ids": op.input("Ids"),
                        "Out@GRAD": [grad_name(op.output("Out")[0])]},
                       {"W@GRAD": [grad_name(op.input("W")[0])]}, dict(op.attrs))]


def _flat_ids(xp, ids, height, op_type):
    flat = ids.reshape(-1)
    if flat.size:
        if type(flat) is np.ndarray:  # the reductions themselves, without ndarray.min's wrapper
            lo, hi = int(np.minimum.reduce(flat)), int(np.maximum.reduce(flat))
        else:
            lo, hi = int(flat.min()), int(flat.max())
        if lo < 0 or hi >= height:
            bad = lo if lo < 0 else hi
            raise IndexError(f"{op_type}: id {bad} is out of range for a table of {height} rows "
                             f"(ids must lie in [0, {height}))")
    return flat


@register_op("lookup_table", infer_shape=_lookup_shape, grad=_lookup_grad, no_grad_inputs=("Ids",))
def lookup_table(ctx):
    xp = ctx.xp
    w, ids = ctx.input("W"), ctx.input("Ids")
    flat = _flat_ids(xp, ids, w.shape[0], "lookup_table")
    out = xp.take(w, flat, axis=0)
    pad = ctx.attr("padding_idx", NO_PADDING)
    if pad != NO_PADDING:
        out[flat == pad] = 0
    ctx.set_output("Out", out.reshape(ids.shape[:-1] + w.shape[1:]), lod=ctx.input_lod("Ids"))


def _lookup_v2_shape(op):
    w, ids = _lookup_operands(op)
    set_out(op, "Out", tuple(ids.shape) + (w.shape[1],), w.dtype, ids.lod_level)


@register_op("lookup_table_v2", infer_shape=_lookup_v2_shape, grad=_lookup_grad, no_grad_inputs=("Ids",))
def lookup_table_v2(ctx):
    """Paddle 2.x's embedding op (what real Paddle's saved models hold): one row per id, the
    ids' whole shape kept (lookup_table drops their last dimension of 1)."""
    w, ids = ctx.input("W"), ctx.input("Ids")
    flat = _flat_ids(ctx.xp, ids, w.shape[0], "lookup_table_v2")
    out = ctx.xp.take(w, flat, axis=0)
    pad = ctx.attr("padding_idx", NO_PADDING)
    if pad != NO_PADDING:
        out[flat == pad] = 0
    ctx.set_output("Out", out.reshape(ids.shape + w.shape[1:]), lod=ctx.input_lod("Ids"))


def _lookup_grad_shape(op):
    w = in_var(op, "W")
    set_out(op, "W@GRAD", w.shape, w.dtype)
    names = op.outputs.get("W@GRAD") or []
    if names and names[0] in op.block.vars:
        op.block.vars[names[0]].type = (VarType.SELECTED_ROWS if op.attr("is_sparse", False)
                                        else VarType.LOD_TENSOR)


@register_op("lookup_table_grad", infer_shape=_lookup_grad_shape)
def lookup_table_grad(ctx):
    xp = ctx.xp
    w, ids, dout = ctx.input("W"), ctx.input("Ids"), ctx.input("Out@GRAD")
    rows = ids.reshape(-1)
    values = dout.reshape((rows.shape[0],) + w.shape[1:])
    pad = ctx.attr("padding_idx", NO_PADDING)
    if pad != NO_PADDING:
        keep = rows != pad
        if not bool(keep.all()):
            rows, values = rows[keep], values[keep]
    if ctx.attr("is_sparse", False):
        ctx.set_output("W@GRAD", SelectedRows(rows, values, w.shape[0]))
        return
    grad = xp.zeros(w.shape, dtype=dout.dtype)
    if rows.shape[0]:
        scatter_add(xp, grad, rows, values)
    ctx.set_output("W@GRAD", grad)


# -- batch_norm --------------------------------------------------------------------------

def _channel_axis(op_or_ctx, ndim):
    layout = op_or_ctx.attr("data_layout", "NCHW")
    if layout not in ("NCHW", "NHWC", "AnyLayout"):
        raise GraphError(f"batch_norm: data_layout must be 'NCHW' or 'NHWC', got {layout!r}")
    return ndim - 1 if (layout == "NHWC" and ndim > 2) else 1


def _bn_shape(op):
    x = in_var(op, "X")
    if len(x.shape) < 2:
        raise GraphError(f"batch_norm: X {x.name}{list(x.shape)} needs at least 2 dimensions [N, C, ...]")
    c = x.shape[_channel_axis(op, len(x.shape))]
    for slot in ("Scale", "Bias", "Mean", "Variance"):
        v = in_var(op, slot)
        if c >= 0 and tuple(v.shape) != (c,):
            raise GraphError(f"batch_norm: {slot} {v.name}{list(v.shape)} must have shape [{c}] "
                             f"(the channels of X {x.name}{list(x.shape)})")
    set_out(op, "Y", x.shape, x.dtype, x.lod_level)
    for slot in ("MeanOut", "VarianceOut", "SavedMean", "SavedVariance"):
        set_out(op, slot, (c,), x.dtype)


def _bn_grad(op):
    ins = {s: op.input(s) for s in ("X", "Scale", "Bias")}
    ins.update({s: op.output(s) for s in ("SavedMean", "SavedVariance")})
    ins["Y@GRAD"] = [grad_name(op.output("Y")[0])]
    outs = {s + "@GRAD": [grad_name(op.input(s)[0])] for s in ("X", "Scale", "Bias")}
    return [GradOpSpec("batch_norm_grad", ins, outs, dict(op.attrs))]


def _bn_axes(ctx, x):
    axis = _channel_axis(ctx, x.ndim)
    axes = tuple(i for i in range(x.ndim) if i != axis)
    bshape = tuple(x.shape[axis] if i == axis else 1 for i in range(x.ndim))
    return axes, bshape


@register_op("batch_norm", infer_shape=_bn_shape, grad=_bn_grad,
             no_grad_inputs=("Mean", "Variance"))
def batch_norm(ctx):
    xp = ctx.xp
    x, scale, bias = ctx.input("X"), ctx.input("Scale"), ctx.input("Bias")
    run_mean, run_var = ctx.input("Mean"), ctx.input("Variance")
    axes, bshape = _bn_axes(ctx, x)
    dt = x.dtype.type
    eps = dt(ctx.attr("epsilon", 1e-5))
    global_stats = ctx.attr("is_test", False) or ctx.attr("use_global_stats", False)
    if global_stats:
        mean, var = run_mean, run_var
    else:
        mean = x.mean(axis=axes)
        centered = x - mean.reshape(bshape)
        var = (centered * centered).mean(axis=axes)  # biased, as Paddle's kernel
    inv_std = 1 / xp.sqrt(var + eps)
    y = (x - mean.reshape(bshape)) * (inv_std * scale).reshape(bshape) + bias.reshape(bshape)
    if ctx.attr("fuse_with_relu", False):
        y = xp.maximum(y, dt(0))
    ctx.set_output("Y", y.astype(x.dtype, copy=False), lod=ctx.input_lod("X"))
    if global_stats:
        ctx.set_output("MeanOut", run_mean)
        ctx.set_output("VarianceOut", run_var)
    else:
        m = run_mean.dtype.type(ctx.attr("momentum", 0.9))
        ctx.set_output("MeanOut", run_mean * m + mean * (1 - m))
        ctx.set_output("VarianceOut", run_var * m + var * (1 - m))
    # Paddle saves 1/sqrt(var+eps) as SavedVariance; the grad kernel reads it.
    ctx.set_output("SavedMean", mean)
    ctx.set_output("SavedVariance", inv_std)


@register_op("batch_norm_grad")
def batch_norm_grad(ctx):
    x, scale, dy = ctx.input("X"), ctx.input("Scale"), ctx.input("Y@GRAD")
    mean, inv_std = ctx.input("SavedMean"), ctx.input("SavedVariance")
    axes, bshape = _bn_axes(ctx, x)
    if ctx.attr("fuse_with_relu", False):
        # Y = relu(bn(X)): recompute the pre-activation sign.
        bias = ctx.input("Bias")
        pre = (x - mean.reshape(bshape)) * (inv_std * scale).reshape(bshape) + bias.reshape(bshape)
        dy = dy * (pre > 0)
    xhat = (x - mean.reshape(bshape)) * inv_std.reshape(bshape)
    dbias = dy.sum(axis=axes)
    dscale = (dy * xhat).sum(axis=axes)
    if ctx.has_output("X@GRAD"):
        k = (scale * inv_std).reshape(bshape)
        if ctx.attr("is_test", False) or ctx.attr("use_global_stats", False):
            dx = dy * k
        else:
            m = x.size // scale.size
            dx = k * (dy - (dbias.reshape(bshape) + xhat * dscale.reshape(bshape)) / m)
        ctx.set_output("X@GRAD", dx.astype(x.dtype, copy=False))
    if ctx.has_output("Scale@GRAD"):
        ctx.set_output("Scale@GRAD", dscale)
    if ctx.has_output("Bias@GRAD"):
        ctx.set_output("Bias@GRAD", dbias)


# -- dropout -----------------------------------------------------------------------------

_DROPOUT_IMPLS = ("downgrade_in_infer", "upscale_in_train")
_host_rng = np.random.default_rng()  # unseeded masks: fresh randomness, as Fluid


def _dropout_shape(op):
    x = in_var(op, "X")
    p = float(op.attr("dropout_prob", 0.5))
    if not 0.0 <= p <= 1.0:
        raise GraphError(f"dropout: dropout_prob must lie in [0, 1], got {p}")
    impl = op.attr("dropout_implementation", "downgrade_in_infer")
    if impl not in _DROPOUT_IMPLS:
        raise GraphError(f"dropout: dropout_implementation must be one of {_DROPOUT_IMPLS}, got {impl!r}")
    set_out(op, "Out", x.shape, x.dtype, x.lod_level)
    set_out(op, "Mask", x.shape, x.dtype)


def _dropout_grad(op):
    return [GradOpSpec("dropout_grad",
                       {"Mask": op.output("Mask"), "Out@GRAD": [grad_name(op.output("Out")[0])]},
                       {"X@GRAD": [grad_name(op.input("X")[0])]}, dict(op.attrs))]


def _keep_scale(ctx, dtype):
    """The factor a kept element is multiplied by (train) or every element (test)."""
    p = float(ctx.attr("dropout_prob", 0.5))
    upscale = ctx.attr("dropout_implementation", "downgrade_in_infer") == "upscale_in_train"
    if ctx.attr("is_test", False):
        return dtype.type(1.0 if upscale else 1.0 - p)
    return dtype.type((1.0 / (1.0 - p) if p < 1.0 else 0.0) if upscale else 1.0)


@register_op("dropout", infer_shape=_dropout_shape, grad=_dropout_grad)
def dropout(ctx):
    xp, x = ctx.xp, ctx.input("X")
    k = _keep_scale(ctx, x.dtype)
    lod = ctx.input_lod("X")
    if ctx.attr("is_test", False):
        ctx.set_output("Out", x if k == 1 else x * k, lod=lod)
        return
    p = float(ctx.attr("dropout_prob", 0.5))
    if ctx.attr("fix_seed", False):
        # Paddle reseeds with `seed` on every run: the same mask each batch.
        u = np.random.default_rng(int(ctx.attr("seed", 0))).random(x.shape, dtype=np.float32)
        u = u if xp is np else xp.asarray(u)
    elif xp is np:
        u = _host_rng.random(x.shape, dtype=np.float32)
    else:
        u = xp.random.random(x.shape)
    mask = (u >= p).astype(x.dtype)
    ctx.set_output("Mask", mask)
    ctx.set_output("Out", x * mask if k == 1 else x * (mask * k), lod=lod)


@register_op("dropout_grad")
def dropout_grad(ctx):
    dout = ctx.input("Out@GRAD")
    k = _keep_scale(ctx, dout.dtype)
    if ctx.attr("is_test", False):
        ctx.set_output("X@GRAD", dout * k)
        return
    mask = ctx.input("Mask")
    ctx.set_output("X@GRAD", dout * mask if k == 1 else dout * (mask * k))
