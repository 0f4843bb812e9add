"""Loss layers: cross_entropy (on probabilities), softmax_with_cross_entropy,
sigmoid_cross_entropy_with_logits and log_loss, with Fluid 1.x signatures.
Each returns the per-example loss; reduce it with `mean` for training."""
from __future__ import annotations

import numpy as np

from psjob.fluid.initializer import NumpyArrayInitializer
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import FLOATS, INTS, check_dtype, check_int, check_variable
from psjob.fluid.param_attr import ParamAttr

__all__ = ["cross_entropy", "softmax_with_cross_entropy", "sigmoid_cross_entropy_with_logits",
           "log_loss", "bpr_loss", "label_smooth", "rank_loss", "margin_rank_loss", "nce", "hsigmoid",
           "sampled_softmax_with_cross_entropy"]

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


NCE_SAMPLERS = {"uniform": 0, "log_uniform": 1, "custom_dist": 2}


def _alias_table(probs):
    """Walker's alias table of probs (the arrays Paddle 1.8's nce builds for custom_dist)."""
    n = len(probs)
    alias_probs, alias = [0.0] * n, [0] * n
    bigs, littles = [], []
    for i, p in enumerate(probs):
        scaled = p * n
        if scaled > 1.0:
            bigs.append((i, scaled))
        elif scaled < 1.0:
            littles.append((i, scaled))
        else:
            alias_probs[i], alias[i] = scaled, -1
    while bigs and littles:
        big, little = bigs.pop(0), littles.pop(0)
        alias_probs[little[0]], alias[little[0]] = little[1], big[0]
        left = big[1] + little[1] - 1
        if left > 1.0:
            bigs.append((big[0], left))
        elif left < 1.0:
            littles.append((big[0], left))
        else:
            alias_probs[big[0]], alias[big[0]] = left, -1
    for rest in bigs[:1] + littles[:1]:
        alias_probs[rest[0]], alias[rest[0]] = 1.0, -1
    return alias, alias_probs


def nce(input, label, num_total_classes, sample_weight=None, param_attr=None, bias_attr=None, num_neg_samples=None,
        name=None, sampler="uniform", custom_dist=None, seed=0, is_sparse=False):
    """Noise-contrastive estimation loss [N, 1], divided by num_neg_samples + 1 (Paddle 1.8 API docs,
    fluid.layers.nce): weight nce_N.w_0 [num_total_classes, D], bias nce_N.b_0 [num_total_classes, 1].
    is_sparse is accepted; the weight's gradient is dense here. Each call prints Paddle's line
    about prefetching to stdout, as Paddle's nce does (whatever is_sparse is)."""
    layer = "nce"
    print("With sparse mode, if your models has only small parameter prefetch may cause speed down")
    check_variable(input, "input", layer)
    check_variable(label, "label", layer)
    check_dtype(input, "input", ("float32", "float64"), layer)
    check_dtype(label, "label", ("int64",), layer)
    classes = check_int(num_total_classes, "num_total_classes", layer, minimum=1)
    if sampler not in NCE_SAMPLERS:
        raise ValueError(f"{layer}: sampler must be one of {list(NCE_SAMPLERS)}, got {sampler!r}")
    if len(input.shape) != 2 or input.shape[1] < 1 or len(label.shape) != 2:
        raise ValueError(f"{layer}: input {input.name}{list(input.shape)} must be [N, D] (D known) and label "
                         f"{label.name}{list(label.shape)} [N, num_true]")
    num_neg = 10 if num_neg_samples is None else check_int(num_neg_samples, "num_neg_samples", layer, minimum=1)
    helper = LayerHelper(layer, name)
    inputs = {"Input": [input], "Label": [label],
              "Weight": [helper.create_parameter(param_attr, [classes, input.shape[1]], input.dtype)]}
    bias = helper.create_parameter(bias_attr, [classes, 1], input.dtype, is_bias=True)
    if bias is not None:
        inputs["Bias"] = [bias]
    if sample_weight is not None:
        check_variable(sample_weight, "sample_weight", layer)
        inputs["SampleWeight"] = [sample_weight]
    if sampler == "custom_dist":
        if custom_dist is None or len(custom_dist) != classes:
            raise ValueError(f"{layer}: sampler 'custom_dist' needs custom_dist of num_total_classes={classes} "
                             "probabilities")
        alias, alias_probs = _alias_table([float(p) for p in custom_dist])
        for slot, arr in (("CustomDistProbs", np.asarray(custom_dist, "float32")),
                          ("CustomDistAlias", np.asarray(alias, "int32")),
                          ("CustomDistAliasProbs", np.asarray(alias_probs, "float32"))):
            param = helper.create_parameter(ParamAttr(), list(arr.shape), str(arr.dtype),
                                            default_initializer=NumpyArrayInitializer(arr))
            param.stop_gradient = True
            inputs[slot] = [param]
    cost = helper.create_variable_for_type_inference(input.dtype)
    logits = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    labels = helper.create_variable_for_type_inference(label.dtype, stop_gradient=True)
    helper.append_op(type=layer, inputs=inputs,
                     outputs={"Cost": [cost], "SampleLogits": [logits], "SampleLabels": [labels]},
                     attrs={"num_total_classes": classes, "num_neg_samples": num_neg, "seed": int(seed),
                            "sampler": NCE_SAMPLERS[sampler], "is_sparse": bool(is_sparse),
                            "remote_prefetch": bool(is_sparse)})
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="scale", inputs={"X": [cost]}, outputs={"Out": [out]},
                     attrs={"scale": 1.0 / (num_neg + 1), "bias": 0.0, "bias_after_scale": True})
    return out


