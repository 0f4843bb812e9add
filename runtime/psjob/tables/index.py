"""The id -> row map of a sparse table: a vectorized open-addressing hash index.

Why this shape: a pserver maps batches of 64K arbitrary int64 feature ids to
storage rows in numpy only, so a whole batch must be answered by a handful of
array operations, with no per-id Python loop.

Layout: one int64 array ``entries[capacity + WINDOW, 2]`` of ``(id, row)``
pairs, 16 bytes, cache-line aligned, so one probe is one memory access. An
id's *home* slot is the top bits of a Fibonacci hash ``id * 0x9E37...``; the id
lives in the first free slot of ``[home, home + WINDOW)`` (the array is padded,
windows never wrap) or, when that whole window is taken (about 0.2% of ids at
the maximum load), in a sorted *overflow* array searched with searchsorted.

A free slot has row -1 and a *poison* key: one whose home is half the table
away, so no lookup passing through the slot can match it. Lookups therefore
compare keys only, and they never stop at a free slot (membership is "in the
window or in the overflow"), so deleting is just freeing the slot: no
tombstones, no backward shifts, and freed slots are reused by inserts.

Lookup: one gather of every id's home entry; the ids not found there (a few
percent) get their whole window gathered at once. Ids found away from home
are then *promoted*: swapped into their home slot, the occupant taking the old
slot when that stays inside the occupant's own window. On a skewed stream the
frequent ids thus settle at home, where the first gather finds them (on the
Zipf benchmark ~99.8% of lookups are answered by the first gather).

Insert: at most WINDOW rounds; in each, every pending id tries the slot at its
current displacement, writes its row there if free (last writer wins among
racing ids of one batch, checked by reading back), and the losers move on.

Capacity is a power of two and doubles when the load would exceed MAX_LOAD
or the overflow grows past a small fraction of the entries; the new table is
filled in one sorted pass (ids that were at home first, so frequent ids keep
the best slots).
"""
from __future__ import annotations

import numpy as np

from psjob.tables.storage import aligned_empty

# Fibonacci hashing multiplier (2^64 / golden ratio, odd) and its inverse mod 2^64.
_MUL = np.uint64(0x9E3779B97F4A7C15)
_MUL_INV = np.uint64(pow(0x9E3779B97F4A7C15, -1, 1 << 64))
WINDOW = 16          # max displacement of an id from its home slot
MAX_LOAD = 0.6
_MIN_BITS = 10
_NEAR = 4            # ids whose home's reach is below this are scanned over 3 slots only
_SPILLED = WINDOW    # reach value of a home some id of which is in the overflow
_FREE = -1


def _bits_for(n_entries: int) -> int:
    bits = _MIN_BITS
    while n_entries > MAX_LOAD * (1 << bits):
        bits += 1
    return bits


