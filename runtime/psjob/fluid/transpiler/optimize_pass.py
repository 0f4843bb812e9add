"""Reading the optimize pass out of a program: optimizer ops, their helpers, LR ops.

`optimizer.minimize()` appends, with op_role Optimize and op_role_var
[param, grad], one optimizer op per parameter plus helper ops (weight decay,
clipping) that feed it; learning-rate schedules append LRSched ops. The
transpiler moves all of them to the pservers. Helpers are grouped with their
optimizer op by union-find over "reads what the other writes", so a decay op
and the optimizer it feeds always land in the same pserver block.
"""
from __future__ import annotations

from dataclasses import dataclass

from psjob.fluid.framework import OP_ROLE_ATTR_NAME, OP_ROLE_VAR_ATTR_NAME, GraphError, OpRole, Program
from psjob.fluid.transpiler.details import UnionFind, ops_connected

# The optimizers Fluid's DistributeTranspiler supports on pservers, and which of each one's
# inputs are shaped like the parameter (so they are sliced with it); the
# others (beta pows) keep their own shape.
PARAM_SHAPED_SLOTS = {
    "sgd": (),
    "momentum": ("Velocity",),
    "lars_momentum": ("Velocity",),
    "adam": ("Moment1", "Moment2"),
    "adamax": ("Moment", "InfNorm"),
    "adagrad": ("Moment",),
    "decayed_adagrad": ("Moment",),
    "rmsprop": ("Moment", "MeanSquare", "MeanGrad"),
    "ftrl": ("SquaredAccumulator", "LinearAccumulator"),
    "adadelta": ("AvgSquaredGrad", "AvgSquaredUpdate"),
    "lamb": ("Moment1", "Moment2"),
    "dpsgd": (),
}
SUPPORTED_OPTIMIZERS = tuple(PARAM_SHAPED_SLOTS)
# Optimizers whose step needs the whole parameter or gradient (lamb's trust ratio, dpsgd's
# clipping norm and its one noise draw): a pserver runs them on an unsliced parameter only, and
# the plan refuses to slice one (lars_momentum, Fluid's own, keeps Fluid's per-block norms).
UNSLICEABLE = ("lamb", "dpsgd")
CORE_SLOTS = ("Param", "Grad", "LearningRate")


class UnsupportedOptimizerError(ValueError):
    pass


def is_optimizer_op(op) -> bool:
    return "Param" in op.inputs and "LearningRate" in op.inputs


def optimizer_input_shape(op_type: str, slot: str, orig_shape, param_shape):
    """Shape of an optimizer input on a pserver that holds `param_shape` of the parameter."""
    if op_type not in PARAM_SHAPED_SLOTS:
        raise UnsupportedOptimizerError(
            f"optimizer op {op_type!r} is not supported for distributed training; supported: "
            f"{', '.join(SUPPORTED_OPTIMIZERS)}")
    return tuple(param_shape) if slot in PARAM_SHAPED_SLOTS[op_type] else tuple(orig_shape)


def is_param_shaped(op_type: str, slot: str) -> bool:
    return slot in PARAM_SHAPED_SLOTS.get(op_type, ())


def _role(op) -> int:
    return int(op.attr(OP_ROLE_ATTR_NAME, 0) or 0)


@dataclass
class OptimizePass:
    """What the transpiler needs from a program's optimize pass (ops of the given program)."""

    opt_ops: list            # every Optimize-role op, program order
    params_grads: list       # [(param name, grad name)], first-seen order
    lr_ops: list             # LRSched ops, program order
    components: dict         # param name -> ops (program order) placed with its optimizer op
    optimizer_of: dict       # param name -> its optimizer op

    def lr_var_names(self) -> set:
        return {op.input("LearningRate")[0] for op in self.optimizer_of.values()}


