"""fluid.nets: Fluid 1.x's composite layers (Paddle 1.8 API docs, fluid.nets)."""
from __future__ import annotations

from psjob.fluid.layers import sequence_lod

__all__ = ["sequence_conv_pool", "simple_img_conv_pool", "img_conv_group", "glu"]


def sequence_conv_pool(input, num_filters, filter_size, param_attr=None, act="sigmoid", pool_type="max",
                       bias_attr=None):
    """sequence_conv (with its bias and act) then sequence_pool of pool_type: one row per
    sequence."""
    conv = sequence_lod.sequence_conv(input=input, num_filters=num_filters, filter_size=filter_size,
                                      param_attr=param_attr, bias_attr=bias_attr, act=act)
    return sequence_lod.sequence_pool(input=conv, pool_type=pool_type)


def simple_img_conv_pool(input, num_filters, filter_size, pool_size, pool_stride, pool_padding=0,
                         pool_type="max", global_pooling=False, conv_stride=1, conv_padding=0,
                         conv_dilation=1, conv_groups=1, param_attr=None, bias_attr=None, act=None,
                         use_cudnn=True):
    """conv2d (with its bias and act) then pool2d."""
    from psjob.fluid import layers
    conv = layers.conv2d(input=input, num_filters=num_filters, filter_size=filter_size, stride=conv_stride,
                         padding=conv_padding, dilation=conv_dilation, groups=conv_groups,
                         param_attr=param_attr, bias_attr=bias_attr, act=act, use_cudnn=use_cudnn)
    return layers.pool2d(input=conv, pool_size=pool_size, pool_type=pool_type, pool_stride=pool_stride,
                         pool_padding=pool_padding, global_pooling=global_pooling, use_cudnn=use_cudnn)


def img_conv_group(input, conv_num_filter, pool_size, conv_padding=1, conv_filter_size=3, conv_act=None,
                   param_attr=None, conv_with_batchnorm=False, conv_batchnorm_drop_rate=0.0,
                   pool_stride=1, pool_type="max", use_cudnn=True):
    """One conv2d per entry of conv_num_filter (each optionally followed by batch_norm, which
    then takes the activation, and dropout), then pool2d. The per-conv arguments take one value
    for all convs or a list with one per conv."""
    from psjob.fluid import layers
    if not isinstance(conv_num_filter, (list, tuple)) or not conv_num_filter:
        raise TypeError(f"img_conv_group: conv_num_filter must be a non-empty list of filter counts, "
                        f"got {conv_num_filter!r}")
    n = len(conv_num_filter)

    def per_conv(name, value):
        if isinstance(value, (list, tuple)):
            if len(value) != n:
                raise ValueError(f"img_conv_group: {name} has {len(value)} entries for {n} convs")
            return list(value)
        return [value] * n

    paddings = per_conv("conv_padding", conv_padding)
    sizes = per_conv("conv_filter_size", conv_filter_size)
    attrs = per_conv("param_attr", param_attr)
    with_bn = per_conv("conv_with_batchnorm", conv_with_batchnorm)
    drops = per_conv("conv_batchnorm_drop_rate", conv_batchnorm_drop_rate)
    out = input
    for i in range(n):
        out = layers.conv2d(input=out, num_filters=conv_num_filter[i], filter_size=sizes[i], padding=paddings[i],
                            param_attr=attrs[i], act=None if with_bn[i] else conv_act, use_cudnn=use_cudnn)
        if with_bn[i]:
            out = layers.batch_norm(input=out, act=conv_act)
            if abs(drops[i]) > 1e-5:
                out = layers.dropout(x=out, dropout_prob=drops[i])
    return layers.pool2d(input=out, pool_size=pool_size, pool_type=pool_type, pool_stride=pool_stride,
                         use_cudnn=use_cudnn)


def glu(input, dim=-1):
    """Gated linear unit: input split in two halves along dim, a * sigmoid(b)."""
    from psjob.fluid import layers
    a, b = layers.split(input, num_or_sections=2, dim=dim)
    return layers.elementwise_mul(a, layers.sigmoid(b))
