"""`fluid.data` (Fluid 1.6+): declare a fed variable with its whole shape.

Unlike `fluid.layers.data`, no batch dimension is prepended: `shape` is the
variable's shape, with None (or -1) for a dimension that each batch sets, e.g.
`fluid.data("x", [None, 13])` is `fluid.layers.data("x", [13])`. Fed values must
match it (rank, dtype, every fixed dimension), as Paddle checks feeds of `fluid.data`.
"""
from __future__ import annotations

import numbers

from psjob.fluid.framework import default_main_program

__all__ = ["data"]


def data(name, shape, dtype="float32", lod_level=0):
    if not isinstance(name, str):
        raise TypeError(f"fluid.data: argument 'name' must be a str, got {type(name).__name__}")
    if not isinstance(shape, (list, tuple)):
        raise TypeError(f"fluid.data: argument 'shape' must be a list or tuple, got {type(shape).__name__}")
    dims = []
    for d in shape:
        if d is None:
            d = -1
        if isinstance(d, bool) or not isinstance(d, numbers.Integral) or (d < 0 and d != -1):
            raise ValueError(f"fluid.data {name!r}: shape {list(shape)} must hold sizes >= 0, "
                             "or None / -1 for a size each batch sets")
        dims.append(int(d))
    if isinstance(lod_level, bool) or not isinstance(lod_level, numbers.Integral) or lod_level < 0:
        raise ValueError(f"fluid.data {name!r}: lod_level must be an int >= 0, got {lod_level!r}")
    block = default_main_program().global_block()
    if block.has_var(name):
        var = block.var(name)
        if list(var.shape) != dims:
            raise ValueError(f"fluid.data {name!r} was declared before with shape {list(var.shape)}, "
                             f"now {dims}")
        return var
    return block.create_var(name=name, shape=dims, dtype=dtype, lod_level=int(lod_level),
                            stop_gradient=True, is_data=True)
