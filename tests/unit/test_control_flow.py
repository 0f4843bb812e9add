"""Static-graph control flow: paddle.static.nn.cond, while_loop, fluid.layers.While, tensor
arrays, their gradients, and programs holding them through clone, prune and
save/load_inference_model.

The expected numbers were produced by running the same programs on real Paddle 3.0.0 with
FLAGS_enable_pir_api=0 (its legacy static graph, which builds the same conditional_block /
select_input / while ops with sub-blocks), CPU, fetching the listed variables. Where Paddle's
own gradient is wrong (a cond inside a while_loop) the test checks finite differences
instead, and says so.
"""
import numpy as np
import pytest

import psjob as paddle
import psjob.fluid as fluid
from psjob.fluid.framework import GraphError

paddle.enable_static()
C = paddle.nn.initializer.Constant


def _run(build, feeds, scope=None):
    main, start = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, start), fluid.unique_name.guard():
        fetch = build()
    scope = scope or fluid.Scope()
    exe = paddle.static.Executor()
    exe.run(start, scope=scope)
    return main, [exe.run(main, feed=f, fetch_list=fetch, scope=scope) for f in feeds]


def _close(got, want):
    np.testing.assert_allclose(np.asarray(got, dtype="float64").reshape(-1),
                               np.asarray(want, dtype="float64").reshape(-1), rtol=1e-5, atol=1e-6)


# -- cond -------------------------------------------------------------------------------------

def _cond_fc():
    x = paddle.static.data("x", [None, 3], "float32")
    y = paddle.static.nn.fc(x, 2, weight_attr=paddle.ParamAttr(name="w", initializer=C(0.3)),
                            bias_attr=paddle.ParamAttr(name="b", initializer=C(0.1)))
    pred = paddle.mean(y) > 0
    a, b = paddle.static.nn.cond(pred, lambda: (y * 2, paddle.full([1], 1.0)),
                                 lambda: (y * 3 + 1, paddle.full([1], 2.0)))
    loss = paddle.mean(a)
    paddle.optimizer.SGD(0.1).minimize(loss)
    return [loss, a, b, "w", "b"]


X_POS = np.array([[1, 2, 3], [0.5, -1, 2]], "float32")
X_NEG = -X_POS


def test_cond_trains_through_the_taken_branch_as_paddle():
    main, runs = _run(_cond_fc, [{"x": X_POS}, {"x": X_NEG}, {"x": X_POS}])
    # Paddle 3.0.0: loss, a, b, then w and b after each SGD step.
    want = [
        (2.450000286102295, [[3.8, 3.8], [1.1, 1.1]], [1.0], [[0.225] * 2, [0.25] * 2, [0.05] * 2], [0.0, 0.0]),
        (-0.25625014305114746, [[-1.625, -1.625], [1.1125, 1.1125]], [2.0],
         [[0.3375] * 2, [0.325] * 2, [0.425] * 2], [-0.15, -0.15]),
        (2.65625, [[4.225, 4.225], [1.0875, 1.0875]], [1.0], [[0.2625] * 2, [0.275] * 2, [0.175] * 2], [-0.25, -0.25]),
    ]
    for got, exp in zip(runs, want):
        for g, e in zip(got, exp):
            _close(g, e)
    types = [op.type for op in main.global_block().ops]
    assert types.count("conditional_block") == 2 and types.count("select_input") == 2
    assert types.count("conditional_block_grad") == 2 and "select_output" in types
    assert main.num_blocks == 5  # two branches, two gradient blocks


def test_cond_gradient_matches_finite_differences():
    def build():
        x = paddle.static.data("x", [3], "float32")
        p = paddle.static.create_parameter([3], "float32", name="p", default_initializer=C(0.7))
        pred = paddle.sum(x) > 0
        out = paddle.static.nn.cond(pred, lambda: paddle.tanh(x * p), lambda: paddle.exp(x * p) * p)
        loss = paddle.sum(out * out)
        paddle.static.append_backward(loss)
        return [loss, "p@GRAD"]
    for xv in (np.array([0.5, -0.2, 1.0], "float32"), np.array([-0.5, -0.2, 0.3], "float32")):
        main, start = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(main, start):
            fetch = build()
        scope, exe = fluid.Scope(), paddle.static.Executor()
        exe.run(start, scope=scope)
        _, grad = exe.run(main, feed={"x": xv}, fetch_list=fetch, scope=scope)
        p0 = scope.vars["p"].copy()
        numeric = []
        for j in range(3):
            vals = []
            for d in (1e-3, -1e-3):
                p = p0.astype("float64").copy()
                p[j] += d
                scope.vars["p"] = p.astype("float32")
                vals.append(float(exe.run(main, feed={"x": xv}, fetch_list=[fetch[0]], scope=scope)[0][0]))
            numeric.append((vals[0] - vals[1]) / 2e-3)
        scope.vars["p"] = p0
        np.testing.assert_allclose(grad, numeric, rtol=2e-3, atol=2e-3)


