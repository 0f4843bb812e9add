"""Optimizer ops: sgd, momentum, lars_momentum, adam, adamax, adagrad,
decayed_adagrad, rmsprop, ftrl, adadelta, lamb, dpsgd — Paddle's op types and slot names.

The math is not here: each kernel gathers its slots and calls the matching
update function of `psjob.foundation.kernels.optimizers` (one implementation of each
formula in the codebase, shared with the pservers' tables and checked against
the CUDA versions). A kernel only decides dense versus sparse:

* a dense Grad calls ``<name>_update``;
* a SelectedRows Grad calls ``<name>_update_rows``: duplicate ids are summed
  and only the rows present change (lazy). Paddle itself densifies momentum
  and rmsprop sparse updates and has no sparse kernel for lars_momentum,
  adamax, decayed_adagrad and ftrl; psjob is lazy for all of them, because
  its sparse parameters are huge embedding tables where touching every row
  each step is what the parameter-server design avoids. The one exception is
  adam, which keeps Paddle's `lazy_mode` switch: with lazy_mode=False (the
  default, as in Paddle) a sparse gradient is densified and every row's
  moments decay. A sparse adam step with one beta-power value uses the powers
  advanced once, as Paddle's own sparse kernel does (_sparse_adam_pows); per-row
  powers (a distributed table's) keep the textbook rule.

Updates are in place: ParamOut names the same variable as Param (and each
state output its state input), as the optimizer layer builds them. If an
output names a different variable (a hand-built program), the input is copied
there first, so the input is left untouched.

Adam and adamax advance their beta-power accumulators inside the update
(outputs Beta1PowOut/Beta2PowOut), not through separate scale ops.
"""
from __future__ import annotations

from psjob.fluid.core import SelectedRows
from psjob.fluid.framework import GraphError, VarType
from psjob.fluid.ops.registry import in_var, register_op, set_out
from psjob.foundation.kernels import optimizers as K

# op type -> ((state input slot, state output slot), ...) in the positional
# order the kernels.optimizers update functions take the states.
_STATE_SLOTS = {
    "sgd": (),
    "momentum": (("Velocity", "VelocityOut"),),
    "lars_momentum": (("Velocity", "VelocityOut"),),
    "adam": (("Moment1", "Moment1Out"), ("Moment2", "Moment2Out"),
             ("Beta1Pow", "Beta1PowOut"), ("Beta2Pow", "Beta2PowOut")),
    "adamax": (("Moment", "MomentOut"), ("InfNorm", "InfNormOut"), ("Beta1Pow", "Beta1PowOut")),
    "adagrad": (("Moment", "MomentOut"),),
    "decayed_adagrad": (("Moment", "MomentOut"),),
    # MeanGrad is passed only when centered (ACCUMULATORS' used_when).
    "rmsprop": (("MeanSquare", "MeanSquareOut"), ("Moment", "MomentOut"),
                ("MeanGrad", "MeanGradOut")),
    "ftrl": (("SquaredAccumulator", "SquaredAccumOut"), ("LinearAccumulator", "LinearAccumOut")),
    "adadelta": (("AvgSquaredGrad", "AvgSquaredGradOut"), ("AvgSquaredUpdate", "AvgSquaredUpdateOut")),
    "dpsgd": (),
    # Paddle 1.8's lamb op has no Beta1PowOut/Beta2PowOut (no bias correction, its pows never
    # advance); 2.x's has.
    "lamb": (("Moment1", "Moment1Out"), ("Moment2", "Moment2Out"),
             ("Beta1Pow", "Beta1PowOut"), ("Beta2Pow", "Beta2PowOut")),
}

