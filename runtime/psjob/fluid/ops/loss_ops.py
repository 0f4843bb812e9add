"""Loss ops: cross_entropy (on probabilities, as Fluid), softmax_with_cross_entropy,
sigmoid_cross_entropy_with_logits and log_loss.

Hard labels are int64 class ids of shape [..., 1]; a row whose label equals
`ignore_index` has zero loss and zero gradient. A label outside [0, classes)
that is not ignored is an error naming the label, not a silent wrong gather.
Probabilities are clamped at the dtype's smallest normal number before the
log, so a zero probability gives a large finite loss instead of inf/NaN.
"""
from __future__ import annotations

import numpy as np

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.activation_ops import shifted_logits
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, set_out, simple_grad


def _hard_labels(xp, label, classes, ignore_index, op_type):
    """Flat int labels, a validity mask, and labels with ignored rows set to 0."""
    lbl = label.reshape(-1)
    if lbl.dtype.kind not in "iu":
        as_int = lbl.astype(np.int64)
        if lbl.size and bool((as_int != lbl).any()):
            raise ValueError(f"{op_type}: hard labels must be whole class ids, got fractional values "
                             "(use soft_label=True for probabilities)")
        lbl = as_int
    valid = lbl != ignore_index
    if lbl.size:
        checked = lbl[valid]
        if checked.size:
            lo, hi = int(checked.min()), int(checked.max())
            if lo < 0 or hi >= classes:
                bad = lo if lo < 0 else hi
                raise IndexError(f"{op_type}: label {bad} is out of range for {classes} classes "
                                 f"(labels must lie in [0, {classes}) or equal ignore_index={ignore_index})")
    return lbl, valid, xp.where(valid, lbl, 0)


def _tiny(dtype):
    return dtype.type(np.finfo(dtype).tiny)


def _label_check(op, x_slot, what):
    x, label = in_var(op, x_slot), in_var(op, "Label")
    if op.attr("soft_label", False):
        if len(label.shape) != len(x.shape) or any(
                a >= 0 and b >= 0 and a != b for a, b in zip(label.shape, x.shape)):
            raise GraphError(f"{what}: a soft Label {label.name}{list(label.shape)} must have the "
                             f"shape of {x_slot} {x.name}{list(x.shape)}")
    elif not label.shape or label.shape[-1] != 1:
        raise GraphError(f"{what}: a hard Label {label.name}{list(label.shape)} must end in a "
                         "dimension of 1 (one class id per row)")
    return x


# -- cross_entropy -----------------------------------------------------------------------

def _ce_shape(op):
    x = _label_check(op, "X", "cross_entropy")
    set_out(op, "Y", tuple(x.shape[:-1]) + (1,), x.dtype, x.lod_level)


def _ce_grad(op):
    return [GradOpSpec("cross_entropy_grad",
                       {"X": op.input("X"), "Label": op.input("Label"),
                        "Y@GRAD": [grad_name(op.output("Y")[0])]},
                       {"X@GRAD": [grad_name(op.input("X")[0])]}, dict(op.attrs))]


@register_op("cross_entropy", infer_shape=_ce_shape, grad=_ce_grad, no_grad_inputs=("Label",))
def cross_entropy(ctx):
    xp, x, label = ctx.xp, ctx.input("X"), ctx.input("Label")
    c = x.shape[-1]
    x2 = x.reshape(-1, c)
    tiny = _tiny(x.dtype)
    if ctx.attr("soft_label", False):
        y = -(label.reshape(-1, c) * xp.log(xp.maximum(x2, tiny))).sum(axis=1)
    else:
        _, valid, safe = _hard_labels(xp, label, c, ctx.attr("ignore_index", -100), "cross_entropy")
        p = x2[xp.arange(x2.shape[0]), safe]
        y = xp.where(valid, -xp.log(xp.maximum(p, tiny)), 0)
    ctx.set_output("Y", y.astype(x.dtype, copy=False).reshape(x.shape[:-1] + (1,)), lod=ctx.input_lod("X"))


