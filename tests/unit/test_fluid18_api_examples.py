"""Fluid 1.8 API behaviour that Paddle's own documented examples of paddle.fluid rely on,
pinned with small programs of our own. Real Paddle 1.8.5 (CPU build, Python 3.7) produced
every expected value here: gradients of a non-scalar target, a fetch_list that is one
Variable or name, loading from a program with nothing to load, transpiling an empty
program, Program.global_seed, Variable.grad_name and get_flags/set_flags."""
import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.fluid.dygraph import DygraphNotSupported


def _const_fc_program():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        x.stop_gradient = False
        h = fluid.layers.fc(x, 2, param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.5)),
                            bias_attr=False)
        y = h * h
    return main, startup, x, y


def test_gradients_of_a_non_scalar_target_sum_its_elements():
    main, startup, x, y = _const_fc_program()
    with fluid.program_guard(main, startup):
        (g,) = fluid.gradients([y], x)
    assert g.name == "x@GRAD"
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    xv = np.array([[1, 2, 3], [-1, 0, 2]], dtype="float32")
    (gv,) = exe.run(main, feed={"x": xv}, fetch_list=[g])
    # Paddle 1.8.5: [[6, 6, 6], [1, 1, 1]] (d/dx of sum((0.5 * sum(x))^2) over both outputs).
    np.testing.assert_allclose(gv, [[6.0, 6.0, 6.0], [1.0, 1.0, 1.0]])


def test_append_backward_still_wants_a_scalar_loss():
    main, startup, _, y = _const_fc_program()
    with fluid.program_guard(main, startup), pytest.raises(fluid.framework.GraphError, match="scalar"):
        fluid.backward.append_backward(y)


def test_fetch_list_may_be_one_variable_or_one_name():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        y = fluid.layers.reduce_sum(x * 2.0)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    feed = {"x": np.ones((3, 2), "float32")}
    for target in (y, y.name):
        out = exe.run(main, feed=feed, fetch_list=target)
        assert isinstance(out, list) and len(out) == 1  # Paddle 1.8.5: [array([12.])]
        assert np.asarray(out[0]).reshape(-1).tolist() == [12.0]
    with pytest.raises(TypeError, match="fetch_list"):
        exe.run(main, feed=feed, fetch_list=[3])


def test_loading_a_program_with_nothing_to_load_reads_no_file(tmp_path):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        fluid.data(name="x", shape=[None, 2], dtype="float32")
    exe = fluid.Executor(fluid.CPUPlace())
    missing = str(tmp_path / "never_saved")
    fluid.io.load_params(exe, missing, main_program=main)  # Paddle 1.8.5 returns quietly
    fluid.io.load_persistables(exe, missing, main_program=main)


def test_loading_a_parameter_from_a_missing_directory_still_fails(tmp_path):
    main, startup, _, _ = _const_fc_program()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    with pytest.raises(Exception, match="never_saved"):
        fluid.io.load_params(exe, str(tmp_path / "never_saved"), main_program=main)


def test_an_empty_program_transpiles_to_barriers_and_an_empty_pserver():
    t = fluid.DistributeTranspiler()
    t.transpile(1, program=fluid.Program(), startup_program=fluid.Program(),
                pservers="127.0.0.1:6174", trainers=2)
    trainer = t.get_trainer_program(wait_port=False)
    # Paddle 1.8.5: ['send_barrier', 'fetch_barrier'] / ['listen_and_serv'] in 2 blocks / [].
    assert [op.type for op in trainer.global_block().ops] == ["send_barrier", "fetch_barrier"]
    pserver, pstartup = t.get_pserver_programs("127.0.0.1:6174")
    assert [op.type for op in pserver.global_block().ops] == ["listen_and_serv"]
    assert pserver.num_blocks == 2
    assert [op.type for op in pstartup.global_block().ops] == []


def test_a_program_with_ops_but_no_optimizer_is_still_refused():
    main, startup, _, y = _const_fc_program()
    t = fluid.DistributeTranspiler()
    with pytest.raises(fluid.framework.GraphError, match="no optimizer ops"):
        t.transpile(0, program=main, startup_program=startup, pservers="127.0.0.1:6174", trainers=1)


