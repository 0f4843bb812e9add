"""Fast whole-row gathers and scatters of numpy arrays, and the order of a batch's ids.

numpy moves the rows of a 2-D array by fancy indexing element by element
(``a[rows] = v`` on ``[n, 16]`` float32 runs ~10x slower than copying the
bytes); seen as a 1-D array of opaque row-sized items, the same gather or
scatter is one ``take``/``put`` over whole rows (measured on 20K rows of a
2M x 16 float32 column: gather 243 -> 150 us, scatter 1385 -> 131 us).
Anything else (cupy arrays, non-contiguous arrays, values that broadcast)
takes the ordinary indexing path, with the same result.

`stable_order` is the sort every duplicate merge of a batch's ids starts with.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Literal, cast

import numpy as np


@functools.lru_cache(maxsize=64)
def _row_item(row_bytes: int) -> np.dtype:
    return np.dtype((np.void, row_bytes))   # building one costs microseconds; a table uses a few


def _as_row_items(a: Any) -> np.ndarray | None:
    """C-contiguous numpy ``a`` as a 1-D array with one void item per row, or None."""
    if not isinstance(a, np.ndarray):
        return None
    if a.ndim == 1:
        return a
    row_bytes = a.itemsize * math.prod(a.shape[1:])
    if row_bytes == 0 or not a.flags.c_contiguous:
        return None
    flat = a if a.ndim == 2 else a.reshape(a.shape[0], -1)
    return flat.view(_row_item(row_bytes)).reshape(-1)


def take_rows(a: Any, rows: Any, mode: Literal["raise", "wrap", "clip"] = "raise") -> Any:
    """``a[rows]`` (a new array) for 1-D int ``rows``; ``mode`` as in ``np.take``
    (numpy arrays only: others are indexed as they are)."""
    items = _as_row_items(a)
    if items is None:
        return a.take(rows, axis=0, mode=mode) if isinstance(a, np.ndarray) else a[rows]
    return items.take(rows, mode=mode).view(a.dtype).reshape((len(rows),) + a.shape[1:])


def put_rows(a: Any, rows: Any, values: Any) -> None:
    """``a[rows] = values`` for 1-D int ``rows`` without repeats."""
    if values.shape == (len(rows),) + a.shape[1:]:
        items = _as_row_items(a)
        if items is not None:
            np.put(items, rows, cast(np.ndarray, _as_row_items(np.ascontiguousarray(values, a.dtype))))
            return
    a[rows] = values


def stable_order(ids: np.ndarray) -> np.ndarray:
    """``np.argsort(ids, kind="stable")`` for 1-D non-negative int ``ids``, faster when
    they fit 32 bits: two stable passes over 16-bit keys (numpy radix-sorts 16-bit
    integers) instead of a comparison sort — 0.25 vs 0.68 ms for a CTR batch's 26K
    ids. Larger or negative ids, and batches under 2048 ids (where two passes cost more
    than they save), take the plain argsort."""
    if ids.size < 2048 or int(ids.min()) < 0 or int(ids.max()) >= 1 << 32:
        return np.argsort(ids, kind="stable")
    low = np.argsort((ids & 0xFFFF).astype(np.uint16), kind="stable")
    return low[np.argsort((ids[low] >> 16).astype(np.uint16), kind="stable")]
