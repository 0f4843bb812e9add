"""paddle.static.nn: layer functions that create their parameters where they are called."""
from __future__ import annotations

import numbers

import numpy as np

from psjob.fluid import layers as _layers
from psjob.fluid.initializer import ConstantInitializer, NormalInitializer
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers import batch_norm, continuous_value_model, conv2d_transpose, conv3d, data_norm, nce
from psjob.fluid.layers._checks import check_int, check_variable
from psjob.static.nn import control_flow, sequence_lod
from psjob.static.nn.control_flow import case, cond, switch_case, while_loop
from psjob.static.nn.sequence_lod import (
    sequence_conv,
    sequence_expand,
    sequence_expand_as,
    sequence_first_step,
    sequence_last_step,
    sequence_pool,
    sequence_reshape,
    sequence_softmax,
    sequence_unpad,
)

# Paddle 3.0's paddle.static.nn names psjob has: its own layer functions below, and Fluid's
# layers Paddle keeps here (continuous_value_model, conv2d_transpose, nce, the sequence layers).
__all__ = ["fc", "embedding", "sparse_embedding", "batch_norm", "conv2d", "conv2d_transpose", "conv3d", "layer_norm",
           "group_norm", "instance_norm", "prelu", "bilinear_tensor_product",
           "continuous_value_model", "data_norm", "nce", "sequence_pool", "sequence_first_step", "sequence_last_step",
           "sequence_conv", "sequence_softmax", "sequence_expand", "sequence_unpad", "sequence_expand_as",
           "sequence_reshape", "cond", "case", "switch_case", "while_loop"]


def fc(x, size, num_flatten_dims=1, weight_attr=None, bias_attr=None, activation=None, name=None):
    """activation(x @ W + b), x flattened to 2-D after `num_flatten_dims`; a list x gets one W each."""
    return _layers.fc(x, size, num_flatten_dims, param_attr=weight_attr, bias_attr=bias_attr,
                      act=activation, name=name)


def embedding(input, size, is_sparse=False, is_distributed=False, padding_idx=None,
              param_attr=None, dtype="float32"):
    """Rows of a [vocab, dim] table for int64 ids of any shape: out is ids.shape + [dim]
    (Paddle 2.x's lookup_table_v2 shape; Fluid 1.x's embedding drops a last dimension of 1)."""
    from psjob.nn.functional import embedding_lookup
    check_variable(input, "input", "embedding")
    if not isinstance(size, (list, tuple)) or len(size) != 2:
        raise TypeError(f"embedding: size must be [vocab_size, embedding_dim], got {size!r}")
    vocab, dim = check_int(size[0], "size[0]", "embedding", minimum=1), check_int(size[1], "size[1]", "embedding", minimum=1)
    weight = LayerHelper("embedding").create_parameter(param_attr, [vocab, dim], dtype)
    return embedding_lookup(input, weight, padding_idx, is_sparse, is_distributed)


def sparse_embedding(input, size, padding_idx=None, is_test=False, entry=None,
                     table_class="MemorySparseTable", param_attr=None, dtype="float32", slot=None):
    """A distributed lookup table, as Fluid's embedding(is_sparse=True, is_distributed=True):
    under Fleet or the transpiler its rows live on the parameter servers, keyed by id. ids end
    in a dimension of 1 and out replaces it by `dim` (the lookup_table op's shape).

    `entry` (admission policies), `table_class` and `slot` are accepted and have no effect:
    psjob's table admits every id (docs/user/paddle2.md)."""
    if entry is not None and not callable(getattr(entry, "_to_attr", None)):  # paddle.distributed's EntryAttr
        raise ValueError("sparse_embedding: entry must be a paddle.distributed.ProbabilityEntry, CountFilterEntry "
                         f"or ShowClickEntry, got {type(entry).__name__}")
    if table_class not in ("CommonSparseTable", "SSDSparseTable", "MemorySparseTable"):
        raise ValueError("sparse_embedding: table_class must be 'CommonSparseTable', 'SSDSparseTable' or "
                         f"'MemorySparseTable', got {table_class!r}")
    return _layers.embedding(input, size, is_sparse=True, is_distributed=True, padding_idx=padding_idx,
                             param_attr=param_attr, dtype=dtype)