def test_cond_nested_outputs_none_branches_and_0d_pred():
    def build():
        x = paddle.static.data("x", [2], "float32")
        pred = paddle.sum(x) > 0  # psjob's full reduction is [1]; a 0-D pred is checked below
        out = paddle.static.nn.cond(pred, lambda: {"a": x + 1, "b": [x * 2, x - 1]},
                                    lambda: {"a": x - 1, "b": [x * 3, x + 1]})
        none = paddle.static.nn.cond(pred, lambda: None, lambda: None)
        assert none is None
        return [out["a"], out["b"][0], out["b"][1]]
    _, runs = _run(build, [{"x": np.array([1, 2], "float32")}, {"x": np.array([-1, -2], "float32")}])
    _close(runs[0][0], [2, 3])
    _close(runs[0][1], [2, 4])
    _close(runs[1][1], [-3, -6])
    _close(runs[1][2], [0, -1])

    # branches of two dtypes (PaddleRec's static_ps model_util: an int32 sum or an int64 zero)
    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()):
        m = paddle.static.data("m", [4], "int32")
        mixed = paddle.static.nn.cond(paddle.sum(m) > 1, lambda: paddle.sum(m), lambda: paddle.zeros([1], "int64"))
    exe = paddle.static.Executor()
    assert exe.run(main, feed={"m": np.array([1, 0, 1, 1], "int32")}, fetch_list=[mixed],
                   scope=fluid.Scope())[0].tolist() == [3]
    assert exe.run(main, feed={"m": np.array([1, 0, 0, 0], "int32")}, fetch_list=[mixed],
                   scope=fluid.Scope())[0].tolist() == [0]

    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()):
        pred0 = paddle.static.data("p", [], "bool")
        got = paddle.static.nn.cond(pred0, lambda: paddle.full([1], 1.0), lambda: paddle.full([1], 2.0))
    exe = paddle.static.Executor()
    assert exe.run(main, feed={"p": np.array(True)}, fetch_list=[got], scope=fluid.Scope())[0][0] == 1.0
    assert exe.run(main, feed={"p": np.array(False)}, fetch_list=[got], scope=fluid.Scope())[0][0] == 2.0


def test_cond_errors_as_paddle():
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()):
        x = paddle.static.data("x", [2], "float32")
        with pytest.raises(TypeError, match="bool"):
            paddle.static.nn.cond(x, lambda: x, lambda: x)
        with pytest.raises(TypeError, match=r"one value .*\[2\]"):
            paddle.static.nn.cond(x > 0, lambda: x, lambda: x)
        pred = paddle.sum(x) > 0
        with pytest.raises(ValueError, match="true_fn returns None while false_fn returns non-None"):
            paddle.static.nn.cond(pred, lambda: None, lambda: x)
        with pytest.raises(ValueError, match="Incompatible return values"):
            paddle.static.nn.cond(pred, lambda: (x, x), lambda: x)
        with pytest.raises(TypeError, match="true_fn in cond must be callable"):
            paddle.static.nn.cond(pred, 3, lambda: x)


def test_variables_of_the_taken_branch_are_fetchable():
    main, start = paddle.static.Program(), paddle.static.Program()
    inner = {}
    with paddle.static.program_guard(main, start):
        x = paddle.static.data("x", [2], "float32")

        def true_fn():
            inner["t"] = x * 5
            return inner["t"] + 1
        out = fluid.layers.cond(paddle.sum(x) > 0, true_fn, lambda: x)
    exe = paddle.static.Executor()
    got = exe.run(main, feed={"x": np.array([1, 2], "float32")}, fetch_list=[out, inner["t"]], scope=fluid.Scope())
    _close(got[1], [5, 10])
    with pytest.raises(GraphError, match="was not computed"):
        exe.run(main, feed={"x": np.array([-1, -2], "float32")}, fetch_list=[inner["t"]], scope=fluid.Scope())
    scope = fluid.Scope()  # a branch taken in an earlier run, not in this one
    exe.run(main, feed={"x": np.array([1, 2], "float32")}, fetch_list=[inner["t"]], scope=scope)
    with pytest.raises(GraphError, match="was not computed"):
        exe.run(main, feed={"x": np.array([-1, -2], "float32")}, fetch_list=[inner["t"]], scope=scope)


