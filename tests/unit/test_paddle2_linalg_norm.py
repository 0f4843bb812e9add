"""paddle.norm / paddle.linalg.norm, vector_norm and matrix_norm against real Paddle.

How the expected values were made: `build` below was run, unchanged, by Paddle 3.0.0 in its
legacy static graph (FLAGS_enable_pir_api=0, CPU) on X, with the gradient of
sum_i (i + 1) * sum(out_i) over the GRAD_KEYS outputs taken by paddle.static.gradients; the
fetched arrays are pasted here, rounded to 6 decimals. Where Paddle 3.0 returns a 0-D tensor
psjob returns shape [1] (its reductions' convention). The p_norm op's own gradient is checked
against finite differences in test_op_gradients.py.
"""
import numpy as np
import pytest

import psjob as paddle

paddle.enable_static()

X = np.array([[[0.5, -2.5, 0.7, 3.0], [1.5, 0.7, 0.0, -1.0], [2.5, 0.0, -0.5, 0.7]],
              [[-1.2, 0.3, 2.2, -0.4], [0.9, -1.8, 0.6, 1.1], [0.0, 0.2, -2.0, 1.6]]], np.float32)
def build(paddle, x):
    L = paddle.linalg
    r = {}
    r["fro_all"] = paddle.norm(x)
    r["fro_axis1"] = paddle.linalg.norm(x, axis=1)
    r["fro_str_axis2_keep"] = paddle.norm(x, p="fro", axis=2, keepdim=True)
    r["p1_axis_neg1"] = L.norm(x, p=1, axis=-1)
    r["p3_axis0"] = L.norm(x, p=3.0, axis=0)
    r["p_half_all"] = L.norm(x, p=0.5)
    r["inf_axis1"] = L.norm(x, p=float("inf"), axis=1)
    r["ninf_axis2_keep"] = L.norm(x, p=float("-inf"), axis=[2], keepdim=True)
    r["zero_axis2"] = L.norm(x, p=0, axis=2)
    r["inf_all"] = L.norm(x, p=np.inf)
    r["mat_fro"] = L.norm(x, axis=[1, 2])
    r["mat_fro_keep"] = L.norm(x, p="fro", axis=[0, 2], keepdim=True)
    r["mat_p1"] = L.norm(x, p=1, axis=[1, 2])
    r["mat_pm1_keep"] = L.norm(x, p=-1, axis=[1, 2], keepdim=True)
    r["mat_inf"] = L.norm(x, p=np.inf, axis=[1, 2])
    r["mat_ninf"] = L.norm(x, p=-np.inf, axis=[0, 1])
    r["vec_multi_p2"] = L.vector_norm(x, p=2.0, axis=[0, 2])
    r["vec_multi_p3_keep"] = L.vector_norm(x, p=3.0, axis=[1, 2], keepdim=True)
    r["vec_multi_inf"] = L.vector_norm(x, p=np.inf, axis=[0, 1])
    r["vec_multi_zero"] = L.vector_norm(x, p=0, axis=[1, 2])
    r["matrix_norm_default"] = L.matrix_norm(x)
    r["tensor_method"] = x.norm(p=1)
    return r
GRAD_KEYS = ["fro_all", "fro_axis1", "p1_axis_neg1", "p3_axis0", "inf_axis1", "mat_fro", "mat_p1", "mat_inf",
             "vec_multi_p3_keep"]

# Paddle 3.0.0's values for build(X): (value, shape).
PADDLE300 = {
    'fro_all': (6.743145, []),
    'fro_axis1': ([[2.95804, 2.596151, 0.860233, 3.238827], [1.5, 1.835756, 3.03315, 1.982423]], [2, 4]),
    'fro_str_axis2_keep': ([[[3.99875], [1.933908], [2.643861]], [[2.555387], [2.370654], [2.569046]]], [2, 3, 1]),
    'p1_axis_neg1': ([[6.7, 3.2, 3.7], [4.1, 4.4, 3.8]], [2, 3]),
    'p3_axis0': ([[1.228264, 2.501439, 2.223373, 3.002368], [1.601041, 1.834618, 0.6, 1.32591], [2.5, 0.2, 2.010363, 1.64347]], [3, 4]),
    'p_half_all': (485.858582, []),
    'inf_axis1': ([[2.5, 2.5, 0.7, 3.0], [1.2, 1.8, 2.2, 1.6]], [2, 4]),
    'ninf_axis2_keep': ([[[0.5], [0.0], [0.0]], [[0.3], [0.6], [0.0]]], [2, 3, 1]),
    'zero_axis2': ([[4.0, 3.0, 3.0], [4.0, 4.0, 3.0]], [2, 3]),
    'inf_all': (3.0, []),
    'mat_fro': ([5.169139, 4.330127], [2]),
    'mat_fro_keep': ([[[4.745524], [3.059412], [3.686462]]], [1, 3, 1]),
    'mat_p1': ([4.7, 4.8], [2]),
    'mat_pm1_keep': ([[[1.2]], [[2.1]]], [2, 1, 1]),
    'mat_inf': ([6.7, 4.4], [2]),
    'mat_ninf': ([2.1, 2.3, 1.2, 3.1], [4]),
    'vec_multi_p2': ([4.745524, 3.059412, 3.686462], [3]),
    'vec_multi_p3_keep': ([[[3.997999]], [[3.1971]]], [2, 1, 1]),
    'vec_multi_inf': ([2.5, 2.5, 2.2, 3.0], [4]),
    'vec_multi_zero': ([10.0, 11.0], [2]),
    'matrix_norm_default': ([5.169139, 4.330127], [2]),
    'tensor_method': (25.9, []),
}
PADDLE300_GRAD = [
    [[12.796195, -28.713055, 19.216181, 37.840885],
     [10.755683, 5.313809, 0.0, -14.76487],
     [20.482037, 0.0, -5.205189, 12.350139]],
    [[-16.526676, 3.923802, 28.003273, -4.229002],
     [15.557731, -27.425428, 23.632973, 17.615561],
     [0.0, 7.559903, -21.867516, 18.113773]],
]


