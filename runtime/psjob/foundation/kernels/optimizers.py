"""Update math of the Fluid optimizers, generic over the array module.

Each optimizer has two entry points:

* ``<name>_update(xp, param, grad, *state, *, lr, ...)`` — dense: ``grad`` has
  ``param``'s shape; ``param`` and every state array are updated IN PLACE and
  nothing is returned.
* ``<name>_update_rows(xp, param, rows, grad_values, *state, *, lr, ...)`` —
  sparse (a SelectedRows gradient): ``rows`` is an int64 index into
  ``param``'s first dimension and ``grad_values`` has shape
  ``(len(rows),) + param.shape[1:]``. Duplicate rows are summed first
  (`merge_duplicate_rows`). Updates are *lazy*: only the rows present change,
  and they change exactly as the dense update would change them for a
  gradient that is zero outside those rows.

``xp`` is ``numpy`` or ``cupy``; it is passed in, never imported here.
``lr`` is a Python float or a one-element array (a learning-rate variable
that an LRSched op rewrites each step; on cupy it stays on the device).

Beta-power accumulators (adam, adamax) are arrays broadcastable to the rows
of ``param``: shape ``[1]`` for a dense parameter ("origin-shaped", one value
per variable) or ``[n, 1, ...]`` for per-row state in a sparse table. Every
call advances them (``pow *= beta``) *after* the update: a ``[1]`` pow
advances once per step whether the step was dense or sparse, so in lazy
sparse mode rows that were untouched for k steps get a bias correction for
the global step count; per-row pows advance only for the rows present.

The formulas follow PaddlePaddle Fluid 1.x's operators (sgd_op, momentum_op,
lars_momentum_op, adam_op, adamax_op, adagrad_op, decayed_adagrad_op,
rmsprop_op, ftrl_op, adadelta_op, lamb_op, dpsgd_op). `ACCUMULATORS` lists each optimizer's state under the
names Fluid saves (the optimizer layer creates ``<param>_<name>_0``), in the
order the update functions take them.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from psjob.foundation.kernels import native
from psjob.foundation.kernels.rows import put_rows, stable_order, take_rows

# A numpy or a cupy array (the kernels run on either; `xp` is its module), and a core:
# an elementwise function of arrays and scalars returning the new arrays.
Array = Any
Core = Callable[..., tuple]

__all__ = [
    "ACCUMULATORS", "AccumulatorSpec", "DENSE_UPDATES", "ROW_UPDATES", "WHOLE_PARAMETER",
    "merge_duplicate_rows", "pow_is_per_row", "check_dense_shapes", "check_row_shapes",
    "sgd_update", "sgd_update_rows",
    "momentum_update", "momentum_update_rows",
    "lars_momentum_update", "lars_momentum_update_rows",
    "adam_update", "adam_update_rows",
    "adamax_update", "adamax_update_rows",
    "adagrad_update", "adagrad_update_rows",
    "decayed_adagrad_update", "decayed_adagrad_update_rows",
    "rmsprop_update", "rmsprop_update_rows",
    "ftrl_update", "ftrl_update_rows",
    "adadelta_update", "adadelta_update_rows",
    "lamb_update", "lamb_update_rows",
    "dpsgd_update", "dpsgd_update_rows", "dpsgd_noise",
]

PARAM_SHAPED = "param"    # same shape as the parameter; sliced with it
ORIGIN_SHAPED = "origin"  # shape [1]; one value per variable (beta pows)


@dataclasses.dataclass(frozen=True)
class AccumulatorSpec:
    """One optimizer state variable, as the optimizer layer must create it.

    ``fill`` is the initial value: a number, or the name of the hyperparameter
    whose value it starts at (Fluid starts beta1_pow_acc at beta1).
    ``used_when`` names a boolean hyperparameter without which the update
    function does not take this state: rmsprop's mean_grad is created (and
    saved) always, as Fluid does, but passed only when centered.
    """
    name: str
    shape: str = PARAM_SHAPED
    fill: float | str = 0.0
    used_when: str | None = None


ACCUMULATORS: dict[str, tuple[AccumulatorSpec, ...]] = {
    "sgd": (),
    "momentum": (AccumulatorSpec("velocity"),),
    "lars_momentum": (AccumulatorSpec("velocity"),),
    "adam": (
        AccumulatorSpec("moment1"),
        AccumulatorSpec("moment2"),
        AccumulatorSpec("beta1_pow_acc", ORIGIN_SHAPED, "beta1"),
        AccumulatorSpec("beta2_pow_acc", ORIGIN_SHAPED, "beta2"),
    ),
    "adamax": (
        AccumulatorSpec("moment"),
        AccumulatorSpec("inf_norm"),
        AccumulatorSpec("beta1_pow_acc", ORIGIN_SHAPED, "beta1"),
    ),
    # Fluid's AdagradOptimizer starts moment at initial_accumulator_value (0).
    "adagrad": (AccumulatorSpec("moment"),),
    "decayed_adagrad": (AccumulatorSpec("moment"),),
    # Fluid names rmsprop's momentum buffer "momentum" (<param>_momentum_0).
    "rmsprop": (
        AccumulatorSpec("mean_square"),
        AccumulatorSpec("momentum"),
        AccumulatorSpec("mean_grad", used_when="centered"),
    ),
    "ftrl": (AccumulatorSpec("squared"), AccumulatorSpec("linear")),
    "dpsgd": (),
    # Fluid names them "_avg_squared_grad"/"_avg_squared_update" (<param>__avg_squared_grad_0).
    "adadelta": (AccumulatorSpec("_avg_squared_grad"), AccumulatorSpec("_avg_squared_update")),
    "lamb": (
        AccumulatorSpec("moment1"),
        AccumulatorSpec("moment2"),
        AccumulatorSpec("beta1_pow_acc", ORIGIN_SHAPED, "beta1"),
        AccumulatorSpec("beta2_pow_acc", ORIGIN_SHAPED, "beta2"),
    ),
}
# Optimizers whose step reads the whole parameter (a norm): a sparse table, which holds rows,
# cannot run them, and a pserver runs them only on an unsliced parameter.
WHOLE_PARAMETER = ("lars_momentum", "lamb", "dpsgd")


# --------------------------------------------------------------- validation

def _check_float(name: str, array: Array) -> None:
    if array.dtype.kind != "f":
        raise TypeError(f"{name} must be a floating-point array, got dtype {array.dtype}")


def check_dense_shapes(param: Array, grad: Array, states: Mapping[str, Array]) -> None:
    """Shape and dtype checks of a dense update (no array contents read)."""
    _check_float("param", param)
    if grad.shape != param.shape:
        raise ValueError(f"grad shape {grad.shape} does not match param shape {param.shape}")
    for name, state in states.items():
        if state.shape != param.shape:
            raise ValueError(f"{name} shape {state.shape} does not match param shape {param.shape}")


def _lr(xp: Any, lr: float | Array, dtype: Any) -> float | Array:
    """A Python float stays weakly typed; an array becomes a 0-d array of
    param's dtype (no host round trip on cupy)."""
    if isinstance(lr, (int, float)):
        return float(lr)
    lr = xp.asarray(lr)
    if lr.size != 1:
        raise ValueError(f"lr must be a float or a one-element array, got shape {lr.shape}")
    return lr.astype(dtype, copy=False).reshape(())


