"""Writes paddle_fc_adam.{pdparams,pdopt,pdmodel} with real Paddle (3.0.0):
/tmp/probe/vpaddle300/bin/python make_paddle_save.py (from this folder). A [None, 3] -> fc(2)
program trained one Adam step; prints what the test expects (the saved arrays, then the loss
and weights of one more step)."""
import os

os.environ["FLAGS_enable_pir_api"] = "0"  # PaddleRec's static_trainer saves from the old IR too
import numpy as np
import paddle

paddle.enable_static()
paddle.seed(7)
main, start = paddle.static.Program(), paddle.static.Program()
with paddle.static.program_guard(main, start):
    x = paddle.static.data("x", [None, 3], "float32")
    y = paddle.nn.Linear(3, 2)(x)
    loss = paddle.mean(y * y)
    paddle.optimizer.Adam(0.01).minimize(loss)
exe = paddle.static.Executor(paddle.CPUPlace())
exe.run(start)
exe.run(main, feed={"x": np.arange(6, dtype="float32").reshape(2, 3) / 5}, fetch_list=[loss])
paddle.static.save(main, "paddle_fc_adam")
state = paddle.static.load_program_state("paddle_fc_adam")
for name in sorted(state):
    print(name, state[name].shape, np.asarray(state[name], dtype="float64").ravel().round(6).tolist())
# the next step from the saved state: the test runs it under psjob from the loaded files
loss_v, = exe.run(main, feed={"x": np.arange(6, dtype="float32").reshape(2, 3) / 5}, fetch_list=[loss])
w = np.array(paddle.static.global_scope().find_var("linear_0.w_0").get_tensor())
print("next step: loss", np.asarray(loss_v).ravel().tolist(), "w", w.ravel().round(6).tolist())
