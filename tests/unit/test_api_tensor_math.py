"""psjob's Paddle 2.x tensor functions (paddle.cumsum, paddle.argsort, paddle.unique, ...) and
Fluid 1.x layers (fluid.layers.argsort, unique, one_hot, ...) against the numbers real Paddle
gives for the same program.

How the expected values were made: the programs in `build_paddle2` and `build_fluid1` were
run, unchanged, by Paddle 3.0.0 (static mode, CPU) and by Paddle 1.8.5 (Fluid, CPU) on the
inputs below; their fetched arrays are pasted here, rounded to 6 decimals. Where Paddle 3.0
returns a 0-D tensor psjob returns shape [1] (its reductions' convention), and
paddle.where(cond, x, 0.0) stays float32 (Paddle 3.0 promotes it to float64 for the Python
scalar). The gradients are checked against finite differences in test_op_gradients.py.
"""
import numpy as np
import pytest

import psjob as paddle
import psjob.fluid as fluid
from psjob.fluid.base import GraphError

paddle.enable_static()
# isfinite / isnan / has_nan are checked on log(x) of negative and zero x, on purpose.
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in log:RuntimeWarning",
                                        "ignore:divide by zero encountered in log:RuntimeWarning")

X = np.array([[0.5, -2.5, 0.7, 3.0], [1.5, 0.7, 0.7, -1.0], [2.5, 0.0, -0.5, 0.7]], np.float32)
V = np.array([3, 1, 2, 3, 1, 5], np.int64)
IX = np.array([[2, 0], [1, 3], [0, 0]], np.int64)


def build_paddle2(x, v, ix):
    r = {}
    r["cumsum_ax1"] = paddle.cumsum(x, axis=1)
    r["cumsum_none"] = paddle.cumsum(x)
    r["cumsum_neg"] = paddle.cumsum(x, axis=-2)
    r["argsort_ties"] = paddle.argsort(x, axis=1)
    r["argsort_desc"] = paddle.argsort(x, axis=-1, descending=True)
    r["argsort_ax0"] = paddle.argsort(x, axis=0)
    r["sort_desc"] = paddle.sort(x, axis=0, descending=True)
    r["flip"] = paddle.flip(x, axis=[0, -1])
    r["roll"] = paddle.roll(x, shifts=1, axis=1)
    r["roll_flat"] = paddle.roll(x, shifts=2)
    r["unbind2"] = paddle.unbind(x, axis=1)[2]
    r["chunk1"] = paddle.chunk(x, 2, axis=1)[1]
    r["index_select"] = paddle.index_select(x, ix[:, 0], axis=1)
    r["index_sample"] = paddle.index_sample(x, ix)
    r["gather_nd"] = paddle.gather_nd(x, ix)
    r["scatter_over"] = paddle.scatter(x, ix[:, 0], x * 10.0)
    r["scatter_add"] = paddle.scatter(x, ix[:, 0], x * 10.0, overwrite=False)
    r["scatter_nd_add"] = paddle.scatter_nd_add(x, ix, paddle.full([3], 100.0))
    r["where_scalar"] = paddle.where(x > 0.6, x, 0.0)
    r["nonzero"] = paddle.nonzero(x > 0.6)
    r["logical_xor"] = paddle.logical_xor(x > 0.6, x < 1.0)
    r["logical_not"] = paddle.logical_not(x > 0.6)
    r["isfinite"] = paddle.isfinite(paddle.log(x))
    r["isnan"] = paddle.isnan(paddle.log(x))
    r["isinf"] = paddle.isinf(paddle.log(x))
    r["any1"] = paddle.any(x > 2.0, axis=1)
    r["all_keep"] = paddle.all(x > -1.0, axis=0, keepdim=True)
    r["argmin"] = paddle.argmin(x, axis=1)
    r["argmin_keep"] = paddle.argmin(x, axis=0, keepdim=True)
    r["unique_out"], r["unique_index"], r["unique_inverse"], r["unique_counts"] = paddle.unique(
        v, return_index=True, return_inverse=True, return_counts=True)
    r["sign"] = paddle.sign(x)
    r["floor"] = paddle.floor(x)
    r["ceil"] = paddle.ceil(x)
    r["round"] = paddle.round(x)
    r["sin"] = paddle.sin(x)
    r["rsqrt"] = paddle.rsqrt(paddle.abs(x) + 1.0)
    r["reciprocal"] = paddle.reciprocal(x + 5.0)
    r["erf"] = paddle.erf(x)
    r["log2"] = paddle.log2(paddle.abs(x) + 1.0)
    r["broadcast_to"] = paddle.broadcast_to(x[0:1], [3, 4])
    r["expand_as"] = paddle.expand_as(x[:, 0:1], x)
    r["numel"] = paddle.numel(x)
    r["linspace"] = paddle.linspace(0, 1, 5)
    r["diag_vec"] = paddle.diag(x[0], offset=1, padding_value=9)
    r["diag_mat"] = paddle.diag(x, offset=-1)
    r["eye"] = paddle.eye(2, 3)
    r["take_along"] = paddle.take_along_axis(x, ix, axis=1)
    r["put_along"] = paddle.put_along_axis(x, ix, 7.0, axis=1)
    r["std"] = paddle.std(x, axis=1)
    r["var_all"] = paddle.var(x, unbiased=False)
    r["logsumexp"] = paddle.logsumexp(x, axis=1, keepdim=True)
    r["logsumexp_all"] = paddle.logsumexp(x)
    r["amax"] = paddle.amax(x, axis=0)
    r["count_nonzero"] = paddle.count_nonzero(paddle.floor(x), axis=1)
    r["diff"] = paddle.diff(x, axis=1)
    r["trace"] = paddle.trace(x, offset=1)
    r["repeat_interleave"] = paddle.repeat_interleave(x, 2, axis=0)
    r["outer"] = paddle.outer(x[0], x[1])
    r["dot"] = paddle.dot(x, x)
    r["addmm"] = paddle.addmm(x[:, 0:3], x[:, 0:2], x[0:2, 0:3], beta=0.5, alpha=2.0)
    r["searchsorted"] = paddle.bucketize(x, paddle.sort(x[1]), right=False)
    r["norm_fro"] = paddle.norm(x)
    r["norm_p1"] = paddle.norm(x, p=1, axis=1)
    r["allclose"] = paddle.allclose(x, x + 1e-9)
    r["equal_all"] = paddle.equal_all(x, x * 1.0)
    r["meshgrid0"], r["meshgrid1"] = paddle.meshgrid(x[0], x[:, 1])
    r["unstack1"] = paddle.unstack(x, axis=0)[1]
    return r


