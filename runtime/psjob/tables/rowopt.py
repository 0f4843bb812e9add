"""Per-row optimizer state and the SelectedRows update of a sparse table.

The math is `psjob.kernels.optimizers`; this module decides where a row's
state lives and moves rows in and out of storage.

Layout: every state of a row sits side by side in one float32 storage column,
``state`` (`STATE`), ``[width]`` per row, in the kernels' ``ACCUMULATORS``
order: parameter-shaped states take ``dim`` floats, origin-shaped beta pows
one float (they advance only when the row is updated). Adam at dim 16 is
``moment1[0:16] | moment2[16:32] | beta1_pow_acc[32] | beta2_pow_acc[33]``.
So a push moves two row blocks whatever the optimizer — one gather and one
scatter of ``value``, one of ``state`` — instead of one per state column (five
for Adam): random row accesses into a table far larger than the caches are
what a push costs, not the arithmetic. ``value`` stays a column of its own,
because lookups (the pserver's prefetch) gather only values.
The gathered state block is split into contiguous per-state arrays and the
kernel's dense ``<name>_update`` runs on them: on the gathered rows it is the
same elementwise formula, in the same order, as ``<name>_update_rows`` on
separate columns (bit for bit; `tests/unit/test_sparse_table_optim.py`
checks every optimizer against that old layout). Per-state names are the
checkpoint contract (`columns`, `split`, `join`), not the storage.

`merge_rows` is the table's own duplicate-row merge, faster on 64K-id Zipf
batches than the kernels' ``merge_duplicate_rows`` (argsort + reduceat; see
the figures in docs/tables.md). It sorts nothing: a row-indexed scratch
column receives each row's first batch position (``np.minimum.at``), the
first gradient of every row is copied and only the repeats are summed in,
with a 1-D ``np.add.at`` (numpy's fast path).
"""
from __future__ import annotations

import numpy as np

from psjob.kernels import optimizers as kernels
from psjob.kernels.rows import put_rows, take_rows
from psjob.tables.config import OptimizerConfig
from psjob.tables.storage import Column

STATE = "state"   # the storage column of a row's whole optimizer state


class RowOptimizer:
    def __init__(self, config: OptimizerConfig, dim: int):
        self._config = config
        self._dim = dim
        self._dense_update = kernels.DENSE_UPDATES[config.name]
        self._hyper = config.resolved_hyper()
        self._fills = {}
        self._columns = {}
        self._slices = {}          # state name -> its floats in a row of the STATE column
        self._passed = []          # state columns the update function takes, in order
        width = 0
        for spec in kernels.ACCUMULATORS[config.name]:
            shape = (dim,) if spec.shape == kernels.PARAM_SHAPED else (1,)
            self._columns[spec.name] = Column(np.dtype(np.float32), shape)
            self._slices[spec.name] = slice(width, width + shape[0])
            width += shape[0]
            self._fills[spec.name] = float(self._hyper[spec.fill] if isinstance(spec.fill, str) else spec.fill)
            # Like Fluid, a conditional state (rmsprop's mean_grad) always
            # exists but is passed only when its switch is on.
            if spec.used_when is None or self._hyper.get(spec.used_when):
                self._passed.append(spec.name)
        self._width = width
        self._fill_row = np.zeros(width, np.float32)
        for name, fill in self._fills.items():
            self._fill_row[self._slices[name]] = fill

    @property
    def columns(self) -> dict[str, Column]:
        """Every state (the names Fluid saves) and its per-row shape, in the kernels' order."""
        return dict(self._columns)

    @property
    def block(self) -> Column | None:
        """The `STATE` storage column (every state of a row side by side); None for sgd."""
        return Column(np.dtype(np.float32), (self._width,)) if self._width else None

    @property
    def name(self) -> str:
        return self._config.name

    @property
    def fills(self) -> dict[str, float]:
        """Initial value of each state."""
        return dict(self._fills)

    @property
    def passed(self) -> list[str]:
        """States the update takes, in the kernels' argument order."""
        return list(self._passed)

    @property
    def hyper(self) -> dict:
        return dict(self._hyper)

    @property
    def slices(self) -> dict[str, slice]:
        """Where each state sits in a row of the `STATE` column."""
        return dict(self._slices)

    def split(self, block: np.ndarray, names=None) -> dict[str, np.ndarray]:
        """Contiguous copies of the states ``names`` (default all) of a ``[n, width]`` state block."""
        return {name: np.ascontiguousarray(block[:, self._slices[name]])
                for name in (self._columns if names is None else names)}

    def join(self, states: dict, out: np.ndarray | None = None) -> np.ndarray:
        """Write per-state arrays into a ``[n, width]`` float32 block (new unless ``out``)."""
        if out is None:
            n = len(next(iter(states.values()))) if states else 0
            out = np.empty((n, self._width), np.float32)
        for name, array in states.items():
            out[:, self._slices[name]] = array
        return out

    def initialize(self, cols: dict[str, np.ndarray], rows) -> None:
        """Fresh state for ``rows`` (indices or a slice) of a host table."""
        if self._width:
            cols[STATE][rows] = self._fill_row

    def apply(self, cols: dict[str, np.ndarray], rows: np.ndarray, grads: np.ndarray, lr) -> None:
        """Update ``value`` and state of unique ``rows`` of a host table with summed ``grads``."""
        value = take_rows(cols["value"], rows)
        if self._width:
            block = take_rows(cols[STATE], rows)
            states = self.split(block, self._passed)
            self._dense_update(np, value, grads, *states.values(), lr=lr, **self._hyper)
            put_rows(cols[STATE], rows, self.join(states, out=block))
        else:
            self._dense_update(np, value, grads, lr=lr, **self._hyper)
        put_rows(cols["value"], rows, value)


def merge_rows(rows: np.ndarray, values: np.ndarray, first_pos: np.ndarray):
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
