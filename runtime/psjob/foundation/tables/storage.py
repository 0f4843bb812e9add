"""Row storage of a sparse table: named columns of per-row arrays.

Lifecycle of a row: `alloc` hands out freed rows first (newest freed first),
then rows above the high-water mark (`alloc_run`: those alone, as one slice, when
nothing is free); `release` returns rows to the free list.
Rows are never moved, so the id index can point at them for their lifetime.

Growth: when the high-water mark reaches the capacity every column becomes
twice as large. A large host column is an anonymous mapping of its own, which
grows where it lies (the kernel moves its pages: no copy, nothing touched);
small ones, device columns and a mapping someone still holds a view of move to
a new array (one copy of the used prefix, amortised O(1) per row). Pages above
the high-water mark are never written, never resident, and not counted in
`resident_bytes`. Doubling, rather than small fixed chunks, keeps every
column one contiguous array, so gathers and scatters are single ``np.take``/
fancy-index calls whatever the table size.

Columns are only reachable through this object and are replaced on growth:
never keep a reference (or view) to one across a call that may allocate.
"""
from __future__ import annotations

import dataclasses
import mmap
from typing import TYPE_CHECKING, cast

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from psjob.foundation.tables.device import DeviceColumns


@dataclasses.dataclass(frozen=True)
class Column:
    """One per-row array: ``dtype`` and the shape of one row's entry (``()`` for scalars)."""
    dtype: np.dtype
    shape: tuple[int, ...] = ()

    @property
    def row_bytes(self) -> int:
        return int(np.dtype(self.dtype).itemsize * int(np.prod(self.shape, dtype=np.int64)))


# Arrays this large get an anonymous mapping of their own (see aligned_empty).
_MAPPED_BYTES = 1 << 20


