"""Fluid 1.8's AdadeltaOptimizer, LambOptimizer, DpsgdOptimizer and Paddle 3's
paddle.optimizer.Lamb, Adadelta, lr.OneCycleLR and lr.CyclicLR, against real Paddle.

Each optimizer trains `_program` (fc 4->3 with bias, loss mean(h*h)) for 3 steps; the pinned
weights are what Paddle 1.8.5 (fluid.optimizer, the Fluid rules) and Paddle 3.0.0 with
FLAGS_enable_pir_api=0 (paddle.optimizer, paddle.static) gave for the same program. The two
versions differ: Paddle 1.8.5's adadelta op takes no learning rate and steps by the updated
avg_squared_update; its lamb op does not bias-correct the moments nor advance the beta pows,
and always takes the trust ratio (Paddle 3 only where weight decay > 0 or always_adapt).
The schedulers' rates and two static trainings with them are Paddle 3.0.0's.

On parameter servers (the DistributeTranspiler, in memory as tests/unit/test_transpiler_training.py):
Adadelta moves to the pservers like the others, also as a distributed table's per-row rule;
Lamb and Dpsgd move there whole (slice_var_up=False, or a parameter under min_block_size) and
train as one machine does, and a parameter they would slice is refused, naming the settings;
a distributed table refuses them (their step needs the whole table); a paddle.optimizer.lr
scheduler on a transpiled program is refused at Executor.run, as every scheduler is.
"""
import os
import sys

import numpy as np
import pytest

import psjob
import psjob.fluid as fluid
from psjob.fluid.framework import GraphError
from psjob.fluid.transpiler import DistributeTranspiler, DistributeTranspilerConfig, UnsupportedOptimizerError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_optimizer_versions import pserver_net  # noqa: E402
from test_transpiler_training import EPS, batches, distributed, single_machine, table_rows  # noqa: E402

W0 = (np.arange(12, dtype="float32").reshape(4, 3) - 5.0) / 10.0
B0 = np.array([0.1, -0.2, 0.3], dtype="float32")
X = np.array([[1.0, -2.0, 0.5, 3.0], [0.3, 0.2, -1.0, 1.5]], dtype="float32")

