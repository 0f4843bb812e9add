"""fluid.layers.dynamic_lstm (the `lstm` op) against Paddle 1.8.5 on ragged LoD input: hidden,
cell and the gradients of the input, weight, bias and initial states.

How the expected values were made: `run` below was run, unchanged but for `import
paddle.fluid as fluid`, by Paddle 1.8.5 (CPU) for each of CASES; the loss weights hidden by RH
and cell by RC, and the fetched arrays are pasted here, rounded to 6 decimals. Paddle's
gradient flows from hidden only (its kernel zeroes the cell's output gradient): the pinned
gradients include that. The op's gradient is also checked against finite differences in
test_op_gradients.py.
"""
import numpy as np
import pytest

import psjob.fluid as fluid

D = 3
RNG = np.random.RandomState(11)
LENS = [3, 1, 4]
X = RNG.uniform(-1, 1, (sum(LENS), 4 * D)).astype(np.float32)
WV = RNG.uniform(-0.6, 0.6, (D, 4 * D)).astype(np.float32)
BV = RNG.uniform(-0.4, 0.4, (1, 7 * D)).astype(np.float32)
H0 = RNG.uniform(-0.5, 0.5, (len(LENS), D)).astype(np.float32)
C0 = RNG.uniform(-0.5, 0.5, (len(LENS), D)).astype(np.float32)
RH = RNG.uniform(-1, 1, (sum(LENS), D)).astype(np.float32)
RC = RNG.uniform(-1, 1, (sum(LENS), D)).astype(np.float32)
CASES = {
    "peep": dict(use_peepholes=True, is_reverse=False, states=True),
    "peep_reverse_acts": dict(use_peepholes=True, is_reverse=True, states=False,
                              cell_activation="relu", candidate_activation="identity"),
    "no_peep": dict(use_peepholes=False, is_reverse=False, states=True),
}


def build(fluid, use_peepholes, is_reverse, states, **acts):
    x = fluid.data("x", [None, 4 * D], "float32", lod_level=1)
    h0 = fluid.data("h0", [None, D], "float32")
    c0 = fluid.data("c0", [None, D], "float32")
    rh = fluid.data("rh", [None, D], "float32")
    rc = fluid.data("rc", [None, D], "float32")
    for v in (x, h0, c0):
        v.stop_gradient = False
    init = fluid.initializer.NumpyArrayInitializer
    bias = BV if use_peepholes else BV[:, :4 * D]
    hidden, cell = fluid.layers.dynamic_lstm(
        x, 4 * D, h_0=h0 if states else None, c_0=c0 if states else None, use_peepholes=use_peepholes,
        is_reverse=is_reverse, param_attr=fluid.ParamAttr(name="w", initializer=init(WV)),
        bias_attr=fluid.ParamAttr(name="b", initializer=init(np.ascontiguousarray(bias))), **acts)
    loss = fluid.layers.reduce_sum(hidden * rh) + fluid.layers.reduce_sum(cell * rc)
    block = fluid.default_main_program().global_block()
    wrt = [x, block.var("w"), block.var("b")] + ([h0, c0] if states else [])
    return [hidden, cell] + fluid.gradients([loss], wrt)


def run(fluid, case):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        fetch = build(fluid, **CASES[case])
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    x = fluid.create_lod_tensor(X, [LENS], fluid.CPUPlace())
    with fluid.scope_guard(scope):
        exe.run(startup)
        outs = exe.run(main, feed={"x": x, "h0": H0, "c0": C0, "rh": RH, "rc": RC}, fetch_list=fetch,
                       return_numpy=False)
        return [np.array(v) for v in outs]


NAMES = ["hidden", "cell", "dx", "dw", "db", "dh0", "dc0"]


