"""More Fluid 1.x LoD sequence ops, with their gradients where Paddle has one (Paddle 1.8 API
docs, fluid.layers.sequence_softmax / sequence_concat / sequence_slice / sequence_enumerate /
sequence_pad / sequence_expand / sequence_scatter / sequence_reverse / lod_reset).

All read the last LoD level of their sequence input (offsets [0, o1, ..., T]) unless said.

* sequence_softmax: a softmax over the rows of each sequence (X [T, 1] or [T]); Out keeps the LoD.
* sequence_concat: sequence i of the result is sequence i of X[0], then of X[1], ...
* sequence_slice: Offset[i] and Length[i] ([N, 1] int64) cut a sub-sequence of sequence i.
* sequence_enumerate: row t of int ids [T, 1] becomes the window ids[t .. t + win_size - 1] of its
  sequence, pad_value past the sequence's end: Out [T, win_size], X's LoD. No gradient.
* sequence_pad: Out [N, padded_length, ...] (padded_length -1: the longest sequence), PadValue
  (one value or one row) in the padding; Length [N] int64.
* sequence_expand: sequence i of X (a row, when X has no LoD) repeated as many times as sequence
  i of Y's LoD level ref_level (-1: the last) has elements; Out has a LoD only when X has one.
* sequence_scatter: Out = X (dense [N, D]); for each j of sequence i of Ids/Updates,
  Out[i, Ids[j]] += Updates[j].
* sequence_reverse: each sequence's rows in reverse order (output Y).
* lod_reset: X's data with a new LoD: Y's last LoD level when Y has a LoD, else Y's values as
  offsets, else the attribute target_lod; with `append` (fluid.layers.lod_append) that level is
  pushed after X's own LoD levels instead of replacing them.
"""
from __future__ import annotations

import importlib

import numpy as np

from psjob.fluid.core import scatter_add
from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, same_shape, set_out, simple_grad
from psjob.fluid.ops.sequence_ops import segments


def _to(xp, host):
    return host if xp is np else xp.asarray(host)


def _host(xp, a):
    return np.asarray(a if xp is np else xp.asnumpy(a))


def _rows_checked(ctx, slot, x):
    s = segments(ctx.input_lod(slot), f"{ctx.op_type} (its {slot})")
    if s.rows != x.shape[0]:
        raise ValueError(f"{ctx.op_type}: the LoD of {slot} ends at {s.rows} but {slot} has {x.shape[0]} rows")
    return s


def _lod_out(op, slot="X", out="Out"):
    x = in_var(op, slot)
    set_out(op, out, x.shape, x.dtype, max(x.lod_level, 1))


# -- sequence_softmax ----------------------------------------------------------------------

def _seq_softmax_shape(op):
    x = in_var(op, "X")
    if len(x.shape) == 2 and x.shape[1] not in (1, -1) or len(x.shape) > 2:
        raise GraphError(f"sequence_softmax: X {x.name}{list(x.shape)} must be [T, 1] or [T]")
    _lod_out(op)


@register_op("sequence_softmax", infer_shape=_seq_softmax_shape,
             grad=simple_grad("sequence_softmax_grad", keep_outputs=True))
def sequence_softmax(ctx):
    xp, x = ctx.xp, ctx.input("X")
    s = _rows_checked(ctx, "X", x)
    flat = x.reshape(-1)
    seg = s.seg(xp)
    peak = xp.full(s.num_seqs, -xp.inf, dtype=x.dtype)
    if xp is np:
        np.maximum.at(peak, seg, flat)
    else:
        importlib.import_module("cupyx").scatter_max(peak, seg, flat)
    e = xp.exp(flat - peak[seg])
    total = xp.zeros(s.num_seqs, dtype=x.dtype)
    scatter_add(xp, total, seg, e)
    ctx.set_output("Out", (e / total[seg]).reshape(x.shape), lod=ctx.input_lod("X"))


@register_op("sequence_softmax_grad")
def sequence_softmax_grad(ctx):
    xp, out, dout = ctx.xp, ctx.input("Out"), ctx.input("Out@GRAD")
    s = _rows_checked(ctx, "Out", out) if ctx.input_lod("Out") else _rows_checked(ctx, "X", out)
    seg = s.seg(xp)
    dot = xp.zeros(s.num_seqs, dtype=out.dtype)
    scatter_add(xp, dot, seg, (out * dout).reshape(-1))
    ctx.set_output("X@GRAD", out * (dout - dot[seg].reshape(out.shape)))