# Paddle 1.8.5 (fluid.optimizer), 3 steps of _program(): (w, b)
PADDLE185 = {
    "adadelta": ([[-0.778425574, -0.67028749, -0.598246813],
                  [0.136135921, 0.25215894, 0.308936357],
                  [0.029987454, 0.023620382, 0.321811616],
                  [0.042103946, 0.147655189, 0.259391248]],
               [-0.197789133, -0.464341372, -0.028751902]),
    "lamb": ([[-0.599363327, -0.499752641, -0.401626498],
              [-0.096102834, 0.003132947, 0.103536047],
              [0.001998201, 0.096405864, 0.206561297],
              [0.294484377, 0.394164145, 0.492267072]],
               [0.036714956, -0.261752754, 0.235397264]),
    "lamb_excl": ([[-0.602685392, -0.502560616, -0.403790891],
                   [-0.096566826, 0.003217082, 0.104076803],
                   [0.001248965, 0.096703902, 0.206275746],
                   [0.296056509, 0.396248549, 0.494980723]],
               [0.036740981, -0.262983829, 0.236286849]),
    "dpsgd_seed7": ([[-0.485417396, -0.383980036, -0.296370775],
                     [-0.132648766, -0.033242729, 0.084932975],
                     [0.130586118, 0.228026241, 0.331326634],
                     [0.373037338, 0.479059964, 0.536933601]],
               [0.062276468, -0.227076516, 0.216571569]),
    "dpsgd_seed12345": ([[-0.476435483, -0.375008672, -0.287306041],
                         [-0.123603031, -0.024194306, 0.093846202],
                         [0.139638588, 0.23709996, 0.34037289],
                         [0.381923914, 0.487900913, 0.546093345]],
               [0.07113757, -0.218306065, 0.225811779]),
}
# Paddle 3.0.0 (paddle.optimizer, FLAGS_enable_pir_api=0), 3 steps of _program(): (w, b)
PADDLE300 = {
    "lamb": ([[-0.600309551, -0.500555694, -0.402264327],
              [-0.096205384, 0.003179777, 0.103722118],
              [0.001770403, 0.096406803, 0.206603736],
              [0.294890076, 0.394714862, 0.492972076]],
               [0.036711466, -0.262034416, 0.235583961]),
    "lamb_excl": ([[-0.598556221, -0.498543382, -0.401252687],
                   [-0.097711056, 0.001624253, 0.102778807],
                   [-0.002922699, 0.09554185, 0.197093472],
                   [0.296800137, 0.397008002, 0.494051754]],
               [-0.191401452, -0.487939835, 0.003403969]),
    "lamb_wd0": ([[-0.754080236, -0.644683003, -0.584108651],
                  [0.049633741, 0.146482781, 0.281591505],
                  [-0.06952136, -0.059351124, 0.182536095],
                  [0.144136101, 0.256137758, 0.314964235]],
               [-0.159425795, -0.442004293, 0.013239518]),
    "lamb_wd0_adapt": ([[-0.603520393, -0.503266633, -0.404361099],
                        [-0.096655726, 0.003261596, 0.104250744],
                        [0.001184613, 0.096779063, 0.20646745],
                        [0.296409667, 0.39673084, 0.495597363]],
               [0.036741145, -0.262986094, 0.236288622]),
    "adadelta": ([[-0.653532267, -0.539679348, -0.556980133],
                  [-0.024319548, 0.078938723, 0.267274886],
                  [0.05918837, 0.09282244, 0.288118154],
                  [0.215359658, 0.336279243, 0.315604985]],
               [-0.062232632, -0.325669914, 0.025921684]),
}
# Paddle 3.0.0: the first 10 rates of each scheduler, and w after 5 static steps
PADDLE300_LR = {
    "onecycle_cos": [0.04, 0.52, 1.0, 0.950489386, 0.811763726, 0.611299341, 0.388800659, 0.188336274, 0.049610614, 0.0001],
    "onecycle_lin3": [0.1, 0.3, 0.5, 0.3, 0.1, 0.087142857, 0.074285714, 0.061428571, 0.048571429, 0.035714286],
    "cyclic_tri": [0.1, 0.233333333, 0.366666667, 0.5, 0.366666667, 0.233333333, 0.1, 0.233333333, 0.366666667, 0.5],
    "cyclic_tri2": [0.1, 0.3, 0.5, 0.366666667, 0.233333333, 0.1, 0.2, 0.3, 0.233333333, 0.166666667],
    "cyclic_exp": [0.1, 0.28, 0.424, 0.2458, 0.1, 0.218098, 0.3125764, 0.19565938, 0.1, 0.177484098],
    "cyclic_fn": [0.1, 0.2, 0.233333333, 0.15, 0.1, 0.133333333, 0.157142857, 0.125, 0.1, 0.12],
    "sgd_onecycle": [[-0.379096746, -0.413320661],
                     [-0.330138624, -0.454540074],
                     [-0.794303715, -1.107987046]],
    "momentum_cyclic": [[-0.016548306, 0.080504209], [0.104070127, 0.098921843], [0.366063565, 0.482034147]],
}


def _program(make_opt, api="fluid"):
    if api == "fluid":
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            x = fluid.layers.data(name="x", shape=[4], dtype="float32")
            h = fluid.layers.fc(x, 3, param_attr=fluid.ParamAttr(
                name="w", initializer=fluid.initializer.NumpyArrayInitializer(W0)), bias_attr=fluid.ParamAttr(
                name="b", initializer=fluid.initializer.NumpyArrayInitializer(B0)))
            opt = make_opt()
            opt.minimize(fluid.layers.reduce_mean(h * h))
        return main, startup, opt
    paddle = psjob
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), fluid.unique_name.guard():
        x = paddle.static.data(name="x", shape=[-1, 4], dtype="float32")
        h = paddle.static.nn.fc(x, 3, weight_attr=paddle.ParamAttr(
            name="w", initializer=paddle.nn.initializer.Assign(W0)), bias_attr=paddle.ParamAttr(
            name="b", initializer=paddle.nn.initializer.Assign(B0)))
        opt = make_opt()
        opt.minimize(paddle.mean(h * h))
    return main, startup, opt


