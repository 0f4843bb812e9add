"""paddle.optimizer: Paddle 2.x's optimizers over Fluid's (same ops, same update rules).

Differences from the Fluid classes are the 2.x arguments:
  * learning_rate: a number or a paddle.optimizer.lr scheduler (see lr.py);
  * parameters: what minimize() updates when it is not told (default: every trainable one);
  * weight_decay: a float (L2 decay with that coefficient) or a paddle.regularizer instance;
  * grad_clip: a paddle.nn.ClipGradBy* applied to every parameter whose ParamAttr has
    need_clip=True (and no clip of its own);
and AdamW's decoupled weight decay. step()/clear_grad() belong to dygraph training and raise.
"""
from __future__ import annotations

import copy
import numbers

import numpy as np

from psjob.fluid import optimizer as _fo
from psjob.fluid.core import global_scope
from psjob.fluid.framework import OpRole
from psjob.fluid.regularizer import L2DecayRegularizer, WeightDecayRegularizer
from psjob.optimizer import lr
from psjob.optimizer.lr import LRScheduler

__all__ = ["Optimizer", "SGD", "Momentum", "Adagrad", "Adam", "AdamW", "Adamax", "RMSProp", "Adadelta", "Lamb",
           "lr"]


def _weight_decay(owner, value):
    if value is None or isinstance(value, WeightDecayRegularizer):
        return value
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return L2DecayRegularizer(float(value))
    raise TypeError(f"{owner}: weight_decay must be a float or a paddle.regularizer.L1Decay/L2Decay, "
                    f"got {value!r}")


class Optimizer:
    """The 2.x behaviour shared by every optimizer below (mixed in before the Fluid class)."""

    def _init_2x(self, learning_rate, parameters, grad_clip):
        self._lr_scheduler = learning_rate if isinstance(learning_rate, LRScheduler) else None
        self._parameter_list = list(parameters) if parameters is not None else None
        self._grad_clip = grad_clip

    @staticmethod
    def _lr_value(learning_rate):
        return learning_rate() if isinstance(learning_rate, LRScheduler) else learning_rate

    def _create_global_learning_rate(self, program):
        super()._create_global_learning_rate(program)
        if self._lr_scheduler is not None:
            # Paddle's attribute name: the Executor sets the variable from it before each run.
            program.lr_sheduler = self._lr_scheduler
            self._lr_scheduler._var_name = self._learning_rate_map[program].name

    def apply_gradients(self, params_grads):
        if self._grad_clip is not None:
            for param, _ in params_grads:
                if getattr(param, "need_clip", True) and getattr(param, "gradient_clip_attr", None) is None:
                    param.gradient_clip_attr = copy.deepcopy(self._grad_clip)
        return super().apply_gradients(params_grads)

    def minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None):
        if parameters is None:
            parameters = self._parameter_list
        return super().minimize(loss, startup_program, parameters, no_grad_set)

    def get_lr(self) -> float:
        if self._lr_scheduler is not None:
            return self._lr_scheduler()
        return float(self._learning_rate)

    def set_lr(self, value):
        """Set a constant rate: the learning-rate variables in the global scope, from now on."""
        if self._lr_scheduler is not None:
            raise RuntimeError("set_lr: this optimizer's rate comes from an LRScheduler; step the scheduler")
        self._learning_rate = float(value)
        for var in self._learning_rate_map.values():
            global_scope().var(var.name).get_tensor().set(np.array([value], dtype=var.dtype))

    def step(self):
        raise RuntimeError(f"{type(self).__name__}.step() updates parameters eagerly (dygraph), which psjob "
                           "does not have: call optimizer.minimize(loss) while building the program and run it "
                           "with an Executor")

    def clear_grad(self, set_to_zero=True):
        raise RuntimeError(f"{type(self).__name__}.clear_grad() is dygraph-only: static programs compute "
                           "fresh gradients every run")

    clear_gradients = clear_grad


class SGD(Optimizer, _fo.SGDOptimizer):
    def __init__(self, learning_rate=0.001, parameters=None, weight_decay=None, grad_clip=None,
                 multi_precision=False, name=None):
        _fo.SGDOptimizer.__init__(self, self._lr_value(learning_rate),
                                  _weight_decay("SGD", weight_decay), name)
        self._init_2x(learning_rate, parameters, grad_clip)


class Momentum(Optimizer, _fo.MomentumOptimizer):
    def __init__(self, learning_rate=0.001, momentum=0.9, parameters=None, use_nesterov=False,
                 weight_decay=None, grad_clip=None, multi_precision=False, rescale_grad=1.0, name=None):
        if rescale_grad != 1.0:
            raise ValueError("Momentum: rescale_grad is not supported (scale the loss instead)")
        _fo.MomentumOptimizer.__init__(self, self._lr_value(learning_rate), momentum, use_nesterov,
                                       _weight_decay("Momentum", weight_decay), name)
        self._init_2x(learning_rate, parameters, grad_clip)