def pow_is_per_row(param: Array, pow_: Array) -> bool:
    """True for per-row beta pows ([n, 1, ...]); False for origin-shaped [1]."""
    return (pow_.ndim == param.ndim and pow_.shape[0] == param.shape[0]
            and all(d == 1 for d in pow_.shape[1:]))


def _check_pow(name: str, param: Array, pow_: Array) -> None:
    if pow_.size == 1 or pow_is_per_row(param, pow_):
        return
    raise ValueError(
        f"{name} must have shape [1] or per-row shape {(param.shape[0],) + (1,) * (param.ndim - 1)},"
        f" got {pow_.shape}")


def merge_duplicate_rows(xp: Any, rows: Array, values: Array) -> tuple[Array, Array]:
    """Sum the values of repeated row ids: ``(unique_sorted_rows, summed_values)``.

    Vectorized: one sort and one segmented sum (numpy) or scatter-add (cupy);
    no per-row loop.
    """
    rows = xp.asarray(rows)
    if rows.ndim != 1:
        raise ValueError(f"rows must be one-dimensional, got shape {rows.shape}")
    if values.shape[:1] != rows.shape:
        raise ValueError(f"grad values have {values.shape[0] if values.ndim else 0} rows"
                         f" but rows has {rows.shape[0]} ids")
    if xp is np:
        # Sort once, then one reduceat over the runs of equal ids: about twice
        # as fast as unique(return_inverse) + add.at on CTR-sized batches.
        order = stable_order(rows)
        sorted_rows = rows[order]
        starts_mask = np.empty(sorted_rows.shape[0], dtype=bool)
        if starts_mask.size:
            starts_mask[0] = True
            np.not_equal(sorted_rows[1:], sorted_rows[:-1], out=starts_mask[1:])
        sorted_values = values[order]
        if starts_mask.all():
            return sorted_rows, sorted_values
        starts = np.flatnonzero(starts_mask)
        return sorted_rows[starts], np.add.reduceat(sorted_values, starts, axis=0)
    unique, inverse = xp.unique(rows, return_inverse=True)
    if unique.shape[0] == rows.shape[0]:
        # Already unique: unique() sorted them; reorder the values to match.
        order = xp.argsort(rows)
        return unique, values[order]
    summed = xp.zeros((unique.shape[0],) + values.shape[1:], dtype=values.dtype)
    xp.add.at(summed, inverse.reshape(-1), values)
    return unique, summed


def check_row_shapes(param: Array, rows: Array, values: Array, states: Mapping[str, Array]) -> None:
    """Shape and dtype checks of a sparse update; reads no array contents, so
    it costs no device synchronisation on cupy."""
    _check_float("param", param)
    if rows.ndim != 1:
        raise ValueError(f"rows must be one-dimensional, got shape {rows.shape}")
    if rows.dtype.kind not in "iu":
        raise TypeError(f"rows must be an integer array, got dtype {rows.dtype}")
    if values.shape != rows.shape[:1] + param.shape[1:]:
        raise ValueError(f"grad values shape {values.shape} does not match"
                         f" {rows.shape[:1] + param.shape[1:]} (len(rows),) + param.shape[1:]")
    for name, state in states.items():
        if state.shape != param.shape:
            raise ValueError(f"{name} shape {state.shape} does not match param shape {param.shape}")


def _prepare_rows(xp: Any, param: Array, rows: Array, values: Array, states: Mapping[str, Array],
                  assume_unique: bool) -> tuple[Array, Array]:
    rows = xp.asarray(rows)
    check_row_shapes(param, rows, values, states)
    if rows.size and bool(((rows < 0) | (rows >= param.shape[0])).any()):
        raise IndexError(f"rows out of range for a parameter with {param.shape[0]} rows")
    if not assume_unique:
        rows, values = merge_duplicate_rows(xp, rows, values)
    return rows.astype("int64", copy=False), values


def _rows_of(param: Array, pow_: Array, rows: Array) -> Array:
    return take_rows(pow_, rows) if pow_is_per_row(param, pow_) else pow_


def _advance_pow(param: Array, pow_: Array, beta: float, rows: Array | None = None) -> None:
    if rows is not None and pow_is_per_row(param, pow_):
        put_rows(pow_, rows, take_rows(pow_, rows) * beta)
    else:
        pow_[...] = pow_ * beta


