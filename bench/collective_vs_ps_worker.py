"""Training script of bench/collective_vs_ps.py, run under `psjob launch`.

    --form ps:         Fleet PS (sync): the pserver holds the model, trainers push and pull
    --form collective: Fleet collective: every trainer holds the model, gradients all-reduced

The model is the CTR-DNN with a local table (an ordinary dense parameter of --table_rows
rows, is_sparse=False, ids folded into it modulo its size), the same program in both forms.
Trainer t trains on batches t, t+n, ...; it times the steady state (after --warmup batches)
and writes OUT/trainer<t>.json with examples, seconds and the last loss.
"""
import argparse
import dataclasses
import json
import os
import time

import psjob.fluid as fluid
from psjob.dataset import ctr
from psjob.training.models import ctr as ctr_model

p = argparse.ArgumentParser()
p.add_argument("--form", choices=("ps", "collective"), required=True)
p.add_argument("--data", required=True)
p.add_argument("--out", required=True)
p.add_argument("--batch", type=int, default=512)
p.add_argument("--table_rows", type=int, default=10_000)
p.add_argument("--warmup", type=int, default=3)
args = p.parse_args()

cfg = ctr_model.CTRConfig(sparse_feature_dim=args.table_rows, is_sparse=False, is_distributed=False)
main, startup = fluid.Program(), fluid.Program()
main.random_seed = startup.random_seed = cfg.seed
exe = fluid.Executor(fluid.CPUPlace())
if args.form == "ps":
    from psjob import fleet
    from psjob.fleet import DistributedStrategy
    fleet.init()
    strategy = DistributedStrategy()
    strategy.a_sync = False
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        model = ctr_model.build_network(cfg)
        fleet.distributed_optimizer(fluid.optimizer.Adam(cfg.learning_rate), strategy).minimize(model.loss)
    if fleet.is_server():
        fleet.init_server()
        fleet.run_server()
        raise SystemExit(0)
    fleet.init_worker()
    program, tid, n = fleet.main_program, fleet.worker_index(), fleet.worker_num()
    exe.run(fleet.startup_program)
else:
    from psjob.distributed import fleet
    fleet.init(is_collective=True)
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        model = ctr_model.build_network(cfg)
        fleet.distributed_optimizer(fluid.optimizer.Adam(cfg.learning_rate)).minimize(model.loss)
    program, tid, n = main, fleet.worker_index(), fleet.worker_num()
    exe.run(startup)


def folded(batch):
    """The batch with every id folded into the local table."""
    return dataclasses.replace(batch, ids=[ids % args.table_rows for ids in batch.ids])


batches = [b for i, b in enumerate(ctr.batches(args.data, args.batch, drop_last=True)) if i % n == tid]
feeds = [ctr_model.feed_dict(model, folded(b)) for b in batches]
t0, done = None, 0
for i, feed in enumerate(feeds):
    if i == args.warmup:
        t0 = time.perf_counter()
    loss, = exe.run(program, feed=feed, fetch_list=[model.loss])
    if t0 is not None:
        done += args.batch
seconds = time.perf_counter() - t0
if args.form == "ps":
    fleet.stop_worker()
with open(os.path.join(args.out, f"trainer{tid}.json"), "w") as f:
    json.dump({"examples": done, "seconds": seconds, "loss": float(loss.reshape(-1)[0])}, f)
