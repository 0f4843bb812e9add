"""More of Fluid 1.8's fluid.layers (Paddle 1.8 API docs): the 2.0-preview creation and
comparison layers (randint, randn, randperm, full, full_like, meshgrid, allclose,
elementwise_equal, addcmul, scatter_nd), the losses of rec/CTR, NLP and metric-learning programs
(smooth_l1, kldiv_loss, npair_loss, sigmoid_focal_loss, center_loss,
teacher_student_sigmoid_loss, huber_loss, dice_loss), lstm_unit, the tensor moves (maxout,
multiplex, shuffle_channel, space_to_depth, pixel_shuffle, unfold), lrn, mish, prelu,
group_norm, instance_norm, add_position_encoding, edit_distance, filter_by_instag and the
program utilities (autoincreased_step_counter, is_empty, tensor_array_to_tensor,
reorder_lod_tensor_by_rank, get_tensor_from_selected_rows, merge_selected_rows). Each appends
Paddle 1.8's op (kernels: fluid/ops/fluid18_ops.py and the existing ones) or Paddle 1.8's own
composition of layers, so values and gradients are Paddle's.
"""
from __future__ import annotations

from psjob.fluid import unique_name
from psjob.fluid.framework import Variable, default_main_program, default_startup_program
from psjob.fluid.initializer import ConstantInitializer
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers import loss as _loss
from psjob.fluid.layers import manip, nn, ops, tensor
from psjob.fluid.layers._checks import FLOATS, check_dtype, check_int, check_variable
from psjob.fluid.layers._runtime_args import _shape_inputs
from psjob.fluid.layers.control_flow import equal as _equal

__all__ = ["randint", "randn", "randperm", "full", "full_like", "meshgrid", "allclose", "elementwise_equal",
           "addcmul", "scatter_nd", "mish", "unfold", "is_empty", "maxout", "multiplex", "smooth_l1",
           "kldiv_loss", "npair_loss", "sigmoid_focal_loss", "shuffle_channel", "space_to_depth", "pixel_shuffle",
           "lrn", "tensor_array_to_tensor", "reorder_lod_tensor_by_rank",
           "get_tensor_from_selected_rows", "merge_selected_rows", "autoincreased_step_counter", "lstm_unit",
           "prelu", "group_norm", "instance_norm", "filter_by_instag", "center_loss", "teacher_student_sigmoid_loss",
           "huber_loss", "add_position_encoding", "edit_distance", "dice_loss", "bilinear_tensor_product"]

_ANY = ("bool", "float16", "float32", "float64", "int32", "int64")


def _op(op_type, inputs, attrs=None, *, dtype=None, out_slot="Out", stop_gradient=False, helper=None, out=None):
    first = next(iter(inputs.values()))[0]
    helper = helper or LayerHelper(op_type)
    out = out or helper.create_variable_for_type_inference(dtype or first.dtype, stop_gradient=stop_gradient)
    helper.append_op(type=op_type, inputs=inputs, outputs={out_slot: [out]}, attrs=attrs or {})
    return out


def _dtype(dtype, default, allowed, layer):
    name = tensor._known_dtype(default if dtype is None else dtype, layer)
    if name not in allowed:
        raise TypeError(f"{layer}: argument 'dtype' must be one of {', '.join(allowed)}, got {name}")
    return name


# -- creation ----------------------------------------------------------------------------

def randint(low, high=None, shape=None, out=None, dtype=None, device=None, stop_gradient=False, seed=0, name=None):
    """Integers drawn uniformly from [low, high) (randint(n): [0, n)), int64 by default; shape
    a list (which may hold int tensors) or a 1-D int tensor, read when the op runs."""
    dtype = _dtype(dtype, "int64", ("int32", "int64"), "randint")
    if high is None:
        low, high = 0, low
    low, high = check_int(low, "low", "randint"), check_int(high, "high", "randint")
    if low >= high:
        raise ValueError(f"randint: low ({low}) must be below high ({high})")
    inputs, shape_attr = _shape_inputs([1] if shape is None else shape, "randint")
    helper = LayerHelper("randint", name)
    out = out or helper.create_variable_for_type_inference(dtype)
    helper.append_op(type="randint", inputs=inputs, outputs={"Out": [out]},
                     attrs={"shape": shape_attr, "low": low, "high": high, "seed": int(seed), "dtype": dtype})
    out.stop_gradient = bool(stop_gradient)
    return out


def randn(shape, out=None, dtype=None, device=None, stop_gradient=True, name=None):
    """Standard normal values of `shape` (float32 by default); a fresh draw each run (Paddle 1.8
    seeds the op from numpy's generator when the program is built)."""
    dtype = _dtype(dtype, "float32", ("float32", "float64"), "randn")
    if not isinstance(shape, (list, tuple)) or not shape:
        raise TypeError(f"randn: argument 'shape' must be a non-empty list or tuple, got {shape!r}")
    helper = LayerHelper("randn", name)
    out = out or helper.create_variable_for_type_inference(dtype)
    helper.append_op(type="gaussian_random", inputs={}, outputs={"Out": [out]},
                     attrs={"shape": tensor._fixed_shape(list(shape), "randn"), "mean": 0.0, "std": 1.0, "seed": 0,
                            "dtype": dtype})
    out.stop_gradient = bool(stop_gradient)
    return out