# Paddle 3.0.0's values for build_paddle2 (see the module docstring).
PADDLE300 = {
    'cumsum_ax1': ([[0.5, -2.0, -1.3, 1.7], [1.5, 2.2, 2.9, 1.9], [2.5, 2.5, 2.0, 2.7]], 'float32'),
    'cumsum_none': ([0.5, -2.0, -1.3, 1.7, 3.2, 3.9, 4.6, 3.6, 6.1, 6.1, 5.6, 6.3], 'float32'),
    'cumsum_neg': ([[0.5, -2.5, 0.7, 3.0], [2.0, -1.8, 1.4, 2.0], [4.5, -1.8, 0.9, 2.7]], 'float32'),
    'argsort_ties': ([[1, 0, 2, 3], [3, 1, 2, 0], [2, 1, 3, 0]], 'int64'),
    'argsort_desc': ([[3, 2, 0, 1], [0, 1, 2, 3], [0, 3, 1, 2]], 'int64'),
    'argsort_ax0': ([[0, 0, 2, 1], [1, 2, 0, 2], [2, 1, 1, 0]], 'int64'),
    'sort_desc': ([[2.5, 0.7, 0.7, 3.0], [1.5, 0.0, 0.7, 0.7], [0.5, -2.5, -0.5, -1.0]], 'float32'),
    'flip': ([[0.7, -0.5, 0.0, 2.5], [-1.0, 0.7, 0.7, 1.5], [3.0, 0.7, -2.5, 0.5]], 'float32'),
    'roll': ([[3.0, 0.5, -2.5, 0.7], [-1.0, 1.5, 0.7, 0.7], [0.7, 2.5, 0.0, -0.5]], 'float32'),
    'roll_flat': ([[-0.5, 0.7, 0.5, -2.5], [0.7, 3.0, 1.5, 0.7], [0.7, -1.0, 2.5, 0.0]], 'float32'),
    'unbind2': ([0.7, 0.7, -0.5], 'float32'),
    'chunk1': ([[0.7, 3.0], [0.7, -1.0], [-0.5, 0.7]], 'float32'),
    'index_select': ([[0.7, -2.5, 0.5], [0.7, 0.7, 1.5], [-0.5, 0.0, 2.5]], 'float32'),
    'index_sample': ([[0.7, 0.5], [0.7, -1.0], [2.5, 2.5]], 'float32'),
    'gather_nd': ([2.5, -1.0, 0.5], 'float32'),
    'scatter_over': ([[25.0, 0.0, -5.0, 7.0], [15.0, 7.0, 7.0, -10.0], [5.0, -25.0, 7.0, 30.0]], 'float32'),
    'scatter_add': ([[25.0, 0.0, -5.0, 7.0], [15.0, 7.0, 7.0, -10.0], [5.0, -25.0, 7.0, 30.0]], 'float32'),
    'scatter_nd_add': ([[100.5, -2.5, 0.7, 3.0], [1.5, 0.7, 0.7, 99.0], [102.5, 0.0, -0.5, 0.7]], 'float32'),
    'where_scalar': ([[0.0, 0.0, 0.7, 3.0], [1.5, 0.7, 0.7, 0.0], [2.5, 0.0, 0.0, 0.7]], 'float32'),
    'nonzero': ([[0, 2], [0, 3], [1, 0], [1, 1], [1, 2], [2, 0], [2, 3]], 'int64'),
    'logical_xor': ([[True, True, False, True], [True, False, False, True], [True, True, True, False]], 'bool'),
    'logical_not': ([[True, True, False, False], [False, False, False, True], [False, True, True, False]], 'bool'),
    'isfinite': ([[True, False, True, True], [True, True, True, False], [True, False, False, True]], 'bool'),
    'isnan': ([[False, True, False, False], [False, False, False, True], [False, False, True, False]], 'bool'),
    'isinf': ([[False, False, False, False], [False, False, False, False], [False, True, False, False]], 'bool'),
    'any1': ([True, False, True], 'bool'),
    'all_keep': ([[True, False, True, False]], 'bool'),
    'argmin': ([1, 3, 2], 'int64'),
    'argmin_keep': ([[0, 0, 2, 1]], 'int64'),
    'unique_out': ([1, 2, 3, 5], 'int64'),
    'unique_index': ([1, 2, 0, 5], 'int64'),
    'unique_inverse': ([2, 0, 1, 2, 0, 3], 'int64'),
    'unique_counts': ([2, 1, 2, 1], 'int64'),
    'sign': ([[1.0, -1.0, 1.0, 1.0], [1.0, 1.0, 1.0, -1.0], [1.0, 0.0, -1.0, 1.0]], 'float32'),
    'floor': ([[0.0, -3.0, 0.0, 3.0], [1.0, 0.0, 0.0, -1.0], [2.0, 0.0, -1.0, 0.0]], 'float32'),
    'ceil': ([[1.0, -2.0, 1.0, 3.0], [2.0, 1.0, 1.0, -1.0], [3.0, 0.0, -0.0, 1.0]], 'float32'),
    'round': ([[1.0, -3.0, 1.0, 3.0], [2.0, 1.0, 1.0, -1.0], [3.0, 0.0, -1.0, 1.0]], 'float32'),
    'sin': ([[0.479426, -0.598472, 0.644218, 0.14112],
             [0.997495, 0.644218, 0.644218, -0.841471],
             [0.598472, 0.0, -0.479426, 0.644218]],
            'float32'),
    'rsqrt': ([[0.816497, 0.534522, 0.766965, 0.5],
               [0.632455, 0.766965, 0.766965, 0.707107],
               [0.534522, 1.0, 0.816497, 0.766965]],
              'float32'),
    'reciprocal': ([[0.181818, 0.4, 0.175439, 0.125],
                    [0.153846, 0.175439, 0.175439, 0.25],
                    [0.133333, 0.2, 0.222222, 0.175439]],
                   'float32'),
    'erf': ([[0.5205, -0.999593, 0.677801, 0.999978],
             [0.966105, 0.677801, 0.677801, -0.842701],
             [0.999593, 0.0, -0.5205, 0.677801]],
            'float32'),
    'log2': ([[0.584962, 1.807355, 0.765535, 2.0],
              [1.321928, 0.765535, 0.765535, 1.0],
              [1.807355, 0.0, 0.584962, 0.765535]],
             'float32'),
    'broadcast_to': ([[0.5, -2.5, 0.7, 3.0], [0.5, -2.5, 0.7, 3.0], [0.5, -2.5, 0.7, 3.0]], 'float32'),
    'expand_as': ([[0.5, 0.5, 0.5, 0.5], [1.5, 1.5, 1.5, 1.5], [2.5, 2.5, 2.5, 2.5]], 'float32'),
    'numel': (12, 'int64'),
    'linspace': ([0.0, 0.25, 0.5, 0.75, 1.0], 'float32'),
    'diag_vec': ([[9.0, 0.5, 9.0, 9.0, 9.0],
                  [9.0, 9.0, -2.5, 9.0, 9.0],
                  [9.0, 9.0, 9.0, 0.7, 9.0],
                  [9.0, 9.0, 9.0, 9.0, 3.0],
                  [9.0, 9.0, 9.0, 9.0, 9.0]],
                 'float32'),
    'diag_mat': ([1.5, 0.0], 'float32'),
    'eye': ([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], 'float32'),
    'take_along': ([[0.7, 0.5], [0.7, -1.0], [2.5, 2.5]], 'float32'),
    'put_along': ([[7.0, -2.5, 7.0, 3.0], [1.5, 7.0, 0.7, 7.0], [7.0, 0.0, -0.5, 0.7]], 'float32'),
    'std': ([2.255918, 1.05317, 1.312441], 'float32'),
    'var_all': (1.991875, 'float32'),
    'logsumexp': ([[3.170949], [2.183472], [2.760186]], 'float32'),
    'logsumexp_all': (3.881769, 'float32'),
    'amax': ([2.5, 0.7, 0.7, 3.0], 'float32'),
    'count_nonzero': ([2, 2, 2], 'int64'),
    'diff': ([[-3.0, 3.2, 2.3], [-0.8, 0.0, -1.7], [-2.5, -0.5, 1.2]], 'float32'),
    'trace': (-1.1, 'float32'),
    'repeat_interleave': ([[0.5, -2.5, 0.7, 3.0],
                           [0.5, -2.5, 0.7, 3.0],
                           [1.5, 0.7, 0.7, -1.0],
                           [1.5, 0.7, 0.7, -1.0],
                           [2.5, 0.0, -0.5, 0.7],
                           [2.5, 0.0, -0.5, 0.7]],
                          'float32'),
    'outer': ([[0.75, 0.35, 0.35, -0.5], [-3.75, -1.75, -1.75, 2.5], [1.05, 0.49, 0.49, -0.7], [4.5, 2.1, 2.1, -3.0]],
              'float32'),
    'dot': ([15.99, 4.23, 6.99], 'float32'),
    'addmm': ([[-6.75, -7.25, -2.45], [4.35, -6.17, 3.43], [3.75, -12.5, 3.25]], 'float32'),
    'searchsorted': ([[1, 0, 1, 4], [3, 1, 1, 0], [4, 1, 1, 1]], 'int64'),
    'norm_fro': (5.216321, 'float32'),
    'norm_p1': ([6.7, 3.9, 3.7], 'float32'),
    'allclose': (True, 'bool'),
    'equal_all': (True, 'bool'),
    'meshgrid0': ([[0.5, 0.5, 0.5], [-2.5, -2.5, -2.5], [0.7, 0.7, 0.7], [3.0, 3.0, 3.0]], 'float32'),
    'meshgrid1': ([[-2.5, 0.7, 0.0], [-2.5, 0.7, 0.0], [-2.5, 0.7, 0.0], [-2.5, 0.7, 0.0]], 'float32'),
    'unstack1': ([1.5, 0.7, 0.7, -1.0], 'float32'),
}


