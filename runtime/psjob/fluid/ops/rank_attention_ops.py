"""`rank_attention`: Paddle's rank-aware attention op (fluid.contrib.layers.rank_attention in
Paddle 1.8, paddle.incubate.layers.rank_attention in 2.x; used by PaddleRec's rank models on
GPU). Paddle has only a CUDA kernel; psjob's follows the semantics its kernel and its op test
define:

X [N, D] holds every instance of a page view, RankOffset [N, 2 * max_rank + 1] (int32) each
instance's rank (column 0, 1-based; <= 0 for none) and, for k in 0..max_rank-1, the rank of the
page view's instance shown at position k + 1 (column 2k + 1) and its row in X (column 2k + 2).
RankParam [max_rank * max_rank * D, O] holds one [D, O] block per (own rank, other rank) pair.
For instance i and position k, when both ranks are positive:

    Out[i] += X[RankOffset[i, 2k + 2]] @ RankParam block (rank_i - 1) * max_rank + (rank_k - 1)

and nothing otherwise. As Paddle's, the gradient goes to RankParam only (X gets none).
"""
from __future__ import annotations

import numpy as np

from psjob.fluid.core import scatter_add
from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, set_out


def _shape(op):
    x, ro, p = in_var(op, "X"), in_var(op, "RankOffset"), in_var(op, "RankParam")
    k = int(op.attr("MaxRank", 3))
    if len(x.shape) != 2 or len(ro.shape) != 2 or len(p.shape) != 2:
        raise GraphError(f"rank_attention: X {x.name}{list(x.shape)}, RankOffset {ro.name}{list(ro.shape)} and "
                         f"RankParam {p.name}{list(p.shape)} must be 2-D")
    if ro.shape[1] >= 0 and ro.shape[1] != 2 * k + 1:
        raise GraphError(f"rank_attention: RankOffset {ro.name}{list(ro.shape)} must have 2 * MaxRank + 1 = "
                         f"{2 * k + 1} columns")
    if x.shape[1] >= 0 and p.shape[0] >= 0 and p.shape[0] != x.shape[1] * k * k:
        raise GraphError(f"rank_attention: RankParam {p.name}{list(p.shape)} must have D * MaxRank^2 = "
                         f"{x.shape[1] * k * k} rows for X {x.name}{list(x.shape)}")
    set_out(op, "Out", [x.shape[0], p.shape[1]], x.dtype)


def _pairs(ctx):
    """Per block b: (instance rows i, rows of X they read) of every valid (i, k) using block b."""
    ro = np.asarray(ctx.input("RankOffset") if ctx.xp is np else ctx.xp.asnumpy(ctx.input("RankOffset")))
    k = int(ctx.attr("MaxRank", 3))
    n = ctx.input("X").shape[0]
    if ro.shape != (n, 2 * k + 1):
        raise ValueError(f"rank_attention: RankOffset has shape {list(ro.shape)}, expected [{n}, {2 * k + 1}]")
    own = ro[:, 0].astype(np.int64) - 1
    other = ro[:, 1::2][:, :k].astype(np.int64) - 1
    rows = ro[:, 2::2][:, :k].astype(np.int64)
    valid = (own[:, None] >= 0) & (other >= 0)
    if np.any(valid & ((rows < 0) | (rows >= n))):
        raise ValueError(f"rank_attention: RankOffset names an instance row outside X's {n} rows")
    if np.any(valid & ((own[:, None] >= k) | (other >= k))):
        raise ValueError(f"rank_attention: a rank in RankOffset exceeds MaxRank {k}")
    block = own[:, None] * k + other
    inst = np.broadcast_to(np.arange(n)[:, None], block.shape)
    for b in np.unique(block[valid]):
        sel = valid & (block == b)
        yield int(b), inst[sel], rows[sel]


def _to(xp, host):
    return host if xp is np else xp.asarray(host)


@register_op("rank_attention", infer_shape=_shape, no_grad_inputs=("X", "RankOffset"),
             grad=lambda op: [GradOpSpec("rank_attention_grad",
                                         {"X": op.input("X"), "RankOffset": op.input("RankOffset"),
                                          "RankParam": op.input("RankParam"),
                                          "Out@GRAD": [grad_name(op.output("Out")[0])]},
                                         {"RankParam@GRAD": [grad_name(op.input("RankParam")[0])]},
                                         dict(op.attrs))])
def rank_attention(ctx):
    xp, x, p = ctx.xp, ctx.input("X"), ctx.input("RankParam")
    d = x.shape[1]
    blocks = p.reshape(-1, d, p.shape[1])
    out = xp.zeros((x.shape[0], p.shape[1]), dtype=x.dtype)
    for b, inst, rows in _pairs(ctx):
        scatter_add(xp, out, _to(xp, inst), x[_to(xp, rows)] @ blocks[b])
    ctx.set_output("Out", out)


@register_op("rank_attention_grad")
def rank_attention_grad(ctx):
    xp, x, p, dout = ctx.xp, ctx.input("X"), ctx.input("RankParam"), ctx.input("Out@GRAD")
    d = x.shape[1]
    dblocks = xp.zeros((p.shape[0] // d, d, p.shape[1]), dtype=p.dtype)
    for b, inst, rows in _pairs(ctx):
        dblocks[b] = x[_to(xp, rows)].T @ dout[_to(xp, inst)]
    ctx.set_output("RankParam@GRAD", dblocks.reshape(p.shape))