def _run_dense(core: Core, param: Array, grad: Array, states: tuple, *extra: Any) -> None:
    """Apply an elementwise core to whole arrays and write results back."""
    new = core(param, grad, *states, *extra)
    for target, value in zip((param,) + tuple(states), new):
        target[...] = value


def _run_rows(core: Core, param: Array, rows: Array, values: Array, states: tuple, *extra: Any) -> None:
    """Apply an elementwise core to the gathered rows and scatter them back."""
    new = core(take_rows(param, rows), values, *(take_rows(s, rows) for s in states), *extra)
    for target, value in zip((param,) + tuple(states), new):
        put_rows(target, rows, value)


# --------------------------------------------------------------- sgd

def sgd_update(xp: Any, param: Array, grad: Array, *, lr: float | Array) -> None:
    """param -= lr * grad."""
    check_dense_shapes(param, grad, {})
    lr = _lr(xp, lr, param.dtype)
    _run_dense(lambda p, g: (p - lr * g,), param, grad, ())


def sgd_update_rows(xp: Any, param: Array, rows: Array, grad_values: Array, *, lr: float | Array,
                    assume_unique: bool = False) -> None:
    rows, values = _prepare_rows(xp, param, rows, grad_values, {}, assume_unique)
    lr = _lr(xp, lr, param.dtype)
    if native.fits(param, values):
        native.sgd_rows(param, rows, values, lr)
        return
    _run_rows(lambda p, g: (p - lr * g,), param, rows, values, ())


# --------------------------------------------------------------- momentum

def _momentum_core(p: Array, g: Array, v: Array, lr: float | Array, mu: float,
                   use_nesterov: bool) -> tuple[Array, Array]:
    v = mu * v + g
    if use_nesterov:
        return p - (g + mu * v) * lr, v
    return p - lr * v, v


def momentum_update(xp: Any, param: Array, grad: Array, velocity: Array, *, lr: float | Array, mu: float,
                    use_nesterov: bool = False) -> None:
    """velocity = mu*velocity + grad; param -= lr*velocity
    (nesterov: param -= lr*(grad + mu*velocity))."""
    check_dense_shapes(param, grad, {"velocity": velocity})
    _run_dense(_momentum_core, param, grad, (velocity,),
               _lr(xp, lr, param.dtype), float(mu), bool(use_nesterov))


def momentum_update_rows(xp: Any, param: Array, rows: Array, grad_values: Array, velocity: Array, *, lr: float | Array,
                         mu: float, use_nesterov: bool = False, assume_unique: bool = False) -> None:
    rows, values = _prepare_rows(xp, param, rows, grad_values, {"velocity": velocity}, assume_unique)
    _run_rows(_momentum_core, param, rows, values, (velocity,),
              _lr(xp, lr, param.dtype), float(mu), bool(use_nesterov))


# --------------------------------------------------------------- lars_momentum

def _lars_local_lr(xp: Any, lr: float | Array, p_norm: Array, g_norm: Array, lars_coeff: float,
                   lars_weight_decay: float) -> Array:
    # Fluid falls back to the global lr when either norm is zero (a freshly
    # zero-initialised parameter would otherwise never move).
    use_global = (p_norm <= 0) | (g_norm <= 0)
    denominator = xp.where(use_global, 1.0, g_norm + lars_weight_decay * p_norm)
    return xp.where(use_global, lr, lr * lars_coeff * p_norm / denominator)


def _lars_core(p: Array, g: Array, v: Array, local_lr: float | Array, mu: float, wd: float) -> tuple[Array, Array]:
    v = mu * v + local_lr * (g + wd * p)
    return p - v, v


def lars_momentum_update(xp: Any, param: Array, grad: Array, velocity: Array, *, lr: float | Array, mu: float,
                         lars_coeff: float = 0.001, lars_weight_decay: float = 0.0005) -> None:
    """local_lr = lr*coeff*|p| / (|g| + wd*|p|) (lr when a norm is 0);
    velocity = mu*velocity + local_lr*(grad + wd*param); param -= velocity."""
    check_dense_shapes(param, grad, {"velocity": velocity})
    lr = _lr(xp, lr, param.dtype)
    local_lr = _lars_local_lr(xp, lr, xp.sqrt((param * param).sum()), xp.sqrt((grad * grad).sum()),
                              float(lars_coeff), float(lars_weight_decay)).astype(param.dtype)
    _run_dense(_lars_core, param, grad, (velocity,), local_lr, float(mu), float(lars_weight_decay))


def lars_momentum_update_rows(xp: Any, param: Array, rows: Array, grad_values: Array, velocity: Array, *,
                              lr: float | Array, mu: float, lars_coeff: float = 0.001,
                              lars_weight_decay: float = 0.0005, assume_unique: bool = False) -> None:
    """Lazy LARS: the norms are those of the whole parameter and of the
    (merged) sparse gradient, as for the equivalent dense gradient; only the
    rows present are updated. (Fluid itself has no sparse LARS kernel.)"""
    rows, values = _prepare_rows(xp, param, rows, grad_values, {"velocity": velocity}, assume_unique)
    lr = _lr(xp, lr, param.dtype)
    local_lr = _lars_local_lr(xp, lr, xp.sqrt((param * param).sum()), xp.sqrt((values * values).sum()),
                              float(lars_coeff), float(lars_weight_decay)).astype(param.dtype)
    _run_rows(_lars_core, param, rows, values, (velocity,), local_lr, float(mu),
              float(lars_weight_decay))


# --------------------------------------------------------------- adam

