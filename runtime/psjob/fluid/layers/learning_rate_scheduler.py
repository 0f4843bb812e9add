"""Learning-rate schedules (Fluid 1.x signatures) built as LRSched-role ops.

Every schedule shares one persistable int64 counter, `@LR_DECAY_COUNTER@`,
created on first use: the startup program sets it to `begin - 1` and an
`increment` op prepended to the main program adds 1 at the start of each run,
so the first step sees `begin` (0, or 1 for noam_decay, as in Fluid). Each
schedule then appends one dedicated op from ops/lr_ops.py that turns the
counter into this step's learning rate, a float32 [1] Variable to hand to an
optimizer as `learning_rate`.

All these ops carry op_role LRSched: `Program.clone(for_test=True)` drops
them and the DistributeTranspiler moves them, as one block, to the
parameter servers (whose counter then counts optimizer rounds).
"""
from __future__ import annotations

import numbers

from psjob.fluid.framework import Variable, default_main_program
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers.tensor import create_global_var

__all__ = [
    "exponential_decay", "natural_exp_decay", "inverse_time_decay", "polynomial_decay",
    "piecewise_decay", "noam_decay", "cosine_decay", "linear_lr_warmup",
]

LR_DECAY_COUNTER = "@LR_DECAY_COUNTER@"


def _decay_step_counter(begin=0) -> Variable:
    """The global step counter (created once per program, shared by schedules)."""
    block = default_main_program().global_block()
    if block.has_var(LR_DECAY_COUNTER):
        return block.var(LR_DECAY_COUNTER)
    counter = create_global_var(shape=[1], value=begin - 1, dtype="int64", persistable=True,
                                name=LR_DECAY_COUNTER)
    # Prepended: the counter advances before anything reads it in a run.
    block._prepend_op(type="increment", inputs={"X": [counter]}, outputs={"Out": [counter]},
                      attrs={"step": 1.0})
    return counter


def _positive(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not value > 0:
        raise ValueError(f"{name} must be positive, got {value}")
    return float(value)


def _real(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    return float(value)


def _schedule(op_type, learning_rate, attrs, begin=0) -> Variable:
    """Append the counter (if new) and the schedule op under the LRSched role."""
    program = default_main_program()
    inputs = {}
    if isinstance(learning_rate, Variable):
        inputs["BaseLR"] = [learning_rate]
    else:
        attrs["learning_rate"] = _real("learning_rate", learning_rate)
    helper = LayerHelper(op_type)
    with program._lr_schedule_guard():
        inputs["Step"] = [_decay_step_counter(begin)]
        out = helper.create_variable_for_type_inference("float32", stop_gradient=True, shape=[1])
        helper.append_op(type=op_type, inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


def exponential_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """lr * decay_rate ^ (step / decay_steps)  (the exponent floored if staircase)."""
    return _schedule("lr_exponential_decay", learning_rate, {
        "decay_steps": _positive("decay_steps", decay_steps),
        "decay_rate": _positive("decay_rate", decay_rate), "staircase": bool(staircase)})


def natural_exp_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """lr * exp(-decay_rate * step / decay_steps)  (floored if staircase)."""
    return _schedule("lr_natural_exp_decay", learning_rate, {
        "decay_steps": _positive("decay_steps", decay_steps),
        "decay_rate": _real("decay_rate", decay_rate), "staircase": bool(staircase)})


def inverse_time_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """lr / (1 + decay_rate * step / decay_steps)  (floored if staircase)."""
    return _schedule("lr_inverse_time_decay", learning_rate, {
        "decay_steps": _positive("decay_steps", decay_steps),
        "decay_rate": _real("decay_rate", decay_rate), "staircase": bool(staircase)})


def polynomial_decay(learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False):
    """(lr - end) * (1 - step / decay_steps) ^ power + end, holding `end` after
    decay_steps; with cycle the horizon grows to the next multiple of decay_steps."""
    return _schedule("lr_polynomial_decay", learning_rate, {
        "decay_steps": _positive("decay_steps", decay_steps),
        "end_learning_rate": _real("end_learning_rate", end_learning_rate),
        "power": _real("power", power), "cycle": bool(cycle)})


def piecewise_decay(boundaries, values):
    """values[i] while step < boundaries[i]; values[-1] from the last boundary on."""
    boundaries, values = list(boundaries), list(values)
    if len(values) != len(boundaries) + 1:
        raise ValueError(f"piecewise_decay needs len(values) == len(boundaries) + 1, "
                         f"got {len(values)} values for {len(boundaries)} boundaries")
    bounds = [_real("boundaries[i]", b) for b in boundaries]
    if any(b >= c for b, c in zip(bounds, bounds[1:])):
        raise ValueError(f"piecewise_decay boundaries must increase strictly, got {boundaries}")
    return _schedule("lr_piecewise_decay", 1.0, {
        "boundaries": bounds, "values": [_real("values[i]", v) for v in values]})


def noam_decay(d_model, warmup_steps, learning_rate=1.0):
    """lr * d_model^-0.5 * min(step^-0.5, warmup_steps^-1.5 * step), steps counted from 1."""
    return _schedule("lr_noam_decay", learning_rate, {
        "d_model": _positive("d_model", d_model),
        "warmup_steps": _positive("warmup_steps", warmup_steps)}, begin=1)


def cosine_decay(learning_rate, step_each_epoch, epochs):
    """lr * 0.5 * (cos(floor(step / step_each_epoch) * pi / epochs) + 1)."""
    return _schedule("lr_cosine_decay", learning_rate, {
        "step_each_epoch": _positive("step_each_epoch", step_each_epoch),
        "epochs": _positive("epochs", epochs)})


def linear_lr_warmup(learning_rate, warmup_steps, start_lr, end_lr):
    """start_lr → end_lr linearly over warmup_steps, then `learning_rate`
    (a float or another schedule's Variable)."""
    return _schedule("lr_linear_warmup", learning_rate, {
        "warmup_steps": _positive("warmup_steps", warmup_steps),
        "start_lr": _real("start_lr", start_lr), "end_lr": _real("end_lr", end_lr)})
