"""The id -> row map of a sparse table: a vectorized open-addressing hash index.

Why this shape: a pserver maps batches of 64K arbitrary int64 feature ids to
storage rows, in numpy only, so the index must answer a whole batch with a
handful of array operations and no per-id Python loop.

Layout: one int64 array ``entries`` of shape ``[capacity + WINDOW, 2]`` holding
``(id, row)`` pairs (row ``-1`` marks a free slot; 16 bytes per slot, both
halves in one cache line, so a probe is one random memory access). An id's
*home* slot is the top bits of a multiplicative (Fibonacci) hash; it lives in
the first free slot of the window ``[home, home + WINDOW)`` (the array is padded
so windows never wrap), or, in the rare case that the whole window is taken,
in a small sorted *overflow* array searched with ``np.searchsorted``.

Because membership is "somewhere in the window or in overflow", lookups never
stop at a free slot, so deleting is just marking the slot free: no tombstones,
no backward shifting, and freed slots are reused by later inserts.

Lookup is two rounds at most: gather every id's home entry (most ids live
there) and, for the rest, gather their whole windows at once. Inserts place a
batch in at most WINDOW rounds: each round every pending id tries the slot at
its current displacement, writes its row there (last writer wins among ids of
the batch racing for one slot), and those that lost move one slot on.

Capacity is a power of two and doubles (rehashing every live entry) when the
load would exceed MAX_LOAD or the overflow grows beyond a small fraction of
the entries.
"""
from __future__ import annotations

import numpy as np

from psjob.tables.storage import aligned_empty

# Fibonacci hashing multiplier (2^64 / golden ratio, odd) and its inverse mod 2^64.
_MUL = np.uint64(0x9E3779B97F4A7C15)
_MUL_INV = np.uint64(pow(0x9E3779B97F4A7C15, -1, 1 << 64))
WINDOW = 16          # max displacement of an id from its home slot
_NEAR = 4            # displacements 1.._NEAR are checked in one gather (one cache line)
MAX_LOAD = 0.6
_MIN_BITS = 10
_MARK_SHIFT = 3      # one "may be in overflow" flag per 8 home slots
_FREE = -1


def _bits_for(n_entries: int) -> int:
    bits = _MIN_BITS
    while n_entries > MAX_LOAD * (1 << bits):
        bits += 1
    return bits


