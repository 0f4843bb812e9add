"""Activations. Gradients read the forward output where that is cheaper
(sigmoid, tanh, relu) — as Paddle's kernels do."""
from __future__ import annotations

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


def _softmax(ctx):
    xp, x = ctx.xp, ctx.input("X")
    z = x - x.max(axis=-1, keepdims=True)
    e = xp.exp(z)
    ctx.set_output("Out", e / e.sum(axis=-1, keepdims=True), lod=ctx.input_lod("X"))


def _softmax_grad(ctx):
    out, dout = ctx.input("Out"), ctx.input("Out@GRAD")
    ctx.set_output("X@GRAD", out * (dout - (dout * out).sum(axis=-1, keepdims=True)))


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
