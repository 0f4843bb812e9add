"""Tensor creation, copying, summing and scaling ops (and the random initializers).

Random initializer ops draw from a numpy Generator seeded by the op's `seed`
attribute, on the host, then move the result to the place: the same seed gives
the same values on CPU and GPU, in every process — the transpiler relies on
that so pservers and trainers agree on initial parameters. An unseeded op run
after paddle.seed draws from a seed derived from that value (_host_rng).
"""
from __future__ import annotations

import zlib

import numpy as np

from psjob.fluid import framework
from psjob.fluid.core import SelectedRows
from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, same_shape, set_out


def _shape_from_attr(op):
    set_out(op, "Out", op.attr("shape"), op.attr("dtype", "float32"))


def _run_shape(ctx):
    """The output shape of fill_constant and the random ops, in Paddle's order: the ShapeTensor
    (a 1-D int tensor), else the ShapeTensorList (one one-element int tensor per dimension), else
    the attribute."""
    if ctx.has_input("ShapeTensor"):
        return tuple(int(d) for d in ctx.input("ShapeTensor").reshape(-1))
    if ctx.has_input("ShapeTensorList"):
        return tuple(int(t.reshape(-1)[0]) for t in ctx.input_list("ShapeTensorList"))
    return tuple(ctx.attr("shape"))


def _host_rng(ctx):
    seed = int(ctx.attr("seed", 0) or 0)
    if not seed and framework._global_seed:
        # An op built before paddle.seed ran (PaddleRec's static_trainer builds its model, then
        # seeds, then runs the startup program): Paddle draws it from the generator that
        # paddle.seed reset, so the run is reproducible; here, a seed derived from paddle.seed's
        # value and the output's name, as the initializers derive one from a program's seed.
        name = ctx.output_name("Out")
        seed = (framework._global_seed * 1_000_003 + zlib.crc32(name.encode())) % (2**31 - 1) or 1
    return np.random.default_rng(seed if seed else None)


def _to_place(ctx, arr):
    return arr if ctx.xp is np else ctx.xp.asarray(arr)


@register_op("fill_constant", infer_shape=_shape_from_attr)
def fill_constant(ctx):
    xp = ctx.xp
    value = ctx.attr("value", 0.0)
    if ctx.has_input("ValueTensor"):  # Fluid 1.8's value given as a tensor
        value = ctx.input("ValueTensor").reshape(-1)[0].item()
    ctx.set_output("Out", xp.full(_run_shape(ctx), value, dtype=ctx.attr("dtype", "float32")))


def _batch_size_like_shape(op):
    x, shape = in_var(op, "Input"), list(op.attr("shape"))
    i, o = int(op.attr("input_dim_idx", 0)), int(op.attr("output_dim_idx", 0))
    if not (0 <= i < len(x.shape) and 0 <= o < len(shape)):
        raise GraphError(f"fill_constant_batch_size_like: input_dim_idx {i} or output_dim_idx {o} is "
                         f"outside Input {x.name}{list(x.shape)} or shape {shape}")
    shape[o] = x.shape[i]
    set_out(op, "Out", shape, op.attr("dtype", "float32"))


@register_op("fill_constant_batch_size_like", infer_shape=_batch_size_like_shape)
def fill_constant_batch_size_like(ctx):
    """`value` in attr shape, with shape[output_dim_idx] = Input's size at input_dim_idx: for a
    sequence input (LoD) at dimension 0 that is its number of sequences, as in Paddle."""
    x, shape = ctx.input("Input"), list(ctx.attr("shape"))
    i, o = int(ctx.attr("input_dim_idx", 0)), int(ctx.attr("output_dim_idx", 0))
    lod = ctx.input_lod("Input")
    shape[o] = len(lod[-1]) - 1 if lod and i == 0 else x.shape[i]
    ctx.set_output("Out", ctx.xp.full(tuple(shape), ctx.attr("value", 0.0), dtype=ctx.attr("dtype", "float32")))


@register_op("uniform_random", infer_shape=_shape_from_attr)
def uniform_random(ctx):
    rng = _host_rng(ctx)
    arr = rng.uniform(ctx.attr("min", -1.0), ctx.attr("max", 1.0), size=_run_shape(ctx))
    ctx.set_output("Out", _to_place(ctx, arr.astype(ctx.attr("dtype", "float32"))))


@register_op("gaussian_random", infer_shape=_shape_from_attr)
def gaussian_random(ctx):
    rng = _host_rng(ctx)
    arr = rng.normal(ctx.attr("mean", 0.0), ctx.attr("std", 1.0), size=_run_shape(ctx))
    ctx.set_output("Out", _to_place(ctx, arr.astype(ctx.attr("dtype", "float32"))))


@register_op("truncated_gaussian_random", infer_shape=_shape_from_attr)
def truncated_gaussian_random(ctx):
    # Redraw values beyond two standard deviations, as Paddle's op does.
    rng = _host_rng(ctx)
    mean, std = ctx.attr("mean", 0.0), ctx.attr("std", 1.0)
    shape = tuple(ctx.attr("shape"))
    arr = rng.normal(size=shape)
    bad = np.abs(arr) > 2.0
    while bad.any():
        arr[bad] = rng.normal(size=int(bad.sum()))
        bad = np.abs(arr) > 2.0
    ctx.set_output("Out", _to_place(ctx, (arr * std + mean).astype(ctx.attr("dtype", "float32"))))


