"""Ops of Fluid 1.8's layers that the rest of the kernels do not cover (Paddle 1.8 API docs,
fluid.layers; each checked against Paddle 1.8.5's CPU kernels on the same feeds):

- `meshgrid`: one output per 1-D input, each broadcast to [len(x0), len(x1), ...] (ij); the
  gradient of input i sums its output over every other axis.
- `is_empty`: bool [1], whether X has no element.
- `get_tensor_from_selected_rows`: a SelectedRows' value rows as a dense tensor;
  `merge_selected_rows`: one row per distinct id (ascending), repeated rows summed.
- `tensor_array_to_tensor`: the entries of a LoDTensorArray concatenated (or stacked, use_stack)
  along `axis`; OutIndex the int32 size of each along it. The gradient splits Out@GRAD back
  (two readers of one array add up their gradients; Paddle 1.8.5 does not then).
- `maxout`: channels (axis 1, or 3 for NHWC) cut into runs of `groups`, each replaced by its max;
  the gradient goes to the first maximum of each run.
- `multiplex`: row i of Out is row i of X[Ids[i]]; the gradient goes back to that input's row.
- `smooth_l1_loss`: d = InsideWeight * (X - Y); per element 0.5 * (sigma * d)^2 where
  |d| < 1 / sigma^2, else |d| - 0.5 / sigma^2; times OutsideWeight, summed per row: Out [N, 1]
  (Diff keeps d). Gradients for X and Y.
- `kldiv_loss`: Target * (log(Target) - X), 0 where Target <= 0; reduced by `reduction`
  (none, batchmean: sum / N, mean, sum) to [1] unless none. Gradient for X.
- `shuffle_channel`: channels [g, C/g] transposed to [C/g, g] (the gradient the inverse move;
  Paddle 1.8.5's gradient applies the forward move again, which differs unless g = C/g);
  `pixel_shuffle`: [N, C r r, H, W]
  to [N, C, H r, W r]; `space_to_depth`: Paddle's own element order (not TF's: the input seen
  as [N, C/b^2, H b, W b] by its blocks), checked on Paddle 1.8.5. Each gradient the inverse move.
- `lrn`: Out = X * (k + alpha * sum of X^2 over the n channels around c)^-beta (MidOut keeps
  the bracket; alpha not divided by n, as Paddle's).
- `unfold`: im2col of X [N, C, H, W] to Y [N, C kh kw, L] (rows (channel, kernel row, kernel
  column), columns the output positions row-major); the gradient adds the columns back.
- `sigmoid_focal_loss` (Label [N, 1] int: 0 background, 1..D a class; FgNum [1]): per element
  -alpha/fg (1-p)^gamma log p for the label's class, -(1-alpha)/fg p^gamma log(1-p) for the
  others (labels -1 ignored), p = sigmoid(X), fg = max(FgNum, 1). Gradient for X.
- `lstm_unit`: one LSTM step from the gate pre-activations X [N, 4D] (i, f, o, g) and C_prev:
  C = f C_prev + i g, H = o tanh(C), f = sigmoid(x_f + forget_bias). Gradients for both.

Further down, each with its own note: `group_norm` / `instance_norm`, `filter_by_instag`,
`center_loss`, `teacher_student_sigmoid_loss`, `huber_loss`, `add_position_encoding`,
`edit_distance` / `sequence_erase`, and the 2.0-preview `kron`, `cross`, `dist`, `diag_embed`.
"""
from __future__ import annotations

import numpy as np

from psjob.fluid.core import SelectedRows, scatter_add
from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, same_shape, set_out, simple_grad


def _host(ctx, v):
    return np.asarray(v if ctx.xp is np else ctx.xp.asnumpy(v))


def _sigmoid(xp, x):
    return 1.0 / (1.0 + xp.exp(-x))


# -- meshgrid ----------------------------------------------------------------------------

def _meshgrid_shape(op):
    xs = [in_var(op, "X", i) for i in range(len(op.input("X")))]
    shape = [v.shape[0] if v.shape else 1 for v in xs]
    for i, v in enumerate(xs):
        set_out(op, "Out", shape, v.dtype, i=i)


def _meshgrid_grad(op):
    return [GradOpSpec("meshgrid_grad", {"X": op.input("X"), "Out@GRAD": [grad_name(n) for n in op.output("Out")]},
                       {"X@GRAD": [grad_name(n) for n in op.input("X")]})]


@register_op("meshgrid", infer_shape=_meshgrid_shape, grad=_meshgrid_grad)
def meshgrid(ctx):
    xs = [x.reshape(-1) for x in ctx.input_list("X")]
    for i, g in enumerate(ctx.xp.meshgrid(*xs, indexing="ij")):
        ctx.set_output("Out", ctx.xp.ascontiguousarray(g), i=i)


@register_op("meshgrid_grad")
def meshgrid_grad(ctx):
    xs, douts = ctx.input_list("X"), ctx.input_list("Out@GRAD")
    n = len(xs)
    for i, x in enumerate(xs):
        d = douts[i] if i < len(douts) else None
        dx = ctx.xp.zeros_like(x) if d is None else d.sum(axis=tuple(j for j in range(n) if j != i))
        ctx.set_output("X@GRAD", dx.reshape(x.shape).astype(x.dtype, copy=False), i=i)


# -- is_empty, selected rows, tensor arrays ----------------------------------------------

@register_op("is_empty", infer_shape=lambda op: set_out(op, "Out", [1], "bool"))
def is_empty(ctx):
    x = ctx.input("X")
    size = len(x) if isinstance(x, list) else int(np.prod(getattr(x, "shape", (0,))))
    ctx.set_output("Out", ctx.xp.asarray([size == 0]))


def _rows_shape(op):
    x = in_var(op, "X")
    set_out(op, "Out", [-1] + list(x.shape[1:]), x.dtype)


@register_op("get_tensor_from_selected_rows", infer_shape=_rows_shape)
def get_tensor_from_selected_rows(ctx):
    x = ctx.input("X")
    if not isinstance(x, SelectedRows):
        raise TypeError(f"get_tensor_from_selected_rows: X {ctx.ins['X'][0]} must be a SelectedRows")
    ctx.set_output("Out", x.values.copy())


def _merge_rows_shape(op):
    x = in_var(op, "X")
    set_out(op, "Out", x.shape, x.dtype)
    out = op.block._find_var_recursive(op.output("Out")[0])
    if out is not None:
        out.type = x.type


@register_op("merge_selected_rows", infer_shape=_merge_rows_shape)
def merge_selected_rows(ctx):
    x, xp = ctx.input("X"), ctx.xp
    if not isinstance(x, SelectedRows):
        raise TypeError(f"merge_selected_rows: X {ctx.ins['X'][0]} must be a SelectedRows")
    rows, inverse = np.unique(np.asarray(x.rows if xp is np else xp.asnumpy(x.rows)), return_inverse=True)
    values = xp.zeros((len(rows),) + tuple(x.values.shape[1:]), dtype=x.values.dtype)
    if len(rows):
        scatter_add(xp, values, xp.asarray(inverse), x.values)
    ctx.set_output("Out", SelectedRows(xp.asarray(rows.astype(np.int64)), values, x.height, unique=True))


def _array_to_tensor_shape(op):
    arr = in_var(op, "X")
    shape = list(arr.shape)
    set_out(op, "Out", [-1] * (len(shape) + (1 if op.attr("use_stack", False) else 0)) if shape else [-1],
            arr.dtype)
    set_out(op, "OutIndex", [-1], "int32")


def _array_to_tensor_grad(op):
    return [GradOpSpec("tensor_array_to_tensor_grad",
                       {"X": op.input("X"), "Out@GRAD": [grad_name(op.output("Out")[0])]},
                       {"X@GRAD": [grad_name(op.input("X")[0])]}, dict(op.attrs))]


