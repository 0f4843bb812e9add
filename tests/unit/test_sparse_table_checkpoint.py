"""Export / import keyed by id, across pserver counts, and id placement."""
import numpy as np
import pytest

from psjob.foundation.tables import (
    EvictionConfig,
    OptimizerConfig,
    SparseTable,
    TableConfig,
    TableShard,
    concat_shards,
    shard_of,
    split_shard,
)

I64 = np.iinfo(np.int64)
CFG = TableConfig("emb", 5, seed=9, optimizer=OptimizerConfig("adam", lr=0.01),
                  eviction=EvictionConfig(delete_threshold=0.0))
PLACEMENT_IDS = np.array([-2**63, -1, 0, 1, 2, 42, 2**31, 2**63 - 1, 1234567890123456789, -987654321],
                         np.int64)


def _splitmix_shard(i: int, n: int) -> int:
    """The documented placement, in plain Python integers."""
    mask = (1 << 64) - 1
    x = (i & mask) ^ 0x50534A4F42534844
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & mask
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & mask
    x ^= x >> 31
    return x % n


def _trained(ids, seed=0, steps=3):
    rng = np.random.default_rng(seed)
    t = SparseTable(CFG)
    t.lookup(ids)
    for _ in range(steps):
        batch = rng.choice(ids, size=ids.size)
        t.push(batch, rng.standard_normal((batch.size, 5)), clicks=rng.integers(0, 2, batch.size))
        t.end_step()
    return t


def _ids(n=2000, seed=1):
    rng = np.random.default_rng(seed)
    ids = np.unique(rng.integers(I64.min, I64.max, size=n, dtype=np.int64))
    return np.concatenate([ids, [I64.min, I64.max, 0, -1]])


def _assert_same(a: TableShard, b: TableShard):
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_array_equal(a.values, b.values)
    assert set(a.state) == set(b.state) and set(a.meta) == set(b.meta)
    for k in a.state:
        np.testing.assert_array_equal(a.state[k], b.state[k])
    for k in a.meta:
        np.testing.assert_array_equal(a.meta[k], b.meta[k])


@pytest.mark.parametrize("num_shards, expected", [
    (1, [0] * 10),
    (2, [0, 0, 1, 1, 0, 1, 1, 0, 1, 1]),
    (3, [0, 1, 0, 1, 2, 0, 2, 1, 0, 0]),
    (7, [5, 3, 3, 1, 1, 6, 2, 6, 3, 5]),
    (100, [54, 14, 9, 85, 72, 39, 65, 42, 69, 27]),
])
def test_shard_of_places_ids_exactly_as_documented(num_shards, expected):
    assert shard_of(PLACEMENT_IDS, num_shards).tolist() == expected
    assert [_splitmix_shard(int(i), num_shards) for i in PLACEMENT_IDS] == expected


def test_shard_of_spreads_ids_evenly_and_refuses_bad_arguments():
    counts = np.bincount(shard_of(np.arange(60_000), 6), minlength=6)
    assert counts.min() > 9_500 and counts.max() < 10_500
    with pytest.raises(ValueError, match="num_shards"):
        shard_of([1], 0)
    with pytest.raises(TypeError, match="int64"):
        shard_of(np.array([1.5]), 2)


def test_export_lists_every_row_by_ascending_id_with_state_and_metadata():
    ids = _ids()
    shard = _trained(ids).export()
    np.testing.assert_array_equal(shard.ids, np.sort(ids))
    assert shard.values.shape == (ids.size, 5)
    assert set(shard.state) == {"moment1", "moment2", "beta1_pow_acc", "beta2_pow_acc"}
    assert set(shard.meta) == {"last_seen", "show", "click"}
    assert shard.meta["last_seen"].max() == 2 and shard.meta["show"].sum() == 3 * ids.size


def test_import_of_an_export_restores_rows_that_then_train_identically():
    ids = _ids()
    original = _trained(ids)
    restored = SparseTable(CFG)
    restored.tick(original.step)
    restored.import_rows(original.export())
    _assert_same(restored.export(), original.export())
    rng = np.random.default_rng(5)
    batch = rng.choice(ids, size=500)
    grads = rng.standard_normal((500, 5))
    original.push(batch, grads)
    restored.push(batch, grads)
    _assert_same(restored.export(), original.export())


def test_a_table_split_into_three_shards_merges_back_unchanged():
    shard = _trained(_ids()).export()
    parts = split_shard(shard, 3)
    assert sum(len(p) for p in parts) == len(shard) and all(len(p) for p in parts)
    for i, part in enumerate(parts):
        assert (shard_of(part.ids, 3) == i).all()
    _assert_same(concat_shards(parts[::-1]), shard)


def test_a_checkpoint_of_two_pservers_loads_into_three():
    ids = _ids(3000)
    # Two pservers, each trained on its own ids.
    old = []
    for i in range(2):
        mine = ids[shard_of(ids, 2) == i]
        old.append(_trained(mine, seed=i).export())
    whole = concat_shards(old)
    # Three new pservers load their part of every old shard.
    new = [SparseTable(CFG) for _ in range(3)]
    for shard in old:
        for table, part in zip(new, split_shard(shard, 3)):
            table.import_rows(part)
    assert [len(t) for t in new] == [int((shard_of(ids, 3) == i).sum()) for i in range(3)]
    _assert_same(concat_shards([t.export() for t in new]), whole)
    # Lookups through the new placement read the trained rows.
    owner = shard_of(ids, 3)
    for i, table in enumerate(new):
        mine = ids[owner == i]
        expected = whole.values[np.searchsorted(whole.ids, mine)]
        np.testing.assert_array_equal(table.lookup(mine, create=False), expected)