class IdIndex:
    """Maps unique int64 ids to int64 rows. Not thread-safe; the table serializes."""

    def __init__(self, expected: int = 0):
        self._size = 0
        self._alloc(_bits_for(expected))

    # ------------------------------------------------------------------ state
    def _alloc(self, bits: int) -> None:
        self._bits = bits
        self._shift = np.uint64(64 - bits)
        n_slots = (1 << bits) + WINDOW
        self._entries = aligned_empty((n_slots, 2), np.int64)
        self._entries[:, 0] = self._poison(np.arange(n_slots, dtype=np.int64))
        self._entries[:, 1] = _FREE
        self._flat = self._entries.reshape(-1)       # slot s is flat[2s] (id), flat[2s + 1] (row)
        self._ovf_ids = np.empty(0, np.int64)         # sorted
        self._ovf_rows = np.empty(0, np.int64)
        # reach[h]: the largest displacement any id with home h was placed at
        # (or _SPILLED); never lowered until the next rehash. Lookups of ids
        # not at home scan only that far, so absent ids mostly cost nothing.
        self._reach = np.zeros(n_slots, np.uint8)

    def _poison(self, slots: np.ndarray) -> np.ndarray:
        """For each slot, a key whose home is half the table away.

        An id reaches slot s only if its home is in [s - WINDOW + 1, s], so no
        lookup can match the poison key of the slot it is looking at. The key
        with home (s + capacity/2) mod capacity is ((s << shift) + 2^63) * MUL^-1
        = s * (MUL^-1 << shift) + 2^63 (mod 2^64; MUL^-1 is odd).
        """
        step = np.uint64((int(_MUL_INV) << int(self._shift)) & ((1 << 64) - 1))
        keys = slots.astype(np.uint64) * step
        keys += np.uint64(1 << 63)
        return keys.view(np.int64)

    def __len__(self) -> int:
        return self._size

    @property
    def capacity(self) -> int:
        return 1 << self._bits

    @property
    def nbytes(self) -> int:
        return (self._entries.nbytes + self._reach.nbytes
                + self._ovf_ids.nbytes + self._ovf_rows.nbytes)

    @property
    def overflow_size(self) -> int:
        return int(self._ovf_ids.size)

    def _home(self, ids: np.ndarray) -> np.ndarray:
        h = ids.view(np.uint64) * _MUL               # wraps mod 2^64 by design
        h >>= self._shift
        return h.view(np.int64)

    # ----------------------------------------------------------------- lookup
    def find(self, ids: np.ndarray, *, promote: bool = True):
        """``(rows, absent)``: the rows of int64 ``ids`` (-1 where absent) and
        the positions of the absent ids. ``rows`` is a new (possibly strided) array."""
        home = self._home(ids)
        entry = self._entries.take(home, axis=0, mode="clip")
        rows = entry[:, 1]                           # a view of our own buffer: no copy
        miss = np.flatnonzero(entry[:, 0] != ids)
        if miss.size == 0:
            return rows, miss
        mhome = home[miss]
        mrows, mslots = self._find_away(ids[miss], mhome)
        rows[miss] = mrows
        if promote:
            self._promote(mhome, mslots)
        return rows, miss[mrows < 0]

    def _find_away(self, ids, home):
        """``(rows, slots)`` of ids that are not at home; -1 where absent (slot
        -1 also for ids in the overflow)."""
        m = ids.size
        rows = np.full(m, _FREE, np.int64)
        slots = np.full(m, _FREE, np.int64)
        reach = self._reach.take(home)
        for sel, stop in ((np.flatnonzero((reach > 0) & (reach < _NEAR)), _NEAR),
                          (np.flatnonzero(reach >= _NEAR), WINDOW)):
            if sel.size:
                rows[sel], slots[sel] = self._scan(ids[sel], home[sel], stop)
        if self._ovf_ids.size:
            maybe = np.flatnonzero((reach == _SPILLED) & (slots < 0))
            if maybe.size:
                rows[maybe] = self._find_overflow(ids[maybe])
        return rows, slots

    def _scan(self, ids, home, stop):
        """Look for ids at displacements [1, stop) with one gather."""
        m = ids.size
        # Displacement-major [stop-1, m]: every elementwise step runs along
        # the long id axis (numpy is slow over short trailing axes).
        span = home[None, :] + np.arange(1, stop)[:, None]
        keys = self._flat.take(2 * span, mode="clip")
        hit = np.flatnonzero(keys == ids[None, :])   # an id matches at most one slot
        owner = hit % m
        slots = np.full(m, _FREE, np.int64)
        slots[owner] = span.reshape(-1).take(hit)
        rows = np.full(m, _FREE, np.int64)
        rows[owner] = self._flat.take(2 * slots[owner] + 1)
        return rows, slots

    def _find_overflow(self, ids):
        pos = np.minimum(np.searchsorted(self._ovf_ids, ids), self._ovf_ids.size - 1)
        return np.where(self._ovf_ids[pos] == ids, self._ovf_rows[pos], _FREE)

    def _promote(self, home, slots):
        """Swap ids found away from home into their home slot (see module doc)."""
        away = np.flatnonzero(slots >= 0)
        if away.size == 0:
            return
        slots, first = np.unique(slots[away], return_index=True)   # an id may repeat in a batch
        home = home[away[first]]
        occupant = self._entries.take(home, axis=0)
        occ_free = occupant[:, 1] < 0
        occ_home = self._home(np.ascontiguousarray(occupant[:, 0]))
        ok = occ_free | (slots - occ_home < WINDOW)
        # Moves sharing a slot would clobber each other: drop them all (rare).
        touched, counts = np.unique(np.concatenate([home[ok], slots[ok]]), return_counts=True)
        if counts.size and counts.max() > 1:
            clash = touched[counts > 1]
            ok &= ~(np.isin(home, clash) | np.isin(slots, clash))
        if not ok.all():
            home, slots, occupant, occ_free, occ_home = (
                home[ok], slots[ok], occupant[ok], occ_free[ok], occ_home[ok])
        moved = ~occ_free
        self._extend_reach(occ_home[moved], slots[moved] - occ_home[moved])
        self._entries[home] = self._entries.take(slots, axis=0)
        occupant[occ_free, 0] = self._poison(slots[occ_free])
        self._entries[slots] = occupant

    def _locate(self, ids):
        """``(rows, slots)``: slot -1 for ids absent or held in the overflow."""
        home = self._home(ids)
        entry = self._entries.take(home, axis=0, mode="clip")
        at_home = entry[:, 0] == ids
        rows = np.where(at_home, entry[:, 1], _FREE)
        slots = np.where(at_home, home, _FREE)
        miss = np.flatnonzero(~at_home)
        if miss.size:
            rows[miss], slots[miss] = self._find_away(ids[miss], home[miss])
        return rows, slots

    # ----------------------------------------------------------------- update
    def insert(self, ids: np.ndarray, rows: np.ndarray) -> None:
        """Add ``ids`` (unique, all absent) with their ``rows``; grows as needed."""
        if ids.size == 0:
            return
        if (self._size + ids.size > MAX_LOAD * self.capacity
                or self._ovf_ids.size > 64 + (self._size + ids.size) // 256):
            self._rehash(_bits_for(self._size + ids.size))
        self._place(ids, rows)
        self._size += ids.size

    def _place(self, ids, rows):
        flat = self._flat
        pend = np.arange(ids.size)
        home = self._home(ids).copy()
        slot = home.copy()
        for _ in range(WINDOW):
            free = np.flatnonzero(flat.take(2 * slot + 1) < 0)
            if free.size:
                fs, fp = slot[free], pend[free]
                flat[2 * fs + 1] = rows[fp]                # racing ids: last writer wins
                won = flat.take(2 * fs + 1) == rows[fp]
                flat[2 * fs[won]] = ids[fp[won]]
                self._extend_reach(home[fp[won]], fs[won] - home[fp[won]])
                keep = np.ones(pend.size, bool)
                keep[free[won]] = False
                pend, slot = pend[keep], slot[keep]
            if pend.size == 0:
                return
            slot += 1
        self._add_overflow(ids[pend], rows[pend])

    def _add_overflow(self, ids, rows):
        all_ids = np.concatenate([self._ovf_ids, ids])
        all_rows = np.concatenate([self._ovf_rows, rows])
        order = np.argsort(all_ids, kind="stable")
        self._ovf_ids, self._ovf_rows = all_ids[order], all_rows[order]
        self._reach[self._home(ids)] = _SPILLED

    def _extend_reach(self, home, displacement):
        np.maximum.at(self._reach, home, displacement.astype(np.uint8))

    def remove(self, ids: np.ndarray) -> np.ndarray:
        """Forget ``ids`` (unique); returns the rows they had (-1 where absent)."""
        rows, slots = self._locate(ids)
        gone = slots[slots >= 0]
        self._flat[2 * gone + 1] = _FREE
        self._flat[2 * gone] = self._poison(gone)
        in_overflow = (rows >= 0) & (slots < 0)
        if in_overflow.any():
            keep = ~np.isin(self._ovf_ids, ids[in_overflow])
            self._ovf_ids, self._ovf_rows = self._ovf_ids[keep], self._ovf_rows[keep]
        self._size -= int(np.count_nonzero(rows >= 0))
        return rows

    def _rehash(self, bits: int) -> None:
        used = np.flatnonzero(self._entries[:, 1] >= 0)
        ids, rows = self._entries[used, 0], self._entries[used, 1]
        displaced = self._home(ids) != used
        ids = np.concatenate([ids, self._ovf_ids])
        rows = np.concatenate([rows, self._ovf_rows])
        displaced = np.concatenate([displaced, np.ones(self._ovf_ids.size, bool)])
        del used
        self._entries = self._flat = None            # free the old slots first
        self._alloc(bits)
        self._place_all(ids, rows, displaced)

    def _place_all(self, ids, rows, displaced):
        """Place every id into the empty table in one pass (no rounds).

        Sorting by (home, displaced, position) and giving the i-th id slot
        ``i + max(home_j - j for j <= i)`` is exactly linear probing in that
        order; ids that were at home in the old table go first in their run,
        so frequent ids keep home slots. Ids pushed beyond their window leave
        their slot free and go to the overflow.
        """
        n = ids.size
        if n == 0:
            return
        if n >= 1 << 32 or self._bits > 30:          # the packed sort key would not fit
            self._place(ids, rows)
            return
        key = self._home(ids) << 33
        key |= displaced.astype(np.int64) << 32
        key |= np.arange(n, dtype=np.int64)
        key.sort()
        home = key >> 33
        order = key & 0xFFFFFFFF
        del key
        base = np.arange(n, dtype=np.int64)
        slot = np.maximum.accumulate(home - base) + base
        fits = slot - home < WINDOW
        if not fits.all():
            spill = order[~fits]
            slot, order, home = slot[fits], order[fits], home[fits]
            self._add_overflow(ids[spill], rows[spill])
        self._extend_reach(home, slot - home)
        self._flat[2 * slot] = ids[order]
        self._flat[2 * slot + 1] = rows[order]