def _adam_core(xp: Any) -> Core:
    def core(p: Array, g: Array, m1: Array, m2: Array, b1p: Array, b2p: Array, lr: float | Array, beta1: float,
             beta2: float, epsilon: float, scale_epsilon: bool) -> tuple[Array, Array, Array]:
        m1 = beta1 * m1 + (1.0 - beta1) * g
        m2 = beta2 * m2 + (1.0 - beta2) * g * g
        correction = xp.sqrt(1.0 - b2p)
        lr_t = lr * correction / (1.0 - b1p)
        eps = epsilon * correction if scale_epsilon else epsilon
        return p - lr_t * (m1 / (xp.sqrt(m2) + eps)), m1, m2
    return core


def _in_place_ok(xp: Any, param: Array, grad: Array, *states: Array) -> bool:
    """The numpy in-place form applies: every array one float dtype (no promotion)."""
    return xp is np and all(a.dtype == param.dtype for a in (grad,) + states)


def _adam_in_place(p: Array, g: Array, m1: Array, m2: Array, b1p: Array, b2p: Array, lr: float | Array, beta1: float,
                   beta2: float, epsilon: float, scale_epsilon: bool) -> None:
    """`_adam_core` on numpy, written into p, m1 and m2 with one scratch array instead of a
    new array per operation (each a fresh mapping, page-faulted, for a parameter of some
    hundred KB). The operations and their order are the core's: bitwise the same result."""
    t = np.multiply(g, 1.0 - beta1)
    m1 *= beta1
    m1 += t
    np.multiply(g, 1.0 - beta2, out=t)
    t *= g
    m2 *= beta2
    m2 += t
    correction = np.sqrt(1.0 - b2p)
    lr_t = lr * correction / (1.0 - b1p)
    np.sqrt(m2, out=t)
    t += epsilon * correction if scale_epsilon else epsilon
    np.divide(m1, t, out=t)
    t *= lr_t
    p -= t


def _betas_of(param: Array, beta1: float, beta2: float) -> tuple[float, float]:
    """beta1, beta2 rounded to param's float type, as Paddle's adam kernel takes them
    (`beta1.to<T>()`) before it forms 1 - beta in T: with float32 0.999, 1 - beta2 is
    0.00099998713, the same rounding the beta2 pow carries, so the first step's bias
    correction cancels exactly as in Paddle (1 - beta of the rounded value is exact in double)."""
    if getattr(param, "dtype", None) == np.float32:
        return float(np.float32(beta1)), float(np.float32(beta2))
    return float(beta1), float(beta2)


def adam_update(xp: Any, param: Array, grad: Array, moment1: Array, moment2: Array, beta1_pow: Array, beta2_pow: Array,
                *, lr: float | Array, beta1: float = 0.9, beta2: float = 0.999, epsilon: float = 1e-8,
                scale_epsilon: bool = True) -> None:
    """Adam: m1, m2 moving averages; lr_t = lr*sqrt(1-b2p)/(1-b1p);
    param -= lr_t*m1/(sqrt(m2) + eps); then b1p*=beta1, b2p*=beta2.

    eps is epsilon*sqrt(1-b2p) with scale_epsilon (Paddle 2.x/3.x's adam op, the default)
    and plain epsilon without it (Paddle 1.8's adam op, which Fluid 1.x programs get: their
    AdamOptimizer writes the op's scale_epsilon attribute False)."""
    beta1, beta2 = _betas_of(param, beta1, beta2)
    if (beta1_pow.size == 1 and beta2_pow.size == 1 and grad.shape == param.shape == moment1.shape == moment2.shape
            and native.fits(param, grad, moment1, moment2, beta1_pow, beta2_pow)):
        # What the checks below would pass (float32, equal shapes, [1] pows): the update and
        # both pows' advance in one pass, without their per-call cost (a pserver runs this
        # for every dense parameter of every push).
        native.adam_dense(param, grad, moment1, moment2, beta1_pow, beta2_pow, lr=_lr(xp, lr, param.dtype),
                          beta1=beta1, beta2=beta2, epsilon=epsilon, scale_epsilon=scale_epsilon)
        return
    check_dense_shapes(param, grad, {"moment1": moment1, "moment2": moment2})
    _check_pow("beta1_pow", param, beta1_pow)
    _check_pow("beta2_pow", param, beta2_pow)
    hyper = (_lr(xp, lr, param.dtype), float(beta1), float(beta2), float(epsilon), bool(scale_epsilon))
    if _in_place_ok(xp, param, grad, moment1, moment2, beta1_pow, beta2_pow):
        _adam_in_place(param, grad, moment1, moment2, beta1_pow, beta2_pow, *hyper)
    else:
        _run_dense(_adam_core(xp), param, grad, (moment1, moment2), beta1_pow, beta2_pow, *hyper)
    _advance_pow(param, beta1_pow, float(beta1))
    _advance_pow(param, beta2_pow, float(beta2))


def _native_rows_ok(param: Array, rows: Array, values: Array, m1: Array, m2: Array, b1p: Array, b2p: Array) -> bool:
    """The C row update takes these as they are, and _prepare_rows's checks (but the range
    of the rows, which the C kernel checks itself) pass: int64 1-D rows, float32 arrays of
    matching shapes, both pows per-row or both one value."""
    if not (type(rows) is np.ndarray and rows.dtype == np.int64 and rows.ndim == 1
            and values.shape == rows.shape + param.shape[1:] and m1.shape == param.shape == m2.shape):
        return False
    per_row = pow_is_per_row(param, b1p)
    if per_row != pow_is_per_row(param, b2p) or (not per_row and (b1p.size != 1 or b2p.size != 1)):
        return False
    return native.fits(param, values, m1, m2, b1p, b2p)


