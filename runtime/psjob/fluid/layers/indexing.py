"""`x[...]` on a Variable: Paddle's static-graph indexing, installed into
framework.Variable (`set_indexing`) on import of psjob.fluid.layers.

Integers, slices (any step, negative bounds), `...` and `None` build one
`strided_slice` op (an integer index is a one-element slice in `decrease_axis`,
which drops that axis) and, for each `None`, an `unsqueeze2`. Indexing by a
Variable, a list, an array or a bool selects elements data-dependently, which
this refuses by name.
"""
from __future__ import annotations

import numbers

from psjob.fluid.base import GraphError
from psjob.fluid.framework import Variable, set_indexing
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers.manip import unsqueeze

_INT_MAX = 2 ** 31 - 1  # "to the end", in the direction of the step


def _expand(item, ndim):
    """The index as one entry per input axis, plus the output positions of the Nones."""
    items = list(item) if isinstance(item, tuple) else [item]
    for it in items:
        if isinstance(it, (bool, Variable)) or not (it is None or it is Ellipsis or isinstance(
                it, (numbers.Integral, slice))):
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
    return int(start), int(stop), step


def getitem(x: Variable, item):
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
        helper.append_op(type="strided_slice", inputs={"Input": [x]}, outputs={"Out": [out]},
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