# -- while ------------------------------------------------------------------------------------

def _while_tanh():
    x = paddle.static.data("x", [2, 3], "float32")
    x.stop_gradient = False
    w = paddle.static.create_parameter([3], "float32", name="w", default_initializer=C(0.5))
    i, n = paddle.full([1], 0, "int64"), paddle.full([1], 3, "int64")
    i2, h2 = paddle.static.nn.while_loop(lambda i, h: i < n, lambda i, h: [i + 1, paddle.tanh(h * w + 0.1)],
                                         [i, x * 1.0])
    loss = paddle.mean(h2)
    paddle.static.append_backward(loss)
    return [loss, h2, i2, "w@GRAD"]


def test_while_loop_forward_and_gradient_as_paddle():
    xv = np.arange(6).reshape(2, 3).astype("float32") / 6
    main, [got] = _run(_while_tanh, [{"x": xv}])
    _close(got[0], 0.21677683293819427)
    _close(got[1], [[0.17261558771133423, 0.19178354740142822, 0.20996776223182678],
                    [0.22694750130176544, 0.24257469177246094, 0.25677189230918884]])
    assert got[2].tolist() == [3]
    _close(got[3], [0.11442168802022934, 0.14590811729431152, 0.17364777624607086])
    assert [op.type for op in main.global_block().ops].count("while_grad") == 1


def _power_loop():
    x = paddle.static.data("x", [3], "float32")
    x.stop_gradient = False
    k = paddle.static.data("k", [1], "int64")
    p = paddle.static.create_parameter([3], "float32", name="p", default_initializer=C(1.5))
    _, h = paddle.static.nn.while_loop(lambda i, h: i < k, lambda i, h: [i + 1, h * p],
                                       [paddle.full([1], 0, "int64"), x + 0.0])
    loss = paddle.sum(h * h)
    paddle.optimizer.SGD(0.01).minimize(loss)
    return [loss, h, "p@GRAD", "p"]


def test_while_multiplying_by_a_parameter_k_times_trains_as_paddle():
    xv = np.array([1.0, -2.0, 0.5], "float32")
    _, runs = _run(_power_loop, [{"x": xv, "k": np.array([3], "int64")}])
    # Paddle 3.0.0 (append_backward): loss 59.80078125, h [3.375, -6.75, 1.6875], p@GRAD 6 x^2 p^5
    _close(runs[0][0], 59.80078125)
    _close(runs[0][1], [3.375, -6.75, 1.6875])
    _close(runs[0][2], [45.5625, 182.25, 11.390625])
    _close(runs[0][3], 1.5 - 0.01 * np.array([45.5625, 182.25, 11.390625]))
    _, runs = _run(_power_loop, [{"x": xv, "k": np.array([1], "int64")}, {"x": xv, "k": np.array([0], "int64")}])
    _close(runs[0][2], [3.0, 12.0, 0.75])  # Paddle 3.0.0, k = 1
    # No iteration: h is x, p gets a zero gradient (Paddle 3.0.0 stops with "p@GRAD not in VariableScope").
    _close(runs[1][0], float((xv * xv).sum()))
    _close(runs[1][2], [0, 0, 0])


def test_cond_inside_while_gradient_matches_finite_differences():
    # Paddle 3.0.0's legacy graph returns p@GRAD [4.16, 0.32] here, the last iteration's
    # contribution only; the derivative of h4 = x p^2 + p^2 + p is (2 x p + 2 p + 1) * 2 h4.
    def build():
        x = paddle.static.data("x", [2], "float32")
        p = paddle.static.create_parameter([2], "float32", name="p", default_initializer=C(0.8))
        two, zero = paddle.full([1], 2, "int64"), paddle.full([1], 0, "int64")

        def body(i, h):
            even = paddle.equal(i % two, zero)
            return [i + 1, paddle.static.nn.cond(even, lambda: h * p, lambda: h + p)]
        _, h = paddle.static.nn.while_loop(lambda i, h: i < paddle.full([1], 4, "int64"), body,
                                           [paddle.full([1], 0, "int64"), x + 0.0])
        loss = paddle.sum(h * h)
        paddle.static.append_backward(loss)
        return [loss, h, "p@GRAD"]
    xv = np.array([1.0, -2.0], "float32")
    _, [got] = _run(build, [{"x": xv}])
    _close(got[1], [2.08, 0.16])  # Paddle 3.0.0's forward
    p = 0.8
    h4 = xv * p * p + p * p + p
    _close(got[2], 2 * h4 * (2 * xv * p + 2 * p + 1))


