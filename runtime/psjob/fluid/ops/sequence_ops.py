"""sequence_pool: one vector per variable-length sequence of a LoD tensor.

A LoD input of N rows carries offsets [0, o1, ..., N] (its last LoD level);
sequence i is rows [o_i, o_{i+1}). Pooling is vectorized over all sequences
at once, with no Python loop per sequence, by one of two layouts:

* by position: for j < max_len, the j-th row of every sequence is one
  `take` (a strided view when all lengths are equal — the one-id slots of a
  CTR model), combined with the running result. Used while sequences are
  short (max_len <= 16) and padding stays small (num_seqs * max_len <=
  2 * rows + num_seqs). One `take` and one add per position avoid the
  per-segment overhead of `np.add.reduceat` on short sequences and numpy's
  slow paths for 2-D fancy indices and reductions over a middle axis.
* skewed lengths: a weighted `bincount` over (sequence, column) keys for
  sums (accumulating in float64) and `np.maximum.reduceat` for max.

Both work on numpy and cupy (the skewed max uses cupyx.scatter_max on GPU).
Empty sequences pool to `pad_value` and send no gradient back.

The offsets arrive as Python lists (the feed's LoD); the integer bookkeeping
derived from them is computed on the host once per LoD object and cached, so
the forward op and its gradient do not redo it.
"""
from __future__ import annotations

import importlib
import math

import numpy as np

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, set_out

POOL_TYPES = ("SUM", "AVERAGE", "SQRT", "MAX", "FIRST", "LAST")
MAX_POSITIONS = 16


def _to_place(xp, host):
    """A host (numpy) array on the place of xp."""
    return host if xp is np else xp.asarray(host)


class _Segments:
    """Host-side bookkeeping of one LoD level (offsets → lengths, layouts, ids)."""

    def __init__(self, level):
        off = np.array(level, dtype=np.int64).reshape(-1)  # a copy: the caller may reuse `level`
        # np.diff, .any(), .all() and .max() as their ufuncs (built per fed layout, per step)
        lengths = np.subtract(off[1:], off[:-1])
        if off.size < 1 or off[0] != 0 or (lengths.size and np.minimum.reduce(lengths) < 0):
            raise ValueError(f"LoD offsets {off[:8].tolist()}... must start at 0 and never decrease")
        self.offsets = off
        self.rows = int(off[-1])
        self.lengths = lengths
        self.num_seqs = lengths.shape[0]
        self.starts = off[:-1]
        self.nonempty = np.greater(lengths, 0)
        self.all_nonempty = bool(np.logical_and.reduce(self.nonempty))
        self.max_len = int(np.maximum.reduce(lengths)) if self.num_seqs else 0
        self.uniform = self.all_nonempty and self.rows == self.num_seqs * self.max_len
        self.by_position = (self.max_len <= MAX_POSITIONS
                            and self.num_seqs * self.max_len <= 2 * self.rows + self.num_seqs)
        self._cache = {}

    def _memo(self, xp, name, build):
        key = (id(xp), name)
        if key not in self._cache:
            self._cache[key] = _to_place(xp, build())
        return self._cache[key]

    def seg(self, xp):
        """Sequence index of every row."""
        return self._memo(xp, "seg", lambda: np.repeat(np.arange(self.num_seqs, dtype=np.int64),
                                                        self.lengths))

    def position_rows(self, xp):
        """[max_len, num_seqs]: row j of each sequence; `rows` (a pad row) past its end."""
        def build():
            j = np.arange(self.max_len, dtype=np.int64)[:, None]
            return np.where(j < self.lengths, self.starts + j, self.rows)
        return self._memo(xp, "position_rows", build)

    def keys(self, xp, dim):
        """bincount keys seq * dim + col of every element of a [rows, dim] input."""
        return self._memo(xp, ("keys", dim), lambda: (
            np.repeat(np.arange(self.num_seqs, dtype=np.int64) * dim, self.lengths)[:, None]
            + np.arange(dim, dtype=np.int64)).reshape(-1))

    def host_or(self, xp, name):
        return self._memo(xp, name, lambda: getattr(self, name))


# The offsets' bytes -> their _Segments. Keyed by content, not by the fed object: a CTR
# batch's slots (one offsets array each) mostly share one layout, and so do the batches after.
_CACHE: dict[bytes, _Segments] = {}


