"""fluid.layers.conv2d (Fluid 1.8, NCHW), as PaddlePaddle/models' ctr/xdeepfm builds its CIN
with 1x1 convolutions. Expected outputs and parameter shapes: Paddle 1.8.5 running the same
program (fluid.Executor on CPU)."""
import numpy as np
import pytest

import psjob.fluid as fluid

X = (np.arange(18, dtype="float32").reshape(1, 2, 3, 3) - 8) / 4
W = (np.arange(16, dtype="float32").reshape(2, 2, 2, 2) - 7) / 8
PADDLE_185 = [1.25, 2.03125, 2.3125, 3.375, 1.1875, 0.75, 0.1875, 0.0,
              0.0, 0.03125, 0.3125, 2.375, 2.1875, 5.75, 1.4375, 3.15625]


def test_conv2d_matches_paddle():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 2, 3, 3], dtype="float32")
        y = fluid.layers.conv2d(x, num_filters=2, filter_size=2, padding=1, stride=(1, 2), act="relu",
                                param_attr=fluid.ParamAttr(initializer=fluid.initializer.NumpyArrayInitializer(W)),
                                bias_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.25)))
        d = fluid.layers.conv2d(x, num_filters=3, filter_size=(1, 1), bias_attr=False)
    assert [(p.name, tuple(p.shape)) for p in main.global_block().all_parameters()] == [
        ("conv2d_0.w_0", (2, 2, 2, 2)), ("conv2d_0.b_0", (2,)), ("conv2d_1.w_0", (3, 2, 1, 1))]
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    out, dv = exe.run(main, feed={"x": X}, fetch_list=[y, d])
    assert out.shape == (1, 2, 4, 2) and dv.shape == (1, 3, 3, 3)
    np.testing.assert_allclose(out.reshape(-1), PADDLE_185, rtol=1e-6)


def test_conv2d_wants_nchw():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data(name="x", shape=[None, 3, 3], dtype="float32")
        with pytest.raises(ValueError, match="4-D NCHW"):
            fluid.layers.conv2d(x, num_filters=2, filter_size=1)
