"""Evaluation ops: top_k, accuracy and Fluid's bucketed AUC. None has a gradient.

AUC, as Paddle computes it: a prediction p (the last column of Predict, i.e.
the positive-class probability) falls in bucket int(p * num_thresholds); the
op keeps per-bucket counts of positives and negatives in persistable int64
"stat" variables and integrates the ROC curve over the buckets with the
trapezoid rule. With `slide_steps == 0` the stats accumulate over every batch
since the startup program zeroed them (the global AUC); with `slide_steps=k`
the AUC covers the last k batches, kept in one of two layouts, told apart by the
stat variable's rank:
- Fluid 1.x's (`fluid.layers.auc`): [k, num_thresholds + 1], one row per recent
  batch, shifted each run;
- Paddle 2.x's (`paddle.static.auc`): flat [(k + 1) * (num_thresholds + 1) + 1]:
  k rows used in turn (row `counter % k`), the window's sum in row k, and the
  counter — the batches run — in the last element (of both stats), as Paddle's
  auc kernel keeps them, so either framework loads the other's saves.
Predictions in one bucket count as ties (half a correctly ordered pair), so the
result is within the within-bucket pair fraction of the exact ROC AUC.
"""
from __future__ import annotations

import numpy as np

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import in_var, register_op, set_out

# -- top_k -------------------------------------------------------------------------------

def _topk_shape(op):
    x = in_var(op, "X")
    if op.input("K"):  # k read when the op runs (Paddle 1.8's topk with k a Variable)
        shape = tuple(x.shape[:-1]) + (-1,)
        set_out(op, "Out", shape, x.dtype, x.lod_level)
        set_out(op, "Indices", shape, "int64", x.lod_level)
        return
    k = int(op.attr("k", 1))
    if k < 1 or (x.shape and 0 <= x.shape[-1] < k):
        raise GraphError(f"top_k: k={k} must lie in [1, {x.shape[-1] if x.shape else '?'}] "
                         f"(the last dimension of X {x.name}{list(x.shape)})")
    shape = tuple(x.shape[:-1]) + (k,)
    set_out(op, "Out", shape, x.dtype, x.lod_level)
    set_out(op, "Indices", shape, "int64", x.lod_level)


@register_op("top_k", infer_shape=_topk_shape, no_grad_inputs=("K",))
def top_k(ctx):
    xp, x = ctx.xp, ctx.input("X")
    k = int(ctx.input("K").reshape(-1)[0]) if ctx.has_input("K") else int(ctx.attr("k", 1))
    c = x.shape[-1]
    if k < 1 or k > c:
        raise ValueError(f"top_k: k={k} must lie in [1, {c}] (the entries of the last dimension)")
    x2 = x.reshape(-1, c)
    if k == 1:
        idx = x2.argmax(axis=1).reshape(-1, 1)
    else:
        if k < c:
            part = xp.argpartition(-x2, k - 1, axis=1)[:, :k]
        else:
            part = xp.broadcast_to(xp.arange(c), x2.shape)
        order = xp.argsort(-xp.take_along_axis(x2, part, axis=1), axis=1)
        idx = xp.take_along_axis(part, order, axis=1)
    vals = xp.take_along_axis(x2, idx, axis=1)
    lod = ctx.input_lod("X")
    ctx.set_output("Out", vals.reshape(x.shape[:-1] + (k,)), lod=lod)
    ctx.set_output("Indices", idx.astype(np.int64, copy=False).reshape(x.shape[:-1] + (k,)), lod=lod)


# -- accuracy ----------------------------------------------------------------------------

def _accuracy_shape(op):
    idx, label = in_var(op, "Indices"), in_var(op, "Label")
    if not label.shape or label.shape[-1] != 1:
        raise GraphError(f"accuracy: Label {label.name}{list(label.shape)} must be [N, 1] class ids")
    if idx.shape and label.shape and idx.shape[0] >= 0 and label.shape[0] >= 0 and idx.shape[0] != label.shape[0]:
        raise GraphError(f"accuracy: {idx.shape[0]} predictions but {label.shape[0]} labels")
    set_out(op, "Accuracy", (1,), "float32")
    set_out(op, "Correct", (1,), "int32")
    set_out(op, "Total", (1,), "int32")


