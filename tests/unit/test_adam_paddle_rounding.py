"""Adam's first step on float32 parameters equals Paddle's to float32 rounding: Paddle's
kernel takes beta1/beta2 as float32 and forms 1 - beta2 in float32 (0.00099998713, not
0.001), the same rounding the beta2 pow carries, so the bias correction cancels exactly."""
from __future__ import annotations

import numpy as np

import psjob as paddle
from psjob.foundation.kernels import optimizers as K


def test_adam_program_steps_equal_paddle():
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data(name="x", shape=[None, 3], dtype="float32")
        w = paddle.create_parameter([3, 1], "float32", name="w_adam_round",
                                    default_initializer=paddle.nn.initializer.Assign(
                                        np.array([[0.5], [-0.3], [0.2]], "float32")))
        loss = paddle.mean(paddle.matmul(x, w) ** 2)
        paddle.optimizer.Adam(learning_rate=0.1).minimize(loss)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    feed = {"x": np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 0.25]], "float32")}
    # Paddle 3.0.0, the same program, w fetched after each of three steps (the update
    # runs before the fetch): without the float32 betas psjob's first step gave
    # 0.10000066 for the last element (6.6e-6 off).
    paddle_w = [[0.4000000059604645, -0.4000000059604645, 0.10000000149011612],
                [0.3161296844482422, -0.36225631833076477, 0.039709240198135376],
                [0.253188818693161, -0.29442867636680603, 0.023058965802192688]]
    for want in paddle_w:
        _, got = exe.run(main, feed=feed, fetch_list=[loss, w])
        np.testing.assert_allclose(np.asarray(got).reshape(-1), want, rtol=3e-7, atol=0)


def test_first_step_is_lr_in_every_kernel_path():
    """One Adam step from zero moments moves each element by lr*g/(|g| + eps'): lr to
    float32 rounding for |g| >> eps, on the C dense path, the numpy path and the row path."""
    g = np.array([0.25, -3.0, 0.5, 7.5], np.float32)
    for run in ("dense", "rows"):
        p = np.zeros_like(g)
        m1, m2 = np.zeros_like(g), np.zeros_like(g)
        b1p, b2p = np.array([0.9], np.float32), np.array([0.999], np.float32)
        if run == "dense":
            K.adam_update(np, p, g, m1, m2, b1p, b2p, lr=0.1)
        else:
            p, m1, m2 = p.reshape(4, 1), m1.reshape(4, 1), m2.reshape(4, 1)
            K.adam_update_rows(np, p, np.arange(4, dtype=np.int64), g.reshape(4, 1), m1, m2, b1p, b2p, lr=0.1)
        np.testing.assert_allclose(p.reshape(-1), -0.1 * np.sign(g), rtol=2e-7, err_msg=run)
