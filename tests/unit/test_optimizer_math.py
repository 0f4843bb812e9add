"""psjob.foundation.kernels.optimizers against naive per-element code written from the
published Fluid formulas (one Python float at a time, no numpy in the math),
over several steps; plus lazy sparse-row semantics and bad-input errors."""
import math

import numpy as np
import pytest

from psjob.foundation.kernels import optimizers as opt

STEPS = 4
SHAPE = (6, 3)


# ----------------------------------------------------------------- naive oracle
# Each naive step takes flat lists p, g and a dict of state (lists, or floats
# for the beta pows) and mutates them, element by element.

def naive_sgd(p, g, s, h):
    for i in range(len(p)):
        p[i] -= h["lr"] * g[i]


def naive_momentum(p, g, s, h):
    v, mu, lr = s["velocity"], h["mu"], h["lr"]
    for i in range(len(p)):
        v[i] = mu * v[i] + g[i]
        p[i] -= (g[i] + mu * v[i]) * lr if h.get("use_nesterov") else lr * v[i]


def naive_lars_momentum(p, g, s, h):
    p_norm = math.sqrt(sum(x * x for x in p))
    g_norm = math.sqrt(sum(x * x for x in g))
    wd, lr = h["lars_weight_decay"], h["lr"]
    local = lr * h["lars_coeff"] * p_norm / (g_norm + wd * p_norm) if p_norm > 0 and g_norm > 0 else lr
    v = s["velocity"]
    for i in range(len(p)):
        v[i] = h["mu"] * v[i] + local * (g[i] + wd * p[i])
        p[i] -= v[i]


def naive_adam(p, g, s, h):
    b1, b2, eps = h["beta1"], h["beta2"], h["epsilon"]
    b1p, b2p = s["beta1_pow_acc"], s["beta2_pow_acc"]
    m1, m2 = s["moment1"], s["moment2"]
    lr_t = h["lr"] * math.sqrt(1 - b2p) / (1 - b1p)
    for i in range(len(p)):
        m1[i] = b1 * m1[i] + (1 - b1) * g[i]
        m2[i] = b2 * m2[i] + (1 - b2) * g[i] * g[i]
        p[i] -= lr_t * m1[i] / (math.sqrt(m2[i]) + eps * math.sqrt(1 - b2p))
    s["beta1_pow_acc"], s["beta2_pow_acc"] = b1p * b1, b2p * b2


def naive_adamax(p, g, s, h):
    b1, b2, eps = h["beta1"], h["beta2"], h["epsilon"]
    m, u = s["moment"], s["inf_norm"]
    lr_t = h["lr"] / (1 - s["beta1_pow_acc"])
    for i in range(len(p)):
        m[i] = b1 * m[i] + (1 - b1) * g[i]
        u[i] = max(b2 * u[i] + eps, abs(g[i]))
        p[i] -= lr_t * m[i] / u[i]
    s["beta1_pow_acc"] *= b1


def naive_adagrad(p, g, s, h):
    m = s["moment"]
    for i in range(len(p)):
        m[i] += g[i] * g[i]
        p[i] -= h["lr"] * g[i] / (math.sqrt(m[i]) + h["epsilon"])


def naive_decayed_adagrad(p, g, s, h):
    m, d = s["moment"], h["decay"]
    for i in range(len(p)):
        m[i] = d * m[i] + (1 - d) * g[i] * g[i]
        p[i] -= h["lr"] * g[i] / (math.sqrt(m[i]) + h["epsilon"])


def naive_rmsprop(p, g, s, h):
    rho, eps, lr = h["rho"], h["epsilon"], h["lr"]
    ms, mom = s["mean_square"], s["momentum"]
    for i in range(len(p)):
        ms[i] = rho * ms[i] + (1 - rho) * g[i] ** 2
        if h["centered"]:
            mg = s["mean_grad"]
            mg[i] = rho * mg[i] + (1 - rho) * g[i]
            denom = math.sqrt(ms[i] - mg[i] ** 2 + eps)
        else:
            denom = math.sqrt(ms[i] + eps)
        mom[i] = h["momentum"] * mom[i] + lr * g[i] / denom
        p[i] -= mom[i]


def naive_ftrl(p, g, s, h):
    sq, lin = s["squared"], s["linear"]
    lr, l1, l2, power = h["lr"], h["l1"], h["l2"], h["lr_power"]
    for i in range(len(p)):
        new_sq = sq[i] + g[i] ** 2
        lin[i] += g[i] - (new_sq ** -power - sq[i] ** -power) / lr * p[i]
        if abs(lin[i]) > l1:
            sign = 1.0 if lin[i] > 0 else -1.0
            p[i] = (l1 * sign - lin[i]) / (new_sq ** -power / lr + 2 * l2)
        else:
            p[i] = 0.0
        sq[i] = new_sq


