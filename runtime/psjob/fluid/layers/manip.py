"""Shape and reduction layers: concat, split, reshape, transpose, squeeze,
unsqueeze, reduce_sum, reduce_mean, reduce_max, reduce_min (Fluid 1.x signatures)."""
from __future__ import annotations

from psjob.fluid.framework import Variable
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import check_int, check_int_list, check_variable
from psjob.fluid.layers._runtime_args import _int_vector_len, _runtime_ints

__all__ = ["concat", "split", "reshape", "transpose", "squeeze", "unsqueeze", "expand",
           "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"]


def _out(helper, x, stop_gradient=False):
    return helper.create_variable_for_type_inference(x.dtype, stop_gradient=stop_gradient)


def concat(input, axis=0, name=None):
    """Join a list of tensors along `axis`."""
    if not isinstance(input, (list, tuple)) or not input:
        raise TypeError(f"concat: argument 'input' must be a non-empty list of Variables, got {input!r}")
    for i, x in enumerate(input):
        check_variable(x, f"input[{i}]", "concat")
        if x.dtype != input[0].dtype:
            raise TypeError(f"concat: input[{i}] ({x.name}) has dtype {x.dtype}, "
                            f"input[0] ({input[0].name}) has {input[0].dtype}")
    axis = check_int(axis, "axis", "concat")
    helper = LayerHelper("concat", name)
    out = _out(helper, input[0])
    helper.append_op(type="concat", inputs={"X": list(input)}, outputs={"Out": [out]}, attrs={"axis": axis})
    return out


def split(input, num_or_sections, dim=-1, name=None):
    """Cut `input` along `dim` into num equal pieces or pieces of the given sizes."""
    check_variable(input, "input", "split")
    dim = check_int(dim, "dim", "split")
    if isinstance(num_or_sections, (list, tuple)):
        sections = check_int_list(list(num_or_sections), "num_or_sections", "split")
        if not sections:
            raise ValueError("split: argument 'num_or_sections' must not be empty")
        num, count = 0, len(sections)
    else:
        num = check_int(num_or_sections, "num_or_sections", "split", minimum=1)
        sections, count = [], num
    helper = LayerHelper("split", name)
    outs = [_out(helper, input) for _ in range(count)]
    helper.append_op(type="split", inputs={"X": [input]}, outputs={"Out": outs},
                     attrs={"axis": dim, "num": num, "sections": sections})
    return outs


def reshape(x, shape, actual_shape=None, act=None, inplace=False, name=None):
    """New shape for the same data: 0 copies the input dimension, one -1 is inferred. As in
    Fluid 1.8, `shape` may be a 1-D int tensor (the Shape input) or a list holding one-element
    int tensors (ShapeTensor, e.g. [fluid.layers.shape(y)[0], 10]), read when the op runs; an
    `actual_shape` tensor, when given, is the Shape input (and wins over `shape`)."""
    check_variable(x, "x", "reshape")
    helper = LayerHelper("reshape2", name)
    inputs, attr = {}, []
    if isinstance(shape, Variable):
        inputs["Shape"] = [shape]
        attr = [-1] * _int_vector_len(shape, "reshape: shape")
    elif isinstance(shape, (list, tuple)) and any(isinstance(d, Variable) for d in shape):
        tensors, attr = _runtime_ints(list(shape), "reshape: shape", helper)
        inputs["ShapeTensor"] = tensors
    elif isinstance(shape, (list, tuple)):
        attr = check_int_list(list(shape), "shape", "reshape")
    else:
        raise TypeError(f"reshape: argument 'shape' must be a list, a tuple or a Variable, got {shape!r}")
    if actual_shape is not None:
        check_variable(actual_shape, "actual_shape", "reshape")
        inputs["Shape"] = [actual_shape]
    out = _out(helper, x)
    xshape = _out(helper, x, stop_gradient=True)
    helper.append_op(type="reshape2", inputs=dict(inputs, X=[x]), outputs={"Out": [out], "XShape": [xshape]},
                     attrs={"shape": attr})
    return helper.append_activation(out, act)