def adam_update_rows(xp: Any, param: Array, rows: Array, grad_values: Array, moment1: Array, moment2: Array,
                     beta1_pow: Array, beta2_pow: Array, *, lr: float | Array, beta1: float = 0.9, beta2: float = 0.999,
                     epsilon: float = 1e-8, scale_epsilon: bool = True, assume_unique: bool = False) -> None:
    """Lazy adam (Fluid's lazy_mode=True): only the rows present move (scale_epsilon: as
    `adam_update`)."""
    beta1, beta2 = _betas_of(param, beta1, beta2)
    if assume_unique and _native_rows_ok(param, rows, grad_values, moment1, moment2, beta1_pow, beta2_pow):
        # Every check of _prepare_rows but the rows' range holds; the C kernel checks that
        # before it writes anything (a table's push: no numpy pass over the rows first).
        native.adam_rows(param, moment1, moment2, beta1_pow, beta2_pow, rows, grad_values,
                         lr=_lr(xp, lr, param.dtype), beta1=beta1, beta2=beta2, epsilon=epsilon,
                         scale_epsilon=scale_epsilon,
                         per_row=pow_is_per_row(param, beta1_pow))
        return
    rows, values = _prepare_rows(xp, param, rows, grad_values,
                                 {"moment1": moment1, "moment2": moment2}, assume_unique)
    _check_pow("beta1_pow", param, beta1_pow)
    _check_pow("beta2_pow", param, beta2_pow)
    per_row = pow_is_per_row(param, beta1_pow)
    if per_row == pow_is_per_row(param, beta2_pow) and native.fits(param, values, moment1, moment2,
                                                                   beta1_pow, beta2_pow):
        # each row updated where it lies, its pows (per-row ones) advanced with it
        native.adam_rows(param, moment1, moment2, beta1_pow, beta2_pow, rows, values,
                         lr=_lr(xp, lr, param.dtype), beta1=beta1, beta2=beta2, epsilon=epsilon,
                         scale_epsilon=scale_epsilon,
                         per_row=per_row)
        return
    b1p, b2p = _rows_of(param, beta1_pow, rows), _rows_of(param, beta2_pow, rows)
    hyper = (_lr(xp, lr, param.dtype), float(beta1), float(beta2), float(epsilon), bool(scale_epsilon))
    if not _in_place_ok(xp, param, values, moment1, moment2, beta1_pow, beta2_pow):
        _run_rows(_adam_core(xp), param, rows, values, (moment1, moment2), b1p, b2p, *hyper)
        _advance_pow(param, beta1_pow, float(beta1), rows)
        _advance_pow(param, beta2_pow, float(beta2), rows)
        return
    # The gathered rows are fresh arrays: update them in place, scatter each back once.
    p, m1, m2 = take_rows(param, rows), take_rows(moment1, rows), take_rows(moment2, rows)
    _adam_in_place(p, values, m1, m2, b1p, b2p, *hyper)
    for target, value in ((param, p), (moment1, m1), (moment2, m2)):
        put_rows(target, rows, value)
    for pow_, gathered, beta in ((beta1_pow, b1p, float(beta1)), (beta2_pow, b2p, float(beta2))):
        if pow_ is gathered:        # origin-shaped: one value, advanced once
            pow_ *= beta
        else:                       # per-row: the rows gathered above, advanced and put back
            put_rows(pow_, rows, gathered * beta)


# --------------------------------------------------------------- adamax

def _adamax_core(xp: Any) -> Core:
    def core(p: Array, g: Array, moment: Array, inf_norm: Array, b1p: Array, lr: float | Array, beta1: float,
             beta2: float, epsilon: float) -> tuple[Array, Array, Array]:
        moment = beta1 * moment + (1.0 - beta1) * g
        inf_norm = xp.maximum(beta2 * inf_norm + epsilon, xp.abs(g))
        lr_t = lr / (1.0 - b1p)
        return p - lr_t * moment / inf_norm, moment, inf_norm
    return core


def adamax_update(xp: Any, param: Array, grad: Array, moment: Array, inf_norm: Array, beta1_pow: Array, *,
                  lr: float | Array, beta1: float = 0.9, beta2: float = 0.999, epsilon: float = 1e-8) -> None:
    """moment = b1*moment + (1-b1)*g; inf_norm = max(b2*inf_norm + eps, |g|);
    param -= lr/(1-b1p) * moment/inf_norm; then b1p *= beta1."""
    check_dense_shapes(param, grad, {"moment": moment, "inf_norm": inf_norm})
    _check_pow("beta1_pow", param, beta1_pow)
    _run_dense(_adamax_core(xp), param, grad, (moment, inf_norm), beta1_pow,
               _lr(xp, lr, param.dtype), float(beta1), float(beta2), float(epsilon))
    _advance_pow(param, beta1_pow, float(beta1))


def adamax_update_rows(xp: Any, param: Array, rows: Array, grad_values: Array, moment: Array, inf_norm: Array,
                       beta1_pow: Array, *, lr: float | Array, beta1: float = 0.9, beta2: float = 0.999,
                       epsilon: float = 1e-8, assume_unique: bool = False) -> None:
    rows, values = _prepare_rows(xp, param, rows, grad_values,
                                 {"moment": moment, "inf_norm": inf_norm}, assume_unique)
    _check_pow("beta1_pow", param, beta1_pow)
    _run_rows(_adamax_core(xp), param, rows, values, (moment, inf_norm),
              _rows_of(param, beta1_pow, rows),
              _lr(xp, lr, param.dtype), float(beta1), float(beta2), float(epsilon))
    _advance_pow(param, beta1_pow, float(beta1), rows)


# --------------------------------------------------------------- adagrad family

def _adagrad_core(xp: Any) -> Core:
    def core(p: Array, g: Array, moment: Array, lr: float | Array, decay: float, epsilon: float) -> tuple[Array, Array]:
        # decay is None for plain adagrad: moment += g^2.
        moment = moment + g * g if decay is None else decay * moment + (1.0 - decay) * g * g
        return p - lr * g / (xp.sqrt(moment) + epsilon), moment
    return core


