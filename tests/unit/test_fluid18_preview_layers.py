"""Fluid 1.8's layers ahead of Paddle 2.0's API (psjob.fluid.layers.preview): the n-ary sum,
mse_loss, tril/triu, arange and log1p/erf/atan/asin/acos, with a gradient through mse_loss and
erf. Values and output names were printed by Paddle 1.8.5 (paddle.fluid, CPU) running the same
program on the same feed."""
import numpy as np
import pytest

import psjob.fluid as fluid

FEED = {"x": np.array([[0.1, -0.5, 0.9], [1.2, -1.5, 0.3]], "float32"),
        "y": np.array([[0.4, 0.2, 1.9], [0.0, 2.5, 0.7]], "float32")}

PADDLE_185 = {
    "acos": [[1.520775, 1.823476, 1.104031], [0.927295, 2.418858, 1.420228]],
    "arange": [1, 3, 5],
    "asin": [[0.050021, -0.25268, 0.466765], [0.643501, -0.848062, 0.150568]],
    "atan": [[0.099669, -0.463648, 0.732815], [0.876058, -0.982794, 0.291457]],
    "erf": [[0.112463, -0.5205, 0.796908], [0.910314, -0.966105, 0.328627]],
    "log1p": [[0.336472, 0.182322, 1.064711], [0.0, 1.252763, 0.530628]],
    "mse": [3.196667],
    "sum": [[0.6, -0.8, 3.7], [2.4, -0.5, 1.3]],
    "sum1": [[0.1, -0.5, 0.9], [1.2, -1.5, 0.3]],
    "tril": [[0.1, 0.0, 0.0], [1.2, -1.5, 0.0]],
    "triu": [[0.0, -0.5, 0.9], [0.0, 0.0, 0.3]],
    "grad_x": [[1.017152, 0.645449, 0.168635], [0.667344, -1.214403, 0.897928]],
}
PADDLE_185_NAMES = {"acos": "acos_0.tmp_0", "arange": "range_0.tmp_0", "asin": "asin_0.tmp_0",
                    "atan": "atan_0.tmp_0", "erf": "erf_0.tmp_0", "log1p": "log1p_0.tmp_0",
                    "mse": "reduce_mean_0.tmp_0", "sum": "sum_0.tmp_0", "sum1": "sum_1.tmp_0",
                    "tril": "tril_0", "triu": "triu_0"}


def test_preview_layers_equal_paddle_185():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[2, 3], dtype="float32")
        y = fluid.data(name="y", shape=[2, 3], dtype="float32")
        x.stop_gradient = False
        outs = {"sum": fluid.layers.sum([x, y, x]), "sum1": fluid.layers.sum(x),
                "mse": fluid.layers.mse_loss(x, y), "log1p": fluid.layers.log1p(y), "erf": fluid.layers.erf(x),
                "atan": fluid.layers.atan(x), "asin": fluid.layers.asin(x * 0.5), "acos": fluid.layers.acos(x * 0.5),
                "tril": fluid.layers.tril(x, diagonal=0), "triu": fluid.layers.triu(x, diagonal=1),
                "arange": fluid.layers.arange(1, 7, 2, "int64")}
        loss = fluid.layers.mean(fluid.layers.mse_loss(x, y) + fluid.layers.reduce_sum(fluid.layers.erf(x)))
        (grad_x,) = fluid.gradients(loss, [x])
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    names = sorted(outs)
    values = exe.run(main, feed=FEED, fetch_list=[outs[n] for n in names] + [grad_x])
    for name, value in zip(names + ["grad_x"], values):
        np.testing.assert_allclose(value, PADDLE_185[name], rtol=1e-5, atol=2e-6, err_msg=name)
    assert values[names.index("arange")].dtype == np.int64
    assert {n: outs[n].name for n in names} == PADDLE_185_NAMES


def test_preview_layers_name_bad_input():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data(name="x", shape=[2, 3], dtype="float32")
        n = fluid.data(name="n", shape=[2, 3], dtype="int64")
        v = fluid.data(name="v", shape=[3], dtype="float32")
        with pytest.raises(ValueError, match="non-empty list"):
            fluid.layers.sum([])
        with pytest.raises(TypeError, match="share one dtype"):
            fluid.layers.sum([x, n])
        with pytest.raises(TypeError, match="diagonal must be an int"):
            fluid.layers.tril(x, diagonal=0.5)
        with pytest.raises(ValueError, match="at least 2 dimensions"):
            fluid.layers.triu(v)
        with pytest.raises(TypeError, match="label"):
            fluid.layers.mse_loss(x, n)