def _run(build, feed_vars, feed):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        made = build(*[fluid.data(n, s, d) for n, s, d in feed_vars])
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    names = list(made)
    return dict(zip(names, exe.run(main, feed=feed, fetch_list=[made[n] for n in names], scope=scope)))


def _check(got, want, dtype, name):
    got, want = np.asarray(got), np.asarray(want, dtype=dtype)
    assert got.dtype == want.dtype, f"{name}: dtype {got.dtype}, Paddle gives {want.dtype}"
    if want.ndim == 0:  # Paddle 3's 0-D result: psjob's [1]
        assert got.shape == (1,), f"{name}: shape {got.shape}"
        want = want.reshape(1)
    assert got.shape == want.shape, f"{name}: shape {got.shape}, Paddle gives {want.shape}"
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-5, atol=2e-6,
                               err_msg=name)


@pytest.fixture(scope="module")
def paddle2_results():
    return _run(build_paddle2, [("x", [3, 4], "float32"), ("v", [6], "int64"), ("ix", [3, 2], "int64")],
                {"x": X, "v": V, "ix": IX})


@pytest.mark.parametrize("name", sorted(PADDLE300))
def test_paddle2_function_matches_paddle_3_0(paddle2_results, name):
    _check(paddle2_results[name], *PADDLE300[name], name)


F6 = np.array([2.5, -1.5, 0.5, 1.0, 0.5, 2.5], np.float32)


def build_paddle2_edges(x, f, i1):
    """Edge cases: negative axes, keepdim, ties, int dtypes, 1-D inputs, a [1, 2] index."""
    r = {}
    r["take_bcast"] = paddle.take_along_axis(x, i1, axis=1)
    r["index_select_neg"] = paddle.index_select(x, paddle.cast(i1[0], "int32"), axis=-1)
    r["unique_float"] = paddle.unique(f)
    r["unique_float_inv"] = paddle.unique(f, return_inverse=True)[1]
    r["argmin_flat"] = paddle.argmin(x)
    r["cumsum_dtype"] = paddle.cumsum(x, axis=0, dtype="float64")
    r["any_all"] = paddle.any(x > 1)
    r["linspace_int"] = paddle.linspace(0, 10, 4, dtype="int64")
    r["linspace_neg"] = paddle.linspace(1.0, -1.0, 5)
    r["diag_neg"] = paddle.diag(f[0:2], offset=-2)
    r["roll_multi"] = paddle.roll(x, shifts=[-1, 2], axis=[0, 1])
    r["flip_int"] = paddle.flip(x, axis=1)
    r["where_int_x"] = paddle.where(x > 0.6, 1.0, x)
    r["sort_1d_desc_ties"] = paddle.argsort(f, descending=True)
    r["sort_1d_ties"] = paddle.argsort(f)
    r["logsumexp_neg_axis"] = paddle.logsumexp(x, axis=-1)
    r["amin_keep"] = paddle.amin(x, axis=[0, 1], keepdim=True)
    r["var_unbiased_axis0"] = paddle.var(x, axis=0)
    r["std_keep"] = paddle.std(x, axis=-1, keepdim=True, unbiased=False)
    r["repeat_flat"] = paddle.repeat_interleave(f[0:3], 2)
    r["gather_nd_1col"] = paddle.gather_nd(x, i1[:, 1:2])
    r["diff_prepend"] = paddle.diff(f, prepend=f[0:2])
    r["count_nonzero_all"] = paddle.count_nonzero(x)
    r["trace_neg"] = paddle.trace(x, offset=-1)
    r["norm_inf"] = paddle.norm(x, p=float("inf"), axis=0)
    r["round_half"] = paddle.round(paddle.scale(f, 1.0))
    r["searchsorted_left"] = paddle.searchsorted(paddle.sort(f), f)
    r["nonzero_float"] = paddle.nonzero(x)
    r["eye_sq"] = paddle.eye(3, dtype="int32")
    r["expand_as_3d"] = paddle.expand_as(x[0], paddle.unsqueeze(x, 0))
    return r


