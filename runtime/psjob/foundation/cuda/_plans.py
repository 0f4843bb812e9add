"""Argument lists of the fused optimizer kernels, built without cupy.

A plan is the kernel's name plus its arguments in the order the .cu source
declares them: arrays (numpy or cupy — the planner only reads their
metadata, so it never synchronises the device), numpy scalars, and None for
a pointer the kernel ignores (the dense kernels' `rows`, `lr_ptr` when the
learning rate is a float). `_launch` turns a plan into a cupy launch; the
host tests turn the same plan into a ctypes call of the same arithmetic
built for the CPU, so this marshalling is checked without a GPU.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from psjob.foundation.cuda._source import kernel_name
from psjob.foundation.kernels import optimizers as reference
from psjob.foundation.kernels.optimizers import Array


@dataclasses.dataclass(frozen=True)
class LaunchPlan:
    optimizer: str
    layout: str          # "dense" | "rows"
    dtype: str           # "float32" | "float64"
    args: tuple          # in kernel order, without adam's ticket counter
    count: int           # elements visited: sizes the grid
    param: object        # the updated array (a device pointer for ignored slots)

    @property
    def kernel(self) -> str:
        return kernel_name(self.optimizer, self.layout, self.dtype)

    @property
    def needs_ticket(self) -> bool:
        return self.optimizer == "adam"


def _dtype_of(param: Array) -> str:
    dtype = str(param.dtype)
    kernel_name("sgd", "dense", dtype)  # raises a TypeError naming the dtype
    return dtype


def _check_state(name: str, array: Array, dtype: str) -> None:
    if str(array.dtype) != dtype:
        raise TypeError(f"{name} has dtype {array.dtype} but param has {dtype}")
    if not array.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous: the fused kernels update it in place")


def _geometry(param: Array) -> tuple[int, int]:
    height = param.shape[0] if param.ndim else 1
    width = math.prod(param.shape[1:]) if param.ndim > 1 else 1
    return height, width


def _lr_args(xp: Any, lr: float | Array, dtype: str) -> tuple[Any, np.int32, np.generic]:
    """(lr_ptr, use_lr_ptr, lr_value): a device-resident lr is read by the kernel."""
    scalar = np.dtype(dtype).type
    if isinstance(lr, (int, float)):
        return None, np.int32(0), scalar(lr)
    lr = xp.asarray(lr)
    if lr.size != 1:
        raise ValueError(f"lr must be a float or a one-element array, got shape {lr.shape}")
    return xp.ascontiguousarray(lr.reshape(1).astype(dtype, copy=False)), np.int32(1), scalar(0)


def _common(xp: Any, param: Array, grad: Array, rows: Array, states: dict[str, Array], lr: float | Array,
            assume_unique: bool) -> tuple[str, str, Array, tuple, tuple, int]:
    """Validate, merge rows if needed, and return (layout, dtype, lead args, tail args, count)."""
    dtype = _dtype_of(param)
    if rows is None:
        reference.check_dense_shapes(param, grad, states)
        layout, values = "dense", grad
    else:
        rows = xp.asarray(rows)
        reference.check_row_shapes(param, rows, grad, states)
        if not assume_unique:
            # cupy: unique() reads the result size back to the host. Servers
            # merge on the host before the upload and pass assume_unique=True.
            rows, grad = reference.merge_duplicate_rows(xp, rows, grad)
        layout, values = "rows", grad
        rows = xp.ascontiguousarray(rows.astype(np.int64, copy=False))
    _check_state("param", param, dtype)
    for name, state in states.items():
        _check_state(name, state, dtype)
    values = xp.ascontiguousarray(values.astype(dtype, copy=False))
    height, width = _geometry(param)
    count = param.size if rows is None else rows.shape[0] * width
    width = max(width, 1)  # a [n, 0] parameter visits nothing; avoid dividing by 0
    geometry = (rows, np.int64(count), np.int64(width), np.int64(height))
    return layout, dtype, values, geometry, _lr_args(xp, lr, dtype), count


def plan_sgd(xp: Any, param: Array, grad: Array, *, lr: float | Array, rows: Array | None = None,
             assume_unique: bool = False) -> LaunchPlan:
    layout, dtype, values, geometry, lr_args, count = _common(
        xp, param, grad, rows, {}, lr, assume_unique)
    return LaunchPlan("sgd", layout, dtype, (param, values) + geometry + lr_args, count, param)


def plan_momentum(xp: Any, param: Array, grad: Array, velocity: Array, *, lr: float | Array, mu: float,
                  use_nesterov: bool = False, rows: Array | None = None, assume_unique: bool = False) -> LaunchPlan:
    layout, dtype, values, geometry, lr_args, count = _common(
        xp, param, grad, rows, {"velocity": velocity}, lr, assume_unique)
    scalar = np.dtype(dtype).type
    args = (param, values, velocity) + geometry + lr_args + (scalar(mu), np.int32(bool(use_nesterov)))
    return LaunchPlan("momentum", layout, dtype, args, count, param)


def plan_adagrad(xp: Any, param: Array, grad: Array, moment: Array, *, lr: float | Array, epsilon: float = 1e-6,
                 rows: Array | None = None, assume_unique: bool = False) -> LaunchPlan:
    layout, dtype, values, geometry, lr_args, count = _common(
        xp, param, grad, rows, {"moment": moment}, lr, assume_unique)
    args = (param, values, moment) + geometry + lr_args + (np.dtype(dtype).type(epsilon),)
    return LaunchPlan("adagrad", layout, dtype, args, count, param)


def plan_adam(xp: Any, param: Array, grad: Array, moment1: Array, moment2: Array, beta1_pow: Array, beta2_pow: Array, *,
              lr: float | Array, beta1: float = 0.9, beta2: float = 0.999, epsilon: float = 1e-8,
              scale_epsilon: bool = True, rows: Array | None = None, assume_unique: bool = False) -> LaunchPlan:
    layout, dtype, values, geometry, lr_args, count = _common(
        xp, param, grad, rows, {"moment1": moment1, "moment2": moment2}, lr, assume_unique)
    per_row = []
    for name, pow_ in (("beta1_pow", beta1_pow), ("beta2_pow", beta2_pow)):
        _check_state(name, pow_, dtype)
        row_wise = reference.pow_is_per_row(param, pow_) if param.ndim else False
        if pow_.size != 1 and not row_wise:
            raise ValueError(f"{name} must have shape [1] or [{param.shape[0]}, 1, ...], got {pow_.shape}")
        per_row.append(row_wise and pow_.size > 1)
    if per_row[0] != per_row[1]:
        raise ValueError("beta1_pow and beta2_pow must both be per-row or both be origin-shaped")
    scalar = np.dtype(dtype).type
    args = ((param, values, moment1, moment2, beta1_pow, beta2_pow, np.int32(per_row[0]))
            + geometry + lr_args + (scalar(beta1), scalar(beta2), scalar(epsilon), np.int32(bool(scale_epsilon))))
    return LaunchPlan("adam", layout, dtype, args, count, param)


PLANNERS = {"sgd": plan_sgd, "momentum": plan_momentum, "adagrad": plan_adagrad,
            "adam": plan_adam}
