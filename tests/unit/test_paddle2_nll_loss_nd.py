"""paddle.nn.functional.nll_loss on N-D input ([N, C, d1, ..., dk], label [N, d1, ..., dk])
against Paddle 3.0: every reduction, class weights, ignore_index, and the gradients.

How the expected values were made: `run` below was run, unchanged but for `import paddle`, by
Paddle 3.0.0 in its legacy static graph (FLAGS_enable_pir_api=0, CPU); the fetched arrays,
rounded to 6 decimals, are pasted here. Paddle returns 0-D for the reductions where psjob
returns [1]. 'mean' with an ignore_index that is a class on 4-D input corrupted Paddle 3.0's
heap in that run (the process aborted), so that combination is checked against psjob's own
2-D loss on the flattened positions instead.
"""
import numpy as np
import pytest

import psjob as paddle

paddle.enable_static()

RNG = np.random.RandomState(6)
X3 = RNG.uniform(-3, 0, (2, 4, 3)).astype(np.float32)
X4 = RNG.uniform(-3, 0, (2, 4, 3, 2)).astype(np.float32)
X5 = RNG.uniform(-3, 0, (2, 4, 2, 2, 2)).astype(np.float32)
L3 = np.array([[0, 3, 1], [2, 2, 3]], np.int64)
L4 = np.array([[[0, 3], [1, 1], [2, 0]], [[3, 3], [1, 2], [0, 2]]], np.int64)
L5 = RNG.randint(0, 4, (2, 2, 2, 2)).astype(np.int64)
W = np.array([0.5, 1.0, 2.0, 1.5], np.float32)


def build(paddle):
    F = paddle.nn.functional
    x3 = paddle.static.data("x3", [2, 4, 3], "float32")
    x4 = paddle.static.data("x4", [2, 4, 3, 2], "float32")
    x5 = paddle.static.data("x5", [2, 4, 2, 2, 2], "float32")
    l3 = paddle.static.data("l3", [2, 3], "int64")
    l4 = paddle.static.data("l4", [2, 3, 2], "int64")
    l5 = paddle.static.data("l5", [2, 2, 2, 2], "int64")
    w = paddle.static.data("w", [4], "float32")
    xs = [x3, x4, x5]
    for v in xs:
        v.stop_gradient = False
    r = {}
    r["3d_mean"] = F.nll_loss(x3, l3)
    r["3d_none_weight"] = F.nll_loss(x3, l3, weight=w, reduction="none")
    r["4d_mean_weight"] = F.nll_loss(x4, l4, weight=w)
    r["4d_sum"] = F.nll_loss(x4, l4, reduction="sum")
    r["4d_none_ignore"] = F.nll_loss(x4, l4, ignore_index=1, reduction="none")
    r["5d_mean_weight"] = F.nll_loss(x5, l5, weight=w)
    r["5d_none"] = F.nll_loss(x5, l5, reduction="none")
    return xs, r


FEED = {"x3": X3, "x4": X4, "x5": X5, "l3": L3, "l4": L4, "l5": L5, "w": W}


def run(paddle):
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        xs, r = build(paddle)
        names = sorted(r)
        loss = paddle.add_n([paddle.sum(r[k]) * float(i + 1) for i, k in enumerate(names)])
        grads = paddle.static.gradients([loss], xs)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    outs = exe.run(main, feed=FEED, fetch_list=[r[k] for k in names] + grads)
    return {k: v for k, v in zip(names, outs)}, outs[len(names):]



# Paddle 3.0.0's (shape, value) for run(paddle), and the gradients of x3, x4, x5.
PADDLE300 = {'3d_mean': ([], 0.818756),
 '3d_none_weight': ([2, 3], [[0.16071, 2.528364, 1.214844], [0.742394, 1.057443, 1.18617]]),
 '4d_mean_weight': ([], 1.463228),
 '4d_none_ignore': ([2, 3, 2],
                    [[[0.872605, 0.03186], [0.0, 0.0], [0.760468, 2.349147]],
                     [[1.78753, 0.774349], [0.0, 2.457526], [2.431373, 1.571673]]]),
 '4d_sum': ([], 18.688438),
 '5d_mean_weight': ([], 1.955944),
 '5d_none': ([2, 2, 2, 2],
             [[[[1.1884, 2.422004], [0.123832, 1.896526]], [[2.38643, 0.953139], [2.890174, 2.053789]]],
              [[[0.184822, 2.661245], [2.461781, 2.095363]], [[1.543544, 2.095734], [2.880613, 1.349876]]]])}
