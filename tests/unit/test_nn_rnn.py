"""paddle.nn's recurrent layers in static mode against real Paddle 3.0.0: forward values and
three SGD steps (back-propagation through time) of RNN over a GRUCell (PaddleRec's rank/dien),
and of SimpleRNN, GRU, LSTM, RNN, BiRNN and a user-defined cell with every option (layers,
directions, time-major, sequence_length, reversed); dropout between layers; what psjob refuses."""
import zlib

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


class MinimalCell(paddle.nn.RNNCellBase):
    """A user-defined cell: h = tanh(W [x, h] + b)."""

    def __init__(self, n_in, n_h):
        super().__init__()
        self.fc = paddle.nn.Linear(n_in + n_h, n_h)
        self.n_h = n_h

    @property
    def state_shape(self):
        return (self.n_h,)

    def forward(self, x, h):
        h = paddle.tanh(self.fc(paddle.concat([x, h], axis=-1)))
        return h, h


def _every_recurrent_layer():
    x = paddle.static.data("x", [-1, 5, 4], "float32")
    n = paddle.static.data("n", [-1], "int64")
    outs = []
    o, h = paddle.nn.SimpleRNN(4, 3, num_layers=2, direction="bidirect")(x, sequence_length=n)
    outs += [o, h]
    o, h = paddle.nn.GRU(4, 3, direction="bidirect", time_major=True)(paddle.transpose(x, [1, 0, 2]))
    outs += [o, h]
    o, (h, c) = paddle.nn.LSTM(4, 3, num_layers=2)(x, sequence_length=n)
    outs += [o, h, c]
    o, (h, c) = paddle.nn.RNN(paddle.nn.LSTMCell(4, 3), is_reverse=True)(x, sequence_length=n)
    outs += [o, h, c]
    o, (s_fw, s_bw) = paddle.nn.BiRNN(paddle.nn.SimpleRNNCell(4, 2, activation="relu"), paddle.nn.GRUCell(4, 2))(x)
    outs += [o, s_fw, s_bw]
    o, h = paddle.nn.RNN(MinimalCell(4, 3))(x, sequence_length=n)
    outs += [o, h]
    return outs


def test_every_recurrent_layer_and_option_trains_as_paddle_does():
    main, start = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, start), paddle.utils.unique_name.guard():
        outs = _every_recurrent_layer()
        loss = paddle.add_n([paddle.mean(v * v) for v in outs])
        paddle.optimizer.SGD(0.5).minimize(loss)
    # Paddle's shapes, but where its while loop loses the static time length (-1), psjob's
    # unrolled steps keep it (5).
    assert [list(v.shape) for v in outs] == [
        [-1, 5, 6], [4, -1, 3], [5, -1, 6], [2, -1, 3], [-1, 5, 3], [2, -1, 3], [2, -1, 3], [-1, 5, 3], [-1, 3],
        [-1, 3], [-1, 5, 4], [-1, 2], [-1, 2], [-1, 5, 3], [-1, 3]]
    params = sorted(main.global_block().all_parameters(), key=lambda p: p.name)
    assert [p.name for p in params if not p.name.startswith(("simple_rnn_cell", "gru_cell", "lstm_cell"))] == [
        "gru_0.w_0", "linear_0.b_0", "linear_0.w_0", "lstm_0.w_0", "simple_rnn_0.w_0"]  # Paddle's, flat weights too
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(start)
    scope = paddle.static.global_scope()
    for p in params:
        shape = np.asarray(scope.find_var(p.name).get_tensor()).shape
        value = np.random.RandomState(zlib.crc32(p.name.encode())).uniform(-0.5, 0.5, shape).astype("float32")
        scope.find_var(p.name).get_tensor().set(value, paddle.CPUPlace())
    feed = {"x": np.random.RandomState(0).rand(3, 5, 4).astype("float32"), "n": np.array([5, 2, 3], "int64")}
    got = [[float(np.asarray(r, "float64").sum()) for r in exe.run(main, feed=feed, fetch_list=[loss] + outs)]
           for _ in range(3)]
    # Paddle 3.0.0 (/tmp/probe/vpaddle300), the same program, parameters (each RandomState(crc32(name)))
    # and feed: the loss and the sum of each output at each of three SGD steps.
    want = [[1.3043084145, -13.1888319049, -8.5329217687, -5.1189869829, -1.3732112721, -3.3629038632, -2.0390679296,
             -4.0147810206, 1.1639122199, 0.1704237126, 0.1246794537, 0.7749444172, 0.1705050506, -0.3611082733,
             -5.8928418234, -1.3385999724],
            [0.6196277738, -12.9340292842, -6.1520984555, -3.7837810796, -1.0087070651, -1.358711466, -1.4279330093,
             -2.635166226, -0.5947931976, -0.2941467632, -0.395311946, -2.1433953675, 0.0, -0.6143715009,
             -3.9726783261, -0.7561172741],
            [0.4267452955, -9.317788237, -4.1076328047, -1.5430014906, -0.389008861, -0.9063434271, -1.0364135485,
             -1.8013550434, 2.2390889103, 0.4418815356, 0.7882725485, 0.7368796319, 0.0, 0.1070620455, 1.7281526988,
             0.406541992]]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)


