"""paddle.nn.Conv2D / F.conv2d / static.nn.conv2d, Variable indexing and paddle.add_n on
static graphs: forward values and gradients against numpy written out by hand (the
op-level finite-difference checks are in test_op_gradients.py)."""
import numpy as np
import pytest

import psjob as paddle
import psjob.fluid as fluid
import psjob.nn.functional as F
from psjob.fluid.base import GraphError
from psjob.fluid.executor import ExecutionError

RNG = np.random.default_rng(11)


def run(build, feed, scope=None):
    """Build under fresh programs, run the startup, return (fetched values, scope, parameters)."""
    paddle.enable_static()
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        fetch, params = build()
    exe, scope = fluid.Executor(fluid.CPUPlace()), scope or fluid.Scope()
    exe.run(startup, scope=scope)
    for name, value in params.items():
        scope.vars[name] = value
    return exe.run(main, feed=feed, fetch_list=fetch, scope=scope), scope


# -- conv2d -----------------------------------------------------------------------------

def conv_reference(x, w, r, stride, pads, dilation, groups):
    """out = conv(x, w) by loops over every output element, and for loss sum(out * r) the
    gradients dx, dw (each output element adds r * window to dw and r * w to dx's window)."""
    t, b, l, rt = pads
    xp = np.pad(x, ((0, 0), (0, 0), (t, b), (l, rt)))
    n, _, h, wd = xp.shape
    o, cg, kh, kw = w.shape
    oh = (h - (dilation[0] * (kh - 1) + 1)) // stride[0] + 1
    ow = (wd - (dilation[1] * (kw - 1) + 1)) // stride[1] + 1
    out, dxp, dw = np.zeros((n, o, oh, ow)), np.zeros_like(xp), np.zeros_like(w)
    for ni in range(n):
        for oi in range(o):
            g = oi // (o // groups)
            for i in range(oh):
                for j in range(ow):
                    rows = slice(i * stride[0], i * stride[0] + dilation[0] * (kh - 1) + 1, dilation[0])
                    cols = slice(j * stride[1], j * stride[1] + dilation[1] * (kw - 1) + 1, dilation[1])
                    window = xp[ni, g * cg:(g + 1) * cg, rows, cols]
                    out[ni, oi, i, j] = (window * w[oi]).sum()
                    dw[oi] += r[ni, oi, i, j] * window
                    dxp[ni, g * cg:(g + 1) * cg, rows, cols] += r[ni, oi, i, j] * w[oi]
    return out, dxp[:, :, t:t + x.shape[2], l:l + x.shape[3]], dw