def adagrad_update(xp: Any, param: Array, grad: Array, moment: Array, *, lr: float | Array,
                   epsilon: float = 1e-6) -> None:
    """moment += g^2; param -= lr*g/(sqrt(moment) + epsilon)."""
    check_dense_shapes(param, grad, {"moment": moment})
    _run_dense(_adagrad_core(xp), param, grad, (moment,), _lr(xp, lr, param.dtype),
               None, float(epsilon))


def adagrad_update_rows(xp: Any, param: Array, rows: Array, grad_values: Array, moment: Array, *, lr: float | Array,
                        epsilon: float = 1e-6, assume_unique: bool = False) -> None:
    rows, values = _prepare_rows(xp, param, rows, grad_values, {"moment": moment}, assume_unique)
    if native.fits(param, values, moment):
        native.adagrad_rows(param, moment, rows, values, _lr(xp, lr, param.dtype), epsilon)
        return
    _run_rows(_adagrad_core(xp), param, rows, values, (moment,), _lr(xp, lr, param.dtype),
              None, float(epsilon))


def decayed_adagrad_update(xp: Any, param: Array, grad: Array, moment: Array, *, lr: float | Array, decay: float = 0.95,
                           epsilon: float = 1e-6) -> None:
    """moment = decay*moment + (1-decay)*g^2; param -= lr*g/(sqrt(moment) + epsilon)."""
    check_dense_shapes(param, grad, {"moment": moment})
    _run_dense(_adagrad_core(xp), param, grad, (moment,), _lr(xp, lr, param.dtype),
               float(decay), float(epsilon))


def decayed_adagrad_update_rows(xp: Any, param: Array, rows: Array, grad_values: Array, moment: Array, *,
                                lr: float | Array, decay: float = 0.95, epsilon: float = 1e-6,
                                assume_unique: bool = False) -> None:
    rows, values = _prepare_rows(xp, param, rows, grad_values, {"moment": moment}, assume_unique)
    _run_rows(_adagrad_core(xp), param, rows, values, (moment,), _lr(xp, lr, param.dtype),
              float(decay), float(epsilon))


# --------------------------------------------------------------- rmsprop

def _rmsprop_core(xp: Any, centered: bool) -> Core:
    def core(p: Array, g: Array, mean_square: Array, moment: Array, *rest: Any) -> tuple[Array, ...]:
        # rest = ([mean_grad,] lr, rho, epsilon, momentum): mean_grad is a
        # state (gathered and written back) only when centered.
        *mean_grad, lr, rho, epsilon, momentum = rest
        mean_square = rho * mean_square + (1.0 - rho) * g * g
        if centered:  # subtract the squared running mean of g
            mg = rho * mean_grad[0] + (1.0 - rho) * g
            moment = momentum * moment + lr * g / xp.sqrt(mean_square - mg * mg + epsilon)
            return p - moment, mean_square, moment, mg
        moment = momentum * moment + lr * g / xp.sqrt(mean_square + epsilon)
        return p - moment, mean_square, moment
    return core


def _rmsprop_states(mean_square: Array, moment: Array, mean_grad: Array, centered: bool) -> dict[str, Array]:
    if centered and mean_grad is None:
        raise ValueError("centered rmsprop needs the mean_grad accumulator")
    states = {"mean_square": mean_square, "momentum": moment}
    if centered:
        states["mean_grad"] = mean_grad
    return states


def rmsprop_update(xp: Any, param: Array, grad: Array, mean_square: Array, moment: Array,
                   mean_grad: Array | None = None, *, lr: float | Array, rho: float = 0.95, epsilon: float = 1e-6,
                   momentum: float = 0.0, centered: bool = False) -> None:
    """ms = rho*ms + (1-rho)*g^2; [centered: mg = rho*mg + (1-rho)*g]
    moment = momentum*moment + lr*g/sqrt(ms [- mg^2] + epsilon); param -= moment."""
    states = _rmsprop_states(mean_square, moment, mean_grad, centered)
    check_dense_shapes(param, grad, states)
    _run_dense(_rmsprop_core(xp, centered), param, grad, tuple(states.values()),
               _lr(xp, lr, param.dtype), float(rho), float(epsilon), float(momentum))


def rmsprop_update_rows(xp: Any, param: Array, rows: Array, grad_values: Array, mean_square: Array, moment: Array,
                        mean_grad: Array | None = None, *, lr: float | Array, rho: float = 0.95, epsilon: float = 1e-6,
                        momentum: float = 0.0, centered: bool = False, assume_unique: bool = False) -> None:
    states = _rmsprop_states(mean_square, moment, mean_grad, centered)
    rows, values = _prepare_rows(xp, param, rows, grad_values, states, assume_unique)
    _run_rows(_rmsprop_core(xp, centered), param, rows, values, tuple(states.values()),
              _lr(xp, lr, param.dtype), float(rho), float(epsilon), float(momentum))


# --------------------------------------------------------------- ftrl

def _ftrl_core(xp: Any) -> Core:
    def core(p: Array, g: Array, squared: Array, linear: Array, lr: float | Array, l1: float, l2: float,
             lr_power: float) -> tuple[Array, Array, Array]:
        new_squared = squared + g * g
        if lr_power == -0.5:
            new_root, old_root = xp.sqrt(new_squared), xp.sqrt(squared)
        else:
            new_root, old_root = new_squared ** -lr_power, squared ** -lr_power
        linear = linear + g - (new_root - old_root) / lr * p
        x = l1 * xp.sign(linear) - linear
        y = new_root / lr + 2.0 * l2
        p = xp.where(xp.abs(linear) > l1, x / y, xp.zeros_like(p))
        return p, new_squared, linear
    return core


