"""A Paddle 2.x-style fleet script whose trainers only meet in fleet.util collectives,
for tests/component/test_elastic_collectives.py. Each trainer follows its --plan:
`reduce` (all_reduce of worker_index + 1, summed; prints the values it got back) or
`wait:PATH` (until the test creates PATH), then stop_worker() leaves the member set."""
import argparse
import json
import os
import time

import numpy as np

import psjob.distributed.fleet as fleet
import psjob.fluid as fluid
from psjob.distributed.fleet.base import role_maker

p = argparse.ArgumentParser()
p.add_argument("--plan", default="")
args = p.parse_args()

fleet.init(role_maker.PaddleCloudRoleMaker())
strategy = fleet.DistributedStrategy()
strategy.a_sync = False
x = fluid.layers.data(name="x", shape=[2], dtype="float32")
loss = fluid.layers.mean(fluid.layers.fc(x, 1))
fleet.distributed_optimizer(fluid.optimizer.SGD(0.01), strategy).minimize(loss)

if fleet.is_server():
    fleet.init_server()
    fleet.run_server()
else:
    fluid.Executor(fluid.CPUPlace()).run(fluid.default_startup_program())
    fleet.init_worker()  # joins the member set (elastic: PSJOB_MAX_TRAINERS)
    me = fleet.worker_index()
    print(f"trainer {me} joined", flush=True)
    for step in filter(None, args.plan.split(",")):
        if step == "reduce":
            total = fleet.util.all_reduce(np.array([me + 1.0]), "sum")
            print(f"trainer {me} all_reduce: {json.dumps(float(total[0]))}", flush=True)
        else:
            path = step.split(":", 1)[1]
            while not os.path.exists(path):
                time.sleep(0.02)
    fleet.stop_worker()