@register_op("accuracy", infer_shape=_accuracy_shape)
def accuracy(ctx):
    xp = ctx.xp
    idx, label = ctx.input("Indices"), ctx.input("Label")
    n = idx.shape[0]
    if label.shape[0] != n:
        raise ValueError(f"accuracy: {n} predictions but {label.shape[0]} labels")
    hit = (idx.reshape(n, -1) == label.reshape(n, 1)).any(axis=1)
    correct = int(hit.sum())
    ctx.set_output("Accuracy", xp.asarray([correct / n if n else 0.0], dtype=np.float32))
    ctx.set_output("Correct", xp.asarray([correct], dtype=np.int32))
    ctx.set_output("Total", xp.asarray([n], dtype=np.int32))


# -- auc ---------------------------------------------------------------------------------

def bucket_counts(xp, predict, label, num_thresholds, with_buckets=False):
    """Per-bucket (positives, negatives) of one batch, as int64 [num_thresholds+1]; with
    `with_buckets` (numpy only) also every prediction's bucket, as a list."""
    p = predict.reshape(predict.shape[0], -1)[:, -1] if predict.ndim > 1 else predict
    flat_label = label.reshape(-1)
    if p.shape[0] != flat_label.shape[0]:
        raise ValueError(f"auc: {p.shape[0]} predictions but {flat_label.shape[0]} labels")
    size = num_thresholds + 1
    if xp is np:
        # One pass per step over a batch of a few dozen predictions: plain ufuncs (no
        # wrapper; np.maximum's reduction is NaN exactly when a prediction is) and one
        # bincount over (label, bucket) pairs. The counts are those of the general form below.
        if p.size and np.isnan(np.maximum.reduce(p)):
            raise ValueError("auc: Predict contains NaN")
        bins = (np.minimum(np.maximum(p, 0.0), 1.0) * num_thresholds).astype(np.int64)
        bins += (flat_label != 0) * size
        counts = np.bincount(bins, minlength=2 * size).astype(np.int64, copy=False).reshape(2, size)
        if with_buckets:
            return counts[1], counts[0], [b - size if b >= size else b for b in bins.tolist()]
        return counts[1], counts[0]
    if p.size and bool(xp.isnan(p).any()):
        raise ValueError("auc: Predict contains NaN")
    bins = (xp.clip(p, 0.0, 1.0) * num_thresholds).astype(np.int64)
    pos = flat_label != 0
    return (xp.bincount(bins[pos], minlength=size)[:size].astype(np.int64, copy=False),
            xp.bincount(bins[~pos], minlength=size)[:size].astype(np.int64, copy=False))


# 2 * positives * negatives below this: the float64 trapezoid sum of integer counts is exact,
# so the same sum in int64 gives it to the bit.
_EXACT_IN_FLOAT = 2 ** 53


def auc_from_stats(xp, stat_pos, stat_neg, used=None) -> float:
    """Trapezoid-rule ROC AUC over bucket counts, walking from the top bucket down.
    `used` (optional): buckets that hold every non-zero count (a batch's own buckets)."""
    if xp is np and stat_pos.dtype == np.int64 and stat_neg.dtype == np.int64 and stat_pos.size:
        exact = _auc_exact_forward(stat_pos, stat_neg, used)
        if exact is not None:
            return exact
    pos, neg = stat_pos[::-1], stat_neg[::-1]
    # The float64 sum (counts whose int64 sum may round, other dtypes, other array modules).
    if xp is np and pos.size > 64:
        # Only buckets holding a prediction add area (an empty one adds a zero-width trapezoid
        # and leaves tp as it was); leaving the empty ones out fixes the summation order
        # this value has always had.
        nonzero = (pos | neg).nonzero()[0] if pos.dtype.kind in "iu" else \
            np.flatnonzero((pos != 0) | (neg != 0))
        if 2 * nonzero.size < pos.size:
            pos, neg = pos[nonzero], neg[nonzero]
    pos, neg = pos.astype(np.float64), neg.astype(np.float64)
    tp, fp = xp.cumsum(pos), xp.cumsum(neg)
    tot_pos, tot_neg = float(tp[-1]) if tp.size else 0.0, float(fp[-1]) if fp.size else 0.0
    if tot_pos <= 0 or tot_neg <= 0:
        return 0.0
    # Each bucket adds a trapezoid of width neg[b] and mean height (tp_prev + tp) / 2.
    area = float((neg * (2 * tp - pos)).sum()) / 2.0
    return area / tot_pos / tot_neg