# op type -> {op attribute: (kernel keyword, default)}
_HYPER = {
    "sgd": {},
    "momentum": {"mu": ("mu", 0.9), "use_nesterov": ("use_nesterov", False)},
    "lars_momentum": {"mu": ("mu", 0.9), "lars_coeff": ("lars_coeff", 0.001),
                      "lars_weight_decay": ("lars_weight_decay", 0.0005)},
    # scale_epsilon (psjob's attribute): Paddle 2.x/3.x's epsilon * sqrt(1 - beta2^t), the
    # default (Paddle 3's programs, and programs loaded from Paddle's files); False: Paddle 1.8's
    # plain epsilon, which fluid.optimizer.Adam writes (kernels.optimizers.adam_update).
    "adam": {"beta1": ("beta1", 0.9), "beta2": ("beta2", 0.999), "epsilon": ("epsilon", 1e-8),
             "scale_epsilon": ("scale_epsilon", True)},
    "adamax": {"beta1": ("beta1", 0.9), "beta2": ("beta2", 0.999), "epsilon": ("epsilon", 1e-8)},
    "adagrad": {"epsilon": ("epsilon", 1e-6)},
    "decayed_adagrad": {"decay": ("decay", 0.95), "epsilon": ("epsilon", 1e-6)},
    # Paddle's rmsprop op calls rho "decay".
    "rmsprop": {"decay": ("rho", 0.95), "epsilon": ("epsilon", 1e-6),
                "momentum": ("momentum", 0.0), "centered": ("centered", False)},
    "ftrl": {"l1": ("l1", 0.0), "l2": ("l2", 0.0), "lr_power": ("lr_power", -0.5)},
    # paddle18_rule (psjob's attribute): Paddle 1.8's adadelta op (no learning rate; the step
    # reads the updated avg_squared_update), which fluid.optimizer.Adadelta writes; Paddle
    # 2.x/3.x's (param += lr * update) by default (kernels.optimizers.adadelta_update).
    "adadelta": {"rho": ("rho", 0.95), "epsilon": ("epsilon", 1e-6),
                 "paddle18_rule": ("paddle18_rule", False)},
    "dpsgd": {"clip": ("clip", 0.9), "batch_size": ("batch_size", 0.999), "sigma": ("sigma", 1e-8),
              "seed": ("seed", 0)},
    "lamb": {"beta1": ("beta1", 0.9), "beta2": ("beta2", 0.999), "epsilon": ("epsilon", 1e-6),
             "weight_decay": ("weight_decay", 0.01), "always_adapt": ("always_adapt", False)},
}

_BETA_POW_SLOTS = ("Beta1Pow", "Beta2Pow")


def state_specs(op_type: str) -> dict:
    """State input slot -> its `kernels.optimizers.AccumulatorSpec` (name, shape kind, fill)."""
    return {in_slot: spec for (in_slot, _), spec in zip(_STATE_SLOTS[op_type], K.ACCUMULATORS[op_type])}


def kernel_hyperparameters(op_type: str, attrs) -> dict:
    """An optimizer op's attributes as the keyword arguments of its
    `psjob.foundation.kernels.optimizers` update (Paddle's attribute names differ from the
    kernels' in places: rmsprop's `decay` is `rho`), defaults filled in. The
    transpiler builds a distributed table's OptimizerConfig from it, so the
    pservers' per-row rule uses exactly the hyperparameters of the program's op."""
    if op_type not in _HYPER:
        raise ValueError(f"{op_type!r} is not an optimizer op; known: {', '.join(_HYPER)}")
    out = {}
    for attr, (kw, default) in _HYPER[op_type].items():
        value = attrs.get(attr, default)
        out[kw] = value if isinstance(value, bool) else float(value)
    return out


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _infer(op_type):
    """Outputs mirror their inputs; catch mismatched slots at build time."""
    def infer(op):
        param = in_var(op, "Param")
        grad = in_var(op, "Grad")
        lr = in_var(op, "LearningRate")
        if lr.shape and _numel(lr.shape) != 1:
            raise GraphError(f"op {op_type!r}: LearningRate {lr.name!r} must hold one value, "
                             f"got shape {list(lr.shape)}")
        if (grad.type != VarType.SELECTED_ROWS and grad.shape and min(grad.shape) >= 0
                and param.shape and tuple(grad.shape) != tuple(param.shape)):
            raise GraphError(f"op {op_type!r}: Grad {grad.name!r}{list(grad.shape)} does not match "
                             f"Param {param.name!r}{list(param.shape)}")
        set_out(op, "ParamOut", param.shape, param.dtype)
        for in_slot, out_slot in _STATE_SLOTS[op_type]:
            if not op.input(in_slot) or not op.output(out_slot):
                continue
            state = in_var(op, in_slot)
            if in_slot in _BETA_POW_SLOTS:
                if state.shape and _numel(state.shape) != 1 and state.shape[0] != param.shape[0]:
                    raise GraphError(f"op {op_type!r}: {in_slot} {state.name!r} must have shape [1], "
                                     f"got {list(state.shape)}")
            elif state.shape and param.shape and tuple(state.shape) != tuple(param.shape):
                raise GraphError(f"op {op_type!r}: {in_slot} {state.name!r}{list(state.shape)} does "
                                 f"not match Param {param.name!r}{list(param.shape)}")
            set_out(op, out_slot, state.shape, state.dtype)
    return infer


