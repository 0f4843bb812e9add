"""SparseTable lookups: rows created on first use, deterministic initial values."""
import numpy as np
import pytest

from psjob.foundation.tables import InitializerConfig, OptimizerConfig, SparseTable, TableConfig, shard_of
from psjob.foundation.tables.storage import Column, RowStorage

I64 = np.iinfo(np.int64)
EXTREMES = np.array([I64.min, I64.min + 1, -(2**40), -1, 0, 1, 2**53 + 1, I64.max - 1, I64.max], np.int64)


def table(dim=8, **kw):
    return SparseTable(TableConfig("emb", dim, **kw))


def test_ids_at_the_int64_extremes_get_distinct_rows_that_persist():
    t = table()
    first = t.lookup(EXTREMES)
    assert first.shape == (EXTREMES.size, 8) and first.dtype == np.float32
    assert np.unique(first, axis=0).shape[0] == EXTREMES.size
    np.testing.assert_array_equal(t.lookup(EXTREMES[::-1]), first[::-1])
    assert len(t) == EXTREMES.size


def test_repeated_ids_in_one_batch_create_one_row_and_read_the_same_values():
    t = table()
    out = t.lookup([5, 5, -5, 5])
    np.testing.assert_array_equal(out[0], out[1])
    np.testing.assert_array_equal(out[0], out[3])
    assert len(t) == 2
    s = t.stats()
    assert (s.admitted, s.misses, s.hits) == (2, 4, 0)
    t.lookup([5, -5])
    assert (t.stats().hits, t.stats().misses) == (2, 4)


def test_lookup_without_create_reads_zeros_and_stores_nothing():
    t = table()
    stored = t.lookup([1])
    out = t.lookup([1, 2], create=False)
    np.testing.assert_array_equal(out[0], stored[0])
    np.testing.assert_array_equal(out[1], np.zeros(8, np.float32))
    assert len(t) == 1 and t.stats().admitted == 1


def test_the_returned_rows_belong_to_the_caller():
    t = table()
    out = t.lookup([3])
    saved = out.copy()
    out[:] = 99.0
    np.testing.assert_array_equal(t.lookup([3]), saved)


def test_initial_rows_do_not_depend_on_arrival_order_batching_or_shard_count():
    rng = np.random.default_rng(0)
    ids = np.unique(rng.integers(I64.min, I64.max, size=3000, dtype=np.int64))
    ids = np.concatenate([ids, EXTREMES])
    cfg = TableConfig("emb", 8, seed=11, initializer=InitializerConfig("truncated_normal", std=0.5))
    reference = SparseTable(cfg).lookup(ids)
    # Reverse order, small batches, on one table.
    one = SparseTable(cfg)
    for chunk in np.array_split(ids[::-1], 17):
        one.lookup(chunk)
    np.testing.assert_array_equal(one.lookup(ids, create=False), reference)
    # Spread over 3 and over 5 pservers by shard_of, each shard fed in shuffled order.
    for shards in (3, 5):
        owner = shard_of(ids, shards)
        tables = [SparseTable(cfg) for _ in range(shards)]
        for i, t in enumerate(tables):
            mine = ids[owner == i]
            t.lookup(mine[rng.permutation(mine.size)])
        got = np.empty_like(reference)
        for i, t in enumerate(tables):
            got[owner == i] = t.lookup(ids[owner == i], create=False)
        np.testing.assert_array_equal(got, reference)


def test_seed_and_table_name_change_the_initial_rows():
    ids = np.arange(50, dtype=np.int64)
    base = SparseTable(TableConfig("a", 4, seed=1)).lookup(ids)
    assert not np.array_equal(base, SparseTable(TableConfig("a", 4, seed=2)).lookup(ids))
    assert not np.array_equal(base, SparseTable(TableConfig("b", 4, seed=1)).lookup(ids))
    np.testing.assert_array_equal(base, SparseTable(TableConfig("a", 4, seed=1)).lookup(ids))


@pytest.mark.parametrize("init, check", [
    (InitializerConfig("uniform", low=-0.5, high=0.25),
     lambda v: v.min() >= -0.5 and v.max() < 0.25 and abs(v.mean() + 0.125) < 0.01),
    (InitializerConfig("normal", mean=1.0, std=2.0),
     lambda v: abs(v.mean() - 1.0) < 0.03 and abs(v.std() - 2.0) < 0.03),
    (InitializerConfig("truncated_normal", mean=0.0, std=1.0),
     lambda v: np.abs(v).max() <= 2.0 and abs(v.std() - 0.88) < 0.02),
    (InitializerConfig("constant", value=0.75), lambda v: (v == 0.75).all()),
])
def test_each_initializer_draws_from_its_distribution(init, check):
    values = SparseTable(TableConfig("emb", 16, initializer=init)).lookup(np.arange(-8000, 8000))
    assert check(values.astype(np.float64))


