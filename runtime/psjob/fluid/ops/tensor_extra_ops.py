"""Ops behind more of Paddle 2.x's tensor functions, as PaddleRec's model zoo uses them
(`paddle.bmm`, `tril`/`triu`, `masked_select`, `shape`, `arange`, `tile`, `expand`,
`paddle.nn.functional.normalize`). Semantics follow Paddle's operators of the same type:

* `bmm`: Out[b] = X[b] @ Y[b] for 3-D X [B, M, K] and Y [B, K, N] (no broadcasting).
* `tril_triu`: keeps the lower (`lower`=True: column - row <= `diagonal`) or upper
  (column - row >= `diagonal`) triangle of the last two dimensions, zeroes the rest.
* `masked_select`: the elements of X where the bool Mask is true, as a 1-D Y of unknown
  length; X and Mask broadcast together (Paddle 2.6+), in row-major order.
* `shape`: the runtime shape of Input as an int32 [rank] tensor (no gradient).
* `range` (Start, End, Step tensors; Out dtype is Start's) and `tile` (`repeat_times`, the
  shorter of x's rank and repeat_times padded with leading 1s; the gradient sums the copies).
* `p_norm`: the `porder`-norm of X along `axis` (or of all of X when `asvector`):
  (sum |x|^p)^(1/p); p = inf / -inf is max / min |x|, p = 0 counts the non-zeros. The
  gradient is Paddle's: |x|^(p-1) sign(x) / (norm^(p-1) + epsilon) * dOut.
* `inverse`: Output = Input^-1 over the last two dimensions (square, batched; a singular
  matrix is an error); the gradient is Paddle's: dInput = -Output^T dOutput Output^T.
"""
from __future__ import annotations

import math

from psjob.fluid.framework import GraphError
from psjob.fluid.ops import broadcast
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, set_out, simple_grad
from psjob.fluid.ops.shape_ops import _norm_axis


def _known_mismatch(a, b):
    return a >= 0 and b >= 0 and a != b


# -- bmm ---------------------------------------------------------------------------------

def _bmm_shape(op):
    x, y = in_var(op, "X"), in_var(op, "Y")
    if len(x.shape) != 3 or len(y.shape) != 3:
        raise GraphError(f"bmm: X {x.name}{list(x.shape)} and Y {y.name}{list(y.shape)} must both be 3-D "
                         "([batch, M, K] and [batch, K, N])")
    if _known_mismatch(x.shape[0], y.shape[0]):
        raise GraphError(f"bmm: batch sizes differ: X {x.name}{list(x.shape)}, Y {y.name}{list(y.shape)}")
    if _known_mismatch(x.shape[2], y.shape[1]):
        raise GraphError(f"bmm: X {x.name}{list(x.shape)} has {x.shape[2]} columns but Y "
                         f"{y.name}{list(y.shape)} has {y.shape[1]} rows")
    batch = x.shape[0] if x.shape[0] >= 0 else y.shape[0]
    set_out(op, "Out", (batch, x.shape[1], y.shape[2]), x.dtype)


def _bmm_grad(op):
    x, y, out = op.input("X")[0], op.input("Y")[0], op.output("Out")[0]
    return [GradOpSpec("bmm_grad", {"X": [x], "Y": [y], "Out@GRAD": [grad_name(out)]},
                       {"X@GRAD": [grad_name(x)], "Y@GRAD": [grad_name(y)]})]


@register_op("bmm", infer_shape=_bmm_shape, grad=_bmm_grad)
def bmm(ctx):
    x, y = ctx.input("X"), ctx.input("Y")
    if x.shape[0] != y.shape[0] or x.shape[2] != y.shape[1]:
        raise ValueError(f"bmm: X of shape {x.shape} and Y of shape {y.shape} do not multiply batch-wise")
    ctx.set_output("Out", x @ y)


@register_op("bmm_grad")
def bmm_grad(ctx):
    xp, x, y, dout = ctx.xp, ctx.input("X"), ctx.input("Y"), ctx.input("Out@GRAD")
    if ctx.has_output("X@GRAD"):
        ctx.set_output("X@GRAD", dout @ xp.swapaxes(y, 1, 2))
    if ctx.has_output("Y@GRAD"):
        ctx.set_output("Y@GRAD", xp.swapaxes(x, 1, 2) @ dout)


