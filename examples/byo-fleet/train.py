"""Bring your own code: a Fleet parameter-server script that psjob runs unchanged.

The same file runs as local processes and as pods, reading only the role
environment psjob gives every process (docs/user/operator.md, "Bring your own code"):

    psjob launch --server_num 2 --worker_num 2 train.py      # local processes
    kubectl apply -k examples/byo-fleet/                     # pods: this file in a ConfigMap

Every process builds the same program; Fleet's role maker reads
PADDLE_TRAINING_ROLE and the endpoints, the transpiler splits the program into
pserver and trainer parts, pservers serve until every trainer has called
`fleet.stop_worker()`, then exit 0. The model: linear regression on synthetic
data (13 features, a known weight vector); each trainer prints its loss.
"""
import argparse

import numpy as np

import psjob.fluid as fluid
from psjob import fleet
from psjob.fleet import DistributedStrategy

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=200)
parser.add_argument("--batch", type=int, default=64)
parser.add_argument("--lr", type=float, default=0.05)
args = parser.parse_args()

fleet.init()
strategy = DistributedStrategy()
strategy.a_sync = False  # sync: gradients of every trainer are merged each step

main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup), fluid.unique_name.guard():
    x = fluid.layers.data(name="x", shape=[13], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="float32")
    prediction = fluid.layers.fc(x, 1)
    loss = fluid.layers.mean(fluid.layers.square_error_cost(prediction, y))
    fleet.distributed_optimizer(fluid.optimizer.SGD(args.lr), strategy).minimize(loss)

exe = fluid.Executor(fluid.CPUPlace())
if fleet.is_server():
    fleet.init_server()
    fleet.run_server()  # returns once every trainer has stopped
else:
    trainer = fleet.worker_index()
    fleet.init_worker()
    exe.run(fleet.startup_program)
    true_weights = np.random.default_rng(0).normal(size=(13, 1)).astype("float32")
    rng = np.random.default_rng(1 + trainer)
    for step in range(args.steps):
        features = rng.normal(size=(args.batch, 13)).astype("float32")
        labels = features @ true_weights + 0.5
        value, = exe.run(fleet.main_program, feed={"x": features, "y": labels},
                         fetch_list=[loss])
        if step % 50 == 0 or step == args.steps - 1:
            print(f"trainer {trainer} step {step} loss {float(value[0]):.4f}", flush=True)
    fleet.stop_worker()
