"""paddle.nn.initializer: Paddle 2.x's initializer names and arguments over Fluid's
initializers (each one is a Fluid initializer, so it goes wherever Fluid's do)."""
from __future__ import annotations

import numpy as np

from psjob.fluid import initializer as _fi
from psjob.fluid.framework import Variable

__all__ = ["Constant", "Uniform", "Normal", "TruncatedNormal", "XavierUniform", "XavierNormal",
           "KaimingNormal", "KaimingUniform", "Assign", "Initializer", "set_global_initializer"]

Initializer = _fi.Initializer
set_global_initializer = _fi.set_global_initializer


class Constant(_fi.ConstantInitializer):
    def __init__(self, value=0.0):
        super().__init__(value)


class Uniform(_fi.UniformInitializer):
    def __init__(self, low=-1.0, high=1.0, name=None):
        super().__init__(low, high)


class Normal(_fi.NormalInitializer):
    def __init__(self, mean=0.0, std=1.0, name=None):
        super().__init__(mean, std)


class TruncatedNormal(_fi.TruncatedNormalInitializer):
    def __init__(self, mean=0.0, std=1.0, name=None):
        super().__init__(mean, std)


class XavierUniform(_fi.XavierInitializer):
    def __init__(self, fan_in=None, fan_out=None, name=None):
        super().__init__(uniform=True, fan_in=fan_in, fan_out=fan_out)


class XavierNormal(_fi.XavierInitializer):
    def __init__(self, fan_in=None, fan_out=None, name=None):
        super().__init__(uniform=False, fan_in=fan_in, fan_out=fan_out)


class KaimingNormal(_fi.MSRAInitializer):
    def __init__(self, fan_in=None, negative_slope=0.0, nonlinearity="relu"):
        if negative_slope or nonlinearity != "relu":
            raise ValueError("KaimingNormal: only the relu gain (negative_slope=0) is supported")
        super().__init__(uniform=False, fan_in=fan_in)


class KaimingUniform(_fi.MSRAInitializer):
    def __init__(self, fan_in=None, negative_slope=0.0, nonlinearity="relu"):
        if negative_slope or nonlinearity != "relu":
            raise ValueError("KaimingUniform: only the relu gain (negative_slope=0) is supported")
        super().__init__(uniform=True, fan_in=fan_in)


class Assign(_fi.NumpyArrayInitializer):
    """Initialize with a copy of a numpy array, list or number (its shape must be the variable's)."""

    def __init__(self, value, name=None):
        if isinstance(value, Variable):
            raise TypeError("Assign: a Variable value is not supported in static mode; pass a numpy array")
        super().__init__(np.asarray(value, dtype=value.dtype if isinstance(value, np.ndarray) else "float32"))
