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


def _conv_program(filter_size, padding_start, pool):
    """ids [4, 5] → embedding → sequence_unpad (lengths 3, 5, 1, 2) → sequence_conv_pool (or
    sequence_conv with padding_start, then sequence_pool) → softmax fc → cross entropy; SGD."""
    rs = np.random.RandomState(1)
    emb_w = rs.uniform(-1, 1, (10, 3)).astype("float32")
    conv_w = rs.uniform(-0.5, 0.5, (filter_size * 3, 4)).astype("float32")
    conv_b = rs.uniform(-0.1, 0.1, (4,)).astype("float32")
    fc_w = rs.uniform(-0.5, 0.5, (4, 2)).astype("float32")
    ids = rs.randint(0, 10, (4, 5)).astype("int64")
    feed = {"ids": ids, "len": np.array([3, 5, 1, 2], dtype="int64"),
            "label": np.array([[0], [1], [1], [0]], dtype="int64")}
    init = fluid.initializer.NumpyArrayInitializer
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start), fluid.unique_name.guard():
        x = fluid.data(name="ids", shape=[None, 5], dtype="int64")
        ln = fluid.data(name="len", shape=[None], dtype="int64")
        y = fluid.data(name="label", shape=[None, 1], dtype="int64")
        emb = fluid.embedding(x, size=[10, 3], param_attr=fluid.ParamAttr(name="emb", initializer=init(emb_w)))
        seq = fluid.layers.sequence_unpad(emb, length=ln)
        attrs = dict(act="tanh", param_attr=fluid.ParamAttr(name="cw", initializer=init(conv_w)),
                     bias_attr=fluid.ParamAttr(name="cb", initializer=init(conv_b)))
        if padding_start is None:
            pooled = fluid.nets.sequence_conv_pool(seq, 4, filter_size, pool_type=pool, **attrs)
        else:
            conv = fluid.layers.sequence_conv(seq, 4, filter_size, padding_start=padding_start, **attrs)
            pooled = fluid.layers.sequence_pool(conv, pool)
        pred = fluid.layers.fc(pooled, 2, act="softmax", bias_attr=False,
                               param_attr=fluid.ParamAttr(name="fw", initializer=init(fc_w)))
        loss = fluid.layers.mean(fluid.layers.cross_entropy(pred, y))
        fluid.optimizer.SGD(learning_rate=0.5).minimize(loss)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(start, scope=scope)
    losses = []
    for _ in range(3):
        lv, sv = exe.run(main, feed=feed, fetch_list=[loss, seq], scope=scope, return_numpy=False)
        losses.append(float(np.array(lv).reshape(-1)[0]))
        assert sv.lod() == [[0, 3, 8, 9, 11]] and np.array(sv).shape == (11, 3)
    return losses, {n: np.array(scope.find_var(n).get_tensor()) for n in ("emb", "cw", "cb", "fw")}


# (filter_size, padding_start (None: sequence_conv_pool's default), pool type) -> Paddle 1.8.5's
# losses of 3 SGD steps and each parameter's (sum, sum of squares) after them.
CONV_PADDLE_185 = {
    (3, None, "max"): ([0.6942821, 0.639574, 0.5977958],
                       {"emb": (-3.972795, 11.469321), "cw": (-1.411321, 3.199857), "cb": (0.104488, 0.008164),
                        "fw": (-0.17415, 0.929057)}),
    (4, None, "max"): ([0.789799, 0.6788224, 0.6152881],
                       {"emb": (-3.690337, 11.262989), "cw": (-0.978975, 4.089375), "cb": (0.11669, 0.004311),
                        "fw": (0.943723, 0.5449)}),
    (2, 0, "average"): ([0.7331883, 0.7113848, 0.692993],
                        {"emb": (-3.855832, 11.318261), "cw": (-0.365696, 2.247114), "cb": (-0.141676, 0.01106),
                         "fw": (-0.500116, 0.416579)}),
    (3, -2, "sum"): ([0.9080896, 0.636107, 0.5530528],
                     {"emb": (-3.706033, 11.350287), "cw": (-1.657684, 3.199689), "cb": (-0.028694, 0.05122),
                      "fw": (-0.17415, 0.732434)}),
}


