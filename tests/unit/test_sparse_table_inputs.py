"""Bad input to a SparseTable: a clear error naming the problem, and no change."""
import dataclasses

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

CFG = TableConfig("emb", 4, optimizer=OptimizerConfig("adagrad", lr=0.1),
                  admission=AdmissionConfig(min_count=2), eviction=EvictionConfig(delete_threshold=0.0))


@pytest.fixture
def table():
    t = SparseTable(CFG)
    t.lookup([1, 2, 3])
    t.lookup([1, 2, 3])
    t.push([1, 2], np.ones((2, 4)))
    return t


def _snapshot(t):
    shard = t.export()
    arrays = [shard.ids, shard.values, *shard.state.values(), *shard.meta.values()]
    return [a.copy() for a in arrays], dataclasses.replace(t.stats())


def _unchanged(t, snap):
    arrays, stats = _snapshot(t)
    for a, b in zip(arrays, snap[0]):
        np.testing.assert_array_equal(a, b)
    assert stats == snap[1]


@pytest.mark.parametrize("ids, error, message", [
    (np.array([1.0, 2.0]), TypeError, "integer"),
    ([1.5, 2], TypeError, "integer"),
    (np.array([1, 2], np.uint64), TypeError, "uint64"),
    (np.array([True, False]), TypeError, "integer"),
    (np.array(["1"]), TypeError, "integer"),
    (np.array([[1, 2]], np.int64), ValueError, "one-dimensional"),
    (np.int64(3), ValueError, "one-dimensional"),
])
def test_lookup_refuses_ids_that_are_not_a_1d_integer_array(table, ids, error, message):
    snap = _snapshot(table)
    with pytest.raises(error, match=message):
        table.lookup(ids)
    _unchanged(table, snap)


def test_lookup_accepts_narrower_integer_types_and_lists():
    t = SparseTable(TableConfig("emb", 4))
    a = t.lookup(np.array([5, -3], np.int8))
    np.testing.assert_array_equal(t.lookup([5, -3]), a)
    np.testing.assert_array_equal(t.lookup(np.array([5], np.uint32)), a[:1])
    assert t.lookup([]).shape == (0, 4)


@pytest.mark.parametrize("ids, grads, kw, error, message", [
    ([1, 2], np.ones((2, 3)), {}, ValueError, r"shape \(2, 4\)"),
    ([1, 2], np.ones((3, 4)), {}, ValueError, r"shape \(2, 4\)"),
    ([1, 2], np.ones(8), {}, ValueError, r"shape \(2, 4\)"),
    ([1, 2], np.ones((2, 4), np.int32), {}, TypeError, "floating-point"),
    ([1.0, 2.0], np.ones((2, 4)), {}, TypeError, "integer"),
    ([1, 2], np.ones((2, 4)), {"shows": [1]}, ValueError, "shows"),
    ([1, 2], np.ones((2, 4)), {"clicks": [1, -1]}, ValueError, "non-negative"),
    ([1, 2], np.ones((2, 4)), {"lr": float("nan")}, ValueError, "lr"),
    ([1, 2], np.ones((2, 4)), {"lr": np.ones(2)}, ValueError, "lr"),
])
def test_push_refuses_mismatched_or_mistyped_input_and_changes_nothing(table, ids, grads, kw, error, message):
    snap = _snapshot(table)
    with pytest.raises(error, match=message):
        table.push(ids, grads, **kw)
    _unchanged(table, snap)


def test_the_table_needs_a_table_config():
    with pytest.raises(TypeError, match="TableConfig"):
        SparseTable({"name": "emb", "dim": 4})


@pytest.mark.parametrize("build, message", [
    (lambda: TableConfig("emb", 0), "dim"),
    (lambda: TableConfig("", 4), "name"),
    (lambda: TableConfig("emb", 4, seed=-1), "seed"),
    (lambda: TableConfig("emb", 4, optimizer="adam"), "optimizer"),
    (lambda: OptimizerConfig("lars_momentum"), "optimizer must be one of"),
    (lambda: OptimizerConfig("adam", hyper={"momentum": 0.9}), "no hyperparameter 'momentum'"),
    (lambda: OptimizerConfig("momentum"), "needs hyperparameters"),
    (lambda: OptimizerConfig("sgd", lr=float("inf")), "lr"),
    (lambda: InitializerConfig("xavier"), "initializer kind"),
    (lambda: InitializerConfig("uniform", low=1.0, high=0.0), "below high"),
    (lambda: InitializerConfig("normal", std=0.0), "std"),
])
def test_bad_table_configuration_is_refused_with_the_field_named(build, message):
    with pytest.raises(ValueError, match=message):
        build()
