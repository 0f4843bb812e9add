"""Validation of what callers hand a table: every check runs before any state changes."""
from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt


def check_ids(ids: npt.ArrayLike) -> np.ndarray:
    """A 1-D contiguous int64 array of ``ids`` (the caller's array when already one).

    Accepts signed integers and unsigned ones narrower than 64 bits; uint64
    is refused rather than silently reinterpreted (use ``.view(np.int64)``).
    """
    array = ids if isinstance(ids, np.ndarray) else np.asarray(ids)
    if array.size == 0 and not isinstance(ids, np.ndarray):
        array = np.empty(0, np.int64)          # [] parses as float64
    kind, size = array.dtype.kind, array.dtype.itemsize
    if kind == "u" and size == 8:
        raise TypeError("ids are uint64; feature ids are int64 - pass ids.view(np.int64) to keep the bits")
    if kind not in "iu":
        raise TypeError(f"ids must be an integer (int64) array, got dtype {array.dtype}")
    if array.ndim != 1:
        raise ValueError(f"ids must be one-dimensional, got shape {array.shape}")
    return np.ascontiguousarray(array, dtype=np.int64)


def check_rows(name: str, values: npt.ArrayLike, n: int, dim: int) -> np.ndarray:
    """float32 ``[n, dim]`` (a copy only when a cast or layout change is needed)."""
    array = values if isinstance(values, np.ndarray) else np.asarray(values)
    if array.dtype.kind != "f":
        raise TypeError(f"{name} must be a floating-point array, got dtype {array.dtype}")
    if array.shape != (n, dim):
        raise ValueError(f"{name} must have shape ({n}, {dim}) (one row of dim {dim} per id), got {array.shape}")
    return np.ascontiguousarray(array, dtype=np.float32)


def check_counts(name: str, values: npt.ArrayLike | None, n: int) -> np.ndarray | None:
    """None, or a float32 ``[n]`` array of non-negative per-id counts."""
    if values is None:
        return None
    array = values if isinstance(values, np.ndarray) else np.asarray(values)
    if array.dtype.kind not in "iuf" or array.dtype == bool:
        raise TypeError(f"{name} must be numeric, got dtype {array.dtype}")
    if array.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},) (one count per id), got {array.shape}")
    array = array.astype(np.float32)
    if not np.isfinite(array).all() or (array < 0).any():
        raise ValueError(f"{name} must be finite and non-negative")
    return array


def check_lr(lr: object, default: float) -> float | np.ndarray:
    """The learning rate to use: ``default`` for None, else a finite float or a one-element array."""
    if lr is None:
        return default
    if isinstance(lr, bool):
        raise TypeError("lr must be a number or a one-element array, got a bool")
    if isinstance(lr, (int, float, np.floating, np.integer)):
        if not math.isfinite(float(lr)):
            raise ValueError(f"lr must be finite, got {lr}")
        return float(lr)
    array = np.asarray(lr)
    if array.dtype.kind != "f" or array.size != 1:
        raise ValueError(f"lr must be a float or a one-element float array, got {array.dtype} {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError("lr must be finite")
    return array
