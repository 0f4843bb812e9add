"""Ops behind the tensor functions of Paddle's 2.x API (`paddle.matmul`, `paddle.exp`,
`paddle.slice`, `paddle.where`, ...) and `fluid.layers.matmul`.

* `matmul` (Fluid's): Out = alpha * op(X) @ op(Y), op = transpose of the last two
  dimensions where `transpose_X`/`transpose_Y`; leading (batch) dimensions broadcast.
  Both inputs need at least 2 dimensions.
* unary math with gradients: `square`, `exp`, `log`, `log1p`, `abs`, `sqrt`, `pow` (attr `factor`).
* `slice` (axes, starts, ends; negative and out-of-range bounds clamp as Python's do),
  `stack` (axis), `where` (Condition, X and Y broadcast together as numpy's where).
* no-gradient ops, whose outputs are stop_gradient: the comparisons (`less_than`,
  `less_equal`, `greater_than`, `greater_equal`, `equal`, `not_equal`, bool output;
  X and Y broadcast as the element-wise ops do, broadcast.py),
  `arg_max` (int64), `one_hot_v2` (float32, depth appended) and `fill_any_like`.
"""
from __future__ import annotations

import numpy as np

from psjob.fluid.framework import GraphError
from psjob.fluid.ops import broadcast
from psjob.fluid.ops.index_ops import _TENSOR_BOUNDS, _run_attrs
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, same_shape, set_out, simple_grad
from psjob.fluid.ops.shape_ops import _norm_axis

# -- matmul ------------------------------------------------------------------------------

def _swap_last(xp, a):
    return xp.swapaxes(a, -1, -2)


def _matmul_shape(op):
    x, y = in_var(op, "X"), in_var(op, "Y")
    if len(x.shape) < 2 or len(y.shape) < 2:
        raise GraphError(f"matmul: X {x.name}{list(x.shape)} and Y {y.name}{list(y.shape)} need at "
                         "least 2 dimensions each (unsqueeze a vector first)")
    xs, ys = list(x.shape), list(y.shape)
    if op.attr("transpose_X", False):
        xs[-1], xs[-2] = xs[-2], xs[-1]
    if op.attr("transpose_Y", False):
        ys[-1], ys[-2] = ys[-2], ys[-1]
    if xs[-1] >= 0 and ys[-2] >= 0 and xs[-1] != ys[-2]:
        raise GraphError(f"matmul: X {x.name}{list(x.shape)} (transpose_X="
                         f"{op.attr('transpose_X', False)}) has {xs[-1]} columns but Y "
                         f"{y.name}{list(y.shape)} (transpose_Y={op.attr('transpose_Y', False)}) "
                         f"has {ys[-2]} rows")
    bx, by = xs[:-2], ys[:-2]
    batch = bx if len(bx) >= len(by) else by
    set_out(op, "Out", list(batch) + [xs[-2], ys[-1]], x.dtype, x.lod_level)


def _matmul_grad(op):
    x, y, out = op.input("X")[0], op.input("Y")[0], op.output("Out")[0]
    return [GradOpSpec("matmul_grad", {"X": [x], "Y": [y], "Out@GRAD": [grad_name(out)]},
                       {"X@GRAD": [grad_name(x)], "Y@GRAD": [grad_name(y)]}, dict(op.attrs))]


def _operands(ctx):
    xp, x, y = ctx.xp, ctx.input("X"), ctx.input("Y")
    a = _swap_last(xp, x) if ctx.attr("transpose_X", False) else x
    b = _swap_last(xp, y) if ctx.attr("transpose_Y", False) else y
    return x, y, a, b


@register_op("matmul", infer_shape=_matmul_shape, grad=_matmul_grad)
def matmul(ctx):
    _, _, a, b = _operands(ctx)
    out = a @ b
    alpha = ctx.attr("alpha", 1.0)
    ctx.set_output("Out", out if alpha == 1.0 else out * out.dtype.type(alpha))


