"""paddle.static.nn.data_norm / fluid.layers.data_norm (the data_norm op) against Paddle 3.0.0.

data_norm normalizes with three parameters of running statistics whose "gradients" are the
batch's statistics, which the optimizer applies: two SGD steps pin the forward values, the
gradient of x and of every statistic, and the statistics after each step, for the plain
layer, slot_dim (slots hidden by a zero show count), enable_scale_and_shift, both together,
and a slot that no row shows.

How the expected values were made: `run` below was run, unchanged but for `import paddle`, by
Paddle 3.0.0 in its legacy static graph (FLAGS_enable_pir_api=0, CPU), and its output (rounded
to 5 decimals) pasted into PADDLE300.
"""
import numpy as np
import pytest

import psjob as paddle

paddle.enable_static()

X = np.array([[1.5, 2.0, -3.0, 0.0, 4.0, 1.0],
              [0.0, 5.0, 7.0, 2.0, -1.0, 0.5],
              [2.0, -1.0, 0.0, 0.5, 3.0, 2.0],
              [0.5, 0.5, 1.0, 1.0, 0.0, 6.0]], np.float32)
CASES = {
    "plain": {},
    "named_act": {"name": "norm1", "act": "relu", "epsilon": 0.0005, "param_attr": {"batch_sum": 3000.0}},
    "slots": {"slot_dim": 2},
    "scale_shift": {"enable_scale_and_shift": True,
                    "param_attr": {"batch_size": 100.0, "batch_sum": 50.0, "batch_square": 200.0,
                                   "scale_w": 2.0, "bias": 0.5}},
    "slots_scale_shift": {"slot_dim": 3, "enable_scale_and_shift": True,
                          "param_attr": {"scale_w": 1.5, "bias": -0.25}},
    "unseen_slot": {"slot_dim": 2, "feed": X * np.array([1, 1, 1, 1, 0, 1], np.float32)},
}


def run(paddle, case):
    """Two SGD steps of sum(data_norm(x) * w); per step [y, x@GRAD, stat@GRAD..., stat...]."""
    kw = dict(CASES[case])
    feed = kw.pop("feed", X)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [None, 6], "float32")
        x.stop_gradient = False
        y = paddle.static.nn.data_norm(x, **kw)
        w = paddle.static.create_parameter(
            [6], "float32", default_initializer=paddle.nn.initializer.Assign(np.linspace(-1, 2, 6).astype("float32")))
        loss = paddle.sum(y * w)
        paddle.optimizer.SGD(0.1).minimize(loss)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    prefix = kw.get("name", "dn") + "."
    stats = sorted(p.name for p in main.all_parameters() if p.name.startswith(prefix))
    steps = []
    for _ in range(2):
        outs = exe.run(main, feed={"x": feed}, fetch_list=[y, "x@GRAD"] + [s + "@GRAD" for s in stats] + stats)
        steps.append([np.asarray(o, np.float64).round(5).tolist() for o in outs])
    return stats, steps


