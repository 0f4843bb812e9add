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
percent) are looked for at displacements 1-3, then 4-15, each in one gather,
but only as far as their home's *reach* (see `_alloc`). Every fourth lookup
with misses, ids found away from home that occur more than once in the batch
are *promoted*: swapped into their home slot, the occupant taking the old
slot when that stays inside the occupant's own window. On a skewed stream
the frequent ids thus settle at home, where the first gather finds them (on
the Zipf benchmark 97.2% of a new batch's ids are at home when it arrives,
against the ~75% of random ids that linear probing keeps at home at load 0.6).
A batch of distinct ids has no repeats to go by; SparseTable asks for no
promotion there (a trainer's uniqued prefetch; in the 1+1 CTR peer run 93%
of the ids such lookups found were at home without it).

Insert: _NEAR rounds; in each, every pending id tries the slot at its current
displacement, writes its row there if free (last writer wins among racing ids
of one batch, checked by reading back), and the losers move on. The few ids
left then take the first free slot of the rest of their window, found for all
of them with one gather (ids choosing one slot: the first keeps it, the others
look again), and ids whose window is full go to the overflow.

Where psjob's C extension is built (psjob.foundation.kernels.native), find and insert run
there on the same arrays instead: each id walks its window once, up to its
home's reach, and inserts (a rehash's too) are plain linear probing, one id
after the other; the overflow, promotion and removal stay here. Both paths
keep the same invariants, so either reads what the other wrote.