def _sum_to(xp, g, shape):
    """Sum g's broadcast (leading or size-1) dimensions away so it has `shape`."""
    return broadcast.reduce_grad(g, (1,) * (g.ndim - len(shape)) + tuple(shape), shape)


@register_op("matmul_grad")
def matmul_grad(ctx):
    xp = ctx.xp
    x, y, a, b = _operands(ctx)
    dout = ctx.input("Out@GRAD")
    alpha = ctx.attr("alpha", 1.0)
    if alpha != 1.0:
        dout = dout * dout.dtype.type(alpha)
    if ctx.has_output("X@GRAD"):
        da = _sum_to(xp, dout @ _swap_last(xp, b), a.shape)
        ctx.set_output("X@GRAD", _swap_last(xp, da) if ctx.attr("transpose_X", False) else da)
    if ctx.has_output("Y@GRAD"):
        db = _sum_to(xp, _swap_last(xp, a) @ dout, b.shape)
        ctx.set_output("Y@GRAD", _swap_last(xp, db) if ctx.attr("transpose_Y", False) else db)


# matmul_v2 (Paddle 2.x's `paddle.matmul`, what real Paddle's saved programs hold): numpy's
# matmul after the optional transposes (`trans_x`, `trans_y`), 1-D operands included (a vector
# is a row on the left and a column on the right, its dimension dropped from the result).

def _v2_dims(shape, trans):
    shape = list(shape)
    if trans and len(shape) >= 2:
        shape[-1], shape[-2] = shape[-2], shape[-1]
    return shape


def _matmul_v2_shape(op):
    x, y = in_var(op, "X"), in_var(op, "Y")
    xs, ys = _v2_dims(x.shape, op.attr("trans_x", False)), _v2_dims(y.shape, op.attr("trans_y", False))
    if not xs or not ys:
        raise GraphError(f"matmul_v2: X {x.name}{list(x.shape)} and Y {y.name}{list(y.shape)} need at least 1 "
                         "dimension each")
    k_x, k_y = xs[-1], ys[0] if len(ys) == 1 else ys[-2]
    if k_x >= 0 and k_y >= 0 and k_x != k_y:
        raise GraphError(f"matmul_v2: X {x.name}{list(x.shape)} has {k_x} columns but Y {y.name}{list(y.shape)} "
                         f"has {k_y} rows (trans_x={op.attr('trans_x', False)}, trans_y={op.attr('trans_y', False)})")
    bx, by = xs[:-2], ys[:-2]
    out = list(bx if len(bx) >= len(by) else by)
    out += ([xs[-2]] if len(xs) >= 2 else []) + ([ys[-1]] if len(ys) >= 2 else [])
    set_out(op, "Out", out, x.dtype, x.lod_level)


def _v2_operand(xp, a, trans, left):
    a2 = a if a.ndim >= 2 else (a.reshape(1, -1) if left else a.reshape(-1, 1))
    return _swap_last(xp, a2) if trans and a.ndim >= 2 else a2


def _matmul_v2_grad(op):
    x, y, out = op.input("X")[0], op.input("Y")[0], op.output("Out")[0]
    return [GradOpSpec("matmul_v2_grad", {"X": [x], "Y": [y], "Out@GRAD": [grad_name(out)]},
                       {"X@GRAD": [grad_name(x)], "Y@GRAD": [grad_name(y)]}, dict(op.attrs))]


@register_op("matmul_v2", infer_shape=_matmul_v2_shape, grad=_matmul_v2_grad)
def matmul_v2(ctx):
    xp, x, y = ctx.xp, ctx.input("X"), ctx.input("Y")
    a = _swap_last(xp, x) if ctx.attr("trans_x", False) and x.ndim >= 2 else x
    b = _swap_last(xp, y) if ctx.attr("trans_y", False) and y.ndim >= 2 else y
    ctx.set_output("Out", xp.matmul(a, b))


