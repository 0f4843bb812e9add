"""`nce`: noise-contrastive estimation (Gutmann and Hyvarinen, 2010), as Paddle 1.8's nce op
(fluid.layers.nce), with its gradient.

Inputs Input [N, D], Label [N, T] int64 (T true classes per row), Weight [C, D], Bias [C, 1]
(optional), SampleWeight [N, 1] (optional), CustomDistProbs [C] (sampler 2). For each row the op
takes its T labels and `num_neg_samples` negatives drawn from the sampler — 0 uniform over the C
classes, 1 log-uniform (P(k) = log((k + 2) / (k + 1)) / log(C), as Paddle's sampler over range C - 1), 2 custom_dist — or the
attribute `custom_neg_classes` when given (the same negatives for every row). With
o = sigmoid(x . W[k] + b[k]) and q = num_neg_samples * P(k):

    Cost[i] = w_i * (sum_true -log(o / (o + q)) + sum_neg -log(q / (o + q)))

SampleLogits holds o and SampleLabels the classes, [N, T + num_neg_samples]; the gradient
reads them. A non-zero `seed` draws the same negatives every run, as Paddle's sampler seeded
anew each run does; seed 0 draws fresh ones.
"""
from __future__ import annotations

import numpy as np

from psjob.fluid.core import scatter_add
from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, set_out

SAMPLERS = {0: "uniform", 1: "log_uniform", 2: "custom_dist"}


def _host(xp, a):
    return np.asarray(a if xp is np else xp.asnumpy(a))


def _nce_shape(op):
    x, label, w = in_var(op, "Input"), in_var(op, "Label"), in_var(op, "Weight")
    classes = int(op.attr("num_total_classes", 0))
    if len(x.shape) != 2 or len(label.shape) != 2 or len(w.shape) != 2:
        raise GraphError(f"nce: Input {x.name}{list(x.shape)}, Label {label.name}{list(label.shape)} and Weight "
                         f"{w.name}{list(w.shape)} must be 2-D")
    if w.shape[0] != classes or (x.shape[1] >= 0 and w.shape[1] != x.shape[1]):
        raise GraphError(f"nce: Weight {w.name}{list(w.shape)} must be [num_total_classes={classes}, "
                         f"{x.shape[1]}]")
    if int(op.attr("sampler", 0)) not in SAMPLERS:
        raise GraphError(f"nce: sampler must be 0 (uniform), 1 (log_uniform) or 2 (custom_dist), got "
                         f"{op.attr('sampler')!r}")
    width = label.shape[1] + _num_neg(op)
    set_out(op, "Cost", (x.shape[0], 1), x.dtype)
    set_out(op, "SampleLogits", (x.shape[0], width), x.dtype)
    set_out(op, "SampleLabels", (x.shape[0], width), "int64")


def _num_neg(op_or_ctx):
    custom = op_or_ctx.attr("custom_neg_classes", None) or []
    return len(custom) if custom else int(op_or_ctx.attr("num_neg_samples", 10))


def _probability(ctx, classes, labels):
    """P(k) of the sampler for every class in labels."""
    kind = int(ctx.attr("sampler", 0))
    if kind == 0:
        return np.full(labels.shape, 1.0 / classes)
    if kind == 1:
        return np.log((labels + 2.0) / (labels + 1.0)) / np.log(float(classes))
    return _host(ctx.xp, ctx.input("CustomDistProbs")).reshape(-1).astype(np.float64)[labels]


def _draw(ctx, classes, rows, count):
    custom = ctx.attr("custom_neg_classes", None) or []
    if custom:
        return np.tile(np.asarray(custom, dtype=np.int64), (rows, 1))
    seed = int(ctx.attr("seed", 0))
    rng = np.random.default_rng(seed if seed else None)
    kind = int(ctx.attr("sampler", 0))
    if kind == 0:
        return rng.integers(0, classes, size=(rows, count), dtype=np.int64)
    if kind == 1:
        # Paddle's LogUniformSampler over range C - 1: floor(exp(u * log C)) - 1, modulo C - 1.
        draws = np.exp(rng.uniform(0.0, 1.0, size=(rows, count)) * np.log(float(classes))).astype(np.int64) - 1
        return draws % max(classes - 1, 1)
    probs = _host(ctx.xp, ctx.input("CustomDistProbs")).reshape(-1).astype(np.float64)
    if probs.shape[0] != classes:
        raise ValueError(f"nce: custom_dist has {probs.shape[0]} probabilities for {classes} classes")
    return rng.choice(classes, size=(rows, count), p=probs / probs.sum()).astype(np.int64)


