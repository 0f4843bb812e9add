"""The id -> row hash index of sparse tables, checked against a dict.

Every test runs twice: with the C probe and insert (psjob/kernels/_native.c) and with
the numpy ones, which stay the fallback where the extension is not built.
"""
import numpy as np
import pytest

from psjob.foundation.kernels import native
from psjob.foundation.tables import index as index_mod
from psjob.foundation.tables.index import WINDOW, IdIndex

I64 = np.iinfo(np.int64)


@pytest.fixture(autouse=True, params=["C", "numpy"])
def probe(request, monkeypatch):
    monkeypatch.setattr(native, "enabled", request.param == "C" and native.built())
    return request.param


def _same_home_ids(index: IdIndex, home: int, count: int) -> np.ndarray:
    """Distinct ids whose home slot is ``home`` (built by inverting the hash)."""
    shift = 64 - index._bits
    low = np.arange(1, count + 1, dtype=np.uint64) * np.uint64(0x1000193)   # distinct low bits
    h = (np.uint64(home) << np.uint64(shift)) | (low & np.uint64((1 << shift) - 1))
    ids = (h * index_mod._MUL_INV).view(np.int64)
    assert (index._home(ids) == home).all()
    return ids


def _check(index: IdIndex, ref: dict, ids: np.ndarray) -> None:
    rows, absent = index.find(ids)
    expected = np.array([ref.get(i, -1) for i in ids.tolist()], np.int64)
    np.testing.assert_array_equal(rows, expected)
    np.testing.assert_array_equal(absent, np.flatnonzero(expected < 0))


def test_ids_at_the_int64_extremes_map_to_their_own_rows():
    index = IdIndex()
    ids = np.array([I64.min, I64.min + 1, -1, 0, 1, I64.max - 1, I64.max], np.int64)
    index.insert(ids, np.arange(ids.size, dtype=np.int64))
    rows, absent = index.find(ids[::-1].copy())
    np.testing.assert_array_equal(rows, np.arange(ids.size)[::-1])
    assert absent.size == 0
    rows, absent = index.find(np.array([2, -2], np.int64))
    np.testing.assert_array_equal(rows, [-1, -1])
    np.testing.assert_array_equal(absent, [0, 1])


def test_random_inserts_removals_and_lookups_agree_with_a_dict():
    rng = np.random.default_rng(7)
    index, ref, next_row = IdIndex(), {}, 0
    pool = rng.integers(I64.min, I64.max, size=6000, dtype=np.int64, endpoint=True)
    for step in range(120):
        batch = rng.choice(pool, size=int(rng.integers(1, 800)))
        if step % 3 == 0:
            new = np.unique(batch[[b not in ref for b in batch.tolist()]])
            rows = np.arange(next_row, next_row + new.size, dtype=np.int64)
            next_row += new.size
            index.insert(new, rows)
            ref.update(zip(new.tolist(), rows.tolist()))
        elif step % 3 == 1:
            gone = np.unique(batch)
            removed = index.remove(gone)
            np.testing.assert_array_equal(removed, [ref.pop(g, -1) for g in gone.tolist()])
        _check(index, ref, batch)
        assert len(index) == len(ref)
    _check(index, ref, pool)


def test_ids_crowding_one_home_slot_spill_into_the_overflow_and_stay_findable():
    index = IdIndex(expected=5000)
    ids = _same_home_ids(index, home=100, count=WINDOW + 40)
    index.insert(ids, np.arange(ids.size, dtype=np.int64))
    assert index.overflow_size == 40
    ref = dict(zip(ids.tolist(), range(ids.size)))
    _check(index, ref, np.concatenate([ids, ids[::-1], np.array([5, 6], np.int64)]))
    gone = ids[::3].copy()
    index.remove(gone)
    for g in gone.tolist():
        del ref[g]
    _check(index, ref, ids)


def test_crowded_neighbouring_homes_racing_for_far_slots_each_get_their_own():
    # Homes 200 and 203, 9 ids each, in one insert: past the first rounds both
    # homes' ids want the same free slots (203's window starts inside 200's).
    index = IdIndex(expected=5000)
    ids = np.concatenate([_same_home_ids(index, home=200, count=9), _same_home_ids(index, home=203, count=9)])
    index.insert(ids, np.arange(ids.size, dtype=np.int64))
    assert index.overflow_size == 0
    slots = np.flatnonzero(index._entries[:, 1] >= 0)
    assert slots.size == ids.size and (slots >= 200).all() and (slots < 203 + WINDOW).all()
    ref = dict(zip(ids.tolist(), range(ids.size)))
    _check(index, ref, np.concatenate([ids, ids[::-1]]))
    more = _same_home_ids(index, home=203, count=9 + WINDOW)[9:]   # 203's window fills: the rest spill
    index.insert(more, np.arange(ids.size, ids.size + more.size, dtype=np.int64))
    ref.update(zip(more.tolist(), range(ids.size, ids.size + more.size)))
    assert index.overflow_size > 0
    _check(index, ref, np.concatenate([ids, more]))


