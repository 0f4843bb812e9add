"""`x[...]` on a Variable: Paddle's static-graph indexing, installed into
framework.Variable (`set_indexing`) on import of psjob.fluid.layers.

Integers, slices (any step, negative bounds), `...` and `None` build one
`strided_slice` op (an integer index is a one-element slice in `decrease_axis`,
which drops that axis) and, for each `None`, an `unsqueeze2`. A slice bound may
be a one-element int Variable (`x[start:end]`): the op then reads every bound of
that index from its StartsTensorList / EndsTensorList when it runs, as Paddle's.

A Variable as the whole index selects data-dependently, as Paddle's static
indexing does: a bool Variable (a mask over x's leading axes) gives the selected
elements, [N, rest of x's shape] (`where_index` then `gather_nd`); a 1-D int
Variable gives those rows (`gather` on axis 0). Lists, arrays and a bool, or a
Variable among other indices, are refused by name.
"""
from __future__ import annotations

import numbers

from psjob.fluid.base import GraphError
from psjob.fluid.framework import Variable, set_indexing
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers.manip import gather, gather_nd, unsqueeze
from psjob.fluid.layers.tensor import fill_constant

_INT_MAX = 2 ** 31 - 1  # "to the end", in the direction of the step


def _expand(item, ndim):
    """The index as one entry per input axis, plus the output positions of the Nones."""
    items = list(item) if isinstance(item, tuple) else [item]
    for it in items:
        if isinstance(it, (bool, Variable)) or not (it is None or it is Ellipsis or isinstance(
                it, (numbers.Integral, slice))) or (isinstance(it, slice) and isinstance(it.step, Variable)):
            raise TypeError(f"Variable index {it!r}: psjob indexes with integers, slices, ... and None; "
                            "selecting by a Variable, a list, an array or a bool is not supported")
    if sum(it is Ellipsis for it in items) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    real = sum(1 for it in items if it is not None and it is not Ellipsis)
    if real > ndim:
        raise IndexError(f"too many indices ({real}) for a Variable of {ndim} dimensions")
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items[at:at + 1] = [slice(None)] * (ndim - real)
    items += [slice(None)] * (ndim - sum(1 for it in items if it is not None))
    return items


def _bounds(s: slice):
    step = 1 if s.step is None else int(s.step)
    if step == 0:
        raise ValueError("slice step cannot be zero")
    start = s.start if s.start is not None else (0 if step > 0 else _INT_MAX)
    stop = s.stop if s.stop is not None else (_INT_MAX if step > 0 else -_INT_MAX - 1)
    return _bound(start), _bound(stop), step


def _bound(b):
    if isinstance(b, Variable):
        if b.dtype not in ("int32", "int64") or any(d > 1 for d in b.shape):
            raise TypeError(f"a slice bound Variable must be one int32/int64 element, got {b.name}{list(b.shape)} "
                            f"{b.dtype}")
        return b
    return int(b)


def _as_tensors(bounds):
    """Every bound a one-element int64 Variable (ints become fill_constant's)."""
    return [b if isinstance(b, Variable) else fill_constant([1], "int64", b) for b in bounds]


def _select(x: Variable, index: Variable):
    if index.dtype == "bool":
        if len(index.shape) > len(x.shape):
            raise IndexError(f"a bool index {index.name}{list(index.shape)} has more axes than {x.name}{list(x.shape)}")
        helper = LayerHelper("where_index")
        where = helper.create_variable_for_type_inference("int64", stop_gradient=True)
        helper.append_op(type="where_index", inputs={"Condition": [index]}, outputs={"Out": [where]})
        return gather_nd(x, where)
    if index.dtype in ("int32", "int64") and len(index.shape) == 1:
        return gather(x, index)
    raise TypeError(f"Variable index {index.name}{list(index.shape)} {index.dtype}: psjob indexes by a bool mask "
                    "or a 1-D int Variable (rows)")


def getitem(x: Variable, item):
    if isinstance(item, Variable):
        return _select(x, item)
    items = _expand(item, len(x.shape))
    axes, starts, ends, strides, decrease, nones = [], [], [], [], [], []
    axis = out_axis = 0
    for it in items:
        if it is None:
            nones.append(out_axis)
            out_axis += 1
            continue
        if isinstance(it, numbers.Integral):
            i = int(it)
            size = x.shape[axis]
            if size >= 0 and not -size <= i < size:
                raise IndexError(f"index {i} is out of range for axis {axis} of {x.name}{list(x.shape)}")
            axes.append(axis), starts.append(i), ends.append(i + 1 if i != -1 else _INT_MAX), strides.append(1)
            decrease.append(axis)
        elif it != slice(None):
            start, stop, step = _bounds(it)
            axes.append(axis), starts.append(start), ends.append(stop), strides.append(step)
            out_axis += 1
        else:
            out_axis += 1
        axis += 1
    out = x
    if axes:
        helper = LayerHelper("strided_slice")
        out = helper.create_variable_for_type_inference(x.dtype)
        inputs = {"Input": [x]}
        if any(isinstance(b, Variable) for b in starts + ends):  # read when the op runs
            inputs.update(StartsTensorList=_as_tensors(starts), EndsTensorList=_as_tensors(ends))
            starts, ends = [-1] * len(starts), [-1] * len(ends)
        helper.append_op(type="strided_slice", inputs=inputs, outputs={"Out": [out]},
                         attrs={"axes": axes, "starts": starts, "ends": ends, "strides": strides,
                                "decrease_axis": decrease})
        if decrease and len(decrease) == len(x.shape) and nones:
            # every axis dropped leaves shape [1] (Paddle before 2.5); the Nones then apply to a scalar
            raise GraphError(f"Variable index {item!r} drops every axis of {x.name} and adds new ones: "
                             "index with a slice (x[i:i+1]) instead")
    if nones:
        out = unsqueeze(out, nones)
    return out


set_indexing(getitem)