def _run():
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [2, 3, 4], "float32")
        x.stop_gradient = False
        r = build(paddle, x)
        loss = paddle.add_n([paddle.sum(r[k] * float(i + 1)) for i, k in enumerate(GRAD_KEYS)])
        g = paddle.static.gradients([loss], [x])[0]
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    names = list(r)
    outs = exe.run(main, feed={"x": X}, fetch_list=[r[k] for k in names] + [g])
    return dict(zip(names, outs[:-1])), outs[-1]


RESULTS = None


def results():
    global RESULTS
    if RESULTS is None:
        RESULTS = _run()
    return RESULTS


@pytest.mark.parametrize("key", sorted(PADDLE300))
def test_norm_matches_paddle(key):
    want, shape = PADDLE300[key]
    got = results()[0][key]
    assert list(got.shape) == (shape or [1]), key
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.reshape(want, got.shape), rtol=1e-5, atol=1e-5)


def test_norm_gradient_matches_paddle():
    np.testing.assert_allclose(results()[1], np.array(PADDLE300_GRAD, np.float32), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kwargs, message", [
    (dict(p="nuc", axis=[0, 1]), "svd"),
    (dict(p=2, axis=[0, 1]), "svd"),
    (dict(p=3, axis=[0, 1]), "must be 'fro', 1, -1, inf or -inf"),
    (dict(p="fro", axis=[0, 1, 2]), "one or two ints"),
    (dict(p="abc", axis=1), "p must be a number"),
    (dict(axis=3), "out of range"),
    (dict(axis=[1, -2]), "twice"),
])
def test_norm_refuses_what_it_cannot_compute(kwargs, message):
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()):
        x = paddle.static.data("x", [2, 3, 4], "float32")
        with pytest.raises(ValueError, match=message):
            paddle.linalg.norm(x, **kwargs)


def test_linalg_is_a_paddle_module():
    import psjob.linalg
    assert paddle.linalg is psjob.linalg
    assert paddle.linalg.norm is paddle.norm


# paddle.linalg.inv / paddle.inverse: run_inverse below was run, unchanged but for `import paddle`, by
# Paddle 3.0.0 (legacy static graph, CPU); its inverse, the inverse of one matrix and the gradient of
# a weighted sum of squares are pasted (6 decimals).
INV_RNG = np.random.RandomState(4)
A = (INV_RNG.uniform(-1, 1, (2, 3, 3)) + 3 * np.eye(3)).astype(np.float32)


def run_inverse(paddle):
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        a = paddle.static.data("a", [2, 3, 3], "float32")
        a.stop_gradient = False
        inv = paddle.linalg.inv(a)
        inv2 = paddle.inverse(a[0])
        loss = paddle.sum(inv * inv * paddle.arange(9, dtype="float32").reshape([3, 3])) + paddle.sum(inv2)
        g = paddle.static.gradients([loss], [a])[0]
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    return exe.run(main, feed={"a": A}, fetch_list=[inv, inv2, g])



PADDLE300_INVERSE = {'grad': [[[-0.240088, 0.237359, 0.629349], [0.2616, -0.67727, -1.109269], [0.677951, -0.977599, -2.365058]],
          [[-0.013627, 0.08671, 0.119078], [0.037923, -0.255119, -0.354942],
           [-0.048881, -0.306633, -0.927168]]],
 'inv': [[[0.287383, -0.042315, -0.118003], [-0.058485, 0.323901, 0.095455], [-0.132286, 0.143726, 0.481519]],
         [[0.352043, -0.03254, 0.068867], [-0.072999, 0.274936, 0.050739], [-0.050563, 0.099645, 0.373735]]],
 'inv2': [[0.287383, -0.042315, -0.118003], [-0.058485, 0.323901, 0.095455], [-0.132286, 0.143726, 0.481519]]}


def test_inverse_matches_paddle():
    for name, got in zip(("inv", "inv2", "grad"), run_inverse(paddle)):
        np.testing.assert_allclose(got, np.array(PADDLE300_INVERSE[name]), rtol=1e-5, atol=2e-6, err_msg=name)


def test_inverse_of_a_singular_matrix_is_an_error():
    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()):
        a = paddle.static.data("a", [2, 2], "float32")
        out = paddle.linalg.inv(a)
        with pytest.raises(ValueError, match="square matrices"):
            paddle.inverse(paddle.static.data("b", [2, 3], "float32"))
    with pytest.raises(Exception, match="singular matrix"):
        paddle.static.Executor(paddle.CPUPlace()).run(main, feed={"a": np.ones((2, 2), np.float32)},
                                                      fetch_list=[out])