# -- sequence_concat -----------------------------------------------------------------------

def _concat_shape(op):
    xs = [op.block._var_recursive(n) for n in op.input("X")]
    if not xs:
        raise GraphError("sequence_concat: X must hold at least one Variable")
    tails = {tuple(x.shape[1:]) for x in xs}
    if len(tails) > 1:
        raise GraphError(f"sequence_concat: every input needs the same shape after the first dimension, got "
                         f"{[list(x.shape) for x in xs]}")
    set_out(op, "Out", (-1,) + tuple(xs[0].shape[1:]), xs[0].dtype, 1)


def _concat_rows(ctx):
    """Row of the stacked inputs behind each output row, the output offsets and per-input segments."""
    segs = []
    for i, x in enumerate(ctx.input_list("X")):
        s = segments(ctx.lods.get(ctx.ins["X"][i]), f"sequence_concat (its input {i})")
        if s.rows != x.shape[0]:
            raise ValueError(f"sequence_concat: the LoD of input {i} ends at {s.rows} but it has {x.shape[0]} rows")
        segs.append(s)
    n = segs[0].num_seqs
    if any(s.num_seqs != n for s in segs):
        raise ValueError(f"sequence_concat: every input needs the same number of sequences, got "
                         f"{[s.num_seqs for s in segs]}")
    base = np.cumsum([0] + [s.rows for s in segs])
    pieces = []
    for i in range(n):
        for k, s in enumerate(segs):
            pieces.append(np.arange(s.offsets[i], s.offsets[i + 1], dtype=np.int64) + base[k])
    rows = np.concatenate(pieces) if pieces else np.zeros(0, np.int64)
    offsets = np.concatenate([[0], np.cumsum(sum(s.lengths for s in segs))]).astype(np.int64)
    return rows, offsets, base


@register_op("sequence_concat", infer_shape=_concat_shape, grad=simple_grad("sequence_concat_grad"))
def sequence_concat(ctx):
    xp = ctx.xp
    rows, offsets, _ = _concat_rows(ctx)
    stacked = xp.concatenate(ctx.input_list("X"), axis=0)
    ctx.set_output("Out", stacked[_to(xp, rows)], lod=[offsets.tolist()])


@register_op("sequence_concat_grad")
def sequence_concat_grad(ctx):
    xp, dout = ctx.xp, ctx.input("Out@GRAD")
    rows, _, base = _concat_rows(ctx)
    xs = ctx.input_list("X")
    stacked = xp.zeros((int(base[-1]),) + tuple(dout.shape[1:]), dtype=dout.dtype)
    stacked[_to(xp, rows)] = dout
    for i in range(len(ctx.outs.get("X@GRAD", ()))):
        ctx.set_output("X@GRAD", stacked[int(base[i]):int(base[i + 1])].reshape(xs[i].shape), i=i)


# -- sequence_slice ------------------------------------------------------------------------

def _slice_rows(ctx, x):
    s = _rows_checked(ctx, "X", x)
    xp = ctx.xp
    off = _host(xp, ctx.input("Offset")).astype(np.int64).reshape(-1)
    length = _host(xp, ctx.input("Length")).astype(np.int64).reshape(-1)
    if off.shape[0] != s.num_seqs or length.shape[0] != s.num_seqs:
        raise ValueError(f"sequence_slice: Offset and Length need one value per sequence of X "
                         f"({s.num_seqs}), got {off.shape[0]} and {length.shape[0]}")
    if np.any(off < 0) or np.any(length < 0) or np.any(off + length > s.lengths):
        raise ValueError(f"sequence_slice: Offset {off.tolist()} + Length {length.tolist()} must stay inside "
                         f"the sequences of X (lengths {s.lengths.tolist()})")
    offsets = np.concatenate([[0], np.cumsum(length)]).astype(np.int64)
    rows = np.repeat(s.starts + off - offsets[:-1], length) + np.arange(offsets[-1], dtype=np.int64)
    return rows, [offsets.tolist()]


@register_op("sequence_slice", infer_shape=lambda op: set_out(
    op, "Out", (-1,) + tuple(in_var(op, "X").shape[1:]), in_var(op, "X").dtype, 1),
    grad=simple_grad("sequence_slice_grad", inputs=("X", "Offset", "Length"), grad_of=("X",)),
    no_grad_inputs=("Offset", "Length"))
