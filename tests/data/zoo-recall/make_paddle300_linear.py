"""Writes tests/data/zoo-recall/paddle300_linear.* with Paddle 3.0.0's paddle.static.save."""
import sys

import numpy as np
import paddle

paddle.enable_static()
main, start = paddle.static.Program(), paddle.static.Program()
with paddle.static.program_guard(main, start):
    x = paddle.static.data("x", [-1, 3], "float32")
    fc = paddle.nn.Linear(3, 2, weight_attr=paddle.ParamAttr(
        initializer=paddle.nn.initializer.Assign(np.arange(6, dtype="float32").reshape(3, 2) / 10)),
        bias_attr=paddle.ParamAttr(initializer=paddle.nn.initializer.Constant(0.5)))
    loss = paddle.mean(fc(x))
    paddle.optimizer.Adam(0.1).minimize(loss)
exe = paddle.static.Executor(paddle.CPUPlace())
exe.run(start)
exe.run(main, feed={"x": np.ones([2, 3], "float32")}, fetch_list=[loss])
print(exe.run(main, feed={"x": np.ones([2, 3], "float32")}, fetch_list=[loss]))
paddle.static.save(main, sys.argv[1])
