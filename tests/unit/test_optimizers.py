"""fluid.optimizer through the real Executor, against numpy references of
the Fluid formulas written here (not psjob.foundation.kernels), over several steps:
parameters and accumulators (read back by their Paddle names), dense and
sparse (lazy rows, duplicate ids), op roles, regularization, clipping,
argument errors, and convergence of a small linear regression."""
import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.fluid.core import SelectedRows
from psjob.fluid.framework import GraphError, OpRole, VarType

STEPS = 4
RTOL, ATOL = 2e-5, 2e-6


# --------------------------------------------------------------- references
# ref(p, g, s, lr, h): new param (float64); updates the state dict s in place.
# Beta powers are floats (one per variable).

def ref_sgd(p, g, s, lr, h):
    return p - lr * g


def ref_momentum(p, g, s, lr, h):
    s["velocity"] = h["mu"] * s["velocity"] + g
    if h.get("nesterov"):
        return p - lr * (g + h["mu"] * s["velocity"])
    return p - lr * s["velocity"]


def ref_lars(p, g, s, lr, h, p_norm=None):
    p_norm = np.sqrt((p * p).sum()) if p_norm is None else p_norm
    g_norm = np.sqrt((g * g).sum())
    wd = h["wd"]
    local = lr * h["coeff"] * p_norm / (g_norm + wd * p_norm) if p_norm > 0 and g_norm > 0 else lr
    s["velocity"] = h["mu"] * s["velocity"] + local * (g + wd * p)
    return p - s["velocity"]


def ref_adam(p, g, s, lr, h):
    b1, b2 = h["beta1"], h["beta2"]
    s["moment1"] = b1 * s["moment1"] + (1 - b1) * g
    s["moment2"] = b2 * s["moment2"] + (1 - b2) * g * g
    b1p, b2p = s["beta1_pow_acc"], s["beta2_pow_acc"]
    lr_t = lr * np.sqrt(1 - b2p) / (1 - b1p)
    # Fluid 1.x (Paddle 1.8's adam op): epsilon as it is, not scaled by sqrt(1 - b2p)
    out = p - lr_t * s["moment1"] / (np.sqrt(s["moment2"]) + h["eps"])
    s["beta1_pow_acc"], s["beta2_pow_acc"] = b1p * b1, b2p * b2
    return out


def ref_adam_sparse(p, g, s, lr, h):
    """Paddle's CPU adam kernel for a SelectedRows gradient writes the advanced pows before
    its update reads them (checked against Paddle 1.8.5 and 3.0.0)."""
    advanced = s["beta1_pow_acc"] * h["beta1"], s["beta2_pow_acc"] * h["beta2"]
    s["beta1_pow_acc"], s["beta2_pow_acc"] = advanced
    out = ref_adam(p, g, s, lr, h)
    s["beta1_pow_acc"], s["beta2_pow_acc"] = advanced
    return out


def ref_adamax(p, g, s, lr, h):
    s["moment"] = h["beta1"] * s["moment"] + (1 - h["beta1"]) * g
    s["inf_norm"] = np.maximum(h["beta2"] * s["inf_norm"] + h["eps"], np.abs(g))
    out = p - lr / (1 - s["beta1_pow_acc"]) * s["moment"] / s["inf_norm"]
    s["beta1_pow_acc"] *= h["beta1"]
    return out


def ref_adagrad(p, g, s, lr, h):
    s["moment"] = s["moment"] + g * g
    return p - lr * g / (np.sqrt(s["moment"]) + h["eps"])


def ref_decayed_adagrad(p, g, s, lr, h):
    s["moment"] = h["decay"] * s["moment"] + (1 - h["decay"]) * g * g
    return p - lr * g / (np.sqrt(s["moment"]) + h["eps"])


def ref_rmsprop(p, g, s, lr, h):
    rho = h["rho"]
    s["mean_square"] = rho * s["mean_square"] + (1 - rho) * g * g
    denom = s["mean_square"] + h["eps"]
    if h.get("centered"):
        s["mean_grad"] = rho * s["mean_grad"] + (1 - rho) * g
        denom = denom - s["mean_grad"] ** 2
    s["momentum"] = h["momentum"] * s["momentum"] + lr * g / np.sqrt(denom)
    return p - s["momentum"]


def ref_ftrl(p, g, s, lr, h):
    k = -h["lr_power"]
    sq, new_sq = s["squared"], s["squared"] + g * g
    s["linear"] = s["linear"] + g - (new_sq ** k - sq ** k) / lr * p
    s["squared"] = new_sq
    lin = s["linear"]
    x = h["l1"] * np.sign(lin) - lin
    y = new_sq ** k / lr + 2 * h["l2"]
    return np.where(np.abs(lin) > h["l1"], x / y, 0.0)


