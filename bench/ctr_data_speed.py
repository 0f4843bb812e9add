"""Speed of the synthetic CTR data path: generation, batch reading, per-example reading.

Generates N examples per id mode into a temporary directory, then reads them
back with `ctr.batches` (stacked numpy batches, the training path) and with
`ctr.reader` (Paddle-style, one example at a time). Prints examples/s by wall
clock and by this process's CPU time (the machine may be shared; CPU time is
the single-core figure). Everything runs in this one process and thread.

    .venv/bin/python bench/ctr_data_speed.py --examples 1000000
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

from psjob.dataset import ctr


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=1_000_000)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--modes", default="dense,hash")
    ap.add_argument("--repeat", type=int, default=3, help="read passes; the best is printed")
    args = ap.parse_args()
    for mode in args.modes.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            gen, wall, cpu = timed(lambda: ctr.generate(tmp, args.examples, args.files, 0, mode))
            size = sum(os.path.getsize(f) for f in gen.files)
            print(f"[{mode}] generate {args.examples} examples: {wall:.2f}s wall, {cpu:.2f}s cpu "
                  f"({args.examples / cpu:,.0f} ex/s cpu); {size / 2**20:.0f} MiB, "
                  f"{size / args.examples:.0f} B/example; bayes AUC {gen.bayes_auc:.4f}")
            best = None
            for _ in range(args.repeat):
                count, wall, cpu = timed(lambda: sum(
                    len(b) for b in ctr.batches(gen.files, args.batch, id_mode=mode)))
                best = (wall, cpu) if best is None or cpu < best[1] else best
            print(f"[{mode}] batches({args.batch}): {count / best[0]:,.0f} ex/s wall, "
                  f"{count / best[1]:,.0f} ex/s cpu")
            count, wall, cpu = timed(lambda: sum(1 for _ in ctr.reader(gen.files, id_mode=mode)()))
            print(f"[{mode}] reader (per example): {count / wall:,.0f} ex/s wall, "
                  f"{count / cpu:,.0f} ex/s cpu")


if __name__ == "__main__":
    main()