def test_import_overwrites_present_ids_and_adds_new_ones():
    t = SparseTable(CFG)
    t.lookup([1, 2])
    shard = TableShard(ids=np.array([2, 3], np.int64), values=np.full((2, 5), 7.0, np.float32),
                       state={k: np.zeros((2, 5 if k.startswith("moment") else 1), np.float32)
                              for k in ("moment1", "moment2", "beta1_pow_acc", "beta2_pow_acc")})
    t.import_rows(shard)
    assert len(t) == 3
    np.testing.assert_array_equal(t.lookup([2, 3], create=False), np.full((2, 5), 7.0))
    assert t.lookup([1], create=False).any() and not (t.lookup([1], create=False) == 7.0).all()


def test_concatenating_shards_that_share_an_id_is_refused():
    shard = _trained(_ids(100)).export()
    with pytest.raises(ValueError, match="more than one shard"):
        concat_shards([shard, shard.take(np.arange(3))])


def test_a_shard_of_another_optimizer_is_refused_and_the_table_is_unchanged():
    t = _trained(_ids(200))
    before = t.export()
    sgd_shard = SparseTable(TableConfig("emb", 5)).export()
    other = TableShard(ids=np.array([5], np.int64), values=np.zeros((1, 5), np.float32),
                       state={"moment": np.zeros((1, 5), np.float32)})
    twice = TableShard(ids=np.array([5, 5], np.int64), values=np.zeros((2, 5), np.float32),
                       state={k: np.zeros((2,) + v.shape[1:], np.float32) for k, v in before.state.items()})
    with pytest.raises(ValueError, match="optimizer state"):
        t.import_rows(other)
    with pytest.raises(ValueError, match="unique"):
        t.import_rows(twice)
    with pytest.raises(ValueError, match="dim"):
        t.import_rows(TableShard(ids=np.array([5], np.int64), values=np.zeros((1, 4), np.float32)))
    with pytest.raises(TypeError):
        t.import_rows(sgd_shard.values)
    _assert_same(t.export(), before)


def test_rows_saved_under_another_rule_load_with_fresh_state_even_when_column_names_match(tmp_path):
    # adagrad and decayed_adagrad both keep a per-row `moment`, with different meanings.
    from psjob.foundation.checkpoint.tables import import_into, read_rows, save_shard, table_entry
    saved = SparseTable(TableConfig("emb", 5, seed=9, optimizer=OptimizerConfig("adagrad", lr=0.1)))
    ids = np.array([3, -8, 2**40], np.int64)
    saved.lookup(ids)
    saved.push(ids, np.ones((3, 5), np.float32))
    shard = saved.export()
    assert np.all(shard.state["moment"] > 0)
    doc = table_entry(0, 5, "float32", [save_shard(str(tmp_path), "emb", shard, 0, 1, optimizer="adagrad")])
    same_rule = read_rows(str(tmp_path), "emb", doc, 0, 1, optimizer="adagrad")
    np.testing.assert_array_equal(same_rule[0].state["moment"], shard.state["moment"])
    live = SparseTable(TableConfig("emb", 5, seed=9, optimizer=OptimizerConfig("decayed_adagrad", lr=0.1)))
    other_rule = read_rows(str(tmp_path), "emb", doc, 0, 1, optimizer="decayed_adagrad")
    assert other_rule[0].state == {} and "last_seen" in other_rule[0].meta
    assert import_into(live, "emb", other_rule) == 3
    got = live.export()
    order = np.argsort(shard.ids)
    np.testing.assert_array_equal(got.values, shard.values[order])  # the values carry over
    assert np.all(got.state["moment"] == 0)                          # the state starts fresh


def test_change_tracking_reports_created_pushed_and_imported_rows_and_evicted_ids_once():
    table = SparseTable(TableConfig(name="t", dim=4, eviction=EvictionConfig(delete_after_unseen_steps=1)))
    table.lookup(np.arange(10))
    with pytest.raises(RuntimeError, match="does not track changes"):
        table.take_changes()
    table.track_changes()  # from here: the rows made before are not changes
    table.push(np.array([3, 1]), np.ones((2, 4), np.float32))
    table.lookup(np.array([20, 21]))
    table.import_rows(TableShard(ids=np.array([30], np.int64), values=np.ones((1, 4), np.float32),
                                 state=dict(table.export(ids=[1]).state)))
    changed, gone = table.take_changes()
    assert changed.tolist() == [1, 3, 20, 21, 30] and gone.tolist() == []
    assert [a.size for a in table.take_changes()] == [0, 0]  # taken: nothing until the next change
    for _ in range(3):
        table.end_step()
    table.push(np.array([5]), np.ones((1, 4), np.float32))
    evicted = table.evict()
    table.lookup(np.array([7]))  # evicted, then made again: a tombstone and a row
    changed, gone = table.take_changes()
    assert evicted == len(gone) and 5 not in gone and 7 in gone and changed.tolist() == [5, 7]
    np.testing.assert_array_equal(table.export(ids=np.array([7, 5, 99])).ids, [5, 7])