# Paddle 3.0.0's values for build_paddle2_edges (made as PADDLE300's).
PADDLE300_EDGES = {
    'take_bcast': ([[3.0, -2.5], [-1.0, 0.7], [0.7, 0.0]], 'float32'),
    'index_select_neg': ([[3.0, -2.5], [-1.0, 0.7], [0.7, 0.0]], 'float32'),
    'unique_float': ([-1.5, 0.5, 1.0, 2.5], 'float32'),
    'unique_float_inv': ([3, 0, 1, 2, 1, 3], 'int64'),
    'argmin_flat': (1, 'int64'),
    'cumsum_dtype': ([[0.5, -2.5, 0.7, 3.0], [2.0, -1.8, 1.4, 2.0], [4.5, -1.8, 0.9, 2.7]], 'float64'),
    'any_all': (True, 'bool'),
    'linspace_int': ([0, 3, 6, 10], 'int64'),
    'linspace_neg': ([1.0, 0.5, 0.0, -0.5, -1.0], 'float32'),
    'diag_neg': ([[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [2.5, 0.0, 0.0, 0.0], [0.0, -1.5, 0.0, 0.0]],
                 'float32'),
    'roll_multi': ([[0.7, -1.0, 1.5, 0.7], [-0.5, 0.7, 2.5, 0.0], [0.7, 3.0, 0.5, -2.5]], 'float32'),
    'flip_int': ([[3.0, 0.7, -2.5, 0.5], [-1.0, 0.7, 0.7, 1.5], [0.7, -0.5, 0.0, 2.5]], 'float32'),
    'where_int_x': ([[0.5, -2.5, 1.0, 1.0], [1.0, 1.0, 1.0, -1.0], [1.0, 0.0, -0.5, 1.0]], 'float32'),
    'sort_1d_desc_ties': ([0, 5, 3, 2, 4, 1], 'int64'),
    'sort_1d_ties': ([1, 2, 4, 3, 0, 5], 'int64'),
    'logsumexp_neg_axis': ([3.170949, 2.183472, 2.760186], 'float32'),
    'amin_keep': ([[-2.5]], 'float32'),
    'var_unbiased_axis0': ([1.0, 2.83, 0.48, 4.03], 'float32'),
    'std_keep': ([[1.953682], [0.912072], [1.136607]], 'float32'),
    'repeat_flat': ([2.5, 2.5, -1.5, -1.5, 0.5, 0.5], 'float32'),
    'gather_nd_1col': ([[1.5, 0.7, 0.7, -1.0]], 'float32'),
    'diff_prepend': ([-4.0, 4.0, -4.0, 2.0, 0.5, -0.5, 2.0], 'float32'),
    'count_nonzero_all': (11, 'int64'),
    'trace_neg': (1.5, 'float32'),
    'norm_inf': ([2.5, 2.5, 0.7, 3.0], 'float32'),
    'round_half': ([3.0, -2.0, 1.0, 1.0, 1.0, 3.0], 'float32'),
    'searchsorted_left': ([4, 0, 1, 3, 1, 4], 'int64'),
    'nonzero_float': ([[0, 0], [0, 1], [0, 2], [0, 3], [1, 0], [1, 1], [1, 2], [1, 3], [2, 0], [2, 2], [2, 3]],
                      'int64'),
    'eye_sq': ([[1, 0, 0], [0, 1, 0], [0, 0, 1]], 'int32'),
    'expand_as_3d': ([[[0.5, -2.5, 0.7, 3.0], [0.5, -2.5, 0.7, 3.0], [0.5, -2.5, 0.7, 3.0]]], 'float32'),
}


@pytest.fixture(scope="module")
def edge_results():
    return _run(build_paddle2_edges, [("x", [3, 4], "float32"), ("f", [6], "float32"), ("i1", [1, 2], "int64")],
                {"x": X, "f": F6, "i1": np.array([[3, 1]], np.int64)})


@pytest.mark.parametrize("name", sorted(PADDLE300_EDGES))
def test_paddle2_edge_case_matches_paddle_3_0(edge_results, name):
    _check(edge_results[name], *PADDLE300_EDGES[name], name)


X_SMALL = np.array([[0.5, -0.25, 0.7, 0.3], [0.15, 0.7, 0.7, -0.1], [0.25, 0.0, -0.5, 0.7]], np.float32)


def build_paddle2_more(x, ix):
    r = {}
    for n in ("tan", "asin", "acos", "atan", "sinh", "cosh", "expm1"):
        r[n] = getattr(paddle, n)(x)
    r["isclose"] = paddle.isclose(x, x * 1.00001 + 1e-8, rtol=1e-5, atol=0.0)
    r["bitwise_not"] = paddle.bitwise_not(paddle.cast(x * 10, "int32"))
    r["masked_fill"] = paddle.masked_fill(x, x > 0.4, -9.0)
    r["scatter_nd"] = paddle.scatter_nd(ix, x[0:2], [4, 4])
    r["mv"] = paddle.mv(x, x[0])
    return r


# Paddle 3.0.0's values for build_paddle2_more, on X_SMALL and ix [[3], [3]] (made as PADDLE300's).
PADDLE300_MORE = {
    'tan': ([[0.546302, -0.255342, 0.842288, 0.309336],
             [0.151135, 0.842288, 0.842288, -0.100335],
             [0.255342, 0.0, -0.546302, 0.842288]], 'float32'),
    'asin': ([[0.523599, -0.25268, 0.775397, 0.304693],
              [0.150568, 0.775397, 0.775397, -0.100167],
              [0.25268, 0.0, -0.523599, 0.775397]], 'float32'),
    'acos': ([[1.047198, 1.823477, 0.795399, 1.266104],
              [1.420228, 0.795399, 0.795399, 1.670964],
              [1.318116, 1.570796, 2.094395, 0.795399]], 'float32'),
    'atan': ([[0.463648, -0.244979, 0.610726, 0.291457],
              [0.14889, 0.610726, 0.610726, -0.099669],
              [0.244979, 0.0, -0.463648, 0.610726]], 'float32'),
    'sinh': ([[0.521095, -0.252612, 0.758584, 0.30452],
              [0.150563, 0.758584, 0.758584, -0.100167],
              [0.252612, 0.0, -0.521095, 0.758584]], 'float32'),
    'cosh': ([[1.127626, 1.031413, 1.255169, 1.045339],
              [1.011271, 1.255169, 1.255169, 1.005004],
              [1.031413, 1.0, 1.127626, 1.255169]], 'float32'),
    'expm1': ([[0.648721, -0.221199, 1.013753, 0.349859],
               [0.161834, 1.013753, 1.013753, -0.095163],
               [0.284025, 0.0, -0.393469, 1.013753]], 'float32'),
    'isclose': ([[False, False, False, False], [False, False, False, True], [False, False, False, False]], 'bool'),
    'bitwise_not': ([[-6, 1, -8, -4], [-2, -8, -8, 0], [-3, -1, 4, -8]], 'int32'),
    'masked_fill': ([[-9.0, -0.25, -9.0, 0.3], [0.15, -9.0, -9.0, -0.1], [0.25, 0.0, -0.5, -9.0]], 'float32'),
    'scatter_nd': ([[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.65, 0.45, 1.4, 0.2]],
                   'float32'),
    'mv': ([0.8925, 0.36, -0.015], 'float32'),
}


@pytest.fixture(scope="module")
def more_results():
    return _run(build_paddle2_more, [("x", [3, 4], "float32"), ("ix", [2, 1], "int64")],
                {"x": X_SMALL, "ix": np.array([[3], [3]], np.int64)})


@pytest.mark.parametrize("name", sorted(PADDLE300_MORE))
def test_more_functions_match_paddle_3_0(more_results, name):
    _check(more_results[name], *PADDLE300_MORE[name], name)


F = np.array([[0.5, -2.5, 0.7], [1.5, 0.7, 0.7]], np.float32)


def build_fluid1(x, f, ids):
    layers = fluid.layers
    r = {}
    r["unique_out"], r["unique_index"] = layers.unique(x)
    r["uc_out"], r["uc_index"], r["uc_count"] = layers.unique_with_counts(x, dtype="int64")
    r["argmax"] = layers.argmax(f)
    r["argmin1"] = layers.argmin(f, axis=1)
    r["argsort_out"], r["argsort_ids"] = layers.argsort(f, axis=1, descending=True)
    r["cumsum_ex_rev"] = layers.cumsum(f, axis=1, exclusive=True, reverse=True)
    r["cumsum"] = layers.cumsum(f)
    r["where"] = layers.where(f > 0.5)
    r["size"] = layers.size(f)
    r["round"] = layers.round(f)
    r["floor"] = layers.floor(f)
    r["sign"] = layers.sign(f)
    r["rsqrt"] = layers.rsqrt(layers.abs(f))
    r["cos"] = layers.cos(f)
    r["pow"] = layers.pow(layers.abs(f), factor=1.5)
    r["one_hot"] = layers.one_hot(ids, 4)
    r["linspace"] = layers.linspace(0, 1, 5, "float32")
    r["range"] = layers.range(0, 10, 3, "int64")
    r["has_inf"] = layers.has_inf(f)
    r["has_nan"] = layers.has_nan(layers.log(f))
    r["isfinite"] = layers.isfinite(f)
    r["reduce_all"] = layers.reduce_all(f > 0.0, dim=1)
    r["reduce_any"] = layers.reduce_any(f > 1.0)
    r["l2_normalize"] = layers.l2_normalize(f, axis=1)
    r["gather"] = layers.gather(f, ids[0:2, 0])
    r["gather_nd"] = layers.gather_nd(f, layers.concat([ids[0:2] * 0 + 1, ids[0:2] + 1], axis=1))
    r["scatter"] = layers.scatter(f, ids[1:3, 0] * 0, f[0:2] * 10.0, overwrite=False)
    r["scatter_nd_add"] = layers.scatter_nd_add(f, ids[0:2], f[0:2])
    r["strided_slice"] = layers.strided_slice(f, axes=[1], starts=[-1], ends=[-4], strides=[-2])
    r["stack"] = layers.stack([f, f * 2.0], axis=1)
    r["unstack1"] = layers.unstack(f, axis=1)[1]
    r["expand_as"] = layers.expand_as(f, layers.concat([f, f], axis=0))
    r["logical_and"] = layers.logical_and(f > 0.0, f < 1.0)
    r["logical_not"] = layers.logical_not(f > 0.0)
    r["reverse"] = layers.reverse(f, axis=[0, 1])
    r["zeros"] = layers.zeros([2, 2], "int64")
    r["ones_like"] = layers.ones_like(f)
    r["zeros_like"] = layers.zeros_like(ids)
    r["clip_by_norm"] = layers.clip_by_norm(f, max_norm=1.0)
    r["mul"] = layers.mul(f, layers.transpose(f, [1, 0]))
    # a near one-hot row: the draw is the hot column whatever the random number
    r["sampling_id"] = layers.sampling_id(layers.softmax(f * 0.0 + layers.one_hot(ids[0:2], 3) * 100.0))
    return r


# Paddle 1.8.5's values for build_fluid1 (see the module docstring).
PADDLE185 = {
    'unique_out': ([2, 3, 1, 5], 'int64'),
    'unique_index': ([0, 1, 1, 2, 3, 1], 'int32'),
    'uc_out': ([2, 3, 1, 5], 'int64'),
    'uc_index': ([0, 1, 1, 2, 3, 1], 'int64'),
    'uc_count': ([1, 3, 1, 1], 'int64'),
    'argmax': ([1, 1, 0], 'int64'),
    'argmin1': ([1, 1], 'int64'),
    'argsort_out': ([[0.7, 0.5, -2.5], [1.5, 0.7, 0.7]], 'float32'),
    'argsort_ids': ([[2, 0, 1], [0, 1, 2]], 'int64'),
    'cumsum_ex_rev': ([[-1.8, 0.7, 0.0], [1.4, 0.7, 0.0]], 'float32'),
    'cumsum': ([[0.5, -2.0, -1.3], [1.5, 2.2, 2.9]], 'float32'),
    'where': ([[0, 2], [1, 0], [1, 1], [1, 2]], 'int64'),
    'size': ([6], 'int64'),
    'round': ([[1.0, -3.0, 1.0], [2.0, 1.0, 1.0]], 'float32'),
    'floor': ([[0.0, -3.0, 0.0], [1.0, 0.0, 0.0]], 'float32'),
    'sign': ([[1.0, -1.0, 1.0], [1.0, 1.0, 1.0]], 'float32'),
    'rsqrt': ([[1.414214, 0.632456, 1.195229], [0.816497, 1.195229, 1.195229]], 'float32'),
    'cos': ([[0.877583, -0.801144, 0.764842], [0.070737, 0.764842, 0.764842]], 'float32'),
    'pow': ([[0.353553, 3.952847, 0.585662], [1.837117, 0.585662, 0.585662]], 'float32'),
    'one_hot': ([[0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]], 'float32'),
    'linspace': ([0.0, 0.25, 0.5, 0.75, 1.0], 'float32'),
    'range': ([0, 3, 6, 9], 'int64'),
    'has_inf': ([False], 'bool'),
    'has_nan': ([True], 'bool'),
    'isfinite': ([True], 'bool'),
    'reduce_all': ([False, True], 'bool'),
    'reduce_any': ([True], 'bool'),
    'l2_normalize': ([[0.189117, -0.945587, 0.264764], [0.834622, 0.38949, 0.38949]], 'float32'),
    'gather': ([[1.5, 0.7, 0.7], [0.5, -2.5, 0.7]], 'float32'),
    'gather_nd': ([0.7, 0.7], 'float32'),
    'scatter': ([[20.0, -18.0, 14.0], [1.5, 0.7, 0.7]], 'float32'),
    'scatter_nd_add': ([[2.0, -1.8, 1.4], [2.0, -1.8, 1.4]], 'float32'),
    'strided_slice': ([[0.7, 0.5], [0.7, 1.5]], 'float32'),
    'stack': ([[[0.5, -2.5, 0.7], [1.0, -5.0, 1.4]], [[1.5, 0.7, 0.7], [3.0, 1.4, 1.4]]], 'float32'),
    'unstack1': ([-2.5, 0.7], 'float32'),
    'expand_as': ([[0.5, -2.5, 0.7], [1.5, 0.7, 0.7], [0.5, -2.5, 0.7], [1.5, 0.7, 0.7]], 'float32'),
    'logical_and': ([[True, False, True], [False, True, True]], 'bool'),
    'logical_not': ([[False, True, False], [False, False, False]], 'bool'),
    'reverse': ([[0.7, 0.7, 1.5], [0.7, -2.5, 0.5]], 'float32'),
    'zeros': ([[0, 0], [0, 0]], 'int64'),
    'ones_like': ([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]], 'float32'),
    'zeros_like': ([[0], [0], [0]], 'int64'),
    'clip_by_norm': ([[0.156403, -0.782014, 0.218964], [0.469208, 0.218964, 0.218964]], 'float32'),
    'mul': ([[6.99, -0.51], [-0.51, 3.23]], 'float32'),
    'sampling_id': ([1, 0], 'int64'),
}


