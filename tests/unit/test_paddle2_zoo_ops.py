"""paddle.bmm, tril, triu, masked_select, shape, arange, tile, full with a runtime shape,
nn.functional.normalize / leaky_relu / layer_norm, nn.LayerNorm, LeakyReLU, the loss layers
and static.nn.layer_norm (names PaddleRec's model zoo uses): static shapes as Paddle 3.0
infers them (batch -1),
values and input gradients against numpy (finite-difference checks of the ops themselves
are in test_op_gradients.py), and bad input refused by name."""
import numpy as np
import pytest

import psjob as paddle
import psjob.fluid as fluid
import psjob.nn.functional as F
from psjob.fluid.framework import GraphError

paddle.enable_static()
RNG = np.random.default_rng(11)


def _program(build, feed, with_grad):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ins = []
        for name, arr in feed.items():
            v = paddle.static.data(name, [None] + list(arr.shape[1:]), str(arr.dtype))
            v.stop_gradient = name != "x"
            ins.append(v)
        out = build(*ins)
        grads = []
        if with_grad and out.dtype == "float64":
            weight = paddle.static.data("weight", [-1], "float64")
            loss = paddle.sum(paddle.multiply(paddle.reshape(out, [-1]), weight))
            grads = paddle.static.gradients([loss], [ins[0]])
    return main, out, grads


def run(build, feed):
    """build(*inputs) on data named after `feed` (batch -1; only x differentiable); returns
    (static shape, fetched output, x's gradient of sum(out * weight), weight)."""
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    main, out, _ = _program(build, feed, with_grad=False)
    probe = exe.run(main, feed=feed, fetch_list=[out], scope=scope)[0]
    w = RNG.normal(size=probe.size)
    main, out, grads = _program(build, feed, with_grad=True)
    got = exe.run(main, feed=dict(feed, weight=w) if grads else feed, fetch_list=[out] + list(grads), scope=scope)
    return tuple(out.shape), got[0], (got[1] if grads else None), w.reshape(probe.shape)


def test_bmm_shape_value_and_gradients():
    x, y = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(2, 4, 5))
    shape, out, dx, w = run(lambda a, b: paddle.bmm(a, b), {"x": x, "y": y})
    assert shape == (-1, 3, 5)
    np.testing.assert_allclose(out, x @ y, rtol=1e-12)
    np.testing.assert_allclose(dx, w @ y.transpose(0, 2, 1), rtol=1e-12)


@pytest.mark.parametrize("diagonal", [-1, 0, 2])
@pytest.mark.parametrize("fn, ref", [(paddle.tril, np.tril), (paddle.triu, np.triu)], ids=["tril", "triu"])
def test_tril_triu_keep_numpys_triangle_and_mask_the_gradient(fn, ref, diagonal):
    x = RNG.normal(size=(2, 3, 4))
    shape, out, dx, w = run(lambda a: fn(a, diagonal), {"x": x})
    assert shape == (-1, 3, 4)
    np.testing.assert_array_equal(out, ref(x, diagonal))
    np.testing.assert_array_equal(dx, ref(w, diagonal))


def test_masked_select_picks_row_major_and_scatters_the_gradient_back():
    x = RNG.normal(size=(3, 4))
    mask = RNG.random((3, 4)) > 0.5
    shape, out, dx, w = run(lambda a, m: paddle.masked_select(a, m), {"x": x, "m": mask})
    assert shape == (-1,)
    np.testing.assert_array_equal(out, x[mask])
    want = np.zeros_like(x)
    want[mask] = w
    np.testing.assert_array_equal(dx, want)


def test_masked_select_broadcasts_x_and_mask_and_sums_the_gradient():
    x = RNG.normal(size=(3, 1))          # stretched along the mask's 4 columns
    mask = RNG.random((3, 4)) > 0.4
    _, out, dx, w = run(lambda a, m: paddle.masked_select(a, m), {"x": x, "m": mask})
    xb = np.broadcast_to(x, (3, 4))
    np.testing.assert_array_equal(out, xb[mask])
    spread = np.zeros((3, 4))
    spread[mask] = w
    np.testing.assert_allclose(dx, spread.sum(1, keepdims=True), rtol=1e-12)