PADDLE300_GRADS = [[[[-1.166667, 0.0, 0.0], [0.0, 0.0, -2.166667], [0.0, 0.0, 0.0], [0.0, -3.166667, 0.0]],
  [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [-4.166667, -4.166667, 0.0], [0.0, 0.0, -3.166667]]],
 [[[[-9.1, 0.0], [0.0, 0.0], [0.0, -9.1]], [[0.0, 0.0], [-5.2, -5.2], [0.0, 0.0]],
   [[0.0, 0.0], [0.0, 0.0], [-9.4, 0.0]], [[0.0, -9.3], [0.0, 0.0], [0.0, 0.0]]],
  [[[0.0, 0.0], [0.0, 0.0], [-9.1, 0.0]], [[0.0, 0.0], [-5.2, 0.0], [0.0, 0.0]],
   [[0.0, 0.0], [0.0, -9.4], [0.0, -9.4]], [[-9.3, -9.3], [0.0, 0.0], [0.0, 0.0]]]],
 [[[[[0.0, -7.12766], [0.0, 0.0]], [[0.0, -7.12766], [0.0, 0.0]]],
   [[[0.0, 0.0], [-7.255319, 0.0]], [[0.0, 0.0], [0.0, 0.0]]],
   [[[-7.510638, 0.0], [0.0, 0.0]], [[-7.510638, 0.0], [-7.510638, -7.510638]]],
   [[[0.0, 0.0], [0.0, -7.382979]], [[0.0, 0.0], [0.0, 0.0]]]],
  [[[[0.0, 0.0], [-7.12766, 0.0]], [[0.0, 0.0], [0.0, 0.0]]],
   [[[-7.255319, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, -7.255319]]],
   [[[0.0, -7.510638], [0.0, 0.0]], [[-7.510638, -7.510638], [-7.510638, 0.0]]],
   [[[0.0, 0.0], [0.0, -7.382979]], [[0.0, 0.0], [0.0, 0.0]]]]]]

RESULTS = {}


def results():
    if not RESULTS:
        RESULTS["out"], RESULTS["grads"] = run(paddle)
    return RESULTS


@pytest.mark.parametrize("key", sorted(PADDLE300))
def test_nd_nll_loss_matches_paddle(key):
    got = results()["out"][key]
    shape, want = PADDLE300[key]
    assert list(got.shape) == (shape or [1])
    np.testing.assert_allclose(got, np.reshape(want, got.shape), rtol=1e-5, atol=1e-6)


def test_nd_nll_loss_gradients_match_paddle():
    for got, want in zip(results()["grads"], PADDLE300_GRADS):
        np.testing.assert_allclose(got, np.array(want), rtol=1e-5, atol=1e-6)


def test_nd_mean_with_ignore_index_is_the_flattened_2d_loss():
    F = paddle.nn.functional
    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()):
        x4 = paddle.static.data("x4", [2, 4, 3, 2], "float32")
        l4 = paddle.static.data("l4", [2, 3, 2], "int64")
        w = paddle.static.data("w", [4], "float32")
        nd = F.nll_loss(x4, l4, weight=w, ignore_index=3)
        flat = F.nll_loss(paddle.reshape(paddle.transpose(x4, [0, 2, 3, 1]), [-1, 4]), paddle.reshape(l4, [-1]),
                          weight=w, ignore_index=3)
    got_nd, got_flat = paddle.static.Executor(paddle.CPUPlace()).run(
        main, feed={"x4": X4, "l4": L4, "w": W}, fetch_list=[nd, flat])
    keep = L4 != 3
    rows = np.moveaxis(X4, 1, -1)[keep]
    want = -(W[L4[keep]] * rows[np.arange(len(rows)), L4[keep]]).sum() / W[L4[keep]].sum()
    np.testing.assert_allclose(got_nd, got_flat, rtol=1e-6)
    np.testing.assert_allclose(got_nd.reshape(-1)[0], want, rtol=1e-5)


def test_mismatched_label_rank_is_refused():
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()):
        x = paddle.static.data("x", [2, 4, 3], "float32")
        label = paddle.static.data("l", [2], "int64")
        with pytest.raises(ValueError, match="must be .N, d1"):
            paddle.nn.functional.nll_loss(x, label)