def conv2d(input, num_filters, filter_size, stride=1, padding=0, dilation=1, groups=None, param_attr=None,
           bias_attr=None, use_cudnn=True, act=None, name=None, data_format="NCHW"):
    """A 2-D convolution creating its filter [num_filters, C/groups, kh, kw] (Paddle's default
    Normal(0, sqrt(2 / (kh * kw * C)))) and bias [num_filters], as paddle.static.nn.conv2d;
    arguments as paddle.nn.functional.conv2d's. use_cudnn has no effect."""
    from psjob.nn.functional import conv2d as _conv2d
    check_variable(input, "input", "conv2d")
    if len(input.shape) != 4:
        raise ValueError(f"conv2d: input must be 4-D, got {input.name}{list(input.shape)}")
    channels = input.shape[3] if data_format == "NHWC" else input.shape[1]
    groups = 1 if groups is None else check_int(groups, "groups", "conv2d", minimum=1)
    kernel = [filter_size] * 2 if isinstance(filter_size, numbers.Integral) else list(filter_size)
    if channels < 1 or channels % groups:
        raise ValueError(f"conv2d: the input's {channels} channels must be known and divisible by groups {groups}")
    helper = LayerHelper("conv2d", name)
    std = (2.0 / (np.prod(kernel) * channels)) ** 0.5
    weight = helper.create_parameter(param_attr, [check_int(num_filters, "num_filters", "conv2d", minimum=1),
                                                  channels // groups] + [int(k) for k in kernel],
                                     input.dtype, default_initializer=NormalInitializer(0.0, float(std)))
    bias = helper.create_parameter(bias_attr, [num_filters], input.dtype, is_bias=True)
    out = _conv2d(input, weight, bias, stride, padding, dilation, groups, data_format)
    return helper.append_activation(out, act)


def layer_norm(input, scale=True, shift=True, begin_norm_axis=1, epsilon=1e-05, param_attr=None,  # noqa: A002
               bias_attr=None, act=None, name=None):
    """Layer normalization of input's dimensions from begin_norm_axis on, with a scale
    (initialized to 1) and a shift (to 0) of their product's size, created here."""
    from psjob.nn.functional import _layer_norm_op
    check_variable(input, "input", "layer_norm")
    if not 0 < begin_norm_axis < len(input.shape):
        raise ValueError(f"layer_norm: begin_norm_axis {begin_norm_axis} is out of range for "
                         f"{input.name}{list(input.shape)}")
    tail = input.shape[begin_norm_axis:]
    if any(d < 0 for d in tail):
        raise ValueError(f"layer_norm: the normalized dimensions {list(tail)} of {input.name} must be known")
    size = [int(np.prod(tail))]
    helper = LayerHelper("layer_norm", name)
    w = helper.create_parameter(param_attr, size, input.dtype, default_initializer=ConstantInitializer(1.0)) \
        if scale else None
    b = helper.create_parameter(bias_attr, size, input.dtype, is_bias=True) if shift else None
    out = _layer_norm_op(input, w, b, begin_norm_axis, epsilon)
    return out if act is None else getattr(_layers, act)(out)


def group_norm(input, groups, epsilon=1e-05, param_attr=None, bias_attr=None, act=None,  # noqa: A002
               data_layout="NCHW", name=None):
    """Each sample's `groups` runs of channels normalized over their elements. As Paddle 3.0's
    legacy static group_norm, the scale (ones) and bias (zeros) of [C] are created only when
    param_attr / bias_attr are given (a ParamAttr, a name or True): with the defaults there
    are none."""
    from psjob.nn.functional import group_norm as _group_norm
    check_variable(input, "input", "group_norm")
    if len(input.shape) < 2:
        raise ValueError(f"group_norm: input {input.name}{list(input.shape)} needs at least 2 dimensions [N, C, ...]")
    if data_layout != "NCHW":
        raise ValueError(f"group_norm: only data_layout 'NCHW' is supported, got {data_layout!r}")
    groups = check_int(groups, "groups", "group_norm", minimum=1)
    helper = LayerHelper("group_norm", name)
    channels = [int(input.shape[1])]
    scale = helper.create_parameter(param_attr, channels, input.dtype, default_initializer=ConstantInitializer(1.0)) \
        if param_attr else None
    bias = helper.create_parameter(bias_attr, channels, input.dtype, is_bias=True) if bias_attr else None
    out = _group_norm(input, groups, epsilon, scale, bias, "NCHW")
    return out if act is None else getattr(_layers, act)(out)


def instance_norm(input, epsilon=1e-05, param_attr=None, bias_attr=None, name=None):  # noqa: A002
    """Each channel of each sample normalized over its own elements (input 2-D to 5-D, channels
    on axis 1). As Paddle 3.0's legacy static instance_norm, the scale (ones) and bias (zeros)
    of [C] are created only when both param_attr and bias_attr are given."""
    from psjob.nn.functional import group_norm as _group_norm
    check_variable(input, "input", "instance_norm")
    if not 2 <= len(input.shape) <= 5 or input.shape[1] < 1:
        raise ValueError(f"instance_norm: input {input.name}{list(input.shape)} must be 2-D to 5-D with its "
                         "channels (axis 1) known")
    if param_attr is False and bias_attr is not False:
        raise ValueError("instance_norm: param_attr and bias_attr must be False together")
    helper = LayerHelper("instance_norm", name)
    channels = int(input.shape[1])
    scale = bias = None
    if param_attr and bias_attr:
        scale = helper.create_parameter(param_attr, [channels], input.dtype,
                                        default_initializer=ConstantInitializer(1.0))
        bias = helper.create_parameter(bias_attr, [channels], input.dtype, is_bias=True)
    return _group_norm(input, channels, epsilon, scale, bias, "NCHW")


def prelu(x, mode, param_attr=None, data_format="NCHW", name=None):
    """x where x > 0, else alpha * x: Fluid 1.8's prelu (fluid.layers.prelu), with
    data_format as paddle.static.nn.prelu takes it."""
    return _layers.prelu(x, mode, param_attr=param_attr, name=name, data_format=data_format)


def bilinear_tensor_product(x, y, size, act=None, name=None, param_attr=None, bias_attr=None):
    """out[n, k] = x[n] @ W[k] @ y[n] + b[k]: Fluid 1.8's fluid.layers.bilinear_tensor_product."""
    return _layers.bilinear_tensor_product(x, y, size, act=act, name=name, param_attr=param_attr,
                                           bias_attr=bias_attr)
