"""fluid.layers.gru_unit against Paddle 1.8.5: the forward outputs and the gradients of x, h and
the weight and bias.

How the expected values were made: `run` below was run, unchanged but for `import paddle.fluid
as fluid`, by Paddle 1.8.5 (CPU) for both origin_mode values; the loss weights every output
(updated_hidden, reset_hidden_pre and gate) by R, and the fetched arrays are pasted here,
rounded to 6 decimals. Paddle's gradient flows from updated_hidden only (Gate and
ResetHiddenPrev are intermediate outputs of its op): the pinned gradients include that.
"""
import numpy as np
import pytest

import psjob.fluid as fluid

D = 3
TERMS = (0, 1, 2)
RNG = np.random.RandomState(4)
X = RNG.uniform(-1, 1, (2, 3 * D)).astype(np.float32)
H = RNG.uniform(-1, 1, (2, D)).astype(np.float32)
WV = RNG.uniform(-0.8, 0.8, (D, 3 * D)).astype(np.float32)
BV = RNG.uniform(-0.5, 0.5, (1, 3 * D)).astype(np.float32)
R = RNG.uniform(-1, 1, (3, 2, 3 * D)).astype(np.float32)


def build(fluid, origin_mode):
    x = fluid.data("x", [None, 3 * D], "float32")
    h = fluid.data("h", [None, D], "float32")
    x.stop_gradient = h.stop_gradient = False
    outs = fluid.layers.gru_unit(x, h, 3 * D, origin_mode=origin_mode,
                                 param_attr=fluid.ParamAttr(name="w", initializer=fluid.initializer.NumpyArrayInitializer(WV)),
                                 bias_attr=fluid.ParamAttr(name="b", initializer=fluid.initializer.NumpyArrayInitializer(BV)))
    r = fluid.data("r", [3, None, 3 * D], "float32")
    widths = [D, D, 3 * D]
    loss = fluid.layers.sums([fluid.layers.reduce_sum(o * fluid.layers.slice(r, [0, 2], [i, 0], [i + 1, widths[i]]))
                              for i, o in enumerate(outs) if i in TERMS])
    grads = fluid.gradients([loss], [x, h, fluid.default_main_program().global_block().var("w"),
                                      fluid.default_main_program().global_block().var("b")])
    return list(outs) + list(grads)


def run(fluid, origin_mode):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        fetch = build(fluid, origin_mode)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        return exe.run(main, feed={"x": X, "h": H, "r": R}, fetch_list=fetch)



PADDLE185 = {
    False: {
        'hidden': [
            [0.258995, -0.073957, -0.399652],
            [0.710987, -0.206426, 0.419172]],
        'reset_hidden_pre': [
            [-0.525623, 0.294823, -0.064647],
            [0.463199, 0.36319, 0.329997]],
        'gate': [
            [0.787423, 0.812043, 0.632207, 0.576543, 0.322809, 0.506212, 0.575038, -0.302471, -0.55786],
            [0.335601, 0.656521, 0.296499, 0.515838, 0.634269, 0.450459, 0.340841, -0.614003, -0.324447]],
        'dx': [
            [0.20141, 0.035322, 0.033772, -0.063191, 0.003541, 0.002674, 0.426558, -0.14043, -0.147033],
            [0.06324, -0.124476, -0.174027, -0.045755, -0.003495, 0.028528, -0.151004, 0.190267, 0.209392]],
        'dh': [
            [0.246327, 0.042714, -0.171464],
            [-0.401127, 0.085387, 0.623894]],
        'dw': [
            [-0.126835, -0.143976, -0.187058, 0.016524, -0.006366, 0.023179, 0.220161, -0.039017, -0.068806],
            [-0.083912, 0.001233, 0.018777, 0.020607, -0.095699, -0.131801, -0.025449, -0.003012, 0.020557],
            [-0.294153, 0.161945, 0.174274, 0.070916, 0.027701, 0.0327, -0.077406, 0.071866, 0.078604]],
        'db': [
            [0.26465, -0.089154, -0.140255, -0.108945, 4.6e-05, 0.031201, 0.275554, 0.049837, 0.062359]],
    },
    True: {
        'hidden': [
            [-0.595637, 0.684792, -0.285914],
            [0.527809, 0.165035, -0.01104]],
        'reset_hidden_pre': [
            [-0.525623, 0.294823, -0.064647],
            [0.463199, 0.36319, 0.329997]],
        'gate': [
            [0.787423, 0.812043, 0.632207, 0.576543, 0.322809, 0.506212, 0.575038, -0.302471, -0.55786],
            [0.335601, 0.656521, 0.296499, 0.515838, 0.634269, 0.450459, 0.340841, -0.614003, -0.324447]],
        'dx': [
            [-0.20141, -0.035322, -0.033772, -0.018473, 0.004886, 0.001613, 0.115156, -0.032504, -0.085538],
            [-0.06324, 0.124476, 0.174027, -0.062332, -0.022221, 0.055874, -0.298947, 0.099544, 0.496824]],
        'dh': [
            [0.820442, -0.172543, -0.254282],
            [-0.321125, 0.344933, 0.370129]],
        'dw': [
            [0.126835, 0.143976, 0.187058, -0.03913, -0.024407, 0.048701, -0.220161, 0.039017, 0.068806],
            [-0.052563, -0.008262, 0.033468, -0.020607, 0.095699, 0.131801, -0.043304, -0.016902, 0.040726],
            [-0.199, 0.063194, 0.275089, -0.074624, 0.02657, 0.155223, -0.106096, 0.034951, 0.16948]],
        'db': [
            [-0.26465, 0.089154, 0.140255, -0.080805, -0.017335, 0.057487, -0.183791, 0.06704, 0.411286]],
    },
}
NAMES = ["hidden", "reset_hidden_pre", "gate", "dx", "dh", "dw", "db"]


@pytest.mark.parametrize("origin_mode", [False, True])
def test_gru_unit_matches_paddle(origin_mode):
    got = dict(zip(NAMES, run(fluid, origin_mode)))
    for name in NAMES:
        np.testing.assert_allclose(got[name], np.array(PADDLE185[origin_mode][name], np.float32), rtol=1e-5,
                                   atol=2e-6, err_msg=name)


def test_gru_unit_names_its_parameters_as_paddle():
    with fluid.unique_name.guard(), fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 6], "float32")
        h = fluid.data("h", [None, 2], "float32")
        hidden, reset, gate = fluid.layers.gru_unit(x, h, 6)
        params = [p.name for p in fluid.default_main_program().global_block().all_parameters()]
        assert params == ["gru_unit_0.w_0", "gru_unit_0.b_0"]
        assert list(hidden.shape) == [-1, 2] and list(reset.shape) == [-1, 2] and list(gate.shape) == [-1, 6]


@pytest.mark.parametrize("size, message", [(7, "3 . D"), (9, "3 . D")])
def test_gru_unit_refuses_mismatched_sizes(size, message):
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 6], "float32")
        h = fluid.data("h", [None, 2], "float32")
        with pytest.raises(ValueError, match=message):
            fluid.layers.gru_unit(x, h, size)
