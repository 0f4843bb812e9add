"""Activation layers with a parameter of their own (Paddle's nn/layer/activation.py)."""
from __future__ import annotations

from psjob.nn import functional as F
from psjob.nn.layer import Layer

__all__ = ["LeakyReLU"]


class LeakyReLU(Layer):
    """x where x > 0, else negative_slope * x."""

    def __init__(self, negative_slope=0.01, name=None):
        super().__init__()
        self._slope = float(negative_slope)

    def forward(self, x):
        return F.leaky_relu(x, self._slope)

    def extra_repr(self):
        return f"negative_slope={self._slope}"
