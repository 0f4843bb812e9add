"""Activations. Gradients read the forward output where that is cheaper
(sigmoid, tanh, relu) — as Paddle's kernels do.

Beside relu, sigmoid, tanh, softmax, softsign, leaky_relu and prelu: the activations of
Paddle 2.x's paddle.nn.functional and Fluid 1.x's fluid.layers, by Paddle's op types and
attributes: relu6 (threshold), elu (alpha), selu (scale, alpha), gelu (approximate), silu,
swish (beta), hard_swish (threshold, scale, offset), hard_sigmoid (slope, offset), softplus
(beta, threshold), tanh_shrink, mish (threshold), logsigmoid, log_softmax (axis), hard_shrink
(threshold), softshrink (lambda), thresholded_relu (threshold), brelu (t_min, t_max), soft_relu
(threshold) and stanh (scale_a, scale_b)."""
from __future__ import annotations

import importlib
import math

from psjob.fluid.ops.registry import register_op, same_shape, simple_grad


def _act(name, forward, backward):
    register_op(name, infer_shape=same_shape(),
                grad=simple_grad(name + "_grad", keep_outputs=True))(forward)
    register_op(name + "_grad")(backward)


def _relu(ctx):
    x = ctx.input("X")
    ctx.set_output("Out", ctx.xp.maximum(x, x.dtype.type(0)), lod=ctx.input_lod("X"))


def _relu_grad(ctx):
    out, dout = ctx.input("Out"), ctx.input("Out@GRAD")
    ctx.set_output("X@GRAD", dout * (out > 0))


def _sigmoid(ctx):
    xp, x = ctx.xp, ctx.input("X")
    # Split by sign so exp never overflows.
    e = xp.exp(-xp.abs(x))
    ctx.set_output("Out", xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype), lod=ctx.input_lod("X"))


def _sigmoid_grad(ctx):
    out, dout = ctx.input("Out"), ctx.input("Out@GRAD")
    ctx.set_output("X@GRAD", dout * out * (1 - out))


def _tanh(ctx):
    ctx.set_output("Out", ctx.xp.tanh(ctx.input("X")), lod=ctx.input_lod("X"))


def _tanh_grad(ctx):
    out, dout = ctx.input("Out"), ctx.input("Out@GRAD")
    ctx.set_output("X@GRAD", dout * (1 - out * out))


# Paddle's CPU softmax kernels (softmax, log_softmax, softmax_with_cross_entropy) clamp the
# shifted logits x - max(x) at -64 before exponentiating: a class more than 64 below the largest
# keeps a probability of ~1.6e-28 and a log-probability of -64, so a cross-entropy loss is at
# most ~64 per example (and finite for a -inf logit).
SHIFT_FLOOR = -64.0


def shifted_logits(xp, x, axis=-1):
    """x - max(x) along `axis`, clamped at SHIFT_FLOOR as Paddle's kernels clamp it."""
    z = x - x.max(axis=axis, keepdims=True)
    return xp.maximum(z, x.dtype.type(SHIFT_FLOOR), out=z)


def _softmax(ctx):
    xp, x = ctx.xp, ctx.input("X")
    axis = int(ctx.attr("axis", -1))  # Paddle's attribute (a saved program's, fluid.layers.softmax's)
    e = xp.exp(shifted_logits(xp, x, axis))
    ctx.set_output("Out", e / e.sum(axis=axis, keepdims=True), lod=ctx.input_lod("X"))


def _softmax_grad(ctx):
    out, dout = ctx.input("Out"), ctx.input("Out@GRAD")
    axis = int(ctx.attr("axis", -1))
    ctx.set_output("X@GRAD", out * (dout - (dout * out).sum(axis=axis, keepdims=True)))


def _softsign(ctx):
    x = ctx.input("X")
    ctx.set_output("Out", x / (1 + ctx.xp.abs(x)), lod=ctx.input_lod("X"))


def _softsign_grad(ctx):
    # Paddle's softsign_grad reads X: d/dx x / (1 + |x|) = 1 / (1 + |x|)^2.
    x, dout = ctx.input("X"), ctx.input("Out@GRAD")
    ctx.set_output("X@GRAD", dout / (1 + ctx.xp.abs(x)) ** 2)