@pytest.mark.parametrize("case", sorted(CONV_PADDLE_185, key=str), ids=lambda c: "-".join(map(str, c)))
def test_sequence_unpad_and_conv_pool_match_paddle_185(case):
    losses, params = _conv_program(*case)
    want_losses, want_params = CONV_PADDLE_185[case]
    np.testing.assert_allclose(losses, want_losses, rtol=2e-6, atol=1e-7)
    for name, (s, sq) in want_params.items():
        assert abs(params[name].sum() - s) < 5e-6 and abs((params[name] ** 2).sum() - sq) < 5e-6, name


def test_sequence_expand_as_and_reshape_match_paddle_185():
    """fc of x [3, 4] → sequence_expand_as y (lengths 2, 1, 3) → times y → sequence_reshape to 1
    column, then to 2 → tanh → sum pool → mean of squares; SGD. Paddle 1.8.5: the LoDs
    [[0, 2, 3, 6]] and [[0, 4, 6, 12]], the expanded values' sum -0.925956, losses
    [0.5149561, 0.1892046, 0.0312048], the weight's (sum, sum of squares) (-1.503786, 0.582776)."""
    rs = np.random.RandomState(2)
    fc_w = rs.uniform(-1, 1, (4, 2)).astype("float32")
    xv = rs.uniform(-1, 1, (3, 4)).astype("float32")
    yv = rs.uniform(-1, 1, (6, 2)).astype("float32")
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        y = fluid.data(name="y", shape=[None, 2], dtype="float32", lod_level=1)
        h = fluid.layers.fc(x, 2, bias_attr=False, param_attr=fluid.ParamAttr(
            name="w", initializer=fluid.initializer.NumpyArrayInitializer(fc_w)))
        e = fluid.layers.sequence_expand_as(h, y)
        r = fluid.layers.sequence_reshape(fluid.layers.elementwise_mul(e, y), new_dim=1)
        p = fluid.layers.sequence_pool(fluid.layers.tanh(fluid.layers.sequence_reshape(r, new_dim=2)), "sum")
        loss = fluid.layers.mean(fluid.layers.elementwise_mul(p, p))
        fluid.optimizer.SGD(learning_rate=0.5).minimize(loss)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(start, scope=scope)
    feed = {"x": xv, "y": fluid.create_lod_tensor(yv, [[2, 1, 3]], fluid.CPUPlace())}
    losses = []
    for step in range(3):
        lv, ev, rv = exe.run(main, feed=feed, fetch_list=[loss, e, r], scope=scope, return_numpy=False)
        losses.append(float(np.array(lv).reshape(-1)[0]))
        if step == 0:
            assert ev.lod() == [[0, 2, 3, 6]] and rv.lod() == [[0, 4, 6, 12]] and np.array(rv).shape == (12, 1)
            assert abs(np.array(ev).sum() - -0.925956) < 2e-6
    np.testing.assert_allclose(losses, [0.5149561, 0.1892046, 0.0312048], rtol=2e-6, atol=1e-7)
    w = np.array(scope.find_var("w").get_tensor())
    assert abs(w.sum() - -1.503786) < 5e-6 and abs((w * w).sum() - 0.582776) < 5e-6


def test_sequence_layers_refuse_bad_input_by_name():
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 3], dtype="float32", lod_level=1)
        r = fluid.layers.sequence_reshape(x, new_dim=2)
        with pytest.raises(ValueError, match="filter_stride"):
            fluid.layers.sequence_conv(x, 2, 3, filter_stride=2)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start)
    with pytest.raises(Exception, match="new_dim 2 does not divide"):
        exe.run(main, feed={"x": fluid.create_lod_tensor(np.ones((3, 3), "float32"), [[1, 2]], fluid.CPUPlace())},
                fetch_list=[r])