def randperm(n, out=None, dtype="int64", device=None, stop_gradient=True, seed=0):
    """A random permutation of 0 .. n-1 (int64 by default)."""
    n = check_int(n, "n", "randperm", minimum=1)
    dtype = _dtype(dtype, "int64", ("int32", "int64"), "randperm")
    helper = LayerHelper("randperm")
    out = out or helper.create_variable_for_type_inference(dtype)
    helper.append_op(type="randperm", inputs={}, outputs={"Out": [out]}, attrs={"n": n, "dtype": dtype, "seed": int(seed)})
    out.stop_gradient = bool(stop_gradient)
    return out


def full(shape, fill_value, out=None, dtype=None, device=None, stop_gradient=True, name=None):
    """fill_constant under Paddle 2.0's name: a tensor of `shape` (ints, int tensors or a 1-D
    int tensor) filled with fill_value (float32 by default)."""
    dtype = _dtype(dtype, "float32", _ANY, "full")
    helper = LayerHelper("full", name)
    out = out or helper.create_variable_for_type_inference(dtype)
    out = tensor.fill_constant(shape, dtype, fill_value, out=out)
    out.stop_gradient = bool(stop_gradient)
    return out


def full_like(input, fill_value, out=None, dtype=None, device=None, stop_gradient=True, name=None):  # noqa: A002
    """A tensor of input's shape filled with fill_value (input's dtype unless given): the
    fill_any_like op, read at run time, so input's batch size carries over."""
    check_variable(input, "input", "full_like")
    dtype = input.dtype if dtype is None else _dtype(dtype, None, _ANY, "full_like")
    out = _op("fill_any_like", {"X": [input]}, {"value": float(fill_value), "dtype": dtype}, dtype=dtype,
              helper=LayerHelper("full_like", name), out=out)
    out.stop_gradient = bool(stop_gradient)
    return out


def meshgrid(input, name=None):  # noqa: A002
    """Coordinate grids of a list of 1-D tensors (ij indexing): output i is input i broadcast to
    [len(input[0]), len(input[1]), ...] (the meshgrid op; its gradient sums the other axes)."""
    if not isinstance(input, (list, tuple)) or not input:
        raise TypeError(f"meshgrid: argument 'input' must be a non-empty list of 1-D Variables, got {input!r}")
    for i, v in enumerate(input):
        check_variable(v, f"input[{i}]", "meshgrid")
        check_dtype(v, f"input[{i}]", ("float16", "float32", "float64", "int32", "int64"), "meshgrid")
        if len(v.shape) != 1:
            raise ValueError(f"meshgrid: input[{i}] {v.name}{list(v.shape)} must be 1-D")
    helper = LayerHelper("meshgrid", name)
    outs = [helper.create_variable_for_type_inference(v.dtype) for v in input]
    helper.append_op(type="meshgrid", inputs={"X": list(input)}, outputs={"Out": outs})
    return outs


def scatter_nd(index, updates, shape, name=None):
    """Zeros of `shape` with `updates` added at `index` (scatter_nd_add on zeros, as Fluid 1.8)."""
    check_variable(updates, "updates", "scatter_nd")
    return manip.scatter_nd_add(tensor.zeros(shape, updates.dtype), index, updates, name=name)


# -- comparison and element-wise ---------------------------------------------------------

def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False, name=None):  # noqa: A002
    """bool [1]: whether |input - other| <= atol + rtol * |other| holds everywhere."""
    check_variable(input, "input", "allclose")
    check_variable(other, "other", "allclose")
    for arg, v in (("rtol", rtol), ("atol", atol)):
        if not isinstance(v, float):
            raise TypeError(f"allclose: argument {arg!r} must be a float, got {v!r}")
    if not isinstance(equal_nan, bool):
        raise TypeError(f"allclose: argument 'equal_nan' must be a bool, got {equal_nan!r}")
    return _op("allclose", {"Input": [input], "Other": [other]}, {"rtol": rtol, "atol": atol, "equal_nan": equal_nan},
               dtype="bool", stop_gradient=True, helper=LayerHelper("allclose", name))


def elementwise_equal(x, y, name=None):
    """x == y element-wise (bool): the `equal` op under its Fluid 1.8 preview name."""
    return _equal(x, y, name=name or unique_name.generate_in(default_main_program(), "elementwise_equal"))