def aligned_empty(shape: tuple[int, ...], dtype: npt.DTypeLike, align: int = 64) -> np.ndarray:
    """``np.empty`` whose data starts on a cache-line boundary.

    numpy's large arrays start 16 bytes into a page, so every 64-byte row
    of a dim-16 float32 table would straddle two cache lines; aligned rows
    make a random row gather touch one line (measured ~20% faster gathers).

    Large arrays are anonymous mappings of their own (page-aligned, so cache-line
    aligned), which RowStorage can grow in place (`RowStorage._resize_in_place`).
    """
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if nbytes >= _MAPPED_BYTES:
        return _view(_anonymous_mapping(nbytes), shape, dtype)
    raw = np.empty(nbytes + align, np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def _anonymous_mapping(nbytes: int) -> mmap.mmap:
    # Pages are touched (and become resident) only when rows are written. Transparent huge
    # pages advised, as numpy advises them for its own large arrays: random row gathers and
    # updates over a 10M-row table ran 1.3-1.5x faster on them than on 4 KB pages.
    mapping = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if hasattr(mmap, "MADV_HUGEPAGE"):
        mapping.madvise(mmap.MADV_HUGEPAGE)
    return mapping


def _view(mapping: mmap.mmap, shape: tuple[int, ...], dtype: npt.DTypeLike) -> np.ndarray:
    """The array `shape` of `dtype` at the start of `mapping` (a view: it keeps the mapping
    exported, so the mapping cannot be resized under it)."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    return np.frombuffer(mapping, np.uint8, count=count).view(dtype).reshape(shape)


class RowStorage:
    """Columns of equal length plus a free list; ``live[r]`` tells whether row r is in use."""

    def __init__(self, columns: dict[str, Column], initial_capacity: int = 1024) -> None:
        self._spec = dict(columns)
        self._spec["live"] = Column(np.dtype(bool))
        self._capacity = max(16, int(initial_capacity))
        self._maps: dict[str, mmap.mmap] = {}   # name -> the mapping a large host column lies in
        self.cols = {name: self._new_column(name, self._capacity) for name in self._spec}
        self._high = 0
        self._free = np.empty(0, np.int64)   # stack; the end is the top
        self._n_free = 0
        self._device: DeviceColumns | None = None   # after place_on
        self._on_device: frozenset = frozenset()

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def high_water(self) -> int:
        return self._high

    @property
    def live_count(self) -> int:
        return self._high - self._n_free

    @property
    def row_bytes(self) -> int:
        return sum(c.row_bytes for c in self._spec.values())

    def resident_bytes(self) -> int:
        """Bytes of the rows ever handed out, plus the free list (O(1)).

        Capacity above the high-water mark is allocated but never written,
        so it is not resident and not counted.
        """
        return self._high * self.row_bytes + self._free.nbytes

    def alloc(self, n: int) -> np.ndarray:
        """``n`` rows (int64) marked live; their column contents are stale until written."""
        take = min(n, self._n_free)
        reused = self._free[self._n_free - take:self._n_free][::-1].copy()
        self._n_free -= take
        fresh_n = n - take
        if self._high + fresh_n > self._capacity:
            self._grow(self._high + fresh_n)
        fresh = np.arange(self._high, self._high + fresh_n, dtype=np.int64)
        self._high += fresh_n
        rows = np.concatenate([reused, fresh])
        self.cols["live"][rows] = True
        return rows

    def alloc_run(self, n: int) -> slice | None:
        """``alloc(n)`` as a slice when the rows are one fresh ascending run (the free list
        is empty); None, allocating nothing, when freed rows would be reused."""
        if self._n_free:
            return None
        if self._high + n > self._capacity:
            self._grow(self._high + n)
        run = slice(self._high, self._high + n)
        self._high += n
        self.cols["live"][run] = True
        return run

    def release(self, rows: np.ndarray) -> None:
        """Return live rows (unique) to the free list."""
        self.cols["live"][rows] = False
        need = self._n_free + rows.size
        if need > self._free.size:
            grown = np.empty(max(need, 2 * self._free.size, 1024), np.int64)
            grown[:self._n_free] = self._free[:self._n_free]
            self._free = grown
        self._free[self._n_free:need] = rows
        self._n_free = need

    def live_rows(self) -> np.ndarray:
        """All live rows, ascending (int64)."""
        return np.flatnonzero(self.cols["live"][:self._high]).astype(np.int64)

    def place_on(self, device: DeviceColumns, names: list[str]) -> None:
        """Move columns `names` to `device` (a tables.device.DeviceColumns); growth keeps them there."""
        for name in names:
            if name not in self._on_device:
                self.cols[name] = device.upload_column(self.cols[name][:self._high], self._capacity)
                self._maps.pop(name, None)   # the host column's mapping goes with its last view
        self._device = device
        self._on_device = self._on_device | frozenset(names)

    def _new_column(self, name: str, capacity: int) -> np.ndarray:
        """An uninitialised host column of `capacity` rows: a mapping of its own when large
        (aligned_empty's reasons, and growth in place: _resize_in_place)."""
        spec = self._spec[name]
        self._maps.pop(name, None)
        if capacity * spec.row_bytes < _MAPPED_BYTES:
            return aligned_empty((capacity,) + spec.shape, spec.dtype)
        mapping = self._maps[name] = _anonymous_mapping(capacity * spec.row_bytes)
        return _view(mapping, (capacity,) + spec.shape, spec.dtype)

    def _grow(self, needed: int) -> None:
        capacity = self._capacity
        while capacity < needed:
            capacity *= 2
        for name, spec in self._spec.items():
            if name not in self._on_device and self._resize_in_place(name, capacity):
                continue
            old = self.cols[name]
            if name in self._on_device:   # a device-to-device copy of the used prefix
                new = cast("DeviceColumns", self._device).empty((capacity,) + spec.shape, spec.dtype)
            else:
                new = self._new_column(name, capacity)
            new[:self._high] = old[:self._high]   # rows above stay untouched (not resident)
            self.cols[name] = new
            del old
        self._capacity = capacity

    def _resize_in_place(self, name: str, capacity: int) -> bool:
        """Grow a mapped column where it lies (mremap: its pages are moved, not copied, and
        no page is touched), instead of copying it into a new array: a CTR pserver's table
        doubling from 512K to 1M rows copied and first-touched ~110 MB at once; inserts
        into a 10M-row table (`bench/sparse_table.py`) ran 1.9-2.1M rows/s against 1.7M.
        False when the column is not a mapping, or when a view of it is still held
        elsewhere (the mapping refuses to move under it): then it is copied."""
        mapping = self._maps.get(name)
        if mapping is None:
            return False
        spec = self._spec[name]
        del self.cols[name]   # our view: the only export of the mapping, unless someone kept one
        try:
            mapping.resize(capacity * spec.row_bytes)
        except (BufferError, OSError):   # a view is held elsewhere (it stays valid), or the
            # kernel refused: the column is copied instead
            self.cols[name] = _view(mapping, (self._capacity,) + spec.shape, spec.dtype)
            return False
        self.cols[name] = _view(mapping, (capacity,) + spec.shape, spec.dtype)
        return True