def test_dynamic_gru_h0_matches_paddle_185():
    """h_0 = fc(h0 data) with an identity init; one SGD step (lr 1) on mean(h * h). Paddle 1.8.5:
    hidden row 3 (the one-row sequence) and the h_0 fc weight after the step."""
    d, width = 3, 4
    rs = np.random.RandomState(0)
    w_fc = rs.uniform(-0.5, 0.5, (width, 3 * d)).astype("float32")
    w_gru = rs.uniform(-0.5, 0.5, (d, 3 * d)).astype("float32")
    x_np = rs.uniform(-1, 1, (sum(LENS), width)).astype("float32")
    h0_np = rs.uniform(-1, 1, (3, d)).astype("float32")
    init = fluid.initializer.NumpyArrayInitializer
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, width], dtype="float32", lod_level=1)
        h0_in = fluid.data(name="h0", shape=[None, d], dtype="float32")
        h0 = fluid.layers.fc(h0_in, d, bias_attr=False, param_attr=fluid.ParamAttr(
            name="w_h0", initializer=init(np.eye(d, dtype="float32"))))
        fc0 = fluid.layers.fc(x, 3 * d, bias_attr=False, param_attr=fluid.ParamAttr(name="w_fc", initializer=init(w_fc)))
        h = fluid.layers.dynamic_gru(fc0, d, h_0=h0, param_attr=fluid.ParamAttr(name="w_gru", initializer=init(w_gru)))
        loss = fluid.layers.mean(fluid.layers.elementwise_mul(h, h))
        fluid.optimizer.SGD(learning_rate=1.0).minimize(loss)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(start, scope=scope)
    hv, w = exe.run(main, feed={"x": fluid.create_lod_tensor(x_np, [LENS], fluid.CPUPlace()), "h0": h0_np},
                    fetch_list=[h, "w_h0"], scope=scope, return_numpy=False)
    np.testing.assert_allclose(np.array(hv)[3], [0.58364, -0.629012, 0.14338], atol=2e-6)
    np.testing.assert_allclose(np.array(w), [[0.967242, 0.026633, -0.039003], [0.043139, 0.959311, 0.014587],
                                             [0.012922, -0.031566, 0.923376]], atol=2e-6)


def test_bpr_loss_matches_paddle_185():
    """fc scores [5, 4] of a LoD batch → bpr_loss → reduce_sum; 3 SGD steps. Paddle 1.8.5's
    per-row losses (and LoD) of the first step, the summed losses, and the weight after."""
    rs = np.random.RandomState(3)
    w0 = rs.uniform(-1, 1, (3, 4)).astype("float32")
    xv = rs.uniform(-1, 1, (5, 3)).astype("float32")
    lab = np.array([[0], [3], [1], [2], [3]], dtype="int64")
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 3], dtype="float32", lod_level=1)
        label = fluid.data(name="l", shape=[None, 1], dtype="int64", lod_level=1)
        s = fluid.layers.fc(x, 4, bias_attr=False, param_attr=fluid.ParamAttr(
            name="w", initializer=fluid.initializer.NumpyArrayInitializer(w0)))
        y = fluid.layers.bpr_loss(s, label)
        loss = fluid.layers.reduce_sum(y)
        fluid.optimizer.SGD(learning_rate=0.5).minimize(loss)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(start, scope=scope)
    feed = {"x": fluid.create_lod_tensor(xv, [[2, 3]], fluid.CPUPlace()),
            "l": fluid.create_lod_tensor(lab, [[2, 3]], fluid.CPUPlace())}
    losses = []
    for step in range(3):
        lv, yv = exe.run(main, feed=feed, fetch_list=[loss, y], scope=scope, return_numpy=False)
        losses.append(float(np.array(lv).reshape(-1)[0]))
        if step == 0:
            np.testing.assert_allclose(np.array(yv).reshape(-1), [1.030706, 0.385699, 1.071428, 0.563069, 1.121],
                                       atol=2e-6)
            assert yv.lod() == [[0, 2, 5]]
    np.testing.assert_allclose(losses, [4.171902, 3.784368, 3.472954], atol=5e-6)
    w = np.array(scope.find_var("w").get_tensor())
    assert abs(w.sum() - -1.676535) < 5e-6 and abs((w * w).sum() - 3.007171) < 5e-6


