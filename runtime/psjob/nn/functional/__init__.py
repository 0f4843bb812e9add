"""paddle.nn.functional in static mode: functions that append ops to the current Program.

Losses take Paddle 2.x's `reduction` ('mean', 'sum' or 'none'); 'mean' and 'sum' give a
[1] Variable, ready to be minimized.
"""
from __future__ import annotations

from psjob import tensor as _t
from psjob.fluid import layers as _layers
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import check_int, check_variable
from psjob.fluid.ops.nn_ops import NO_PADDING
from psjob.nn.functional.activation import *  # noqa: F403
from psjob.nn.functional.activation import __all__ as _activation_all
from psjob.nn.functional.common import *  # noqa: F403
from psjob.nn.functional.common import __all__ as _common_all
from psjob.nn.functional.conv import conv1d, conv2d, conv2d_transpose, conv3d
from psjob.nn.functional.loss import *  # noqa: F403
from psjob.nn.functional.loss import __all__ as _loss_all
from psjob.nn.functional.pooling import *  # noqa: F403
from psjob.nn.functional.pooling import __all__ as _pooling_all

__all__ = ["relu", "sigmoid", "tanh", "softmax", "dropout", "linear", "embedding",
           "one_hot", "log_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
           "cross_entropy", "softmax_with_cross_entropy", "mse_loss", "square_error_cost",
           "embedding_lookup", "normalize", "leaky_relu", "prelu", "layer_norm", "conv2d", "conv1d",
           "cosine_similarity", "sequence_mask", "conv2d_transpose", "conv3d"] + _activation_all + _common_all + _loss_all + _pooling_all

relu, sigmoid, tanh = _layers.relu, _layers.sigmoid, _layers.tanh


def softmax(x, axis=-1, dtype=None, name=None):
    """Over `axis`: another axis than the last is moved last and back around the softmax op
    (the same numbers as Paddle's softmax with its axis attribute)."""
    check_variable(x, "x", "softmax")
    nd = len(x.shape)
    axis = check_int(axis, "axis", "softmax")
    if not -nd <= axis < nd:
        raise ValueError(f"softmax: axis {axis} is out of range for the {nd}-D {x.name}")
    if dtype is not None:
        x = _t.cast(x, dtype)
    axis %= nd
    if axis == nd - 1:
        return _layers.softmax(x, name=name)
    perm = [i for i in range(nd) if i != axis] + [axis]
    back = [perm.index(i) for i in range(nd)]
    return _layers.transpose(_layers.softmax(_layers.transpose(x, perm)), back)


def dropout(x, p=0.5, axis=None, training=True, mode="upscale_in_train", name=None):
    """Paddle 2.x's default mode is upscale_in_train (Fluid 1.x's: downgrade_in_infer)."""
    if axis is not None:
        raise ValueError("dropout: a per-axis mask (axis) is not supported")
    return _layers.dropout(x, p, is_test=not training, dropout_implementation=mode, name=name)


def linear(x, weight, bias=None, name=None):
    """x @ weight + bias over the last dimension of x; weight is [in_features, out_features]."""
    check_variable(x, "x", "linear")
    check_variable(weight, "weight", "linear")
    helper = LayerHelper("linear", name)
    out = helper.create_variable_for_type_inference(x.dtype)
    # `mul` flattening all but the last dimension of x is matmul over the last axis.
    helper.append_op(type="mul", inputs={"X": [x], "Y": [weight]}, outputs={"Out": [out]},
                     attrs={"x_num_col_dims": max(len(x.shape) - 1, 1), "y_num_col_dims": 1})
    if bias is None:
        return out
    return _layers.elementwise_add(out, bias, axis=-1)