def test_shape_is_int32_and_reads_the_fed_batch():
    x = RNG.normal(size=(5, 2, 3))
    shape, out, dx, _ = run(lambda a: paddle.shape(a), {"x": x})
    assert shape == (3,)
    assert out.dtype == np.int32 and out.tolist() == [5, 2, 3]
    assert dx is None


@pytest.mark.parametrize("p, axis", [(2, 1), (2, -1), (1, 1), (3.0, 0)])
def test_normalize_divides_by_the_p_norm_with_pnorm_gradient(p, axis):
    x = RNG.normal(size=(4, 3, 5))
    x[1, :, 2] = 0.0                     # a zero vector along axis 1: the epsilon floor
    shape, out, dx, w = run(lambda a: F.normalize(a, p=p, axis=axis), {"x": x})
    assert shape == (-1, 3, 5)
    eps = 1e-12
    norm = (np.abs(x) ** p).sum(axis, keepdims=True) ** (1.0 / p)
    np.testing.assert_allclose(out, x / np.maximum(norm, eps), rtol=1e-10)
    # d/dx of sum(w * x / n): w / n - (sum(w * x) / n^2) * dn/dx, dn/dx = |x|^(p-1) sign(x) / n^(p-1)
    n = np.maximum(norm, eps)
    dn = np.abs(x) ** (p - 1) * np.sign(x) / (norm ** (p - 1) + eps) * (norm > eps)
    want = w / n - (w * x).sum(axis, keepdims=True) / n ** 2 * dn
    np.testing.assert_allclose(dx, want, rtol=1e-8, atol=1e-12)


def test_p_norm_infinity_and_asvector():
    x = RNG.normal(size=(3, 4))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        a = paddle.static.data("x", [None, 4], "float64")
        block = main.global_block()
        outs = []
        for attrs in ({"porder": float("inf"), "axis": 1, "keepdim": False},
                      {"porder": float("-inf"), "axis": 0, "keepdim": True},
                      {"porder": 2.0, "axis": -1, "asvector": True, "keepdim": False},
                      {"porder": 0.0, "axis": 1, "keepdim": False}):
            out = block.create_var(name=f"norm{len(outs)}", dtype="float64")
            block.append_op(type="p_norm", inputs={"X": [a]}, outputs={"Out": [out]}, attrs=attrs)
            outs.append(out)
    assert [tuple(o.shape) for o in outs] == [(-1,), (1, 4), (1,), (-1,)]
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    x[0, 1] = 0.0
    got = exe.run(main, feed={"x": x}, fetch_list=outs, scope=scope)
    np.testing.assert_allclose(got[0], np.abs(x).max(1))
    np.testing.assert_allclose(got[1], np.abs(x).min(0, keepdims=True))
    np.testing.assert_allclose(got[2], [np.sqrt((x * x).sum())])
    np.testing.assert_allclose(got[3], (x != 0).sum(1))



@pytest.mark.parametrize("args, kwargs, want", [
    ((5,), {}, np.arange(5)), ((2, 10, 3), {}, np.arange(2, 10, 3)), ((7, -1, -1), {}, np.arange(7, -1, -1)),
    ((0.5, 2.0, 0.5), {}, np.arange(0.5, 2.0, 0.5, dtype="float32")),
    ((), {"end": 4, "dtype": "int64"}, np.arange(4)), ((3, -1, -1), {"dtype": "float32"}, np.arange(3, -1, -1, dtype="float32")),
    ((3, 3), {}, np.arange(3, 3))])
def test_arange_length_is_known_when_built_and_dtype_follows_paddle(args, kwargs, want):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        out = paddle.arange(*args, **kwargs)
    assert tuple(out.shape) == want.shape and out.dtype == str(want.dtype)
    got = fluid.Executor(fluid.CPUPlace()).run(main, fetch_list=[out], scope=fluid.Scope())[0]
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.dtype(out.dtype)