def expand(x, expand_times, name=None):
    """Fluid 1.x expand: X tiled expand_times[i] times along dimension i (one count per
    dimension; Paddle 1.8 API docs, fluid.layers.expand). The counts may be a 1-D int tensor
    (ExpandTimes) or a list holding one-element int tensors (expand_times_tensor), read when
    the op runs."""
    check_variable(x, "x", "expand")
    helper = LayerHelper("expand", name)
    inputs = {"X": [x]}
    attrs = {}
    if isinstance(expand_times, Variable):
        n = _int_vector_len(expand_times, "expand: expand_times")
        if n != len(x.shape):
            raise ValueError(f"expand: expand_times {expand_times.name} holds {n} counts for the "
                             f"{len(x.shape)} dimensions of {x.name}{list(x.shape)}")
        inputs["ExpandTimes"] = [expand_times]
    elif not isinstance(expand_times, (list, tuple)):
        raise TypeError(f"expand: argument 'expand_times' must be a list, a tuple or a Variable, "
                        f"got {type(expand_times).__name__}")
    else:
        if any(isinstance(t, Variable) for t in expand_times):
            tensors, times = _runtime_ints(list(expand_times), "expand: expand_times", helper)
            inputs["expand_times_tensor"] = tensors
        else:
            times = check_int_list(list(expand_times), "expand_times", "expand")
        if len(times) != len(x.shape) or any(t < 1 and t != -1 for t in times) or (
                "expand_times_tensor" not in inputs and any(t < 1 for t in times)):
            raise ValueError(f"expand: argument 'expand_times' {times} must hold one positive count per "
                             f"dimension of {x.name}{list(x.shape)}")
        attrs["expand_times"] = times
    out = _out(helper, x)
    helper.append_op(type="expand", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


def transpose(x, perm, name=None):
    check_variable(x, "x", "transpose")
    perm = check_int_list(perm, "perm", "transpose")
    if sorted(perm) != list(range(len(x.shape))):
        raise ValueError(f"transpose: argument 'perm' {perm} is not a permutation of the "
                         f"{len(x.shape)} dimensions of {x.name}{list(x.shape)}")
    helper = LayerHelper("transpose", name)
    out, xshape = _out(helper, x), _out(helper, x, stop_gradient=True)
    helper.append_op(type="transpose2", inputs={"X": [x]}, outputs={"Out": [out], "XShape": [xshape]},
                     attrs={"axis": perm})
    return out


def _squeeze_like(op_type, layer, input, axes, name):
    check_variable(input, "input", layer)
    axes = check_int_list(axes, "axes", layer)
    helper = LayerHelper(layer, name)
    out, xshape = _out(helper, input), _out(helper, input, stop_gradient=True)
    helper.append_op(type=op_type, inputs={"X": [input]}, outputs={"Out": [out], "XShape": [xshape]},
                     attrs={"axes": axes})
    return out


def squeeze(input, axes, name=None):
    """Drop the size-1 dimensions listed in axes (all size-1 dims if axes is empty)."""
    return _squeeze_like("squeeze2", "squeeze", input, axes, name)


def unsqueeze(input, axes, name=None):
    """Insert size-1 dimensions at the positions listed in axes."""
    return _squeeze_like("unsqueeze2", "unsqueeze", input, axes, name)


def _reduce(op_type, input, dim, keep_dim, name):
    check_variable(input, "input", op_type)
    if not isinstance(keep_dim, bool):
        raise TypeError(f"{op_type}: argument 'keep_dim' must be a bool, got {keep_dim!r}")
    dims = [0] if dim is None else check_int_list(dim, "dim", op_type)
    if dim is not None and not dims:
        raise ValueError(f"{op_type}: argument 'dim' must not be empty (use None to reduce everything)")
    helper = LayerHelper(op_type, name)
    out = _out(helper, input)
    helper.append_op(type=op_type, inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"dim": dims, "keep_dim": keep_dim, "reduce_all": dim is None})
    return out


def reduce_sum(input, dim=None, keep_dim=False, name=None):
    """Sum over dim (an int or list of ints), or over everything when dim is None."""
    return _reduce("reduce_sum", input, dim, keep_dim, name)


def reduce_mean(input, dim=None, keep_dim=False, name=None):
    """Mean over dim (an int or list of ints), or over everything when dim is None."""
    return _reduce("reduce_mean", input, dim, keep_dim, name)


