"""Metric layers: accuracy (top-k) and Fluid's bucketed AUC.

`auc` keeps its statistics in persistable int64 variables that the startup
program zeroes, so the global AUC accumulates over every batch run since —
until the startup program (or the caller) resets them. The batch AUC covers
the last `slide_steps` batches.
"""
from __future__ import annotations

from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers import nn, tensor
from psjob.fluid.layers._checks import FLOATS, INTS, check_dtype, check_int, check_variable

__all__ = ["accuracy", "auc"]


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
    stat_pos, stat_neg]) as Fluid does.
    """
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

    def stat(kind, rows):
        return tensor.create_global_var([rows, num_thresholds + 1], 0, "int64", persistable=True,
                                        name=f"{helper.name}.{kind}")

    batch_pos, batch_neg = stat("batch_stat_pos", max(slide_steps, 1)), stat("batch_stat_neg", max(slide_steps, 1))
    pos, neg = stat("stat_pos", 1), stat("stat_neg", 1)
    for out, sp, sn, steps in ((batch_auc_out, batch_pos, batch_neg, slide_steps), (auc_out, pos, neg, 0)):
        helper.append_op(type="auc",
                         inputs={"Predict": [input], "Label": [label], "StatPos": [sp], "StatNeg": [sn]},
                         outputs={"AUC": [out], "StatPosOut": [sp], "StatNegOut": [sn]},
                         attrs={"curve": curve, "num_thresholds": num_thresholds, "slide_steps": steps})
    return auc_out, batch_auc_out, [batch_pos, batch_neg, pos, neg]
