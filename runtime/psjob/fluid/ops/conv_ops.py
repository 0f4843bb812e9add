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


# -- conv2d_transpose ------------------------------------------------------------------------
# Paddle's conv2d_transpose op (the gradient of conv2d with respect to its input): Input
# [N, C, H, W], Filter [C, O/groups, KH, KW], Output [N, O, OH, OW] with OH = (H - 1) * stride_h
# - pad_top - pad_bottom + dilation_h * (KH - 1) + 1 + output_padding_h. Every input pixel adds
# x[n, c, i, j] * Filter[c, o, kh, kw] at (i * stride_h + kh * dilation_h - pad_top, ...).
# padding_algorithm "VALID" is no padding; "SAME" pads as a SAME conv2d of the op's input would
# (ceil(H / stride) outputs), with the dilation taken as 1, as Paddle does.

def _transpose_geometry(attrs, in_hw, k_hw):
    strides = _pair(attrs.get("strides", [1, 1]), "strides")
    dilations = _pair(attrs.get("dilations", [1, 1]), "dilations")
    pads = [int(p) for p in attrs.get("paddings", [0, 0])]
    algorithm = str(attrs.get("padding_algorithm", "EXPLICIT")).upper()
    if algorithm == "VALID":
        pads = [0, 0]
    if len(pads) == 2:
        pads = [pads[0], pads[0], pads[1], pads[1]]
    if algorithm == "SAME":
        # Paddle's UpdatePaddingAndDilation on the op's input size: the padding a SAME conv2d of
        # that input would take, split before/after, and the dilation taken as 1.
        dilations, pads = [1, 1], []
        for size, k, s in zip(in_hw, k_hw, strides):
            total = max((-(-size // s) - 1) * s + k - size, 0) if size >= 0 else 0
            pads += [total // 2, total - total // 2]
    extra = [int(p) for p in (attrs.get("output_padding") or [0, 0])]
    if len(pads) != 4 or min(pads) < 0 or len(extra) != 2 or min(strides + dilations) < 1:
        raise GraphError(f"conv2d_transpose: bad strides {strides}, dilations {dilations}, paddings "
                         f"{attrs.get('paddings')} or output_padding {extra}")
    out = []
    for i, (size, k) in enumerate(zip(in_hw, k_hw)):
        full = (size - 1) * strides[i] + dilations[i] * (k - 1) + 1
        out.append(-1 if size < 0 else full - pads[2 * i] - pads[2 * i + 1] + extra[i])
    return strides, dilations, pads, out


def _transpose_shape(op):
    x, w = in_var(op, "Input"), in_var(op, "Filter")
    groups = int(op.attr("groups", 1) or 1)
    if len(x.shape) != 4 or len(w.shape) != 4:
        raise GraphError(f"conv2d_transpose: Input {x.name}{list(x.shape)} and Filter {w.name}{list(w.shape)} "
                         "must be 4-D")
    if x.shape[1] >= 0 and x.shape[1] != w.shape[0]:
        raise GraphError(f"conv2d_transpose: Input has {x.shape[1]} channels but Filter {w.name}"
                         f"{list(w.shape)} expects {w.shape[0]}")
    _, _, _, out = _transpose_geometry(op.attrs, x.shape[2:], w.shape[2:])
    if any(0 <= d < 1 for d in out):
        raise GraphError(f"conv2d_transpose: the paddings leave no output for Input {list(x.shape)}")
    set_out(op, "Output", [x.shape[0], w.shape[1] * groups] + out, x.dtype)


def _transpose_slots(ctx, x, w):
    """Per kernel offset: (kh, kw, rows slice, cols slice) into the uncropped output buffer."""
    strides, dilations, pads, out = _transpose_geometry(ctx.attrs, x.shape[2:], w.shape[2:])
    h, wd = x.shape[2:]
    slots = [(a, b, slice(a * dilations[0], a * dilations[0] + (h - 1) * strides[0] + 1, strides[0]),
              slice(b * dilations[1], b * dilations[1] + (wd - 1) * strides[1] + 1, strides[1]))
             for a in range(w.shape[2]) for b in range(w.shape[3])]
    full = [max((h - 1) * strides[0] + dilations[0] * (w.shape[2] - 1) + 1, pads[0] + out[0]),
            max((wd - 1) * strides[1] + dilations[1] * (w.shape[3] - 1) + 1, pads[2] + out[1])]
    crop = (slice(pads[0], pads[0] + out[0]), slice(pads[2], pads[2] + out[1]))
    return slots, full, crop


@register_op("conv2d_transpose", infer_shape=_transpose_shape, grad=lambda op: [GradOpSpec(
    "conv2d_transpose_grad", {"Input": op.input("Input"), "Filter": op.input("Filter"),
                              "Output@GRAD": [grad_name(op.output("Output")[0])]},
    {"Input@GRAD": [grad_name(op.input("Input")[0])], "Filter@GRAD": [grad_name(op.input("Filter")[0])]},
    dict(op.attrs))])
def conv2d_transpose(ctx):
    xp, x, w = ctx.xp, ctx.input("Input"), ctx.input("Filter")
    g = int(ctx.attr("groups", 1) or 1)
    slots, full, crop = _transpose_slots(ctx, x, w)
    n, c = x.shape[:2]
    og = w.shape[1]
    buf = xp.zeros((n, og * g) + tuple(full), dtype=x.dtype)
    xs = x.reshape(n, g, c // g, *x.shape[2:])
    ws = w.reshape(g, c // g, og, *w.shape[2:])
    for a, b, rows, cols in slots:
        part = xp.einsum("ngchw,gco->ngohw", xs, ws[:, :, :, a, b]).reshape(n, g * og, *x.shape[2:])
        buf[:, :, rows, cols] += part
    ctx.set_output("Output", buf[:, :, crop[0], crop[1]].copy())


@register_op("conv2d_transpose_grad")
def conv2d_transpose_grad(ctx):
    xp, x, w, dout = ctx.xp, ctx.input("Input"), ctx.input("Filter"), ctx.input("Output@GRAD")
    g = int(ctx.attr("groups", 1) or 1)
    slots, full, crop = _transpose_slots(ctx, x, w)
    n, c = x.shape[:2]
    og = w.shape[1]
    dbuf = xp.zeros((n, og * g) + tuple(full), dtype=dout.dtype)
    dbuf[:, :, crop[0], crop[1]] = dout
    xs = x.reshape(n, g, c // g, *x.shape[2:])
    ws = w.reshape(g, c // g, og, *w.shape[2:])
    dx = xp.zeros_like(xs)
    dw = xp.zeros_like(ws)
    for a, b, rows, cols in slots:
        d = dbuf[:, :, rows, cols].reshape(n, g, og, *x.shape[2:])
        dx += xp.einsum("ngohw,gco->ngchw", d, ws[:, :, :, a, b])
        dw[:, :, :, a, b] = xp.einsum("ngchw,ngohw->gco", xs, d)
    ctx.set_output("Input@GRAD", dx.reshape(x.shape))
    ctx.set_output("Filter@GRAD", dw.reshape(w.shape))