def reduce_max(input, dim=None, keep_dim=False, name=None):
    """Maximum over dim (an int or list of ints), or over everything when dim is None."""
    return _reduce("reduce_max", input, dim, keep_dim, name)


def reduce_min(input, dim=None, keep_dim=False, name=None):
    """Minimum over dim (an int or list of ints), or over everything when dim is None."""
    return _reduce("reduce_min", input, dim, keep_dim, name)


def reduce_prod(input, dim=None, keep_dim=False, name=None):
    """Product over dim (an int or list of ints), or over everything when dim is None."""
    return _reduce("reduce_prod", input, dim, keep_dim, name)


# -- Fluid 1.8's search, index and shape layers (kernels: ops/search_ops.py, math_extra_ops.py) --

def _append(op_type, inputs, attrs=None, dtype=None, out_slot="Out", name=None, stop_gradient=False):
    first = next(iter(inputs.values()))[0]
    helper = LayerHelper(op_type, name)
    out = helper.create_variable_for_type_inference(dtype or first.dtype, stop_gradient=stop_gradient)
    helper.append_op(type=op_type, inputs=inputs, outputs={out_slot: [out]}, attrs=attrs or {})
    return out


def _check_index(index, arg, layer):
    check_variable(index, arg, layer)
    if index.dtype not in ("int32", "int64"):
        raise TypeError(f"{layer}: argument {arg!r} ({index.name}) must be int32 or int64, got {index.dtype}")
    return index


def _axis(axis, x, arg, layer):
    axis = check_int(axis, arg, layer)
    nd = len(x.shape)
    if not -nd <= axis < max(nd, 1):
        raise ValueError(f"{layer}: argument {arg!r} {axis} is out of range for {x.name}{list(x.shape)}")
    return axis


def mul(x, y, x_num_col_dims=1, y_num_col_dims=1, name=None):
    """x flattened to a matrix at x_num_col_dims times y flattened at y_num_col_dims (the `mul`
    op, fc's product)."""
    check_variable(x, "x", "mul")
    check_variable(y, "y", "mul")
    return _append("mul", {"X": [x], "Y": [y]}, {"x_num_col_dims": check_int(x_num_col_dims, "x_num_col_dims", "mul"),
                                                "y_num_col_dims": check_int(y_num_col_dims, "y_num_col_dims", "mul")},
                   name=name)


def _reduce_bool(op_type, input, dim, keep_dim, name):
    check_variable(input, "input", op_type)
    if input.dtype != "bool":
        raise TypeError(f"{op_type}: argument 'input' ({input.name}) must be bool, got {input.dtype}")
    dims = [0] if dim is None else check_int_list(dim, "dim", op_type)
    return _append(op_type, {"X": [input]}, {"dim": dims, "keep_dim": bool(keep_dim), "reduce_all": dim is None},
                   dtype="bool", name=name, stop_gradient=True)


def reduce_all(input, dim=None, keep_dim=False, name=None):
    """Logical and over dim (an int or list of ints), or over everything when dim is None."""
    return _reduce_bool("reduce_all", input, dim, keep_dim, name)


def reduce_any(input, dim=None, keep_dim=False, name=None):
    """Logical or over dim (an int or list of ints), or over everything when dim is None."""
    return _reduce_bool("reduce_any", input, dim, keep_dim, name)


def _arg(op_type, x, axis):
    check_variable(x, "x", op_type)
    return _append(op_type, {"X": [x]}, {"axis": _axis(axis, x, "axis", op_type), "flatten": False,
                                         "keepdims": False, "dtype": "int64"}, dtype="int64", stop_gradient=True)


def argmax(x, axis=0):
    """The int64 index of the largest element along axis (the axis dropped)."""
    return _arg("arg_max", x, axis)


def argmin(x, axis=0):
    """The int64 index of the smallest element along axis (the axis dropped)."""
    return _arg("arg_min", x, axis)


def argsort(input, axis=-1, descending=False, name=None):  # noqa: A002
    """(sorted input, int64 indices) along axis; the sort is stable (ties keep their order)."""
    check_variable(input, "input", "argsort")
    helper = LayerHelper("argsort", name)
    out = helper.create_variable_for_type_inference(input.dtype)
    ids = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    helper.append_op(type="argsort", inputs={"X": [input]}, outputs={"Out": [out], "Indices": [ids]},
                     attrs={"axis": _axis(axis, input, "axis", "argsort"), "descending": bool(descending)})
    return out, ids


