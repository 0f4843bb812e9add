"""paddle.nn.RNN over a GRUCell in static mode (PaddleRec's rank/dien), against real Paddle 3.0.0:
forward values and three SGD steps (back-propagation through time), batch- and time-major,
with and without initial states; and the cells and options psjob refuses by name."""
import numpy as np
import pytest

import psjob as paddle

paddle.enable_static()


def test_rnn_over_gru_cell_trains_as_paddle_does():
    main, start = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, start), paddle.utils.unique_name.guard():
        x = paddle.static.data("x", [-1, 5, 4], "float32")
        h0 = paddle.static.data("h0", [-1, 3], "float32")
        cell = paddle.nn.GRUCell(4, 3)
        out, h = paddle.nn.RNN(cell)(x)
        xt = paddle.transpose(x, [1, 0, 2])
        out2, h2 = paddle.nn.RNN(cell, time_major=True)(xt * 0.5, h0)
        loss = paddle.mean(out * out) + paddle.mean(h) + paddle.mean(out2) * 0.3 + paddle.mean(h2 * h2)
        paddle.optimizer.SGD(0.5).minimize(loss)
    # Paddle's static RNN is a while loop, whose output keeps no static time length
    # ([-1, -1, 3]); psjob's one op knows it.
    assert [tuple(v.shape) for v in (out, h, out2, h2)] == [(-1, 5, 3), (-1, 3), (5, -1, 3), (-1, 3)]
    # The RNN adds no parameters of its own: only the cell's four.
    assert sorted(p.name for p in main.global_block().all_parameters()) == [
        "gru_cell_0.b_0", "gru_cell_0.b_1", "gru_cell_0.w_0", "gru_cell_0.w_1"]
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(start)
    scope = paddle.static.global_scope()
    for i, p in enumerate(sorted(main.global_block().all_parameters(), key=lambda p: p.name)):
        shape = np.asarray(scope.find_var(p.name).get_tensor()).shape
        scope.find_var(p.name).get_tensor().set(
            np.random.RandomState(i).uniform(-0.5, 0.5, shape).astype("float32"), paddle.CPUPlace())
    feed = {"x": np.random.RandomState(0).rand(2, 5, 4).astype("float32"),
            "h0": np.random.RandomState(1).rand(2, 3).astype("float32") - 0.5}
    got = []
    for _ in range(3):
        res = exe.run(main, feed=feed, fetch_list=[loss, out, h, out2, h2])
        got.append([float(np.asarray(res[0]).reshape(-1)[0])] + [float(np.asarray(r, "float64").sum()) for r in res[1:]])
    # Paddle 3.0.0 (/tmp/probe/vpaddle300), the same program, parameters (RandomState(i) over the
    # sorted names) and feed: loss, sum(out), sum(h), sum(out2), sum(h2) at each of the three steps.
    want = [[0.06744369864463806, -3.7992415875196457, -0.9569906145334244, -0.758693493437022, -0.17195235192775726],
            [-0.2971290349960327, -11.97318759560585, -2.753897875547409, -6.944368928670883, -1.5069072991609573],
            [-0.3049575686454773, -12.59885060787201, -2.9099446535110474, -7.374276667833328, -1.6056944876909256]]
    np.testing.assert_allclose(got, want, rtol=2e-6)


def test_rnn_refuses_what_it_cannot_run():
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()), \
            paddle.utils.unique_name.guard():
        with pytest.raises(ValueError, match="a Linear cell is not supported"):
            paddle.nn.RNN(paddle.nn.Linear(3, 3))
        cell = paddle.nn.GRUCell(4, 3)
        with pytest.raises(ValueError, match="is_reverse=True"):
            paddle.nn.RNN(cell, is_reverse=True)
        x = paddle.static.data("x", [-1, 5, 4], "float32")
        with pytest.raises(ValueError, match="sequence_length"):
            paddle.nn.RNN(cell)(x, sequence_length=paddle.static.data("n", [-1], "int64"))
        with pytest.raises(ValueError, match="must be 3-D"):
            paddle.nn.RNN(cell)(paddle.static.data("y", [-1, 4], "float32"))
