"""Where a sparse table's lookup and update time goes, per part, at growing table sizes.

    .venv/bin/python bench/sparse_table_parts.py --scale 10000000,50000000

The companion of ``bench/sparse_table.py --scale`` (same table: dim 16,
Adagrad, random 64-bit ids inserted in random order; same Zipf(1.1) stream of
64K-id batches): it answers which part of a lookup or an update grows with
the table. Per batch, in the order a lookup and a push run them, each part
on rows this batch has not touched yet (so each pays its own cache and TLB
misses; a part timed later on the same rows would read warm lines):

    lookup batch:  index find  -> values gather (the table's take_rows)  -> whole lookup (warm)
    update batch:  index find  -> duplicate merge (merge_rows)  -> optimizer apply (gather, math, scatter)

printed as CPU milliseconds per 64K batch, next to the stream's distinct-id
share, the index load, and how much of the process's memory is on
transparent huge pages (TLB reach: a random row access outside it walks
the page tables).
"""
from __future__ import annotations

import argparse
import gc
import os
import time

import numpy as np

from psjob.foundation.kernels.rows import take_rows
from psjob.foundation.tables import OptimizerConfig, SparseTable, TableConfig
from psjob.foundation.tables.rowopt import merge_rows


def smaps_rollup(key: str) -> int:
    with open("/proc/self/smaps_rollup") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def cpu(fn):
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def parts_at(n, args):
    rng = np.random.default_rng(args.seed)
    ids = np.unique(rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, size=n + n // 1000 + 16,
                                 dtype=np.int64, endpoint=True))[:n]
    ids = ids[rng.permutation(ids.size)]
    table = SparseTable(TableConfig("bench", 16, seed=args.seed,
                                    optimizer=OptimizerConfig("adagrad", lr=0.01, hyper={"epsilon": 1e-6})))
    for start in range(0, ids.size, args.batch):
        table.lookup(ids[start:start + args.batch])
    count = args.warmup + 2 * args.batches
    ranks = rng.zipf(args.zipf, size=args.batch * count * 2) - 1
    stream = ids[ranks[ranks < ids.size][:args.batch * count]]
    batches = [stream[i * args.batch:(i + 1) * args.batch] for i in range(count)]
    grads = rng.standard_normal((args.batch, 16), dtype=np.float32)
    for b in batches[:args.warmup]:
        table.lookup(b), table.push(b, grads)
    # The parts are the table's own steps, called on its internals: this is a profile, not an API.
    index, cols, optimizer = table._index, table._storage.cols, table._optimizer
    spent = dict.fromkeys(["find", "gather", "lookup", "find ", "merge", "apply"], 0.0)
    distinct = 0
    for b in batches[args.warmup:args.warmup + args.batches]:
        dt, (rows, _) = cpu(lambda: index.find(b))
        spent["find"] += dt
        rows = np.ascontiguousarray(rows)
        spent["gather"] += cpu(lambda: take_rows(cols["value"], rows))[0]
        spent["lookup"] += cpu(lambda: table.lookup(b))[0]
    for b in batches[args.warmup + args.batches:]:
        dt, (rows, _) = cpu(lambda: index.find(b))
        spent["find "] += dt
        rows = np.ascontiguousarray(rows)
        dt, (unique, summed) = cpu(lambda: merge_rows(rows, grads, cols["first_pos"]))
        spent["merge"] += dt
        distinct += unique.size
        spent["apply"] += cpu(lambda: optimizer.apply(cols, unique, summed, 0.01))[0]
    ms = {k: 1e3 * v / args.batches for k, v in spent.items()}
    print(f"{n:>12,}  lookup: find {ms['find']:.2f}, gather {ms['gather']:.2f}, whole (warm) {ms['lookup']:.2f};"
          f"  update: find {ms['find ']:.2f}, merge {ms['merge']:.2f}, apply {ms['apply']:.2f};"
          f"  distinct {distinct / args.batches / args.batch:.2f}, index load {len(index) / index.capacity:.3f},"
          f" THP {smaps_rollup('AnonHugePages') / 2**30:.1f} of {smaps_rollup('Rss') / 2**30:.1f} GiB;"
          f" load {os.getloadavg()[0]:.1f}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", default="10000000,50000000", help="comma-separated row counts")
    p.add_argument("--batch", type=int, default=65536)
    p.add_argument("--batches", type=int, default=48, help="batches timed for lookup, and others for update")
    p.add_argument("--warmup", type=int, default=8)
    p.add_argument("--zipf", type=float, default=1.1)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    print("CPU ms per 64K-id batch, dim 16, adagrad, Zipf(%.1f) stream" % args.zipf)
    for n in (int(v) for v in args.scale.split(",")):
        parts_at(n, args)
        gc.collect()


if __name__ == "__main__":
    main()