class IdIndex:
    """Maps unique int64 ids to int64 rows. Not thread-safe; callers serialize."""

    def __init__(self, expected: int = 0):
        self._size = 0
        self._alloc(_bits_for(expected))
        self._ovf_ids = np.empty(0, np.int64)    # sorted
        self._ovf_rows = np.empty(0, np.int64)

    # ----------------------------------------------------------------- state
    def _alloc(self, bits: int) -> None:
        self._bits = bits
        self._shift = np.uint64(64 - bits)
        n_slots = (1 << bits) + WINDOW
        self._entries = aligned_empty((n_slots, 2), np.int64)   # an entry never straddles a line
        self._entries[:, 0] = self._poison(np.arange(n_slots, dtype=np.int64))
        self._entries[:, 1] = _FREE
        self._flat = self._entries.reshape(-1)   # view: slot s is flat[2s], flat[2s+1]
        self._ovf_mark = np.zeros(((1 << bits) >> _MARK_SHIFT) + 1, bool)

    def _poison(self, slots: np.ndarray) -> np.ndarray:
        """Keys for free slots that no lookup passing through them can match.

        A free slot keeps a key whose home is half the table away, so a
        lookup only has to compare keys (not also check the row): an id
        reaches slot s only if its home is in [s - WINDOW + 1, s].
        """
        cap = 1 << self._bits
        target = ((slots + cap // 2) % cap).astype(np.uint64)
        target <<= self._shift
        target *= _MUL_INV                       # inverse of the home hash
        return target.view(np.int64)

    def __len__(self) -> int:
        return self._size

    @property
    def capacity(self) -> int:
        return 1 << self._bits

    @property
    def nbytes(self) -> int:
        return (self._entries.nbytes + self._ovf_mark.nbytes
                + self._ovf_ids.nbytes + self._ovf_rows.nbytes)

    @property
    def overflow_size(self) -> int:
        return int(self._ovf_ids.size)

    def _home(self, ids: np.ndarray) -> np.ndarray:
        h = ids.view(np.uint64) * _MUL       # wraps mod 2^64 by design
        h >>= self._shift
        return h.view(np.int64)

    # ---------------------------------------------------------------- lookup
    def find(self, ids: np.ndarray):
        """``(rows, absent)``: int64 rows of ``ids`` (-1 where absent, a new array)
        and the positions of the absent ids."""
        home = self._home(ids)
        entry = self._entries.take(home, axis=0, mode="clip")
        rows = entry[:, 1].copy()
        miss = np.flatnonzero(entry[:, 0] != ids)
        if miss.size == 0:
            return rows, miss
        mids, mhome = ids[miss], home[miss]
        mrows, mslots = self._find_displaced(mids, mhome, with_slots=True)
        rows[miss] = mrows
        self._promote(mhome, mslots)
        return rows, miss[mrows < 0]

    def _find_displaced(self, ids, home, *, with_slots):
        """Rows (and slots; -1 for overflow) of ids that are not at home."""
        rows, slots = self._scan(ids, home, 1, _NEAR + 1, with_slots)
        far = np.flatnonzero(rows < 0)
        if far.size:
            fids, fhome = ids[far], home[far]
            frows, fslots = self._scan(fids, fhome, _NEAR + 1, WINDOW, with_slots)
            if self._ovf_ids.size:
                # Only ids whose home block ever overflowed can be there.
                maybe = np.flatnonzero((frows < 0) & self._ovf_mark[fhome >> _MARK_SHIFT])
                frows[maybe] = self._find_overflow(fids[maybe])
            rows[far] = frows
            if with_slots:
                slots[far] = fslots
        return rows, slots

    def _scan(self, ids, home, start, stop, with_slots):
        """Look for ids at displacements [start, stop) with one gather.

        Laid out displacement-major ([width, m]) so every elementwise step
        runs along the long id axis, and an id matches at most one slot, so
        the hits are read back from their flat positions (no reduction).
        """
        m = ids.size
        span = home[None, :] + np.arange(start, stop)[:, None]     # [width, m]
        entry = self._entries.take(span, axis=0, mode="clip")       # [width, m, 2]
        hit = np.flatnonzero(entry[:, :, 0] == ids[None, :])
        owner = hit % m
        rows = np.full(m, _FREE, np.int64)
        rows[owner] = entry.reshape(-1).take(2 * hit + 1)
        slots = None
        if with_slots:
            slots = np.full(m, _FREE, np.int64)
            slots[owner] = span.reshape(-1).take(hit)
        return rows, slots

    def _find_overflow(self, ids):
        pos = np.searchsorted(self._ovf_ids, ids)
        pos = np.minimum(pos, self._ovf_ids.size - 1)
        return np.where(self._ovf_ids[pos] == ids, self._ovf_rows[pos], _FREE)

    def _locate(self, ids):
        """(rows, slots) of ids; slot -1 where absent or in the overflow."""
        home = self._home(ids)
        entry = self._entries.take(home, axis=0, mode="clip")
        ok = entry[:, 0] == ids
        rows = np.where(ok, entry[:, 1], _FREE)
        slots = np.where(ok, home, _FREE)
        miss = np.flatnonzero(~ok)
        if miss.size:
            rows[miss], slots[miss] = self._find_displaced(ids[miss], home[miss], with_slots=True)
        return rows, slots

    def _promote(self, home, slots):
        """Move ids just found away from home into their home slot.

        The occupant of the home slot takes the id's old slot when that keeps
        it inside its own window (or when the home slot was free). Lookups
        of a skewed stream thereby settle the frequent ids at home, where the
        first gather finds them. Pure placement change: rows stay the same.
        """
        keep = slots >= 0                                 # not absent, not overflow
        if not keep.any():
            return
        slots, home = slots[keep], home[keep]
        slots, first = np.unique(slots, return_index=True)   # one move per slot
        home = home[first]
        occupant = self._entries.take(home, axis=0)
        occ_free = occupant[:, 1] < 0
        fits = (slots - self._home(occupant[:, 0].copy())) < WINDOW
        ok = occ_free | fits
        # Two moves touching one slot would clobber each other: skip both.
        touched, counts = np.unique(np.concatenate([home[ok], slots[ok]]), return_counts=True)
        clash = touched[counts > 1]
        if clash.size:
            ok &= ~(np.isin(home, clash) | np.isin(slots, clash))
        if not ok.any():
            return
        home, slots, occupant, occ_free = home[ok], slots[ok], occupant[ok], occ_free[ok]
        self._entries[home] = self._entries.take(slots, axis=0)
        occupant[occ_free, 0] = self._poison(slots[occ_free])
        self._entries[slots] = occupant

    # ---------------------------------------------------------------- update
    def insert(self, ids: np.ndarray, rows: np.ndarray) -> None:
        """Add ``ids`` (unique, all absent) with their ``rows``; grows as needed."""
        if ids.size == 0:
            return
        if self._size + ids.size > MAX_LOAD * self.capacity or self._overflow_too_big(ids.size):
            self._rehash(_bits_for(self._size + ids.size))
        self._place(ids, rows)
        self._size += ids.size

    def _overflow_too_big(self, incoming: int) -> bool:
        return self._ovf_ids.size > 64 + (self._size + incoming) // 256

    def _place(self, ids, rows):
        flat = self._flat
        pend = np.arange(ids.size)
        slot = self._home(ids).copy()
        for _ in range(WINDOW):
            free = np.flatnonzero(flat.take(2 * slot + 1) < 0)
            if free.size:
                fs, fp = slot[free], pend[free]
                flat[2 * fs + 1] = rows[fp]                # racing ids: last writer wins
                won = flat.take(2 * fs + 1) == rows[fp]
                flat[2 * fs[won]] = ids[fp[won]]
                keep = np.ones(pend.size, bool)
                keep[free[won]] = False
                pend, slot = pend[keep], slot[keep]
            if pend.size == 0:
                return
            slot += 1
        self._add_overflow(ids[pend], rows[pend])
        self._ovf_mark[self._home(ids[pend]) >> _MARK_SHIFT] = True

    def _add_overflow(self, ids, rows):
        all_ids = np.concatenate([self._ovf_ids, ids])
        all_rows = np.concatenate([self._ovf_rows, rows])
        order = np.argsort(all_ids, kind="stable")
        self._ovf_ids, self._ovf_rows = all_ids[order], all_rows[order]

    def remove(self, ids: np.ndarray) -> np.ndarray:
        """Forget ``ids`` (unique); returns the rows they had (-1 where absent)."""
        rows, slots = self._locate(ids)
        gone = slots[slots >= 0]
        self._flat[2 * gone + 1] = _FREE
        self._flat[2 * gone] = self._poison(gone)
        in_ovf = (rows >= 0) & (slots < 0)
        if in_ovf.any():
            keep = ~np.isin(self._ovf_ids, ids[in_ovf])
            self._ovf_ids, self._ovf_rows = self._ovf_ids[keep], self._ovf_rows[keep]
        self._size -= int(np.count_nonzero(rows >= 0))
        return rows

    def _rehash(self, bits: int) -> None:
        live = self._entries[:, 1] >= 0
        ids = np.concatenate([self._entries[live, 0], self._ovf_ids])
        rows = np.concatenate([self._entries[live, 1], self._ovf_rows])
        del live
        self._entries = self._flat = None        # free the old slots before allocating
        self._alloc(bits)
        self._ovf_ids = np.empty(0, np.int64)
        self._ovf_rows = np.empty(0, np.int64)
        self._place(ids, rows)