# name: (optimizer factory, reference, hyper, {accumulator: initial value or "zeros"})
CASES = {
    "sgd": (lambda: fluid.optimizer.SGD(0.1), ref_sgd, {}, {}),
    "momentum": (lambda: fluid.optimizer.Momentum(0.1, 0.8), ref_momentum, {"mu": 0.8},
                 {"velocity": 0.0}),
    "nesterov": (lambda: fluid.optimizer.Momentum(0.1, 0.8, use_nesterov=True), ref_momentum,
                 {"mu": 0.8, "nesterov": True}, {"velocity": 0.0}),
    "lars_momentum": (lambda: fluid.optimizer.LarsMomentum(0.5, 0.7, lars_coeff=0.05,
                                                           lars_weight_decay=0.01),
                      ref_lars, {"mu": 0.7, "coeff": 0.05, "wd": 0.01}, {"velocity": 0.0}),
    "adam": (lambda: fluid.optimizer.Adam(0.05, beta1=0.8, beta2=0.9, epsilon=1e-4), ref_adam,
             {"beta1": 0.8, "beta2": 0.9, "eps": 1e-4},
             {"moment1": 0.0, "moment2": 0.0, "beta1_pow_acc": 0.8, "beta2_pow_acc": 0.9}),
    "adamax": (lambda: fluid.optimizer.Adamax(0.05, beta1=0.8, beta2=0.9, epsilon=1e-4), ref_adamax,
               {"beta1": 0.8, "beta2": 0.9, "eps": 1e-4},
               {"moment": 0.0, "inf_norm": 0.0, "beta1_pow_acc": 0.8}),
    "adagrad": (lambda: fluid.optimizer.Adagrad(0.1, epsilon=1e-5, initial_accumulator_value=0.2),
                ref_adagrad, {"eps": 1e-5}, {"moment": 0.2}),
    "decayed_adagrad": (lambda: fluid.optimizer.DecayedAdagrad(0.1, decay=0.8, epsilon=1e-5),
                        ref_decayed_adagrad, {"decay": 0.8, "eps": 1e-5}, {"moment": 0.0}),
    "rmsprop": (lambda: fluid.optimizer.RMSProp(0.05, rho=0.8, epsilon=1e-4, momentum=0.5),
                ref_rmsprop, {"rho": 0.8, "eps": 1e-4, "momentum": 0.5},
                {"mean_square": 0.0, "momentum": 0.0, "mean_grad": 0.0}),
    "rmsprop_centered": (lambda: fluid.optimizer.RMSProp(0.05, rho=0.8, epsilon=1e-2, momentum=0.5,
                                                         centered=True),
                         ref_rmsprop, {"rho": 0.8, "eps": 1e-2, "momentum": 0.5, "centered": True},
                         {"mean_square": 0.0, "momentum": 0.0, "mean_grad": 0.0}),
    "ftrl": (lambda: fluid.optimizer.Ftrl(0.1, l1=0.01, l2=0.02), ref_ftrl,
             {"l1": 0.01, "l2": 0.02, "lr_power": -0.5}, {"squared": 0.0, "linear": 0.0}),
    "ftrl_power": (lambda: fluid.optimizer.Ftrl(0.1, l1=0.001, l2=0.0, lr_power=-0.7), ref_ftrl,
                   {"l1": 0.001, "l2": 0.0, "lr_power": -0.7}, {"squared": 0.0, "linear": 0.0}),
}
LR = {"sgd": 0.1, "momentum": 0.1, "nesterov": 0.1, "lars_momentum": 0.5, "adam": 0.05,
      "adamax": 0.05, "adagrad": 0.1, "decayed_adagrad": 0.1, "rmsprop": 0.05,
      "rmsprop_centered": 0.05, "ftrl": 0.1, "ftrl_power": 0.1}


def _read(scope, name):
    return np.array(scope.find_var(name).get_tensor()).astype(np.float64)


def _init_state(scope, param, accs):
    """Read each accumulator by its Paddle name; check its initial value."""
    state = {}
    for acc, init in accs.items():
        value = _read(scope, f"{param}_{acc}_0")
        np.testing.assert_allclose(value, init, rtol=1e-7)
        state[acc] = float(value[0]) if acc.endswith("pow_acc") else value
    return state


def _check_state(scope, param, state):
    for acc, want in state.items():
        got = _read(scope, f"{param}_{acc}_0")
        np.testing.assert_allclose(got, np.broadcast_to(want, got.shape), rtol=RTOL, atol=ATOL,
                                   err_msg=f"accumulator {param}_{acc}_0")


def _regression_net(out_dim=3, param_attr=None):
    x = fluid.layers.data(name="x", shape=[4])
    y = fluid.layers.data(name="y", shape=[out_dim])
    pred = fluid.layers.fc(x, out_dim, param_attr=param_attr)
    return fluid.layers.mean(fluid.layers.square_error_cost(pred, y))


def _build(make_opt, net=_regression_net):
    main, startup = fluid.Program(), fluid.Program()
    startup.random_seed = 11
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        loss = net()
        opt = make_opt()
        ops, params_grads = opt.minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    return main, exe, scope, loss, ops, params_grads


