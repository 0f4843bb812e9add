"""Metric layers: accuracy (top-k) and Fluid's bucketed AUC.

`auc` keeps its statistics in persistable int64 variables that the startup
program zeroes, so the global AUC accumulates over every batch run since —
until the startup program (or the caller) resets them. The batch AUC covers
the last `slide_steps` batches.

The global variables of `auc` and `ctr_metric_bundle` are named as Paddle names them: the
next `_generated_var_<n>` each, in Paddle's order (Paddle's LayerHelper.create_global_variable
gives a variable without a name that name). Programs and helpers find them by those names:
PaddleRec's metric_helper.get_global_auc() reads `_generated_var_2` and `_generated_var_3`
by default, the global AUC statistics of a model's first auc, and a save Paddle wrote holds
them under those names.
"""
from __future__ import annotations

from psjob.fluid import unique_name
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers import nn, tensor
from psjob.fluid.layers._checks import FLOATS, INTS, check_dtype, check_int, check_variable
from psjob.fluid.ops.metric_ops import stat_shape

__all__ = ["accuracy", "auc", "ctr_metric_bundle"]


def accuracy(input, label, k=1, correct=None, total=None):
    """Fraction of rows whose label is among the k highest-scored classes.

    correct / total, when given, are int32 [1] variables that receive the
    counts (Fluid's signature).
    """
    check_variable(input, "input", "accuracy")
    check_variable(label, "label", "accuracy")
    check_dtype(label, "label", INTS, "accuracy", " (class ids)")
    k = check_int(k, "k", "accuracy", minimum=1)
    helper = LayerHelper("accuracy")
    values, indices = nn.topk(input, k)
    acc = helper.create_variable_for_type_inference("float32", stop_gradient=True)
    correct = correct if correct is not None else helper.create_variable_for_type_inference(
        "int32", stop_gradient=True)
    total = total if total is not None else helper.create_variable_for_type_inference(
        "int32", stop_gradient=True)
    helper.append_op(type="accuracy", inputs={"Out": [values], "Indices": [indices], "Label": [label]},
                     outputs={"Accuracy": [acc], "Correct": [correct], "Total": [total]})
    return acc


def auc(input, label, curve="ROC", num_thresholds=2 ** 12 - 1, topk=1, slide_steps=1):
    """ROC AUC of positive-class probabilities (the last column of input).

    Returns (auc_out, batch_auc_out, [batch_stat_pos, batch_stat_neg,
    stat_pos, stat_neg]) as Fluid does; the batch stats in Fluid 1.x's layout,
    [slide_steps, num_thresholds + 1] (psjob.fluid.ops.metric_ops).
    """
    return _auc(input, label, curve, num_thresholds, topk, slide_steps, flat=False)


def static_auc(input, label, curve="ROC", num_thresholds=2 ** 12 - 1, topk=1, slide_steps=1,
               ins_tag_weight=None):
    """paddle.static.auc: fluid.layers.auc with Paddle 2.x's layout of the batch stats, flat
    [(slide_steps + 1) * (num_thresholds + 1) + 1] (psjob.fluid.ops.metric_ops), so a save
    of its statistics loads in Paddle and Paddle's in psjob. ins_tag_weight is checked and,
    as in Paddle's static graph (whose auc ops are not given it), has no effect."""
    if ins_tag_weight is not None:
        check_variable(ins_tag_weight, "ins_tag_weight", "auc")
        check_dtype(ins_tag_weight, "ins_tag_weight", FLOATS, "auc")
    return _auc(input, label, curve, num_thresholds, topk, slide_steps, flat=True)


def _auc(input, label, curve, num_thresholds, topk, slide_steps, flat):
    layer = "auc"
    check_variable(input, "input", layer)
    check_variable(label, "label", layer)
    check_dtype(input, "input", FLOATS, layer, " (probabilities)")
    check_dtype(label, "label", INTS + FLOATS, layer)
    if curve != "ROC":
        raise ValueError(f"{layer}: argument 'curve' must be 'ROC' (the only curve implemented), got {curve!r}")
    num_thresholds = check_int(num_thresholds, "num_thresholds", layer, minimum=1)
    slide_steps = check_int(slide_steps, "slide_steps", layer, minimum=0)
    check_int(topk, "topk", layer, minimum=1)
    helper = LayerHelper(layer)
    auc_out = helper.create_variable_for_type_inference("float64", stop_gradient=True)
    batch_auc_out = helper.create_variable_for_type_inference("float64", stop_gradient=True)

    def stat(steps):
        return tensor.create_global_var(list(stat_shape(steps, num_thresholds, flat)), 0, "int64",
                                        persistable=True, name=unique_name.generate_in(helper.main_program, "_generated_var"))

    batch_pos, batch_neg = stat(slide_steps), stat(slide_steps)
    pos, neg = stat(0), stat(0)
    for out, sp, sn, steps in ((batch_auc_out, batch_pos, batch_neg, slide_steps), (auc_out, pos, neg, 0)):
        helper.append_op(type="auc",
                         inputs={"Predict": [input], "Label": [label], "StatPos": [sp], "StatNeg": [sn]},
                         outputs={"AUC": [out], "StatPosOut": [sp], "StatNegOut": [sn]},
                         attrs={"curve": curve, "num_thresholds": num_thresholds, "slide_steps": steps})
    return auc_out, batch_auc_out, [batch_pos, batch_neg, pos, neg]


