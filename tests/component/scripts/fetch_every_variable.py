"""A Fleet script (sync) that fetches every variable of the user's program, run by
tests/component/test_fetch_every_variable.py under `psjob launch`.

    fetch_every_variable.py --model NAME --out DIR

NAME is one of tests/fetchkit.py's models, built with its table distributed where the
model has one. The names fetched are those of the program as the user builds it with a
plain optimizer (fetchkit.user_variables), before Fleet transpiles it; trainer 0 fetches
them from fleet.main_program (fetchkit.fetch_everything; every trainer does, from its own
batches, so that sync rounds close) and writes DIR/trainer0.npz
(the values by step and name) and DIR/trainer0.json (the names, the warmup's kernels).
PSJOB_EMBEDDING_FUSION in the environment switches the executor's fusion.
"""
import argparse
import json
import os
import sys

import numpy as np

import psjob.fluid as fluid
from psjob import fleet
from psjob.fleet import DistributedStrategy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import fetchkit

p = argparse.ArgumentParser()
p.add_argument("--model", required=True, choices=fetchkit.MODELS)
p.add_argument("--out", required=True)
args = p.parse_args()

fleet.init()
names = fetchkit.user_variables(fetchkit.build(args.model, distributed=True)[0])
strategy = DistributedStrategy()
strategy.a_sync = False
_, _, loss = fetchkit.build(args.model, distributed=True, strategy=strategy)

exe = fluid.Executor(fluid.CPUPlace())
if fleet.is_server():
    fleet.init_server()
    fleet.run_server()
else:
    fleet.init_worker()
    exe.run(fleet.startup_program)
    values, kernels = fetchkit.fetch_everything(exe, fleet.main_program, loss, names,
                                                fetchkit.feeds(args.model, 4, seed=fleet.worker_index()))
    if fleet.worker_index() == 0:
        np.savez(os.path.join(args.out, "trainer0.npz"), **values)
        with open(os.path.join(args.out, "trainer0.json"), "w") as f:
            json.dump({"names": names, "warmup_kernels": sorted(kernels)}, f)
    fleet.stop_worker()
