"""Every op's gradient against central finite differences.

For one op the harness builds a Program holding the op (and, separately,
the op followed by the gradient ops its registered grad maker produces),
feeds a random weight R_o for every output gradient the grad ops read, and
compares the analytic input gradients with numeric derivatives of
f = sum_o sum(R_o * o) computed by re-running the forward op with one input
element nudged by ±eps. Inputs are float64 wherever the op allows it.

`test_every_op_with_a_gradient_has_a_case` enumerates the registry, so an op
added later with a grad maker fails the suite until it gets a case here.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.fluid.core import SelectedRows
from psjob.fluid.framework import EMPTY_VAR_NAME, GRAD_SUFFIX, VarType
from psjob.fluid.ops import py_func_ops, registry

RNG = np.random.default_rng(20240601)


@dataclass(frozen=True)
class In:
    name: str
    value: np.ndarray
    lod: list | None = None
    diff: bool = True


@dataclass(frozen=True)
class Case:
    id: str
    op: str
    inputs: dict  # slot -> [In]
    outputs: dict  # slot -> number of outputs, or [names] to alias inputs (in-place)
    attrs: dict = field(default_factory=dict)
    eps: float = 1e-6
    rtol: float = 1e-5
    atol: float = 1e-7
    samples: int = 24


def f64(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape)


def away_from_zero(*shape):
    v = RNG.uniform(0.2, 1.0, size=shape)
    return v * RNG.choice([-1.0, 1.0], size=shape)


def probs(*shape):
    e = np.exp(f64(*shape, lo=-1, hi=1))
    return e / e.sum(axis=-1, keepdims=True)


def distinct_values(*shape):
    """Values at least 1/size apart (a max or a sort has no ties to break)."""
    return RNG.permutation(int(np.prod(shape))).reshape(shape) / float(np.prod(shape))


def ids(values, lengths=None):
    arr = np.asarray(values, dtype=np.int64).reshape(-1, 1)
    if lengths is None:
        return arr, None
    return arr, [[0] + np.cumsum(lengths).tolist()]


def _cases():
    c = []
    # -- math, tensor and activation ops (the core's own) --------------------------------
    c.append(Case("mul", "mul", {"X": [In("x", f64(3, 4))], "Y": [In("y", f64(4, 5))]}, {"Out": 1}))
    c.append(Case("mul-num-flatten-dims", "mul", {"X": [In("x", f64(2, 3, 4))], "Y": [In("y", f64(4, 5))]},
                  {"Out": 1}, {"x_num_col_dims": 2, "y_num_col_dims": 1}))
    c.append(Case("mul-y-num-col-dims", "mul", {"X": [In("x", f64(3, 4))], "Y": [In("y", f64(2, 2, 3))]},
                  {"Out": 1}, {"x_num_col_dims": 1, "y_num_col_dims": 2}))
    for t in ("add", "sub", "mul", "div", "max", "min", "pow"):
        y_mid = away_from_zero(3) + (2.0 if t == "div" else 0.0)
        # pow: a positive base keeps x ** y and log(x) real.
        x = f64(2, 3, 4, lo=0.5, hi=2.0) if t == "pow" else away_from_zero(2, 3, 4)
        c.append(Case(f"elementwise_{t}-axis1", f"elementwise_{t}",
                      {"X": [In("x", x)], "Y": [In("y", y_mid)]}, {"Out": 1}, {"axis": 1}))
        y_tail = away_from_zero(3, 4) * 0.5 + (2.0 if t == "div" else 0.37)
        c.append(Case(f"elementwise_{t}-trailing", f"elementwise_{t}",
                      {"X": [In("x", x)], "Y": [In("y", y_tail)]}, {"Out": 1}, {"axis": -1}))
        x_same = f64(3, 4, lo=0.5, hi=2.0) if t == "pow" else away_from_zero(3, 4)
        c.append(Case(f"elementwise_{t}-same-shape", f"elementwise_{t}",
                      {"X": [In("x", x_same)],
                       "Y": [In("y", away_from_zero(3, 4) + (2.0 if t == "div" else 0.11))]}, {"Out": 1}))
        # Both operands broadcast: [3, 4, 1] with [1, 4, 5] is [3, 4, 5].
        x_col = f64(3, 4, 1, lo=0.5, hi=2.0) if t == "pow" else away_from_zero(3, 4, 1)
        c.append(Case(f"elementwise_{t}-both-ways", f"elementwise_{t}",
                      {"X": [In("x", x_col)],
                       "Y": [In("y", away_from_zero(1, 4, 5) + (2.0 if t == "div" else 0.23))]}, {"Out": 1}))
    c.append(Case("mean", "mean", {"X": [In("x", f64(3, 4))]}, {"Out": 1}))
    c.append(Case("sum", "sum", {"X": [In("a", f64(2, 3)), In("b", f64(2, 3)), In("c", f64(2, 3))]}, {"Out": 1}))
    c.append(Case("scale", "scale", {"X": [In("x", f64(3, 4))]}, {"Out": 1}, {"scale": 2.5, "bias": 0.7}))
    c.append(Case("assign", "assign", {"X": [In("x", f64(3, 4))]}, {"Out": 1}))
    # tensor arrays, given here as one stacked tensor: a read takes slot I, a write fills it
    c.append(Case("read_from_array", "read_from_array",
                  {"X": [In("arr", f64(3, 2, 4))], "I": [In("i", np.array([1], np.int64), diff=False)]},
                  {"Out": 1}))
    c.append(Case("write_to_array", "write_to_array",
                  {"X": [In("x", f64(2, 4))], "I": [In("i", np.array([0], np.int64), diff=False)]},
                  {"Out": 1}))
    # DynamicRNN's ops; the rank table given as the level-0 offsets it is built from
    table = np.array([0, 2, 3, 6], np.int64)  # lengths 2, 1, 3: rank order 2, 0, 1
    c.append(Case("shrink_rnn_memory", "shrink_rnn_memory",
                  {"X": [In("x", f64(3, 4))], "I": [In("i", np.array([1], np.int64), diff=False)],
                   "RankTable": [In("table", table, diff=False)]}, {"Out": 1}))
    c.append(Case("reorder_lod_tensor_by_rank", "reorder_lod_tensor_by_rank",
                  {"X": [In("x", f64(3, 4))], "RankTable": [In("table", table, diff=False)]}, {"Out": 1}))
    even = np.array([0, 2, 4], np.int64)  # two sequences of two steps: every step is [2, 3]
    c.append(Case("lod_tensor_to_array", "lod_tensor_to_array",
                  {"X": [In("x", f64(4, 3))], "RankTable": [In("table", even, diff=False)]}, {"Out": 1}))
    c.append(Case("array_to_lod_tensor", "array_to_lod_tensor",
                  {"X": [In("arr", f64(2, 2, 3))], "RankTable": [In("table", even, diff=False)]}, {"Out": 1}))
    # fluid.layers.IfElse's row routing
    mask = np.array([[True], [False], [True], [True]])
    c.append(Case("split_lod_tensor", "split_lod_tensor",
                  {"X": [In("x", f64(4, 3))], "Mask": [In("mask", mask, diff=False)]},
                  {"OutTrue": 1, "OutFalse": 1}, {"level": 0}))
    c.append(Case("merge_lod_tensor", "merge_lod_tensor",
                  {"X": [In("cond", mask, diff=False)], "Mask": [In("mask", mask, diff=False)],
                   "InTrue": [In("t", f64(3, 2))], "InFalse": [In("f", f64(1, 2))]}, {"Out": 1}, {"level": 0}))
    # cond's merge: Out is X[Mask]; the branch not taken (X[0] here) gets no gradient
    c.append(Case("select_input", "select_input",
                  {"X": [In("f", f64(2, 3), diff=False), In("t", f64(2, 3))],
                   "Mask": [In("m", np.array([1], np.int32), diff=False)]}, {"Out": 1}))
    c.append(Case("cast-float64-to-float32", "cast", {"X": [In("x", f64(3, 4))]}, {"Out": 1},
                  {"in_dtype": "float64", "out_dtype": "float32"}, eps=1e-3, rtol=1e-3, atol=1e-4))
    c.append(Case("relu", "relu", {"X": [In("x", away_from_zero(3, 4))]}, {"Out": 1}))
    c.append(Case("sigmoid", "sigmoid", {"X": [In("x", f64(3, 4, lo=-4, hi=4))]}, {"Out": 1}))
    c.append(Case("tanh", "tanh", {"X": [In("x", f64(3, 4, lo=-2, hi=2))]}, {"Out": 1}))
    c.append(Case("softmax", "softmax", {"X": [In("x", f64(3, 5, lo=-2, hi=2))]}, {"Out": 1}))
    # Paddle 2.x's activations (activation_ops.py); kinks (relu6 at 0 and 6, hard_* at their ramp
    # ends) are kept away from the sampled points.
    kinked = away_from_zero(3, 4) * 2.5
    for op, attrs, x in (("relu6", {"threshold": 6.0}, away_from_zero(3, 4) * 5.0),
                         ("elu", {"alpha": 0.7}, kinked), ("selu", {}, kinked),
                         ("gelu", {"approximate": False}, f64(3, 4, lo=-3, hi=3)),
                         ("gelu", {"approximate": True}, f64(3, 4, lo=-3, hi=3)),
                         ("silu", {}, f64(3, 4, lo=-4, hi=4)), ("swish", {"beta": 1.7}, f64(3, 4, lo=-4, hi=4)),
                         ("hard_swish", {"threshold": 6.0, "scale": 6.0, "offset": 3.0},
                          np.array([[-4.0, -2.5, -1.0, 0.3], [1.1, 2.2, 2.9, 3.4], [4.0, -0.2, -3.5, 5.0]])),
                         ("hard_sigmoid", {"slope": 0.2, "offset": 0.5},
                          np.array([[-3.0, -2.0, -0.5, 0.3], [1.1, 2.2, 2.6, 3.4], [4.0, -0.2, -3.5, 1.7]])),
                         ("softplus", {"beta": 2.0, "threshold": 5.0},
                          np.array([[-3.0, -1.0, 0.1, 1.0], [2.0, 2.4, 2.6, 4.0], [-0.4, 0.7, 1.9, 3.1]])),
                         ("tanh_shrink", {}, f64(3, 4, lo=-2, hi=2)), ("mish", {}, f64(3, 4, lo=-4, hi=4)),
                         ("logsigmoid", {}, f64(3, 4, lo=-5, hi=5))):
        tag = "-approximate" if attrs.get("approximate") else ""
        c.append(Case(f"{op}{tag}", op, {"X": [In("x", x)]}, {"Out": 1}, attrs))
    kinks = np.array([[-2.0, -0.9, -0.3, 0.2], [0.7, 1.3, 2.2, -1.4], [3.1, -3.3, 0.45, 1.6]])
    for op, attrs in (("hard_shrink", {"threshold": 0.6}), ("softshrink", {"lambda": 0.4}),
                      ("thresholded_relu", {"threshold": 0.5}), ("brelu", {"t_min": -1.0, "t_max": 2.0}),
                      ("soft_relu", {"threshold": 3.0}), ("stanh", {"scale_a": 0.8, "scale_b": 1.5})):
        c.append(Case(op, op, {"X": [In("x", kinks)]}, {"Out": 1}, attrs))
    c.append(Case("log_softmax-axis1", "log_softmax", {"X": [In("x", f64(2, 3, 4, lo=-2, hi=2))]}, {"Out": 1},
                  {"axis": 1}))

    # -- lookup_table ----------------------------------------------------------------------
    table = f64(7, 3)
    dup, lod = ids([1, 4, 1, 6, 0, 4, 1], [3, 1, 3])
    for sparse in (False, True):
        kind = "sparse" if sparse else "dense"
        c.append(Case(f"lookup_table-{kind}-duplicate-ids", "lookup_table",
                      {"W": [In("w", table)], "Ids": [In("ids", dup, lod, diff=False)]}, {"Out": 1},
                      {"is_sparse": sparse, "padding_idx": -1}, samples=21))
        c.append(Case(f"lookup_table-{kind}-padding-idx", "lookup_table",
                      {"W": [In("w", table)], "Ids": [In("ids", dup, lod, diff=False)]}, {"Out": 1},
                      {"is_sparse": sparse, "padding_idx": 4}, samples=21))

    grid = np.array([[1, 4, 1], [6, 0, 4]], dtype=np.int64)  # lookup_table_v2 keeps the ids' shape
    for sparse in (False, True):
        c.append(Case(f"lookup_table_v2-{'sparse' if sparse else 'dense'}-padding-idx", "lookup_table_v2",
                      {"W": [In("w", table)], "Ids": [In("ids", grid, diff=False)]}, {"Out": 1},
                      {"is_sparse": sparse, "padding_idx": 4}, samples=21))

    # -- sequence_pool: every type, several LoD shapes ------------------------------------------
    lods = {
        "ragged": [2, 1, 3, 2],            # positions path, padding
        "with-empty": [2, 0, 3, 0, 1],     # empty sequences in the middle
        "uniform": [2, 2, 2],              # equal lengths: strided views
        "skewed": [1, 1, 1, 1, 20],        # long tail: bincount / reduceat path
        "empty-last": [3, 2, 0],
    }
    for ptype in ("SUM", "AVERAGE", "SQRT", "MAX", "FIRST", "LAST"):
        for lname, lengths in lods.items():
            n = sum(lengths)
            x = RNG.permutation(n * 4).reshape(n, 4) / (n * 4) + f64(n, 4) * 1e-3  # distinct values
            outs = {"Out": 1, "MaxIndex": 1} if ptype == "MAX" else {"Out": 1}
            c.append(Case(f"sequence_pool-{ptype.lower()}-{lname}", "sequence_pool",
                          {"X": [In("x", x, [[0] + np.cumsum(lengths).tolist()])]}, outs,
                          {"pooltype": ptype, "pad_value": 0.5}, samples=16))

    # -- shape ops ---------------------------------------------------------------------------
    c.append(Case("concat-axis0", "concat", {"X": [In("a", f64(2, 3)), In("b", f64(4, 3))]}, {"Out": 1}, {"axis": 0}))
    c.append(Case("concat-axis1", "concat", {"X": [In("a", f64(2, 3)), In("b", f64(2, 1)), In("c", f64(2, 2))]},
                  {"Out": 1}, {"axis": 1}))
    c.append(Case("concat-negative-axis", "concat", {"X": [In("a", f64(2, 2, 3)), In("b", f64(2, 2, 2))]},
                  {"Out": 1}, {"axis": -1}))
    c.append(Case("split-num", "split", {"X": [In("x", f64(4, 6))]}, {"Out": 3}, {"axis": 1, "num": 3}))
    c.append(Case("split-sections", "split", {"X": [In("x", f64(5, 2))]}, {"Out": 2},
                  {"axis": 0, "sections": [2, 3]}))
    c.append(Case("reshape2", "reshape2", {"X": [In("x", f64(2, 3, 4))]}, {"Out": 1, "XShape": 1},
                  {"shape": [0, -1]}))
    c.append(Case("transpose2", "transpose2", {"X": [In("x", f64(2, 3, 4))]}, {"Out": 1, "XShape": 1},
                  {"axis": [2, 0, 1]}))
    c.append(Case("flatten_contiguous_range", "flatten_contiguous_range", {"X": [In("x", f64(2, 3, 4, 2))]},
                  {"Out": 1, "XShape": 1}, {"start_axis": 1, "stop_axis": 2}))
    c.append(Case("squeeze2", "squeeze2", {"X": [In("x", f64(3, 1, 4))]}, {"Out": 1, "XShape": 1}, {"axes": [1]}))
    c.append(Case("unsqueeze2", "unsqueeze2", {"X": [In("x", f64(3, 4))]}, {"Out": 1, "XShape": 1},
                  {"axes": [0, 2]}))
    for t in ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"):
        c.append(Case(f"{t}-dim", t, {"X": [In("x", f64(2, 3, 4))]}, {"Out": 1},
                      {"dim": [1], "keep_dim": False, "reduce_all": False}))
        c.append(Case(f"{t}-dims-keep", t, {"X": [In("x", f64(2, 3, 4))]}, {"Out": 1},
                      {"dim": [0, -1], "keep_dim": True, "reduce_all": False}))
        c.append(Case(f"{t}-all", t, {"X": [In("x", f64(2, 3))]}, {"Out": 1},
                      {"dim": [0], "keep_dim": False, "reduce_all": True}))

    # -- losses --------------------------------------------------------------------------------
    hard = np.array([[2], [0], [-100], [4]], dtype=np.int64)
    c.append(Case("cross_entropy-hard-ignore-index", "cross_entropy",
                  {"X": [In("x", probs(4, 5))], "Label": [In("label", hard, diff=False)]}, {"Y": 1},
                  {"soft_label": False, "ignore_index": -100}))
    c.append(Case("cross_entropy-soft", "cross_entropy",
                  {"X": [In("x", probs(4, 5))], "Label": [In("label", probs(4, 5), diff=False)]}, {"Y": 1},
                  {"soft_label": True}))
    c.append(Case("softmax_with_cross_entropy-hard", "softmax_with_cross_entropy",
                  {"Logits": [In("logits", f64(4, 5, lo=-2, hi=2))], "Label": [In("label", hard, diff=False)]},
                  {"Softmax": 1, "Loss": 1}, {"soft_label": False, "ignore_index": -100}))
    c.append(Case("softmax_with_cross_entropy-soft", "softmax_with_cross_entropy",
                  {"Logits": [In("logits", f64(4, 5, lo=-2, hi=2))], "Label": [In("label", probs(4, 5), diff=False)]},
                  {"Softmax": 1, "Loss": 1}, {"soft_label": True}))
    bin_label = np.array([[1.0, 0.0], [0.0, -100.0], [1.0, 1.0]])
    for norm in (False, True):
        c.append(Case(f"sigmoid_cross_entropy_with_logits-normalize-{norm}", "sigmoid_cross_entropy_with_logits",
                      {"X": [In("x", f64(3, 2, lo=-30, hi=30))], "Label": [In("label", bin_label, diff=False)]},
                      {"Out": 1}, {"ignore_index": -100, "normalize": norm}))
    c.append(Case("log_loss", "log_loss",
                  {"Predicted": [In("p", f64(4, 1, lo=0.1, hi=0.9))],
                   "Labels": [In("y", np.array([[1.0], [0.0], [1.0], [0.0]]), diff=False)]},
                  {"Loss": 1}, {"epsilon": 1e-4}))

    # -- batch_norm and dropout ----------------------------------------------------------------
    def bn(cid, x, c_, attrs, stats_diff=False):
        return Case(cid, "batch_norm",
                    {"X": [In("x", x)], "Scale": [In("scale", f64(c_, lo=0.5, hi=1.5))],
                     "Bias": [In("bias", f64(c_))],
                     "Mean": [In("mean", f64(c_), diff=stats_diff)],
                     "Variance": [In("var", f64(c_, lo=0.5, hi=1.5), diff=stats_diff)]},
                    {"Y": 1, "MeanOut": ["mean"], "VarianceOut": ["var"], "SavedMean": 1, "SavedVariance": 1},
                    dict({"momentum": 0.9, "epsilon": 1e-5}, **attrs), rtol=1e-4, atol=1e-6)
    c.append(bn("batch_norm-train-2d", f64(5, 3), 3, {"is_test": False}))
    c.append(bn("batch_norm-train-nchw", f64(2, 3, 2, 2), 3, {"is_test": False, "data_layout": "NCHW"}))
    c.append(bn("batch_norm-train-nhwc", f64(2, 2, 2, 3), 3, {"is_test": False, "data_layout": "NHWC"}))
    c.append(bn("batch_norm-test-global-stats", f64(4, 3), 3, {"is_test": True}))
    c.append(bn("batch_norm-fuse-with-relu", f64(6, 2) * 3, 2, {"is_test": False, "fuse_with_relu": True}))
    for impl in ("downgrade_in_infer", "upscale_in_train"):
        for test in (False, True):
            c.append(Case(f"dropout-{impl}-is_test-{test}", "dropout", {"X": [In("x", f64(4, 5))]},
                          {"Out": 1, "Mask": 1},
                          {"dropout_prob": 0.4, "is_test": test, "fix_seed": True, "seed": 7,
                           "dropout_implementation": impl}))
    # The ops behind Paddle 2.x's tensor functions (ops/tensor_math_ops.py).
    for tx in (False, True):
        for ty in (False, True):
            x = f64(2, 4, 3) if tx else f64(2, 3, 4)
            y = f64(5, 4) if ty else f64(4, 5)
            c.append(Case(f"matmul-batch-broadcast-tx{int(tx)}-ty{int(ty)}", "matmul",
                          {"X": [In("x", x)], "Y": [In("y", y)]}, {"Out": 1},
                          {"transpose_X": tx, "transpose_Y": ty, "alpha": 1.5}))
    for xs, ys, tx, ty in (((2, 4, 3), (4, 5), True, False), ((3, 4), (5, 4), False, True), ((4,), (2, 4, 5), False, False),
                           ((2, 3, 4), (4,), False, False), ((4,), (4,), False, False)):
        c.append(Case(f"matmul_v2-{'x'.join(map(str, xs))}-{'x'.join(map(str, ys))}-tx{int(tx)}-ty{int(ty)}",
                      "matmul_v2", {"X": [In("x", f64(*xs))], "Y": [In("y", f64(*ys))]}, {"Out": 1},
                      {"trans_x": tx, "trans_y": ty}))
    c.append(Case("square", "square", {"X": [In("x", f64(3, 4))]}, {"Out": 1}))
    c.append(Case("exp", "exp", {"X": [In("x", f64(3, 4))]}, {"Out": 1}))
    c.append(Case("log", "log", {"X": [In("x", f64(3, 4, lo=0.5, hi=2.0))]}, {"Out": 1}))
    c.append(Case("log1p", "log1p", {"X": [In("x", f64(3, 4, lo=-0.5, hi=2.0))]}, {"Out": 1}))
    c.append(Case("abs", "abs", {"X": [In("x", away_from_zero(3, 4))]}, {"Out": 1}))
    c.append(Case("sqrt", "sqrt", {"X": [In("x", f64(3, 4, lo=0.5, hi=2.0))]}, {"Out": 1}))
    c.append(Case("pow", "pow", {"X": [In("x", f64(3, 4, lo=0.5, hi=2.0))]}, {"Out": 1}, {"factor": 2.5}))
    c.append(Case("clip", "clip", {"X": [In("x", away_from_zero(3, 4))]}, {"Out": 1},
                  {"min": -0.6, "max": 0.6}))
    c.append(Case("slice-negative-and-clamped-bounds", "slice", {"Input": [In("x", f64(4, 5, 3))]}, {"Out": 1},
                  {"axes": [0, 1], "starts": [1, -3], "ends": [100, -1]}))
    c.append(Case("l1_norm", "l1_norm", {"X": [In("x", f64(3, 4) - 0.5)]}, {"Out": 1}, {}))
    c.append(Case("slice-decrease-axis", "slice", {"Input": [In("x", f64(4, 5, 3))]}, {"Out": 1},
                  {"axes": [0, 2], "starts": [1, 2], "ends": [2, 3], "decrease_axis": [0, 2]}))
    c.append(Case("strided_slice-steps-and-dropped-axes", "strided_slice", {"Input": [In("x", f64(4, 5, 3))]},
                  {"Out": 1}, {"axes": [0, 1, 2], "starts": [-1, 4, 0], "ends": [2 ** 31 - 1, -2 ** 31, 3],
                               "strides": [1, -2, 2], "decrease_axis": [0]}))
    c.append(Case("conv2d-strided-padded-dilated-grouped", "conv2d",
                  {"Input": [In("x", f64(2, 4, 5, 6))], "Filter": [In("w", f64(6, 2, 3, 2))]}, {"Output": 1},
                  {"strides": [2, 1], "paddings": [1, 0, 2, 1], "dilations": [1, 2], "groups": 2}))
    c.append(Case("conv2d-same", "conv2d", {"Input": [In("x", f64(1, 2, 5, 4))], "Filter": [In("w", f64(3, 2, 2, 3))]},
                  {"Output": 1}, {"strides": [2, 2], "padding_algorithm": "SAME"}))
    c.append(Case("stack-axis1", "stack", {"X": [In("a", f64(2, 3)), In("b", f64(2, 3))]}, {"Y": 1},
                  {"axis": 1}))
    c.append(Case("where", "where", {"Condition": [In("c", RNG.random((3, 4)) > 0.5, diff=False)],
                                     "X": [In("x", f64(3, 4))], "Y": [In("y", f64(3, 4))]}, {"Out": 1}))
    # Fluid 1.x layers of the simnet examples (ops/similarity_ops.py, activation_ops.py).
    c.append(Case("cos_sim-row-by-row", "cos_sim", {"X": [In("x", f64(4, 3))], "Y": [In("y", f64(4, 3))]},
                  {"Out": 1, "XNorm": 1, "YNorm": 1}))
    c.append(Case("cos_sim-one-y-row", "cos_sim", {"X": [In("x", f64(4, 2, 3))], "Y": [In("y", f64(1, 2, 3))]},
                  {"Out": 1, "XNorm": 1, "YNorm": 1}))
    c.append(Case("softsign", "softsign", {"X": [In("x", away_from_zero(3, 4))]}, {"Out": 1}))
    # ops/tensor_extra_ops.py: bmm, tril_triu, masked_select, p_norm.
    c.append(Case("bmm", "bmm", {"X": [In("x", f64(2, 3, 4))], "Y": [In("y", f64(2, 4, 5))]}, {"Out": 1}))
    for lower, diagonal in ((True, 0), (True, -1), (False, 1)):
        c.append(Case(f"tril_triu-lower-{lower}-diagonal{diagonal}", "tril_triu", {"X": [In("x", f64(2, 3, 4))]},
                      {"Out": 1}, {"lower": lower, "diagonal": diagonal}))
    c.append(Case("masked_select", "masked_select",
                  {"X": [In("x", f64(3, 4))], "Mask": [In("m", RNG.random((3, 4)) > 0.5, diff=False)]}, {"Y": 1}))
    c.append(Case("masked_select-broadcast-x", "masked_select",
                  {"X": [In("x", f64(3, 1))], "Mask": [In("m", RNG.random((2, 3, 4)) > 0.3, diff=False)]}, {"Y": 1}))
    for p, attrs in ((2.0, {"axis": 1, "keepdim": True}), (3.0, {"axis": 0, "keepdim": False}),
                     (1.5, {"axis": -1, "asvector": True}), (float("inf"), {"axis": 1})):
        c.append(Case(f"p_norm-p{p}-{'-'.join(sorted(attrs))}", "p_norm", {"X": [In("x", away_from_zero(3, 4))]},
                      {"Out": 1}, dict(attrs, porder=p, epsilon=1e-12)))
    # ops/random_ops.py: shuffle_batch, its permutation fixed by the fed Seed (the same every run).
    c.append(Case("shuffle_batch-3d", "shuffle_batch",
                  {"X": [In("x", f64(3, 2, 4))], "Seed": [In("seed", np.array([11], np.int64), diff=False)]},
                  {"Out": 1, "ShuffleIdx": 1, "SeedOut": 1}, {"startup_seed": 5}))
    # ops/py_func_ops.py: x * y and x + y by Python functions, their backward by another.
    fwd = py_func_ops.register_callable(lambda a, b: (np.array(a) * np.array(b), np.array(a) + np.array(b)))
    bwd = py_func_ops.register_callable(
        lambda a, b, p, q, dp, dq: (np.array(dp) * np.array(b) + np.array(dq), np.array(dp) * np.array(a) + np.array(dq)))
    c.append(Case("py_func-two-outputs", "py_func", {"X": [In("x", f64(3, 4)), In("y", f64(3, 4))]}, {"Out": 2},
                  {"forward_callable_id": fwd, "backward_callable_id": bwd, "backward_skip_vars": []}))
    # interp_ops.py: the v2 ops' runtime sizes (Scale tensor; SizeTensor beside an attribute).
    c.append(Case("bilinear_interp_v2-scale-tensor", "bilinear_interp_v2",
                  {"X": [In("x", f64(1, 2, 3, 4))], "Scale": [In("s", np.array([1.7, 0.6]), diff=False)]}, {"Out": 1},
                  {"out_h": -1, "out_w": -1, "scale": [], "interp_method": "bilinear", "align_corners": False,
                   "align_mode": 0, "data_layout": "NCHW"}))
    c.append(Case("nearest_interp_v2-size-tensor", "nearest_interp_v2",
                  {"X": [In("x", f64(1, 2, 3, 4))], "SizeTensor": [In("h", np.array([5], np.int32), diff=False),
                                                                    In("w", np.array([3], np.int32), diff=False)]},
                  {"Out": 1}, {"out_h": -1, "out_w": 3, "scale": [], "interp_method": "nearest",
                               "align_corners": False, "align_mode": 0, "data_layout": "NCHW"}))
    # conv3d_ops.py: conv3d (groups, padding, dilation, SAME) and pool3d (max, avg, ceil_mode).
    c.append(Case("conv3d-groups-pad-dilation", "conv3d",
                  {"Input": [In("x", f64(2, 4, 3, 4, 3))], "Filter": [In("w", f64(4, 2, 2, 2, 2))]}, {"Output": 1},
                  {"strides": [1, 2, 1], "paddings": [1, 0, 0, 1, 1, 0], "dilations": [1, 1, 2], "groups": 2}))
    c.append(Case("conv3d-same", "conv3d",
                  {"Input": [In("x", f64(1, 2, 3, 4, 3))], "Filter": [In("w", f64(3, 2, 2, 3, 2))]}, {"Output": 1},
                  {"strides": [2, 2, 1], "paddings": [0, 0, 0], "dilations": [1, 1, 1], "groups": 1,
                   "padding_algorithm": "SAME"}))
    c.append(Case("pool3d-max-overlapping-padded", "pool3d", {"X": [In("x", f64(2, 2, 3, 4, 5))]}, {"Out": 1},
                  {"pooling_type": "max", "ksize": [2, 3, 2], "strides": [1, 2, 2], "paddings": [1, 1, 0]}))
    c.append(Case("pool3d-avg-inclusive-ceil", "pool3d", {"X": [In("x", f64(1, 2, 3, 4, 5))]}, {"Out": 1},
                  {"pooling_type": "avg", "ksize": [3, 3, 3], "strides": [2, 2, 2], "paddings": [1, 1, 1],
                   "exclusive": False, "ceil_mode": True}))
    c.append(Case("inverse-batched", "inverse", {"Input": [In("x", f64(2, 3, 3) + 3 * np.eye(3))]}, {"Output": 1}))
    # rank_attention_ops.py: RankParam's gradient (X gets none, as Paddle's); instance 1 has no rank.
    c.append(Case("rank_attention", "rank_attention",
                  {"X": [In("x", f64(3, 2), diff=False)],
                   "RankOffset": [In("ro", np.array([[1, 1, 0, 2, 2], [-1, -1, -1, -1, -1], [2, 1, 0, 2, 2]],
                                                    np.int32), diff=False)],
                   "RankParam": [In("p", f64(8, 3))]}, {"Out": 1}, {"MaxRank": 2}))
    c.append(Case("tile-pad-x", "tile", {"X": [In("x", f64(2, 3))]}, {"Out": 1}, {"repeat_times": [2, 1, 3]}))
    c.append(Case("tile-pad-repeats", "tile", {"X": [In("x", f64(2, 3, 2))]}, {"Out": 1}, {"repeat_times": [2]}))
    c.append(Case("expand-lead-and-ones", "expand_v2", {"X": [In("x", f64(3, 1))]}, {"Out": 1},
                  {"shape": [2, -1, 4]}))
    c.append(Case("pool2d-max-overlapping-padded", "pool2d", {"X": [In("x", f64(2, 2, 5, 6))]}, {"Out": 1},
                  {"pooling_type": "max", "ksize": [3, 3], "strides": [2, 2], "paddings": [1, 1]}))
    c.append(Case("rnn-gru-two-layers", "rnn", {
        "Input": [In("x", f64(3, 2, 4))],
        "WeightList": [In("w_ih0", f64(9, 4)), In("w_hh0", f64(9, 3)), In("w_ih1", f64(9, 3)), In("w_hh1", f64(9, 3)),
                       In("b_ih0", f64(9)), In("b_hh0", f64(9)), In("b_ih1", f64(9)), In("b_hh1", f64(9))],
        "PreState": [In("h0", f64(2, 2, 3))]},
        {"Out": 1, "State": 1, "Reserve": 1, "DropoutState": 1},
        {"mode": "GRU", "hidden_size": 3, "input_size": 4, "num_layers": 2, "is_bidirec": False, "dropout_prob": 0.0,
         "is_test": False}))
    c.append(Case("expand-fluid1-lod", "expand", {"X": [In("x", f64(4, 2), [[0, 1, 4]])]}, {"Out": 1},
                  {"expand_times": [1, 3]}))
    c.append(Case("expand-fluid1-rows", "expand", {"X": [In("x", f64(2, 3, 1))]}, {"Out": 1},
                  {"expand_times": [2, 1, 2]}))
    # Fluid 1.x sequence ops over ragged LoD inputs (with an empty sequence).
    seq_lod = [[0, 3, 3, 4, 7]]
    for start, length in ((-1, 3), (0, 2), (-3, 4)):
        c.append(Case(f"sequence_conv-start{start}-len{length}", "sequence_conv",
                      {"X": [In("x", f64(7, 2), seq_lod)], "Filter": [In("f", f64(2 * length, 3))]}, {"Out": 1},
                      {"contextStart": start, "contextLength": length, "contextStride": 1}))
    c.append(Case("sequence_unpad", "sequence_unpad",
                  {"X": [In("x", f64(3, 4, 2))], "Length": [In("len", np.array([2, 0, 4], np.int64), diff=False)]},
                  {"Out": 1}))
    c.append(Case("sequence_expand_as", "sequence_expand_as",
                  {"X": [In("x", f64(4, 3))], "Y": [In("y", f64(7, 1), seq_lod, diff=False)]}, {"Out": 1}))
    c.append(Case("sequence_reshape", "sequence_reshape", {"X": [In("x", f64(7, 2), seq_lod)]}, {"Out": 1},
                  {"new_dim": 1}))
    # The rest of Fluid 1.8's sequence layers (sequence_layer_ops.py).
    c.append(Case("sequence_softmax", "sequence_softmax", {"X": [In("x", f64(7, 1, lo=-2, hi=2), seq_lod)]},
                  {"Out": 1}))
    c.append(Case("sequence_concat", "sequence_concat",
                  {"X": [In("a", f64(7, 2), seq_lod), In("b", f64(5, 2), [[0, 1, 2, 2, 5]])]}, {"Out": 1}))
    c.append(Case("sequence_slice", "sequence_slice",
                  {"X": [In("x", f64(7, 2), seq_lod)],
                   "Offset": [In("o", np.array([[1], [0], [0], [1]], np.int64), diff=False)],
                   "Length": [In("n", np.array([[2], [0], [1], [2]], np.int64), diff=False)]}, {"Out": 1}))
    c.append(Case("sequence_pad", "sequence_pad",
                  {"X": [In("x", f64(7, 2), seq_lod)], "PadValue": [In("pv", np.array([0.5]), diff=False)]},
                  {"Out": 1, "Length": 1}, {"padded_length": 4}))
    c.append(Case("sequence_expand-ref0", "sequence_expand",
                  {"X": [In("x", f64(4, 2), [[0, 2, 4]])],
                   "Y": [In("y", f64(8, 1), [[0, 2, 4], [0, 3, 6, 7, 8]], diff=False)]}, {"Out": 1}, {"ref_level": 0}))
    c.append(Case("sequence_expand-rows", "sequence_expand",
                  {"X": [In("x", f64(4, 3))], "Y": [In("y", f64(7, 1), seq_lod, diff=False)]}, {"Out": 1},
                  {"ref_level": -1}))
    c.append(Case("sequence_scatter", "sequence_scatter",
                  {"X": [In("x", f64(3, 5))],
                   "Ids": [In("i", np.array([[0], [4], [0], [1], [2], [2]], np.int64), [[0, 3, 3, 6]], diff=False)],
                   "Updates": [In("u", f64(6, 1), [[0, 3, 3, 6]])]}, {"Out": 1}))
    c.append(Case("sequence_reverse", "sequence_reverse", {"X": [In("x", f64(7, 2), seq_lod)]}, {"Y": 1}))
    c.append(Case("lod_reset", "lod_reset", {"X": [In("x", f64(7, 2), seq_lod)]}, {"Out": 1},
                  {"target_lod": [0, 2, 7]}))
    # Fluid 1.8's pad, pad_constant_like, crop, label_smooth, rank_loss, margin_rank_loss.
    c.append(Case("pad", "pad", {"X": [In("x", f64(2, 3))]}, {"Out": 1}, {"paddings": [1, 0, 2, 1], "pad_value": 0.5}))
    c.append(Case("pad_constant_like", "pad_constant_like",
                  {"X": [In("x", f64(3, 4), diff=False)], "Y": [In("y", f64(2, 3))]}, {"Out": 1}, {"pad_value": 1.5}))
    for mode in ("constant", "reflect", "edge"):
        c.append(Case(f"pad2d-{mode}", "pad2d", {"X": [In("x", f64(2, 2, 3, 4))]}, {"Out": 1},
                      {"paddings": [1, 2, 0, 3], "mode": mode, "pad_value": 0.5, "data_format": "NCHW"}))
    for mode in ("reflect", "replicate", "circular"):
        c.append(Case(f"pad3d-{mode}-ndhwc", "pad3d", {"X": [In("x", f64(1, 3, 3, 4, 2))]}, {"Out": 1},
                      {"paddings": [1, 2, 2, 0, 1, 1], "mode": mode, "value": 0.0, "data_format": "NDHWC"}))
    c.append(Case("crop", "crop", {"X": [In("x", f64(3, 4))]}, {"Out": 1}, {"offsets": [1, 1], "shape": [2, 2]}))
    c.append(Case("label_smooth", "label_smooth", {"X": [In("x", probs(3, 4))]}, {"Out": 1}, {"epsilon": 0.1}))
    pair = {"Label": [In("lab", np.array([[1.0], [0.0], [1.0], [-1.0]]), diff=False)],
            "Left": [In("l", np.array([[0.5], [0.2], [-1.0], [0.7]]))],
            "Right": [In("r", np.array([[0.1], [0.4], [0.3], [0.2]]))]}
    c.append(Case("rank_loss", "rank_loss", pair, {"Out": 1}))
    c.append(Case("margin_rank_loss", "margin_rank_loss", pair, {"Out": 1, "Activated": 1}, {"margin": 0.3}))
    nce_ins = {"Input": [In("x", f64(4, 3))], "Label": [In("l", np.array([[1], [4], [6], [0]], np.int64), diff=False)],
               "Weight": [In("w", f64(7, 3))], "Bias": [In("b", f64(7, 1))],
               "SampleWeight": [In("sw", np.array([[1.0], [0.5], [2.0], [1.0]]), diff=False)]}
    for sampler in (0, 1):
        c.append(Case(f"nce-sampler{sampler}", "nce", nce_ins, {"Cost": 1, "SampleLogits": 1, "SampleLabels": 1},
                      {"num_total_classes": 7, "num_neg_samples": 3, "sampler": sampler,
                       "custom_neg_classes": [2, 5, 3]}))
    hs = {"X": [In("x", f64(4, 3))], "W": [In("w", f64(5, 3))], "Bias": [In("b", f64(5, 1))],
          "Label": [In("l", np.array([[0], [5], [2], [3]], np.int64), diff=False)]}
    c.append(Case("hierarchical_sigmoid-default-tree", "hierarchical_sigmoid", hs, {"Out": 1, "PreOut": 1},
                  {"num_classes": 6}))
    c.append(Case("hierarchical_sigmoid-custom-tree", "hierarchical_sigmoid", dict(
        hs, PathTable=[In("t", np.array([[0, 2, -1], [1, 3, 4], [0, -1, -1], [4, 1, 2]], np.int64), diff=False)],
        PathCode=[In("c", np.array([[1, 0, 0], [0, 1, 1], [1, 0, 0], [0, 0, 1]], np.int64), diff=False)]),
        {"Out": 1, "PreOut": 1}, {"num_classes": 6}))
    c.append(Case("sample_logits-customized", "sample_logits", {
        "Logits": [In("x", f64(3, 9))], "Labels": [In("l", np.array([[2], [7], [0]], np.int64), diff=False)],
        "CustomizedSamples": [In("s", np.array([[2, 1, 5, 7, 3], [7, 1, 5, 7, 3], [0, 1, 5, 7, 3]], np.int64),
                                 diff=False)],
        "CustomizedProbabilities": [In("p", f64(3, 5, lo=0.1, hi=0.9), diff=False)]},
        {"SampledLogits": 1, "SampledLabels": 1},
        {"use_customized_samples": True, "uniq": True, "remove_accidental_hits": False, "num_samples": 4}))
    # cvm's gradient is not a derivative in the show/click columns: Paddle hands back the CVM
    # input there (checked against Paddle 1.8.5 in test_api_nn_breadth.py). With use_cvm off and
    # CVM zero, those columns' gradient is 0, the derivative, and the rest is checked here.
    c.append(Case("cvm-no-cvm", "cvm", {"X": [In("x", f64(4, 5), [[0, 1, 4]])],
                                        "CVM": [In("c", np.zeros((2, 2)), diff=False)]},
                  {"Y": 1}, {"use_cvm": False}))
    c.append(Case("bpr_loss", "bpr_loss", {"X": [In("x", f64(4, 3), [[0, 1, 4]])],
                                           "Label": [In("l", np.array([[0], [2], [1], [2]], np.int64), diff=False)]},
                  {"Y": 1}))
    # gru (Fluid 1.x dynamic_gru): ragged sequences with an empty one, both directions and modes.
    gru_outs = {"Hidden": 1, "BatchGate": 1, "BatchResetHiddenPrev": 1, "BatchHidden": 1}
    gru_lod = [[0, 3, 4, 4, 6]]
    for reverse, origin, act, h0 in ((False, False, "tanh", True), (True, True, "relu", False),
                                     (False, True, "identity", False), (True, False, "sigmoid", True)):
        ins = {"Input": [In("x", f64(6, 9), gru_lod)], "Weight": [In("w", f64(3, 9))],
               "Bias": [In("b", f64(1, 9))]}
        if h0:
            ins["H0"] = [In("h0", f64(4, 3))]
        c.append(Case(f"gru-{'reverse' if reverse else 'forward'}-{'origin' if origin else 'default'}-{act}"
                      f"{'-h0' if h0 else ''}", "gru", ins, gru_outs,
                      {"is_reverse": reverse, "origin_mode": origin, "gate_activation": "sigmoid",
                       "activation": act}))
    # lstm (Fluid 1.x dynamic_lstm): the gradient flows from Hidden only, as Paddle's.
    lstm_outs = {"Hidden": 1, "Cell": 1, "BatchGate": 1, "BatchCellPreAct": 1}
    for reverse, peep, cell_act, states in ((False, True, "tanh", True), (True, True, "relu", False),
                                            (False, False, "identity", True)):
        ins = {"Input": [In("x", f64(6, 12), gru_lod)], "Weight": [In("w", f64(3, 12))],
               "Bias": [In("b", f64(1, 21 if peep else 12))]}
        if states:
            ins.update(H0=[In("h0", f64(4, 3))], C0=[In("c0", f64(4, 3))])
        c.append(Case(f"lstm-{'reverse' if reverse else 'forward'}-{'peep' if peep else 'nopeep'}-{cell_act}"
                      f"{'-states' if states else ''}", "lstm", ins, lstm_outs,
                      {"is_reverse": reverse, "use_peepholes": peep, "gate_activation": "sigmoid",
                       "cell_activation": cell_act, "candidate_activation": "tanh"}))
    c.append(Case("gather-axis0-repeats", "gather", {"X": [In("x", f64(5, 3))],
                                                     "Index": [In("i", np.array([[4], [0], [4]], np.int64), diff=False)]},
                  {"Out": 1}, {"axis": 0}))
    c.append(Case("gather-axis1", "gather", {"X": [In("x", f64(2, 4, 3))],
                                             "Index": [In("i", np.array([3, 1, 3], np.int64), diff=False)]},
                  {"Out": 1}, {"axis": 1}))
    c.append(Case("reduce_max-axis", "reduce_max", {"X": [In("x", f64(3, 4))]}, {"Out": 1},
                  {"dim": [1], "keep_dim": False, "reduce_all": False}))
    c.append(Case("reduce_min-all", "reduce_min", {"X": [In("x", f64(3, 4))]}, {"Out": 1},
                  {"dim": [0], "keep_dim": False, "reduce_all": True}))
    for tag, attrs, filt in (("plain", {}, f64(3, 2, 2, 3)),
                             ("stride-pad-outpad", {"strides": [2, 2], "paddings": [1, 0], "output_padding": [1, 0]},
                              f64(3, 2, 3, 2)),
                             ("dilation", {"strides": [2, 1], "dilations": [2, 2], "paddings": [0, 1, 1, 0]},
                              f64(3, 2, 2, 2)),
                             ("groups", {"groups": 3, "strides": [2, 2]}, f64(3, 1, 2, 2)),
                             ("same-dilation-ignored", {"strides": [2, 3], "dilations": [2, 2],
                                                        "padding_algorithm": "SAME"}, f64(3, 2, 3, 2))):
        c.append(Case(f"conv2d_transpose-{tag}", "conv2d_transpose",
                      {"Input": [In("x", f64(2, 3, 3, 4))], "Filter": [In("w", filt)]}, {"Output": 1}, attrs))
    for op, attrs in (("nearest_interp_v2", {"out_h": 5, "out_w": 3}),
                      ("bilinear_interp_v2", {"out_h": 5, "out_w": 7, "align_mode": 0}),
                      ("bilinear_interp_v2", {"scale": [1.5, 0.7], "align_corners": True}),
                      ("nearest_interp", {"scale": 1.5, "align_corners": True}),
                      ("bilinear_interp", {"out_h": 4, "out_w": 6, "align_corners": False, "align_mode": 1})):
        tag = "-".join(f"{k}{v}" for k, v in attrs.items()).replace(" ", "")
        c.append(Case(f"{op}-{tag}", op, {"X": [In("x", f64(2, 2, 3, 4))]}, {"Out": 1}, attrs))
    for kind in ("avg", "max"):
        c.append(Case(f"pool2d-{kind}-adaptive", "pool2d", {"X": [In("x", f64(2, 2, 5, 7))]}, {"Out": 1},
                      {"pooling_type": kind, "ksize": [2, 3], "adaptive": True}))
    c.append(Case("pool2d-avg-same", "pool2d", {"X": [In("x", f64(1, 2, 5, 7))]}, {"Out": 1},
                  {"pooling_type": "avg", "ksize": [2, 3], "strides": [2, 2], "padding_algorithm": "SAME"}))
    c.append(Case("leaky_relu", "leaky_relu", {"X": [In("x", away_from_zero(3, 4))]}, {"Out": 1}, {"alpha": 0.1}))
    for mode, alpha, fmt in (("all", f64(1), "NCHW"), ("channel", f64(3), "NCHW"), ("channel", f64(2), "NHWC"),
                             ("element", f64(3, 2), "NCHW")):
        c.append(Case(f"prelu-{mode}-{fmt}", "prelu", {"X": [In("x", away_from_zero(4, 3, 2))], "Alpha": [In("a", alpha)]},
                      {"Out": 1}, {"mode": mode, "data_format": fmt}))
    ln_x = f64(2, 3, 4) * 2 + 0.5
    c.append(Case("layer_norm-scale-bias", "layer_norm",
                  {"X": [In("x", ln_x)], "Scale": [In("s", f64(12, lo=0.5, hi=1.5))], "Bias": [In("b", f64(12))]},
                  {"Y": 1, "Mean": 1, "Variance": 1}, {"begin_norm_axis": 1, "epsilon": 1e-5}, rtol=1e-4, atol=1e-6))
    c.append(Case("layer_norm-last-axis-no-affine", "layer_norm", {"X": [In("x", ln_x)]},
                  {"Y": 1, "Mean": 1, "Variance": 1}, {"begin_norm_axis": 2, "epsilon": 1e-5}, rtol=1e-4, atol=1e-6))
    # data_norm: X, scale_w and bias get true derivatives; the statistics' "gradients" are the
    # batch's count, sum and square sum (tests/unit/test_paddle_static_data_norm.py pins them).
    c.append(Case("data_norm-scale-shift", "data_norm",
                  {"X": [In("x", f64(4, 3) * 2)], "BatchSize": [In("n", f64(3, lo=5, hi=9), diff=False)],
                   "BatchSum": [In("s", f64(3), diff=False)],
                   "BatchSquareSum": [In("q", f64(3, lo=4, hi=8), diff=False)],
                   "scale_w": [In("w", f64(3, lo=0.5, hi=1.5))], "bias": [In("b", f64(3))]},
                  {"Y": 1, "Means": 1, "Scales": 1}, {"epsilon": 1e-5, "enable_scale_and_shift": True}))
    # paddle.einsum (PaddleRec's AutoInt): a contraction, a batched product, an implicit output,
    # a letter only one operand has (its gradient broadcast back) and three operands.
    c.append(Case("einsum-contract", "einsum", {"Operands": [In("x", f64(2, 3, 4)), In("w", f64(4, 5))]},
                  {"Out": 1}, {"equation": "bnk,kj->bnj"}))
    c.append(Case("einsum-batched", "einsum", {"Operands": [In("q", f64(2, 2, 3, 4)), In("k", f64(2, 2, 5, 4))]},
                  {"Out": 1}, {"equation": "bnik,bnjk->bnij"}))
    c.append(Case("einsum-implicit-summed-letter", "einsum",
                  {"Operands": [In("x", f64(2, 3, 4)), In("v", f64(3, 2))]}, {"Out": 1}, {"equation": "bnk,nm"}))
    c.append(Case("einsum-letter-only-in-one-operand", "einsum",
                  {"Operands": [In("a", f64(3, 4)), In("b", f64(4))]}, {"Out": 1}, {"equation": "ij,j->j"}))
    c.append(Case("einsum-three-operands", "einsum",
                  {"Operands": [In("a", f64(2, 3)), In("b", f64(3, 4)), In("c", f64(4))]}, {"Out": 1},
                  {"equation": "ij,jk,k->i"}))
    # the LSTM mode: two layers, both directions (weights per layer and direction, then biases)
    weights, biases = [], []
    for layer in range(2):
        for d in ("f", "r"):
            weights += [In(f"w_ih{layer}{d}", f64(8, 3 if layer == 0 else 4)), In(f"w_hh{layer}{d}", f64(8, 2))]
            biases += [In(f"b_ih{layer}{d}", f64(8)), In(f"b_hh{layer}{d}", f64(8))]
    c.append(Case("rnn-lstm-two-layers-bidirectional", "rnn", {
        "Input": [In("x", f64(3, 2, 3))], "WeightList": weights + biases,
        "PreState": [In("h0", f64(4, 2, 2)), In("c0", f64(4, 2, 2))]},
        {"Out": 1, "State": 2, "Reserve": 1, "DropoutState": 1},
        {"mode": "LSTM", "hidden_size": 2, "input_size": 3, "num_layers": 2, "is_bidirec": True, "dropout_prob": 0.0,
         "is_test": False}))
    # the SimpleRNN modes and GRU/LSTM with SequenceLength: steps past a row's length keep its state
    # and output zeros, in both directions
    lengths = In("len", np.array([4, 1, 3], np.int64), diff=False)

    def rnn_case(name, mode, gates, layers, dirs, x_shape, hidden):
        weights, biases = [], []
        for layer in range(layers):
            for d in range(dirs):
                in_size = x_shape[2] if layer == 0 else dirs * hidden
                weights += [In(f"w_ih{layer}{d}", f64(gates * hidden, in_size)),
                            In(f"w_hh{layer}{d}", f64(gates * hidden, hidden))]
                biases += [In(f"b_ih{layer}{d}", f64(gates * hidden)), In(f"b_hh{layer}{d}", f64(gates * hidden))]
        states = [In(f"s{i}", f64(layers * dirs, x_shape[1], hidden)) for i in range(2 if mode == "LSTM" else 1)]
        return Case(name, "rnn", {"Input": [In("x", f64(*x_shape))], "WeightList": weights + biases,
                                  "PreState": states, "SequenceLength": [lengths]},
                    {"Out": 1, "State": len(states), "Reserve": 1, "DropoutState": 1},
                    {"mode": mode, "hidden_size": hidden, "input_size": x_shape[2], "num_layers": layers,
                     "is_bidirec": dirs == 2, "dropout_prob": 0.0, "is_test": False})

    c.append(rnn_case("rnn-tanh-two-layers-bidirectional-lengths", "RNN_TANH", 1, 2, 2, (4, 3, 2), 2))
    c.append(rnn_case("rnn-relu-lengths", "RNN_RELU", 1, 1, 1, (4, 3, 2), 3))
    c.append(rnn_case("rnn-gru-bidirectional-lengths", "GRU", 3, 1, 2, (4, 3, 2), 2))
    c.append(rnn_case("rnn-lstm-bidirectional-lengths", "LSTM", 4, 1, 2, (4, 3, 2), 2))
    c.extend(_math_search_cases())
    return c


def _math_search_cases():
    """ops/math_extra_ops.py and ops/search_ops.py (paddle.sin, paddle.cumsum, paddle.gather_nd, ...)."""
    c = []
    for t in ("sin", "cos", "erf", "floor", "ceil", "round", "sign"):
        c.append(Case(t, t, {"X": [In("x", away_from_zero(3, 4) * 1.7)]}, {"Out": 1}))
    for t in ("tan", "asin", "acos", "atan", "sinh", "cosh", "expm1"):
        c.append(Case(t, t, {"X": [In("x", f64(3, 4, lo=-0.8, hi=0.8))]}, {"Out": 1}))
    for t in ("rsqrt", "reciprocal", "log2", "log10"):
        c.append(Case(t, t, {"X": [In("x", f64(3, 4, lo=0.5, hi=2.0))]}, {"Out": 1}))
    for attrs in ({"axis": 1}, {"axis": -2, "exclusive": True}, {"axis": 0, "reverse": True, "exclusive": True},
                  {"flatten": True}):
        c.append(Case(f"cumsum-{'-'.join(f'{k}{v}' for k, v in attrs.items())}", "cumsum",
                      {"X": [In("x", f64(3, 4))]}, {"Out": 1}, attrs))
    with_zero = f64(3, 4)
    with_zero[1, 1] = 0.0  # the gradient there is not dout * out / x
    c.append(Case("cumprod-dim1-with-zero", "cumprod", {"X": [In("x", with_zero)]}, {"Out": 1}, {"dim": 1}))
    c.append(Case("cumprod-dim0", "cumprod", {"X": [In("x", f64(3, 4))]}, {"Out": 1}, {"dim": -2}))
    c.append(Case("logsumexp-axis-keepdim", "logsumexp", {"X": [In("x", f64(2, 3, 4, lo=-3, hi=3))]}, {"Out": 1},
                  {"axis": [1, 2], "keepdim": True, "reduce_all": False}))
    c.append(Case("logsumexp-all", "logsumexp", {"X": [In("x", f64(3, 4, lo=-3, hi=3))]}, {"Out": 1},
                  {"axis": [], "keepdim": False, "reduce_all": True}))
    distinct = RNG.permutation(12).reshape(3, 4) / 12.0
    for t in ("reduce_amax", "reduce_amin"):
        c.append(Case(f"{t}-dim", t, {"X": [In("x", distinct)]}, {"Out": 1},
                      {"dim": [1], "keep_dim": False, "reduce_all": False}))
    c.append(Case("norm-l2_normalize", "norm", {"X": [In("x", away_from_zero(3, 4))]}, {"Out": 1, "Norm": 1},
                  {"axis": 1, "epsilon": 1e-10}))
    c.append(Case("diag_v2-vector-offset", "diag_v2", {"X": [In("x", f64(3))]}, {"Out": 1},
                  {"offset": 1, "padding_value": 0.5}))
    c.append(Case("diag_v2-matrix-offset", "diag_v2", {"X": [In("x", f64(3, 4))]}, {"Out": 1}, {"offset": -1}))
    c.append(Case("trace-axes", "trace", {"Input": [In("x", f64(3, 2, 4))]}, {"Out": 1},
                  {"offset": 1, "axis1": 2, "axis2": 0}))
    c.append(Case("roll-axes", "roll", {"X": [In("x", f64(3, 4))]}, {"Out": 1}, {"shifts": [1, -3], "axis": [0, 1]}))
    c.append(Case("roll-flat", "roll", {"X": [In("x", f64(3, 4))]}, {"Out": 1}, {"shifts": [5], "axis": []}))
    for t in ("flip", "reverse"):
        c.append(Case(t, t, {"X": [In("x", f64(2, 3, 4))]}, {"Out": 1}, {"axis": [0, -1]}))
    c.append(Case("repeat_interleave-dim", "repeat_interleave", {"X": [In("x", f64(3, 4))]}, {"Out": 1},
                  {"Repeats": 2, "dim": 1}))
    c.append(Case("repeat_interleave-flat", "repeat_interleave", {"X": [In("x", f64(3, 2))]}, {"Out": 1},
                  {"Repeats": 3, "dim": None}))
    c.append(Case("expand_as-tile", "expand_as", {"X": [In("x", f64(2, 3))],
                                                  "target_tensor": [In("t", f64(4, 6), diff=False)]}, {"Out": 1}))
    c.append(Case("expand_as_v2-broadcast", "expand_as_v2", {"X": [In("x", f64(3, 1))],
                                                             "Y": [In("y", f64(2, 3, 4), diff=False)]}, {"Out": 1},
                  {"target_shape": [2, 3, 4]}))
    c.append(Case("print", "print", {"In": [In("x", f64(2, 3))]}, {"Out": 1}, {"first_n": 0}))
    for desc in (False, True):
        c.append(Case(f"argsort-descending-{desc}", "argsort", {"X": [In("x", distinct)]}, {"Out": 1, "Indices": 1},
                      {"axis": 0, "descending": desc}))
    idx = np.array([2, 0, 2], np.int64)
    c.append(Case("index_select-repeated", "index_select",
                  {"X": [In("x", f64(3, 4))], "Index": [In("i", idx, diff=False)]}, {"Out": 1}, {"dim": 1}))
    c.append(Case("index_sample", "index_sample",
                  {"X": [In("x", f64(3, 4))], "Index": [In("i", np.array([[3, 3], [0, 1], [2, 0]]), diff=False)]},
                  {"Out": 1}))
    nd = np.array([[2, 1], [0, 3], [2, 1]], np.int64)
    c.append(Case("gather_nd-points", "gather_nd",
                  {"X": [In("x", f64(3, 4, 2))], "Index": [In("i", nd, diff=False)]}, {"Out": 1}))
    c.append(Case("gather_nd-rows", "gather_nd",
                  {"X": [In("x", f64(3, 4))], "Index": [In("i", np.array([[2], [0]]), diff=False)]}, {"Out": 1}))
    for over in (True, False):
        # distinct ids: an overwritten update has no effect, so its finite difference is 0
        c.append(Case(f"scatter-overwrite-{over}", "scatter",
                      {"X": [In("x", f64(4, 3))], "Ids": [In("i", np.array([3, 0]), diff=False)],
                       "Updates": [In("u", f64(2, 3))]}, {"Out": 1}, {"overwrite": over}))
    c.append(Case("scatter_nd_add-repeated", "scatter_nd_add",
                  {"X": [In("x", f64(3, 4))], "Index": [In("i", nd[:, :2], diff=False)], "Updates": [In("u", f64(3))]},
                  {"Out": 1}))
    c.append(Case("take_along_axis", "take_along_axis",
                  {"Input": [In("x", f64(3, 4))], "Index": [In("i", np.array([[3, 3], [0, 1], [2, 0]]), diff=False)]},
                  {"Result": 1}, {"Axis": 1}))
    for reduce in ("assign", "add"):
        c.append(Case(f"put_along_axis-{reduce}", "put_along_axis",
                      {"Input": [In("x", f64(3, 4))], "Index": [In("i", np.array([[3, 1], [0, 1], [2, 0]]), diff=False)],
                       "Value": [In("v", f64(3, 2))]}, {"Result": 1}, {"Axis": 1, "Reduce": reduce}))
    for largest, axis in ((True, 0), (False, -1)):
        c.append(Case(f"top_k_v2-largest-{largest}-axis{axis}", "top_k_v2", {"X": [In("x", distinct)]},
                      {"Out": 1, "Indices": 1}, {"k": 2, "axis": axis, "largest": largest, "sorted": True}))
    c.append(Case("unstack-axis1", "unstack", {"X": [In("x", f64(2, 3, 4))]}, {"Y": 3}, {"axis": 1, "num": 3}))
    c.append(Case("unbind-negative-axis", "unbind", {"X": [In("x", f64(2, 3))]}, {"Out": 3}, {"axis": -1}))
    # Fluid 1.8's layers (ops/fluid18_ops.py) and the inputs read at run time (FactorTensor...)
    one = lambda v, dt=np.int32: In(f"t{v}", np.array([v], dt), diff=False)  # noqa: E731
    c.append(Case("pow-factor-tensor", "pow", {"X": [In("x", f64(3, 4, lo=0.5, hi=2.0))],
                                               "FactorTensor": [In("f", np.array([1.5]), diff=False)]}, {"Out": 1}))
    c.append(Case("scale-scale-tensor", "scale", {"X": [In("x", f64(3, 4))],
                                                  "ScaleTensor": [In("s", np.array([-1.5]), diff=False)]},
                  {"Out": 1}, {"bias": 0.5}))
    c.append(Case("slice-starts-tensor", "slice", {"Input": [In("x", f64(4, 5))],
                                                   "StartsTensor": [In("st", np.array([1, 2], np.int32), diff=False)],
                                                   "EndsTensorList": [one(3), one(5)]},
                  {"Out": 1}, {"axes": [0, 1], "starts": [-1, -1], "ends": [-1, -1]}))
    c.append(Case("strided_slice-strides-tensor", "strided_slice",
                  {"Input": [In("x", f64(4, 5))], "StridesTensorList": [one(2)]}, {"Out": 1},
                  {"axes": [1], "starts": [0], "ends": [5], "strides": [-1], "decrease_axis": []}))
    c.append(Case("expand-times-tensor", "expand", {"X": [In("x", f64(2, 3))],
                                                    "ExpandTimes": [In("e", np.array([2, 1], np.int32), diff=False)]},
                  {"Out": 1}))
    c.append(Case("expand-times-tensor-list", "expand", {"X": [In("x", f64(2, 3))],
                                                         "expand_times_tensor": [one(1), one(3)]},
                  {"Out": 1}, {"expand_times": [-1, -1]}))
    c.append(Case("meshgrid", "meshgrid", {"X": [In("a", f64(3)), In("b", f64(2)), In("c", f64(4))]}, {"Out": 3}))
    c.append(Case("tensor_array_to_tensor-concat", "tensor_array_to_tensor", {"X": [In("arr", f64(3, 2, 4))]},
                  {"Out": 1, "OutIndex": 1}, {"axis": 1, "use_stack": False}))
    c.append(Case("tensor_array_to_tensor-stack", "tensor_array_to_tensor", {"X": [In("arr", f64(3, 2, 4))]},
                  {"Out": 1, "OutIndex": 1}, {"axis": 0, "use_stack": True}))
    for axis in (1, 3):
        c.append(Case(f"maxout-axis{axis}", "maxout", {"X": [In("x", distinct_values(2, 4, 3, 4))]}, {"Out": 1},
                      {"groups": 2, "axis": axis}))
    c.append(Case("multiplex", "multiplex", {"X": [In("a", f64(4, 3)), In("b", f64(4, 3)), In("c", f64(4, 3))],
                                             "Ids": [In("ids", np.array([[2], [0], [2], [1]], np.int32), diff=False)]},
                  {"Out": 1}))
    big = f64(3, 4) * 2.0  # both branches of the smooth L1 (|d| below and above 1 / sigma^2)
    c.append(Case("smooth_l1_loss-weighted", "smooth_l1_loss",
                  {"X": [In("x", big)], "Y": [In("y", f64(3, 4))], "InsideWeight": [In("iw", f64(3, 4, lo=0.5, hi=1.5),
                                                                                        diff=False)],
                   "OutsideWeight": [In("ow", f64(3, 4, lo=0.5, hi=1.5), diff=False)]},
                  {"Diff": 1, "Out": 1}, {"sigma": 1.5}, eps=1e-7, rtol=1e-4))
    for reduction in ("none", "batchmean", "mean", "sum"):
        t = f64(3, 4, lo=-0.2, hi=1.0)  # some targets <= 0: no loss there
        c.append(Case(f"kldiv_loss-{reduction}", "kldiv_loss", {"X": [In("x", f64(3, 4))],
                                                                 "Target": [In("t", t, diff=False)]},
                      {"Loss": 1}, {"reduction": reduction}))
    for op_type, attrs, shape in (("shuffle_channel", {"group": 3}, (2, 6, 2, 3)),
                                  ("pixel_shuffle", {"upscale_factor": 2}, (2, 8, 2, 3)),
                                  ("space_to_depth", {"blocksize": 2}, (2, 4, 4, 2))):
        c.append(Case(op_type, op_type, {"X": [In("x", f64(*shape))]}, {"Out": 1}, attrs))
    c.append(Case("lrn", "lrn", {"X": [In("x", f64(2, 5, 2, 3))]}, {"Out": 1, "MidOut": 1},
                  {"n": 3, "k": 1.0, "alpha": 0.3, "beta": 0.75}))
    c.append(Case("lrn-nhwc", "lrn", {"X": [In("x", f64(2, 2, 3, 6))]}, {"Out": 1, "MidOut": 1},
                  {"n": 4, "k": 2.0, "alpha": 0.2, "beta": 0.5, "data_format": "NHWC"}))
    c.append(Case("unfold-padded-strided", "unfold", {"X": [In("x", f64(2, 2, 4, 5))]}, {"Y": 1},
                  {"kernel_sizes": [2, 3], "strides": [2, 1], "paddings": [1, 0, 0, 1], "dilations": [1, 2]}))
    c.append(Case("sigmoid_focal_loss", "sigmoid_focal_loss",
                  {"X": [In("x", f64(5, 3, lo=-3, hi=3))],
                   "Label": [In("lab", np.array([[0], [1], [3], [-1], [2]], np.int32), diff=False)],
                   "FgNum": [In("fg", np.array([3], np.int32), diff=False)]}, {"Out": 1}, {"gamma": 2.0, "alpha": 0.25}))
    c.append(Case("lstm_unit", "lstm_unit", {"X": [In("x", f64(3, 8))], "C_prev": [In("c", f64(3, 2))]},
                  {"C": 1, "H": 1}, {"forget_bias": 0.5}))
    crf_outs = {"Alpha": 1, "EmissionExps": 1, "TransitionExps": 1, "LogLikelihood": 1}
    c.append(Case("linear_chain_crf-lod", "linear_chain_crf",
                  {"Emission": [In("em", f64(6, 4), [[0, 2, 3, 6]])], "Transition": [In("w", f64(6, 4))],
                   "Label": [In("lab", np.array([[1], [3], [0], [2], [2], [1]], np.int64), [[0, 2, 3, 6]], diff=False)]},
                  crf_outs))
    c.append(Case("linear_chain_crf-padded", "linear_chain_crf",
                  {"Emission": [In("em", f64(2, 3, 4))], "Transition": [In("w", f64(6, 4))],
                   "Label": [In("lab", np.array([[1, 3, 0], [2, 2, 1]], np.int64), diff=False)],
                   "Length": [In("len", np.array([3, 2], np.int64), diff=False)]}, crf_outs))
    for layout, shape in (("NCHW", (2, 6, 3, 2)), ("NHWC", (2, 3, 2, 6))):
        c.append(Case(f"group_norm-{layout}", "group_norm",
                      {"X": [In("x", f64(*shape))], "Scale": [In("s", f64(6, lo=0.5, hi=1.5))], "Bias": [In("b", f64(6))]},
                      {"Y": 1, "Mean": 1, "Variance": 1}, {"groups": 3, "epsilon": 1e-5, "data_layout": layout}))
    c.append(Case("group_norm-no-scale", "group_norm", {"X": [In("x", f64(2, 4, 5))]},
                  {"Y": 1, "Mean": 1, "Variance": 1}, {"groups": 2, "epsilon": 1e-5}))
    c.append(Case("instance_norm", "instance_norm",
                  {"X": [In("x", f64(2, 3, 4, 2))], "Scale": [In("s", f64(3, lo=0.5, hi=1.5))], "Bias": [In("b", f64(3))]},
                  {"Y": 1, "SavedMean": 1, "SavedVariance": 1}, {"epsilon": 1e-5}))
    c.append(Case("filter_by_instag", "filter_by_instag",
                  {"Ins": [In("ins", f64(5, 2), [[0, 2, 3, 5]])],
                   "Ins_tag": [In("tag", np.array([[1], [4], [2], [4]], np.int64), [[0, 2, 3, 4]], diff=False)],
                   "Filter_tag": [In("flt", np.array([4], np.int64), diff=False)]},
                  {"Out": 1, "LossWeight": 1, "IndexMap": 1}, {"is_lod": True, "out_val_if_empty": 0}))
    c.append(Case("center_loss-no-update", "center_loss",
                  {"X": [In("x", f64(4, 3))], "Label": [In("lab", np.array([[1], [0], [1], [2]], np.int64), diff=False)],
                   "Centers": [In("ctr", f64(3, 3), diff=False)],
                   "CenterUpdateRate": [In("rate", np.array([0.5]), diff=False)]},
                  {"SampleCenterDiff": 1, "Loss": 1, "CentersOut": 1}, {"cluster_num": 3, "need_update": False}))
    lstmp_outs = {"Projection": 1, "Cell": 1, "BatchHidden": 1, "BatchGate": 1, "BatchCellPreAct": 1}
    lod = [[0, 2, 3, 6]]
    for peep, reverse in ((True, False), (False, True)):
        c.append(Case(f"lstmp-peepholes-{peep}-reverse-{reverse}", "lstmp",
                      {"Input": [In("x", f64(6, 8), lod)], "Weight": [In("w", f64(3, 8) * 0.5)],
                       "ProjWeight": [In("pw", f64(2, 3))], "Bias": [In("b", f64(1, 14 if peep else 8))],
                       "H0": [In("h0", f64(3, 3))], "C0": [In("c0", f64(3, 2))]},
                      lstmp_outs, {"use_peepholes": peep, "is_reverse": reverse, "proj_activation": "tanh"}))
    c.append(Case("teacher_student_sigmoid_loss", "teacher_student_sigmoid_loss",
                  {"X": [In("x", f64(6, 1, lo=-3, hi=3))],
                   "Label": [In("lab", np.array([[-2.0], [-1.0], [0.3], [1.7], [0.0], [1.0]]), diff=False)]},
                  {"Y": 1}, {"soft_max_lower_bound": -15.0, "soft_max_up_bound": 15.0}))
    c.append(Case("huber_loss", "huber_loss", {"X": [In("x", f64(3, 4) * 2)], "Y": [In("y", f64(3, 4))]},
                  {"Out": 1, "Residual": 1}, {"delta": 0.7}))
    c.append(Case("add_position_encoding", "add_position_encoding", {"X": [In("x", f64(2, 3, 4))]}, {"Out": 1},
                  {"alpha": 0.5, "beta": 2.0}))
    c.append(Case("kron-ranks", "kron", {"X": [In("x", f64(2, 3))], "Y": [In("y", f64(2, 1, 2))]}, {"Out": 1}))
    c.append(Case("cross", "cross", {"X": [In("x", f64(4, 3))], "Y": [In("y", f64(4, 3))]}, {"Out": 1}, {"dim": 1}))
    for p in (2.0, 1.0, 3.0, float("inf")):
        c.append(Case(f"dist-p{p}", "dist", {"X": [In("x", away_from_zero(3, 4))], "Y": [In("y", f64(4) * 0.1)]},
                      {"Out": 1}, {"p": p}))
    return c


CASES = _cases()


# -- harness ---------------------------------------------------------------------------------

def _declare_inputs(block, case):
    names = {}
    for slot, items in case.inputs.items():
        names[slot] = []
        for it in items:
            if not block.has_var(it.name):
                block.create_var(name=it.name, shape=it.value.shape, dtype=it.value.dtype.name,
                                 lod_level=1 if it.lod else 0)
            names[slot].append(it.name)
    return names


def _declare_outputs(block, case):
    names = {}
    for slot, spec in case.outputs.items():
        if isinstance(spec, list):  # written in place into an input var
            names[slot] = list(spec)
        else:
            names[slot] = [f"out.{slot}.{i}" for i in range(spec)]
            for n in names[slot]:
                block.create_var(name=n)
    return names


def _feed(case):
    feed = {}
    for items in case.inputs.values():
        for it in items:
            feed[it.name] = (it.value, it.lod) if it.lod else it.value
    return feed


def _forward_program(case):
    prog = fluid.Program()
    block = prog.global_block()
    op = block.append_op(type=case.op, inputs=_declare_inputs(block, case),
                         outputs=_declare_outputs(block, case), attrs=dict(case.attrs))
    return prog, op


def _grad_program(case):
    """Forward op + its grad ops; returns (program, {output grad name: forward output},
    {input name: its grad name})."""
    prog, op = _forward_program(case)
    block = prog.global_block()
    diff = {it.name for items in case.inputs.values() for it in items if it.diff}
    specs = registry.get_op_def(case.op).grad(op)
    produced = set()
    out_grads = {}
    for spec in specs:
        for slot, names in spec.outputs.items():
            spec.outputs[slot] = [n if n[: -len(GRAD_SUFFIX)] in diff else EMPTY_VAR_NAME for n in names]
            for n in spec.outputs[slot]:
                if n != EMPTY_VAR_NAME and not block.has_var(n):
                    fwd = block.var(n[: -len(GRAD_SUFFIX)])
                    block.create_var(name=n, shape=fwd.shape, dtype=fwd.dtype)
                produced.add(n)
        for names in spec.inputs.values():
            for n in names:
                if n.endswith(GRAD_SUFFIX) and n not in produced and n not in out_grads:
                    fwd = n[: -len(GRAD_SUFFIX)]
                    out_grads[n] = fwd
                    block.create_var(name=n, shape=block.var(fwd).shape, dtype=block.var(fwd).dtype)
        block.append_op(type=spec.type, inputs=spec.inputs, outputs=spec.outputs, attrs=spec.attrs)
    in_grads = {name: name + GRAD_SUFFIX for name in diff if (name + GRAD_SUFFIX) in produced}
    return prog, out_grads, in_grads


def _objective(exe, prog, scope, feed, weights):
    outs = exe.run(prog, feed=feed, fetch_list=list(weights), scope=scope)
    return sum(float(np.sum(np.asarray(o, dtype=np.float64) * w)) for o, w in zip(outs, weights.values()))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_gradient_matches_central_finite_differences(case):
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    gprog, out_grads, in_grads = _grad_program(case)
    fprog, _ = _forward_program(case)
    feed = _feed(case)

    # Output shapes are known only after a forward run (batch dims, LoD).
    fwd_names = sorted(set(out_grads.values()))
    fwd_vals = exe.run(fprog, feed=feed, fetch_list=fwd_names, scope=scope)
    rng = np.random.default_rng(7)
    weights = {n: rng.normal(size=np.shape(v)).astype(np.asarray(v).dtype) for n, v in zip(fwd_names, fwd_vals)}
    gfeed = dict(feed)
    gfeed.update({g: weights[f] for g, f in out_grads.items()})
    assert in_grads, f"{case.id}: the grad ops produce no gradient for a differentiable input"
    analytic = exe.run(gprog, feed=gfeed, fetch_list=list(in_grads.values()), scope=scope)

    for (name, _), got in zip(in_grads.items(), analytic):
        if isinstance(got, SelectedRows):
            got = got.to_dense()
        base = next(it for items in case.inputs.values() for it in items if it.name == name)
        got = np.asarray(got, dtype=np.float64)
        assert got.shape == base.value.shape, f"{case.id}: grad of {name} has shape {got.shape}"
        flat = base.value.reshape(-1)
        picks = np.arange(flat.size)
        if flat.size > case.samples:
            picks = np.random.default_rng(3).choice(flat.size, case.samples, replace=False)
        numeric = []
        for k in picks:
            vals = []
            for sign in (1, -1):
                nudged = flat.copy()
                nudged[k] += sign * case.eps
                f = dict(feed)
                arr = nudged.reshape(base.value.shape)
                f[name] = (arr, base.lod) if base.lod else arr
                vals.append(_objective(exe, fprog, scope, f, weights))
            numeric.append((vals[0] - vals[1]) / (2 * case.eps))
        np.testing.assert_allclose(got.reshape(-1)[picks], numeric, rtol=case.rtol, atol=case.atol,
                                   err_msg=f"{case.id}: d/d{name}")


def test_every_op_with_a_gradient_has_a_case():
    with_grad = {t for t in registry.registered_ops() if registry.get_op_def(t).grad is not None}
    missing = sorted(with_grad - {c.op for c in CASES})
    assert not missing, f"ops with a grad maker but no finite-difference case: {missing}"


def test_sparse_lookup_table_gradient_keeps_duplicate_ids_and_skips_padding_rows():
    dup, lod = ids([1, 4, 1, 6, 0, 4, 1], [3, 1, 3])
    case = Case("x", "lookup_table", {"W": [In("w", f64(7, 3))], "Ids": [In("ids", dup, lod, diff=False)]},
                {"Out": 1}, {"is_sparse": True, "padding_idx": 4})
    prog, out_grads, in_grads = _grad_program(case)
    assert prog.global_block().var("w@GRAD").type == VarType.SELECTED_ROWS
    dout = np.arange(21, dtype=np.float64).reshape(7, 3)
    feed = _feed(case)
    feed.update({g: dout for g in out_grads})
    sr, = fluid.Executor().run(prog, feed=feed, fetch_list=["w@GRAD"], scope=fluid.Scope())
    assert isinstance(sr, SelectedRows)
    assert sr.height == 7
    assert sr.rows.tolist() == [1, 1, 6, 0, 1]  # as looked up, duplicates kept, id 4 dropped
    np.testing.assert_array_equal(sr.values, dout[[0, 2, 3, 4, 6]])
