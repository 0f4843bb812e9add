"""A dense model two ways at 2 trainers: collective (ring all-reduce) vs parameter server.

    python bench/collective_vs_ps.py [--examples 40000] [--batch 512] [--table_rows 10000]

The CTR-DNN (26 slots × dim 16 + 13 dense → 256-128-1, Adam) with a local table: an ordinary
dense [table_rows, 16] parameter (is_sparse=False), the ids folded into it — a model every
trainer can hold. In one run, as real processes under `psjob launch`:

- parameter server: 1 pserver + 2 trainers, sync (the pserver holds the model; each trainer
  pushes its dense gradients and pulls the parameters every step);
- collective: 2 trainers, no pserver (`--server_num 0`; each trainer applies the average of
  both trainers' gradients, all-reduced over the TCP ring).

Both train the same program on the same shards with the same per-trainer batch. Printed:
aggregate examples/s (sum over trainers of examples / steady-state seconds) and the last loss.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

from psjob.dataset import ctr

HERE = os.path.dirname(os.path.abspath(__file__))


def run(form, data, args):
    with tempfile.TemporaryDirectory() as out:
        layout = ["--server_num", "1", "--worker_num", "2", "--mode", "sync"] if form == "ps" else \
            ["--server_num", "0", "--worker_num", "2"]
        cmd = [sys.executable, "-m", "psjob.cli", "launch", *layout, "--log_dir", os.path.join(out, "log"),
               os.path.join(HERE, "collective_vs_ps_worker.py"), "--form", form, "--data", data, "--out", out,
               "--batch", str(args.batch), "--table_rows", str(args.table_rows)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        if r.returncode != 0:
            logs = ""
            for name in sorted(os.listdir(os.path.join(out, "log"))):
                with open(os.path.join(out, "log", name), errors="replace") as f:
                    logs += f"--- {name}\n{f.read()[-2000:]}\n"
            raise RuntimeError(f"{form}: psjob launch failed ({r.returncode}):\n{r.stderr}\n{logs}")
        results = [json.load(open(os.path.join(out, f"trainer{t}.json"))) for t in range(2)]
    return sum(r["examples"] / r["seconds"] for r in results), results[0]["loss"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--examples", type=int, default=40_000)
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--table_rows", type=int, default=10_000)
    p.add_argument("--data", default="/tmp/psjob-bench-ctr")
    args = p.parse_args()
    data = os.path.join(args.data, f"dense-{args.examples}")
    if not os.path.exists(os.path.join(data, ctr.shard_name(0))):
        ctr.generate(data, num_examples=args.examples, num_files=1, seed=0, overwrite=True)
    print(f"CTR-DNN with a local {args.table_rows}x16 table, Adam, batch {args.batch} per trainer, "
          f"{args.examples} examples, 2 trainers, {os.cpu_count()} cores")
    rates = {}
    for form, label in (("ps", "parameter server (1 pserver, sync)"), ("collective", "collective (ring)")):
        rates[form], loss = run(form, data, args)
        print(f"  {label:36s} {rates[form]:10,.0f} examples/s   last loss {loss:.4f}")
    print(f"  collective / parameter server: {rates['collective'] / rates['ps']:.2f}x")


if __name__ == "__main__":
    main()
