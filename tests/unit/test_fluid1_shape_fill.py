"""fluid.layers.shape and fluid.layers.fill_constant with a runtime dimension, as
PaddlePaddle/models' word2vec and multiview_simnet build their labels:
fill_constant(shape=[fluid.layers.shape(x)[0], 1], ...) has x's fed batch size
(Fluid 1.8's fill_constant takes such a dimension through its ShapeTensorList input).
Also the reader queue's size(), which word2vec's training loop prints."""
import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.fluid.ops.reader_ops import BlockingQueue


def test_fill_constant_takes_its_batch_dimension_from_shape():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        s = fluid.layers.shape(x)
        ones = fluid.layers.fill_constant(shape=[s[0], 2], value=1.5, dtype="float32")
        assert ones.shape[1] == 2
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    for rows in (3, 5):
        sv, ov = exe.run(main, feed={"x": np.zeros((rows, 4), "float32")}, fetch_list=[s, ones])
        assert sv.dtype == np.int32 and sv.tolist() == [rows, 4]
        np.testing.assert_array_equal(ov, np.full((rows, 2), 1.5, "float32"))


def test_fill_constant_refuses_a_float_dimension():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        with pytest.raises(TypeError, match="one-element int32/int64"):
            fluid.layers.fill_constant(shape=[fluid.layers.reduce_sum(x), 1], value=0.0, dtype="float32")


def test_blocking_queue_size_counts_waiting_batches():
    q = BlockingQueue("q", capacity=4)
    gen = q.open()
    assert q.size() == 0
    q.push(["a"], gen)
    q.push(["b"], gen)
    assert q.size() == 2
    q.pop()
    assert q.size() == 1
