"""paddle.nn.TransformerEncoderLayer / TransformerEncoder / MultiHeadAttention and
paddle.nn.LSTM (the rnn op in mode LSTM, bidirectional), nn.functional.sequence_mask,
Variable.unsqueeze_ in static mode and bias_attr=True, against real Paddle 3.0.0 (what
PaddleRec's dsin needs). The rnn op's LSTM gradient is checked by finite differences in
test_op_gradients.py."""
import numpy as np
import pytest

import psjob as paddle

paddle.enable_static()


@pytest.fixture(autouse=True)
def _fresh_names():
    """Parameter names counted from 0 in every test, as in the Paddle scripts that made the numbers."""
    with paddle.utils.unique_name.guard():
        yield


def _params(main):
    return sorted(main.all_parameters(), key=lambda p: p.name)


def _train(main, start, loss, out, feed):
    """Every parameter, in sorted-name order, RandomState(0).uniform(-0.5, 0.5); three SGD steps."""
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(start)
    rs = np.random.RandomState(0)
    for p in _params(main):
        paddle.static.global_scope().find_var(p.name).get_tensor().set(
            rs.uniform(-0.5, 0.5, tuple(p.shape)).astype("float32"), paddle.CPUPlace())
    steps = []
    for _ in range(3):
        lo, o = exe.run(main, feed=feed, fetch_list=[loss, out])
        steps.append((float(np.asarray(lo).reshape(-1)[0]), o.reshape(-1)[:6].tolist(), float(np.abs(o).sum())))
    return steps


def _check(got, want):
    for (loss, head, total), (w_loss, w_head, w_total) in zip(got, want):
        np.testing.assert_allclose([loss, *head, total], [w_loss, *w_head, w_total], rtol=2e-5, atol=1e-6)


def test_bidirectional_two_layer_lstm_trains_as_paddle_does():
    main, start = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, start):
        x = paddle.static.data("x", [None, 5, 8], "float32")
        lstm = paddle.nn.LSTM(8, 3, num_layers=2, direction="bidirectional")
        out, (h, c) = lstm(x)
        lstm1 = paddle.nn.LSTM(8, 4)
        out1, (h1, c1) = lstm1(x)
        loss = (paddle.mean(out * out) + paddle.mean(h) + paddle.mean(c * c) + paddle.mean(out1 * out1)
                + paddle.mean(c1))
        paddle.optimizer.SGD(0.5).minimize(loss)
    assert (tuple(out.shape), tuple(h.shape), tuple(c.shape)) == ((-1, 5, 6), (4, -1, 3), (4, -1, 3))
    # Paddle's names and shapes: every cell's four parameters, and each LSTM's flat weight.
    assert [(p.name, list(p.shape)) for p in _params(main)] == [
        ("lstm_0.w_0", [576]), ("lstm_1.w_0", [224])] + [
        (f"lstm_cell_{i}.{s}", shape) for i, (ins, hid) in enumerate([(8, 3), (8, 3), (6, 3), (6, 3), (8, 4)])
        for s, shape in (("b_0", [4 * hid]), ("b_1", [4 * hid]), ("w_0", [4 * hid, ins]), ("w_1", [4 * hid, hid]))]
    assert [n for n, _ in lstm.named_parameters()][:4] == [
        "weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
    feed = {"x": np.random.RandomState(1).uniform(-1, 1, (3, 5, 8)).astype("float32")}
    # Paddle 3.0.0, the same program, parameters and feed (each step: loss, out[:6], sum|out|).
    _check(_train(main, start, loss, out, feed), [
        (0.17571237683296204, [-0.007025891449302435, 0.05985167250037193, 0.07214865833520889,
                               0.09812208265066147, 0.10658177733421326, 0.17989976704120636], 7.6772356033325195),
        (-0.25278323888778687, [-0.010960121639072895, 0.030159076675772667, 0.04789523407816887,
                                -0.14525555074214935, -0.032332632690668106, 0.13394679129123688], 4.870387077331543),
        (-0.5458955764770508, [-0.017233872786164284, 0.009947250597178936, 0.034472230821847916,
                               -0.21921919286251068, -0.07191989570856094, 0.0516204908490181], 4.961973190307617)])


def test_transformer_encoder_layers_train_as_paddle_does():
    main, start = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, start):
        x = paddle.static.data("x", [None, 5, 8], "float32")
        m = paddle.static.data("m", [None, 1, 5, 5], "bool")
        enc = paddle.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
        enc2 = paddle.nn.TransformerEncoder(
            paddle.nn.TransformerEncoderLayer(8, 8, 6, dropout=0.0, bias_attr=False, normalize_before=True), 2,
            paddle.nn.LayerNorm(8))
        y = enc(x, m)
        y2 = enc2(y)
        w = paddle.arange(8, dtype="float32")
        loss = paddle.mean(y * y * w) + paddle.mean(y2 * w)
        paddle.optimizer.SGD(0.5).minimize(loss)
    assert tuple(y2.shape) == (-1, 5, 8)
    names = [p.name for p in _params(main)]
    # bias_attr=False: no biases in the second encoder's six Linears a layer; 7 LayerNorms in all
    assert len(names) == 38 and "linear_6.b_0" not in names and "layer_norm_6.w_0" in names
    assert [n for n, _ in enc.named_parameters()][:2] == ["self_attn.q_proj.weight", "self_attn.q_proj.bias"]
    feed = {"x": np.random.RandomState(1).uniform(-1, 1, (3, 5, 8)).astype("float32"),
            "m": np.random.RandomState(2).uniform(size=(3, 1, 5, 5)) > 0.3}
    # Paddle 3.0.0, the same program, parameters and feed (each step: loss, y2[:6], sum|y2|).
    _check(_train(main, start, loss, y2, feed), [
        (0.7590478658676147, [-0.7468172311782837, -0.19208641350269318, 0.6666803359985352,
                              0.006017953157424927, 0.34152811765670776, -0.8306149840354919], 51.84563446044922),
        (-1.6631431579589844, [-0.5297744870185852, -0.5330949425697327, 0.17066140472888947,
                               -0.6821701526641846, 0.19213944673538208, -1.8425378799438477], 67.95497131347656),
        (-3.706336736679077, [-0.6775734424591064, -0.5788671970367432, -0.02084093540906906,
                              -0.6247553825378418, -0.17869198322296143, -3.3802318572998047], 112.8358383178711)])