@register_op("assign", infer_shape=same_shape(),
             grad=lambda op: [GradOpSpec("assign", {"X": [grad_name(op.output("Out")[0])]},
                                         {"Out": [grad_name(op.input("X")[0])]})])
def assign(ctx):
    x = ctx.input("X")
    ctx.set_output("Out", x.copy() if hasattr(x, "copy") else x, lod=ctx.input_lod("X"))


@register_op("share_data", infer_shape=same_shape())
def share_data(ctx):
    """Paddle's share_data: Out is X itself, no copy (the trainer pass sends a gradient under
    a per-trainer name this way, and the gradient keeps its own name). Kernels never
    write their inputs, so the two names cannot drift apart."""
    ctx.set_output("Out", ctx.input("X"), lod=ctx.input_lod("X"))


def _sum_shape(op):
    x = in_var(op, "X")
    set_out(op, "Out", x.shape, x.dtype, x.lod_level)
    # A sum of SelectedRows (sparse grads) stays SelectedRows.
    out = op.block._find_var_recursive(op.output("Out")[0])
    if out is not None:
        out.type = x.type


def _sum_grad(op):
    g = grad_name(op.output("Out")[0])
    return [GradOpSpec("assign", {"X": [g]}, {"Out": [grad_name(n)]}) for n in op.input("X")]


@register_op("sum", infer_shape=_sum_shape, grad=_sum_grad)
def sum_op(ctx):
    xs = ctx.input_list("X")
    xp = ctx.xp
    if any(isinstance(x, SelectedRows) for x in xs):
        sparse = [x for x in xs if isinstance(x, SelectedRows)]
        dense = [x for x in xs if not isinstance(x, SelectedRows)]
        if dense:
            out = dense[0].copy()
            for d in dense[1:]:
                out += d
            for s in sparse:
                from psjob.fluid.core import scatter_add
                scatter_add(xp, out, s.rows, s.values)
            ctx.set_output("Out", out)
        else:
            ctx.set_output("Out", SelectedRows(xp.concatenate([s.rows for s in sparse]),
                                               xp.concatenate([s.values for s in sparse]),
                                               sparse[0].height))
        return
    if isinstance(xs[0], list):  # tensor arrays' gradients: slot by slot, empty slots are zero
        size = max(len(x) for x in xs)
        slots = [[x[k] for x in xs if k < len(x) and x[k] is not None] for k in range(size)]
        ctx.set_output("Out", [sum(s[1:], s[0].copy()) if s else None for s in slots])
        return
    out = xs[0].copy()
    for x in xs[1:]:
        out += x
    ctx.set_output("Out", out)


def _scale_grad(op):
    # a ScaleTensor (Paddle 1.8's scale given as a Variable) is read by the gradient op too
    extra = {"ScaleTensor": op.input("ScaleTensor")} if op.input("ScaleTensor") else {}
    return [GradOpSpec("scale", {"X": [grad_name(op.output("Out")[0])], **extra},
                       {"Out": [grad_name(op.input("X")[0])]},
                       {"scale": op.attr("scale", 1.0), "bias": 0.0})]


@register_op("scale", infer_shape=same_shape(), grad=_scale_grad, no_grad_inputs=("ScaleTensor",))
def scale(ctx):
    x = ctx.input("X")
    s, b = ctx.attr("scale", 1.0), ctx.attr("bias", 0.0)
    if ctx.has_input("ScaleTensor"):  # read when the op runs, as Paddle's
        s = float(ctx.input("ScaleTensor").reshape(-1)[0])
    after = ctx.attr("bias_after_scale", True)
    if isinstance(x, SelectedRows):
        if b:
            raise GraphError("scale with a bias is not defined for SelectedRows")
        ctx.set_output("Out", SelectedRows(x.rows, x.values * x.values.dtype.type(s), x.height, unique=x.unique))
        return
    dt = x.dtype.type
    out = x * dt(s) + dt(b) if after else (x + dt(b)) * dt(s)
    ctx.set_output("Out", out, lod=ctx.input_lod("X"))


def _cast_shape(op):
    x = in_var(op, "X")
    set_out(op, "Out", x.shape, op.attr("out_dtype", "float32"), x.lod_level)


@register_op("cast", infer_shape=_cast_shape,
             grad=lambda op: [GradOpSpec("cast", {"X": [grad_name(op.output("Out")[0])]},
                                         {"Out": [grad_name(op.input("X")[0])]},
                                         {"out_dtype": op.attr("in_dtype", "float32")})])
def cast(ctx):
    ctx.set_output("Out", ctx.input("X").astype(ctx.attr("out_dtype")), lod=ctx.input_lod("X"))


@register_op("increment", infer_shape=same_shape())
def increment(ctx):
    x = ctx.input("X")
    ctx.set_output("Out", x + x.dtype.type(ctx.attr("step", 1.0)))
