"""Fluid 1.x LoD sequence layers (sequence_softmax, sequence_first_step / last_step,
sequence_concat, sequence_slice, sequence_enumerate, sequence_pad, sequence_expand,
sequence_scatter, sequence_reverse, sequence_mask, lod_reset) against Paddle 1.8.5.

The expected values and LoDs were printed by Paddle 1.8.5 (Python 3.7, CPU) running the same
fluid calls on the same feeds (each program below, with `import paddle.fluid as fluid`);
gradients are checked by tests/unit/test_op_gradients.py."""
import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.fluid.executor import ExecutionError

PLACE = fluid.CPUPlace()
X72 = np.arange(14, dtype="float32").reshape(7, 2)


def lt(arr, lens):
    return fluid.create_lod_tensor(np.asarray(arr), [lens], PLACE)


def run(build, feeds):
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start), fluid.unique_name.guard():
        outs = build()
    exe = fluid.Executor(PLACE)
    exe.run(start)
    res = exe.run(main, feed=feeds, fetch_list=outs, return_numpy=False)
    return [(np.array(r), [list(level) for level in r.lod()]) for r in res]


def seq(name, width=2, dtype="float32", level=1):
    return fluid.data(name, [None, width], dtype, lod_level=level)


def test_sequence_softmax_normalizes_each_sequence():
    x7 = np.arange(1, 8, dtype="float32").reshape(7, 1) * 0.5
    [(out, lod)] = run(lambda: [fluid.layers.sequence_softmax(seq("x", 1))], {"x": lt(x7, [3, 1, 3])})
    np.testing.assert_allclose(out.reshape(-1), [0.18632373, 0.3071959, 0.5064804, 1.0, 0.18632372, 0.30719587,
                                                 0.5064804], rtol=1e-6)
    assert lod == [[0, 3, 4, 7]]


def test_sequence_first_and_last_step():
    def build():
        x = seq("x")
        return [fluid.layers.sequence_first_step(x), fluid.layers.sequence_last_step(x)]
    (first, _), (last, _) = run(build, {"x": lt(X72, [3, 1, 3])})
    np.testing.assert_array_equal(first, [[0, 1], [6, 7], [8, 9]])
    np.testing.assert_array_equal(last, [[4, 5], [6, 7], [12, 13]])


def test_sequence_concat_joins_sequence_by_sequence():
    [(out, lod)] = run(lambda: [fluid.layers.sequence_concat([seq("a"), seq("b")])],
                       {"a": lt(X72[:3], [2, 0, 1]), "b": lt(X72[3:7], [1, 2, 1])})
    np.testing.assert_array_equal(out, [[0, 1], [2, 3], [6, 7], [8, 9], [10, 11], [4, 5], [12, 13]])
    assert lod == [[0, 3, 5, 7]]


def test_sequence_slice_cuts_each_sequence():
    def build():
        o, n = fluid.data("o", [None, 1], "int64"), fluid.data("l", [None, 1], "int64")
        return [fluid.layers.sequence_slice(seq("x"), o, n)]
    [(out, lod)] = run(build, {"x": lt(X72, [3, 1, 3]), "o": np.array([[1], [0], [0]], "int64"),
                               "l": np.array([[2], [1], [3]], "int64")})
    np.testing.assert_array_equal(out, X72[[1, 2, 3, 4, 5, 6]])
    assert lod == [[0, 2, 3, 6]]


def test_sequence_enumerate_windows_within_sequences():
    ids = np.arange(1, 8, dtype="int64").reshape(7, 1)
    [(out, lod)] = run(lambda: [fluid.layers.sequence_enumerate(seq("x", 1, "int64"), 3, pad_value=-1)],
                       {"x": lt(ids, [3, 1, 3])})
    np.testing.assert_array_equal(out, [[1, 2, 3], [2, 3, -1], [3, -1, -1], [4, -1, -1], [5, 6, 7], [6, 7, -1],
                                        [7, -1, -1]])
    assert lod == [[0, 3, 4, 7]]


