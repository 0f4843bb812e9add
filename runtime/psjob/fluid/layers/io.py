"""Input layers."""
from __future__ import annotations

from ..framework import default_main_program


def data(name, shape, dtype="float32", lod_level=0, append_batch_size=True, stop_gradient=True, type=None):
    """Declare a fed input. With append_batch_size a leading -1 batch dim is added."""
    shape = list(shape)
    if append_batch_size and (not shape or shape[0] != -1):
        shape = [-1] + shape
    block = default_main_program().global_block()
    if block.has_var(name):
        var = block.var(name)
        if list(var.shape) != shape:
            raise ValueError(f"data {name!r} already declared with shape {list(var.shape)}, now {shape}")
        return var
    return block.create_var(name=name, shape=shape, dtype=dtype, lod_level=lod_level,
                            stop_gradient=stop_gradient, is_data=True)
