"""Initializers append a random or constant fill op to the startup program.

Seeds: an explicit `seed` wins; otherwise, when the program has a
`random_seed`, each parameter gets a seed derived from it and the parameter's
name (a stable hash), so runs are reproducible and distinct parameters differ;
with neither, values are fresh random each run, as in Fluid.
"""
from __future__ import annotations

import math
import zlib

import numpy as np


def _derived_seed(block, var_name, seed):
    if seed:
        return int(seed)
    base = block.program.random_seed
    if not base:
        return 0
    return (int(base) * 1_000_003 + zlib.crc32(var_name.encode())) % (2**31 - 1) or 1


class Initializer:
    def __call__(self, var, block):
        raise NotImplementedError


class ConstantInitializer(Initializer):
    def __init__(self, value=0.0, force_cpu=False):
        self.value = float(value)

    def __call__(self, var, block):
        return block.append_op(type="fill_constant", outputs={"Out": [var.name]},
                               attrs={"shape": list(var.shape), "dtype": var.dtype, "value": self.value})


class UniformInitializer(Initializer):
    def __init__(self, low=-1.0, high=1.0, seed=0):
        if low > high:
            raise ValueError(f"UniformInitializer: low ({low}) must not exceed high ({high})")
        self.low, self.high, self.seed = float(low), float(high), seed

    def __call__(self, var, block):
        return block.append_op(type="uniform_random", outputs={"Out": [var.name]},
                               attrs={"shape": list(var.shape), "dtype": var.dtype, "min": self.low,
                                      "max": self.high, "seed": _derived_seed(block, var.name, self.seed)})


class NormalInitializer(Initializer):
    def __init__(self, loc=0.0, scale=1.0, seed=0):
        self.loc, self.scale, self.seed = float(loc), float(scale), seed

    def __call__(self, var, block):
        return block.append_op(type="gaussian_random", outputs={"Out": [var.name]},
                               attrs={"shape": list(var.shape), "dtype": var.dtype, "mean": self.loc,
                                      "std": self.scale, "seed": _derived_seed(block, var.name, self.seed)})


class TruncatedNormalInitializer(NormalInitializer):
    def __call__(self, var, block):
        return block.append_op(type="truncated_gaussian_random", outputs={"Out": [var.name]},
                               attrs={"shape": list(var.shape), "dtype": var.dtype, "mean": self.loc,
                                      "std": self.scale, "seed": _derived_seed(block, var.name, self.seed)})


def _fans(shape):
    if len(shape) < 2:
        return shape[0] if shape else 1, shape[0] if shape else 1
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[0] * receptive, shape[1] * receptive


class XavierInitializer(Initializer):
    def __init__(self, uniform=True, fan_in=None, fan_out=None, seed=0):
        self.uniform, self.fan_in, self.fan_out, self.seed = uniform, fan_in, fan_out, seed

    def __call__(self, var, block):
        f_in, f_out = _fans(var.shape)
        f_in = self.fan_in if self.fan_in is not None else f_in
        f_out = self.fan_out if self.fan_out is not None else f_out
        if self.uniform:
            limit = math.sqrt(6.0 / (f_in + f_out))
            return UniformInitializer(-limit, limit, self.seed)(var, block)
        return NormalInitializer(0.0, math.sqrt(2.0 / (f_in + f_out)), self.seed)(var, block)


class MSRAInitializer(Initializer):
    def __init__(self, uniform=True, fan_in=None, seed=0):
        self.uniform, self.fan_in, self.seed = uniform, fan_in, seed

    def __call__(self, var, block):
        f_in = self.fan_in if self.fan_in is not None else _fans(var.shape)[0]
        if self.uniform:
            limit = math.sqrt(6.0 / f_in)
            return UniformInitializer(-limit, limit, self.seed)(var, block)
        return NormalInitializer(0.0, math.sqrt(2.0 / f_in), self.seed)(var, block)