@pytest.fixture(scope="module")
def fluid1_results():
    return _run(build_fluid1, [("x", [6], "int64"), ("f", [2, 3], "float32"), ("ids", [3, 1], "int64")],
                {"x": np.array([2, 3, 3, 1, 5, 3]), "f": F, "ids": np.array([[1], [0], [2]])})


@pytest.mark.parametrize("name", sorted(PADDLE185))
def test_fluid1_layer_matches_paddle_1_8(fluid1_results, name):
    _check(fluid1_results[name], *PADDLE185[name], name)


# -- behaviour beyond the matched numbers ----------------------------------------------------

def _eval(build, feed):
    """build(**data vars) -> list of outputs; data declared from the feed's arrays, batch -1."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ins = {k: fluid.data(k, [-1] + list(a.shape[1:]), str(a.dtype)) for k, a in feed.items()}
        outs = build(**ins)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    return exe.run(main, feed=feed, fetch_list=list(outs), scope=scope)


def test_var_and_std_over_an_unknown_batch_count_at_run_time():
    got = _eval(lambda x: [paddle.var(x, axis=0), paddle.std(x, axis=[0, 1], unbiased=False),
                           paddle.var(x, axis=1, keepdim=True)], {"x": X})
    np.testing.assert_allclose(got[0], X.var(axis=0, ddof=1), rtol=1e-5)
    np.testing.assert_allclose(got[1], [X.std()], rtol=1e-5)
    np.testing.assert_allclose(got[2], X.var(axis=1, ddof=1, keepdims=True), rtol=1e-5)


def test_composed_functions_pass_gradients_back():
    """std, diff, dot, meshgrid, outer and addmm are compositions of differentiable ops."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = paddle.create_parameter([3, 4], "float32", name="w",
                                    default_initializer=paddle.nn.initializer.Assign(X))
        terms = [paddle.std(x), paddle.diff(x, n=2, axis=1), paddle.dot(x, x), paddle.meshgrid(x[0], x[:, 0])[0],
                 paddle.outer(x[0], x[1]), paddle.logsumexp(x, axis=0), paddle.sort(x, axis=1, descending=True),
                 paddle.take_along_axis(x, paddle.argsort(x, axis=0), axis=0)]
        loss = paddle.add_n([paddle.sum(t) for t in terms])
        fluid.backward.append_backward(loss)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    (g,) = exe.run(main, fetch_list=["w@GRAD"], scope=scope)
    assert g.shape == X.shape and np.isfinite(g).all() and np.abs(g).sum() > 0


