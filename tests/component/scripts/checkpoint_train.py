"""A Fleet script for the checkpoint tests, run under `psjob launch`.

    checkpoint_train.py --out DIR [--mode sync|async|geo] [--steps N] [--interval_steps K]
                        [--model_dir DIR] [--save_at_start DIR] [--final DIR] [--sleep_ms MS]
                        [--no_table] [--inference DIR] [--pause_in_save STEP]

The model has a distributed lookup table (unless --no_table), a hidden layer
large enough to be sliced across pservers, Adam and an exponentially decaying
learning rate, so a checkpoint holds every kind of state: table shards,
sliced parameters, param-shaped and origin-shaped accumulators, an LR counter.
Batch `s` is drawn from a generator seeded with `s`, and trainer t takes rows
t::trainers, so a resumed run sees exactly the batches an uninterrupted one does.

Checkpoints: PSJOB_CHECKPOINT_DIR (set by `psjob launch --checkpoint_dir`),
every --interval_steps steps. A trainer resumes from the position recorded in
the newest good checkpoint. Each pserver appends its pid to
DIR/pserver-<i>.pids when it starts (the fault-injection test kills by pid).
Trainer 0 writes DIR/trainer0.json: start step, losses, checkpoints saved.
--pause_in_save STEP: trainer 0 stops inside the checkpoint of STEP, after the
pservers wrote their table shards and before its own dense files and the
manifest (it prints "pausing inside the checkpoint of step STEP" and waits to
be killed): the crash tests kill a job at exactly that point.
"""
import argparse
import json
import os
import time

import numpy as np

import psjob.fluid as fluid
from psjob import fleet
from psjob.fleet import Checkpointer, DistributedStrategy

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--mode", default="sync")
p.add_argument("--steps", type=int, default=8)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--interval_steps", type=int, default=0)
p.add_argument("--model_dir", default="")
p.add_argument("--save_at_start", default="")
p.add_argument("--final", default="")
p.add_argument("--sleep_ms", type=float, default=0.0)
p.add_argument("--no_table", action="store_true")
p.add_argument("--inference", default="", help="trainer 0 saves an inference model here at the end")
p.add_argument("--pause_in_save", type=int, default=0)
args = p.parse_args()

if args.pause_in_save:
    import threading

    from psjob.cluster.trainer import checkpoint_save

    real_write_array = checkpoint_save.write_array

    def write_array_then_pause(path, arr):
        if f"step-{args.pause_in_save:08d}" in path:
            print(f"pausing inside the checkpoint of step {args.pause_in_save}", flush=True)
            threading.Event().wait()  # until the test kills the job
        return real_write_array(path, arr)
    checkpoint_save.write_array = write_array_then_pause

VOCAB, DIM = 1000, 8

fleet.init()
strategy = DistributedStrategy()
strategy.a_sync = args.mode != "sync"
strategy.a_sync_configs = {"k_steps": 2 if args.mode == "geo" else 0}

main, startup = fluid.Program(), fluid.Program()
main.random_seed = startup.random_seed = 7
with fluid.program_guard(main, startup), fluid.unique_name.guard():
    ids = fluid.layers.data(name="ids", shape=[1], dtype="int64")
    x = fluid.layers.data(name="x", shape=[13])
    y = fluid.layers.data(name="y", shape=[1])
    emb = fluid.layers.embedding(ids, size=[VOCAB, DIM], is_sparse=True, is_distributed=not args.no_table,
                                 param_attr=fluid.ParamAttr(name="emb",
                                                            initializer=fluid.initializer.Uniform(-0.1, 0.1)))
    h = fluid.layers.fc(fluid.layers.concat([emb, x], axis=1), 1024, act="tanh")
    pred = fluid.layers.fc(h, 1)
    loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
    lr = fluid.layers.exponential_decay(0.005, 10, 0.9)
    fleet.distributed_optimizer(fluid.optimizer.Adam(lr), strategy).minimize(loss)


def batch(step, tid, n):
    rng = np.random.default_rng(step)
    b_ids = rng.integers(0, VOCAB, size=(args.batch, 1)).astype("int64")
    b_x = rng.normal(size=(args.batch, 13)).astype("float32")
    b_y = (0.5 * b_x[:, :1] + 0.3 * b_x[:, 1:2] + 0.01 * (b_ids % 7)).astype("float32")
    return {"ids": b_ids[tid::n], "x": b_x[tid::n], "y": b_y[tid::n]}


exe = fluid.Executor(fluid.CPUPlace())
if fleet.is_server():
    fleet.init_server(args.model_dir or None)
    with open(os.path.join(args.out, f"pserver-{fleet.server_index()}.pids"), "a") as f:
        f.write(f"{os.getpid()}\n")
    fleet.run_server()
else:
    tid, n = fleet.worker_index(), fleet.worker_num()
    fleet.init_worker()
    exe.run(fleet.startup_program)
    overrides = {"interval_steps": args.interval_steps} if args.interval_steps else {}
    ckpt = Checkpointer.for_fleet(fleet, exe, **overrides)
    position = ckpt.resume()
    start = int(position["step"]) if position else 0
    if args.save_at_start and tid == 0:
        fleet.save_persistables(exe, args.save_at_start)
    losses = []
    for step in range(start, args.steps):
        value, = exe.run(fleet.main_program, feed=batch(step, tid, n), fetch_list=[loss])
        losses.append(float(np.asarray(value).reshape(-1)[0]))
        ckpt.after_step(step + 1, epoch=0, offset=(step + 1) * args.batch)
        if args.sleep_ms:
            time.sleep(args.sleep_ms / 1000)
    if tid == 0:
        if args.final:
            fleet.save_persistables(exe, args.final)
        if args.inference:
            fleet.save_inference_model(exe, args.inference, ["ids", "x"], [pred])
        with open(os.path.join(args.out, "trainer0.json"), "w") as f:
            json.dump({"start": start, "losses": losses, "saved": ckpt.saved, "failures": ckpt.failures,
                       "resumed_from": ckpt.resumed_from}, f)
    fleet.stop_worker()
