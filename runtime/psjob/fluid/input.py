"""`fluid.embedding` (Fluid 1.7+): rows of a table for ids of any shape.

Paddle's lookup_table_v2: the output is ids.shape + [dim], so ids [N, 1] give
[N, 1, dim] (`fluid.layers.embedding`, the lookup_table op, gives [N, dim]:
it drops the ids' last dimension of 1). The ids' LoD goes through.
is_sparse (a SelectedRows gradient of the looked-up rows), is_distributed (a
table the transpiler spreads over the pservers), padding_idx and param_attr
mean what they mean for fluid.layers.embedding, whose lookup_table op this
builds on, so the transpiler and Fleet treat both alike.
"""
from __future__ import annotations

from psjob.fluid.layers import manip as _manip
from psjob.fluid.layers import nn as _nn
from psjob.fluid.layers._checks import check_dtype, check_variable

__all__ = ["embedding", "one_hot"]


def embedding(input, size, is_sparse=False, is_distributed=False, padding_idx=None, param_attr=None,
              dtype="float32"):
    check_variable(input, "input", "fluid.embedding")
    check_dtype(input, "input", ("int64",), "fluid.embedding", " (ids are int64)")
    if not isinstance(size, (list, tuple)) or len(size) != 2:
        raise TypeError(f"fluid.embedding: argument 'size' must be [vocab_size, embedding_dim], got {size!r}")
    shape = list(input.shape)
    if not shape:
        raise ValueError(f"fluid.embedding: argument 'input' {input.name} needs a shape ([N] or [N, ...])")
    ends_in_one = len(shape) >= 2 and shape[-1] == 1
    if not ends_in_one and any(d < 0 for d in shape[1:]):
        # Unknown dimensions after the first (ids [None, None], padded sequences as in
        # PaddleRec/ctr/din): a trailing 1 makes them lookup_table ids, whose output is then
        # ids.shape + [dim] whatever the batch and sequence lengths fed.
        ids = _manip.unsqueeze(input, [len(shape)])
        return _nn.embedding(ids, size, is_sparse=is_sparse, is_distributed=is_distributed,
                             padding_idx=padding_idx, param_attr=param_attr, dtype=dtype)
    ids = input if ends_in_one else _manip.reshape(input, [-1, 1])
    rows = _nn.embedding(ids, size, is_sparse=is_sparse, is_distributed=is_distributed,
                         padding_idx=padding_idx, param_attr=param_attr, dtype=dtype)
    if ends_in_one:
        return _manip.unsqueeze(rows, [len(shape) - 1])
    return _manip.reshape(rows, [-1] + shape[1:] + [int(size[1])])


def one_hot(input, depth, allow_out_of_range=False):  # noqa: A002
    """Fluid's `fluid.one_hot` (fluid.input.one_hot, the one_hot_v2 op): float32
    input.shape + [depth], unlike `fluid.layers.one_hot`, which replaces a last dimension of
    1; an id outside [0, depth) is an error unless allow_out_of_range (its row is all 0)."""
    check_variable(input, "input", "one_hot")
    check_dtype(input, "input", ("int32", "int64"), "fluid.one_hot")
    from psjob.fluid.layer_helper import LayerHelper
    helper = LayerHelper("one_hot_v2")
    out = helper.create_variable_for_type_inference("float32", stop_gradient=True)
    helper.append_op(type="one_hot_v2", inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"depth": int(depth), "allow_out_of_range": bool(allow_out_of_range)})
    return out
