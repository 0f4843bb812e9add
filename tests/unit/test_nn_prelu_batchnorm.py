"""paddle.nn.PReLU / functional.prelu and paddle.nn.BatchNorm (Fluid's dygraph BatchNorm kept
in Paddle 2.x), as PaddleRec's rank/dmr builds them: names, forward and gradients equal
Paddle 3.0.0's on the same small programs (expected values printed by Paddle 3.0.0 running
these programs with `import paddle`, FLAGS_enable_pir_api=0)."""
from __future__ import annotations

import numpy as np
import pytest

import psjob as paddle


def _run(build, feed, fetch_names):
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        fetch = build()
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    out = exe.run(main, feed=feed, fetch_list=fetch + fetch_names)
    return main, [np.asarray(o) for o in out]


X = np.array([[[1, -2], [0.5, -1], [-3, 2]], [[0, -1], [-0.5, 4], [2, -2]]], "float32")


def test_prelu_channel_and_all_modes_forward_and_gradients_equal_paddle():
    def build():
        x = paddle.static.data("x", [None, 3, 2], "float32")
        x.stop_gradient = False
        p1 = paddle.nn.PReLU(num_parameters=3, init=0.1, name="dm_prelu")  # per channel (axis 1)
        p2 = paddle.nn.PReLU(init=0.3)                                       # one shared weight
        y = p2(p1(x) * paddle.assign(np.array([[1.0, -2.0]], "float32")))
        loss = paddle.sum(y * y)
        return [y] + paddle.static.gradients([loss], [x, p1._weight, p2._weight])
    main, (y, dx, dw1, dw2) = _run(build, {"x": X}, [])
    assert sorted((p.name, tuple(p.shape)) for p in main.all_parameters()) == [
        ("p_re_lu_0.w_0", (3,)), ("p_re_lu_1.w_0", (1,))]
    np.testing.assert_allclose(y, [[[1.0, 0.4], [0.5, 0.2], [-0.09, -1.2]],
                                   [[0.0, 0.2], [-0.015, -2.4], [2.0, 0.4]]], rtol=1e-6)
    np.testing.assert_allclose(dx, [[[2.0, -0.16], [1.0, -0.08], [-0.0054, 1.44]],
                                    [[0.0, -0.08], [-0.0009, 2.88], [4.0, -0.16]]], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(dw1, [4.0, 0.8045, 3.362], rtol=1e-6)
    np.testing.assert_allclose(dw2, [48.0555], rtol=1e-6)


def test_prelu_rejects_a_weight_that_does_not_match_the_channels():
    paddle.enable_static()
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()):
        x = paddle.static.data("x", [None, 3, 2], "float32")
        with pytest.raises(ValueError, match="weight has 4 elements"):
            paddle.nn.PReLU(num_parameters=4)(x)


def test_batchnorm_names_statistics_and_act_equal_paddle():
    names = {}

    def build():
        x = paddle.static.data("x", [None, 3], "float32")
        bn = paddle.nn.BatchNorm(3, momentum=0.99, epsilon=1e-03)
        y = bn(x)
        bn2 = paddle.nn.BatchNorm(3, act="relu", moving_mean_name="mm", moving_variance_name="mv")
        z = bn2(y * 2.0)
        loss = paddle.mean(z * paddle.assign(np.array([[1.0, -2.0, 0.5]], "float32")))
        paddle.optimizer.SGD(0.1).minimize(loss)
        names.update(mean=bn._mean.name, var=bn._variance.name)
        return [y, z]
    xv = np.array([[1, -2, 0.5], [0.5, -1, 2], [-3, 2, 1], [0, 4, -1]], "float32")
    main, (y, z, mean, var, mv) = _run(build, {"x": xv}, ["batch_norm_0.w_1", "batch_norm_0.w_2", "mv"])
    assert sorted((p.name, tuple(p.shape), p.trainable) for p in main.all_parameters()) == [
        ("batch_norm_0.b_0", (3,), True), ("batch_norm_0.w_0", (3,), True), ("batch_norm_0.w_1", (3,), False),
        ("batch_norm_0.w_2", (3,), False), ("batch_norm_1.b_0", (3,), True), ("batch_norm_1.w_0", (3,), True),
        ("mm", (3,), False), ("mv", (3,), False)]
    assert names == {"mean": "batch_norm_0.w_1", "var": "batch_norm_0.w_2"}
    np.testing.assert_allclose(y[0], [0.883359, -1.153012, -0.115421], rtol=1e-5)
    np.testing.assert_allclose(z[1], [0.562253, 0.0, 1.270169], rtol=1e-5)
    np.testing.assert_allclose(mean, [-0.00375, 0.0075, 0.00625], rtol=1e-5)
    np.testing.assert_allclose(var, [1.014219, 1.046875, 1.001719], rtol=1e-5)
    np.testing.assert_allclose(mv, [1.299835, 1.29993, 1.299659], rtol=1e-5)
