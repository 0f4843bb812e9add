"""fluid.layers.py_func / paddle.static.py_func: Python functions as ops, forward and backward.

How the expected values were made: `run` below (a fc, a py_func tanh whose backward reads
its output only, a two-output py_func, three SGD steps) was run, unchanged but for `import
paddle.fluid as fluid`, by Paddle 1.8.5 (CPU); its losses, the weight after each step and the
last tanh output are pasted here, rounded to 6 decimals.
"""
import numpy as np
import pytest

import psjob as paddle
import psjob.fluid as fluid
from psjob.fluid.executor import ExecutionError

RNG = np.random.RandomState(3)
X = RNG.uniform(-1, 1, (4, 3)).astype(np.float32)
W0 = RNG.uniform(-1, 1, (3, 2)).astype(np.float32)
CALLS = {"fwd": 0, "bwd": 0}


def tanh(x):
    CALLS["fwd"] += 1
    return np.tanh(np.array(x))


def tanh_grad(y, dy):  # x is skipped: the gradient needs the output only
    CALLS["bwd"] += 1
    return np.array(dy) * (1 - np.square(np.array(y)))


def scaled_pair(a, b):
    a, b = np.array(a), np.array(b)
    return a * 2.0, a + b


def scaled_pair_grad(a, b, o1, o2, d1, d2):
    return np.array(d1) * 2.0 + np.array(d2), np.array(d2)


def build(fluid):
    x = fluid.data("x", [None, 3], "float32")
    init = fluid.initializer.NumpyArrayInitializer(W0)
    h = fluid.layers.fc(x, 2, param_attr=fluid.ParamAttr(name="w", initializer=init), bias_attr=False)
    block = fluid.default_main_program().current_block()
    t = block.create_var(name="t", dtype="float32", shape=[-1, 2])
    fluid.layers.py_func(tanh, h, t, backward_func=tanh_grad, skip_vars_in_backward_input=h)
    o1 = block.create_var(name="o1", dtype="float32", shape=[-1, 2])
    o2 = block.create_var(name="o2", dtype="float32", shape=[-1, 2])
    fluid.layers.py_func(scaled_pair, [t, h], [o1, o2], backward_func=scaled_pair_grad)
    loss = fluid.layers.mean(fluid.layers.square(o1) + o2 * 0.5)
    fluid.optimizer.SGD(0.5).minimize(loss)
    return loss, t, o1, o2


def run(fluid, steps=3):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        fetch = build(fluid)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    res = []
    with fluid.scope_guard(scope):
        exe.run(startup)
        for _ in range(steps):
            loss, t, o1, o2, w = exe.run(main, feed={"x": X}, fetch_list=list(fetch) + ["w"])
            res.append((float(np.array(loss).reshape(-1)[0]), np.array(w)))
    return res, (t, o1, o2)



# Paddle 1.8.5's values for run(fluid).
PADDLE185_LOSSES = [0.442632, 0.193833, 0.10392]
PADDLE185_W = [
    [[0.437069, -0.361689], [0.414284, 0.098382], [-0.557889, 0.116054]],
    [[0.422173, -0.2782], [0.230735, 0.070361], [-0.45286, 0.128943]],
    [[0.426656, -0.214082], [0.142687, 0.038518], [-0.321004, 0.119294]],
]
PADDLE185_T_LAST = [[0.317016, -0.052847], [-0.166879, 0.150322], [-0.044959, 0.051411], [-0.223966, -0.044326]]


def test_py_func_trains_as_paddle():
    before = dict(CALLS)
    res, (t, _, _) = run(fluid)
    np.testing.assert_allclose([loss for loss, _ in res], PADDLE185_LOSSES, rtol=1e-5)
    for (_, w), want in zip(res, PADDLE185_W):
        np.testing.assert_allclose(w, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(t, PADDLE185_T_LAST, rtol=1e-5, atol=1e-6)
    assert CALLS["fwd"] - before["fwd"] == 3 and CALLS["bwd"] - before["bwd"] == 3


def _program(fn, out_shapes, backward=None, **kw):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 2], "float32", lod_level=kw.pop("lod_level", 0))
        block = main.current_block()
        outs = [block.create_var(name=f"o{i}", dtype="float32", shape=s) for i, s in enumerate(out_shapes)]
        paddle.static.py_func(fn, x, outs, backward_func=backward, **kw)
    return main, startup, outs


def test_without_backward_no_gradient_flows():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3], "float32")
        h = fluid.layers.fc(x, 2, bias_attr=False)
        t = main.current_block().create_var(name="t", dtype="float32", shape=[-1, 2])
        fluid.layers.py_func(lambda a: np.array(a) * 3.0, h, t)
        other = fluid.layers.fc(x, 1, bias_attr=False, param_attr="other")
        params_grads = fluid.backward.append_backward(fluid.layers.mean(t) + fluid.layers.mean(other))
    # Paddle 1.8.5 gives no gradient to fc's weight behind the py_func (its append_backward returns []
    # for mean(t) alone, where psjob refuses a loss that reaches no parameter).
    assert [p.name for p, _ in params_grads] == ["other"]
    assert [op.type for op in main.global_block().ops].count("py_func") == 1


def test_lod_and_no_argument_functions_and_none_outputs():
    seen = []
    main, startup, (o0,) = _program(lambda a: (seen.append(a.recursive_sequence_lengths()), a)[1], [[-1, 2]],
                                    lod_level=1)
    with fluid.program_guard(main, startup):
        fluid.layers.py_func(lambda: seen.append("no args"), None, None)
    exe = fluid.Executor(fluid.CPUPlace())
    t = fluid.create_lod_tensor(np.arange(6, dtype=np.float32).reshape(3, 2), [[1, 2]], fluid.CPUPlace())
    got = exe.run(main, feed={"x": t}, fetch_list=[o0], return_numpy=False)[0]
    assert seen == [[[1, 2]], "no args"]
    assert got.recursive_sequence_lengths() == [[1, 2]]
    np.testing.assert_array_equal(np.array(got), np.arange(6, dtype=np.float32).reshape(3, 2))


def test_wrong_number_of_results_is_refused():
    main, _, (o0, o1) = _program(lambda a: np.array(a), [[-1, 2], [-1, 2]])
    with pytest.raises(ExecutionError, match="returned 1 values for 2 outputs"):
        fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": np.ones((1, 2), np.float32)}, fetch_list=[o0])


def test_bad_arguments_are_refused():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 2], "float32")
        y = fluid.data("y", [None, 2], "float32")
        out = fluid.default_main_program().current_block().create_var(name="o", dtype="float32", shape=[-1, 2])
        with pytest.raises(TypeError, match="func must be a Python function"):
            fluid.layers.py_func(None, x, out)
        with pytest.raises(TypeError, match="'x' must be a Variable"):
            fluid.layers.py_func(np.tanh, np.ones(2), out)
        with pytest.raises(ValueError, match="not a forward input or output"):
            fluid.layers.py_func(np.tanh, x, out, backward_func=np.tanh, skip_vars_in_backward_input=y)
        shapeless = fluid.default_main_program().current_block().create_var(name="s", dtype="float32")
        with pytest.raises(ValueError, match="has no shape"):
            fluid.layers.py_func(np.tanh, x, shapeless)
