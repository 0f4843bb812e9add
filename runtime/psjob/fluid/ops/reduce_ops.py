"""reduce_sum / reduce_mean / reduce_max / reduce_min / reduce_prod over `dim` (a list of axes), or
over everything with `reduce_all`. As in Fluid 1.x, a full reduction without keep_dim
gives shape [1], never a 0-D array, so the result can be a loss. The gradient of max and
min goes to every element equal to the result, as Paddle's reduce_max_grad (its
x == out mask) gives it; prod's is dout * out / x, as Paddle's reduce_prod_grad computes it."""
from __future__ import annotations

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, set_out


def reduce_axes(ndim, dims, reduce_all, what):
    if reduce_all or ndim == 0:
        return tuple(range(ndim))
    axes = []
    for d in dims:
        d = int(d)
        if not -ndim <= d < ndim:
            raise GraphError(f"{what}: dim {d} is out of range for a {ndim}-D input")
        axes.append(d + ndim if d < 0 else d)
    return tuple(sorted(set(axes)))


def _out_shape(shape, axes, keep_dim):
    if keep_dim:
        return [1 if i in axes else d for i, d in enumerate(shape)]
    out = [d for i, d in enumerate(shape) if i not in axes]
    return out or [1]


def _reduce_shape(op):
    x = in_var(op, "X")
    axes = reduce_axes(len(x.shape), op.attr("dim", [0]), op.attr("reduce_all", False), op.type)
    set_out(op, "Out", _out_shape(list(x.shape), axes, op.attr("keep_dim", False)), x.dtype)


def _reduce_grad(op):
    return [GradOpSpec(op.type + "_grad",
                       {"X": op.input("X"), "Out@GRAD": [grad_name(op.output("Out")[0])]},
                       {"X@GRAD": [grad_name(op.input("X")[0])]}, dict(op.attrs))]


def _make(kind):
    def forward(ctx):
        x = ctx.input("X")
        axes = reduce_axes(x.ndim, ctx.attr("dim", [0]), ctx.attr("reduce_all", False), kind)
        fn = {"reduce_sum": x.sum, "reduce_mean": x.mean, "reduce_max": x.max, "reduce_min": x.min,
              "reduce_prod": x.prod}[kind]
        out = fn(axis=axes, keepdims=True)
        # Paddle's reduce ops pass X's LoD on when they keep the first dimension (the rows).
        keeps_rows = 0 not in axes and not ctx.attr("reduce_all", False)
        ctx.set_output("Out", out.reshape(_out_shape(list(x.shape), axes, ctx.attr("keep_dim", False))),
                       lod=ctx.input_lod("X") if keeps_rows else None)

    def backward(ctx):
        xp, x, dout = ctx.xp, ctx.input("X"), ctx.input("Out@GRAD")
        axes = reduce_axes(x.ndim, ctx.attr("dim", [0]), ctx.attr("reduce_all", False), kind)
        g = dout.reshape(_out_shape(list(x.shape), axes, True))
        if kind == "reduce_prod":
            ctx.set_output("X@GRAD", (g * x.prod(axis=axes, keepdims=True) / x).astype(x.dtype, copy=False))
            return
        if kind in ("reduce_max", "reduce_min"):
            out = x.max(axis=axes, keepdims=True) if kind == "reduce_max" else x.min(axis=axes, keepdims=True)
            ctx.set_output("X@GRAD", (g * (x == out)).astype(x.dtype, copy=False))
            return
        if kind == "reduce_mean":
            count = 1
            for a in axes:
                count *= x.shape[a]
            g = g / x.dtype.type(max(count, 1))
        ctx.set_output("X@GRAD", xp.broadcast_to(g, x.shape).astype(x.dtype, copy=True))

    register_op(kind, infer_shape=_reduce_shape, grad=_reduce_grad)(forward)
    register_op(kind + "_grad")(backward)


_make("reduce_sum")
_make("reduce_mean")
_make("reduce_max")
_make("reduce_min")
_make("reduce_prod")