def segments(lod, what: str) -> _Segments:
    if not lod:
        raise ValueError(f"{what} needs a LoD (sequence) input: feed it with LoD offsets "
                         "(lod_level=1 data, or a LoDTensor)")
    off = np.array(lod[-1], dtype=np.int64).reshape(-1)  # a copy: the caller may refill its level
    key = off.tobytes()
    seg = _CACHE.get(key)
    if seg is None:
        if len(_CACHE) > 512:  # one entry per layout fed; drop old ones
            _CACHE.clear()
        seg = _Segments(off)
        _CACHE[key] = seg
    return seg


# -- forward -----------------------------------------------------------------------------

def _pool_type(ctx_or_op) -> str:
    pt = str(ctx_or_op.attr("pooltype", "AVERAGE")).upper()
    if pt not in POOL_TYPES:
        raise GraphError(f"sequence_pool: pooltype must be one of {POOL_TYPES}, got {pt!r}")
    return pt


def _pool_shape(op):
    x = in_var(op, "X")
    _pool_type(op)
    set_out(op, "Out", (-1,) + tuple(x.shape[1:]), x.dtype, max(x.lod_level - 1, 0))
    if op.outputs.get("MaxIndex"):
        set_out(op, "MaxIndex", (-1,) + tuple(x.shape[1:]), "int64")


def _pool_grad(op):
    ins = {"X": op.input("X"), "Out@GRAD": [grad_name(op.output("Out")[0])]}
    if _pool_type(op) == "MAX":
        ins["MaxIndex"] = op.output("MaxIndex")
    return [GradOpSpec("sequence_pool_grad", ins, {"X@GRAD": [grad_name(op.input("X")[0])]},
                       dict(op.attrs))]


def _positions(xp, x2, s: _Segments, fill):
    """Yield (j, [num_seqs, dim] rows at position j, their row numbers or None)."""
    if s.uniform:
        x3 = x2.reshape(s.num_seqs, s.max_len, x2.shape[1])
        for j in range(s.max_len):
            yield j, x3[:, j], None
        return
    padded = xp.concatenate([x2, xp.full((1, x2.shape[1]), fill, dtype=x2.dtype)])
    rows = s.position_rows(xp)
    for j in range(s.max_len):
        yield j, xp.take(padded, rows[j], axis=0), rows[j]


def _sum(xp, x2, s: _Segments):
    """Per-sequence sums [num_seqs, dim]; zeros for empty sequences."""
    if s.uniform and s.max_len == 1:
        return x2  # one row per sequence: the input itself (kernels never write inputs)
    if s.by_position:
        out = None
        for _, part, _ in _positions(xp, x2, s, 0):
            if out is None:
                out = part.copy() if s.uniform else part
            else:
                out += part
        return out
    d = x2.shape[1]
    total = xp.bincount(s.keys(xp, d), weights=x2.reshape(-1), minlength=s.num_seqs * d)
    return total.reshape(s.num_seqs, d).astype(x2.dtype, copy=False)


def _max(xp, x2, s: _Segments):
    """Per-sequence max and the row of its first occurrence (-1 for empty sequences)."""
    n, d = x2.shape
    if s.by_position:
        starts = s.host_or(xp, "starts")
        out = rows = None
        for j, part, part_rows in _positions(xp, x2, s, -np.inf):
            at = (starts + j if part_rows is None else part_rows)[:, None]
            if out is None:
                out, rows = part.copy(), xp.broadcast_to(at, part.shape).copy()
            else:
                better = part > out  # strict: the first maximum wins ties
                out = xp.where(better, part, out)
                rows = xp.where(better, at, rows)
    else:
        if xp is np:
            ne_max = np.maximum.reduceat(x2, s.starts[s.nonempty], axis=0)
        else:
            ne_index = np.cumsum(s.nonempty) - 1  # sequence → row among non-empty ones
            ne_max = xp.full((int(s.nonempty.sum()), d), -xp.inf, dtype=x2.dtype)
            importlib.import_module("cupyx").scatter_max(ne_max, xp.asarray(ne_index[s.seg(np)]), x2)
        out = xp.full((s.num_seqs, d), -np.inf, dtype=x2.dtype)
        out[s.host_or(xp, "nonempty")] = ne_max
        # First row of each (sequence, column) holding the max.
        hit = x2 == out[s.seg(xp)]
        idx = xp.where(hit, xp.arange(n, dtype=np.int64).reshape(-1, 1), n)
        rows = xp.full((s.num_seqs, d), n, dtype=np.int64)
        if xp is np:
            rows[s.nonempty] = np.minimum.reduceat(idx, s.starts[s.nonempty], axis=0)
        else:
            importlib.import_module("cupyx").scatter_min(rows, s.seg(xp), idx)
    if not s.all_nonempty:
        rows = xp.where(s.host_or(xp, "nonempty")[:, None], rows, -1)
    return out, rows