def test_arange_of_a_runtime_bound_has_an_unknown_length():
    x = RNG.normal(size=(3, 2))
    shape, out, _, _ = run(lambda a: paddle.arange(paddle.cast(paddle.sum(paddle.shape(a)), "int64")), {"x": x})
    assert shape == (-1,)
    np.testing.assert_array_equal(out, np.arange(5))


@pytest.mark.parametrize("reps, want_shape", [([2, 1, 3], (-1, 3, 12)), ([2], (-1, 3, 8)),
                                              ([2, 1, 1, 1], (2, -1, 3, 4))])
def test_tile_repeats_as_numpy_and_sums_the_gradient(reps, want_shape):
    x = RNG.normal(size=(2, 3, 4))
    shape, out, dx, w = run(lambda a: paddle.tile(a, reps), {"x": x})
    assert shape == want_shape
    np.testing.assert_array_equal(out, np.tile(x, reps))
    full = [1] * (len(reps) - 3) + [2, 3, 4] if len(reps) > 3 else [2, 3, 4]
    r = [1] * (len(full) - len(reps)) + list(reps)
    want = w.reshape([v for pair in zip(r, full) for v in pair]).sum(axis=tuple(range(0, 2 * len(r), 2)))
    np.testing.assert_allclose(dx, want.reshape(x.shape), rtol=1e-12)


def test_full_reads_a_shape_tensor_at_run_time():
    x = RNG.normal(size=(6, 5))
    shape, out, _, _ = run(lambda a: paddle.full([paddle.slice(paddle.shape(a), [0], [0], [1]), 2], 1.5), {"x": x})
    assert shape == (-1, 2)
    np.testing.assert_array_equal(out, np.full((6, 2), 1.5, "float32"))


def test_leaky_relu_function_and_layer():
    x = RNG.normal(size=(4, 3))
    shape, out, dx, w = run(lambda a: paddle.nn.LeakyReLU(0.2)(a), {"x": x})
    assert shape == (-1, 3)
    np.testing.assert_allclose(out, np.where(x > 0, x, 0.2 * x), rtol=1e-12)
    np.testing.assert_allclose(dx, np.where(x > 0, w, 0.2 * w), rtol=1e-12)
    _, out, _, _ = run(lambda a: F.leaky_relu(a), {"x": x})
    np.testing.assert_allclose(out, np.where(x > 0, x, 0.01 * x), rtol=1e-12)


def _layer_norm_ref(x, k, scale, bias, eps):
    rows = x.reshape(int(np.prod(x.shape[:k])), -1)
    mean, var = rows.mean(1, keepdims=True), rows.var(1, keepdims=True)
    return (((rows - mean) / np.sqrt(var + eps)) * scale + bias).reshape(x.shape)


@pytest.mark.parametrize("normalized_shape", [4, [3, 4]])
def test_layer_norm_layer_normalizes_trailing_dimensions_with_gradients(normalized_shape):
    x = RNG.normal(size=(2, 3, 4)) * 3 + 1
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        a = paddle.static.data("x", [None, 3, 4], "float64")
        a.stop_gradient = False
        ln = paddle.nn.LayerNorm(normalized_shape, epsilon=1e-8)
        ln.weight.dtype = ln.bias.dtype = "float64"  # float64 throughout, for a tight check
        out = ln(a)
        wv = paddle.static.data("w", [None, 3, 4], "float64")
        grads = paddle.static.gradients([paddle.sum(paddle.multiply(out, wv))], [a, ln.weight, ln.bias])
    size = int(np.prod(normalized_shape))
    assert tuple(out.shape) == (-1, 3, 4) and [tuple(p.shape) for p in ln.parameters()] == [(size,), (size,)]
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    scale, bias = RNG.normal(size=size), RNG.normal(size=size)
    scope.var(ln.weight.name).get_tensor().set(scale)
    scope.var(ln.bias.name).get_tensor().set(bias)
    w = RNG.normal(size=x.shape)
    got, dx, dscale, dbias = exe.run(main, feed={"x": x, "w": w}, fetch_list=[out] + grads, scope=scope)
    k = 3 - (1 if isinstance(normalized_shape, int) else len(normalized_shape))
    np.testing.assert_allclose(got, _layer_norm_ref(x, k, scale, bias, 1e-8), rtol=1e-10)

    def f(xv, sv, bv):
        return (_layer_norm_ref(xv, k, sv, bv, 1e-8) * w).sum()

    def numeric(arg, i):
        vals = [x, scale, bias]
        num = np.zeros_like(vals[i])
        for idx in np.ndindex(vals[i].shape):
            hi, lo = [v.copy() for v in vals], [v.copy() for v in vals]
            hi[i][idx] += 1e-6
            lo[i][idx] -= 1e-6
            num[idx] = (f(*hi) - f(*lo)) / 2e-6
        return num
    for i, g in enumerate((dx, dscale, dbias)):
        np.testing.assert_allclose(g, numeric(None, i), rtol=1e-5, atol=1e-7)