def _leaky_relu(ctx):
    x = ctx.input("X")
    alpha = x.dtype.type(ctx.attr("alpha", 0.02))
    ctx.set_output("Out", ctx.xp.where(x > 0, x, x * alpha), lod=ctx.input_lod("X"))


def _leaky_relu_grad(ctx):
    # Paddle's LeakyReluGradFunctor: the slope by the sign of X (x == 0 takes alpha).
    x, dout = ctx.input("X"), ctx.input("Out@GRAD")
    ctx.set_output("X@GRAD", ctx.xp.where(x > 0, dout, dout * x.dtype.type(ctx.attr("alpha", 0.02))))


_act("relu", _relu, _relu_grad)
_act("sigmoid", _sigmoid, _sigmoid_grad)
_act("tanh", _tanh, _tanh_grad)
_act("softmax", _softmax, _softmax_grad)
_act("softsign", _softsign, _softsign_grad)
_act("leaky_relu", _leaky_relu, _leaky_relu_grad)


def _prelu_alpha(ctx, x):
    """Alpha shaped to broadcast against X (Paddle's prelu op: mode all, channel or element)."""
    alpha, mode = ctx.input("Alpha"), ctx.attr("mode", "all")
    if mode == "all":
        return alpha.reshape(())
    if mode == "channel":
        axis = 1 if ctx.attr("data_format", "NCHW") in ("NCHW", "NCL", "NCDHW") else x.ndim - 1
        shape = [1] * x.ndim
        shape[axis] = alpha.size
        return alpha.reshape(shape)
    if mode == "element":
        return alpha.reshape((1,) + tuple(x.shape[1:]))
    raise ValueError(f"prelu: mode must be 'all', 'channel' or 'element', got {mode!r}")


def _prelu(ctx):
    x = ctx.input("X")
    ctx.set_output("Out", ctx.xp.where(x > 0, x, x * _prelu_alpha(ctx, x)), lod=ctx.input_lod("X"))


def _prelu_grad(ctx):
    # Paddle's prelu_grad: dX = dOut where x > 0, alpha * dOut elsewhere; dAlpha sums
    # x * dOut over the elements where x <= 0 that share each alpha.
    xp, x, dout = ctx.xp, ctx.input("X"), ctx.input("Out@GRAD")
    alpha = _prelu_alpha(ctx, x)
    if ctx.has_output("X@GRAD"):
        ctx.set_output("X@GRAD", xp.where(x > 0, dout, dout * alpha))
    if ctx.has_output("Alpha@GRAD"):
        contrib = xp.where(x > 0, x.dtype.type(0), x * dout)
        shared = tuple(i for i in range(x.ndim) if alpha.ndim == 0 or alpha.shape[i] == 1)
        ctx.set_output("Alpha@GRAD", contrib.sum(axis=shared).reshape(ctx.input("Alpha").shape))


register_op("prelu", infer_shape=same_shape(),
            grad=simple_grad("prelu_grad", inputs=("X", "Alpha")))(_prelu)
register_op("prelu_grad")(_prelu_grad)


# -- element-wise activations of Paddle 2.x (paddle.nn.functional) and Fluid 1.x ---------------
# Each: forward(xp, x, attrs) -> out and backward(xp, x, out, dout, attrs) -> dx, with Paddle's
# op type and attribute names and defaults (Paddle 2.x API docs, paddle.nn.functional.*).

def _elementwise_act(name, forward, backward):
    def kernel(ctx):
        x = ctx.input("X")
        ctx.set_output("Out", forward(ctx.xp, x, ctx.attrs).astype(x.dtype, copy=False), lod=ctx.input_lod("X"))

    def grad_kernel(ctx):
        x, out, dout = ctx.input("X"), ctx.input("Out"), ctx.input("Out@GRAD")
        ctx.set_output("X@GRAD", backward(ctx.xp, x, out, dout, ctx.attrs).astype(x.dtype, copy=False))

    register_op(name, infer_shape=same_shape(), grad=simple_grad(name + "_grad", keep_outputs=True))(kernel)
    register_op(name + "_grad")(grad_kernel)


def _stable_sigmoid(xp, x):
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _softplus_raw(xp, z):
    """log(1 + exp(z)) without overflow."""
    return xp.maximum(z, 0) + xp.log1p(xp.exp(-xp.abs(z)))