@register_op("tensor_array_to_tensor", infer_shape=_array_to_tensor_shape, grad=_array_to_tensor_grad)
def tensor_array_to_tensor(ctx):
    xs = [x for x in ctx.input("X") if x is not None]
    if not xs:
        raise ValueError(f"tensor_array_to_tensor: the array {ctx.ins['X'][0]} is empty")
    axis, xp = int(ctx.attr("axis", 1)), ctx.xp
    out = xp.stack(xs, axis=axis) if ctx.attr("use_stack", False) else xp.concatenate(xs, axis=axis)
    sizes = [x.shape[axis] for x in xs]  # each entry's size along axis, stacked or not (as Paddle's)
    ctx.set_output("Out", out)
    ctx.set_output("OutIndex", xp.asarray(sizes, dtype=np.int32))


@register_op("tensor_array_to_tensor_grad")
def tensor_array_to_tensor_grad(ctx):
    xs, dout, xp = ctx.input("X"), ctx.input("Out@GRAD"), ctx.xp
    axis = int(ctx.attr("axis", 1))
    grads, at = [], 0
    for x in xs:
        if x is None:
            grads.append(None)
            continue
        if ctx.attr("use_stack", False):
            grads.append(xp.take(dout, at, axis=axis))
            at += 1
        else:
            k = x.shape[axis]
            grads.append(xp.take(dout, xp.arange(at, at + k), axis=axis))
            at += k
    ctx.set_output("X@GRAD", grads)


# -- maxout, multiplex -------------------------------------------------------------------

def _maxout_axis(attrs, ndim):
    axis = int(attrs.get("axis", 1))
    return axis + ndim if axis < 0 else axis


def _maxout_shape(op):
    x = in_var(op, "X")
    groups, axis = int(op.attr("groups")), _maxout_axis(op.attrs, len(x.shape))
    if groups < 1 or (x.shape[axis] >= 0 and x.shape[axis] % groups):
        raise GraphError(f"maxout: the {x.shape[axis]} channels of X {x.name}{list(x.shape)} must be a "
                         f"multiple of groups ({groups})")
    shape = list(x.shape)
    shape[axis] = shape[axis] // groups if shape[axis] >= 0 else -1
    set_out(op, "Out", shape, x.dtype)


