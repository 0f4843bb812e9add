"""Adam on a sparse (SelectedRows) gradient gives Paddle's result: Paddle's CPU kernel for a
SelectedRows gradient writes Beta1PowOut/Beta2PowOut (the same variables as Beta1Pow/Beta2Pow)
before its update reads them, so each sparse step's bias correction uses beta ** (t + 1);
lazy_mode or not, Paddle 1.8.5 and 3.0.0 alike. PaddleRec's rank/fm (a sparse Embedding
trained by Adam) needs it to equal Paddle from the same parameters."""
from __future__ import annotations

import numpy as np
import pytest

import psjob as paddle

# Paddle 3.0.0, the program below (embedding 6 x 2 = arange(12) / 10, sparse=True,
# loss = mean(sum(x * x)), Adam(0.1)), the table after the three steps' feeds.
PADDLE_TABLE = {
    False: [[0.0, -0.016208000481128693], [-0.024838000535964966, 0.07210499793291092],
            [0.2209469974040985, 0.32094699144363403], [0.4837920069694519, 0.583791971206665],
            [0.7418869733810425, 0.8418869972229004], [0.9418870210647583, 1.0418870449066162]],
    True: [[0.0, 0.0361189991235733], [0.042897000908851624, 0.1412159949541092],
           [0.3255870044231415, 0.425586998462677], [0.5361189842224121, 0.63611900806427],
           [0.7418869733810425, 0.8418869972229004], [0.9418870210647583, 1.0418870449066162]],
}
# Paddle 3.0.0's loss at the second step; a correction with beta ** t would give 0.91.
PADDLE_SECOND_LOSS = 0.9266613125801086


@pytest.mark.parametrize("lazy", [False, True])
def test_sparse_adam_steps_equal_paddle(lazy):
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        ids = paddle.static.data("ids", [None, 3], "int64")
        table = np.arange(12, dtype="float32").reshape(6, 2) / 10
        emb = paddle.nn.Embedding(6, 2, sparse=True, weight_attr=paddle.ParamAttr(
            initializer=paddle.nn.initializer.Assign(table)))
        x = emb(ids)
        loss = paddle.mean(paddle.sum(x * x, axis=[1, 2]))
        paddle.optimizer.Adam(0.1, lazy_mode=lazy).minimize(loss)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    losses = []
    for batch in ([[1, 2, 2]], [[3, 1, 0]], [[5, 5, 4]]):
        out, = exe.run(main, feed={"ids": np.array(batch, "int64")}, fetch_list=[loss])
        losses.append(float(np.asarray(out).reshape(-1)[0]))
    got = np.asarray(paddle.static.global_scope().find_var(emb.weight.name).get_tensor())
    np.testing.assert_allclose(got, PADDLE_TABLE[lazy], rtol=0, atol=3e-6)
    assert losses[1] == pytest.approx(PADDLE_SECOND_LOSS, rel=1e-6)
    # the pows advanced once a step all the same
    pows = [v for v in main.list_vars() if "beta1_pow_acc" in v.name]
    assert len(pows) == 1
    b1p = np.asarray(paddle.static.global_scope().find_var(pows[0].name).get_tensor())
    np.testing.assert_allclose(b1p.reshape(-1), [0.9 ** 4], rtol=1e-6)