def addcmul(input, tensor1, tensor2, value=1.0, out=None, name=None):  # noqa: A002
    """input + value * tensor1 * tensor2 (Fluid 1.8 builds it from elementwise layers)."""
    for arg, v in (("input", input), ("tensor1", tensor1), ("tensor2", tensor2)):
        check_variable(v, arg, "addcmul")
        check_dtype(v, arg, ("float32", "float64", "int32", "int64"), "addcmul")
    want = float if input.dtype in FLOATS else int
    if isinstance(value, bool) or not isinstance(value, want):
        raise TypeError(f"addcmul: argument 'value' must be a {want.__name__} for {input.dtype} input, got {value!r}")
    res = nn.elementwise_add(input, nn.scale(nn.elementwise_mul(tensor1, tensor2), scale=value))
    return res if out is None else tensor.assign(res, out)


def mish(x, threshold=20, name=None):
    """x * tanh(softplus(x)), softplus(x) taken as x above threshold."""
    check_variable(x, "x", "mish")
    check_dtype(x, "x", ("float32", "float64"), "mish")
    if not threshold > 0:
        raise ValueError(f"mish: threshold must be positive, got {threshold}")
    return _op("mish", {"X": [x]}, {"threshold": float(threshold)}, helper=LayerHelper("mish", name))


def is_empty(x, cond=None):
    """bool [1]: whether x has no element."""
    check_variable(x, "x", "is_empty")
    helper = LayerHelper("is_empty")
    if cond is not None:
        check_variable(cond, "cond", "is_empty")
        check_dtype(cond, "cond", ("bool",), "is_empty")
    return _op("is_empty", {"X": [x]}, dtype="bool", stop_gradient=True, helper=helper, out=cond)


# -- tensor moves ------------------------------------------------------------------------

def maxout(x, groups, name=None, axis=1):
    """The max of each run of `groups` channels (axis 1, or 3 / -1 for NHWC)."""
    check_variable(x, "x", "maxout")
    check_dtype(x, "x", ("float32", "float64"), "maxout")
    if axis not in (1, -1, 3):
        raise ValueError(f"maxout: axis must be 1, -1 or 3, got {axis}")
    groups = check_int(groups, "groups", "maxout", minimum=1)
    return _op("maxout", {"X": [x]}, {"groups": groups, "axis": 3 if axis == -1 else axis},
               helper=LayerHelper("maxout", name))


def multiplex(inputs, index):
    """Row i of the output is row i of inputs[index[i]] (index int32 [N, 1])."""
    if not isinstance(inputs, (list, tuple)) or len(inputs) < 2:
        raise ValueError("multiplex: inputs must be a list of at least 2 Variables")
    for i, v in enumerate(inputs):
        check_variable(v, f"inputs[{i}]", "multiplex")
        check_dtype(v, f"inputs[{i}]", ("float32", "float64", "int32", "int64"), "multiplex")
    check_variable(index, "index", "multiplex")
    check_dtype(index, "index", ("int32", "int64"), "multiplex")
    return _op("multiplex", {"X": list(inputs), "Ids": [index]}, helper=LayerHelper("multiplex"))


def _channel_layer(op_type, x, attr, value, name, dtypes=FLOATS):
    check_variable(x, "x", op_type)
    check_dtype(x, "x", dtypes, op_type)
    if len(x.shape) != 4:
        raise ValueError(f"{op_type}: x {x.name}{list(x.shape)} must be 4-D [N, C, H, W]")
    value = check_int(value, attr, op_type, minimum=1)
    return _op(op_type, {"X": [x]}, {attr: value}, helper=LayerHelper(op_type, name))


def shuffle_channel(x, group, name=None):
    """The channels of x [N, C, H, W] seen as [group, C/group], transposed (ShuffleNet)."""
    return _channel_layer("shuffle_channel", x, "group", group, name)


def space_to_depth(x, blocksize, name=None):
    """x [N, C, H, W] to [N, C b^2, H/b, W/b] in Paddle's element order (C divisible by b^2)."""
    return _channel_layer("space_to_depth", x, "blocksize", blocksize, name, ("float16",) + FLOATS + ("int32", "int64"))


def pixel_shuffle(x, upscale_factor):
    """x [N, C r^2, H, W] to [N, C, H r, W r] (sub-pixel convolution's rearrangement)."""
    return _channel_layer("pixel_shuffle", x, "upscale_factor", upscale_factor, None)


def _pair(v, arg, n=2):
    if isinstance(v, int) and not isinstance(v, bool):
        return [v] * n
    if isinstance(v, (list, tuple)) and len(v) == n and all(isinstance(e, int) for e in v):
        return list(v)
    raise TypeError(f"unfold: argument {arg!r} must be an int or a list of {n} ints, got {v!r}")


def unfold(x, kernel_sizes, strides=1, paddings=0, dilations=1, name=None):
    """im2col: x [N, C, H, W] to [N, C kh kw, L], one column per sliding window (the unfold op)."""
    check_variable(x, "x", "unfold")
    if len(x.shape) != 4:
        raise ValueError(f"unfold: x {x.name}{list(x.shape)} must be 4-D [N, C, H, W]")
    if isinstance(paddings, (list, tuple)) and len(paddings) == 2:
        paddings = list(paddings) * 2
    pads = _pair(paddings, "paddings", 4) if not isinstance(paddings, int) else [paddings] * 4
    attrs = {"kernel_sizes": _pair(kernel_sizes, "kernel_sizes"), "strides": _pair(strides, "strides"),
             "paddings": pads, "dilations": _pair(dilations, "dilations")}
    return _op("unfold", {"X": [x]}, attrs, out_slot="Y", helper=LayerHelper("unfold", name))


