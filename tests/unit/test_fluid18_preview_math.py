"""Fluid 1.8's 2.0-preview math in fluid.layers (bmm, t, addmm, dot, index_select, index_sample,
roll, trace, clamp, log_softmax, logsumexp, nonzero) and softmax along another axis than the
last. Paddle 1.8.5 (paddle.fluid, CPU) ran the same program on the same feed; each output and
gradient is pinned by its shape and two numbers of what it printed (the sum of absolute values
and the sum weighted by sin(1..n) over the flattened values), with the output names."""
import numpy as np

import psjob.fluid as fluid

L = fluid.layers

PADDLE_185 = {'addmm': ((3, 5), [21.80231, 6.26677]),
              'bmm': ((2, 3, 2), [19.78585, -6.51077]),
              'clamp': ((3, 4), [5.48551, -0.94892]),
              'clampmax': ((3, 4), [1.5, -0.23847]),
              'dot1': ((1,), [1.10825, 0.93256]),
              'dot2': ((3, 1), [4.19716, 1.42742]),
              'g_a3': ((2, 3, 4), [52.03966, -6.1572]),
              'g_b3': ((2, 4, 2), [60.9748, -25.49712]),
              'g_c': ((3, 5), [34.46847, -9.34288]),
              'g_m': ((3, 4), [58.90006, -6.79056]),
              'g_m2': ((3, 4), [9.82959, 1.32958]),
              'g_n': ((4, 5), [19.54529, -3.30084]),
              'g_v': ((4,), [4.28873, -3.27613]),
              'g_w': ((4,), [4.40765, -0.80095]),
              'isam': ((3, 2), [3.16116, -0.23439]),
              'isel': ((3, 4), [9.69531, -3.52825]),
              'isel1': ((3, 3), [6.78805, -0.82017]),
              'lse': ((3,), [5.29684, 3.39967]),
              'lse_all': ((1,), [2.88334, 2.42624]),
              'lsm': ((3, 4), [21.44341, -0.47203]),
              'nz': ((2, 1), [2.0, 1.81859]),
              'roll': ((3, 4), [10.2392, 2.44597]),
              'roll0': ((3, 4), [10.2392, 2.99537]),
              't': ((4, 3), [10.2392, 3.56776]),
              'trace': ((2,), [3.86622, 3.34884])}
# logsumexp is Paddle's op here (Paddle 1.8 composes log(sum(exp)), named log_N); roll over the
# flattened input reshapes back in place in Paddle (roll_N), here into reshape2_N
NAMES_185 = {'addmm': 'addmm_0.tmp_0',
             'bmm': 'bmm_0.tmp_0',
             'clamp': 'clamp_0.tmp_0',
             'clampmax': 'clamp_1.tmp_0',
             'dot1': 'dot_0.tmp_0',
             'dot2': 'dot_1.tmp_0',
             'isam': 'index_sample_0.tmp_0',
             'isel': 'index_select_0.tmp_0',
             'isel1': 'index_select_1.tmp_0',
             'lsm': 'log_softmax_0.tmp_1',
             'roll': 'roll_0.tmp_0',
             't': 't_0.tmp_0',
             'trace': 'trace_0.tmp_0'}


def _fingerprint(v):
    v = np.asarray(v, dtype=np.float64).reshape(-1)
    return [float(np.abs(v).sum()), float((v * np.sin(np.arange(v.size) + 1.0)).sum())]


def test_preview_math_equal_paddle_185():
    rng = np.random.RandomState(6)
    feed = {"a3": rng.randn(2, 3, 4).astype("float32"), "b3": rng.randn(2, 4, 2).astype("float32"),
            "m": rng.randn(3, 4).astype("float32"), "n": rng.randn(4, 5).astype("float32"),
            "c": rng.randn(3, 5).astype("float32"), "v": rng.randn(4).astype("float32"),
            "w": rng.randn(4).astype("float32"), "m2": rng.randn(3, 4).astype("float32"),
            "idx": np.array([2, 0, 2], "int64"), "sidx": np.array([[3, 1], [0, 0], [2, 3]], "int64")}
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        d = {}
        for k, v in feed.items():
            d[k] = fluid.data(name=k, shape=list(v.shape), dtype=str(v.dtype))
            d[k].stop_gradient = v.dtype != np.float32
        o = {"bmm": L.bmm(d["a3"], d["b3"]), "t": L.t(d["m"]),
             "addmm": L.addmm(d["c"], d["m"], d["n"], alpha=0.5, beta=2.0), "dot1": L.dot(d["v"], d["w"]),
             "dot2": L.dot(d["m"], d["m2"]), "isel": L.index_select(d["m"], d["idx"], dim=0),
             "isel1": L.index_select(d["m"], d["idx"], dim=1), "isam": L.index_sample(d["m"], d["sidx"]),
             "roll": L.roll(d["m"], shifts=[1, -1], dims=[0, 1]), "roll0": L.roll(d["m"], 2),
             "trace": L.trace(d["a3"], offset=1, dim1=1, dim2=2), "clamp": L.clamp(d["m"], min=-0.5, max=0.5),
             "clampmax": L.clamp(d["m"], max=0.3), "lsm": L.log_softmax(d["m"], axis=1),
             "lse": L.logsumexp(d["m"], dim=1), "lse_all": L.logsumexp(d["m"])}
        nz = L.nonzero(L.cast(d["idx"], "float32"))
        names = sorted(o)
        loss = L.sums([L.reduce_sum(L.elementwise_mul(o[k], L.sin(o[k]))) for k in names])
        gnames = ["a3", "b3", "m", "n", "c", "v", "w", "m2"]
        grads = fluid.gradients([loss], [d[k] for k in gnames])
    assert {k: o[k].name for k in NAMES_185} == NAMES_185
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    res = exe.run(main, feed=feed, fetch_list=[o[k] for k in names] + grads + [nz])
    for name, value in zip(names + ["g_" + g for g in gnames] + ["nz"], res):
        shape, want = PADDLE_185[name]
        assert value.shape == shape, name
        np.testing.assert_allclose(_fingerprint(value), want, rtol=2e-5, atol=2e-5, err_msg=name)
    assert res[-1].tolist() == [[0], [2]] and res[-1].dtype == np.int64


