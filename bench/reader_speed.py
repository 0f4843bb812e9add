"""Reader speed per file format, next to Paddle's InMemoryDataset loading the same files.

Makes the anchor's 40-column TSV (../shared/anchors/paddle_ps/gen_data.py,
label + 13 dense + 26 ids), then writes the same rows as Criteo TSV (dense
values as integers x100, ids as 8-digit hex) and as Parquet. Times, in this
process:

  tsv40 / criteo / parquet   psjob.dataset.ctr.batches(format=...)
  dataset+awk                psjob.distributed.InMemoryDataset with the anchor's
                             awk pipe_command (TSV → MultiSlot), as Paddle's run

and, in the Paddle venv the anchor's setup_venv.sh creates
(~/.cache/psjob-peer/vpaddle300), Paddle's InMemoryDataset.load_into_memory
on the 40-column files with the same awk command and thread count. Without
that venv the Paddle line says it was skipped. Both sides are timed by wall
clock and by CPU-seconds: all threads of the process plus the pipe_command
processes it waited for (Paddle's load is multi-threaded C++ plus awk
processes, counted once waited for: Paddle leaves its pipe processes unwaited
until its dataset is destroyed, so the Paddle side waits for them before it
reads its CPU time; psjob's text formats parse in pyarrow's threads). On a shared
machine wall rates swing with the load, so the rounds are interleaved, the
best of each is kept, and the CPU-second ratios are the steadier figure.

    .venv/bin/python bench/reader_speed.py --rows 400000 --files 4 --threads 2
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

from psjob.dataset import ctr

PEER_DIR = os.environ.get("PSJOB_PEER_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                                          "shared", "anchors", "paddle_ps"))
PEER_PYTHON = os.path.expanduser("~/.cache/psjob-peer/vpaddle300/bin/python")
# The anchor's pipe_command (paddle_ctr_ps.py): 40 TSV columns → MultiSlot label, dense[13], 26 ids.
AWK = ("awk -F'\\t' '{printf \"1 %s 13\", $1; for(i=2;i<=14;i++) printf \" %s\", $i; "
       "for(i=15;i<=40;i++) printf \" 1 %s\", $i; printf \"\\n\"}'")

PADDLE_LOAD = """
import json, os, resource, sys, time
import paddle
paddle.enable_static()
files, threads = sys.argv[1].split(","), int(sys.argv[2])
label = paddle.static.data("label", [-1, 1], "int64")
dense = paddle.static.data("dense_input", [-1, 13], "float32")
slots = [paddle.static.data("C%d" % i, [-1, 1], "int64") for i in range(26)]
ds = paddle.distributed.InMemoryDataset()
ds.init(batch_size=512, thread_num=threads, use_var=[label, dense] + slots, pipe_command=sys.argv[3])
ds.set_filelist(files)
def cpu():  # this process's threads plus the awk processes it has waited for
    return time.process_time() + resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime + \
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_stime
t, c = time.perf_counter(), cpu()
ds.load_into_memory()
seconds = time.perf_counter() - t
# Paddle returns with its pipe_command shells not yet waited for (zombies: their CPU is not in
# RUSAGE_CHILDREN); its dataset's destructor would wait for them. Wait for them here, count
# them, and leave without that destructor (which aborts on children already waited for).
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
print(json.dumps({"rows": int(ds.get_memory_data_size()), "seconds": seconds, "cpu_seconds": cpu() - c}), flush=True)
os._exit(0)
"""


def make_files(out, rows, files):
    tsv = os.path.join(out, "tsv40")
    gen = os.path.join(PEER_DIR, "gen_data.py")
    if not os.path.exists(gen):
        sys.exit(f"reader_speed: {gen} not found; set PSJOB_PEER_DIR to the anchor folder")
    subprocess.run([sys.executable, gen, "--rows", str(rows), "--files", str(files), "--out-dir", tsv],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    parts = sorted(os.path.join(tsv, n) for n in os.listdir(tsv) if n.startswith("part-"))
    criteo, parquet = os.path.join(out, "criteo"), os.path.join(out, "parquet")
    os.makedirs(criteo)
    os.makedirs(parquet)
    for k, part in enumerate(parts):
        (cols,) = [b for b in ctr.batches(part, 10 ** 9, format="tsv40")]
        ints = np.round(cols.dense * 100).astype(np.int64)
        ids = np.stack(cols.ids, axis=1)
        with open(os.path.join(criteo, f"part-{k}"), "w") as f:
            for label, row_ints, row_ids in zip(cols.label.ravel(), ints, ids):
                f.write("\t".join([str(label), *map(str, row_ints), *(format(int(i), "08x") for i in row_ids)]) + "\n")
        write_parquet(os.path.join(parquet, f"part-{k}"), cols)
    return parts, [os.path.join(criteo, f"part-{k}") for k in range(len(parts))], \
        [os.path.join(parquet, f"part-{k}") for k in range(len(parts))]


def write_parquet(path, cols):
    import pyarrow as pa
    import pyarrow.parquet as pq
    data = {"label": pa.array(cols.label.ravel())}
    data.update({f"I{j + 1}": pa.array(cols.dense[:, j]) for j in range(13)})
    data.update({f"C{s + 1}": pa.array(cols.ids[s]) for s in range(26)})
    pq.write_table(pa.table(data), path)


def cpu_seconds():
    """CPU time of this process (all its threads) and of the child processes it has waited for
    (the pipe_command's awk processes)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def timed_rows(fn):
    wall, cpu = time.perf_counter(), cpu_seconds()
    rows = fn()
    return rows, time.perf_counter() - wall, cpu_seconds() - cpu


def read_all(files, fmt):
    return sum(len(b) for b in ctr.batches(files, 4096, format=fmt))


def psjob_dataset(files, threads):
    import psjob.fluid as fluid
    from psjob.distributed import InMemoryDataset
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        use_var = [fluid.layers.data("label", [1], dtype="int64"), fluid.layers.data("dense_input", [13])]
        use_var += [fluid.layers.data(f"C{i}", [1], dtype="int64") for i in range(26)]
    ds = InMemoryDataset()
    ds.init(batch_size=512, thread_num=threads, use_var=use_var, pipe_command=AWK)
    ds.set_filelist(files)
    ds.load_into_memory()
    return ds.get_memory_data_size()


def paddle_load(files, threads):
    if not os.path.exists(PEER_PYTHON):
        return None, (f"skipped: no Paddle venv at {PEER_PYTHON} "
                      "(create it with ../shared/anchors/paddle_ps/setup_venv.sh)")
    r = subprocess.run([PEER_PYTHON, "-c", PADDLE_LOAD, ",".join(files), str(threads), AWK],
                       capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        return None, "failed: " + r.stderr.strip().splitlines()[-1]
    return json.loads(r.stdout.strip().splitlines()[-1]), ""


def best(runs):
    """(rows, best wall seconds, best CPU seconds) of repeated runs."""
    return runs[0][0], min(r[1] for r in runs), min(r[2] for r in runs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=400_000)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2, help="InMemoryDataset thread_num (both sides)")
    ap.add_argument("--reps", type=int, default=2, help="rounds of every reader and Paddle's load, interleaved")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="psjob-reader-speed-") as out:
        tsv, criteo, parquet = make_files(out, args.rows, args.files)
        mb = sum(os.path.getsize(p) for p in tsv) / 1e6
        print(f"{args.rows} rows in {args.files} files ({mb:.0f} MB of 40-column TSV), {os.cpu_count()} CPUs, "
              f"best of {args.reps} interleaved rounds")
        readers = {"tsv40": lambda: read_all(tsv, "tsv40"), "criteo": lambda: read_all(criteo, "criteo"),
                   "parquet": lambda: read_all(parquet, "parquet"),
                   "dataset+awk": lambda: psjob_dataset(tsv, args.threads)}
        runs = {name: [] for name in readers}
        paddle_runs, why = [], ""
        for _ in range(args.reps):
            for name, fn in readers.items():
                runs[name].append(timed_rows(fn))
            paddle, why = paddle_load(tsv, args.threads)
            if paddle is not None:
                paddle_runs.append((paddle["rows"], paddle["seconds"], paddle["cpu_seconds"]))
        for name in readers:
            rows, wall, cpu = best(runs[name])
            print(f"  psjob {name:26s} {rows / wall:10,.0f} rows/s wall {rows / cpu:10,.0f} rows/CPU-s")
        if not paddle_runs:
            print(f"  paddle InMemoryDataset {why}")
            return
        rows, wall, cpu = best(paddle_runs)
        paddle_wall, paddle_cpu = rows / wall, rows / cpu
        print(f"  paddle InMemoryDataset+awk {paddle_wall:10,.0f} rows/s wall {paddle_cpu:10,.0f} rows/CPU-s "
              f"({rows} rows, {args.threads} threads)")
        for name in readers:
            rows, wall, cpu = best(runs[name])
            print(f"  psjob {name} / paddle load: {rows / wall / paddle_wall:.2f}x by wall, "
                  f"{rows / cpu / paddle_cpu:.2f}x by CPU-s")


if __name__ == "__main__":
    main()