def test_sequence_pad_to_the_longest_and_to_maxlen():
    def build():
        x = seq("x")
        a, la = fluid.layers.sequence_pad(x, fluid.layers.fill_constant([1], "float32", -1.0))
        b, lb = fluid.layers.sequence_pad(x, fluid.data("pv", [2], "float32"), maxlen=4)
        return [a, la, b, lb]
    (a, _), (la, _), (b, _), (lb, _) = run(build, {"x": lt(X72, [3, 1, 3]),
                                                   "pv": np.array([-1.0, -2.0], "float32")})
    np.testing.assert_array_equal(a, [[[0, 1], [2, 3], [4, 5]], [[6, 7], [-1, -1], [-1, -1]],
                                      [[8, 9], [10, 11], [12, 13]]])
    np.testing.assert_array_equal(b, [[[0, 1], [2, 3], [4, 5], [-1, -2]], [[6, 7], [-1, -2], [-1, -2], [-1, -2]],
                                      [[8, 9], [10, 11], [12, 13], [-1, -2]]])
    assert la.tolist() == lb.tolist() == [3, 1, 3]


def test_sequence_pad_then_unpad_round_trips():
    def build():
        x = seq("x")
        padded, length = fluid.layers.sequence_pad(x, fluid.layers.fill_constant([1], "float32", 0.0))
        return [fluid.layers.sequence_unpad(padded, length)]
    [(out, lod)] = run(build, {"x": lt(X72, [3, 1, 3])})
    np.testing.assert_array_equal(out, X72)
    assert lod == [[0, 3, 4, 7]]


@pytest.mark.parametrize("which", ["ref0", "no-lod", "last-level"])
def test_sequence_expand_matches_paddle_185(which):
    if which == "ref0":
        build = lambda: [fluid.layers.sequence_expand(seq("x", 1), seq("y", 1, level=2), ref_level=0)]  # noqa: E731
        feeds = {"x": lt(np.array([[1], [2], [3], [4]], "float32"), [2, 2]),
                 "y": fluid.create_lod_tensor(np.zeros((8, 1), "float32"), [[2, 2], [3, 3, 1, 1]], PLACE)}
        want, want_lod = [1, 2, 1, 2, 3, 4, 3, 4], [[0, 2, 4, 6, 8]]
    elif which == "no-lod":
        build = lambda: [fluid.layers.sequence_expand(fluid.data("x", [None, 1], "float32"), seq("y", 1))]  # noqa: E731
        feeds = {"x": np.array([[1], [2], [3]], "float32"), "y": lt(np.zeros((5, 1), "float32"), [2, 0, 3])}
        want, want_lod = [1, 1, 3, 3, 3], []
    else:
        build = lambda: [fluid.layers.sequence_expand(seq("x", 1), seq("y", 1, level=2))]  # noqa: E731
        feeds = {"x": lt(np.array([[1], [2], [3], [4], [5]], "float32"), [1, 2, 1, 1]),
                 "y": fluid.create_lod_tensor(np.zeros((4, 1), "float32"), [[1, 3], [1, 2, 1, 0]], PLACE)}
        want, want_lod = [1, 2, 3, 2, 3, 4], [[0, 1, 3, 5, 6]]
    [(out, lod)] = run(build, feeds)
    np.testing.assert_array_equal(out.reshape(-1), want)
    assert lod == want_lod


def test_sequence_scatter_adds_updates_per_row():
    def build():
        x = fluid.data("x", [3, 6], "float32")
        return [fluid.layers.sequence_scatter(x, seq("i", 1, "int64"), seq("u", 1))]
    idx = np.array([0, 1, 2, 5, 4, 3, 2, 1, 3, 2, 5, 4], "int64").reshape(-1, 1)
    upd = np.array([.3, .3, .4, .1, .2, .3, .4, 0, .2, .3, .1, .4], "float32").reshape(-1, 1)
    [(out, _)] = run(build, {"x": np.ones((3, 6), "float32"), "i": lt(idx, [3, 5, 4]), "u": lt(upd, [3, 5, 4])})
    np.testing.assert_allclose(out, [[1.3, 1.3, 1.4, 1, 1, 1], [1, 1, 1.4, 1.3, 1.2, 1.1],
                                     [1, 1, 1.3, 1.2, 1.4, 1.1]], rtol=1e-6)


