"""paddle.nn.Conv1D / functional.conv1d (NCL and NLC), paddle.max / Variable.min,
functional.max_pool1d (a window over all of L and strided windows, with equal maxima) and
functional.cosine_similarity: values and gradients equal Paddle 3.0.0's.

PADDLE holds what Paddle 3.0.0 printed for this same program (run under Paddle with
`import paddle`, fetching the same list): shape and values of each fetched variable."""
from __future__ import annotations

import numpy as np

import psjob as paddle

PADDLE = {
    'conv': ([2, 2, 4], [
        -1.51176476, -2.31764722, 1.37647057, -1.66470587, 2.6352942, -0.394117653, -1.57058835, 1.21176469,
        -0.347058862, 3.02352953, 0.147058785, -1.66470587, -1.70588243, -2.67647076, 1.96470594,
        1.21176469,
    ]),
    'conv_nlc': ([2, 4, 2], [
        -1.51176476, 2.6352942, -2.31764722, -0.394117653, 1.37647057, -1.57058835, -1.66470587, 1.21176469,
        -0.347058862, -1.70588243, 3.02352953, -2.67647076, 0.147058785, 1.96470594, -1.66470587,
        1.21176469,
    ]),
    'max': ([2, 3], [0.8999999761581421, 1.0, 1.0, 0.800000011920929, 0.6000000238418579, 1.0]),
    'min': ([2, 1, 1], [-1.0, -1.0]),
    'pool_all': ([2, 3, 1], [0.8999999761581421, 1.0, 1.0, 0.800000011920929, 0.6000000238418579, 1.0]),
    'pool_win': ([2, 3, 3], [
        0.899999976, 0.899999976, 0.5, 1, 0.400000006, 0.5, 1, -0.300000012, 0.5, 0.800000012, -0.100000001,
        0.5, 0.300000012, 0.600000024, 0.600000024, -0.400000006, 1, 1,
    ]),
    'cos': ([2], [0.4648047387599945, 0.5299989581108093]),
    'gx': ([2, 3, 7], [
        5.56440544, 8.45121193, 17.5508652, 0.375086784, -2.98339105, 1.44290638, 3.36539793, -1.9439702,
        19.3301048, 2.83667827, -1.67612433, 1.87958431, 0.986158848, 3.0456748, 21.6185665, 6.20899677,
        -0.477508605, 1.27266431, -3.25743961, 0.529411554, 2.72595143, 6.36994219, -6.83460236,
        -6.28027725, -6.26159239, 0.233910158, 5.40276814, 3.36539793, 4.19206715, -8.03875446, -1.03529453,
        -4.52595139, 14.3245678, 5.57370281, 3.0456748, -10.3956518, -4.24290657, -5.79031181, -2.79031181,
        17.415226, 6.74463654, 2.72595143,
    ]),
    'gy': ([2, 3], [
        -0.486938238, 3.72695065, 1.98521018, 18.6559639, 0, 0,
    ]),
}


def _program():
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data(name="x", shape=[2, 3, 7], dtype="float32")
        x.stop_gradient = False
        y = paddle.static.data(name="y", shape=[2, 3], dtype="float32")
        y.stop_gradient = False
        weight = np.linspace(-1, 1, 18).reshape(2, 3, 3).astype("float32")
        conv = paddle.nn.Conv1D(
            3, 2, 3, stride=2, padding=1,
            weight_attr=paddle.ParamAttr(name="cw", initializer=paddle.nn.initializer.Assign(weight)),
            bias_attr=paddle.ParamAttr(name="cb", initializer=paddle.nn.initializer.Assign(
                np.array([0.1, -0.2], "float32"))))
        c = conv(x)
        convnlc = paddle.nn.functional.conv1d(paddle.transpose(x, [0, 2, 1]), conv.weight, conv.bias, stride=2,
                                              padding=1, data_format="NLC")
        mx = paddle.max(x, axis=2)
        mn = x.min(axis=[1, 2], keepdim=True)
        p_all = paddle.nn.functional.max_pool1d(x, kernel_size=7)
        p_win = paddle.nn.functional.max_pool1d(x, kernel_size=3, stride=2)
        cs = paddle.nn.functional.cosine_similarity(y, paddle.slice(x, [2], [0], [1]).reshape([2, 3]), axis=1)
        loss = (paddle.sum(c * c) + paddle.sum(mx * 3.0) + paddle.sum(mn * 5.0) + paddle.sum(p_all * 7.0)
                + paddle.sum(p_win * p_win) + paddle.sum(cs * 11.0))
        gx, gy = paddle.static.gradients(loss, [x, y])
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    xv = np.round(np.sin(np.arange(42, dtype="float32")).reshape(2, 3, 7), 1).astype("float32")
    xv[:, :, 5:] = 0.5   # ties in the pooling windows and maxima
    yv = np.array([[0.5, -1.0, 2.0], [0.0, 0.3, -0.4]], "float32")
    return exe, main, {"x": xv, "y": yv}, [c, convnlc, mx, mn, p_all, p_win, cs, gx, gy]


def test_conv1d_max_pool1d_cosine_similarity_equal_paddle():
    exe, main, feed, fetch = _program()
    outs = exe.run(main, feed=feed, fetch_list=fetch)
    for name, got in zip(PADDLE, outs):
        shape, values = PADDLE[name]
        got = np.asarray(got)
        assert list(got.shape) == shape, name
        # the gradients sum a dozen float32 terms in another order
        np.testing.assert_allclose(got.reshape(-1), values, rtol=1e-5, atol=2e-6, err_msg=name)


def test_paddle_metric_accuracy():
    """paddle.metric.accuracy, as PaddleRec's textcnn calls it: top-1 hits / rows (by hand: 2 of 3)."""
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        scores = paddle.static.data(name="scores", shape=[None, 2], dtype="float32")
        label = paddle.static.data(name="label", shape=[None, 1], dtype="int64")
        acc = paddle.metric.accuracy(input=scores, label=label)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    got, = exe.run(main, feed={"scores": np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]], "float32"),
                               "label": np.array([[1], [1], [1]], "int64")}, fetch_list=[acc])
    np.testing.assert_allclose(np.asarray(got).reshape(-1), [2 / 3], rtol=1e-6)