def test_sequence_mask_unsqueeze_in_place_and_bias_attr_true_as_paddle():
    main, start = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, start):
        n = paddle.static.data("n", [None, 2], "int64")
        a = paddle.nn.functional.sequence_mask(n)
        b = paddle.nn.functional.sequence_mask(n, 4, dtype="float32")
        v = paddle.static.data("v", [None], "float32")
        u = v.unsqueeze_(-1)  # static mode: out of place, as Paddle's (it warns so)
        lin = paddle.nn.Linear(1, 2, bias_attr=True)
        lin(u)
    assert sorted(p.name for p in main.all_parameters()) == ["linear_0.b_0", "linear_0.w_0"]
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(start)
    ra, rb, ru, rv = exe.run(main, feed={"n": np.array([[3, 0], [1, 5]], "int64"),
                                         "v": np.array([1.0, 2.0], "float32")}, fetch_list=[a, b, u, v])
    # Paddle 3.0.0's values for the same program and feed.
    assert ra.dtype == np.int64 and ra.tolist() == [[[1, 1, 1, 0, 0], [0, 0, 0, 0, 0]],
                                                    [[1, 0, 0, 0, 0], [1, 1, 1, 1, 1]]]
    assert rb.dtype == np.float32 and rb.tolist() == [[[1, 1, 1, 0], [0, 0, 0, 0]], [[1, 0, 0, 0], [1, 1, 1, 1]]]
    assert ru.shape == (2, 1) and rv.shape == (2,)


def test_lstm_and_attention_refuse_what_they_cannot_run():
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()):
        with pytest.raises(ValueError, match="direction must be"):
            paddle.nn.LSTM(4, 3, direction="backward")
        with pytest.raises(ValueError, match=r"dropout must lie in \[0, 1\]"):
            paddle.nn.LSTM(4, 3, num_layers=2, dropout=1.5)
        with pytest.raises(ValueError, match="divisible"):
            paddle.nn.MultiHeadAttention(6, 4)
        x = paddle.static.data("x", [-1, 5, 4], "float32")
        with pytest.raises(ValueError, match="caches"):
            paddle.nn.TransformerEncoderLayer(4, 2, 8)(x, cache=x)