@register_op("matmul_v2_grad")
def matmul_v2_grad(ctx):
    xp, x, y = ctx.xp, ctx.input("X"), ctx.input("Y")
    tx, ty = ctx.attr("trans_x", False), ctx.attr("trans_y", False)
    a, b = _v2_operand(xp, x, tx, True), _v2_operand(xp, y, ty, False)
    dout = ctx.input("Out@GRAD").reshape(a.shape[:-1] + b.shape[-1:]) if min(x.ndim, y.ndim) == 1 and \
        max(x.ndim, y.ndim) <= 2 else ctx.input("Out@GRAD")
    if x.ndim == 1 and y.ndim > 2:
        dout = xp.expand_dims(dout, -2)
    if y.ndim == 1 and x.ndim > 2:
        dout = xp.expand_dims(dout, -1)
    if ctx.has_output("X@GRAD"):
        da = _sum_to(xp, dout @ _swap_last(xp, b), a.shape)
        dx = _swap_last(xp, da) if tx and x.ndim >= 2 else da
        ctx.set_output("X@GRAD", dx.reshape(x.shape))
    if ctx.has_output("Y@GRAD"):
        db = _sum_to(xp, _swap_last(xp, a) @ dout, b.shape)
        dy = _swap_last(xp, db) if ty and y.ndim >= 2 else db
        ctx.set_output("Y@GRAD", dy.reshape(y.shape))


# -- unary math --------------------------------------------------------------------------

def _unary(name, forward, backward):
    """forward(xp, x, attrs) -> out; backward(xp, x, out, dout, attrs) -> dx."""
    def kernel(ctx):
        x = ctx.input("X")
        ctx.set_output("Out", forward(ctx.xp, x, ctx.attrs).astype(x.dtype, copy=False),
                       lod=ctx.input_lod("X"))

    def grad_kernel(ctx):
        x, out, dout = ctx.input("X"), ctx.input("Out"), ctx.input("Out@GRAD")
        ctx.set_output("X@GRAD", backward(ctx.xp, x, out, dout, ctx.attrs).astype(x.dtype, copy=False))

    register_op(name, infer_shape=same_shape(),
                grad=simple_grad(name + "_grad", keep_outputs=True))(kernel)
    register_op(name + "_grad")(grad_kernel)


_unary("square", lambda xp, x, a: x * x, lambda xp, x, o, d, a: 2 * x * d)
_unary("exp", lambda xp, x, a: xp.exp(x), lambda xp, x, o, d, a: o * d)
_unary("log", lambda xp, x, a: xp.log(x), lambda xp, x, o, d, a: d / x)
_unary("log1p", lambda xp, x, a: xp.log1p(x), lambda xp, x, o, d, a: d / (1 + x))
_unary("abs", lambda xp, x, a: xp.abs(x), lambda xp, x, o, d, a: d * xp.sign(x))
_unary("sqrt", lambda xp, x, a: xp.sqrt(x), lambda xp, x, o, d, a: d * 0.5 / o)


def _pow_factor(ctx):
    """pow's exponent: the FactorTensor (Paddle 1.8's factor given as a Variable, read when the
    op runs), else the attribute."""
    if ctx.has_input("FactorTensor"):
        return float(ctx.input("FactorTensor").reshape(-1)[0])
    return float(ctx.attr("factor", 1.0))


@register_op("pow", infer_shape=same_shape(), no_grad_inputs=("FactorTensor",),
             grad=simple_grad("pow_grad", inputs=("X", "FactorTensor"), grad_of=("X",)))
def pow_(ctx):
    x = ctx.input("X")
    ctx.set_output("Out", (x ** _pow_factor(ctx)).astype(x.dtype, copy=False), lod=ctx.input_lod("X"))