def cumsum(x, axis=None, exclusive=None, reverse=None):
    """The running sum along axis (default the last); exclusive leaves each element out, reverse
    sums from the end."""
    check_variable(x, "x", "cumsum")
    axis = -1 if axis is None else _axis(axis, x, "axis", "cumsum")
    return _append("cumsum", {"X": [x]}, {"axis": axis, "exclusive": bool(exclusive), "reverse": bool(reverse),
                                          "flatten": False})


def gather(input, index, overwrite=True):  # noqa: A002
    """input's rows (axis 0) at index ([K] or [K, 1])."""
    check_variable(input, "input", "gather")
    _check_index(index, "index", "gather")
    return _append("gather", {"X": [input], "Index": [index]}, {"axis": 0, "overwrite": bool(overwrite)})


def gather_nd(input, index, name=None):  # noqa: A002
    """input at the coordinates in index's last dimension: index [..., K] gives [..., input.shape[K:]]."""
    check_variable(input, "input", "gather_nd")
    _check_index(index, "index", "gather_nd")
    return _append("gather_nd", {"X": [input], "Index": [index]}, name=name)


def scatter(input, index, updates, name=None, overwrite=True):  # noqa: A002
    """input with rows index replaced by updates (overwrite) or, with overwrite=False, those rows
    zeroed and then each update added (repeated ids accumulate)."""
    check_variable(input, "input", "scatter")
    _check_index(index, "index", "scatter")
    check_variable(updates, "updates", "scatter")
    return _append("scatter", {"X": [input], "Ids": [index], "Updates": [updates]}, {"overwrite": bool(overwrite)},
                   name=name)


def scatter_nd_add(ref, index, updates, name=None):
    """ref with each updates slice added at the coordinates in index's last dimension."""
    check_variable(ref, "ref", "scatter_nd_add")
    _check_index(index, "index", "scatter_nd_add")
    check_variable(updates, "updates", "scatter_nd_add")
    return _append("scatter_nd_add", {"X": [ref], "Index": [index], "Updates": [updates]}, name=name)


def where(condition):
    """Fluid 1.8's where: the int64 [N, rank] coordinates of condition's true elements."""
    check_variable(condition, "condition", "where")
    if condition.dtype != "bool":
        raise TypeError(f"where: argument 'condition' ({condition.name}) must be bool, got {condition.dtype}")
    return _append("where_index", {"Condition": [condition]}, dtype="int64", stop_gradient=True)


def _unique(op_type, x, dtype, count_slot):
    check_variable(x, "x", op_type)
    dtype = str(dtype)
    if dtype not in ("int32", "int64"):
        raise TypeError(f"{op_type}: argument 'dtype' must be 'int32' or 'int64', got {dtype!r}")
    if len(x.shape) != 1:
        raise ValueError(f"{op_type}: x {x.name}{list(x.shape)} must be 1-D")
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(x.dtype, stop_gradient=True)
    index = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    outs = {"Out": [out], "Index": [index]}
    if count_slot:
        outs[count_slot] = [helper.create_variable_for_type_inference(dtype, stop_gradient=True)]
    helper.append_op(type=op_type, inputs={"X": [x]}, outputs=outs, attrs={"dtype": dtype})
    return (out, index) + ((outs[count_slot][0],) if count_slot else ())


def unique(x, dtype="int32"):
    """Fluid 1.8's unique of a 1-D x: (the distinct values in order of first appearance, each
    element's position among them), the index in `dtype`."""
    return _unique("unique", x, dtype, None)


def unique_with_counts(x, dtype="int32"):
    """As unique, plus how often each distinct value occurs."""
    return _unique("unique_with_counts", x, dtype, "Count")