# -- tril_triu ---------------------------------------------------------------------------

def _tril_triu_shape(op):
    x = in_var(op, "X")
    if len(x.shape) < 2:
        raise GraphError(f"{'tril' if op.attr('lower', True) else 'triu'}: input {x.name}{list(x.shape)} "
                         "must have at least 2 dimensions")
    set_out(op, "Out", x.shape, x.dtype)


def _triangle(xp, shape, diagonal, lower):
    """Bool mask over the last two dimensions of `shape`: the kept triangle."""
    rows, cols = shape[-2], shape[-1]
    offset = xp.arange(cols)[None, :] - xp.arange(rows)[:, None]
    return offset <= diagonal if lower else offset >= diagonal


def _masked_by_triangle(ctx, value):
    keep = _triangle(ctx.xp, value.shape, int(ctx.attr("diagonal", 0)), bool(ctx.attr("lower", True)))
    return ctx.xp.where(keep, value, ctx.xp.zeros((), dtype=value.dtype))


@register_op("tril_triu", infer_shape=_tril_triu_shape,
             grad=simple_grad("tril_triu_grad", inputs=(), outputs=("Out",), grad_of=("X",)))
def tril_triu(ctx):
    ctx.set_output("Out", _masked_by_triangle(ctx, ctx.input("X")))


@register_op("tril_triu_grad")
def tril_triu_grad(ctx):
    ctx.set_output("X@GRAD", _masked_by_triangle(ctx, ctx.input("Out@GRAD")))


# -- masked_select -----------------------------------------------------------------------

def _masked_select_shape(op):
    x, mask = in_var(op, "X"), in_var(op, "Mask")
    if mask.dtype != "bool":
        raise GraphError(f"masked_select: Mask {mask.name} must be bool, got {mask.dtype}")
    try:
        broadcast.out_shape(x.shape, mask.shape)
    except ValueError as exc:
        raise GraphError(f"masked_select: X {x.name}{list(x.shape)} and Mask {mask.name}{list(mask.shape)} "
                         f"do not broadcast: {exc}") from None
    set_out(op, "Y", (-1,), x.dtype)


def _masked_select_grad(op):
    x, y = op.input("X")[0], op.output("Y")[0]
    return [GradOpSpec("masked_select_grad", {"X": [x], "Mask": op.input("Mask"), "Y@GRAD": [grad_name(y)]},
                       {"X@GRAD": [grad_name(x)]})]


def _broadcast_pair(xp, x, mask):
    shape = broadcast.out_shape(x.shape, mask.shape)
    return xp.broadcast_to(x, shape), xp.broadcast_to(mask, shape)


@register_op("masked_select", infer_shape=_masked_select_shape, grad=_masked_select_grad,
             no_grad_inputs=("Mask",))
def masked_select(ctx):
    xb, mb = _broadcast_pair(ctx.xp, ctx.input("X"), ctx.input("Mask"))
    ctx.set_output("Y", xb[mb])


@register_op("masked_select_grad")
def masked_select_grad(ctx):
    xp, x, mask, dy = ctx.xp, ctx.input("X"), ctx.input("Mask"), ctx.input("Y@GRAD")
    xb, mb = _broadcast_pair(xp, x, mask)
    dxb = xp.zeros(xb.shape, dtype=x.dtype)
    dxb[mb] = dy
    aligned = (1,) * (xb.ndim - x.ndim) + tuple(x.shape)
    ctx.set_output("X@GRAD", broadcast.reduce_grad(dxb, aligned, x.shape))


# -- shape -------------------------------------------------------------------------------

def _shape_shape(op):
    set_out(op, "Out", (len(in_var(op, "Input").shape),), "int32")


@register_op("shape", infer_shape=_shape_shape, no_grad_inputs=("Input",))
def shape(ctx):
    ctx.set_output("Out", ctx.xp.asarray(ctx.input("Input").shape, dtype="int32").reshape(-1))


# -- p_norm ------------------------------------------------------------------------------

def _p_norm_shape(op):
    x = in_var(op, "X")
    keep = bool(op.attr("keepdim", False))
    if op.attr("asvector", False):
        out = [1] * len(x.shape) if keep else [1]
    else:
        axis = _norm_axis(op.attr("axis", -1), len(x.shape), "p_norm")
        out = [1 if i == axis else d for i, d in enumerate(x.shape)] if keep \
            else [d for i, d in enumerate(x.shape) if i != axis] or [1]
    set_out(op, "Out", out, x.dtype)