def test_fluid_while_with_a_tensor_array_as_paddle():
    def build():
        x = fluid.data("x", [2], "float32")
        i, n = fluid.layers.fill_constant([1], "int64", 0), fluid.layers.fill_constant([1], "int64", 3)
        arr = fluid.layers.create_array("float32")
        cond = fluid.layers.less_than(i, n)
        loop = fluid.layers.While(cond)
        acc = fluid.layers.fill_constant([2], "float32", 0.0)
        with loop.block():
            y = x * fluid.layers.cast(i + 1, "float32")
            fluid.layers.array_write(y, i, arr)
            fluid.layers.assign(acc + y, acc)
            fluid.layers.increment(i)
            fluid.layers.less_than(i, n, cond=cond)
        length = fluid.layers.array_length(arr)
        last = fluid.layers.array_read(arr, fluid.layers.fill_constant([1], "int64", 2))
        return [acc, length, last, i, arr]
    _, [got] = _run(build, [{"x": np.array([1.0, 2.0], "float32")}])
    # Paddle 3.0.0 (paddle.tensor.array_* and static.nn.control_flow.While): [6, 12], [3], [3, 6], [3]
    _close(got[0], [6, 12])
    assert got[1].tolist() == [3] and got[3].tolist() == [3]
    _close(got[2], [3, 6])
    assert [a.tolist() for a in got[4]] == [[1, 2], [2, 4], [3, 6]]


def test_while_loop_errors_as_paddle():
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()):
        i = paddle.full([1], 0, "int64")
        x = paddle.full([2], 1.0)
        with pytest.raises(ValueError, match="same arity"):
            paddle.static.nn.while_loop(lambda i, x: i < 3, lambda i, x: [i + 1], [i, x])
        with pytest.raises(TypeError, match="must be bool"):
            paddle.static.nn.while_loop(lambda i, x: x, lambda i, x: [i, x], [i, x])
        with pytest.raises(TypeError, match="should be callable"):
            paddle.static.nn.while_loop(None, lambda i: i, [i])
        with pytest.raises(ValueError, match="should not be empty"):
            paddle.static.nn.while_loop(lambda: i < 3, lambda: [], [])
        with pytest.raises(TypeError, match=r"condition expected shape as \[1\]"):
            fluid.layers.While(x > 0)


# -- programs holding control flow ----------------------------------------------------------

def test_clone_for_test_and_inference_model_keep_the_sub_blocks(tmp_path):
    main, start = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, start):
        x = paddle.static.data("x", [None, 3], "float32")
        y = paddle.static.nn.fc(x, 2, weight_attr=paddle.ParamAttr(initializer=C(0.3)))
        z = paddle.static.nn.cond(paddle.mean(y) > 0, lambda: y * 2, lambda: y * 3 + 1)
        _, h = paddle.static.nn.while_loop(lambda i, h: i < 2, lambda i, h: [i + 1, h * 0.5],
                                           [paddle.full([1], 0, "int64"), z])
        loss = paddle.mean(h)
        test_prog = main.clone(for_test=True)
        paddle.optimizer.SGD(0.1).minimize(loss)
    scope, exe = fluid.Scope(), paddle.static.Executor()
    exe.run(start, scope=scope)
    want = [exe.run(test_prog, feed={"x": v}, fetch_list=[h], scope=scope)[0] for v in (X_POS, X_NEG)]
    _close(want[0], np.array([[1.8, 1.8], [0.45, 0.45]]) * 2 * 0.25)
    assert test_prog.num_blocks == 4  # the global block, two branches, the loop body
    with fluid.scope_guard(scope):
        paddle.static.save_inference_model(str(tmp_path / "m"), [x], [h], exe, program=main)
    infer_scope = fluid.Scope()
    with fluid.scope_guard(infer_scope):
        prog, feeds, fetches = paddle.static.load_inference_model(str(tmp_path / "m"), exe)
    assert prog.num_blocks >= 4 and {op.type for op in prog.global_block().ops} >= {"conditional_block", "while"}
    for v, w in zip((X_POS, X_NEG), want):
        _close(exe.run(prog, feed={feeds[0]: v}, fetch_list=fetches, scope=infer_scope)[0], w)


# -- case, switch_case, Switch --------------------------------------------------------------

