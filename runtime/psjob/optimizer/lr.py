"""paddle.optimizer.lr: learning-rate schedulers, with Paddle 2.x's formulas and names.

A scheduler is a Python object: `scheduler()` is the current rate and `scheduler.step()`
advances it (once per epoch or per batch, as the script chooses). Given as an optimizer's
`learning_rate`, it becomes the program's `lr_sheduler` (Paddle's spelling) and the
Executor writes its current value into the learning-rate variable before every run.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = ["LRScheduler", "NoamDecay", "PiecewiseDecay", "NaturalExpDecay", "InverseTimeDecay",
           "PolynomialDecay", "LinearWarmup", "ExponentialDecay", "MultiStepDecay", "StepDecay",
           "LambdaDecay", "ReduceOnPlateau", "CosineAnnealingDecay", "MultiplicativeDecay", "OneCycleLR",
           "CyclicLR"]


def _number(owner, name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner}: {name} must be a number, got {value!r}")
    return float(value)


class LRScheduler:
    """Base class: subclasses define get_lr() from self.base_lr and self.last_epoch."""

    def __init__(self, learning_rate=0.1, last_epoch=-1, verbose=False):
        self.base_lr = _number(type(self).__name__, "learning_rate", learning_rate)
        self.last_lr = self.base_lr
        self.last_epoch = int(last_epoch)
        self.verbose = verbose
        self._var_name = None  # the learning-rate variable, set by the optimizer
        self.step()

    def __call__(self) -> float:
        return self.last_lr

    def step(self, epoch=None):
        if epoch is None:
            self.last_epoch += 1
            self.last_lr = self.get_lr()
        else:
            self.last_epoch = int(epoch)
            closed = getattr(self, "_get_closed_form_lr", None)
            self.last_lr = closed() if closed else self.get_lr()
        if self.verbose:
            print(f"Epoch {self.last_epoch}: {type(self).__name__} set learning rate to {self.last_lr}.")

    def get_lr(self) -> float:
        raise NotImplementedError

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items()
                if isinstance(v, (int, float, str, bool, list, tuple)) and k != "_var_name"}

    def set_state_dict(self, state_dict):
        self.__dict__.update(state_dict)

    set_dict = set_state_dict


class NoamDecay(LRScheduler):
    def __init__(self, d_model, warmup_steps, learning_rate=1.0, last_epoch=-1, verbose=False):
        self.d_model, self.warmup_steps = d_model, warmup_steps
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        a = 1 if self.last_epoch == 0 else self.last_epoch ** -0.5
        b = self.warmup_steps ** -1.5 * self.last_epoch
        return self.base_lr * self.d_model ** -0.5 * min(a, b)


class PiecewiseDecay(LRScheduler):
    def __init__(self, boundaries, values, last_epoch=-1, verbose=False):
        if len(values) != len(boundaries) + 1:
            raise ValueError(f"PiecewiseDecay: {len(boundaries)} boundaries need {len(boundaries) + 1} "
                             f"values, got {len(values)}")
        self.boundaries, self.values = list(boundaries), list(values)
        super().__init__(values[0], last_epoch, verbose)

    def get_lr(self):
        for boundary, value in zip(self.boundaries, self.values):
            if self.last_epoch < boundary:
                return value
        return self.values[-1]


class NaturalExpDecay(LRScheduler):
    def __init__(self, learning_rate, gamma, last_epoch=-1, verbose=False):
        self.gamma = gamma
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * math.exp(-1 * self.gamma * self.last_epoch)


class InverseTimeDecay(LRScheduler):
    def __init__(self, learning_rate, gamma, last_epoch=-1, verbose=False):
        self.gamma = gamma
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr / (1 + self.gamma * self.last_epoch)


class PolynomialDecay(LRScheduler):
    def __init__(self, learning_rate, decay_steps, end_lr=0.0001, power=1.0, cycle=False,
                 last_epoch=-1, verbose=False):
        if not decay_steps > 0:
            raise ValueError(f"PolynomialDecay: decay_steps must be positive, got {decay_steps}")
        self.decay_steps, self.end_lr, self.power, self.cycle = decay_steps, end_lr, power, cycle
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        epoch, steps = self.last_epoch, self.decay_steps
        if self.cycle:
            div = math.ceil(float(self.last_epoch) / float(self.decay_steps))
            steps = self.decay_steps * (div if self.last_epoch != 0 else 1)
        else:
            epoch = min(self.last_epoch, self.decay_steps)
        return (self.base_lr - self.end_lr) * ((1 - float(epoch) / float(steps)) ** self.power) + self.end_lr


class LinearWarmup(LRScheduler):
    """start_lr → end_lr linearly over warmup_steps, then `learning_rate` (a number or a
    scheduler, stepped from 0 once the warm-up is over)."""

    def __init__(self, learning_rate, warmup_steps, start_lr, end_lr, last_epoch=-1, verbose=False):
        self.learning_rate = learning_rate
        self.warmup_steps, self.start_lr, self.end_lr = warmup_steps, start_lr, end_lr
        if not isinstance(learning_rate, LRScheduler):
            _number("LinearWarmup", "learning_rate", learning_rate)
        super().__init__(start_lr, last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch < self.warmup_steps:
            return (self.end_lr - self.start_lr) * float(self.last_epoch) / float(self.warmup_steps) + self.start_lr
        if isinstance(self.learning_rate, LRScheduler):
            self.learning_rate.step(self.last_epoch - self.warmup_steps)
            return self.learning_rate()
        return self.learning_rate


class ExponentialDecay(LRScheduler):
    def __init__(self, learning_rate, gamma, last_epoch=-1, verbose=False):
        self.gamma = gamma
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * (self.gamma ** self.last_epoch)


class MultiStepDecay(LRScheduler):
    def __init__(self, learning_rate, milestones, gamma=0.1, last_epoch=-1, verbose=False):
        if list(milestones) != sorted(milestones):
            raise ValueError(f"MultiStepDecay: milestones must increase, got {milestones}")
        if gamma >= 1.0:
            raise ValueError("MultiStepDecay: gamma must be below 1.0")
        self.milestones, self.gamma = list(milestones), gamma
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        for i, milestone in enumerate(self.milestones):
            if self.last_epoch < milestone:
                return self.base_lr * (self.gamma ** i)
        return self.base_lr * (self.gamma ** len(self.milestones))


class StepDecay(LRScheduler):
    def __init__(self, learning_rate, step_size, gamma=0.1, last_epoch=-1, verbose=False):
        if not isinstance(step_size, int) or step_size <= 0:
            raise ValueError(f"StepDecay: step_size must be a positive int, got {step_size!r}")
        if gamma >= 1.0:
            raise ValueError("StepDecay: gamma must be below 1.0")
        self.step_size, self.gamma = step_size, gamma
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * (self.gamma ** (self.last_epoch // self.step_size))


class LambdaDecay(LRScheduler):
    def __init__(self, learning_rate, lr_lambda, last_epoch=-1, verbose=False):
        if not callable(lr_lambda):
            raise TypeError("LambdaDecay: lr_lambda must be callable")
        self.lr_lambda = lr_lambda
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * self.lr_lambda(self.last_epoch)


class MultiplicativeDecay(LRScheduler):
    def __init__(self, learning_rate, lr_lambda, last_epoch=-1, verbose=False):
        if not callable(lr_lambda):
            raise TypeError("MultiplicativeDecay: lr_lambda must be callable")
        self.lr_lambda = lr_lambda
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        lr = self.base_lr
        for epoch in range(1, self.last_epoch + 1):
            lr *= self.lr_lambda(epoch)
        return lr


class CosineAnnealingDecay(LRScheduler):
    def __init__(self, learning_rate, T_max, eta_min=0, last_epoch=-1, verbose=False):
        if not isinstance(T_max, int) or T_max <= 0:
            raise ValueError(f"CosineAnnealingDecay: T_max must be a positive int, got {T_max!r}")
        self.T_max, self.eta_min = T_max, float(eta_min)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        # Paddle's recursive form (it differs from the closed form once the rate is set by hand).
        if self.last_epoch == 0:
            return self.base_lr
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return self.last_lr + (self.base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
        return ((1 + math.cos(math.pi * self.last_epoch / self.T_max))
                / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max))
                * (self.last_lr - self.eta_min) + self.eta_min)

    def _get_closed_form_lr(self):
        return self.eta_min + (self.base_lr - self.eta_min) * (
            1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2


class ReduceOnPlateau(LRScheduler):
    """Multiply the rate by `factor` when `metrics` (given to step) stops improving for
    `patience` steps; step(metrics) is called with the metric, not bare."""

    def __init__(self, learning_rate, mode="min", factor=0.1, patience=10, threshold=1e-4,
                 threshold_mode="rel", cooldown=0, min_lr=0, epsilon=1e-8, verbose=False):
        if mode not in ("min", "max") or threshold_mode not in ("rel", "abs"):
            raise ValueError("ReduceOnPlateau: mode must be 'min'/'max', threshold_mode 'rel'/'abs'")
        if factor >= 1.0:
            raise ValueError("ReduceOnPlateau: factor must be below 1.0")
        self.mode, self.factor, self.patience, self.threshold = mode, factor, patience, threshold
        self.threshold_mode, self.cooldown, self.min_lr, self.epsilon = threshold_mode, cooldown, min_lr, epsilon
        self.cooldown_counter, self.best, self.num_bad_epochs = 0, None, 0
        self.base_lr = self.last_lr = _number("ReduceOnPlateau", "learning_rate", learning_rate)
        self.last_epoch, self.verbose, self._var_name = 0, verbose, None

    def step(self, metrics, epoch=None):
        self.last_epoch = self.last_epoch + 1 if epoch is None else int(epoch)
        current = float(np.asarray(metrics).reshape(-1)[0])  # a number or a fetched [1] array
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            return
        if self.best is None or self._is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.num_bad_epochs > self.patience:
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
            new_lr = max(self.last_lr * self.factor, self.min_lr)
            if self.last_lr - new_lr > self.epsilon:
                self.last_lr = new_lr

    def _is_better(self, current, best):
        if self.mode == "min":
            return current < (best - best * self.threshold if self.threshold_mode == "rel" else best - self.threshold)
        return current > (best + best * self.threshold if self.threshold_mode == "rel" else best + self.threshold)


def _anneal(strategy, start, end, pct):
    if strategy == "cos":
        return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
    return start + (end - start) * pct


class OneCycleLR(LRScheduler):
    """The one-cycle policy (Paddle 2.x's formula): from max_learning_rate / divide_factor up to
    max_learning_rate over the first phase_pct of total_steps, then down to end_learning_rate
    (three_phase: back to the initial rate first, then down), annealed by cosine or linearly.
    Stepping past total_steps raises, as in Paddle."""

    def __init__(self, max_learning_rate, total_steps, divide_factor=25.0, end_learning_rate=0.0001,
                 phase_pct=0.3, anneal_strategy="cos", three_phase=False, last_epoch=-1, verbose=False):
        owner = "OneCycleLR"
        top = _number(owner, "max_learning_rate", max_learning_rate)
        end = _number(owner, "end_learning_rate", end_learning_rate)
        if top < 0 or end < 0:
            raise ValueError(f"{owner}: max_learning_rate and end_learning_rate must be >= 0")
        if isinstance(total_steps, bool) or not isinstance(total_steps, int) or total_steps <= 0:
            raise ValueError(f"{owner}: total_steps must be a positive int, got {total_steps!r}")
        if not isinstance(phase_pct, float) or not 0.0 <= phase_pct <= 1.0:
            raise ValueError(f"{owner}: phase_pct must be a float in [0, 1], got {phase_pct!r}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"{owner}: anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}")
        if three_phase and phase_pct >= 0.5:
            raise ValueError(f"{owner}: with three_phase=True, phase_pct must be below 0.5")
        start = top / _number(owner, "divide_factor", divide_factor)
        self.total_steps, self.anneal_strategy = total_steps, anneal_strategy
        last = total_steps - 1
        up_end = phase_pct * total_steps - 1
        if three_phase:
            down_end = 2 * phase_pct * total_steps - 2
            # (end step, start rate, end rate, length) of each phase; the last repeats for the last step
            self._phases = [(up_end, start, top, up_end), (down_end, top, start, down_end - up_end),
                            (last, start, end, last - down_end)]
        else:
            self._phases = [(up_end, start, top, up_end), (last, top, end, last - up_end)]
        super().__init__(start, last_epoch, verbose)

    def get_lr(self):
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"OneCycleLR: stepped {step} times, past total_steps={self.total_steps}")
        begin = 0.0
        for k, (end_step, lr_from, lr_to, length) in enumerate(self._phases):
            if step <= end_step or k == len(self._phases) - 1:
                return _anneal(self.anneal_strategy, lr_from, lr_to, (step - begin) / length)
            begin = end_step
        raise AssertionError("unreachable")


class CyclicLR(LRScheduler):
    """Cyclical learning rates (Paddle 2.x's formula): triangular cycles between
    base_learning_rate and max_learning_rate, step_size_up steps up and step_size_down (default
    step_size_up) down; the height scaled by mode ('triangular': 1, 'triangular2': halved each
    cycle, 'exp_range': exp_gamma ** iteration) or by scale_fn of the cycle or iteration number."""

    def __init__(self, base_learning_rate, max_learning_rate, step_size_up, step_size_down=None,
                 mode="triangular", exp_gamma=1.0, scale_fn=None, scale_mode="cycle", last_epoch=-1,
                 verbose=False):
        owner = "CyclicLR"
        top = _number(owner, "max_learning_rate", max_learning_rate)
        if top < 0:
            raise ValueError(f"{owner}: max_learning_rate must be >= 0, got {top}")
        for name, value in (("step_size_up", step_size_up), ("step_size_down", step_size_down)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
                raise ValueError(f"{owner}: {name} must be a positive int, got {value!r}")
        if not isinstance(exp_gamma, float):
            raise TypeError(f"{owner}: exp_gamma must be a float, got {exp_gamma!r}")
        if scale_fn is None and mode not in ("triangular", "triangular2", "exp_range"):
            raise ValueError(f"{owner}: mode must be 'triangular', 'triangular2' or 'exp_range' "
                             f"(or give scale_fn), got {mode!r}")
        if scale_mode not in ("cycle", "iterations"):
            raise ValueError(f"{owner}: scale_mode must be 'cycle' or 'iterations', got {scale_mode!r}")
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.cycle_size, self.step_up_pct = up + down, up / (up + down)
        self.max_lr = top
        self.amplitude = top - _number(owner, "base_learning_rate", base_learning_rate)
        self.mode, self.gamma = mode, exp_gamma
        if scale_fn is not None:
            self.scale_fn, self.scale_mode = scale_fn, scale_mode
        elif mode == "triangular":
            self.scale_fn, self.scale_mode = (lambda x: 1.0), "cycle"
        elif mode == "triangular2":
            self.scale_fn, self.scale_mode = (lambda x: 1 / (2.0 ** (x - 1))), "cycle"
        else:
            self.scale_fn, self.scale_mode = (lambda x: self.gamma ** x), "iterations"
        super().__init__(base_learning_rate, last_epoch, verbose)

    def get_lr(self):
        iteration = self.last_epoch
        cycle = 1 + iteration // self.cycle_size
        pct = 1.0 + iteration / self.cycle_size - cycle
        if pct <= self.step_up_pct:
            height = pct / self.step_up_pct
        else:
            height = (1 - pct) / (1 - self.step_up_pct)
        return self.base_lr + self.amplitude * height * self.scale_fn(
            cycle if self.scale_mode == "cycle" else iteration)
