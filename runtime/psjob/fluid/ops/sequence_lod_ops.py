"""Fluid 1.x LoD sequence ops beside sequence_pool: sequence_conv, sequence_unpad,
sequence_expand_as and sequence_reshape, with their gradients (Paddle 1.8 API docs,
fluid.layers.sequence_conv / sequence_unpad / sequence_expand_as / sequence_reshape).

All read the last LoD level of their sequence input (offsets [0, o1, ..., T]).

* sequence_conv: row i of a sequence [s, e) sees rows i + contextStart + j, j < contextLength,
  concatenated (zeros where a row falls outside [s, e): the padding is not trainable here),
  times Filter [contextLength * D, num_filters]. Out keeps X's LoD.
* sequence_unpad: X [N, L, ...] padded, Length [N] → the first Length[i] rows of each, one
  sequence each: Out [sum(Length), ...] with LoD [0, cumsum(Length)].
* sequence_expand_as: row i of X repeated as many times as Y's sequence i has rows; Out takes
  Y's LoD.
* sequence_reshape: each sequence's values, read row-major, re-cut into rows of new_dim; the
  offsets scale by D / new_dim (every sequence's size must divide).
"""
from __future__ import annotations

import numpy as np

from psjob.fluid.core import scatter_add
from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, set_out, simple_grad
from psjob.fluid.ops.sequence_ops import segments


def _to(xp, host):
    return host if xp is np else xp.asarray(host)


# -- sequence_conv -------------------------------------------------------------------------

def _context(op):
    start, length = int(op.attr("contextStart", 0)), int(op.attr("contextLength", 0))
    if length < 1:
        raise GraphError(f"sequence_conv: contextLength must be positive, got {length}")
    if int(op.attr("contextStride", 1)) != 1:
        raise GraphError("sequence_conv: contextStride must be 1 (Paddle supports only 1)")
    if op.attr("paddingTrainable", False):
        raise GraphError("sequence_conv: trainable padding (PaddingData) is not supported by psjob")
    return start, length


def _conv_shape(op):
    x, f = in_var(op, "X"), in_var(op, "Filter")
    _, length = _context(op)
    if x.shape[-1] >= 0 and f.shape[0] != length * x.shape[-1]:
        raise GraphError(f"sequence_conv: Filter {f.name}{list(f.shape)} must have contextLength * "
                         f"{x.shape[-1]} = {length * x.shape[-1]} rows")
    set_out(op, "Out", (-1, f.shape[1]), x.dtype, max(x.lod_level, 1))


def _context_rows(ctx, x):
    """[T, contextLength] source row of every (row, offset), -1 outside its sequence."""
    s = segments(ctx.input_lod("X"), ctx.op_type)
    if s.rows != x.shape[0]:
        raise ValueError(f"{ctx.op_type}: LoD ends at {s.rows} but X has {x.shape[0]} rows")
    start, length = _context(ctx)
    rows = np.arange(s.rows, dtype=np.int64)
    seg = s.seg(np)
    src = rows[:, None] + start + np.arange(length, dtype=np.int64)[None, :]
    inside = (src >= s.starts[seg][:, None]) & (src < s.offsets[1:][seg][:, None])
    return np.where(inside, src, -1)


def _columns(xp, x, src):
    padded = xp.concatenate([x, xp.zeros((1, x.shape[1]), dtype=x.dtype)])
    return padded[_to(xp, np.where(src < 0, x.shape[0], src))].reshape(x.shape[0], -1)


@register_op("sequence_conv", infer_shape=_conv_shape, grad=simple_grad(
    "sequence_conv_grad", inputs=("X", "Filter")))
def sequence_conv(ctx):
    xp, x, f = ctx.xp, ctx.input("X"), ctx.input("Filter")
    cols = _columns(xp, x, _context_rows(ctx, x))
    ctx.set_output("Out", cols @ f, lod=ctx.input_lod("X"))


@register_op("sequence_conv_grad")
def sequence_conv_grad(ctx):
    xp, x, f, dout = ctx.xp, ctx.input("X"), ctx.input("Filter"), ctx.input("Out@GRAD")
    src = _context_rows(ctx, x)
    if ctx.has_output("Filter@GRAD"):
        ctx.set_output("Filter@GRAD", _columns(xp, x, src).T @ dout)
    if ctx.has_output("X@GRAD"):
        dcols = (dout @ f.T).reshape(x.shape[0] * src.shape[1], x.shape[1])
        flat = src.reshape(-1)
        keep = flat >= 0
        dx = xp.zeros_like(x)
        scatter_add(xp, dx, _to(xp, flat[keep]), dcols[_to(xp, keep)])
        ctx.set_output("X@GRAD", dx, lod=ctx.input_lod("X"))


# -- sequence_unpad ------------------------------------------------------------------------

def _unpad_shape(op):
    x = in_var(op, "X")
    if len(x.shape) < 2:
        raise GraphError(f"sequence_unpad: X {x.name}{list(x.shape)} must be [batch, max_len, ...]")
    set_out(op, "Out", (-1,) + (tuple(x.shape[2:]) or (1,)), x.dtype, 1)  # [batch, max_len] -> [-1, 1], as Paddle


