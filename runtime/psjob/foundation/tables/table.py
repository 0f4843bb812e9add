"""SparseTable: the embedding table a pserver hosts for its share of the ids.

Lifecycle of a row:

1. ``lookup(ids, create=True)`` finds absent ids, asks admission which of
   them get a row, creates those rows from the initializer (a function of
   seed, id and column only) with fresh optimizer state, and returns values.
   Ids that are not admitted read as zeros and leave nothing behind except
   their admission count.
2. ``push(ids, grads)`` sums the gradients of repeated ids, runs the table's
   optimizer on each present row once, stamps ``last_seen`` with the current
   step and, when eviction scores are on, adds shows and clicks. Gradients
   for absent ids (never admitted, or evicted meanwhile) are dropped and
   counted. A push of exactly the ids of one of the last few lookups that
   found every row (a trainer pushing the gradient of the rows it prefetched)
   reuses that lookup's rows instead of searching the index again: rows never
   move while their id is present, and eviction, the only way an id loses its
   row, forgets the remembered lookups.
3. ``end_step()``/``tick(step)`` advance the table clock; ``evict()`` removes
   rows by the eviction rules. An evicted id is forgotten completely: when it
   returns it is counted, admitted and initialized as a new id.
4. ``export()``/``import_rows()`` move rows keyed by id (see `TableShard`).
5. With ``track_changes()`` on, the table remembers which rows changed (a
   byte per row slot, set by creation, push and import) and which ids were
   evicted (tombstones); ``take_changes()`` hands both over and starts
   afresh — what an incremental (delta) checkpoint saves.

Every public method takes the table's lock, so a pserver may call them from
several threads; `stats` reads counters without it (cheap at scrape time).
Buffers: arrays returned by `lookup` and `export` are new and belong to the
caller; arrays passed in are only read during the call and never retained.
"""
from __future__ import annotations

import collections
import dataclasses
import threading
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from psjob.foundation.kernels import native
from psjob.foundation.kernels.rows import take_rows
from psjob.foundation.tables import inputs
from psjob.foundation.tables.accessor import AccessorUpdate
from psjob.foundation.tables.admission import Admission
from psjob.foundation.tables.config import InitializerConfig, TableConfig
from psjob.foundation.tables.hashing import derive_key
from psjob.foundation.tables.index import IdIndex
from psjob.foundation.tables.initializers import initial_rows
from psjob.foundation.tables.rowopt import RowOptimizer, merge_rows
from psjob.foundation.tables.shard import TableShard
from psjob.foundation.tables.storage import Column, RowStorage

if TYPE_CHECKING:
    from psjob.foundation.tables.device import DeviceColumns

_META_DTYPES = {"last_seen": np.int32, "show": np.float32, "click": np.float32}
# An accessor table's draws: uniform in [-1, 1), scaled by each SGD rule's initial_range.
_UNIT_UNIFORM = InitializerConfig(kind="uniform", low=-1.0, high=1.0)
# Lookups remembered for pushes of the same ids: a trainer prefetches one batch
# ahead (two lookups per trainer in flight), and several trainers share a pserver.
_RECENT_LOOKUPS = 8
_RECENT_MAX_IDS = 1 << 20  # larger lookups (bulk reads, not a batch) are not remembered: 16 MB each


