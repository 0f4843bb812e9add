"""A Paddle 2.x fleet script in an elastic job: each trainer joins, waits until `--members`
trainers take part, prints the files fleet.util.get_file_shard gives it, and leaves after a
barrier (so no trainer leaves before the others have sharded)."""
import argparse
import json
import time

import psjob.distributed.fleet as fleet
import psjob.fluid as fluid
from psjob.distributed.fleet import _fleet
from psjob.distributed.fleet.base import role_maker

p = argparse.ArgumentParser()
p.add_argument("--files", type=int, required=True)
p.add_argument("--members", type=int, required=True)
args = p.parse_args()

fleet.init(role_maker.PaddleCloudRoleMaker())
x = fluid.layers.data(name="x", shape=[4], dtype="float32")
loss = fluid.layers.mean(fluid.layers.fc(x, 1))
fleet.distributed_optimizer(fluid.optimizer.SGD(0.1), fleet.DistributedStrategy()).minimize(loss)

if fleet.is_server():
    fleet.init_server()
    fleet.run_server()
else:
    fluid.Executor(fluid.CPUPlace()).run(fluid.default_startup_program())
    fleet.init_worker()
    deadline = time.monotonic() + 60
    while len(_fleet.worker_members()) < args.members:  # the other trainers joining
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {args.members} trainers: {_fleet.worker_members()}")
        time.sleep(0.05)
    shard = fleet.util.get_file_shard([f"part-{i}" for i in range(args.files)])
    print("SHARD " + json.dumps({"trainer": fleet.worker_index(), "worker_num": fleet.worker_num(),
                                 "members": sorted(_fleet.worker_members()), "shard": shard}), flush=True)
    fleet.util.barrier()
    fleet.stop_worker()