# Paddle 1.8.5's values for run(fluid, case).
PADDLE185 = {
    'peep': {
        'hidden': [
            [-0.13576, -0.323916, -0.057443],
            [0.212721, -0.037309, -0.103634],
            [-0.119517, -0.154798, 0.070936],
            [0.233547, -0.070686, -0.113006],
            [0.145349, 0.076901, 0.05941],
            [0.230701, 0.256848, 0.101473],
            [0.245948, 0.158145, 0.090258],
            [0.013686, -0.086301, 0.188919],
        ],
        'cell': [
            [-0.172423, -0.584318, -0.197278],
            [0.302283, -0.086401, -0.259978],
            [-0.211491, -0.334059, 0.109594],
            [0.609201, -0.115417, -0.166703],
            [0.212266, 0.169497, 0.117712],
            [0.29803, 0.603009, 0.194026],
            [0.373593, 0.253241, 0.267033],
            [0.019295, -0.221342, 0.601003],
        ],
        'dx': [
            [-0.292217, 0.040936, -0.007641, 0.071057, -0.030407, -0.001072, -0.04993, -0.009642, 0.001476, 0.024909, -0.030387, 0.014507],
            [0.027383, 0.042108, 0.028411, 0.020825, 0.014863, -0.014437, -0.004664, -0.020203, -0.006665, 0.018665, -0.020274, 0.015195],
            [-0.082163, -0.055327, 0.105166, 0.043348, 0.062172, 0.065105, -0.01993, 0.006037, -0.026748, 0.025792, 0.071902, 0.016476],
            [-0.069419, 0.140453, 0.074641, -0.05515, -0.075072, -0.028082, -0.027245, 0.035286, -0.00251, -0.112321, -0.024601, -0.014716],
            [0.086217, 0.091866, -0.170253, 0.048145, 0.005034, -0.051561, -0.001805, 0.018467, 0.016258, 0.036002, 0.02144, -0.018816],
            [-0.120939, -0.014765, -0.17968, -0.038809, -0.005269, -0.017197, -0.019164, -0.001304, -0.009235, -0.030974, 0.111737, -0.026486],
            [0.099287, -0.275255, -0.013259, 0.075528, 0.040886, -0.010984, 0.026452, -0.07299, -0.00432, 0.038864, -0.040854, -0.026074],
            [0.146964, -0.080333, 0.027545, -0.016336, 0.023029, 0.022092, 0.022688, -0.010125, 0.00761, 0.00138, 0.026217, 0.061733],
        ],
        'dw': [
            [0.160456, -0.081774, -0.024418, -0.016362, 0.029269, 0.001923, 0.02356, -0.002087, -0.002947, -0.012773, 0.045883, -0.005881],
            [0.010556, -0.197571, 0.015973, 0.012536, 0.036287, 0.037035, 0.021454, -0.038641, -0.003491, 0.036351, 0.005951, 0.011225],
            [0.00246, -0.028756, -0.102801, 0.046401, 0.013229, -0.016678, 0.00078, -0.013168, 0.009507, 0.046846, 0.005392, -0.000389],
        ],
        'db': [
            [-0.204886, -0.110316, -0.13507, 0.148607, 0.035235, -0.036135, -0.073598, -0.054473, -0.024135, 0.002317,
             0.11518, 0.021818, 0.024932, 0.005236, -0.003136, -0.030378, -0.015981, 0.005488, -0.059577, 0.053191,
             0.020232],
        ],
        'dh0': [
            [0.048198, 0.079961, 0.008803],
            [0.110488, 0.058358, 0.025968],
            [-0.042672, -0.065767, 0.039518],
        ],
        'dc0': [
            [-0.101277, 0.107219, -0.011596],
            [-0.07808, 0.219019, 0.074419],
            [0.216115, 0.058744, -0.159675],
        ],
    },
    'peep_reverse_acts': {
        'hidden': [
            [0.0, 0.0, 0.060292],
            [0.20969, 0.044247, 0.050206],
            [0.0, 0.0, 0.21666],
            [0.333867, 0.0, 0.0],
            [0.342955, 0.058283, 0.210691],
            [0.303006, 0.083004, 0.226595],
            [0.233239, 0.0, 0.18339],
            [0.0, 0.0, 0.231604],
        ],
        'cell': [
            [-0.311048, -0.484844, 0.253986],
            [0.273203, 0.09593, 0.150711],
            [-0.374877, -0.344829, 0.330558],
            [0.620476, -0.1598, -0.072935],
            [0.461177, 0.137425, 0.45308],
            [0.379252, 0.18568, 0.451028],
            [0.334574, -0.575717, 0.498271],
            [-0.137536, -0.532592, 0.579757],
        ],
        'dx': [
            [0.0, 0.0, -0.03722, -0.0, -0.0, -0.007125, 0.0, 0.0, -0.002547, -0.0, 0.0, -0.017238],
            [0.147798, 0.144237, -0.044647, 0.060372, 0.067295, 0.009049, -0.026279, -0.035201, -0.011073, 0.0179, 0.020923, -0.009503],
            [0.070801, 0.072127, 0.160831, -0.025247, -0.042852, 0.068245, 0.0, 0.0, 0.0, -0.0, -0.0, 0.055551],
            [-0.305302, 0.0, 0.0, -0.121537, -0.0, -0.0, -0.0, 0.0, 0.0, -0.130044, 0.0, 0.0],
            [0.268096, 0.109908, -0.113506, 0.086191, 0.011688, -0.049051, 0.057996, 0.011716, -0.028708, 0.07236, 0.021108, -0.069721],
            [-0.072412, 0.364148, -0.155425, -0.019925, 0.091919, -0.015009, -0.014507, -0.055055, -0.030998, -0.041407, 0.041298, -0.038087],
            [0.137078, 0.227216, -0.075667, 0.079312, -0.031765, -0.034157, -0.009481, -0.041143, -0.040254, 0.04374, -0.0, -0.031402],
            [0.069269, 0.214563, 0.034565, -0.005681, -0.050682, 0.011663, 0.0, 0.0, 0.0, 0.0, -0.0, 0.084453],
        ],
        'dw': [
            [0.064345, 0.118236, -0.078449, 0.021469, 0.024981, -0.019857, 0.01419, -0.009291, -0.016463, 0.012268, 0.016028, -0.033624],
            [0.022253, 0.009123, -0.011068, 0.007154, 0.00097, -0.004387, 0.004814, 0.000972, -0.002496, 0.006006, 0.001752, -0.00655],
            [0.11124, 0.17556, -0.08329, 0.047326, 0.026729, -0.020175, 0.002592, -0.024597, -0.02404, 0.022812, 0.01689, -0.03298],
        ],
        'db': [
            [0.315328, 1.132199, -0.23107, 0.053485, 0.045603, -0.016385, 0.00773, -0.119682, -0.113581, -0.03745,
             0.083329, -0.025947, -0.007519, -0.057036, -0.047487, 0.028297, 0.067922, -0.055776, -0.043497, 0.012576,
             -0.0029],
        ],
    },
    'no_peep': {
        'hidden': [
            [-0.120936, -0.348582, -0.060153],
            [0.214339, -0.026421, -0.10654],
            [-0.111665, -0.155338, 0.063822],
            [0.203958, -0.068375, -0.112435],
            [0.142221, 0.078759, 0.059049],
            [0.225388, 0.229608, 0.101662],
            [0.232561, 0.166423, 0.090262],
            [0.02272, -0.082249, 0.196103],
        ],
        'cell': [
            [-0.151336, -0.580896, -0.210253],
            [0.317254, -0.060082, -0.272582],
            [-0.190575, -0.313945, 0.098176],
            [0.607103, -0.109789, -0.166867],
            [0.212815, 0.179943, 0.116214],
            [0.297798, 0.611934, 0.192238],
            [0.370403, 0.276728, 0.259894],
            [0.032006, -0.199999, 0.593979],
        ],
        'dx': [
            [-0.302267, 0.041094, 0.002449, 0.077116, -0.030449, 0.000343, -0.058044, -0.009839, -0.000439, 0.021097, -0.028836, 0.015322],
            [0.016806, 0.035147, 0.032128, 0.012642, 0.012134, -0.016852, -0.002455, -0.01604, -0.008054, 0.020678, -0.014103, 0.016261],
            [-0.086315, -0.064094, 0.10562, 0.04699, 0.071863, 0.06616, -0.022792, 0.004906, -0.027859, 0.022996, 0.067924, 0.014726],
            [-0.050838, 0.144969, 0.073748, -0.042441, -0.077627, -0.027744, -0.021956, 0.036879, -0.002498, -0.107276, -0.02317, -0.014832],
            [0.081757, 0.047932, -0.174765, 0.04559, 0.002635, -0.052915, -0.00171, 0.010101, 0.01698, 0.03714, 0.022063, -0.019252],
            [-0.111535, -0.05592, -0.183264, -0.03635, -0.019994, -0.017563, -0.01796, -0.00513, -0.009374, -0.032859, 0.11114, -0.026104],
            [0.092535, -0.26748, -0.014794, 0.073006, 0.040826, -0.011832, 0.026586, -0.067802, -0.004701, 0.040486, -0.045533, -0.02595],
            [0.143553, -0.089851, 0.03075, -0.016541, 0.025764, 0.024697, 0.022115, -0.012039, 0.008116, 0.002285, 0.024139, 0.062422],
        ],
        'dw': [
            [0.16442, -0.094456, -0.029669, -0.015937, 0.029163, 0.00164, 0.026749, -0.003812, -0.002177, -0.010405, 0.041629, -0.006972],
            [0.002828, -0.175252, 0.018215, 0.008348, 0.037849, 0.040101, 0.017275, -0.034026, -0.003385, 0.031846, 0.004425, 0.01234],
            [-0.005556, -0.046295, -0.102411, 0.043373, 0.011362, -0.016888, -0.00223, -0.016517, 0.009601, 0.045198, 0.004744, -0.000181],
        ],
        'db': [
            [-0.216305, -0.208202, -0.128129, 0.160012, 0.025151, -0.035705, -0.076217, -0.058964, -0.027828, 0.004546, 0.113623, 0.022592],
        ],
        'dh0': [
            [0.050321, 0.085174, 0.009278],
            [0.107298, 0.061983, 0.031443],
            [-0.04393, -0.081121, 0.01665],
        ],
        'dc0': [
            [-0.153276, 0.102441, 0.00403],
            [-0.064127, 0.248838, 0.075348],
            [0.195712, 0.036285, -0.175131],
        ],
    },
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_dynamic_lstm_matches_paddle(case):
    got = dict(zip(NAMES, run(fluid, case)))
    assert set(PADDLE185[case]) == set(got)
    for name, want in PADDLE185[case].items():
        np.testing.assert_allclose(got[name], np.array(want), rtol=1e-5, atol=3e-6, err_msg=f"{case}: {name}")


def test_dynamic_lstm_outputs_keep_the_lod_and_name_parameters_as_paddle():
    with fluid.unique_name.guard(), fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 8], "float32", lod_level=1)
        hidden, cell = fluid.layers.dynamic_lstm(x, 8)
        params = fluid.default_main_program().global_block().all_parameters()
        assert [(p.name, list(p.shape)) for p in params] == [("lstm_0.w_0", [2, 8]), ("lstm_0.b_0", [1, 14])]
        assert hidden.lod_level == 1 and cell.lod_level == 1
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(fluid.default_startup_program())
        t = fluid.create_lod_tensor(np.ones((5, 8), np.float32), [[2, 3]], fluid.CPUPlace())
        h = exe.run(fluid.default_main_program(), feed={"x": t}, fetch_list=[hidden], return_numpy=False)[0]
        assert h.recursive_sequence_lengths() == [[2, 3]] and np.array(h).shape == (5, 2)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(size=6), ValueError, "4 . the hidden size"),
    (dict(size=8, bias_attr=False), ValueError, "bias_attr must not be False"),
    (dict(size=8, cell_activation="softmax"), ValueError, "cell_activation"),
    (dict(size=8, h_0=np.zeros((1, 2))), TypeError, "h_0"),
])
def test_dynamic_lstm_refuses_bad_arguments(kwargs, error, message):
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 8], "float32", lod_level=1)
        with pytest.raises(error, match=message):
            fluid.layers.dynamic_lstm(x, **kwargs)