@register_op("pow_grad")
def pow_grad(ctx):
    x, dout, f = ctx.input("X"), ctx.input("Out@GRAD"), _pow_factor(ctx)
    ctx.set_output("X@GRAD", (dout * f * x ** (f - 1)).astype(x.dtype, copy=False))


# -- slice -------------------------------------------------------------------------------

def _slice_bounds(shape, axes, starts, ends):
    """Per sliced axis: (axis, start, stop) clamped the way Python slices clamp."""
    out = []
    for axis, start, end in zip(axes, starts, ends):
        axis = _norm_axis(axis, len(shape), "slice")
        size = shape[axis]
        if size < 0:
            out.append((axis, int(start), int(end)))
            continue
        start, stop, _ = slice(int(start), int(end)).indices(size)
        out.append((axis, start, max(start, stop)))
    return out


def _slice_shape(op):
    x = in_var(op, "Input")
    axes, starts, ends = op.attr("axes"), op.attr("starts"), op.attr("ends")
    if not len(axes) == len(starts) == len(ends):
        raise GraphError(f"slice: axes {axes}, starts {starts} and ends {ends} must have one length")
    shape = list(x.shape)
    runtime = any(op.input(slot) for slot in _TENSOR_BOUNDS)
    for axis, start, stop in _slice_bounds(shape, axes, starts, ends):
        # bounds read when the op runs: that axis's length is unknown until then
        shape[axis] = stop - start if shape[axis] >= 0 and not runtime else -1
    set_out(op, "Out", _decreased(shape, op.attr("decrease_axis", [])), x.dtype)


def _decreased(shape, decrease_axis):
    """The shape without the sliced axes Paddle's `decrease_axis` names (each of size 1); [1]
    when none is left, as Paddle 2.x's static slice gives."""
    if not decrease_axis:
        return list(shape)
    drop = {int(a) % len(shape) for a in decrease_axis}
    return [d for i, d in enumerate(shape) if i not in drop] or [1]


def _slicer(shape, attrs):
    index = [slice(None)] * len(shape)
    for axis, start, stop in _slice_bounds(list(shape), attrs["axes"], attrs["starts"], attrs["ends"]):
        index[axis] = slice(start, stop)
    return tuple(index)


@register_op("slice", infer_shape=_slice_shape, no_grad_inputs=_TENSOR_BOUNDS,
             grad=simple_grad("slice_grad", inputs=("Input",) + _TENSOR_BOUNDS, grad_of=("Input",)))
def slice_(ctx):
    """Paddle's slice: Input[starts:ends] along axes, then the decrease_axis axes dropped; bounds
    given as tensors (StartsTensor / StartsTensorList, the same for ends) are read when it runs."""
    x = ctx.input("Input")
    out = x[_slicer(x.shape, _run_attrs(ctx, "slice"))]
    decrease = ctx.attr("decrease_axis", [])
    ctx.set_output("Out", out.reshape(_decreased(out.shape, decrease)) if decrease else out)


@register_op("slice_grad")
def slice_grad(ctx):
    x, dout = ctx.input("Input"), ctx.input("Out@GRAD")
    dx = ctx.xp.zeros_like(x)
    index = _slicer(x.shape, _run_attrs(ctx, "slice"))
    dx[index] = dout.reshape(dx[index].shape)
    ctx.set_output("Input@GRAD", dx)


# -- stack -------------------------------------------------------------------------------

def _stack_shape(op):
    xs = [in_var(op, "X", i) for i in range(len(op.input("X")))]
    shape = list(xs[0].shape)
    for v in xs[1:]:
        if len(v.shape) != len(shape) or any(a >= 0 and b >= 0 and a != b
                                               for a, b in zip(v.shape, shape)):
            raise GraphError(f"stack: {v.name}{list(v.shape)} and {xs[0].name}{shape} differ in shape")
    axis = _norm_axis(op.attr("axis", 0), len(shape) + 1, "stack")
    set_out(op, "Y", shape[:axis] + [len(xs)] + shape[axis:], xs[0].dtype)