Capacity is a power of two and doubles when the load would exceed MAX_LOAD
or the overflow grows past a small fraction of the entries; the new table is
filled in one sorted pass (ids that were at home first, so frequent ids keep
the best slots).
"""
from __future__ import annotations

import numpy as np

from psjob.foundation.kernels import native
from psjob.foundation.tables.storage import aligned_empty

# Fibonacci hashing multiplier (2^64 / golden ratio, odd) and its inverse mod 2^64.
_MUL = np.uint64(0x9E3779B97F4A7C15)
_MUL_INV = np.uint64(pow(0x9E3779B97F4A7C15, -1, 1 << 64))
WINDOW = 16          # max displacement of an id from its home slot
MAX_LOAD = 0.6
_MIN_BITS = 10
_NEAR = 4            # displacements below this are looked at first
_PROMOTE_EVERY = 4   # lookups between promotions (a frequent id returns soon)
_SPILLED = WINDOW    # reach value of a home some id of which is in the overflow
_FREE = -1


def _bits_for(n_entries: int) -> int:
    bits = _MIN_BITS
    while n_entries > MAX_LOAD * (1 << bits):
        bits += 1
    return bits


class IdIndex:
    """Maps unique int64 ids to int64 rows. Not thread-safe; the table serializes."""

    def __init__(self, expected: int = 0) -> None:
        self._size = 0
        self._finds = 0
        self._alloc(_bits_for(expected))

    # ------------------------------------------------------------------ state
    def _alloc(self, bits: int) -> None:
        self._bits = bits
        self._shift = np.uint64(64 - bits)
        n_slots = (1 << bits) + WINDOW
        self._entries = aligned_empty((n_slots, 2), np.int64)
        if native.enabled:   # one pass over the new table (several in numpy)
            native.index_clear(self._entries, self._poison_step())
        else:
            self._entries[:, 0] = self._poison(np.arange(n_slots, dtype=np.int64))
            self._entries[:, 1] = _FREE
        self._flat = self._entries.reshape(-1)       # slot s is flat[2s] (id), flat[2s + 1] (row)
        self._ovf_ids = np.empty(0, np.int64)         # sorted
        self._ovf_rows = np.empty(0, np.int64)
        # reach[h]: the largest displacement any id with home h was placed at
        # (or _SPILLED); never lowered until the next rehash. Lookups of ids
        # not at home scan only that far, so absent ids mostly cost nothing.
        self._reach = np.zeros(n_slots, np.uint8)
        # Cached so stats() may read it from another thread, even mid-rehash.
        self._fixed_nbytes = self._entries.nbytes + self._reach.nbytes

    def _poison_step(self) -> int:
        return (int(_MUL_INV) << int(self._shift)) & ((1 << 64) - 1)

    def _poison(self, slots: np.ndarray) -> np.ndarray:
        """For each slot, a key whose home is half the table away.

        An id reaches slot s only if its home is in [s - WINDOW + 1, s], so no
        lookup can match the poison key of the slot it is looking at. The key
        with home (s + capacity/2) mod capacity is ((s << shift) + 2^63) * MUL^-1
        = s * (MUL^-1 << shift) + 2^63 (mod 2^64; MUL^-1 is odd).
        """
        keys = slots.astype(np.uint64) * np.uint64(self._poison_step())
        keys += np.uint64(1 << 63)
        return keys.view(np.int64)

    def __len__(self) -> int:
        return self._size

    @property
    def capacity(self) -> int:
        return 1 << self._bits

    @property
    def nbytes(self) -> int:
        return self._fixed_nbytes + self._ovf_ids.nbytes + self._ovf_rows.nbytes

    @property
    def overflow_size(self) -> int:
        return int(self._ovf_ids.size)

    def _home(self, ids: np.ndarray) -> np.ndarray:
        h = ids.view(np.uint64) * _MUL               # wraps mod 2^64 by design
        h >>= self._shift
        return h.view(np.int64)

    # ----------------------------------------------------------------- lookup
    def find(self, ids: np.ndarray, *, promote: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, absent)``: the rows of int64 ``ids`` (-1 where absent) and
        the positions of the absent ids. ``rows`` is a new (possibly strided) array."""
        if native.enabled:
            return self._find_native(np.ascontiguousarray(ids, np.int64), promote)
        home = self._home(ids)
        entry = self._entries.take(home, axis=0, mode="clip")
        rows = entry[:, 1]                           # a view of our own buffer: no copy
        miss = np.flatnonzero(entry[:, 0] != ids)
        if miss.size == 0:
            return rows, miss
        mhome = home[miss]
        mrows, mslots = self._find_away(ids[miss], mhome)
        rows[miss] = mrows
        self._finds += 1
        if promote and self._finds % _PROMOTE_EVERY == 0:
            self._promote(mhome, mslots)
        return rows, miss[mrows < 0]

    def _find_native(self, ids: np.ndarray, promote: bool) -> tuple[np.ndarray, np.ndarray]:
        """`find` with the C probe: each id walks its window up to its home's reach once
        (psjob/kernels/_native.c); the overflow and promotion stay here."""
        rows, slots, away = native.index_find(self._entries, self._reach, ids, self._bits, WINDOW)
        if away == 0:
            return rows, np.empty(0, np.intp)
        absent = np.flatnonzero(rows < 0)
        if absent.size and self._ovf_ids.size:
            spilled = absent[self._reach.take(self._home(ids[absent])) == _SPILLED]
            if spilled.size:
                rows[spilled] = self._find_overflow(ids[spilled])
                absent = np.flatnonzero(rows < 0)
        self._finds += 1
        if promote and self._finds % _PROMOTE_EVERY == 0:
            home = self._home(ids)
            found_away = np.flatnonzero((slots >= 0) & (slots != home))
            if found_away.size:
                self._promote(home[found_away], slots[found_away])
        return rows, absent

    def _find_away(self, ids: np.ndarray, home: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, slots)`` of ids that are not at home; -1 where absent (slot
        -1 also for ids in the overflow)."""
        # Displacements 1-3 first: mostly the home's own cache line, already
        # fetched by the first gather. Ids still missing are absent unless
        # their home's reach (the farthest any id of that home was placed)
        # says to look at 4-15 (three more lines) or in the overflow.
        rows, slots = self._scan(ids, home, 1, _NEAR)
        left = np.flatnonzero(slots < 0)
        if left.size == 0:
            return rows, slots
        reach = self._reach.take(home[left])
        far = left[reach >= _NEAR]
        if far.size:
            rows[far], slots[far] = self._scan(ids[far], home[far], _NEAR, WINDOW)
        if self._ovf_ids.size:
            spilled = left[reach == _SPILLED]
            maybe = spilled[slots[spilled] < 0]
            if maybe.size:
                rows[maybe] = self._find_overflow(ids[maybe])
        return rows, slots

    def _scan(self, ids: np.ndarray, home: np.ndarray, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """Look for ids at displacements [start, stop) with one gather."""
        m = ids.size
        # Displacement-major [stop-start, m]: every elementwise step runs
        # along the long id axis (numpy is slow over short trailing axes).
        span = home + np.arange(start, stop)[:, None]
        keys = self._flat.take(2 * span, mode="clip")
        hit = np.flatnonzero(keys == ids)            # an id matches at most one slot
        owner = hit % m
        found = span.reshape(-1).take(hit)
        rows = np.full(m, _FREE, np.int64)
        slots = np.full(m, _FREE, np.int64)
        slots[owner] = found
        rows[owner] = self._flat.take(2 * found + 1)
        return rows, slots

    def _find_overflow(self, ids: np.ndarray) -> np.ndarray:
        pos = np.minimum(np.searchsorted(self._ovf_ids, ids), self._ovf_ids.size - 1)
        return np.where(self._ovf_ids[pos] == ids, self._ovf_rows[pos], _FREE)

    def _promote(self, home: np.ndarray, slots: np.ndarray) -> None:
        """Swap ids found away from home into their home slot (see module doc)."""
        away = np.flatnonzero(slots >= 0)
        if away.size == 0:
            return
        # Only ids seen more than once in this batch: the frequent ones, for
        # which a home slot pays off. Moving every id seen once (mostly the
        # long tail, ~2% of a Zipf batch) would cost more than it saves.
        slots, first, count = np.unique(slots[away], return_index=True, return_counts=True)
        repeated = count > 1
        if not repeated.any():
            return
        slots, home = slots[repeated], home[away[first[repeated]]]
        # Distinct moves touching one slot would clobber each other: drop them.
        touched = np.sort(np.concatenate([home, slots]))
        if touched.size > 1 and bool((touched[1:] == touched[:-1]).any()):
            shared = touched[1:][touched[1:] == touched[:-1]]
            ok = ~(np.isin(home, shared) | np.isin(slots, shared))
            home, slots = home[ok], slots[ok]
        occupant = self._entries.take(home, axis=0)
        occ_home = self._home(np.ascontiguousarray(occupant[:, 0]))
        occ_free = occupant[:, 1] < 0
        # The occupant moves to the old slot: it must stay inside its window.
        ok = occ_free | (slots - occ_home < WINDOW)
        if not ok.all():
            home, slots, occupant, occ_home, occ_free = (
                home[ok], slots[ok], occupant[ok], occ_home[ok], occ_free[ok])
        self._entries[home] = self._entries.take(slots, axis=0)
        if occ_free.any():
            occupant[occ_free, 0] = self._poison(slots[occ_free])
        self._entries[slots] = occupant
        # A free occupant's poison key has a far-away home: maximum.at on its
        # (masked-out) home would be wrong, so only real occupants extend reach.
        moved = np.flatnonzero(~occ_free)
        self._extend_reach(occ_home[moved], slots[moved] - occ_home[moved])

    def _locate(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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
        bits = max(self._bits, _bits_for(self._size + ids.size))     # never shrinks
        if self._ovf_ids.size > 64 + (self._size + ids.size) // 256:
            bits = max(bits, self._bits + 1)         # re-placing at the same size would not help
        if bits != self._bits:
            self._rehash(bits)
        self._place(ids, rows)
        self._size += ids.size

    def _place(self, ids: np.ndarray, rows: np.ndarray) -> None:
        if native.enabled:  # linear probing, one id after the other, in C
            ids, rows = np.ascontiguousarray(ids, np.int64), np.ascontiguousarray(rows, np.int64)
            spilled = native.index_place(self._entries, self._reach, ids, rows, self._bits, WINDOW)
            if spilled.size:
                self._add_overflow(ids[spilled], rows[spilled])
            return
        flat = self._flat
        pend = np.arange(ids.size)
        home = self._home(ids).copy()
        for d in range(_NEAR):                       # round d tries displacement d
            slot = home + d
            free = np.flatnonzero(flat.take(2 * slot + 1) < 0)
            if free.size:
                row_at = 2 * slot[free] + 1
                mine = rows[pend[free]]
                flat[row_at] = mine                  # racing ids: last writer wins
                won = free[flat.take(row_at) == mine]
                flat[2 * slot[won]] = ids[pend[won]]
                # Winners of one round have distinct slots, hence distinct homes.
                winner_home = home[won]
                self._reach[winner_home] = np.maximum(self._reach[winner_home], np.uint8(d))
                keep = np.ones(pend.size, bool)
                keep[won] = False
                pend, home = pend[keep], home[keep]
            if pend.size == 0:
                return
        self._place_far(ids[pend], rows[pend], home)

    def _place_far(self, ids: np.ndarray, rows: np.ndarray, home: np.ndarray) -> None:
        """Place ids whose slots at displacements below _NEAR were all taken.

        They are a few percent of an insert, but one round per displacement
        would cost up to WINDOW - _NEAR more rounds of fixed numpy overhead
        (the longest probe of a batch sets the count). Instead each id takes
        the first free slot of the rest of its window, found with one gather;
        of ids choosing one slot the first keeps it and the others look again;
        ids whose window is full go to the overflow.
        """
        flat = self._flat
        offsets = np.arange(_NEAR, WINDOW)[:, None]    # displacement-major, as in _scan
        while ids.size:
            free = flat.take(2 * (home + offsets) + 1) < 0
            first = free.argmax(axis=0)
            fits = free[first, np.arange(ids.size)]
            if not fits.all():
                self._add_overflow(ids[~fits], rows[~fits])
                ids, rows, home, first = ids[fits], rows[fits], home[fits], first[fits]
            slot = home + _NEAR + first
            _, won = np.unique(slot, return_index=True)
            flat[2 * slot[won]] = ids[won]
            flat[2 * slot[won] + 1] = rows[won]
            # Winners have distinct slots, hence distinct homes (one home, one first free slot).
            self._reach[home[won]] = np.maximum(self._reach[home[won]], (_NEAR + first[won]).astype(np.uint8))
            lost = np.ones(ids.size, bool)
            lost[won] = False
            ids, rows, home = ids[lost], rows[lost], home[lost]

    def _add_overflow(self, ids: np.ndarray, rows: np.ndarray) -> None:
        all_ids = np.concatenate([self._ovf_ids, ids])
        all_rows = np.concatenate([self._ovf_rows, rows])
        order = np.argsort(all_ids, kind="stable")
        self._ovf_ids, self._ovf_rows = all_ids[order], all_rows[order]
        self._reach[self._home(ids)] = _SPILLED

    def _extend_reach(self, home: np.ndarray, displacement: np.ndarray) -> None:
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
        self._entries = self._flat = None  # type: ignore[assignment]  # free the old slots first
        self._alloc(bits)
        self._place_all(ids, rows, displaced)

    def _place_all(self, ids: np.ndarray, rows: np.ndarray, displaced: np.ndarray) -> None:
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
        if native.enabled:  # the same order, placed one id after the other in C: no sort
            order = np.argsort(displaced, kind="stable")
            self._place(ids[order], rows[order])
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
