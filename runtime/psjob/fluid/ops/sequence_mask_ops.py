"""sequence_mask (paddle.nn.functional.sequence_mask): Y = X.shape + [maxlen], with
Y[..., j] = (j < X[...]) in `out_dtype`. maxlen comes from MaxLenTensor when given, else the
`maxlen` attribute, and where that is negative from max(X), as Paddle's kernel. It has no gradient
(its output is an integer or boolean mask in every use; Paddle's op has none either)."""
from __future__ import annotations

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import in_var, register_op, set_out


def _shape(op):
    x = in_var(op, "X")
    maxlen = -1 if op.input("MaxLenTensor") else int(op.attr("maxlen", -1))
    set_out(op, "Y", tuple(x.shape) + (maxlen if maxlen >= 0 else -1,), op.attr("out_dtype", "int64"))


@register_op("sequence_mask", infer_shape=_shape)
def sequence_mask(ctx):
    xp, x = ctx.xp, ctx.input("X")
    if ctx.has_input("MaxLenTensor"):
        maxlen = int(ctx.input("MaxLenTensor").reshape(-1)[0])
    else:
        maxlen = int(ctx.attr("maxlen", -1))
    if maxlen < 0:
        maxlen = int(x.max()) if x.size else 0
    if x.size and int(x.min()) < 0:
        raise GraphError(f"sequence_mask: lengths must be >= 0, got {int(x.min())}")
    y = xp.arange(maxlen).reshape((1,) * x.ndim + (maxlen,)) < x[..., None]
    ctx.set_output("Y", y.astype(ctx.attr("out_dtype", "int64")))