def ftrl_update(xp: Any, param: Array, grad: Array, squared: Array, linear: Array, *, lr: float | Array,
                l1: float = 0.0, l2: float = 0.0, lr_power: float = -0.5) -> None:
    """Fluid ftrl_op: new_sq = sq + g^2; linear += g - (new_sq^-p - sq^-p)/lr * param;
    param = (l1*sign(linear) - linear) / (new_sq^-p/lr + 2*l2) where |linear| > l1, else 0."""
    check_dense_shapes(param, grad, {"squared": squared, "linear": linear})
    _run_dense(_ftrl_core(xp), param, grad, (squared, linear), _lr(xp, lr, param.dtype),
               float(l1), float(l2), float(lr_power))


def ftrl_update_rows(xp: Any, param: Array, rows: Array, grad_values: Array, squared: Array, linear: Array, *,
                     lr: float | Array, l1: float = 0.0, l2: float = 0.0, lr_power: float = -0.5,
                     assume_unique: bool = False) -> None:
    rows, values = _prepare_rows(xp, param, rows, grad_values,
                                 {"squared": squared, "linear": linear}, assume_unique)
    _run_rows(_ftrl_core(xp), param, rows, values, (squared, linear), _lr(xp, lr, param.dtype),
              float(l1), float(l2), float(lr_power))


# --------------------------------------------------------------- adadelta

def _adadelta_core(xp: Any) -> Core:
    def core(p: Array, g: Array, avg_sq_grad: Array, avg_sq_update: Array, lr: float | Array, rho: float,
             epsilon: float, paddle18_rule: bool) -> tuple[Array, Array, Array]:
        avg_sq_grad = rho * avg_sq_grad + (1.0 - rho) * g * g
        update = -xp.sqrt((avg_sq_update + epsilon) / (avg_sq_grad + epsilon)) * g
        avg_sq_update = rho * avg_sq_update + (1.0 - rho) * update * update
        if paddle18_rule:
            # Paddle 1.8's op evaluates the step after writing avg_sq_update in place (a lazy
            # Eigen expression over the same buffer): the step reads the new value.
            return p - xp.sqrt((avg_sq_update + epsilon) / (avg_sq_grad + epsilon)) * g, avg_sq_grad, avg_sq_update
        return p + lr * update, avg_sq_grad, avg_sq_update
    return core


def adadelta_update(xp: Any, param: Array, grad: Array, avg_squared_grad: Array, avg_squared_update: Array, *,
                    lr: float | Array, rho: float = 0.95, epsilon: float = 1e-6,
                    paddle18_rule: bool = False) -> None:
    """asg = rho*asg + (1-rho)*g^2; update = -sqrt((asu + eps)/(asg + eps)) * g;
    asu = rho*asu + (1-rho)*update^2; param += lr*update (Paddle 2.x/3.x's adadelta op).
    paddle18_rule: Paddle 1.8.5's op, which takes no learning rate and steps by
    -sqrt((new asu + eps)/(asg + eps)) * g (checked against Paddle 1.8.5)."""
    check_dense_shapes(param, grad, {"_avg_squared_grad": avg_squared_grad,
                                     "_avg_squared_update": avg_squared_update})
    _run_dense(_adadelta_core(xp), param, grad, (avg_squared_grad, avg_squared_update),
               _lr(xp, lr, param.dtype), float(rho), float(epsilon), bool(paddle18_rule))


def adadelta_update_rows(xp: Any, param: Array, rows: Array, grad_values: Array, avg_squared_grad: Array,
                         avg_squared_update: Array, *, lr: float | Array, rho: float = 0.95, epsilon: float = 1e-6,
                         paddle18_rule: bool = False, assume_unique: bool = False) -> None:
    rows, values = _prepare_rows(xp, param, rows, grad_values, {"_avg_squared_grad": avg_squared_grad,
                                                                "_avg_squared_update": avg_squared_update},
                                 assume_unique)
    _run_rows(_adadelta_core(xp), param, rows, values, (avg_squared_grad, avg_squared_update),
              _lr(xp, lr, param.dtype), float(rho), float(epsilon), bool(paddle18_rule))


# --------------------------------------------------------------- lamb

def lamb_update(xp: Any, param: Array, grad: Array, moment1: Array, moment2: Array, beta1_pow: Array,
                beta2_pow: Array, *, lr: float | Array, beta1: float = 0.9, beta2: float = 0.999,
                epsilon: float = 1e-6, weight_decay: float = 0.01, always_adapt: bool = False,
                bias_correction: bool = True) -> None:
    """LAMB (Paddle's lamb op): Adam's moments, the bias-corrected step
    u = (m1/(1-b1p)) / (sqrt(m2/(1-b2p)) + epsilon) + weight_decay*param, scaled by the trust
    ratio |param|/|u| (1 where either norm is 0) over the whole parameter:
    param -= lr * ratio * u; then the pows advance. Paddle 2.x/3.x take the ratio only when
    weight_decay > 0 or always_adapt. Paddle 1.8.5's op (bias_correction=False) divides by
    neither 1 - b1p nor 1 - b2p and leaves the pows as they are (its op has no Beta1PowOut);
    it always takes the ratio (always_adapt=True). Both checked against real Paddle."""
    check_dense_shapes(param, grad, {"moment1": moment1, "moment2": moment2})
    for name, pow_ in (("beta1_pow", beta1_pow), ("beta2_pow", beta2_pow)):
        if pow_.size != 1:
            raise ValueError(f"lamb's {name} must hold one value, got shape {pow_.shape}")
    lr = _lr(xp, lr, param.dtype)
    beta1, beta2 = _betas_of(param, beta1, beta2)
    m1 = beta1 * moment1 + (1.0 - beta1) * grad
    m2 = beta2 * moment2 + (1.0 - beta2) * grad * grad
    if bias_correction:
        step = (m1 / (1.0 - beta1_pow)) / (xp.sqrt(m2 / (1.0 - beta2_pow)) + epsilon) + weight_decay * param
    else:
        step = m1 / (xp.sqrt(m2) + epsilon) + weight_decay * param
    if always_adapt or weight_decay > 0:
        p_norm, s_norm = xp.sqrt((param * param).sum()), xp.sqrt((step * step).sum())
        ratio = xp.where((p_norm > 0) & (s_norm > 0), p_norm / xp.where(s_norm > 0, s_norm, 1.0), 1.0)
        param[...] = param - (lr * ratio).astype(param.dtype) * step
    else:
        param[...] = param - lr * step
    moment1[...], moment2[...] = m1, m2
    if bias_correction:
        _advance_pow(param, beta1_pow, float(beta1))
        _advance_pow(param, beta2_pow, float(beta2))


