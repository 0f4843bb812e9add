"""Element-wise ops broadcast as Paddle's do: shape inference, forward and gradients vs numpy.

Paddle's rule (Fluid 1.8 and 2.x): the operand with fewer dimensions lines up with the
other starting at `axis` (-1: the trailing dimensions), then a size of 1 in EITHER
operand stretches. Paddle 2.x functions and operators always use axis=-1 (numpy's rule);
Fluid 1.x `elementwise_*` take `axis`. The gradient of a stretched operand is the output
gradient summed over the stretched dimensions.

The references here are numpy: forward by numpy broadcasting of the operands placed as
the rule says, gradients by central differences of sum(W * f(x, y)) computed in numpy,
so no psjob code checks itself. The static shapes in SHAPE_TABLE are what Paddle 1.8.5
and 3.0.0 infer for the same declarations.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import psjob as paddle
import psjob.fluid as fluid
from psjob.fluid.framework import GraphError

RNG = np.random.default_rng(20241128)

# -- numpy references ------------------------------------------------------------------------


def place(x, y, axis):
    """x and y reshaped so numpy's broadcasting applies Paddle's `axis` rule."""
    if axis == -1 or x.ndim == y.ndim:
        return x, y
    big, small = (x, y) if x.ndim > y.ndim else (y, x)
    padded = small.reshape((1,) * axis + small.shape + (1,) * (big.ndim - axis - small.ndim))
    return (x, padded) if x.ndim > y.ndim else (padded, y)


# op type -> (numpy function, has a gradient)
OPS = {
    "elementwise_add": (np.add, True),
    "elementwise_sub": (np.subtract, True),
    "elementwise_mul": (np.multiply, True),
    "elementwise_div": (np.divide, True),
    "elementwise_max": (np.maximum, True),
    "elementwise_min": (np.minimum, True),
    "elementwise_pow": (np.power, True),
    "elementwise_floordiv": (np.floor_divide, False),
    "elementwise_mod": (np.mod, False),
}
GRAD_OPS = [t for t, (_, g) in OPS.items() if g]
COMPARE = {"less_than": np.less, "less_equal": np.less_equal, "greater_than": np.greater,
           "greater_equal": np.greater_equal, "equal": np.equal, "not_equal": np.not_equal}


def operands(op, xs, ys):
    """float64 operands in the op's smooth domain (pow: x > 0; div: y away from 0)."""
    if op == "elementwise_pow":
        return RNG.uniform(0.5, 2.0, xs), RNG.uniform(-1.5, 1.5, ys)
    x = RNG.uniform(-2.0, 2.0, xs)
    y = RNG.uniform(0.4, 1.6, ys) * RNG.choice([-1.0, 1.0], ys)
    return x, y


def numeric_grads(fn, x, y, axis, w, eps=1e-6):
    def f(a, b):
        return float(np.sum(w * fn(*place(a, b, axis))))
    grads = []
    for which, base in ((0, x), (1, y)):
        g = np.zeros_like(base)
        for k in range(base.size):
            hi, lo = base.copy().reshape(-1), base.copy().reshape(-1)
            hi[k] += eps
            lo[k] -= eps
            args_hi = (hi.reshape(base.shape), y) if which == 0 else (x, hi.reshape(base.shape))
            args_lo = (lo.reshape(base.shape), y) if which == 0 else (x, lo.reshape(base.shape))
            g.reshape(-1)[k] = (f(*args_hi) - f(*args_lo)) / (2 * eps)
        grads.append(g)
    return grads


# -- shape classes -----------------------------------------------------------------------------

# (id, x shape, y shape, axis): the axis != -1 ones exist only in Fluid's elementwise_*.
SHAPES = [
    ("same", (2, 3, 4), (2, 3, 4), -1),
    ("scalar-y", (2, 3, 4), (1,), -1),
    ("scalar-x", (1,), (2, 3, 4), -1),
    ("trailing", (2, 3, 4), (3, 4), -1),
    ("trailing-x-shorter", (4,), (2, 3, 4), -1),
    ("leading", (2, 3, 4), (2, 1, 1), -1),
    ("both-ways", (3, 13, 1), (1, 13, 9), -1),
    ("both-ways-ranks", (3, 1), (2, 1, 4), -1),
    ("axis1", (2, 3, 4, 5), (3, 4), 1),
    ("axis0", (2, 3, 4), (2,), 0),
    ("axis-x-shorter", (3, 4), (2, 3, 4, 5), 1),
    ("axis-y-trailing-one", (2, 3, 4), (3, 1), 1),
]
NUMPY_SHAPES = [s for s in SHAPES if s[3] == -1]


