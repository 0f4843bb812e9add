"""Fluid 1.8's dynamic_lstmp (the lstmp op): projection, cell and the gradients of the input, the
weight, the projection weight, the bias (and of h_0 / c_0) in three configurations (peepholes;
no peepholes, reversed, identity projection; cell and projection clipping with initial states).
Paddle 1.8.5 (paddle.fluid, CPU) ran the same programs with the same parameters and feeds and
printed these values; each tensor is pinned by the sum of its absolute values and its sum
weighted by sin(1..n) over the flattened values."""
import numpy as np
import pytest

import psjob.fluid as fluid

L = fluid.layers

CONFIGS = [dict(), dict(use_peepholes=False, is_reverse=True, proj_activation="identity"),
           dict(cell_clip=0.3, proj_clip=0.25, h0=True)]
PADDLE_185 = [[[1.62196, 0.23762], [7.35537, -0.15159], [0.85729, 0.08205], [0.10105, 0.0006], [1.47754, -0.0371],
               [0.955, 0.09571]],
              [[1.75873, 0.14001], [7.37887, 0.38814], [1.02165, 0.09617], [0.11289, 0.01445], [1.52104, 0.06543],
               [0.93908, 0.09492]],
              [[1.31363, 0.15404], [5.86538, -0.09586], [0.28316, 0.06073], [0.04407, -0.00057], [1.00019, 0.01118],
               [0.30933, 0.00268], [0.04411, -0.00848], [0.13334, 0.04641]]]


@pytest.mark.parametrize("k", range(3))
def test_dynamic_lstmp_equal_paddle_185(k):
    rng = np.random.RandomState(4)
    place = fluid.CPUPlace()
    lens, d, p = [3, 1, 4], 3, 2
    x_v = rng.randn(sum(lens), 4 * d).astype("float32") * 0.5
    h0_v = rng.randn(3, p).astype("float32") * 0.5
    c0_v = rng.randn(3, d).astype("float32") * 0.5
    cfg = dict(CONFIGS[k])
    use_h0 = cfg.pop("h0", False)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[-1, 4 * d], dtype="float32", lod_level=1)
        h0 = fluid.data(name="h0", shape=[-1, p], dtype="float32")
        c0 = fluid.data(name="c0", shape=[-1, d], dtype="float32")
        for v in (x, h0, c0):
            v.stop_gradient = False
        proj, cell = L.dynamic_lstmp(x, 4 * d, p, h_0=h0 if use_h0 else None, c_0=c0 if use_h0 else None, **cfg)
        params = main.global_block().all_parameters()
        grads = fluid.gradients([L.reduce_sum(L.elementwise_mul(proj, L.sin(proj)))],
                                [x] + params + ([h0, c0] if use_h0 else []))
    assert (proj.name, cell.name) == ("lstmp_0.tmp_0", "lstmp_0.tmp_1")
    assert [(v.name, tuple(v.shape)) for v in params] == [("lstmp_0.w_0", (p, 4 * d)), ("lstmp_0.w_1", (d, p)),
                                                         ("lstmp_0.b_0", (1, 4 * d if k == 1 else 7 * d))]
    exe = fluid.Executor(place)
    exe.run(startup)
    prng = np.random.RandomState(9)
    for prm in params:
        fluid.global_scope().find_var(prm.name).get_tensor().set(prng.rand(*prm.shape).astype("float32") - 0.5, place)
    res = exe.run(main, feed={"x": fluid.create_lod_tensor(x_v, [lens], place), "h0": h0_v, "c0": c0_v},
                  fetch_list=[proj, cell] + grads, return_numpy=False)
    assert res[0].recursive_sequence_lengths() == [lens]
    for got, want in zip(res, PADDLE_185[k]):
        v = np.array(got).astype(np.float64).reshape(-1)
        np.testing.assert_allclose([np.abs(v).sum(), (v * np.sin(np.arange(v.size) + 1.0)).sum()], want,
                                   rtol=2e-5, atol=2e-5)


def test_cudnn_lstm_builds_as_paddle_185_and_refuses_to_run():
    """fluid.layers.lstm: Paddle 1.8.5 builds it (one flat weight of 480 values for 2
    bidirectional layers of 3 over 4 inputs; Out (-1, 5, 3) as it infers it) and its CPU build
    stops at run time ("CPU is not support for this kernel now"); psjob does the same."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        data = fluid.data(name="x", shape=[-1, 5, 4], dtype="float32")
        init = L.fill_constant([2, 2, 3], "float32", 0.0)
        out, last_h, last_c = L.lstm(data, init, init, 5, 3, 2, is_bidirec=True)
    assert out.shape == (-1, 5, 3) and last_h.shape == (2, 2, 3)
    assert [(p.name, tuple(p.shape)) for p in main.global_block().all_parameters()] == [("cudnn_lstm_0.w_0", (480,))]
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    with pytest.raises(Exception, match="only a cuDNN kernel"):
        exe.run(main, feed={"x": np.ones((2, 5, 4), "float32")}, fetch_list=[out])