@register_op("sequence_pool", infer_shape=_pool_shape, grad=_pool_grad)
def sequence_pool(ctx):
    xp, x = ctx.xp, ctx.input("X")
    lod = ctx.input_lod("X")
    s = segments(lod, "sequence_pool")
    n = x.shape[0]
    if s.rows != n:
        raise ValueError(f"sequence_pool: LoD ends at {s.rows} but X has {n} rows")
    pt = _pool_type(ctx)
    pad = x.dtype.type(ctx.attr("pad_value", 0.0))
    d = math.prod(x.shape[1:])
    x2 = x.reshape(n, d)
    if s.max_len == 0:  # no rows at all: every sequence is empty
        out = xp.full((s.num_seqs, d), pad, dtype=x.dtype)
        if pt == "MAX":
            ctx.set_output("MaxIndex", xp.full((s.num_seqs, d), -1, dtype=np.int64))
    elif pt in ("SUM", "AVERAGE", "SQRT"):
        out = _sum(xp, x2, s)
        if pt != "SUM" and s.max_len > 1:  # out is a fresh array here: divide in place
            lens = np.maximum(s.lengths, 1).astype(x.dtype)
            out /= _to_place(xp, lens if pt == "AVERAGE" else np.sqrt(lens)).reshape(-1, 1)
    elif pt == "MAX":
        out, rows = _max(xp, x2, s)
        ctx.set_output("MaxIndex", rows)
    else:
        # Empty sequences pick a valid row here and are overwritten with pad below.
        pick = np.minimum(s.starts, n - 1) if pt == "FIRST" else np.maximum(s.offsets[1:] - 1, 0)
        out = x2[_to_place(xp, pick)]
    if 0 < s.max_len and not s.all_nonempty:
        out[~s.host_or(xp, "nonempty")] = pad
    upper = lod[:-1]
    ctx.set_output("Out", out.reshape((s.num_seqs,) + x.shape[1:]), lod=upper if upper else None)


# -- gradient ----------------------------------------------------------------------------

@register_op("sequence_pool_grad")
def sequence_pool_grad(ctx):
    xp, x, dout = ctx.xp, ctx.input("X"), ctx.input("Out@GRAD")
    s = segments(ctx.input_lod("X"), "sequence_pool_grad")
    n = x.shape[0]
    pt = _pool_type(ctx)
    dim = math.prod(x.shape[1:])
    d2 = dout.reshape(s.num_seqs, dim)
    if pt in ("SUM", "AVERAGE", "SQRT"):
        if pt != "SUM" and s.max_len > 1:
            lens = np.maximum(s.lengths, 1).astype(x.dtype)
            d2 = d2 / _to_place(xp, lens if pt == "AVERAGE" else np.sqrt(lens)).reshape(-1, 1)
        dx = d2 if s.uniform and s.max_len == 1 else xp.take(d2, s.seg(xp), axis=0)
    else:
        dx = xp.zeros((n, dim), dtype=dout.dtype)
        ne = s.host_or(xp, "nonempty")
        if pt == "MAX":
            rows = ctx.input("MaxIndex").reshape(s.num_seqs, -1)
            if not s.all_nonempty:
                rows, d2 = rows[ne], d2[ne]
            # Sequences own disjoint rows, so each (row, column) is written once.
            dx[rows, xp.arange(dim).reshape(1, -1)] = d2
        else:
            pick = s.starts if pt == "FIRST" else s.offsets[1:] - 1
            if s.all_nonempty:
                dx[_to_place(xp, pick)] = d2
            else:
                dx[_to_place(xp, pick[s.nonempty])] = d2[ne]
    ctx.set_output("X@GRAD", dx.reshape(x.shape), lod=ctx.input_lod("X"))