def _run(build, feed, fetch_extra=()):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        outs = build()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    return outs, exe.run(main, feed=feed, fetch_list=list(outs) + list(fetch_extra))


def _decl(xs, ys, dtype="float64"):
    x = fluid.layers.data("x", list(xs), dtype=dtype, append_batch_size=False)
    y = fluid.layers.data("y", list(ys), dtype=dtype, append_batch_size=False)
    return x, y


# -- Fluid 1.x elementwise_* with axis ----------------------------------------------------------

@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("sid,xs,ys,axis", SHAPES, ids=[s[0] for s in SHAPES])
def test_fluid_elementwise_forward_matches_numpy(op, sid, xs, ys, axis):
    x, y = operands(op, xs, ys)
    want = OPS[op][0](*place(x, y, axis))

    def build():
        vx, vy = _decl(xs, ys)
        out = getattr(fluid.layers, op)(vx, vy, axis=axis)
        assert tuple(out.shape) == want.shape, f"{op} {sid}: inferred {out.shape}, numpy {want.shape}"
        return [out]
    _, (got,) = _run(build, {"x": x, "y": y})
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("op", GRAD_OPS)
@pytest.mark.parametrize("sid,xs,ys,axis", SHAPES, ids=[s[0] for s in SHAPES])
def test_fluid_elementwise_gradients_match_finite_differences(op, sid, xs, ys, axis):
    x, y = operands(op, xs, ys)
    out_shape = OPS[op][0](*place(x, y, axis)).shape
    w = RNG.normal(size=out_shape)

    def build():
        vx, vy = _decl(xs, ys)
        vw = fluid.layers.data("w", list(out_shape), dtype="float64", append_batch_size=False)
        out = getattr(fluid.layers, op)(vx, vy, axis=axis)
        loss = fluid.layers.reduce_sum(fluid.layers.elementwise_mul(out, vw))
        gx, gy = fluid.gradients([loss], [vx, vy])
        assert tuple(gx.shape) == xs and tuple(gy.shape) == ys
        return [gx, gy]
    _, (gx, gy) = _run(build, {"x": x, "y": y, "w": w})
    nx, ny = numeric_grads(OPS[op][0], x, y, axis, w)
    assert gx.shape == xs and gy.shape == ys, f"{op} {sid}: grads {gx.shape} {gy.shape}"
    np.testing.assert_allclose(gx, nx, rtol=1e-6, atol=1e-7, err_msg=f"{op} {sid}: dx")
    np.testing.assert_allclose(gy, ny, rtol=1e-6, atol=1e-7, err_msg=f"{op} {sid}: dy")


# -- static shape inference with unknown (batch) dimensions ---------------------------------------

# (x shape, y shape, axis, out shape) as Paddle 1.8.5 (fluid.layers.elementwise_add) and 3.0.0
# (paddle.add, static mode) infer them; -1 is None / unknown.
SHAPE_TABLE = [
    ([-1, 13, 1], [1, 13, 9], -1, (-1, 13, 9)),
    ([1, 13, 9], [-1, 13, 1], -1, (-1, 13, 9)),
    ([-1, 13, 9], [9], -1, (-1, 13, 9)),
    ([-1, 13], [13], -1, (-1, 13)),
    ([-1, 1], [-1, 5], -1, (-1, 5)),
    ([1], [-1, 4], -1, (-1, 4)),
    ([-1, 1], [1, -1], -1, (-1, -1)),
    ([-1, 3], [5, 3], -1, (5, 3)),
    ([3, 4], [2, 3, 4], -1, (2, 3, 4)),
    ([3, 1], [2, 1, 4], -1, (2, 3, 4)),
    ([2, 3, 4, 5], [3, 4], 1, (2, 3, 4, 5)),
    ([3, 4], [2, 3, 4, 5], 1, (2, 3, 4, 5)),
    ([2, 3, 4], [3, 1], 1, (2, 3, 4)),
    ([-1, 8], [8], 1, (-1, 8)),  # fc's bias add: axis = num_flatten_dims
]