def test_nonzero_and_where_without_x_and_y():
    got = _eval(lambda x: list(paddle.where(x > 0.6)) + list(paddle.nonzero(x, as_tuple=True)), {"x": X})
    rows, cols = np.nonzero(X > 0.6)
    np.testing.assert_array_equal(got[0], rows)
    np.testing.assert_array_equal(got[1], cols)
    assert got[0].dtype == np.int64
    np.testing.assert_array_equal(got[2], np.nonzero(X)[0])


def test_unique_index_dtype_and_fluid1_order_of_first_appearance():
    got = _eval(lambda v: [*paddle.unique(v, return_inverse=True, dtype="int32"), *fluid.layers.unique(v)],
                {"v": V})
    np.testing.assert_array_equal(got[0], [1, 2, 3, 5])
    assert got[1].dtype == np.int32
    np.testing.assert_array_equal(got[2], [3, 1, 2, 5])  # Fluid 1.x: not sorted
    assert got[3].dtype == np.int32  # Fluid 1.x's default index dtype


def test_put_along_axis_add_and_searchsorted_per_row():
    seq = np.array([[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]], np.float32)
    vals = np.array([[3.0, 6.0], [1.0, 4.0]], np.float32)
    got = _eval(lambda s, v: [paddle.searchsorted(s, v), paddle.searchsorted(s, v, right=True, out_int32=True),
                              paddle.put_along_axis(s, paddle.cast(v * 0.0, "int64"), v, axis=1, reduce="add")],
                {"s": seq, "v": vals})
    np.testing.assert_array_equal(got[0], [[1, 3], [0, 1]])
    np.testing.assert_array_equal(got[1], [[2, 3], [0, 2]])
    assert got[1].dtype == np.int32
    np.testing.assert_allclose(got[2], [[10.0, 3.0, 5.0], [7.0, 4.0, 6.0]])


