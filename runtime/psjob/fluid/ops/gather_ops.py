"""`gather` and `multinomial` (Paddle's ops behind paddle.gather and paddle.multinomial).

* `gather`: X's slices at Index along `axis` (attribute, default 0); Index is flattened to
  one dimension (Paddle takes [K] and [K, 1] alike), so Out is X's shape with that axis K
  long. The gradient adds Out@GRAD into zeros of X's shape (repeated indices accumulate).
* `multinomial`: `num_samples` category indices (int64) drawn per row of X, a 1-D or 2-D
  array of non-negative weights (normalised per row), with or without `replacement`; random
  by design, from the host's generator (fresh each run, as Paddle's unseeded draw).
"""
from __future__ import annotations

import numpy as np

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import in_var, register_op, set_out, simple_grad
from psjob.fluid.ops.shape_ops import _norm_axis

_host_rng = np.random.default_rng()


def _gather_shape(op):
    x, index = in_var(op, "X"), in_var(op, "Index")
    if index.dtype not in ("int32", "int64"):
        raise GraphError(f"gather: Index {index.name} must be int32 or int64, got {index.dtype}")
    if len(index.shape) > 2 or (len(index.shape) == 2 and index.shape[1] != 1):
        raise GraphError(f"gather: Index {index.name}{list(index.shape)} must be [K] or [K, 1]")
    axis = _norm_axis(op.attr("axis", 0), len(x.shape), "gather")
    shape = list(x.shape)
    shape[axis] = index.shape[0]
    set_out(op, "Out", shape, x.dtype)


@register_op("gather", infer_shape=_gather_shape, grad=simple_grad("gather_grad", inputs=("X", "Index"),
                                                                      grad_of=("X",)),
             no_grad_inputs=("Index",))
def gather(ctx):
    x, index = ctx.input("X"), ctx.input("Index").reshape(-1)
    axis = int(ctx.attr("axis", 0)) % x.ndim
    if index.size and (index.min() < -x.shape[axis] or index.max() >= x.shape[axis]):
        raise IndexError(f"gather: an index is outside [0, {x.shape[axis]}) along axis {axis}")
    ctx.set_output("Out", ctx.xp.take(x, index, axis=axis))


@register_op("gather_grad")
def gather_grad(ctx):
    xp, x, index = ctx.xp, ctx.input("X"), ctx.input("Index").reshape(-1)
    axis = int(ctx.attr("axis", 0)) % x.ndim
    dx = xp.zeros_like(x)
    where = [slice(None)] * x.ndim
    where[axis] = index
    xp.add.at(dx, tuple(where), ctx.input("Out@GRAD"))
    ctx.set_output("X@GRAD", dx)


def _multinomial_shape(op):
    x = in_var(op, "X")
    if len(x.shape) not in (1, 2):
        raise GraphError(f"multinomial: X {x.name}{list(x.shape)} must be 1-D or 2-D")
    n = int(op.attr("num_samples", 1))
    if n < 1:
        raise GraphError(f"multinomial: num_samples must be positive, got {n}")
    if not op.attr("replacement", False) and x.shape[-1] >= 0 and n > x.shape[-1]:
        raise GraphError(f"multinomial: {n} samples without replacement from {x.shape[-1]} categories")
    set_out(op, "Out", list(x.shape[:-1]) + [n], "int64")


@register_op("multinomial", infer_shape=_multinomial_shape, no_grad_inputs=("X",))
def multinomial(ctx):
    probs = np.asarray(ctx.input("X") if ctx.xp is np else ctx.xp.asnumpy(ctx.input("X")), dtype=np.float64)
    n, replace = int(ctx.attr("num_samples", 1)), bool(ctx.attr("replacement", False))
    rows = probs.reshape(-1, probs.shape[-1])
    if (rows < 0).any() or not np.isfinite(rows).all() or (rows.sum(axis=1) <= 0).any():
        raise ValueError("multinomial: every row of X must be finite, non-negative weights with a positive sum")
    out = np.stack([_host_rng.choice(row.size, n, replace=replace, p=row / row.sum()) for row in rows])
    out = out.reshape(probs.shape[:-1] + (n,)).astype(np.int64)
    ctx.set_output("Out", out if ctx.xp is np else ctx.xp.asarray(out))
