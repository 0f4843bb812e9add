"""paddle.static.ExponentialMovingAverage: a moving average of every parameter, swapped in
for evaluation (Paddle 2.x API docs, paddle.static.ExponentialMovingAverage).

    ema = paddle.static.ExponentialMovingAverage(0.999)   # after optimizer.minimize
    ema.update()                                          # appends the averaging to the train program
    with ema.apply(exe):                                  # parameters := their averages
        exe.run(test_program, ...)                        # ... restored on leaving

As Paddle: each parameter (but those with do_model_average=False) gets a persistable
`<param>_ema_N`, zero at start, which every run of the train program moves to
ema * decay + param * (1 - decay) after the optimizer's update. `decay` lives in
`scheduled_ema_decay_rate`; given thres_steps (a step Variable), it is
min(decay, (thres_steps + 1) / (thres_steps + 10)), recomputed each run. apply() writes
ema / (1 - decay ** t) into the parameters, t counting the train program's runs
(`@EMA_STEP_COUNTER@`; ema itself before the first), keeping the parameters in
`<param>.ema_tmp_N`, which restore() writes back.
"""
from __future__ import annotations

from psjob.fluid import layers as _layers
from psjob.fluid import unique_name
from psjob.fluid.framework import Program, Variable, default_main_program, name_scope, program_guard
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.optimizer import ParameterSwap

_STEP_COUNTER = "@EMA_STEP_COUNTER@"
_DECAY = "scheduled_ema_decay_rate"


class ExponentialMovingAverage(ParameterSwap):
    """The moving average of the default main program's parameters (decay in (0, 1))."""

    def __init__(self, decay=0.999, thres_steps=None, name=None):
        if isinstance(decay, bool) or not isinstance(decay, (int, float)) or not 0.0 < float(decay) < 1.0:
            raise ValueError(f"ExponentialMovingAverage: decay must be a number in (0, 1), got {decay!r}")
        if thres_steps is not None and not isinstance(thres_steps, Variable):
            raise TypeError("ExponentialMovingAverage: thres_steps must be a step Variable (e.g. the global "
                            f"step counter) or None, got {type(thres_steps).__name__}")
        self._decay = float(decay)
        self._thres_steps = thres_steps
        self._name = name if name is not None else ""
        main = default_main_program()
        block = main.global_block()
        self._decay_var = self._get_ema_decay()
        self._params_tmps = []
        for param in block.all_parameters():
            if getattr(param, "do_model_average", None) is False:
                continue
            tmp = block.create_var(name=unique_name.generate_in(main, f"{self._name}{param.name}.ema_tmp"),
                                   shape=param.shape, dtype=param.dtype, persistable=False, stop_gradient=True)
            self._params_tmps.append((param, tmp))
        if not self._params_tmps:
            raise ValueError("ExponentialMovingAverage: the default main program has no parameters to average "
                             "(build the network, and minimize, first)")
        self._ema_vars = {}
        for param, tmp in self._params_tmps:
            with main._optimized_guard([param, tmp]), name_scope("moving_average"):
                self._ema_vars[param.name] = _layers.create_global_var(
                    shape=list(param.shape), value=0.0, dtype=param.dtype, persistable=True,
                    name=unique_name.generate_in(main, f"{self._name}{param.name}_ema"))

        self.apply_program = Program()
        apply_block = self.apply_program.global_block()
        with program_guard(self.apply_program):
            step = _layers.create_global_var([1], 0, "int64", persistable=True, name=_STEP_COUNTER)
            step = _layers.cast(step, "float32")
            decay = apply_block._clone_variable(self._decay_var)
            decay_pow = _layers.elementwise_pow(decay, step)
            started = _layers.greater_than(step, _layers.fill_constant([1], "float32", 0.0))
            one = _layers.fill_constant([1], "float32", 1.0)
            # 1 - decay ** t once the train program has run, else 1 (ema as it is)
            correction = _where(started, one - decay_pow, one)
            for param, tmp in self._params_tmps:
                param = apply_block._clone_variable(param)
                tmp = apply_block._clone_variable(tmp)
                ema = apply_block._clone_variable(self._ema_vars[param.name])
                _layers.assign(param, output=tmp)
                corrected = _layers.elementwise_div(ema, _layers.cast(correction, ema.dtype))
                _layers.assign(corrected, output=param)

        self._build_restore_program()

    def _get_ema_decay(self):
        main = default_main_program()
        with main._lr_schedule_guard():
            decay_var = _layers.create_global_var(shape=[1], value=self._decay, dtype="float32",
                                                  persistable=True, name=_DECAY)
            if self._thres_steps is not None:
                steps = _layers.cast(self._thres_steps, "float32")
                decay_t = (steps + 1.0) / (steps + 10.0)
                limit = _layers.fill_constant([1], "float32", self._decay)
                smaller = _layers.less_than(decay_t, limit)
                _layers.assign(_where(smaller, decay_t, limit), output=decay_var)
        return decay_var

    def update(self):
        """Append the averaging (and the step count apply() corrects with) to the default main
        program, the train program: call it after optimizer.minimize, in the train program only."""
        main = default_main_program()
        block = main.global_block()
        counter = _layers.create_global_var([1], 0, "int64", persistable=True, name=_STEP_COUNTER) \
            if not block.has_var(_STEP_COUNTER) else block.var(_STEP_COUNTER)
        with main._lr_schedule_guard():
            _layers.increment(counter, 1.0, in_place=True)
        for param, tmp in self._params_tmps:
            with main._optimized_guard([param, tmp]), name_scope("moving_average"):
                ema = self._ema_vars[param.name]
                decay = self._decay_var if self._decay_var.dtype == param.dtype else \
                    _layers.cast(self._decay_var, param.dtype)
                ema_t = ema * decay + param * (1.0 - decay)
                _layers.assign(ema_t, output=ema)


def _where(condition, x, y):
    """x where condition holds, else y (all [1]): the where op."""
    helper = LayerHelper("where")
    out = helper.create_variable_for_type_inference(x.dtype, stop_gradient=True)
    helper.append_op(type="where", inputs={"Condition": [condition], "X": [x], "Y": [y]}, outputs={"Out": [out]})
    return out


__all__ = ["ExponentialMovingAverage"]