def _auc_exact_forward(pos, neg, used):
    """_auc_exact of the counts in bucket order (no reversed view: numpy's loops over a
    negative stride cost ~3x a contiguous one's, and the global AUC's 4096 buckets are
    walked every step). `used`: the only buckets that may hold a count, or None."""
    if used is not None and not used:
        return 0.0  # an empty batch: no counts
    if used is not None and len(used) <= 64:
        picked = np.array(sorted(set(used), reverse=True), dtype=np.int64)
        return _auc_exact(pos[picked], neg[picked])
    if pos.size <= 64:
        return _auc_exact(pos[::-1], neg[::-1])
    if np.minimum.reduce(pos) < 0 or np.minimum.reduce(neg) < 0:
        return None
    cum = np.cumsum(pos)
    tot_pos, tot_neg = int(cum[-1]), int(np.add.reduce(neg))
    if tot_pos <= 0 or tot_neg <= 0:
        return 0.0
    if 2 * tot_pos * tot_neg >= _EXACT_IN_FLOAT:
        return None
    # Walking down, bucket b adds neg[b] * (2 * (positives at or above b) - pos[b]); the
    # positives at or above b are tot_pos - cum[b] + pos[b]. The same integer area as
    # _auc_exact's, so the same float64 value.
    cum *= 2
    cum -= pos
    area = 2 * tot_pos * tot_neg - int(np.dot(neg, cum))
    return float(area) / 2.0 / float(tot_pos) / float(tot_neg)


def _auc_exact(pos, neg):
    """auc_from_stats' float64 result for a few buckets (at most 64, top bucket first), from
    the same sum taken in Python's integers (cheaper than a dozen numpy calls at this size);
    None where that sum is not exact in float64 (counts below zero, or too many pairs)."""
    ps, ns = pos.tolist(), neg.tolist()
    if min(ps) < 0 or min(ns) < 0:
        return None
    tot_pos, tot_neg = sum(ps), sum(ns)
    if tot_pos <= 0 or tot_neg <= 0:
        return 0.0
    if 2 * tot_pos * tot_neg >= _EXACT_IN_FLOAT:
        return None
    # Every term and partial sum is a non-negative integer below 2**53: the float64 sum of
    # auc_from_stats makes no rounding, so this integer equals it.
    tp = area = 0
    for p, n in zip(ps, ns):
        tp += p
        area += n * (2 * tp - p)
    return float(area) / 2.0 / float(tot_pos) / float(tot_neg)


def _auc_shape(op):
    predict, label = in_var(op, "Predict"), in_var(op, "Label")
    if op.attr("curve", "ROC") != "ROC":
        raise GraphError(f"auc: only curve='ROC' is implemented, got {op.attr('curve')!r}")
    t = int(op.attr("num_thresholds", 2 ** 12 - 1))
    steps = int(op.attr("slide_steps", 1))
    shapes = []
    for slot in ("StatPos", "StatNeg"):
        v = in_var(op, slot)
        want = stat_shape(steps, t, flat=len(v.shape) == 1)
        if tuple(v.shape) != want:
            raise GraphError(f"auc: {slot} {v.name}{list(v.shape)} must have shape {list(want)} "
                             f"(slide_steps={steps}, num_thresholds={t})")
        shapes.append(want)
    if predict.shape and label.shape and predict.shape[0] >= 0 and label.shape[0] >= 0 \
            and predict.shape[0] != label.shape[0]:
        raise GraphError(f"auc: Predict {predict.name}{list(predict.shape)} and Label "
                         f"{label.name}{list(label.shape)} differ in batch size")
    set_out(op, "AUC", (1,), "float64")
    set_out(op, "StatPosOut", shapes[0], "int64")
    set_out(op, "StatNegOut", shapes[1], "int64")


def stat_shape(slide_steps: int, num_thresholds: int, flat: bool) -> tuple:
    """The shape of an auc op's stat variables: Paddle 2.x's flat layout (`flat`) or Fluid 1.x's
    rows (module docstring); the global AUC's (slide_steps 0) is [1, num_thresholds + 1] in both."""
    if slide_steps == 0:
        return (1, num_thresholds + 1)
    if flat:
        return ((slide_steps + 1) * (num_thresholds + 1) + 1,)
    return (slide_steps, num_thresholds + 1)


