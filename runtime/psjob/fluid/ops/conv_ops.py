"""`conv2d`: 2-D convolution over NCHW inputs, as Paddle's conv2d op (cross-correlation,
no kernel flip), with its gradient.

Inputs `Input` [N, C, H, W] and `Filter` [O, C/groups, KH, KW]; output `Output`
[N, O, OH, OW] with OH = (H + pad_top + pad_bottom - (dilation_h * (KH - 1) + 1)) //
stride_h + 1 (OW alike). Attributes as Paddle's: `strides`, `paddings` ([h, w] or
[top, bottom, left, right]), `dilations`, `groups`, `padding_algorithm` ("EXPLICIT",
"SAME": output ceil(H / stride) with the padding split before/after and the dilation
taken as 1, as Paddle does; "VALID": no padding) and `data_format` ("NCHW"; the layers
transpose an NHWC input).

The kernel gathers, for every kernel offset (kh, kw), the strided window of the
padded input (the im2col columns as a [N, G, C/G, KH, KW, OH, OW] array) and
contracts it with the filter; the gradient contracts the output gradient with the
columns (Filter@GRAD) and with the filter, scattering the result back over the
same windows (Input@GRAD).
"""
from __future__ import annotations

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, set_out


def _pair(values, what):
    values = [int(v) for v in values]
    if len(values) != 2:
        raise GraphError(f"conv2d: {what} must have 2 values (height, width), got {values}")
    return values