def test_program_global_seed_seeds_this_and_later_programs():
    p = fluid.Program()
    try:
        p.global_seed(7)
        assert (p.random_seed, fluid.Program().random_seed) == (7, 7)  # Paddle 1.8.5: 7 7
    finally:
        p.global_seed(0)
    assert fluid.Program().random_seed == 0


def test_variable_grad_name_and_to_string():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data(name="x", shape=[-1, 23, 48], dtype="float32")
    assert x.grad_name == "x@GRAD"
    assert "x" in x.to_string(True) and "stop_gradient" in x.to_string(True, True)
    with pytest.raises(TypeError, match="bools"):
        x.to_string("yes")


def test_get_and_set_flags():
    try:
        assert fluid.get_flags(["FLAGS_eager_delete_tensor_gb", "FLAGS_check_nan_inf"]) == {
            "FLAGS_eager_delete_tensor_gb": 0.0, "FLAGS_check_nan_inf": False}
        fluid.set_flags({"FLAGS_eager_delete_tensor_gb": 1, "FLAGS_check_nan_inf": 1})
        got = fluid.get_flags(("FLAGS_eager_delete_tensor_gb",))["FLAGS_eager_delete_tensor_gb"]
        assert got == 1.0 and isinstance(got, float)  # Paddle 1.8.5 converts to the flag's type
        assert fluid.get_flags("FLAGS_check_nan_inf") == {"FLAGS_check_nan_inf": True}
    finally:
        fluid.set_flags({"FLAGS_eager_delete_tensor_gb": 0.0, "FLAGS_check_nan_inf": False})
    with pytest.raises(ValueError, match="FLAGS_nope cannot get"):
        fluid.get_flags("FLAGS_nope")
    with pytest.raises(ValueError, match="FLAGS_nope cannot set"):
        fluid.set_flags({"FLAGS_nope": 1})
    with pytest.raises(TypeError, match="dict"):
        fluid.set_flags(["FLAGS_check_nan_inf"])
    with pytest.raises(TypeError, match="list, tuple or string"):
        fluid.get_flags(3)


def test_dygraph_switches():
    assert fluid.in_dygraph_mode() is False
    fluid.disable_dygraph()
    fluid.disable_imperative()
    with pytest.raises(DygraphNotSupported, match="static graphs only"):
        fluid.enable_dygraph()
    with pytest.raises(DygraphNotSupported):
        fluid.enable_imperative(fluid.CPUPlace())
    with pytest.raises(DygraphNotSupported):
        fluid.dygraph.guard()


def _recompute_losses(make_optimizer, checkpoints=True):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        y = fluid.data(name="y", shape=[None, 1], dtype="float32")
        h = fluid.layers.fc(x, 4, act="tanh", bias_attr=False,
                            param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.1)))
        p = fluid.layers.fc(h, 1, bias_attr=False,
                            param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.2)))
        loss = fluid.layers.mean(fluid.layers.square_error_cost(p, y))
        opt = make_optimizer()
        if checkpoints:
            opt._set_checkpoints([h])
        _, params_grads = opt.minimize(loss)
    assert sorted(pv.name for pv, _ in params_grads) == ["fc_0.w_0", "fc_1.w_0"]
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        feed = {"x": np.array([[1, 2, 3], [0.5, -1, 2]], "float32"), "y": np.array([[1.0], [-0.5]], "float32")}
        return [float(exe.run(main, feed=feed, fetch_list=[loss])[0][0]) for _ in range(4)]


def test_recompute_optimizer_trains_as_the_optimizer_it_wraps():
    with fluid.unique_name.guard():
        got = _recompute_losses(lambda: fluid.optimizer.RecomputeOptimizer(fluid.optimizer.SGD(0.1)))
    # Paddle 1.8.5: 0.354303, 0.304251, 0.255693, 0.208115
    np.testing.assert_allclose(got, [0.354303, 0.304251, 0.255693, 0.208115], rtol=1e-5)


