"""Single-process CTR training speed: examples/s and the executor's own overhead.

    python bench/local_train.py [--examples 100000] [--batch 1024] [--optimizer adam]

Generates the synthetic CTR set (cached under --data), builds the CTR-DNN
(26 slots × dim 16 + 13 dense → 256-128-1), trains one pass and prints:
examples/s, ms per batch, and the split of each batch into kernel time (per op
type, measured by the executor) and executor overhead (everything else in
Executor.run: feeding, dispatch, fetch). Data reading is timed separately.
"""
from __future__ import annotations

import argparse
import os
import time

import psjob.fluid as fluid
from psjob.dataset import ctr
from psjob.training.models import ctr as ctr_model


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--examples", type=int, default=100_000)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--optimizer", default="adam")
    p.add_argument("--data", default="/tmp/psjob-bench-ctr")
    p.add_argument("--top", type=int, default=12)
    args = p.parse_args()

    data_dir = os.path.join(args.data, f"dense-{args.examples}")
    if not os.path.exists(os.path.join(data_dir, ctr.shard_name(0))):
        ctr.generate(data_dir, num_examples=args.examples, num_files=1, seed=0, id_mode="dense",
                     overwrite=True)
    t0 = time.perf_counter()
    batches = list(ctr.batches(data_dir, args.batch, drop_last=True))
    read_s = time.perf_counter() - t0

    cfg = ctr_model.CTRConfig(sparse_feature_dim=ctr.SPARSE_FEATURE_DIM, optimizer=args.optimizer)
    main_prog, startup = fluid.Program(), fluid.Program()
    model = ctr_model.build(cfg, main_prog, startup)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    feeds = [ctr_model.feed_dict(model, b) for b in batches]

    # Warm-up batch (compiles the program), then the timed pass with kernel timing on.
    exe.run(main_prog, feed=feeds[0], fetch_list=[model.loss], scope=scope)
    exe.collect_timing = True
    exe.kernel_seconds.clear()
    t0 = time.perf_counter()
    for feed in feeds[1:]:
        loss, auc = exe.run(main_prog, feed=feed, fetch_list=[model.loss, model.auc], scope=scope)
    wall = time.perf_counter() - t0
    n_batches = len(feeds) - 1
    kernel = sum(exe.kernel_seconds.values())
    examples = n_batches * args.batch
    print(f"CTR-DNN single process, batch {args.batch}, {args.optimizer}, {n_batches} batches, "
          f"{len(main_prog.global_block().ops)} ops per step")
    print(f"  examples/s            {examples / wall:12,.0f}")
    print(f"  ms per batch          {1e3 * wall / n_batches:12.2f}")
    print(f"  kernels ms/batch      {1e3 * kernel / n_batches:12.2f}")
    print(f"  executor overhead     {1e3 * (wall - kernel) / n_batches:12.2f} ms/batch "
          f"({1e6 * (wall - kernel) / n_batches / len(main_prog.global_block().ops):.1f} µs/op)")
    print(f"  data reading          {examples / max(read_s, 1e-9) * (n_batches + 1) / n_batches:12,.0f} examples/s "
          f"(parse, not in the figures above)")
    print(f"  final loss {float(loss[0]):.4f}, AUC {float(auc[0]):.4f}")
    print("  slowest kernels (ms/batch):")
    for name, sec in sorted(exe.kernel_seconds.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"    {name:<34}{1e3 * sec / n_batches:8.2f}")
    try:
        from threadpoolctl import threadpool_info
        print("  BLAS:", [(i.get("internal_api"), i.get("num_threads")) for i in threadpool_info()])
    except ImportError:
        pass


if __name__ == "__main__":
    main()
