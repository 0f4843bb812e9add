"""Collective (NCCL2-mode) training: a Fleet collective script that psjob runs unchanged.

No pservers: every trainer holds the model and the gradients are averaged among the
trainers each step (docs/user/collective.md). The same file runs as local processes and as pods:

    psjob launch --server_num 0 --worker_num 2 train.py    # local processes
    kubectl apply -k examples/collective/                   # pods: this file in a ConfigMap

Fleet's collective role maker reads PADDLE_TRAINER_ID, PADDLE_TRAINER_ENDPOINTS and
PADDLE_CURRENT_ENDPOINT. The model: linear regression on synthetic data (13 features, a
known weight vector); trainer t trains on its own shard of every step's data.

Checkpoints (a collective job's are the script's): trainer 0 saves the persistables every
--save_every steps under PSJOB_CHECKPOINT_DIR/step-N; at start the trainers agree on the
newest step every one of them sees (a min all-reduce over the ring) and resume from it — so
after a lost trainer, when the job restarts every trainer, training goes on from there.
"""
import argparse
import os
import shutil

import numpy as np

import psjob.fluid as fluid
from psjob.distributed import fleet

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=300)
parser.add_argument("--batch", type=int, default=64)
parser.add_argument("--lr", type=float, default=0.05)
parser.add_argument("--save_every", type=int, default=20)
args = parser.parse_args()

TRUE_W = np.linspace(-1.0, 1.0, 13).astype("float32")

main, startup = fluid.Program(), fluid.Program()
main.random_seed = startup.random_seed = 1
with fluid.program_guard(main, startup):
    x = fluid.layers.data(name="x", shape=[13], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="float32")
    loss = fluid.layers.mean(fluid.layers.square_error_cost(input=fluid.layers.fc(input=x, size=1), label=y))
    fleet.init(is_collective=True)
    fleet.distributed_optimizer(fluid.optimizer.SGD(learning_rate=args.lr)).minimize(loss)

rank, world = fleet.worker_index(), fleet.worker_num()
exe = fluid.Executor(fluid.CPUPlace())
exe.run(startup)

ckpt = os.environ.get("PSJOB_CHECKPOINT_DIR", "")
saved = [int(n[5:]) for n in os.listdir(ckpt) if n.startswith("step-")] if ckpt and os.path.isdir(ckpt) else []
start = int(fleet.util.all_reduce(np.array([float(max(saved, default=0))]), "min")[0])
if start:
    fluid.io.load_persistables(exe, os.path.join(ckpt, f"step-{start}"), main)
print(f"trainer {rank}/{world}: starting at step {start}", flush=True)

for step in range(start, args.steps):
    rng = np.random.RandomState(step * world + rank)  # this trainer's shard of the step's data
    xs = rng.rand(args.batch, 13).astype("float32")
    ys = (xs @ TRUE_W + 0.3).reshape(-1, 1).astype("float32")
    value, = exe.run(main, feed={"x": xs, "y": ys}, fetch_list=[loss])
    done = step + 1
    if rank == 0 and ckpt and (done % args.save_every == 0 or done == args.steps):
        tmp = os.path.join(ckpt, f".step-{done}")
        shutil.rmtree(tmp, ignore_errors=True)
        fleet.save_persistables(exe, tmp)  # every trainer holds the whole model
        os.rename(tmp, os.path.join(ckpt, f"step-{done}"))
    if done % 50 == 0 or done == args.steps:
        print(f"trainer {rank}: step {done} loss {float(np.asarray(value).reshape(-1)[0]):.5f}", flush=True)