def hsigmoid(input, label, num_classes, param_attr=None, bias_attr=None, name=None, path_table=None,
             path_code=None, is_custom=False, is_sparse=False):
    """The hierarchical sigmoid loss [N, 1] over Paddle's default binary tree of num_classes leaves,
    or a custom tree (path_table, path_code, is_custom): weight hierarchical_sigmoid_N.w_0
    [num_classes - 1, D] ([num_classes, D] custom), bias [.., 1] (Paddle 1.8 API docs,
    fluid.layers.hsigmoid). is_sparse is accepted; the weight's gradient is dense here."""
    layer = "hsigmoid"
    check_variable(input, "input", layer)
    check_variable(label, "label", layer)
    check_dtype(input, "input", ("float32", "float64"), layer)
    classes = check_int(num_classes, "num_classes", layer, minimum=2)
    if len(input.shape) != 2 or input.shape[1] < 1:
        raise ValueError(f"{layer}: input {input.name}{list(input.shape)} must be [N, D] with D known")
    if is_custom and (path_table is None or path_code is None):
        raise ValueError(f"{layer}: is_custom needs path_table and path_code")
    if not is_custom and (path_table is not None or path_code is not None):
        raise ValueError(f"{layer}: path_table and path_code need is_custom=True")
    helper = LayerHelper("hierarchical_sigmoid", name)
    nodes = classes if is_custom else classes - 1
    weight = helper.create_parameter(param_attr, [nodes, input.shape[1]], input.dtype)
    inputs = {"X": [input], "W": [weight], "Label": [label]}
    if is_custom:
        check_variable(path_table, "path_table", layer)
        check_variable(path_code, "path_code", layer)
        inputs["PathTable"], inputs["PathCode"] = [path_table], [path_code]
    bias = helper.create_parameter(bias_attr, [nodes, 1], input.dtype, is_bias=True)
    if bias is not None:
        inputs["Bias"] = [bias]
    out = helper.create_variable_for_type_inference(input.dtype)
    pre_out = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    helper.append_op(type="hierarchical_sigmoid", inputs=inputs,
                     outputs={"Out": [out], "PreOut": [pre_out], "W_Out": [weight]},
                     attrs={"num_classes": classes, "is_sparse": bool(is_sparse), "remote_prefetch": bool(is_sparse)})
    return out


def sampled_softmax_with_cross_entropy(logits, label, num_samples, num_true=1, remove_accidental_hits=True,
                                       use_customized_samples=False, customized_samples=None,
                                       customized_probabilities=None, seed=0):
    """Softmax cross entropy over each row's true classes and num_samples sampled negatives, the
    logits corrected by -log(sampling probability) (Paddle 1.8 API docs,
    fluid.layers.sampled_softmax_with_cross_entropy): the sample_logits op, then
    softmax_with_cross_entropy on the sampled logits, divided by num_true."""
    layer = "sampled_softmax_with_cross_entropy"
    check_variable(logits, "logits", layer)
    check_variable(label, "label", layer)
    check_dtype(label, "label", ("int64",), layer)
    num_samples = check_int(num_samples, "num_samples", layer, minimum=1)
    num_true = check_int(num_true, "num_true", layer, minimum=1)
    if num_true != 1:
        raise ValueError(f"{layer}: num_true must be 1 (Paddle's one_hot of the sampled labels needs it)")
    helper = LayerHelper("sample_logits")
    inputs = {"Logits": [logits], "Labels": [label]}
    outputs = {}
    if use_customized_samples:
        check_variable(customized_samples, "customized_samples", layer)
        check_variable(customized_probabilities, "customized_probabilities", layer)
        inputs["CustomizedSamples"], inputs["CustomizedProbabilities"] = [customized_samples], [customized_probabilities]
    else:
        outputs["Samples"] = [helper.create_variable_for_type_inference("int64", stop_gradient=True)]
        outputs["Probabilities"] = [helper.create_variable_for_type_inference(logits.dtype, stop_gradient=True)]
    sampled_logits = helper.create_variable_for_type_inference(logits.dtype)
    sampled_label = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    outputs.update(SampledLogits=[sampled_logits], SampledLabels=[sampled_label])
    helper.append_op(type="sample_logits", inputs=inputs, outputs=outputs,
                     attrs={"use_customized_samples": bool(use_customized_samples), "uniq": True,
                            "remove_accidental_hits": bool(remove_accidental_hits), "num_samples": num_samples,
                            "seed": int(seed)})
    # Paddle one-hot encodes the sampled labels and takes the soft-label loss; the hard label is the same.
    return softmax_with_cross_entropy(sampled_logits, sampled_label)
