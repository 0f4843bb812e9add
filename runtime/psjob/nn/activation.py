"""Activation layers with a parameter of their own (Paddle's nn/layer/activation.py)."""
from __future__ import annotations

from psjob.fluid.initializer import ConstantInitializer
from psjob.fluid.layers._checks import check_int
from psjob.nn import functional as F
from psjob.nn.layer import Layer

__all__ = ["LeakyReLU", "PReLU"]


class LeakyReLU(Layer):
    """x where x > 0, else negative_slope * x."""

    def __init__(self, negative_slope=0.01, name=None):
        super().__init__()
        self._slope = float(negative_slope)

    def forward(self, x):
        return F.leaky_relu(x, self._slope)

    def extra_repr(self):
        return f"negative_slope={self._slope}"


class PReLU(Layer):
    """x where x > 0, else weight * x; weight is [num_parameters] (1: shared by every element,
    else one per channel), starting at `init` (Paddle's paddle.nn.PReLU)."""

    def __init__(self, num_parameters=1, init=0.25, weight_attr=None, data_format="NCHW", name=None):
        super().__init__()
        self._num = check_int(num_parameters, "num_parameters", "PReLU", minimum=1)
        self._data_format = data_format
        self._weight = self.create_parameter([self._num], weight_attr,
                                             default_initializer=ConstantInitializer(float(init)))

    def forward(self, x):
        return F.prelu(x, self._weight, self._data_format)

    def extra_repr(self):
        return f"num_parameters={self._num}, data_format={self._data_format}"
