"""`conv3d` and `pool3d`: Paddle's 3-D convolution and pooling over NCDHW inputs (behind
paddle.nn.functional.conv3d / max_pool3d / avg_pool3d, paddle.nn.Conv3D / MaxPool3D /
AvgPool3D and Fluid 1.8's fluid.layers.conv3d / pool3d), with their gradients.

The attributes are conv2d's and pool2d's with a third spatial dimension (psjob/fluid/ops/
conv_ops.py, pool_ops.py): `strides`, `dilations`, `paddings` ([d, h, w] or [front, back, top,
bottom, left, right]), `padding_algorithm` ('EXPLICIT'; 'VALID': none; 'SAME': ceil(in /
stride) outputs with the padding split, the odd one after, and a convolution's dilation taken
as 1, as Paddle does), `groups`; for pooling `pooling_type` 'max' / 'avg', `ksize`,
`global_pooling`, `adaptive` (ksize is the output size; output i pools [floor(i * in / out),
ceil((i + 1) * in / out))), `exclusive` (otherwise an average counts the window clipped to the
padded input, as Paddle 3.0's, or the whole window with `fluid1_inclusive_count`, as Fluid 1.8's) and `ceil_mode`. The convolution gathers the strided
window of the padded input for every kernel offset (im2col) and contracts it with the filter;
pooling visits every output position's window. As Paddle's max-pool gradient, a window's
whole gradient goes to its first maximum.
"""
from __future__ import annotations

import itertools

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, set_out, simple_grad


def _triple(values, what, op):
    values = [int(v) for v in values]
    if len(values) != 3:
        raise GraphError(f"{op}: {what} must have 3 values (depth, height, width), got {values}")
    return values