def test_case_switch_case_and_switch_as_paddle():
    def build():
        x = paddle.static.data("x", [1], "float32")
        x.stop_gradient = False
        idx = paddle.static.data("idx", [1], "int32")
        p = paddle.static.create_parameter([1], "float32", name="p", default_initializer=C(2.0))
        a = paddle.static.nn.case([(x < 0, lambda: x * p), (x < 1, lambda: x + p)], default=lambda: x * x * p)
        b = paddle.static.nn.switch_case(idx, {1: lambda: x * 10, 3: lambda: x * 30}, default=lambda: x - 1)
        c = paddle.static.nn.switch_case(idx, [lambda: x + 100, lambda: x + 200])
        out = paddle.full([1], 0.0)
        with fluid.layers.Switch() as switch:
            with switch.case(x < 0):
                paddle.assign(x * 3, out)
            with switch.case(x < 1):
                paddle.assign(x * 5, out)
            with switch.default():
                paddle.assign(x * 7, out)
        paddle.static.append_backward(paddle.sum(a * b))
        return [a, b, c, out, "p@GRAD", "x@GRAD"]
    feeds = [(-0.5, 1), (0.5, 3), (2.0, 0), (2.0, 7)]
    _, runs = _run(build, [{"x": np.array([x], "float32"), "idx": np.array([i], "int32")} for x, i in feeds])
    # Paddle 3.0.0 (Switch from paddle.static.nn.control_flow): a, b, c, out, p@GRAD, x@GRAD
    want = [[-1.0, -5.0, 199.5, -1.5, 2.5, -20.0], [2.5, 15.0, 200.5, 2.5, 15.0, 90.0],
            [8.0, 1.0, 102.0, 14.0, 4.0, 16.0], [8.0, 1.0, 202.0, 14.0, 4.0, 16.0]]
    for got, exp in zip(runs, want):
        _close([g.reshape(-1)[0] for g in got], exp)


def test_case_and_switch_errors():
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()):
        x = paddle.static.data("x", [1], "float32")
        i = paddle.static.data("i", [1], "int64")
        with pytest.raises(TypeError, match="must be tuple"):
            paddle.static.nn.case([[x < 0, lambda: x]])
        with pytest.raises(TypeError, match="must be callable"):
            paddle.static.nn.case([(x < 0, lambda: x)], default=1)
        with pytest.raises(ValueError, match="must be unique"):
            paddle.static.nn.switch_case(i, [(1, lambda: x), (1, lambda: x)])
        with pytest.raises(TypeError, match="uint8, int32 or int64"):
            paddle.static.nn.switch_case(x, [lambda: x])
        switch = fluid.layers.Switch()
        with pytest.raises(ValueError, match="inside with"):
            switch.case(x < 0)
        with switch, pytest.raises(ValueError, match="at least one condition"):
            switch.default()


# -- StaticRNN --------------------------------------------------------------------------------

def test_static_rnn_trains_as_paddle_185():
    # Paddle 3.0.0 has no StaticRNN; these numbers are Paddle 1.8.5's (fluid.layers.StaticRNN,
    # its recurrent op, with x and h0 stop_gradient=False as its recurrent_grad requires).
    def build():
        x = fluid.data("x", [4, 2, 3], "float32")
        h0 = fluid.data("h0", [2, 5], "float32")
        rnn = fluid.layers.StaticRNN()
        with rnn.step():
            word = rnn.step_input(x)
            prev = rnn.memory(init=h0)
            acc = rnn.memory(shape=[-1, 3], batch_ref=word)
            hidden = fluid.layers.fc(input=[word, prev], size=5, act="tanh",
                                     param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.1)),
                                     bias_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.05)))
            new_acc = acc + word
            rnn.update_memory(prev, hidden)
            rnn.update_memory(acc, new_acc)
            rnn.step_output(hidden)
            rnn.step_output(new_acc)
        out, accs = rnn()
        loss = fluid.layers.mean(out) + fluid.layers.mean(accs)
        fluid.optimizer.SGD(0.5).minimize(loss)
        return [loss, out, accs, "fc_0.w_0@GRAD", "fc_0.w_1@GRAD", "fc_0.b_0@GRAD", "fc_0.w_0", "fc_0.b_0"]
    xv = (np.arange(24).reshape(4, 2, 3).astype("float32") - 12) / 10
    hv = (np.arange(10).reshape(2, 5).astype("float32") - 5) / 10
    _, (first, second) = _run(build, [{"x": xv, "h0": hv}] * 2)
    _close(first[0], -0.893545389175415)
    _close(second[0], -1.1341562271118164)
    _close(first[1][:, :, 0], [[-0.4053213, -0.0897578], [-0.2937456, -0.0548239], [-0.0667733, 0.1416295],
                               [0.2228123, 0.3976166]])
    _close(first[2], np.cumsum(xv, axis=0))
    _close(first[3][:, 0], [-0.0789386, -0.0507945, -0.0226504])
    _close(first[4][:, 0], [-0.0498744, -0.041553, -0.0332316, -0.0249102, -0.0165887])
    _close(first[5], [0.2814413] * 5)
    _close(second[6][:, 0], [0.17016209661960602, 0.1423002928495407, 0.11443860083818436])
    _close(second[7], [-0.22861750423908234, -0.22692500054836273, -0.22523239254951477, -0.223539799451828,
                       -0.2218472957611084])