def _batches(seed, n=STEPS, out_dim=3):
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(6, 4)).astype("float32"), rng.normal(size=(6, out_dim)).astype("float32"))
            for _ in range(n)]


@pytest.mark.parametrize("case", sorted(CASES))
def test_dense_updates_and_accumulators_match_the_numpy_formula_every_step(case):
    make_opt, ref, hyper, accs = CASES[case]
    main, exe, scope, loss, _, params_grads = _build(make_opt)
    names = [p.name for p, _ in params_grads]
    assert sorted(names) == ["fc_0.b_0", "fc_0.w_0"]
    params = {n: _read(scope, n) for n in names}
    states = {n: _init_state(scope, n, accs) for n in names}
    np.testing.assert_allclose(_read(scope, "learning_rate_0"), [LR[case]], rtol=1e-7)
    for x, y in _batches(1):
        grads = exe.run(main, feed={"x": x, "y": y}, fetch_list=[g for _, g in params_grads],
                        scope=scope)
        for n, g in zip(names, grads):
            params[n] = ref(params[n], g.astype(np.float64), states[n], LR[case], hyper)
            np.testing.assert_allclose(_read(scope, n), params[n], rtol=RTOL, atol=ATOL,
                                       err_msg=f"{case}: parameter {n}")
            _check_state(scope, n, states[n])


# --------------------------------------------------------------- sparse

SPARSE_ROWS = [[1, 5, 1, 3], [0, 5, 5], [7], [1, 3, 3, 6]]
HEIGHT, WIDTH = 8, 3


def _sparse_program(make_opt):
    main, startup = fluid.Program(), fluid.Program()
    startup.random_seed = 5
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        emb = fluid.layers.create_parameter([HEIGHT, WIDTH], "float32", name="emb",
                                            default_initializer=fluid.initializer.Uniform(-1, 1))
        grad = main.global_block().create_var(name="emb@GRAD", shape=[HEIGHT, WIDTH],
                                              dtype="float32", type=VarType.SELECTED_ROWS)
        ops = make_opt().apply_gradients([(emb, grad)])
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    return main, exe, scope, ops


def _merge(rows, values):
    uniq = sorted(set(rows))
    merged = np.zeros((len(uniq), values.shape[1]))
    for r, v in zip(rows, values):
        merged[uniq.index(r)] += v
    return np.array(uniq), merged


def _lazy_ref(ref, p, rows, values, state, lr, hyper, case):
    """Apply the dense formula to the merged rows only."""
    uniq, merged = _merge(rows, values)
    sub = {k: (v if np.isscalar(v) else v[uniq].copy()) for k, v in state.items()}
    extra = {"p_norm": np.sqrt((p * p).sum())} if case == "lars_momentum" else {}
    p = p.copy()
    p[uniq] = ref(p[uniq], merged, sub, lr, hyper, **extra)
    for k, v in sub.items():
        if np.isscalar(v):
            state[k] = v
        else:
            state[k][uniq] = v
    return p


@pytest.mark.parametrize("case", sorted(CASES))
def test_sparse_gradients_update_only_their_rows_with_duplicate_ids_summed(case):
    make_opt, ref, hyper, accs = CASES[case]
    if case == "adam":
        make_opt = lambda: fluid.optimizer.Adam(0.05, beta1=0.8, beta2=0.9, epsilon=1e-4,
                                                lazy_mode=True)
        ref = ref_adam_sparse
    main, exe, scope, _ = _sparse_program(make_opt)
    param = _read(scope, "emb")
    state = _init_state(scope, "emb", accs)
    state = {k: (np.broadcast_to(v, param.shape).copy() if not np.isscalar(v) else v)
             for k, v in state.items()}
    rng = np.random.default_rng(3)
    for rows in SPARSE_ROWS:
        values = rng.normal(size=(len(rows), WIDTH)).astype("float32")
        scope.vars["emb@GRAD"] = SelectedRows(np.array(rows, dtype=np.int64), values, HEIGHT)
        before = _read(scope, "emb")
        exe.run(main, scope=scope)
        param = _lazy_ref(ref, param, rows, values.astype(np.float64), state, LR[case], hyper, case)
        after = _read(scope, "emb")
        untouched = sorted(set(range(HEIGHT)) - set(rows))
        np.testing.assert_array_equal(after[untouched], before[untouched])
        np.testing.assert_allclose(after, param, rtol=RTOL, atol=ATOL, err_msg=case)
        _check_state(scope, "emb", state)


