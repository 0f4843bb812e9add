"""Argument checks shared by layer functions.

Layers run at graph-build time, so a wrong argument is caught with a message
that names the layer and the argument, before any program runs.
"""
from __future__ import annotations

import numpy as np

from psjob.fluid.framework import Variable

FLOATS = ("float16", "float32", "float64")
INTS = ("int32", "int64")


def check_variable(value, arg: str, layer: str) -> Variable:
    if not isinstance(value, Variable):
        raise TypeError(f"{layer}: argument {arg!r} must be a fluid Variable, got {type(value).__name__}")
    return value


def check_dtype(var: Variable, arg: str, allowed, layer: str, hint: str = ""):
    if var.dtype not in allowed:
        raise TypeError(f"{layer}: argument {arg!r} ({var.name}) must have dtype "
                        f"{' or '.join(allowed)}, got {var.dtype}{hint}")


def check_int(value, arg: str, layer: str, *, minimum=None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{layer}: argument {arg!r} must be an int, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{layer}: argument {arg!r} must be at least {minimum}, got {value}")
    return int(value)


def check_int_list(value, arg: str, layer: str) -> list[int]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return [int(value)]
    if not isinstance(value, (list, tuple)) or not all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
        raise TypeError(f"{layer}: argument {arg!r} must be an int or a list of ints, got {value!r}")
    return [int(v) for v in value]


def check_choice(value, arg: str, choices, layer: str):
    if value not in choices:
        raise ValueError(f"{layer}: argument {arg!r} must be one of {list(choices)}, got {value!r}")
    return value