def _maxout_runs(x, attrs):
    groups, axis = int(attrs["groups"]), _maxout_axis(attrs, x.ndim)
    shape = x.shape[:axis] + (x.shape[axis] // groups, groups) + x.shape[axis + 1:]
    return x.reshape(shape), axis + 1


@register_op("maxout", infer_shape=_maxout_shape, grad=simple_grad("maxout_grad"))
def maxout(ctx):
    runs, axis = _maxout_runs(ctx.input("X"), ctx.attrs)
    ctx.set_output("Out", runs.max(axis=axis))


@register_op("maxout_grad")
def maxout_grad(ctx):
    x, dout, xp = ctx.input("X"), ctx.input("Out@GRAD"), ctx.xp
    runs, axis = _maxout_runs(x, ctx.attrs)
    first = xp.expand_dims(runs.argmax(axis=axis), axis)
    dx = xp.zeros_like(runs)
    xp.put_along_axis(dx, first, xp.expand_dims(dout, axis), axis=axis)
    ctx.set_output("X@GRAD", dx.reshape(x.shape))


def _multiplex_shape(op):
    x = in_var(op, "X")
    set_out(op, "Out", x.shape, x.dtype)


def _multiplex_grad(op):
    return [GradOpSpec("multiplex_grad", {"X": op.input("X"), "Ids": op.input("Ids"),
                                          "Out@GRAD": [grad_name(op.output("Out")[0])]},
                       {"X@GRAD": [grad_name(n) for n in op.input("X")]})]


def _multiplex_ids(ctx, count, rows):
    ids = ctx.input("Ids").reshape(-1).astype(np.int64)
    if ids.shape[0] != rows or (ids.size and (int(ids.min()) < 0 or int(ids.max()) >= count)):
        raise ValueError(f"multiplex: Ids must hold one index in [0, {count}) per row ({rows} rows)")
    return ids


@register_op("multiplex", infer_shape=_multiplex_shape, grad=_multiplex_grad, no_grad_inputs=("Ids",))
def multiplex(ctx):
    xs, xp = ctx.input_list("X"), ctx.xp
    ids = _multiplex_ids(ctx, len(xs), xs[0].shape[0])
    stacked = xp.stack(xs)
    ctx.set_output("Out", stacked[ids, xp.arange(ids.shape[0])])


@register_op("multiplex_grad")
def multiplex_grad(ctx):
    xs, dout, xp = ctx.input_list("X"), ctx.input("Out@GRAD"), ctx.xp
    ids = _multiplex_ids(ctx, len(xs), dout.shape[0])
    for k, x in enumerate(xs):
        mask = (ids == k).reshape((-1,) + (1,) * (dout.ndim - 1))
        ctx.set_output("X@GRAD", xp.where(mask, dout, 0).astype(x.dtype, copy=False), i=k)


# -- smooth_l1_loss, kldiv_loss ------------------------------------------------------------

def _smooth_l1_shape(op):
    x = in_var(op, "X")
    set_out(op, "Diff", x.shape, x.dtype)
    set_out(op, "Out", [x.shape[0], 1], x.dtype)


def _smooth_l1_grad(op):
    ins = {s: op.input(s) for s in ("X", "Y", "InsideWeight", "OutsideWeight") if op.input(s)}
    ins.update({"Diff": op.output("Diff"), "Out@GRAD": [grad_name(op.output("Out")[0])]})
    return [GradOpSpec("smooth_l1_loss_grad", ins,
                       {"X@GRAD": [grad_name(op.input("X")[0])], "Y@GRAD": [grad_name(op.input("Y")[0])]},
                       dict(op.attrs))]


@register_op("smooth_l1_loss", infer_shape=_smooth_l1_shape, grad=_smooth_l1_grad,
             no_grad_inputs=("InsideWeight", "OutsideWeight"))
def smooth_l1_loss(ctx):
    x, xp = ctx.input("X"), ctx.xp
    s2 = float(ctx.attr("sigma", 1.0)) ** 2
    d = x - ctx.input("Y")
    if ctx.has_input("InsideWeight"):
        d = d * ctx.input("InsideWeight")
    a = xp.abs(d)
    e = xp.where(a < 1.0 / s2, 0.5 * d * d * s2, a - 0.5 / s2)
    if ctx.has_input("OutsideWeight"):
        e = e * ctx.input("OutsideWeight")
    ctx.set_output("Diff", d)
    ctx.set_output("Out", e.reshape(x.shape[0], -1).sum(axis=1, keepdims=True).astype(x.dtype, copy=False))


@register_op("smooth_l1_loss_grad")
def smooth_l1_loss_grad(ctx):
    d, xp = ctx.input("Diff"), ctx.xp
    s2 = float(ctx.attr("sigma", 1.0)) ** 2
    g = xp.where(xp.abs(d) < 1.0 / s2, d * s2, xp.sign(d))
    g = g * ctx.input("Out@GRAD").reshape((-1,) + (1,) * (d.ndim - 1))
    for w in ("InsideWeight", "OutsideWeight"):
        if ctx.has_input(w):
            g = g * ctx.input(w)
    g = g.astype(d.dtype, copy=False)
    if ctx.has_output("X@GRAD"):
        ctx.set_output("X@GRAD", g)
    if ctx.has_output("Y@GRAD"):
        ctx.set_output("Y@GRAD", -g)


_KLDIV_REDUCTIONS = ("none", "batchmean", "mean", "sum")


def _kldiv_shape(op):
    x = in_var(op, "X")
    if op.attr("reduction", "mean") not in _KLDIV_REDUCTIONS:
        raise GraphError(f"kldiv_loss: reduction must be one of {list(_KLDIV_REDUCTIONS)}, "
                         f"got {op.attr('reduction')!r}")
    set_out(op, "Loss", x.shape if op.attr("reduction", "mean") == "none" else [1], x.dtype)


def _kldiv_divisor(reduction, x):
    return {"batchmean": x.shape[0], "mean": x.size}.get(reduction, 1)


@register_op("kldiv_loss", infer_shape=_kldiv_shape, no_grad_inputs=("Target",),
             grad=simple_grad("kldiv_loss_grad", inputs=("X", "Target"), outputs=("Loss",), grad_of=("X",)))
def kldiv_loss(ctx):
    x, t, xp = ctx.input("X"), ctx.input("Target"), ctx.xp
    loss = xp.where(t > 0, t * (xp.log(xp.where(t > 0, t, 1)) - x), 0).astype(x.dtype, copy=False)
    reduction = ctx.attr("reduction", "mean")
    if reduction != "none":
        loss = (loss.sum() / _kldiv_divisor(reduction, x)).reshape(1).astype(x.dtype)
    ctx.set_output("Loss", loss)


@register_op("kldiv_loss_grad")
def kldiv_loss_grad(ctx):
    x, t, dloss, xp = ctx.input("X"), ctx.input("Target"), ctx.input("Loss@GRAD"), ctx.xp
    reduction = ctx.attr("reduction", "mean")
    scale = dloss if reduction == "none" else dloss.reshape(-1)[0] / _kldiv_divisor(reduction, x)
    ctx.set_output("X@GRAD", (xp.where(t > 0, -t, 0) * scale).astype(x.dtype, copy=False))


# -- channel moves: shuffle_channel, pixel_shuffle, space_to_depth -------------------------

def _moved_shape(op_type):
    def infer(op):
        x = in_var(op, "X")
        if len(x.shape) != 4:
            raise GraphError(f"{op_type}: X {x.name}{list(x.shape)} must be 4-D [N, C, H, W]")
        n, c, h, w = x.shape
        if op_type == "pixel_shuffle":
            r = int(op.attr("upscale_factor"))
            if c >= 0 and c % (r * r):
                raise GraphError(f"pixel_shuffle: the {c} channels must be a multiple of upscale_factor^2 ({r * r})")
            shape = [n, c // (r * r) if c >= 0 else -1, h * r if h >= 0 else -1, w * r if w >= 0 else -1]
        elif op_type == "space_to_depth":
            b = int(op.attr("blocksize"))
            if (c >= 0 and c % (b * b)) or (h >= 0 and h % b) or (w >= 0 and w % b):
                raise GraphError(f"space_to_depth: X {x.name}{list(x.shape)} needs channels divisible by "
                                 f"blocksize^2 ({b * b}) and height and width by blocksize ({b})")
            shape = [n, c * b * b if c >= 0 else -1, h // b if h >= 0 else -1, w // b if w >= 0 else -1]
        else:
            g = int(op.attr("group"))
            if c >= 0 and c % g:
                raise GraphError(f"shuffle_channel: the {c} channels must be a multiple of group ({g})")
            shape = list(x.shape)
        set_out(op, "Out", shape, x.dtype)
    return infer


def _channel_move(op_type, x_shape, attrs, xp):
    """(flat index of X each element of Out reads, Out's shape)."""
    n, c, h, w = x_shape
    idx = xp.arange(n * c * h * w).reshape(x_shape)
    if op_type == "shuffle_channel":
        g = int(attrs["group"])
        return idx.reshape(n, g, c // g, h, w).transpose(0, 2, 1, 3, 4).reshape(-1), x_shape
    if op_type == "pixel_shuffle":
        r = int(attrs["upscale_factor"])
        out = (n, c // (r * r), h * r, w * r)
        return idx.reshape(n, out[1], r, r, h, w).transpose(0, 1, 4, 2, 5, 3).reshape(-1), out
    b = int(attrs["blocksize"])
    oc = c // (b * b)
    bi, k, j, i = xp.meshgrid(xp.arange(n), xp.arange(c), xp.arange(h), xp.arange(w), indexing="ij")
    c2, off = k % oc, k // oc
    w2, h2 = i * b + off % b, j * b + off // b
    dest = (w2 + w * b * (h2 + h * b * (c2 + oc * bi))).reshape(-1)  # X's element i goes to Out.flat[dest[i]]
    src = xp.empty_like(dest)
    src[dest] = xp.arange(dest.shape[0])
    return src, (n, c * b * b, h // b, w // b)


def _register_channel_move(op_type):
    @register_op(op_type, infer_shape=_moved_shape(op_type), grad=simple_grad(op_type + "_grad"))
    def kernel(ctx):
        x = ctx.input("X")
        src, shape = _channel_move(op_type, x.shape, ctx.attrs, ctx.xp)
        ctx.set_output("Out", x.reshape(-1)[src].reshape(shape))

    @register_op(op_type + "_grad")
    def grad_kernel(ctx):
        x, dout = ctx.input("X"), ctx.input("Out@GRAD")
        src, _ = _channel_move(op_type, x.shape, ctx.attrs, ctx.xp)
        dx = ctx.xp.empty(x.size, dtype=dout.dtype)
        dx[src] = dout.reshape(-1)
        ctx.set_output("X@GRAD", dx.reshape(x.shape))


for _op_type in ("shuffle_channel", "pixel_shuffle", "space_to_depth"):
    _register_channel_move(_op_type)


# -- lrn ---------------------------------------------------------------------------------

def _lrn_shape(op):
    x = in_var(op, "X")
    set_out(op, "Out", x.shape, x.dtype)
    set_out(op, "MidOut", x.shape, x.dtype)


def _channel_window_sum(xp, v, n, channel_axis):
    """Sum over the n channels around each channel c: [c - (n-1)//2, c + n - 1 - (n-1)//2]."""
    pre = (n - 1) // 2
    c = v.shape[channel_axis]
    pad = [(0, 0)] * v.ndim
    pad[channel_axis] = (pre, n - 1 - pre)
    padded = xp.pad(v, pad)
    csum = xp.cumsum(padded, axis=channel_axis)
    zero = xp.zeros_like(xp.take(csum, [0], axis=channel_axis))
    csum = xp.concatenate([zero, csum], axis=channel_axis)
    return xp.take(csum, xp.arange(n, n + c), axis=channel_axis) - xp.take(csum, xp.arange(0, c), axis=channel_axis)


def _lrn_axis(attrs):
    return 3 if attrs.get("data_format", "NCHW") == "NHWC" else 1


def _lrn_grad(op):
    return [GradOpSpec("lrn_grad", {"X": op.input("X"), "Out": op.output("Out"), "MidOut": op.output("MidOut"),
                                    "Out@GRAD": [grad_name(op.output("Out")[0])]},
                       {"X@GRAD": [grad_name(op.input("X")[0])]}, dict(op.attrs))]


@register_op("lrn", infer_shape=_lrn_shape, grad=_lrn_grad)
def lrn(ctx):
    x, xp = ctx.input("X"), ctx.xp
    n, k = int(ctx.attr("n", 5)), float(ctx.attr("k", 2.0))
    alpha, beta = float(ctx.attr("alpha", 1e-4)), float(ctx.attr("beta", 0.75))
    mid = (k + alpha * _channel_window_sum(xp, x * x, n, _lrn_axis(ctx.attrs))).astype(x.dtype, copy=False)
    ctx.set_output("MidOut", mid)
    ctx.set_output("Out", (x * mid ** -beta).astype(x.dtype, copy=False))


@register_op("lrn_grad")
def lrn_grad(ctx):
    x, out, mid, dout, xp = ctx.input("X"), ctx.input("Out"), ctx.input("MidOut"), ctx.input("Out@GRAD"), ctx.xp
    n, alpha, beta = int(ctx.attr("n", 5)), float(ctx.attr("alpha", 1e-4)), float(ctx.attr("beta", 0.75))
    # the window is symmetric the other way round: channel c appears in the sums of the n channels
    # [c - (n - 1 - pre), c + pre]
    ratio = dout * out / mid
    pre = (n - 1) // 2
    axis = _lrn_axis(ctx.attrs)
    pad = [(0, 0)] * x.ndim
    pad[axis] = (n - 1 - pre, pre)
    padded = xp.pad(ratio, pad)
    c = x.shape[axis]
    back = sum(xp.take(padded, xp.arange(s, s + c), axis=axis) for s in range(n))
    dx = dout * mid ** -beta - 2.0 * alpha * beta * x * back
    ctx.set_output("X@GRAD", dx.astype(x.dtype, copy=False))


# -- unfold ------------------------------------------------------------------------------

def _unfold_geometry(x_shape, attrs):
    _, c, h, w = x_shape
    kh, kw = (int(v) for v in attrs["kernel_sizes"])
    sh, sw = (int(v) for v in attrs["strides"])
    top, left, bottom, right = (int(v) for v in attrs["paddings"])
    dh, dw = (int(v) for v in attrs["dilations"])
    oh = (h + top + bottom - (dh * (kh - 1) + 1)) // sh + 1
    ow = (w + left + right - (dw * (kw - 1) + 1)) // sw + 1
    return kh, kw, sh, sw, (top, left, bottom, right), dh, dw, oh, ow


def _unfold_shape(op):
    x = in_var(op, "X")
    if len(x.shape) != 4:
        raise GraphError(f"unfold: X {x.name}{list(x.shape)} must be 4-D [N, C, H, W]")
    kh, kw, _, _, _, _, _, oh, ow = _unfold_geometry(x.shape, op.attrs)
    if min(x.shape[1:]) >= 0 and (oh < 1 or ow < 1):
        raise GraphError(f"unfold: the kernel {[kh, kw]} does not fit X {x.name}{list(x.shape)}")
    known = min(x.shape[1:]) >= 0
    set_out(op, "Y", [x.shape[0], x.shape[1] * kh * kw if x.shape[1] >= 0 else -1, oh * ow if known else -1],
            x.dtype)


def _unfold_index(x_shape, attrs, xp):
    """Padded-X coordinates (rows, cols) of every Y column entry: [kh, kw, oh, ow] each."""
    kh, kw, sh, sw, pads, dh, dw, oh, ow = _unfold_geometry(x_shape, attrs)
    r = (xp.arange(kh) * dh)[:, None, None, None] + (xp.arange(oh) * sh)[None, None, :, None]
    q = (xp.arange(kw) * dw)[None, :, None, None] + (xp.arange(ow) * sw)[None, None, None, :]
    return xp.broadcast_to(r, (kh, kw, oh, ow)), xp.broadcast_to(q, (kh, kw, oh, ow)), pads


@register_op("unfold", infer_shape=_unfold_shape, grad=simple_grad("unfold_grad", outputs=("Y",)))
def unfold(ctx):
    x, xp = ctx.input("X"), ctx.xp
    rows, cols, (top, left, bottom, right) = _unfold_index(x.shape, ctx.attrs, xp)
    padded = xp.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    y = padded[:, :, rows, cols]  # [N, C, kh, kw, oh, ow]
    n, c = x.shape[:2]
    ctx.set_output("Y", y.reshape(n, c * rows.shape[0] * rows.shape[1], -1))


@register_op("unfold_grad")
def unfold_grad(ctx):
    x, dy, xp = ctx.input("X"), ctx.input("Y@GRAD"), ctx.xp
    rows, cols, (top, left, bottom, right) = _unfold_index(x.shape, ctx.attrs, xp)
    n, c, h, w = x.shape
    padded = xp.zeros((n, c, h + top + bottom, w + left + right), dtype=dy.dtype)
    xp.add.at(padded, (slice(None), slice(None), rows, cols), dy.reshape((n, c) + rows.shape))
    ctx.set_output("X@GRAD", padded[:, :, top:top + h, left:left + w])


# -- sigmoid_focal_loss ------------------------------------------------------------------

def _focal_parts(ctx):
    x, xp = ctx.input("X"), ctx.xp
    label = ctx.input("Label").reshape(-1, 1).astype(np.int64)
    fg = max(float(ctx.input("FgNum").reshape(-1)[0]), 1.0)
    gamma, alpha = float(ctx.attr("gamma", 2.0)), float(ctx.attr("alpha", 0.25))
    d = xp.arange(1, x.shape[1] + 1)[None, :]
    c_pos = (label == d).astype(x.dtype)
    c_neg = ((label != -1) & (label != d)).astype(x.dtype)
    p = _sigmoid(xp, x)
    return x, xp, p, c_pos * alpha / fg, c_neg * (1 - alpha) / fg, gamma


def _log_one_minus_sigmoid(xp, x):
    """log(1 - sigmoid(x)) without overflow: -x (x >= 0) - log(1 + exp(-|x|))."""
    return -x * (x >= 0) - xp.log1p(xp.exp(-xp.abs(x)))


@register_op("sigmoid_focal_loss", infer_shape=same_shape(), no_grad_inputs=("Label", "FgNum"),
             grad=simple_grad("sigmoid_focal_loss_grad", inputs=("X", "Label", "FgNum"), grad_of=("X",)))
def sigmoid_focal_loss(ctx):
    x, xp, p, s_pos, s_neg, gamma = _focal_parts(ctx)
    tiny = np.finfo(x.dtype).tiny
    term_pos = (1 - p) ** gamma * xp.log(xp.maximum(p, tiny))
    term_neg = p ** gamma * _log_one_minus_sigmoid(xp, x)
    ctx.set_output("Out", (-s_pos * term_pos - s_neg * term_neg).astype(x.dtype, copy=False))


@register_op("sigmoid_focal_loss_grad")
def sigmoid_focal_loss_grad(ctx):
    x, xp, p, s_pos, s_neg, gamma = _focal_parts(ctx)
    tiny = np.finfo(x.dtype).tiny
    d_pos = (1 - p) ** gamma * ((1 - p) - gamma * p * xp.log(xp.maximum(p, tiny)))
    d_neg = p ** gamma * (gamma * (1 - p) * _log_one_minus_sigmoid(xp, x) - p)
    dx = ctx.input("Out@GRAD") * (-s_pos * d_pos - s_neg * d_neg)
    ctx.set_output("X@GRAD", dx.astype(x.dtype, copy=False))


# -- lstm_unit ---------------------------------------------------------------------------

def _lstm_unit_shape(op):
    x, c = in_var(op, "X"), in_var(op, "C_prev")
    if x.shape[-1] >= 0 and c.shape[-1] >= 0 and x.shape[-1] != 4 * c.shape[-1]:
        raise GraphError(f"lstm_unit: X {x.name}{list(x.shape)} must have 4 x the {c.shape[-1]} columns "
                         f"of C_prev {c.name}")
    set_out(op, "C", c.shape, c.dtype)
    set_out(op, "H", c.shape, c.dtype)


def _lstm_unit_gates(ctx):
    x, xp = ctx.input("X"), ctx.xp
    d = x.shape[1] // 4
    fb = float(ctx.attr("forget_bias", 0.0))
    i, f, o = (_sigmoid(xp, x[:, k * d:(k + 1) * d] + (fb if k == 1 else 0.0)) for k in range(3))
    g = xp.tanh(x[:, 3 * d:])
    return i, f, o, g


@register_op("lstm_unit", infer_shape=_lstm_unit_shape,
             grad=simple_grad("lstm_unit_grad", inputs=("X", "C_prev"), outputs=("C", "H"), keep_outputs=True))
def lstm_unit(ctx):
    i, f, o, g = _lstm_unit_gates(ctx)
    c = f * ctx.input("C_prev") + i * g
    dtype = ctx.input("X").dtype
    ctx.set_output("C", c.astype(dtype, copy=False))
    ctx.set_output("H", (o * ctx.xp.tanh(c)).astype(dtype, copy=False))


@register_op("lstm_unit_grad")
def lstm_unit_grad(ctx):
    xp = ctx.xp
    i, f, o, g = _lstm_unit_gates(ctx)
    c_prev, c = ctx.input("C_prev"), ctx.input("C")
    dc = ctx.input("C@GRAD") if ctx.has_input("C@GRAD") else None
    dh = ctx.input("H@GRAD") if ctx.has_input("H@GRAD") else None
    dc = xp.zeros_like(c) if dc is None else dc
    dh = xp.zeros_like(c) if dh is None else dh
    tc = xp.tanh(c)
    dc_total = dc + dh * o * (1 - tc * tc)
    dx = xp.concatenate([dc_total * g * i * (1 - i), dc_total * c_prev * f * (1 - f),
                         dh * tc * o * (1 - o), dc_total * i * (1 - g * g)], axis=1)
    dtype = ctx.input("X").dtype
    if ctx.has_output("X@GRAD"):
        ctx.set_output("X@GRAD", dx.astype(dtype, copy=False))
    if ctx.has_output("C_prev@GRAD"):
        ctx.set_output("C_prev@GRAD", (dc_total * f).astype(dtype, copy=False))


# -- group_norm, instance_norm -----------------------------------------------------------
# Paddle's ops: X [N, C, ...] (group_norm also NHWC) normalized over each sample's groups of
# C / groups channels (instance_norm: groups = C) with the biased variance, then each channel
# scaled and shifted when Scale / Bias are given. group_norm's Mean / Variance are [N, groups];
# instance_norm's SavedMean / SavedVariance [N * C], the variance saved as 1 / sqrt(var + eps)
# as Paddle's kernel keeps it.

def _norm_channel_first(x, layout):
    return x if layout != "NHWC" else x.transpose((0, x.ndim - 1) + tuple(range(1, x.ndim - 1)))


def _norm_channel_back(x, layout):
    return x if layout != "NHWC" else x.transpose((0,) + tuple(range(2, x.ndim)) + (1,))


def _group_stats(ctx, groups_of):
    x = ctx.input("X")
    layout = ctx.attr("data_layout", "NCHW")
    xc = _norm_channel_first(x, layout).astype(np.float64)
    n, c = xc.shape[:2]
    g = groups_of(c)
    xg = xc.reshape(n, g, -1)
    mean = xg.mean(axis=2, keepdims=True)
    var = xg.var(axis=2, keepdims=True)
    inv = 1.0 / np.sqrt(var + float(ctx.attr("epsilon", 1e-5)))
    return x, layout, xc.shape, n, c, g, (xg - mean) * inv, mean, var, inv


def _affine(ctx, xhat, n, c, shape):
    y = xhat.reshape(shape)
    per_channel = (1, c) + (1,) * (len(shape) - 2)
    if ctx.has_input("Scale"):
        y = y * ctx.input("Scale").astype(np.float64).reshape(per_channel)
    if ctx.has_input("Bias"):
        y = y + ctx.input("Bias").astype(np.float64).reshape(per_channel)
    return y


def _norm_shape(out_slot, stat_slots, per_group):
    def infer(op):
        x = in_var(op, "X")
        set_out(op, out_slot, x.shape, x.dtype)
        layout = op.attr("data_layout", "NCHW")
        c = x.shape[-1] if layout == "NHWC" else x.shape[1]
        if per_group:
            g = int(op.attr("groups"))
            if c >= 0 and (g < 1 or c % g):
                raise GraphError(f"group_norm: the {c} channels of X {x.name}{list(x.shape)} must be a multiple of "
                                 f"groups ({g})")
            stat = [x.shape[0], g]
        else:
            stat = [x.shape[0] * c if x.shape[0] >= 0 and c >= 0 else -1]
        for slot in stat_slots:
            set_out(op, slot, stat, x.dtype)
    return infer


def _norm_grad(op_type, out_slot):
    def make(op):
        ins = {s: op.input(s) for s in ("X", "Scale", "Bias") if op.input(s)}
        ins[out_slot + "@GRAD"] = [grad_name(op.output(out_slot)[0])]
        outs = {s + "@GRAD": [grad_name(op.input(s)[0])] for s in ("X", "Scale", "Bias") if op.input(s)}
        return [GradOpSpec(op_type + "_grad", ins, outs, dict(op.attrs))]
    return make


def _norm_backward(ctx, out_slot, groups_of):
    x, layout, shape, n, c, g, xhat, _, _, inv = _group_stats(ctx, groups_of)
    dy = _norm_channel_first(ctx.input(out_slot + "@GRAD"), layout).astype(np.float64)
    per_channel = (1, c) + (1,) * (len(shape) - 2)
    reduce_axes = (0,) + tuple(range(2, len(shape)))
    xhat_full = xhat.reshape(shape)
    if ctx.has_output("Scale@GRAD"):
        ctx.set_output("Scale@GRAD", (dy * xhat_full).sum(axis=reduce_axes).astype(x.dtype))
    if ctx.has_output("Bias@GRAD"):
        ctx.set_output("Bias@GRAD", dy.sum(axis=reduce_axes).astype(x.dtype))
    if ctx.has_output("X@GRAD"):
        gy = dy * ctx.input("Scale").astype(np.float64).reshape(per_channel) if ctx.has_input("Scale") else dy
        gg = gy.reshape(n, g, -1)
        dx = inv * (gg - gg.mean(axis=2, keepdims=True) - xhat * (gg * xhat).mean(axis=2, keepdims=True))
        ctx.set_output("X@GRAD", _norm_channel_back(dx.reshape(shape), layout).astype(x.dtype))


@register_op("group_norm", infer_shape=_norm_shape("Y", ("Mean", "Variance"), True),
             grad=_norm_grad("group_norm", "Y"))
def group_norm(ctx):
    x, layout, shape, n, c, g, xhat, mean, var, _ = _group_stats(ctx, lambda c: int(ctx.attr("groups")))
    y = _affine(ctx, xhat, n, c, shape)
    ctx.set_output("Y", _norm_channel_back(y, layout).astype(x.dtype))
    ctx.set_output("Mean", mean.reshape(n, g).astype(x.dtype))
    ctx.set_output("Variance", var.reshape(n, g).astype(x.dtype))


@register_op("group_norm_grad")
def group_norm_grad(ctx):
    _norm_backward(ctx, "Y", lambda c: int(ctx.attr("groups")))


@register_op("instance_norm", infer_shape=_norm_shape("Y", ("SavedMean", "SavedVariance"), False),
             grad=_norm_grad("instance_norm", "Y"))
def instance_norm(ctx):
    x, layout, shape, n, c, _, xhat, mean, _, inv = _group_stats(ctx, lambda c: c)
    ctx.set_output("Y", _affine(ctx, xhat, n, c, shape).astype(x.dtype))
    ctx.set_output("SavedMean", mean.reshape(-1).astype(x.dtype))
    ctx.set_output("SavedVariance", inv.reshape(-1).astype(x.dtype))


@register_op("instance_norm_grad")
def instance_norm_grad(ctx):
    _norm_backward(ctx, "Y", lambda c: c)


# -- filter_by_instag --------------------------------------------------------------------
# Fluid 1.8's filter_by_instag: the instances of Ins (its sequences, or its rows when is_lod is
# false) whose tag list (Ins_tag's sequences) shares a tag with Filter_tag, in order. Out keeps
# their rows with one LoD entry per instance; LossWeight is 1.0 per kept instance; IndexMap
# [kept, 3] holds (Out offset, Ins offset, rows). With nothing kept, Out is one row of
# out_val_if_empty and LossWeight [[0]]. The gradient sends Out's rows back to where they came from.

def _instag_shape(op):
    x = in_var(op, "Ins")
    set_out(op, "Out", [-1] + list(x.shape[1:]), x.dtype, 1)
    set_out(op, "LossWeight", [-1, 1], "float32")
    set_out(op, "IndexMap", [-1, 3], "int64")


def _instag_keep(ctx):
    x = ctx.input("Ins")
    if ctx.attr("is_lod", True):
        lod = ctx.input_lod("Ins")
        if not lod:
            raise GraphError(f"filter_by_instag: Ins {ctx.ins['Ins'][0]} needs a LoD when is_lod is true")
        offsets = [int(o) for o in lod[0]]
    else:
        offsets = list(range(x.shape[0] + 1))
    tag_lod = ctx.input_lod("Ins_tag")
    tags = _host(ctx, ctx.input("Ins_tag")).reshape(-1)
    tag_offsets = [int(o) for o in tag_lod[0]] if tag_lod else list(range(len(tags) + 1))
    if len(tag_offsets) != len(offsets):
        raise ValueError(f"filter_by_instag: {len(offsets) - 1} instances but {len(tag_offsets) - 1} tag lists")
    wanted = set(_host(ctx, ctx.input("Filter_tag")).reshape(-1).tolist())
    rows = []
    for k in range(len(offsets) - 1):
        if wanted.intersection(tags[tag_offsets[k]:tag_offsets[k + 1]].tolist()):
            rows.append((offsets[k], offsets[k + 1] - offsets[k]))
    return x, rows


@register_op("filter_by_instag", infer_shape=_instag_shape, no_grad_inputs=("Ins_tag", "Filter_tag"),
             grad=lambda op: [GradOpSpec("filter_by_instag_grad",
                                         {"Ins": op.input("Ins"), "Ins_tag": op.input("Ins_tag"),
                                          "Filter_tag": op.input("Filter_tag"),
                                          "Out@GRAD": [grad_name(op.output("Out")[0])]},
                                         {"Ins@GRAD": [grad_name(op.input("Ins")[0])]}, dict(op.attrs))])
def filter_by_instag(ctx):
    x, rows = _instag_keep(ctx)
    xp = ctx.xp
    if not rows:
        ctx.set_output("Out", xp.full((1,) + x.shape[1:], ctx.attr("out_val_if_empty", 0), dtype=x.dtype), lod=[[0, 1]])
        ctx.set_output("LossWeight", xp.zeros((1, 1), np.float32))
        ctx.set_output("IndexMap", xp.zeros((1, 3), np.int64))
        return
    out = xp.concatenate([x[a:a + n] for a, n in rows])
    offsets = np.cumsum([0] + [n for _, n in rows]).tolist()
    ctx.set_output("Out", out, lod=[offsets])
    ctx.set_output("LossWeight", xp.ones((len(rows), 1), np.float32))
    ctx.set_output("IndexMap", xp.asarray([[offsets[k], a, n] for k, (a, n) in enumerate(rows)], dtype=np.int64))


@register_op("filter_by_instag_grad")
def filter_by_instag_grad(ctx):
    x, rows = _instag_keep(ctx)
    dout = ctx.input("Out@GRAD")
    dx = ctx.xp.zeros_like(x)
    at = 0
    for a, n in rows:
        dx[a:a + n] = dout[at:at + n]
        at += n
    ctx.set_output("Ins@GRAD", dx, lod=ctx.input_lod("Ins"))


# -- center_loss -------------------------------------------------------------------------
# Fluid 1.8's center_loss: SampleCenterDiff = X - Centers[Label], Loss [N, 1] half its squared
# norm per row; with need_update the centers move towards their samples (CentersOut, Centers
# itself): center c += rate * sum of its rows' diffs / (1 + its row count), from the centers
# the loss used. The gradient goes to X only (Paddle's).

def _center_loss_shape(op):
    x = in_var(op, "X")
    set_out(op, "SampleCenterDiff", x.shape, x.dtype)
    set_out(op, "Loss", [x.shape[0], 1], x.dtype)
    centers = in_var(op, "Centers")
    set_out(op, "CentersOut", centers.shape, centers.dtype)


@register_op("center_loss", infer_shape=_center_loss_shape,
             no_grad_inputs=("Label", "Centers", "CenterUpdateRate"),
             grad=lambda op: [GradOpSpec("center_loss_grad",
                                         {"SampleCenterDiff": op.output("SampleCenterDiff"),
                                          "Loss@GRAD": [grad_name(op.output("Loss")[0])]},
                                         {"X@GRAD": [grad_name(op.input("X")[0])]})])
def center_loss(ctx):
    x, centers, xp = ctx.input("X"), ctx.input("Centers"), ctx.xp
    label = _host(ctx, ctx.input("Label")).reshape(-1).astype(np.int64)
    clusters = int(ctx.attr("cluster_num", centers.shape[0]))
    if label.size and (label.min() < 0 or label.max() >= clusters):
        raise ValueError(f"center_loss: labels must lie in [0, {clusters})")
    idx = xp.asarray(label)
    diff = x - centers[idx]
    ctx.set_output("SampleCenterDiff", diff)
    ctx.set_output("Loss", (0.5 * (diff * diff).sum(axis=1, keepdims=True)).astype(x.dtype, copy=False))
    if ctx.attr("need_update", True):
        rate = float(_host(ctx, ctx.input("CenterUpdateRate")).reshape(-1)[0])
        acc = xp.zeros_like(centers)
        scatter_add(xp, acc, idx, diff)
        count = np.ones(centers.shape[0]) + np.bincount(label, minlength=centers.shape[0])
        ctx.set_output("CentersOut", (centers + rate * acc / xp.asarray(count[:, None])).astype(centers.dtype))
    else:
        ctx.set_output("CentersOut", centers)


@register_op("center_loss_grad")
def center_loss_grad(ctx):
    diff = ctx.input("SampleCenterDiff")
    ctx.set_output("X@GRAD", (diff * ctx.input("Loss@GRAD").reshape(-1, 1)).astype(diff.dtype, copy=False))


# -- teacher_student_sigmoid_loss, huber_loss --------------------------------------------
# teacher_student_sigmoid_loss (Fluid 1.8, for CTR distillation): Label < -1 a non-click without
# a teacher score, [-1, 0) a click without one, [0, 1) a non-click with teacher score Label,
# [1, 2] a click with teacher score Label - 1; Y is the sigmoid cross entropy of X against the
# click plus, with a teacher score, against that score. The gradient is Paddle's: the sigmoid of
# X less the targets, 0 where X reaches soft_max_lower_bound or soft_max_up_bound.

def _softplus_part(xp, x):
    return xp.maximum(x, 0) + xp.log1p(xp.exp(-xp.abs(x)))


def _teacher_targets(xp, label):
    """(click, teacher score, has a teacher)."""
    click = ((label >= -1) & (label < 0)) | (label >= 1)
    teacher = label >= 0
    score = xp.where(label >= 1, label - 1, label)
    return click.astype(label.dtype), xp.where(teacher, score, 0), teacher.astype(label.dtype)


@register_op("teacher_student_sigmoid_loss", infer_shape=lambda op: set_out(op, "Y", in_var(op, "X").shape,
                                                                            in_var(op, "X").dtype),
             no_grad_inputs=("Label",),
             grad=simple_grad("teacher_student_sigmoid_loss_grad", inputs=("X", "Label"), outputs=("Y",),
                              grad_of=("X",)))
def teacher_student_sigmoid_loss(ctx):
    x, xp = ctx.input("X"), ctx.xp
    click, score, teacher = _teacher_targets(xp, ctx.input("Label").astype(x.dtype))
    sp = _softplus_part(xp, x)
    ctx.set_output("Y", (sp - x * click + teacher * (sp - x * score)).astype(x.dtype, copy=False))


@register_op("teacher_student_sigmoid_loss_grad")
def teacher_student_sigmoid_loss_grad(ctx):
    x, xp = ctx.input("X"), ctx.xp
    click, score, teacher = _teacher_targets(xp, ctx.input("Label").astype(x.dtype))
    lo, hi = float(ctx.attr("soft_max_lower_bound", -15.0)), float(ctx.attr("soft_max_up_bound", 15.0))
    held = xp.clip(x, lo, hi)
    p = _sigmoid(xp, held)
    dx = xp.where((held >= hi) | (held <= lo), 0, (p - click) + teacher * (p - score))
    ctx.set_output("X@GRAD", (dx * ctx.input("Y@GRAD")).astype(x.dtype, copy=False))


def _huber_shape(op):
    x = in_var(op, "X")
    set_out(op, "Out", x.shape, x.dtype)
    set_out(op, "Residual", x.shape, x.dtype)


@register_op("huber_loss", infer_shape=_huber_shape,
             grad=lambda op: [GradOpSpec("huber_loss_grad", {"Residual": op.output("Residual"),
                                                             "Out@GRAD": [grad_name(op.output("Out")[0])]},
                                         {"X@GRAD": [grad_name(op.input("X")[0])],
                                          "Y@GRAD": [grad_name(op.input("Y")[0])]}, dict(op.attrs))])
def huber_loss(ctx):
    """Residual = Y - X; Out = r^2 / 2 where |r| <= delta, else delta (|r| - delta / 2)."""
    x, xp = ctx.input("X"), ctx.xp
    delta = float(ctx.attr("delta"))
    r = ctx.input("Y") - x
    a = xp.abs(r)
    ctx.set_output("Residual", r)
    ctx.set_output("Out", xp.where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta)).astype(x.dtype, copy=False))


@register_op("huber_loss_grad")
def huber_loss_grad(ctx):
    r, xp = ctx.input("Residual"), ctx.xp
    delta = float(ctx.attr("delta"))
    g = xp.where(xp.abs(r) <= delta, r, delta * xp.sign(r)) * ctx.input("Out@GRAD")
    if ctx.has_output("X@GRAD"):
        ctx.set_output("X@GRAD", (-g).astype(r.dtype, copy=False))
    if ctx.has_output("Y@GRAD"):
        ctx.set_output("Y@GRAD", g.astype(r.dtype, copy=False))


# -- add_position_encoding ---------------------------------------------------------------
# Out = alpha * X + beta * PE over X [N, L, P] (or LoD sequences [T, P]): at position j, column
# k < P/2 gets sin(j / 10000^(k / (P/2 - 1))), column P/2 + k its cos (Paddle's kernel; P/2 = 1
# divides by 10000). The gradient is alpha * Out@GRAD.

def _position_table(length, size, dtype):
    half = size // 2
    pos = np.arange(length, dtype=np.float64)[:, None]
    k = np.arange(half, dtype=np.float64)[None, :]
    val = pos / np.power(10000.0, k / (half - 1)) if half > 1 else pos / 10000.0
    return np.concatenate([np.sin(val), np.cos(val)], axis=1).astype(dtype)


@register_op("add_position_encoding", infer_shape=same_shape(),
             grad=simple_grad("add_position_encoding_grad"))
def add_position_encoding(ctx):
    x, xp = ctx.input("X"), ctx.xp
    alpha, beta = float(ctx.attr("alpha", 1.0)), float(ctx.attr("beta", 1.0))
    lod = ctx.input_lod("X")
    if x.ndim == 3:
        pe = _position_table(x.shape[1], x.shape[2], x.dtype)[None]
    else:
        offsets = lod[0] if lod else [0, x.shape[0]]
        table = _position_table(max(int(offsets[k + 1]) - int(offsets[k]) for k in range(len(offsets) - 1)),
                                x.shape[1], x.dtype)
        pe = np.concatenate([table[:int(offsets[k + 1]) - int(offsets[k])] for k in range(len(offsets) - 1)])
    ctx.set_output("Out", (alpha * x + beta * xp.asarray(pe)).astype(x.dtype, copy=False), lod=lod)


@register_op("add_position_encoding_grad")
def add_position_encoding_grad(ctx):
    dout = ctx.input("Out@GRAD")
    ctx.set_output("X@GRAD", (float(ctx.attr("alpha", 1.0)) * dout).astype(dout.dtype, copy=False),
                   lod=ctx.input_lod("X"))


# -- edit_distance -----------------------------------------------------------------------
# The Levenshtein distance of each hypothesis to its reference (LoD int64 sequences, or padded
# with HypsLength / RefsLength), divided by the reference's length when normalized: Out
# float32 [N, 1], SequenceNum int64 [1].

def _levenshtein(a, b):
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
        prev = cur
    return prev[-1]


def _edit_seqs(ctx, slot, len_slot):
    v = _host(ctx, ctx.input(slot))
    if ctx.has_input(len_slot):
        lengths = _host(ctx, ctx.input(len_slot)).reshape(-1)
        rows = v.reshape(v.shape[0], -1)
        return [rows[k, :int(n)].tolist() for k, n in enumerate(lengths)]
    lod = ctx.input_lod(slot)
    if not lod:
        raise GraphError(f"edit_distance: {slot} needs a LoD (sequences) or a length input")
    flat = v.reshape(-1)
    return [flat[int(lod[0][k]):int(lod[0][k + 1])].tolist() for k in range(len(lod[0]) - 1)]


@register_op("edit_distance", infer_shape=lambda op: (set_out(op, "Out", [-1, 1], "float32"),
                                                      set_out(op, "SequenceNum", [1], "int64")))
def edit_distance(ctx):
    hyps, refs = _edit_seqs(ctx, "Hyps", "HypsLength"), _edit_seqs(ctx, "Refs", "RefsLength")
    if len(hyps) != len(refs):
        raise ValueError(f"edit_distance: {len(hyps)} hypotheses but {len(refs)} references")
    out = []
    for h, r in zip(hyps, refs):
        d = float(_levenshtein(h, r))
        if ctx.attr("normalized", True):
            if not r:
                raise ValueError("edit_distance: a reference is empty, so the normalized distance is undefined")
            d /= len(r)
        out.append([d])
    ctx.set_output("Out", ctx.xp.asarray(np.asarray(out, np.float32).reshape(-1, 1)))
    ctx.set_output("SequenceNum", ctx.xp.asarray([len(hyps)], dtype=np.int64))


# -- sequence_erase ----------------------------------------------------------------------

@register_op("sequence_erase", infer_shape=lambda op: set_out(op, "Out", [-1, 1], in_var(op, "X").dtype, 1))
def sequence_erase(ctx):
    """The LoD sequences of X with every token in `tokens` removed (the LoD shrinks to match)."""
    x = _host(ctx, ctx.input("X")).reshape(-1)
    lod = ctx.input_lod("X")
    offsets = [int(o) for o in lod[0]] if lod else [0, x.shape[0]]
    keep = ~np.isin(x, np.asarray(ctx.attr("tokens", []), dtype=x.dtype))
    new = [0]
    for k in range(len(offsets) - 1):
        new.append(new[-1] + int(keep[offsets[k]:offsets[k + 1]].sum()))
    ctx.set_output("Out", ctx.xp.asarray(x[keep].reshape(-1, 1)), lod=[new])


# -- kron, cross, dist, diag_embed (Fluid 1.8's 2.0-preview ops) ---------------------------

def _kron_parts(x_shape, y_shape):
    n = max(len(x_shape), len(y_shape))
    xs = (1,) * (n - len(x_shape)) + tuple(x_shape)
    ys = (1,) * (n - len(y_shape)) + tuple(y_shape)
    return n, xs, ys


def _kron_shape(op):
    x, y = in_var(op, "X"), in_var(op, "Y")
    _, xs, ys = _kron_parts(x.shape, y.shape)
    set_out(op, "Out", [a * b if a >= 0 and b >= 0 else -1 for a, b in zip(xs, ys)], x.dtype)


@register_op("kron", infer_shape=_kron_shape, grad=simple_grad("kron_grad", inputs=("X", "Y")))
def kron(ctx):
    """The Kronecker product of X and Y (ranks aligned with leading 1s)."""
    x, y = ctx.input("X"), ctx.input("Y")
    _, xs, ys = _kron_parts(x.shape, y.shape)
    xb = x.reshape([v for d in xs for v in (d, 1)])
    yb = y.reshape([v for d in ys for v in (1, d)])
    ctx.set_output("Out", (xb * yb).reshape([a * b for a, b in zip(xs, ys)]).astype(x.dtype, copy=False))


@register_op("kron_grad")
def kron_grad(ctx):
    x, y, dout = ctx.input("X"), ctx.input("Y"), ctx.input("Out@GRAD")
    n, xs, ys = _kron_parts(x.shape, y.shape)
    d = dout.reshape([v for pair in zip(xs, ys) for v in pair])
    xb = x.reshape([v for dim in xs for v in (dim, 1)])
    yb = y.reshape([v for dim in ys for v in (1, dim)])
    if ctx.has_output("X@GRAD"):
        ctx.set_output("X@GRAD", (d * yb).sum(axis=tuple(range(1, 2 * n, 2))).reshape(x.shape).astype(x.dtype))
    if ctx.has_output("Y@GRAD"):
        ctx.set_output("Y@GRAD", (d * xb).sum(axis=tuple(range(0, 2 * n, 2))).reshape(y.shape).astype(y.dtype))


def _cross_axis(attrs, shape):
    dim = attrs.get("dim", None)
    if dim is None or int(dim) == -100:  # Paddle's "not given": the first axis of size 3
        for i, s in enumerate(shape):
            if s == 3:
                return i
        raise GraphError(f"cross: no dimension of size 3 in {list(shape)}")
    axis = int(dim) % len(shape)
    if shape[axis] != 3 and shape[axis] >= 0:
        raise GraphError(f"cross: dimension {dim} of {list(shape)} must have size 3")
    return axis


def _cross_shape(op):
    x = in_var(op, "X")
    _cross_axis(op.attrs, x.shape)
    set_out(op, "Out", x.shape, x.dtype)


@register_op("cross", infer_shape=_cross_shape, grad=simple_grad("cross_grad", inputs=("X", "Y")))
def cross(ctx):
    x, y = ctx.input("X"), ctx.input("Y")
    ctx.set_output("Out", ctx.xp.cross(x, y, axis=_cross_axis(ctx.attrs, x.shape)).astype(x.dtype, copy=False))


@register_op("cross_grad")
def cross_grad(ctx):
    x, y, dout, xp = ctx.input("X"), ctx.input("Y"), ctx.input("Out@GRAD"), ctx.xp
    axis = _cross_axis(ctx.attrs, x.shape)
    if ctx.has_output("X@GRAD"):
        ctx.set_output("X@GRAD", xp.cross(y, dout, axis=axis).astype(x.dtype, copy=False))
    if ctx.has_output("Y@GRAD"):
        ctx.set_output("Y@GRAD", xp.cross(dout, x, axis=axis).astype(y.dtype, copy=False))


def _dist_value(xp, d, p):
    a = xp.abs(d)
    if p == 0:
        return float((a != 0).sum())
    if np.isinf(p):
        return float(a.max() if p > 0 else a.min())
    return float((a ** p).sum() ** (1.0 / p))


@register_op("dist", infer_shape=lambda op: set_out(op, "Out", [1], in_var(op, "X").dtype),
             grad=simple_grad("dist_grad", inputs=("X", "Y"), keep_outputs=True))
def dist(ctx):
    """The p-norm of X - Y (broadcast): p = 0 counts the non-zeros, inf / -inf take the max / min."""
    x, y, xp = ctx.input("X"), ctx.input("Y"), ctx.xp
    ctx.set_output("Out", xp.asarray([_dist_value(xp, x - y, float(ctx.attr("p", 2.0)))], dtype=x.dtype))


def _sum_to(xp, g, shape):
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for i, s in enumerate(shape):
        if s == 1 and g.shape[i] != 1:
            g = g.sum(axis=i, keepdims=True)
    return g


@register_op("dist_grad")
def dist_grad(ctx):
    x, y, xp = ctx.input("X"), ctx.input("Y"), ctx.xp
    p, out = float(ctx.attr("p", 2.0)), float(ctx.input("Out").reshape(-1)[0])
    dout = float(ctx.input("Out@GRAD").reshape(-1)[0])
    d = x - y
    a = xp.abs(d)
    if p == 0 or out == 0:
        g = xp.zeros_like(d)
    elif np.isinf(p):
        g = xp.sign(d) * (a == out)
    else:
        g = xp.sign(d) * a ** (p - 1) / out ** (p - 1)
    g = g * dout
    if ctx.has_output("X@GRAD"):
        ctx.set_output("X@GRAD", _sum_to(xp, g, x.shape).astype(x.dtype, copy=False))
    if ctx.has_output("Y@GRAD"):
        ctx.set_output("Y@GRAD", _sum_to(xp, -g, y.shape).astype(y.dtype, copy=False))


def _diag_embed_dims(attrs, nd_out):
    d1, d2 = int(attrs.get("dim1", -2)) % nd_out, int(attrs.get("dim2", -1)) % nd_out
    if d1 == d2:
        raise GraphError("diag_embed: dim1 and dim2 must differ")
    return d1, d2


def _diag_embed_shape(op):
    x = in_var(op, "Input")
    nd = len(x.shape) + 1
    d1, d2 = _diag_embed_dims(op.attrs, nd)
    n = x.shape[-1] + abs(int(op.attr("offset", 0))) if x.shape[-1] >= 0 else -1
    rest = list(x.shape[:-1])
    shape = []
    for i in range(nd):
        shape.append(n if i in (d1, d2) else rest.pop(0))
    set_out(op, "Out", shape, x.dtype)


@register_op("diag_embed", infer_shape=_diag_embed_shape)
def diag_embed(ctx):
    """Input's last dimension on the offset diagonal of the (dim1, dim2) planes of a new tensor."""
    x, xp = ctx.input("Input"), ctx.xp
    offset = int(ctx.attr("offset", 0))
    nd = x.ndim + 1
    d1, d2 = _diag_embed_dims(ctx.attrs, nd)
    n = x.shape[-1] + abs(offset)
    tmp = xp.zeros(x.shape[:-1] + (n, n), dtype=x.dtype)
    k = xp.arange(x.shape[-1])
    rows, cols = (k, k + offset) if offset >= 0 else (k - offset, k)
    tmp[..., rows, cols] = x
    # tmp is [..., dim1, dim2]; move those two to their places
    order = [i for i in range(nd) if i not in (d1, d2)]
    src = list(range(nd - 2)) + [nd - 2, nd - 1]
    dest = order + [d1, d2]
    ctx.set_output("Out", xp.moveaxis(tmp, src, dest))