def lrn(input, n=5, k=1.0, alpha=1e-4, beta=0.75, name=None, data_format="NCHW"):  # noqa: A002
    """Local response normalization across channels: input / (k + alpha * sum of input^2 over
    the n channels around each)^beta (4-D input)."""
    check_variable(input, "input", "lrn")
    check_dtype(input, "input", ("float32",), "lrn")
    if len(input.shape) != 4:
        raise ValueError(f"lrn: input {input.name}{list(input.shape)} must be 4-D")
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"lrn: data_format must be 'NCHW' or 'NHWC', got {data_format!r}")
    helper = LayerHelper("lrn", name)
    mid = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="lrn", inputs={"X": [input]}, outputs={"Out": [out], "MidOut": [mid]},
                     attrs={"n": check_int(n, "n", "lrn", minimum=1), "k": float(k), "alpha": float(alpha),
                            "beta": float(beta), "data_format": data_format})
    return out


# -- losses ------------------------------------------------------------------------------

def smooth_l1(x, y, inside_weight=None, outside_weight=None, sigma=None):
    """The smooth L1 loss of x - y (weighted inside and outside), summed per row: [N, 1]."""
    for arg, v in (("x", x), ("y", y)):
        check_variable(v, arg, "smooth_l1")
        check_dtype(v, arg, ("float32", "float64"), "smooth_l1")
    helper = LayerHelper("smooth_l1_loss")
    diff = helper.create_variable_for_type_inference(x.dtype)
    loss = helper.create_variable_for_type_inference(x.dtype)
    inputs = {"X": [x], "Y": [y]}
    for slot, w in (("InsideWeight", inside_weight), ("OutsideWeight", outside_weight)):
        if w is not None:
            inputs[slot] = [check_variable(w, slot, "smooth_l1")]
    helper.append_op(type="smooth_l1_loss", inputs=inputs, outputs={"Diff": [diff], "Out": [loss]},
                     attrs={"sigma": float(sigma) if sigma is not None else 1.0})
    return loss


def kldiv_loss(x, target, reduction="mean", name=None):
    """The Kullback-Leibler divergence of target from x (x log-probabilities): target *
    (log(target) - x), reduced by 'none', 'batchmean', 'mean' or 'sum'."""
    check_variable(x, "x", "kldiv_loss")
    check_variable(target, "target", "kldiv_loss")
    check_dtype(x, "x", ("float32", "float64"), "kldiv_loss")
    if reduction not in ("none", "batchmean", "mean", "sum"):
        raise ValueError(f"kldiv_loss: reduction must be 'none', 'batchmean', 'mean' or 'sum', got {reduction!r}")
    return _op("kldiv_loss", {"X": [x], "Target": [target]}, {"reduction": reduction}, out_slot="Loss",
               helper=LayerHelper("kldiv_loss", name))


def npair_loss(anchor, positive, labels, l2_reg=0.002):
    """Sohn's N-pair loss (Fluid 1.8's composition): soft-label cross entropy of
    anchor @ positive^T against the same-label matrix, plus an L2 term on both embeddings."""
    for arg, v in (("anchor", anchor), ("positive", positive)):
        check_variable(v, arg, "npair_loss")
        check_dtype(v, arg, ("float32", "float64"), "npair_loss")
    check_variable(labels, "labels", "npair_loss")
    batch_size = labels.shape[0]
    labels = manip.reshape(labels, shape=[batch_size, 1])
    labels = manip.expand(labels, expand_times=[1, batch_size])
    labels = tensor.cast(_equal(labels, manip.transpose(labels, perm=[1, 0])), "float32")
    labels = nn.elementwise_div(labels, manip.reduce_sum(labels, dim=1, keep_dim=True))
    l2loss = nn.elementwise_add(manip.reduce_mean(manip.reduce_sum(ops.square(anchor), 1)),
                                manip.reduce_mean(manip.reduce_sum(ops.square(positive), 1)))
    l2loss = nn.scale(l2loss, scale=0.25 * l2_reg)
    similarity = nn.matmul(anchor, positive, transpose_x=False, transpose_y=True)
    softmax_ce = _loss.softmax_with_cross_entropy(logits=similarity, label=labels, soft_label=True)
    cross_entropy = manip.reduce_sum(nn.elementwise_mul(labels, softmax_ce), 0)
    return nn.elementwise_add(l2loss, manip.reduce_mean(cross_entropy))


