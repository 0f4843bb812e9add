"""Input layers."""
from __future__ import annotations

from psjob.fluid.framework import default_main_program
from psjob.fluid.reader import make_program_reader as _make_program_reader
from psjob.fluid.reader import read_outputs as _read_outputs


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


# -- py_reader: batches fed by a Python thread, read by an op (psjob.fluid.reader) -----------

def create_py_reader_by_data(capacity, feed_list, name=None, use_double_buffer=True):
    """A py_reader whose slots are the variables of `feed_list`; `read_file(reader)` reads it."""
    return _make_program_reader(capacity, feed_list=feed_list, name=name, who="create_py_reader_by_data")


def py_reader(capacity, shapes, dtypes, lod_levels=None, name=None, use_double_buffer=True):
    """A py_reader whose slots are declared by shapes (with -1 for the batch), dtypes, lod_levels."""
    return _make_program_reader(capacity, shapes=shapes, dtypes=dtypes, lod_levels=lod_levels, name=name)


def double_buffer(reader, place=None, name=None):
    """The reader itself: psjob's reader thread already converts batches ahead of the reads."""
    return reader


def read_file(reader):
    """The variables a py_reader fills on each run (one, or a list in slot order)."""
    outs = _read_outputs(reader)
    return outs[0] if len(outs) == 1 else outs
