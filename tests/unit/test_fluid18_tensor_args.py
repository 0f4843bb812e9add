"""Fluid 1.8's layers that take Variables where a number or a list is usual, read when the op
runs: reshape(shape=[Variable, ...] / Variable / actual_shape), slice and strided_slice bounds,
fill_constant / uniform_random / gaussian_random shapes, expand(expand_times=...), topk(k=...),
pow(factor=...), scale(scale=...). Paddle 1.8.5 (paddle.fluid, CPU) ran the same program on the
same feed and printed these values, the gradient and the output names; the sliced, reshaped and
tiled outputs are written below as the numpy expressions equal to what it printed."""
import numpy as np
import pytest

import psjob.fluid as fluid

X = np.arange(24, dtype="float32").reshape(2, 3, 4) / 10.0 - 1.0

GRAD_185 = [[[9.75, 14.18, 13.67, 13.22], [12.83, 14.5, 17.23, 12.02], [11.87, 12.78, 15.75, 10.78]],
            [[6.87, 12.02, 12.23, 12.5], [12.83, 15.22, 18.67, 14.18], [14.75, 16.38, 20.07, 15.82]]]
EXPECTED_185 = {
    "reshape_list": X.reshape(3, 2, 4), "reshape_var": X.reshape(4, 6), "reshape_actual": X.reshape(6, 4),
    "slice_list": X[:, 1:3, 0:3], "slice_var": X[:, 0:2, 1:4], "sslice": X[:, 1:3, 0:4:2],
    "sslice_var": X[:, :, 3:0:-1], "fill_var": np.full((2, 3), 2.5), "fill_list": np.full((1, 2), 7),
    "expand_var": np.tile(X, (1, 2, 1)), "expand_list": np.tile(X, (1, 1, 2)),
    "topk_v": X[:, :, [3, 2]], "topk_i": np.broadcast_to([3, 2], (2, 3, 2)),
    "pow_var": X ** 3, "scale_var": X * 2.5 + 1.0, "scale_var2": (X + 1.0) * 2.5,
}
NAMES_185 = {"reshape_list": "reshape2_0.tmp_2", "reshape_var": "reshape2_1.tmp_0",
             "reshape_actual": "reshape2_2.tmp_0", "slice_list": "slice_0.tmp_2", "slice_var": "slice_1.tmp_0",
             "sslice": "strided_slice_0.tmp_2", "sslice_var": "strided_slice_1.tmp_0",
             "fill_var": "fill_constant_10.tmp_0", "fill_list": "fill_constant_11.tmp_0",
             "expand_var": "expand_0.tmp_0", "expand_list": "expand_1.tmp_2", "topk_v": "top_k_0.tmp_0",
             "topk_i": "top_k_0.tmp_1", "pow_var": "pow_0.tmp_0", "scale_var": "scale_0.tmp_0",
             "scale_var2": "scale_1.tmp_0"}


def test_variable_arguments_equal_paddle_185():
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[2, 3, 4], dtype="float32")
        x.stop_gradient = False
        n3 = L.fill_constant([1], "int32", 3)
        n1 = L.fill_constant([1], "int32", 1)
        sv = L.assign(np.array([4, 6], "int32"))
        o = {"reshape_list": L.reshape(x, [n3, -1, 4]), "reshape_var": L.reshape(x, sv),
             "reshape_actual": L.reshape(x, [4, 6], actual_shape=L.assign(np.array([6, 4], "int32"))),
             "slice_list": L.slice(x, axes=[1, 2], starts=[n1, 0], ends=[3, n3]),
             "slice_var": L.slice(x, axes=[1, 2], starts=L.assign(np.array([0, 1], "int32")), ends=[2, 4]),
             "sslice": L.strided_slice(x, axes=[1, 2], starts=[L.fill_constant([1], "int32", 1), 0], ends=[3, 4],
                                       strides=[1, L.fill_constant([1], "int32", 2)]),
             "sslice_var": L.strided_slice(x, axes=[2], starts=L.assign(np.array([3], "int32")), ends=[0],
                                           strides=[-1]),
             "fill_var": L.fill_constant(shape=L.assign(np.array([2, 3], "int32")), dtype="float32", value=2.5),
             "fill_list": L.fill_constant(shape=[n1, 2], dtype="int64", value=7),
             "expand_var": L.expand(x, expand_times=L.assign(np.array([1, 2, 1], "int32"))),
             "expand_list": L.expand(x, expand_times=[n1, 1, 2])}
        o["topk_v"], o["topk_i"] = L.topk(x, k=L.fill_constant([1], "int32", 2))
        o["pow_var"] = L.pow(x, factor=L.fill_constant([1], "float32", 3.0))
        sc = L.fill_constant([1], "float32", 2.5)
        o["scale_var"] = L.scale(x, scale=sc, bias=1.0)
        o["scale_var2"] = L.scale(x, scale=sc, bias=1.0, bias_after_scale=False)
        s = L.reduce_sum
        loss = (s(o["reshape_list"]) + s(o["slice_list"]) * 2 + s(o["sslice"]) * 3 + s(o["expand_var"])
                + s(o["expand_list"]) * 0.5 + s(o["pow_var"]) + s(o["scale_var"]) + s(o["slice_var"])
                + s(o["sslice_var"]) * 4 + s(o["reshape_var"]) * 0.25)
        (grad,) = fluid.gradients([loss], [x])
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    names = sorted(o)
    values = exe.run(main, feed={"x": X}, fetch_list=[o[n] for n in names] + [grad])
    for name, value in zip(names, values):
        np.testing.assert_allclose(value, EXPECTED_185[name], rtol=1e-6, atol=1e-6, err_msg=name)
    np.testing.assert_allclose(values[-1], GRAD_185, rtol=1e-5, atol=1e-5)
    assert values[names.index("topk_i")].dtype == np.int64 and values[names.index("fill_list")].dtype == np.int64
    assert {n: o[n].name for n in names} == NAMES_185
    # sizes read at run time are -1 when the program is built
    assert o["reshape_list"].shape == (-1, -1, 4) and o["fill_list"].shape == (-1, 2)
    assert o["slice_list"].shape == (2, -1, -1) and o["expand_list"].shape == (-1, 3, 8)


