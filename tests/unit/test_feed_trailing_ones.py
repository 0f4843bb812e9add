"""A feed lacking the declared trailing 1s ([N] for a [-1, 1] input) is taken and keeps its
shape, every batch, as Paddle 1.8.5 and 3.0.0 (legacy and PIR executors alike) run it
(PaddleRec's multiMNIST reader yields its labels so). Other shape mismatches are still refused."""
from __future__ import annotations

import numpy as np
import pytest

import psjob as paddle
from psjob.fluid.executor import FeedError


def _program():
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        lab = paddle.static.data(name="lab", shape=[None, 1], dtype="int64")
        out = paddle.cast(lab, "float32") * 2.0
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    return exe, main, out


def test_missing_trailing_one_is_taken_as_fed_on_every_batch():
    exe, main, out = _program()
    for _ in range(3):  # the second and third batches take the executor's checked-shape path
        got, = exe.run(main, feed={"lab": np.arange(4, dtype="int64")}, fetch_list=[out])
        assert np.asarray(got).shape == (4,)
        np.testing.assert_array_equal(got, [0.0, 2.0, 4.0, 6.0])


def test_other_shapes_are_refused():
    exe, main, out = _program()
    with pytest.raises(FeedError, match="expected 2-D data"):
        exe.run(main, feed={"lab": np.zeros((4, 1, 2), "int64")}, fetch_list=[out])
    with pytest.raises(FeedError, match="dimension 1 must be 1"):
        exe.run(main, feed={"lab": np.zeros((4, 2), "int64")}, fetch_list=[out])