@pytest.mark.parametrize("xs,ys,axis,want", SHAPE_TABLE, ids=[f"{a}x{b}@{c}" for a, b, c, _ in SHAPE_TABLE])
def test_static_shape_inference_matches_paddle(xs, ys, axis, want):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x, y = _decl(xs, ys, "float32")
        for op in OPS:
            assert tuple(getattr(fluid.layers, op)(x, y, axis=axis).shape) == want, op
        if axis == -1:
            for fn in ("add", "subtract", "multiply", "divide", "maximum", "minimum", "pow",
                       "floor_divide", "remainder"):
                assert tuple(getattr(paddle, fn)(x, y).shape) == want, fn
            for fn in COMPARE:
                out = getattr(paddle, fn)(x, y)
                assert tuple(out.shape) == want and out.dtype == "bool", fn
            for out in (x + y, x - y, x * y, x / y, x ** y, x // y, x % y):
                assert tuple(out.shape) == want


@pytest.mark.parametrize("xs,ys,axis,why", [
    ([2, 3], [4], -1, "dimension 1"),
    ([-1, 3], [-1, 4], -1, "3 against 4"),
    ([2, 3, 4], [3, 4], 2, "axis 2"),
    ([2, 3, 4], [3], 3, "axis 3"),
])
def test_shapes_that_do_not_broadcast_are_refused_at_build_time(xs, ys, axis, why):
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x, y = _decl(xs, ys, "float32")
        pattern = rf"elementwise_mul: X {re.escape(f'x{xs}')}.*Y {re.escape(f'y{ys}')}.*do not broadcast.*{why}"
        with pytest.raises(GraphError, match=pattern):
            fluid.layers.elementwise_mul(x, y, axis=axis)


def test_unknown_dimensions_that_do_not_broadcast_fail_at_run_time_naming_the_op():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x, y = _decl([-1, 3], [-1, 3], "float32")
        out = paddle.add(x, y)
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(Exception, match="elementwise_add"):
        exe.run(out.block.program, feed={"x": np.ones((4, 3), "float32"), "y": np.ones((5, 3), "float32")},
                fetch_list=[out])


# -- Paddle 2.x functions and operators ---------------------------------------------------------

FUNCS = {  # paddle.<fn> -> the numpy reference
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "maximum": np.maximum, "minimum": np.minimum, "pow": np.power,
    "floor_divide": np.floor_divide, "remainder": np.mod,
}
OPERATORS = {  # python operator on two Variables -> (reference, the op's domain)
    "+": (np.add, "elementwise_add"), "-": (np.subtract, "elementwise_sub"),
    "*": (np.multiply, "elementwise_mul"), "/": (np.divide, "elementwise_div"),
    "**": (np.power, "elementwise_pow"), "//": (np.floor_divide, "elementwise_floordiv"),
    "%": (np.mod, "elementwise_mod"),
}
_APPLY = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
          "/": lambda a, b: a / b, "**": lambda a, b: a ** b, "//": lambda a, b: a // b,
          "%": lambda a, b: a % b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
          ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def _domain(fn):
    return {"pow": "elementwise_pow", "divide": "elementwise_div"}.get(fn, "elementwise_add")


@pytest.mark.parametrize("fn", list(FUNCS))
@pytest.mark.parametrize("sid,xs,ys,axis", NUMPY_SHAPES, ids=[s[0] for s in NUMPY_SHAPES])
def test_paddle2_functions_broadcast_both_ways(fn, sid, xs, ys, axis):
    x, y = operands(_domain(fn), xs, ys)
    want = FUNCS[fn](x, y)

    def build():
        vx, vy = _decl(xs, ys)
        out = getattr(paddle, fn)(vx, vy)
        assert tuple(out.shape) == want.shape
        return [out]
    _, (got,) = _run(build, {"x": x, "y": y})
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fn", ["add", "subtract", "multiply", "divide", "maximum", "minimum", "pow"])
@pytest.mark.parametrize("sid,xs,ys,axis", NUMPY_SHAPES, ids=[s[0] for s in NUMPY_SHAPES])
def test_paddle2_function_gradients_match_finite_differences(fn, sid, xs, ys, axis):
    x, y = operands(_domain(fn), xs, ys)
    out_shape = np.broadcast_shapes(xs, ys)
    w = RNG.normal(size=out_shape)

    def build():
        vx, vy = _decl(xs, ys)
        vw = paddle.static.data("w", list(out_shape), "float64")
        loss = paddle.sum(paddle.multiply(getattr(paddle, fn)(vx, vy), vw))
        return paddle.static.gradients([loss], [vx, vy])
    _, (gx, gy) = _run(build, {"x": x, "y": y, "w": w})
    nx, ny = numeric_grads(FUNCS[fn], x, y, -1, w)
    np.testing.assert_allclose(gx, nx, rtol=1e-6, atol=1e-7, err_msg=f"{fn} {sid}: dx")
    np.testing.assert_allclose(gy, ny, rtol=1e-6, atol=1e-7, err_msg=f"{fn} {sid}: dy")


@pytest.mark.parametrize("sym", list(_APPLY))
@pytest.mark.parametrize("sid,xs,ys", [("both-ways", (3, 13, 1), (1, 13, 9)), ("scalar-x", (1,), (2, 3)),
                                       ("trailing-x-shorter", (3,), (2, 3))])
def test_variable_operators_broadcast_both_ways(sym, sid, xs, ys):
    ref = OPERATORS[sym][0] if sym in OPERATORS else COMPARE[
        {"<": "less_than", "<=": "less_equal", ">": "greater_than", ">=": "greater_equal"}[sym]]
    x, y = operands(OPERATORS[sym][1] if sym in OPERATORS else "elementwise_add", xs, ys)
    want = ref(x, y)

    def build():
        vx, vy = _decl(xs, ys)
        return [_APPLY[sym](vx, vy)]
    (out,), (got,) = _run(build, {"x": x, "y": y})
    assert tuple(out.shape) == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("expr,ref", [
    (lambda v: 1 - v, lambda a: 1 - a), (lambda v: 2.0 / v, lambda a: 2.0 / a),
    (lambda v: 2.0 ** v, lambda a: 2.0 ** a), (lambda v: v ** 2, lambda a: a ** 2),
    (lambda v: 3 < v, lambda a: 3 < a), (lambda v: v >= 0.5, lambda a: a >= 0.5),
    (lambda v: paddle.maximum(v, 0.5), lambda a: np.maximum(a, 0.5)),
    (lambda v: paddle.remainder(v, 0.75), lambda a: np.mod(a, 0.75)),
], ids=["rsub", "rdiv", "rpow", "pow-number", "rlt", "ge-number", "maximum-number", "remainder-number"])
def test_a_number_operand_broadcasts_over_a_batch(expr, ref):
    a = RNG.uniform(0.3, 2.0, (4, 3))
    (out,), (got,) = _run(lambda: [expr(paddle.static.data("x", [None, 3], "float64"))], {"x": a})
    assert tuple(out.shape) == (-1, 3)
    np.testing.assert_allclose(got, ref(a), rtol=1e-12)


@pytest.mark.parametrize("fn", list(COMPARE))
@pytest.mark.parametrize("sid,xs,ys,axis", SHAPES, ids=[s[0] for s in SHAPES])
def test_comparison_ops_broadcast_with_axis(fn, sid, xs, ys, axis):
    x = RNG.integers(0, 3, xs).astype("float64")
    y = RNG.integers(0, 3, ys).astype("float64")
    want = COMPARE[fn](*place(x, y, axis))

    def build():
        vx, vy = _decl(xs, ys)
        if axis == -1:
            return [getattr(paddle, fn)(vx, vy)]
        block = fluid.default_main_program().global_block()
        out = block.create_var(name="out", dtype="bool")
        block.append_op(type=fn, inputs={"X": [vx], "Y": [vy]}, outputs={"Out": [out]}, attrs={"axis": axis})
        return [out]
    (out,), (got,) = _run(build, {"x": x, "y": y})
    assert tuple(out.shape) == want.shape
    np.testing.assert_array_equal(got, want)


def test_where_broadcasts_condition_x_and_y_and_sums_gradients_back():
    c = RNG.random((4, 1)) > 0.5
    x, y = RNG.normal(size=(4, 3)), RNG.normal(size=(1, 3))
    w = RNG.normal(size=(4, 3))

    def build():
        vc = paddle.static.data("c", [None, 1], "bool")
        vx, vy = paddle.static.data("x", [None, 3], "float64"), paddle.static.data("y", [1, 3], "float64")
        vw = paddle.static.data("w", [None, 3], "float64")
        out = paddle.where(vc, vx, vy)
        assert tuple(out.shape) == (-1, 3)
        return [out] + paddle.static.gradients([paddle.sum(out * vw)], [vx, vy])
    _, (got, gx, gy) = _run(build, {"c": c, "x": x, "y": y, "w": w})
    np.testing.assert_allclose(got, np.where(c, x, y))
    np.testing.assert_allclose(gx, np.where(c, w, 0.0))
    np.testing.assert_allclose(gy, np.where(c, 0.0, w).sum(axis=0, keepdims=True))


# -- gradient details -----------------------------------------------------------------------------

@pytest.mark.parametrize("fn,to_x", [("maximum", (1, 0, 0)), ("minimum", (0, 1, 0))])
def test_max_min_gradient_goes_to_y_on_ties_as_paddle(fn, to_x):
    # Paddle: MaxGradDx = dout * (x > y), MaxGradDy = dout * (x <= y); min likewise with <, >=.
    x, y = np.array([3.0, 1.0, 2.0]), np.array([1.0, 3.0, 2.0])

    def build():
        vx, vy = paddle.static.data("x", [3], "float64"), paddle.static.data("y", [3], "float64")
        return paddle.static.gradients([paddle.sum(getattr(paddle, fn)(vx, vy))], [vx, vy])
    _, (gx, gy) = _run(build, {"x": x, "y": y})
    np.testing.assert_array_equal(gx, to_x)
    np.testing.assert_array_equal(gy, 1 - np.array(to_x))


def test_a_broadcast_parameter_gets_its_own_shape_of_gradient_through_append_backward():
    # DeepFM's dense embedding: dense_inputs [N, 13, 1] * dense_w [1, 13, 9].
    a = RNG.normal(size=(5, 13, 1)).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = paddle.static.data("x", [None, 13, 1], "float32")
        w = paddle.create_parameter([1, 13, 9], "float32",
                                    default_initializer=paddle.nn.initializer.Constant(0.5))
        emb = paddle.multiply(x, w)
        assert tuple(emb.shape) == (-1, 13, 9)
        loss = paddle.mean(paddle.square(emb))
        (param, grad), = fluid.backward.append_backward(loss)
        assert param.name == w.name and tuple(grad.shape) == (1, 13, 9)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    g, = exe.run(main, feed={"x": a}, fetch_list=[grad])
    want = (2 * a * (a * 0.5) / (5 * 13 * 9)).sum(axis=0, keepdims=True) * np.ones((1, 13, 9))
    np.testing.assert_allclose(g, want, rtol=1e-5)


# -- flatten: another shape rule PaddleRec's models rely on (NCF) ---------------------------------

# (x shape, start_axis, stop_axis, out shape) as Paddle 3.0.0's paddle.flatten infers them.
FLATTEN_TABLE = [
    ([-1, 1, 8], 1, 2, (-1, 8)),
    ([-1, 3, 4], 0, 1, (-1, 4)),
    ([-1, 3, 4], 0, -1, (-1,)),
    ([2, -1, 4], 1, 2, (2, -1)),
    ([2, 3, -1], 0, 1, (6, -1)),
    ([-1, 3, 4, 5], 1, 2, (-1, 12, 5)),
    ([2, -1, -1], 0, 0, (2, -1, -1)),
]


@pytest.mark.parametrize("xs,start,stop,want", FLATTEN_TABLE,
                         ids=[f"{a}-{b}..{c}" for a, b, c, _ in FLATTEN_TABLE])
def test_flatten_infers_the_merged_size_when_the_merged_dimensions_are_known(xs, start, stop, want):
    a = RNG.normal(size=[3 if d < 0 else d for d in xs])
    (out,), (got,) = _run(lambda: [paddle.flatten(paddle.static.data("x", xs, "float64"), start, stop)], {"x": a})
    assert tuple(out.shape) == want
    s, e = start % a.ndim, stop % a.ndim
    np.testing.assert_array_equal(got, a.reshape(a.shape[:s] + (-1,) + a.shape[e + 1:]))
