"""Random ops beyond the initializers' (tensor_ops.py has uniform_random, gaussian_random):
`randint` (int64/int32 in [low, high)), `bernoulli` (0/1 with X's probabilities, X's dtype),
`sampling_id` (Fluid: one column index per row of X [N, K], drawn with the row's weights,
int64 [N]), `randperm` (a permutation of 0..n-1) and `uniform_random_batch_size_like` /
`gaussian_random_batch_size_like` (Fluid: attr shape with shape[output_dim_idx] taken from
Input's input_dim_idx size when run). Drawn on the host from the op's `seed`
(0: fresh each run, or derived from paddle.seed as tensor_ops' _host_rng does), then moved to
the place. No gradients (Paddle registers none), except for `shuffle_batch`.

`shuffle_batch` (Fluid 1.8's fluid.contrib.layers.shuffle_batch): the rows of X seen as
[prod(dims[:-1]), dims[-1]] in a random order (Out keeps X's shape and LoD), the order in
ShuffleIdx (Out row i is X row ShuffleIdx[i]). The permutation is drawn from the int64 Seed
and a new seed is written to SeedOut (the same variable), so each run shuffles differently and
a program with the same starting seed replays the same orders; Paddle's C++ engine draws other
orders from a seed than numpy does. The gradient un-permutes: dX[ShuffleIdx[i]] = dOut[i]."""
from __future__ import annotations

import numpy as np

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, same_shape, set_out
from psjob.fluid.ops.tensor_ops import _batch_size_like_shape, _host_rng, _run_shape, _to_place


def _randint_shape(op):
    low, high = int(op.attr("low", 0)), int(op.attr("high"))
    if low >= high:
        raise GraphError(f"randint: low ({low}) must be below high ({high})")
    shape = op.attr("shape") or []
    if op.input("ShapeTensor") or op.input("ShapeTensorList"):  # sizes read when the op runs
        n = len(op.input("ShapeTensorList")) or in_var(op, "ShapeTensor").shape[0]
        shape = [d if d > 0 else -1 for d in shape] if len(shape) == n else [-1] * n
    set_out(op, "Out", shape, op.attr("dtype", "int64"))


@register_op("randint", infer_shape=_randint_shape)
def randint(ctx):
    arr = _host_rng(ctx).integers(int(ctx.attr("low", 0)), int(ctx.attr("high")), size=_run_shape(ctx))
    ctx.set_output("Out", _to_place(ctx, arr.astype(ctx.attr("dtype", "int64"))))


@register_op("randperm", infer_shape=lambda op: set_out(op, "Out", [int(op.attr("n"))], op.attr("dtype", "int64")))
def randperm(ctx):
    arr = _host_rng(ctx).permutation(int(ctx.attr("n")))
    ctx.set_output("Out", _to_place(ctx, arr.astype(ctx.attr("dtype", "int64"))))


@register_op("bernoulli", infer_shape=same_shape())
def bernoulli(ctx):
    x = ctx.input("X")
    p = np.asarray(x if ctx.xp is np else ctx.xp.asnumpy(x))
    if p.size and (p.min() < 0 or p.max() > 1):
        raise ValueError("bernoulli: every probability in x must lie in [0, 1]")
    draw = _host_rng(ctx).random(p.shape) < p
    ctx.set_output("Out", _to_place(ctx, draw.astype(p.dtype)))


def _sampling_id_shape(op):
    x = in_var(op, "X")
    if len(x.shape) != 2:
        raise GraphError(f"sampling_id: x {x.name}{list(x.shape)} must be 2-D [batch, classes]")
    set_out(op, "Out", [x.shape[0]], "int64")