def _updatable(ctx, in_slot, out_slot):
    """The array the kernel may update in place and that ends up in out_slot."""
    value = ctx.input(in_slot)
    same = ctx.has_output(out_slot) and ctx.output_name(out_slot) == ctx.ins[in_slot][0]
    flags = getattr(value, "flags", None)
    if not same or not getattr(flags, "writeable", True):  # cupy flags have no writeable
        value = value.copy()
        if ctx.has_output(out_slot):
            ctx.set_output(out_slot, value)
        else:  # a read-only input updated where it stands
            ctx.vals[ctx.ins[in_slot][0]] = value
    return value


def _advance_adam_pows_first(states, hyper):
    """Paddle's CPU adam kernel for a SelectedRows gradient (lazy or not) writes
    Beta1PowOut = beta1 * Beta1Pow, and the same for beta2, before the update reads the pows;
    in a program the two name one variable, so a sparse step's bias correction uses
    beta ** (t + 1) where a dense step's uses beta ** t (Paddle 1.8 and 3.0 alike). To give
    Paddle's result, the one-value pows advance first and keep that value after the update;
    per-row pows (psjob's own) are left as they are. Returns the advanced pair, or None."""
    b1p, b2p = states[2], states[3]
    if b1p.size != 1 or b2p.size != 1:
        return None
    advanced = (b1p * hyper["beta1"], b2p * hyper["beta2"])
    b1p[...], b2p[...] = advanced
    return advanced


def _make_kernel(op_type):
    state_slots = _STATE_SLOTS[op_type]
    hyper_spec = _HYPER[op_type]
    dense_fn, rows_fn = K.DENSE_UPDATES[op_type], K.ROW_UPDATES[op_type]
    specs = K.ACCUMULATORS[op_type]
    if len(specs) != len(state_slots):
        raise RuntimeError(f"{op_type}: slots {state_slots} do not match accumulators {specs}")
    used_when = tuple(spec.used_when for spec in specs)

    def kernel(ctx):
        xp = ctx.xp
        hyper = {kw: ctx.attr(attr, default) for attr, (kw, default) in hyper_spec.items()}
        # A state the update does not use (rmsprop's mean_grad unless
        # centered) exists in the program, as in Paddle, but is not passed.
        slots = [pair for pair, when in zip(state_slots, used_when) if when is None or hyper[when]]
        for in_slot, _ in slots:
            if not ctx.ins.get(in_slot):
                raise GraphError(f"op {op_type!r} of parameter {ctx.ins['Param'][0]!r} needs "
                                 f"the accumulator input {in_slot!r}")
        if op_type == "lamb":  # Paddle 1.8's op (no Beta1PowOut): no bias correction, pows unchanged
            hyper["bias_correction"] = ctx.has_output("Beta1PowOut")
        param = _updatable(ctx, "Param", "ParamOut")
        states = [_updatable(ctx, i, o) for i, o in slots]
        grad = ctx.input("Grad")
        lr = ctx.input("LearningRate")
        if isinstance(grad, SelectedRows):
            advanced = _advance_adam_pows_first(states, hyper) if op_type == "adam" else None
            if op_type == "adam" and not ctx.attr("lazy_mode", False):
                dense_fn(xp, param, grad.to_dense(xp), *states, lr=lr, **hyper)
            else:
                rows_fn(xp, param, grad.rows, grad.values, *states, lr=lr, assume_unique=grad.unique, **hyper)
            if advanced is not None:
                states[2][...], states[3][...] = advanced
        else:
            dense_fn(xp, param, grad, *states, lr=lr, **hyper)

    kernel.__name__ = f"{op_type}_kernel"
    kernel.__doc__ = f"{op_type}: calls psjob.foundation.kernels.optimizers.{dense_fn.__name__} / {rows_fn.__name__}."
    return kernel


