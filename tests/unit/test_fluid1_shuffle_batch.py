"""fluid.contrib.layers.shuffle_batch: a random order of x's rows (all dimensions but the last
flattened), advanced every run from a persistable seed, with a gradient that un-permutes.

The orders themselves cannot match Paddle's (its C++ engine draws them from the seed), so the
test pins Paddle's semantics instead: `check_shuffled` is the relation between x, the weights
w, the shuffled out and d(sum(out * w))/dx, and it is asserted on the arrays Paddle 1.8.5 gave
(pasted below, made by running `build` with paddle.fluid on X and W, twice, on CPU) as on
psjob's. The op's gradient is also checked against finite differences in test_op_gradients.py.
"""
import numpy as np
import pytest

import psjob.fluid as fluid

X = np.arange(24, dtype=np.float32).reshape(4, 3, 2)
W = X * 10.0

# Paddle 1.8.5, build(seed=5) run twice on X, W: out[:, :, 0] and the gradient's [:, :, 0]
# (column 1 is column 0 + 1 in out, and + 10 in the gradient, as for X and W).
PADDLE185_RUNS = [
    ([[4.0, 12.0, 8.0], [10.0, 20.0, 16.0], [0.0, 2.0, 18.0], [6.0, 14.0, 22.0]],
     [[120.0, 140.0, 0.0], [180.0, 40.0, 60.0], [20.0, 200.0, 100.0], [160.0, 80.0, 220.0]]),
    ([[20.0, 10.0, 12.0], [2.0, 16.0, 4.0], [18.0, 14.0, 6.0], [0.0, 8.0, 22.0]],
     [[180.0, 60.0, 100.0], [160.0, 200.0, 20.0], [40.0, 140.0, 80.0], [120.0, 0.0, 220.0]]),
]


def _full(col0, step):
    a = np.array(col0, np.float32)[..., None]
    return np.concatenate([a, a + step], axis=-1)


def check_shuffled(x, w, out, grad):
    """out's rows are x's rows in some order p (out[i] = x[p[i]]), and the gradient of
    sum(out * w) puts w's row i back at x's row p[i]. Returns p."""
    xr, wr, outr, gr = (a.reshape(-1, a.shape[-1]) for a in (x, w, out, grad))
    assert out.shape == x.shape
    p = np.array([int(np.flatnonzero((xr == row).all(axis=1))[0]) for row in outr])
    assert sorted(p.tolist()) == list(range(len(xr))), "out is not a permutation of x's rows"
    np.testing.assert_array_equal(outr, xr[p])
    np.testing.assert_array_equal(gr[p], wr)
    return p


def build(seed=5, lod_level=0):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3, 2], "float32", lod_level=lod_level)
        x.stop_gradient = False
        out = fluid.contrib.layers.shuffle_batch(x, seed=seed)
        w = fluid.data("w", [None, 3, 2], "float32")
        g = fluid.gradients([fluid.layers.reduce_sum(out * w)], [x])[0]
    return main, startup, out, g


def run(runs=2, **kw):
    main, startup, out, g = build(**kw)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    return [exe.run(main, feed={"x": X, "w": W}, fetch_list=[out, g], scope=scope) for _ in range(runs)]


def test_paddle_arrays_satisfy_the_relation():
    orders = [check_shuffled(X, W, _full(o, 1.0), _full(g, 10.0)) for o, g in PADDLE185_RUNS]
    assert orders[0].tolist() != orders[1].tolist()  # the seed advances between runs


def test_psjob_shuffles_rows_and_unpermutes_the_gradient():
    orders = [check_shuffled(X, W, out, g) for out, g in run(runs=3)]
    assert len({tuple(p) for p in orders}) == 3  # 12 rows: three equal orders would be a bug


def test_same_seed_replays_the_same_orders_in_a_fresh_program():
    a = [out for out, _ in run(runs=3, seed=9)]
    b = [out for out, _ in run(runs=3, seed=9)]
    c = [out for out, _ in run(runs=3, seed=10)]
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    assert any(not np.array_equal(u, v) for u, v in zip(a, c))


def test_program_random_seed_is_the_default_seed():
    def orders():
        main, startup = fluid.Program(), fluid.Program()
        main.random_seed = 33
        with fluid.program_guard(main, startup):
            x = fluid.data("x", [None, 2], "float32")
            out = fluid.contrib.layers.shuffle_batch(x)
        exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
        exe.run(startup, scope=scope)
        op = main.global_block().ops[-1]
        assert op.type == "shuffle_batch" and op.attr("startup_seed") == 33
        return exe.run(main, feed={"x": np.arange(40, dtype=np.float32).reshape(20, 2)}, fetch_list=[out],
                       scope=scope)[0]
    np.testing.assert_array_equal(orders(), orders())


def test_lod_is_kept_and_seed_variable_is_advanced():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 2], "float32", lod_level=1)
        seed = fluid.layers.create_global_var([1], 4, "int64", persistable=True, name="my_seed")
        out = fluid.contrib.layers.shuffle_batch(x, seed=seed)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    data = np.arange(10, dtype=np.float32).reshape(5, 2)
    t = fluid.create_lod_tensor(data, [[2, 3]], fluid.CPUPlace())
    got, s1 = exe.run(main, feed={"x": t}, fetch_list=[out, "my_seed"], scope=scope, return_numpy=False)
    s1 = int(np.array(s1).reshape(-1)[0])
    assert got.recursive_sequence_lengths() == [[2, 3]]
    assert sorted(map(tuple, np.array(got).tolist())) == sorted(map(tuple, data.tolist()))
    s2 = exe.run(main, feed={"x": t}, fetch_list=[out, "my_seed"], scope=scope)[1]
    assert s1 != 4 and int(s2[0]) != s1


def test_bad_seed_is_refused():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 2], "float32")
        with pytest.raises(TypeError, match="seed"):
            fluid.contrib.layers.shuffle_batch(x, seed=1.5)
        with pytest.raises(TypeError, match="int64"):
            fluid.contrib.layers.shuffle_batch(x, seed=fluid.layers.fill_constant([1], "int32", 3))


def test_paddle2_incubate_layers_shuffle_batch_is_the_same_layer():
    """Paddle 3.0.0's paddle.incubate.layers.shuffle_batch(x, seed=5) on arange(20) [10, 2], run three
    times (legacy static graph, CPU), gave these first columns: each run a new order of the rows."""
    paddle300 = [[18.0, 12.0, 0.0, 16.0, 10.0, 2.0, 4.0, 8.0, 6.0, 14.0],
                 [8.0, 0.0, 10.0, 18.0, 4.0, 12.0, 14.0, 16.0, 2.0, 6.0],
                 [18.0, 12.0, 14.0, 16.0, 0.0, 6.0, 10.0, 4.0, 8.0, 2.0]]
    data = np.arange(20, dtype=np.float32).reshape(10, 2)
    for run_ in paddle300:
        assert sorted(run_) == data[:, 0].tolist()
    import psjob as paddle
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [None, 2], "float32")
        out = paddle.incubate.layers.shuffle_batch(x, seed=5)
    assert paddle.incubate.layers.shuffle_batch is fluid.contrib.layers.shuffle_batch
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.Scope()
    exe.run(startup, scope=scope)
    runs = [exe.run(main, feed={"x": data}, fetch_list=[out], scope=scope)[0] for _ in range(3)]
    for got in runs:
        assert sorted(got[:, 0].tolist()) == data[:, 0].tolist()
        np.testing.assert_array_equal(got[:, 1], got[:, 0] + 1)  # whole rows move
    assert len({tuple(r[:, 0]) for r in runs}) == 3
