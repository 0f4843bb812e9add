"""Layers Fluid 1.8 added ahead of Paddle 2.0's API (Paddle 1.8 API docs, fluid.layers): the
n-ary `sum`, `mse_loss`, `tril`/`triu`, `arange`, the element-wise `log1p`, `erf`, `atan`,
`asin`, `acos`, and the 2.0-preview math (`bmm`, `t`, `addmm`, `dot`, `index_select`,
`index_sample`, `roll`, `trace`, `clamp`, `log_softmax`, `logsumexp`, `nonzero`, `kron`,
`cross`, `dist`, `diag_embed`). They are Paddle 1.8's ops (kernels and gradients in fluid/ops)
or its compositions; kept in their own module because `sum` and `range` would shadow Python's
in a module that uses them.
"""
from __future__ import annotations

import sys as _sys

from psjob.fluid import unique_name
from psjob.fluid.framework import default_main_program
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers import control_flow, manip, nn, ops, tensor
from psjob.fluid.layers._checks import FLOATS, check_dtype, check_variable
from psjob.fluid.layers.ops import _unary

__all__ = ["sum", "mse_loss", "tril", "triu", "arange", "log1p", "erf", "atan", "asin", "acos", "bmm", "t",
           "addmm", "dot", "index_select", "index_sample", "roll", "trace", "clamp", "log_softmax", "logsumexp",
           "nonzero", "kron", "cross", "dist", "diag_embed"]

log1p = _unary("log1p", "log(1 + x), element-wise.")
erf = _unary("erf", "The error function of x, element-wise.")
atan = _unary("atan", "The arctangent of x, element-wise.")
asin = _unary("asin", "The arcsine of x (in [-1, 1]), element-wise.")
acos = _unary("acos", "The arccosine of x (in [-1, 1]), element-wise.")


def sum(x):  # noqa: A001 (Fluid's name)
    """The element-wise sum of x: a Variable (returned as a copy) or a list of Variables of one
    shape and dtype (the `sum` op; not a reduction, which is reduce_sum)."""
    xs = list(x) if isinstance(x, (list, tuple)) else [x]
    if not xs:
        raise ValueError("sum: x must be a Variable or a non-empty list of Variables")
    for i, v in enumerate(xs):
        check_variable(v, f"x[{i}]" if isinstance(x, (list, tuple)) else "x", "sum")
    if len({v.dtype for v in xs}) > 1:
        raise TypeError(f"sum: the inputs must share one dtype, got {[v.dtype for v in xs]}")
    helper = LayerHelper("sum")
    out = helper.create_variable_for_type_inference(xs[0].dtype)
    helper.append_op(type="sum", inputs={"X": xs}, outputs={"Out": [out]})
    return out


def mse_loss(input, label):  # noqa: A002 (Fluid's name)
    """The mean of (input - label)^2 over every element, a [1] value (Fluid 1.8: reduce_mean of
    square_error_cost)."""
    for name, v in (("input", input), ("label", label)):
        check_variable(v, name, "mse_loss")
        check_dtype(v, name, FLOATS, "mse_loss")
    return manip.reduce_mean(nn.square_error_cost(input, label))


def _tril_triu(input, diagonal, lower, name):  # noqa: A002
    what = "tril" if lower else "triu"
    check_variable(input, "input", what)
    if isinstance(diagonal, bool) or not isinstance(diagonal, int):
        raise TypeError(f"{what}: diagonal must be an int, got {diagonal!r}")
    if len(input.shape) < 2:
        raise ValueError(f"{what}: input must have at least 2 dimensions, got shape {list(input.shape)}")
    helper = LayerHelper(what, name)
    out = helper.block().create_var(name=helper.name, dtype=input.dtype)  # Paddle 1.8 names it tril_N
    helper.append_op(type="tril_triu", inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"diagonal": diagonal, "lower": lower})
    return out


def tril(input, diagonal=0, name=None):  # noqa: A002
    """The lower triangle (column - row <= diagonal) of input's last two dimensions; the rest 0."""
    return _tril_triu(input, diagonal, True, name)


def triu(input, diagonal=0, name=None):  # noqa: A002
    """The upper triangle (column - row >= diagonal) of input's last two dimensions; the rest 0."""
    return _tril_triu(input, diagonal, False, name)


def arange(start, end, step=1, dtype=None, name=None):
    """fluid.layers.range with dtype int64 by default (Fluid 1.8's arange)."""
    return tensor.range(start, end, step, "int64" if dtype is None else dtype)