def _stack_grad(op):
    return [GradOpSpec("stack_grad", {"Y@GRAD": [grad_name(op.output("Y")[0])]},
                       {"X@GRAD": [grad_name(n) for n in op.input("X")]}, dict(op.attrs))]


@register_op("stack", infer_shape=_stack_shape, grad=_stack_grad)
def stack(ctx):
    ctx.set_output("Y", ctx.xp.stack(ctx.input_list("X"), axis=int(ctx.attr("axis", 0))))


@register_op("stack_grad")
def stack_grad(ctx):
    dy = ctx.input("Y@GRAD")
    axis = _norm_axis(ctx.attr("axis", 0), dy.ndim, "stack")
    for i, _ in enumerate(ctx.outs.get("X@GRAD", ())):
        ctx.set_output("X@GRAD", ctx.xp.take(dy, i, axis=axis), i=i)


# -- where -------------------------------------------------------------------------------

def _where_shape(op):
    cond, x, y = in_var(op, "Condition"), in_var(op, "X"), in_var(op, "Y")
    try:
        shape = broadcast.out_shape(broadcast.out_shape(x.shape, y.shape), cond.shape)
    except ValueError as exc:
        raise GraphError(f"where: Condition {cond.name}{list(cond.shape)}, X {x.name}{list(x.shape)} and "
                         f"Y {y.name}{list(y.shape)} do not broadcast: {exc}") from None
    set_out(op, "Out", shape, x.dtype)


def _where_grad(op):
    return [GradOpSpec("where_grad", {"Condition": op.input("Condition"), "X": op.input("X"),
                                      "Y": op.input("Y"), "Out@GRAD": [grad_name(op.output("Out")[0])]},
                       {"X@GRAD": [grad_name(op.input("X")[0])], "Y@GRAD": [grad_name(op.input("Y")[0])]})]


@register_op("where", infer_shape=_where_shape, grad=_where_grad, no_grad_inputs=("Condition",))
def where(ctx):
    ctx.set_output("Out", ctx.xp.where(ctx.input("Condition"), ctx.input("X"), ctx.input("Y")))


@register_op("where_grad")
def where_grad(ctx):
    xp, cond, dout = ctx.xp, ctx.input("Condition"), ctx.input("Out@GRAD")
    zero = xp.zeros_like(dout)
    if ctx.has_output("X@GRAD"):
        ctx.set_output("X@GRAD", _sum_to(xp, xp.where(cond, dout, zero), ctx.input("X").shape))
    if ctx.has_output("Y@GRAD"):
        ctx.set_output("Y@GRAD", _sum_to(xp, xp.where(cond, zero, dout), ctx.input("Y").shape))


# -- ops without gradients -----------------------------------------------------------------

_COMPARE = {"less_than": "less", "less_equal": "less_equal", "greater_than": "greater",
            "greater_equal": "greater_equal", "equal": "equal", "not_equal": "not_equal"}


def _compare_shape(op):
    x, y = in_var(op, "X"), in_var(op, "Y")
    set_out(op, "Out", broadcast.infer(op, x, y), "bool")


def _make_compare(fn_name):
    def kernel(ctx):
        x, y = broadcast.operands(ctx.input("X"), ctx.input("Y"), ctx.attr("axis", -1))
        ctx.set_output("Out", getattr(ctx.xp, fn_name)(x, y))
    return kernel


for _op, _fn in _COMPARE.items():
    register_op(_op, infer_shape=_compare_shape)(_make_compare(_fn))


# Paddle's bitwise_and / or / xor: integer or bool operands, broadcast as numpy's, no gradient.
_BITWISE = {"bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor"}