def test_adam_without_lazy_mode_densifies_a_sparse_gradient_as_fluid_does():
    _, _, hyper, accs = CASES["adam"]
    main, exe, scope, _ = _sparse_program(
        lambda: fluid.optimizer.Adam(0.05, beta1=0.8, beta2=0.9, epsilon=1e-4))
    param = _read(scope, "emb")
    state = {k: (np.zeros_like(param) if not k.endswith("pow_acc") else v)
             for k, v in _init_state(scope, "emb", accs).items()}
    rng = np.random.default_rng(4)
    for rows in SPARSE_ROWS:
        values = rng.normal(size=(len(rows), WIDTH)).astype("float32")
        scope.vars["emb@GRAD"] = SelectedRows(np.array(rows, dtype=np.int64), values, HEIGHT)
        exe.run(main, scope=scope)
        dense = np.zeros((HEIGHT, WIDTH))
        np.add.at(dense, rows, values.astype(np.float64))
        param = ref_adam_sparse(param, dense, state, 0.05, hyper)
        np.testing.assert_allclose(_read(scope, "emb"), param, rtol=RTOL, atol=ATOL)
    # Rows never looked up still moved: their moments decay in non-lazy mode.
    assert 2 not in {r for rows in SPARSE_ROWS for r in rows}
    assert np.abs(_read(scope, "emb_moment1_0")[2]).sum() == 0  # zero grads keep m1 at 0
    assert (_read(scope, "emb_moment1_0")[[0, 7]] != 0).all()


def test_sparse_embedding_trains_through_the_executor_end_to_end():
    def net():
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64")
        emb = fluid.layers.embedding(ids, size=[HEIGHT, WIDTH], is_sparse=True,
                                     param_attr=fluid.ParamAttr(name="emb"))
        return fluid.layers.mean(fluid.layers.reduce_sum(emb * emb, dim=1))
    main, exe, scope, loss, ops, params_grads = _build(lambda: fluid.optimizer.Adagrad(0.1), net)
    assert params_grads[0][1].type == VarType.SELECTED_ROWS
    before = _read(scope, "emb")
    ids = np.array([[2], [4], [2]], dtype=np.int64)
    exe.run(main, feed={"ids": ids}, scope=scope)
    after = _read(scope, "emb")
    # d(loss)/d(row) = 2*row/3 per occurrence; row 2 occurs twice.
    g = np.zeros_like(before)
    g[2], g[4] = 4 * before[2] / 3, 2 * before[4] / 3
    want = before.copy()
    for r in (2, 4):
        want[r] = before[r] - 0.1 * g[r] / (np.sqrt(g[r] ** 2) + 1e-6)
    np.testing.assert_allclose(after, want, rtol=1e-5, atol=1e-6)
    assert np.array_equal(after[[0, 1, 3, 5, 6, 7]], before[[0, 1, 3, 5, 6, 7]])


# --------------------------------------------------------------- program structure

def test_optimizer_ops_carry_the_optimize_role_and_their_param_grad_pair():
    def net():
        return _regression_net(param_attr=fluid.ParamAttr(learning_rate=0.5))
    main, *_ , ops, params_grads = _build(
        lambda: fluid.optimizer.Momentum(0.1, 0.9, regularization=fluid.regularizer.L2Decay(0.01)),
        net)
    block = main.global_block()
    momentum_ops = [op for op in block.ops if op.type == "momentum"]
    assert [op.input("Param") for op in momentum_ops] == [["fc_0.b_0"], ["fc_0.w_0"]]
    for op in momentum_ops:
        p = op.input("Param")[0]
        assert op.attr("op_role") == int(OpRole.Optimize)
        # As in Fluid: the pair names the gradient the op consumes (here the decayed one).
        assert op.attr("op_role_var") == [p, op.input("Grad")[0]]
        assert op.output("ParamOut") == [p]
        assert op.input("Velocity") == op.output("VelocityOut") == [p + "_velocity_0"]
    for op in (op for op in block.ops if op.type == "l2_decay"):
        p = op.input("Param")[0]
        assert op.attr("op_role") == int(OpRole.Optimize)
        assert op.attr("op_role_var") == [p, p + "@GRAD"] == [p, op.input("Grad")[0]]
    # The decayed gradient feeds the optimizer op; w reads a scaled learning rate.
    w_op = momentum_ops[1]
    assert w_op.input("Grad")[0].startswith("fc_0.w_0@GRAD_decayed")
    assert w_op.input("LearningRate") != ["learning_rate_0"]
    scale_op = next(op for op in block.ops if w_op.input("LearningRate")[0] in op.output_arg_names)
    assert scale_op.type == "scale" and scale_op.attr("scale") == 0.5
    assert scale_op.attr("op_role") == int(OpRole.LRSched | OpRole.Optimize)
    assert momentum_ops[0].input("LearningRate") == ["learning_rate_0"]
    assert set(op.type for op in ops) >= {"momentum", "scale"}
    for name in ("learning_rate_0", "fc_0.w_0_velocity_0", "fc_0.b_0_velocity_0"):
        assert block.var(name).persistable
    assert list(block.var("fc_0.w_0_velocity_0").shape) == [4, 3]


def test_beta_power_accumulators_are_origin_shaped_and_start_at_beta():
    main, exe, scope, *_ = _build(lambda: fluid.optimizer.Adam(0.01, beta1=0.7, beta2=0.95))
    block = main.global_block()
    assert list(block.var("fc_0.w_0_beta1_pow_acc_0").shape) == [1]
    assert list(block.var("fc_0.w_0_moment1_0").shape) == [4, 3]
    np.testing.assert_allclose(_read(scope, "fc_0.w_0_beta2_pow_acc_0"), [0.95], rtol=1e-7)


