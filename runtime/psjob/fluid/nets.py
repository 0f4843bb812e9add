"""fluid.nets: Fluid 1.x's composite layers (Paddle 1.8 API docs, fluid.nets)."""
from __future__ import annotations

from psjob.fluid.layers import sequence_lod

__all__ = ["sequence_conv_pool"]


def sequence_conv_pool(input, num_filters, filter_size, param_attr=None, act="sigmoid", pool_type="max",
                       bias_attr=None):
    """sequence_conv (with its bias and act) then sequence_pool of pool_type: one row per
    sequence."""
    conv = sequence_lod.sequence_conv(input=input, num_filters=num_filters, filter_size=filter_size,
                                      param_attr=param_attr, bias_attr=bias_attr, act=act)
    return sequence_lod.sequence_pool(input=conv, pool_type=pool_type)