def test_static_rnn_misuse_is_named():
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()):
        x = fluid.data("x", [3, 2, 4], "float32")
        rnn = fluid.layers.StaticRNN()
        with pytest.raises(ValueError, match="inside `with rnn.step"):
            rnn.step_input(x)
        with pytest.raises(ValueError, match="never updated"), rnn.step():
            rnn.step_input(x)
            rnn.memory(shape=[-1, 4], batch_ref=x)
        with pytest.raises(ValueError, match="only be retrieved after"):
            fluid.layers.StaticRNN()()


# -- gradients through tensor arrays ------------------------------------------------------------

def test_gradient_through_a_tensor_array_in_a_while_matches_finite_differences():
    # Each step reads the array's slot i and writes slot i + 1 (the Fluid pattern). The same
    # program on Paddle 3.0.0's legacy graph gives w@GRAD [2.1158, -2.8018] and x@GRAD
    # [0.6383, 0.6739]; the derivatives (below, in float64) are these.
    def build():
        x = paddle.static.data("x", [2], "float32")
        x.stop_gradient = False
        w = paddle.static.create_parameter([2], "float32", name="w", default_initializer=C(0.7))
        arr = paddle.tensor.create_array("float32")
        i, n = paddle.full([1], 0, "int64"), paddle.full([1], 3, "int64")
        paddle.tensor.array_write(x, paddle.full([1], 0, "int64"), arr)
        cond = paddle.less_than(i, n)
        loop = paddle.static.nn.control_flow.While(cond)
        with loop.block():
            h = paddle.tanh(paddle.tensor.array_read(arr, i) * w + 0.1)
            nxt = i + 1
            paddle.tensor.array_write(h, nxt, arr)
            paddle.assign(nxt, i)
            paddle.assign(paddle.less_than(nxt, n), cond)
        outs = [paddle.tensor.array_read(arr, paddle.full([1], k, "int64")) for k in (1, 2, 3)]
        loss = paddle.sum(outs[0]) + paddle.sum(outs[1] * outs[1]) + paddle.sum(outs[2] * 3.0)
        paddle.static.append_backward(loss)
        return [loss, "w@GRAD", "x@GRAD"]
    xv = np.array([0.5, -1.0])
    _, [got] = _run(build, [{"x": xv.astype("float32")}])

    def loss(x, w):
        h1 = np.tanh(x * w + 0.1)
        h2 = np.tanh(h1 * w + 0.1)
        return h1.sum() + (h2 * h2).sum() + 3 * np.tanh(h2 * w + 0.1).sum()
    w, eye, e = np.full(2, 0.7), np.eye(2), 1e-6
    _close(got[0], loss(xv, w))
    _close(got[1], [(loss(xv, w + e * eye[j]) - loss(xv, w - e * eye[j])) / (2 * e) for j in range(2)])
    _close(got[2], [(loss(xv + e * eye[j], w) - loss(xv - e * eye[j], w)) / (2 * e) for j in range(2)])


# -- IfElse -----------------------------------------------------------------------------------

def test_ifelse_routes_rows_and_trains_as_paddle_185():
    # Paddle 3.0.0 has no IfElse; these are Paddle 1.8.5's numbers (fluid.layers.IfElse).
    def build():
        x = fluid.data("x", [None, 3], "float32")
        y = fluid.layers.fc(x, 2, param_attr=fluid.ParamAttr(name="w", initializer=fluid.initializer.Constant(0.2)),
                            bias_attr=fluid.ParamAttr(name="b", initializer=fluid.initializer.Constant(0.1)))
        limit = fluid.layers.fill_constant([1], "float32", 0.5)
        ie = fluid.layers.IfElse(fluid.layers.less_than(fluid.layers.reduce_sum(x, dim=1, keep_dim=True), limit))
        with ie.true_block():
            ie.output(fluid.layers.scale(ie.input(y), 2.0))
        with ie.false_block():
            f = ie.input(y)
            ie.output(f * f)
        out = ie()[0]
        loss = fluid.layers.mean(out)
        fluid.optimizer.SGD(0.1).minimize(loss)
        return [loss, out, "w@GRAD", "b@GRAD", "w", "b"]
    xv = np.array([[1, 2, 3], [-1, 0, 0.5], [0.2, 0.1, 0.1], [2, -1, 1]], "float32")
    _, (first, second) = _run(build, [{"x": xv}] * 2)
    _close(first[0], 0.575)
    _close(first[1][:, 0], [1.69, 0.0, 0.36, 0.25])
    _close(first[2][:, 0], [0.375, 0.55, 1.25])
    _close(first[3], [0.95, 0.95])
    _close(second[0], 0.10310160368680954)
    _close(second[1][:, 0], [0.46580618619918823, -0.24, 0.11900000274181366, 0.06759999692440033])
    _close(second[4][:, 0], [0.1524374932050705, 0.11487500369548798, 0.0023125000298023224])
    _close(second[5], [-0.06856250017881393] * 2)