def test_sequence_reverse_and_lod_reset():
    def build():
        x = seq("x")
        return [fluid.layers.sequence_reverse(x), fluid.layers.lod_reset(x, target_lod=[0, 4, 7]),
                fluid.layers.lod_reset(x, seq("y", 1))]
    (rev, rlod), (_, lod1), (same, lod2) = run(build, {"x": lt(X72, [3, 1, 3]),
                                                       "y": lt(np.zeros((7, 1), "float32"), [2, 5])})
    np.testing.assert_array_equal(rev, X72[[2, 1, 0, 3, 6, 5, 4]])
    assert rlod == [[0, 3, 4, 7]] and lod1 == [[0, 4, 7]] and lod2 == [[0, 2, 7]]
    np.testing.assert_array_equal(same, X72)


def test_fluid_sequence_mask():
    [(out, _)] = run(lambda: [fluid.layers.sequence_mask(fluid.data("x", [None], "int64"), maxlen=4,
                                                         dtype="float32")],
                     {"x": np.array([1, 3, 0], "int64")})
    np.testing.assert_array_equal(out, [[1, 0, 0, 0], [1, 1, 1, 0], [0, 0, 0, 0]])


def test_din_style_attention_trains():
    """DIN's attention: scores over a user's history, sequence_softmax, weighted sum pooled per user;
    SGD lowers the loss."""
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start), fluid.unique_name.guard():
        hist = seq("hist", 4)
        label = fluid.data("label", [None, 1], "float32")
        score = fluid.layers.fc(hist, 1)
        weight = fluid.layers.sequence_softmax(score)
        pooled = fluid.layers.sequence_pool(fluid.layers.elementwise_mul(hist, weight, axis=0), "sum")
        pred = fluid.layers.fc(pooled, 1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, label))
        fluid.optimizer.SGD(0.1).minimize(loss)
    exe = fluid.Executor(PLACE)
    exe.run(start)
    rs = np.random.RandomState(1)
    feed = {"hist": lt(rs.uniform(-1, 1, (9, 4)).astype("float32"), [2, 4, 3]),
            "label": rs.uniform(-1, 1, (3, 1)).astype("float32")}
    losses = [float(np.asarray(exe.run(main, feed=feed, fetch_list=[loss])[0]).reshape(-1)[0]) for _ in range(20)]
    assert losses[-1] < losses[0] * 0.8


def test_sequence_layers_refuse_bad_input_by_name():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = seq("x")
        with pytest.raises(TypeError, match="sequence_enumerate: argument 'input'"):
            fluid.layers.sequence_enumerate(x, 2)
        with pytest.raises(ValueError, match="win_size"):
            fluid.layers.sequence_enumerate(seq("i", 1, "int64"), 0)
        with pytest.raises(TypeError, match="sequence_concat"):
            fluid.layers.sequence_concat(x)
        with pytest.raises(ValueError, match="lod_reset: give y or target_lod"):
            fluid.layers.lod_reset(x)
    def slice_too_long():
        o, n = fluid.data("o", [None, 1], "int64"), fluid.data("l", [None, 1], "int64")
        return [fluid.layers.sequence_slice(seq("x"), o, n)]
    with pytest.raises(ExecutionError, match="must stay inside"):
        run(slice_too_long, {"x": lt(X72, [3, 1, 3]), "o": np.array([[2], [0], [0]], "int64"),
                             "l": np.array([[2], [1], [1]], "int64")})
    with pytest.raises(ExecutionError, match="same number of sequences"):
        run(lambda: [fluid.layers.sequence_concat([seq("a"), seq("b")])],
            {"a": lt(X72[:3], [2, 1]), "b": lt(X72[3:7], [1, 2, 1])})


def test_lod_reset_from_offsets_in_a_tensor_and_lod_append():
    """PaddleRec's static_ps model_util builds lod_reset with Y an int32 [1, -1] of offsets."""
    def build():
        x = fluid.data("x", [None, 2], "float32")
        offsets = fluid.data("o", [1, None], "int32")
        return [fluid.layers.lod_reset(x, offsets), fluid.layers.lod_append(seq("z"), [0, 1, 3, 7])]
    (a, lod_a), (b, lod_b) = run(build, {"x": X72, "o": np.array([[0, 5, 7]], "int32"), "z": lt(X72, [3, 4])})
    np.testing.assert_array_equal(a, X72)
    assert lod_a == [[0, 5, 7]] and lod_b == [[0, 3, 7], [0, 1, 3, 7]]
    with pytest.raises(ExecutionError, match="must start at 0"):
        run(build, {"x": X72, "o": np.array([[0, 5, 6]], "int32"), "z": lt(X72, [3, 4])})