def test_recompute_optimizer_checks_its_arguments():
    with pytest.raises(TypeError, match="wraps a fluid.optimizer"):
        fluid.optimizer.RecomputeOptimizer("sgd")
    opt = fluid.optimizer.RecomputeOptimizer(fluid.optimizer.Adam(0.01))
    with pytest.raises(TypeError, match="list of Variables"):
        opt._set_checkpoints("fc_0.tmp_0")
    with pytest.raises(NotImplementedError, match="not supported by Recompute Optimizer"):
        opt.load({})
    with fluid.unique_name.guard(), pytest.raises(ValueError, match="_set_checkpoints"):
        _recompute_losses(lambda: fluid.optimizer.RecomputeOptimizer(fluid.optimizer.SGD(0.1)),
                          checkpoints=False)


def test_nets_glu_and_image_conv_helpers():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        d = fluid.data(name="d", shape=[-1, 4, 3], dtype="float32")
        g = fluid.nets.glu(d, dim=1)
        img = fluid.data(name="img", shape=[-1, 1, 6, 6], dtype="float32")
        c = fluid.nets.simple_img_conv_pool(
            img, num_filters=2, filter_size=3, pool_size=2, pool_stride=2, act="relu",
            param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.1)),
            bias_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.05)))
        q = fluid.nets.img_conv_group(img, conv_num_filter=[2, 3], pool_size=2, pool_stride=2, conv_act="relu",
                                      conv_with_batchnorm=[True, False],
                                      param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.2)))
        with pytest.raises(ValueError, match="conv_padding has 3 entries for 2 convs"):
            fluid.nets.img_conv_group(img, conv_num_filter=[2, 3], pool_size=2, conv_padding=[1, 1, 1])
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    dv = np.arange(24, dtype="float32").reshape(2, 4, 3) / 10 - 1
    iv = (np.arange(72, dtype="float32").reshape(2, 1, 6, 6) % 7) / 3 - 1
    gv, cv, qv = exe.run(main, feed={"d": dv, "img": iv}, fetch_list=[g, c, q])
    # Paddle 1.8.5's outputs (rounded to 5 places).
    np.testing.assert_allclose(gv.ravel(), [-0.40131, -0.383, -0.36013, -0.33251, -0.3, -0.26249, 0.13799,
                                            0.21328, 0.29242, 0.37513, 0.46111, 0.55008], atol=1e-5)
    np.testing.assert_allclose(cv.ravel(), [0.25, 0.05, 0.41667, 0.25, 0.25, 0.05, 0.41667, 0.25,
                                            0.0, 0.35, 0.41667, 0.0, 0.0, 0.35, 0.41667, 0.0], atol=1e-5)
    assert qv.shape == (2, 3, 3, 3)
    np.testing.assert_allclose(qv.ravel()[:6], [0.9256, 0.38167, 0.75877, 3.87611, 3.00307, 0.38167], atol=1e-4)


def test_create_random_int_lodtensor_and_lod_tensor_array():
    t = fluid.create_random_int_lodtensor(recursive_seq_lens=[[2, 3]], base_shape=[4], place=fluid.CPUPlace(),
                                          low=0, high=2)
    a = np.array(t)
    # Paddle 1.8.5: shape [5, 4], int64, lengths [[2, 3]], lod [[0, 2, 5]], values in [0, 2] inclusive.
    assert t.shape() == [5, 4] and a.dtype == np.int64
    assert t.recursive_sequence_lengths() == [[2, 3]] and t.lod() == [[0, 2, 5]]
    assert a.min() >= 0 and a.max() <= 2
    with pytest.raises(TypeError, match="base_shape must be a list"):
        fluid.create_random_int_lodtensor([[2]], (4,), fluid.CPUPlace(), 0, 1)
    with pytest.raises(ValueError, match="high"):
        fluid.create_random_int_lodtensor([[2]], [4], fluid.CPUPlace(), 3, 1)
    arr = fluid.LoDTensorArray()
    arr.append(t)
    assert len(arr) == 1 and arr[0] is t
    with pytest.raises(TypeError, match="holds LoDTensors"):
        arr.append(3)


