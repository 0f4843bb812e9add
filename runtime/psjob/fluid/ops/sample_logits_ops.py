"""`sample_logits`: the sampling half of sampled softmax (Jean et al., 2015), as Paddle 1.8's op
behind fluid.layers.sampled_softmax_with_cross_entropy, with its gradient.

Logits [N, K], Labels [N, T]. Samples [N, T + S]: each row's T labels, then S negatives — with
use_customized_samples, CustomizedSamples (whole rows, labels first) and CustomizedProbabilities;
otherwise S distinct classes drawn once for the whole batch from the log-uniform distribution
P(k) = log((k + 2) / (k + 1)) / log(K) (Paddle's LogUniformSampler over range K - 1), each class's probability then being that of appearing
in the draws made: 1 - (1 - P(k))^tries (Paddle's SampleWithProb with uniq). SampledLogits =
Logits[i, Samples[i, j]] - log(Probabilities[i, j]), less 1e20 where a negative hits one of the
row's labels (remove_accidental_hits). SampledLabels [N, T] = 0 .. T - 1.
"""
from __future__ import annotations

import numpy as np

from psjob.fluid.core import scatter_add
from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, set_out


def _host(xp, a):
    return np.asarray(a if xp is np else xp.asnumpy(a))


def _shape(op):
    logits, labels = in_var(op, "Logits"), in_var(op, "Labels")
    if len(logits.shape) != 2 or len(labels.shape) != 2:
        raise GraphError(f"sample_logits: Logits {logits.name}{list(logits.shape)} and Labels "
                         f"{labels.name}{list(labels.shape)} must be 2-D")
    width = labels.shape[1] + int(op.attr("num_samples", 0))
    set_out(op, "SampledLogits", (logits.shape[0], width), logits.dtype)
    set_out(op, "SampledLabels", (logits.shape[0], labels.shape[1]), "int64")
    if not op.attr("use_customized_samples", False):
        set_out(op, "Samples", (logits.shape[0], width), "int64")
        set_out(op, "Probabilities", (logits.shape[0], width), logits.dtype)


def _log_uniform_unique(rng, classes, count):
    """count distinct classes drawn log-uniformly, and how many draws that took."""
    if count > max(classes - 1, 1):
        raise ValueError(f"sample_logits: num_samples {count} exceeds the {max(classes - 1, 1)} classes the sampler draws")
    seen, tries = [], 0
    chosen = set()
    log_range = np.log(float(classes))
    while len(seen) < count:
        tries += 1
        k = (int(np.exp(rng.uniform() * log_range)) - 1) % max(classes - 1, 1)
        if k not in chosen:
            chosen.add(k)
            seen.append(k)
    return np.asarray(seen, dtype=np.int64), tries


def _samples(ctx, logits, labels):
    xp = ctx.xp
    if ctx.attr("use_customized_samples", False):
        samples = _host(xp, ctx.input("CustomizedSamples")).astype(np.int64)
        probs = _host(xp, ctx.input("CustomizedProbabilities")).astype(np.float64)
        return samples, probs
    classes, rows = logits.shape[1], logits.shape[0]
    seed = int(ctx.attr("seed", 0))
    rng = np.random.default_rng(seed if seed else None)
    negatives, tries = _log_uniform_unique(rng, classes, int(ctx.attr("num_samples")))
    samples = np.concatenate([labels, np.tile(negatives, (rows, 1))], axis=1)
    p = np.log((samples + 2.0) / (samples + 1.0)) / np.log(float(classes))
    return samples, -np.expm1(tries * np.log1p(-p))


@register_op("sample_logits", infer_shape=_shape, grad=lambda op: [GradOpSpec(
    "sample_logits_grad", {"Logits": op.input("Logits"), "Samples": op.output("Samples") or op.input("CustomizedSamples"),
                           "SampledLogits@GRAD": [grad_name(op.output("SampledLogits")[0])]},
    {"Logits@GRAD": [grad_name(op.input("Logits")[0])]}, dict(op.attrs))],
    no_grad_inputs=("Labels", "CustomizedSamples", "CustomizedProbabilities"))
def sample_logits(ctx):
    xp, logits = ctx.xp, ctx.input("Logits")
    labels = _host(xp, ctx.input("Labels")).astype(np.int64).reshape(logits.shape[0], -1)
    samples, probs = _samples(ctx, logits, labels)
    if samples.shape[0] != logits.shape[0] or samples.min() < 0 or samples.max() >= logits.shape[1]:
        raise ValueError(f"sample_logits: Samples must hold one row of classes in [0, {logits.shape[1]}) per "
                         "row of Logits")
    true = labels.shape[1]
    picked = np.take_along_axis(_host(xp, logits).astype(np.float64), samples, axis=1) - np.log(probs)
    if ctx.attr("remove_accidental_hits", True):
        hits = (samples[:, true:, None] == labels[:, None, :]).any(axis=2)
        picked[:, true:] -= np.where(hits, 1e20, 0.0)
    out = picked.astype(logits.dtype)
    ctx.set_output("SampledLogits", out if xp is np else xp.asarray(out))
    ctx.set_output("SampledLabels", xp.asarray(np.tile(np.arange(true, dtype=np.int64), (logits.shape[0], 1))))
    if ctx.has_output("Samples") and not ctx.attr("use_customized_samples", False):
        ctx.set_output("Samples", xp.asarray(samples))
        ctx.set_output("Probabilities", xp.asarray(probs.astype(logits.dtype)))


@register_op("sample_logits_grad")
def sample_logits_grad(ctx):
    xp, logits, dout = ctx.xp, ctx.input("Logits"), ctx.input("SampledLogits@GRAD")
    samples = ctx.input("Samples")
    rows = xp.repeat(xp.arange(logits.shape[0]), samples.shape[1])
    flat = rows * logits.shape[1] + samples.reshape(-1)
    dx = xp.zeros(logits.size, dtype=dout.dtype)
    scatter_add(xp, dx, flat, dout.reshape(-1))
    ctx.set_output("Logits@GRAD", dx.reshape(logits.shape))