@register_op("auc", infer_shape=_auc_shape)
def auc(ctx):
    xp = ctx.xp
    t = int(ctx.attr("num_thresholds", 2 ** 12 - 1))
    steps = int(ctx.attr("slide_steps", 1))
    used = None
    if xp is np and steps == 1:  # the AUC of this batch: only its own buckets hold counts
        pos, neg, used = bucket_counts(xp, ctx.input("Predict"), ctx.input("Label"), t, with_buckets=True)
    else:
        pos, neg = bucket_counts(xp, ctx.input("Predict"), ctx.input("Label"), t)
    if steps and ctx.input("StatPos").ndim == 1:
        _auc_paddle2(ctx, xp, t, steps, pos, neg, used)
        return
    stats = []
    for slot, batch in (("StatPos", pos), ("StatNeg", neg)):
        old = ctx.input(slot)
        if steps == 0:
            new = old + batch.reshape(1, -1)
        elif steps == 1:
            new = batch.reshape(1, -1)  # the window is this batch (bucket_counts' own new array)
        else:
            # A window of the last `steps` batches: drop the oldest row.
            new = xp.concatenate([old[1:], batch.reshape(1, -1)], axis=0)
        stats.append(new)
    ctx.set_output("StatPosOut", stats[0])
    ctx.set_output("StatNegOut", stats[1])
    # A window's rows summed (PaddleRec's slide_steps=20: 20 x 4096 per stat per step);
    # numpy's reduce without the .sum wrapper.
    totals = [s[0] if s.shape[0] == 1 else np.add.reduce(s, axis=0) if xp is np else s.sum(axis=0)
              for s in stats]
    value = auc_from_stats(xp, totals[0], totals[1], used)
    ctx.set_output("AUC", xp.asarray([value], dtype=np.float64))


def _auc_paddle2(ctx, xp, t, steps, pos, neg, used):
    """A sliding window in Paddle 2.x's flat layout (module docstring): the row the counter
    names leaves the window's sum and takes this batch, which joins the sum."""
    size = t + 1
    row = int(ctx.input("StatPos")[(steps + 1) * size]) % steps  # the positives' counter, as Paddle
    mine, window = slice(row * size, (row + 1) * size), slice(steps * size, (steps + 1) * size)
    stats = []
    for slot, batch in (("StatPos", pos), ("StatNeg", neg)):
        new = ctx.input(slot).copy()
        new[window] -= new[mine]
        new[mine] = batch
        new[window] += batch
        new[-1] += 1
        stats.append(new)
    ctx.set_output("StatPosOut", stats[0])
    ctx.set_output("StatNegOut", stats[1])
    value = auc_from_stats(xp, stats[0][window], stats[1][window], used if steps == 1 else None)
    ctx.set_output("AUC", xp.asarray([value], dtype=np.float64))


def restack_stat(arr: np.ndarray, shape: tuple, slide_steps: int, num_thresholds: int) -> np.ndarray | None:
    """A sliding auc statistic saved in one layout (module docstring) in the other's `shape`,
    the same window of batches (oldest first in Fluid 1.x's rows; the counter naming the oldest
    in Paddle 2.x's), or None where `arr` is neither layout of these settings. A save of
    fluid.layers.auc's, an earlier psjob's or Paddle 2.0-2.3's then loads into paddle.static.auc's
    program, and Paddle 2.x's into fluid.layers.auc's."""
    k, size = slide_steps, num_thresholds + 1
    rows, flat = (k, size), ((k + 1) * size + 1,)
    if k == 0 or {tuple(arr.shape), tuple(shape)} != {rows, flat}:
        return None
    if arr.shape == rows:
        out = np.zeros(flat, dtype=arr.dtype)
        out[:k * size] = arr.reshape(-1)  # rows 0..k-1, the counter k: row 0, the oldest, goes next
        out[k * size:(k + 1) * size] = arr.sum(axis=0)
        out[-1] = k
        return out
    counter = int(arr[-1])
    return np.stack([arr[((counter + i) % k) * size:((counter + i) % k + 1) * size] for i in range(k)])

