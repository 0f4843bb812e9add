"""Seed 004's multi-machine incremental training, as its guide writes it.

    incremental_train.py --phase save --path DIR --out OUT   # trainer 0 saves at the end
    incremental_train.py --phase load --path DIR --out OUT   # pservers load, trainers go on

Phase save: a plain DistributeTranspiler job trains; trainer 0 calls
`fluid.io.save_persistables(exe, path, trainer_program)`.
Phase load: every process transpiles with `current_endpoint`; each pserver
runs its startup program, then `fluid.io.load_persistables(exe, path,
pserver_startup)`, then serves; trainers fetch their parameters from the
pservers. Files in OUT: pserver-<ep>.npz (what each pserver loaded),
trainer0-start.npz (what trainer 0 fetched), trainer0.json (losses).
"""
import argparse
import json
import os

import numpy as np

import psjob.fluid as fluid

p = argparse.ArgumentParser()
p.add_argument("--phase", choices=["save", "load"], required=True)
p.add_argument("--path", required=True)
p.add_argument("--out", required=True)
p.add_argument("--steps", type=int, default=5)
args = p.parse_args()

x = fluid.layers.data(name="x", shape=[13], dtype="float32")
y = fluid.layers.data(name="y", shape=[1], dtype="float32")
hidden = fluid.layers.fc(input=x, size=2048, act="tanh")  # 13 x 2048: sliced over the pservers
y_predict = fluid.layers.fc(input=hidden, size=1, act=None)
avg_loss = fluid.layers.mean(fluid.layers.square_error_cost(input=y_predict, label=y))
fluid.optimizer.Adam(learning_rate=0.003).minimize(avg_loss)
fluid.default_main_program().random_seed = fluid.default_startup_program().random_seed = 3

exe = fluid.Executor(fluid.CPUPlace())
training_role = os.getenv("PADDLE_TRAINING_ROLE")
trainer_id = int(os.getenv("PADDLE_TRAINER_ID", "0"))
trainers = int(os.getenv("PADDLE_TRAINERS"))
pserver_endpoints = os.getenv("PADDLE_PSERVER_ENDPOINTS")
# The guide builds it from PADDLE_CURRENT_IP and the port; psjob also exports it whole.
current_endpoint = os.getenv("PSJOB_CURRENT_ENDPOINT", "")

t = fluid.DistributeTranspiler()
kwargs = {"current_endpoint": current_endpoint} if args.phase == "load" else {}
t.transpile(trainer_id, pservers=pserver_endpoints, trainers=trainers, sync_mode=True, **kwargs)

if training_role == "PSERVER":
    pserver_prog = t.get_pserver_program(current_endpoint)
    pserver_startup = t.get_startup_program(current_endpoint, pserver_prog)
    exe.run(pserver_startup)
    if args.phase == "load":
        fluid.io.load_persistables(exe, args.path, pserver_startup)
        scope = fluid.global_scope()
        names = [v.name for v in pserver_prog.global_block().vars.values()
                 if v.persistable and "@GRAD" not in v.name and v.name in scope.vars
                 and isinstance(scope.vars[v.name], np.ndarray)]
        np.savez(os.path.join(args.out, f"pserver-{current_endpoint.replace(':', '_')}.npz"),
                 **{n: scope.vars[n] for n in names})
    exe.run(pserver_prog)
else:
    trainer_prog = t.get_trainer_program()
    exe.run(fluid.default_startup_program())
    scope = fluid.global_scope()
    params = [p.name for p in fluid.default_main_program().all_parameters()]
    if trainer_id == 0 and args.phase == "load":
        np.savez(os.path.join(args.out, "trainer0-start.npz"), **{n: np.array(scope.vars[n]) for n in params})
    rng = np.random.default_rng(0 if args.phase == "save" else 1)
    w = rng.normal(size=(13, 1)).astype("float32")
    losses = []
    for step in range(args.steps):
        xs = rng.normal(size=(16, 13)).astype("float32")
        ys = np.tanh(xs @ w)
        loss, = exe.run(trainer_prog, feed={"x": xs[trainer_id::trainers], "y": ys[trainer_id::trainers]},
                        fetch_list=[avg_loss])
        losses.append(float(np.asarray(loss).reshape(-1)[0]))
    if trainer_id == 0:
        if args.phase == "save":
            prog = fluid.default_main_program()
            fluid.io.save_persistables(exe, args.path, prog)
        with open(os.path.join(args.out, f"trainer0-{args.phase}.json"), "w") as f:
            json.dump({"losses": losses}, f)
    exe.close()