def test_bilinear_initializer_gives_paddle_185s_kernel():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 2, 3, 3], dtype="float32")
        y = fluid.layers.conv2d_transpose(x, num_filters=2, filter_size=4, padding=1, stride=2, groups=2,
                                          bias_attr=False,
                                          param_attr=fluid.ParamAttr(name="wb", initializer=fluid.initializer.Bilinear()))
        fluid.layers.create_parameter([1, 1, 3, 3], "float32", name="w3",
                                      default_initializer=fluid.initializer.Bilinear())
        with pytest.raises(ValueError, match="4-D"):
            fluid.layers.create_parameter([2, 3], "float32", default_initializer=fluid.initializer.Bilinear())
        with pytest.raises(ValueError, match="square kernel"):
            fluid.layers.create_parameter([1, 1, 3, 4], "float32", default_initializer=fluid.initializer.Bilinear())
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(scope):
        exe.run(startup)
        wb = np.array(scope.find_var("wb").get_tensor())
        w3 = np.array(scope.find_var("w3").get_tensor())
        (out,) = exe.run(main, feed={"x": np.arange(18, dtype="float32").reshape(1, 2, 3, 3)}, fetch_list=[y])
    # Paddle 1.8.5's kernels (every [i, j] slice alike) and the first output row of channel 1.
    assert wb.shape == (2, 1, 4, 4) and np.abs(wb - wb[0, 0]).max() == 0
    np.testing.assert_allclose(wb[0, 0], [[0.0625, 0.28125, 0.375, 0.15625], [0.1875, 0.65625, 0.75, 0.21875],
                                          [0.1875, 0.46875, 0.375, 0.09375], [0.0625, 0.09375, 0.0, -0.03125]])
    np.testing.assert_allclose(w3[0, 0], [[0.0625, 0.3125, 0.4375], [0.1875, 0.6875, 0.6875],
                                          [0.1875, 0.4375, 0.3125]])
    np.testing.assert_allclose(out[0, 1, 0], [5.9062, 8.625, 8.5312, 9.5625, 9.4062, 8.25], atol=1e-4)


def test_tdm_child_looks_up_children_and_items():
    tree = np.array([[0, 0, 0, 1, 2], [0, 1, 0, 3, 4], [0, 1, 0, 5, 6], [0, 2, 1, 0, 0], [1, 2, 1, 0, 0],
                     [2, 2, 2, 0, 0], [3, 2, 2, 0, 0]], dtype="int32")  # item, layer, ancestor, 2 children
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 1], dtype="int32", lod_level=1)
        x2 = fluid.data(name="x2", shape=[None, 3], dtype="int32")
        attr = fluid.ParamAttr(name="tree", initializer=fluid.initializer.NumpyArrayInitializer(tree))
        child, leaf = fluid.contrib.layers.tdm_child(x, 7, 2, param_attr=attr)
        c2, l2 = fluid.contrib.tdm_child(x2, 7, 2, param_attr=fluid.ParamAttr(
            name="tree2", initializer=fluid.initializer.NumpyArrayInitializer(tree)))
        with pytest.raises(TypeError, match="dtype must be"):
            fluid.contrib.layers.tdm_child(x, 7, 2, dtype="float32")
    assert child.shape == (-1, 1, 2) and leaf.dtype == "int32" and c2.shape == (-1, 3, 2)
    tree_param = main.global_block().var("tree")
    assert tree_param.shape == (7, 5) and tree_param.stop_gradient
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    feed = {"x": np.array([[0], [1], [2], [3], [6]], "int32"), "x2": np.array([[1, 2, 0], [4, 5, 6]], "int32")}
    cv, lv, c2v, l2v = exe.run(main, feed=feed, fetch_list=[child, leaf, c2, l2])
    # Paddle 1.8.5's outputs.
    assert cv.tolist() == [[[0, 0]], [[3, 4]], [[5, 6]], [[0, 0]], [[0, 0]]]
    assert lv.tolist() == [[[0, 0]], [[0, 1]], [[1, 1]], [[0, 0]], [[0, 0]]]
    assert c2v.tolist() == [[[3, 4], [5, 6], [0, 0]], [[0, 0], [0, 0], [0, 0]]]
    assert l2v.tolist() == [[[0, 1], [1, 1], [0, 0]], [[0, 0], [0, 0], [0, 0]]]
    with pytest.raises(Exception, match="node id 9 is outside"):
        exe.run(main, feed={"x": np.array([[9]], "int32"), "x2": feed["x2"]}, fetch_list=[child])