def lamb_update_rows(xp: Any, param: Array, rows: Array, grad_values: Array, moment1: Array, moment2: Array,
                     beta1_pow: Array, beta2_pow: Array, *, lr: float | Array, beta1: float = 0.9,
                     beta2: float = 0.999, epsilon: float = 1e-6, weight_decay: float = 0.01,
                     always_adapt: bool = False, bias_correction: bool = True, assume_unique: bool = False) -> None:
    """A sparse gradient as Paddle's lamb takes it: the rows it lacks have gradient 0, and every
    row's moments decay (the trust ratio is over the whole parameter)."""
    rows, values = _prepare_rows(xp, param, rows, grad_values, {"moment1": moment1, "moment2": moment2},
                                 assume_unique)
    dense = xp.zeros_like(param)
    put_rows(dense, rows, values)
    lamb_update(xp, param, dense, moment1, moment2, beta1_pow, beta2_pow, lr=lr, beta1=beta1, beta2=beta2,
                epsilon=epsilon, weight_decay=weight_decay, always_adapt=always_adapt,
                bias_correction=bias_correction)


# --------------------------------------------------------------- dpsgd

_MINSTD_MULTIPLIER, _MINSTD_MODULUS = 48271, 2147483647


def dpsgd_noise(seed: int, sigma: float) -> np.float32:
    """The one Gaussian draw of a dpsgd step, as Paddle 1.8's dpsgd op makes it (float32): a
    std::minstd_rand seeded with `seed` (0: the current time in seconds, as the op does), two
    uniform floats per try of the polar Box-Muller method, X = V1*sqrt(-2 ln S / S); times sigma.
    The generator is seeded afresh at each step, so a fixed seed draws the same noise every step."""
    if int(seed) == 0:
        seed = int(time.time())
    state = int(seed) % (2 ** 32) % _MINSTD_MODULUS or 1
    f32 = np.float32
    # std::generate_canonical<float>: (x - 1) / float(2147483646), the divisor rounded to 2^31
    divisor = f32(_MINSTD_MODULUS - 1)
    while True:
        uniforms = []
        for _ in range(2):
            state = state * _MINSTD_MULTIPLIER % _MINSTD_MODULUS
            u = f32(state - 1) / divisor
            uniforms.append(u if u < 1 else np.nextafter(f32(1), f32(0)))
        v1, v2 = f32(2) * uniforms[0] - f32(1), f32(2) * uniforms[1] - f32(1)
        square = v1 * v1 + v2 * v2
        if 0 < square < 1:
            break
    x = v1 * np.sqrt(f32(-2) * np.log(square) / square)
    return f32(0) + x * f32(sigma)


def dpsgd_update(xp: Any, param: Array, grad: Array, *, lr: float | Array, clip: float = 0.9,
                 batch_size: float = 0.999, sigma: float = 1e-8, seed: float = 0) -> None:
    """Differentially private SGD (Paddle 1.8's dpsgd op): the gradient scaled down to L2 norm
    `clip` when it is longer (scale = |g| / clip), one Gaussian draw of std `sigma` for the whole
    parameter (`dpsgd_noise`), param -= lr * (g / scale + noise / batch_size)."""
    check_dense_shapes(param, grad, {})
    lr = _lr(xp, lr, param.dtype)
    norm = float(xp.sqrt((grad.astype("float64") ** 2).sum()))
    scale = np.float32(norm / float(clip)) if norm > float(clip) else np.float32(1.0)
    noise = dpsgd_noise(int(seed), float(sigma)) / np.float32(batch_size)
    param[...] = param - lr * (grad / scale + noise)


def dpsgd_update_rows(xp: Any, param: Array, rows: Array, grad_values: Array, *, lr: float | Array,
                      clip: float = 0.9, batch_size: float = 0.999, sigma: float = 1e-8, seed: float = 0,
                      assume_unique: bool = False) -> None:
    raise TypeError("dpsgd takes dense gradients only (as Paddle's DpsgdOptimizer): build the embedding "
                    "with is_sparse=False, or use another optimizer for sparse parameters")


DENSE_UPDATES: dict[str, Callable[..., None]] = {
    "sgd": sgd_update, "momentum": momentum_update, "lars_momentum": lars_momentum_update,
    "adam": adam_update, "adamax": adamax_update, "adagrad": adagrad_update,
    "decayed_adagrad": decayed_adagrad_update, "rmsprop": rmsprop_update, "ftrl": ftrl_update,
    "adadelta": adadelta_update, "lamb": lamb_update, "dpsgd": dpsgd_update,
}
ROW_UPDATES: dict[str, Callable[..., None]] = {
    "sgd": sgd_update_rows, "momentum": momentum_update_rows,
    "lars_momentum": lars_momentum_update_rows, "adam": adam_update_rows,
    "adamax": adamax_update_rows, "adagrad": adagrad_update_rows,
    "decayed_adagrad": decayed_adagrad_update_rows, "rmsprop": rmsprop_update_rows,
    "ftrl": ftrl_update_rows, "adadelta": adadelta_update_rows, "lamb": lamb_update_rows,
    "dpsgd": dpsgd_update_rows,
}
