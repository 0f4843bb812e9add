"""Learning-rate schedule ops: one small op per Fluid decay formula.

Each op reads the global step counter (`Step`, the int64 `@LR_DECAY_COUNTER@`
that an `increment` op advances at the start of every run) and writes the
step's learning rate (`Out`, float32 [1]). An optional `BaseLR` input
replaces the `learning_rate` attribute when the schedule's base rate is
itself a Variable (e.g. a warm-up wrapped around a decay).

Fluid builds these formulas from a dozen generic ops (floor, pow, Switch
blocks...); psjob uses one dedicated op per schedule so that the LRSched ops
the DistributeTranspiler moves to a pserver form a short, self-contained
block with no sub-blocks. The math runs on the place's array module with
float64 intermediates, so a one-element device array never round-trips to
the host.
"""
from __future__ import annotations

import math

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import in_var, register_op, set_out


def _infer(op):
    step = in_var(op, "Step")
    if step.dtype not in ("int64", "int32", "float32", "float64"):
        raise GraphError(f"op {op.type!r}: Step {step.name!r} must be a numeric counter, got {step.dtype}")
    set_out(op, "Out", [1], op.attr("dtype", "float32"))


def _register(op_type, formula):
    """formula(xp, step_f64, base_lr, attr) -> array of the learning rate."""
    def kernel(ctx):
        xp = ctx.xp
        step = xp.asarray(ctx.input("Step")).astype("float64").reshape(1)
        if ctx.has_input("BaseLR"):
            base = xp.asarray(ctx.input("BaseLR")).astype("float64").reshape(1)
        else:
            base = float(ctx.attr("learning_rate", 1.0))
        out = formula(xp, step, base, ctx.attr)
        ctx.set_output("Out", xp.asarray(out).astype(ctx.attr("dtype", "float32")).reshape(1))

    kernel.__name__ = f"{op_type}_kernel"
    register_op(op_type, infer_shape=_infer)(kernel)


def _div(xp, step, attr):
    div = step / float(attr("decay_steps"))
    return xp.floor(div) if attr("staircase", False) else div


def _exponential(xp, step, lr, attr):
    return lr * float(attr("decay_rate")) ** _div(xp, step, attr)


def _natural_exp(xp, step, lr, attr):
    return lr * xp.exp(-float(attr("decay_rate")) * _div(xp, step, attr))


def _inverse_time(xp, step, lr, attr):
    return lr / (1.0 + float(attr("decay_rate")) * _div(xp, step, attr))


def _polynomial(xp, step, lr, attr):
    decay_steps = float(attr("decay_steps"))
    end, power = float(attr("end_learning_rate", 1e-4)), float(attr("power", 1.0))
    if attr("cycle", False):
        # The decay period stretches to the next multiple of decay_steps
        # (at least one period, also at step 0).
        periods = xp.maximum(xp.ceil(step / decay_steps), 1.0)
        horizon = decay_steps * periods
    else:
        step = xp.minimum(step, decay_steps)
        horizon = decay_steps
    return (lr - end) * (1.0 - step / horizon) ** power + end


def _piecewise(xp, step, lr, attr):
    boundaries = xp.asarray([float(b) for b in attr("boundaries")], dtype="float64")
    values = xp.asarray([float(v) for v in attr("values")], dtype="float64")
    # values[i] while step < boundaries[i]; the last value after the last boundary.
    return values[xp.searchsorted(boundaries, step, side="right")]


def _noam(xp, step, lr, attr):
    d_model, warmup = float(attr("d_model")), float(attr("warmup_steps"))
    # step**-0.5 is infinite at step 0, where the warm-up branch (0) is the min anyway.
    a = xp.where(step > 0, step, 1.0) ** -0.5
    b = warmup ** -1.5 * step
    return lr * d_model ** -0.5 * xp.minimum(a, b)


def _cosine(xp, step, lr, attr):
    epoch = xp.floor(step / float(attr("step_each_epoch")))
    return lr * 0.5 * (xp.cos(epoch * math.pi / float(attr("epochs"))) + 1.0)


def _linear_warmup(xp, step, lr, attr):
    warmup = float(attr("warmup_steps"))
    start, end = float(attr("start_lr")), float(attr("end_lr"))
    ramp = start + (end - start) * step / warmup
    return xp.where(step < warmup, ramp, lr)


LR_OP_TYPES = {
    "lr_exponential_decay": _exponential,
    "lr_natural_exp_decay": _natural_exp,
    "lr_inverse_time_decay": _inverse_time,
    "lr_polynomial_decay": _polynomial,
    "lr_piecewise_decay": _piecewise,
    "lr_noam_decay": _noam,
    "lr_cosine_decay": _cosine,
    "lr_linear_warmup": _linear_warmup,
}

for _t, _f in LR_OP_TYPES.items():
    _register(_t, _f)
