"""Per-row optimizer state and the SelectedRows update of a sparse table.

The math is `psjob.foundation.kernels.optimizers` (``<name>_update_rows`` run on the
columns themselves: one gather of the rows, the elementwise update, one
scatter back; no intermediate row blocks); this module only decides the state columns
(from the kernels' ``ACCUMULATORS``: parameter-shaped ones get ``dim``
floats per row, origin-shaped beta pows one float per row, advanced only when
the row is updated) and moves rows in and out of storage.

`merge_rows` is the table's own duplicate-row merge, faster on 64K-id Zipf
batches than the kernels' ``merge_duplicate_rows`` (argsort + reduceat; see
the figures in docs/dev/tables.md). It sorts nothing: a row-indexed scratch
column receives each row's first batch position (``np.minimum.at``), the
first gradient of every row is copied and only the repeats are summed in,
with a 1-D ``np.add.at`` (numpy's fast path).
"""
from __future__ import annotations

import numpy as np

from psjob.foundation.kernels import optimizers as kernels
from psjob.foundation.kernels.rows import take_rows
from psjob.foundation.tables.config import OptimizerConfig
from psjob.foundation.tables.storage import Column


class RowOptimizer:
    def __init__(self, config: OptimizerConfig, dim: int) -> None:
        self._config = config
        self._dim = dim
        self._update_rows = kernels.ROW_UPDATES[config.name]
        self._hyper = config.resolved_hyper()
        self._fills = {}
        self._columns = {}
        self._passed = []          # state columns the update function takes, in order
        for spec in kernels.ACCUMULATORS[config.name]:
            shape = (dim,) if spec.shape == kernels.PARAM_SHAPED else (1,)
            self._columns[spec.name] = Column(np.dtype(np.float32), shape)
            self._fills[spec.name] = float(self._hyper[spec.fill] if isinstance(spec.fill, str) else spec.fill)
            # Like Fluid, a conditional state (rmsprop's mean_grad) always
            # exists but is passed only when its switch is on.
            if spec.used_when is None or self._hyper.get(spec.used_when):
                self._passed.append(spec.name)

    @property
    def columns(self) -> dict[str, Column]:
        """Every state column (the names Fluid saves), in the kernels' order."""
        return dict(self._columns)

    @property
    def name(self) -> str:
        return self._config.name

    @property
    def fills(self) -> dict[str, float]:
        """Initial value of each state column."""
        return dict(self._fills)

    @property
    def passed(self) -> list[str]:
        """State columns the update takes, in the kernels' argument order."""
        return list(self._passed)

    @property
    def hyper(self) -> dict:
        return dict(self._hyper)

    def initialize(self, cols: dict[str, np.ndarray], rows: np.ndarray | slice) -> None:
        for name, fill in self._fills.items():
            cols[name][rows] = fill

    def apply(self, cols: dict[str, np.ndarray], rows: np.ndarray, grads: np.ndarray, lr: float | np.ndarray) -> None:
        """Update ``value`` and state of unique ``rows`` with summed ``grads`` in place."""
        self._update_rows(np, cols["value"], rows, grads, *(cols[name] for name in self._passed),
                          lr=lr, assume_unique=True, **self._hyper)


def merge_rows(rows: np.ndarray, values: np.ndarray, first_pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(unique_rows, summed_values)`` for non-negative int64 ``rows``, the
    unique rows in the order of their first occurrence.

    ``first_pos`` is int32 scratch longer than the largest row (its contents
    are overwritten at ``rows`` and otherwise ignored). Duplicates are summed
    in batch order (the first gradient, then each repeat in turn), so the
    result is deterministic and equal to a sequential sum.
    """
    n = rows.size
    if n == 0:
        return rows.copy(), values.copy()
    if n >= np.iinfo(np.int32).max:
        raise ValueError(f"merge_rows takes fewer than 2**31 rows, got {n}")
    pos = np.arange(n, dtype=np.int32)
    first_pos[rows] = n
    np.minimum.at(first_pos, rows, pos)
    first_of = first_pos.take(rows)              # each entry's first position
    first = first_of == pos
    heads = np.flatnonzero(first)
    summed = take_rows(values, heads)
    if heads.size < n:
        repeats = np.flatnonzero(~first)
        slot = np.empty(n, np.int64)             # position of a first occurrence -> its output row
        slot[heads] = np.arange(heads.size)
        target = slot.take(first_of.take(repeats))
        width = values.shape[1]
        flat_index = (target[:, None] * width + np.arange(width)).reshape(-1)
        addend = take_rows(values, repeats).reshape(-1)
        np.add.at(summed.reshape(-1), flat_index, addend)
    return rows.take(heads), summed
