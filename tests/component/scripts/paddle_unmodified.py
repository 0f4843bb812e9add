"""A Paddle 2.x parameter-server script as a Paddle user writes it: it imports `paddle`, never
psjob, and runs under `psjob launch --as-paddle` unmodified. Linear regression, async, fed by a
QueueDataset whose pipe_command runs paddle_unmodified_reader.py (which imports paddle too).
Each trainer prints `RESULT {json}`: which module `paddle` was, and its printed losses."""
import argparse
import glob
import json
import os
import sys

import paddle
import paddle.distributed.fleet as fleet
import paddle.nn.functional as F
from paddle.distributed.fleet.base import role_maker

p = argparse.ArgumentParser()
p.add_argument("--data", required=True)
p.add_argument("--epochs", type=int, default=3)
args = p.parse_args()

paddle.enable_static()
fleet.init(role_maker.PaddleCloudRoleMaker())
strategy = fleet.DistributedStrategy()
strategy.a_sync = True

x = paddle.static.data("x", [None, 13], "float32")
y = paddle.static.data("y", [None, 1], "float32")
pred = paddle.static.nn.fc(x, 1)
loss = paddle.mean(F.square_error_cost(pred, y))
fleet.distributed_optimizer(paddle.optimizer.SGD(0.05), strategy).minimize(loss)

if fleet.is_server():
    fleet.init_server()
    fleet.run_server()
else:
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(paddle.static.default_startup_program())
    fleet.init_worker()
    reader = os.path.join(os.path.dirname(os.path.abspath(__file__)), "paddle_unmodified_reader.py")
    dataset = paddle.distributed.QueueDataset()
    dataset.init(batch_size=16, thread_num=1, use_var=[x, y], pipe_command=f"python {reader}")
    dataset.set_filelist(sorted(glob.glob(os.path.join(args.data, "part-*"))))
    for _ in range(args.epochs):
        exe.train_from_dataset(paddle.static.default_main_program(), dataset, fetch_list=[loss],
                               fetch_info=["loss"], print_period=10)
    print("RESULT " + json.dumps({"paddle": paddle.__name__, "fleet": fleet.__name__,
                                  "fleet_is_module": sys.modules["paddle.distributed.fleet"] is fleet,
                                  "worker": fleet.worker_index()}), flush=True)
    # Scripts written against Paddle's the_one_ps runtime flush the communicator through its handle before
    # they stop (paddle/distributed/ps/the_one_ps.py: TheOnePSRuntime._worker).
    fleet.fleet._runtime_handle._worker.client_flush()
    fleet.stop_worker()
