"""SparseTable pushes: SelectedRows gradients, per-row optimizer state.

References are written out here in float64 from the Fluid formulas, applied to
a dense numpy matrix holding the same rows, so the table (float32, sparse,
kernels from psjob.foundation.kernels.optimizers) is checked against independent math.
"""
import threading

import numpy as np
import pytest

from psjob.foundation.kernels import optimizers as kernels
from psjob.foundation.tables import (
    OPTIMIZERS,
    EvictionConfig,
    InitializerConfig,
    OptimizerConfig,
    SparseTable,
    TableConfig,
)
from psjob.foundation.tables.rowopt import merge_rows

DIM = 6
IDS = np.array([np.iinfo(np.int64).min, -7, 0, 3, 2**62, np.iinfo(np.int64).max], np.int64)


def _steps(seed=0, count=6):
    """Batches of ids (with repeats, and not every id every step) and gradients."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        batch = rng.choice(IDS, size=9)
        out.append((batch, rng.standard_normal((batch.size, DIM)).astype(np.float32)))
    return out


def _summed(batch, grads):
    """{position in IDS: summed gradient} for the ids present in the batch."""
    pos = np.searchsorted(np.sort(IDS), batch)
    order = np.argsort(IDS)
    acc = {}
    for p, g in zip(order[pos], grads.astype(np.float64)):
        acc[p] = acc.get(p, 0.0) + g
    return acc


def _run(name, hyper, reference):
    t = SparseTable(TableConfig("emb", DIM, optimizer=OptimizerConfig(name, lr=0.05, hyper=hyper)))
    dense = t.lookup(IDS).astype(np.float64)
    state = {}
    for batch, grads in _steps():
        t.push(batch, grads)
        for p, g in _summed(batch, grads).items():
            dense[p] = reference(dense[p], g, state.setdefault(p, {}))
    np.testing.assert_allclose(t.lookup(IDS, create=False), dense, rtol=2e-5, atol=2e-6)
    return t, state


def test_sgd_rows_match_the_dense_reference():
    _run("sgd", {}, lambda p, g, s: p - 0.05 * g)


def test_adagrad_rows_and_moments_match_the_dense_reference():
    def adagrad(p, g, s):
        s["moment"] = s.get("moment", 0.0) + g * g
        return p - 0.05 * g / (np.sqrt(s["moment"]) + 1e-6)

    t, state = _run("adagrad", {"epsilon": 1e-6}, adagrad)
    shard = t.export()
    order = np.argsort(IDS)
    for k, p in enumerate(order):
        expected = state.get(p, {}).get("moment", np.zeros(DIM))
        np.testing.assert_allclose(shard.state["moment"][k], expected, rtol=2e-5)


def test_adam_rows_match_the_dense_reference_with_per_row_beta_powers():
    b1, b2, eps = 0.9, 0.999, 1e-8

    def adam(p, g, s):
        m1 = b1 * s.get("m1", 0.0) + (1 - b1) * g
        m2 = b2 * s.get("m2", 0.0) + (1 - b2) * g * g
        b1p, b2p = s.get("b1p", b1), s.get("b2p", b2)
        lr_t = 0.05 * np.sqrt(1 - b2p) / (1 - b1p)
        s.update(m1=m1, m2=m2, b1p=b1p * b1, b2p=b2p * b2, n=s.get("n", 0) + 1)
        return p - lr_t * m1 / (np.sqrt(m2) + eps * np.sqrt(1 - b2p))

    t, state = _run("adam", {"beta1": b1, "beta2": b2, "epsilon": eps}, adam)
    shard = t.export()
    assert shard.state["beta1_pow_acc"].shape == (IDS.size, 1)
    order = np.argsort(IDS)
    for k, p in enumerate(order):
        updates = state.get(p, {}).get("n", 0)       # each row's pows advance only when it is pushed
        np.testing.assert_allclose(shard.state["beta1_pow_acc"][k, 0], b1 ** (updates + 1), rtol=1e-6)
        np.testing.assert_allclose(shard.state["beta2_pow_acc"][k, 0], b2 ** (updates + 1), rtol=1e-6)


@pytest.mark.parametrize("name", [n for n in OPTIMIZERS if n not in ("sgd", "adagrad", "adam")])
def test_every_other_optimizer_matches_its_kernel_on_a_dense_matrix(name):
    hyper = {"mu": 0.9} if name == "momentum" else {}
    cfg = OptimizerConfig(name, lr=0.05, hyper=hyper)
    t = SparseTable(TableConfig("emb", DIM, optimizer=cfg))
    dense = t.lookup(IDS)
    specs = kernels.ACCUMULATORS[name]
    hyp = cfg.resolved_hyper()
    states = {s.name: np.full((IDS.size, DIM if s.shape == kernels.PARAM_SHAPED else 1),
                              hyp[s.fill] if isinstance(s.fill, str) else s.fill, np.float32) for s in specs}
    passed = [s.name for s in specs if s.used_when is None or hyp.get(s.used_when)]
    for batch, grads in _steps(seed=1):
        t.push(batch, grads)
        acc = _summed(batch, grads)
        rows = np.array(sorted(acc))
        block = dense[rows]
        blocks = [states[n][rows] for n in passed]
        kernels.DENSE_UPDATES[name](np, block, np.array([acc[r] for r in rows], np.float32), *blocks,
                                    lr=0.05, **hyp)
        dense[rows] = block
        for n, b in zip(passed, blocks):
            states[n][rows] = b
    np.testing.assert_allclose(t.lookup(IDS, create=False), dense, rtol=1e-5, atol=1e-6)


def test_duplicate_ids_in_a_push_are_summed_before_one_update():
    cfg = TableConfig("emb", 2, optimizer=OptimizerConfig("adagrad", lr=1.0, hyper={"epsilon": 0.0}))
    once, split = SparseTable(cfg), SparseTable(cfg)
    start = once.lookup([9])
    split.lookup([9])
    once.push([9], [[3.0, -4.0]])
    split.push([9, 9, 9], [[1.0, -1.0], [1.0, -1.0], [1.0, -2.0]])
    np.testing.assert_allclose(split.lookup([9]), once.lookup([9]), rtol=1e-6)
    # adagrad with a single summed gradient moves every coordinate by lr * sign(g)
    np.testing.assert_allclose(once.lookup([9]) - start, [[-1.0, 1.0]], rtol=1e-6)


def test_merge_rows_sums_repeats_in_first_occurrence_order():
    rows = np.array([5, 2, 5, 9, 2, 5], np.int64)
    values = np.arange(12, dtype=np.float32).reshape(6, 2)
    scratch = np.full(10, 77, np.int32)         # stale contents must not matter
    unique, summed = merge_rows(rows, values, scratch)
    np.testing.assert_array_equal(unique, [5, 2, 9])
    np.testing.assert_array_equal(summed, [[0 + 4 + 10, 1 + 5 + 11], [2 + 8, 3 + 9], [6, 7]])


def test_merge_rows_sums_in_batch_order():
    # float32 sums depend on their order: the result is the sequential sum in batch order.
    rng = np.random.default_rng(3)
    rows = rng.integers(0, 40, 2000)
    values = (rng.standard_normal((2000, 4)) * 10.0 ** rng.integers(-4, 5, (2000, 1))).astype(np.float32)
    unique, summed = merge_rows(rows, values, np.empty(40, np.int32))
    for row, got in zip(unique, summed):
        expected = np.zeros(4, np.float32)
        for v in values[rows == row]:
            expected += v
        np.testing.assert_array_equal(got, expected)
    assert sorted(unique) == sorted(set(rows))


def test_push_lr_overrides_the_configured_rate():
    cfg = TableConfig("emb", 3, optimizer=OptimizerConfig("sgd", lr=0.1))
    a, b = SparseTable(cfg), SparseTable(cfg)
    start = a.lookup([1])
    b.lookup([1])
    a.push([1], np.ones((1, 3)), lr=0.5)
    b.push([1], np.ones((1, 3)), lr=np.array([0.5], np.float32))
    np.testing.assert_allclose(a.lookup([1]), start - 0.5, rtol=1e-6)
    np.testing.assert_allclose(b.lookup([1]), start - 0.5, rtol=1e-6)


def test_gradients_for_ids_without_a_row_are_dropped_and_counted():
    t = SparseTable(TableConfig("emb", 3))
    start = t.lookup([1])
    t.push([1, 2, 2], np.ones((3, 3)))
    np.testing.assert_allclose(t.lookup([1], create=False), start - 0.01, rtol=1e-6)
    assert len(t) == 1 and t.stats().dropped == 2
    np.testing.assert_array_equal(t.lookup([2], create=False), np.zeros((1, 3)))


def test_a_push_of_looked_up_ids_reuses_the_lookup_rows_and_updates_as_a_searched_push():
    from psjob.foundation.tables.table import _RECENT_LOOKUPS
    cfg = TableConfig("emb", 4, optimizer=OptimizerConfig("adam", lr=0.01))
    ids = np.array([5, 9, 5, 2, 7], np.int64)
    grads = np.arange(20, dtype=np.float32).reshape(5, 4) / 10
    reused, searched = SparseTable(cfg), SparseTable(cfg)
    finds = []
    real_find = reused._index.find
    reused._index.find = lambda batch, **kw: finds.append(batch.size) or real_find(batch, **kw)
    reused.lookup(ids)
    reused.push(ids, grads)
    assert finds == [ids.size]                   # the lookup's search only: the push reused its rows
    searched.lookup(ids)
    for other in range(_RECENT_LOOKUPS):         # push the batch out of the remembered lookups
        searched.lookup([100 + other])
    searched.push(ids, grads)
    a, b = reused.export(), searched.export()
    keep = np.isin(b.ids, ids)
    np.testing.assert_array_equal(a.values, b.values[keep])
    for name in a.state:
        np.testing.assert_array_equal(a.state[name], b.state[name][keep])


def test_a_push_of_looked_up_ids_evicted_since_is_dropped_not_applied_to_their_reused_rows():
    t = SparseTable(TableConfig("emb", 3, eviction=EvictionConfig(delete_after_unseen_steps=0)))
    t.lookup([1, 2])
    t.end_step()
    assert t.evict() == 2
    fresh = t.lookup([3, 4])                     # takes the rows ids 1 and 2 had
    t.push([1, 2], np.ones((2, 3)))
    assert t.stats().dropped == 2
    np.testing.assert_array_equal(t.lookup([3, 4], create=False), fresh)


def test_lookups_and_pushes_from_several_threads_all_land():
    cfg = TableConfig("emb", 2, initial_capacity=16, optimizer=OptimizerConfig("sgd", lr=1.0),
                      initializer=InitializerConfig("constant", value=0.0))
    t = SparseTable(cfg)
    ids = np.arange(-3000, 3000, dtype=np.int64) * 1_000_003
    stop = threading.Event()
    seen = []

    def scrape():
        while not stop.is_set():
            seen.append(t.stats().bytes)

    def work(k):
        for chunk in np.array_split(np.roll(ids, 1000 * k), 20):   # every thread touches every id
            t.lookup(chunk)
            t.push(chunk, np.ones((chunk.size, 2), np.float32))

    scraper = threading.Thread(target=scrape)
    scraper.start()
    workers = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    stop.set()
    scraper.join()
    assert len(t) == ids.size and seen
    np.testing.assert_array_equal(t.lookup(ids, create=False), np.full((ids.size, 2), -4.0))


# Hyperparameters that switch on each optimizer's optional branches.
_BRANCHES = {"momentum": {"mu": 0.9, "use_nesterov": True}, "rmsprop": {"centered": True, "momentum": 0.5},
             "ftrl": {"l1": 0.01, "l2": 0.1, "lr_power": -0.6}}


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_every_optimizer_updates_bit_for_bit_as_the_kernels_row_update_on_full_columns(name):
    # The reference: one array per state, `<name>_update_rows` on the full arrays, every branch on
    # (nesterov, centered, ftrl's general lr_power), rows created past the initial capacity.
    cfg = OptimizerConfig(name, lr=0.05, hyper=_BRANCHES.get(name, {}))
    table = SparseTable(TableConfig("emb", DIM, seed=3, optimizer=cfg, initial_capacity=16))
    ids = np.arange(-50, 50, dtype=np.int64) * 7919
    value = table.lookup(ids)                          # 100 rows: the block grows past 16
    hyper = cfg.resolved_hyper()
    specs = kernels.ACCUMULATORS[name]
    states = {s.name: np.full((ids.size, DIM if s.shape == kernels.PARAM_SHAPED else 1),
                              hyper[s.fill] if isinstance(s.fill, str) else s.fill, np.float32) for s in specs}
    passed = [states[s.name] for s in specs if s.used_when is None or hyper.get(s.used_when)]
    rng = np.random.default_rng(5)
    for step in range(6):
        pos = rng.choice(ids.size, size=40, replace=False)   # distinct ids, shuffled or ascending
        if step % 2:
            pos = np.sort(pos)
        grads = rng.standard_normal((pos.size, DIM)).astype(np.float32)
        table.push(ids[pos], grads, lr=np.array([0.03], np.float32))
        kernels.ROW_UPDATES[name](np, value, pos, grads, *passed, lr=np.array([0.03], np.float32),
                                  assume_unique=True, **hyper)
    shard = table.export()                             # ids ascending, as `ids`
    np.testing.assert_array_equal(shard.values, value)
    assert list(shard.state) == [s.name for s in specs]
    for state_name, expected in states.items():
        assert shard.state[state_name].flags.c_contiguous
        np.testing.assert_array_equal(shard.state[state_name], expected, err_msg=state_name)


def test_imported_state_round_trips_and_rows_reused_after_eviction_start_with_fresh_state():
    cfg = TableConfig("emb", DIM, optimizer=OptimizerConfig("adam", lr=0.05),
                      eviction=EvictionConfig(delete_after_unseen_steps=0))
    source = SparseTable(cfg)
    source.lookup(IDS)
    source.push(IDS, np.ones((IDS.size, DIM), np.float32))
    shard = source.export()
    target = SparseTable(cfg)
    target.import_rows(shard)
    back = target.export()
    for name in shard.state:
        np.testing.assert_array_equal(back.state[name], shard.state[name], err_msg=name)
    target.end_step()
    target.end_step()
    assert target.evict() == IDS.size
    target.lookup(IDS[:2])                             # reuses evicted rows: fresh state
    fresh = target.export()
    np.testing.assert_array_equal(fresh.state["moment1"], 0.0)
    np.testing.assert_array_equal(fresh.state["beta1_pow_acc"], np.float32(0.9))
    np.testing.assert_array_equal(fresh.state["beta2_pow_acc"], np.float32(0.999))