class Adagrad(Optimizer, _fo.AdagradOptimizer):
    def __init__(self, learning_rate, epsilon=1e-06, parameters=None, weight_decay=None, grad_clip=None,
                 name=None, initial_accumulator_value=0.0):
        _fo.AdagradOptimizer.__init__(self, self._lr_value(learning_rate), epsilon,
                                      _weight_decay("Adagrad", weight_decay), name, initial_accumulator_value)
        self._init_2x(learning_rate, parameters, grad_clip)


class Adam(Optimizer, _fo.AdamOptimizer):
    _scale_epsilon = True  # Paddle 2.x/3.x's adam op: epsilon * sqrt(1 - beta2^t)

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08, parameters=None,
                 weight_decay=None, grad_clip=None, lazy_mode=False, multi_precision=False, name=None):
        _fo.AdamOptimizer.__init__(self, self._lr_value(learning_rate), beta1, beta2, epsilon,
                                   _weight_decay("Adam", weight_decay), name, lazy_mode)
        self._init_2x(learning_rate, parameters, grad_clip)


class Adamax(Optimizer, _fo.AdamaxOptimizer):
    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08, parameters=None,
                 weight_decay=None, grad_clip=None, name=None):
        _fo.AdamaxOptimizer.__init__(self, self._lr_value(learning_rate), beta1, beta2, epsilon,
                                     _weight_decay("Adamax", weight_decay), name)
        self._init_2x(learning_rate, parameters, grad_clip)


class RMSProp(Optimizer, _fo.RMSPropOptimizer):
    def __init__(self, learning_rate, rho=0.95, epsilon=1e-06, momentum=0.0, centered=False,
                 parameters=None, weight_decay=None, grad_clip=None, name=None):
        _fo.RMSPropOptimizer.__init__(self, self._lr_value(learning_rate), rho, epsilon, momentum, centered,
                                      _weight_decay("RMSProp", weight_decay), name)
        self._init_2x(learning_rate, parameters, grad_clip)


class Adadelta(Optimizer, _fo.AdadeltaOptimizer):
    _paddle18_rule = False  # Paddle 2.x/3.x's adadelta op: param += lr * update

    def __init__(self, learning_rate=0.001, epsilon=1e-06, rho=0.95, parameters=None, weight_decay=None,
                 grad_clip=None, name=None):
        _fo.AdadeltaOptimizer.__init__(self, self._lr_value(learning_rate), epsilon, rho,
                                       _weight_decay("Adadelta", weight_decay), name)
        self._init_2x(learning_rate, parameters, grad_clip)


class Lamb(Optimizer, _fo.LambOptimizer):
    """Paddle 2.x/3.x's lamb op: the beta pows advance after each step, and the trust ratio is
    taken where the parameter's weight decay is positive or always_adapt is set."""

    _read_only_slots: tuple[str, ...] = ()

    def __init__(self, learning_rate=0.001, lamb_weight_decay=0.01, beta1=0.9, beta2=0.999, epsilon=1e-06,
                 parameters=None, grad_clip=None, exclude_from_weight_decay_fn=None, multi_precision=False,
                 always_adapt=False, name=None):
        _fo.LambOptimizer.__init__(self, self._lr_value(learning_rate), lamb_weight_decay, beta1, beta2, epsilon,
                                   None, None, exclude_from_weight_decay_fn, name)
        self._always_adapt = bool(always_adapt)
        self._init_2x(learning_rate, parameters, grad_clip)


class AdamW(Adam):
    """Adam with decoupled weight decay: before each Adam step,
    param *= 1 - learning_rate * lr_ratio(param) * weight_decay (Paddle's order), for the
    parameters apply_decay_param_fun(name) accepts (all by default)."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, parameters=None,
                 weight_decay=0.01, lr_ratio=None, apply_decay_param_fun=None, grad_clip=None,
                 lazy_mode=False, multi_precision=False, name=None):
        if not isinstance(weight_decay, numbers.Real) or isinstance(weight_decay, bool):
            raise TypeError(f"AdamW: weight_decay must be a float coefficient, got {weight_decay!r}")
        super().__init__(learning_rate, beta1, beta2, epsilon, parameters, None, grad_clip, lazy_mode,
                         multi_precision, name)
        self._coeff = float(weight_decay)
        self._lr_ratio = lr_ratio
        self._apply_decay_param_fun = apply_decay_param_fun

    def _append_optimize_op(self, block, param_and_grad):
        param = param_and_grad[0]
        if self._coeff and (self._apply_decay_param_fun is None or self._apply_decay_param_fun(param.name)):
            ratio = float(self._lr_ratio(param)) if self._lr_ratio is not None else 1.0
            lr_var = self._create_param_lr(param_and_grad)
            with block.program._role_guard(OpRole.Optimize, [param, param_and_grad[1]]):
                keep = block.create_var(name=f"{param.name}@DECAY_KEEP", shape=[1], dtype=param.dtype,
                                        stop_gradient=True)
                block.append_op(type="scale", inputs={"X": [lr_var]}, outputs={"Out": [keep]},
                                attrs={"scale": -self._coeff * ratio, "bias": 1.0})
                block.append_op(type="elementwise_mul", inputs={"X": [param], "Y": [keep]},
                                outputs={"Out": [param]}, attrs={"axis": -1})
        return super()._append_optimize_op(block, param_and_grad)