# Paddle 3.0.0's run(paddle, case) for each case.
PADDLE300 = {'named_act': (['norm1.batch_size', 'norm1.batch_square_sum', 'norm1.batch_sum'],
               [[[[1.2, 1.7, 0.0, 0.0, 3.7, 0.7], [0.0, 4.7, 6.7, 1.7, 0.0, 0.2],
                  [1.7, 0.0, 0.0, 0.2, 2.7, 1.7], [0.2, 0.2, 0.7, 0.7, 0.0, 5.7]],
                 [[-1.0, -0.4, 0.0, 0.0, 1.4, 2.0], [-0.0, -0.4, 0.2, 0.8, 0.0, 2.0],
                  [-1.0, -0.0, 0.0, 0.8, 1.4, 2.0], [-1.0, -0.4, 0.2, 0.8, 0.0, 2.0]],
                 [4.0, 4.0, 4.0, 4.0, 4.0, 4.0], [4.462, 26.712, 56.362, 3.512, 22.762, 35.91199],
                 [4.0, 6.5, 5.0, 3.5, 6.0, 9.5],
                 [9999.59961, 9999.59961, 9999.59961, 9999.59961, 9999.59961, 9999.59961],
                 [9999.55371, 9997.3291, 9994.36426, 9999.64844, 9997.72363, 9996.40918],
                 [2999.6001, 2999.3501, 2999.5, 2999.6499, 2999.3999, 2999.05005]],
                [[[1.20003, 1.70025, 0.0, 0.0, 3.7004, 0.70019],
                  [0.0, 4.70059, 6.70179, 1.70002, 0.0, 0.20011],
                  [1.70003, 0.0, 0.0, 0.20002, 2.7003, 1.70035],
                  [0.20003, 0.20008, 0.70022, 0.70002, 0.0, 5.70099]],
                 [[-1.31, -1.06012, -0.0, 0.0, 0.76007, 1.17019],
                  [-0.0, -1.06012, -0.54014, 0.54, 0.0, 1.17019], [-1.31, -0.0, -0.0, 0.54, 0.76007, 1.17019],
                  [-1.31, -1.06012, -0.54014, 0.54, 0.0, 1.17019]],
                 [4.0, 4.0, 4.0, 4.0, 4.0, 4.0], [4.46216, 26.71257, 56.36229, 3.51211, 22.76246, 35.91338],
                 [4.0, 6.5, 5.0, 3.5, 6.0, 9.5],
                 [9999.19922, 9999.19922, 9999.19922, 9999.19922, 9999.19922, 9999.19922],
                 [9999.10742, 9994.6582, 9988.72852, 9999.29688, 9995.44727, 9992.81738],
                 [2999.2002, 2998.7002, 2999.0, 2999.2998, 2998.7998, 2998.1001]]]),
 'plain': (['dn.batch_size', 'dn.batch_square_sum', 'dn.batch_sum'],
           [[[[1.5, 2.0, -3.0, 0.0, 4.0, 1.0], [0.0, 5.0, 7.0, 2.0, -1.0, 0.5],
              [2.0, -1.0, 0.0, 0.5, 3.0, 2.0], [0.5, 0.5, 1.0, 1.0, 0.0, 6.0]],
             [[-1.0, -0.4, 0.2, 0.8, 1.4, 2.0], [-1.0, -0.4, 0.2, 0.8, 1.4, 2.0],
              [-1.0, -0.4, 0.2, 0.8, 1.4, 2.0], [-1.0, -0.4, 0.2, 0.8, 1.4, 2.0]],
             [4.0, 4.0, 4.0, 4.0, 4.0, 4.0], [6.50004, 30.25004, 59.00004, 5.25004, 26.00004, 41.25004],
             [4.0, 6.5, 5.0, 3.5, 6.0, 9.5],
             [9999.59961, 9999.59961, 9999.59961, 9999.59961, 9999.59961, 9999.59961],
             [9999.34961, 9996.97461, 9994.09961, 9999.47461, 9997.40039, 9995.875],
             [-0.4, -0.65, -0.5, -0.35, -0.6, -0.95]],
            [[[1.50006, 2.00033, -3.00078, 4e-05, 4.0005, 1.00028],
              [4e-05, 5.00072, 7.00198, 2.00005, -1.00005, 0.50019],
              [2.00007, -1.00007, 5e-05, 0.50004, 3.00039, 2.00047],
              [0.50005, 0.50013, 1.00033, 1.00004, 6e-05, 6.00121]],
             [[-1.40002, -1.05014, -0.30008, 0.45, 0.80009, 1.0502],
              [-1.40002, -1.05014, -0.30008, 0.45, 0.80009, 1.0502],
              [-1.40002, -1.05014, -0.30008, 0.45, 0.80009, 1.0502],
              [-1.40002, -1.05014, -0.30008, 0.45, 0.80009, 1.0502]],
             [4.0, 4.0, 4.0, 4.0, 4.0, 4.0], [6.50036, 30.25088, 59.00054, 5.25029, 26.00076, 41.25184],
             [4.0, 6.5, 5.0, 3.5, 6.0, 9.5],
             [9999.19922, 9999.19922, 9999.19922, 9999.19922, 9999.19922, 9999.19922],
             [9998.69922, 9993.94922, 9988.19922, 9998.94922, 9994.80078, 9991.75],
             [-0.8, -1.3, -1.0, -0.7, -1.2, -1.9]]]),
 'scale_shift': (['dn.batch_size', 'dn.batch_square_sum', 'dn.batch_sum', 'dn.bias', 'dn.scale_w'],
                 [[[[1.91421, 2.62132, -4.44975, -0.20711, 5.44975, 1.20711],
                    [-0.20711, 6.86396, 9.69239, 2.62132, -1.62132, 0.5],
                    [2.62132, -1.62132, -0.20711, 0.5, 4.03553, 2.62132],
                    [0.5, 0.5, 1.20711, 1.20711, -0.20711, 8.27817]],
                   [[-1.41421, -0.56569, 0.28284, 1.13137, 1.9799, 2.82843],
                    [-1.41421, -0.56569, 0.28284, 1.13137, 1.9799, 2.82843],
                    [-1.41421, -0.56569, 0.28284, 1.13137, 1.9799, 2.82843],
                    [-1.41421, -0.56569, 0.28284, 1.13137, 1.9799, 2.82843]],
                   [4.0, 4.0, 4.0, 4.0, 4.0, 4.0], [3.50004, 24.75004, 55.00004, 2.75004, 21.00004, 32.75004],
                   [4.0, 6.5, 5.0, 3.5, 6.0, 9.5], [-4.0, -1.6, 0.8, 3.2, 5.6, 8.0],
                   [-1.41421, -1.27279, 0.42426, 0.84853, 3.9598, 10.6066],
                   [99.6, 99.6, 99.6, 99.6, 99.6, 99.6],
                   [199.64999, 197.52499, 194.5, 199.72499, 197.89999, 196.72499],
                   [49.6, 49.35, 49.5, 49.65, 49.4, 49.05], [0.9, 0.66, 0.42, 0.18, -0.06, -0.3],
                   [2.14142, 2.12728, 1.95757, 1.91515, 1.60402, 0.93934]],
                  [[[2.41554, 2.93269, -4.47871, -0.49418, 3.92733, 0.03922],
                    [0.14678, 7.46443, 9.52967, 2.21069, -1.76233, -0.29497],
                    [3.1718, -1.59904, -0.2762, 0.18204, 2.7894, 0.7076],
                    [0.90304, 0.66682, 1.12464, 0.85825, -0.6244, 3.38112]],
                   [[-2.24281, -1.86767, -0.59433, 0.52457, 0.72181, 0.49416],
                    [-2.24281, -1.86767, -0.59433, 0.52457, 0.72181, 0.49416],
                    [-2.24281, -1.86767, -0.59433, 0.52457, 0.72181, 0.49416],
                    [-2.24281, -1.86767, -0.59433, 0.52457, 0.72181, 0.49416]],
                   [4.0, 4.0, 4.0, 4.0, 4.0, 4.0], [3.50809, 24.79078, 55.01815, 2.75457, 21.03223, 32.86322],
                   [4.0, 6.5, 5.0, 3.5, 6.0, 9.5], [-5.93137, -4.94558, -1.69706, 1.55147, 2.53726, 2.95736],
                   [-2.1031, -3.9667, -0.91447, 0.41251, 1.80722, 3.96137],
                   [99.2, 99.2, 99.2, 99.2, 99.2, 99.2],
                   [199.29918, 195.04591, 188.99818, 199.44954, 195.79677, 193.43867],
                   [49.2, 48.7, 49.0, 49.3, 48.8, 48.1],
                   [1.49314, 1.15456, 0.58971, 0.02485, -0.31373, -0.59574],
                   [2.35173, 2.52395, 2.04902, 1.8739, 1.4233, 0.5432]]]),
 'slots': (['dn.batch_size', 'dn.batch_square_sum', 'dn.batch_sum'],
           [[[[1.5, 2.0, -3.0, 0.0, 4.0, 1.0], [0.0, 0.0, 7.0, 2.0, -1.0, 0.5],
              [2.0, -1.0, 0.0, 0.0, 3.0, 2.0], [0.5, 0.5, 1.0, 1.0, 0.0, 0.0]],
             [[-1.0, -0.4, 0.2, 0.8, 1.4, 2.0], [-1.0, -0.4, 0.2, 0.8, 1.4, 2.0],
              [-1.0, -0.4, 0.2, 0.8, 1.4, 2.0], [-1.0, -0.4, 0.2, 0.8, 1.4, 2.0]],
             [1.0, 1.0, 1.0, 1.0, 1.0, 1.0], [2.1667, 1.75003, 19.6667, 1.6667, 8.6667, 1.75003],
             [1.33333, 0.5, 1.66667, 1.0, 2.0, 1.16667],
             [9999.90039, 9999.90039, 9999.90039, 9999.90039, 9999.90039, 9999.90039],
             [9999.7832, 9999.8252, 9998.0332, 9999.83301, 9999.13379, 9999.8252],
             [-0.13333, -0.05, -0.16667, -0.1, -0.2, -0.11667]],
            [[[1.50002, 2.00001, -3.00026, 1e-05, 4.00017, 1.00002],
              [0.0, 0.0, 7.00067, 2.00002, -1.00002, 0.50001], [2.00003, -1.0, 0.0, 0.0, 3.00013, 2.00002],
              [0.50002, 0.50001, 1.00011, 1.00001, 0.0, 0.0]],
             [[-1.40001, -0.55, -0.30003, 0.5, 0.80003, 1.65001],
              [-1.40001, -0.55, -0.30003, 0.5, 0.80003, 1.65001],
              [-1.40001, -0.55, -0.30003, 0.5, 0.80003, 1.65001],
              [-1.40001, -0.55, -0.30003, 0.5, 0.80003, 1.65001]],
             [1.0, 1.0, 1.0, 1.0, 1.0, 1.0], [2.16673, 1.75004, 19.66675, 1.66672, 8.66678, 1.75006],
             [1.33333, 0.5, 1.66667, 1.0, 2.0, 1.16667],
             [9999.80078, 9999.80078, 9999.80078, 9999.80078, 9999.80078, 9999.80078],
             [9999.56641, 9999.65039, 9996.06641, 9999.66602, 9998.26758, 9999.65039],
             [-0.26667, -0.1, -0.33333, -0.2, -0.4, -0.23333]]]),
 'slots_scale_shift': (['dn.batch_size', 'dn.batch_square_sum', 'dn.batch_sum', 'dn.bias', 'dn.scale_w'],
                       [[[[2.0, 2.75, -4.75, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 2.75, -1.75, 0.5],
                          [2.75, -1.75, -0.25, 0.5, 4.25, 2.75], [0.5, 0.5, 1.25, 1.25, -0.25, 8.75]],
                         [[-1.5, -0.6, 0.3, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.2, 2.1, 3.0],
                          [-1.5, -0.6, 0.3, 1.2, 2.1, 3.0], [-1.5, -0.6, 0.3, 1.2, 2.1, 3.0]],
                         [1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
                         [2.1667, 1.75003, 3.33336, 1.75003, 3.33336, 13.4167],
                         [1.33333, 0.5, -0.66667, 1.16667, 0.66667, 2.83333],
                         [-3.0, -1.2, 0.6, 2.4, 4.2, 6.0], [-4.0, -0.6, -0.4, 2.8, 2.8, 17.0],
                         [9999.90039, 9999.90039, 9999.90039, 9999.90039, 9999.90039, 9999.90039],
                         [9999.7832, 9999.8252, 9999.66699, 9999.8252, 9999.66699, 9998.6582],
                         [-0.13333, -0.05, 0.06667, -0.11667, -0.06667, -0.28333],
                         [0.05, -0.13, -0.31, -0.49, -0.67, -0.85], [1.9, 1.56, 1.54, 1.22, 1.22, -0.2]],
                        [[[2.90004, 2.99002, -4.93006, 0.0, 0.0, 0.0],
                          [0.0, 0.0, 0.0, 1.95002, -1.89001, -0.95001],
                          [3.85005, -1.69, -0.31001, 0.12002, 2.99005, -1.25003],
                          [1.00003, 0.65001, 1.23001, 0.73002, -0.66999, -2.05008]],
                         [[-2.89752, -0.858, 0.88551, 0.0, 0.0, 0.0],
                          [0.0, 0.0, 0.0, 0.427, 1.43352, -0.16001],
                          [-2.89752, -0.858, 0.88551, 0.427, 1.43352, -0.16001],
                          [-2.89752, -0.858, 0.88551, 0.427, 1.43352, -0.16001]],
                         [1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
                         [2.16673, 1.75004, 3.33337, 1.75006, 3.33337, 13.41686],
                         [1.33333, 0.5, -0.66667, 1.16667, 0.66667, 2.83333],
                         [-4.575, -1.65, 1.725, 1.05, 3.525, 2.4],
                         [-6.1001, -0.82501, -1.15002, 1.22502, 2.35005, 6.80049],
                         [9999.80078, 9999.80078, 9999.80078, 9999.80078, 9999.80078, 9999.80078],
                         [9999.56641, 9999.65039, 9999.33398, 9999.65039, 9999.33398, 9997.31641],
                         [-0.26667, -0.1, 0.13333, -0.23333, -0.13333, -0.56667],
                         [0.5075, 0.035, -0.4825, -0.595, -1.0225, -1.09],
                         [2.51001, 1.6425, 1.655, 1.0975, 0.98499, -0.88005]]]),
 'unseen_slot': (['dn.batch_size', 'dn.batch_square_sum', 'dn.batch_sum'],
                 [[[[1.5, 2.0, -3.0, 0.0, 0.0, 0.0], [0.0, 0.0, 7.0, 2.0, 0.0, 0.0],
                    [2.0, -1.0, 0.0, 0.0, 0.0, 0.0], [0.5, 0.5, 1.0, 1.0, 0.0, 0.0]],
                   [[-1.0, -0.4, 0.2, 0.8, 1.4, 2.0], [-1.0, -0.4, 0.2, 0.8, 1.4, 2.0],
                    [-1.0, -0.4, 0.2, 0.8, 1.4, 2.0], [-1.0, -0.4, 0.2, 0.8, 1.4, 2.0]],
                   [1.0, 1.0, 1.0, 1.0, 0.0, 0.0], [2.1667, 1.75003, 19.6667, 1.6667, 0.0, 0.0],
                   [1.33333, 0.5, 1.66667, 1.0, 0.0, 0.0],
                   [9999.90039, 9999.90039, 9999.90039, 9999.90039, 10000.0, 10000.0],
                   [9999.7832, 9999.8252, 9998.0332, 9999.83301, 10000.0, 10000.0],
                   [-0.13333, -0.05, -0.16667, -0.1, 0.0, 0.0]],
                  [[[1.50002, 2.00001, -3.00026, 1e-05, 0.0, 0.0], [0.0, 0.0, 7.00067, 2.00002, 0.0, 0.0],
                    [2.00003, -1.0, 0.0, 0.0, 0.0, 0.0], [0.50002, 0.50001, 1.00011, 1.00001, 0.0, 0.0]],
                   [[-1.40001, -0.55, -0.30003, 0.5, 1.4, 2.0], [-1.40001, -0.55, -0.30003, 0.5, 1.4, 2.0],
                    [-1.40001, -0.55, -0.30003, 0.5, 1.4, 2.0], [-1.40001, -0.55, -0.30003, 0.5, 1.4, 2.0]],
                   [1.0, 1.0, 1.0, 1.0, 0.0, 0.0], [2.16673, 1.75004, 19.66675, 1.66672, 0.0, 0.0],
                   [1.33333, 0.5, 1.66667, 1.0, 0.0, 0.0],
                   [9999.80078, 9999.80078, 9999.80078, 9999.80078, 10000.0, 10000.0],
                   [9999.56641, 9999.65039, 9996.06641, 9999.66602, 10000.0, 10000.0],
                   [-0.26667, -0.1, -0.33333, -0.2, 0.0, 0.0]]])}


@pytest.mark.parametrize("case", sorted(CASES))
def test_data_norm_matches_paddle(case):
    stats, steps = run(paddle, case)
    want_stats, want_steps = PADDLE300[case]
    assert stats == want_stats
    for got, want in zip(steps, want_steps):
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-5)


def _finite_difference_case():
    """x@GRAD of an arbitrary loss, against central differences of the forward pass."""
    rng = np.random.RandomState(3)
    xv = rng.uniform(-1, 1, (3, 4)).astype(np.float64)
    xv[1, 0] = 0.0  # hides slot 0 of row 1
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [3, 4], "float64")
        x.stop_gradient = False
        y = paddle.static.nn.data_norm(x, slot_dim=2, enable_scale_and_shift=True,
                                       param_attr={"batch_size": 3.0, "batch_sum": 1.0, "batch_square": 5.0,
                                                   "scale_w": 0.7, "bias": 0.2})
        loss = paddle.sum(y * y + y)
        gx = paddle.static.gradients([loss], [x])[0]
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    return exe, main, xv, loss, gx


