"""Paddle 2.x fleet saves are collective: every trainer calls them, trainer 0 writes.

Phase "train" (1 pserver, 2 trainers): a CTR-shaped net (a distributed table through
sparse_embedding, a dense input, fc layers) trains a few async steps; then every trainer

- calls fleet.save_inference_model and fleet.save_persistables(mode=0) with a directory
  of its own name (so the test sees who wrote: only trainer 0's directories exist), and
  records whether trainer 0's files were complete when its own call returned;
- calls fleet.save_persistables into a path under a regular file (the write fails on
  trainer 0) and records the error each gets;
- predicts a fixed batch with DistributedInfer's program (the test program, its table
  lookups prefetching from the pservers) and writes the predictions.

Phase "infer" (1 pserver, 1 trainer, a new job): DistributedInfer.init_distributed_infer_env
with the saved persistables (the pserver loads them, the trainer its dense variables),
then the same batch through get_dist_infer_program.
"""
import argparse
import json
import os

import numpy as np

import psjob as paddle
import psjob.distributed.fleet as fleet
from psjob.distributed.fleet.base import role_maker
from psjob.distributed.fleet.utils.ps_util import DistributedInfer

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--phase", choices=("train", "infer"), required=True)
p.add_argument("--steps", type=int, default=30)
args = p.parse_args()

paddle.enable_static()
VOCAB, DIM, SLOTS = 1000, 4, 3


def net():
    ids = [paddle.static.data(f"slot{i}", [None, 1], "int64") for i in range(SLOTS)]
    dense = paddle.static.data("dense", [None, 2], "float32")
    label = paddle.static.data("label", [None, 1], "float32")
    embs = [paddle.reshape(paddle.static.nn.sparse_embedding(
        i, [VOCAB, DIM], param_attr=paddle.ParamAttr(name="table",
                                                     initializer=paddle.nn.initializer.Uniform(-0.1, 0.1))),
        [-1, DIM]) for i in ids]
    h = paddle.static.nn.fc(paddle.concat(embs + [dense], axis=1), 8, activation="relu")
    pred = paddle.nn.functional.sigmoid(paddle.static.nn.fc(h, 1))
    loss = paddle.mean(paddle.nn.functional.log_loss(pred, label))
    return ids + [dense, label], pred, loss


def batch(seed, rows=32):
    rng = np.random.default_rng(seed)
    feed = {f"slot{i}": rng.integers(0, VOCAB, size=(rows, 1)).astype("int64") for i in range(SLOTS)}
    feed["dense"] = rng.normal(size=(rows, 2)).astype("float32")
    feed["label"] = (feed["slot0"] % 2).astype("float32")  # learnable from the table
    return feed


paddle.seed(3)
feeds, pred, loss = net()
test_program = paddle.static.default_main_program().clone(for_test=True)
dist_infer = DistributedInfer(main_program=test_program)
exe = paddle.static.Executor(paddle.CPUPlace())
probe = batch(12345, rows=16)

if args.phase == "infer":
    dist_infer.init_distributed_infer_env(exe, loss, role_maker.PaddleCloudRoleMaker(),
                                          dirname=os.path.join(args.out, "persist-0"))
    if fleet.is_worker():
        with paddle.static.program_guard(dist_infer.get_dist_infer_program()):
            got, = exe.run(paddle.static.default_main_program(), feed=probe, fetch_list=[pred.name])
        np.save(os.path.join(args.out, "infer-phase.npy"), got)
        fleet.stop_worker()
    raise SystemExit(0)

fleet.init(role_maker.PaddleCloudRoleMaker())
strategy = fleet.DistributedStrategy()
strategy.a_sync = True
fleet.distributed_optimizer(paddle.optimizer.Adam(0.01), strategy).minimize(loss)
if fleet.is_server():
    fleet.init_server()
    fleet.run_server()
    raise SystemExit(0)

exe.run(paddle.static.default_startup_program())
fleet.init_worker()
t = fleet.worker_index()
for step in range(args.steps):
    exe.run(paddle.static.default_main_program(), feed=batch(1000 * t + step), fetch_list=[loss])
fleet.barrier_worker()  # every update is on the pservers and read back: the saves see the final model

record = {"trainer": t}
feed_names = [v.name for v in feeds[:-1]]
infer_dir, persist_dir = (os.path.join(args.out, f"{kind}-{t}") for kind in ("infer", "persist"))
fleet.save_inference_model(exe, infer_dir, feed_names, [pred])
record["infer_complete_at_return"] = os.path.exists(os.path.join(args.out, "infer-0", "__manifest__.json"))
fleet.save_persistables(exe, persist_dir, mode=0)
record["persist_complete_at_return"] = os.path.exists(os.path.join(args.out, "persist-0", "__manifest__.json"))

blocker = os.path.join(args.out, "a-file")
if t == 0:
    with open(blocker, "w") as f:
        f.write("not a directory\n")
try:
    fleet.save_persistables(exe, os.path.join(blocker, "sub"), mode=0)
    record["failed_save"] = None
except fleet.FleetError as exc:
    record["failed_save"] = str(exc)

with paddle.static.program_guard(dist_infer.get_dist_infer_program()):
    got, = exe.run(paddle.static.default_main_program(), feed=probe, fetch_list=[pred.name])
np.save(os.path.join(args.out, f"dist-infer-{t}.npy"), got)
np.savez(os.path.join(args.out, "probe.npz"), **probe)
with open(os.path.join(args.out, f"record-{t}.json"), "w") as f:
    json.dump(record, f)
fleet.stop_worker()