def _erf(xp, x):
    """The error function: math.erf element-wise on the host, cupyx's on a GPU (numpy has none)."""
    if xp.__name__ == "numpy":
        return xp.vectorize(math.erf, otypes=[x.dtype])(x) if x.size else x.copy()
    return importlib.import_module("cupyx.scipy.special").erf(x)


SELU_SCALE = 1.0507009873554804934193349852946
SELU_ALPHA = 1.6732632423543772848170429916717


def _a(attrs, key, default):
    return float(attrs.get(key, default))


def _gelu(xp, x, a):
    if a.get("approximate", False):
        return 0.5 * x * (1 + xp.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _erf(xp, x / math.sqrt(2)))


def _gelu_grad(xp, x, o, d, a):
    if a.get("approximate", False):
        k = math.sqrt(2 / math.pi)
        t = xp.tanh(k * (x + 0.044715 * x ** 3))
        return d * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x))
    cdf = 0.5 * (1 + _erf(xp, x / math.sqrt(2)))
    return d * (cdf + x * xp.exp(-0.5 * x * x) / math.sqrt(2 * math.pi))


def _softplus(xp, x, a):
    beta, threshold = _a(a, "beta", 1.0), _a(a, "threshold", 20.0)
    return xp.where(x * beta > threshold, x, _softplus_raw(xp, x * beta) / beta)


def _softplus_grad(xp, x, o, d, a):
    beta, threshold = _a(a, "beta", 1.0), _a(a, "threshold", 20.0)
    return xp.where(x * beta > threshold, d, d * _stable_sigmoid(xp, x * beta))


def _mish(xp, x, a):
    threshold = _a(a, "threshold", 20.0)
    sp = xp.where(x > threshold, x, _softplus_raw(xp, x))
    return x * xp.tanh(sp)


def _mish_grad(xp, x, o, d, a):
    threshold = _a(a, "threshold", 20.0)
    sp = xp.where(x > threshold, x, _softplus_raw(xp, x))
    t = xp.tanh(sp)
    dsp = xp.where(x > threshold, 1.0, _stable_sigmoid(xp, x))
    return d * (t + x * (1 - t * t) * dsp)


def _hard_swish_gate(xp, x, a):
    return xp.minimum(xp.maximum(x + _a(a, "offset", 3.0), 0), _a(a, "threshold", 6.0))


def _hard_swish_grad(xp, x, o, d, a):
    threshold, scale, offset = _a(a, "threshold", 6.0), _a(a, "scale", 6.0), _a(a, "offset", 3.0)
    z = x + offset
    # Paddle's HardSwishGradFunctor: (2x + offset) / scale inside the ramp, 1 above it, 0 below.
    return d * xp.where(z < 0, 0.0, xp.where(z < threshold, (2 * x + offset) / scale, 1.0))


def _hard_sigmoid_grad(xp, x, o, d, a):
    slope = _a(a, "slope", 0.2)
    # Paddle reads Out: the slope where 0 < out < 1.
    return d * xp.where((o > 0) & (o < 1), slope, 0.0)


def _elu(xp, x, a):
    alpha = _a(a, "alpha", 1.0)
    return xp.where(x > 0, x, alpha * xp.expm1(xp.minimum(x, 0)))


_elementwise_act("relu6", lambda xp, x, a: xp.minimum(xp.maximum(x, 0), _a(a, "threshold", 6.0)),
                 lambda xp, x, o, d, a: d * ((x > 0) & (x < _a(a, "threshold", 6.0))))
_elementwise_act("elu", _elu,
                 lambda xp, x, o, d, a: xp.where(x > 0, d, d * _a(a, "alpha", 1.0) * xp.exp(xp.minimum(x, 0))))
_elementwise_act("selu", lambda xp, x, a: _a(a, "scale", SELU_SCALE) * _elu(xp, x, {"alpha": _a(a, "alpha", SELU_ALPHA)}),
                 lambda xp, x, o, d, a: d * _a(a, "scale", SELU_SCALE) * xp.where(
                     x > 0, 1.0, _a(a, "alpha", SELU_ALPHA) * xp.exp(xp.minimum(x, 0))))
_elementwise_act("gelu", _gelu, _gelu_grad)
_elementwise_act("silu", lambda xp, x, a: x * _stable_sigmoid(xp, x),
                 lambda xp, x, o, d, a: d * _stable_sigmoid(xp, x) * (1 + x * (1 - _stable_sigmoid(xp, x))))
