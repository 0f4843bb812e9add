"""The kernels' arithmetic, built for the host, equals the numpy reference.

Each case builds a launch plan exactly as the GPU path does (psjob.foundation.cuda._plans:
validation, row merging, argument order), calls the host build of the same
header functions with it, and compares with psjob.foundation.kernels.optimizers over
several steps — dense and sparse, float32 and float64, lr as float or array.
"""
import ctypes

import numpy as np
import pytest

from psjob.foundation.cuda import _plans
from psjob.foundation.kernels import optimizers as reference

STEPS = 3
SHAPE = (50, 8)

_CTYPES = {np.int32: ctypes.c_int, np.int64: ctypes.c_longlong,
           np.float32: ctypes.c_float, np.float64: ctypes.c_double}


def run_on_host(library, plan):
    """Call host_<optimizer>_<f32|f64> with the plan's arguments."""
    suffix = plan.kernel.rsplit("_", 1)[1]
    args = []
    for arg in plan.args:
        if arg is None:
            args.append(None)
        elif isinstance(arg, np.ndarray):
            assert arg.flags.c_contiguous
            args.append(ctypes.c_void_p(arg.ctypes.data))
        else:
            args.append(_CTYPES[type(arg)](arg))
    getattr(library, f"host_{plan.optimizer}_{suffix}")(*args)


HYPER = {
    "sgd": {"lr": 0.05},
    "momentum": {"lr": 0.05, "mu": 0.9},
    "nesterov": {"lr": 0.05, "mu": 0.9, "use_nesterov": True},
    "adagrad": {"lr": 0.05, "epsilon": 1e-6},
    "adam": {"lr": 0.01, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8},
}


def optimizer_of(case):
    return "momentum" if case == "nesterov" else case


def make_state(case, dtype, rng, per_row_pows=False):
    name, hyper = optimizer_of(case), HYPER[case]
    state = []
    for spec in reference.ACCUMULATORS[name]:
        if spec.shape == reference.ORIGIN_SHAPED:
            shape = (SHAPE[0], 1) if per_row_pows else (1,)
            fill = hyper[spec.fill]
            # per-row pows at different stages, as rows first seen at different steps
            values = fill ** rng.integers(1, 5, shape) if per_row_pows else np.full(shape, fill)
            state.append(values.astype(dtype))
        elif name == "adagrad" or spec.name == "moment2":  # must stay non-negative
            state.append(rng.uniform(0.1, 1.0, SHAPE).astype(dtype))
        else:
            state.append((0.1 * rng.standard_normal(SHAPE)).astype(dtype))
    return state


def assert_close(got, want, dtype):
    assert np.isfinite(want).all(), "reference went non-finite: the comparison would be vacuous"
    np.testing.assert_allclose(got, want, **tolerance(dtype))


def tolerance(dtype):
    return {"rtol": 2e-5, "atol": 1e-6} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-14}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", sorted(HYPER))
