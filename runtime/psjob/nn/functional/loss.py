"""paddle.nn.functional's losses beyond cross entropy, BCE and MSE, built from tensor ops whose
gradients are registered (Paddle 2.x API docs, paddle.nn.functional.*): l1_loss, smooth_l1_loss,
kl_div, margin_ranking_loss, nll_loss, sigmoid_focal_loss, hinge_embedding_loss,
triplet_margin_loss, and pairwise_distance and label_smooth, which they use or sit beside.

`reduction` is 'mean', 'sum' or 'none' (kl_div also 'batchmean'): 'mean' and 'sum' give a
one-element Variable."""
from __future__ import annotations

from psjob import tensor as _t
from psjob.fluid import layers as _layers
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import FLOATS, check_dtype, check_variable

__all__ = ["l1_loss", "smooth_l1_loss", "kl_div", "margin_ranking_loss", "nll_loss", "sigmoid_focal_loss",
           "hinge_embedding_loss", "triplet_margin_loss", "pairwise_distance", "label_smooth", "hsigmoid_loss"]

REDUCTIONS = ("mean", "sum", "none")


def _check(layer, reduction, **variables):
    if reduction not in REDUCTIONS + (("batchmean",) if layer == "kl_div" else ()):
        raise ValueError(f"{layer}: reduction must be one of {list(REDUCTIONS)}, got {reduction!r}")
    for arg, v in variables.items():
        check_variable(v, arg, layer)


def _reduce(loss, reduction):
    if reduction == "mean":
        return _layers.mean(loss)
    if reduction == "sum":
        return _layers.reduce_sum(loss)
    return loss


def l1_loss(input, label, reduction="mean", name=None):
    """|input - label|."""
    _check("l1_loss", reduction, input=input, label=label)
    return _reduce(_t.abs(_t.subtract(input, label)), reduction)


def smooth_l1_loss(input, label, reduction="mean", delta=1.0, name=None):
    """Huber: 0.5 * d^2 where |d| < delta, else delta * (|d| - 0.5 * delta), d = input - label."""
    _check("smooth_l1_loss", reduction, input=input, label=label)
    delta = float(delta)
    if delta <= 0:
        raise ValueError(f"smooth_l1_loss: delta must be positive, got {delta}")
    d = _t.abs(_t.subtract(input, label))
    small = _t.cast(_t.less_than(d, _t.full([1], delta, d.dtype)), d.dtype)
    quad = _t.scale(_t.square(d), 0.5)
    lin = _t.scale(d, delta, bias=-0.5 * delta * delta)
    loss = _t.add(_t.multiply(small, quad), _t.multiply(_t.scale(small, -1.0, bias=1.0), lin))
    return _reduce(loss, reduction)


def kl_div(input, label, reduction="mean", log_target=False, name=None):
    """label * (log(label) - input) (0 where label <= 0), input being log-probabilities;
    log_target: exp(label) * (label - input). 'batchmean' divides the sum by the batch size."""
    _check("kl_div", reduction, input=input, label=label)
    if log_target:
        loss = _t.multiply(_t.exp(label), _t.subtract(label, input))
    else:
        positive = _t.greater_than(label, _t.zeros_like(label))
        safe = _t.where(positive, label, _t.ones_like(label))
        loss = _t.where(positive, _t.multiply(label, _t.subtract(_t.log(safe), input)), _t.zeros_like(input))
    if reduction == "batchmean":
        if input.shape[0] < 0:
            total = _layers.reduce_sum(loss)
            rows = _t.cast(_layers.slice(_layers.shape(input), [0], [0], [1]), loss.dtype)
            return _t.divide(total, rows)
        return _t.scale(_layers.reduce_sum(loss), 1.0 / max(int(input.shape[0]), 1))
    return _reduce(loss, reduction)


def margin_ranking_loss(input, other, label, margin=0.0, reduction="mean", name=None):
    """max(0, -label * (input - other) + margin)."""
    _check("margin_ranking_loss", reduction, input=input, other=other, label=label)
    z = _t.scale(_t.multiply(_t.scale(label, -1.0), _t.subtract(input, other)), 1.0, bias=float(margin))
    return _reduce(_layers.relu(z), reduction)