class NumpyArrayInitializer(Initializer):
    """Initialize with a copy of a numpy array (its shape must be the variable's).

    The values travel in the startup program's `assign_value` op (Paddle's), copied
    when the initializer is made: changing the array afterwards changes nothing."""

    def __init__(self, value):
        if not isinstance(value, np.ndarray):
            raise TypeError(f"NumpyArrayInitializer needs a numpy array, got {type(value).__name__}")
        if value.dtype.kind not in "biuf":
            raise TypeError(f"NumpyArrayInitializer: unsupported dtype {value.dtype}")
        self.value = value.copy()

    def __call__(self, var, block):
        if tuple(self.value.shape) != tuple(var.shape):
            raise ValueError(f"NumpyArrayInitializer: the array has shape {list(self.value.shape)} but "
                             f"{var.name!r} is declared {list(var.shape)}")
        return block.append_op(type="assign_value", outputs={"Out": [var.name]},
                               attrs={"shape": list(var.shape), "dtype": var.dtype,
                                      "values": self.value.astype(var.dtype).reshape(-1).tolist()})


class BilinearInitializer(Initializer):
    """The bilinear-interpolation kernel for a conv2d_transpose that upsamples (Fluid 1.8's
    Bilinear): a 4-D [out, in, K, K] weight whose every K x K slice is
    (1 - |x/f - c|) * (1 - |y/f - c|) with f = ceil(K/2) and c = (2f - 1 - f % 2) / (2f),
    with Paddle 1.8.5's y (see below), so the values are the ones it gives."""

    def __call__(self, var, block):
        shape = [int(d) for d in var.shape]
        if len(shape) != 4:
            raise ValueError(f"Bilinear initializer: {var.name!r} must be 4-D [out, in, K, K], "
                             f"it is declared {shape}")
        if shape[2] != shape[3]:
            raise ValueError(f"Bilinear initializer: {var.name!r} needs a square kernel, "
                             f"its last two dimensions are {shape[2]} and {shape[3]}")
        if var.dtype not in ("float32", "float64"):
            raise TypeError(f"Bilinear initializer: {var.name!r} must be float32 or float64, got {var.dtype}")
        size = shape[3]
        f = float(np.ceil(size / 2.0))
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        xs = np.arange(size, dtype=np.float64)
        # Paddle 1.8.5 (Python 3) takes the row of flat index i as (i / K) % H, a true division,
        # so a row's factor slides with x: row r, column x uses y = r + x / K. Kept, for its values.
        ys = np.arange(shape[2], dtype=np.float64)[:, None] + xs[None, :] / size
        kernel = (1 - np.abs(xs / f - c))[None, :] * (1 - np.abs(ys / f - c))  # [row, column]
        weight = np.broadcast_to(kernel, shape).astype(np.float32)
        return block.append_op(type="assign_value", outputs={"Out": [var.name]},
                               attrs={"shape": shape, "dtype": var.dtype,
                                      "values": weight.reshape(-1).tolist()})


# set_global_initializer's choice: what parameters created after it start from when
# their ParamAttr names no initializer (it outranks a layer's own default).
_global = {"weight": None, "bias": None}


def set_global_initializer(weight_init, bias_init=None):
    """Paddle's set_global_initializer(weight_init, bias_init=None): the initializer of
    every weight (bias) created afterwards whose ParamAttr sets none, in place of the
    layer's default; None cancels it (Paddle 2.x docs, paddle.nn.initializer)."""
    for what, init in (("weight_init", weight_init), ("bias_init", bias_init)):
        if init is not None and not isinstance(init, Initializer):
            raise TypeError(f"set_global_initializer: {what} must be an Initializer or None, "
                            f"got {type(init).__name__}")
    _global["weight"], _global["bias"] = weight_init, bias_init


def global_initializer(is_bias: bool):
    """The initializer set_global_initializer chose for weights (biases), or None."""
    return _global["bias" if is_bias else "weight"]


Constant = ConstantInitializer
Uniform = UniformInitializer
Normal = NormalInitializer
TruncatedNormal = TruncatedNormalInitializer
Xavier = XavierInitializer
MSRA = MSRAInitializer
Bilinear = BilinearInitializer