def test_data_norm_x_gradient_is_the_derivative_where_slots_stay_shown():
    exe, main, xv, loss, gx = _finite_difference_case()
    (g,) = exe.run(main, feed={"x": xv}, fetch_list=[gx])
    h = 1e-6
    for i in range(xv.shape[0]):
        for j in range(xv.shape[1]):
            if j % 2 == 0:  # moving a show count can hide its slot: not differentiable there
                continue
            up, down = xv.copy(), xv.copy()
            up[i, j] += h
            down[i, j] -= h
            (lu,) = exe.run(main, feed={"x": up}, fetch_list=[loss])
            (ld,) = exe.run(main, feed={"x": down}, fetch_list=[loss])
            np.testing.assert_allclose(g[i, j], (float(np.sum(lu)) - float(np.sum(ld))) / (2 * h), atol=1e-6)


def test_fluid_layers_data_norm_is_the_same_layer():
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.fluid.data("x", [-1, 3], "float32")
        y = paddle.fluid.layers.data_norm(x, name="ctr_dn")
    assert [op.type for op in main.global_block().ops] == ["data_norm"]
    assert sorted(p.name for p in main.all_parameters()) == [
        "ctr_dn.batch_size", "ctr_dn.batch_square_sum", "ctr_dn.batch_sum"]
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    (out,) = exe.run(main, feed={"x": xv}, fetch_list=[y])
    np.testing.assert_allclose(out, xv)  # statistics start at n = q = 1e4, s = 0: the identity