def test_static_nn_layer_norm_creates_its_parameters_from_begin_norm_axis():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        a = paddle.static.data("x", [None, 3, 4], "float32")
        out = paddle.static.nn.layer_norm(a, begin_norm_axis=1)
        plain = paddle.static.nn.layer_norm(a, scale=False, shift=False, begin_norm_axis=2)
    assert tuple(out.shape) == (-1, 3, 4)
    assert sorted(tuple(p.shape) for p in main.global_block().all_parameters()) == [(12,), (12,)]
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    x = RNG.normal(size=(2, 3, 4)).astype("float32")
    got, got_plain = exe.run(main, feed={"x": x}, fetch_list=[out, plain], scope=scope)
    np.testing.assert_allclose(got, _layer_norm_ref(x, 1, 1.0, 0.0, 1e-5), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_plain, _layer_norm_ref(x, 2, 1.0, 0.0, 1e-5), rtol=1e-4, atol=1e-5)


def test_loss_layers_call_their_functional_twins():
    logit = RNG.normal(size=(4, 3))
    label = (RNG.random((4, 3)) > 0.5).astype("float64")
    _, got, _, _ = run(lambda a, b: paddle.nn.BCEWithLogitsLoss()(a, b), {"x": logit, "y": label})
    want = np.maximum(logit, 0) - logit * label + np.log1p(np.exp(-np.abs(logit)))
    np.testing.assert_allclose(got, [want.mean()], rtol=1e-10)
    prob = 1 / (1 + np.exp(-logit))
    _, got, _, _ = run(lambda a, b: paddle.nn.BCELoss(reduction="sum")(a, b), {"x": prob, "y": label})
    np.testing.assert_allclose(got, [-(label * np.log(prob) + (1 - label) * np.log(1 - prob)).sum()], rtol=1e-10)
    ids = np.array([[0], [2], [1], [2]])
    _, got, _, _ = run(lambda a, b: paddle.nn.CrossEntropyLoss()(a, b), {"x": logit, "y": ids})
    logp = logit - np.log(np.exp(logit).sum(1, keepdims=True))
    np.testing.assert_allclose(got, [-logp[np.arange(4), ids[:, 0]].mean()], rtol=1e-10)
    _, got, _, _ = run(lambda a, b: paddle.nn.MSELoss()(a, b), {"x": logit, "y": label})
    np.testing.assert_allclose(got, [((logit - label) ** 2).mean()], rtol=1e-10)
    with pytest.raises(ValueError, match="label_smoothing is not supported"):
        paddle.nn.CrossEntropyLoss(label_smoothing=0.1)


