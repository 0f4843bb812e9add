"""Arguments Fluid 1.8's layers take as Variables, read when the op runs (Paddle's ShapeTensor,
ShapeTensorList, StartsTensorList, expand_times_tensor...): the inputs and the attribute that
stands beside them. Below the layer modules (fill_constant, reshape, expand, slice use it)."""
from __future__ import annotations

import numpy as np

from psjob.fluid.framework import Variable
from psjob.fluid.layer_helper import LayerHelper


def _int_constant(value, helper=None):
    """A one-element int32 constant, as fluid.layers.fill_constant([1], "int32", value) builds
    it; named by `helper` when given (out=helper.create_variable_for_type_inference(...))."""
    own = LayerHelper("fill_constant")
    out = (helper or own).create_variable_for_type_inference("int32", stop_gradient=True)
    own.append_op(type="fill_constant", inputs={}, outputs={"Out": [out]},
                  attrs={"shape": [1], "dtype": "int32", "value": float(value)})
    return out


def _runtime_ints(values, what, helper=None):
    """Paddle's list of runtime ints (ShapeTensorList, StartsTensorList, expand_times_tensor...):
    each entry a one-element int32/int64 tensor, an int made a constant (named by the layer's
    `helper` when given, as Paddle 1.8's reshape, expand and slice name them). Returns the
    tensors and the attribute Paddle keeps beside them: the ints as given, -1 per Variable."""
    tensors, attr = [], []
    for i, v in enumerate(values):
        if isinstance(v, Variable):
            if v.dtype not in ("int32", "int64") or int(np.prod(v.shape)) not in (1, -1):
                raise TypeError(f"{what}[{i}] {v.name}{list(v.shape)} must be a one-element int32/int64 "
                                f"tensor, got {v.dtype}")
            v.stop_gradient = True
            tensors.append(v)
            attr.append(-1)
        else:
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"{what}[{i}] must be an int or a one-element int tensor, got {v!r}")
            tensors.append(_int_constant(int(v), helper))
            attr.append(int(v))
    return tensors, attr


def _int_vector_len(v, what):
    """The number of ints an int32/int64 tensor holding a runtime list (a ShapeTensor) holds:
    its element count, which must be known when the program is built ([2] or [1, 2] alike)."""
    numel = 1
    for d in v.shape:
        numel *= int(d)
    if v.dtype not in ("int32", "int64") or not v.shape or numel < 1:
        raise TypeError(f"{what} {v.name}{list(v.shape)} must be an int32/int64 tensor of known size, got {v.dtype}")
    v.stop_gradient = True
    return numel


def _shape_inputs(shape, layer):
    """Paddle's shape argument of fill_constant and the random ops: a list of ints, a list
    holding one-element int tensors (ShapeTensorList) or a 1-D int tensor (ShapeTensor).
    Returns (inputs, the shape attribute with -1 where a size is read at run time)."""
    if isinstance(shape, Variable):
        return {"ShapeTensor": [shape]}, [-1] * _int_vector_len(shape, f"{layer}: shape")
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = [shape]
    if not isinstance(shape, (list, tuple)):
        raise TypeError(f"{layer}: argument 'shape' must be a list, a tuple or a Variable, got {shape!r}")
    if any(isinstance(d, Variable) for d in shape):
        tensors, attr = _runtime_ints(list(shape), f"{layer}: shape")
        return {"ShapeTensorList": tensors}, attr
    return {}, [int(d) for d in shape]


