"""Admission (count, probability) and eviction (unseen steps, show/click score)."""
import numpy as np
import pytest

from psjob.foundation.tables import (
    AdmissionConfig,
    EvictionConfig,
    InitializerConfig,
    OptimizerConfig,
    SparseTable,
    TableConfig,
)


def counted(n, **kw):
    return SparseTable(TableConfig("emb", 4, admission=AdmissionConfig(min_count=n), **kw))


def test_an_id_gets_a_row_on_its_nth_sighting_and_reads_zeros_before():
    t = counted(3)
    for _ in range(2):
        np.testing.assert_array_equal(t.lookup([42]), np.zeros((1, 4)))
    assert len(t) == 0 and t.stats().rejected == 2
    row = t.lookup([42])
    assert row.any() and len(t) == 1 and t.stats().admitted == 1


def test_repeats_within_one_batch_count_as_sightings():
    t = counted(3)
    out = t.lookup([7, 7, 7, 8])
    assert len(t) == 1
    assert out[:3].any() and not out[3].any()
    np.testing.assert_array_equal(out[0], out[2])


def test_lookups_without_create_do_not_count_towards_admission():
    t = counted(2)
    t.lookup([5], create=False)
    t.lookup([5], create=False)
    t.lookup([5])
    assert len(t) == 0
    t.lookup([5])
    assert len(t) == 1


def test_the_count_sketch_keeps_ids_apart():
    t = counted(2)
    ids = np.arange(-20_000, 20_000, 7, dtype=np.int64)
    t.lookup(ids)
    assert len(t) <= ids.size // 1000          # collisions in 4 x 2^20 counters are rare
    t.lookup(ids)
    assert len(t) == ids.size


def test_probability_admission_is_a_fixed_sample_of_ids_for_a_seed():
    cfg = TableConfig("emb", 4, seed=3, admission=AdmissionConfig(probability=0.25))
    ids = np.arange(40_000, dtype=np.int64)
    a, b = SparseTable(cfg), SparseTable(cfg)
    a.lookup(ids)
    b.lookup(ids[::-1])
    admitted = a.lookup(ids, create=False).any(axis=1)
    assert abs(admitted.mean() - 0.25) < 0.01
    np.testing.assert_array_equal(b.lookup(ids, create=False).any(axis=1), admitted)
    a.lookup(ids)                               # asking again does not change the sample
    assert len(a) == admitted.sum()
    other = SparseTable(TableConfig("emb", 4, seed=4, admission=AdmissionConfig(probability=0.25)))
    other.lookup(ids)
    assert not np.array_equal(other.lookup(ids, create=False).any(axis=1), admitted)


def test_rows_unseen_for_more_than_t_steps_are_evicted():
    t = SparseTable(TableConfig("emb", 4, eviction=EvictionConfig(delete_after_unseen_steps=2)))
    t.lookup([1, 2, 3])
    for step in range(3):
        t.push([1], np.zeros((1, 4)))
        t.end_step()
        assert t.evict() == (1 if step == 2 else 0) * 2
    # step 3: ids 2 and 3 were last seen at step 0, id 1 at step 2
    assert len(t) == 1 and t.stats().evicted == 2
    np.testing.assert_array_equal(t.lookup([2, 3], create=False), np.zeros((2, 4)))


def test_rows_whose_decayed_show_click_score_falls_below_the_threshold_are_evicted():
    rule = EvictionConfig(delete_threshold=0.8, nonclk_coeff=0.1, click_coeff=1.0, show_click_decay_rate=0.5)
    t = SparseTable(TableConfig("emb", 4, eviction=rule))
    t.lookup([1, 2, 3])
    t.push([1, 2, 3], np.zeros((3, 4)), shows=[10, 20, 4], clicks=[0, 1, 1])
    # scores now: 1.0, 2.9, 1.3; one step of decay halves them: 0.5, 1.45, 0.65
    t.end_step()
    assert t.evict() == 2
    assert len(t) == 1 and t.lookup([2], create=False).any()
    shard = t.export()
    np.testing.assert_allclose(shard.meta["show"], [10.0])
    np.testing.assert_allclose(shard.meta["click"], [0.5])


