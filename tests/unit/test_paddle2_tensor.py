"""Paddle 2.x tensor functions in static mode: each one's output against numpy, gradients
where they flow (the ops' own finite-difference checks live in test_op_gradients.py), and
the top-level names `import psjob as paddle` resolves."""
import numpy as np
import pytest

import psjob as paddle
import psjob.fluid as fluid

paddle.enable_static()
RNG = np.random.default_rng(5)
X = RNG.normal(size=(3, 4)).astype("float32")
Y = RNG.normal(size=(3, 4)).astype("float32")


def evaluate(fn, feed=None):
    """fn(x, y) built on data x, y [None, 4]; returns the fetched values of what it returns."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x, y = paddle.static.data("x", [None, 4]), paddle.static.data("y", [None, 4])
        outs = fn(x, y)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    return exe.run(main, feed=feed or {"x": X, "y": Y}, fetch_list=list(outs), scope=scope)


CASES = {
    "reshape": (lambda x, y: paddle.reshape(x, [-1, 2, 2]), lambda: X.reshape(-1, 2, 2)),
    "concat": (lambda x, y: paddle.concat([x, y], axis=1), lambda: np.concatenate([X, Y], 1)),
    "cast": (lambda x, y: paddle.cast(x, "int64"), lambda: X.astype("int64")),
    "mean": (lambda x, y: paddle.mean(x), lambda: [X.mean()]),
    "mean-axis": (lambda x, y: paddle.mean(x, axis=1, keepdim=True), lambda: X.mean(1, keepdims=True)),
    "sum": (lambda x, y: paddle.sum(x, axis=0), lambda: X.sum(0)),
    "square": (lambda x, y: paddle.square(x), lambda: X * X),
    "matmul": (lambda x, y: paddle.matmul(x, y, transpose_y=True), lambda: X @ Y.T),
    "multiply": (lambda x, y: paddle.multiply(x, y), lambda: X * Y),
    "add": (lambda x, y: paddle.add(x, y), lambda: X + Y),
    "subtract-divide": (lambda x, y: paddle.divide(paddle.subtract(x, y), y), lambda: (X - Y) / Y),
    "sigmoid": (lambda x, y: paddle.sigmoid(x), lambda: 1 / (1 + np.exp(-X))),
    "log-exp": (lambda x, y: paddle.log(paddle.exp(x)), lambda: X),
    "clip": (lambda x, y: paddle.clip(x, min=-0.5, max=0.5), lambda: np.clip(X, -0.5, 0.5)),
    "clip-min-only": (lambda x, y: paddle.clip(x, min=0.0), lambda: np.maximum(X, 0)),
    "squeeze-unsqueeze": (lambda x, y: paddle.squeeze(paddle.unsqueeze(x, [0, 2]), axis=0),
                          lambda: X[:, None, :]),
    "split": (lambda x, y: paddle.split(x, [1, 2], axis=0)[1], lambda: X[1:3]),
    "stack": (lambda x, y: paddle.stack([x, y], axis=1), lambda: np.stack([X, Y], 1)),
    "slice": (lambda x, y: paddle.slice(x, axes=[1], starts=[1], ends=[-1]), lambda: X[:, 1:-1]),
    "ones-zeros-full": (lambda x, y: [paddle.ones([2], "int64"), paddle.zeros([1, 2]), paddle.full([2], 7.5)],
                        lambda: [np.ones(2, "int64"), np.zeros((1, 2)), np.full(2, 7.5)]),
    "full_like": (lambda x, y: [paddle.full_like(x, 2.0), paddle.ones_like(x), paddle.zeros_like(x, "int64")],
                  lambda: [np.full_like(X, 2.0), np.ones_like(X), np.zeros(X.shape, "int64")]),
    "argmax": (lambda x, y: [paddle.argmax(x, axis=1), paddle.argmax(x), paddle.argmax(x, 0, keepdim=True)],
               lambda: [X.argmax(1), [X.argmax()], X.argmax(0)[None]]),
    "where-compare": (lambda x, y: paddle.where(paddle.greater_than(x, y), x, y), lambda: np.maximum(X, Y)),
    "compare": (lambda x, y: [paddle.equal(x, x), paddle.less_than(x, 0.0), paddle.not_equal(x, y)],
                lambda: [np.ones(X.shape, bool), X < 0, X != Y]),
    "transpose": (lambda x, y: paddle.transpose(x, [1, 0]), lambda: X.T),
    "flatten": (lambda x, y: paddle.flatten(paddle.reshape(x, [-1, 2, 2]), start_axis=1), lambda: X),
    "pow-sqrt-abs": (lambda x, y: paddle.sqrt(paddle.pow(paddle.abs(x), 2.0)), lambda: np.abs(X)),
    "operators": (lambda x, y: [-x, 1 - x, x * 2.0, x / y, x + y, x @ paddle.transpose(y, [1, 0]),
                                x.astype("int32")],
                  lambda: [-X, 1 - X, X * 2, X / Y, X + Y, X @ Y.T, X.astype("int32")]),
    "one_hot": (lambda x, y: paddle.nn.functional.one_hot(paddle.argmax(x, axis=1), 4),
                lambda: np.eye(4)[X.argmax(1)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_tensor_function_matches_numpy(name):
    build, want = CASES[name]
    got = evaluate(build)
    for g, w in zip(got, want() if isinstance(want(), list) else [want()]):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-5, atol=1e-6)
        assert np.asarray(g).dtype == np.asarray(w).dtype or np.asarray(w).dtype == np.float64


def test_gradients_flow_through_matmul_slice_stack_where_clip_into_a_parameter():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = paddle.static.data("x", [None, 4])
        w = paddle.create_parameter([4, 4], "float32", name="w")
        h = paddle.matmul(x, w)
        parts = paddle.stack([paddle.slice(h, [1], [0], [2]), paddle.slice(h, [1], [2], [4])], axis=0)
        picked = paddle.where(paddle.greater_than(parts, 0.0), parts, paddle.clip(parts, min=-0.1))
        loss = paddle.mean(paddle.exp(picked))
        grad, = paddle.static.gradients([loss], [w])
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    w0 = RNG.normal(size=(4, 4)).astype("float64")
    scope.var("w").get_tensor().set(w0.astype("float32"))
    got = exe.run(main, feed={"x": X}, fetch_list=[grad], scope=scope)[0]

    def f(wv):
        h = X.astype("float64") @ wv
        p = np.where(h > 0, h, np.maximum(h, -0.1))
        return np.exp(p).mean()

    num = np.zeros_like(w0)
    for i in np.ndindex(w0.shape):
        d = np.zeros_like(w0)
        d[i] = 1e-5
        num[i] = (f(w0 + d) - f(w0 - d)) / 2e-5
    np.testing.assert_allclose(got, num, rtol=1e-3, atol=1e-5)


def test_top_level_names_resolve_and_refusals_name_the_alternative():
    for name in ("enable_static", "disable_static", "in_dynamic_mode", "seed", "set_device", "CPUPlace",
                 "CUDAPlace", "is_compiled_with_cuda", "is_compiled_with_custom_device", "ParamAttr",
                 "static", "nn", "optimizer", "regularizer", "reshape", "create_parameter"):
        assert getattr(paddle, name) is not None, name
    assert paddle.is_compiled_with_custom_device("npu") is False and not paddle.in_dynamic_mode()
    assert isinstance(paddle.set_device("cpu"), paddle.CPUPlace)
    with pytest.raises(RuntimeError, match="psjob runs static graphs only"):
        paddle.disable_static()
    # static mode: a constant of the graph, as Paddle 3.0's static to_tensor (an assign_value)
    const = paddle.to_tensor([1.0])
    assert const.dtype == "float32" and list(const.shape) == [1] and const.stop_gradient
    from psjob import device
    device._static = False  # dygraph: paddle.save/load are refused there (static mode has them)
    try:
        with pytest.raises(RuntimeError, match="enable_static"):
            paddle.save({}, "x")
        with pytest.raises(RuntimeError, match="enable_static"):
            paddle.load("x")
        with pytest.raises(RuntimeError, match="eager"):
            paddle.to_tensor([1.0])
    finally:
        device._static = True
    with pytest.raises(AttributeError):
        paddle.no_such_name


def test_a_layer_built_before_enable_static_is_refused(monkeypatch):
    from psjob import device
    monkeypatch.setattr(device, "_static", False)
    assert paddle.in_dynamic_mode()
    with pytest.raises(RuntimeError, match=r"paddle.nn.Linear\(\) in dynamic .*enable_static"):
        paddle.nn.Linear(2, 2)


def test_seed_makes_later_programs_initialize_alike(monkeypatch):
    from psjob.fluid import framework
    # paddle.seed is process-wide: put the defaults back for the tests that follow.
    monkeypatch.setattr(framework, "_global_seed", framework._global_seed)
    monkeypatch.setattr(framework.default_main_program(), "random_seed", framework.default_main_program().random_seed)
    monkeypatch.setattr(framework.default_startup_program(), "random_seed",
                        framework.default_startup_program().random_seed)

    def init_values():
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            w = paddle.create_parameter([3, 3], "float32")
        exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
        exe.run(startup, scope=scope)
        return np.array(scope.vars[w.name])

    paddle.seed(11)
    a = init_values()
    paddle.seed(11)
    b = init_values()
    paddle.seed(12)
    c = init_values()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_the_scope_calls_paddlerec_helpers_make():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        w = paddle.create_parameter([2, 3], "float32", name="w")
    scope = fluid.Scope()
    with paddle.static.scope_guard(scope):
        paddle.static.Executor(paddle.CPUPlace()).run(startup)
        tensor = paddle.static.global_scope().find_var("w").get_tensor()
        assert tensor._get_dims() == [2, 3] and w.name == "w" and list(w.shape) == [2, 3]
        tensor.set(np.full((2, 3), 4.0, "float32"), paddle.CPUPlace())
        np.testing.assert_array_equal(np.array(paddle.static.global_scope().var("w").get_tensor()),
                                      np.full((2, 3), 4.0))
        assert paddle.static.global_scope().find_var("nothing") is None
