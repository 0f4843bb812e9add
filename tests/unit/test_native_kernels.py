"""The C optimizer kernels (psjob/kernels/_native.c) against the numpy ones they replace.

The numpy kernels are the reference: for every update the C path takes, the results
(parameter, every state array, the beta pows) must be bitwise numpy's. Each test runs
the same update twice through the public kernel functions, once with the C path and
once with it switched off (`native.enabled`), on copies of the same arrays.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from psjob.foundation.kernels import native
from psjob.foundation.kernels import optimizers as K
from psjob.foundation.tables.config import OptimizerConfig
from psjob.foundation.tables.table import SparseTable, TableConfig


def test_the_c_extension_is_built_in_this_environment():
    # scripts/setup-venv.sh (pip install -e .) compiles it; without it every update
    # silently takes the slower numpy path.
    assert native.built(), "psjob.foundation.kernels._native is missing: reinstall with a C compiler present"
    assert native.enabled


def _both(monkeypatch, update, arrays):
    """update(*arrays) on two copies: (C results, numpy results)."""
    ours = [a.copy() for a in arrays]
    reference = [a.copy() for a in arrays]
    monkeypatch.setattr(native, "enabled", True)
    update(*ours)
    monkeypatch.setattr(native, "enabled", False)
    update(*reference)
    return ours, reference


def _assert_bitwise(ours, reference):
    for i, (a, b) in enumerate(zip(ours, reference)):
        assert a.tobytes() == b.tobytes(), f"array {i} differs: max |diff| {np.abs(a - b).max()}"


def _adam_state(rng, height, dim, per_row):
    pow_shape = (height, 1) if per_row else (1,)
    return [rng.standard_normal((height, dim)).astype(np.float32),
            (rng.standard_normal((height, dim)) * 0.1).astype(np.float32),
            (rng.random((height, dim)) * 0.01).astype(np.float32),
            (0.9 ** rng.integers(1, 60, pow_shape)).astype(np.float32),
            (0.999 ** rng.integers(1, 60, pow_shape)).astype(np.float32)]


@pytest.mark.parametrize("scale_epsilon", [True, False], ids=["Paddle 2 epsilon", "Paddle 1.8 epsilon"])
@pytest.mark.parametrize("per_row", [True, False], ids=["per-row pows", "one pow pair"])
@pytest.mark.parametrize("lr", [1e-3, np.array([0.02], np.float32)], ids=["float lr", "lr variable"])
def test_adam_rows_are_bitwise_numpys(monkeypatch, per_row, lr, scale_epsilon):
    rng = np.random.default_rng(7)
    before = _adam_state(rng, 5000, 16, per_row)
    rows = rng.choice(5000, 1200, replace=False)
    grads = rng.standard_normal((1200, 16)).astype(np.float32)

    def update(p, m1, m2, b1, b2):
        K.adam_update_rows(np, p, rows, grads, m1, m2, b1, b2, lr=lr, beta1=0.85, beta2=0.995,
                           epsilon=1e-2, scale_epsilon=scale_epsilon, assume_unique=True)

    ours, reference = _both(monkeypatch, update, before)
    _assert_bitwise(ours, reference)
    untouched = np.setdiff1d(np.arange(5000), rows)
    for after, start in zip(ours, before):   # lazy: the other rows (and per-row pows) stay
        if after.shape[0] == 5000:
            assert np.array_equal(after[untouched], start[untouched])
        assert not np.array_equal(after, start)


def test_adam_rows_with_repeated_ids_merge_first_and_still_match(monkeypatch):
    rng = np.random.default_rng(3)
    rows = rng.integers(0, 300, 2000)          # many repeats: the kernels' merge runs first
    grads = rng.standard_normal((2000, 8)).astype(np.float32)

    def update(p, m1, m2, b1, b2):
        K.adam_update_rows(np, p, rows, grads, m1, m2, b1, b2, lr=1e-2)

    _assert_bitwise(*_both(monkeypatch, update, _adam_state(rng, 300, 8, True)))


@pytest.mark.parametrize("scale_epsilon", [True, False], ids=["Paddle 2 epsilon", "Paddle 1.8 epsilon"])
def test_dense_adam_is_bitwise_numpys_and_advances_the_pows(monkeypatch, scale_epsilon):
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal((429, 256)).astype(np.float32),
              rng.standard_normal((429, 256)).astype(np.float32),
              np.zeros((429, 256), np.float32), np.zeros((429, 256), np.float32),
              np.array([0.9], np.float32), np.array([0.999], np.float32)]

    def update(p, g, m1, m2, b1, b2):
        for _ in range(3):
            K.adam_update(np, p, g, m1, m2, b1, b2, lr=np.array([1e-3], np.float32), epsilon=0.5,
                          scale_epsilon=scale_epsilon)

    ours, reference = _both(monkeypatch, update, arrays)
    _assert_bitwise(ours, reference)
    assert ours[4][0] == np.float32(0.9) ** 4


@pytest.mark.parametrize("optimizer", ["sgd", "adagrad"])
def test_sgd_and_adagrad_rows_are_bitwise_numpys(monkeypatch, optimizer):
    rng = np.random.default_rng(11)
    rows = rng.choice(2000, 700, replace=False)
    grads = rng.standard_normal((700, 16)).astype(np.float32)
    arrays = [rng.standard_normal((2000, 16)).astype(np.float32), rng.random((2000, 16)).astype(np.float32)]

    def update(p, moment):
        if optimizer == "sgd":
            K.sgd_update_rows(np, p, rows, grads, lr=0.05, assume_unique=True)
        else:
            K.adagrad_update_rows(np, p, rows, grads, moment, lr=0.05, epsilon=1e-6, assume_unique=True)

    _assert_bitwise(*_both(monkeypatch, update, arrays))


@pytest.mark.parametrize("optimizer", ["adam", "adagrad", "sgd"])
def test_a_table_trained_with_the_c_kernels_equals_one_trained_with_numpy(monkeypatch, optimizer):
    rng = np.random.default_rng(2)
    batches = [np.unique(rng.zipf(1.2, 3000) % 50_000) for _ in range(20)]
    grads = [rng.standard_normal((b.size, 16)).astype(np.float32) for b in batches]
    snapshots = []
    for enabled in (True, False):
        monkeypatch.setattr(native, "enabled", enabled)
        table = SparseTable(TableConfig(name="emb", dim=16, optimizer=OptimizerConfig(name=optimizer, lr=0.01)))
        for ids, g in zip(batches, grads):
            table.lookup(ids)
            table.push(ids, g)
        ids = np.unique(np.concatenate(batches))
        snapshots.append(table.lookup(ids, create=False))
    assert snapshots[0].tobytes() == snapshots[1].tobytes()


def test_a_row_out_of_range_raises_before_anything_is_written():
    rng = np.random.default_rng(0)
    state = _adam_state(rng, 100, 16, True)
    before = [a.copy() for a in state]
    rows = np.array([3, 7, 100], np.int64)      # the last is one past the end
    with pytest.raises(IndexError, match="row 100 out of range for a parameter with 100 rows"):
        native.adam_rows(state[0], *state[1:], rows, np.ones((3, 16), np.float32), lr=0.1, beta1=0.9,
                         beta2=0.999, epsilon=1e-8, per_row=True)
    _assert_bitwise(state, before)


def test_wrong_arrays_get_errors_that_name_them_and_the_kernels_fall_back_to_numpy(monkeypatch):
    p = np.zeros((10, 4), np.float32)
    with pytest.raises(TypeError, match="grads must be float32"):
        native.sgd_rows(p, np.array([1]), np.ones((1, 4), np.float64), 0.1)
    with pytest.raises(TypeError, match="param must be a C-contiguous writable float32 array"):
        native.sgd_rows(np.zeros((4, 10), np.float32).T, np.array([1]), np.ones((1, 4), np.float32), 0.1)
    with pytest.raises(ValueError, match="grads has 8 values, expected 4"):
        native.sgd_rows(p, np.array([1]), np.ones((2, 4), np.float32), 0.1)
    # What the C kernels do not take, the numpy kernels do (same results as before they existed).
    monkeypatch.setattr(native, "enabled", True)
    strided = np.zeros((4, 10), np.float32).T
    K.sgd_update_rows(np, strided, np.array([1]), np.ones((1, 4), np.float32), lr=0.5)
    assert strided[1].tolist() == [-0.5] * 4
    assert not native.fits(np.zeros(3, np.float64)) and not native.fits(strided)


def test_psjob_native_kernels_0_turns_them_off():
    code = "from psjob.foundation.kernels import native; print(native.built(), native.enabled)"
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PSJOB_NATIVE_KERNELS="0"),
                         capture_output=True, text=True, check=True, timeout=60).stdout.split()
    assert out == ["True", "False"]
    bad = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PSJOB_NATIVE_KERNELS="yes"),
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "PSJOB_NATIVE_KERNELS='yes': expected 1" in bad.stderr


def test_the_slot_grid_kernels_check_their_indices_and_shapes_before_writing():
    rows = np.arange(12, dtype=np.float32).reshape(6, 2)
    out = np.full((2, 7), -1.0, np.float32)     # 2 sequences x (3 slots x 2 + 1 tail column)
    index = np.array([0, 1, 2, 3, 4, 5], np.int64)   # slot by slot: [slots, seqs]
    native.pool_gather_grid(rows, index, out, 3)
    assert out.tolist() == [[0, 1, 4, 5, 8, 9, -1], [2, 3, 6, 7, 10, 11, -1]]
    before = out.copy()
    with pytest.raises(IndexError, match="row 6 out of range"):
        native.pool_gather_grid(rows, np.array([0, 1, 2, 3, 4, 6], np.int64), out, 3)
    with pytest.raises(ValueError, match="6 indices for 2 slots"):
        native.pool_gather_grid(rows, index, out, 2)
    assert out.tobytes() == before.tobytes()
    # The gradient: occurrences (sequence, slot) summed per index, here 0 0 | 1 1 | 0 1.
    dout = np.arange(14, dtype=np.float32).reshape(2, 7)
    summed = native.pool_grad_grid(dout, np.array([0, 0, 1, 1, 0, 1], np.int64), 2, 3, 2)
    assert summed.tolist() == [[0 + 7 + 4, 1 + 8 + 5], [2 + 9 + 11, 3 + 10 + 12]]
    with pytest.raises(IndexError, match="row 2 out of range"):
        native.pool_grad_grid(dout, np.array([0, 0, 1, 1, 0, 2], np.int64), 2, 3, 2)


@pytest.mark.parametrize("alpha", [2.0, 0.5, 1.0 / 3.0])
def test_weight_prediction_is_bitwise_numpys_three_passes(alpha):
    rng = np.random.default_rng(7)
    value = rng.standard_normal(100_003).astype(np.float32)
    before = (value + rng.standard_normal(value.size).astype(np.float32) * np.float32(1e-3)).astype(np.float32)
    before[:6] = [np.inf, -np.inf, np.nan, 1e-45, -3e38, 0.0]  # specials and extremes go through as numpy's
    value, before = value.reshape(-1, 1), before.reshape(-1, 1)
    with np.errstate(all="ignore"):  # the extremes overflow, as they may in training
        want = value - before
        want *= value.dtype.type(alpha)
        want += value
    got = native.extrapolate(value, before, alpha)
    assert got is not None and got.shape == value.shape and got.dtype == np.float32
    assert got.tobytes() == want.tobytes()
    assert native.extrapolate(value.astype(np.float64), before.astype(np.float64), alpha) is None  # numpy's then
    assert native.extrapolate(value, before[:-1], alpha) is None