def _nll_rows(input, label, weight, ignore_index, classes):
    """(-weight[label] * input[label] per row of input [M, C], the one-hot weights [M, C])."""
    keep = _t.cast(_t.not_equal(label, _t.full([1], int(ignore_index), label.dtype)), input.dtype)
    safe = _t.multiply(label, _t.cast(keep, label.dtype))
    hot = _t.multiply(_t.cast(_one_hot(safe, classes), input.dtype), _layers.unsqueeze(keep, [1]))
    if weight is not None:
        check_variable(weight, "weight", "nll_loss")
        hot = _layers.elementwise_mul(hot, weight, axis=-1)
    return _t.scale(_layers.reduce_sum(_t.multiply(hot, input), dim=1), -1.0), hot


def nll_loss(input, label, weight=None, ignore_index=-100, reduction="mean", name=None):
    """-weight[label] * input[label] for log-probabilities input [N, C] (label [N] int64) or
    [N, C, d1, ..., dk] (label [N, d1, ..., dk]: one loss per position, the class axis second,
    as Paddle's); 'mean' divides by the sum of the weights of the entries not labelled
    ignore_index."""
    _check("nll_loss", reduction, input=input, label=label)
    check_dtype(label, "label", ("int64", "int32"), "nll_loss")
    if len(input.shape) < 2:
        raise ValueError(f"nll_loss: input {input.name}{list(input.shape)} must be [N, C] or [N, C, d1, ...]")
    classes = int(input.shape[1])
    rest = list(input.shape[2:])
    if rest:
        if len(label.shape) != len(input.shape) - 1:
            raise ValueError(f"nll_loss: label {label.name}{list(label.shape)} must be [N, d1, ...] for input "
                             f"{input.name}{list(input.shape)}")
        if classes < 0 or any(d < 0 for d in rest):
            raise ValueError(f"nll_loss: input {input.name}{list(input.shape)} needs known class and spatial sizes")
        # The class axis moved last, every position a row: the 2-D loss, then its shape back.
        perm = [0] + list(range(2, len(input.shape))) + [1]
        rows, hot = _nll_rows(_layers.reshape(_layers.transpose(input, perm), [-1, classes]),
                              _layers.reshape(label, [-1]), weight, ignore_index, classes)
        if reduction == "none":
            return _layers.reshape(rows, [-1] + rest)
    else:
        if len(label.shape) == 2 and label.shape[1] == 1:
            label = _layers.squeeze(label, [1])
        rows, hot = _nll_rows(input, label, weight, ignore_index, classes)
    if reduction == "mean":
        return _t.divide(_layers.reduce_sum(rows), _layers.reduce_sum(hot))
    return _reduce(rows, reduction)


def _one_hot(ids, depth):
    helper = LayerHelper("one_hot")
    out = helper.create_variable_for_type_inference("float32", stop_gradient=True)
    helper.append_op(type="one_hot_v2", inputs={"X": [ids]}, outputs={"Out": [out]}, attrs={"depth": depth})
    return out


def sigmoid_focal_loss(logit, label, normalizer=None, alpha=0.25, gamma=2.0, reduction="sum", name=None):
    """alpha_t * (1 - p_t)^gamma * BCE(logit, label), p = sigmoid(logit) (Lin et al., Focal Loss),
    divided by normalizer when given."""
    _check("sigmoid_focal_loss", reduction, logit=logit, label=label)
    check_dtype(logit, "logit", FLOATS, "sigmoid_focal_loss")
    ce = _layers.sigmoid_cross_entropy_with_logits(logit, label)
    p = _layers.sigmoid(logit)
    one_minus_label = _t.scale(label, -1.0, bias=1.0)
    p_t = _t.add(_t.multiply(p, label), _t.multiply(_t.scale(p, -1.0, bias=1.0), one_minus_label))
    alpha_t = _t.add(_t.scale(label, float(alpha)), _t.scale(one_minus_label, 1.0 - float(alpha)))
    loss = _t.multiply(_t.multiply(alpha_t, ce), _t.pow(_t.scale(p_t, -1.0, bias=1.0), float(gamma)))
    if normalizer is not None:
        check_variable(normalizer, "normalizer", "sigmoid_focal_loss")
        loss = _t.divide(loss, normalizer)
    return _reduce(loss, reduction)