def embedding_lookup(ids, weight, padding_idx=None, sparse=False, is_distributed=False):
    """Rows of `weight` for int64 ids of any shape; out is ids.shape + [dim] (lookup_table_v2).

    Built on the lookup_table op (ids ending in 1), which the transpiler and Fleet recognize:
    sparse=True makes the gradient a SelectedRows of the looked-up rows, as in Fluid."""
    check_variable(ids, "x", "embedding")
    if ids.dtype not in ("int64", "int32"):
        raise TypeError(f"embedding: ids {ids.name} must be int64, got {ids.dtype}")
    vocab, dim = weight.shape
    if padding_idx is None:
        pad = NO_PADDING
    else:
        pad = check_int(padding_idx, "padding_idx", "embedding")
        if not -vocab <= pad < vocab:
            raise ValueError(f"embedding: padding_idx {pad} is outside [-{vocab}, {vocab})")
        pad = pad + vocab if pad < 0 else pad
    ids_shape = list(ids.shape)
    ends_in_one = len(ids_shape) >= 2 and ids_shape[-1] == 1
    # A length only known at run time ([None, -1] ids, as in PaddleRec's DIN and BST): no static
    # reshape restores ids.shape + [dim], so the lookup takes ids [..., 1] and gives that shape.
    unknown = len(ids_shape) >= 2 and not ends_in_one and any(d < 0 for d in ids_shape[1:])
    if unknown:
        flat = _layers.unsqueeze(ids, [len(ids_shape)])
    else:
        flat = ids if ends_in_one else _layers.reshape(ids, [-1, 1])
    helper = LayerHelper("embedding")
    rows = helper.create_variable_for_type_inference(weight.dtype)
    helper.append_op(type="lookup_table", inputs={"Ids": [flat], "W": [weight]}, outputs={"Out": [rows]},
                     attrs={"is_sparse": bool(sparse), "is_distributed": bool(is_distributed),
                            "remote_prefetch": bool(sparse and not is_distributed), "padding_idx": pad})
    if ends_in_one:
        return _layers.unsqueeze(rows, [len(ids_shape) - 1])
    if len(ids_shape) == 1 or unknown:
        return rows
    return _layers.reshape(rows, [-1] + ids_shape[1:] + [dim])


def embedding(x, weight, padding_idx=None, sparse=False, name=None):
    return embedding_lookup(x, weight, padding_idx, sparse)


def one_hot(x, num_classes, name=None):
    """float32 x.shape + [num_classes] (Paddle 2.x's one_hot_v2)."""
    check_variable(x, "x", "one_hot")
    num_classes = check_int(num_classes, "num_classes", "one_hot", minimum=1)
    helper = LayerHelper("one_hot", name)
    out = helper.create_variable_for_type_inference("float32", stop_gradient=True)
    helper.append_op(type="one_hot_v2", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"depth": num_classes})
    return out



def normalize(x, p=2, axis=1, epsilon=1e-12, name=None):
    """x / max(||x||_p along axis, epsilon), as Paddle builds it: p_norm, maximum, divide."""
    check_variable(x, "x", "normalize")
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise TypeError(f"normalize: p must be a number, got {p!r}")
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise TypeError(f"normalize: axis must be an int, got {axis!r}")
    if len(x.shape) == 1 and axis not in (0, -1):
        raise ValueError(f"normalize: axis {axis} is out of range for the 1-D {x.name}")
    helper = LayerHelper("p_norm", name)
    norm = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="p_norm", inputs={"X": [x]}, outputs={"Out": [norm]},
                     attrs={"axis": axis, "porder": float(p), "keepdim": True, "epsilon": float(epsilon)})
    eps = _t.full([1], epsilon, x.dtype)
    return _t.divide(x, _t.maximum(norm, eps), name=name)


def cosine_similarity(x1, x2, axis=1, eps=1e-8):
    """sum(x1 * x2) / sqrt(max(sum(x1 * x1) * sum(x2 * x2), eps**2)) along `axis`, which is
    reduced away; x1 and x2 broadcast. The same ops as Paddle's (paddle.nn.functional.cosine_similarity)."""
    check_variable(x1, "x1", "cosine_similarity")
    check_variable(x2, "x2", "cosine_similarity")
    w12 = _t.sum(_t.multiply(x1, x2), axis=axis)
    w1 = _t.sum(_t.multiply(x1, x1), axis=axis)
    w2 = _t.sum(_t.multiply(x2, x2), axis=axis)
    return _t.divide(w12, _t.sqrt(_t.clip(_t.multiply(w1, w2), min=eps * eps)))