def sigmoid_focal_loss(x, label, fg_num, gamma=2.0, alpha=0.25):
    """The focal loss of each of x's D class logits [N, D] against label [N, 1] (0 background,
    1..D a class, -1 ignored), normalized by fg_num ([1] int32, the foreground count)."""
    check_variable(x, "x", "sigmoid_focal_loss")
    check_dtype(x, "x", ("float32", "float64"), "sigmoid_focal_loss")
    check_variable(label, "label", "sigmoid_focal_loss")
    check_dtype(label, "label", ("int32",), "sigmoid_focal_loss")
    check_variable(fg_num, "fg_num", "sigmoid_focal_loss")
    check_dtype(fg_num, "fg_num", ("int32",), "sigmoid_focal_loss")
    return _op("sigmoid_focal_loss", {"X": [x], "Label": [label], "FgNum": [fg_num]},
               {"gamma": float(gamma), "alpha": float(alpha)}, helper=LayerHelper("sigmoid_focal_loss"))


# -- recurrent ---------------------------------------------------------------------------

def lstm_unit(x_t, hidden_t_prev, cell_t_prev, forget_bias=0.0, param_attr=None, bias_attr=None, name=None):
    """One LSTM step: fc([x_t, hidden_t_prev]) to the 4 gate pre-activations, then the
    lstm_unit op. Returns (hidden, cell)."""
    for arg, v in (("x_t", x_t), ("hidden_t_prev", hidden_t_prev), ("cell_t_prev", cell_t_prev)):
        check_variable(v, arg, "lstm_unit")
        check_dtype(v, arg, ("float32", "float64"), "lstm_unit")
        if len(v.shape) != 2:
            raise ValueError(f"lstm_unit: {arg} {v.name}{list(v.shape)} must be 2-D")
    if hidden_t_prev.shape[1] != cell_t_prev.shape[1]:
        raise ValueError(f"lstm_unit: hidden_t_prev {list(hidden_t_prev.shape)} and cell_t_prev "
                         f"{list(cell_t_prev.shape)} must have one width")
    helper = LayerHelper("lstm_unit", name)
    size = int(cell_t_prev.shape[1])
    concat_out = manip.concat([x_t, hidden_t_prev], axis=1)
    fc_out = nn.fc(input=concat_out, size=4 * size, param_attr=param_attr,
                   bias_attr=bias_attr if bias_attr is not None else None)
    c = helper.create_variable_for_type_inference(x_t.dtype)
    h = helper.create_variable_for_type_inference(x_t.dtype)
    helper.append_op(type="lstm_unit", inputs={"X": [fc_out], "C_prev": [cell_t_prev]},
                     outputs={"C": [c], "H": [h]}, attrs={"forget_bias": float(forget_bias)})
    return h, c


# -- program utilities -------------------------------------------------------------------

def autoincreased_step_counter(counter_name=None, begin=1, step=1):
    """A persistable int64 [1] counter (named @STEP_COUNTER@ unless given) that the main program
    increments by `step` first thing each run: `begin` on the first run. Asked again by name,
    the same counter comes back."""
    name = counter_name or "@STEP_COUNTER@"
    main = default_main_program().global_block()
    if name in main.vars:
        return main.vars[name]
    counter = main.create_var(name=name, shape=[1], dtype="int64", persistable=True, stop_gradient=True)
    startup = default_startup_program().global_block()
    init = startup.create_var(name=name, shape=[1], dtype="int64", persistable=True)
    ConstantInitializer(float(begin - 1))(init, startup)
    main._prepend_op(type="increment", inputs={"X": [counter]}, outputs={"Out": [counter]},
                     attrs={"step": float(step)})
    return counter


def tensor_array_to_tensor(input, axis=1, name=None, use_stack=False):  # noqa: A002
    """A LoDTensorArray's entries concatenated (or stacked) along axis, and the int32 size of
    each along it. Returns (out, out_index)."""
    check_variable(input, "input", "tensor_array_to_tensor")
    helper = LayerHelper("tensor_array_to_tensor", name)
    out = helper.create_variable_for_type_inference(input.dtype)
    index = helper.create_variable_for_type_inference("int32", stop_gradient=True)
    helper.append_op(type="tensor_array_to_tensor", inputs={"X": [input]},
                     outputs={"Out": [out], "OutIndex": [index]},
                     attrs={"axis": check_int(axis, "axis", "tensor_array_to_tensor"), "use_stack": bool(use_stack)})
    return out, index


def reorder_lod_tensor_by_rank(x, rank_table):
    """x's rows (one per sequence) in rank_table's order."""
    check_variable(x, "x", "reorder_lod_tensor_by_rank")
    check_variable(rank_table, "rank_table", "reorder_lod_tensor_by_rank")
    return _op("reorder_lod_tensor_by_rank", {"X": [x], "RankTable": [rank_table]},
               helper=LayerHelper("reorder_lod_tensor_by_rank"))


def _selected_rows_layer(op_type, x, name):
    check_variable(x, "x", op_type)
    if x.type != "SELECTED_ROWS":
        raise TypeError(f"{op_type}: x {x.name} must be a SelectedRows variable, got {x.type}")
    return _op(op_type, {"X": [x]}, helper=LayerHelper(op_type, name))


