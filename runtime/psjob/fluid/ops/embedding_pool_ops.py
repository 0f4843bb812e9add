"""The fused lookup + sum-pool of a distributed table's slots, and its gradient.

The executor (embedding_fusion.execution_ops) runs these in place of a
`merge_ids` + one sum `sequence_pool` per slot and of their gradients when a
program has that shape (a CTR model's): the trainer pass
(transpiler/trainer_pass.py) then gave `split_ids`, besides the ids per
pserver, an `Index` output — every fed id's row in the pservers' replies laid
end to end — and both ops below work from it, so a batch's ids are sorted once.
"""
from __future__ import annotations

import functools

import numpy as np

from psjob.fluid.core import SelectedRows
from psjob.fluid.framework import VarType
from psjob.fluid.ops.dist_ops import _host_ids, _to_xp
from psjob.fluid.ops.registry import in_var, out_var, register_op, set_out
from psjob.foundation.kernels import native
from psjob.foundation.kernels.rows import take_rows


@functools.lru_cache(maxsize=8)
def _one_id_per_sequence(n: int):
    from psjob.fluid.ops.sequence_ops import _Segments
    return _Segments(np.arange(n + 1, dtype=np.int64))


def _slot_segments(ctx, what):
    """The segments of every Ids slot, each checked against its ids. Slots fed one LoD
    object (a CTR feed's shared offsets) are looked up once. With `each_id_a_row` (the
    fused ops of a reshaped lookup) every id is its own sequence, whatever the LoD."""
    from psjob.fluid.ops.sequence_ops import segments
    if ctx.attr("each_id_a_row", False):
        out = []
        for name, k in zip(ctx.ins["Ids"], _ids_per_row(ctx)):
            n = int(ctx.vals[name].size)
            if n % k:
                raise ValueError(f"{what}: {name!r} holds {n} ids, not rows of {k} ids (the reshape "
                                 f"to [-1, {k} x dim] the fused ops stand for fails on them too)")
            out += [_one_id_per_sequence(n // k)] * k
        return out
    out, seen = [], {}
    lods, vals = ctx.lods, ctx.vals
    last_lod = last_seg = None
    for name in ctx.ins["Ids"]:
        lod = lods.get(name)
        if lod is not None and lod is last_lod:
            seg = last_seg  # the LoD object of the slot before (the executor feeds a shared one once)
        else:
            key = id(lod[-1]) if lod else None
            seg = seen.get(key)
            if seg is None:
                seg = segments(lod, f"{what} ({name})")
                if key is not None:
                    seen[key] = seg
            last_lod, last_seg = lod, seg
        if seg.rows != vals[name].shape[0]:
            raise ValueError(f"{what}: the LoD of {name!r} ends at {seg.rows} but it holds "
                             f"{int(vals[name].shape[0])} ids")
        out.append(seg)
    return out


def _ids_per_row(ctx) -> list:
    """k per Ids input: how many of its ids each row of the fused output holds side by side
    (the `ids_per_row` attribute; 1 each without it)."""
    per_row = [int(k) for k in (ctx.attr("ids_per_row", None) or [1] * len(ctx.ins["Ids"]))]
    if len(per_row) != len(ctx.ins["Ids"]) or min(per_row) < 1:
        raise ValueError(f"{ctx.op.type}: ids_per_row {per_row} needs a count of at least 1 "
                         f"for each of its {len(ctx.ins['Ids'])} Ids inputs")
    return per_row


def _slot_major(ctx, index):
    """`index` (one entry per id, every Ids input's ids laid end to end as fed) in the order
    the slot segments expect: an input whose rows hold k ids each (row r: its ids r*k ..
    r*k + k-1) becomes k slots, slot j holding id j of every row. Unchanged when k is 1
    everywhere."""
    per_row = _ids_per_row(ctx) if ctx.attr("each_id_a_row", False) else []
    if all(k == 1 for k in per_row):
        return index
    xp, parts, start = ctx.xp, [], 0
    fed = sum(int(ctx.vals[name].size) for name in ctx.ins["Ids"])
    if index.shape[0] != fed:
        raise RuntimeError(f"{ctx.op.type}: {index.shape[0]} indices for {fed} ids: Index must come "
                           "from the split_ids of the same Ids")
    for name, k in zip(ctx.ins["Ids"], per_row):
        n = int(ctx.vals[name].size)
        part = index[start:start + n]
        parts.append(part if k == 1 else part.reshape(n // k, k).T.reshape(-1))
        start += n
    return parts[0] if len(parts) == 1 else xp.concatenate(parts)


def _one_id_each(segs) -> bool:
    """Every sequence of every slot holds exactly one id (a CTR slot's case), the same
    number of sequences in each: the slots' ids are then a [slots, sequences] grid."""
    if not segs:
        return True
    first = segs[0]
    # Slots fed one LoD share one segments object (_slot_segments): each checked once.
    return all(s is first or (s.uniform and s.max_len == 1 and s.num_seqs == first.num_seqs)
               for s in segs) and first.uniform and first.max_len == 1


def _pool_shape(op):
    width = int(in_var(op, "X").shape[-1])
    dtype = in_var(op, "X").dtype
    if op.attr("concat", False):
        others = sum(int(in_var(op, slot, i).shape[-1]) for slot in ("Head", "Tail")
                     for i in range(len(op.inputs.get(slot, []))))
        slots = sum(op.attr("ids_per_row", None) or [1] * len(op.inputs["Ids"]))
        set_out(op, "Out", (-1, width * slots + others), dtype, 0)
        return
    for i in range(len(op.outputs.get("Out", []))):
        set_out(op, "Out", (-1, width), dtype, 0, i=i)


@register_op("merge_ids_pool", infer_shape=_pool_shape)
def merge_ids_pool(ctx):
    """merge_ids followed by a sum sequence_pool of every slot, fused: slot j's pooled
    rows come straight from the pservers' replies through split_ids' Index (no sort,
    and no per-slot [ids, dim] copy when every sequence holds one id, a CTR slot's case).

    Ids: the slots (LoD inputs, in split_ids' order); Index: split_ids' Index; X: the
    prefetched rows per pserver. Out: [sequences, dim] per slot; empty sequences pool
    to `pad_value` (0), as in sequence_pool. With `concat`, Out is one array: the `Head`
    inputs, the pooled slots side by side, then the `Tail` inputs (what a concat along
    axis 1 of Head, the pooled slots and Tail gives), written in place — one gather for
    every slot when each sequence holds one id."""
    xs = ctx.input_list("X")
    rows = xs[0] if len(xs) == 1 else ctx.xp.concatenate(xs, axis=0)
    segs = _slot_segments(ctx, "merge_ids_pool")
    index = _slot_major(ctx, _to_xp(ctx, ctx.input("Index")))
    total = sum(s.rows for s in segs)
    if total != index.shape[0]:
        raise RuntimeError(f"merge_ids_pool: {index.shape[0]} indices for {total} ids: Index must come "
                           "from the split_ids of the same Ids")
    _pool_rows(ctx, rows, index, segs, checked=False)


def _pool_rows(ctx, rows, index, segs, checked):
    """Write Out: slot j's sequences pooled from rows[index[its ids]] (index: every slot's
    ids laid end to end). `checked`: index is known to lie within rows."""
    from psjob.fluid.ops.sequence_ops import _sum
    xp = ctx.xp
    pad = rows.dtype.type(ctx.attr("pad_value", 0.0))
    width, slots = rows.shape[1], len(segs)
    concat = bool(ctx.attr("concat", False))
    out = None
    head_cols = 0
    if concat:
        head, tail = ctx.input_list("Head"), ctx.input_list("Tail")
        seqs = segs[0].num_seqs
        if any(s.num_seqs != seqs for s in segs) or any(t.shape[0] != seqs for t in head + tail):
            raise ValueError(f"{ctx.op.type}: concat of Head, slots and Tail with different numbers of rows "
                             f"({sorted({s.num_seqs for s in segs} | {t.shape[0] for t in head + tail})})")
        head_cols = sum(t.shape[1] for t in head)
        out = xp.empty((seqs, head_cols + width * slots + sum(t.shape[1] for t in tail)), dtype=rows.dtype)
        col = 0
        for t in head:
            out[:, col:col + t.shape[1]] = t
            col += t.shape[1]
        col = head_cols + width * slots
        for t in tail:
            out[:, col:col + t.shape[1]] = t
            col += t.shape[1]
        if _one_id_each(segs):
            # The Index of slot j's sequence b sits at j * seqs + b: a [slots, seqs] grid.
            if native.fits(rows, out) and isinstance(index, np.ndarray):
                # one pass in C: each sequence's slots copied into place
                _check_index(index, rows, checked)
                native.pool_gather_grid(rows, index, out, slots, head_cols)
                ctx.set_output("Out", out)
                return
            grid = index.reshape(slots, seqs).T
            pooled = out[:, head_cols:head_cols + width * slots].reshape(seqs, slots, width)
            if xp is np:
                # Whole rows gathered in (sequence, slot) order, then one copy into place:
                # measured a little faster than take's `out` into the strided view (a
                # 1M-row table: 1.39 vs 1.51 ms per 26-slot step). mode="clip" skips take's
                # own range check; the check is here (the local table's ids were checked).
                _check_index(index, rows, checked)
                gathered = take_rows(rows, np.ascontiguousarray(grid).reshape(-1), mode="clip")
                pooled[...] = gathered.reshape(pooled.shape)
            else:
                pooled[...] = rows[grid]
            ctx.set_output("Out", out)
            return
    start = 0
    for j, seg in enumerate(segs):
        picked = xp.take(rows, index[start:start + seg.rows], axis=0)
        start += seg.rows
        pooled = picked if seg.uniform and seg.max_len == 1 else _sum(xp, picked, seg)
        if seg.max_len == 0:
            pooled = xp.full((seg.num_seqs, width), pad, dtype=rows.dtype)
        elif not seg.all_nonempty:
            pooled[~seg.host_or(xp, "nonempty")] = pad
        if concat:
            out[:, head_cols + j * width:head_cols + (j + 1) * width] = pooled
        else:
            ctx.set_output("Out", pooled, i=j)
    if concat:
        ctx.set_output("Out", out)


def _check_index(index, rows, checked):
    """The range check np.take's mode="clip" (and the C gather's message) would not name."""
    if not checked and index.size and int(index.max()) >= rows.shape[0]:
        raise RuntimeError(f"merge_ids_pool: Index reaches row {int(index.max())} of "
                           f"{rows.shape[0]} prefetched rows")


def _pool_grad_shape(op):
    width = int(op.attr("width")) if op.attr("concat", False) else int(in_var(op, "Out@GRAD").shape[-1])
    set_out(op, "W@GRAD", (int(op.attr("height", 0)), width), in_var(op, "Out@GRAD").dtype)
    out_var(op, "W@GRAD").type = VarType.SELECTED_ROWS


@register_op("merge_ids_pool_grad", infer_shape=_pool_grad_shape)
def merge_ids_pool_grad(ctx):
    """The gradient of every slot's merge_ids_pool output for the table, as one
    SelectedRows with one row per distinct id (Rows: split_ids' outputs, in Index's
    order) holding the sum over every occurrence of the id: the lookup_table_grad of
    each slot, their `sum` and the pserver's duplicate merge in one pass. Sums
    accumulate in float64 (one bincount per column). With `concat`, Out@GRAD is the
    gradient of the concatenated output, whose slots x `width` columns after the first
    `head_width` are the slots' (the Head's and Tail's columns get no gradient)."""
    ids = np.concatenate([_host_ids(r) for r in ctx.input_list("Rows")])
    segs = _slot_segments(ctx, "merge_ids_pool_grad")
    index = _slot_major(ctx, _to_xp(ctx, ctx.input("Index")))
    summed = _summed_by_index(ctx, index, ids.size, segs, int(ctx.attr("width", 0)))
    ctx.set_output("W@GRAD", SelectedRows(_to_xp(ctx, ids), summed, int(ctx.attr("height", 0)), unique=True))


def _summed_by_index(ctx, index, distinct: int, segs, width: int):
    """[distinct, width]: row k sums the gradient of every id occurrence whose index is k
    (index: every slot's ids laid end to end). Sums accumulate in float64 (one bincount
    per column). Reads Out@GRAD: per slot, or with `concat` the concatenated output's
    gradient, whose first slots x `width` columns are the slots' (the Tail's get none)."""
    xp = ctx.xp
    head = int(ctx.attr("head_width", 0))
    concat = ctx.attr("concat", False)
    if concat:
        dout = ctx.input("Out@GRAD")
    else:
        douts = ctx.input_list("Out@GRAD")
        width = douts[0].shape[1]
    if concat and _one_id_each(segs):
        seqs, slots = segs[0].num_seqs, len(segs)
        if native.fits(dout) and isinstance(index, np.ndarray) and dout.ndim == 2:
            # The same sums in C (double accumulators, the same order): one pass, no columns.
            return native.pool_grad_grid(dout, index, distinct, slots, width, head)
        # Occurrences in (sequence, slot) order: the columns of Out@GRAD as they lie, and
        # the Index of the [slots, seqs] grid transposed to match.
        per_id = dout[:, head:head + width * slots].reshape(seqs, slots, width)
        index = index.reshape(slots, seqs).T.reshape(-1)
        column = lambda c: per_id[:, :, c].reshape(-1)
    else:
        if concat:  # each slot's columns of the concatenated gradient
            douts = [dout[:, head + j * width:head + (j + 1) * width] for j in range(len(segs))]
        parts = [d if seg.uniform and seg.max_len == 1 else xp.take(d, seg.seg(xp), axis=0)
                 for seg, d in zip(segs, douts)]
        per_id = parts[0] if len(parts) == 1 else xp.concatenate(parts, axis=0)
        if per_id.shape[0] != index.shape[0]:
            raise RuntimeError(f"{ctx.op.type}: {per_id.shape[0]} id gradients for {index.shape[0]} indices")
        column = lambda c: per_id[:, c]
    summed = xp.empty((distinct, width), dtype=per_id.dtype)
    for c in range(width):
        summed[:, c] = xp.bincount(index, weights=column(c), minlength=distinct)
    return summed


# -- a table in the process (fluid/embedding_fusion.py puts these in the executor's ops) --

def _local_ids(ctx, segs):
    """Every slot's ids laid end to end, range-checked against the table W as lookup_table does."""
    from psjob.fluid.ops.nn_ops import _flat_ids
    xp = ctx.xp
    parts = [ctx.vals[name].reshape(-1) for name in ctx.ins["Ids"]]
    ids = parts[0] if len(parts) == 1 else xp.concatenate(parts)
    return _flat_ids(xp, ids, ctx.input("W").shape[0], "lookup_table")


@register_op("embedding_pool", infer_shape=lambda op: None)
def embedding_pool(ctx):
    """The lookup_table of every slot on one table W followed by each slot's sum
    sequence_pool (and, with `concat`, their concat with the Tail inputs), fused:
    merge_ids_pool with the table itself as the rows and the ids as the index. Ids out
    of the table's range fail as in lookup_table."""
    segs = _slot_segments(ctx, "embedding_pool")
    _pool_rows(ctx, ctx.input("W"), _slot_major(ctx, _local_ids(ctx, segs)), segs, checked=True)


@register_op("embedding_pool_grad", infer_shape=lambda op: None)
def embedding_pool_grad(ctx):
    """W@GRAD of embedding_pool: a SelectedRows with one row per distinct id, ascending,
    holding the sum over the id's occurrences — what the slots' lookup_table_grad, their
    `sum` and the optimizer's duplicate merge give, in one sort of the batch's ids."""
    from psjob.fluid.ops.dist_ops import _unique_inverse
    w = ctx.input("W")
    segs = _slot_segments(ctx, "embedding_pool_grad")
    ids = _host_ids(_slot_major(ctx, _local_ids(ctx, segs)))
    distinct, inverse = _unique_inverse(ids)
    summed = _summed_by_index(ctx, _to_xp(ctx, inverse), distinct.size, segs, int(w.shape[1]))
    ctx.set_output("W@GRAD", SelectedRows(_to_xp(ctx, distinct), summed, int(w.shape[0]), unique=True))