def test_random_shapes_from_variables():
    """Paddle 1.8.5's uniform_random / gaussian_random take a shape list holding int tensors or
    a 1-D int tensor: checked here for shapes, dtypes, ranges and that a seed repeats the draw."""
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        n2 = L.fill_constant([1], "int64", 2)
        u = L.uniform_random(shape=[n2, L.fill_constant([1], "int32", 5)], min=-2.0, max=2.0, seed=3)
        g = L.gaussian_random(shape=L.assign(np.array([3, 4], "int64")), mean=1.0, std=0.1, seed=3, dtype="float64")
        u0 = L.uniform_random(shape=[n2, 3])
    assert u.shape == (-1, -1) and g.shape == (-1, -1)
    exe = fluid.Executor(fluid.CPUPlace())
    a = exe.run(main, fetch_list=[u, g, u0])
    b = exe.run(main, fetch_list=[u, g, u0])
    assert a[0].shape == (2, 5) and a[0].dtype == np.float32 and (a[0] >= -2).all() and (a[0] < 2).all()
    assert a[1].shape == (3, 4) and a[1].dtype == np.float64 and abs(a[1].mean() - 1.0) < 0.2
    np.testing.assert_array_equal(a[0], b[0])  # a seed repeats the draw
    np.testing.assert_array_equal(a[1], b[1])
    assert a[2].shape == (2, 3) and not np.array_equal(a[2], b[2])  # seed 0: fresh values each run


def test_variable_arguments_bad_input():
    L = fluid.layers
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data(name="x", shape=[2, 3], dtype="float32")
        f = L.fill_constant([1], "float32", 2.0)
        with pytest.raises(TypeError, match="one-element int32/int64"):
            L.reshape(x, [f, 3])
        with pytest.raises(TypeError, match="int32/int64 tensor of known size"):
            L.reshape(x, f)
        with pytest.raises(ValueError, match="holds 3 counts"):
            L.expand(x, L.assign(np.array([1, 2, 3], "int32")))
        with pytest.raises(ValueError, match="holds 1 values for 2 axes"):
            L.slice(x, axes=[0, 1], starts=L.assign(np.array([0], "int32")), ends=[1, 2])
        with pytest.raises(TypeError, match="int32/int64 tensor"):
            L.topk(x, k=f)
        with pytest.raises(TypeError, match="factor"):
            L.pow(x, factor=L.fill_constant([1], "int32", 2))


def test_fill_constant_value_and_shape_tensors_sign_of_an_array_and_cond_of_an_unknown_pred():
    """Paddle 1.8.5's documented examples: fill_constant with shape an int tensor of shape [1, 2]
    holding [2, 2] and with value a one-element tensor; sign of a numpy array (assigned); cond
    over a pred of shape [-1, 1], which Paddle builds and checks when it runs."""
    L = fluid.layers
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        shape = L.fill_constant([1, 2], "int32", 2)
        a = L.fill_constant(shape=shape, dtype="bool", value=True)
        b = L.fill_constant(shape=[2, 1], value=L.fill_constant([1], "float32", 2.0), dtype="float32")
        s = L.sign(np.array([3.0, 0.0, -2.0], "float32"))
        x = fluid.data(name="x", shape=[-1, 1], dtype="float32")
        y = fluid.data(name="y", shape=[-1, 1], dtype="float32")
        out = L.cond(x < y, lambda: x + y, lambda: x * y)
    exe = fluid.Executor(fluid.CPUPlace())
    av, bv, sv, ov = exe.run(main, feed={"x": np.array([[2.0]], "float32"), "y": np.array([[3.0]], "float32")},
                             fetch_list=[a, b, s, out])
    assert av.tolist() == [[True, True], [True, True]] and bv.tolist() == [[2.0], [2.0]]
    assert sv.tolist() == [1.0, 0.0, -1.0] and ov.tolist() == [[5.0]]
    with pytest.raises(Exception, match="one bool value"):
        exe.run(main, feed={"x": np.ones((2, 1), "float32"), "y": np.ones((2, 1), "float32")}, fetch_list=[out])


def test_paddle2_random_shapes_from_tensors():
    """paddle.uniform / randint / randn take the same runtime shapes (Paddle's ShapeTensor /
    ShapeTensorList inputs): shapes and ranges, not values."""
    import psjob as paddle
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = paddle.static.data(name="x", shape=[-1, 3], dtype="float32")
        u = paddle.uniform([paddle.shape(x)[0], 4], min=0.0, max=1.0)
        r = paddle.randint(0, 5, shape=paddle.shape(x))
        n = paddle.randn([paddle.shape(x)[0], 2])
    assert u.shape == (-1, 4) and r.shape == (-1, -1)
    uv, rv, nv = fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": np.ones((5, 3), "float32")},
                                                      fetch_list=[u, r, n])
    assert uv.shape == (5, 4) and (uv >= 0).all() and (uv < 1).all()
    assert rv.shape == (5, 3) and rv.dtype == np.int64 and rv.min() >= 0 and rv.max() < 5 and nv.shape == (5, 2)