# name, naive step, hyperparameters, initial state values (random if "rand+")
CASES = [
    ("sgd", naive_sgd, {"lr": 0.1}),
    ("momentum", naive_momentum, {"lr": 0.1, "mu": 0.9}),
    ("momentum", naive_momentum, {"lr": 0.1, "mu": 0.9, "use_nesterov": True}),
    ("lars_momentum", naive_lars_momentum,
     {"lr": 0.5, "mu": 0.9, "lars_coeff": 0.01, "lars_weight_decay": 0.001}),
    ("adam", naive_adam, {"lr": 0.01, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8}),
    ("adamax", naive_adamax, {"lr": 0.01, "beta1": 0.8, "beta2": 0.99, "epsilon": 1e-8}),
    ("adagrad", naive_adagrad, {"lr": 0.1, "epsilon": 1e-6}),
    ("decayed_adagrad", naive_decayed_adagrad, {"lr": 0.1, "decay": 0.9, "epsilon": 1e-6}),
    ("rmsprop", naive_rmsprop,
     {"lr": 0.01, "rho": 0.9, "epsilon": 1e-6, "momentum": 0.5, "centered": False}),
    ("rmsprop", naive_rmsprop,
     {"lr": 0.01, "rho": 0.9, "epsilon": 1e-6, "momentum": 0.5, "centered": True}),
    ("ftrl", naive_ftrl, {"lr": 0.1, "l1": 0.05, "l2": 0.01, "lr_power": -0.5}),
    ("ftrl", naive_ftrl, {"lr": 0.1, "l1": 0.0, "l2": 0.1, "lr_power": -0.3}),
]
CASE_IDS = [f"{name}-{i}" for i, (name, _, _) in enumerate(CASES)]


def make_state(name, hyper, shape, dtype, rng, rows_for_pow=None):
    """Arrays in ACCUMULATORS order, filled as the optimizer layer would."""
    state = {}
    for spec in opt.ACCUMULATORS[name]:
        if spec.used_when and not hyper.get(spec.used_when):
            continue
        if spec.shape == opt.ORIGIN_SHAPED:
            fill = hyper[spec.fill] if isinstance(spec.fill, str) else spec.fill
            pow_shape = (1,) if rows_for_pow is None else (shape[0], 1)
            state[spec.name] = np.full(pow_shape, fill, dtype)
        elif name in ("ftrl", "adagrad", "decayed_adagrad") or spec.name == "mean_square":
            # Positive accumulators so sqrt/pow stay away from 0 at step one.
            state[spec.name] = rng.uniform(0.1, 1.0, shape).astype(dtype)
        else:
            state[spec.name] = np.zeros(shape, dtype)
    return state


def hyper_kwargs(hyper):
    return dict(hyper)


def run_numpy(name, hyper, param, grads, state, rows_list=None):
    for step, grad in enumerate(grads):
        if rows_list is None:
            opt.DENSE_UPDATES[name](np, param, grad, *state.values(), **hyper_kwargs(hyper))
        else:
            opt.ROW_UPDATES[name](np, param, rows_list[step], grad, *state.values(),
                                  **hyper_kwargs(hyper))


def run_naive(naive, hyper, param, grads, state):
    p = param.ravel().tolist()
    s = {k: (float(v.ravel()[0]) if v.size == 1 else v.ravel().tolist()) for k, v in state.items()}
    for grad in grads:
        naive(p, grad.ravel().tolist(), s, hyper)
    return np.array(p).reshape(param.shape), s


@pytest.mark.parametrize("name,naive,hyper", CASES, ids=CASE_IDS)
def test_dense_update_matches_the_naive_formula_over_several_steps(name, naive, hyper):
    rng = np.random.default_rng(1)
    param = rng.standard_normal(SHAPE)
    grads = [rng.standard_normal(SHAPE) for _ in range(STEPS)]
    state = make_state(name, hyper, SHAPE, np.float64, rng)
    expected_p, expected_s = run_naive(naive, hyper, param.copy(), grads,
                                       {k: v.copy() for k, v in state.items()})
    run_numpy(name, hyper, param, grads, state)
    np.testing.assert_allclose(param, expected_p, rtol=1e-10, atol=1e-12)
    for key, value in state.items():
        np.testing.assert_allclose(value.ravel(), np.ravel(expected_s[key]), rtol=1e-10, atol=1e-12,
                                   err_msg=f"{name} accumulator {key}")