def test_ifelse_misuse_is_named():
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()):
        x = fluid.data("x", [None, 1], "float32")
        ie = fluid.layers.IfElse(x > 0)
        with pytest.raises(ValueError, match="input must in true/false blocks"):
            ie.input(x)
        with pytest.raises(ValueError, match="before __call__"):
            ie()
        with pytest.raises(TypeError, match="bool"):
            fluid.layers.IfElse(x)


# -- more shapes of programs, checked by finite differences ----------------------------------

def _nested_while():
    x = paddle.static.data("x", [3], "float32")
    w = paddle.static.create_parameter([3], "float32", name="w", default_initializer=C(0.6))

    def outer_body(i, h):
        _, h2 = paddle.static.nn.while_loop(lambda j, h: j < 3, lambda j, h: [j + 1, paddle.tanh(h * w + 0.1)],
                                            [paddle.full([1], 0, "int64"), h])
        return [i + 1, h2 * 1.5]
    _, h = paddle.static.nn.while_loop(lambda i, h: i < 2, outer_body, [paddle.full([1], 0, "int64"), x + 0.0])
    return paddle.sum(h * h), {"x": np.array([0.3, -0.4, 0.9], "float32")}


def _layer_in_a_loop_body():
    x = paddle.static.data("x", [2, 3], "float32")
    attr = paddle.ParamAttr(name="w", initializer=C(0.2))
    _, h = paddle.static.nn.while_loop(
        lambda i, h: i < 3, lambda i, h: [i + 1, paddle.tanh(paddle.static.nn.fc(h, 3, weight_attr=attr, bias_attr=False))],
        [paddle.full([1], 0, "int64"), x + 0.0])
    return paddle.mean(h * h), {"x": np.array([[0.3, -0.4, 0.9], [1, 2, -1]], "float32")}


def _branch_returning_a_parameter(sign):
    def build():
        x = paddle.static.data("x", [3], "float32")
        w = paddle.static.create_parameter([3], "float32", name="w", default_initializer=C(0.6))
        out = paddle.static.nn.cond(paddle.sum(x) > 0, lambda: w, lambda: x * w * w)
        return paddle.sum(out * x), {"x": sign * np.array([0.3, -0.4, 0.9], "float32")}
    return build


@pytest.mark.parametrize("build", [_nested_while, _layer_in_a_loop_body, _branch_returning_a_parameter(1),
                                   _branch_returning_a_parameter(-1)],
                         ids=["nested-while", "layer-in-a-loop-body", "branch-returns-w", "other-branch"])
def test_gradient_of_w_matches_finite_differences(build):
    main, start = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, start), fluid.unique_name.guard():
        loss, feed = build()
        paddle.static.append_backward(loss)
    scope, exe = fluid.Scope(), paddle.static.Executor()
    exe.run(start, scope=scope)
    (grad,) = exe.run(main, feed=feed, fetch_list=["w@GRAD"], scope=scope)
    w0 = scope.vars["w"].copy()
    numeric = np.zeros(w0.size)
    for j in range(w0.size):
        vals = []
        for d in (1e-3, -1e-3):
            w = w0.astype("float64").reshape(-1).copy()
            w[j] += d
            scope.vars["w"] = w.reshape(w0.shape).astype("float32")
            vals.append(float(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0].reshape(-1)[0]))
        numeric[j] = (vals[0] - vals[1]) / 2e-3
    np.testing.assert_allclose(np.asarray(grad).reshape(-1), numeric, rtol=1e-2, atol=1e-3)


# -- DynamicRNN -------------------------------------------------------------------------------

