"""The fused lookup + sum-pool of a distributed table's slots, and its gradient.

The trainer pass (transpiler/trainer_pass.py) puts these in place of a
`merge_ids` + one sum `sequence_pool` per slot and of their gradients when a
program has that shape (a CTR model's): `split_ids` writes, besides the ids
per pserver, an `Index` — every fed id's row in the pservers' replies laid end
to end — and both ops below work from it, so a batch's ids are sorted once.
"""
from __future__ import annotations

import numpy as np

from ..core import SelectedRows
from ..framework import VarType
from .dist_ops import _host_ids, _to_xp
from .registry import in_var, out_var, register_op, set_out


def _slot_segments(ctx, name, what):
    from .sequence_ops import segments
    return segments(ctx.lods.get(name), f"{what} ({name})")


def _pool_shape(op):
    width = int(in_var(op, "X").shape[-1])
    for i in range(len(op.outputs.get("Out", []))):
        set_out(op, "Out", (-1, width), in_var(op, "X").dtype, 0, i=i)


@register_op("merge_ids_pool", infer_shape=_pool_shape)
def merge_ids_pool(ctx):
    """merge_ids followed by a sum sequence_pool of every slot, fused: slot j's pooled
    rows come straight from the pservers' replies through split_ids' Index (no sort,
    and no per-slot [ids, dim] copy when every sequence holds one id, a CTR slot's case).

    Ids: the slots (LoD inputs, in split_ids' order); Index: split_ids' Index; X: the
    prefetched rows per pserver. Out: [sequences, dim] per slot; empty sequences pool
    to `pad_value` (0), as in sequence_pool."""
    from .sequence_ops import _sum
    xp = ctx.xp
    xs = ctx.input_list("X")
    rows = xs[0] if len(xs) == 1 else xp.concatenate(xs, axis=0)
    index = _to_xp(ctx, ctx.input("Index"))
    names = ctx.ins["Ids"]
    total = sum(int(ctx.vals[name].shape[0]) for name in names)
    if total != index.shape[0]:
        raise RuntimeError(f"merge_ids_pool: {index.shape[0]} indices for {total} ids: Index must come "
                           "from the split_ids of the same Ids")
    pad = rows.dtype.type(ctx.attr("pad_value", 0.0))
    start = 0
    for j, name in enumerate(names):
        seg = _slot_segments(ctx, name, "merge_ids_pool")
        n = int(ctx.vals[name].shape[0])
        if seg.rows != n:
            raise ValueError(f"merge_ids_pool: the LoD of {name!r} ends at {seg.rows} but it holds {n} ids")
        picked = xp.take(rows, index[start:start + n], axis=0)
        start += n
        out = picked if seg.uniform and seg.max_len == 1 else _sum(xp, picked, seg)
        if seg.max_len == 0:
            out = xp.full((seg.num_seqs, rows.shape[1]), pad, dtype=rows.dtype)
        elif not seg.all_nonempty:
            out[~seg.host_or(xp, "nonempty")] = pad
        ctx.set_output("Out", out, i=j)


def _pool_grad_shape(op):
    width = int(in_var(op, "Out@GRAD").shape[-1])
    set_out(op, "W@GRAD", (int(op.attr("height", 0)), width), in_var(op, "Out@GRAD").dtype)
    out_var(op, "W@GRAD").type = VarType.SELECTED_ROWS


@register_op("merge_ids_pool_grad", infer_shape=_pool_grad_shape)
def merge_ids_pool_grad(ctx):
    """The gradient of every slot's merge_ids_pool output for the table, as one
    SelectedRows with one row per distinct id (Rows: split_ids' outputs, in Index's
    order) holding the sum over every occurrence of the id: the lookup_table_grad of
    each slot, their `sum` and the pserver's duplicate merge in one pass. Sums
    accumulate in float64 (one bincount per column)."""
    xp = ctx.xp
    index = _to_xp(ctx, ctx.input("Index"))
    ids = np.concatenate([_host_ids(r) for r in ctx.input_list("Rows")])
    parts = []
    for name, dout in zip(ctx.ins["Ids"], ctx.input_list("Out@GRAD")):
        seg = _slot_segments(ctx, name, "merge_ids_pool_grad")
        parts.append(dout if seg.uniform and seg.max_len == 1 else xp.take(dout, seg.seg(xp), axis=0))
    per_id = parts[0] if len(parts) == 1 else xp.concatenate(parts, axis=0)
    if per_id.shape[0] != index.shape[0]:
        raise RuntimeError(f"merge_ids_pool_grad: {per_id.shape[0]} id gradients for {index.shape[0]} indices")
    width = per_id.shape[1]
    summed = xp.empty((ids.size, width), dtype=per_id.dtype)
    for c in range(width):
        summed[:, c] = xp.bincount(index, weights=per_id[:, c], minlength=ids.size)
    ctx.set_output("W@GRAD", SelectedRows(_to_xp(ctx, ids), summed, int(ctx.attr("height", 0))))