def test_tensor_methods_and_assign():
    x = RNG.normal(size=(2, 3))
    _, out, dx, w = run(lambda a: a.unsqueeze(-1).tile([1, 1, 2]).reshape([-1, 6]).sum(axis=1), {"x": x})
    np.testing.assert_allclose(out, 2 * x.sum(1), rtol=1e-12)
    np.testing.assert_allclose(dx, 2 * np.repeat(w[:, None], 3, axis=1), rtol=1e-12)
    const = np.arange(6.0).reshape(2, 3)
    _, out, dx, w = run(lambda a: paddle.multiply(paddle.assign(a), paddle.assign(const)), {"x": x})
    np.testing.assert_allclose(out, x * const, rtol=1e-12)
    np.testing.assert_allclose(dx, w * const, rtol=1e-12)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        made = [paddle.assign([1.5, 2.0]), paddle.assign(3)]
    assert [(tuple(v.shape), v.dtype) for v in made] == [((2,), "float64"), ((1,), "int64")]
    with pytest.raises(TypeError, match="assign: x must be a Variable or numeric array-like"):
        paddle.assign("text")

def _build(fn, *specs):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        return fn(*[paddle.static.data(n, s, d) for n, s, d in specs])


def test_bad_input_is_refused_by_name():
    with pytest.raises(GraphError, match=r"bmm: .*must both be 3-D"):
        _build(paddle.bmm, ("a", [None, 3], "float32"), ("b", [None, 3, 2], "float32"))
    with pytest.raises(GraphError, match=r"bmm: X a\[-1, 3, 4\] has 4 columns but Y b\[-1, 5, 2\] has 5 rows"):
        _build(paddle.bmm, ("a", [None, 3, 4], "float32"), ("b", [None, 5, 2], "float32"))
    with pytest.raises(GraphError, match="bmm: batch sizes differ"):
        _build(paddle.bmm, ("a", [2, 3, 4], "float32"), ("b", [3, 4, 2], "float32"))
    with pytest.raises(GraphError, match="triu: input a.* at least 2 dimensions"):
        _build(paddle.triu, ("a", [4], "float32"))
    with pytest.raises(TypeError, match="tril: diagonal must be an int"):
        _build(lambda a: paddle.tril(a, 0.5), ("a", [2, 2], "float32"))
    with pytest.raises(GraphError, match="masked_select: Mask m must be bool"):
        _build(paddle.masked_select, ("a", [None, 3], "float32"), ("m", [None, 3], "int64"))
    with pytest.raises(GraphError, match=r"masked_select: X a\[-1, 3\] and Mask m\[-1, 4\] do not broadcast"):
        _build(paddle.masked_select, ("a", [None, 3], "float32"), ("m", [None, 4], "bool"))
    with pytest.raises(TypeError, match="normalize: p must be a number"):
        _build(lambda a: F.normalize(a, p="fro"), ("a", [None, 3], "float32"))
    with pytest.raises(ValueError, match="normalize: axis 1 is out of range for the 1-D a"):
        _build(F.normalize, ("a", [3], "float32"))
    with pytest.raises(ValueError, match="arange: step must not be 0"):
        paddle.arange(0, 5, 0)
    with pytest.raises(TypeError, match=r"tile\(repeat_times\)\[0\] .* must be a one-element int32/int64"):
        _build(lambda a, r: paddle.tile(a, [r, 1]), ("a", [None, 3], "float32"), ("r", [1], "float32"))
    with pytest.raises(GraphError, match=r"tile: repeat_times \[0, 1\] must be positive"):
        _build(lambda a: paddle.tile(a, [0, 1]), ("a", [None, 3], "float32"))
    with pytest.raises(ValueError, match=r"layer_norm: normalized_shape \[5\] must match the trailing"):
        _build(lambda a: paddle.nn.LayerNorm(5)(a), ("a", [None, 3], "float32"))
    with pytest.raises(TypeError, match=r"full: shape\[0\] f\[1\] must be a one-element int32/int64"):
        _build(lambda f: paddle.full([f, 2], 0.0), ("f", [1], "float32"))


def test_bmm_refuses_mismatched_fed_batches():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        out = paddle.bmm(paddle.static.data("a", [None, 2, 3]), paddle.static.data("b", [None, 3, 2]))
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(Exception, match="bmm: X of shape"):
        exe.run(main, feed={"a": np.zeros((2, 2, 3), "float32"), "b": np.zeros((3, 3, 2), "float32")},
                fetch_list=[out], scope=fluid.Scope())
