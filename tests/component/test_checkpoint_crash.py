"""A process SIGKILLed while it writes checkpoints never leaves a partial one as the newest.

A real child process checkpoints a 16 MiB model in a loop (Checkpointer, the same
atomic writes and manifest-last commit as distributed saves); the test kills it
at random moments, checks the checkpoint root, and restarts it, which resumes
from the newest good checkpoint.
"""
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np

from psjob.foundation.checkpoint import store
from psjob.foundation.checkpoint.format import read_manifest, read_var

CHILD = r"""
import sys
import psjob.fluid as fluid
from psjob.fleet import CheckpointConfig, Checkpointer
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup), fluid.unique_name.guard():
    x = fluid.layers.data(name="x", shape=[2048])
    fluid.layers.fc(x, 2048, param_attr=fluid.ParamAttr(name="w"), bias_attr=False)
exe, scope = fluid.Executor(), fluid.Scope()
exe.run(startup, scope=scope)
ckpt = Checkpointer(exe, main, CheckpointConfig(root=sys.argv[1], interval_steps=1, keep=2), scope=scope)
position = ckpt.resume()
step = position["step"] if position else 0
print("resumed", step, flush=True)
while True:
    step += 1
    scope.vars["w"][...] = step   # the model of step N is all N: a torn save would show
    ckpt.after_step(step, epoch=0, offset=step)
"""


def _check(root):
    committed = [c for c in store.scan(str(root)) if c.status != store.INCOMPLETE]
    for c in committed:
        assert c.status == store.OK, c
        assert store.verify(c.path) == [], c.path
        w = read_var(c.path, "w", read_manifest(c.path)["vars"]["w"])
        assert (w == c.step).all(), c.path
    newest = store.newest_good(str(root))
    assert newest is None or newest.step == max(c.step for c in committed)
    return newest.step if newest else 0


def test_kills_at_random_moments_of_saving_leave_only_whole_checkpoints(tmp_path):
    root = tmp_path / "ckpt"
    rng = random.Random(7)
    torn, last = 0, 0
    for _ in range(8):
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(root)], stdout=subprocess.PIPE, text=True)
        try:
            resumed = int(child.stdout.readline().split()[1])
            assert resumed == last  # it resumes from the newest good checkpoint
            time.sleep(rng.uniform(0.05, 0.5))
            child.send_signal(signal.SIGKILL)
            child.wait(10)
        finally:
            if child.poll() is None:
                child.kill()
            child.stdout.close()
        partial = [c for c in store.scan(str(root)) if c.status == store.INCOMPLETE]
        temps = [n for d, _, files in os.walk(root) for n in files if n.startswith(".tmp-")]
        torn += bool(partial or temps)
        last = _check(root)
    assert last > 0
    assert torn >= 1, "no kill landed inside a save; the test proved nothing"
    assert np.all(read_var(store.newest_good(str(root)).path, "w",
                           read_manifest(store.newest_good(str(root)).path)["vars"]["w"]) == last)