def ctr_metric_bundle(input, label, ins_tag_weight=None):
    """paddle.static.ctr_metric_bundle: the sums a CTR job's global metrics (MAE, RMSE, actual
    and predicted CTR, COPC) are computed from, accumulated over every batch run since the
    startup program zeroed them, as Paddle's: (local_sqrerr, local_abserr, local_prob, local_q,
    local_pos_num, local_ins_num), persistable float32 [1]. input is the predicted probability
    and label the 0/1 label, both [N, 1]; as Paddle's, q sums sigmoid(input) and ins_tag_weight
    (default [[1]]: a real batch) scales the batch's instance count and q."""
    layer = "ctr_metric_bundle"
    check_variable(input, "input", layer)
    check_variable(label, "label", layer)
    check_dtype(input, "input", FLOATS, layer, " (probabilities)")
    check_dtype(label, "label", FLOATS, layer, " (cast the 0/1 label to float32)")
    if tuple(input.shape) != tuple(label.shape):
        raise ValueError(f"{layer}: input {input.name}{list(input.shape)} and label {label.name}"
                         f"{list(label.shape)} must have one shape")
    weighted = ins_tag_weight is not False  # False: Fluid 1.8's contrib form, without the weight ops
    if ins_tag_weight is None:
        ins_tag_weight = tensor.fill_constant([1, 1], "float32", 1.0)
    helper = LayerHelper(layer)

    def total():
        return tensor.create_global_var([1], 0.0, "float32", persistable=True,
                                        name=unique_name.generate_in(helper.main_program, "_generated_var"))

    def tmp(dtype="float32"):
        return helper.create_variable_for_type_inference(dtype, stop_gradient=True)

    def batch_var():
        # one of Paddle's nine per-batch global temporaries (not persistable): named as there
        return helper.main_program.global_block().create_var(name=unique_name.generate_in(helper.main_program, "_generated_var"),
                                                             dtype="float32", stop_gradient=True)

    sums = {k: total() for k in ("abserr", "sqrerr", "prob", "q", "pos_num", "ins_num")}  # Paddle's order
    diff, sig, ones, prob, ab, sq, q, pos, ins = (batch_var() for _ in range(9))  # Paddle's order

    def accumulate(batch, key):
        helper.append_op(type="elementwise_add", inputs={"X": [batch], "Y": [sums[key]]},
                         outputs={"Out": [sums[key]]})

    helper.append_op(type="elementwise_sub", inputs={"X": [input], "Y": [label]}, outputs={"Out": [diff]})
    helper.append_op(type="squared_l2_norm", inputs={"X": [diff]}, outputs={"Out": [sq]})
    accumulate(sq, "sqrerr")
    helper.append_op(type="l1_norm", inputs={"X": [diff]}, outputs={"Out": [ab]})
    accumulate(ab, "abserr")
    helper.append_op(type="reduce_sum", inputs={"X": [input]}, outputs={"Out": [prob]}, attrs={"reduce_all": True})
    accumulate(prob, "prob")
    helper.append_op(type="sigmoid", inputs={"X": [input]}, outputs={"Out": [sig]})
    helper.append_op(type="reduce_sum", inputs={"X": [sig]}, outputs={"Out": [q]}, attrs={"reduce_all": True})
    helper.append_op(type="reduce_sum", inputs={"X": [label]}, outputs={"Out": [pos]}, attrs={"reduce_all": True})
    accumulate(pos, "pos_num")
    tag = tmp()
    helper.append_op(type="fill_constant_batch_size_like", inputs={"Input": [label]}, outputs={"Out": [ones]},
                     attrs={"shape": [-1, 1], "dtype": "float32", "value": 1.0})
    helper.append_op(type="reduce_sum", inputs={"X": [ones]}, outputs={"Out": [ins]}, attrs={"reduce_all": True})
    if not weighted:
        accumulate(ins, "ins_num")
        accumulate(q, "q")
        return tuple(sums[k] for k in ("sqrerr", "abserr", "prob", "q", "pos_num", "ins_num"))
    helper.append_op(type="slice", inputs={"Input": [ins_tag_weight]}, outputs={"Out": [tag]},
                     attrs={"axes": [0], "starts": [0], "ends": [1]})
    weighted_ins, weighted_q = tmp(), tmp()
    helper.append_op(type="elementwise_mul", inputs={"X": [ins], "Y": [tag]}, outputs={"Out": [weighted_ins]},
                     attrs={"axis": 0})
    accumulate(weighted_ins, "ins_num")
    helper.append_op(type="elementwise_mul", inputs={"X": [q], "Y": [tag]}, outputs={"Out": [weighted_q]},
                     attrs={"axis": 0})
    accumulate(weighted_q, "q")
    return tuple(sums[k] for k in ("sqrerr", "abserr", "prob", "q", "pos_num", "ins_num"))
