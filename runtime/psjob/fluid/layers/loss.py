"""Loss layers: cross_entropy (on probabilities), softmax_with_cross_entropy,
sigmoid_cross_entropy_with_logits and log_loss, with Fluid 1.x signatures.
Each returns the per-example loss; reduce it with `mean` for training."""
from __future__ import annotations

from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import FLOATS, INTS, check_dtype, check_int, check_variable

__all__ = ["cross_entropy", "softmax_with_cross_entropy", "sigmoid_cross_entropy_with_logits",
           "log_loss", "bpr_loss", "label_smooth", "rank_loss", "margin_rank_loss"]

IGNORE_INDEX = -100


def _check_label(layer, x, label, soft_label, x_arg):
    check_variable(x, x_arg, layer)
    check_variable(label, "label", layer)
    check_dtype(x, x_arg, FLOATS, layer)
    if soft_label:
        check_dtype(label, "label", FLOATS, layer, " (soft labels are probabilities)")
        if len(label.shape) != len(x.shape):
            raise ValueError(f"{layer}: a soft 'label' {label.name}{list(label.shape)} must have the "
                             f"shape of {x_arg!r} {x.name}{list(x.shape)}")
    else:
        # Fluid's data() defaults to float32, and its guide declares class-id
        # labels that way; float labels are accepted and must hold whole ids.
        check_dtype(label, "label", INTS + FLOATS, layer, " (hard labels are class ids)")
        if not label.shape or label.shape[-1] != 1:
            raise ValueError(f"{layer}: a hard 'label' {label.name}{list(label.shape)} must end in a "
                             "dimension of 1 (declare it with shape=[1])")


def cross_entropy(input, label, soft_label=False, ignore_index=IGNORE_INDEX):
    """-log(input[label]) per row; `input` holds probabilities (e.g. softmax output)."""
    _check_label("cross_entropy", input, label, soft_label, "input")
    ignore_index = check_int(ignore_index, "ignore_index", "cross_entropy")
    helper = LayerHelper("cross_entropy")
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="cross_entropy", inputs={"X": [input], "Label": [label]}, outputs={"Y": [out]},
                     attrs={"soft_label": bool(soft_label), "ignore_index": ignore_index})
    return out


def softmax_with_cross_entropy(logits, label, soft_label=False, ignore_index=IGNORE_INDEX,
                               numeric_stable_mode=True, return_softmax=False, axis=-1):
    """Cross entropy of softmax(logits), computed stably from the logits."""
    layer = "softmax_with_cross_entropy"
    _check_label(layer, logits, label, soft_label, "logits")
    if axis not in (-1, len(logits.shape) - 1):
        raise ValueError(f"{layer}: argument 'axis' must be the last axis, got {axis}")
    helper = LayerHelper(layer)
    softmax = helper.create_variable_for_type_inference(logits.dtype)
    loss = helper.create_variable_for_type_inference(logits.dtype)
    helper.append_op(type=layer, inputs={"Logits": [logits], "Label": [label]},
                     outputs={"Softmax": [softmax], "Loss": [loss]},
                     attrs={"soft_label": bool(soft_label),
                            "ignore_index": check_int(ignore_index, "ignore_index", layer),
                            "numeric_stable_mode": bool(numeric_stable_mode), "axis": -1})
    return (loss, softmax) if return_softmax else loss


def sigmoid_cross_entropy_with_logits(x, label, ignore_index=IGNORE_INDEX, name=None, normalize=False):
    """Element-wise logistic loss of logits x against 0/1 (float) labels."""
    layer = "sigmoid_cross_entropy_with_logits"
    check_variable(x, "x", layer)
    check_variable(label, "label", layer)
    check_dtype(x, "x", FLOATS, layer)
    check_dtype(label, "label", FLOATS, layer,
                " (cast integer labels with fluid.layers.cast(label, 'float32'))")
    if len(label.shape) != len(x.shape):
        raise ValueError(f"{layer}: 'label' {label.name}{list(label.shape)} must have the shape of "
                         f"'x' {x.name}{list(x.shape)}")
    helper = LayerHelper(layer, name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type=layer, inputs={"X": [x], "Label": [label]}, outputs={"Out": [out]},
                     attrs={"ignore_index": check_int(ignore_index, "ignore_index", layer),
                            "normalize": bool(normalize)})
    return out