@pytest.mark.parametrize("stride,padding,pads,dilation,groups", [
    ((1, 1), 0, (0, 0, 0, 0), (1, 1), 1),
    ((2, 1), [1, 0, 2, 1], (1, 0, 2, 1), (1, 2), 2),
    ((1, 2), [[0, 0], [0, 0], [2, 1], [0, 1]], (2, 1, 0, 1), (2, 1), 1),   # Paddle's per-dimension pairs
    ((2, 2), "same", None, (1, 1), 1),
    ((1, 1), "VALID", (0, 0, 0, 0), (1, 1), 2),
])
def test_conv2d_forward_and_gradients_equal_numpy(stride, padding, pads, dilation, groups):
    x = RNG.normal(size=(2, 4, 7, 6)).astype("float32")
    w = RNG.normal(size=(6, 4 // groups, 3, 2)).astype("float32")
    if pads is None:  # SAME: output ceil(in / stride), the padding split before/after (Paddle's rule)
        pads = []
        for size, k, s in zip(x.shape[2:], w.shape[2:], stride):
            total = max((-(-size // s) - 1) * s + k - size, 0)
            pads += [total // 2, total - total // 2]

    def build():
        xv = paddle.static.data("x", [None, 4, 7, 6], "float32")
        xv.stop_gradient = False
        conv = paddle.nn.Conv2D(4, 6, (3, 2), stride=stride, padding=padding, dilation=dilation, groups=groups)
        out = conv(xv)
        r = paddle.static.data("r", [None] + list(out.shape[1:]), "float32")
        dx, dw, db = paddle.static.gradients([paddle.sum(out * r)], [xv, conv.weight, conv.bias])
        return [out, dx, dw, db], {conv.weight.name: w, conv.bias.name: np.arange(6, dtype="float32")}

    out_shape = conv_reference(x, w, np.zeros((2, 6, 20, 20)), stride, pads, dilation, groups)[0].shape
    r = RNG.normal(size=out_shape).astype("float32")
    want, want_dx, want_dw = conv_reference(x.astype("float64"), w.astype("float64"), r, stride, pads,
                                            dilation, groups)
    (out, dx, dw, db), _ = run(build, {"x": x, "r": r})
    np.testing.assert_allclose(out, want + np.arange(6).reshape(1, 6, 1, 1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dw, want_dw, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(db, r.sum(axis=(0, 2, 3)), rtol=1e-5)


def test_conv2d_layer_names_and_initialises_as_paddle_and_nhwc_is_nchw_transposed():
    x = RNG.normal(size=(2, 5, 6, 3)).astype("float32")  # NHWC

    def build():
        xv = paddle.static.data("x", [None, 5, 6, 3], "float32")
        conv = paddle.nn.Conv2D(3, 64, 3, padding=1, data_format="NHWC")
        nchw = F.conv2d(paddle.transpose(xv, [0, 3, 1, 2]), conv.weight, conv.bias, padding=1)
        build.names = (conv.weight.name, conv.bias.name)
        return [conv(xv), nchw, conv.weight], {}

    (nhwc, nchw, weight), _ = run(build, {"x": x})
    assert build.names == ("conv2d_0.w_0", "conv2d_0.b_0")
    assert weight.shape == (64, 3, 3, 3)
    assert abs(weight.std() - np.sqrt(2.0 / 27)) < 0.03 and abs(weight.mean()) < 0.03  # Normal(0, sqrt(2/fan_in))
    np.testing.assert_allclose(nhwc, nchw.transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-6)


def test_static_nn_conv2d_creates_its_filter_and_applies_act():
    x = RNG.normal(size=(1, 2, 4, 4)).astype("float32")
    w = RNG.normal(size=(3, 2, 1, 1)).astype("float32")

    def build():
        xv = paddle.static.data("x", [None, 2, 4, 4], "float32")
        out = paddle.static.nn.conv2d(xv, num_filters=3, filter_size=1, act="relu")
        return [out], {"conv2d_0.w_0": w}

    (out,), _ = run(build, {"x": x})
    np.testing.assert_allclose(out, np.maximum(np.einsum("ochw,nchw->nohw", w, x), 0), rtol=1e-5, atol=1e-6)


def test_conv2d_refuses_what_it_cannot_do_by_name():
    paddle.enable_static()
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = paddle.static.data("x", [None, 4, 7, 6], "float32")
        with pytest.raises(ValueError, match="padding_mode='reflect'"):
            paddle.nn.Conv2D(4, 6, 3, padding_mode="reflect")
        with pytest.raises(ValueError, match="groups 3 must divide in_channels 4"):
            paddle.nn.Conv2D(4, 6, 3, groups=3)
        with pytest.raises(ValueError, match="unknown padding 'full'"):
            paddle.nn.Conv2D(4, 6, 3, padding="full")
        with pytest.raises(GraphError, match="has 4 channels; Filter .* expects 3"):
            F.conv2d(x, paddle.static.create_parameter([6, 3, 3, 3], "float32"))
        with pytest.raises(GraphError, match="does not fit an input of 6"):
            F.conv2d(x, paddle.static.create_parameter([6, 4, 1, 9], "float32"))


# -- Variable indexing --------------------------------------------------------------------

INDEXES = [
    ("x[:, i, j, :]", lambda v: v[:, 1, 2, :]),
    ("x[:, 0]", lambda v: v[:, 0]),
    ("x[1:3]", lambda v: v[1:3]),
    ("x[-1]", lambda v: v[-1]),
    ("x[..., ::-2]", lambda v: v[..., ::-2]),
    ("x[None, :, -2]", lambda v: v[None, :, -2]),
    ("x[::2, 1:-1, None, -3:]", lambda v: v[::2, 1:-1, None, -3:]),
    ("x[:, :, :, 4:100]", lambda v: v[:, :, :, 4:100]),
]


@pytest.mark.parametrize("what,index", INDEXES, ids=[w for w, _ in INDEXES])
def test_variable_indexing_equals_numpys_forward_and_backward(what, index):
    x = RNG.normal(size=(4, 3, 4, 5)).astype("float32")
    want = index(x)
    r = RNG.normal(size=want.shape).astype("float32")

    def build():
        xv = paddle.static.data("x", [None, 3, 4, 5], "float32")
        xv.stop_gradient = False
        out = index(xv)
        assert [d for d in out.shape if d != -1] == [d for i, d in enumerate(want.shape)
                                                     if out.shape[i] != -1], (out.shape, want.shape)
        rv = paddle.static.data("r", list(want.shape), "float32")
        dx, = paddle.static.gradients([paddle.sum(out * rv)], [xv])
        return [out, dx], {}

    (out, dx), _ = run(build, {"x": x, "r": r})
    np.testing.assert_array_equal(out, want)
    want_dx = np.zeros(x.size, "float32")  # each selected element gets its r
    np.add.at(want_dx, index(np.arange(x.size).reshape(x.shape)).reshape(-1), r.reshape(-1))
    np.testing.assert_array_equal(dx, want_dx.reshape(x.shape))


def test_an_index_that_drops_every_axis_gives_shape_1_as_paddle_before_2_5():
    x = RNG.normal(size=(2, 3)).astype("float32")

    def build():
        xv = paddle.static.data("x", [2, 3], "float32")
        return [xv[1, -1]], {}

    (out,), _ = run(build, {"x": x})
    assert out.shape == (1,) and out[0] == x[1, -1]


def test_bad_indexes_are_named():
    paddle.enable_static()
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = paddle.static.data("x", [None, 3], "float32")
        with pytest.raises(IndexError, match="index 3 is out of range for axis 1 of x"):
            x[:, 3]
        with pytest.raises(IndexError, match="too many indices"):
            x[0, 0, 0]
        with pytest.raises(TypeError, match="selecting by a Variable, a list"):
            x[[0, 1]]
        with pytest.raises(TypeError, match="psjob indexes by a bool mask or a 1-D int Variable"):
            x[x]
        with pytest.raises(TypeError, match="selecting by a Variable"):
            x[x, 0]
        with pytest.raises(ValueError, match="step cannot be zero"):
            x[::0]
        with pytest.raises(TypeError, match="not iterable in a static graph"):
            list(x)
        y = x[7]  # the batch dimension is unknown until run time
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(ExecutionError, match="IndexError: strided_slice: index 7 is out of range for axis 0"):
        exe.run(y.block.program, feed={"x": np.zeros((2, 3), "float32")}, fetch_list=[y], scope=fluid.Scope())


def test_variable_bounds_masks_and_row_indexes_equal_paddle_300():
    """x[a:b] with Variable bounds (StartsTensorList / EndsTensorList), x[bool mask]
    (where_index + gather_nd), x[int rows] (gather), and the gradient through all of them:
    the values Paddle 3.0.0 (FLAGS_enable_pir_api=0) printed for this program."""
    def build():
        x = paddle.static.data("x", [6, 3], "float32")
        x.stop_gradient = False
        a, b = paddle.static.data("a", [1], "int64"), paddle.static.data("b", [1], "int64")
        m, i = paddle.static.data("m", [6], "bool"), paddle.static.data("i", [2], "int64")
        parts = [x[a:b], x[1:b, 1], x[m], x[i], x[a:]]
        loss = sum(paddle.sum(p) * float(k + 1) for k, p in enumerate(parts))
        return parts + paddle.static.gradients(loss, [x]), {}

    feed = {"x": np.arange(18, dtype="float32").reshape(6, 3), "a": np.array([1]), "b": np.array([4]),
            "m": np.array([True, False, True, False, False, True]), "i": np.array([5, 0])}
    s1, s2, s3, s4, s5, g = (np.asarray(v).tolist() for v in run(build, feed)[0])
    assert s1 == [[3, 4, 5], [6, 7, 8], [9, 10, 11]] and s2 == [4, 7, 10]
    assert s3 == [[0, 1, 2], [6, 7, 8], [15, 16, 17]] and s4 == [[15, 16, 17], [0, 1, 2]]
    assert s5 == [[3, 4, 5], [6, 7, 8], [9, 10, 11], [12, 13, 14], [15, 16, 17]]
    assert g == [[7, 7, 7], [6, 8, 6], [9, 11, 9], [6, 8, 6], [5, 5, 5], [12, 12, 12]]


# -- add_n --------------------------------------------------------------------------------

def test_add_n_sums_its_inputs_and_passes_the_gradient_to_each():
    a, b, c = (RNG.normal(size=(3, 4)).astype("float32") for _ in range(3))

    def build():
        vs = [paddle.static.data(n, [None, 4], "float32") for n in "abc"]
        for v in vs:
            v.stop_gradient = False
        total = paddle.add_n(vs)
        grads = paddle.static.gradients([paddle.sum(total * 2.0)], vs)
        return [total, paddle.add_n(vs[0])] + grads, {}

    (total, single, *grads), _ = run(build, {"a": a, "b": b, "c": c})
    np.testing.assert_allclose(total, a + b + c, rtol=1e-6)
    np.testing.assert_array_equal(single, a)
    for g in grads:
        np.testing.assert_array_equal(g, np.full((3, 4), 2.0, "float32"))
    paddle.enable_static()
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(ValueError, match=r"inputs\[1\] y is float32\[-1, 5\], inputs\[0\] x is float32\[-1, 4\]"):
            paddle.add_n([paddle.static.data("x", [None, 4]), paddle.static.data("y", [None, 5])])
        with pytest.raises(ValueError, match="inputs is empty"):
            paddle.add_n([])