# -- Fluid 1.8's 2.0-preview math (Paddle 1.8 API docs): Paddle 1.8's ops or compositions -----

def _named(layer):
    """A layer name as Paddle's LayerHelper draws it (for the last op of a composition)."""
    return unique_name.generate_in(default_main_program(), layer)


def _one_op(op_type, inputs, attrs=None, layer=None, name=None, dtype=None):
    first = next(iter(inputs.values()))[0]
    helper = LayerHelper(layer or op_type, name)
    out = helper.create_variable_for_type_inference(dtype or first.dtype)
    helper.append_op(type=op_type, inputs=inputs, outputs={"Out": [out]}, attrs=attrs or {})
    return out


def bmm(x, y, name=None):
    """Batched matrix product of x [B, M, K] and y [B, K, N] (the bmm op)."""
    for arg, v in (("x", x), ("y", y)):
        check_variable(v, arg, "bmm")
        if len(v.shape) != 3:
            raise ValueError(f"bmm: {arg} {v.name}{list(v.shape)} must be 3-D")
    return _one_op("bmm", {"X": [x], "Y": [y]}, name=name)


def t(input, name=None):  # noqa: A002
    """The transpose of a matrix (transpose2); a 1-D input is returned as it is."""
    check_variable(input, "input", "t")
    if len(input.shape) > 2:
        raise ValueError(f"t: input {input.name}{list(input.shape)} has more than 2 dimensions")
    if len(input.shape) < 2:
        return input
    helper = LayerHelper("t", name)
    out = helper.create_variable_for_type_inference(input.dtype)
    xshape = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    helper.append_op(type="transpose2", inputs={"X": [input]}, outputs={"Out": [out], "XShape": [xshape]},
                     attrs={"axis": [1, 0]})
    return out


def addmm(input, x, y, alpha=1.0, beta=1.0, name=None):  # noqa: A002
    """beta * input + alpha * (x @ y), input broadcast to the product's shape."""
    for arg, v in (("input", input), ("x", x), ("y", y)):
        check_variable(v, arg, "addmm")
    return nn.elementwise_add(nn.scale(nn.matmul(x, y), scale=float(alpha)), nn.scale(input, scale=float(beta)),
                              name=name or _named("addmm"))


def dot(x, y, name=None):
    """The inner product of 1-D x and y ([1]), or row by row of 2-D x and y ([N, 1])."""
    for arg, v in (("x", x), ("y", y)):
        check_variable(v, arg, "dot")
    if len(x.shape) not in (1, 2) or len(x.shape) != len(y.shape):
        raise ValueError(f"dot: x {x.name}{list(x.shape)} and y {y.name}{list(y.shape)} must both be 1-D or 2-D")
    return manip.reduce_sum(nn.elementwise_mul(x, y), dim=-1, keep_dim=len(x.shape) == 2, name=name or _named("dot"))


def index_select(input, index, dim=0):  # noqa: A002
    """input's slices at the 1-D int `index` along dim (the index_select op)."""
    check_variable(input, "input", "index_select")
    check_variable(index, "index", "index_select")
    check_dtype(index, "index", ("int32", "int64"), "index_select")
    return _one_op("index_select", {"X": [input], "Index": [index]}, {"dim": int(dim)})


def index_sample(x, index):
    """Per row i of 2-D x, the elements x[i, index[i, j]] (the index_sample op)."""
    check_variable(x, "x", "index_sample")
    check_variable(index, "index", "index_sample")
    check_dtype(index, "index", ("int32", "int64"), "index_sample")
    return _one_op("index_sample", {"X": [x], "Index": [index]})


def roll(input, shifts, dims=None):  # noqa: A002
    """input's elements shifted along dims, wrapping round (all of them flattened when None)."""
    check_variable(input, "input", "roll")
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = [dims] if isinstance(dims, int) else dims
    if dims is not None and len(dims) != len(shifts):
        raise ValueError(f"roll: shifts {shifts} and dims {dims} must have one length")
    if dims is None:
        flat = _one_op("roll", {"X": [manip.reshape(input, [-1, 1])]}, {"dims": [0], "shifts": shifts})
        return manip.reshape(flat, list(input.shape))
    return _one_op("roll", {"X": [input]}, {"dims": list(dims), "shifts": shifts})


