"""The fused kernels on a real GPU equal the numpy reference.

Runs only where cupy imports and finds a CUDA device; skips otherwise.
Sizes are large enough that each launch spans many blocks, so adam's
in-launch beta-pow advance (last-block ticket) is exercised across blocks
and across consecutive launches (the ticket must reset to 0).
"""
import numpy as np
import pytest

import psjob.foundation.cuda as cuda
from psjob.foundation.kernels import optimizers as reference

if not cuda.is_available():
    pytest.skip("needs cupy and a CUDA device", allow_module_level=True)

cp = cuda.require_cupy()

STEPS = 3
SHAPE = (40_000, 16)
HYPER = {
    "sgd": {"lr": 0.05},
    "momentum": {"lr": 0.05, "mu": 0.9, "use_nesterov": True},
    "adagrad": {"lr": 0.05, "epsilon": 1e-6},
    "adam": {"lr": 0.01, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8},
}


def initial_state(name, rng):
    state = []
    for spec in reference.ACCUMULATORS[name]:
        if spec.shape == reference.ORIGIN_SHAPED:
            state.append(np.full((1,), HYPER[name][spec.fill], np.float32))
        else:
            state.append(rng.uniform(0.0, 0.5, SHAPE).astype(np.float32))
    return state


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "rows"])
@pytest.mark.parametrize("name", cuda.FUSED_OPTIMIZERS)
def test_fused_kernel_matches_numpy_reference_over_several_steps(name, sparse):
    rng = np.random.default_rng(21)
    param = rng.standard_normal(SHAPE).astype(np.float32)
    state = initial_state(name, rng)
    d_param, d_state = cp.asarray(param), [cp.asarray(s) for s in state]
    for step in range(STEPS):
        lr = HYPER[name]["lr"]
        hyper = dict(HYPER[name], lr=cp.asarray([lr], cp.float32) if step % 2 else lr)
        if sparse:
            rows = rng.integers(0, SHAPE[0], 5_000).astype(np.int64)
            values = rng.standard_normal((5_000, SHAPE[1])).astype(np.float32)
            reference.ROW_UPDATES[name](np, param, rows, values, *state, **HYPER[name])
            cuda.cuda_optimizer_update_rows(name, cp, d_param, cp.asarray(rows), cp.asarray(values),
                                            *d_state, **hyper)
        else:
            grad = rng.standard_normal(SHAPE).astype(np.float32)
            reference.DENSE_UPDATES[name](np, param, grad, *state, **HYPER[name])
            cuda.cuda_optimizer_update(name, cp, d_param, cp.asarray(grad), *d_state, **hyper)
    np.testing.assert_allclose(cp.asnumpy(d_param), param, rtol=2e-5, atol=1e-6)
    for got, want in zip(d_state, state):
        np.testing.assert_allclose(cp.asnumpy(got), want, rtol=2e-5, atol=1e-6)


def test_adam_beta_pows_advance_exactly_once_per_launch():
    param = cp.zeros(SHAPE, cp.float32)
    moments = [cp.zeros(SHAPE, cp.float32) for _ in range(2)]
    pows = [cp.full((1,), 0.9, cp.float32), cp.full((1,), 0.999, cp.float32)]
    for _ in range(5):
        cuda.cuda_optimizer_update("adam", cp, param, cp.ones(SHAPE, cp.float32), *moments, *pows,
                                   lr=0.01)
    assert float(pows[0][0]) == pytest.approx(0.9 ** 6, rel=1e-6)
    assert float(pows[1][0]) == pytest.approx(0.999 ** 6, rel=1e-6)


def test_non_fused_optimizers_run_the_reference_math_on_cupy():
    rng = np.random.default_rng(22)
    param = rng.standard_normal((64, 4)).astype(np.float32)
    grad = rng.standard_normal((64, 4)).astype(np.float32)
    squared, linear = np.full((64, 4), 0.1, np.float32), np.zeros((64, 4), np.float32)
    d = [cp.asarray(a) for a in (param, grad, squared, linear)]
    reference.ftrl_update(np, param, grad, squared, linear, lr=0.1, l1=0.01)
    cuda.cuda_optimizer_update("ftrl", cp, d[0], d[1], d[2], d[3], lr=0.1, l1=0.01)
    np.testing.assert_allclose(cp.asnumpy(d[0]), param, rtol=1e-5, atol=1e-6)


def test_fused_update_rejects_numpy_arrays_and_unknown_names():
    param = cp.zeros((4, 2), cp.float32)
    with pytest.raises(TypeError, match="xp=cupy"):
        cuda.cuda_optimizer_update("sgd", np, np.zeros((4, 2), np.float32),
                                   np.zeros((4, 2), np.float32), lr=0.1)
    with pytest.raises(ValueError, match="unknown optimizer 'adamw'"):
        cuda.cuda_optimizer_update("adamw", cp, param, param, lr=0.1)
