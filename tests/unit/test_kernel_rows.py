"""psjob.foundation.kernels.rows: whole-row take/put give exactly what numpy indexing gives; stable_order what a stable argsort gives."""
import numpy as np
import pytest

from psjob.foundation.kernels.rows import put_rows, stable_order, take_rows


@pytest.mark.parametrize("shape", [(50,), (50, 1), (50, 16), (50, 3, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_take_and_put_match_indexing(shape, dtype):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(shape) * 100).astype(dtype)
    rows = rng.choice(shape[0], 20, replace=False)
    got = take_rows(a, rows)
    np.testing.assert_array_equal(got, a[rows])
    got[...] = 0                                   # a new array, not a view of `a`
    assert np.count_nonzero(a[rows]) > 0
    values = (rng.standard_normal((20,) + shape[1:]) * 100).astype(dtype)
    expected = a.copy()
    expected[rows] = values
    put_rows(a, rows, values)
    np.testing.assert_array_equal(a, expected)


def test_clip_mode_and_other_layouts():
    a = np.arange(40, dtype=np.float32).reshape(10, 4)
    np.testing.assert_array_equal(take_rows(a, np.array([-1, 3, 99]), mode="clip"), a[[0, 3, 9]])
    with pytest.raises(IndexError):
        take_rows(a, np.array([10]))
    strided = a[:, ::2]                            # not contiguous: the indexing path
    np.testing.assert_array_equal(take_rows(strided, np.array([2, 5])), strided[[2, 5]])
    b = a.copy()
    put_rows(b, np.array([1, 4]), np.float64(7.0) * np.ones((2, 4)))   # converted to float32
    assert b.dtype == np.float32 and (b[[1, 4]] == 7.0).all()
    put_rows(b, np.array([2, 6]), np.float32(-1.0))                     # broadcast: indexing path
    assert (b[[2, 6]] == -1.0).all()
    np.testing.assert_array_equal(np.delete(b, [1, 2, 4, 6], axis=0), np.delete(a, [1, 2, 4, 6], axis=0))


@pytest.mark.parametrize("size", [0, 1, 100, 2048, 30000])
@pytest.mark.parametrize("high", [3, 70_000, 2 ** 32 - 1, 2 ** 40])
def test_stable_order_is_argsorts_stable_order_at_every_id_range(size, high):
    """Ids below 2**32 take two 16-bit radix passes, larger ones numpy's argsort; both must
    give exactly the stable argsort (equal ids keep their order: merges rely on it)."""
    ids = np.random.default_rng(size + high % 97).integers(0, high, size)
    np.testing.assert_array_equal(stable_order(ids), np.argsort(ids, kind="stable"))


def test_stable_order_of_negative_ids_falls_back_to_argsort():
    ids = np.random.default_rng(0).integers(-50, 50, 5000)
    np.testing.assert_array_equal(stable_order(ids), np.argsort(ids, kind="stable"))