def test_dropout_between_layers_drops_while_training_and_not_in_eval():
    main, start = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, start), paddle.utils.unique_name.guard():
        x = paddle.static.data("x", [-1, 6, 4], "float32")
        net = paddle.nn.LSTM(4, 8, num_layers=3, dropout=0.5)
        out, _ = net(x)
        loss = paddle.mean(out * out)
        paddle.optimizer.SGD(0.1).minimize(loss)
        test_prog = main.clone(for_test=True)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(start)
    feed = {"x": np.random.RandomState(0).rand(16, 6, 4).astype("float32")}
    ev1, ev2 = (exe.run(test_prog, feed=feed, fetch_list=[out])[0] for _ in range(2))
    np.testing.assert_array_equal(ev1, ev2)  # no dropout in eval
    tr1, tr2 = (exe.run(main, feed=feed, fetch_list=[out, loss])[0] for _ in range(2))
    assert np.isfinite(tr1).all() and np.isfinite(tr2).all()
    assert not np.allclose(tr1, tr2)  # fresh masks each step (and an update between)
    reserve = [n for n in main.global_block().vars if "rnn" in n and main.global_block().var(n).dtype == "uint8"]
    assert reserve  # the masks the gradient reads back


def test_recurrent_layers_refuse_what_they_cannot_run():
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()), \
            paddle.utils.unique_name.guard():
        x = paddle.static.data("x", [-1, -1, 4], "float32")
        with pytest.raises(ValueError, match="no size until run time, and psjob has no while loop"):
            paddle.nn.RNN(MinimalCell(4, 3))(x)
        with pytest.raises(ValueError, match="no size until run time"):
            paddle.nn.RNN(paddle.nn.GRUCell(4, 3), is_reverse=True)(x)
        paddle.nn.RNN(paddle.nn.GRUCell(4, 3))(x)  # a built-in cell forward runs as the fused op: any length
        with pytest.raises(ValueError, match="direction must be 'forward' or 'bidirect'"):
            paddle.nn.GRU(4, 3, direction="backward")
        with pytest.raises(ValueError, match="activation must be 'tanh' or 'relu'"):
            paddle.nn.SimpleRNNCell(4, 3, activation="sigmoid")
        with pytest.raises(ValueError, match="must be 3-D"):
            paddle.nn.LSTM(4, 3)(paddle.static.data("y", [-1, 4], "float32"))
        with pytest.raises(ValueError, match=r"initial_states must be \(h0, c0\)"):
            paddle.nn.LSTM(4, 3)(paddle.static.data("z", [-1, 5, 4], "float32"),
                                 paddle.static.data("h0", [1, -1, 3], "float32"))