def _norm_axes(ctx, x):
    return None if ctx.attr("asvector", False) else _norm_axis(ctx.attr("axis", -1), x.ndim, "p_norm")


def _p_norm_value(xp, x, p, axis):
    """The norm with dimensions kept (so it broadcasts against x)."""
    a = xp.abs(x)
    if p == math.inf:
        return a.max(axis=axis, keepdims=True)
    if p == -math.inf:
        return a.min(axis=axis, keepdims=True)
    if p == 0:
        return (x != 0).sum(axis=axis, keepdims=True).astype(x.dtype)
    return (a ** p).sum(axis=axis, keepdims=True) ** (1.0 / p)


@register_op("p_norm", infer_shape=_p_norm_shape,
             grad=simple_grad("p_norm_grad", keep_outputs=True))
def p_norm(ctx):
    x = ctx.input("X")
    norm = _p_norm_value(ctx.xp, x, float(ctx.attr("porder", 2.0)), _norm_axes(ctx, x))
    ctx.set_output("Out", norm.astype(x.dtype, copy=False).reshape(_p_norm_out_shape(ctx, x, norm)))


def _p_norm_out_shape(ctx, x, kept):
    if ctx.attr("keepdim", False):
        return kept.shape
    if ctx.attr("asvector", False):
        return (1,)
    axis = _norm_axes(ctx, x)
    return tuple(d for i, d in enumerate(x.shape) if i != axis) or (1,)


@register_op("p_norm_grad")
def p_norm_grad(ctx):
    xp, x = ctx.xp, ctx.input("X")
    p, eps, axis = float(ctx.attr("porder", 2.0)), float(ctx.attr("epsilon", 1e-12)), _norm_axes(ctx, x)
    kept = (1,) * x.ndim if axis is None else tuple(1 if i == axis else d for i, d in enumerate(x.shape))
    norm, dout = ctx.input("Out").reshape(kept), ctx.input("Out@GRAD").reshape(kept)
    if p == 0:
        dx = xp.zeros_like(x)
    elif math.isinf(p):
        dx = (xp.abs(x) == norm) * xp.sign(x) * dout
    else:
        dx = xp.abs(x) ** (p - 1.0) / (norm ** (p - 1.0) + eps) * xp.sign(x) * dout
    ctx.set_output("X@GRAD", dx.astype(x.dtype, copy=False))


# -- range -------------------------------------------------------------------------------

def _range_shape(op):
    start = in_var(op, "Start")
    # The length is known only from values: paddle.arange sets it when they are numbers.
    set_out(op, "Out", (-1,), start.dtype)


@register_op("range", infer_shape=_range_shape, no_grad_inputs=("Start", "End", "Step"))
def range_(ctx):
    start, end, step = (ctx.input(s).reshape(-1)[0].item() for s in ("Start", "End", "Step"))
    if step == 0:
        raise ValueError("range: step must not be 0")
    ctx.set_output("Out", ctx.xp.arange(start, end, step, dtype=ctx.input("Start").dtype))


# -- tile --------------------------------------------------------------------------------

def _tile_padded(shape, repeat_times):
    """(x shape, repeats) padded with leading 1s to one rank, as Paddle's tile aligns them."""
    shape, reps = list(shape), [int(r) for r in repeat_times]
    n = max(len(shape), len(reps))
    return [1] * (n - len(shape)) + shape, [1] * (n - len(reps)) + reps


def _tile_shape(op):
    x = in_var(op, "X")
    reps = op.attr("repeat_times")
    # -1: a repeat count read when the op runs (inputs RepeatTimes or repeat_times_tensor)
    runtime = bool(op.input("RepeatTimes") or op.input("repeat_times_tensor"))
    if not reps or any(r < 1 and not (runtime and r == -1) for r in reps):
        raise GraphError(f"tile: repeat_times {list(reps)} must be positive integers")
    shape, reps = _tile_padded(x.shape, reps)
    set_out(op, "Out", [d * r if d >= 0 and r >= 0 else -1 for d, r in zip(shape, reps)], x.dtype)