@register_op("cross_entropy_grad")
def cross_entropy_grad(ctx):
    xp, x, label, dy = ctx.xp, ctx.input("X"), ctx.input("Label"), ctx.input("Y@GRAD")
    c = x.shape[-1]
    x2 = x.reshape(-1, c)
    dy = dy.reshape(-1, 1)
    tiny = _tiny(x.dtype)
    if ctx.attr("soft_label", False):
        dx = -dy * label.reshape(-1, c) / xp.maximum(x2, tiny)
    else:
        _, valid, safe = _hard_labels(xp, label, c, ctx.attr("ignore_index", -100), "cross_entropy")
        rows = xp.arange(x2.shape[0])
        dx = xp.zeros_like(x2)
        dx[rows, safe] = xp.where(valid, -dy[:, 0] / xp.maximum(x2[rows, safe], tiny), 0)
    ctx.set_output("X@GRAD", dx.reshape(x.shape))


# -- softmax_with_cross_entropy ------------------------------------------------------------

def _swce_shape(op):
    x = _label_check(op, "Logits", "softmax_with_cross_entropy")
    if op.attr("axis", -1) not in (-1, len(x.shape) - 1):
        raise GraphError("softmax_with_cross_entropy: only the last axis is supported")
    set_out(op, "Softmax", x.shape, x.dtype, x.lod_level)
    set_out(op, "Loss", tuple(x.shape[:-1]) + (1,), x.dtype, x.lod_level)


def _swce_grad(op):
    return [GradOpSpec("softmax_with_cross_entropy_grad",
                       {"Label": op.input("Label"), "Softmax": op.output("Softmax"),
                        "Loss@GRAD": [grad_name(op.output("Loss")[0])]},
                       {"Logits@GRAD": [grad_name(op.input("Logits")[0])]}, dict(op.attrs))]


@register_op("softmax_with_cross_entropy", infer_shape=_swce_shape, grad=_swce_grad,
             no_grad_inputs=("Label",))
def softmax_with_cross_entropy(ctx):
    xp, logits, label = ctx.xp, ctx.input("Logits"), ctx.input("Label")
    c = logits.shape[-1]
    z = shifted_logits(xp, logits.reshape(-1, c), axis=1)
    e = xp.exp(z)
    total = e.sum(axis=1, keepdims=True)
    log_sm = z - xp.log(total)  # log-softmax, never log(0)
    if ctx.attr("soft_label", False):
        loss = -(label.reshape(-1, c) * log_sm).sum(axis=1)
    else:
        _, valid, safe = _hard_labels(xp, label, c, ctx.attr("ignore_index", -100),
                                      "softmax_with_cross_entropy")
        loss = xp.where(valid, -log_sm[xp.arange(z.shape[0]), safe], 0)
    lod = ctx.input_lod("Logits")
    ctx.set_output("Softmax", (e / total).reshape(logits.shape), lod=lod)
    ctx.set_output("Loss", loss.astype(logits.dtype, copy=False).reshape(logits.shape[:-1] + (1,)), lod=lod)


@register_op("softmax_with_cross_entropy_grad")
def softmax_with_cross_entropy_grad(ctx):
    xp, sm, label, dloss = ctx.xp, ctx.input("Softmax"), ctx.input("Label"), ctx.input("Loss@GRAD")
    c = sm.shape[-1]
    dx = sm.reshape(-1, c).copy()
    if ctx.attr("soft_label", False):
        dx -= label.reshape(-1, c)
        dx *= dloss.reshape(-1, 1)
    else:
        _, valid, safe = _hard_labels(xp, label, c, ctx.attr("ignore_index", -100),
                                      "softmax_with_cross_entropy")
        dx[xp.arange(dx.shape[0]), safe] -= 1
        dx *= (dloss.reshape(-1) * valid).reshape(-1, 1)
    ctx.set_output("Logits@GRAD", dx.reshape(sm.shape))