_elementwise_act("swish", lambda xp, x, a: x * _stable_sigmoid(xp, _a(a, "beta", 1.0) * x),
                 lambda xp, x, o, d, a: d * (_stable_sigmoid(xp, _a(a, "beta", 1.0) * x) * (
                     1 + _a(a, "beta", 1.0) * x * (1 - _stable_sigmoid(xp, _a(a, "beta", 1.0) * x)))))
_elementwise_act("hard_swish", lambda xp, x, a: x * _hard_swish_gate(xp, x, a) / _a(a, "scale", 6.0),
                 _hard_swish_grad)
_elementwise_act("hard_sigmoid",
                 lambda xp, x, a: xp.clip(_a(a, "slope", 0.2) * x + _a(a, "offset", 0.5), 0, 1), _hard_sigmoid_grad)
_elementwise_act("softplus", _softplus, _softplus_grad)
_elementwise_act("tanh_shrink", lambda xp, x, a: x - xp.tanh(x), lambda xp, x, o, d, a: d * xp.tanh(x) ** 2)
_elementwise_act("mish", _mish, _mish_grad)
_elementwise_act("logsigmoid", lambda xp, x, a: -_softplus_raw(xp, -x),
                 lambda xp, x, o, d, a: d * _stable_sigmoid(xp, -x))


# x times the mask, as Paddle's functors: a dropped negative is -0.0 there too.
_elementwise_act("hard_shrink", lambda xp, x, a: x * (xp.abs(x) > _a(a, "threshold", 0.5)),
                 lambda xp, x, o, d, a: d * (xp.abs(x) > _a(a, "threshold", 0.5)))
_elementwise_act("softshrink", lambda xp, x, a: xp.where(x > _a(a, "lambda", 0.5), x - _a(a, "lambda", 0.5), xp.where(
                     x < -_a(a, "lambda", 0.5), x + _a(a, "lambda", 0.5), 0)),
                 lambda xp, x, o, d, a: d * (xp.abs(x) > _a(a, "lambda", 0.5)))
_elementwise_act("thresholded_relu", lambda xp, x, a: x * (x > _a(a, "threshold", 1.0)),
                 lambda xp, x, o, d, a: d * (x > _a(a, "threshold", 1.0)))
_elementwise_act("brelu", lambda xp, x, a: xp.clip(x, _a(a, "t_min", 0.0), _a(a, "t_max", 24.0)),
                 lambda xp, x, o, d, a: d * ((x > _a(a, "t_min", 0.0)) & (x < _a(a, "t_max", 24.0))))
_elementwise_act("soft_relu", lambda xp, x, a: _softplus_raw(xp, xp.clip(x, -_a(a, "threshold", 40.0),
                                                                          _a(a, "threshold", 40.0))),
                 lambda xp, x, o, d, a: d * _stable_sigmoid(xp, x) * (xp.abs(x) < _a(a, "threshold", 40.0)))
_elementwise_act("stanh", lambda xp, x, a: _a(a, "scale_b", 1.7159) * xp.tanh(_a(a, "scale_a", 0.67) * x),
                 lambda xp, x, o, d, a: d * _a(a, "scale_a", 0.67) * _a(a, "scale_b", 1.7159) * (
                     1 - xp.tanh(_a(a, "scale_a", 0.67) * x) ** 2))


# -- log_softmax (attribute axis) -----------------------------------------------------------

def _log_softmax(ctx):
    xp, x = ctx.xp, ctx.input("X")
    axis = int(ctx.attr("axis", -1))
    z = shifted_logits(xp, x, axis)
    ctx.set_output("Out", z - xp.log(xp.exp(z).sum(axis=axis, keepdims=True)), lod=ctx.input_lod("X"))


def _log_softmax_grad(ctx):
    xp, out, dout = ctx.xp, ctx.input("Out"), ctx.input("Out@GRAD")
    axis = int(ctx.attr("axis", -1))
    ctx.set_output("X@GRAD", dout - xp.exp(out) * dout.sum(axis=axis, keepdims=True))


register_op("log_softmax", infer_shape=same_shape(),
            grad=simple_grad("log_softmax_grad", keep_outputs=True))(_log_softmax)
register_op("log_softmax_grad")(_log_softmax_grad)
