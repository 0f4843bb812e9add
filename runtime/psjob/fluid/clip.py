"""Gradient clipping (Fluid 1.x `fluid.clip`).

A clip attribute lives on a parameter — `ParamAttr(gradient_clip=...)` or
`set_gradient_clip(clip, param_list)` — and is applied by the optimizer in
`apply_gradients`, after backward and before weight decay and the optimizer
op (Fluid's order). Each clipping op is appended under
`_optimized_guard([param, grad])`, so it carries op_role Optimize and the
(param, grad) op_role_var the DistributeTranspiler uses to place it beside
its optimizer op.

GradientClipByGlobalNorm works in two passes over all gradients of a group
(parameters sharing `group_name`): first each gradient's squared norm, then
one scale op for the group and a multiply per gradient.

ErrorClipByValue (clipping of intermediate gradients during backward) is not
provided: psjob's append_backward takes no per-variable callbacks.
"""
from __future__ import annotations

import copy
import numbers

from psjob.fluid import unique_name
from psjob.fluid.framework import GraphError, Parameter, Variable, default_main_program

__all__ = ["BaseGradientClipAttr", "GradientClipByValue", "GradientClipByNorm",
           "GradientClipByGlobalNorm", "set_gradient_clip", "append_gradient_clip_ops"]


def _number(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    return float(value)


def _new_like(block, grad, key):
    return block.create_var(name=unique_name.generate(f"{grad.name}_{key}"), shape=grad.shape,
                            dtype=grad.dtype, type=grad.type, stop_gradient=True)


class BaseGradientClipAttr:
    def _process_context(self, context, param, grad):
        """First pass over all gradients (global norm collects squared norms)."""

    def _create_operators(self, param, grad):
        raise NotImplementedError


class NullGradientClipAttr(BaseGradientClipAttr):
    def _create_operators(self, param, grad):
        return param, grad


class GradientClipByValue(BaseGradientClipAttr):
    """grad = min(max(grad, min), max); min defaults to -max."""

    def __init__(self, max, min=None):
        max_v = _number("max", max)
        min_v = -max_v if min is None else _number("min", min)
        if min_v > max_v:
            raise ValueError(f"GradientClipByValue: min ({min_v}) must not exceed max ({max_v})")
        self.max, self.min = max_v, min_v

    def _create_operators(self, param, grad):
        block = grad.block
        out = _new_like(block, grad, "clip")
        block.append_op(type="clip", inputs={"X": [grad]}, outputs={"Out": [out]},
                        attrs={"min": self.min, "max": self.max})
        return param, out


class GradientClipByNorm(BaseGradientClipAttr):
    """grad = grad * clip_norm / max(||grad||_2, clip_norm)."""

    def __init__(self, clip_norm):
        self.clip_norm = _number("clip_norm", clip_norm)
        if self.clip_norm <= 0:
            raise ValueError(f"GradientClipByNorm: clip_norm must be positive, got {clip_norm}")

    def _create_operators(self, param, grad):
        block = grad.block
        out = _new_like(block, grad, "clip_by_norm")
        block.append_op(type="clip_by_norm", inputs={"X": [grad]}, outputs={"Out": [out]},
                        attrs={"max_norm": self.clip_norm})
        return param, out


class GradientClipByGlobalNorm(BaseGradientClipAttr):
    """Every gradient of the group scaled by clip_norm / max(global_norm, clip_norm),
    global_norm = sqrt(sum over the group of ||grad||^2)."""

    def __init__(self, clip_norm, group_name="default_group"):
        self.clip_norm = _number("clip_norm", clip_norm)
        if self.clip_norm <= 0:
            raise ValueError(f"GradientClipByGlobalNorm: clip_norm must be positive, got {clip_norm}")
        if not isinstance(group_name, str):
            raise TypeError(f"group_name must be a str, got {type(group_name).__name__}")
        self.group_name = group_name
        self.context = None

    def _process_context(self, context, param, grad):
        norms = context.setdefault(self.group_name, [])
        clip_key = self.group_name + "_clip_value"
        if context.setdefault(clip_key, self.clip_norm) != self.clip_norm:
            raise ValueError(f"all parameters of clip group {self.group_name!r} must share one "
                             f"clip_norm, got {context[clip_key]} and {self.clip_norm}")
        block = grad.block
        sq = block.create_var(name=unique_name.generate(f"{grad.name}_squared_norm"), shape=[1],
                              dtype=grad.dtype, stop_gradient=True)
        block.append_op(type="squared_l2_norm", inputs={"X": [grad]}, outputs={"Out": [sq]})
        norms.append(sq)
        self.context = context

    def _create_operators(self, param, grad):
        block = grad.block
        scale_key = self.group_name + "_scale"
        if scale_key not in self.context:
            scale = block.create_var(name=unique_name.generate(f"{self.group_name}_clip_scale"),
                                     shape=[1], dtype=grad.dtype, stop_gradient=True)
            block.append_op(type="clip_global_norm_scale",
                            inputs={"X": list(self.context[self.group_name])},
                            outputs={"Out": [scale]}, attrs={"max_global_norm": self.clip_norm})
            self.context[scale_key] = scale
        out = _new_like(block, grad, "clip_global_norm")
        block.append_op(type="clip_global_norm_apply",
                        inputs={"X": [grad], "Scale": [self.context[scale_key]]},
                        outputs={"Out": [out]})
        return param, out


def set_gradient_clip(clip, param_list=None, program=None):
    """Attach (a copy of) `clip` to the parameters of `program` (all by default)."""
    if not isinstance(clip, BaseGradientClipAttr):
        raise TypeError(f"clip must be a GradientClipBy* instance, got {type(clip).__name__}")
    program = program if program is not None else default_main_program()
    if param_list is None:
        param_list = program.global_block().all_parameters()
    params = []
    for p in param_list:
        if isinstance(p, str):
            p = program.global_block().var(p)
        if not isinstance(p, Parameter):
            raise TypeError(f"param_list must hold Parameters or parameter names, got {p!r}")
        params.append(p)
    for p in params:
        p.gradient_clip_attr = copy.deepcopy(clip)


def append_gradient_clip_ops(params_grads, clip=None):
    """Apply each parameter's clip attribute, or `clip` (an optimizer's grad_clip, Fluid 1.8)
    to every gradient when given; returns the new (param, grad) list."""
    context: dict = {}
    todo = []
    for p, g in params_grads:
        if g is None:
            continue
        attr = clip or getattr(p, "gradient_clip_attr", None) or NullGradientClipAttr()
        if not isinstance(attr, BaseGradientClipAttr):
            raise TypeError(f"parameter {p.name!r}: gradient_clip must be a GradientClipBy* "
                            f"instance, got {type(attr).__name__}")
        if not isinstance(g, Variable):
            raise GraphError(f"gradient of {p.name!r} must be a Variable, got {type(g).__name__}")
        with p.block.program._optimized_guard([p, g]):
            attr._process_context(context, p, g)
        todo.append((p, g, attr))
    out = []
    for p, g, attr in todo:
        with p.block.program._optimized_guard([p, g]):
            out.append(attr._create_operators(p, g))
    return out