def _bitwise_shape(op):
    x, y = in_var(op, "X"), in_var(op, "Y")
    if x.dtype != y.dtype or not (x.dtype == "bool" or x.dtype.startswith(("int", "uint"))):
        raise GraphError(f"{op.type}: X {x.name} ({x.dtype}) and Y {y.name} ({y.dtype}) must be one "
                         "integer or bool type")
    set_out(op, "Out", broadcast.infer(op, x, y), x.dtype)


def _make_bitwise(fn_name):
    def kernel(ctx):
        x, y = broadcast.operands(ctx.input("X"), ctx.input("Y"), ctx.attr("axis", -1))
        ctx.set_output("Out", getattr(ctx.xp, fn_name)(x, y))
    return kernel


for _op, _fn in _BITWISE.items():
    register_op(_op, infer_shape=_bitwise_shape)(_make_bitwise(_fn))


def arg_shape(op):
    """arg_max's and arg_min's output: one index per row along axis (kept as 1 with keepdims),
    or [1] flattened."""
    x = in_var(op, "X")
    shape = list(x.shape)
    if op.attr("flatten", False):
        out = [1]
    else:
        axis = _norm_axis(op.attr("axis", -1), len(shape), op.type.replace("arg_", "arg"))
        out = [1 if i == axis else d for i, d in enumerate(shape)] if op.attr("keepdims", False) \
            else [d for i, d in enumerate(shape) if i != axis] or [1]
    set_out(op, "Out", out, op.attr("dtype", "int64"))


@register_op("arg_max", infer_shape=arg_shape)
def arg_max(ctx):
    x, xp = ctx.input("X"), ctx.xp
    dtype = ctx.attr("dtype", "int64")
    if ctx.attr("flatten", False):
        ctx.set_output("Out", xp.asarray([xp.argmax(x)], dtype=dtype))
        return
    out = xp.argmax(x, axis=int(ctx.attr("axis", -1)))
    if ctx.attr("keepdims", False):
        out = xp.expand_dims(out, int(ctx.attr("axis", -1)))
    ctx.set_output("Out", out.astype(dtype).reshape(out.shape or (1,)))


def _one_hot_shape(op):
    x = in_var(op, "X")
    set_out(op, "Out", list(x.shape) + [int(op.attr("depth"))], "float32")


@register_op("one_hot_v2", infer_shape=_one_hot_shape)
def one_hot_v2(ctx):
    """x.shape + [depth]; an id outside [0, depth) is an error unless allow_out_of_range
    (its row is then all 0), as Paddle's one_hot_v2."""
    x, xp, depth = ctx.input("X"), ctx.xp, int(ctx.attr("depth"))
    if x.size and not ctx.attr("allow_out_of_range", False) and (int(x.min()) < 0 or int(x.max()) >= depth):
        raise ValueError(f"one_hot: ids in [{int(x.min())}, {int(x.max())}] exceed depth {depth}")
    ctx.set_output("Out", (x[..., None] == xp.arange(depth)).astype("float32"))


def _fill_any_like_shape(op):
    x = in_var(op, "X")
    set_out(op, "Out", x.shape, op.attr("dtype") or x.dtype)


@register_op("fill_any_like", infer_shape=_fill_any_like_shape)
def fill_any_like(ctx):
    x = ctx.input("X")
    ctx.set_output("Out", ctx.xp.full(x.shape, ctx.attr("value", 0.0), dtype=ctx.attr("dtype") or x.dtype))


def _assign_value_shape(op):
    set_out(op, "Out", op.attr("shape"), op.attr("dtype", "float32"))


@register_op("assign_value", infer_shape=_assign_value_shape)
def assign_value(ctx):
    """A constant array held in the op's attributes (NumpyArrayInitializer, paddle.nn.initializer.Assign):
    each run writes a fresh array, so no one else's buffer enters the scope."""
    arr = np.asarray(ctx.attr("values"), dtype=ctx.attr("dtype", "float32")).reshape(ctx.attr("shape"))
    ctx.set_output("Out", arr if ctx.xp is np else ctx.xp.asarray(arr))