def _bounds(values, key, layer, inputs, n, helper):
    """starts / ends / strides of slice and strided_slice as Paddle 1.8 takes them: a list of
    ints, a list holding one-element int tensors (<Key>TensorList) or a 1-D int tensor
    (<Key>Tensor), the tensors read when the op runs. Returns the attribute (-1 per tensor)."""
    cap = key.capitalize()
    if isinstance(values, Variable):
        m = _int_vector_len(values, f"{layer}: {key}")
        if m != n:
            raise ValueError(f"{layer}: {key} {values.name} holds {m} values for {n} axes")
        inputs[cap + "Tensor"] = [values]
        return [-1] * n
    if isinstance(values, (list, tuple)) and any(isinstance(v, Variable) for v in values):
        tensors, attr = _runtime_ints(list(values), f"{layer}: {key}", helper)
        inputs[cap + "TensorList"] = tensors
    else:
        attr = check_int_list(values, key, layer)
    if len(attr) != n:
        raise ValueError(f"{layer}: axes, starts, ends{', strides' if layer == 'strided_slice' else ''} "
                         f"must have one length ({key} has {len(attr)} for {n} axes)")
    return attr


def strided_slice(input, axes, starts, ends, strides):  # noqa: A002
    """input[starts:ends:strides] along axes (negative bounds and steps as Python's). starts,
    ends and strides may hold one-element int tensors or be 1-D int tensors, read when the op
    runs (Fluid 1.8)."""
    check_variable(input, "input", "strided_slice")
    axes = check_int_list(axes, "axes", "strided_slice")
    inputs = {"Input": [input]}
    helper = LayerHelper("strided_slice")
    starts, ends, strides = (_bounds(v, k, "strided_slice", inputs, len(axes), helper)
                             for v, k in ((starts, "starts"), (ends, "ends"), (strides, "strides")))
    if 0 in strides:
        raise ValueError("strided_slice: a stride of 0 is not allowed")
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="strided_slice", inputs=inputs, outputs={"Out": [out]},
                     attrs={"axes": axes, "starts": starts, "ends": ends, "strides": strides, "decrease_axis": []})
    return out


def stack(x, axis=0, name=None):
    """Join a list of same-shaped tensors along a new axis."""
    xs = [x] if not isinstance(x, (list, tuple)) else list(x)
    for i, v in enumerate(xs):
        check_variable(v, f"x[{i}]", "stack")
    return _append("stack", {"X": xs}, {"axis": check_int(axis, "axis", "stack")}, out_slot="Y", name=name)


def unstack(x, axis=0, num=None):
    """x cut along axis into its slices (that axis dropped); num is needed when its size is unknown."""
    check_variable(x, "x", "unstack")
    axis = _axis(axis, x, "axis", "unstack")
    size = x.shape[axis]
    if num is None:
        if size < 0:
            raise ValueError(f"unstack: axis {axis} of {x.name}{list(x.shape)} is unknown: pass num")
        num = size
    num = check_int(num, "num", "unstack", minimum=1)
    helper = LayerHelper("unstack")
    outs = [helper.create_variable_for_type_inference(x.dtype) for _ in range(num)]
    helper.append_op(type="unstack", inputs={"X": [x]}, outputs={"Y": outs}, attrs={"axis": axis, "num": num})
    return outs


def expand_as(x, target_tensor, name=None):
    """x tiled so its shape is target_tensor's (each size a multiple of x's)."""
    check_variable(x, "x", "expand_as")
    check_variable(target_tensor, "target_tensor", "expand_as")
    return _append("expand_as", {"X": [x], "target_tensor": [target_tensor]}, name=name)


def one_hot(input, depth, allow_out_of_range=False):  # noqa: A002
    """Fluid 1.x one_hot: int ids [N, 1] to float32 [N, depth] (the last dimension of 1 replaced);
    an id outside [0, depth) is an error unless allow_out_of_range (its row is then all 0)."""
    _check_index(input, "input", "one_hot")
    depth = check_int(depth, "depth", "one_hot", minimum=1)
    return _append("one_hot", {"X": [input]}, {"depth": depth, "allow_out_of_range": bool(allow_out_of_range)},
                   dtype="float32", stop_gradient=True)


def _flip_axes(x, axis, layer):
    axes = check_int_list(axis, "axis", layer)
    return [_axis(a, x, "axis", layer) for a in axes]


def reverse(x, axis):
    """x reversed along axis (an int or a list of ints)."""
    check_variable(x, "x", "reverse")
    return _append("reverse", {"X": [x]}, {"axis": _flip_axes(x, axis, "reverse")})


