"""The C kernels (``_native.c``) that `optimizers` hands its float32 numpy updates to, that
the sparse table's id index probes and inserts with, that make a table's new rows
(`random_words`, `uniform_rows`) and check pushes (`all_finite`), and that the fused
embedding ops (`merge_ids_pool`, `embedding_pool` and their gradients) gather and sum the
CTR grid with, and that an async trainer's cache extrapolates pulled values with
(`extrapolate`, weight prediction).

A pserver applies every trainer's table push with a lazy row update; numpy does it as a
gather of each state column, a dozen whole-block operations and a scatter back (~1 ms
for a CTR batch's 7.5K rows of dim 16 with Adam). The C loop updates each row where it
lies, with the same float32 operations in the same order: the results are bitwise
numpy's, so the numpy path stays the reference and the fallback.

Used when the extension was built (``pip install`` compiles it; without a C compiler
the install goes on without it) and every array is a C-contiguous float32 numpy array;
anything else (cupy, float64, strided views) takes the numpy path. ``PSJOB_NATIVE_KERNELS=0``
turns it off (to compare, or to rule it out).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from psjob.foundation.settings import process_settings

try:
    # The C extension has no type stubs: its functions are typed by the wrappers below.
    from psjob.foundation.kernels import _native  # type: ignore[attr-defined]
except ImportError:  # built without a C compiler: the numpy kernels run
    _native = None

# PSJOB_NATIVE_KERNELS, read once at import (a process-wide switch of the engine: the
# process's settings as it starts); tests flip it to compare the two paths.
enabled = _native is not None and process_settings().switches.native_kernels


def built() -> bool:
    """True when the C extension is importable (whether or not it is enabled)."""
    return _native is not None


def fits(*arrays: Any) -> bool:
    """True when the C kernels are on and take these arrays as they are: numpy, float32
    (int64 for row indices is checked by the caller's conversion), C-contiguous."""
    if not enabled:
        return False
    for a in arrays:
        if type(a) is not np.ndarray or a.dtype != np.float32 or not a.flags.c_contiguous:
            return False
    return True


def _rows(rows: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(rows, dtype=np.int64)


def sgd_rows(param: np.ndarray, rows: np.ndarray, grads: np.ndarray, lr: float) -> None:
    _native.sgd_rows(param, _rows(rows), grads, float(lr))


def adagrad_rows(param: np.ndarray, moment: np.ndarray, rows: np.ndarray, grads: np.ndarray, lr: float,
                 epsilon: float) -> None:
    _native.adagrad_rows(param, moment, _rows(rows), grads, float(lr), float(epsilon))


def adam_rows(param: np.ndarray, m1: np.ndarray, m2: np.ndarray, beta1_pow: np.ndarray, beta2_pow: np.ndarray,
              rows: np.ndarray, grads: np.ndarray, *, lr: float, beta1: float, beta2: float, epsilon: float,
              per_row: bool, scale_epsilon: bool = True) -> None:
    _native.adam_rows(param, m1, m2, beta1_pow, beta2_pow, _rows(rows), grads, float(lr), float(beta1),
                      float(beta2), float(epsilon), bool(scale_epsilon), bool(per_row))


def adam_dense(param: np.ndarray, grad: np.ndarray, m1: np.ndarray, m2: np.ndarray, beta1_pow: np.ndarray,
               beta2_pow: np.ndarray, *, lr: float, beta1: float, beta2: float, epsilon: float,
               scale_epsilon: bool = True) -> None:
    _native.adam_dense(param, grad, m1, m2, beta1_pow, beta2_pow, float(lr), float(beta1), float(beta2),
                       float(epsilon), bool(scale_epsilon))


def index_find(entries: np.ndarray, reach: np.ndarray, ids: np.ndarray, bits: int,
               window: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(rows, slots, number of ids not at their home slot) of contiguous int64 `ids` in the
    id index's arrays (foundation/tables/index.py); -1 where an id is not in its window."""
    rows = np.empty(ids.size, np.int64)
    slots = np.empty(ids.size, np.int64)
    away = _native.index_find(entries, reach, ids, bits, window, rows, slots)
    return rows, slots, away


def index_place(entries: np.ndarray, reach: np.ndarray, ids: np.ndarray, rows: np.ndarray, bits: int,
                window: int) -> np.ndarray:
    """Insert unique absent contiguous int64 `ids` with `rows`; the positions of the ids
    whose window was full (for the overflow)."""
    spilled = np.empty(ids.size, np.int64)
    n = _native.index_place(entries, reach, ids, rows, bits, window, spilled)
    return spilled[:n]


def index_clear(entries: np.ndarray, step: int) -> None:
    """Free every slot of the id index's int64 ``[slots, 2]`` entries: (poison key
    ``s * step + 2**63`` mod 2**64, row -1) (foundation/tables/index.py's `_poison`)."""
    _native.index_clear(entries, step)


def pool_gather_grid(rows: np.ndarray, index: np.ndarray, out: np.ndarray, slots: int, offset: int = 0) -> None:
    """out[b, offset + j*width : offset + (j+1)*width] = rows[index[j*seqs + b]] (index: a
    [slots, seqs] grid laid out slot by slot; every index is checked against len(rows) first)."""
    _native.pool_gather_grid(rows, np.ascontiguousarray(index, np.int64), out, int(slots), int(offset))


def pool_grad_grid(dout: np.ndarray, index: np.ndarray, distinct: int, slots: int, width: int,
                   offset: int = 0) -> np.ndarray:
    """[distinct, width] float32: row k sums (in double, in (sequence, slot) order) the
    gradient dout[b, offset + j*width : offset + (j+1)*width] of every grid occurrence whose
    index is k."""
    out = np.empty((distinct, width), np.float32)
    _native.pool_grad_grid(dout, np.ascontiguousarray(index, np.int64), out, int(slots), int(width), int(offset))
    return out


def random_words(key: int, ids: np.ndarray, count: int, first_block: int) -> np.ndarray:
    """uint32 ``[len(ids), count]``: hashing.random_words of contiguous int64 `ids`, bitwise."""
    out = np.empty((ids.size, count), np.uint32)
    _native.random_words(key, ids, count, first_block, out)
    return out


def uniform_rows(key: int, ids: np.ndarray, dim: int, scale: float, low: float, out: np.ndarray) -> None:
    """The uniform initializer's rows of contiguous int64 `ids` into float32 C-contiguous
    `out` ``[len(ids), dim]`` (initializers.initial_rows, bitwise)."""
    _native.uniform_rows(key, ids, dim, float(scale), float(low), out)


def all_finite(array: np.ndarray) -> bool | None:
    """Whether a float32/float64 C-contiguous numpy array holds no NaN or infinity; None
    when the C kernels are off or do not take the array (the caller asks numpy)."""
    if (enabled and type(array) is np.ndarray and array.dtype.char in "fd"
            and array.dtype.byteorder in "=|" and array.flags.c_contiguous):
        return bool(_native.all_finite(array))
    return None


def strictly_ascending(ids: np.ndarray) -> bool:
    """Whether contiguous int64 `ids` ascend strictly (numpy when the C kernels are off)."""
    if enabled:
        return bool(_native.strictly_ascending(ids))
    return ids.size < 2 or bool((ids[1:] > ids[:-1]).all())


def same_ids(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether contiguous int64 `a` and `b` are equal, element by element (np.array_equal;
    one memcmp when the C kernels are on)."""
    if enabled:
        return bool(_native.same_ids(a, b))
    return a.shape == b.shape and bool((a == b).all())


def extrapolate(value: np.ndarray, before: np.ndarray, alpha: float) -> np.ndarray | None:
    """(value - before) * float32(alpha) + value as a new float32 array, in one C pass with
    numpy's float32 operations in numpy's order (bitwise equal); None when the C kernels are
    off or do not take the arrays (the caller asks numpy)."""
    if not (fits(value, before) and value.shape == before.shape):
        return None
    out = np.empty_like(value)
    _native.extrapolate(value, before, float(alpha), out)
    return out
