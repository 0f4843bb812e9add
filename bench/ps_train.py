"""CTR training speed: 1 pserver + 1 trainer (and 2 + 2) next to single-process training.

    python bench/ps_train.py [--examples 200000] [--mode async] [--configs 1x1,2x2]

The CTR-DNN of the foundation issue (26 sparse slots × dim 16 + 13 dense →
256-128-1, Adam, batch 1024) on the synthetic CTR set. Measured in one run:
single-process examples/s, then for each pservers×trainers configuration the
aggregate examples/s of real processes under `psjob launch` (sum over
trainers of examples / steady-state seconds), with the final loss and AUC.
The distributed lookup table is used in the PS runs (--no_distributed_table
to keep the table as an ordinary sparse parameter).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import psjob.fluid as fluid
from psjob.dataset import ctr
from psjob.training.models import ctr as ctr_model

HERE = os.path.dirname(os.path.abspath(__file__))


def single_process(data, batch, warmup=3):
    cfg = ctr_model.CTRConfig(sparse_feature_dim=ctr.SPARSE_FEATURE_DIM)
    main, startup = fluid.Program(), fluid.Program()
    model = ctr_model.build(cfg, main, startup)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    feeds = [ctr_model.feed_dict(model, b) for b in ctr.batches(data, batch, drop_last=True)]
    t0, done = None, 0
    for i, feed in enumerate(feeds):
        if i == warmup:
            t0 = time.perf_counter()
        loss, auc = exe.run(main, feed=feed, fetch_list=[model.loss, model.auc], scope=scope)
        if t0 is not None:
            done += batch
    return done / (time.perf_counter() - t0), float(loss[0]), float(auc[0])


def ps_run(data, servers, trainers, mode, batch, distributed):
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "psjob.cli", "launch", "--server_num", str(servers), "--worker_num",
               str(trainers), "--mode", mode, "--log_dir", os.path.join(out, "log"),
               os.path.join(HERE, "ps_train_worker.py"), "--data", data, "--out", out, "--mode", mode,
               "--batch", str(batch)] + (["--distributed_table"] if distributed else [])
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        if r.returncode != 0:
            logs = ""
            for name in sorted(os.listdir(os.path.join(out, "log"))):
                with open(os.path.join(out, "log", name), errors="replace") as f:
                    logs += f"--- {name}\n{f.read()[-2000:]}\n"
            raise RuntimeError(f"psjob launch failed ({r.returncode}):\n{r.stderr}\n{logs}")
        results = [json.load(open(os.path.join(out, f"trainer{t}.json"))) for t in range(trainers)]
    rate = sum(r["examples"] / r["seconds"] for r in results)
    return rate, results[0]["loss"], results[0]["auc"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--examples", type=int, default=200_000)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--mode", default="async", choices=["sync", "async", "half_async"])
    p.add_argument("--configs", default="1x1,2x2")
    p.add_argument("--no_distributed_table", action="store_true")
    p.add_argument("--data", default="/tmp/psjob-bench-ctr")
    args = p.parse_args()
    data = os.path.join(args.data, f"dense-{args.examples}")
    if not os.path.exists(os.path.join(data, ctr.shard_name(0))):
        ctr.generate(data, num_examples=args.examples, num_files=1, seed=0, overwrite=True)

    print(f"CTR-DNN, batch {args.batch}, Adam, {args.examples} examples, {os.cpu_count()} cores, mode {args.mode}")
    rate, loss, auc = single_process(data, args.batch)
    print(f"  single process             {rate:10,.0f} examples/s   loss {loss:.4f}  AUC {auc:.4f}")
    for cfg in args.configs.split(","):
        s, t = (int(v) for v in cfg.split("x"))
        prate, ploss, pauc = ps_run(data, s, t, args.mode, args.batch, not args.no_distributed_table)
        print(f"  {s} pserver(s) + {t} trainer(s)  {prate:10,.0f} examples/s   loss {ploss:.4f}  AUC {pauc:.4f}"
              f"   ({prate / rate:.2f}x single process)")


if __name__ == "__main__":
    main()
