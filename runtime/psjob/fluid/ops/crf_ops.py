"""Sequence labelling ops of Fluid 1.8 (Paddle 1.8 API docs: fluid.layers.linear_chain_crf,
crf_decoding, chunk_eval), checked against Paddle 1.8.5's CPU kernels.

Sequences come as LoD (Emission [T, D], Label [T, 1], level-0 offsets) or padded (Emission
[B, L, D], Label [B, L] or [B, L, 1], Length [B]). Transition is [D + 2, D]: row 0 the start
weights, row 1 the end weights, rows 2.. the weight of tag i followed by tag j.

- `linear_chain_crf`: LogLikelihood [N, 1] is each sequence's negative log-likelihood,
  log Z - score(label path) (Paddle's name notwithstanding). Alpha, EmissionExps and
  TransitionExps are the kernel's work tensors as Paddle keeps them (exp of each emission row
  less its max, exp of Transition, the normalized forward scores). The gradient (forward-
  backward marginals less the label's counts, times the output gradient) goes to Emission and
  Transition.
- `crf_decoding`: the Viterbi path (int64, [T, 1] with Emission's LoD, or [B, L] padded with
  0 past each length); with Label, 1 where the path agrees with the label, else 0.
- `chunk_eval`: precision, recall, F1 (float32 [1]) and the inferred, labelled and correct
  chunk counts (int64 [1]) of tag sequences under the IOB, IOE, IOBES or plain scheme, as
  Paddle's kernel segments them (label = type * tag_types + tag; the largest label, other).
"""
from __future__ import annotations

import numpy as np

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, set_out


def _host(ctx, v):
    return np.asarray(v if ctx.xp is np else ctx.xp.asnumpy(v))


def _sequences(ctx, slot="Emission"):
    """(per sequence the row range into the flattened rows, padded?)."""
    x = ctx.input(slot)
    if ctx.has_input("Length"):
        lengths = _host(ctx, ctx.input("Length")).reshape(-1).astype(np.int64)
        b, width = x.shape[0], x.shape[1]
        return [(i * width, i * width + int(lengths[i])) for i in range(b)], True
    lod = ctx.input_lod(slot)
    if not lod:
        raise GraphError(f"{ctx.op_type}: {slot} {ctx.ins[slot][0]} needs a LoD (sequences) or a Length input")
    offsets = lod[0]
    return [(int(offsets[i]), int(offsets[i + 1])) for i in range(len(offsets) - 1)], False


def _logsumexp(a, axis):
    m = a.max(axis=axis, keepdims=True)
    return (m + np.log(np.exp(a - m).sum(axis=axis, keepdims=True))).squeeze(axis)


def _crf_one(x, w, label):
    """(negative log-likelihood, d/dx, d/dw) of one sequence x [L, D] with tags `label`."""
    n, d = x.shape
    start, end, trans = w[0], w[1], w[2:]
    alpha = np.empty((n, d))
    alpha[0] = start + x[0]
    for k in range(1, n):
        alpha[k] = _logsumexp(alpha[k - 1][:, None] + trans, axis=0) + x[k]
    log_z = _logsumexp(alpha[-1] + end, axis=0)
    beta = np.empty((n, d))
    beta[-1] = end
    for k in range(n - 2, -1, -1):
        beta[k] = _logsumexp(trans + (x[k + 1] + beta[k + 1])[None, :], axis=1)
    score = start[label[0]] + end[label[-1]] + x[np.arange(n), label].sum() + trans[label[:-1], label[1:]].sum()
    marg = np.exp(alpha + beta - log_z)
    dx = marg.copy()
    dx[np.arange(n), label] -= 1.0
    dw = np.zeros_like(w)
    dw[0] = marg[0]
    dw[0, label[0]] -= 1.0
    dw[1] = marg[-1]
    dw[1, label[-1]] -= 1.0
    if n > 1:
        pair = np.exp(alpha[:-1, :, None] + trans[None] + (x[1:] + beta[1:])[:, None, :] - log_z)
        dw[2:] = pair.sum(axis=0)
        np.add.at(dw[2:], (label[:-1], label[1:]), -1.0)
    return log_z - score, dx, dw


def _crf_shape(op):
    x, w = in_var(op, "Emission"), in_var(op, "Transition")
    d = x.shape[-1]
    if len(w.shape) != 2 or (d >= 0 and tuple(w.shape) != (d + 2, d)):
        raise GraphError(f"linear_chain_crf: Transition {w.name}{list(w.shape)} must be [{d} + 2, {d}] for "
                         f"Emission {x.name}{list(x.shape)}")
    rows = x.shape[0]
    flat = [rows * x.shape[1] if rows >= 0 and len(x.shape) == 3 else -1, d] if len(x.shape) == 3 else list(x.shape)
    set_out(op, "Alpha", flat, x.dtype)
    set_out(op, "EmissionExps", flat, x.dtype)
    set_out(op, "TransitionExps", w.shape, x.dtype)
    set_out(op, "LogLikelihood", [rows if len(x.shape) == 3 else -1, 1], x.dtype)