def test_random_functions_draw_in_range_with_their_dtypes():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        outs = [paddle.rand([200]), paddle.randn([200], "float64"), paddle.uniform([200], min=2.0, max=3.0),
                paddle.normal(5.0, 0.01, [200]), paddle.randint(3, 7, [200]), paddle.randperm(9),
                paddle.bernoulli(paddle.full([200], 0.5)), fluid.layers.uniform_random([4, 2], min=-2.0, max=-1.0),
                fluid.layers.gaussian_random([3], mean=1.0, std=0.0)]
    exe = fluid.Executor(fluid.CPUPlace())
    rand, randn, unif, norm, rint, perm, bern, furand, fgauss = exe.run(main, fetch_list=outs, scope=fluid.Scope())
    assert rand.dtype == np.float32 and 0 <= rand.min() and rand.max() < 1
    assert randn.dtype == np.float64 and randn.std() > 0.5
    assert 2.0 <= unif.min() and unif.max() < 3.0
    assert abs(norm.mean() - 5.0) < 0.01
    assert rint.dtype == np.int64 and set(np.unique(rint)) <= {3, 4, 5, 6}
    assert sorted(perm.tolist()) == list(range(9))
    assert set(np.unique(bern)) == {0.0, 1.0}
    assert furand.shape == (4, 2) and -2.0 <= furand.min() and furand.max() < -1.0
    np.testing.assert_allclose(fgauss, [1.0, 1.0, 1.0])


def test_print_writes_the_tensor_and_passes_it_on(capfd):
    got = _eval(lambda x: fluid.layers.Print(x * 2.0, message="doubled", summarize=3), {"x": X})
    np.testing.assert_allclose(got[0], X * 2.0)
    out = capfd.readouterr().out
    # Paddle 3.0.0's format: its C++ tensor formatter's lines, values as ostream writes them
    assert "  - message: doubled\n  - lod: {}\n  - place: Place(cpu)\n  - shape: [3, 4]\n  - layout: NCHW\n" \
           "  - dtype: float32\n  - data: [1 -5 1.4]\n" in out


def test_fluid_rank_size_and_paddle_numel_are_int():
    got = _eval(lambda x: [fluid.layers.rank(x), paddle.rank(x), paddle.numel(x)], {"x": X})
    assert got[0].tolist() == [2] and got[0].dtype == np.int32
    assert got[2].tolist() == [12] and got[2].dtype == np.int64


def test_tensor_methods_and_is_tensor():
    got = _eval(lambda x: [x.cumsum(axis=0), x.flip(0), x.sign(), x.logsumexp(), x.t()], {"x": X})
    np.testing.assert_allclose(got[0], X.cumsum(0), rtol=1e-6)
    np.testing.assert_allclose(got[1], X[::-1])
    np.testing.assert_allclose(got[4], X.T)
    assert paddle.is_tensor(fluid.data("t", [1])) and not paddle.is_tensor(X)


@pytest.mark.parametrize("build, error, words", [
    (lambda x, i: paddle.cumsum(x, axis=2), ValueError, "axis 2 is out of range"),
    (lambda x, i: paddle.index_select(x, x), TypeError, "must be int32 or int64"),
    (lambda x, i: paddle.gather_nd(x, paddle.cast(i, "float32")), TypeError, "must be int32 or int64"),
    (lambda x, i: fluid.layers.one_hot(x, 3), TypeError, "must be int32 or int64"),
    (lambda x, i: fluid.layers.reduce_all(x), TypeError, "must be bool"),
    (lambda x, i: fluid.layers.where(x), TypeError, "must be bool"),
    (lambda x, i: fluid.layers.unique(x, dtype="float32"), TypeError, "'int32' or 'int64'"),
    (lambda x, i: fluid.layers.unstack(x, axis=5), ValueError, "out of range"),
    (lambda x, i: fluid.layers.zeros([2], "complex999"), TypeError, "dtype"),
    (lambda x, i: fluid.layers.create_tensor("nonsense"), TypeError, "dtype"),
    (lambda x, i: paddle.chunk(x, 3, axis=1), ValueError, "does not split into 3"),
    (lambda x, i: paddle.put_along_axis(x, i, 1.0, axis=1, reduce="max"), ValueError, "reduce must be"),
    (lambda x, i: paddle.randint(5, 5), ValueError, "low (5) must be below high (5)"),
    (lambda x, i: paddle.var(i), TypeError, "must be a float tensor"),
    (lambda x, i: paddle.unique(x, axis=0), ValueError, "axis is not supported"),
    (lambda x, i: paddle.diag(paddle.unsqueeze(x, 0)), ValueError, "must be 1-D or 2-D"),
    (lambda x, i: fluid.layers.expand_as(x, paddle.concat([x, x, x], axis=1)[:, 0:5]), GraphError, "multiple"),
])
def test_bad_input_is_refused_by_name(build, error, words):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x, i = fluid.data("x", [3, 4], "float32"), fluid.data("i", [3, 2], "int64")
        with pytest.raises(error, match=None) as info:
            build(x, i)
    assert words in str(info.value)


def test_one_hot_out_of_range_id_fails_unless_allowed():
    ids = np.array([[1], [5]], np.int64)
    with pytest.raises(Exception, match="exceed depth 4"):
        _eval(lambda i: fluid.layers.one_hot(i, 4), {"i": ids})
    got = _eval(lambda i: fluid.layers.one_hot(i, 4, allow_out_of_range=True), {"i": ids})
    np.testing.assert_array_equal(got[0], [[0, 1, 0, 0], [0, 0, 0, 0]])


def test_shard_index_matches_paddle():
    # Paddle 3.0.0, static mode: shard_index([[16], [1], [7], [13]], 20, 3, 1) and (..., 2, ignore_value=-7)
    ids = np.array([[16], [1], [7], [13]], np.int64)
    got = _eval(lambda x: [paddle.shard_index(x, index_num=20, nshards=3, shard_id=1),
                           fluid.layers.shard_index(x, 20, 3, 2, ignore_value=-7)], {"x": ids})
    assert got[0].tolist() == [[-1], [-1], [0], [6]]
    assert got[1].tolist() == [[2], [-7], [-7], [-7]]