def test_a_per_parameter_learning_rate_scales_the_global_one():
    def net():
        return _regression_net(param_attr=fluid.ParamAttr(learning_rate=0.25))
    main, exe, scope, loss, ops, params_grads = _build(lambda: fluid.optimizer.SGD(0.2), net)
    w0, b0 = _read(scope, "fc_0.w_0"), _read(scope, "fc_0.b_0")
    x, y = _batches(2, n=1)[0]
    gb, gw = exe.run(main, feed={"x": x, "y": y}, fetch_list=["fc_0.b_0@GRAD", "fc_0.w_0@GRAD"],
                     scope=scope)
    np.testing.assert_allclose(_read(scope, "fc_0.w_0"), w0 - 0.05 * gw, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(_read(scope, "fc_0.b_0"), b0 - 0.2 * gb, rtol=RTOL, atol=ATOL)


def test_a_cloned_program_trains_exactly_like_the_original():
    main, exe, scope, loss, *_ = _build(lambda: fluid.optimizer.Adam(0.01))
    clone = main.clone()
    scope2 = fluid.Scope()
    scope2.vars.update({k: v.copy() for k, v in scope.vars.items()})
    for x, y in _batches(7, n=2):
        exe.run(main, feed={"x": x, "y": y}, scope=scope)
        exe.run(clone, feed={"x": x, "y": y}, scope=scope2)
    for name in ("fc_0.w_0", "fc_0.w_0_moment2_0", "fc_0.w_0_beta1_pow_acc_0"):
        np.testing.assert_array_equal(_read(scope, name), _read(scope2, name))
    assert not any(op.type == "adam" for op in main.clone(for_test=True).global_block().ops)


def _table_net(param_attr=None):
    def net():
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64")
        emb = fluid.layers.embedding(ids, size=[HEIGHT, WIDTH], is_sparse=True, is_distributed=True,
                                     param_attr=param_attr or fluid.ParamAttr(name="table"))
        return fluid.layers.mean(fluid.layers.fc(emb, 1))
    return net


def _table_optimizer(make_opt, table_optimizer):
    def make():
        opt = make_opt()
        if table_optimizer is not None:
            opt.table_optimizer = table_optimizer
        return opt
    return make


def test_a_distributed_lookup_table_is_updated_per_row_by_the_optimizers_own_rule():
    """Adam on the table: lazy whatever lazy_mode says, beta powers per row ([HEIGHT, 1]),
    advanced only for the rows looked up: the rule the pservers' SparseTable runs. Checked
    against an independent float64 Adam per row."""
    b1, b2, eps, lr = 0.8, 0.95, 1e-6, 0.05
    main, exe, scope, loss, ops, _ = _build(lambda: fluid.optimizer.Adam(lr, b1, b2, eps), _table_net())
    by_param = {op.input("Param")[0]: op for op in main.global_block().ops if op.input("Param")}
    table_op = by_param["table"]
    assert table_op.type == "adam" and table_op.attr("lazy_mode") is True
    assert table_op.attr("op_role_var") == ["table", "table@GRAD"]
    assert by_param["fc_0.w_0"].attr("lazy_mode") is False  # dense parameters keep the optimizer's
    gb = main.global_block()
    assert list(gb.var("table_moment1_0").shape) == [HEIGHT, WIDTH]
    assert list(gb.var("table_beta1_pow_acc_0").shape) == [HEIGHT, 1]
    assert ops[0] is table_op

    p = _read(scope, "table")
    m1, m2 = np.zeros_like(p), np.zeros_like(p)
    pows = np.tile([[b1, b2]], (HEIGHT, 1)).astype(np.float64)
    rng = np.random.default_rng(3)
    for step in range(3):
        ids = rng.integers(0, HEIGHT // 2, size=(6, 1)).astype("int64")  # rows >= HEIGHT/2 never move
        ids[:2] = 1  # a repeated id: its gradients are summed, one step for the row
        w = _read(scope, "fc_0.w_0")
        exe.run(main, feed={"ids": ids}, scope=scope)
        g = np.zeros_like(p)
        np.add.at(g, ids[:, 0], np.tile(w[:, 0] / len(ids), (len(ids), 1)))  # d mean(emb @ w) / d emb
        rows = np.unique(ids)
        m1[rows] = b1 * m1[rows] + (1 - b1) * g[rows]
        m2[rows] = b2 * m2[rows] + (1 - b2) * g[rows] ** 2
        corr = np.sqrt(1 - pows[rows, 1:2])
        p[rows] -= lr * corr / (1 - pows[rows, 0:1]) * m1[rows] / (np.sqrt(m2[rows]) + eps)
        pows[rows] *= [b1, b2]
    np.testing.assert_allclose(_read(scope, "table"), p, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(_read(scope, "table_beta1_pow_acc_0")[:, 0], pows[:, 0], rtol=1e-6)
    np.testing.assert_allclose(_read(scope, "table_beta2_pow_acc_0")[:, 0], pows[:, 1], rtol=1e-6)
    assert (_read(scope, "table_beta1_pow_acc_0")[HEIGHT // 2:] == np.float32(b1)).all()


@pytest.mark.parametrize("make_opt,rule,state", [
    (lambda: fluid.optimizer.Adagrad(0.1), "adagrad", {"moment": [HEIGHT, WIDTH]}),
    (lambda: fluid.optimizer.Adamax(0.1), "adamax", {"moment": [HEIGHT, WIDTH], "beta1_pow_acc": [HEIGHT, 1]}),
    (lambda: fluid.optimizer.Momentum(0.1, 0.9), "momentum", {"velocity": [HEIGHT, WIDTH]}),
    (lambda: fluid.optimizer.SGD(0.1), "sgd", {}),
])
def test_other_optimizers_update_the_table_with_their_rule_and_per_row_state(make_opt, rule, state):
    main, *_ = _build(make_opt, _table_net())
    gb = main.global_block()
    assert [op.type for op in gb.ops if op.input("Param") == ["table"]] == [rule]
    for name, shape in state.items():
        assert list(gb.var(f"table_{name}_0").shape) == shape


def test_table_optimizer_sgd_keeps_fluid_1x_plain_sgd_for_the_table():
    main, *_ = _build(_table_optimizer(lambda: fluid.optimizer.Adam(0.01), "sgd"), _table_net())
    by_param = {op.input("Param")[0]: op.type for op in main.global_block().ops if op.input("Param")}
    assert by_param == {"table": "sgd", "fc_0.w_0": "adam", "fc_0.b_0": "adam"}
    assert not main.global_block().has_var("table_moment1_0")


@pytest.mark.parametrize("bad", ["adam", "SGD", None, 1])
def test_a_bad_table_optimizer_is_refused_naming_the_accepted_values_before_anything_is_built(bad):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        loss = _table_net()()
        n_ops = len(main.global_block().ops)
        opt = fluid.optimizer.Adam(0.01)
        opt.table_optimizer = bad
        with pytest.raises(ValueError, match="table_optimizer must be one of 'same', 'sgd'"):
            opt.minimize(loss)
    assert len(main.global_block().ops) == n_ops  # not even backward was appended


def test_lars_cannot_update_a_distributed_table_per_row_and_says_how_to_use_sgd():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        loss = _table_net()()
        with pytest.raises(GraphError, match="norm of the whole table.*table_optimizer = 'sgd'"):
            fluid.optimizer.LarsMomentum(0.01, 0.9).minimize(loss)
    main, *_ = _build(_table_optimizer(lambda: fluid.optimizer.LarsMomentum(0.01, 0.9), "sgd"), _table_net())
    assert [op.type for op in main.global_block().ops if op.input("Param") == ["table"]] == ["sgd"]


def test_clipping_and_weight_decay_are_not_applied_to_a_distributed_table(caplog):
    attr = fluid.ParamAttr(name="table", regularizer=fluid.regularizer.L2Decay(0.5),
                           gradient_clip=fluid.clip.GradientClipByValue(1e-4))
    with caplog.at_level("WARNING", logger="psjob.fluid.optimizer"):
        main, *_ = _build(lambda: fluid.optimizer.Adagrad(0.1, regularization=fluid.regularizer.L2Decay(0.1)),
                          _table_net(attr))
    table_op = next(op for op in main.global_block().ops if op.input("Param") == ["table"])
    assert table_op.input("Grad") == ["table@GRAD"]  # the raw gradient: no clip, no decay op between
    assert not [op for op in main.global_block().ops if "table@GRAD" in op.input_arg_names
                and op.type not in ("adagrad", "lookup_table_grad")]
    assert "without its gradient_clip and its regularizer" in caplog.text


# --------------------------------------------------------------- regularization and clipping

def _one_sgd_step(net, make_opt, fetch):
    main, exe, scope, *_ = _build(make_opt, net)
    before = {n: _read(scope, n) for n in ("fc_0.w_0", "fc_0.b_0")}
    x, y = _batches(9, n=1)[0]
    grads = exe.run(main, feed={"x": x, "y": y}, fetch_list=fetch, scope=scope)
    after = {n: _read(scope, n) for n in before}
    return before, after, [g.astype(np.float64) for g in grads]


def test_l2_decay_adds_coeff_times_param_and_a_param_attr_regularizer_wins():
    def net():
        return _regression_net(param_attr=fluid.ParamAttr(regularizer=fluid.regularizer.L1Decay(0.3)))
    before, after, (gw, gb) = _one_sgd_step(
        net, lambda: fluid.optimizer.SGD(0.5, regularization=fluid.regularizer.L2Decay(0.1)),
        ["fc_0.w_0@GRAD", "fc_0.b_0@GRAD"])
    w, b = before["fc_0.w_0"], before["fc_0.b_0"]
    np.testing.assert_allclose(after["fc_0.b_0"], b - 0.5 * (gb + 0.1 * b), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(after["fc_0.w_0"], w - 0.5 * (gw + 0.3 * np.sign(w)), rtol=RTOL, atol=ATOL)


def test_l2_decay_of_a_sparse_gradient_touches_each_present_row_once():
    main, exe, scope, _ = _sparse_program(
        lambda: fluid.optimizer.SGD(1.0, regularization=fluid.regularizer.L2Decay(0.5)))
    p = _read(scope, "emb")
    values = np.ones((3, WIDTH), dtype="float32")
    scope.vars["emb@GRAD"] = SelectedRows(np.array([4, 1, 4], dtype=np.int64), values, HEIGHT)
    exe.run(main, scope=scope)
    want = p.copy()
    want[4] = p[4] - (2.0 + 0.5 * p[4])
    want[1] = p[1] - (1.0 + 0.5 * p[1])
    np.testing.assert_allclose(_read(scope, "emb"), want, rtol=RTOL, atol=ATOL)


def _clipped_net(clip):
    def net():
        loss = _regression_net()
        fluid.clip.set_gradient_clip(clip)
        return loss
    return net


def test_clip_by_value_bounds_every_gradient_element():
    before, after, (gw,) = _one_sgd_step(
        _clipped_net(fluid.clip.GradientClipByValue(0.05, -0.02)),
        lambda: fluid.optimizer.SGD(1.0), ["fc_0.w_0@GRAD"])
    assert gw.max() > 0.05 and gw.min() < -0.02  # clipping is active on both sides
    np.testing.assert_allclose(before["fc_0.w_0"] - after["fc_0.w_0"], np.clip(gw, -0.02, 0.05),
                               rtol=1e-5, atol=1e-6)


def test_clip_by_norm_rescales_each_gradient_to_at_most_clip_norm():
    before, after, (gw, gb) = _one_sgd_step(
        _clipped_net(fluid.clip.GradientClipByNorm(0.1)),
        lambda: fluid.optimizer.SGD(1.0), ["fc_0.w_0@GRAD", "fc_0.b_0@GRAD"])
    for name, g in (("fc_0.w_0", gw), ("fc_0.b_0", gb)):
        assert np.linalg.norm(g) > 0.1
        np.testing.assert_allclose(before[name] - after[name], g * 0.1 / np.linalg.norm(g),
                                   rtol=1e-5, atol=1e-6)


def test_clip_by_global_norm_scales_all_gradients_by_one_factor():
    before, after, (gw, gb) = _one_sgd_step(
        _clipped_net(fluid.clip.GradientClipByGlobalNorm(0.2)),
        lambda: fluid.optimizer.SGD(1.0), ["fc_0.w_0@GRAD", "fc_0.b_0@GRAD"])
    norm = np.sqrt((gw ** 2).sum() + (gb ** 2).sum())
    assert norm > 0.2
    for name, g in (("fc_0.w_0", gw), ("fc_0.b_0", gb)):
        np.testing.assert_allclose(before[name] - after[name], g * 0.2 / norm, rtol=1e-5, atol=1e-6)


def test_clip_ops_come_before_the_optimizer_op_in_the_optimize_role():
    main, *_ = _build(lambda: fluid.optimizer.SGD(0.1),
                      _clipped_net(fluid.clip.GradientClipByGlobalNorm(1.0)))
    ops = main.global_block().ops
    types = [op.type for op in ops]
    assert types.index("clip_global_norm_scale") < types.index("sgd")
    for op in ops:
        if op.type in ("squared_l2_norm", "clip_global_norm_scale", "clip_global_norm_apply", "sgd"):
            assert op.attr("op_role") == int(OpRole.Optimize)
            p, g = op.attr("op_role_var")
            assert g.startswith(p + "@GRAD")
            if op.type != "clip_global_norm_scale":
                assert g in op.input_arg_names


# --------------------------------------------------------------- errors

@pytest.mark.parametrize("make, exc, words", [
    (lambda: fluid.optimizer.SGD(-0.1), ValueError, "learning_rate"),
    (lambda: fluid.optimizer.SGD("0.1"), TypeError, "learning_rate"),
    (lambda: fluid.optimizer.Adam(0.1, beta1=1.0), ValueError, "beta1"),
    (lambda: fluid.optimizer.Adamax(0.1, beta2=0.0), ValueError, "beta2"),
    (lambda: fluid.optimizer.Adam(0.1, epsilon=0), ValueError, "epsilon"),
    (lambda: fluid.optimizer.Momentum(0.1, momentum=None), TypeError, "momentum"),
    (lambda: fluid.optimizer.RMSProp(0.1, rho=1.5), ValueError, "rho"),
    (lambda: fluid.optimizer.Ftrl(0.1, lr_power=0.5), ValueError, "lr_power"),
    (lambda: fluid.optimizer.SGD(0.1, regularization="l2"), TypeError, "regularization"),
    (lambda: fluid.clip.GradientClipByValue(max=0.1, min=0.5), ValueError, "min"),
    (lambda: fluid.clip.set_gradient_clip("norm"), TypeError, "clip"),
])
def test_bad_optimizer_arguments_are_rejected_with_the_argument_named(make, exc, words):
    with pytest.raises(exc, match=words):
        make()


def test_minimize_rejects_a_non_scalar_loss_and_a_non_variable():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[4])
        cost = fluid.layers.square_error_cost(fluid.layers.fc(x, 1), x)
        with pytest.raises(GraphError, match="scalar"):
            fluid.optimizer.SGD(0.1).minimize(cost)
        with pytest.raises(TypeError, match="loss"):
            fluid.optimizer.SGD(0.1).minimize("loss")
    assert not any(op.type == "sgd" for op in main.global_block().ops)


def test_a_negative_per_parameter_learning_rate_is_rejected_before_any_op_is_appended():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        loss = _regression_net(param_attr=fluid.ParamAttr(learning_rate=-1.0))
        n_ops, n_startup = len(main.global_block().ops), len(startup.global_block().ops)
        with pytest.raises(ValueError, match="learning_rate"):
            fluid.optimizer.SGD(0.1).minimize(loss)
    assert len(main.global_block().ops) == n_ops
    assert len(startup.global_block().ops) == n_startup


def test_a_learning_rate_variable_must_hold_one_value():
    main = fluid.Program()
    with fluid.program_guard(main):
        lr = fluid.layers.fill_constant([2], "float32", 0.1)
        with pytest.raises(ValueError, match="one value"):
            fluid.optimizer.SGD(lr)


# --------------------------------------------------------------- end to end

def test_linear_regression_converges_to_the_least_squares_solution():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 4)).astype("float32")
    w_true, b_true = np.array([[1.5], [-2.0], [0.5], [3.0]]), 0.7
    y = (x @ w_true + b_true + 0.1 * rng.normal(size=(256, 1))).astype("float32")
    main, exe, scope, loss, *_ = _build(lambda: fluid.optimizer.Momentum(0.1, 0.5),
                                        lambda: _regression_net(out_dim=1))
    for _ in range(150):
        exe.run(main, feed={"x": x, "y": y}, scope=scope)
    design = np.hstack([x, np.ones((256, 1))]).astype(np.float64)
    solution = np.linalg.lstsq(design, y.astype(np.float64), rcond=None)[0]
    np.testing.assert_allclose(_read(scope, "fc_0.w_0"), solution[:4], atol=1e-3)
    np.testing.assert_allclose(_read(scope, "fc_0.b_0"), solution[4], atol=1e-3)


def test_an_optimizer_op_with_a_mismatched_gradient_is_rejected_when_appended():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        w = fluid.layers.create_parameter([4, 3], "float32", name="w")
        g = main.global_block().create_var(name="w@GRAD", shape=[3, 4], dtype="float32")
        with pytest.raises(GraphError, match="does not match Param"):
            fluid.optimizer.SGD(0.1).apply_gradients([(w, g)])


def test_sparse_rows_outside_the_table_fail_naming_the_optimizer_op_and_change_nothing():
    main, exe, scope, _ = _sparse_program(lambda: fluid.optimizer.Momentum(0.1, 0.9))
    before = _read(scope, "emb")
    values = np.ones((2, WIDTH), dtype="float32")
    scope.vars["emb@GRAD"] = SelectedRows(np.array([1, HEIGHT], dtype=np.int64), values, HEIGHT)
    with pytest.raises(fluid.executor.ExecutionError, match="momentum.*out of range"):
        exe.run(main, scope=scope)
    np.testing.assert_array_equal(_read(scope, "emb"), before)
    np.testing.assert_array_equal(_read(scope, "emb_velocity_0"), 0)


def test_one_optimizer_minimizing_two_programs_gives_each_its_own_state():
    opt = fluid.optimizer.Adam(0.01)
    built = [_build(lambda: opt) for _ in range(2)]
    for main, *_ in built:
        adam = [op for op in main.global_block().ops if op.type == "adam"]
        for op in adam:
            for name in op.input_arg_names:
                assert main.global_block().has_var(name), name
    for (main, exe, scope, *_), (x, y) in zip(built, _batches(5, n=2)):
        exe.run(main, feed={"x": x, "y": y}, scope=scope)


def test_fetched_and_read_parameters_are_snapshots_that_later_in_place_updates_leave_alone():
    main, exe, scope, *_ = _build(lambda: fluid.optimizer.SGD(0.5))
    (x, y), (x2, y2) = _batches(8, n=2)
    fetched, = exe.run(main, feed={"x": x, "y": y}, fetch_list=["fc_0.w_0"], scope=scope)
    read = np.array(scope.find_var("fc_0.w_0").get_tensor())
    kept = fetched.copy()
    exe.run(main, feed={"x": x2, "y": y2}, scope=scope)
    np.testing.assert_array_equal(fetched, kept)
    np.testing.assert_array_equal(read, kept)
    assert not np.array_equal(_read(scope, "fc_0.w_0"), kept)