def read_optimize_pass(program: Program) -> OptimizePass:
    block = program.global_block()
    opt_ops = [op for op in block.ops if _role(op) == int(OpRole.Optimize)]
    if not block.ops or (not opt_ops and not any(p.trainable for p in block.all_parameters())):
        # An empty program, or one whose loss no trainable parameter reaches (minimize made no
        # update; Paddle 1.8 transpiles both): nothing to place on the pservers, so the trainer
        # program sends nothing and each pserver serves no parameter.
        return OptimizePass([], [], [], {}, {})
    if not any(is_optimizer_op(op) for op in opt_ops):
        raise GraphError("the program has no optimizer ops: call optimizer.minimize(loss) on it "
                         "before DistributeTranspiler.transpile()")
    averaged = [op.input("param")[0] for op in opt_ops if op.type == "average_accumulates"]
    if averaged:
        raise UnsupportedOptimizerError(
            f"fluid.optimizer.ModelAverage (its average_accumulates ops, parameters {averaged}) is not "
            "supported for distributed training: its sums of the parameters would stay on the trainer while "
            "the pservers update the parameters. Transpile the program built without ModelAverage, and "
            "average in a single-process program, or evaluate the trained parameters as they are")
    lr_role = int(OpRole.LRSched)
    lr_ops = [op for op in block.ops if _role(op) in (lr_role, lr_role | int(OpRole.Optimize))]

    # The gradient backward produced is the op_role_var grad that no optimize
    # op writes (clipping and decay ops name their own outputs in op_role_var).
    written = {n for op in opt_ops for n in op.output_arg_names}
    grads_of: dict = {}
    for op in opt_ops:
        role_var = op.attr(OP_ROLE_VAR_ATTR_NAME)
        if not role_var or len(role_var) < 2:
            raise GraphError(
                f"optimize op {op.type!r} (outputs {op.output_arg_names}) carries no op_role_var "
                "[param, grad]: ops that combine several parameters' gradients (such as clipping by "
                "global norm) cannot be split across parameter servers")
        grads_of.setdefault(role_var[0], []).append(role_var[1])
    params_grads = []
    for param, grads in grads_of.items():
        source = [g for g in grads if g not in written] or grads
        params_grads.append((param, source[0]))

    optimizer_of = {}
    for op in opt_ops:
        if is_optimizer_op(op):
            if op.type not in PARAM_SHAPED_SLOTS:
                raise UnsupportedOptimizerError(
                    f"optimizer op {op.type!r} (parameter {op.input('Param')[0]!r}) is not supported "
                    f"for distributed training; supported: {', '.join(SUPPORTED_OPTIMIZERS)}")
            param = op.input("Param")[0]
            if param in optimizer_of:
                raise GraphError(f"parameter {param!r} has two optimizer ops "
                                 f"({optimizer_of[param].type!r} and {op.type!r})")
            optimizer_of[param] = op
    return OptimizePass(opt_ops, params_grads, lr_ops, _components(opt_ops, optimizer_of), optimizer_of)


def _components(opt_ops, optimizer_of) -> dict:
    uf = UnionFind(opt_ops)
    for i, a in enumerate(opt_ops):
        for b in opt_ops[i + 1:]:
            if ops_connected(a, b):
                uf.union(a, b)
    by_root: dict = {}
    for op in opt_ops:
        by_root.setdefault(uf.find(op), []).append(op)
    param_of_root = {}
    for param, op in optimizer_of.items():
        root = uf.find(op)
        if root in param_of_root:
            raise GraphError(
                f"the optimizer ops of {param_of_root[root]!r} and {param!r} are connected through "
                "shared helper ops (for example clipping by global norm); psjob places each "
                "parameter's optimizer on its own pserver block and cannot split such a group")
        param_of_root[root] = param
    components = {}
    for root, ops in by_root.items():
        if root not in param_of_root:
            names = ", ".join(f"{op.type}->{op.output_arg_names}" for op in ops)
            raise GraphError(f"optimize ops not connected to any optimizer op cannot be placed on a "
                             f"pserver: {names}")
        components[param_of_root[root]] = ops
    return components