@pytest.mark.parametrize("name,naive,hyper", CASES, ids=CASE_IDS)
def test_float32_update_stays_within_float32_tolerance_of_the_float64_one(name, naive, hyper):
    rng = np.random.default_rng(2)
    param = rng.standard_normal(SHAPE)
    grads = [rng.standard_normal(SHAPE) for _ in range(STEPS)]
    state = make_state(name, hyper, SHAPE, np.float64, rng)
    p32 = param.astype(np.float32)
    s32 = {k: v.astype(np.float32) for k, v in state.items()}
    run_numpy(name, hyper, param, grads, state)
    run_numpy(name, hyper, p32, [g.astype(np.float32) for g in grads], s32)
    assert p32.dtype == np.float32 and all(v.dtype == np.float32 for v in s32.values())
    np.testing.assert_allclose(p32, param, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name,naive,hyper", CASES, ids=CASE_IDS)
def test_sparse_update_equals_dense_update_of_zero_padded_gradient_on_its_rows(name, naive, hyper):
    rng = np.random.default_rng(3)
    rows_list = [np.array([4, 1, 4, 0], np.int64), np.array([2], np.int64),
                 np.array([1, 1, 5, 2], np.int64), np.array([5, 0], np.int64)]
    values = [rng.standard_normal((len(r), SHAPE[1])) for r in rows_list]
    param = rng.standard_normal(SHAPE)
    state = make_state(name, hyper, SHAPE, np.float64, rng)
    sparse_p, sparse_s = param.copy(), {k: v.copy() for k, v in state.items()}

    for rows, vals in zip(rows_list, values):
        dense_grad = np.zeros(SHAPE)
        np.add.at(dense_grad, rows, vals)
        # Dense step on copies; keep only the touched rows (lazy semantics).
        dense_p, dense_s = sparse_p.copy(), {k: v.copy() for k, v in sparse_s.items()}
        opt.DENSE_UPDATES[name](np, dense_p, dense_grad, *dense_s.values(), **hyper)
        untouched_before = np.delete(sparse_p, rows, axis=0).copy()
        opt.ROW_UPDATES[name](np, sparse_p, rows, vals, *sparse_s.values(), **hyper)
        touched = np.unique(rows)
        np.testing.assert_allclose(sparse_p[touched], dense_p[touched], rtol=1e-12, atol=1e-14)
        np.testing.assert_array_equal(np.delete(sparse_p, rows, axis=0), untouched_before)
        for key, value in sparse_s.items():
            if value.shape == (1,):  # origin-shaped beta pow: advances once per step
                np.testing.assert_allclose(value, dense_s[key], rtol=1e-15)
            else:
                np.testing.assert_allclose(value[touched], dense_s[key][touched], rtol=1e-12, atol=1e-14)


def test_per_row_beta_pows_advance_only_for_rows_present():
    rng = np.random.default_rng(4)
    hyper = {"lr": 0.01, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8}
    param = rng.standard_normal(SHAPE)
    state = make_state("adam", hyper, SHAPE, np.float64, rng, rows_for_pow=True)
    rows = np.array([3, 1, 3])
    vals = rng.standard_normal((3, SHAPE[1]))
    expected_p = param.copy()
    # Row 3 and row 1 each behave like a dense [1,3] parameter with pow [1].
    for row in (1, 3):
        p_row = param[row:row + 1].copy()
        s_row = make_state("adam", hyper, (1, SHAPE[1]), np.float64, rng)
        opt.adam_update(np, p_row, vals[rows == row].sum(axis=0, keepdims=True), *s_row.values(), **hyper)
        expected_p[row] = p_row[0]
    opt.adam_update_rows(np, param, rows, vals, *state.values(), **hyper)
    np.testing.assert_allclose(param, expected_p, rtol=1e-12)
    b1p = state["beta1_pow_acc"].ravel()
    assert b1p[1] == b1p[3] == pytest.approx(0.81)
    assert all(b1p[i] == pytest.approx(0.9) for i in (0, 2, 4, 5))


def test_merge_duplicate_rows_sums_values_of_repeated_ids_in_sorted_order():
    rows = np.array([7, 2, 7, 9, 2, 7], np.int64)
    values = np.arange(12, dtype=np.float32).reshape(6, 2)
    unique, summed = opt.merge_duplicate_rows(np, rows, values)
    np.testing.assert_array_equal(unique, [2, 7, 9])
    np.testing.assert_array_equal(summed, [[2 + 8, 3 + 9], [0 + 4 + 10, 1 + 5 + 11], [6, 7]])


def test_merge_of_already_unique_rows_reorders_values_with_their_ids():
    unique, summed = opt.merge_duplicate_rows(np, np.array([5, 1]), np.array([[50.0], [10.0]]))
    np.testing.assert_array_equal(unique, [1, 5])
    np.testing.assert_array_equal(summed, [[10.0], [50.0]])


def test_learning_rate_given_as_one_element_array_equals_the_float():
    rng = np.random.default_rng(5)
    p1 = rng.standard_normal(SHAPE).astype(np.float32)
    p2, g = p1.copy(), rng.standard_normal(SHAPE).astype(np.float32)
    m1 = [np.zeros(SHAPE, np.float32) for _ in range(2)]
    m2 = [np.zeros(SHAPE, np.float32) for _ in range(2)]
    opt.adam_update(np, p1, g, m1[0], m1[1], np.array([0.9], np.float32), np.array([0.999], np.float32), lr=0.01)
    opt.adam_update(np, p2, g, m2[0], m2[1], np.array([0.9], np.float32), np.array([0.999], np.float32),
                    lr=np.array([0.01]))
    np.testing.assert_allclose(p1, p2, rtol=1e-6)
    assert p2.dtype == np.float32


def test_accumulator_table_uses_the_names_fluid_saves():
    # The seeds' distributed-checkpoint code lists these suffixes (…_0).
    param_shaped = {name: [s.name for s in specs if s.shape == opt.PARAM_SHAPED]
                    for name, specs in opt.ACCUMULATORS.items()}
    origin_shaped = {name: [s.name for s in specs if s.shape == opt.ORIGIN_SHAPED]
                     for name, specs in opt.ACCUMULATORS.items()}
    assert param_shaped == {
        "sgd": [], "adam": ["moment1", "moment2"], "adagrad": ["moment"],
        "adamax": ["moment", "inf_norm"], "momentum": ["velocity"], "lars_momentum": ["velocity"],
        "rmsprop": ["mean_square", "momentum", "mean_grad"], "decayed_adagrad": ["moment"],
        "ftrl": ["squared", "linear"], "adadelta": ["_avg_squared_grad", "_avg_squared_update"],
        "lamb": ["moment1", "moment2"], "dpsgd": []}
    assert {k: v for k, v in origin_shaped.items() if v} == {
        "adam": ["beta1_pow_acc", "beta2_pow_acc"], "adamax": ["beta1_pow_acc"],
        "lamb": ["beta1_pow_acc", "beta2_pow_acc"]}
    assert set(opt.DENSE_UPDATES) == set(opt.ROW_UPDATES) == set(opt.ACCUMULATORS)


def test_bad_inputs_raise_clear_errors_and_leave_the_parameter_untouched():
    param = np.ones((4, 2), np.float32)
    grad = np.ones((4, 2), np.float32)
    with pytest.raises(ValueError, match="grad shape"):
        opt.sgd_update(np, param, np.ones((4, 3), np.float32), lr=0.1)
    with pytest.raises(ValueError, match="velocity shape"):
        opt.momentum_update(np, param, grad, np.zeros((2, 4), np.float32), lr=0.1, mu=0.9)
    with pytest.raises(IndexError, match="out of range"):
        opt.sgd_update_rows(np, param, np.array([0, 4]), np.ones((2, 2), np.float32), lr=0.1)
    with pytest.raises(ValueError, match="grad values shape"):
        opt.sgd_update_rows(np, param, np.array([0, 1]), np.ones((3, 2), np.float32), lr=0.1)
    with pytest.raises(TypeError, match="integer"):
        opt.sgd_update_rows(np, param, np.array([0.0]), np.ones((1, 2), np.float32), lr=0.1)
    with pytest.raises(ValueError, match="mean_grad"):
        opt.rmsprop_update(np, param, grad, np.zeros_like(param), np.zeros_like(param), lr=0.1,
                           centered=True)
    with pytest.raises(ValueError, match="one-element"):
        opt.sgd_update(np, param, grad, lr=np.array([0.1, 0.2]))
    with pytest.raises(ValueError, match="beta1_pow"):
        opt.adam_update(np, param, grad, np.zeros_like(param), np.zeros_like(param),
                        np.ones((2,), np.float32), np.ones((1,), np.float32), lr=0.1)
    with pytest.raises(TypeError, match="floating-point"):
        opt.sgd_update(np, np.ones((4, 2), np.int32), np.ones((4, 2), np.int32), lr=0.1)
    np.testing.assert_array_equal(param, np.ones((4, 2), np.float32))