def _train(main, startup, steps=3):
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    for _ in range(steps):
        exe.run(main, feed={"x": X}, scope=scope)
    return scope


def _assert_pinned(scope, pinned):
    np.testing.assert_allclose(np.array(scope.vars["w"]), pinned[0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.array(scope.vars["b"]), pinned[1], rtol=1e-6, atol=1e-6)


O = fluid.optimizer
FLUID_CASES = {
    "adadelta": lambda: O.Adadelta(learning_rate=0.5, epsilon=1e-2, rho=0.9),
    "lamb": lambda: O.Lamb(learning_rate=0.1, lamb_weight_decay=0.05, beta1=0.8, beta2=0.9, epsilon=1e-4),
    "lamb_excl": lambda: O.Lamb(learning_rate=0.1, lamb_weight_decay=0.05,
                                exclude_from_weight_decay_fn=lambda p: p.name == "b"),
}
PADDLE_CASES = {
    "lamb": lambda: psjob.optimizer.Lamb(learning_rate=0.1, lamb_weight_decay=0.05, beta1=0.8, beta2=0.9,
                                         epsilon=1e-4),
    "lamb_excl": lambda: psjob.optimizer.Lamb(learning_rate=0.1, lamb_weight_decay=0.05,
                                              exclude_from_weight_decay_fn=lambda p: p.name == "b"),
    "lamb_wd0": lambda: psjob.optimizer.Lamb(learning_rate=0.1, lamb_weight_decay=0.0),
    "lamb_wd0_adapt": lambda: psjob.optimizer.Lamb(learning_rate=0.1, lamb_weight_decay=0.0, always_adapt=True),
    "adadelta": lambda: psjob.optimizer.Adadelta(learning_rate=0.5, epsilon=1e-2, rho=0.9),
}
# the persistable variables each program holds, as Paddle names them (both versions alike)
STATE = {"adadelta": ["b", "b__avg_squared_grad_0", "b__avg_squared_update_0", "learning_rate_0", "w",
                      "w__avg_squared_grad_0", "w__avg_squared_update_0"],
         "lamb": ["b", "b_beta1_pow_acc_0", "b_beta2_pow_acc_0", "b_moment1_0", "b_moment2_0", "learning_rate_0",
                  "w", "w_beta1_pow_acc_0", "w_beta2_pow_acc_0", "w_moment1_0", "w_moment2_0"]}


@pytest.mark.parametrize("case", sorted(FLUID_CASES))
def test_fluid_optimizer_trains_as_paddle_1_8_5(case):
    main, startup, _ = _program(FLUID_CASES[case])
    assert sorted(v.name for v in main.list_vars() if v.persistable) == STATE[case.split("_")[0]]
    scope = _train(main, startup)
    _assert_pinned(scope, PADDLE185[case])
    if case.startswith("lamb"):  # Paddle 1.8's lamb op never advances the pows
        assert float(np.array(scope.vars["w_beta1_pow_acc_0"])[0]) == pytest.approx(0.8 if case == "lamb" else 0.9)


@pytest.mark.parametrize("case", sorted(PADDLE_CASES))
def test_paddle_optimizer_trains_as_paddle_3_0_0(case):
    main, startup, _ = _program(PADDLE_CASES[case], api="static")
    assert sorted(v.name for v in main.list_vars() if v.persistable) == STATE[case.split("_")[0]]
    scope = _train(main, startup)
    _assert_pinned(scope, PADDLE300[case])
    if case == "lamb":
        np.testing.assert_allclose(np.array(scope.vars["w_beta1_pow_acc_0"]), [0.8 ** 4], rtol=1e-6)


@pytest.mark.parametrize("seed", [7, 12345])
def test_dpsgd_with_a_fixed_seed_trains_as_paddle_1_8_5(seed):
    def make():
        opt = O.Dpsgd(learning_rate=0.1, clip=0.5, batch_size=2.0, sigma=0.3)
        opt._seed = seed  # Paddle's debugging property
        return opt
    main, startup, _ = _program(make)
    (op, *_) = [op for op in main.global_block().ops if op.type == "dpsgd"]
    assert (op.attr("clip"), op.attr("batch_size"), op.attr("sigma"), op.attr("seed")) == (0.5, 2.0, 0.3, seed)
    _assert_pinned(_train(main, startup), PADDLE185[f"dpsgd_seed{seed}"])


def test_dpsgd_noise_is_one_draw_per_step_and_seeded_by_the_clock_by_default():
    """seed 0 (the default): every element of a parameter gets the same noise, and the draw comes
    from the time in seconds: two programs run in the same second move alike."""
    from psjob.foundation.kernels.optimizers import dpsgd_noise
    main, startup, _ = _program(lambda: O.Dpsgd(learning_rate=0.1, clip=1e6, batch_size=1.0, sigma=0.5))
    assert {op.attr("seed") for op in main.global_block().ops if op.type == "dpsgd"} == {0}
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    before = np.array(scope.vars["b"])
    h = X @ W0 + B0
    grad_b = (2 * h / h.size).sum(0)
    exe.run(main, feed={"x": X}, scope=scope)
    noise = (before - np.array(scope.vars["b"])) / 0.1 - grad_b  # lr 0.1, no clipping, batch_size 1
    assert np.ptp(noise) < 1e-5 and abs(noise[0]) > 0
    assert dpsgd_noise(5, 1.0) == dpsgd_noise(5, 1.0) != dpsgd_noise(6, 1.0)


def test_dpsgd_refuses_a_sparse_gradient():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64")
        emb = fluid.layers.embedding(ids, size=[10, 2], is_sparse=True)
        O.Dpsgd(0.1).minimize(fluid.layers.mean(emb))
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    with pytest.raises(Exception, match="dpsgd takes dense gradients only"):
        exe.run(main, feed={"ids": np.array([[1], [2]], dtype="int64")}, scope=scope)


# -- paddle.optimizer.lr.OneCycleLR, CyclicLR ---------------------------------------------------------

L = psjob.optimizer.lr
SCHEDULERS = {
    "onecycle_cos": lambda: L.OneCycleLR(max_learning_rate=1.0, total_steps=10),
    "onecycle_lin3": lambda: L.OneCycleLR(max_learning_rate=0.5, total_steps=12, divide_factor=5.0,
                                          end_learning_rate=0.01, phase_pct=0.25, anneal_strategy="linear",
                                          three_phase=True),
    "cyclic_tri": lambda: L.CyclicLR(base_learning_rate=0.1, max_learning_rate=0.5, step_size_up=3),
    "cyclic_tri2": lambda: L.CyclicLR(base_learning_rate=0.1, max_learning_rate=0.5, step_size_up=2,
                                      step_size_down=3, mode="triangular2"),
    "cyclic_exp": lambda: L.CyclicLR(base_learning_rate=0.1, max_learning_rate=0.5, step_size_up=2,
                                     mode="exp_range", exp_gamma=0.9),
    "cyclic_fn": lambda: L.CyclicLR(base_learning_rate=0.1, max_learning_rate=0.5, step_size_up=2,
                                    scale_fn=lambda x: 1.0 / (x + 1), scale_mode="iterations"),
}


@pytest.mark.parametrize("case", sorted(SCHEDULERS))
def test_scheduler_rates_equal_paddle_3_0_0(case):
    scheduler, rates = SCHEDULERS[case](), []
    for _ in range(10):
        rates.append(scheduler())
        scheduler.step()
    np.testing.assert_allclose(rates, PADDLE300_LR[case], rtol=1e-8, atol=1e-9)


def test_one_cycle_refuses_steps_past_total_steps_and_bad_arguments():
    scheduler = L.OneCycleLR(max_learning_rate=0.1, total_steps=2)
    scheduler.step()
    scheduler.step()
    with pytest.raises(ValueError, match="past total_steps=2"):
        scheduler.step()
    with pytest.raises(ValueError, match="three_phase=True, phase_pct must be below 0.5"):
        L.OneCycleLR(0.1, 10, phase_pct=0.5, three_phase=True)
    with pytest.raises(ValueError, match="anneal_strategy"):
        L.OneCycleLR(0.1, 10, anneal_strategy="exp")
    with pytest.raises(ValueError, match="mode must be"):
        L.CyclicLR(0.1, 0.5, 2, mode="sine")
    with pytest.raises(ValueError, match="step_size_up must be a positive int"):
        L.CyclicLR(0.1, 0.5, 0)


@pytest.mark.parametrize("case", ["sgd_onecycle", "momentum_cyclic"])
def test_schedulers_drive_a_static_program_as_paddle_3_0_0(case):
    paddle = psjob
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), fluid.unique_name.guard():
        x = paddle.static.data(name="x", shape=[-1, 3], dtype="float32")
        h = paddle.static.nn.fc(x, 2, bias_attr=False, weight_attr=paddle.ParamAttr(
            name="w", initializer=paddle.nn.initializer.Assign(np.arange(6, dtype="float32").reshape(3, 2) / 10)))
        if case == "sgd_onecycle":
            scheduler = L.OneCycleLR(max_learning_rate=0.5, total_steps=6)
            opt = paddle.optimizer.SGD(learning_rate=scheduler)
        else:
            scheduler = L.CyclicLR(0.05, 0.3, 2)
            opt = paddle.optimizer.Momentum(learning_rate=scheduler, momentum=0.9)
        opt.minimize(paddle.mean(h * h))
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    for _ in range(5):
        exe.run(main, feed={"x": np.array([[1, 2, 3], [0.5, -1, 2]], dtype="float32")}, scope=scope)
        scheduler.step()
    np.testing.assert_allclose(np.array(scope.vars["w"]), PADDLE300_LR[case], rtol=1e-6, atol=1e-7)