def sequence_slice(ctx):
    x = ctx.input("X")
    rows, lod = _slice_rows(ctx, x)
    ctx.set_output("Out", x[_to(ctx.xp, rows)], lod=lod)


@register_op("sequence_slice_grad")
def sequence_slice_grad(ctx):
    xp, x, dout = ctx.xp, ctx.input("X"), ctx.input("Out@GRAD")
    rows, _ = _slice_rows(ctx, x)
    dx = xp.zeros(x.shape, dtype=dout.dtype)
    dx[_to(xp, rows)] = dout
    ctx.set_output("X@GRAD", dx)


# -- sequence_enumerate --------------------------------------------------------------------

def _enumerate_shape(op):
    x = in_var(op, "X")
    win = int(op.attr("win_size", 0))
    if win < 1:
        raise GraphError(f"sequence_enumerate: win_size must be positive, got {win}")
    if x.dtype not in ("int32", "int64"):
        raise GraphError(f"sequence_enumerate: X {x.name} must hold int32 or int64 ids, got {x.dtype}")
    set_out(op, "Out", (x.shape[0], win), x.dtype, max(x.lod_level, 1))


@register_op("sequence_enumerate", infer_shape=_enumerate_shape, no_grad_inputs=("X",))
def sequence_enumerate(ctx):
    xp, x = ctx.xp, ctx.input("X")
    s = _rows_checked(ctx, "X", x)
    win, pad = int(ctx.attr("win_size")), int(ctx.attr("pad_value", 0))
    src = np.arange(s.rows, dtype=np.int64)[:, None] + np.arange(win, dtype=np.int64)[None, :]
    inside = src < s.offsets[1:][s.seg(np)][:, None]
    flat = xp.concatenate([x.reshape(-1), xp.asarray([pad], dtype=x.dtype)])
    ctx.set_output("Out", flat[_to(xp, np.where(inside, src, s.rows))], lod=ctx.input_lod("X"))


# -- sequence_pad --------------------------------------------------------------------------

def _pad_shape(op):
    x = in_var(op, "X")
    set_out(op, "Out", (-1, int(op.attr("padded_length", -1))) + tuple(x.shape[1:]), x.dtype, 0)
    set_out(op, "Length", (-1,), "int64", 0)


def _pad_layout(ctx, x):
    """(segments, padded length, flat source row of every padded slot, -1 for padding)."""
    s = _rows_checked(ctx, "X", x)
    padded = int(ctx.attr("padded_length", -1))
    if padded == -1:
        padded = s.max_len
    elif padded < s.max_len:
        raise ValueError(f"sequence_pad: padded_length {padded} is shorter than the longest sequence "
                         f"({s.max_len} rows)")
    j = np.arange(padded, dtype=np.int64)[None, :]
    src = np.where(j < s.lengths[:, None], s.starts[:, None] + j, -1)
    return s, padded, src.reshape(-1)


@register_op("sequence_pad", infer_shape=_pad_shape, grad=simple_grad(
    "sequence_pad_grad", inputs=("X",)), no_grad_inputs=("PadValue",))
def sequence_pad(ctx):
    xp, x, pad = ctx.xp, ctx.input("X"), ctx.input("PadValue")
    s, padded, src = _pad_layout(ctx, x)
    row_shape = tuple(x.shape[1:])
    if pad.size != 1 and tuple(pad.shape) != row_shape and pad.size != int(np.prod(row_shape)):
        raise ValueError(f"sequence_pad: PadValue must hold one value or one row of X {list(row_shape)}, "
                         f"got shape {list(pad.shape)}")
    pad_row = xp.broadcast_to(pad.reshape(-1) if pad.size == 1 else pad.reshape(row_shape), row_shape)
    stacked = xp.concatenate([x, pad_row.astype(x.dtype)[None]], axis=0)
    out = stacked[_to(xp, np.where(src < 0, s.rows, src))]
    ctx.set_output("Out", out.reshape((s.num_seqs, padded) + row_shape))
    ctx.set_output("Length", _to(xp, s.lengths.astype(np.int64)))


