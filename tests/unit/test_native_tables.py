"""The C kernels a sparse table makes new rows and a pserver checks pushes with
(psjob/foundation/kernels/_native.c), against the numpy code they stand in for.

New rows' initial values are a pure function of (seed, table, id, column): checkpoints,
restores and re-sharding depend on a returning id getting exactly the row it had. The C
generator must therefore give numpy's bits, and both must keep giving the values pinned
here (computed by the numpy code before the C path existed).
"""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

from psjob.cluster.pserver.pushes import _all_finite
from psjob.foundation.kernels import native
from psjob.foundation.tables import hashing, initializers
from psjob.foundation.tables.config import EvictionConfig, InitializerConfig, OptimizerConfig
from psjob.foundation.tables.table import SparseTable, TableConfig

pytestmark = pytest.mark.skipif(not native.built(), reason="the C extension is not built")

_IDS = np.concatenate([np.arange(-50, 50), [2**63 - 1, -2**63, 123456789012345]]).astype(np.int64)
_KEY = hashing.derive_key(hashing.derive_key(7, "emb"), "init")
_KINDS = [InitializerConfig("uniform", low=-0.01, high=0.01), InitializerConfig("uniform", low=-0.37, high=1.3),
          InitializerConfig("normal", mean=0.5, std=0.2), InitializerConfig("truncated_normal", std=2.0),
          InitializerConfig("constant", value=0.25)]


def _digest(a: np.ndarray) -> str:
    return hashlib.sha256(a.tobytes()).hexdigest()[:32]


def _both(monkeypatch, make):
    monkeypatch.setattr(native, "enabled", True)
    ours = make()
    monkeypatch.setattr(native, "enabled", False)
    return ours, make()


@pytest.mark.parametrize("native_on", [True, False], ids=["C", "numpy"])
def test_initial_rows_and_words_keep_their_pinned_values(monkeypatch, native_on):
    # sha256 prefixes of the values the numpy generator gave before the C path existed; the
    # uniform and the raw words are exact integer/float32 arithmetic, the same on every CPU.
    monkeypatch.setattr(native, "enabled", native_on)
    uniform = InitializerConfig("uniform", low=-0.01, high=0.01)
    assert _digest(initializers.initial_rows(uniform, _KEY, _IDS, 9)) == "5d447e5749f0ffdc920a4bbbde9ae43f"
    assert _digest(initializers.initial_rows(uniform, _KEY, _IDS, 16)) == "bb568147a935918a861eda797599fe37"
    assert _digest(hashing.random_words(_KEY, _IDS, 5, 3)) == "bf65b6cb898f71fd0550708caf0bd44a"


@pytest.mark.parametrize("dim", [1, 7, 16, 33])
def test_c_words_and_initial_rows_are_bitwise_numpys(monkeypatch, dim):
    rng = np.random.default_rng(dim)
    ids = np.concatenate([_IDS, rng.integers(-2**63, 2**63 - 1, 3000, dtype=np.int64)])
    for first_block in (0, 3, 5 << 30):
        ours, reference = _both(monkeypatch, lambda: hashing.random_words(_KEY, ids, dim, first_block))
        assert ours.dtype == reference.dtype == np.uint32 and ours.shape == reference.shape == (ids.size, dim)
        assert ours.tobytes() == reference.tobytes()
    for init in _KINDS:
        ours, reference = _both(monkeypatch, lambda: initializers.initial_rows(init, _KEY, ids, dim))
        assert ours.dtype == np.float32 and ours.tobytes() == reference.tobytes(), init
        monkeypatch.setattr(native, "enabled", True)
        out = np.full((ids.size, dim), np.nan, np.float32)
        assert initializers.initial_rows(init, _KEY, ids, dim, out=out) is out
        assert out.tobytes() == reference.tobytes(), init


def test_initial_rows_refuse_an_out_of_the_wrong_shape():
    with pytest.raises(ValueError, match=r"out must be float32 \(3, 4\)"):
        initializers.initial_rows(_KINDS[0], _KEY, _IDS[:3], 4, out=np.zeros((3, 5), np.float32))
    with pytest.raises(TypeError, match="out must be float32, got format"):
        native.uniform_rows(_KEY, _IDS[:3], 4, 1.0, 0.0, np.zeros((3, 4), np.float64))