# -- on parameter servers ------------------------------------------------------------------------------

def _net(make_opt, distributed_table=False, hidden=8):
    return pserver_net(make_opt, sparse=False, distributed_table=distributed_table, hidden=hidden)


def _seeded_dpsgd():
    opt = O.Dpsgd(learning_rate=0.05, clip=0.5, batch_size=12.0, sigma=0.1)
    opt._seed = 3
    return opt


PSERVER_CASES = {
    "fluid_adadelta": (lambda: O.Adadelta(1.0, epsilon=1e-4, rho=0.9), "adadelta"),
    "paddle_adadelta": (lambda: psjob.optimizer.Adadelta(0.5, epsilon=1e-4, rho=0.9), "adadelta"),
    "fluid_lamb": (lambda: O.Lamb(0.02, lamb_weight_decay=0.01), "lamb"),
    "paddle_lamb": (lambda: psjob.optimizer.Lamb(0.02, lamb_weight_decay=0.01), "lamb"),
    "fluid_dpsgd": (_seeded_dpsgd, "dpsgd"),
}


@pytest.mark.parametrize("case", sorted(PSERVER_CASES))
def test_sync_pserver_training_equals_single_machine_training(case):
    """The optimizer ops move to the pservers with their attributes (Paddle version's rule, dpsgd's
    seed) and train the whole parameters (slice_var_up=False) as one machine does."""
    make_opt, op_type = PSERVER_CASES[case]
    build = _net(make_opt)
    cfg = DistributeTranspilerConfig()
    cfg.slice_var_up = False
    main, startup, _ = build()
    t = DistributeTranspiler(cfg)
    t.transpile(0, program=main, startup_program=startup, pservers=",".join(EPS[:2]), trainers=2)
    moved = [op for ep in EPS[:2] for block in t.get_pserver_program(ep).blocks for op in block.ops
             if op.type == op_type]
    assert len(moved) == 5  # emb, fc_0.w_0, fc_0.b_0, fc_1.w_0, fc_1.b_0
    assert not [op for op in t.get_trainer_program(wait_port=False).global_block().ops if op.type == op_type]
    feeds = batches("ids", 4, 12)
    ref, _ = single_machine(build, feeds)
    cluster, results, _ = distributed(build, feeds, 2, 2, config=cfg)
    for name, value in ref.items():
        for scope, *_ in results:
            np.testing.assert_allclose(scope.vars[name], value, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("make_opt", [lambda: O.Lamb(0.02), lambda: psjob.optimizer.Lamb(0.02), _seeded_dpsgd])
def test_a_parameter_they_would_slice_is_refused_naming_the_settings(make_opt):
    main, startup, _ = _net(make_opt, hidden=1024)()  # emb [1024, 16] and fc_0.w_0 [16, 1024]: sliced
    with pytest.raises(UnsupportedOptimizerError, match="slice_var_up = False"):
        DistributeTranspiler().transpile(0, program=main, startup_program=startup, pservers=",".join(EPS[:2]),
                                         trainers=2)


@pytest.mark.parametrize("make_opt", [lambda: O.Lamb(0.02), _seeded_dpsgd])
def test_a_distributed_table_refuses_lamb_and_dpsgd_naming_table_optimizer_sgd(make_opt):
    with pytest.raises(GraphError, match="table_optimizer = 'sgd'"):
        _net(make_opt, distributed_table=True)()


@pytest.mark.parametrize("make_opt", [lambda: O.Adadelta(1.0, epsilon=1e-4, rho=0.9),
                                      lambda: psjob.optimizer.Adadelta(0.5, epsilon=1e-4, rho=0.9)])
def test_adadelta_updates_a_distributed_table_per_row_as_one_machine(make_opt):
    build = _net(make_opt, distributed_table=True)
    feeds = batches("ids", 4, 12)
    cluster, results, _ = distributed(build, feeds, 2, 2)
    tables = [cluster.handler(ep).scope.vars["emb"] for ep in EPS[:2]]
    assert {t.config.optimizer.name for t in tables} == {"adadelta"}
    init = table_rows(cluster, EPS[:2], fresh=True)
    ref, _ = single_machine(build, feeds, init={"emb": init})
    np.testing.assert_allclose(table_rows(cluster, EPS[:2]), ref["emb"], rtol=1e-5, atol=1e-6)


def test_a_scheduler_does_not_reach_the_pservers_of_a_transpiled_program():
    scheduler = L.OneCycleLR(max_learning_rate=0.1, total_steps=10)
    main, startup, _ = _net(lambda: psjob.optimizer.SGD(learning_rate=scheduler))()
    DistributeTranspiler().transpile(0, program=main, startup_program=startup, pservers=EPS[0], trainers=1)
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(Exception, match="OneCycleLR does not reach the parameter servers"):
        exe.run(main, feed=batches("ids", 1, 2)[0], scope=fluid.Scope())


# -- fluid.optimizer.ModelAverage --------------------------------------------------------------------

# Paddle 1.8.5: SGD(0.1) on _program() (b with do_model_average=False), then
# ModelAverage(0.5, min_average_window=2, max_average_window=3); w's counters after each of 6 steps
# (num_accumulates, old_num_accumulates, num_updates), its sums after the 6th, and w (and the loss of
# the test program) inside apply() after steps 3 and 6.
MA_COUNTS = [(1, 0, 1), (0, 2, 2), (1, 2, 3), (0, 2, 4), (1, 2, 5), (2, 2, 6)]
MA_SUM1_STEP6 = [[-1.159587383, -0.94937849, -0.852506638], [-0.109489739, 0.112310871, 0.422177851],
                 [0.161411554, 0.30582732, 0.592822671], [0.299739391, 0.562029481, 0.38035357]]
MA_SUM3_STEP6 = [[-1.151755095, -0.940956235, -0.8411268], [-0.12775299, 0.080793574, 0.406666309],
                 [0.169063419, 0.331130445, 0.588093281], [0.321287036, 0.5762918, 0.419929385]]
MA_APPLIED = {2: ([[-0.561753154, -0.45705381, -0.398403883], [-0.090335123, 0.009737144, 0.166938946],
                   [0.089020513, 0.177755758, 0.293734521], [0.204359397, 0.32556051, 0.282386839]],
                  0.06719092279672623),
              5: ([[-0.577835619, -0.472583681, -0.423408359], [-0.059310682, 0.048276111, 0.207211047],
                   [0.082618743, 0.159239441, 0.295228988], [0.155256599, 0.28458032, 0.200070739]],
                  0.005981868598610163)}


def _model_average_program():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4], dtype="float32")
        h = fluid.layers.fc(x, 3, param_attr=fluid.ParamAttr(
            name="w", initializer=fluid.initializer.NumpyArrayInitializer(W0)), bias_attr=fluid.ParamAttr(
            name="b", initializer=fluid.initializer.NumpyArrayInitializer(B0), do_model_average=False))
        loss = fluid.layers.reduce_mean(h * h)
        test = main.clone(for_test=True)
        O.SGD(0.1).minimize(loss)
        average = O.ModelAverage(0.5, min_average_window=2, max_average_window=3)
    return main, startup, test, loss, average


