"""Optimizer updates on CUDAPlace, with the numpy reference's signatures.

`DENSE_UPDATES` / `ROW_UPDATES` mirror `psjob.foundation.kernels.optimizers`' tables
for all nine optimizers, so the framework dispatches by place alone:
sgd, momentum, adagrad and adam run as one fused kernel launch per step per
variable; the other five run the reference math with ``xp=cupy`` (a few
elementwise launches each — they are rare on the sparse hot path).

A fused call validates shapes on the host (metadata only), then launches;
it returns without synchronising. Sparse calls merge duplicate rows first
unless ``assume_unique=True``; on cupy that merge reads the unique count back
to the host, so callers that already merged (the pserver merges on the host
before the upload) should say so. Row ids out of range are skipped by the
kernel rather than checked up front (a check would need a host round trip).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from psjob.foundation.cuda import _launch, _plans
from psjob.foundation.cuda._cupy import require_cupy
from psjob.foundation.cuda._source import FUSED_OPTIMIZERS
from psjob.foundation.kernels import optimizers as reference
from psjob.foundation.kernels.optimizers import Array


def _run(xp: Any, planner: Callable[..., _plans.LaunchPlan], *args: Any, **kwargs: Any) -> None:
    cupy = require_cupy()
    if xp is not cupy:
        raise TypeError(f"fused CUDA updates take xp=cupy, got {getattr(xp, '__name__', xp)!r};"
                        " numpy arrays go to psjob.foundation.kernels.optimizers")
    _launch.launch(cupy, planner(cupy, *args, **kwargs))


def sgd_update(xp: Any, param: Array, grad: Array, *, lr: float | Array) -> None:
    _run(xp, _plans.plan_sgd, param, grad, lr=lr)


def sgd_update_rows(xp: Any, param: Array, rows: Array, grad_values: Array, *, lr: float | Array,
                    assume_unique: bool = False) -> None:
    _run(xp, _plans.plan_sgd, param, grad_values, lr=lr, rows=rows, assume_unique=assume_unique)


def momentum_update(xp: Any, param: Array, grad: Array, velocity: Array, *, lr: float | Array, mu: float,
                    use_nesterov: bool = False) -> None:
    _run(xp, _plans.plan_momentum, param, grad, velocity, lr=lr, mu=mu, use_nesterov=use_nesterov)


def momentum_update_rows(xp: Any, param: Array, rows: Array, grad_values: Array, velocity: Array, *, lr: float | Array,
                         mu: float, use_nesterov: bool = False, assume_unique: bool = False) -> None:
    _run(xp, _plans.plan_momentum, param, grad_values, velocity, lr=lr, mu=mu,
         use_nesterov=use_nesterov, rows=rows, assume_unique=assume_unique)


def adagrad_update(xp: Any, param: Array, grad: Array, moment: Array, *, lr: float | Array,
                   epsilon: float = 1e-6) -> None:
    _run(xp, _plans.plan_adagrad, param, grad, moment, lr=lr, epsilon=epsilon)


def adagrad_update_rows(xp: Any, param: Array, rows: Array, grad_values: Array, moment: Array, *, lr: float | Array,
                        epsilon: float = 1e-6, assume_unique: bool = False) -> None:
    _run(xp, _plans.plan_adagrad, param, grad_values, moment, lr=lr, epsilon=epsilon, rows=rows,
         assume_unique=assume_unique)


def adam_update(xp: Any, param: Array, grad: Array, moment1: Array, moment2: Array, beta1_pow: Array, beta2_pow: Array,
                *, lr: float | Array, beta1: float = 0.9, beta2: float = 0.999, epsilon: float = 1e-8,
                scale_epsilon: bool = True) -> None:
    _run(xp, _plans.plan_adam, param, grad, moment1, moment2, beta1_pow, beta2_pow, lr=lr,
         beta1=beta1, beta2=beta2, epsilon=epsilon, scale_epsilon=scale_epsilon)


def adam_update_rows(xp: Any, param: Array, rows: Array, grad_values: Array, moment1: Array, moment2: Array,
                     beta1_pow: Array, beta2_pow: Array, *, lr: float | Array, beta1: float = 0.9, beta2: float = 0.999,
                     epsilon: float = 1e-8, scale_epsilon: bool = True, assume_unique: bool = False) -> None:
    _run(xp, _plans.plan_adam, param, grad_values, moment1, moment2, beta1_pow, beta2_pow, lr=lr,
         beta1=beta1, beta2=beta2, epsilon=epsilon, scale_epsilon=scale_epsilon, rows=rows,
         assume_unique=assume_unique)


_FUSED_DENSE: dict[str, Callable[..., None]] = {
    "sgd": sgd_update, "momentum": momentum_update, "adagrad": adagrad_update, "adam": adam_update}
_FUSED_ROWS: dict[str, Callable[..., None]] = {
    "sgd": sgd_update_rows, "momentum": momentum_update_rows, "adagrad": adagrad_update_rows,
    "adam": adam_update_rows}
assert set(_FUSED_DENSE) == set(_FUSED_ROWS) == set(FUSED_OPTIMIZERS)

DENSE_UPDATES = {**reference.DENSE_UPDATES, **_FUSED_DENSE}
ROW_UPDATES = {**reference.ROW_UPDATES, **_FUSED_ROWS}
