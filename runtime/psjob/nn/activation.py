"""Activation layers (Paddle's nn/layer/activation.py): each holds its arguments and calls the
nn.functional activation of the same name; PReLU has a parameter of its own."""
from __future__ import annotations

from psjob.fluid.initializer import ConstantInitializer
from psjob.fluid.layers._checks import check_int
from psjob.nn import functional as F
from psjob.nn.layer import Layer

__all__ = ["LeakyReLU", "PReLU", "ReLU6", "ELU", "CELU", "SELU", "GELU", "Silu", "Swish", "Mish", "Hardswish",
           "Hardsigmoid", "Hardtanh", "Softplus", "Softsign", "Tanhshrink", "LogSigmoid", "LogSoftmax", "GLU",
           "Hardshrink", "Softshrink", "ThresholdedReLU"]


class LeakyReLU(Layer):
    """x where x > 0, else negative_slope * x."""

    def __init__(self, negative_slope=0.01, name=None):
        super().__init__()
        self._slope = float(negative_slope)

    def forward(self, x):
        return F.leaky_relu(x, self._slope)

    def extra_repr(self):
        return f"negative_slope={self._slope}"


class PReLU(Layer):
    """x where x > 0, else weight * x; weight is [num_parameters] (1: shared by every element,
    else one per channel), starting at `init` (Paddle's paddle.nn.PReLU)."""

    def __init__(self, num_parameters=1, init=0.25, weight_attr=None, data_format="NCHW", name=None):
        super().__init__()
        self._num = check_int(num_parameters, "num_parameters", "PReLU", minimum=1)
        self._data_format = data_format
        self._weight = self.create_parameter([self._num], weight_attr,
                                             default_initializer=ConstantInitializer(float(init)))

    def forward(self, x):
        return F.prelu(x, self._weight, self._data_format)

    def extra_repr(self):
        return f"num_parameters={self._num}, data_format={self._data_format}"


def _activation(cls_name, fn, *arg_names, **defaults):
    """A Layer calling fn(x, **its arguments) (arg_names: the constructor's, in Paddle's order)."""
    def __init__(self, *args, name=None, **kwargs):
        Layer.__init__(self)
        if len(args) > len(arg_names):
            raise TypeError(f"{cls_name}() takes at most {len(arg_names)} positional arguments")
        values = dict(defaults)
        values.update(zip(arg_names, args))
        unknown = set(kwargs) - set(arg_names)
        if unknown:
            raise TypeError(f"{cls_name}() got unexpected arguments {sorted(unknown)}")
        values.update(kwargs)
        self._kwargs = values

    def forward(self, x):
        return fn(x, **self._kwargs)

    def extra_repr(self):
        return ", ".join(f"{k}={v}" for k, v in self._kwargs.items())

    return type(cls_name, (Layer,), {"__init__": __init__, "forward": forward, "extra_repr": extra_repr,
                                     "__doc__": f"paddle.nn.{cls_name}: functional.{fn.__name__} as a layer."})


ReLU6 = _activation("ReLU6", F.relu6)
ELU = _activation("ELU", F.elu, "alpha", alpha=1.0)
CELU = _activation("CELU", F.celu, "alpha", alpha=1.0)
SELU = _activation("SELU", F.selu, "scale", "alpha")
GELU = _activation("GELU", F.gelu, "approximate", approximate=False)
Silu = _activation("Silu", F.silu)
Swish = _activation("Swish", F.swish)
Mish = _activation("Mish", F.mish)
Hardswish = _activation("Hardswish", F.hardswish)
Hardsigmoid = _activation("Hardsigmoid", F.hardsigmoid)
Hardtanh = _activation("Hardtanh", F.hardtanh, "min", "max")
Softplus = _activation("Softplus", F.softplus, "beta", "threshold")
Softsign = _activation("Softsign", F.softsign)
Tanhshrink = _activation("Tanhshrink", F.tanhshrink)
LogSigmoid = _activation("LogSigmoid", F.log_sigmoid)
LogSoftmax = _activation("LogSoftmax", F.log_softmax, "axis", axis=-1)
GLU = _activation("GLU", F.glu, "axis", axis=-1)
Hardshrink = _activation("Hardshrink", F.hardshrink, "threshold", threshold=0.5)
Softshrink = _activation("Softshrink", F.softshrink, "threshold", threshold=0.5)
ThresholdedReLU = _activation("ThresholdedReLU", F.thresholded_relu, "threshold", threshold=1.0)
