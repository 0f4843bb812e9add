"""A Fleet training script run by the component tests under `psjob launch`.

    fleet_train.py --model {linear,ctr} --mode {sync,async,half_async,geo} --out DIR
                   [--steps N] [--batch B] [--data DIR] [--distributed_table]

Each trainer trains on its share of every global batch (trainer t takes rows
t::trainers), so sync mode is comparable to single-process training on the
whole global batches. Trainer 0 writes DIR/trainer0.npz with its parameters
and DIR/trainer0.json with per-step losses (and the CTR AUC).
"""
import argparse
import json
import os
import time

import numpy as np

import psjob.fluid as fluid
from psjob import fleet
from psjob.fleet import DistributedStrategy

p = argparse.ArgumentParser()
p.add_argument("--model", default="linear")
p.add_argument("--mode", default="sync")
p.add_argument("--out", required=True)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--k_steps", type=int, default=4)
p.add_argument("--data", default="")
p.add_argument("--distributed_table", action="store_true")
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--optimizer", default="sgd")
p.add_argument("--id_mode", default="dense", choices=["dense", "hash"])
p.add_argument("--sleep_ms", type=float, default=0.0, help="pause after each step (slow trainers in tests)")
p.add_argument("--predict_pulls", type=float, default=None,
               help="a_sync_configs['predict_pulls'] (unset: Fleet's default, by each parameter's optimizer)")
p.add_argument("--start_together", action="store_true",
               help="wait until every trainer is ready before the first step (async quality tests)")
args = p.parse_args()

fleet.init()
if args.mode == "half_async":
    # Half-async is named through the transpiler config, as Fleet 1.x scripts do.
    strategy = fluid.DistributeTranspilerConfig()
    strategy.sync_mode, strategy.runtime_split_send_recv, strategy.half_async = False, True, True
else:
    strategy = DistributedStrategy()
    strategy.a_sync = args.mode != "sync"
    strategy.a_sync_configs = {"k_steps": args.k_steps if args.mode == "geo" else 0}
    if args.predict_pulls is not None:
        strategy.a_sync_configs = {"predict_pulls": args.predict_pulls}

main, startup = fluid.Program(), fluid.Program()
main.random_seed = startup.random_seed = 7
with fluid.program_guard(main, startup), fluid.unique_name.guard():
    if args.model == "linear":
        x = fluid.layers.data(name="x", shape=[13])
        y = fluid.layers.data(name="y", shape=[1])
        pred = fluid.layers.fc(x, 1, param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.1)))
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        auc = None
        opt = fluid.optimizer.SGD(0.01) if args.optimizer == "sgd" else fluid.optimizer.Adam(0.01)
    else:
        from psjob.dataset import ctr
        from psjob.training.models import ctr as ctr_model
        cfg = ctr_model.CTRConfig(sparse_feature_dim=ctr.SPARSE_FEATURE_DIM,
                                  is_distributed=args.distributed_table)
        model = ctr_model.build_network(cfg)
        loss, auc = model.loss, model.batch_auc
        opt = (fluid.optimizer.Adam(args.lr, lazy_mode=True) if args.optimizer == "adam"
               else fluid.optimizer.SGD(args.lr))
    fleet.distributed_optimizer(opt, strategy).minimize(loss)

exe = fluid.Executor(fluid.CPUPlace())
if fleet.is_server():
    fleet.init_server()
    fleet.run_server()
else:
    tid, n = fleet.worker_index(), fleet.worker_num()
    fleet.init_worker()
    exe.run(fleet.startup_program)
    if args.start_together and n > 1:
        # An async job's quality depends on its trainers overlapping; a short job whose
        # trainers start seconds apart (interpreter start-up) would mostly train one at a time.
        open(os.path.join(args.out, f"ready-{tid}"), "w").close()
        deadline = time.monotonic() + 120
        while not all(os.path.exists(os.path.join(args.out, f"ready-{t}")) for t in range(n)):
            if time.monotonic() > deadline:
                raise SystemExit(f"trainer {tid}: the other trainers were not ready within 120 s")
            time.sleep(0.02)
    losses, aucs, scored = [], [], []
    if args.model == "linear":
        rng = np.random.default_rng(0)
        w_true = rng.normal(size=(13, 1)).astype("float32")
        for step in range(args.steps):
            X = rng.normal(size=(args.batch, 13)).astype("float32")
            Y = X @ w_true + 0.5
            l, = exe.run(fleet.main_program, feed={"x": X[tid::n], "y": Y[tid::n]}, fetch_list=[loss])
            losses.append(float(l[0]))
            if args.sleep_ms:
                time.sleep(args.sleep_ms / 1000)
    else:
        from psjob.dataset import ctr
        from psjob.training.models import ctr as ctr_model
        id_mode = args.id_mode
        for step, b in enumerate(ctr.batches(args.data, args.batch, id_mode=id_mode, drop_last=True)):
            if step >= args.steps:
                break
            rows = slice(tid, None, n)
            lod = [np.asarray(o) for o in b.lod]
            ids, offs = [], []
            for i, o in zip(b.ids, lod):
                sel = np.arange(len(o) - 1)[rows]
                lens = o[sel + 1] - o[sel]
                idx = np.concatenate([np.arange(o[s], o[s + 1]) for s in sel])
                ids.append(i[idx])
                offs.append(np.concatenate([[0], np.cumsum(lens)]))
            part = ctr.CtrBatch(b.dense[rows], tuple(ids), tuple(offs), b.label[rows])
            l, a, pr = exe.run(fleet.main_program, feed=ctr_model.feed_dict(model, part),
                               fetch_list=[loss, auc, model.predict])
            scored.append((pr.reshape(-1), part.label.reshape(-1)))
            losses.append(float(l[0]))
            aucs.append(float(a[0]))
    scope = fluid.global_scope()
    if tid == 0:
        params = {p.name: np.array(scope.find_var(p.name).get_tensor())
                  for p in main.all_parameters() if scope.find_var(p.name) is not None}
        np.savez(os.path.join(args.out, "trainer0.npz"), **params)
        if scored:  # predictions and labels of the second half of training
            half = scored[len(scored) // 2:]
            np.savez(os.path.join(args.out, "trainer0_scores.npz"), predict=np.concatenate([p for p, _ in half]),
                     label=np.concatenate([y for _, y in half]))
        with open(os.path.join(args.out, "trainer0.json"), "w") as f:
            config = getattr(fleet.fleet.rpc_service, "config", None)  # an async trainer's Communicator
            json.dump({"losses": losses, "aucs": aucs,
                       "predict_pulls": None if config is None else config.predict_pulls}, f)
    fleet.stop_worker()
