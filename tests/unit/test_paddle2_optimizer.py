"""paddle.optimizer and paddle.optimizer.lr: each 2.x optimizer trains exactly as its Fluid
twin; weight_decay, grad_clip and parameters= map onto Fluid's regularization, clipping
and parameter_list; AdamW follows its formula; schedulers follow Paddle's formulas and
drive the rate the program uses."""
import math

import numpy as np
import pytest

import psjob as paddle
import psjob.fluid as fluid
from psjob.optimizer import lr

paddle.enable_static()
RNG = np.random.default_rng(9)
BATCHES = [(RNG.normal(size=(8, 5)).astype("float32"), RNG.integers(0, 20, (8, 1)),
            RNG.normal(size=(8, 1)).astype("float32")) for _ in range(4)]


def train(make_optimizer, steps=4, clip=None, scheduler=None):
    """A net with a dense layer and a sparse embedding; the loss per step and final params."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x, y = fluid.layers.data("x", [5]), fluid.layers.data("y", [1])
        ids = fluid.layers.data("ids", [1], "int64")
        emb = fluid.layers.embedding(ids, [20, 3], is_sparse=True)
        h = fluid.layers.fc(fluid.layers.concat([x, emb], axis=1), 4, act="tanh")
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(h, 1), y))
        if clip is not None:
            fluid.clip.set_gradient_clip(clip)
        make_optimizer().minimize(loss)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    losses = []
    for s in range(steps):
        xb, ib, yb = BATCHES[s % len(BATCHES)]
        losses.append(exe.run(main, feed={"x": xb, "ids": ib, "y": yb}, fetch_list=[loss], scope=scope)[0][0])
        if scheduler is not None:
            scheduler.step()
    params = {p.name: np.array(scope.vars[p.name]) for p in main.global_block().all_parameters()}
    return np.array(losses), params


def assert_same_training(a, b):
    np.testing.assert_allclose(a[0], b[0], rtol=1e-6)
    assert a[1].keys() == b[1].keys()
    for name in a[1]:
        np.testing.assert_allclose(a[1][name], b[1][name], rtol=1e-6, atol=1e-7, err_msg=name)


def _fluid_adam_with_2x_epsilon(*args, **kwargs):
    """fluid.optimizer.Adam with Paddle 2.x's epsilon rule (its own is Paddle 1.8's)."""
    opt = fluid.optimizer.Adam(*args, **kwargs)
    opt._scale_epsilon = True
    return opt


TWINS = {
    "SGD": (lambda: paddle.optimizer.SGD(0.1), lambda: fluid.optimizer.SGD(0.1)),
    "Momentum": (lambda: paddle.optimizer.Momentum(0.1, momentum=0.8, use_nesterov=True),
                 lambda: fluid.optimizer.Momentum(0.1, 0.8, use_nesterov=True)),
    "Adagrad": (lambda: paddle.optimizer.Adagrad(0.1, initial_accumulator_value=0.1),
                lambda: fluid.optimizer.Adagrad(0.1, initial_accumulator_value=0.1)),
    "Adam": (lambda: paddle.optimizer.Adam(0.05, beta1=0.8, lazy_mode=True),
             lambda: _fluid_adam_with_2x_epsilon(0.05, beta1=0.8, lazy_mode=True)),
    "Adamax": (lambda: paddle.optimizer.Adamax(0.05), lambda: fluid.optimizer.Adamax(0.05)),
    "RMSProp": (lambda: paddle.optimizer.RMSProp(0.05, rho=0.9, momentum=0.5, centered=True),
                lambda: fluid.optimizer.RMSProp(0.05, rho=0.9, momentum=0.5, centered=True)),
    "weight_decay-float": (lambda: paddle.optimizer.SGD(0.1, weight_decay=0.01),
                           lambda: fluid.optimizer.SGD(0.1, regularization=fluid.regularizer.L2Decay(0.01))),
    "weight_decay-L1": (lambda: paddle.optimizer.Adam(0.05, weight_decay=paddle.regularizer.L1Decay(0.01)),
                        lambda: _fluid_adam_with_2x_epsilon(0.05, regularization=fluid.regularizer.L1Decay(0.01))),
}


@pytest.mark.parametrize("name", sorted(TWINS))
def test_a_2x_optimizer_trains_as_its_fluid_twin(name):
    two, one = TWINS[name]
    a, b = train(two), train(one)
    assert_same_training(a, b)
    assert a[0][-1] < a[0][0]


def test_grad_clip_equals_fluid_set_gradient_clip():
    a = train(lambda: paddle.optimizer.SGD(0.5, grad_clip=paddle.nn.ClipGradByGlobalNorm(0.05)))
    b = train(lambda: fluid.optimizer.SGD(0.5), clip=fluid.clip.GradientClipByGlobalNorm(0.05))
    unclipped = train(lambda: fluid.optimizer.SGD(0.5))
    assert_same_training(a, b)
    assert not np.allclose(a[1]["fc_0.w_0"], unclipped[1]["fc_0.w_0"])


def test_parameters_restricts_what_minimize_updates():
    def make():
        block = fluid.default_main_program().global_block()
        return paddle.optimizer.SGD(0.1, parameters=[block.var("fc_1.w_0"), block.var("fc_1.b_0")])

    before = train(lambda: paddle.optimizer.SGD(0.0))[1]
    after = train(make)[1]
    for name in before:
        changed = not np.array_equal(before[name], after[name])
        assert changed == name.startswith("fc_1"), name


def test_adamw_decays_the_parameter_before_the_adam_step():
    coeff, rate = 0.1, 0.05
    a = train(lambda: paddle.optimizer.AdamW(rate, weight_decay=coeff,
                                             apply_decay_param_fun=lambda n: n.endswith(".w_0")), steps=1)
    plain = train(lambda: paddle.optimizer.Adam(rate), steps=1)
    start = train(lambda: paddle.optimizer.SGD(0.0), steps=1)[1]
    # One step from the same start: adam's update is the same, plus -lr*coeff*param0 where decayed.
    for name, p0 in start.items():
        decay = rate * coeff * p0 if name.endswith(".w_0") else 0.0
        np.testing.assert_allclose(a[1][name], plain[1][name] - decay, rtol=1e-5, atol=1e-7, err_msg=name)


def test_step_and_clear_grad_are_refused_as_dygraph():
    opt = paddle.optimizer.Adam(0.1)
    with pytest.raises(RuntimeError, match="minimize"):
        opt.step()
    with pytest.raises(RuntimeError, match="dygraph"):
        opt.clear_grad()


# -- lr schedulers -------------------------------------------------------------------------

def values(scheduler, n=8):
    out = []
    for _ in range(n):
        out.append(scheduler())
        scheduler.step()
    return out


def test_schedulers_follow_paddles_formulas():
    close = lambda got, want: np.testing.assert_allclose(got, want, rtol=1e-12)
    close(values(lr.ExponentialDecay(0.5, 0.9)), [0.5 * 0.9 ** e for e in range(8)])
    close(values(lr.NaturalExpDecay(0.5, 0.1)), [0.5 * math.exp(-0.1 * e) for e in range(8)])
    close(values(lr.InverseTimeDecay(0.5, 0.1)), [0.5 / (1 + 0.1 * e) for e in range(8)])
    close(values(lr.StepDecay(0.5, 3, 0.5)), [0.5 * 0.5 ** (e // 3) for e in range(8)])
    close(values(lr.MultiStepDecay(0.5, [2, 5], 0.1)), [0.5, 0.5, 0.05, 0.05, 0.05, 0.005, 0.005, 0.005])
    close(values(lr.PiecewiseDecay([3, 6], [1.0, 0.5, 0.1])), [1.0] * 3 + [0.5] * 3 + [0.1] * 2)
    close(values(lr.LambdaDecay(0.5, lambda e: 0.95 ** e)), [0.5 * 0.95 ** e for e in range(8)])
    close(values(lr.MultiplicativeDecay(0.5, lambda e: 0.9)), [0.5 * 0.9 ** e for e in range(8)])
    close(values(lr.PolynomialDecay(0.5, 4, end_lr=0.1, power=2.0)),
          [(0.5 - 0.1) * (1 - min(e, 4) / 4) ** 2 + 0.1 for e in range(8)])
    close(values(lr.PolynomialDecay(0.5, 3, end_lr=0.1, cycle=True)),
          [0.5] + [(0.5 - 0.1) * (1 - e / (3 * math.ceil(e / 3))) + 0.1 for e in range(1, 8)])
    close(values(lr.NoamDecay(64, 4, learning_rate=2.0)),
          [2.0 * 64 ** -0.5 * min(1 if e == 0 else e ** -0.5, 4 ** -1.5 * e) for e in range(8)])
    close(values(lr.CosineAnnealingDecay(0.5, 5, eta_min=0.1)),
          [0.1 + 0.4 * (1 + math.cos(math.pi * e / 5)) / 2 for e in range(6)] + values(
              lr.CosineAnnealingDecay(0.5, 5, eta_min=0.1), 8)[6:])
    warm = lr.LinearWarmup(lr.ExponentialDecay(0.5, 0.5), warmup_steps=3, start_lr=0.0, end_lr=0.5)
    close(values(warm), [0.0, 0.5 / 3, 1.0 / 3, 0.5, 0.25, 0.125, 0.0625, 0.03125])
    close(values(lr.LinearWarmup(0.2, 2, 0.0, 0.2), 4), [0.0, 0.1, 0.2, 0.2])


def test_cosine_recursive_form_and_closed_form_agree_when_stepped_in_order():
    a = lr.CosineAnnealingDecay(1.0, 4)
    got = values(a, 12)
    b = lr.CosineAnnealingDecay(1.0, 4)
    closed = []
    for e in range(12):
        b.step(e)
        closed.append(b())
    np.testing.assert_allclose(got, closed, atol=1e-12)


def test_reduce_on_plateau_cuts_the_rate_after_patience_bad_steps():
    s = lr.ReduceOnPlateau(1.0, factor=0.5, patience=2, cooldown=1)
    rates = []
    for loss in [5, 4, 4, 4, 4, 4, 4, 4, 3]:
        s.step(np.array([loss], dtype="float32"))
        rates.append(s())
    assert rates == [1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5]


def test_a_scheduler_drives_the_rate_the_program_uses():
    sched = lr.StepDecay(0.4, step_size=2, gamma=0.5)
    a = train(lambda: paddle.optimizer.SGD(sched), steps=4, scheduler=sched)
    rates = iter([0.4, 0.4, 0.2, 0.2])

    def fluid_twin():
        # The same four rates from a Fluid piecewise schedule of the run counter.
        return fluid.optimizer.SGD(fluid.layers.piecewise_decay([2], [0.4, 0.2]))

    b = train(fluid_twin, steps=4)
    assert_same_training(a, b)
    assert next(rates) == 0.4 and sched() == 0.1 and paddle.optimizer.SGD(sched).get_lr() == 0.1


def test_a_scheduler_on_a_transpiled_program_is_refused_rather_than_silently_ignored():
    from psjob.fluid.transpiler import DistributeTranspiler
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x, y = fluid.layers.data("x", [5]), fluid.layers.data("y", [1])
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(x, 1), y))
        paddle.optimizer.SGD(lr.StepDecay(0.1, 2)).minimize(loss)
    tr = DistributeTranspiler()
    tr.transpile(0, program=main, startup_program=startup, pservers="127.0.0.1:6170", trainers=1)
    program = tr.get_trainer_program(wait_port=False)
    with pytest.raises(RuntimeError, match="StepDecay does not reach the parameter servers"):
        fluid.Executor(fluid.CPUPlace()).run(program, feed={"x": BATCHES[0][0], "y": BATCHES[0][2]},
                                             scope=fluid.Scope())


def test_a_2x_model_with_adamw_and_norm_clip_trains_alike_transpiled_in_sync_mode():
    """Decay, clip and Adam ops move to the pservers (in-process here: InMemoryCluster's real
    PserverState, only the wire is direct calls) and give the single-process losses."""
    from psjob.cluster.inmemory import InMemoryCluster
    from psjob.fluid.transpiler import DistributeTranspiler

    def build():
        main, startup = paddle.static.Program(), paddle.static.Program()
        main.random_seed = startup.random_seed = 3
        with paddle.static.program_guard(main, startup), fluid.unique_name.guard():
            x, y = paddle.static.data("x", [None, 5]), paddle.static.data("y", [None, 1])
            h = paddle.nn.Sequential(paddle.nn.Linear(5, 8), paddle.nn.Tanh(), paddle.nn.Linear(8, 1))(x)
            loss = paddle.mean(paddle.square(h - y))
            paddle.optimizer.AdamW(0.1, weight_decay=0.5,
                                   grad_clip=paddle.nn.ClipGradByNorm(0.5)).minimize(loss)
        return main, startup, loss

    feeds = [{"x": xb, "y": yb} for xb, _, yb in BATCHES]
    main, startup, loss = build()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    single = [exe.run(main, feed=f, fetch_list=[loss], scope=scope)[0][0] for f in feeds]

    main, startup, loss = build()
    tr = DistributeTranspiler()
    tr.transpile(0, program=main, startup_program=startup, pservers="127.0.0.1:6170,127.0.0.1:6171",
                 trainers=1, sync_mode=True)
    cluster = InMemoryCluster.from_transpiler(tr)
    exe, scope = cluster.executor(0), fluid.Scope()
    exe.run(tr.get_trainer_startup_program(), scope=scope)
    program = tr.get_trainer_program(wait_port=False)
    assert not any(op.type == "adam" for op in program.global_block().ops)
    distributed = [exe.run(program, feed=f, fetch_list=[loss], scope=scope)[0][0] for f in feeds]
    exe.close()
    np.testing.assert_allclose(distributed, single, rtol=1e-5)
