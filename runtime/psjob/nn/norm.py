"""paddle.nn.LayerNorm (Paddle's nn/layer/norm.py): layer normalization over the trailing
`normalized_shape` dimensions, with a scale (initialized to 1) and a shift (to 0) of
prod(normalized_shape) elements each; weight_attr / bias_attr False leaves one out."""
from __future__ import annotations

import numpy as np

from psjob.fluid.initializer import ConstantInitializer
from psjob.fluid.layers._checks import check_int_list
from psjob.nn import functional as F
from psjob.nn.layer import Layer

__all__ = ["LayerNorm"]


class LayerNorm(Layer):
    def __init__(self, normalized_shape, epsilon=1e-05, weight_attr=None, bias_attr=None, name=None):
        super().__init__()
        shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
        self._shape = check_int_list(shape, "normalized_shape", "LayerNorm")
        if not self._shape or any(d < 1 for d in self._shape):
            raise ValueError(f"LayerNorm: normalized_shape {normalized_shape!r} must be positive sizes")
        self._epsilon = float(epsilon)
        size = [int(np.prod(self._shape))]
        self.weight = None if weight_attr is False else self.create_parameter(
            size, weight_attr, default_initializer=ConstantInitializer(1.0))
        self.bias = None if bias_attr is False else self.create_parameter(size, bias_attr, is_bias=True)

    def forward(self, x):
        return F.layer_norm(x, self._shape, self.weight, self.bias, self._epsilon)

    def extra_repr(self):
        return f"normalized_shape={self._shape}, epsilon={self._epsilon}"
