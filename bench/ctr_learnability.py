"""How learnable is the synthetic CTR set? Prints AUCs after one epoch.

Trains, in plain numpy, (1) logistic regression on one-hot ids + raw dense
values and (2) the CTR model of the examples — 26 average-pooled embeddings of dim 16
plus the 13 dense values into an MLP 256-128-1 — for one pass over N examples,
then prints their test AUC beside the Bayes-optimal AUC of the hidden model's
true probabilities on the same test examples.

    .venv/bin/python bench/ctr_learnability.py --examples 1000000
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from psjob.dataset import ctr
from psjob.dataset.ctr import _layout as L


def flat_tokens(ex, lo, hi):
    """Rows [lo, hi): global ids, their group (row*26+slot) and 1/len weights."""
    lengths = ex.lengths[lo:hi]
    groups, ids, weights = [], [], []
    for s in range(L.NUM_SLOTS):
        off = ex.offsets(s)
        seg = ex.ids[s][off[lo]:off[hi]] + L.SLOT_OFFSETS[s]
        rows = np.repeat(np.arange(hi - lo), lengths[:, s])
        groups.append(rows * L.NUM_SLOTS + s)
        ids.append(seg)
        weights.append(1.0 / np.repeat(lengths[:, s], lengths[:, s]))
    g = np.concatenate(groups)
    order = np.argsort(g, kind="stable")
    return g[order], np.concatenate(ids)[order], np.concatenate(weights)[order]


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.clip(x, -40, 40)))


class Logistic:
    def __init__(self, lr=0.05):
        self.w = np.zeros(L.SPARSE_FEATURE_DIM)
        self.gw = np.full(L.SPARSE_FEATURE_DIM, 1e-6)
        self.v = np.zeros(L.NUM_DENSE + 1)
        self.gv = np.full(L.NUM_DENSE + 1, 1e-6)
        self.lr = lr

    def score(self, ex, lo, hi):
        g, ids, wt = flat_tokens(ex, lo, hi)
        dense = np.hstack([ex.dense[lo:hi], np.ones((hi - lo, 1))])
        sparse = np.bincount(g // L.NUM_SLOTS, weights=self.w[ids] * wt, minlength=hi - lo)
        return dense @ self.v + sparse, (g, ids, wt, dense)

    def step(self, ex, lo, hi):
        logit, (g, ids, wt, dense) = self.score(ex, lo, hi)
        err = (sigmoid(logit) - ex.label[lo:hi]) / (hi - lo)
        grad = np.bincount(ids, weights=err[g // L.NUM_SLOTS] * wt, minlength=len(self.w))
        self.gw += grad ** 2
        self.w -= self.lr * grad / np.sqrt(self.gw)
        gd = dense.T @ err
        self.gv += gd ** 2
        self.v -= self.lr * gd / np.sqrt(self.gv)


class EmbeddingMLP:
    """26 x dim-16 average-pooled embeddings + dense -> 256 -> 128 -> 1.

    Adam (lr 1e-3) on the MLP; Adagrad on embedding rows touched per batch.
    """

    def __init__(self, rng, dim=16, hidden=(256, 128), lr=1e-3, emb_lr=0.05):
        self.dim = dim
        self.emb = rng.normal(0, 0.01, (L.SPARSE_FEATURE_DIM, dim))
        self.emb_g2 = np.full(L.SPARSE_FEATURE_DIM, 1e-6)
        sizes = [L.NUM_SLOTS * dim + L.NUM_DENSE, *hidden, 1]
        self.params = []
        for a, b in zip(sizes[:-1], sizes[1:]):
            self.params += [rng.normal(0, np.sqrt(2.0 / a), (a, b)), np.zeros(b)]
        self.m = [np.zeros_like(p) for p in self.params]
        self.v = [np.zeros_like(p) for p in self.params]
        self.t = 0
        self.lr, self.emb_lr = lr, emb_lr

    def forward(self, ex, lo, hi):
        g, ids, wt = flat_tokens(ex, lo, hi)
        starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
        pooled = np.add.reduceat(self.emb[ids] * wt[:, None], starts, axis=0)
        x = np.hstack([pooled.reshape(hi - lo, -1), ex.dense[lo:hi]])
        acts = [x]
        for i in range(0, len(self.params), 2):
            x = x @ self.params[i] + self.params[i + 1]
            if i + 2 < len(self.params):
                x = np.maximum(x, 0)
            acts.append(x)
        return acts, (g, ids, wt)

    def step(self, ex, lo, hi):
        acts, (g, ids, wt) = self.forward(ex, lo, hi)
        delta = (sigmoid(acts[-1][:, 0]) - ex.label[lo:hi])[:, None] / (hi - lo)
        grads = [None] * len(self.params)
        for i in range(len(self.params) - 2, -1, -2):
            grads[i] = acts[i // 2].T @ delta
            grads[i + 1] = delta.sum(axis=0)
            delta = delta @ self.params[i].T
            if i > 0:
                delta *= acts[i // 2] > 0
        self.t += 1
        b1, b2 = 0.9, 0.999
        for p, gr, m, v in zip(self.params, grads, self.m, self.v):
            m *= b1
            m += (1 - b1) * gr
            v *= b2
            v += (1 - b2) * gr * gr
            p -= self.lr * (m / (1 - b1 ** self.t)) / (np.sqrt(v / (1 - b2 ** self.t)) + 1e-8)
        dpooled = delta[:, :L.NUM_SLOTS * self.dim].reshape(-1, self.dim)
        group_index = np.cumsum(np.r_[True, g[1:] != g[:-1]]) - 1
        token_grad = dpooled[group_index] * wt[:, None]
        uniq, inv = np.unique(ids, return_inverse=True)
        rows = np.zeros((len(uniq), self.dim))
        np.add.at(rows, inv, token_grad)
        self.emb_g2[uniq] += (rows ** 2).mean(axis=1)
        self.emb[uniq] -= self.emb_lr * rows / np.sqrt(self.emb_g2[uniq])[:, None]

    def score(self, ex, lo, hi):
        return self.forward(ex, lo, hi)[0][-1][:, 0], None


def evaluate(model, ex, batch=8192):
    scores = np.concatenate([model.score(ex, lo, min(lo + batch, len(ex)))[0]
                             for lo in range(0, len(ex), batch)])
    return ctr.roc_auc(ex.label, scores)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=1_000_000)
    ap.add_argument("--test", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--models", default="lr,mlp")
    args = ap.parse_args()
    t0 = time.perf_counter()
    train = ctr.sample(args.seed, args.examples)
    test = ctr.sample(args.seed, args.test, start=args.examples)
    print(f"sampled {args.examples} + {args.test} examples in {time.perf_counter() - t0:.1f}s; "
          f"positive rate {train.label.mean():.3f}")
    print(f"Bayes-optimal AUC (true probabilities, test): {ctr.expected_auc(test.prob):.4f}; "
          f"empirical AUC of the true probabilities: {ctr.roc_auc(test.label, test.prob):.4f}")
    rng = np.random.default_rng(args.seed)
    for name in args.models.split(","):
        model = Logistic() if name == "lr" else EmbeddingMLP(rng)
        t0 = time.perf_counter()
        for lo in range(0, len(train), args.batch):
            model.step(train, lo, min(lo + args.batch, len(train)))
        print(f"{name}: test AUC after one epoch {evaluate(model, test):.4f} "
              f"(trained in {time.perf_counter() - t0:.0f}s)")


if __name__ == "__main__":
    main()
