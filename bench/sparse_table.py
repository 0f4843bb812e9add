"""Benchmark: psjob SparseTable against a pre-sized numpy array, in one process.

    .venv/bin/python bench/sparse_table.py                 # 10M rows x dim 16
    .venv/bin/python bench/sparse_table.py --rows 100000000  # if memory allows
    .venv/bin/python bench/sparse_table.py --scale 10000000,50000000  # table alone at 10M and 50M, interleaved

Steps: draw ``--rows`` distinct random 64-bit ids; insert them all (in random
order, ``--batch`` ids per lookup(create=True)) and time it; then draw a
Zipf(``--zipf``) stream over those ids (hot ids at random positions of the
table), run ``--warmup`` batches untimed, and time the next batches, each
batch once per method, interleaved so both see the same machine:

* lookup (``--batches`` batches):  ``table.lookup(ids)``  vs
  ``np.take(values, rows, axis=0)``;
* update (``--batches`` further batches):  ``table.push(ids, grads)``  vs
  gather / adagrad / fancy-index scatter on the same rows (duplicates not
  merged: the plain fancy-index update the issue names; a variant that
  merges duplicates first is printed too).

Every timed batch is new to the table, as in a real stream (ids it has not
seen are not yet moved to their home slots). The baseline is handed the row
of every id for free (the table's own rows), so the difference is exactly
the id -> row mapping and duplicate merging. Targets are judged on CPU time
of this single-threaded process, which time-slicing with other processes on
a shared machine does not inflate; wall-clock rates are printed beside them.
Memory: the table's resident estimate (TableStats.bytes) and the growth of
the process RSS while the table filled, per row, against the raw bytes of
id + values + optimizer state.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np

from psjob.foundation.kernels.optimizers import adagrad_update, merge_duplicate_rows
from psjob.foundation.tables import OptimizerConfig, SparseTable, TableConfig
from psjob.foundation.tables.rowopt import merge_rows

LR, EPS = 0.01, 1e-6


def rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def mem_available() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=10_000_000, help="distinct ids in the table")
    p.add_argument("--dim", type=int, default=16)
    p.add_argument("--batch", type=int, default=65536, help="ids per lookup/push")
    p.add_argument("--batches", type=int, default=48, help="stream batches timed for lookup, and again for update")
    p.add_argument("--warmup", type=int, default=8, help="stream batches run before timing")
    p.add_argument("--zipf", type=float, default=1.1, help="Zipf exponent of the id stream")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--force", action="store_true", help="run even if the memory estimate exceeds MemAvailable")
    p.add_argument("--scale", help="comma-separated row counts, e.g. 10000000,50000000: the table alone "
                   "(no numpy baseline) at each size, all tables built first, then timed interleaved: CPU "
                   "lookup/update rates and bytes per row next to the first size's (the 50M-row check of "
                   "target: ~12 GiB for 10M + 50M)")
    return p.parse_args(argv)


def timed(fn) -> float:
    """CPU seconds of one call."""
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def timings(fns, batches):
    """Per fn, (CPU seconds, wall seconds) summed over ``batches``; each batch
    is timed once per fn, the fns interleaved (order alternating per batch)."""
    cpu = np.zeros(len(fns))
    wall = np.zeros(len(fns))
    for k, batch in enumerate(batches):
        order = range(len(fns)) if k % 2 == 0 else reversed(range(len(fns)))
        for f in order:
            c0, t0 = time.process_time(), time.perf_counter()
            fns[f](batch)
            wall[f] += time.perf_counter() - t0
            cpu[f] += time.process_time() - c0
    return cpu, wall


def table_at(n, args, rounds=1):
    """A table filled with n random ids, warmed on a Zipf stream over them, and the stream's
    batches for ``rounds`` timed rounds → (table, batches, grads, TableStats bytes/row, RSS
    growth/row while filling)."""
    rng = np.random.default_rng(args.seed)
    ids = np.unique(rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, size=n + n // 1000 + 16,
                                 dtype=np.int64, endpoint=True))[:n]
    ids = ids[rng.permutation(ids.size)]
    rss0 = rss_bytes()
    table = SparseTable(TableConfig("bench", args.dim, seed=args.seed,
                                    optimizer=OptimizerConfig("adagrad", lr=LR, hyper={"epsilon": EPS})))
    for start in range(0, ids.size, args.batch):
        table.lookup(ids[start:start + args.batch])
    rss_row = (rss_bytes() - rss0) / ids.size
    count = args.warmup + 2 * args.batches * rounds
    ranks = rng.zipf(args.zipf, size=args.batch * count * 2) - 1
    stream = ids[ranks[ranks < ids.size][:args.batch * count]]
    batches = [stream[i * args.batch:(i + 1) * args.batch] for i in range(count)]
    grads = rng.standard_normal((args.batch, args.dim), dtype=np.float32)
    for b in batches[:args.warmup]:
        table.lookup(b), table.push(b, grads)
    return table, batches, grads, table.stats().bytes / ids.size, rss_row


# Right after a large table is built the process's CPU rates stay low for a while (measured on
# the same 10M table: 28.0 M lookups/s before a 50M table was built next to it, 7.5 M/s just
# after, 29.7 M/s some ten seconds later), so every round is printed: read the last.
SCALE_ROUNDS = 2


def scale(args):
    """Every size's table built first and kept, then their batches timed interleaved (batch i of
    each size in turn, the order alternating): the rates compare under the same machine load,
    which on a shared machine moves CPU-time rates of memory-bound code by up to 2x."""
    sizes = [int(v) for v in args.scale.split(",")]
    raw_row = 8 + 8 * args.dim
    # Every table at ~1.5x raw, plus the largest one's last growth (its old columns, 2/3 of its rows,
    # alive while copied).
    need = sum(sizes) * raw_row * 1.5 + max(sizes) * raw_row * 0.7
    if need > mem_available() and not args.force:
        sys.exit(f"needs about {need / 2**30:.1f} GiB, MemAvailable is {mem_available() / 2**30:.1f} GiB;"
                 f" use smaller --scale sizes (or --force)")
    print(f"table alone, dim {args.dim}, adagrad, batches of {args.batch:,} ids, Zipf({args.zipf}); CPU rates,"
          f" the sizes timed interleaved")
    built = [table_at(n, args, SCALE_ROUNDS) for n in sizes]
    print(f"{'rows':>12} {'lookup rows/s':>14} {'update rows/s':>14} {'bytes/row':>10} {'RSS/row':>8} "
          f"{'x raw':>6}  rates vs the first size (target: within 20%)")
    for r in range(SCALE_ROUNDS):
        first = args.warmup + 2 * args.batches * r
        lookup_batches = range(first, first + args.batches)
        update_batches = range(first + args.batches, first + 2 * args.batches)
        look, _ = timings([lambda i, t=t, b=b: t.lookup(b[i]) for t, b, *_ in built], lookup_batches)
        upd, _ = timings([lambda i, t=t, b=b, g=g: t.push(b[i], g) for t, b, g, *_ in built], update_batches)
        look, upd = args.batch * args.batches / look, args.batch * args.batches / upd
        print(f"round {r + 1} of {SCALE_ROUNDS}")
        for k, (n, (_, _, _, bytes_row, rss_row)) in enumerate(zip(sizes, built)):
            mem = max(bytes_row, rss_row) / raw_row
            rates = "met" if min(look[k] / look[0], upd[k] / upd[0]) >= 0.8 else "MISSED"
            print(f"{n:>12,} {look[k] / 1e6:>12.2f} M {upd[k] / 1e6:>12.2f} M {bytes_row:>10.1f} {rss_row:>8.1f} "
                  f"{mem:>6.2f}  lookup {look[k] / look[0]:.2f}x, update {upd[k] / upd[0]:.2f}x ({rates}); "
                  f"memory <= 1.5x raw: {'met' if mem <= 1.5 else 'MISSED'}", flush=True)

def main(argv=None):
    args = parse_args(argv)
    if args.scale:
        return scale(args)
    n, dim, bs = args.rows, args.dim, args.batch
    raw_row = 8 + 4 * dim + 4 * dim                       # id + values + adagrad moment
    need = n * (raw_row * 1.6 + raw_row - 8 + 8 + 16)     # table, baseline arrays, ids, temporaries
    if need > mem_available() and not args.force:
        sys.exit(f"needs about {need / 2**30:.1f} GiB, MemAvailable is {mem_available() / 2**30:.1f} GiB;"
                 f" use fewer --rows (or --force)")
    rng = np.random.default_rng(args.seed)

    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, "
          f"numpy {np.__version__}, python {platform.python_version()}")
    print(f"table: {n:,} rows x dim {dim}, adagrad; batches of {bs:,} ids; Zipf({args.zipf}) stream")

    ids = np.unique(rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, size=n + n // 1000 + 16,
                                 dtype=np.int64, endpoint=True))[:n]
    ids = ids[rng.permutation(ids.size)]
    n = ids.size

    table = SparseTable(TableConfig("bench", dim, seed=args.seed,
                                    optimizer=OptimizerConfig("adagrad", lr=LR, hyper={"epsilon": EPS})))
    rss0 = rss_bytes()
    c0, t0 = time.process_time(), time.perf_counter()
    for start in range(0, n, bs):
        table.lookup(ids[start:start + bs])
    insert_s, insert_cpu = time.perf_counter() - t0, time.process_time() - c0
    rss_table = rss_bytes() - rss0
    stats = table.stats()
    assert stats.rows == n, stats

    # The Zipf stream: rank r is the r-th hottest id; ids[] is in random order.
    count = args.warmup + 2 * args.batches
    ranks = rng.zipf(args.zipf, size=bs * count * 2) - 1
    ranks = ranks[ranks < n][:bs * count]
    stream = ids[ranks]
    batches = [stream[i * bs:(i + 1) * bs] for i in range(count)]
    # The baseline's "already known" rows (read without moving ids home, so
    # the timed batches stay unseen by the table until they are timed).
    rows = [table._index.find(b, promote=False)[0].copy() for b in batches]
    grads = rng.standard_normal((bs, dim), dtype=np.float32)        # same values for every batch
    uniq = np.mean([np.unique(b).size / b.size for b in batches])

    base_values = np.empty((n, dim), np.float32)
    base_values[:] = 0.01
    base_moment = np.zeros((n, dim), np.float32)
    first_pos = np.empty(n, np.int32)                               # merge_rows scratch

    def base_lookup(i):
        return np.take(base_values, rows[i], axis=0)

    def table_lookup(i):
        return table.lookup(batches[i])

    def base_update(i):
        r, g = rows[i], grads
        p, m = np.take(base_values, r, axis=0), np.take(base_moment, r, axis=0)
        adagrad_update(np, p, g, m, lr=LR, epsilon=EPS)
        base_values[r] = p
        base_moment[r] = m

    def base_update_merged(i):
        r, g = merge_rows(rows[i], grads, first_pos)
        p, m = np.take(base_values, r, axis=0), np.take(base_moment, r, axis=0)
        adagrad_update(np, p, g, m, lr=LR, epsilon=EPS)
        base_values[r] = p
        base_moment[r] = m

    def table_update(i):
        table.push(batches[i], grads)

    warm = range(args.warmup)
    lookup_idx = list(range(args.warmup, args.warmup + args.batches))
    update_idx = list(range(args.warmup + args.batches, len(batches)))
    total = bs * args.batches
    for i in warm:                    # page faults; the hottest ids settle at home
        base_lookup(i), table_lookup(i), base_update(i), table_update(i), base_update_merged(i)
    index = table._index
    at_home = np.mean([np.mean(index._entries.take(index._home(batches[i]), axis=0)[:, 0] == batches[i])
                       for i in lookup_idx])                     # before these batches are seen
    look_cpu, look_wall = timings([table_lookup, base_lookup], lookup_idx)
    upd_cpu, upd_wall = timings([table_update, base_update, base_update_merged], update_idx)
    merge_ms = [min(timed(lambda: fn(np, rows[update_idx[0]], grads)) for _ in range(5)) * 1e3
                for fn in (merge_duplicate_rows, lambda xp, r, g: merge_rows(r, g, first_pos))]

    bytes_row = stats.bytes / n
    rss_row = rss_table / n
    rate = lambda secs: total / secs
    print(f"stream: {uniq:.0%} distinct ids per batch on average; {args.warmup} warm-up batches, then"
          f" {args.batches} timed batches for lookup and {args.batches} others for update")
    print()
    print(f"{'measure':34s} {'table':>14s} {'numpy baseline':>16s} {'ratio':>7s}  target")
    rows_fmt = [
        ("lookup rows/s", rate(look_cpu[0]), rate(look_cpu[1])),
        ("  (wall clock)", rate(look_wall[0]), rate(look_wall[1])),
        ("adagrad update rows/s", rate(upd_cpu[0]), rate(upd_cpu[1])),
        ("  (wall clock)", rate(upd_wall[0]), rate(upd_wall[1])),
        ("  (baseline merging duplicates)", rate(upd_cpu[0]), rate(upd_cpu[2])),
    ]
    verdicts = []
    for label, ours, base in rows_fmt:
        ratio = ours / base
        target = "" if label.startswith("  ") else ">= 0.50x"
        ok = ratio >= 0.5
        if target:
            verdicts.append((label, ok))
        print(f"{label:34s} {ours / 1e6:>12.2f} M {base / 1e6:>14.2f} M {ratio:>6.2f}x  "
              f"{target}{' ' + ('met' if ok else 'MISSED') if target else ''}")
    print(f"{'insert rows/s (lookup, create)':34s} {n / insert_cpu / 1e6:>12.2f} M"
          f"   (wall clock {n / insert_s / 1e6:.2f} M; growth included)")
    print(f"index: load {len(index) / index.capacity:.3f}, {index.overflow_size:,} ids in the overflow,"
          f" {at_home:.2%} of the timed lookups' ids at home before they were looked up")
    print(f"duplicate merge of one batch (CPU): kernels.merge_duplicate_rows {merge_ms[0]:.1f} ms,"
          f" tables merge_rows {merge_ms[1]:.1f} ms")
    mem_ratio = max(bytes_row, rss_row) / raw_row
    verdicts.append(("memory", mem_ratio <= 1.5))
    print(f"{'bytes/row: TableStats.bytes':34s} {bytes_row:>14.1f}")
    print(f"{'bytes/row: RSS growth':34s} {rss_row:>14.1f}")
    print(f"{'bytes/row: raw id+value+moment':34s} {raw_row:>14.1f} {'':>16s} {mem_ratio:>6.2f}x  "
          f"<= 1.50x {'met' if mem_ratio <= 1.5 else 'MISSED'}")
    print()
    print("all targets met" if all(ok for _, ok in verdicts)
          else "MISSED: " + ", ".join(label for label, ok in verdicts if not ok))


if __name__ == "__main__":
    main()