def test_dynamic_rnn_trains_as_paddle_185():
    # Paddle 3.0.0 has no DynamicRNN; these are Paddle 1.8.5's numbers: three sequences of
    # lengths 2, 5, 1, a memory from h0 (need_reorder), one from a value, a static input.
    def build():
        x = fluid.data("x", [None, 3], "float32", lod_level=1)
        h0 = fluid.data("h0", [None, 4], "float32")
        s = fluid.data("s", [None, 2], "float32")
        drnn = fluid.layers.DynamicRNN()
        with drnn.block():
            word = drnn.step_input(x)
            stat = drnn.static_input(s)
            prev = drnn.memory(init=h0, need_reorder=True)
            acc = drnn.memory(shape=[3], value=0.5)
            hidden = fluid.layers.fc(input=[word, prev, stat], size=4, act="tanh",
                                     param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.1)),
                                     bias_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.05)))
            new_acc = acc + word * 2.0
            drnn.update_memory(prev, hidden)
            drnn.update_memory(acc, new_acc)
            drnn.output(hidden, new_acc)
        out, accs = drnn()
        loss = fluid.layers.mean(fluid.layers.sequence_last_step(out)) + fluid.layers.mean(accs)
        fluid.optimizer.SGD(0.5).minimize(loss)
        return [loss, out, accs, "fc_0.w_0@GRAD", "fc_0.w_1@GRAD", "fc_0.w_2@GRAD", "fc_0.b_0@GRAD", "fc_0.w_1",
                "fc_0.b_0"]
    xv = (np.arange(24).reshape(8, 3).astype("float32") - 12) / 10
    feed = {"x": fluid.create_lod_tensor(xv, [[2, 5, 1]], fluid.CPUPlace()),
            "h0": (np.arange(12).reshape(3, 4).astype("float32") - 6) / 10,
            "s": np.array([[1, 0], [0, 1], [1, 1]], "float32")}
    _, (first, second) = _run(build, [feed] * 2)
    _close(first[0], -0.09744559973478317)
    _close(second[0], -0.36156290769577026)
    _close(first[1][:, 0], [-0.34521400928497314, -0.22421100735664368, -0.01999730058014393, 0.08181770145893097,
                            0.20957529544830322, 0.3397679030895233, 0.45889219641685486, 0.5979819893836975])
    # accs: per sequence, 0.5 + 2 * the running sum of its rows
    _close(first[2], np.concatenate([0.5 + 2 * np.cumsum(xv[a:b], axis=0) for a, b in ((0, 2), (2, 7), (7, 8))]))
    _close(first[3][:, 0], [-0.011966099962592125, 0.014381700195372105, 0.040729399770498276])
    _close(first[4][:, 0], [-0.005741199944168329, 0.002542200032621622, 0.010825599543750286, 0.019108900800347328])
    _close(first[5][:, 0], [0.16056379675865173, 0.15644830465316772])
    _close(first[6], [0.26347729563713074] * 4)
    _close(second[7][:, 0], [0.12203709781169891, 0.11312779784202576, 0.1042184978723526, 0.09530919790267944])
    _close(second[8], [-0.22935859858989716, -0.22787480056285858, -0.22639110684394836, -0.22490739822387695])


def test_dynamic_rnn_misuse_is_named():
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()):
        x = fluid.data("x", [None, 3], "float32", lod_level=1)
        dense = fluid.data("d", [None, 3], "float32")
        drnn = fluid.layers.DynamicRNN()
        with pytest.raises(ValueError, match="inside rnn block"):
            drnn.step_input(x)
        with pytest.raises(ValueError, match="lod_level"), drnn.block():
            drnn.step_input(dense)
        with pytest.raises(ValueError, match="outside the rnn block"):
            fluid.layers.DynamicRNN()()


def test_kernel_timing_counts_a_loop_body_once():
    """Executor.collect_timing: the body's ops are timed by themselves and the while op keeps
    only the rest, so the per-op seconds add up to no more than the run."""
    import time
    main, start = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, start):
        x = paddle.static.data("x", [None, 64], "float32")
        _, h = paddle.static.nn.while_loop(lambda i, h: i < 30,
                                           lambda i, h: [i + 1, paddle.tanh(paddle.matmul(h, h) * 0.01 + h)],
                                           [paddle.full([1], 0, "int64"), x])
    exe = paddle.static.Executor()
    exe.run(start, scope=fluid.Scope())
    exe.collect_timing = True
    t0 = time.perf_counter()
    exe.run(main, feed={"x": np.ones((64, 64), "float32")}, fetch_list=[h], scope=fluid.Scope())
    wall = time.perf_counter() - t0
    total = sum(exe.kernel_seconds.values())
    assert 0 < total <= wall  # counted twice, the loop's ops would add up to about twice the run
