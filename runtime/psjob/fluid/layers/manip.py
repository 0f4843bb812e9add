"""Shape and reduction layers: concat, split, reshape, transpose, squeeze,
unsqueeze, reduce_sum, reduce_mean, reduce_max, reduce_min (Fluid 1.x signatures)."""
from __future__ import annotations

from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import check_int, check_int_list, check_variable

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
    """New shape for the same data: 0 copies the input dimension, one -1 is inferred."""
    check_variable(x, "x", "reshape")
    if actual_shape is not None:
        raise ValueError("reshape: argument 'actual_shape' (a shape tensor) is not supported; "
                         "pass the shape as a list of ints")
    if not isinstance(shape, (list, tuple)):
        raise TypeError(f"reshape: argument 'shape' must be a list or tuple of ints, got {shape!r}")
    shape = check_int_list(list(shape), "shape", "reshape")
    helper = LayerHelper("reshape2", name)
    out = _out(helper, x)
    xshape = _out(helper, x, stop_gradient=True)
    helper.append_op(type="reshape2", inputs={"X": [x]}, outputs={"Out": [out], "XShape": [xshape]},
                     attrs={"shape": shape})
    return helper.append_activation(out, act)


def expand(x, expand_times, name=None):
    """Fluid 1.x expand: X tiled expand_times[i] times along dimension i (one count per
    dimension; Paddle 1.8 API docs, fluid.layers.expand). Counts given as tensors are not
    supported by psjob."""
    check_variable(x, "x", "expand")
    if not isinstance(expand_times, (list, tuple)):
        raise TypeError(f"expand: argument 'expand_times' must be a list of ints (psjob does not take a "
                        f"tensor here), got {type(expand_times).__name__}")
    times = check_int_list(list(expand_times), "expand_times", "expand")
    if len(times) != len(x.shape) or any(t < 1 for t in times):
        raise ValueError(f"expand: argument 'expand_times' {times} must hold one positive count per "
                         f"dimension of {x.name}{list(x.shape)}")
    helper = LayerHelper("expand", name)
    out = _out(helper, x)
    helper.append_op(type="expand", inputs={"X": [x]}, outputs={"Out": [out]}, attrs={"expand_times": times})
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
