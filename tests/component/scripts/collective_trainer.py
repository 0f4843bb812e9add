"""One collective trainer (or the single-process reference) of tests/component/test_collective.py.

    collective_trainer.py FORM OPTIMIZER OUT.npz [STEPS]
FORM: single | transpiler | fleet | fleet1x | parallel_env. The collective forms read PADDLE_TRAINER_ID,
PADDLE_TRAINERS_NUM, PADDLE_TRAINER_ENDPOINTS and PADDLE_CURRENT_ENDPOINT; every trainer trains
on its shard of each step's batch, the single process on the whole batch. Writes the
parameters after the last step (and the losses) to OUT.npz ("{rank}" in OUT: the trainer id).
"""
import sys

import numpy as np

from psjob import fluid
from psjob.foundation.role_env import CollectiveEnv

STEPS, BATCH, DIM = 4, 8, 6


def batches(steps=STEPS):
    rng = np.random.RandomState(7)
    for _ in range(steps):
        x = rng.rand(BATCH, DIM).astype("float32")
        yield x, (x.sum(1, keepdims=True) * 0.5 + 0.1).astype("float32")


def build(optimizer_name):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 11
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[DIM], dtype="float32")
        y = fluid.layers.data(name="y", shape=[1], dtype="float32")
        h = fluid.layers.fc(input=x, size=16, act="relu")
        pred = fluid.layers.fc(input=h, size=1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(input=pred, label=y))
        opt = (fluid.optimizer.SGD(learning_rate=0.1) if optimizer_name == "sgd"
               else fluid.optimizer.Adam(learning_rate=0.01))
    return main, startup, loss, opt


def main():
    form, optimizer_name, out = sys.argv[1:4]
    env = CollectiveEnv.from_environ() if form != "single" else None
    rank, world = (env.rank, env.world_size) if env else (0, 1)
    prog, startup, loss, opt = build(optimizer_name)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.program_guard(prog, startup):
        if form == "fleet":
            from psjob.distributed import fleet
            fleet.init(is_collective=True)
            assert fleet.worker_index() == rank and fleet.worker_num() == world
            fleet.distributed_optimizer(opt).minimize(loss)
            # fleet.util's collectives run over the ring in a collective job
            assert fleet.util.all_reduce(np.array([rank + 1.0]), "sum").tolist() == [world * (world + 1) / 2]
            assert fleet.util.all_gather(rank) == list(range(world))
            fleet.barrier_worker()
        elif form == "fleet1x":
            from psjob.fluid.incubate.fleet.base import role_maker
            from psjob.fluid.incubate.fleet.collective import DistributedStrategy, fleet
            fleet.init(role_maker.PaddleCloudRoleMaker(is_collective=True))
            fleet.distributed_optimizer(opt, strategy=DistributedStrategy()).minimize(loss)
            assert fleet.worker_index() == rank and fleet.worker_num() == world
        else:
            opt.minimize(loss)
    if form == "transpiler":
        config = fluid.DistributeTranspilerConfig()
        config.mode = "nccl2"
        t = fluid.DistributeTranspiler(config=config)
        t.transpile(rank, program=prog, trainers=",".join(env.endpoints),
                    current_endpoint=env.current_endpoint, startup_program=startup)
    exe.run(startup)
    if form == "transpiler":
        runner = fluid.ParallelExecutor(use_cuda=False, loss_name=loss.name, main_program=prog,
                                        num_trainers=world, trainer_id=rank)
        run = lambda feed: runner.run(fetch_list=[loss.name], feed=feed)
    elif form == "parallel_env":
        import psjob.distributed as dist
        dist.init_parallel_env()
        assert dist.get_rank() == rank and dist.get_world_size() == world
        bs = fluid.BuildStrategy()
        bs.num_trainers, bs.trainer_id = dist.get_world_size(), dist.get_rank()
        compiled = fluid.CompiledProgram(prog).with_data_parallel(loss_name=loss.name, build_strategy=bs)
        run = lambda feed: exe.run(compiled, feed=feed, fetch_list=[loss])
    elif form == "fleet1x":
        from psjob.fluid.incubate.fleet.collective import fleet
        run = lambda feed: exe.run(fleet.main_program, feed=feed, fetch_list=[loss])
    else:
        run = lambda feed: exe.run(prog, feed=feed, fetch_list=[loss])
    shard = BATCH // world
    losses = []
    steps = int(sys.argv[4]) if len(sys.argv) > 4 else None
    for i, (x, y) in enumerate(batches(steps or STEPS)):
        rows = slice(rank * shard, (rank + 1) * shard)
        losses.append(float(np.asarray(run({"x": x[rows], "y": y[rows]})[0]).reshape(-1)[0]))
        if steps:  # a long run (the failure test): say where it is
            print(f"step {i}", flush=True)
    scope = fluid.global_scope()
    params = {p.name: np.asarray(scope.find_var(p.name).get_tensor()) for p in prog.all_parameters()}
    if form == "fleet" and rank == 0:  # every trainer holds the whole model: a plain save
        from psjob.distributed import fleet
        assert fleet.fleet.main_program is prog and fleet.fleet.mode == "collective"
        fleet.save_persistables(exe, out.replace("{rank}", str(rank)) + ".saved")
    np.savez(out.replace("{rank}", str(rank)), losses=np.asarray(losses), **params)
    print("done", flush=True)


if __name__ == "__main__":
    main()