def _geometry(in_hw, k_hw, attrs):
    """(pads [top, bottom, left, right], strides, dilations, output [OH, OW]) for known H, W
    (a -1 dimension gives -1 and the explicit padding)."""
    strides = _pair(attrs.get("strides", [1, 1]), "strides")
    dilations = _pair(attrs.get("dilations", [1, 1]), "dilations")
    if min(strides) < 1 or min(dilations) < 1:
        raise GraphError(f"conv2d: strides {strides} and dilations {dilations} must be >= 1")
    algorithm = str(attrs.get("padding_algorithm", "EXPLICIT")).upper()
    paddings = [int(p) for p in attrs.get("paddings", [0, 0])]
    if len(paddings) == 2:
        paddings = [paddings[0], paddings[0], paddings[1], paddings[1]]
    if len(paddings) != 4 or min(paddings) < 0:
        raise GraphError(f"conv2d: paddings must be 2 or 4 values >= 0, got {attrs.get('paddings')}")
    if algorithm == "VALID":
        paddings = [0, 0, 0, 0]
    elif algorithm == "SAME":
        dilations = [1, 1]
        paddings = []
        for size, k, s in zip(in_hw, k_hw, strides):
            total = max((-(-size // s) - 1) * s + k - size, 0) if size >= 0 else 0
            paddings += [total // 2, total - total // 2]
    elif algorithm != "EXPLICIT":
        raise GraphError(f"conv2d: padding_algorithm must be EXPLICIT, SAME or VALID, got {algorithm!r}")
    out = []
    for i, (size, k) in enumerate(zip(in_hw, k_hw)):
        if size < 0:
            out.append(-1)
            continue
        span = dilations[i] * (k - 1) + 1
        n = (size + paddings[2 * i] + paddings[2 * i + 1] - span) // strides[i] + 1
        if n < 1:
            raise GraphError(f"conv2d: a {k}-wide kernel (dilation {dilations[i]}) does not fit an input "
                             f"of {size} padded by {paddings[2 * i:2 * i + 2]}")
        out.append(n)
    return paddings, strides, dilations, out


def _infer(op):
    x, w = in_var(op, "Input"), in_var(op, "Filter")
    if str(op.attr("data_format", "NCHW")).upper() not in ("NCHW", "ANYLAYOUT"):
        raise GraphError("conv2d: the op takes NCHW (the layers transpose an NHWC input)")
    if len(x.shape) != 4 or len(w.shape) != 4:
        raise GraphError(f"conv2d: Input {x.name}{list(x.shape)} and Filter {w.name}{list(w.shape)} "
                         "must both be 4-D (NCHW and [out, in/groups, kh, kw])")
    groups = int(op.attr("groups", 1) or 1)
    if groups < 1 or w.shape[0] % groups:
        raise GraphError(f"conv2d: groups {groups} must divide the {w.shape[0]} output channels")
    if x.shape[1] >= 0 and x.shape[1] != w.shape[1] * groups:
        raise GraphError(f"conv2d: Input {x.name}{list(x.shape)} has {x.shape[1]} channels; Filter "
                         f"{w.name}{list(w.shape)} with groups={groups} expects {w.shape[1] * groups}")
    _, _, _, (oh, ow) = _geometry(x.shape[2:], w.shape[2:], op.attrs)
    set_out(op, "Output", [x.shape[0], w.shape[0], oh, ow], x.dtype)


def _windows(shape_hw, k_hw, strides, dilations, out_hw):
    """Per kernel offset (kh, kw): the (rows, cols) slices of the padded input it reads."""
    for kh in range(k_hw[0]):
        for kw in range(k_hw[1]):
            h0, w0 = kh * dilations[0], kw * dilations[1]
            yield kh, kw, (slice(h0, h0 + strides[0] * (out_hw[0] - 1) + 1, strides[0]),
                           slice(w0, w0 + strides[1] * (out_hw[1] - 1) + 1, strides[1]))


def _setup(ctx):
    xp, x, w = ctx.xp, ctx.input("Input"), ctx.input("Filter")
    groups = int(ctx.attr("groups", 1) or 1)
    pads, strides, dilations, out_hw = _geometry(x.shape[2:], w.shape[2:], ctx.attrs)
    padded = xp.pad(x, ((0, 0), (0, 0), (pads[0], pads[1]), (pads[2], pads[3])))
    n, c = x.shape[:2]
    o, cg, kh, kw = w.shape
    cols = xp.empty((n, c, kh, kw, out_hw[0], out_hw[1]), dtype=x.dtype)
    for i, j, (rows, cs) in _windows(padded.shape[2:], (kh, kw), strides, dilations, out_hw):
        cols[:, :, i, j] = padded[:, :, rows, cs]
    cols = cols.reshape(n, groups, cg, kh, kw, out_hw[0], out_hw[1])
    wg = w.reshape(groups, o // groups, cg, kh, kw)
    return x, w, groups, pads, strides, dilations, out_hw, padded.shape, cols, wg


def _conv_grad(op):
    x, w, out = op.input("Input")[0], op.input("Filter")[0], op.output("Output")[0]
    return [GradOpSpec("conv2d_grad", {"Input": [x], "Filter": [w], "Output@GRAD": [grad_name(out)]},
                       {"Input@GRAD": [grad_name(x)], "Filter@GRAD": [grad_name(w)]}, dict(op.attrs))]


@register_op("conv2d", infer_shape=_infer, grad=_conv_grad)
def conv2d(ctx):
    x, w, groups, _, _, _, out_hw, _, cols, wg = _setup(ctx)
    out = ctx.xp.einsum("gockl,ngcklhw->ngohw", wg, cols)
    ctx.set_output("Output", out.reshape(x.shape[0], w.shape[0], out_hw[0], out_hw[1]).astype(x.dtype, copy=False))


@register_op("conv2d_grad")
def conv2d_grad(ctx):
    xp = ctx.xp
    x, w, groups, pads, strides, dilations, out_hw, padded_shape, cols, wg = _setup(ctx)
    n, o = x.shape[0], w.shape[0]
    dout = ctx.input("Output@GRAD").reshape(n, groups, o // groups, out_hw[0], out_hw[1])
    if ctx.has_output("Filter@GRAD"):
        dw = xp.einsum("ngohw,ngcklhw->gockl", dout, cols)
        ctx.set_output("Filter@GRAD", dw.reshape(w.shape).astype(w.dtype, copy=False))
    if ctx.has_output("Input@GRAD"):
        dcols = xp.einsum("gockl,ngohw->ngcklhw", wg, dout).reshape(n, x.shape[1], w.shape[2], w.shape[3],
                                                                    out_hw[0], out_hw[1])
        dpadded = xp.zeros(padded_shape, dtype=x.dtype)
        for i, j, (rows, cs) in _windows(padded_shape[2:], w.shape[2:], strides, dilations, out_hw):
            dpadded[:, :, rows, cs] += dcols[:, :, i, j]
        h, wd = x.shape[2:]
        ctx.set_output("Input@GRAD", dpadded[:, :, pads[0]:pads[0] + h, pads[2]:pads[2] + wd])