def test_lookups_move_ids_repeated_in_a_batch_home_without_changing_any_answer():
    index = IdIndex(expected=5000)
    ids = _same_home_ids(index, home=7, count=6)
    index.insert(ids, np.arange(6, dtype=np.int64))
    away = int(np.flatnonzero(ids != index._entries[7, 0])[-1])      # one that is not at home
    for _ in range(2 * index_mod._PROMOTE_EVERY):       # once per batch: stays where it is
        rows, _ = index.find(ids[away:away + 1])
        np.testing.assert_array_equal(rows, [away])
    assert index._entries[7, 0] != ids[away]
    for _ in range(index_mod._PROMOTE_EVERY):            # repeated in batches: moves home
        rows, _ = index.find(np.repeat(ids[away:away + 1], 5))
        np.testing.assert_array_equal(rows, [away] * 5)
    assert index._entries[7, 0] == ids[away]
    _check(index, dict(zip(ids.tolist(), range(6))), ids)


def test_freed_slots_are_reused_and_growth_keeps_every_entry():
    rng = np.random.default_rng(3)
    index = IdIndex()
    ids = np.unique(rng.integers(I64.min, I64.max, size=3000, dtype=np.int64))
    index.insert(ids, np.arange(ids.size, dtype=np.int64))
    capacity = index.capacity
    index.remove(ids[:1000])
    fresh = np.unique(rng.integers(I64.min, I64.max, size=1000, dtype=np.int64))
    fresh = fresh[~np.isin(fresh, ids)]
    index.insert(fresh, np.arange(fresh.size, dtype=np.int64) + 10_000)
    assert index.capacity == capacity          # the freed slots took the new ids
    more = np.unique(rng.integers(I64.min, I64.max, size=20000, dtype=np.int64))
    more = more[~np.isin(more, np.concatenate([ids, fresh]))]
    index.insert(more, np.arange(more.size, dtype=np.int64) + 100_000)
    assert index.capacity > capacity
    ref = dict(zip(ids[1000:].tolist(), range(1000, ids.size)))
    ref.update(zip(fresh.tolist(), range(10_000, 10_000 + fresh.size)))
    ref.update(zip(more.tolist(), range(100_000, 100_000 + more.size)))
    _check(index, ref, np.concatenate([ids, fresh, more]))


@pytest.mark.parametrize("load", [0.3, index_mod.MAX_LOAD])
def test_most_ids_of_a_random_set_are_found_at_home(load):
    rng = np.random.default_rng(5)
    index = IdIndex(expected=4096)
    n = int(load * index.capacity)
    ids = np.unique(rng.integers(I64.min, I64.max, size=n, dtype=np.int64))
    index.insert(ids, np.arange(ids.size, dtype=np.int64))
    at_home = index._entries.take(index._home(ids), axis=0)[:, 0] == ids
    # Linear probing keeps at most (1 - e^-a)/a of the ids at home.
    assert at_home.mean() > 0.9 * (1 - np.exp(-load)) / load


def test_a_large_overflow_makes_the_index_grow_on_the_next_insert():
    index = IdIndex()
    crowd = _same_home_ids(index, home=3, count=WINDOW + 100)
    index.insert(crowd, np.arange(crowd.size, dtype=np.int64))
    assert index.overflow_size == 100
    capacity = index.capacity
    index.insert(np.array([12345], np.int64), np.array([999], np.int64))
    assert index.capacity == 2 * capacity
    ref = dict(zip(crowd.tolist(), range(crowd.size)))
    ref[12345] = 999
    _check(index, ref, np.concatenate([crowd, [12345, 54321]]))


def test_an_index_filled_by_either_path_answers_the_other(monkeypatch, probe):
    # The C insert and the numpy one keep the same invariants (window, reach, overflow),
    # so a table may switch paths (PSJOB_NATIVE_KERNELS) between a save and a load.
    rng = np.random.default_rng(9)
    index = IdIndex()
    crowd = _same_home_ids(index, home=11, count=WINDOW + 5)      # some in the overflow
    spread = np.unique(rng.integers(I64.min, I64.max, size=30_000, dtype=np.int64))
    spread = spread[~np.isin(spread, crowd)]
    ids = np.concatenate([crowd, spread])
    index.insert(crowd, np.arange(crowd.size, dtype=np.int64))
    index.insert(spread, np.arange(crowd.size, ids.size, dtype=np.int64))   # grows: a rehash
    ref = dict(zip(ids.tolist(), range(ids.size)))
    absent = np.array([1, 2, 3], np.int64)
    absent = absent[~np.isin(absent, ids)]
    for enabled in (True, False):
        monkeypatch.setattr(native, "enabled", enabled and native.built())
        _check(index, ref, np.concatenate([ids, absent, ids[::7]]))