def test_fluid_hash_matches_paddle_1_8():
    # Paddle 1.8.5's hash op (its fluid.layers.hash fails its own argument check, so the op was
    # appended directly) on these rows: int32 [[1, 2], [3, 4]] with mod_by 10000, num_hash 4; int64
    # arange(27).reshape(3, 9) * 1000003 with mod_by 1000003, num_hash 2.
    x32 = np.array([[1, 2], [3, 4]], np.int32)
    x64 = np.arange(27, dtype=np.int64).reshape(3, 9) * 1000003
    got = _eval(lambda a, b: [fluid.layers.hash(a, hash_size=10000, num_hash=4),
                              fluid.layers.hash(b, hash_size=1000003, num_hash=2)], {"a": x32, "b": x64})
    assert got[0].shape == (2, 4, 1) and got[0].dtype == np.int32
    assert got[0].reshape(2, 4).tolist() == [[7722, 8407, 6337, 7395], [1603, 5590, 3386, 6901]]
    assert got[1].reshape(3, 2).tolist() == [[965767, 263549], [29110, 75615], [870285, 380289]]


def test_xxh64_known_values():
    from psjob.fluid.ops.math_extra_ops import xxh64
    assert xxh64(b"") == 0xEF46DB3751D8E999  # the empty input, seed 0 (xxHash's reference value)
    # 44-byte rows (a 32-byte stripe, then 8- and 4-byte tails): Paddle 1.8.5's hash op, num_hash 3,
    # mod_by 2**31 - 1, on int32 arange(22).reshape(2, 11) * 7919 - 50000.
    rows = np.arange(22, dtype=np.int32).reshape(2, 11) * 7919 - 50000
    got = [[xxh64(r.tobytes(), s) % (2 ** 31 - 1) for s in range(3)] for r in rows]
    assert got == [[721240440, 1493591720, 585626491], [1281961122, 975111621, 1914588790]]


def test_topk_along_any_axis_largest_or_smallest():
    # Paddle 3.0.0, static mode, on X: topk(x, 2, axis=0), topk(x, 3, largest=False),
    # topk(x, 3, axis=-2, largest=False). Ties: psjob puts the lower index first; Paddle's
    # order among ties is its partial sort's (row 1 of the second call gives [3, 2, 1] there).
    got = _eval(lambda x: [*paddle.topk(x, 2, axis=0), *paddle.topk(x, 3, largest=False),
                           *paddle.topk(x, 3, axis=-2, largest=False)], {"x": X})
    np.testing.assert_allclose(got[0], [[2.5, 0.7, 0.7, 3.0], [1.5, 0.0, 0.7, 0.7]], rtol=1e-6)
    assert got[1].tolist() == [[2, 1, 0, 0], [1, 2, 1, 2]] and got[1].dtype == np.int64
    np.testing.assert_allclose(got[2], [[-2.5, 0.5, 0.7], [-1.0, 0.7, 0.7], [-0.5, 0.0, 0.7]], rtol=1e-6)
    assert got[3].tolist() == [[1, 0, 2], [3, 1, 2], [2, 1, 3]]
    assert got[5].tolist() == [[0, 0, 2, 1], [1, 2, 0, 2], [2, 1, 1, 0]]


def test_fluid_eye_diag_and_random_batch_size_like():
    # Paddle 1.8.5 gives the same values, shapes and dtypes for these layers on F.
    got = _eval(lambda f: [fluid.layers.eye(2, 3), fluid.layers.eye(2, batch_shape=[3]),
                           fluid.layers.diag(np.array([1, 2, 3], np.int64)), fluid.layers.diag(f[0]),
                           fluid.layers.uniform_random_batch_size_like(f, [-1, 5], min=2.0, max=2.5),
                           fluid.layers.gaussian_random_batch_size_like(f, [7, -1], input_dim_idx=1,
                                                                        output_dim_idx=1, mean=4.0, std=0.0)],
                {"f": F})
    np.testing.assert_array_equal(got[0], np.eye(2, 3))
    assert got[1].shape == (3, 2, 2) and (got[1] == np.eye(2)).all()
    assert got[2].dtype == np.int64 and got[2].tolist() == np.diag([1, 2, 3]).tolist()
    np.testing.assert_allclose(got[3], np.diag(F[0]))
    assert got[4].shape == (2, 5) and 2.0 <= got[4].min() and got[4].max() < 2.5
    np.testing.assert_array_equal(got[5], np.full((7, 3), 4.0, np.float32))


def test_print_runs_when_its_output_is_unused_and_stops_after_first_n(capfd):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [2, 2], "float32")
        y = x * 2.0
        fluid.layers.Print(y, first_n=2, message="unused-output")  # as Fluid scripts write it
        z = y + 1.0
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    for _ in range(3):
        exe.run(main, feed={"x": np.ones((2, 2), np.float32)}, fetch_list=[z], scope=scope)
    assert capfd.readouterr().out.count("unused-output") == 2


def test_cumprod_and_its_gradient_through_zeros_match_paddle():
    # Paddle 3.0.0, static mode: cumprod(x, dim=1), cumprod(x, dim=-2) and the gradient of
    # sum(cumprod(x, dim=1) ** 2) by paddle.static.gradients, on a x holding zeros.
    xz = np.array([[0.5, -2.5, 0.0, 3.0], [1.5, 0.7, 0.7, -1.0], [2.5, 0.0, -0.5, 0.7]], np.float32)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = paddle.create_parameter([3, 4], "float32", name="xz", default_initializer=paddle.nn.initializer.Assign(xz))
        a, b = paddle.cumprod(x, dim=1), paddle.cumprod(x, dim=-2)
        fluid.backward.append_backward(paddle.sum(a * a))
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    got_a, got_b, g = exe.run(main, fetch_list=[a, b, "xz@GRAD"], scope=scope)
    np.testing.assert_allclose(got_a, [[0.5, -1.25, 0.0, 0.0], [1.5, 1.05, 0.735, -0.735], [2.5, 0.0, 0.0, 0.0]],
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got_b, [[0.5, -2.5, 0.0, 3.0], [0.75, -1.75, 0.0, -3.0], [1.875, 0.0, 0.0, -2.1]],
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(g, [[7.25, -1.25, 0.0, 0.0], [5.9106, 6.237, 3.087, -1.08045], [5.0, 0.0, 0.0, 0.0]],
                               rtol=1e-5, atol=1e-6)
