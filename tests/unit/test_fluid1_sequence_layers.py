"""Fluid 1.x LoD sequence layers (fluid.layers.dynamic_gru, ...) against Paddle 1.8.5: small
programs over ragged LoD batches, forward values and a few SGD steps.

The expected numbers were printed by Paddle 1.8.5 (Python 3.7, CPU) running the same program
(the fluid calls below, written for both: `import paddle.fluid as fluid`), parameters from
NumpyArrayInitializer with numpy.random.RandomState(0)'s draws in the order below."""
import numpy as np
import pytest

import psjob.fluid as fluid

LENS = [3, 1, 4]


def _gru_program(origin_mode, is_reverse, act, d=3, width=4):
    rs = np.random.RandomState(0)
    w_fc = rs.uniform(-0.5, 0.5, (width, 3 * d)).astype("float32")
    w_gru = rs.uniform(-0.5, 0.5, (d, 3 * d)).astype("float32")
    b_gru = rs.uniform(-0.2, 0.2, (1, 3 * d)).astype("float32")
    x_np = rs.uniform(-1, 1, (sum(LENS), width)).astype("float32")
    t_np = rs.uniform(-1, 1, (sum(LENS), d)).astype("float32")
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, width], dtype="float32", lod_level=1)
        t = fluid.data(name="t", shape=[None, d], dtype="float32", lod_level=1)
        init = fluid.initializer.NumpyArrayInitializer
        fc0 = fluid.layers.fc(x, 3 * d, bias_attr=False,
                              param_attr=fluid.ParamAttr(name="w_fc", initializer=init(w_fc)))
        h = fluid.layers.dynamic_gru(fc0, d, is_reverse=is_reverse, origin_mode=origin_mode,
                                     candidate_activation=act,
                                     param_attr=fluid.ParamAttr(name="w_gru", initializer=init(w_gru)),
                                     bias_attr=fluid.ParamAttr(name="b_gru", initializer=init(b_gru)))
        diff = fluid.layers.elementwise_sub(h, t)
        loss = fluid.layers.mean(fluid.layers.elementwise_mul(diff, diff))
        fluid.optimizer.SGD(learning_rate=0.5).minimize(loss)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(start, scope=scope)
    feed = {"x": fluid.create_lod_tensor(x_np, [LENS], fluid.CPUPlace()),
            "t": fluid.create_lod_tensor(t_np, [LENS], fluid.CPUPlace())}
    losses, first = [], None
    for _ in range(3):
        lv, hv = exe.run(main, feed=feed, fetch_list=[loss, h], scope=scope, return_numpy=False)
        losses.append(float(np.array(lv).reshape(-1)[0]))
        first = first or (np.array(hv), hv.lod())
    params = {n: np.array(scope.find_var(n).get_tensor()) for n in ("w_fc", "w_gru", "b_gru")}
    return losses, first, params


# (origin_mode, is_reverse, candidate_activation) -> Paddle 1.8.5's losses of 3 SGD steps, the
# first step's hidden rows 0 and 7 and sum, and each parameter's (sum, sum of squares) after.
GRU_PADDLE_185 = {
    (False, False, "tanh"): ([0.3209186, 0.3027683, 0.2877457], [-0.201961, 0.431444, 0.127631],
                             [-0.089155, 0.294648, -0.194885], 0.829234,
                             {"w_fc": (2.015695, 2.821261), "w_gru": (-1.72668, 1.883934),
                              "b_gru": (-0.04268, 0.140557)}),
    (True, False, "tanh"): ([0.3380481, 0.3157128, 0.2987049], [-0.301091, 0.319009, 0.089115],
                            [-0.103135, 0.311726, -0.174046], 0.681507,
                            {"w_fc": (1.828861, 2.758729), "w_gru": (-1.716484, 1.876131),
                             "b_gru": (0.065719, 0.114491)}),
    (False, True, "tanh"): ([0.2966461, 0.2732244, 0.2546756], [-0.117058, 0.496713, 0.069918],
                            [-0.067459, 0.085614, -0.03154], 0.656574,
                            {"w_fc": (1.958921, 2.859959), "w_gru": (-1.724276, 1.896025),
                             "b_gru": (0.039407, 0.145635)}),
    (True, True, "relu"): ([0.2742536, 0.2537033, 0.2391179], [0.090519, 0.649207, 0.09774],
                           [0.0, 0.085147, 0.0], 3.679832,
                           {"w_fc": (2.188652, 2.830922), "w_gru": (-1.731731, 1.899103),
                            "b_gru": (-0.296837, 0.138012)}),
}


@pytest.mark.parametrize("case", sorted(GRU_PADDLE_185), ids=lambda c: "-".join(map(str, c)))
def test_dynamic_gru_matches_paddle_185(case):
    losses, (h, lod), params = _gru_program(*case)
    want_losses, row0, row7, total, want_params = GRU_PADDLE_185[case]
    np.testing.assert_allclose(losses, want_losses, rtol=2e-6, atol=1e-7)
    assert h.shape == (8, 3) and lod == [[0, 3, 4, 8]]
    np.testing.assert_allclose(h[0], row0, atol=2e-6)
    np.testing.assert_allclose(h[7], row7, atol=2e-6)
    assert abs(h.sum() - total) < 5e-6
    for name, (s, sq) in want_params.items():
        assert abs(params[name].sum() - s) < 5e-6 and abs((params[name] ** 2).sum() - sq) < 5e-6, name


def test_dynamic_gru_checks_its_arguments():
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 6], dtype="float32", lod_level=1)
        with pytest.raises(ValueError, match="candidate_activation"):
            fluid.layers.dynamic_gru(x, 2, candidate_activation="gelu")
        h = fluid.layers.dynamic_gru(x, 2)
        assert h.shape[-1] == 2 and [p.shape for p in main.global_block().all_parameters()] == [(2, 6), (1, 6)]
        with pytest.raises(Exception, match="3 \\* size"):
            fluid.layers.dynamic_gru(x, 3)


def test_expand_tiles_each_dimension_and_keeps_the_lod():
    """fluid.layers.expand as Paddle 1.8.5 runs it: [[1, 2], [3, 4], [5, 6]] with
    expand_times [1, 2] gives [[1, 2, 1, 2], ...] with X's LoD (the first dimension kept), and
    with [2, 1] the rows repeated, without LoD."""
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 2], dtype="float32", lod_level=1)
        wide = fluid.layers.expand(x, expand_times=[1, 2])
        tall = fluid.layers.expand(x, expand_times=[2, 1])
        assert wide.shape[1] == 4 and tall.shape[1] == 2
        with pytest.raises(ValueError, match="one positive count per dimension"):
            fluid.layers.expand(x, expand_times=[2])
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start)
    xv = np.arange(1, 7, dtype="float32").reshape(3, 2)
    w, t = exe.run(main, feed={"x": fluid.create_lod_tensor(xv, [[1, 2]], fluid.CPUPlace())},
                   fetch_list=[wide, tall], return_numpy=False)
    np.testing.assert_array_equal(np.array(w), np.tile(xv, [1, 2]))
    assert w.lod() == [[0, 1, 3]] and t.lod() == []
    np.testing.assert_array_equal(np.array(t), np.tile(xv, [2, 1]))


def test_get_float_element_reads_the_flattened_tensor():
    t = fluid.LoDTensor()
    t.set(np.array([[0.25], [0.5]], dtype="float32"), fluid.CPUPlace())
    assert t._get_float_element(1) == 0.5 and isinstance(t._get_float_element(0), float)
    with pytest.raises(IndexError, match="out of range"):
        t._get_float_element(2)
