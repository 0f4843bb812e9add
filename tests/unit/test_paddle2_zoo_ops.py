"""paddle.bmm, tril, triu, masked_select, shape and nn.functional.normalize (the names
PaddleRec's dlrm and word2vec use): static shapes as Paddle 3.0 infers them (batch -1),
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


def test_bmm_refuses_mismatched_fed_batches():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        out = paddle.bmm(paddle.static.data("a", [None, 2, 3]), paddle.static.data("b", [None, 3, 2]))
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(Exception, match="bmm: X of shape"):
        exe.run(main, feed={"a": np.zeros((2, 2, 3), "float32"), "b": np.zeros((3, 3, 2), "float32")},
                fetch_list=[out], scope=fluid.Scope())