def test_reduce_keeps_the_lod_when_it_keeps_the_rows():
    """As Paddle 1.8.5: reduce_sum over dim 1 and reduce_max over dim -1 keep X's LoD
    [[0, 1, 4]]; reduce_sum over dim 0 has none."""
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 3], dtype="float32", lod_level=1)
        outs = [fluid.layers.reduce_sum(x, dim=1, keep_dim=True), fluid.layers.reduce_max(x, dim=[-1]),
                fluid.layers.reduce_sum(x, dim=0)]
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start)
    xv = np.arange(12, dtype="float32").reshape(4, 3)
    got = exe.run(main, feed={"x": fluid.create_lod_tensor(xv, [[1, 3]], fluid.CPUPlace())}, fetch_list=outs,
                  return_numpy=False)
    assert [t.lod() for t in got] == [[[0, 1, 4]], [[0, 1, 4]], []]
    np.testing.assert_array_equal(np.array(got[0]).reshape(-1), [3, 12, 21, 30])


def test_paddle2_static_nn_sequence_layers_build_fluids_ops():
    """Paddle 2.x keeps Fluid's sequence layers in paddle.static.nn with Fluid's signatures: a 2.x
    program written with them builds the same ops, and computes the same, as the Fluid one."""
    import psjob as paddle

    def build(nn):
        main, start = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, start), fluid.unique_name.guard():
            x = fluid.data(name="x", shape=[None, 4], dtype="float32", lod_level=1)
            y = fluid.data(name="y", shape=[None, 2], dtype="float32", lod_level=1)
            conv = nn.sequence_conv(x, 2, filter_size=3, param_attr=fluid.ParamAttr(
                initializer=fluid.initializer.ConstantInitializer(0.1)))
            pooled = nn.sequence_pool(nn.sequence_reshape(conv, 2), "sum")  # one row per sequence
            out = nn.sequence_pool(nn.sequence_expand_as(pooled, y), "max")
        return main, start, out

    rs = np.random.RandomState(1)
    x = fluid.create_lod_tensor(rs.uniform(-1, 1, (8, 4)).astype("float32"), [LENS + [0]], fluid.CPUPlace())
    y = fluid.create_lod_tensor(rs.uniform(-1, 1, (8, 2)).astype("float32"), [LENS + [0]], fluid.CPUPlace())
    results = []
    for nn in (fluid.layers, paddle.static.nn):
        main, start, out = build(nn)
        exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
        exe.run(start, scope=scope)
        results.append(([op.type for op in main.global_block().ops],
                        exe.run(main, feed={"x": x, "y": y}, fetch_list=[out], scope=scope)[0]))
    assert results[0][0] == results[1][0] and "sequence_conv" in results[0][0]
    np.testing.assert_array_equal(results[0][1], results[1][1])


def test_sequence_unpad_of_a_2d_batch_keeps_a_column_as_paddle_185():
    """[batch, max_len] unpads to [-1, 1] (Paddle 1.8.5: shape (-1, 1), lod_level 1; the rows
    below and LoD [[0, 2, 5]] printed by it), so an embedding of it is [-1, 1, dim] — PaddleRec's
    listwise rerank model squeezes that axis. The gradient goes back to the kept cells."""
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 5], dtype="float32")
        x.stop_gradient = False
        length = fluid.data(name="l", shape=[None], dtype="int64")
        y = fluid.layers.sequence_unpad(x, length)
        assert tuple(y.shape) == (-1, 1) and y.lod_level == 1
        loss = fluid.layers.reduce_sum(y * y)
        [dx] = fluid.gradients(loss, [x])
    exe = fluid.Executor(fluid.CPUPlace())
    feed = {"x": np.arange(10, dtype="float32").reshape(2, 5), "l": np.array([2, 3], "int64")}
    out, g = exe.run(main, feed=feed, fetch_list=[y, dx], return_numpy=False)
    assert np.array(out).tolist() == [[0.0], [1.0], [5.0], [6.0], [7.0]] and out.lod() == [[0, 2, 5]]
    assert np.array(g).tolist() == [[0, 2, 0, 0, 0], [10, 12, 14, 0, 0]]