@register_op("sequence_pad_grad")
def sequence_pad_grad(ctx):
    xp, x, dout = ctx.xp, ctx.input("X"), ctx.input("Out@GRAD")
    _, _, src = _pad_layout(ctx, x)
    keep = src >= 0
    flat = dout.reshape((-1,) + tuple(x.shape[1:]))
    dx = xp.zeros(x.shape, dtype=dout.dtype)
    dx[_to(xp, src[keep])] = flat[_to(xp, keep)]
    ctx.set_output("X@GRAD", dx, lod=ctx.input_lod("X"))


# -- sequence_expand -----------------------------------------------------------------------

def _expand_shape(op):
    x, y = in_var(op, "X"), in_var(op, "Y")
    ref = int(op.attr("ref_level", -1))
    if y.lod_level and not -1 <= ref < y.lod_level:
        raise GraphError(f"sequence_expand: ref_level {ref} must be -1 or below the LoD level of Y "
                         f"{y.name} ({y.lod_level})")
    set_out(op, "Out", (-1,) + tuple(x.shape[1:]), x.dtype, x.lod_level)


def _expand_rows(ctx, x):
    """Source row of X behind each output row, and Out's LoD (None when X has none)."""
    y_lod = ctx.input_lod("Y")
    if not y_lod:
        raise ValueError("sequence_expand: Y must have a LoD")
    ref = int(ctx.attr("ref_level", -1))
    if not -1 <= ref < len(y_lod):
        raise ValueError(f"sequence_expand: ref_level {ref} must be -1 or below Y's LoD level ({len(y_lod)})")
    level = y_lod[ref]
    repeats = np.diff(np.asarray(level, dtype=np.int64))
    x_lod = ctx.input_lod("X")
    if x_lod:
        if len(x_lod) > 1:
            raise ValueError(f"sequence_expand: X may have at most one LoD level, got {len(x_lod)}")
        xs = _rows_checked(ctx, "X", x)
        starts, lengths = xs.starts, xs.lengths
    else:
        starts, lengths = np.arange(x.shape[0], dtype=np.int64), np.ones(x.shape[0], dtype=np.int64)
    if repeats.shape[0] != lengths.shape[0]:
        raise ValueError(f"sequence_expand: X has {lengths.shape[0]} sequences (rows, without a LoD) but level "
                         f"{ref} of Y's LoD has {repeats.shape[0]}")
    seq_starts = np.repeat(starts, repeats)
    seq_lengths = np.repeat(lengths, repeats)
    offsets = np.concatenate([[0], np.cumsum(seq_lengths)]).astype(np.int64)
    rows = np.repeat(seq_starts - offsets[:-1], seq_lengths) + np.arange(offsets[-1], dtype=np.int64)
    return rows, ([offsets.tolist()] if x_lod else None)


@register_op("sequence_expand", infer_shape=_expand_shape, grad=lambda op: [GradOpSpec(
    "sequence_expand_grad", {"X": op.input("X"), "Y": op.input("Y"),
                             "Out@GRAD": [grad_name(op.output("Out")[0])]},
    {"X@GRAD": [grad_name(op.input("X")[0])]}, dict(op.attrs))], no_grad_inputs=("Y",))
def sequence_expand(ctx):
    x = ctx.input("X")
    rows, lod = _expand_rows(ctx, x)
    ctx.set_output("Out", x[_to(ctx.xp, rows)], lod=lod)


@register_op("sequence_expand_grad")
def sequence_expand_grad(ctx):
    xp, x, dout = ctx.xp, ctx.input("X"), ctx.input("Out@GRAD")
    rows, _ = _expand_rows(ctx, x)
    dx = xp.zeros(x.shape, dtype=dout.dtype)
    scatter_add(xp, dx, _to(xp, rows), dout)
    ctx.set_output("X@GRAD", dx, lod=ctx.input_lod("X"))


# -- sequence_scatter ----------------------------------------------------------------------

def _scatter_index(ctx, x):
    xp = ctx.xp
    ids = _host(xp, ctx.input("Ids")).astype(np.int64).reshape(-1)
    s = segments(ctx.input_lod("Ids"), "sequence_scatter (its Ids)")
    if s.rows != ids.shape[0] or s.num_seqs != x.shape[0]:
        raise ValueError(f"sequence_scatter: Ids needs one sequence per row of X ({x.shape[0]}) and a LoD "
                         f"ending at its {ids.shape[0]} rows; got {s.num_seqs} sequences ending at {s.rows}")
    if ids.size and (ids.min() < 0 or ids.max() >= x.shape[1]):
        raise ValueError(f"sequence_scatter: Ids must lie in [0, {x.shape[1]}), got {ids.min()}..{ids.max()}")
    return s.seg(np), ids


