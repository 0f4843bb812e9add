"""paddle.nn.functional's activations beyond relu / sigmoid / tanh / softmax: each appends the
op of Paddle's type with Paddle's attributes (Paddle 2.x API docs, paddle.nn.functional.*;
kernels and gradients in psjob.fluid.ops.activation_ops)."""
from __future__ import annotations

from psjob import tensor as _t
from psjob.fluid import layers as _layers
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import FLOATS, check_dtype, check_int, check_variable
from psjob.fluid.ops.activation_ops import SELU_ALPHA, SELU_SCALE

__all__ = ["relu6", "elu", "selu", "gelu", "silu", "swish", "hardswish", "hardsigmoid", "softplus", "softsign",
           "tanhshrink", "mish", "log_sigmoid", "log_softmax", "glu", "celu", "hardtanh", "hardshrink", "softshrink",
           "thresholded_relu"]


def _act(api, op_type, x, attrs=None, name=None):
    check_variable(x, "x", api)
    check_dtype(x, "x", FLOATS, api)
    helper = LayerHelper(op_type, name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type=op_type, inputs={"X": [x]}, outputs={"Out": [out]}, attrs=attrs or {})
    return out


def relu6(x, name=None):
    """min(max(x, 0), 6)."""
    return _act("relu6", "relu6", x, {"threshold": 6.0}, name)


def elu(x, alpha=1.0, name=None):
    """x where x > 0, else alpha * (exp(x) - 1)."""
    return _act("elu", "elu", x, {"alpha": float(alpha)}, name)


def celu(x, alpha=1.0, name=None):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)): elu of x / alpha, scaled by alpha."""
    if float(alpha) == 0:
        raise ZeroDivisionError("celu: alpha must not be 0")
    return _t.scale(elu(_t.scale(x, 1.0 / float(alpha)), 1.0), float(alpha)) if float(alpha) != 1.0 else elu(x)


def selu(x, scale=SELU_SCALE, alpha=SELU_ALPHA, name=None):
    """scale * (x where x > 0, else alpha * (exp(x) - 1)); scale > 1 and alpha >= 0 as Paddle checks."""
    if float(scale) <= 1.0:
        raise ValueError(f"selu: scale must be greater than 1.0, got {scale}")
    if float(alpha) < 0:
        raise ValueError(f"selu: alpha must be no less than zero, got {alpha}")
    return _act("selu", "selu", x, {"scale": float(scale), "alpha": float(alpha)}, name)


def gelu(x, approximate=False, name=None):
    """x * Phi(x), Phi the standard normal CDF (approximate: its tanh form)."""
    return _act("gelu", "gelu", x, {"approximate": bool(approximate)}, name)


def silu(x, name=None):
    """x * sigmoid(x)."""
    return _act("silu", "silu", x, {}, name)


def swish(x, name=None):
    """x * sigmoid(x) (Paddle 2.x's swish op with beta 1)."""
    return _act("swish", "swish", x, {"beta": 1.0}, name)


def hardswish(x, name=None):
    """x * min(max(x + 3, 0), 6) / 6."""
    return _act("hardswish", "hard_swish", x, {"threshold": 6.0, "scale": 6.0, "offset": 3.0}, name)


def hardsigmoid(x, slope=0.1666667, offset=0.5, name=None):
    """clip(slope * x + offset, 0, 1)."""
    return _act("hardsigmoid", "hard_sigmoid", x, {"slope": float(slope), "offset": float(offset)}, name)


def hardtanh(x, min=-1.0, max=1.0, name=None):  # noqa: A002 (Paddle's names)
    """clip(x, min, max)."""
    return _t.clip(x, min=float(min), max=float(max))


def softplus(x, beta=1, threshold=20, name=None):
    """log(1 + exp(beta * x)) / beta, x itself where beta * x > threshold."""
    return _act("softplus", "softplus", x, {"beta": float(beta), "threshold": float(threshold)}, name)


def softsign(x, name=None):
    """x / (1 + |x|)."""
    return _act("softsign", "softsign", x, {}, name)


def tanhshrink(x, name=None):
    """x - tanh(x)."""
    return _act("tanhshrink", "tanh_shrink", x, {}, name)


def mish(x, name=None):
    """x * tanh(softplus(x))."""
    return _act("mish", "mish", x, {"threshold": 20.0}, name)


def log_sigmoid(x, name=None):
    """log(sigmoid(x)) = -log(1 + exp(-x))."""
    return _act("log_sigmoid", "logsigmoid", x, {}, name)


def log_softmax(x, axis=-1, dtype=None, name=None):
    """log(softmax(x)) along axis, computed stably in one op (Paddle's log_softmax)."""
    check_variable(x, "x", "log_softmax")
    nd = len(x.shape)
    axis = check_int(axis, "axis", "log_softmax")
    if not -nd <= axis < max(nd, 1):
        raise ValueError(f"log_softmax: axis {axis} is out of range for the {nd}-D {x.name}")
    if dtype is not None:
        x = _t.cast(x, dtype)
    return _act("log_softmax", "log_softmax", x, {"axis": axis}, name)


def glu(x, axis=-1, name=None):
    """The gated linear unit: x split in two halves a, b along axis, a * sigmoid(b)."""
    check_variable(x, "x", "glu")
    axis = check_int(axis, "axis", "glu")
    size = x.shape[axis]
    if size >= 0 and size % 2:
        raise ValueError(f"glu: the size of axis {axis} of {x.name}{list(x.shape)} must be even, got {size}")
    a, b = _layers.split(x, 2, dim=axis)
    return _layers.elementwise_mul(a, _layers.sigmoid(b))


def hardshrink(x, threshold=0.5, name=None):
    """x where |x| > threshold, else 0."""
    return _act("hardshrink", "hard_shrink", x, {"threshold": float(threshold)}, name)


def softshrink(x, threshold=0.5, name=None):
    """x - threshold above threshold, x + threshold below -threshold, else 0."""
    if float(threshold) < 0:
        raise ValueError(f"softshrink: threshold must be no less than zero, got {threshold}")
    return _act("softshrink", "softshrink", x, {"lambda": float(threshold)}, name)


def thresholded_relu(x, threshold=1.0, name=None):
    """x where x > threshold, else 0."""
    return _act("thresholded_relu", "thresholded_relu", x, {"threshold": float(threshold)}, name)
