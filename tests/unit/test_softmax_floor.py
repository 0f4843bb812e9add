"""Paddle's CPU softmax kernels clamp the shifted logits x - max(x) at -64 (a class far below the
largest keeps probability ~1.6e-28, its log-probability -64, a cross entropy at most ~64 per
example, finite for a -inf logit): softmax, log_softmax and softmax_with_cross_entropy, with the
values Paddle 3.0.0 gives (legacy graph) for the same inputs."""
import numpy as np
import pytest

import psjob as paddle

paddle.enable_static()


def _run(build, feed):
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        fetch = build()
    return paddle.static.Executor(paddle.CPUPlace()).run(main, feed=feed, fetch_list=fetch)


def test_hard_labels_and_softmax_as_paddle():
    xv = np.array([[0, -100, 1], [0, -70, 1], [0, -60, 1], [-np.inf, 0, 1]], "float32")
    lv = np.array([[1], [1], [1], [2]], "int64")

    def build():
        x = paddle.static.data("x", [-1, 3], "float32")
        label = paddle.static.data("l", [-1, 1], "int64")
        return [paddle.nn.functional.softmax(x), paddle.nn.functional.softmax_with_cross_entropy(x, label),
                paddle.nn.functional.log_softmax(x)]

    sm, loss, log_sm = _run(build, {"x": xv, "l": lv})
    np.testing.assert_allclose(sm[:, 1], [1.1724798e-28, 1.1724798e-28, 2.3549884e-27, 2.6894143e-01], rtol=1e-5)
    np.testing.assert_allclose(loss.ravel(), [64.31326, 64.31326, 61.313263, 0.31326166], rtol=1e-6)
    np.testing.assert_allclose(log_sm[:2, 1], [-64.31326, -64.31326], rtol=1e-6)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # the +inf row: inf - inf
def test_soft_labels_as_paddle():
    xv = np.array([[1.0, np.inf, 2.0, 0.5], [-np.inf, 1, 2, 3], [1, 2, 3, 4]], "float32")
    lv = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1]], "float32")

    def build():
        x = paddle.static.data("x", [-1, 4], "float32")
        label = paddle.static.data("l", [-1, 4], "float32")
        return list(paddle.nn.functional.softmax_with_cross_entropy(x, label, soft_label=True, return_softmax=True))

    loss, sm = _run(build, {"x": xv, "l": lv})
    assert np.isnan(loss[0, 0]) and np.isnan(sm[0]).all()  # a +inf logit: NaN in Paddle too
    np.testing.assert_allclose(loss[1:, 0], [2.407606, 0.44018966], rtol=1e-6)
    np.testing.assert_allclose(sm[1, 0], 1.0669207e-28, rtol=1e-5)
