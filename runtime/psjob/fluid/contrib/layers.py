"""fluid.contrib.layers (Fluid 1.8's names): ctr_metric_bundle, fused_embedding_seq_pool,
partial_concat, partial_sum, shuffle_batch, rank_attention, and basic_gru / basic_lstm (contrib/rnn_impl.py). The others of Fluid 1.8's list (the tdm and
search-pyramid ops, ...) are not in psjob."""
from __future__ import annotations

import copy

import numpy as np

from psjob.fluid import unique_name
from psjob.fluid.contrib.rnn_impl import basic_gru, basic_lstm
from psjob.fluid.framework import Variable
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers import manip, metric_op, nn, sequence_lod, tensor
from psjob.fluid.layers._checks import check_int, check_variable
from psjob.fluid.param_attr import ParamAttr

__all__ = ["tdm_child", "ctr_metric_bundle", "fused_embedding_seq_pool", "partial_concat", "partial_sum", "shuffle_batch",
           "basic_gru", "basic_lstm", "rank_attention"]


def ctr_metric_bundle(input, label):
    """Fluid 1.8's: the six running sums (squared and absolute error, predicted CTR, q,
    positives, instances), persistable [1], as paddle.static.ctr_metric_bundle without the
    instance-tag weight."""
    return metric_op.ctr_metric_bundle(input, label, ins_tag_weight=False)


def fused_embedding_seq_pool(input, size, is_sparse=False, padding_idx=None, combiner="sum", param_attr=None,
                             dtype="float32"):
    """The sum of each sequence's embedding rows: [num_seqs, dim] for LoD ids [N, 1] (Fluid's
    fused op; the same values as embedding then sequence_pool 'sum'). The table is named after
    the layer, `fused_embedding_seq_pool_N.w_0`, as Paddle's."""
    layer = "fused_embedding_seq_pool"
    check_variable(input, "input", layer)
    if combiner != "sum":
        raise ValueError(f"{layer}: combiner must be 'sum' (Paddle's only one), got {combiner!r}")
    attr = ParamAttr._to_attr(param_attr)
    if attr.name is None:  # Paddle names the table after this layer, not after an embedding
        attr = copy.copy(attr)
        attr.name = unique_name.generate(f"{LayerHelper(layer).name}.w")
    rows = nn.embedding(input, size, is_sparse=is_sparse, padding_idx=padding_idx, param_attr=attr,
                        dtype=dtype)
    return sequence_lod.sequence_pool(rows, "sum")


def _partial(kind, input, start_index, length):
    xs = list(input)
    for i, x in enumerate(xs):
        check_variable(x, f"input[{i}]", kind)
        if len(x.shape) != 2:
            raise ValueError(f"{kind}: input[{i}] {x.name}{list(x.shape)} must be 2-D")
    start = check_int(start_index, "start_index", kind)
    length = check_int(length, "length", kind, minimum=-1)
    width = xs[0].shape[1]
    begin = start + width if start < 0 else start
    end = width if length < 0 else begin + length
    if not 0 <= begin < end <= width:
        raise ValueError(f"{kind}: start_index {start_index} and length {length} fall outside the {width} columns")
    return [nn.slice(x, axes=[1], starts=[begin], ends=[end]) for x in xs]


def partial_concat(input, start_index=0, length=-1):
    """Columns start_index..start_index+length of every input, concatenated (Fluid 1.8's op;
    length -1: to the end)."""
    return manip.concat(_partial("partial_concat", input, start_index, length), axis=1)


def partial_sum(input, start_index=0, length=-1):
    """Columns start_index..start_index+length of every input, summed (Fluid 1.8's op)."""
    return tensor.sums(_partial("partial_sum", input, start_index, length))