def _pads(attrs, in_dhw, k_dhw, strides, op):
    """[front, back, top, bottom, left, right] by the padding algorithm."""
    algorithm = str(attrs.get("padding_algorithm", "EXPLICIT")).upper()
    if algorithm == "VALID":
        return [0] * 6
    if algorithm == "SAME":
        pads = []
        for size, k, s in zip(in_dhw, k_dhw, strides):
            total = max((-(-size // s) - 1) * s + k - size, 0) if size >= 0 else 0
            pads += [total // 2, total - total // 2]
        return pads
    if algorithm != "EXPLICIT":
        raise GraphError(f"{op}: padding_algorithm must be EXPLICIT, SAME or VALID, got {algorithm!r}")
    pads = [int(p) for p in attrs.get("paddings", [0, 0, 0])]
    if len(pads) == 3:
        pads = [pads[0], pads[0], pads[1], pads[1], pads[2], pads[2]]
    if len(pads) != 6 or min(pads) < 0:
        raise GraphError(f"{op}: paddings must be 3 or 6 values >= 0, got {attrs.get('paddings')}")
    return pads


# -- conv3d ------------------------------------------------------------------------------------

def _conv_geometry(in_dhw, k_dhw, attrs):
    strides = _triple(attrs.get("strides", [1, 1, 1]), "strides", "conv3d")
    dilations = _triple(attrs.get("dilations", [1, 1, 1]), "dilations", "conv3d")
    if min(strides + dilations) < 1:
        raise GraphError(f"conv3d: strides {strides} and dilations {dilations} must be >= 1")
    if str(attrs.get("padding_algorithm", "EXPLICIT")).upper() == "SAME":
        dilations = [1, 1, 1]
    pads = _pads(attrs, in_dhw, k_dhw, strides, "conv3d")
    out = []
    for i, (size, k) in enumerate(zip(in_dhw, k_dhw)):
        if size < 0:
            out.append(-1)
            continue
        n = (size + pads[2 * i] + pads[2 * i + 1] - (dilations[i] * (k - 1) + 1)) // strides[i] + 1
        if n < 1:
            raise GraphError(f"conv3d: a {k}-wide kernel (dilation {dilations[i]}) does not fit an input of "
                             f"{size} padded by {pads[2 * i:2 * i + 2]}")
        out.append(n)
    return pads, strides, dilations, out


def _conv_shape(op):
    x, w = in_var(op, "Input"), in_var(op, "Filter")
    if len(x.shape) != 5 or len(w.shape) != 5:
        raise GraphError(f"conv3d: Input {x.name}{list(x.shape)} and Filter {w.name}{list(w.shape)} must both be "
                         "5-D (NCDHW and [out, in/groups, kd, kh, kw])")
    groups = int(op.attr("groups", 1) or 1)
    if groups < 1 or w.shape[0] % groups:
        raise GraphError(f"conv3d: groups {groups} must divide the {w.shape[0]} output channels")
    if x.shape[1] >= 0 and x.shape[1] != w.shape[1] * groups:
        raise GraphError(f"conv3d: Input {x.name}{list(x.shape)} has {x.shape[1]} channels; Filter "
                         f"{w.name}{list(w.shape)} with groups={groups} expects {w.shape[1] * groups}")
    _, _, _, out = _conv_geometry(x.shape[2:], w.shape[2:], op.attrs)
    set_out(op, "Output", [x.shape[0], w.shape[0]] + out, x.dtype)


def _offsets(k_dhw, strides, dilations, out):
    """Per kernel offset: its index and the strided slices of the padded input it reads."""
    for idx in itertools.product(*(range(k) for k in k_dhw)):
        yield idx, tuple(slice(i * d, i * d + s * (o - 1) + 1, s) for i, d, s, o in zip(idx, dilations, strides, out))


def _conv_setup(ctx):
    xp, x, w = ctx.xp, ctx.input("Input"), ctx.input("Filter")
    groups = int(ctx.attr("groups", 1) or 1)
    pads, strides, dilations, out = _conv_geometry(x.shape[2:], w.shape[2:], ctx.attrs)
    padded = xp.pad(x, ((0, 0), (0, 0)) + tuple((pads[2 * i], pads[2 * i + 1]) for i in range(3)))
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    cols = xp.empty((n, c) + tuple(w.shape[2:]) + tuple(out), dtype=x.dtype)
    for idx, sl in _offsets(w.shape[2:], strides, dilations, out):
        cols[(slice(None), slice(None)) + idx] = padded[(slice(None), slice(None)) + sl]
    cols = cols.reshape((n, groups, cg) + cols.shape[2:])
    wg = w.reshape((groups, o // groups) + w.shape[1:])
    return x, w, groups, pads, strides, dilations, out, padded.shape, cols, wg


@register_op("conv3d", infer_shape=_conv_shape, grad=lambda op: [GradOpSpec(
    "conv3d_grad", {"Input": op.input("Input"), "Filter": op.input("Filter"),
                    "Output@GRAD": [grad_name(op.output("Output")[0])]},
    {"Input@GRAD": [grad_name(op.input("Input")[0])], "Filter@GRAD": [grad_name(op.input("Filter")[0])]},
    dict(op.attrs))])
def conv3d(ctx):
    x, w, groups, _, _, _, out, _, cols, wg = _conv_setup(ctx)
    y = ctx.xp.einsum("gocabe,ngcabedhw->ngodhw", wg, cols)
    ctx.set_output("Output", y.reshape((x.shape[0], w.shape[0]) + tuple(out)).astype(x.dtype, copy=False))


@register_op("conv3d_grad")
def conv3d_grad(ctx):
    xp = ctx.xp
    x, w, groups, pads, strides, dilations, out, padded_shape, cols, wg = _conv_setup(ctx)
    n, o = x.shape[0], w.shape[0]
    dout = ctx.input("Output@GRAD").reshape((n, groups, o // groups) + tuple(out))
    if ctx.has_output("Filter@GRAD"):
        dw = xp.einsum("ngodhw,ngcabedhw->gocabe", dout, cols)
        ctx.set_output("Filter@GRAD", dw.reshape(w.shape).astype(w.dtype, copy=False))
    if ctx.has_output("Input@GRAD"):
        dcols = xp.einsum("gocabe,ngodhw->ngcabedhw", wg, dout).reshape((n, x.shape[1]) + tuple(w.shape[2:])
                                                                        + tuple(out))
        dpadded = xp.zeros(padded_shape, dtype=x.dtype)
        for idx, sl in _offsets(w.shape[2:], strides, dilations, out):
            dpadded[(slice(None), slice(None)) + sl] += dcols[(slice(None), slice(None)) + idx]
        crop = tuple(slice(pads[2 * i], pads[2 * i] + x.shape[2 + i]) for i in range(3))
        ctx.set_output("Input@GRAD", dpadded[(slice(None), slice(None)) + crop])


# -- pool3d ------------------------------------------------------------------------------------

def _pool_geometry(in_dhw, attrs):
    """(ksize, strides, pads [6], out [3])."""
    if attrs.get("global_pooling", False):
        return list(in_dhw), [1, 1, 1], [0] * 6, [1, 1, 1]
    if attrs.get("adaptive", False):
        out = _triple(attrs["ksize"], "ksize", "pool3d")
        return out, [1, 1, 1], [0] * 6, out
    ksize = _triple(attrs["ksize"], "ksize", "pool3d")
    strides = _triple(attrs.get("strides", [1, 1, 1]), "strides", "pool3d")
    pads = _pads(attrs, in_dhw, ksize, strides, "pool3d")
    ceil = attrs.get("ceil_mode", False)
    out = []
    for i, (size, k, s) in enumerate(zip(in_dhw, ksize, strides)):
        span = size + pads[2 * i] + pads[2 * i + 1] - k
        out.append(-1 if size < 0 else (span + s - 1) // s + 1 if ceil else span // s + 1)
    return ksize, strides, pads, out


def _pool_shape(op):
    x = in_var(op, "X")
    if len(x.shape) != 5:
        raise GraphError(f"pool3d: X {x.name}{list(x.shape)} must be 5-D (NCDHW)")
    if op.attr("pooling_type", "max") not in ("max", "avg"):
        raise GraphError(f"pool3d: pooling_type must be 'max' or 'avg', got {op.attr('pooling_type')!r}")
    _, _, _, out = _pool_geometry(x.shape[2:], op.attrs)
    if any(d == 0 or d < -1 for d in out):
        raise GraphError(f"pool3d: window {op.attr('ksize')} leaves no output for X {x.name}{list(x.shape)}")
    set_out(op, "Out", list(x.shape[:2]) + out, x.dtype)


def _windows(x, attrs):
    """Yield (output index, window slices clipped to x, the unclipped window's size)."""
    ksize, strides, pads, out = _pool_geometry(x.shape[2:], attrs)
    sizes = x.shape[2:]
    adaptive = attrs.get("adaptive", False)
    fluid1 = bool(attrs.get("fluid1_inclusive_count", False))
    for idx in itertools.product(*(range(o) for o in out)):
        bounds, full = [], 1
        for i, j in enumerate(idx):
            if adaptive:
                lo, hi = (j * sizes[i]) // out[i], -((-(j + 1) * sizes[i]) // out[i])
                full *= hi - lo
            else:
                lo = j * strides[i] - pads[2 * i]
                # The inclusive count as pool2d's (pool_ops.py): Paddle 3.0 clips the window to the
                # padded input; Fluid 1.8 (`fluid1_inclusive_count`) counts all of it.
                full *= ksize[i] if fluid1 else min(lo + ksize[i], sizes[i] + pads[2 * i + 1]) - lo
                lo, hi = max(lo, 0), min(lo + ksize[i], sizes[i])
            bounds.append((lo, hi))
        yield idx, tuple(slice(lo, hi) for lo, hi in bounds), full


@register_op("pool3d", infer_shape=_pool_shape, grad=simple_grad("pool3d_grad", keep_outputs=True))
def pool3d(ctx):
    xp, x = ctx.xp, ctx.input("X")
    _, _, _, out_dhw = _pool_geometry(x.shape[2:], ctx.attrs)
    out = xp.empty(x.shape[:2] + tuple(out_dhw), dtype=x.dtype)
    is_max, exclusive = ctx.attr("pooling_type", "max") == "max", ctx.attr("exclusive", True)
    for idx, sl, full in _windows(x, ctx.attrs):
        window = x[(slice(None), slice(None)) + sl]
        if is_max:
            out[(slice(None), slice(None)) + idx] = window.max(axis=(2, 3, 4))
        else:
            count = window[0, 0].size if exclusive else full
            out[(slice(None), slice(None)) + idx] = window.sum(axis=(2, 3, 4)) / count
    ctx.set_output("Out", out)


@register_op("pool3d_grad")
def pool3d_grad(ctx):
    xp, x, dout = ctx.xp, ctx.input("X"), ctx.input("Out@GRAD")
    dx = xp.zeros_like(x)
    is_max, exclusive = ctx.attr("pooling_type", "max") == "max", ctx.attr("exclusive", True)
    n, c = x.shape[:2]
    nn, cc = xp.meshgrid(xp.arange(n), xp.arange(c), indexing="ij")
    for idx, sl, full in _windows(x, ctx.attrs):
        g = dout[(slice(None), slice(None)) + idx]
        window = x[(slice(None), slice(None)) + sl]
        if is_max:
            shape = window.shape[2:]
            first = window.reshape(n, c, -1).argmax(axis=2)  # the first maximum, as Paddle's loop finds it
            d, rest = divmod(first, shape[1] * shape[2])
            h, w = divmod(rest, shape[2])
            xp.add.at(dx, (nn, cc, sl[0].start + d, sl[1].start + h, sl[2].start + w), g)
        else:
            count = window[0, 0].size if exclusive else full
            dx[(slice(None), slice(None)) + sl] += (g / count)[:, :, None, None, None]
    ctx.set_output("X@GRAD", dx)