def get_tensor_from_selected_rows(x, name=None):
    """A SelectedRows variable's value rows as a dense tensor."""
    return _selected_rows_layer("get_tensor_from_selected_rows", x, name)


def merge_selected_rows(x, name=None):
    """A SelectedRows variable with its repeated rows summed (one row per id, ascending)."""
    out = _selected_rows_layer("merge_selected_rows", x, name)
    out.type = "SELECTED_ROWS"
    return out


# -- normalization and activation with parameters ---------------------------------------

def prelu(x, mode, param_attr=None, name=None, data_format="NCHW"):
    """x where x > 0, else alpha * x, alpha a parameter (0.25 at start) of [1] (mode 'all'),
    [1, C, 1, 1] ('channel'; [1, 1, 1, C] for an NHWC data_format, as paddle.static.nn.prelu
    takes it) or [1] + x.shape[1:] ('element'), as Paddle shapes it."""
    check_variable(x, "x", "prelu")
    if mode not in ("all", "channel", "element"):
        raise ValueError(f"prelu: mode must be 'all', 'channel' or 'element', got {mode!r}")
    shape = [1]
    if mode == "channel":
        if data_format not in ("NC", "NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC"):
            raise ValueError(f"prelu: data_format must be one of 'NC', 'NCL', 'NCHW', 'NCDHW', 'NLC', 'NHWC', "
                             f"'NDHWC', got {data_format!r}")
        if len(x.shape) < 2:
            raise ValueError(f"prelu: mode 'channel' needs x of at least 2 dimensions, got {x.name}{list(x.shape)}")
        data_format = "NCHW" if data_format[1] == "C" else "NHWC"
        shape = [1, 1, 1, int(x.shape[-1])] if data_format == "NHWC" else [1, int(x.shape[1]), 1, 1]
    elif mode == "element":
        shape = [1] + [int(d) for d in x.shape[1:]]
    if any(d < 1 for d in shape):
        raise ValueError(f"prelu: the dimensions of {x.name}{list(x.shape)} alpha covers must be known")
    helper = LayerHelper("prelu", name)
    alpha = helper.create_parameter(param_attr, shape, x.dtype, default_initializer=ConstantInitializer(0.25))
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="prelu", inputs={"X": [x], "Alpha": [alpha]}, outputs={"Out": [out]},
                     attrs={"mode": mode, "data_format": data_format})
    return out


def group_norm(input, groups, epsilon=1e-05, param_attr=None, bias_attr=None, act=None,  # noqa: A002
               data_layout="NCHW", name=None):
    """Each sample's `groups` runs of channels normalized over their elements (the group_norm
    op). As Fluid 1.8, the scale (ones) and bias (zeros) of [C] are created only when
    param_attr / bias_attr are given."""
    check_variable(input, "input", "group_norm")
    check_dtype(input, "input", ("float32", "float64"), "group_norm")
    if data_layout not in ("NCHW", "NHWC"):
        raise ValueError(f"group_norm: data_layout must be 'NCHW' or 'NHWC', got {data_layout!r}")
    if len(input.shape) < 2:
        raise ValueError(f"group_norm: input {input.name}{list(input.shape)} needs at least 2 dimensions")
    helper = LayerHelper("group_norm", name)
    channels = [int(input.shape[1] if data_layout == "NCHW" else input.shape[-1])]
    inputs = {"X": [input]}
    if param_attr:
        inputs["Scale"] = [helper.create_parameter(param_attr, channels, input.dtype,
                                                   default_initializer=ConstantInitializer(1.0))]
    if bias_attr:
        inputs["Bias"] = [helper.create_parameter(bias_attr, channels, input.dtype, is_bias=True)]
    # Paddle 1.8 names these _generated_var_N (LayerHelper.create_variable without a name)
    mean, variance = (helper.block().create_var(dtype=input.dtype, stop_gradient=True) for _ in range(2))
    out = helper.block().create_var(dtype=input.dtype)
    helper.append_op(type="group_norm", inputs=inputs, outputs={"Y": [out], "Mean": [mean], "Variance": [variance]},
                     attrs={"epsilon": float(epsilon), "groups": check_int(groups, "groups", "group_norm", minimum=1),
                            "data_layout": data_layout})
    return helper.append_activation(out, act)


