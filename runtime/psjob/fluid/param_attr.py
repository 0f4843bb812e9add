"""ParamAttr: how a layer should create its parameter (name, init, lr, ...)."""
from __future__ import annotations


class ParamAttr:
    def __init__(self, name=None, initializer=None, learning_rate=1.0, regularizer=None,
                 trainable=True, gradient_clip=None, do_model_average=True, need_clip=True):
        # do_model_average (default True, as Paddle 1.8's and 3.0's): whether
        # paddle.static.ExponentialMovingAverage averages the parameter; need_clip=False exempts it
        # from an optimizer's grad_clip.
        self.name = name
        self.initializer = initializer
        self.learning_rate = learning_rate
        self.regularizer = regularizer
        self.trainable = trainable
        self.gradient_clip = gradient_clip
        self.do_model_average = do_model_average
        self.need_clip = bool(need_clip)

    @staticmethod
    def _to_attr(arg):
        """None or True → default attr; str → named attr; False → no parameter (bias_attr=False),
        as Paddle's ParamAttr._to_attr."""
        if arg is None or arg is True:
            return ParamAttr()
        if isinstance(arg, ParamAttr):
            return arg
        if isinstance(arg, str):
            return ParamAttr(name=arg)
        if arg is False:
            return False
        from psjob.fluid.initializer import Initializer
        if isinstance(arg, Initializer):
            return ParamAttr(initializer=arg)
        raise TypeError(f"param_attr must be a ParamAttr, a name, an initializer, True or False, got {arg!r}")


class WeightNormParamAttr(ParamAttr):
    def __init__(self, dim=None, **kwargs):
        super().__init__(**kwargs)
        self.dim = dim