def test_fluid18_dygraph_classes_import_and_refuse_when_made():
    from psjob.fluid.dygraph import Layer, Linear

    class Net(fluid.dygraph.Layer):  # a script's dygraph class beside its static code
        pass

    assert fluid.dygraph.Layer is Layer
    for make in (Net, lambda: Linear(10, 10)):
        with pytest.raises(DygraphNotSupported, match="static graphs only"):
            make()
    with pytest.raises(AttributeError, match="no attribute 'NotADygraphName'"):
        fluid.dygraph.NotADygraphName  # noqa: B018


def test_name_scope_paths_and_repeated_prefixes():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        with fluid.name_scope("f18enc"):
            a = fluid.layers.relu(x)
            with fluid.name_scope("inner"):
                b = fluid.layers.sigmoid(a)
            with fluid.name_scope("inner"):
                c = fluid.layers.tanh(b)
        with fluid.name_scope("f18enc"):
            fluid.layers.exp(c)
        with pytest.raises(ValueError, match="non-empty prefix"), fluid.name_scope(""):
            pass
    scopes = [(op.type, op.desc.attr("op_namescope")) for op in main.global_block().ops]
    # Paddle 1.8.5 (its scopes named enc): /enc/, /enc/inner/, /enc/inner_1/, /enc_1/; the tree is
    # process-wide, so the prefix here is one no other test uses
    assert scopes == [("relu", "/f18enc/"), ("sigmoid", "/f18enc/inner/"), ("tanh", "/f18enc/inner_1/"), ("exp", "/f18enc_1/")]


def test_nets_scaled_dot_product_attention_one_and_two_heads():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        q = fluid.data(name="q", shape=[2, 3, 4], dtype="float32")
        k = fluid.data(name="k", shape=[2, 5, 4], dtype="float32")
        v = fluid.data(name="v", shape=[2, 5, 6], dtype="float32")
        c1 = fluid.nets.scaled_dot_product_attention(q, k, v)
        c2 = fluid.nets.scaled_dot_product_attention(q, k, v, num_heads=2)
        with pytest.raises(ValueError, match="multiples of num_heads"):
            fluid.nets.scaled_dot_product_attention(q, k, v, num_heads=3)
    params = sorted(p.name for p in main.global_block().all_parameters())
    assert params == ["fc_0.b_0", "fc_0.w_0", "fc_1.b_0", "fc_1.w_0", "fc_2.b_0", "fc_2.w_0"]
    assert c1.shape == (2, 3, 6) and c2.shape == (2, 3, 6)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(scope):
        exe.run(startup)
        for name in params:
            shape = np.array(scope.find_var(name).get_tensor()).shape
            value = (np.arange(np.prod(shape)).reshape(shape) % 5 / 10 - 0.2).astype("float32")
            scope.find_var(name).get_tensor().set(value, fluid.CPUPlace())
        feed = {"q": (np.arange(24).reshape(2, 3, 4) % 7 / 5 - 0.5).astype("float32"),
                "k": (np.arange(40).reshape(2, 5, 4) % 6 / 4 - 0.6).astype("float32"),
                "v": (np.arange(60).reshape(2, 5, 6) % 9 / 3 - 1).astype("float32")}
        a, b = exe.run(main, feed=feed, fetch_list=[c1, c2])
    # Paddle 1.8.5's first six outputs of each.
    np.testing.assert_allclose(a.ravel()[:6], [-0.15852, 0.17481, 0.50814, -0.12548, 0.20786, 0.54119], atol=1e-5)
    np.testing.assert_allclose(b.ravel()[:6], [-0.32106, -0.14633, 0.19506, 0.10008, 0.17266, -0.32045], atol=1e-5)