@register_op("sampling_id", infer_shape=_sampling_id_shape)
def sampling_id(ctx):
    """Paddle's kernel: a uniform draw r in [min, max); the first column whose running sum of
    the row exceeds r (the last column if none does)."""
    x = ctx.input("X")
    p = np.asarray(x if ctx.xp is np else ctx.xp.asnumpy(x), dtype=np.float64)
    r = _host_rng(ctx).uniform(float(ctx.attr("min", 0.0)), float(ctx.attr("max", 1.0)), size=(p.shape[0], 1))
    hit = np.cumsum(p, axis=1) > r
    out = np.where(hit.any(axis=1), hit.argmax(axis=1), p.shape[1] - 1).astype(np.int64)
    ctx.set_output("Out", _to_place(ctx, out))


def _batch_shape(ctx):
    shape = list(ctx.attr("shape"))
    shape[int(ctx.attr("output_dim_idx", 0))] = ctx.input("Input").shape[int(ctx.attr("input_dim_idx", 0))]
    return tuple(shape)


@register_op("uniform_random_batch_size_like", infer_shape=_batch_size_like_shape)
def uniform_random_batch_size_like(ctx):
    arr = _host_rng(ctx).uniform(float(ctx.attr("min", -1.0)), float(ctx.attr("max", 1.0)), size=_batch_shape(ctx))
    ctx.set_output("Out", _to_place(ctx, arr.astype(ctx.attr("dtype", "float32"))))


@register_op("gaussian_random_batch_size_like", infer_shape=_batch_size_like_shape)
def gaussian_random_batch_size_like(ctx):
    arr = _host_rng(ctx).normal(float(ctx.attr("mean", 0.0)), float(ctx.attr("std", 1.0)), size=_batch_shape(ctx))
    ctx.set_output("Out", _to_place(ctx, arr.astype(ctx.attr("dtype", "float32"))))


# -- shuffle_batch -----------------------------------------------------------------------

def _shuffle_batch_shape(op):
    x = in_var(op, "X")
    if not x.shape:
        raise GraphError(f"shuffle_batch: x {x.name} must have at least one dimension")
    set_out(op, "Out", x.shape, x.dtype, x.lod_level)
    rows = -1 if any(d < 0 for d in x.shape[:-1]) else int(np.prod(x.shape[:-1], dtype=np.int64))
    set_out(op, "ShuffleIdx", [rows], "int64")
    set_out(op, "SeedOut", [1], "int64")


def _shuffle_batch_grad(op):
    return [GradOpSpec("shuffle_batch_grad",
                       {"ShuffleIdx": op.output("ShuffleIdx"), "Out@GRAD": [grad_name(n) for n in op.output("Out")]},
                       {"X@GRAD": [grad_name(n) for n in op.input("X")]}, dict(op.attrs))]


@register_op("shuffle_batch", infer_shape=_shuffle_batch_shape, grad=_shuffle_batch_grad,
             no_grad_inputs=("Seed",))
def shuffle_batch(ctx):
    x = ctx.input("X")
    seed = int(np.asarray(ctx.input("Seed") if ctx.xp is np else ctx.xp.asnumpy(ctx.input("Seed"))).reshape(-1)[0]) \
        if ctx.has_input("Seed") else int(ctx.attr("startup_seed", 0))
    rng = np.random.default_rng(seed % 2**63)
    rows = int(np.prod(x.shape[:-1], dtype=np.int64)) if x.ndim else 0
    idx = rng.permutation(rows).astype(np.int64)
    flat = x.reshape(rows, x.shape[-1] if x.ndim else 1)
    ctx.set_output("Out", flat[_to_place(ctx, idx)].reshape(x.shape), lod=ctx.input_lod("X"))
    ctx.set_output("ShuffleIdx", _to_place(ctx, idx))
    ctx.set_output("SeedOut", _to_place(ctx, np.array([rng.integers(0, 2**31 - 1)], dtype=np.int64)))


@register_op("shuffle_batch_grad")
def shuffle_batch_grad(ctx):
    dout, idx = ctx.input("Out@GRAD"), ctx.input("ShuffleIdx")
    flat = dout.reshape(idx.shape[0], -1)
    dx = ctx.xp.empty_like(flat)
    dx[idx] = flat
    ctx.set_output("X@GRAD", dx.reshape(dout.shape))