def _crf_grad(op):
    ins = {s: op.input(s) for s in ("Emission", "Transition", "Label", "Length") if op.input(s)}
    ins["LogLikelihood@GRAD"] = [grad_name(op.output("LogLikelihood")[0])]
    return [GradOpSpec("linear_chain_crf_grad", ins,
                       {"Emission@GRAD": [grad_name(op.input("Emission")[0])],
                        "Transition@GRAD": [grad_name(op.input("Transition")[0])]})]


def _crf_all(ctx):
    x, w = ctx.input("Emission"), ctx.input("Transition")
    d = x.shape[-1]
    xs = _host(ctx, x).reshape(-1, d).astype(np.float64)
    ws = _host(ctx, w).astype(np.float64)
    labels = _host(ctx, ctx.input("Label")).reshape(-1).astype(np.int64)
    seqs, _ = _sequences(ctx)
    return xs, ws, labels, seqs, x.dtype


@register_op("linear_chain_crf", infer_shape=_crf_shape, grad=_crf_grad, no_grad_inputs=("Label", "Length"))
def linear_chain_crf(ctx):
    xs, ws, labels, seqs, dtype = _crf_all(ctx)
    lls = np.zeros((len(seqs), 1))
    alpha = np.zeros_like(xs)
    for i, (a, b) in enumerate(seqs):
        if b > a:
            lls[i, 0] = _crf_one(xs[a:b], ws, labels[a:b])[0]
            part = np.exp(xs[a:b] - xs[a:b].max(axis=1, keepdims=True))
            alpha[a:b] = part / part.sum(axis=1, keepdims=True)
    xp = ctx.xp
    ctx.set_output("EmissionExps", xp.asarray(np.exp(xs - xs.max(axis=1, keepdims=True)).astype(dtype)))
    ctx.set_output("TransitionExps", xp.asarray(np.exp(ws).astype(dtype)))
    ctx.set_output("Alpha", xp.asarray(alpha.astype(dtype)))
    ctx.set_output("LogLikelihood", xp.asarray(lls.astype(dtype)))


@register_op("linear_chain_crf_grad")
def linear_chain_crf_grad(ctx):
    xs, ws, labels, seqs, dtype = _crf_all(ctx)
    dll = _host(ctx, ctx.input("LogLikelihood@GRAD")).reshape(-1).astype(np.float64)
    dx, dw = np.zeros_like(xs), np.zeros_like(ws)
    for i, (a, b) in enumerate(seqs):
        if b > a:
            _, gx, gw = _crf_one(xs[a:b], ws, labels[a:b])
            dx[a:b] = gx * dll[i]
            dw += gw * dll[i]
    xp = ctx.xp
    ctx.set_output("Emission@GRAD", xp.asarray(dx.reshape(ctx.input("Emission").shape).astype(dtype)))
    ctx.set_output("Transition@GRAD", xp.asarray(dw.astype(dtype)))


# -- crf_decoding ------------------------------------------------------------------------

def _viterbi(x, w):
    n, _ = x.shape
    start, end, trans = w[0], w[1], w[2:]
    score = start + x[0]
    track = np.zeros(x.shape, np.int64)
    for k in range(1, n):
        cand = score[:, None] + trans
        track[k] = cand.argmax(axis=0)
        score = cand.max(axis=0) + x[k]
    path = np.empty(n, np.int64)
    path[-1] = int((score + end).argmax())
    for k in range(n - 1, 0, -1):
        path[k - 1] = track[k, path[k]]
    return path


def _decoding_shape(op):
    x = in_var(op, "Emission")
    shape = [x.shape[0], x.shape[1]] if len(x.shape) == 3 else [x.shape[0], 1]
    set_out(op, "ViterbiPath", shape, "int64", x.lod_level)


@register_op("crf_decoding", infer_shape=_decoding_shape)
def crf_decoding(ctx):
    x = ctx.input("Emission")
    d = x.shape[-1]
    xs = _host(ctx, x).reshape(-1, d).astype(np.float64)
    ws = _host(ctx, ctx.input("Transition")).astype(np.float64)
    seqs, padded = _sequences(ctx)
    path = np.zeros(xs.shape[0], np.int64)
    for a, b in seqs:
        if b > a:
            path[a:b] = _viterbi(xs[a:b], ws)
    if ctx.has_input("Label"):
        label = _host(ctx, ctx.input("Label")).reshape(-1).astype(np.int64)
        hit = (path == label).astype(np.int64)
        if padded:  # past a sequence's length: 0
            keep = np.zeros_like(hit)
            for a, b in seqs:
                keep[a:b] = 1
            hit *= keep
        path = hit
    shape = x.shape[:2] if padded else (x.shape[0], 1)
    ctx.set_output("ViterbiPath", ctx.xp.asarray(path.reshape(shape)), lod=None if padded else ctx.input_lod("Emission"))