# -- sigmoid_cross_entropy_with_logits -----------------------------------------------------

def _sce_shape(op):
    x, label = in_var(op, "X"), in_var(op, "Label")
    if len(x.shape) != len(label.shape) or any(
            a >= 0 and b >= 0 and a != b for a, b in zip(x.shape, label.shape)):
        raise GraphError(f"sigmoid_cross_entropy_with_logits: Label {label.name}{list(label.shape)} "
                         f"must have the shape of X {x.name}{list(x.shape)}")
    set_out(op, "Out", x.shape, x.dtype, x.lod_level)


def _sce_grad(op):
    return [GradOpSpec("sigmoid_cross_entropy_with_logits_grad",
                       {"X": op.input("X"), "Label": op.input("Label"),
                        "Out@GRAD": [grad_name(op.output("Out")[0])]},
                       {"X@GRAD": [grad_name(op.input("X")[0])]}, dict(op.attrs))]


def _sce_norm(xp, valid, dtype):
    # Paddle divides by the number of labels that are not ignored.
    return dtype.type(max(int(valid.sum()), 1))


@register_op("sigmoid_cross_entropy_with_logits", infer_shape=_sce_shape, grad=_sce_grad,
             no_grad_inputs=("Label",))
def sigmoid_cross_entropy_with_logits(ctx):
    xp, x, label = ctx.xp, ctx.input("X"), ctx.input("Label")
    label = label.astype(x.dtype, copy=False)
    # max(x, 0) - x*z + log(1 + exp(-|x|)): no overflow for any x.
    out = xp.maximum(x, 0) - x * label + xp.log1p(xp.exp(-xp.abs(x)))
    valid = label != x.dtype.type(ctx.attr("ignore_index", -100))
    out = xp.where(valid, out, 0).astype(x.dtype, copy=False)
    if ctx.attr("normalize", False):
        out = out / _sce_norm(xp, valid, x.dtype)
    ctx.set_output("Out", out, lod=ctx.input_lod("X"))


@register_op("sigmoid_cross_entropy_with_logits_grad")
def sigmoid_cross_entropy_with_logits_grad(ctx):
    xp, x, label, dout = ctx.xp, ctx.input("X"), ctx.input("Label"), ctx.input("Out@GRAD")
    label = label.astype(x.dtype, copy=False)
    e = xp.exp(-xp.abs(x))
    sig = xp.where(x >= 0, 1 / (1 + e), e / (1 + e))
    valid = label != x.dtype.type(ctx.attr("ignore_index", -100))
    dx = xp.where(valid, (sig - label) * dout, 0).astype(x.dtype, copy=False)
    if ctx.attr("normalize", False):
        dx = dx / _sce_norm(xp, valid, x.dtype)
    ctx.set_output("X@GRAD", dx)


# -- log_loss ----------------------------------------------------------------------------

def _log_loss_shape(op):
    p, label = in_var(op, "Predicted"), in_var(op, "Labels")
    if len(p.shape) != 2 or p.shape[1] != 1 or tuple(label.shape[1:]) != (1,):
        raise GraphError(f"log_loss: Predicted {p.name}{list(p.shape)} and Labels "
                         f"{label.name}{list(label.shape)} must both be [N, 1]")
    set_out(op, "Loss", p.shape, p.dtype, p.lod_level)


def _log_loss_grad(op):
    return [GradOpSpec("log_loss_grad",
                       {"Predicted": op.input("Predicted"), "Labels": op.input("Labels"),
                        "Loss@GRAD": [grad_name(op.output("Loss")[0])]},
                       {"Predicted@GRAD": [grad_name(op.input("Predicted")[0])]}, dict(op.attrs))]


@register_op("log_loss", infer_shape=_log_loss_shape, grad=_log_loss_grad, no_grad_inputs=("Labels",))
def log_loss(ctx):
    xp, p, y = ctx.xp, ctx.input("Predicted"), ctx.input("Labels")
    eps = p.dtype.type(ctx.attr("epsilon", 1e-4))
    loss = -y * xp.log(p + eps) - (1 - y) * xp.log(1 - p + eps)
    ctx.set_output("Loss", loss.astype(p.dtype, copy=False))


