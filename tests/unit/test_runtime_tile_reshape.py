"""paddle.tile and paddle.reshape with sizes read when the op runs (a list holding
paddle.shape(y)[i], or a 1-D int Variable), as PaddleRec's rank/dmr writes them: shapes,
values and the gradient equal Paddle 3.0.0's on the same program (printed by Paddle 3.0.0
running it with `import paddle`, FLAGS_enable_pir_api=0)."""
from __future__ import annotations

import numpy as np
import pytest

import psjob as paddle


def test_runtime_repeat_times_and_shapes_equal_paddle():
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [None, 2], "float32")
        m = paddle.static.data("m", [None, 3], "float32")
        x.stop_gradient = False
        t = paddle.tile(x, [1, paddle.shape(m)[1]])                   # B, 2*T
        r = paddle.reshape(t, [-1, paddle.shape(m)[1], x.shape[-1]])  # B, T, 2
        r2 = paddle.reshape(r * 2.0, paddle.shape(t))
        t3 = paddle.tile(x, paddle.assign(np.array([2, 1], "int32")))
        loss = paddle.sum(r * r) + paddle.sum(r2) + paddle.sum(t3 * 3.0)
        gx, = paddle.static.gradients([loss], [x])
    # Paddle's build-time shapes: a size read at run time is -1, one given as an int is kept
    assert [tuple(v.shape) for v in (t, r, r2, t3)] == [(-1, -1), (-1, -1, 2), (-1, -1), (-1, -1)]
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    out = exe.run(main, feed={"x": np.array([[1, 2], [3, -1]], "float32"), "m": np.zeros((2, 3), "float32")},
                  fetch_list=[t, r, r2, t3, gx])
    want = [[[1.0, 2.0, 1.0, 2.0, 1.0, 2.0], [3.0, -1.0, 3.0, -1.0, 3.0, -1.0]],
            [[[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]], [[3.0, -1.0], [3.0, -1.0], [3.0, -1.0]]],
            [[2.0, 4.0, 2.0, 4.0, 2.0, 4.0], [6.0, -2.0, 6.0, -2.0, 6.0, -2.0]],
            [[1.0, 2.0], [3.0, -1.0], [1.0, 2.0], [3.0, -1.0]],
            [[18.0, 24.0], [30.0, 6.0]]]
    for got, w in zip(out, want):
        np.testing.assert_array_equal(np.asarray(got), w)


def test_runtime_sizes_must_be_one_element_int_tensors():
    paddle.enable_static()
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()):
        x = paddle.static.data("x", [None, 2], "float32")
        with pytest.raises(TypeError, match="one-element int32/int64"):
            paddle.tile(x, [1, paddle.sum(x)])
        with pytest.raises(TypeError, match="one-element int32/int64"):
            paddle.reshape(x, [-1, paddle.shape(x)])
