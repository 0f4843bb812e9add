"""Fleet CTR training script used by bench/ps_train.py (run under `psjob launch`).

Trainer t trains on batches t, t+n, t+2n, ... of the data; it times the
steady state (after --warmup batches) and writes OUT/trainer<t>.json with
examples, seconds, loss and AUC.
"""
import argparse
import json
import os
import time

import psjob.fluid as fluid
from psjob import fleet
from psjob.dataset import ctr
from psjob.fleet import DistributedStrategy
from psjob.training.models import ctr as ctr_model

p = argparse.ArgumentParser()
p.add_argument("--data", required=True)
p.add_argument("--out", required=True)
p.add_argument("--mode", default="async")
p.add_argument("--batch", type=int, default=1024)
p.add_argument("--warmup", type=int, default=3)
p.add_argument("--distributed_table", action="store_true")
args = p.parse_args()

fleet.init()
strategy = DistributedStrategy()
strategy.a_sync = args.mode != "sync"
cfg = ctr_model.CTRConfig(sparse_feature_dim=ctr.SPARSE_FEATURE_DIM, is_distributed=args.distributed_table)
main, startup = fluid.Program(), fluid.Program()
main.random_seed = startup.random_seed = cfg.seed
with fluid.program_guard(main, startup), fluid.unique_name.guard():
    model = ctr_model.build_network(cfg)
    opt = fluid.optimizer.Adam(cfg.learning_rate, lazy_mode=True)
    fleet.distributed_optimizer(opt, strategy).minimize(model.loss)

exe = fluid.Executor(fluid.CPUPlace())
if fleet.is_server():
    fleet.init_server()
    fleet.run_server()
else:
    tid, n = fleet.worker_index(), fleet.worker_num()
    fleet.init_worker()
    exe.run(fleet.startup_program)
    batches = [b for i, b in enumerate(ctr.batches(args.data, args.batch, drop_last=True)) if i % n == tid]
    feeds = [ctr_model.feed_dict(model, b) for b in batches]
    t0, done = None, 0
    for i, feed in enumerate(feeds):
        if i == args.warmup:
            t0 = time.perf_counter()
        loss, auc = exe.run(fleet.main_program, feed=feed, fetch_list=[model.loss, model.auc])
        if t0 is not None:
            done += args.batch
    seconds = time.perf_counter() - t0
    fleet.stop_worker()
    with open(os.path.join(args.out, f"trainer{tid}.json"), "w") as f:
        json.dump({"examples": done, "seconds": seconds, "loss": float(loss[0]), "auc": float(auc[0])}, f)