@pytest.mark.parametrize("kwargs, shape, message", [
    ({}, [-1, 2, 3], "must be 2-D"),
    ({"epsilon": 0.01}, [-1, 3], "epsilon must lie in"),
    ({"slot_dim": 2}, [-1, 3], "slot_dim 2"),
    ({"data_layout": "NCWH"}, [-1, 3], "data_layout"),
    ({"param_attr": paddle.ParamAttr(name="p")}, [-1, 3], "param_attr must be a dict"),
])
def test_data_norm_refuses_bad_arguments(kwargs, shape, message):
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", shape, "float32")
        with pytest.raises((ValueError, TypeError), match=message):
            paddle.static.nn.data_norm(x, **kwargs)


def test_data_norm_refuses_a_feed_of_the_wrong_width():
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [-1, -1], "float32")
        with pytest.raises(ValueError, match="column count"):
            paddle.static.nn.data_norm(x)


def test_data_norm_trains_the_same_through_the_transpiler_and_two_pservers():
    """A sync transpiled job (two in-memory pservers: psjob.cluster.inmemory) moves data_norm's
    statistics and its scale and shift exactly as the single-process program does: its
    statistic "gradients" travel and are applied like any dense gradient."""
    import psjob.fluid as fluid
    from psjob.cluster.inmemory import InMemoryCluster
    from psjob.cluster.pserver.pserver_state import PserverOptions
    from psjob.fluid.transpiler import DistributeTranspiler
    from psjob.fluid.transpiler import deserialize_dist_program as load
    from psjob.fluid.transpiler import serialize_dist_program as dump

    eps = ["127.0.0.1:6170", "127.0.0.1:6171"]
    xv = np.random.RandomState(0).uniform(-1, 2, (6, 4)).astype(np.float32)
    xv[1, 0] = xv[4, 2] = 0.0  # two hidden slots
    yv = (xv.sum(1, keepdims=True) > 2).astype(np.float32)
    names = ["dn.batch_size", "dn.batch_sum", "dn.batch_square_sum", "dn.scale_w", "dn.bias"]

    def build():
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup):
            x, y = fluid.data("x", [-1, 4], "float32"), fluid.data("y", [-1, 1], "float32")
            h = fluid.layers.data_norm(x, slot_dim=2, enable_scale_and_shift=True)
            p = fluid.layers.fc(h, 1, act="sigmoid", param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.3)))
            loss = fluid.layers.mean(fluid.layers.square(p - y))
            fluid.optimizer.SGD(0.1).minimize(loss)
        return main, startup

    main, startup = build()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    for _ in range(4):
        exe.run(main, feed={"x": xv, "y": yv}, scope=scope)
    local = [np.asarray(scope.vars[n]).copy() for n in names]

    main, startup = build()
    tr = DistributeTranspiler()
    tr.transpile(0, program=main, startup_program=startup, pservers=",".join(eps), trainers=1, sync_mode=True)
    trainer, trainer_startup = load(dump(tr.get_trainer_program(wait_port=False))), load(dump(startup))
    cluster = InMemoryCluster({ep: tuple(load(dump(p)) for p in tr.get_pserver_programs(ep)) for ep in eps},
                              options=PserverOptions(30.0))

    def body(t, exe):
        sc = fluid.Scope()
        exe.run(trainer_startup, scope=sc)
        for _ in range(4):
            exe.run(trainer, feed={"x": xv, "y": yv}, scope=sc)
        return [np.asarray(sc.vars[n]).copy() for n in names]

    for name, want, got in zip(names, local, cluster.run_trainers(body, 1)[0]):
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=name)
    assert local[0][0] == pytest.approx(1e4 - 0.1 * 4 * 1, rel=1e-6)  # every slot shown each step