def log_loss(input, label, epsilon=1e-4, name=None):
    """-label*log(input+eps) - (1-label)*log(1-input+eps) for probabilities [N, 1]."""
    check_variable(input, "input", "log_loss")
    check_variable(label, "label", "log_loss")
    check_dtype(input, "input", FLOATS, "log_loss")
    check_dtype(label, "label", FLOATS, "log_loss")
    helper = LayerHelper("log_loss", name)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="log_loss", inputs={"Predicted": [input], "Labels": [label]},
                     outputs={"Loss": [out]}, attrs={"epsilon": float(epsilon)})
    return out


def bpr_loss(input, label, name=None):
    """Bayesian personalized ranking loss of scores [N, C] whose positive column is label [N, 1]:
    the mean over the other columns j of log(1 + exp(input[j] - input[label])), [N, 1]
    (Paddle 1.8 API docs, fluid.layers.bpr_loss)."""
    check_variable(input, "input", "bpr_loss")
    check_variable(label, "label", "bpr_loss")
    check_dtype(input, "input", FLOATS, "bpr_loss")
    check_dtype(label, "label", INTS, "bpr_loss")
    helper = LayerHelper("bpr_loss", name)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="bpr_loss", inputs={"X": [input], "Label": [label]}, outputs={"Y": [out]})
    return out


def label_smooth(label, prior_dist=None, epsilon=0.1, dtype="float32", name=None):
    """(1 - epsilon) * label + epsilon * prior_dist (uniform over the classes when None)
    (Paddle 1.8 API docs, fluid.layers.label_smooth)."""
    layer = "label_smooth"
    check_variable(label, "label", layer)
    if not 0.0 <= float(epsilon) <= 1.0:
        raise ValueError(f"{layer}: argument 'epsilon' must lie in [0, 1], got {epsilon}")
    helper = LayerHelper(layer, name)
    out = helper.create_variable_for_type_inference(label.dtype)
    inputs = {"X": [label]}
    if prior_dist is not None:
        check_variable(prior_dist, "prior_dist", layer)
        inputs["PriorDist"] = [prior_dist]
    helper.append_op(type=layer, inputs=inputs, outputs={"Out": [out]}, attrs={"epsilon": float(epsilon)})
    return out


def _pair_loss(layer, label, left, right, attrs):
    for arg, v in (("label", label), ("left", left), ("right", right)):
        check_variable(v, arg, layer)
    helper = LayerHelper(layer)
    out = helper.create_variable_for_type_inference(left.dtype)
    outputs = {"Out": [out]}
    if layer == "margin_rank_loss":
        outputs["Activated"] = [helper.create_variable_for_type_inference(left.dtype, stop_gradient=True)]
    helper.append_op(type=layer, inputs={"Label": [label], "Left": [left], "Right": [right]}, outputs=outputs,
                     attrs=attrs)
    return out


def rank_loss(label, left, right, name=None):
    """RankNet's loss log(1 + exp(left - right)) - label * (left - right), each [batch, 1]
    (Paddle 1.8 API docs, fluid.layers.rank_loss)."""
    return _pair_loss("rank_loss", label, left, right, {})


def margin_rank_loss(label, left, right, margin=0.1, name=None):
    """max(0, -label * (left - right) + margin), each [batch, 1] (Paddle 1.8 API docs,
    fluid.layers.margin_rank_loss)."""
    return _pair_loss("margin_rank_loss", label, left, right, {"margin": float(margin)})