@register_op("log_loss_grad")
def log_loss_grad(ctx):
    p, y, dl = ctx.input("Predicted"), ctx.input("Labels"), ctx.input("Loss@GRAD")
    eps = p.dtype.type(ctx.attr("epsilon", 1e-4))
    ctx.set_output("Predicted@GRAD", (dl * (-y / (p + eps) + (1 - y) / (1 - p + eps))).astype(p.dtype, copy=False))


# -- bpr_loss ----------------------------------------------------------------------------
# Bayesian personalized ranking (Paddle 1.8 API docs, fluid.layers.bpr_loss): row i with
# positive column l = Label[i] over C columns gives
#     Y[i] = 1/(C-1) * sum_{j != l} log(1 + exp(X[i, j] - X[i, l]))
# and Y keeps X's LoD. exp is clamped to float32's range as Paddle's TolerableValue does.

def _bpr_shape(op):
    x, label = in_var(op, "X"), in_var(op, "Label")
    if len(x.shape) != 2 or tuple(label.shape[1:]) != (1,):
        raise GraphError(f"bpr_loss: X {x.name}{list(x.shape)} must be [N, C] and Label "
                         f"{label.name}{list(label.shape)} [N, 1]")
    set_out(op, "Y", (x.shape[0], 1), x.dtype, x.lod_level)


def _bpr_parts(ctx):
    xp, x = ctx.xp, ctx.input("X")
    label = ctx.input("Label").reshape(-1).astype(np.int64)
    n, c = x.shape
    if c < 2:
        raise ValueError(f"bpr_loss: X needs at least 2 columns, got {c}")
    if label.shape[0] != n or bool((label < 0).any()) or bool((label >= c).any()):
        raise ValueError(f"bpr_loss: Label must hold one column index in [0, {c}) per row of X ({n} rows)")
    pos = xp.take_along_axis(x, label.reshape(-1, 1), axis=1)
    diff = xp.minimum(xp.exp(x - pos), np.finfo(x.dtype).max)
    not_pos = xp.arange(c).reshape(1, -1) != label.reshape(-1, 1)
    return x, label, diff, not_pos, c


@register_op("bpr_loss", infer_shape=_bpr_shape, grad=simple_grad("bpr_loss_grad", inputs=("X", "Label"),
                                                                   outputs=("Y",), grad_of=("X",)),
             no_grad_inputs=("Label",))
def bpr_loss(ctx):
    xp = ctx.xp
    x, _, e, not_pos, c = _bpr_parts(ctx)
    y = xp.where(not_pos, xp.log1p(e), 0).sum(axis=1, keepdims=True) / (c - 1)
    ctx.set_output("Y", y.astype(x.dtype, copy=False), lod=ctx.input_lod("X"))


@register_op("bpr_loss_grad")
def bpr_loss_grad(ctx):
    xp = ctx.xp
    x, label, e, not_pos, c = _bpr_parts(ctx)
    dy = ctx.input("Y@GRAD").reshape(-1, 1)
    # d/dX[i, j] = dy * sigmoid(X[i, j] - X[i, l]) / (C-1) for j != l; the positive column gets minus their sum
    g = xp.where(not_pos, dy * (e / (1 + e)) / (c - 1), 0)
    dx = g.copy()
    dx[xp.arange(x.shape[0]), label] = -g.sum(axis=1)
    ctx.set_output("X@GRAD", dx.astype(x.dtype, copy=False), lod=ctx.input_lod("X"))


# -- label_smooth, rank_loss, margin_rank_loss (Paddle 1.8 API docs, fluid.layers.*) ------------

def _label_smooth_shape(op):
    x = in_var(op, "X")
    set_out(op, "Out", x.shape, x.dtype, x.lod_level)


