"""The trainer's CPU per batch of a QueueDataset: read the pipe, parse MultiSlot, batch, feed.

    python bench/queue_dataset.py [--files 8] [--rows 2000] [--reps 5]
                                  [--runtimes RUNTIME_DIR,...] [--rounds 2]

The data has the layout PaddleRec's rank/dnn reader (queuedataset_reader.py) prints: per
example the click, 26 sparse slots of one id each and the 13 dense features, batch 32
(PaddleRec's config). `pipe_command` is `cat`, so the figure is the training process's own
part of `train_from_dataset`'s data path — reading the command's output, parsing it into
slots, cutting batches and `Executor._feed` (checks and copies into the scope) — without the
reader process and without running the program. Printed: µs of this thread's CPU per batch,
per repetition over all files, and the minimum.

--runtimes runs each given runtime directory (put first on PYTHONPATH, e.g. a copy of
main's runtime/) in turn, interleaved over --rounds: a before/after comparison.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

SLOTS, DENSE, BATCH = 26, 13, 32


def write_data(path, rows, seed=0):
    import numpy as np
    rng = np.random.default_rng(seed)
    with open(path, "w") as f:
        for _ in range(rows):
            ids = rng.integers(0, 1_000_001, SLOTS)
            dense = rng.random(DENSE).round(4)
            f.write(f"1 {rng.integers(0, 2)} " + " ".join(f"1 {i}" for i in ids)
                    + f" {DENSE} " + " ".join(map(str, dense)) + "\n")


def measure(args):
    import psjob.fluid as fluid
    from psjob.distributed import QueueDataset
    from psjob.fluid.core import Scope
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        use_var = [fluid.layers.data(name="click", shape=[1], dtype="int64")]
        use_var += [fluid.layers.data(name=str(i), shape=[1], dtype="int64", lod_level=1)
                    for i in range(1, SLOTS + 1)]
        use_var.append(fluid.layers.data(name="dense_feature", shape=[DENSE], dtype="float32"))
    ds = QueueDataset()
    ds.init(batch_size=BATCH, thread_num=1, use_var=use_var, pipe_command="cat")
    ds.set_filelist([args.data] * args.files)
    exe, scope, block = fluid.Executor(fluid.CPUPlace()), Scope(), main.global_block()
    per_batch = []
    for _ in range(args.reps):
        t0, n = time.thread_time(), 0
        for feed in ds._thread_feeds(1)[0]:
            exe._feed(block, feed, scope)
            n += 1
        per_batch.append(1e6 * (time.thread_time() - t0) / n)
    print(" ".join(f"{x:.0f}" for x in per_batch))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--files", type=int, default=8)
    p.add_argument("--rows", type=int, default=2000, help="examples per file (PaddleRec harness: 2000)")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--runtimes", default="", help="comma-separated runtime dirs (PYTHONPATH); '' = this one")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--data", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.measure:
        measure(args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "part-0")
        write_data(data, args.rows)
        print(f"QueueDataset, pipe_command cat, {args.files} files × {args.rows} examples, batch {BATCH}, "
              f"1 + {SLOTS} + 1 slots: µs of CPU per batch (read, parse, batch, feed)")
        for rnd in range(args.rounds):
            for runtime in args.runtimes.split(","):
                env = dict(os.environ)
                if runtime:
                    env["PYTHONPATH"] = runtime + os.pathsep + env.get("PYTHONPATH", "")
                out = subprocess.run([sys.executable, os.path.abspath(__file__), "--measure", "--data", data,
                                      "--files", str(args.files), "--reps", str(args.reps)],
                                     env=env, capture_output=True, text=True, check=True).stdout.split()
                reps = [float(x) for x in out]
                print(f"  round {rnd + 1} {runtime or 'installed':40} min {min(reps):6.0f}   reps {' '.join(out)}")


if __name__ == "__main__":
    main()