def instance_norm(input, epsilon=1e-05, param_attr=None, bias_attr=None, name=None):  # noqa: A002
    """Each channel of each sample normalized over its own elements (the instance_norm op), then
    scaled and shifted by [C] parameters (ones and zeros at start), as Fluid 1.8."""
    check_variable(input, "input", "instance_norm")
    check_dtype(input, "input", ("float32", "float64"), "instance_norm")
    if bias_attr is False:
        raise ValueError("instance_norm: bias_attr must not be False")
    if len(input.shape) < 2 or input.shape[1] < 1:
        raise ValueError(f"instance_norm: input {input.name}{list(input.shape)} needs its channels (axis 1) known")
    helper = LayerHelper("instance_norm", name)
    channels = [int(input.shape[1])]
    scale = helper.create_parameter(param_attr, channels, input.dtype, default_initializer=ConstantInitializer(1.0))
    bias = helper.create_parameter(bias_attr, channels, input.dtype, is_bias=True,
                                   default_initializer=ConstantInitializer(0.0))
    saved_mean, saved_var = (helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
                             for _ in range(2))
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="instance_norm", inputs={"X": [input], "Scale": [scale], "Bias": [bias]},
                     outputs={"Y": [out], "SavedMean": [saved_mean], "SavedVariance": [saved_var]},
                     attrs={"epsilon": float(epsilon)})
    return out


def filter_by_instag(ins, ins_tag, filter_tag, is_lod, out_val_if_empty=0):
    """The instances of ins (its sequences, or its rows when not is_lod) whose tags (ins_tag,
    one int64 sequence per instance) include one of filter_tag, and a loss weight of 1.0 per
    kept instance; with none kept, one row of out_val_if_empty and a weight of 0. Returns
    [out, loss_weight]."""
    check_variable(ins, "ins", "filter_by_instag")
    for arg, v in (("ins_tag", ins_tag), ("filter_tag", filter_tag)):
        check_variable(v, arg, "filter_by_instag")
        check_dtype(v, arg, ("int64",), "filter_by_instag")
    helper = LayerHelper("filter_by_instag")
    out = helper.create_variable_for_type_inference(ins.dtype)
    loss_weight = helper.create_variable_for_type_inference("float32", stop_gradient=True)
    index_map = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    helper.append_op(type="filter_by_instag", inputs={"Ins": [ins], "Ins_tag": [ins_tag], "Filter_tag": [filter_tag]},
                     outputs={"Out": [out], "LossWeight": [loss_weight], "IndexMap": [index_map]},
                     attrs={"is_lod": bool(is_lod), "out_val_if_empty": int(out_val_if_empty)})
    return [out, loss_weight]


def center_loss(input, label, num_classes, alpha, param_attr, update_center=True):  # noqa: A002
    """Half the squared distance of each row of input [N, D] to its class center ([N, 1]); the
    centers, a [num_classes, D] parameter not trained by the optimizer, move towards their rows
    by alpha (a float, kept in the persistable centerloss_alpha, or a [1] Variable) each run
    when update_center."""
    check_variable(input, "input", "center_loss")
    check_dtype(input, "input", ("float32", "float64"), "center_loss")
    check_variable(label, "label", "center_loss")
    check_dtype(label, "label", ("int32", "int64"), "center_loss")
    helper = LayerHelper("center_loss")
    centers = helper.create_parameter(param_attr, [check_int(num_classes, "num_classes", "center_loss", minimum=1),
                                                   int(input.shape[1])], input.dtype)
    centers.stop_gradient = True
    if isinstance(alpha, Variable):
        rate = alpha
    else:
        if not isinstance(alpha, float):
            raise TypeError(f"center_loss: alpha must be a float or a Variable, got {alpha!r}")
        main = default_main_program().global_block()
        rate = main.create_var(name="centerloss_alpha", shape=[1], dtype="float32", persistable=True,
                               stop_gradient=True)
        startup = default_startup_program().global_block()
        ConstantInitializer(alpha)(startup.create_var(name="centerloss_alpha", shape=[1], dtype="float32",
                                                      persistable=True), startup)
    diff = helper.create_variable_for_type_inference(input.dtype)
    loss = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="center_loss", inputs={"X": [input], "Label": [label], "Centers": [centers],
                                                 "CenterUpdateRate": [rate]},
                     outputs={"SampleCenterDiff": [diff], "Loss": [loss], "CentersOut": [centers]},
                     attrs={"cluster_num": int(num_classes), "need_update": bool(update_center)})
    return loss


def teacher_student_sigmoid_loss(input, label, soft_max_up_bound=15.0, soft_max_lower_bound=-15.0):  # noqa: A002
    """CTR distillation's loss: the sigmoid cross entropy of input against the click in label
    (< -1 non-click, [-1, 0) click, [0, 1) non-click with teacher score label, [1, 2] click
    with teacher score label - 1), plus against the teacher score where there is one."""
    for arg, v in (("input", input), ("label", label)):
        check_variable(v, arg, "teacher_student_sigmoid_loss")
        check_dtype(v, arg, ("float32", "float64"), "teacher_student_sigmoid_loss")
    helper = LayerHelper("teacher_student_sigmoid_loss")
    out = helper.block().create_var(dtype=input.dtype)  # Paddle 1.8 names it _generated_var_N
    helper.append_op(type="teacher_student_sigmoid_loss", inputs={"X": [input], "Label": [label]},
                     outputs={"Y": [out]}, attrs={"soft_max_lower_bound": float(soft_max_lower_bound),
                                                  "soft_max_up_bound": float(soft_max_up_bound)})
    return out