@register_op("label_smooth", infer_shape=_label_smooth_shape, grad=lambda op: [GradOpSpec(
    "label_smooth_grad", {"Out@GRAD": [grad_name(op.output("Out")[0])]},
    {"X@GRAD": [grad_name(op.input("X")[0])]}, dict(op.attrs))], no_grad_inputs=("PriorDist",))
def label_smooth(ctx):
    """(1 - epsilon) * X + epsilon * PriorDist, or + epsilon / classes without a prior."""
    x, eps = ctx.input("X"), float(ctx.attr("epsilon", 0.0))
    if ctx.has_input("PriorDist"):
        prior = ctx.input("PriorDist").reshape(-1)
        if prior.shape[0] != x.shape[-1]:
            raise ValueError(f"label_smooth: PriorDist has {prior.shape[0]} values but X has {x.shape[-1]} classes")
        smooth = eps * prior.astype(x.dtype)
    else:
        smooth = x.dtype.type(eps / x.shape[-1])
    ctx.set_output("Out", (1 - eps) * x + smooth, lod=ctx.input_lod("X"))


@register_op("label_smooth_grad")
def label_smooth_grad(ctx):
    dout = ctx.input("Out@GRAD")
    ctx.set_output("X@GRAD", dout * dout.dtype.type(1 - float(ctx.attr("epsilon", 0.0))))


def _pair_loss_shape(op):
    left, right, label = in_var(op, "Left"), in_var(op, "Right"), in_var(op, "Label")
    for v in (left, right, label):
        if len(v.shape) != 2 or v.shape[1] not in (1, -1):
            raise GraphError(f"{op.type}: {v.name}{list(v.shape)} must be [batch, 1]")
    set_out(op, "Out", left.shape, left.dtype)
    set_out(op, "Activated", left.shape, left.dtype)


@register_op("rank_loss", infer_shape=_pair_loss_shape, grad=simple_grad(
    "rank_loss_grad", inputs=("Label", "Left", "Right"), grad_of=("Left", "Right")), no_grad_inputs=("Label",))
def rank_loss(ctx):
    """RankNet: log(1 + exp(left - right)) - label * (left - right)."""
    xp, label, d = ctx.xp, ctx.input("Label"), ctx.input("Left") - ctx.input("Right")
    ctx.set_output("Out", xp.maximum(d, 0) + xp.log1p(xp.exp(-xp.abs(d))) - label * d)


@register_op("rank_loss_grad")
def rank_loss_grad(ctx):
    xp, label, d = ctx.xp, ctx.input("Label"), ctx.input("Left") - ctx.input("Right")
    e = xp.exp(-xp.abs(d))
    g = ctx.input("Out@GRAD") * (xp.where(d >= 0, 1 / (1 + e), e / (1 + e)) - label)
    ctx.set_output("Left@GRAD", g)
    ctx.set_output("Right@GRAD", -g)


@register_op("margin_rank_loss", infer_shape=_pair_loss_shape, grad=simple_grad(
    "margin_rank_loss_grad", inputs=("Label", "Left", "Right"), outputs=("Out",), grad_of=("Left", "Right")),
    no_grad_inputs=("Label",))
def margin_rank_loss(ctx):
    """max(0, -label * (left - right) + margin); Activated marks the rows where it is positive."""
    xp, label = ctx.xp, ctx.input("Label")
    z = -label * (ctx.input("Left") - ctx.input("Right")) + label.dtype.type(ctx.attr("margin", 0.0))
    ctx.set_output("Out", xp.maximum(z, 0))
    ctx.set_output("Activated", (z > 0).astype(z.dtype))


@register_op("margin_rank_loss_grad")
def margin_rank_loss_grad(ctx):
    label = ctx.input("Label")
    z = -label * (ctx.input("Left") - ctx.input("Right")) + label.dtype.type(ctx.attr("margin", 0.0))
    g = ctx.input("Out@GRAD") * (z > 0) * label
    ctx.set_output("Left@GRAD", -g)
    ctx.set_output("Right@GRAD", g)
