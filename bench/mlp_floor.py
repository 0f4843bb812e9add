"""The CTR-DNN's floor on this machine: CPU-s per 1M examples of its MLP's matrix products alone.

    python bench/mlp_floor.py [--batch 1024] [--slots 26] [--dim 16] [--dense 13] [--hidden 256,128]

Forward and backward of the fully connected layers (x @ W, dY @ W.T, x.T @ dY per layer, the
1-unit output layer included), one BLAS thread, float32, on random data — what any
trainer of this model must compute per example whatever its framework. A trainer's CPU per
1M examples minus this is its framework's (and its parameter server's) overhead.
bench/peer_tf.py prints it before and after its runs, beside the distributed overhead.

Each product writes into a buffer allocated once: a loop that allocates its outputs afresh
makes glibc hand the freed megabytes back to the kernel at the end of every step and fault
them in again on the next, which cost 2.3–2.9 ms per 1024-example step on the AMD EPYC
machine (13.2–13.7 against 10.4–10.8 CPU-s per 1M) — an allocator's cost, not the model's.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np


def floor_cpu_s_per_1m(batch: int = 1024, slots: int = 26, dim: int = 16, dense: int = 13,
                       hidden=(256, 128), seconds: float = 2.0) -> float:
    """CPU-seconds per 1M examples of the MLP's forward + backward matrix products."""
    rng = np.random.default_rng(0)
    sizes = [slots * dim + dense, *hidden, 1]
    weights = [rng.standard_normal((a, b), dtype=np.float32) * 0.05 for a, b in zip(sizes, sizes[1:])]
    x0 = rng.standard_normal((batch, sizes[0]), dtype=np.float32)

    acts = [x0] + [np.empty((batch, n), np.float32) for n in sizes[1:]]
    weight_grads = [np.empty_like(w) for w in weights]
    input_grads = [np.empty((batch, n), np.float32) for n in sizes[:-1]]
    out_grad = np.ones((batch, 1), np.float32)

    def step():
        for i, w in enumerate(weights):
            np.matmul(acts[i], w, out=acts[i + 1])
        grad = out_grad
        for i in range(len(weights) - 1, -1, -1):
            np.matmul(acts[i].T, grad, out=weight_grads[i])        # the weight's gradient
            grad = np.matmul(grad, weights[i].T, out=input_grads[i])  # the input's gradient

    for _ in range(5):
        step()
    steps, c0, t0 = 0, time.process_time(), time.perf_counter()
    while time.perf_counter() - t0 < seconds or steps < 20:
        step()
        steps += 1
    return (time.process_time() - c0) / (steps * batch) * 1e6


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--slots", type=int, default=26)
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--dense", type=int, default=13)
    ap.add_argument("--hidden", default="256,128")
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args(argv)
    hidden = tuple(int(h) for h in args.hidden.split(","))
    value = floor_cpu_s_per_1m(args.batch, args.slots, args.dim, args.dense, hidden, args.seconds)
    print(f"MLP floor ({args.slots}x{args.dim}+{args.dense} -> {'-'.join(map(str, hidden))}-1, batch {args.batch}, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}): {value:.2f} CPU-s per 1M examples")


if __name__ == "__main__":
    main()