@pytest.mark.parametrize("lr_as_array", [False, True])
def test_dense_host_build_matches_numpy_reference(host_library, case, dtype, lr_as_array):
    rng = np.random.default_rng(11)
    name, hyper = optimizer_of(case), dict(HYPER[case])
    param = rng.standard_normal(SHAPE).astype(dtype)
    state = make_state(case, dtype, rng)
    host_param, host_state = param.copy(), [s.copy() for s in state]
    for _ in range(STEPS):
        grad = rng.standard_normal(SHAPE).astype(dtype)
        reference.DENSE_UPDATES[name](np, param, grad, *state, **hyper)
        host_hyper = dict(hyper, lr=np.array([hyper["lr"]], dtype)) if lr_as_array else hyper
        run_on_host(host_library, _plans.PLANNERS[name](np, host_param, grad, *host_state, **host_hyper))
    assert_close(host_param, param, dtype)
    for got, want in zip(host_state, state):
        assert_close(got, want, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", sorted(HYPER))
def test_sparse_host_build_matches_numpy_reference_with_duplicate_rows(host_library, case, dtype):
    rng = np.random.default_rng(12)
    name, hyper = optimizer_of(case), HYPER[case]
    param = rng.standard_normal(SHAPE).astype(dtype)
    state = make_state(case, dtype, rng)
    host_param, host_state = param.copy(), [s.copy() for s in state]
    for _ in range(STEPS):
        rows = rng.integers(0, SHAPE[0], 30).astype(np.int64)  # duplicates likely
        values = rng.standard_normal((30, SHAPE[1])).astype(dtype)
        reference.ROW_UPDATES[name](np, param, rows, values, *state, **hyper)
        plan = _plans.PLANNERS[name](np, host_param, values, *host_state, rows=rows, **hyper)
        assert plan.layout == "rows"
        run_on_host(host_library, plan)
    assert_close(host_param, param, dtype)
    for got, want in zip(host_state, state):
        assert_close(got, want, dtype)


@pytest.mark.parametrize("scale_epsilon", [True, False])
@pytest.mark.parametrize("layout", ["dense", "rows"])
def test_per_row_adam_pows_match_reference_and_advance_only_where_visited(host_library, layout, scale_epsilon):
    """Also both epsilon rules (scale_epsilon: Paddle 2.x/3.x; without: Paddle 1.8), with an
    epsilon large enough to tell them apart."""
    rng = np.random.default_rng(13)
    hyper = {**HYPER["adam"], "epsilon": 0.5, "scale_epsilon": scale_epsilon}
    param = rng.standard_normal(SHAPE).astype(np.float32)
    state = make_state("adam", np.float32, rng, per_row_pows=True)
    host_param, host_state = param.copy(), [s.copy() for s in state]
    rows = np.array([7, 3, 7, 49, 0], np.int64)
    values = rng.standard_normal((5, SHAPE[1])).astype(np.float32)
    if layout == "rows":
        reference.adam_update_rows(np, param, rows, values, *state, **hyper)
        run_on_host(host_library, _plans.plan_adam(np, host_param, values, *host_state, rows=rows, **hyper))
    else:
        grad = rng.standard_normal(SHAPE).astype(np.float32)
        reference.adam_update(np, param, grad, *state, **hyper)
        run_on_host(host_library, _plans.plan_adam(np, host_param, grad, *host_state, **hyper))
    assert_close(host_param, param, np.float32)
    for got, want in zip(host_state, state):
        assert_close(got, want, np.float32)


def test_already_unique_rows_skip_the_merge_and_give_the_same_result(host_library):
    rng = np.random.default_rng(14)
    param = rng.standard_normal(SHAPE).astype(np.float32)
    host_param = param.copy()
    rows = np.array([9, 2, 30], np.int64)
    values = rng.standard_normal((3, SHAPE[1])).astype(np.float32)
    reference.sgd_update_rows(np, param, rows, values, lr=0.1)
    run_on_host(host_library, _plans.plan_sgd(np, host_param, values, lr=0.1, rows=rows,
                                              assume_unique=True))
    np.testing.assert_array_equal(host_param, param)


def test_out_of_range_row_ids_are_skipped_without_writing_memory(host_library):
    param = np.ones((4, 2), np.float32)
    guard = np.ones((2, 2), np.float32)  # what a stray write past row 3 would hit
    rows = np.array([-1, 1, 4], np.int64)
    values = np.full((3, 2), 10.0, np.float32)
    run_on_host(host_library, _plans.plan_sgd(np, param, values, lr=1.0, rows=rows,
                                              assume_unique=True))
    np.testing.assert_array_equal(param, [[1, 1], [-9, -9], [1, 1], [1, 1]])
    np.testing.assert_array_equal(guard, np.ones((2, 2)))


def test_planner_rejects_mixed_dtypes_noncontiguous_state_and_bad_pows():
    param = np.zeros((4, 2), np.float32)
    with pytest.raises(TypeError, match="velocity has dtype float64"):
        _plans.plan_momentum(np, param, np.zeros((4, 2), np.float32), np.zeros((4, 2)), lr=0.1, mu=0.9)
    with pytest.raises(ValueError, match="C-contiguous"):
        _plans.plan_adagrad(np, param, np.zeros((4, 2), np.float32),
                            np.zeros((2, 4), np.float32).T, lr=0.1)
    with pytest.raises(TypeError, match="float32 or float64"):
        _plans.plan_sgd(np, np.zeros((4, 2), np.float16), np.zeros((4, 2), np.float16), lr=0.1)
    with pytest.raises(ValueError, match="beta1_pow"):
        _plans.plan_adam(np, param, param.copy(), param.copy(), param.copy(),
                         np.ones(3, np.float32), np.ones(1, np.float32), lr=0.1)
    with pytest.raises(ValueError, match="grad values shape"):
        _plans.plan_sgd(np, param, np.zeros((2, 3), np.float32), lr=0.1, rows=np.array([0, 1]))