@pytest.mark.parametrize("init", _KINDS, ids=lambda c: c.kind)
def test_a_table_makes_the_same_rows_fresh_reused_or_without_the_c_kernels(monkeypatch, init):
    # Fresh rows are made in the value column itself; rows freed by eviction are reused
    # through a fancy-index write. Either way, and with numpy alone, every row and state is
    # the same, bit for bit.
    rng = np.random.default_rng(5)
    batches = [np.unique(rng.integers(0, 40_000, 2500)) for _ in range(6)]
    grads = [(rng.standard_normal((b.size, 8)) * 0.1).astype(np.float32) for b in batches]
    config = TableConfig("emb", 8, seed=3, initializer=init, optimizer=OptimizerConfig(name="adam", lr=0.01),
                         eviction=EvictionConfig(delete_after_unseen_steps=1))

    def train():
        table = SparseTable(config)
        for i, (ids, g) in enumerate(zip(batches, grads)):
            table.lookup(ids)
            table.push(ids, g)
            table.end_step()
            if i == 2:
                assert table.evict() > 0       # later batches reuse freed rows
        shard = table.export()
        return [shard.ids, shard.values] + [shard.state[k] for k in sorted(shard.state)] + \
            [shard.meta[k] for k in sorted(shard.meta)]

    ours, reference = _both(monkeypatch, train)
    for a, b in zip(ours, reference):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _finite_cases():
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        info = np.finfo(dtype)
        for n in (1, 5, 4095, 4096, 4097, 20_000):
            a = rng.standard_normal(n).astype(dtype)
            yield a
            edge = a.copy()
            edge[:3] = [info.max, -info.max, info.tiny / 4][: min(3, n)]   # large and subnormal: finite
            yield edge
            for bad in (np.nan, np.inf, -np.inf):
                for at in {0, n // 2, n - 1}:
                    b = a.copy()
                    b[at] = bad
                    yield b
        yield np.array([-0.0, 0.0], dtype)
        yield np.full(9, np.nan, dtype).view(np.uint8).view(dtype)   # NaN payloads


def test_all_finite_answers_as_numpy_does():
    for a in _finite_cases():
        expected = bool(np.isfinite(a).all())
        assert native.all_finite(a) is expected
        assert native.all_finite(a.reshape(1, -1)) is expected
        assert _all_finite(a, np) is expected
    # What the C check does not take, numpy answers (the caller gets None).
    assert native.all_finite(np.zeros(4, np.float16)) is None
    assert native.all_finite(np.zeros((4, 4), np.float32).T[::2]) is None
    assert native.all_finite(np.zeros(4, ">f4")) is None
    assert _all_finite(np.array([1, np.nan], np.float16), np) is False
    assert _all_finite(np.array([[1, 2], [np.inf, 3]], np.float32).T, np) is False


def test_strictly_ascending_answers_as_numpy_does(monkeypatch):
    big = np.arange(-5000, 5000, dtype=np.int64) * 3
    cases = [np.zeros(0, np.int64), np.array([4], np.int64), np.array([-2**63, 2**63 - 1], np.int64),
             np.array([2**63 - 1, -2**63], np.int64), np.array([1, 1], np.int64), big]
    for at in (1, 4095, 4096, 4097, big.size - 1):
        c = big.copy()
        c[at] = c[at - 1]
        cases.append(c)
    for ids in cases:
        ours, reference = _both(monkeypatch, lambda: native.strictly_ascending(ids))
        assert ours is reference is (ids.size < 2 or bool((ids[1:] > ids[:-1]).all()))


def test_same_ids_answers_as_numpy_does(monkeypatch):
    a = np.arange(10_000, dtype=np.int64) * 7
    b = a.copy()
    b[-1] += 1
    cases = [(a, a.copy()), (a, b), (a, a[:-1].copy()), (np.zeros(0, np.int64), np.zeros(0, np.int64)),
             (np.array([-1], np.int64), np.array([2**63 - 1], np.int64))]
    for x, y in cases:
        ours, reference = _both(monkeypatch, lambda: native.same_ids(x, y))
        assert ours is reference is bool(np.array_equal(x, y))


def test_an_empty_id_index_is_the_same_cleared_in_c(monkeypatch):
    from psjob.foundation.tables.index import IdIndex
    for expected in (0, 5000, 300_000):
        ours, reference = _both(monkeypatch, lambda: IdIndex(expected)._entries)
        assert ours.shape == reference.shape and ours.tobytes() == reference.tobytes()
    with pytest.raises(ValueError, match=r"entries must be int64 \[slots, 2\]"):
        native.index_clear(np.zeros((4, 3), np.int64), 1)
