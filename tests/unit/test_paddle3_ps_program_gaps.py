"""Paddle 2.x/3.x names that Paddle's own Fleet parameter-server test programs use
(dist_fleet_simnet_bow.py, dist_fleet_sparse_embedding_ctr.py): a static Variable's item(), paddle.nn.functional.softsign,
paddle.tensor.fill_constant and paddle.distributed's sparse-table entry configs.

Expected numbers come from the same program run by Paddle 3.0.0 (CPU, FLAGS_enable_pir_api=0,
the static graph of these programs), printed and pasted here."""
import numpy as np
import pytest

import psjob as paddle

paddle.enable_static()


def test_simnet_loss_shape_from_item_softsign_and_fill_constant_equal_paddle():
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data(name="x", shape=[-1, 1], dtype="float32")
        n = paddle.shape(x)[0]
        assert n.item() is n  # the Variable itself in a static graph, as in Paddle
        m = paddle.full(shape=[n, 1], fill_value=0.1, dtype="float32")
        y = paddle.maximum(paddle.full(shape=[n, 1], fill_value=0.0, dtype="float32"), paddle.subtract(m, x))
        s = paddle.nn.functional.softsign(x)
        c = paddle.tensor.fill_constant(shape=[1], value=4 * 1.0, dtype="float64")
        with pytest.raises(TypeError, match=r"must be a 0-D or 1-D Variable, got shape \[-1, 2\]"):
            paddle.static.data(name="z", shape=[-1, 2], dtype="float32").item()
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    xv = np.array([[-2.0], [-0.5], [0.0], [0.05], [3.0]], "float32")
    got_y, got_s, got_c = exe.run(main, feed={"x": xv}, fetch_list=[y, s, c])
    # Paddle 3.0.0's output of the same program (tests' module docstring).
    np.testing.assert_array_equal(got_y.ravel(), np.float32([2.0999999046325684, 0.6000000238418579,
                                                             0.10000000149011612, 0.05000000074505806, 0.0]))
    np.testing.assert_allclose(got_s.ravel(), np.float32([-0.6666666865348816, -0.3333333432674408, 0.0,
                                                          0.0476190522313118, 0.75]), rtol=1e-7)
    assert got_c.dtype == np.float64 and got_c.tolist() == [4.0]


def test_entry_configs_describe_themselves_and_check_arguments_as_paddle():
    d = paddle.distributed
    assert d.ShowClickEntry("show", "click")._to_attr() == "show_click_entry:show:click"
    assert d.CountFilterEntry(3)._to_attr() == "count_filter_entry:3"
    assert d.ProbabilityEntry(0.5)._to_attr() == "probability_entry:0.5"
    for bad in (lambda: d.ShowClickEntry("s", 1), lambda: d.CountFilterEntry(-1), lambda: d.ProbabilityEntry(1.0)):
        with pytest.raises(ValueError):
            bad()


def test_sparse_embedding_takes_an_entry_config():
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        ids = paddle.static.data(name="ids", shape=[-1, 1], dtype="int64")
        emb = paddle.static.nn.sparse_embedding(
            input=ids, size=[10, 4], entry=paddle.distributed.ShowClickEntry("show", "click"),
            param_attr=paddle.ParamAttr(name="t", initializer=paddle.nn.initializer.Constant(0.25)))
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    out, = exe.run(main, feed={"ids": np.array([[1], [7]], "int64")}, fetch_list=[emb])
    np.testing.assert_array_equal(out, np.full((2, 4), 0.25, "float32"))


def test_paddle3_static_nn_names_fluid_assign_of_an_array_and_no_grad():
    # paddle.static.nn keeps Fluid's layers under Paddle 3.0's names (PaddleRec's gpubox models
    # call continuous_value_model there); Fluid's assign takes a numpy array (Paddle's own
    # sequence_pad examples pad with assign(np.array([0.0], "float32"))).
    import psjob.fluid as fluid
    for name in ("continuous_value_model", "conv2d_transpose", "nce", "sequence_softmax", "sequence_expand"):
        assert getattr(paddle.static.nn, name) is getattr(fluid.layers, name)
    assert paddle.static.Print is fluid.layers.Print
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), paddle.no_grad():
        x = paddle.static.data("x", [-1, 1], "float32", lod_level=1)
        pad = fluid.layers.assign(np.array([0.0], "float32"))
        padded, length = fluid.layers.sequence_pad(x, pad)
        with pytest.raises(TypeError, match="numpy.ndarray of bool, float32, int32 or int64, got float64"):
            fluid.layers.assign(np.array([0.0]))
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    t = fluid.create_lod_tensor(np.array([[1], [2], [3]], "float32"), [[2, 1]], paddle.CPUPlace())
    got, n = exe.run(main, feed={"x": t}, fetch_list=[padded, length], return_numpy=False)
    assert np.asarray(got).reshape(2, 2).tolist() == [[1.0, 2.0], [3.0, 0.0]]
    assert np.asarray(n).reshape(-1).tolist() == [2, 1]

    @paddle.no_grad()
    def evaluate():
        return "ran"
    assert evaluate() == "ran"