# -- chunk_eval --------------------------------------------------------------------------

_SCHEMES = {"IOB": (2, 0, 1, -1, -1), "IOE": (2, -1, 0, 1, -1), "IOBES": (4, 0, 1, 2, 3), "plain": (1, -1, -1, -1, -1)}


def _chunk_end(prev_tag, prev_type, tag, typ, other, b, i, e, s):
    """Whether the chunk running at the previous tag ends before this one (tags are >= 0, so a
    scheme's -1 for a tag it lacks never matches; the first tag has prev_type other)."""
    if prev_type == other:
        return False
    if typ == other or typ != prev_type:
        return True
    if prev_tag in (b, i):
        return tag in (b, s)
    return prev_tag in (e, s)


def _chunk_begin(prev_tag, prev_type, tag, typ, other, b, i, e, s):
    """Whether a chunk begins at this tag."""
    if prev_type == other:
        return typ != other
    if typ == other:
        return False
    if typ != prev_type or tag in (b, s):
        return True
    if tag in (i, e):
        return prev_tag in (e, s)
    return False


def _segments(labels, num_chunk_types, scheme):
    n_tags, b, i, e, s = _SCHEMES[scheme]
    other = num_chunk_types
    segs, start, in_chunk, tag, typ = [], 0, False, -1, other
    for k, lab in enumerate(labels):
        prev_tag, prev_type = tag, typ
        if lab > num_chunk_types * n_tags:
            raise ValueError(f"chunk_eval: label {lab} exceeds num_chunk_types * tag types ({num_chunk_types * n_tags})")
        tag, typ = int(lab) % n_tags, int(lab) // n_tags
        if in_chunk and _chunk_end(prev_tag, prev_type, tag, typ, other, b, i, e, s):
            segs.append((start, k - 1, prev_type))
            in_chunk = False
        if _chunk_begin(prev_tag, prev_type, tag, typ, other, b, i, e, s):
            start, in_chunk = k, True
    if in_chunk:
        segs.append((start, len(labels) - 1, typ))
    return segs


def _chunk_shape(op):
    for slot in ("Precision", "Recall", "F1-Score"):
        set_out(op, slot, [1], "float32")
    for slot in ("NumInferChunks", "NumLabelChunks", "NumCorrectChunks"):
        set_out(op, slot, [1], "int64")


@register_op("chunk_eval", infer_shape=_chunk_shape)
def chunk_eval(ctx):
    scheme = ctx.attr("chunk_scheme", "IOB")
    if scheme not in _SCHEMES:
        raise ValueError(f"chunk_eval: chunk_scheme must be one of {list(_SCHEMES)}, got {scheme!r}")
    types = int(ctx.attr("num_chunk_types"))
    excluded = {int(t) for t in ctx.attr("excluded_chunk_types", []) or []}
    inf = _host(ctx, ctx.input("Inference")).reshape(-1).astype(np.int64)
    lab = _host(ctx, ctx.input("Label")).reshape(-1).astype(np.int64)
    if ctx.has_input("SeqLength"):
        lengths = _host(ctx, ctx.input("SeqLength")).reshape(-1).astype(np.int64)
        width = ctx.input("Inference").shape[1]
        seqs = [(k * width, k * width + int(n)) for k, n in enumerate(lengths)]
    else:
        lod = ctx.input_lod("Inference")
        if not lod:
            raise GraphError("chunk_eval: Inference needs a LoD (sequences) or a SeqLength input")
        seqs = [(int(lod[0][k]), int(lod[0][k + 1])) for k in range(len(lod[0]) - 1)]
    n_inf = n_lab = n_ok = 0
    for a, b in seqs:
        out_segs = [g for g in _segments(inf[a:b], types, scheme) if g[2] not in excluded]
        lab_segs = [g for g in _segments(lab[a:b], types, scheme) if g[2] not in excluded]
        n_inf += len(out_segs)
        n_lab += len(lab_segs)
        n_ok += len(set(out_segs) & set(lab_segs))
    precision = n_ok / n_inf if n_inf else 0.0
    recall = n_ok / n_lab if n_lab else 0.0
    f1 = 2 * precision * recall / (precision + recall) if n_ok else 0.0
    xp = ctx.xp
    for slot, v in (("Precision", precision), ("Recall", recall), ("F1-Score", f1)):
        ctx.set_output(slot, xp.asarray([v], dtype=np.float32))
    for slot, v in (("NumInferChunks", n_inf), ("NumLabelChunks", n_lab), ("NumCorrectChunks", n_ok)):
        ctx.set_output(slot, xp.asarray([v], dtype=np.int64))