def huber_loss(input, label, delta):  # noqa: A002
    """The Huber loss of label - input: r^2 / 2 within delta, delta (|r| - delta / 2) beyond."""
    for arg, v in (("input", input), ("label", label)):
        check_variable(v, arg, "huber_loss")
        check_dtype(v, arg, ("float32", "float64"), "huber_loss")
    helper = LayerHelper("huber_loss")
    residual = helper.create_variable_for_type_inference(input.dtype)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="huber_loss", inputs={"X": [input], "Y": [label]},
                     outputs={"Out": [out], "Residual": [residual]}, attrs={"delta": float(delta)})
    return out


def add_position_encoding(input, alpha, beta, name=None):  # noqa: A002
    """alpha * input + beta * the sinusoidal position encoding (the Transformer's), input
    [N, L, P] or LoD sequences [T, P]."""
    check_variable(input, "input", "add_position_encoding")
    check_dtype(input, "input", ("float32", "float64"), "add_position_encoding")
    return _op("add_position_encoding", {"X": [input]}, {"alpha": float(alpha), "beta": float(beta)},
               helper=LayerHelper("add_position_encoding", name))


def edit_distance(input, label, normalized=True, ignored_tokens=None, input_length=None,  # noqa: A002
                  label_length=None):
    """The Levenshtein distance of each hypothesis (input) to its reference (label), int64 LoD
    sequences or padded with lengths, divided by the reference length when normalized; tokens
    in ignored_tokens are erased first. Returns (distance [N, 1], number of sequences [1])."""
    helper = LayerHelper("edit_distance")
    if ignored_tokens:
        erased = []
        for v in (input, label):
            out = helper.create_variable_for_type_inference("int64", stop_gradient=True)
            helper.append_op(type="sequence_erase", inputs={"X": [v]}, outputs={"Out": [out]},
                             attrs={"tokens": [int(t) for t in ignored_tokens]})
            erased.append(out)
        input, label = erased
    inputs = {"Hyps": [input], "Refs": [label]}
    if input_length is not None and label_length is not None:
        inputs.update(HypsLength=[input_length], RefsLength=[label_length])
    dist = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    count = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    helper.append_op(type="edit_distance", inputs=inputs, outputs={"Out": [dist], "SequenceNum": [count]},
                     attrs={"normalized": bool(normalized)})
    dist.dtype = "float32"
    return dist, count


def dice_loss(input, label, epsilon=1e-05, name=None):  # noqa: A002
    """1 - 2 |input . one_hot(label)| / (|input| + |label|), averaged (Fluid 1.8's composition)."""
    check_variable(input, "input", "dice_loss")
    one_hot_label = manip.one_hot(label, depth=input.shape[-1])
    dims = list(range(1, len(input.shape)))
    inse = manip.reduce_sum(nn.elementwise_mul(input, one_hot_label), dim=dims)
    denominator = nn.elementwise_add(manip.reduce_sum(input, dim=dims), manip.reduce_sum(one_hot_label, dim=dims))
    score = nn.scale(nn.elementwise_div(nn.scale(inse, scale=2.0), nn.scale(denominator, bias=float(epsilon))),
                     scale=-1.0, bias=1.0)
    return manip.reduce_mean(score)


def bilinear_tensor_product(x, y, size, act=None, name=None, param_attr=None, bias_attr=None):
    """out[n, k] = x[n] @ W[k] @ y[n] + b[k]: weight [size, M, N] for x [B, M] and y [B, N], bias
    [1, size] (bias_attr=False: none), as Paddle's fluid.layers / paddle.static.nn.bilinear_tensor_product; built
    from matmul, reshape and a reduction, so its gradients are theirs."""
    for arg, v in (("x", x), ("y", y)):
        check_variable(v, arg, "bilinear_tensor_product")
        if len(v.shape) != 2 or v.shape[1] < 1:
            raise ValueError(f"bilinear_tensor_product: {arg} {v.name}{list(v.shape)} must be 2-D [batch, features] "
                             "with its features known")
    size = check_int(size, "size", "bilinear_tensor_product", minimum=1)
    m, n = int(x.shape[1]), int(y.shape[1])
    helper = LayerHelper("bilinear_tensor_product", name)
    w = helper.create_parameter(param_attr, [size, m, n], x.dtype)
    # x @ W laid out [M, size * N]: each sample's row of x times every W[k], then dotted with y
    w_flat = manip.reshape(manip.transpose(w, [1, 0, 2]), [m, size * n])
    xw = manip.reshape(nn.matmul(x, w_flat), [-1, size, n])
    out = manip.reduce_sum(nn.elementwise_mul(xw, manip.unsqueeze(y, [1])), dim=[2])
    bias = helper.create_parameter(bias_attr, [1, size], x.dtype, is_bias=True)
    if bias is not None:
        out = nn.elementwise_add(out, bias)
    return out if act is None else helper.append_activation(out, act)
