"""psjob.kernels.rows: whole-row take/put give exactly what numpy indexing gives."""
import numpy as np
import pytest

from psjob.kernels.rows import put_rows, take_rows


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
