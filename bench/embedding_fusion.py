"""The executor's fused embedding ops against the same program run op by op, side by side.

    python bench/embedding_fusion.py [--models ctr,paddlerec,onelookup] [--vocab 1000000] [--steps 60] [--pairs 2]

Two single-process models of the anchor's shape (26 slots of one table, dim 16,
13 dense features, fc 256-128, lazy Adam 1e-3, batch 1024) on the same
synthetic batches (Zipf ids):
- `ctr`: psjob.training.models.ctr, Fluid 1.x (embedding → sum sequence_pool → concat);
- `paddlerec`: examples/paddle2's DNN, Paddle 2.x as PaddleRec writes it
  (nn.Embedding → reshape to [-1, 16] → concat);
- `onelookup`: the Paddle anchor's local model: one nn.Embedding over the [-1, 26] concat
  of the slots, reshaped to [-1, 26 * 16], then the concat (rows of 26 ids each).
Each pair runs the program fused (the executor's default) and then op by op
(fetching one lookup's output keeps the executor from fusing), and prints per
training step: CPU-ms of this thread, the kernels' CPU-ms in total and on the
embedding path with the optimizer (the ops the fusion replaces, and Adam).
The first 5 steps of a run are warm-up.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import psjob.fluid as fluid

HERE = os.path.dirname(os.path.abspath(__file__))
SLOTS, DIM, DENSE, BATCH, WARMUP = 26, 16, 13, 1024, 5
EMBEDDING_PATH = {"embedding_pool", "embedding_pool_grad", "adam", "lookup_table", "lookup_table_grad", "sum",
                  "sequence_pool", "sequence_pool_grad", "concat", "concat_grad", "reshape2", "reshape2_grad",
                  "unsqueeze2", "unsqueeze2_grad"}


def ctr_program(vocab):
    from psjob.training.models import ctr as ctr_model
    main, startup = fluid.Program(), fluid.Program()
    model = ctr_model.build(ctr_model.CTRConfig(sparse_feature_dim=vocab, is_distributed=False), main, startup)
    lookup = next(op for op in main.global_block().ops if op.type == "lookup_table")

    def feed(label, dense, ids):
        lod = [np.arange(BATCH + 1, dtype=np.int64)]
        out = {model.dense.name: dense, model.label.name: label}
        for s, var in enumerate(model.slots):
            out[var.name] = (np.ascontiguousarray(ids[:, s:s + 1]), lod)
        return out
    return main, startup, model.loss, lookup.output("Out")[0], feed


def paddlerec_program(vocab):
    sys.path.insert(0, os.path.join(HERE, "..", "examples", "paddle2"))
    from static_model import StaticModel

    import psjob as paddle
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), fluid.unique_name.guard():
        model = StaticModel({"sparse_feature_number": vocab, "sparse_feature_dim": DIM, "dense_input_dim": DENSE,
                             "sparse_inputs_slots": SLOTS + 1, "fc_sizes": [256, 128], "learning_rate": 0.001,
                             "model": "dnn"})
        model.net(model.create_feeds())
        model.create_optimizer()
    lookup = next(op for op in main.global_block().ops if op.type == "lookup_table")

    def feed(label, dense, ids):
        out = {"label": label, "dense_input": dense}
        for s in range(SLOTS):
            out[f"C{s + 1}"] = np.ascontiguousarray(ids[:, s:s + 1])
        return out
    return main, startup, model._cost, lookup.output("Out")[0], feed


def onelookup_program(vocab):
    import psjob as paddle
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), fluid.unique_name.guard():
        dense = paddle.static.data("dense_input", [-1, DENSE], "float32")
        slots = [paddle.static.data(f"C{s}", [-1, 1], "int64") for s in range(SLOTS)]
        label = paddle.static.data("label", [-1, 1], "int64")
        table = paddle.nn.Embedding(vocab, DIM, sparse=True, weight_attr=paddle.ParamAttr(
            initializer=paddle.nn.initializer.Uniform(-0.01, 0.01)))
        emb = table(paddle.concat(slots, axis=1))
        x = paddle.concat([dense, paddle.reshape(emb, [-1, SLOTS * DIM])], axis=1)
        for width in (256, 128):
            x = paddle.static.nn.fc(x, width, activation="relu")
        logit = paddle.static.nn.fc(x, 1)
        loss = paddle.mean(paddle.nn.functional.binary_cross_entropy_with_logits(
            logit, paddle.cast(label, "float32")))
        paddle.optimizer.Adam(learning_rate=0.001, lazy_mode=True).minimize(loss)

    def feed(label_v, dense_v, ids):
        out = {"label": label_v, "dense_input": dense_v}
        for s in range(SLOTS):
            out[f"C{s}"] = np.ascontiguousarray(ids[:, s:s + 1])
        return out
    return main, startup, loss, emb.name, feed


def batches(steps, vocab, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        yield (rng.integers(0, 2, (BATCH, 1)).astype(np.int64), rng.normal(size=(BATCH, DENSE)).astype(np.float32),
               (rng.zipf(1.3, (BATCH, SLOTS)) % vocab).astype(np.int64))


def run(build, vocab, steps, op_by_op):
    main, startup, loss, lookup_out, feed_of = build(vocab)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    feeds = [feed_of(*b) for b in batches(steps, vocab)]
    fetch = [loss] + ([lookup_out] if op_by_op else [])
    for feed in feeds[:WARMUP]:
        exe.run(main, feed=feed, fetch_list=fetch, scope=scope)
    exe.collect_timing, exe.timing_clock = True, time.thread_time
    exe.kernel_seconds.clear()
    c0 = time.thread_time()
    for feed in feeds[WARMUP:]:
        exe.run(main, feed=feed, fetch_list=fetch, scope=scope)
    n = len(feeds) - WARMUP
    kernels = {op: 1e3 * s / n for op, s in exe.kernel_seconds.items()}
    fused = "embedding_pool" in kernels
    if fused == op_by_op:
        raise RuntimeError(f"expected the {'op-by-op' if op_by_op else 'fused'} run, the executor ran "
                           f"{sorted(kernels)}")
    return {"cpu_ms": 1e3 * (time.thread_time() - c0) / n, "kernels": sum(kernels.values()),
            "path": sum(v for op, v in kernels.items() if op in EMBEDDING_PATH)}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="ctr,paddlerec,onelookup")
    p.add_argument("--vocab", type=int, default=1_000_000, help="table rows")
    p.add_argument("--steps", type=int, default=60, help="steps per run, warm-up included")
    p.add_argument("--pairs", type=int, default=2)
    args = p.parse_args()
    builds = {"ctr": ctr_program, "paddlerec": paddlerec_program, "onelookup": onelookup_program}
    print(f"{SLOTS} slots x dim {DIM} of a {args.vocab:,}-row table + {DENSE} dense, fc 256-128, lazy Adam, "
          f"batch {BATCH}; {args.steps - WARMUP} timed steps per run; CPU-ms per step (this thread)")
    for name in args.models.split(","):
        rows = {"fused": [], "op by op": []}
        for _ in range(args.pairs):
            rows["fused"].append(run(builds[name], args.vocab, args.steps, op_by_op=False))
            rows["op by op"].append(run(builds[name], args.vocab, args.steps, op_by_op=True))
        for label, runs in rows.items():
            cells = "  ".join(f"{key} {' / '.join(f'{r[key]:.2f}' for r in runs)}" for key in ("cpu_ms", "kernels", "path"))
            print(f"{name:10s} {label:9s} {cells}")
        ratio = [f["cpu_ms"] / o["cpu_ms"] for f, o in zip(rows["fused"], rows["op by op"])]
        print(f"{name:10s} fused / op by op, CPU per step (same pair): {' / '.join(f'{r:.2f}' for r in ratio)}")


if __name__ == "__main__":
    main()
