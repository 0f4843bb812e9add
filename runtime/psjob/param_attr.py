"""paddle.ParamAttr: Paddle 2.x's parameter attributes (Fluid's, plus `need_clip`)."""
from __future__ import annotations

from psjob.fluid.param_attr import ParamAttr as _FluidParamAttr


class ParamAttr(_FluidParamAttr):
    """name, initializer, learning_rate, regularizer, trainable, do_model_average, need_clip.

    need_clip=False exempts the parameter from a 2.x optimizer's `grad_clip`."""

    def __init__(self, name=None, initializer=None, learning_rate=1.0, regularizer=None,
                 trainable=True, do_model_average=True, need_clip=True):
        super().__init__(name=name, initializer=initializer, learning_rate=learning_rate,
                         regularizer=regularizer, trainable=trainable, do_model_average=do_model_average,
                         need_clip=need_clip)