@register_op("sequence_scatter", infer_shape=same_shape(), grad=simple_grad(
    "sequence_scatter_grad", inputs=("X", "Ids", "Updates"), grad_of=("X", "Updates")), no_grad_inputs=("Ids",))
def sequence_scatter(ctx):
    xp, x, upd = ctx.xp, ctx.input("X"), ctx.input("Updates")
    seg, ids = _scatter_index(ctx, x)
    if upd.shape[0] != ids.shape[0]:
        raise ValueError(f"sequence_scatter: Updates has {upd.shape[0]} rows but Ids has {ids.shape[0]}")
    out = x.copy()
    flat = out.reshape(-1)
    scatter_add(xp, flat, _to(xp, seg * x.shape[1] + ids), upd.reshape(-1).astype(x.dtype))
    ctx.set_output("Out", out)


@register_op("sequence_scatter_grad")
def sequence_scatter_grad(ctx):
    xp, x, upd, dout = ctx.xp, ctx.input("X"), ctx.input("Updates"), ctx.input("Out@GRAD")
    seg, ids = _scatter_index(ctx, x)
    if ctx.has_output("X@GRAD"):
        ctx.set_output("X@GRAD", dout.copy())
    if ctx.has_output("Updates@GRAD"):
        du = dout.reshape(-1)[_to(xp, seg * x.shape[1] + ids)]
        ctx.set_output("Updates@GRAD", du.reshape(upd.shape), lod=ctx.input_lod("Updates"))


# -- sequence_reverse ----------------------------------------------------------------------

def _reverse_rows(ctx, x):
    s = _rows_checked(ctx, "X", x)
    seg = s.seg(np)
    pos = np.arange(s.rows, dtype=np.int64) - s.starts[seg]
    return s.offsets[1:][seg] - 1 - pos


@register_op("sequence_reverse", infer_shape=lambda op: _lod_out(op, "X", "Y"),
             grad=lambda op: [GradOpSpec("sequence_reverse_grad", {"X": op.input("X"), "Y@GRAD": [
                 grad_name(op.output("Y")[0])]}, {"X@GRAD": [grad_name(op.input("X")[0])]}, dict(op.attrs))])
def sequence_reverse(ctx):
    x = ctx.input("X")
    ctx.set_output("Y", x[_to(ctx.xp, _reverse_rows(ctx, x))], lod=ctx.input_lod("X"))


@register_op("sequence_reverse_grad")
def sequence_reverse_grad(ctx):
    x, dy = ctx.input("X"), ctx.input("Y@GRAD")
    ctx.set_output("X@GRAD", dy[_to(ctx.xp, _reverse_rows(ctx, x))], lod=ctx.input_lod("X"))


# -- lod_reset -----------------------------------------------------------------------------

def _new_lod(ctx, x):
    if ctx.has_input("Y"):
        y_lod = ctx.input_lod("Y")
        level = list(y_lod[-1]) if y_lod else _host(ctx.xp, ctx.input("Y")).astype(np.int64).reshape(-1).tolist()
    else:
        level = [int(v) for v in ctx.attr("target_lod", [])]
    old = ctx.input_lod("X") if ctx.attr("append", False) else None
    if not level or level[0] != 0 or level[-1] != x.shape[0] or any(b < a for a, b in zip(level, level[1:])):
        raise ValueError(f"lod_reset: the target LoD {level[:8]} must start at 0, never decrease and end at "
                         f"X's {x.shape[0]} rows")
    # append (Paddle's LoDResetKernel): the level is pushed after X's own levels.
    return ([list(lv) for lv in old] if old else []) + [[int(v) for v in level]]


@register_op("lod_reset", infer_shape=lambda op: set_out(op, "Out", in_var(op, "X").shape, in_var(op, "X").dtype, 1),
             grad=simple_grad("lod_reset_grad", inputs=("X",)), no_grad_inputs=("Y",))
def lod_reset(ctx):
    x = ctx.input("X")
    ctx.set_output("Out", x, lod=_new_lod(ctx, x))


@register_op("lod_reset_grad")
def lod_reset_grad(ctx):
    ctx.set_output("X@GRAD", ctx.input("Out@GRAD"), lod=ctx.input_lod("X"))