def test_softmax_along_another_axis_equal_paddle_185():
    """fluid.layers.softmax(x, axis=0) and its gradient, as Paddle 1.8.5 printed them (the
    softmax op's axis attribute, also as a saved Paddle program holds it)."""
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data(name="x", shape=[2, 3], dtype="float32")
        x.stop_gradient = False
        y = L.softmax(x, axis=0)
        (g,) = fluid.gradients([L.reduce_sum(y * L.sin(y))], [x])
        out, grad = fluid.Executor(fluid.CPUPlace()).run(
            feed={"x": np.arange(6, dtype="float32").reshape(2, 3)}, fetch_list=[y, g])
    np.testing.assert_allclose(out, [[0.047426] * 3, [0.952574] * 3], rtol=1e-5)
    np.testing.assert_allclose(grad, [[-0.057475] * 3, [0.057475] * 3], rtol=1e-4)


# kron, cross, dist (p 2, 1, inf, 3), diag_embed and the gradients, as Paddle 1.8.5 printed them
PREVIEW2_185 = {'cross': ((4, 3), [17.06414, 4.32589]),
                'cross1': ((4, 3), [17.06414, 4.32589]),
                'de': ((2, 3, 3), [5.38545, 3.97521]),
                'de2': ((4, 2, 4), [5.38545, 3.68762]),
                'dist1': ((1,), [15.34501, 12.91238]),
                'dist2': ((1,), [5.6272, 4.73513]),
                'dist3': ((1,), [2.11792, 1.78217]),
                'distinf': ((1,), [3.23105, 2.71884]),
                'g_a': ((2, 3), [17.40897, 2.39463]),
                'g_b': ((3, 2), [21.91071, 4.27737]),
                'g_c': ((4, 3), [170.89767, 9.70561]),
                'g_e': ((4, 3), [173.0884, -7.66999]),
                'g_f': ((2, 3), [0.38939, 0.08311]),
                'kron': ((6, 6), [26.25104, 1.48541])}
PREVIEW2_NAMES_185 = {'cross': 'cross_0.tmp_0',
                      'cross1': 'cross_1.tmp_0',
                      'dist1': 'dist_1.tmp_0',
                      'dist2': 'dist_0.tmp_0',
                      'dist3': 'dist_3.tmp_0',
                      'distinf': 'dist_2.tmp_0',
                      'kron': 'kron_0.tmp_0'}


def test_kron_cross_dist_diag_embed_equal_paddle_185():
    rng = np.random.RandomState(12)
    feed = {"a": rng.randn(2, 3).astype("float32"), "b": rng.randn(3, 2).astype("float32"),
            "c": rng.randn(4, 3).astype("float32"), "e": rng.randn(4, 3).astype("float32"),
            "f": rng.randn(2, 3).astype("float32")}
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        d = {}
        for k, v in feed.items():
            d[k] = fluid.data(name=k, shape=list(v.shape), dtype="float32")
            d[k].stop_gradient = False
        o = {"kron": L.kron(d["a"], d["b"]), "cross": L.cross(d["c"], d["e"]), "cross1": L.cross(d["c"], d["e"], dim=1),
             "dist2": L.dist(d["c"], d["e"]), "dist1": L.dist(d["c"], d["e"], p=1),
             "distinf": L.dist(d["c"], d["e"], p=float("inf")), "dist3": L.dist(d["a"], d["f"], p=3)}
        de, de2 = L.diag_embed(d["a"]), L.diag_embed(d["a"], offset=1, dim1=0, dim2=2)
        names = sorted(o)
        loss = L.sums([L.reduce_sum(L.elementwise_mul(o[k], L.sin(o[k]))) for k in names])
        gnames = ["a", "b", "c", "e", "f"]
        grads = fluid.gradients([loss], [d[k] for k in gnames])
    assert {k: o[k].name for k in names} == PREVIEW2_NAMES_185
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    res = exe.run(main, feed=feed, fetch_list=[o[k] for k in names] + grads + [de, de2])
    for name, value in zip(names + ["g_" + g for g in gnames] + ["de", "de2"], res):
        shape, want = PREVIEW2_185[name]
        assert value.shape == shape, name
        np.testing.assert_allclose(_fingerprint(value), want, rtol=2e-5, atol=2e-5, err_msg=name)