OPTIMIZER_OP_TYPES = tuple(_STATE_SLOTS)

for _t in OPTIMIZER_OP_TYPES:
    register_op(_t, infer_shape=_infer(_t))(_make_kernel(_t))


# -- average_accumulates (fluid.optimizer.ModelAverage) ---------------------------------------------

# Paddle's kMaxNumAccumulates: every this many updates sum_1 moves into sum_2 (precision).
_MAX_NUM_ACCUMULATES = 16384
_AVERAGE_SUMS = ("sum_1", "sum_2", "sum_3")
_AVERAGE_COUNTS = ("num_accumulates", "old_num_accumulates", "num_updates")


def _infer_average_accumulates(op):
    param = in_var(op, "param")
    for name in _AVERAGE_SUMS:
        set_out(op, f"out_{name}", param.shape, param.dtype)
    for name in _AVERAGE_COUNTS:
        set_out(op, f"out_{name}", (1,), "int64")


@register_op("average_accumulates", infer_shape=_infer_average_accumulates)
def average_accumulates_kernel(ctx):
    """Paddle's average_accumulates op (ModelAverage's window of parameter sums): the parameter
    is added to sum_1; every 16384 updates sum_1 moves into sum_2; once the window holds at
    least min_average_window and min(max_average_window, int(num_updates * average_window))
    values, sum_3 takes sum_1 + sum_2 (the finished window), whose count becomes
    old_num_accumulates, and a new window starts."""
    xp = ctx.xp
    param = ctx.input("param")
    sum_1, sum_2, sum_3 = (ctx.input(f"in_{name}") for name in _AVERAGE_SUMS)
    num_accumulates, old_num_accumulates, num_updates = (int(xp.asarray(ctx.input(f"in_{name}")).reshape(-1)[0])
                                                         for name in _AVERAGE_COUNTS)
    num_updates += 1
    num_accumulates += 1
    sum_1 = sum_1 + param
    if num_updates % _MAX_NUM_ACCUMULATES == 0:
        sum_2, sum_1 = sum_2 + sum_1, xp.zeros_like(sum_1)
    window = min(int(ctx.attr("max_average_window", 10000)), int(num_updates * float(ctx.attr("average_window"))))
    if num_accumulates >= int(ctx.attr("min_average_window", 10000)) and num_accumulates >= window:
        sum_3 = sum_1 + sum_2
        sum_1, sum_2 = xp.zeros_like(sum_1), xp.zeros_like(sum_2)
        old_num_accumulates, num_accumulates = num_accumulates, 0
    for name, value in zip(_AVERAGE_SUMS, (sum_1, sum_2, sum_3)):
        ctx.set_output(f"out_{name}", value)
    for name, value in zip(_AVERAGE_COUNTS, (num_accumulates, old_num_accumulates, num_updates)):
        ctx.set_output(f"out_{name}", xp.asarray([value], dtype="int64"))