@dataclasses.dataclass(frozen=True)
class TableStats:
    """Counters since the table was built.

    ``rows``: live rows; ``capacity``: rows allocated; ``bytes``: resident
    estimate (rows ever handed out × row size, plus index and admission
    sketch); ``hits``/``misses``: looked-up ids (every occurrence) found /
    not found; ``admitted``/``rejected``: absent ids given a row / refused by
    admission (once per distinct id per lookup); ``evicted``: rows removed;
    ``dropped``: pushed gradient rows whose id had no row; ``step``: clock.
    """
    rows: int
    capacity: int
    bytes: int
    admitted: int
    rejected: int
    evicted: int
    hits: int
    misses: int
    dropped: int
    step: int


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique of an integer array by a sort (numpy 2's hash-based unique is several times
    slower on the id arrays of a checkpoint)."""
    out = np.sort(values)
    if out.size > 1:
        out = out[np.concatenate(([True], out[1:] != out[:-1]))]
    return out


class SparseTable:
    def __init__(self, config: TableConfig) -> None:
        if not isinstance(config, TableConfig):
            raise TypeError(f"SparseTable needs a TableConfig, got {type(config).__name__}")
        self._config = config
        self._dim = config.dim
        key = derive_key(config.seed, config.name)
        self._init_key = derive_key(key, "init")
        # A Paddle accessor (show/click-driven SGD rules) or psjob's per-row optimizer.
        self._accessor = AccessorUpdate(config.accessor) if config.accessor is not None else None
        self._optimizer: RowOptimizer | AccessorUpdate = (
            self._accessor if self._accessor is not None else RowOptimizer(config.optimizer, config.dim))
        tracks = config.eviction.tracks_show_click or self._accessor is not None
        self._meta = ["last_seen"] + (["show", "click"] if tracks else [])
        columns = {"id": Column(np.dtype(np.int64)), "value": Column(np.dtype(np.float32), (config.dim,))}
        columns.update(self._optimizer.columns)
        columns.update({name: Column(np.dtype(_META_DTYPES[name])) for name in self._meta})
        # Scratch of merge_rows (a row's first position in the pushed batch), meaningless between pushes.
        columns["first_pos"] = Column(np.dtype(np.int32))
        self._storage = RowStorage(columns, config.initial_capacity)
        self._index = IdIndex(expected=config.initial_capacity)
        self._admission = Admission(config.admission, key)
        self._lock = threading.Lock()
        # (ids, rows) of full lookups
        self._recent: collections.deque[tuple[np.ndarray, np.ndarray]] = collections.deque(maxlen=_RECENT_LOOKUPS)
        self._device: DeviceColumns | None = None   # once to_device() ran
        self._step = 0
        self._decayed_at = 0
        # Change tracking for delta checkpoints (track_changes / take_changes): a flag per
        # row slot, kept beside the row storage (never moved: rows stay put while live).
        self._tracking = False
        self._dirty = np.zeros(0, bool)
        self._tombstones: list[np.ndarray] = []
        self._admitted = self._rejected = self._evicted = 0
        self._hits = self._misses = self._dropped = 0

    @property
    def config(self) -> TableConfig:
        return self._config

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def rule(self) -> str:
        """What trains the rows, as a checkpoint records it: the optimizer's name, or
        ``accessor:<class>`` (their state columns differ)."""
        if self._accessor is not None:
            return f"accessor:{self._accessor.name}"
        return self._config.optimizer.name

    @property
    def step(self) -> int:
        return self._step

    def __len__(self) -> int:
        return self._storage.live_count

    # ------------------------------------------------------------ device
    def to_device(self, xp: Any, transfer: Any | None = None) -> SparseTable:
        """Keep the value and optimizer-state columns in arrays of `xp` (cupy: on the GPU);
        the id index and eviction metadata stay on the host. See foundation/tables/device.py."""
        from psjob.foundation.tables.device import DeviceColumns
        with self._lock:
            if self._device is not None:
                raise RuntimeError(f"table {self._config.name!r} is already device-resident")
            if self._accessor is not None:
                raise RuntimeError(f"table {self._config.name!r} is trained by Paddle's accessor, which "
                                   "runs on the host only")
            device = DeviceColumns(xp, transfer)
            self._storage.place_on(device, ["value"] + list(self._optimizer.columns))
            self._device = device
        return self

    @property
    def array_module(self) -> Any:
        """numpy for a host table, else the module of its device columns."""
        return np if self._device is None else self._device.xp

    # ------------------------------------------------------------ lookup
    def lookup(self, ids: npt.ArrayLike, *, create: bool = True) -> np.ndarray:
        """float32 ``[len(ids), dim]`` rows of ``ids`` (a new array, owned by the caller).

        With ``create`` absent ids go through admission and admitted ones get
        a row; ids without a row read as zeros.
        """
        ids = inputs.check_ids(ids)
        # The index promotes ids that repeat within a lookup to their home slot; a
        # trainer's prefetch sends its batch uniqued (ascending): nothing to look for.
        distinct = native.strictly_ascending(ids)
        with self._lock:
            rows, miss = self._index.find(ids, promote=not distinct)
            self._hits += ids.size - miss.size
            self._misses += miss.size
            if miss.size and create:
                made = self._create(ids[miss], distinct)
                rows[miss] = made
                miss = miss[made < 0]
            # `rows` is a strided view of the index's probe: one contiguous copy serves the
            # remembered lookup and the gather (numpy would copy strided indices itself).
            rows = np.ascontiguousarray(rows)
            if miss.size == 0 and ids.size <= _RECENT_MAX_IDS:
                self._recent.append((ids.copy(), rows))
            if self._device is None:
                out = take_rows(self._storage.cols["value"], rows, mode="clip")
            else:   # gather on the device, one copy back
                (out,) = self._device.gather([self._storage.cols["value"]], rows)
        if miss.size:
            out[miss] = 0.0
        return out

    def _create(self, absent: np.ndarray, distinct: bool) -> np.ndarray:
        """Rows for absent ids (with repeats unless ``distinct``): new rows for admitted ids,
        -1 for the rest."""
        if distinct:
            # A trainer's prefetch sends its batch's ids uniqued (np.unique: ascending), so
            # the absent ones are already distinct: no second sort.
            unique, inverse, counts = absent, np.arange(absent.size), np.ones(absent.size, np.int64)
        else:
            unique, inverse, counts = np.unique(absent, return_inverse=True, return_counts=True)
        admitted = self._admission.admit(unique, counts)
        new_ids = unique[admitted]
        if new_ids.size == unique.size:      # every id admitted (no admission policy): no mask
            row_of = self._add_rows(new_ids) if new_ids.size else np.empty(0, np.int64)
        else:
            row_of = np.full(unique.size, -1, np.int64)
            if new_ids.size:
                row_of[admitted] = self._add_rows(new_ids)
        self._admitted += new_ids.size
        self._rejected += unique.size - new_ids.size
        return row_of if distinct else row_of[inverse.reshape(-1)]

    def _add_rows(self, ids: np.ndarray) -> np.ndarray:
        """New rows for absent unique ``ids``: initial values, fresh optimizer state, indexed."""
        run = self._storage.alloc_run(ids.size)
        if run is not None:
            # Fresh rows above the high-water mark: slices write several times faster
            # than fancy indices, and the initial values are made in the value column.
            rows = np.arange(run.start, run.stop, dtype=np.int64)
            where: np.ndarray | slice = run
        else:
            rows = where = self._storage.alloc(ids.size)
        cols = self._storage.cols   # alloc may have grown (replaced) the columns
        cols["id"][where] = ids
        init = self._config.initializer
        if self._accessor is not None:
            cols["value"][where] = self._accessor.initial_values(self._draws(ids))
            self._accessor.initialize(cols, where)
        elif self._device is None:
            if run is not None:
                initial_rows(init, self._init_key, ids, self._dim, out=cols["value"][run])
            else:
                cols["value"][where] = initial_rows(init, self._init_key, ids, self._dim)
            self._optimizer.initialize(cols, where)
        else:
            values = initial_rows(init, self._init_key, ids, self._dim)
            self._device.scatter([cols["value"]], where, [values])
            self._device.fill([(cols[n], f) for n, f in self._optimizer.fills.items()], where)
        cols["last_seen"][where] = self._step
        for name in self._meta[1:]:
            cols[name][where] = 0.0
        self._index.insert(ids, rows)
        self._mark(where)
        return rows

    def _draws(self, ids: np.ndarray) -> np.ndarray:
        """[len(ids), dim] uniform draws in [-1, 1): a function of (seed, id, column)."""
        return initial_rows(_UNIT_UNIFORM, self._init_key, ids, self._dim)

    # -------------------------------------------------------------- push
    def push(self, ids: npt.ArrayLike, grads: npt.ArrayLike, *, lr: float | np.ndarray | None = None,
             shows: npt.ArrayLike | None = None, clicks: npt.ArrayLike | None = None) -> None:
        """Apply SelectedRows gradients ``grads`` (``[len(ids), dim]``) to the rows of ``ids``.

        Repeated ids have their gradients summed before one optimizer step.
        ``lr`` overrides the configured learning rate (float or one-element
        array). ``shows``/``clicks`` (per id, default one show and no click)
        feed the eviction score and are ignored by tables without one. A table with an
        accessor counts each occurrence of an id as one show (unless ``shows`` says
        otherwise) and trains with its SGD rules' own learning rates (``lr`` is ignored).
        """
        ids = inputs.check_ids(ids)
        grads = inputs.check_rows("grads", grads, ids.size, self._dim)
        shows = inputs.check_counts("shows", shows, ids.size)
        clicks = inputs.check_counts("clicks", clicks, ids.size)
        lr = inputs.check_lr(lr, self._config.optimizer.lr)
        distinct = native.strictly_ascending(ids)
        with self._lock:
            rows = self._rows_of_recent_lookup(ids)
            if rows is None:
                rows, miss = self._index.find(ids, promote=not distinct)
                if miss.size:
                    self._dropped += miss.size
                    keep = rows >= 0
                    rows, grads = rows[keep], grads[keep]
                    shows = None if shows is None else shows[keep]
                    clicks = None if clicks is None else clicks[keep]
            if rows.size == 0:
                return
            if self._accessor is not None:
                self._push_accessor(rows, grads, shows, clicks)
                return
            if distinct:
                # Ascending ids (a prefetched batch: np.unique's order) are distinct, and
                # so are their rows: nothing to merge. The optimizers only read grads.
                unique_rows, summed = np.ascontiguousarray(rows), grads
            else:
                unique_rows, summed = merge_rows(rows, grads, self._storage.cols["first_pos"])
            cols = self._storage.cols
            opt = self._optimizer
            assert isinstance(opt, RowOptimizer)
            if self._device is None:
                opt.apply(cols, unique_rows, summed, lr)
            else:   # merged on the host, one upload, the lazy row update in place on the device
                self._device.update_rows(opt.name, cols["value"], [cols[n] for n in opt.passed],
                                         unique_rows, summed, lr, opt.hyper)
            cols["last_seen"][unique_rows] = self._step
            self._mark(unique_rows)
            if "show" in cols:
                np.add.at(cols["show"], rows, 1.0 if shows is None else shows)
                if clicks is not None:
                    np.add.at(cols["click"], rows, clicks)

    def _push_accessor(self, rows: np.ndarray, grads: np.ndarray, shows: np.ndarray | None,
                       clicks: np.ndarray | None) -> None:
        """One accessor update of the present ``rows``: gradients, shows and clicks of
        repeated rows summed first (Paddle's push merges a batch's occurrences of an id)."""
        n = rows.size
        stacked = np.empty((n, self._dim + 2), np.float32)
        stacked[:, :self._dim] = grads
        stacked[:, self._dim] = 1.0 if shows is None else shows
        stacked[:, self._dim + 1] = 0.0 if clicks is None else clicks
        cols = self._storage.cols
        unique_rows, summed = merge_rows(np.ascontiguousarray(rows), stacked, cols["first_pos"])
        accessor = self._accessor
        assert accessor is not None
        accessor.apply(cols, unique_rows, summed[:, :self._dim], summed[:, self._dim], summed[:, self._dim + 1],
                       lambda r: self._draws(cols["id"][r]))
        cols["last_seen"][unique_rows] = self._step
        self._mark(unique_rows)

    def _rows_of_recent_lookup(self, ids: np.ndarray) -> np.ndarray | None:
        """The rows a recent lookup of exactly ``ids`` found (all present), or None."""
        for seen, rows in reversed(self._recent):
            if seen.size == ids.size and native.same_ids(seen, ids):
                return rows
        return None

    # ------------------------------------------------------ clock, eviction
    def end_step(self) -> int:
        """Advance the clock by one step; returns the new step."""
        with self._lock:
            self._step += 1
            return self._step

    def tick(self, step: int) -> None:
        """Set the clock to ``step`` (never backwards), e.g. from a checkpoint manifest."""
        if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or not 0 <= step < 2**31:
            raise ValueError(f"step must be an int in [0, 2**31), got {step!r}")
        with self._lock:
            if step < self._step:
                raise ValueError(f"the table clock is at step {self._step}; it cannot go back to {step}")
            self._step = int(step)

    def evict(self) -> int:
        """Remove rows by the eviction rules; returns how many went."""
        rule = self._config.eviction
        with self._lock:
            rows = self._storage.live_rows()
            cols = self._storage.cols
            doomed = np.zeros(rows.size, bool)
            if rule.delete_after_unseen_steps is not None:
                unseen = self._step - cols["last_seen"][rows].astype(np.int64)
                doomed |= unseen > rule.delete_after_unseen_steps
            if rule.tracks_show_click:
                high = self._storage.high_water
                decay = rule.show_click_decay_rate ** (self._step - self._decayed_at)
                if decay != 1.0:
                    cols["show"][:high] *= decay
                    cols["click"][:high] *= decay
                self._decayed_at = self._step
                show, click = cols["show"][rows], cols["click"][rows]
                score = (show - click) * rule.nonclk_coeff + click * rule.click_coeff
                doomed |= score < rule.delete_threshold
            return self._remove(rows[doomed])

    def shrink(self) -> int:
        """Paddle's fleet.shrink() on a table with an accessor: decay shows and clicks, remove
        the rows its rules judge stale (foundation/tables/accessor.py); returns how many went."""
        if self._accessor is None:
            raise RuntimeError(f"table {self._config.name!r} has no accessor to shrink by")
        with self._lock:
            rows = self._storage.live_rows()
            doomed = self._accessor.shrink(self._storage.cols, rows)
            self._mark(rows[~doomed])     # decayed shows, one more day unseen
            return self._remove(rows[doomed])

    def _remove(self, gone: np.ndarray) -> int:
        """Forget the rows ``gone`` (positions); the caller holds the lock."""
        cols = self._storage.cols
        if gone.size:
            self._recent.clear()     # their ids may be in a remembered lookup
        if self._tracking and gone.size:
            self._tombstones.append(cols["id"][gone].copy())
            self._dirty[gone[gone < self._dirty.size]] = False
        self._index.remove(cols["id"][gone])
        self._storage.release(gone)
        self._evicted += gone.size
        return int(gone.size)

    # ------------------------------------------------------------ stats
    def stats(self) -> TableStats:
        return TableStats(
            rows=self._storage.live_count, capacity=self._storage.capacity,
            bytes=self._storage.resident_bytes() + self._index.nbytes + self._admission.nbytes,
            admitted=self._admitted, rejected=self._rejected, evicted=self._evicted,
            hits=self._hits, misses=self._misses, dropped=self._dropped, step=self._step,
        )

    # -------------------------------------------------------- change tracking
    @property
    def tracking_changes(self) -> bool:
        return self._tracking

    def track_changes(self, on: bool = True) -> None:
        """Start (or stop) remembering changed rows and evicted ids; either way the changes
        recorded so far are forgotten, so tracking starts from the table as it is now."""
        with self._lock:
            self._tracking = bool(on)
            self._dirty = np.zeros(self._storage.capacity if on else 0, bool)
            self._tombstones = []

    def _mark(self, rows: np.ndarray | slice) -> None:
        """Note rows (positions, a slice or a mask) as changed; the caller holds the lock."""
        if not self._tracking:
            return
        high = self._storage.high_water
        if self._dirty.size < high:
            grown = np.zeros(max(high, 2 * self._dirty.size), bool)
            grown[:self._dirty.size] = self._dirty
            self._dirty = grown
        self._dirty[rows] = True

    def take_changes(self) -> tuple[np.ndarray, np.ndarray]:
        """(ids of the present rows changed since tracking started or the last call, ids evicted
        meanwhile), both int64 ascending and unique, and start afresh. An id evicted and made
        again is in both (a delta applies its tombstones first). One pass over the row flags."""
        with self._lock:
            if not self._tracking:
                raise RuntimeError(f"table {self._config.name!r} does not track changes (call track_changes first)")
            # One pass over the flags; only the flags found are cleared (eviction clears its own).
            rows = np.flatnonzero(self._dirty[:self._storage.high_water])
            self._dirty[rows] = False
            rows = rows[self._storage.cols["live"][rows]]
            changed = np.sort(self._storage.cols["id"][rows])
            gone = (sorted_unique(np.concatenate(self._tombstones)) if self._tombstones
                    else np.zeros(0, np.int64))
            self._tombstones = []
            return changed.astype(np.int64, copy=False), gone.astype(np.int64, copy=False)

    # -------------------------------------------------------- checkpoints
    def export(self, ids: Any = None) -> TableShard:
        """Every row, keyed by id (ascending), with its optimizer state and metadata; with
        `ids`, only the rows of those ids (those present)."""
        with self._lock:
            if ids is None:
                rows = self._storage.live_rows()
            else:
                rows, _miss = self._index.find(inputs.check_ids(ids), promote=False)
                rows = sorted_unique(rows[rows >= 0]).astype(np.int64, copy=False)
            cols = self._storage.cols
            ids = cols["id"][rows]
            order = np.argsort(ids, kind="stable")
            rows = rows[order]
            names = list(self._optimizer.columns)
            if self._device is None:
                values = cols["value"].take(rows, axis=0)
                state = {name: cols[name].take(rows, axis=0) for name in names}
            else:   # gathered on the device, copied to the host in one transfer
                values, *host = self._device.gather([cols["value"]] + [cols[n] for n in names], rows)
                state = dict(zip(names, host))
            return TableShard(
                ids=ids[order],
                values=values,
                state=state,
                meta={name: cols[name].take(rows) for name in self._meta},
            )

    def import_rows(self, shard: TableShard) -> None:
        """Write the rows of ``shard`` (insert new ids, overwrite present ones).

        Imported rows bypass admission (they were admitted when first made).
        Missing ``last_seen`` defaults to the current step, missing show/click
        to zero; show/click are ignored by tables without eviction scores.
        """
        values, state, meta = self._check_shard(shard)
        ids = shard.ids
        with self._lock:
            rows, miss = self._index.find(ids, promote=False)   # a shard's ids are distinct: none repeats
            if miss.size:
                fresh = self._storage.alloc(miss.size)
                rows[miss] = fresh
                self._storage.cols["id"][fresh] = ids[miss]
                self._index.insert(ids[miss], fresh)
            cols = self._storage.cols
            if self._device is None:
                cols["value"][rows] = values
                for name, array in state.items():
                    cols[name][rows] = array
            else:
                names = list(state)
                self._device.scatter([cols["value"]] + [cols[n] for n in names], rows,
                                     [values] + [np.asarray(state[n], np.float32) for n in names])
            cols["last_seen"][rows] = meta.get("last_seen", self._step)
            for name in self._meta[1:]:
                cols[name][rows] = meta.get(name, 0.0)
            self._mark(rows)

    def _check_shard(self, shard: object) -> Any:
        if not isinstance(shard, TableShard):
            raise TypeError(f"import_rows needs a TableShard, got {type(shard).__name__}")
        n = len(shard)
        values = inputs.check_rows("shard values", shard.values, n, self._dim)
        expected = self._optimizer.columns
        if set(shard.state) != set(expected):
            raise ValueError(f"shard optimizer state {sorted(shard.state)} does not match this table's"
                             f" {self.rule!r} state {sorted(expected)}")
        state = {}
        for name, column in expected.items():
            want = (n,) + column.shape
            array = shard.state[name]
            if array.shape != want or array.dtype.kind != "f":
                raise ValueError(f"shard state {name!r} must be float {want}, got {array.dtype} {array.shape}")
            state[name] = array
        meta = {}
        for name, array in shard.meta.items():
            if name not in _META_DTYPES:
                raise ValueError(f"unknown shard metadata {name!r}; known: {sorted(_META_DTYPES)}")
            if array.shape != (n,) or array.dtype.kind not in "iuf":
                raise ValueError(f"shard meta {name!r} must be numeric ({n},), got {array.dtype} {array.shape}")
            meta[name] = array
        if n > 1:
            ordered = shard.ids if bool((shard.ids[1:] > shard.ids[:-1]).all()) else np.sort(shard.ids)
            if bool((ordered[1:] == ordered[:-1]).any()):
                raise ValueError("shard ids must be unique")
        return values, state, meta
