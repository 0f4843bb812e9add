"""A Paddle 2.x-style fleet script (only its imports name psjob): linear regression fed by
train_from_dataset from MultiSlot files, one file per trainer (fleet.util.get_file_shard).

Paddle 2.x's order: the startup program runs before fleet.init_worker()."""
import argparse
import glob
import os

import numpy as np

import psjob.distributed.fleet as fleet
import psjob.fluid as fluid
from psjob import distributed
from psjob.distributed.fleet.base import role_maker

p = argparse.ArgumentParser()
p.add_argument("--data", required=True)
p.add_argument("--out", required=True)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--sync", action="store_true")
args = p.parse_args()

fleet.init(role_maker.PaddleCloudRoleMaker())
strategy = fleet.DistributedStrategy()
strategy.a_sync = not args.sync
strategy.a_sync_configs = {"launch_barrier": True, "thread_pool_size": 4}  # the latter is logged, ignored
strategy.trainer_desc_configs = {"dump_fields_path": ""}

main, startup = fluid.default_main_program(), fluid.default_startup_program()
main.random_seed = startup.random_seed = 7
x = fluid.layers.data(name="x", shape=[13], dtype="float32")
y = fluid.layers.data(name="y", shape=[1], dtype="float32")
pred = fluid.layers.fc(x, 1, param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.1)))
loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
fleet.distributed_optimizer(fluid.optimizer.SGD(0.01), strategy).minimize(loss)

if fleet.is_server():
    fleet.init_server()
    fleet.run_server()
else:
    assert distributed.get_rank() == fleet.worker_index() and distributed.get_world_size() == fleet.worker_num()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    fleet.init_worker()
    files = fleet.util.get_file_shard(sorted(glob.glob(os.path.join(args.data, "part-*"))))
    dataset = distributed.InMemoryDataset()
    dataset.init(batch_size=args.batch, thread_num=1, use_var=[x, y], pipe_command="cat")
    dataset.set_filelist(files)
    dataset.load_into_memory()
    for _ in range(args.epochs):
        exe.train_from_dataset(fluid.default_main_program(), dataset, thread=1, fetch_list=[loss],
                               fetch_info=["loss"], print_period=4)
    if fleet.is_first_worker():
        scope = fluid.global_scope()
        np.savez(os.path.join(args.out, "trainer0.npz"),
                 **{p.name: np.array(scope.find_var(p.name).get_tensor()) for p in main.all_parameters()})
    fleet.stop_worker()
