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
that venv the Paddle line says it was skipped. Rows/s are by wall clock
(Paddle's load is multi-threaded C++ plus awk processes, so CPU time of this
process would not compare); the machine may be shared, so read ratios.

    .venv/bin/python bench/reader_speed.py --rows 400000 --files 4 --threads 2
"""
from __future__ import annotations

import argparse
import json
import os
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
import json, sys, time
import paddle
paddle.enable_static()
files, threads = sys.argv[1].split(","), int(sys.argv[2])
label = paddle.static.data("label", [-1, 1], "int64")
dense = paddle.static.data("dense_input", [-1, 13], "float32")
slots = [paddle.static.data("C%d" % i, [-1, 1], "int64") for i in range(26)]
ds = paddle.distributed.InMemoryDataset()
ds.init(batch_size=512, thread_num=threads, use_var=[label, dense] + slots, pipe_command=sys.argv[3])
ds.set_filelist(files)
t = time.perf_counter()
ds.load_into_memory()
print(json.dumps({"rows": int(ds.get_memory_data_size()), "seconds": time.perf_counter() - t}))
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
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return
    data = {"label": pa.array(cols.label.ravel())}
    data.update({f"I{j + 1}": pa.array(cols.dense[:, j]) for j in range(13)})
    data.update({f"C{s + 1}": pa.array(cols.ids[s]) for s in range(26)})
    pq.write_table(pa.table(data), path)


def timed_rows(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    rows = fn()
    return rows, time.perf_counter() - wall, time.process_time() - cpu


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=400_000)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2, help="InMemoryDataset thread_num (both sides)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="psjob-reader-speed-") as out:
        tsv, criteo, parquet = make_files(out, args.rows, args.files)
        mb = sum(os.path.getsize(p) for p in tsv) / 1e6
        print(f"{args.rows} rows in {args.files} files ({mb:.0f} MB of 40-column TSV)")
        results = {}
        for name, fn in (("tsv40", lambda: read_all(tsv, "tsv40")), ("criteo", lambda: read_all(criteo, "criteo")),
                         ("parquet", lambda: read_all(parquet, "parquet") if os.path.exists(parquet[0]) else 0),
                         ("dataset+awk", lambda: psjob_dataset(tsv, args.threads))):
            rows, wall, cpu = timed_rows(fn)
            if not rows:
                print(f"  psjob {name:12s} skipped (pyarrow missing: pip install 'psjob[parquet]')")
                continue
            results[name] = rows / wall
            print(f"  psjob {name:12s} {rows / wall:12,.0f} rows/s wall  {rows / cpu:12,.0f} rows/CPU-s (this process)")
        paddle, why = paddle_load(tsv, args.threads)
        if paddle is None:
            print(f"  paddle InMemoryDataset {why}")
            return
        rate = paddle["rows"] / paddle["seconds"]
        print(f"  paddle InMemoryDataset+awk {rate:12,.0f} rows/s wall ({paddle['rows']} rows, "
              f"{args.threads} threads)")
        for name, value in results.items():
            print(f"  psjob {name} / paddle load: {value / rate:.2f}x")


if __name__ == "__main__":
    main()
