"""A collective trainer that checkpoints and resumes, for `psjob run` of a collective job
(tests/component/test_run_job_collective.py).

    collective_resume.py OUT.npz STEPS [KILL_AT]
Fleet collective form of collective_trainer.py. Trainer 0 saves the persistables after every
step to $PSJOB_CHECKPOINT_DIR/step-N (N steps done; written aside, then renamed). At start
every trainer finds its newest checkpoint and the trainers agree on the oldest of those over
the ring (a restarted trainer may look before trainer 0's last save landed), load it and go
on from there. With KILL_AT, trainer 1 kills itself (SIGKILL) at that step on its first start
(a marker file beside OUT says it did). Writes the final parameters to OUT ("{rank}": the id).
"""
import os
import shutil
import signal
import sys

import numpy as np
from collective_trainer import BATCH, batches, build

from psjob import fluid
from psjob.distributed import fleet


def newest_step(directory):
    done = [int(n.split("-", 1)[1]) for n in os.listdir(directory) if n.startswith("step-")] \
        if os.path.isdir(directory) else []
    return max(done, default=0)


def main():
    out, steps = sys.argv[1], int(sys.argv[2])
    kill_at = int(sys.argv[3]) if len(sys.argv) > 3 else -1
    ckpt = os.environ["PSJOB_CHECKPOINT_DIR"]
    prog, startup, loss, opt = build("sgd")
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.program_guard(prog, startup):
        fleet.init(is_collective=True)
        fleet.distributed_optimizer(opt).minimize(loss)
    rank, world = fleet.worker_index(), fleet.worker_num()
    exe.run(startup)
    start = int(fleet.util.all_reduce(np.array([float(newest_step(ckpt))]), "min")[0])
    if start:
        fluid.io.load_persistables(exe, os.path.join(ckpt, f"step-{start}"), prog)
    print(f"trainer {rank} resumes at step {start}", flush=True)
    marker = out.replace("{rank}", "killed") + ".marker"
    shard = BATCH // world
    for i, (x, y) in enumerate(batches(steps)):
        if i < start:
            continue
        if rank == 1 and i == kill_at and not os.path.exists(marker):
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
        rows = slice(rank * shard, (rank + 1) * shard)
        exe.run(prog, feed={"x": x[rows], "y": y[rows]}, fetch_list=[loss])
        if rank == 0:
            tmp = os.path.join(ckpt, f".step-{i + 1}")
            shutil.rmtree(tmp, ignore_errors=True)
            fleet.save_persistables(exe, tmp)
            os.rename(tmp, os.path.join(ckpt, f"step-{i + 1}"))
        print(f"step {i}", flush=True)
    scope = fluid.global_scope()
    params = {p.name: np.asarray(scope.find_var(p.name).get_tensor()) for p in prog.all_parameters()}
    np.savez(out.replace("{rank}", str(rank)), **params)


if __name__ == "__main__":
    main()