def hinge_embedding_loss(input, label, margin=1.0, reduction="mean", name=None):
    """input where label is 1, max(0, margin - input) where label is -1 (0 elsewhere)."""
    _check("hinge_embedding_loss", reduction, input=input, label=label)
    zero = _t.zeros_like(input)
    pos = _t.where(_t.equal(label, _t.ones_like(label)), input, zero)
    neg = _t.where(_t.equal(label, _t.scale(_t.ones_like(label), -1.0)),
                   _layers.relu(_t.scale(input, -1.0, bias=float(margin))), zero)
    return _reduce(_t.add(pos, neg), reduction)


def pairwise_distance(x, y, p=2.0, epsilon=1e-6, keepdim=False, name=None):
    """||x - y + epsilon||_p along the last axis."""
    check_variable(x, "x", "pairwise_distance")
    check_variable(y, "y", "pairwise_distance")
    diff = _t.scale(_t.subtract(x, y), 1.0, bias=float(epsilon))
    helper = LayerHelper("p_norm", name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="p_norm", inputs={"X": [diff]}, outputs={"Out": [out]},
                     attrs={"axis": -1, "porder": float(p), "keepdim": bool(keepdim), "epsilon": 1e-12})
    return out


def triplet_margin_loss(input, positive, negative, margin=1.0, p=2, epsilon=1e-6, swap=False, reduction="mean",
                        name=None):
    """max(d(input, positive) - d(input, negative) + margin, 0), d the pairwise_distance;
    swap: the negative distance is the smaller of d(input, negative) and d(positive, negative)."""
    _check("triplet_margin_loss", reduction, input=input, positive=positive, negative=negative)
    d_pos = pairwise_distance(input, positive, p, epsilon)
    d_neg = pairwise_distance(input, negative, p, epsilon)
    if swap:
        d_neg = _t.minimum(d_neg, pairwise_distance(positive, negative, p, epsilon))
    loss = _layers.relu(_t.scale(_t.subtract(d_pos, d_neg), 1.0, bias=float(margin)))
    return _reduce(loss, reduction)


def label_smooth(label, prior_dist=None, epsilon=0.1, name=None):
    """(1 - epsilon) * label + epsilon * prior_dist (uniform when None): Paddle's label_smooth op."""
    return _layers.label_smooth(label, prior_dist, epsilon, name=name)


def hsigmoid_loss(input, label, num_classes, weight, bias=None, path_table=None, path_code=None, is_sparse=False,
                  name=None):
    """The hierarchical sigmoid loss [N, 1] (Paddle 2.x's hsigmoid_loss): Paddle's
    hierarchical_sigmoid op over weight [num_classes - 1, D] (or a custom tree's path_table and
    path_code), as fluid.layers.hsigmoid."""
    check_variable(input, "input", "hsigmoid_loss")
    check_variable(label, "label", "hsigmoid_loss")
    check_variable(weight, "weight", "hsigmoid_loss")
    if (path_table is None) != (path_code is None):
        raise ValueError("hsigmoid_loss: give both path_table and path_code, or neither")
    inputs = {"X": [input], "W": [weight], "Label": [label]}
    if bias is not None:
        inputs["Bias"] = [bias]
    if path_table is not None:
        inputs["PathTable"], inputs["PathCode"] = [path_table], [path_code]
    helper = LayerHelper("hsigmoid_loss", name)
    out = helper.create_variable_for_type_inference(input.dtype)
    pre_out = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    helper.append_op(type="hierarchical_sigmoid", inputs=inputs,
                     outputs={"Out": [out], "PreOut": [pre_out], "W_Out": [weight]},
                     attrs={"num_classes": int(num_classes), "is_sparse": bool(is_sparse), "remote_prefetch": False})
    return out