def _tile_repeats(ctx):
    """Paddle's order: the RepeatTimes tensor, else the repeat_times_tensor list, else the attribute."""
    if ctx.has_input("RepeatTimes"):
        return [int(r) for r in ctx.input("RepeatTimes").reshape(-1)]
    if ctx.has_input("repeat_times_tensor"):
        return [int(t.reshape(-1)[0]) for t in ctx.input_list("repeat_times_tensor")]
    return ctx.attr("repeat_times")


@register_op("tile", infer_shape=_tile_shape, grad=simple_grad("tile_grad"),
             no_grad_inputs=("RepeatTimes", "repeat_times_tensor"))
def tile(ctx):
    x = ctx.input("X")
    reps = _tile_repeats(ctx)
    if any(r < 1 for r in reps):
        raise ValueError(f"tile: repeat_times {reps} must be positive integers")
    _, reps = _tile_padded(x.shape, reps)
    ctx.set_output("Out", ctx.xp.tile(x, reps))


@register_op("tile_grad")
def tile_grad(ctx):
    x, dout = ctx.input("X"), ctx.input("Out@GRAD")
    shape, _ = _tile_padded(x.shape, [1] * len(ctx.attr("repeat_times")))
    # the counts the forward used (read at run time or not): Out's shape over X's
    reps = [o // d if d else 1 for o, d in zip(dout.shape, shape)]
    # Out's dimension i is reps[i] copies of x's: split it in two and sum over the copies.
    interleaved = [v for pair in zip(reps, shape) for v in pair]
    dx = dout.reshape(interleaved).sum(axis=tuple(range(0, len(interleaved), 2)))
    ctx.set_output("X@GRAD", dx.reshape(x.shape))


# -- expand (Fluid 1.x) ------------------------------------------------------------------
# fluid.layers.expand (Paddle 1.8 API docs): tile with one count per dimension of X (no
# padding of the rank). Out keeps X's LoD when its first dimension is X's (Paddle's
# expand_op shares the LoD then).

def _expand_times(op_or_ctx, x_shape, runtime=False):
    times = [int(t) for t in op_or_ctx.attr("expand_times") or []]
    if runtime:  # -1: a count read when the op runs
        times = [t if t != -1 else 1 for t in times] or [1] * len(x_shape)
    if len(times) != len(x_shape) or any(t < 1 for t in times):
        raise GraphError(f"expand: expand_times {times} must hold one positive count per dimension of "
                         f"X {list(x_shape)}")
    return times


_EXPAND_TENSORS = ("ExpandTimes", "expand_times_tensor")


def _fluid_expand_shape(op):
    x = in_var(op, "X")
    if op.input("ExpandTimes"):  # a 1-D tensor of counts (Paddle 1.8's expand_times a Variable)
        set_out(op, "Out", [-1] * len(x.shape), x.dtype)
        return
    runtime = bool(op.input("expand_times_tensor"))
    times = _expand_times(op, x.shape, runtime)
    attr = [int(t) for t in op.attr("expand_times") or []]
    set_out(op, "Out", [d * t if d >= 0 and not (runtime and a == -1) else -1
                        for d, t, a in zip(x.shape, times, attr or times)], x.dtype,
            x.lod_level if attr and attr[0] == 1 else 0)


def _run_expand_times(ctx, x_shape):
    """Paddle's order: the ExpandTimes tensor, else the expand_times_tensor list, else the attribute."""
    if ctx.has_input("ExpandTimes"):
        times = [int(t) for t in ctx.input("ExpandTimes").reshape(-1)]
    elif ctx.has_input("expand_times_tensor"):
        times = [int(t.reshape(-1)[0]) for t in ctx.input_list("expand_times_tensor")]
    else:
        return _expand_times(ctx, x_shape)
    if len(times) != len(x_shape) or any(t < 1 for t in times):
        raise ValueError(f"expand: expand_times {times} must hold one positive count per dimension of "
                         f"X {list(x_shape)}")
    return times


@register_op("expand", infer_shape=_fluid_expand_shape, no_grad_inputs=_EXPAND_TENSORS,
             grad=simple_grad("expand_grad", inputs=("X",) + _EXPAND_TENSORS, grad_of=("X",)))
def fluid_expand(ctx):
    x = ctx.input("X")
    times = _run_expand_times(ctx, x.shape)
    ctx.set_output("Out", ctx.xp.tile(x, times), lod=ctx.input_lod("X") if times[0] == 1 else None)


@register_op("expand_grad")
def fluid_expand_grad(ctx):
    x, dout = ctx.input("X"), ctx.input("Out@GRAD")
    times = _run_expand_times(ctx, x.shape)
    interleaved = [v for pair in zip(times, x.shape) for v in pair]
    dx = dout.reshape(interleaved).sum(axis=tuple(range(0, len(interleaved), 2)))
    ctx.set_output("X@GRAD", dx.reshape(x.shape), lod=ctx.input_lod("X"))


# -- expand_v2 ---------------------------------------------------------------------------

def _expand_target(x_shape, shape):
    """Paddle's expand_v2: x aligned to the right of `shape`; -1 keeps x's dimension, a
    dimension of x that is not 1 must equal its target."""
    x_shape, shape = list(x_shape), [int(d) for d in shape]
    if len(shape) < len(x_shape):
        raise GraphError(f"expand: shape {shape} has fewer dimensions than x {x_shape}")
    padded = [1] * (len(shape) - len(x_shape)) + x_shape
    out = []
    for i, (have, want) in enumerate(zip(padded, shape)):
        if want == -1:
            if i < len(shape) - len(x_shape):
                raise GraphError(f"expand: shape {shape} has -1 for a new leading dimension")
            out.append(have)
        elif want < 1 or (have not in (1, -1) and have != want):
            raise GraphError(f"expand: x {x_shape} cannot expand to {shape} (dimension {i})")
        else:
            out.append(want)
    return out


def _expand_shape(op):
    x = in_var(op, "X")
    if op.input("expand_shapes_tensor"):  # dimensions given as tensors are known when the op runs
        set_out(op, "Out", [int(d) for d in op.attr("shape")], x.dtype)
    else:
        set_out(op, "Out", _expand_target(x.shape, op.attr("shape")), x.dtype)


@register_op("expand_v2", infer_shape=_expand_shape, grad=simple_grad("expand_v2_grad"),
             no_grad_inputs=("expand_shapes_tensor",))
def expand_v2(ctx):
    x = ctx.input("X")
    shape = ctx.attr("shape")
    if ctx.has_input("expand_shapes_tensor"):  # Paddle's runtime shape: one int tensor per dimension
        shape = [int(t.reshape(-1)[0]) for t in ctx.input_list("expand_shapes_tensor")]
    ctx.set_output("Out", ctx.xp.broadcast_to(x, _expand_target(x.shape, shape)).copy())


@register_op("expand_v2_grad")
def expand_v2_grad(ctx):
    x, dout = ctx.input("X"), ctx.input("Out@GRAD")
    lead = dout.ndim - x.ndim
    dx = dout.sum(axis=tuple(range(lead))) if lead else dout
    ones = tuple(i for i, d in enumerate(x.shape) if d == 1 and dx.shape[i] != 1)
    ctx.set_output("X@GRAD", (dx.sum(axis=ones, keepdims=True) if ones else dx).reshape(x.shape))


# -- inverse -----------------------------------------------------------------------------

def _inverse_shape(op):
    x = in_var(op, "Input")
    if len(x.shape) < 2 or _known_mismatch(x.shape[-1], x.shape[-2]):
        raise GraphError(f"inverse: Input {x.name}{list(x.shape)} must be square matrices [..., M, M]")
    set_out(op, "Output", x.shape, x.dtype)


@register_op("inverse", infer_shape=_inverse_shape,
             grad=simple_grad("inverse_grad", inputs=(), outputs=("Output",), keep_outputs=True,
                              grad_of=("Input",)))
def inverse(ctx):
    xp, x = ctx.xp, ctx.input("Input")
    try:
        out = xp.linalg.inv(x)
    except Exception as exc:  # numpy's and cupy's LinAlgError
        raise ValueError(f"inverse: Input {ctx.ins['Input'][0]} holds a singular matrix ({exc})") from None
    ctx.set_output("Output", out.astype(x.dtype, copy=False))


@register_op("inverse_grad")
def inverse_grad(ctx):
    out, dout = ctx.input("Output"), ctx.input("Output@GRAD")
    out_t = ctx.xp.swapaxes(out, -1, -2)
    ctx.set_output("Input@GRAD", -(out_t @ dout @ out_t))