def leaky_relu(x, negative_slope=0.01, name=None):
    """x where x > 0, else negative_slope * x (Paddle's leaky_relu op, attribute alpha)."""
    check_variable(x, "x", "leaky_relu")
    helper = LayerHelper("leaky_relu", name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="leaky_relu", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"alpha": float(negative_slope)})
    return out


def prelu(x, weight, data_format="NCHW", name=None):
    """x where x > 0, else weight * x: one weight for all of x, or one per channel (axis 1 for
    NC..., the last for N...C), as Paddle's paddle.nn.functional.prelu."""
    check_variable(x, "x", "prelu")
    check_variable(weight, "weight", "prelu")
    if data_format not in ("NC", "NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC"):
        raise ValueError(f"prelu: unknown data_format {data_format!r}")
    n = int(weight.shape[0]) if len(weight.shape) == 1 else -1
    if n < 1:
        raise ValueError(f"prelu: weight must be 1-D, got shape {list(weight.shape)}")
    mode = "all" if n == 1 else "channel"
    if mode == "channel":
        axis = 1 if data_format.startswith("NC") else len(x.shape) - 1
        if len(x.shape) < 2 or x.shape[axis] not in (n, -1):
            raise ValueError(f"prelu: weight has {n} elements but {x.name} has {list(x.shape)} "
                             f"(channels on axis {axis} for {data_format})")
    helper = LayerHelper("prelu", name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="prelu", inputs={"X": [x], "Alpha": [weight]}, outputs={"Out": [out]},
                     attrs={"mode": mode, "data_format": data_format})
    return out


def layer_norm(x, normalized_shape, weight=None, bias=None, epsilon=1e-05, name=None):
    """Normalize x over its trailing dimensions `normalized_shape` (an int or a list), then
    scale by weight and shift by bias (each of prod(normalized_shape) elements, or None)."""
    check_variable(x, "x", "layer_norm")
    norm = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    tail = list(x.shape[len(x.shape) - len(norm):]) if norm else []
    if not norm or len(norm) > len(x.shape) or any(d >= 0 and d != n for d, n in zip(tail, norm)):
        raise ValueError(f"layer_norm: normalized_shape {norm} must match the trailing dimensions "
                         f"of {x.name}{list(x.shape)}")
    return _layer_norm_op(x, weight, bias, len(x.shape) - len(norm), epsilon, name)


def _layer_norm_op(x, scale, bias, begin_norm_axis, epsilon, name=None):
    helper = LayerHelper("layer_norm", name)
    out = helper.create_variable_for_type_inference(x.dtype)
    mean = helper.create_variable_for_type_inference(x.dtype, stop_gradient=True)
    variance = helper.create_variable_for_type_inference(x.dtype, stop_gradient=True)
    inputs = {"X": [x]}
    if scale is not None:
        inputs["Scale"] = [scale]
    if bias is not None:
        inputs["Bias"] = [bias]
    helper.append_op(type="layer_norm", inputs=inputs,
                     outputs={"Y": [out], "Mean": [mean], "Variance": [variance]},
                     attrs={"epsilon": float(epsilon), "begin_norm_axis": int(begin_norm_axis)})
    return out


# -- losses -----------------------------------------------------------------------------

def _reduce(loss, reduction, layer):
    if reduction == "mean":
        return _layers.mean(loss)
    if reduction == "sum":
        return _layers.reduce_sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{layer}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _weighted(loss, weight):
    if weight is None:
        return loss
    check_variable(weight, "weight", "loss")
    return _layers.elementwise_mul(loss, weight)