def trace(input, offset=0, dim1=0, dim2=1, out=None, name=None):  # noqa: A002
    """The sum of input's diagonal `offset` above the main one, in the plane of dim1 and dim2."""
    check_variable(input, "input", "trace")
    nd = len(input.shape)
    if nd < 2 or not (-nd <= dim1 < nd and -nd <= dim2 < nd) or dim1 % nd == dim2 % nd:
        raise ValueError(f"trace: dim1 {dim1} and dim2 {dim2} must be two dimensions of {input.name}{list(input.shape)}")
    helper = LayerHelper("trace", name)
    out = out or helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="trace", inputs={"Input": [input]}, outputs={"Out": [out]},
                     attrs={"offset": int(offset), "dim1": int(dim1), "dim2": int(dim2)})
    return out


def clamp(input, min=None, max=None, output=None, name=None):  # noqa: A002
    """input limited to [min, max] (the clip op). A bound left out is, as in Paddle 1.8,
    sys.float_info.min / max: without min, negative values become that tiny positive number.
    psjob takes numbers only."""
    check_variable(input, "input", "clamp")
    if min is None and max is None:
        raise ValueError("clamp: either min or max should be defined")
    bounds = []
    for arg, v, default in (("min", min, _sys.float_info.min), ("max", max, _sys.float_info.max)):
        if v is None:
            bounds.append(default)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            bounds.append(float(v))
        else:
            raise TypeError(f"clamp: argument {arg!r} must be a number (psjob does not take a tensor here), got {v!r}")
    helper = LayerHelper("clamp", name)
    output = output or helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="clip", inputs={"X": [input]}, outputs={"Out": [output]},
                     attrs={"min": bounds[0], "max": bounds[1]})
    return output


def log_softmax(input, axis=None, dtype=None, name=None):  # noqa: A002
    """log(softmax(input)) along axis (-1 by default), input cast to dtype first when given
    (Fluid 1.8's composition)."""
    check_variable(input, "input", "log_softmax")
    x = input if dtype is None else tensor.cast(input, dtype)
    name = name or _named("log_softmax")  # Paddle 1.8 names the softmax log_softmax_N.tmp_0, the log .tmp_1
    return ops.log(nn.softmax(x, axis=-1 if axis is None else int(axis), name=name), name=name)


def logsumexp(x, dim=None, keepdim=False, out=None, name=None):
    """log(sum(exp(x))) over dim (all of x when None), the logsumexp op (without overflow)."""
    check_variable(x, "x", "logsumexp")
    dims = [] if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    helper = LayerHelper("logsumexp", name)
    out = out or helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="logsumexp", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"axis": dims, "keepdim": bool(keepdim), "reduce_all": not dims})
    return out


def nonzero(input, as_tuple=False):  # noqa: A002
    """The int64 [N, rank] coordinates of input's non-zero elements (where_index); as_tuple:
    one [N, 1] per dimension."""
    check_variable(input, "input", "nonzero")
    cond = input
    if input.dtype != "bool":
        cond = control_flow.not_equal(input, tensor.zeros_like(input))
    helper = LayerHelper("where_index")
    out = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    helper.append_op(type="where_index", inputs={"Condition": [cond]}, outputs={"Out": [out]})
    if not as_tuple:
        return out
    return tuple(nn.slice(out, axes=[1], starts=[i], ends=[i + 1]) for i in range(len(input.shape)))


def kron(x, y, out=None, name=None):
    """The Kronecker product of x and y (the kron op; ranks aligned with leading 1s)."""
    check_variable(x, "x", "kron")
    check_variable(y, "y", "kron")
    helper = LayerHelper("kron", name)
    out = out or helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="kron", inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]})
    return out


def cross(input, other, dim=None):  # noqa: A002
    """The cross product of 3-vectors along dim (the first dimension of size 3 when None)."""
    check_variable(input, "input", "cross")
    check_variable(other, "other", "cross")
    return _one_op("cross", {"X": [input], "Y": [other]}, {} if dim is None else {"dim": int(dim)})


def dist(x, y, p=2):
    """The p-norm of x - y (broadcast), a [1] value (p 0: the non-zero count; inf / -inf: the
    largest / smallest absolute difference)."""
    check_variable(x, "x", "dist")
    check_variable(y, "y", "dist")
    return _one_op("dist", {"X": [x], "Y": [y]}, {"p": float(p)})


def diag_embed(input, offset=0, dim1=-2, dim2=-1):  # noqa: A002
    """A tensor with input's last dimension on the offset diagonal of its (dim1, dim2) planes."""
    check_variable(input, "input", "diag_embed")
    return _one_op("diag_embed", {"Input": [input]}, {"offset": int(offset), "dim1": int(dim1), "dim2": int(dim2)})