def _row_weights(ctx, rows):
    if ctx.has_input("SampleWeight"):
        return ctx.input("SampleWeight").reshape(rows, 1)
    return None


@register_op("nce", infer_shape=_nce_shape, grad=lambda op: [GradOpSpec(
    "nce_grad",
    {slot: op.input(slot) for slot in ("Input", "Label", "Weight", "Bias", "SampleWeight", "CustomDistProbs")
     if op.input(slot)} | {"SampleLogits": op.output("SampleLogits"), "SampleLabels": op.output("SampleLabels"),
                           "Cost@GRAD": [grad_name(op.output("Cost")[0])]},
    {slot + "@GRAD": [grad_name(op.input(slot)[0])] for slot in ("Input", "Weight", "Bias") if op.input(slot)},
    dict(op.attrs))], no_grad_inputs=("Label", "SampleWeight", "CustomDistProbs", "CustomDistAlias",
                                      "CustomDistAliasProbs"))
def nce(ctx):
    xp, x, w = ctx.xp, ctx.input("Input"), ctx.input("Weight")
    classes = int(ctx.attr("num_total_classes"))
    labels = _host(xp, ctx.input("Label")).astype(np.int64).reshape(x.shape[0], -1)
    if labels.size and (labels.min() < 0 or labels.max() >= classes):
        raise ValueError(f"nce: Label must lie in [0, {classes}), got {labels.min()}..{labels.max()}")
    sample = np.concatenate([labels, _draw(ctx, classes, x.shape[0], _num_neg(ctx))], axis=1)
    idx = xp.asarray(sample) if xp is not np else sample
    logits = xp.einsum("nd,nkd->nk", x, w[idx])
    if ctx.has_input("Bias"):
        logits = logits + ctx.input("Bias").reshape(-1)[idx]
    e = xp.exp(-xp.abs(logits))
    o = xp.where(logits >= 0, 1 / (1 + e), e / (1 + e))
    q = _probability(ctx, classes, sample) * _num_neg(ctx)
    q = (xp.asarray(q) if xp is not np else q).astype(x.dtype)
    true = labels.shape[1]
    cost = -xp.log(o[:, :true] / (o[:, :true] + q[:, :true])).sum(axis=1, keepdims=True)
    cost = cost - xp.log(q[:, true:] / (o[:, true:] + q[:, true:])).sum(axis=1, keepdims=True)
    weights = _row_weights(ctx, x.shape[0])
    ctx.set_output("Cost", cost if weights is None else cost * weights)
    ctx.set_output("SampleLogits", o)
    ctx.set_output("SampleLabels", idx)


@register_op("nce_grad")
def nce_grad(ctx):
    xp, x, w = ctx.xp, ctx.input("Input"), ctx.input("Weight")
    classes = int(ctx.attr("num_total_classes"))
    o, sample = ctx.input("SampleLogits"), ctx.input("SampleLabels")
    host_sample = _host(xp, sample).astype(np.int64)
    q = _probability(ctx, classes, host_sample) * _num_neg(ctx)
    q = (xp.asarray(q) if xp is not np else q).astype(x.dtype)
    true = ctx.input("Label").reshape(x.shape[0], -1).shape[1]
    # d cost / d logit: q (o - 1) / (o + q) for the true classes, o (1 - o) / (o + q) for negatives.
    g = xp.concatenate([q[:, :true] * (o[:, :true] - 1) / (o[:, :true] + q[:, :true]),
                        o[:, true:] * (1 - o[:, true:]) / (o[:, true:] + q[:, true:])], axis=1)
    dcost = ctx.input("Cost@GRAD").reshape(x.shape[0], 1)
    weights = _row_weights(ctx, x.shape[0])
    g = g * dcost if weights is None else g * dcost * weights
    flat = sample.reshape(-1)
    if ctx.has_output("Input@GRAD"):
        ctx.set_output("Input@GRAD", xp.einsum("nk,nkd->nd", g, w[sample]))
    if ctx.has_output("Weight@GRAD"):
        dw = xp.zeros_like(w)
        scatter_add(xp, dw, flat, (g[:, :, None] * x[:, None, :]).reshape(-1, x.shape[1]))
        ctx.set_output("Weight@GRAD", dw)
    if ctx.has_output("Bias@GRAD"):
        bias = ctx.input("Bias")
        db = xp.zeros(bias.shape[0], dtype=bias.dtype)
        scatter_add(xp, db, flat, g.reshape(-1))
        ctx.set_output("Bias@GRAD", db.reshape(bias.shape))
