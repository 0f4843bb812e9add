"""A SparseTable's value and optimizer-state columns on a device (`SparseTable.to_device`).

What moves: the `value` column and every optimizer-state column — the bytes
the optimizer reads and writes. What stays on the host: the id → row index
(hash logic, `index.py`), `id`, `live`, `last_seen` and the show/click
counters (eviction reads them on the host). So a lookup finds rows on the
host, uploads the row numbers, gathers on the device and copies the rows back
once; a push merges duplicate ids on the host (as the host table does),
uploads the unique rows and their summed gradients in one transfer and runs
the optimizer's lazy row update on the full device columns in place (on
cupy the fused sparse kernels of psjob.foundation.cuda: one launch for sgd, momentum,
adagrad, adam; `assume_unique=True`, so nothing reads back to the host).

The array module is injected. With ``xp=numpy`` the device columns are numpy
arrays and the row update is the reference `psjob.foundation.kernels.optimizers`
``<name>_update_rows``: the same code path, run on the host, which the tests
compare bit for bit with the host table. Transfers go through a `transfer`
object with ``to_device_arrays(list) -> list`` and ``to_host_arrays(list)
-> list`` (the pserver hands in its pinned `psjob.cluster.pserver.device_staging`
buffers; without one, `DirectTransfer` copies array by array).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from psjob.foundation.kernels import optimizers as reference


class DirectTransfer:
    """Plain copies: ``xp.asarray`` up, ``.get()`` down (no pinned staging)."""

    def __init__(self, xp: Any) -> None:
        self.xp = xp

    def to_device_arrays(self, arrays: list) -> list:
        return [self.xp.asarray(a) for a in arrays]

    def to_host_arrays(self, arrays: list) -> list:
        if self.xp is np:
            return [np.array(a) for a in arrays]
        return [a.get() for a in arrays]


def _row_updates(xp: Any) -> dict[str, Callable[..., None]]:
    if xp is np:
        return reference.ROW_UPDATES
    from psjob.foundation.cuda import optimizers as fused  # needs cupy and a GPU only when called
    return fused.ROW_UPDATES


class DeviceColumns:
    """Allocation, transfers and row updates of the device-resident columns of one table."""

    def __init__(self, xp: Any, transfer: Any | None = None) -> None:
        self.xp = xp
        self.transfer = transfer if transfer is not None else DirectTransfer(xp)
        self._updates = _row_updates(xp)

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return self.xp.empty(shape, dtype=dtype)

    def upload_column(self, host_prefix: np.ndarray, capacity: int) -> Any:
        """A device column of `capacity` rows whose first rows are `host_prefix`."""
        col = self.empty((capacity,) + host_prefix.shape[1:], host_prefix.dtype)
        if host_prefix.shape[0]:
            (dev,) = self.transfer.to_device_arrays([host_prefix])
            col[:host_prefix.shape[0]] = dev
        return col

    @staticmethod
    def _index(where: np.ndarray | slice) -> np.ndarray | slice:
        return where if isinstance(where, slice) else np.asarray(where, np.int64)

    def gather(self, columns: list, rows: np.ndarray) -> list:
        """Host copies of `rows` of each device column (rows < 0 read row 0; callers mask them)."""
        rows = np.where(rows < 0, 0, rows) if rows.size and rows.min() < 0 else rows
        (dev_rows,) = self.transfer.to_device_arrays([np.ascontiguousarray(rows, np.int64)])
        return self.transfer.to_host_arrays([col.take(dev_rows, axis=0) for col in columns])

    def scatter(self, columns: list, where: np.ndarray | slice, host_values: list) -> None:
        """columns[i][where] = host_values[i], with one upload for all of them (and the rows)."""
        where = self._index(where)
        extra = [] if isinstance(where, slice) else [where]
        uploaded = self.transfer.to_device_arrays(extra + [np.ascontiguousarray(v) for v in host_values])
        index = where if isinstance(where, slice) else uploaded.pop(0)
        for col, values in zip(columns, uploaded):
            col[index] = values

    def fill(self, columns_and_values: list[tuple[Any, float]], where: np.ndarray | slice) -> None:
        """col[where] = scalar for each (col, scalar)."""
        where = self._index(where)
        if isinstance(where, slice):
            index = where
        else:
            (index,) = self.transfer.to_device_arrays([where])
        for col, value in columns_and_values:
            col[index] = value

    def update_rows(self, name: str, value: Any, states: list, rows: np.ndarray, grads: np.ndarray,
                    lr: float | np.ndarray, hyper: dict[str, Any]) -> None:
        """The lazy row update of optimizer `name` on full columns: unique `rows`, summed `grads`."""
        rows_d, grads_d = self.transfer.to_device_arrays([np.ascontiguousarray(rows, np.int64),
                                                          np.ascontiguousarray(grads)])
        if not isinstance(lr, float):
            # A one-element host array: pass its value (the kernels take a float by value).
            lr = float(np.asarray(lr).reshape(-1)[0])
        self._updates[name](self.xp, value, rows_d, grads_d, *states, lr=lr, assume_unique=True,
                            **hyper)