def _unpad_rows(ctx, x):
    lengths = np.asarray(ctx.input("Length") if ctx.xp is np else ctx.xp.asnumpy(ctx.input("Length")),
                         dtype=np.int64).reshape(-1)
    n, max_len = x.shape[0], x.shape[1]
    if lengths.shape[0] != n or (lengths.size and (lengths.min() < 0 or lengths.max() > max_len)):
        raise ValueError(f"sequence_unpad: Length {lengths[:8].tolist()} must hold one length in [0, {max_len}] "
                         f"per row of X ({n} rows)")
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    rows = np.repeat(np.arange(n, dtype=np.int64) * max_len - offsets[:-1], lengths) + np.arange(offsets[-1])
    return rows, [offsets.tolist()]


@register_op("sequence_unpad", infer_shape=_unpad_shape, grad=simple_grad("sequence_unpad_grad", inputs=("X", "Length"), grad_of=("X",)),
             no_grad_inputs=("Length",))
def sequence_unpad(ctx):
    x = ctx.input("X")
    rows, lod = _unpad_rows(ctx, x)
    flat = x.reshape((x.shape[0] * x.shape[1],) + (x.shape[2:] or (1,)))
    ctx.set_output("Out", flat[_to(ctx.xp, rows)], lod=lod)


@register_op("sequence_unpad_grad")
def sequence_unpad_grad(ctx):
    xp, x, dout = ctx.xp, ctx.input("X"), ctx.input("Out@GRAD")
    rows, _ = _unpad_rows(ctx, x)
    dx = xp.zeros((x.shape[0] * x.shape[1],) + (x.shape[2:] or (1,)), dtype=dout.dtype)
    dx[_to(xp, rows)] = dout
    ctx.set_output("X@GRAD", dx.reshape(x.shape))


# -- sequence_expand_as --------------------------------------------------------------------

def _expand_as_shape(op):
    x, y = in_var(op, "X"), in_var(op, "Y")
    set_out(op, "Out", (-1,) + tuple(x.shape[1:]), x.dtype, max(y.lod_level, 1))


def _expand_as_segments(ctx, x):
    s = segments(ctx.input_lod("Y"), "sequence_expand_as (its Y)")
    if s.num_seqs != x.shape[0]:
        raise ValueError(f"sequence_expand_as: X has {x.shape[0]} rows but Y has {s.num_seqs} sequences "
                         "(one row of X per sequence of Y)")
    return s


@register_op("sequence_expand_as", infer_shape=_expand_as_shape, grad=lambda op: [GradOpSpec(
    "sequence_expand_as_grad", {"X": op.input("X"), "Y": op.input("Y"),
                                "Out@GRAD": [grad_name(op.output("Out")[0])]},
    {"X@GRAD": [grad_name(op.input("X")[0])]}, dict(op.attrs))], no_grad_inputs=("Y",))
def sequence_expand_as(ctx):
    x = ctx.input("X")
    s = _expand_as_segments(ctx, x)
    lod = ctx.input_lod("Y")
    ctx.set_output("Out", ctx.xp.take(x, s.seg(ctx.xp), axis=0), lod=lod[-1:])


@register_op("sequence_expand_as_grad")
def sequence_expand_as_grad(ctx):
    xp, x, dout = ctx.xp, ctx.input("X"), ctx.input("Out@GRAD")
    s = _expand_as_segments(ctx, x)
    dx = xp.zeros(x.shape, dtype=dout.dtype)
    scatter_add(xp, dx, s.seg(xp), dout)
    ctx.set_output("X@GRAD", dx)


# -- sequence_reshape ----------------------------------------------------------------------

def _reshape_dim(op_or_ctx):
    new_dim = int(op_or_ctx.attr("new_dim", 0))
    if new_dim < 1:
        raise GraphError(f"sequence_reshape: new_dim must be positive, got {new_dim}")
    return new_dim


def _seq_reshape_shape(op):
    x = in_var(op, "X")
    set_out(op, "Out", (-1, _reshape_dim(op)), x.dtype, max(x.lod_level, 1))


def _reshaped_lod(ctx, x, new_dim):
    s = segments(ctx.input_lod("X"), "sequence_reshape")
    width = int(np.prod(x.shape[1:]))
    if s.rows != x.shape[0]:
        raise ValueError(f"sequence_reshape: LoD ends at {s.rows} but X has {x.shape[0]} rows")
    sizes = s.offsets * width
    if np.any(sizes % new_dim):
        raise ValueError(f"sequence_reshape: a sequence of X holds a number of values ({width} per row) "
                         f"that new_dim {new_dim} does not divide")
    return [(sizes // new_dim).tolist()]


@register_op("sequence_reshape", infer_shape=_seq_reshape_shape, grad=simple_grad("sequence_reshape_grad"))
def sequence_reshape(ctx):
    x, new_dim = ctx.input("X"), _reshape_dim(ctx)
    lod = _reshaped_lod(ctx, x, new_dim)
    ctx.set_output("Out", x.reshape(-1, new_dim), lod=lod)


@register_op("sequence_reshape_grad")
def sequence_reshape_grad(ctx):
    x, dout = ctx.input("X"), ctx.input("Out@GRAD")
    ctx.set_output("X@GRAD", dout.reshape(x.shape), lod=ctx.input_lod("X"))