def log_loss(input, label, epsilon=1e-4, name=None):
    """-label*log(input+eps) - (1-label)*log(1-input+eps), per example (no reduction)."""
    return _layers.log_loss(input, label, epsilon, name)


def binary_cross_entropy(input, label, weight=None, reduction="mean", name=None):
    """-(label*log(input) + (1-label)*log(1-input)), each log clipped below at -100 as Paddle's op."""
    check_variable(input, "input", "binary_cross_entropy")
    check_variable(label, "label", "binary_cross_entropy")
    log_p = _t.clip(_t.log(input), min=-100.0)
    log_q = _t.clip(_t.log(1.0 - input), min=-100.0)
    loss = -(label * log_p + (1.0 - label) * log_q)
    return _reduce(_weighted(loss, weight), reduction, "binary_cross_entropy")


def binary_cross_entropy_with_logits(logit, label, weight=None, reduction="mean", pos_weight=None,
                                     name=None):
    if pos_weight is not None:
        raise ValueError("binary_cross_entropy_with_logits: pos_weight is not supported; weight the "
                         "positive examples with `weight` instead")
    loss = _layers.sigmoid_cross_entropy_with_logits(logit, label)
    return _reduce(_weighted(loss, weight), reduction, "binary_cross_entropy_with_logits")


def cross_entropy(input, label, weight=None, ignore_index=-100, reduction="mean", soft_label=False,
                  axis=-1, use_softmax=True, name=None):
    """Softmax cross entropy of logits (use_softmax=False: of probabilities). Hard labels are
    class ids [N, 1] (or [N]); 'mean' divides by the number of labels not equal to ignore_index,
    as Paddle does."""
    layer = "cross_entropy"
    if weight is not None:
        raise ValueError(f"{layer}: per-class weight is not supported")
    check_variable(input, "input", layer)
    check_variable(label, "label", layer)
    if not soft_label and len(label.shape) == len(input.shape) - 1:
        label = _layers.unsqueeze(label, [len(label.shape)])
    if use_softmax:
        loss = _layers.softmax_with_cross_entropy(input, label, soft_label, ignore_index, axis=axis)
    else:
        loss = _layers.cross_entropy(input, label, soft_label, ignore_index)
    if reduction != "mean" or soft_label:
        return _reduce(loss, reduction, layer)
    counted = _t.cast(_t.not_equal(label, ignore_index), loss.dtype)
    return _layers.elementwise_div(_layers.reduce_sum(loss), _layers.reduce_sum(counted))


def softmax_with_cross_entropy(logits, label, soft_label=False, ignore_index=-100,
                               numeric_stable_mode=True, return_softmax=False, axis=-1):
    return _layers.softmax_with_cross_entropy(logits, label, soft_label, ignore_index,
                                              numeric_stable_mode, return_softmax, axis)


def square_error_cost(input, label):
    return _layers.square_error_cost(input, label)


def mse_loss(input, label, reduction="mean", name=None):
    return _reduce(_layers.square_error_cost(input, label), reduction, "mse_loss")




def sequence_mask(x, maxlen=None, dtype="int64", name=None):
    """paddle.nn.functional.sequence_mask: x.shape + [maxlen], element j of a row 1 where
    j < that row's length in x. maxlen an int, a one-element int Variable, or None (max(x))."""
    check_variable(x, "x", "sequence_mask")
    helper = LayerHelper("sequence_mask", name)
    out = helper.create_variable_for_type_inference(_t._dtype(dtype), stop_gradient=True)
    inputs, attrs = {"X": [x]}, {"out_dtype": _t._dtype(dtype), "maxlen": -1}
    if isinstance(maxlen, _t.Variable):
        inputs["MaxLenTensor"] = [maxlen]
    elif maxlen is not None:
        attrs["maxlen"] = check_int(maxlen, "maxlen", "sequence_mask", minimum=0)
    helper.append_op(type="sequence_mask", inputs=inputs, outputs={"Y": [out]}, attrs=attrs)
    return out