def test_model_average_sums_windows_and_applies_the_average_as_paddle_1_8_5():
    main, startup, test, loss, average = _model_average_program()
    assert sorted(v.name for v in main.list_vars() if v.persistable) == [
        "b", "learning_rate_0", "w", "w_num_accumulates_0", "w_num_updates_0", "w_old_num_accumulates_0",
        "w_sum_1_0", "w_sum_2_0", "w_sum_3_0"]
    assert [op.type for op in main.global_block().ops][-3:] == ["sgd", "sgd", "average_accumulates"]
    assert [op.type for op in average.apply_program.global_block().ops] == [
        "assign", "sum", "sum", "cast", "cast", "elementwise_div"]
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        for step in range(6):
            exe.run(main, feed={"x": X})
            counts = tuple(int(np.array(scope.vars[f"w_{n}_0"])[0])
                           for n in ("num_accumulates", "old_num_accumulates", "num_updates"))
            assert counts == MA_COUNTS[step]
            if step in MA_APPLIED:
                trained = {n: np.array(scope.vars[n]) for n in ("w", "b")}
                with average.apply(exe):
                    np.testing.assert_allclose(np.array(scope.vars["w"]), MA_APPLIED[step][0], rtol=1e-6, atol=1e-6)
                    np.testing.assert_array_equal(np.array(scope.vars["b"]), trained["b"])  # not averaged
                    (value,) = exe.run(test, feed={"x": X}, fetch_list=[loss.name])
                    assert float(np.array(value).reshape(-1)[0]) == pytest.approx(MA_APPLIED[step][1], rel=1e-5)
                np.testing.assert_array_equal(np.array(scope.vars["w"]), trained["w"])  # restored
        np.testing.assert_allclose(np.array(scope.vars["w_sum_1_0"]), MA_SUM1_STEP6, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(np.array(scope.vars["w_sum_3_0"]), MA_SUM3_STEP6, rtol=1e-6, atol=1e-6)
        trained = np.array(scope.vars["w"])
        with average.apply(exe, need_restore=False):
            pass
        np.testing.assert_allclose(np.array(scope.vars["w"]), MA_APPLIED[5][0], rtol=1e-6, atol=1e-6)
        average.restore(exe)
        np.testing.assert_array_equal(np.array(scope.vars["w"]), trained)


def test_model_average_is_refused_by_the_transpiler_and_by_minimize():
    main, startup, _, loss, average = _model_average_program()
    with pytest.raises(UnsupportedOptimizerError, match="ModelAverage .* not supported for distributed training"):
        DistributeTranspiler().transpile(0, program=main, startup_program=startup, pservers=EPS[0], trainers=1)
    with pytest.raises(GraphError, match="build it after optimizer.minimize"):
        average.minimize(loss)