def test_each_push_counts_one_show_per_occurrence_by_default():
    t = SparseTable(TableConfig("emb", 2, eviction=EvictionConfig(delete_threshold=0.0)))
    t.lookup([4, 5])
    t.push([4, 4, 5], np.zeros((3, 2)))
    np.testing.assert_array_equal(t.export().meta["show"], [2.0, 1.0])


def test_an_evicted_id_comes_back_as_a_new_id():
    cfg = TableConfig("emb", 3, admission=AdmissionConfig(min_count=2),
                      optimizer=OptimizerConfig("adagrad", lr=0.1),
                      initializer=InitializerConfig("normal", std=1.0),
                      eviction=EvictionConfig(delete_after_unseen_steps=0))
    t = SparseTable(cfg)
    t.lookup([9])
    initial = t.lookup([9])
    t.push([9], np.ones((1, 3)))
    assert not np.allclose(t.lookup([9]), initial)
    t.end_step()
    assert t.evict() == 1 and len(t) == 0
    # Needs two sightings again, then starts from the initializer with fresh state.
    np.testing.assert_array_equal(t.lookup([9]), np.zeros((1, 3)))
    np.testing.assert_array_equal(t.lookup([9]), initial)
    np.testing.assert_array_equal(t.export().state["moment"], np.zeros((1, 3)))
    assert t.stats().admitted == 2


def test_evicted_rows_are_reused_instead_of_growing_storage():
    t = SparseTable(TableConfig("emb", 4, initial_capacity=1024,
                                eviction=EvictionConfig(delete_after_unseen_steps=0)))
    t.lookup(np.arange(1000))
    t.end_step()
    assert t.evict() == 1000
    t.lookup(np.arange(5000, 6000))
    assert t.stats().capacity == 1024 and len(t) == 1000


def test_the_clock_only_moves_forward():
    t = SparseTable(TableConfig("emb", 4))
    assert t.end_step() == 1
    t.tick(10)
    assert t.stats().step == 10
    with pytest.raises(ValueError, match="cannot go back"):
        t.tick(9)
    with pytest.raises(ValueError, match="step must be"):
        t.tick(-1)


@pytest.mark.parametrize("kw, message", [
    ({"min_count": 0}, "min_count"),
    ({"probability": 0.0}, "probability"),
    ({"probability": 1.5}, "probability"),
    ({"sketch_width": 8}, "sketch_width"),
])
def test_bad_admission_settings_are_refused(kw, message):
    with pytest.raises(ValueError, match=message):
        AdmissionConfig(**kw)


@pytest.mark.parametrize("kw, message", [
    ({"delete_after_unseen_steps": -1}, "delete_after_unseen_steps"),
    ({"show_click_decay_rate": 0.0}, "show_click_decay_rate"),
    ({"delete_threshold": float("nan")}, "delete_threshold"),
])
def test_bad_eviction_settings_are_refused(kw, message):
    with pytest.raises(ValueError, match=message):
        EvictionConfig(**kw)


def test_rows_reused_in_any_order_keep_their_own_ids():
    t = SparseTable(TableConfig("emb", 2, initializer=InitializerConfig("normal", std=1.0),
                                eviction=EvictionConfig(delete_after_unseen_steps=0)))
    t.lookup(np.arange(10))
    t.push([4, 5, 3], np.zeros((3, 2)))
    t.end_step()
    t.push([0, 1, 2, 6, 7, 8, 9], np.zeros((7, 2)))
    assert t.evict() == 3                      # rows of 3, 4 and 5 go on the free list
    fresh = np.array([100, 101, 102, 103], np.int64)
    got = t.lookup(fresh)                      # three reused rows and one new one
    expected = SparseTable(TableConfig("emb", 2, initializer=InitializerConfig("normal", std=1.0)))
    np.testing.assert_array_equal(got, expected.lookup(fresh))
    np.testing.assert_array_equal(t.lookup(np.arange(10), create=False)[[0, 1, 2, 6]],
                                  expected.lookup([0, 1, 2, 6]))
