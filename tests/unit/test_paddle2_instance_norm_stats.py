"""paddle.nn.functional.instance_norm's running-statistics arguments, against Paddle 3.0: its
static instance_norm op has no running statistics, so running_mean / running_var /
use_input_stats / momentum change nothing, and weight and bias apply only together.

How the expected values were made: `run` below was run, unchanged but for `import paddle`, by
Paddle 3.0.0 in its legacy static graph (FLAGS_enable_pir_api=0, CPU); the outputs (6
decimals) and the gradient of x (5 decimals) are pasted here.
"""
import numpy as np
import pytest

import psjob as paddle

paddle.enable_static()

RNG = np.random.RandomState(12)
X = RNG.uniform(-2, 2, (2, 3, 2, 3)).astype(np.float32)
WV = np.array([0.5, 2.0, -1.0], np.float32)
BV = np.array([0.1, -0.3, 0.7], np.float32)


def build(paddle):
    F = paddle.nn.functional
    x = paddle.static.data("x", [2, 3, 2, 3], "float32")
    w = paddle.static.data("w", [3], "float32")
    b = paddle.static.data("b", [3], "float32")
    rm = paddle.static.data("rm", [3], "float32")
    rv = paddle.static.data("rv", [3], "float32")
    x.stop_gradient = False
    r = {}
    r["running_given"] = F.instance_norm(x, running_mean=rm, running_var=rv, weight=w, bias=b)
    r["use_input_stats_false"] = F.instance_norm(x, running_mean=rm, running_var=rv, use_input_stats=False,
                                                 momentum=0.5, eps=1e-3)
    r["weight_without_bias"] = F.instance_norm(x, weight=w)
    return x, r


def run(paddle):
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x, r = build(paddle)
        names = sorted(r)
        loss = paddle.add_n([paddle.sum(r[k] * r[k] * paddle.arange(3, dtype="float32").reshape([1, 3, 1, 1])
                                        * float(i + 1)) for i, k in enumerate(names)])
        g = paddle.static.gradients([loss], [x])[0]
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    feed = {"x": X, "w": WV, "b": BV, "rm": np.full(3, 5.0, np.float32), "rv": np.full(3, 9.0, np.float32)}
    outs = exe.run(main, feed=feed, fetch_list=[r[k] for k in names] + [g])
    return dict(zip(names, outs)), outs[-1]



# Paddle 3.0.0's values for run(paddle), and the gradient of x.
PADDLE300 = {'running_given': [[[[-0.339935, 0.569986, -0.170414], [0.249573, -0.556724, 0.847515]],
                    [[2.004953, -2.819675, 2.317778], [-2.242318, -1.426697, 0.36596]],
                    [[-0.568461, -0.266702, 2.538414], [0.826712, 0.725086, 0.944951]]],
                   [[[0.8032, -0.166425, 0.797495], [-0.389759, -0.207141, -0.23737]],
                    [[-2.634874, 0.902029, -1.056646], [2.317707, -2.833564, 1.505347]],
                    [[0.508773, 1.953092, 1.925834], [-0.551923, 0.809304, -0.44508]]]],
 'use_input_stats_false': [[[[-0.879607, 0.939692, -0.540667], [0.299056, -1.313056, 1.494584]],
                            [[1.152201, -1.259536, 1.308576], [-0.970927, -0.563214, 0.3329]],
                            [[1.268034, 0.966377, -1.837795], [-0.126669, -0.025078, -0.244869]]],
                           [[[1.405957, -0.532681, 1.394551], [-0.979209, -0.614088, -0.674528]],
                            [[-1.166574, 0.60057, -0.378043], [1.307886, -1.265845, 0.902006]],
                            [[0.19114, -1.252517, -1.225272], [1.251349, -0.109254, 1.144555]]]],
 'weight_without_bias': [[[[-0.87987, 0.939972, -0.540829], [0.299145, -1.313448, 1.49503]],
                          [[1.152477, -1.259838, 1.308889], [-0.971159, -0.563349, 0.33298]],
                          [[1.268461, 0.966702, -1.838414], [-0.126712, -0.025086, -0.244951]]],
                         [[[1.4064, -0.532849, 1.39499], [-0.979518, -0.614282, -0.674741]],
                          [[-1.167437, 0.601015, -0.378323], [1.308854, -1.266782, 0.902674]],
                          [[0.191227, -1.253092, -1.225834], [1.251923, -0.109304, 1.14508]]]]}
PADDLE300_GRAD = [[[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]], [[0.0016, -0.00175, 0.00182], [-0.00135, -0.00078, 0.00046]],
  [[0.0058, 0.00442, -0.00841], [-0.00058, -0.00011, -0.00112]]],
 [[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]], [[-0.00881, 0.00454, -0.00286], [0.00988, -0.00956, 0.00681]],
  [[0.00139, -0.00911, -0.00891], [0.0091, -0.00079, 0.00832]]]]


@pytest.fixture(scope="module")
def results():
    return run(paddle)


@pytest.mark.parametrize("key", sorted(PADDLE300))
def test_instance_norm_ignores_running_statistics_as_paddle(results, key):
    np.testing.assert_allclose(results[0][key], np.array(PADDLE300[key]), rtol=1e-5, atol=2e-6)


def test_instance_norm_gradient_matches_paddle(results):
    np.testing.assert_allclose(results[1], np.array(PADDLE300_GRAD), rtol=1e-4, atol=2e-5)