def shuffle_batch(x, seed=None):
    """x's rows (all dimensions but the last flattened) in a random order, the same shape and
    LoD (Fluid 1.8's contrib shuffle_batch; the shuffle_batch op in psjob.fluid.ops.random_ops).
    seed: an int starts the persistable int64 seed variable the op advances every run (None: the
    program's random_seed, or a random int as Paddle draws one); a Variable is used as that
    seed variable itself."""
    layer = "shuffle_batch"
    check_variable(x, "x", layer)
    helper = LayerHelper(layer)
    out = helper.create_variable_for_type_inference(x.dtype)
    idx = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    if seed is None and helper.main_program.random_seed != 0:
        seed = helper.main_program.random_seed
    if seed is None:
        seed = int(np.random.randint(-65536, 65535))
    attrs = {}
    if not isinstance(seed, Variable):
        attrs["startup_seed"] = check_int(seed, "seed", layer)
        # Paddle leaves the seed variable empty and the op falls back to startup_seed on its
        # first run; here the startup program writes startup_seed into it, the same first value.
        seed = tensor.create_global_var([1], attrs["startup_seed"], "int64", persistable=True,
                                        name=unique_name.generate("shuffle_batch_seed"))
    elif seed.dtype != "int64":
        raise TypeError(f"{layer}: a seed Variable must be int64, got {seed.name} of {seed.dtype}")
    helper.append_op(type=layer, inputs={"X": [x], "Seed": [seed]},
                     outputs={"Out": [out], "ShuffleIdx": [idx], "SeedOut": [seed]}, attrs=attrs)
    return out


def rank_attention(input, rank_offset, rank_param_shape, rank_param_attr, max_rank=3, max_size=0):
    """Fluid 1.8's rank_attention (psjob.fluid.ops.rank_attention_ops): input [N, D], rank_offset
    [N, 2 * max_rank + 1] int32, a parameter rank_param_shape = [D * max_rank^2, O] made here
    (`rank_attention_N.w_0` unless named); returns [N, O]. max_size (Paddle 2.x's GPU buffer
    size) has no effect."""
    layer = "rank_attention"
    check_variable(input, "input", layer)
    check_variable(rank_offset, "rank_offset", layer)
    max_rank = check_int(max_rank, "max_rank", layer, minimum=1)
    shape = [check_int(d, "rank_param_shape", layer, minimum=1) for d in rank_param_shape]
    if len(shape) != 2 or (input.shape[1] >= 0 and input.shape[1] * max_rank * max_rank != shape[0]):
        raise ValueError(f"{layer}: rank_param_shape {rank_param_shape} must be [D * max_rank^2, O] for input "
                         f"{input.name}{list(input.shape)} and max_rank {max_rank}")
    if rank_offset.dtype != "int32":
        raise TypeError(f"{layer}: rank_offset must be int32 (Paddle's), got {rank_offset.name} of {rank_offset.dtype}")
    helper = LayerHelper(layer)
    param = helper.create_parameter(rank_param_attr, shape, input.dtype)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type=layer, inputs={"X": [input], "RankOffset": [rank_offset], "RankParam": [param]},
                     outputs={"Out": [out]}, attrs={"MaxRank": max_rank, "MaxSize": int(max_size)})
    return out


def tdm_child(x, node_nums, child_nums, param_attr=None, dtype="int32"):
    """Fluid 1.8's tdm_child (psjob.fluid.ops.tdm_ops): the children of the node ids in x and
    whether each is an item, from a tree-info parameter [node_nums, 3 + child_nums] made here
    (`tdm_child_N.w_0` unless named; Constant(0) unless param_attr says, never trained);
    returns (child, leaf_mask), each shaped x.shape + [child_nums], of dtype."""
    layer = "tdm_child"
    check_variable(x, "x", layer)
    if x.dtype not in ("int32", "int64"):
        raise TypeError(f"{layer}: x must hold int32 or int64 node ids, got {x.name} of {x.dtype}")
    node_nums = check_int(node_nums, "node_nums", layer, minimum=1)
    child_nums = check_int(child_nums, "child_nums", layer, minimum=1)
    if dtype not in ("int32", "int64"):
        raise TypeError(f"{layer}: dtype must be 'int32' or 'int64', got {dtype!r}")
    from psjob.fluid.initializer import ConstantInitializer
    helper = LayerHelper(layer)
    tree = helper.create_parameter(param_attr, [node_nums, 3 + child_nums], dtype,
                                   default_initializer=ConstantInitializer(0.0))
    tree.stop_gradient = True
    child = helper.create_variable_for_type_inference(dtype)
    leaf_mask = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type=layer, inputs={"X": [x], "TreeInfo": [tree]},
                     outputs={"Child": [child], "LeafMask": [leaf_mask]},
                     attrs={"child_nums": child_nums, "dtype": dtype})
    child.stop_gradient = leaf_mask.stop_gradient = True
    return child, leaf_mask
