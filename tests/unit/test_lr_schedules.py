"""Learning-rate schedules run by the real Executor, step by step, against
their Fluid formulas written here in plain Python; the global step counter,
op roles, an optimizer driven by a schedule, and argument errors."""
import math

import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.fluid.framework import OpRole

layers = fluid.layers
STEPS = 12


def _run_schedule(build, steps=STEPS):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        lr = build()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    values = [float(exe.run(main, fetch_list=[lr], scope=scope)[0][0]) for _ in range(steps)]
    return values, main, scope


def _poly(step, lr, decay_steps, end, power, cycle):
    if cycle:
        horizon = decay_steps * max(math.ceil(step / decay_steps), 1)
    else:
        step, horizon = min(step, decay_steps), decay_steps
    return (lr - end) * (1 - step / horizon) ** power + end


SCHEDULES = {
    "exponential": (lambda: layers.exponential_decay(0.5, 4, 0.6),
                    lambda s: 0.5 * 0.6 ** (s / 4)),
    "exponential_staircase": (lambda: layers.exponential_decay(0.5, 4, 0.6, staircase=True),
                              lambda s: 0.5 * 0.6 ** (s // 4)),
    "natural_exp": (lambda: layers.natural_exp_decay(0.5, 3, 0.2),
                    lambda s: 0.5 * math.exp(-0.2 * s / 3)),
    "natural_exp_staircase": (lambda: layers.natural_exp_decay(0.5, 3, 0.2, staircase=True),
                              lambda s: 0.5 * math.exp(-0.2 * (s // 3))),
    "inverse_time": (lambda: layers.inverse_time_decay(0.5, 5, 0.3),
                     lambda s: 0.5 / (1 + 0.3 * s / 5)),
    "inverse_time_staircase": (lambda: layers.inverse_time_decay(0.5, 5, 0.3, staircase=True),
                               lambda s: 0.5 / (1 + 0.3 * (s // 5))),
    "polynomial": (lambda: layers.polynomial_decay(0.5, 8, 0.01, power=2.0),
                   lambda s: _poly(s, 0.5, 8, 0.01, 2.0, False)),
    "polynomial_cycle": (lambda: layers.polynomial_decay(0.5, 5, 0.01, power=1.5, cycle=True),
                         lambda s: _poly(s, 0.5, 5, 0.01, 1.5, True)),
    "piecewise": (lambda: layers.piecewise_decay([3, 7], [1.0, 0.5, 0.1]),
                  lambda s: 1.0 if s < 3 else 0.5 if s < 7 else 0.1),
    # noam counts from 1, as in Fluid.
    "noam": (lambda: layers.noam_decay(64, 4),
             lambda s: 64 ** -0.5 * min((s + 1) ** -0.5, 4 ** -1.5 * (s + 1))),
    "cosine": (lambda: layers.cosine_decay(0.5, 3, 4),
               lambda s: 0.5 * 0.5 * (math.cos(math.floor(s / 3) * math.pi / 4) + 1)),
    "linear_warmup": (lambda: layers.linear_lr_warmup(0.5, 5, 0.0, 0.4),
                      lambda s: 0.4 * s / 5 if s < 5 else 0.5),
    "warmup_then_exponential": (
        lambda: layers.linear_lr_warmup(layers.exponential_decay(0.5, 4, 0.6), 5, 0.1, 0.5),
        lambda s: 0.1 + 0.4 * s / 5 if s < 5 else 0.5 * 0.6 ** (s / 4)),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedule_matches_its_formula_at_every_step(name):
    build, formula = SCHEDULES[name]
    values, _, _ = _run_schedule(build)
    np.testing.assert_allclose(values, [formula(s) for s in range(STEPS)], rtol=1e-6, atol=1e-9)


def test_schedules_share_one_counter_incremented_once_per_run_before_anything_reads_it():
    def build():
        a = layers.exponential_decay(0.5, 4, 0.6)
        layers.piecewise_decay([2], [1.0, 0.1])
        return a
    _, main, scope = _run_schedule(build, steps=5)
    ops = main.global_block().ops
    assert [op.type for op in ops].count("increment") == 1
    assert ops[0].type == "increment" and ops[0].input("X") == ["@LR_DECAY_COUNTER@"]
    counter = main.global_block().var("@LR_DECAY_COUNTER@")
    assert counter.persistable and counter.dtype == "int64"
    assert int(np.array(scope.find_var("@LR_DECAY_COUNTER@").get_tensor())[0]) == 4


def test_schedule_ops_have_the_lr_sched_role_and_leave_test_programs():
    _, main, _ = _run_schedule(SCHEDULES["cosine"][0], steps=1)
    for op in main.global_block().ops:
        assert op.attr("op_role") == int(OpRole.LRSched), op.type
    assert main.clone(for_test=True).global_block().ops == []


def test_an_optimizer_driven_by_a_schedule_steps_with_that_step_s_rate():
    main, startup = fluid.Program(), fluid.Program()
    startup.random_seed = 3
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = layers.data(name="x", shape=[2])
        loss = layers.mean(layers.fc(x, 1, bias_attr=False))
        lr = layers.exponential_decay(0.5, 2, 0.5, staircase=True)
        fluid.optimizer.SGD(lr).minimize(loss)
    sgd = next(op for op in main.global_block().ops if op.type == "sgd")
    assert sgd.input("LearningRate") == [lr.name]
    assert not main.global_block().has_var("learning_rate_0")
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    feed = np.array([[1.0, 2.0], [3.0, -1.0]], dtype="float32")
    w = np.array(scope.find_var("fc_0.w_0").get_tensor()).astype(np.float64)
    grad = feed.mean(axis=0).reshape(2, 1)  # d mean(x @ w) / dw
    for step in range(6):
        exe.run(main, feed={"x": feed}, scope=scope)
        w = w - 0.5 * 0.5 ** (step // 2) * grad
        np.testing.assert_allclose(np.array(scope.find_var("fc_0.w_0").get_tensor()), w, rtol=1e-6)


@pytest.mark.parametrize("build, exc, words", [
    (lambda: layers.piecewise_decay([3, 7], [1.0, 0.5]), ValueError, "len"),
    (lambda: layers.piecewise_decay([7, 3], [1.0, 0.5, 0.1]), ValueError, "increase"),
    (lambda: layers.exponential_decay(0.1, 0, 0.5), ValueError, "decay_steps"),
    (lambda: layers.exponential_decay("0.1", 10, 0.5), TypeError, "learning_rate"),
    (lambda: layers.noam_decay(64, -1), ValueError, "warmup_steps"),
    (lambda: layers.cosine_decay(0.1, 10, None), TypeError, "epochs"),
])
def test_bad_schedule_arguments_are_rejected_with_the_argument_named(build, exc, words):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        with pytest.raises(exc, match=words):
            build()
    assert main.global_block().ops == []