def flip(input, dims, name=None):  # noqa: A002
    """input reversed along dims (the `flip` op)."""
    check_variable(input, "input", "flip")
    return _append("flip", {"X": [input]}, {"axis": _flip_axes(input, dims, "flip")}, name=name)


def size(input):  # noqa: A002
    """input's number of elements, int64 [1] (read when the op runs)."""
    check_variable(input, "input", "size")
    return _append("size", {"Input": [input]}, dtype="int64", stop_gradient=True)


def rank(input):  # noqa: A002
    """input's number of dimensions, a constant int32 tensor of shape [1]."""
    check_variable(input, "input", "rank")
    helper = LayerHelper("rank")
    out = helper.create_variable_for_type_inference("int32", stop_gradient=True)
    helper.append_op(type="assign_value", inputs={}, outputs={"Out": [out]},
                     attrs={"shape": [1], "dtype": "int32", "values": [len(input.shape)]})
    return out


def sampling_id(x, min=0.0, max=1.0, seed=0, dtype="float32"):  # noqa: A002
    """One column index (int64) per row of x [N, K], drawn with the row's values as weights."""
    check_variable(x, "x", "sampling_id")
    return _append("sampling_id", {"X": [x]}, {"min": float(min), "max": float(max), "seed": int(seed)},
                   dtype="int64", stop_gradient=True)


def clip_by_norm(x, max_norm, name=None):
    """x scaled down to L2 norm max_norm when its norm is larger (the whole tensor's norm)."""
    check_variable(x, "x", "clip_by_norm")
    return _append("clip_by_norm", {"X": [x]}, {"max_norm": float(max_norm)}, name=name)


def l2_normalize(x, axis, epsilon=1e-12, name=None):
    """x / sqrt(sum(x^2 along axis) + epsilon) (the `norm` op)."""
    check_variable(x, "x", "l2_normalize")
    if len(x.shape) == 1:
        axis = 0
    helper = LayerHelper("l2_normalize", name)
    out = helper.create_variable_for_type_inference(x.dtype)
    norm = helper.create_variable_for_type_inference(x.dtype, stop_gradient=True)
    helper.append_op(type="norm", inputs={"X": [x]}, outputs={"Out": [out], "Norm": [norm]},
                     attrs={"axis": _axis(axis, x, "axis", "l2_normalize"), "epsilon": float(epsilon)})
    return out


__all__ += ["mul", "reduce_all", "reduce_any", "argmax", "argmin", "argsort", "cumsum", "gather", "gather_nd",
            "scatter", "scatter_nd_add", "where", "unique", "unique_with_counts", "strided_slice", "stack",
            "unstack", "expand_as", "one_hot", "reverse", "flip", "size", "rank", "sampling_id", "clip_by_norm",
            "l2_normalize"]


def shard_index(input, index_num, nshards, shard_id, ignore_value=-1):  # noqa: A002
    """int ids [..., 1] to their position within shard `shard_id` (shards of ceil(index_num /
    nshards) ids), ids of other shards to ignore_value."""
    _check_index(input, "input", "shard_index")
    return _append("shard_index", {"X": [input]},
                   {"index_num": check_int(index_num, "index_num", "shard_index", minimum=1),
                    "nshards": check_int(nshards, "nshards", "shard_index", minimum=1),
                    "shard_id": check_int(shard_id, "shard_id", "shard_index", minimum=0),
                    "ignore_value": check_int(ignore_value, "ignore_value", "shard_index")}, stop_gradient=True)


__all__ += ["shard_index"]


def hash(input, hash_size, num_hash=1, name=None):  # noqa: A001 (Fluid's name)
    """Each row of int ids (the last dimension) hashed num_hash times (XXH64, seeds 0..num_hash-1)
    into [0, hash_size): [..., num_hash, 1], input's dtype and LoD."""
    _check_index(input, "input", "hash")
    return _append("hash", {"X": [input]}, {"num_hash": check_int(num_hash, "num_hash", "hash", minimum=1),
                                            "mod_by": check_int(hash_size, "hash_size", "hash", minimum=1)},
                   name=name, stop_gradient=True)


__all__ += ["hash"]