def test_initial_columns_are_not_correlated():
    values = SparseTable(TableConfig("emb", 4, initializer=InitializerConfig("normal", std=1.0))).lookup(
        np.arange(20000))
    corr = np.corrcoef(values.T.astype(np.float64))
    assert np.abs(corr - np.eye(4)).max() < 0.05


def test_storage_grows_past_its_initial_capacity_keeping_every_row():
    t = SparseTable(TableConfig("emb", 4, initial_capacity=16))
    ids = np.arange(-3000, 3000, dtype=np.int64) * 7919
    first = np.concatenate([t.lookup(chunk) for chunk in np.array_split(ids, 30)])
    np.testing.assert_array_equal(t.lookup(ids), first)
    assert t.stats().capacity >= ids.size and len(t) == ids.size


def test_large_columns_grow_where_they_lie_and_a_held_view_makes_them_copy_instead():
    """A column past 1 MiB is a mapping of its own that grows in place (its pages move, the
    data stays, the mapping object is the same); while a view of it is held elsewhere the
    mapping cannot move, so the column is copied and the held view stays readable."""
    storage = RowStorage({"value": Column(np.dtype(np.float32), (16,))}, initial_capacity=1 << 14)
    rows = storage.alloc(1 << 14)
    storage.cols["value"][rows] = np.arange(rows.size * 16, dtype=np.float32).reshape(-1, 16)
    before = storage.cols["value"].copy()
    mapping = storage._maps["value"]
    more = storage.alloc(5)   # past the capacity: doubled
    assert storage.capacity == 1 << 15 and storage._maps["value"] is mapping
    np.testing.assert_array_equal(storage.cols["value"][rows], before)
    held = storage.cols["value"]
    storage.cols["value"][more] = -1.0
    storage.alloc(1 << 15)    # doubled again, with `held` still alive: copied
    assert storage.capacity == 1 << 16 and storage._maps["value"] is not mapping
    np.testing.assert_array_equal(storage.cols["value"][rows], before)
    np.testing.assert_array_equal(held[rows], before)   # the old mapping is still there for it
    assert (storage.cols["value"][more] == -1.0).all()


def test_a_column_moved_to_a_device_lets_its_host_mapping_go():
    from psjob.foundation.tables.device import DeviceColumns
    storage = RowStorage({"value": Column(np.dtype(np.float32), (16,))}, initial_capacity=1 << 15)
    storage.alloc(10)
    assert "value" in storage._maps
    storage.place_on(DeviceColumns(np), ["value"])   # numpy stands in for the device module
    assert "value" not in storage._maps
    storage.alloc(1 << 15)   # growth of a device column: the device's copy, no host mapping
    assert storage.capacity == 1 << 16 and "value" not in storage._maps


def test_stats_report_rows_and_a_resident_size_per_row():
    t = SparseTable(TableConfig("emb", 16, optimizer=OptimizerConfig("adagrad")))
    t.lookup(np.arange(50_000))
    s = t.stats()
    assert s.rows == 50_000 and s.admitted == 50_000 and s.rejected == 0 and s.evicted == 0
    raw = 8 + 64 + 64
    assert raw <= s.bytes / s.rows <= 2 * raw



def test_lookups_with_repeats_move_the_repeated_ids_home_and_uniqued_lookups_move_nothing():
    # A uniqued (ascending) batch holds none of the repeats promotion looks for, so the
    # table skips promotion there; a batch with repeats still moves its repeated ids home.
    from psjob.foundation.tables import index as index_mod
    t = table(dim=4)
    ids = np.unique(np.random.default_rng(3).integers(I64.min, I64.max, size=3000, dtype=np.int64))
    first = t.lookup(ids)
    index = t._index
    layout = index._entries.copy()
    for _ in range(2 * index_mod._PROMOTE_EVERY):
        np.testing.assert_array_equal(t.lookup(ids), first)
    np.testing.assert_array_equal(index._entries, layout)

    away = np.flatnonzero(index._entries[index._home(ids), 0] != ids)
    assert away.size > 100                   # at this load many ids live away from home
    batch = np.concatenate([ids, ids[away]])  # the away ids twice, the others once
    for _ in range(index_mod._PROMOTE_EVERY):
        np.testing.assert_array_equal(t.lookup(batch), first[np.concatenate([np.arange(ids.size), away])])
    moved_home = index._entries[index._home(ids[away]), 0] == ids[away]
    assert moved_home.sum() > away.size // 2
