"""fluid.nets: Fluid 1.x's composite layers (Paddle 1.8 API docs, fluid.nets)."""
from __future__ import annotations

from psjob.fluid.layers import sequence_lod

__all__ = ["sequence_conv_pool", "simple_img_conv_pool", "img_conv_group", "glu", "scaled_dot_product_attention"]


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


def scaled_dot_product_attention(queries, keys, values, num_heads=1, dropout_rate=0.0):
    """softmax(Q K^T / sqrt(d_k)) V over 3-D [batch, length, width] inputs. With num_heads > 1,
    Q, K and V first go through fc projections (with bias) of their own width (parameters made
    here), are split into num_heads heads (d_k is the key width per head) and the heads'
    contexts are joined again: [batch, query length, value width]."""
    from psjob.fluid import layers
    for name, v in (("queries", queries), ("keys", keys), ("values", values)):
        if len(v.shape) != 3:
            raise ValueError(f"scaled_dot_product_attention: {name} must be 3-D [batch, length, width], "
                             f"{v.name} is {list(v.shape)}")
    if queries.shape[-1] != keys.shape[-1]:
        raise ValueError(f"scaled_dot_product_attention: queries and keys must have the same width, got "
                         f"{queries.shape[-1]} and {keys.shape[-1]}")
    if keys.shape[-2] != values.shape[-2]:
        raise ValueError(f"scaled_dot_product_attention: keys and values must have the same length, got "
                         f"{keys.shape[-2]} and {values.shape[-2]}")
    if isinstance(num_heads, bool) or not isinstance(num_heads, int) or num_heads < 1:
        raise ValueError(f"scaled_dot_product_attention: num_heads must be a positive int, got {num_heads!r}")
    if keys.shape[-1] % num_heads or values.shape[-1] % num_heads:
        raise ValueError(f"scaled_dot_product_attention: the key width {keys.shape[-1]} and value width "
                         f"{values.shape[-1]} must be multiples of num_heads ({num_heads})")

    def project(x):
        if num_heads == 1:
            return x
        return layers.fc(input=x, size=x.shape[-1], num_flatten_dims=2)

    def split_heads(x):
        if num_heads == 1:
            return x
        x = layers.reshape(x=x, shape=[0, 0, num_heads, x.shape[-1] // num_heads])
        return layers.transpose(x=x, perm=[0, 2, 1, 3])

    q, k, v = (split_heads(project(x)) for x in (queries, keys, values))
    scaled_q = layers.scale(x=q, scale=float(keys.shape[-1] // num_heads) ** -0.5)
    product = layers.matmul(x=scaled_q, y=k, transpose_y=True)
    weights = layers.softmax(product)  # over the last axis, the keys
    if dropout_rate:
        weights = layers.dropout(weights, dropout_prob=dropout_rate, is_test=False)
    ctx = layers.matmul(weights, v)
    if num_heads == 1:
        return ctx
    ctx = layers.transpose(ctx, perm=[0, 2, 1, 3])
    return layers.reshape(x=ctx, shape=[0, 0, ctx.shape[2] * ctx.shape[3]])
