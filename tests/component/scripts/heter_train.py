"""The CTR model as a (heterogeneous) parameter-server job, for the heter component tests.

    heter_train.py --data DIR --out DIR [--mode sync|async|half_async] [--heter]
                   [--device_guard cpu|gpu|xpu] [--steps N] [--batch B] [--distributed_table]

With --heter the MLP is built inside fluid.device_guard("gpu"), so under
`psjob launch --heter_worker_num K` the heter trainers run it (on the place
--device_guard names: cpu here). Each trainer trains on its share of every
global batch (trainer t takes examples t::trainers). Trainer 0 writes
DIR/trainer0.json: per-step losses, the final AUC (fluid's cumulative auc op),
and the number of heter stages it ran.
"""
import argparse
import json
import os

import numpy as np

import psjob.fluid as fluid
from psjob import fleet
from psjob.dataset import ctr
from psjob.fleet import DistributedStrategy
from psjob.training.models import ctr as ctr_model

p = argparse.ArgumentParser()
p.add_argument("--data", required=True)
p.add_argument("--out", required=True)
p.add_argument("--mode", default="sync")
p.add_argument("--heter", action="store_true")
p.add_argument("--device_guard", default="cpu")
p.add_argument("--steps", type=int, default=40)
p.add_argument("--batch", type=int, default=64)
p.add_argument("--distributed_table", action="store_true")
args = p.parse_args()

fleet.init()
if args.mode == "half_async":  # Fleet 1.x's spelling: a transpiler config
    strategy = fluid.DistributeTranspilerConfig()
    strategy.sync_mode, strategy.runtime_split_send_recv, strategy.half_async = False, True, True
else:
    strategy = DistributedStrategy()
    strategy.a_sync = args.mode != "sync"
    strategy.a_sync_configs = {"heter_worker_device_guard": args.device_guard}

cfg = ctr_model.CTRConfig(sparse_feature_dim=ctr.SPARSE_FEATURE_DIM, embedding_dim=8, hidden=(64, 32),
                          is_distributed=args.distributed_table, seed=7,
                          mlp_device="gpu" if args.heter else "")
main, startup = fluid.Program(), fluid.Program()
main.random_seed = startup.random_seed = cfg.seed
with fluid.program_guard(main, startup), fluid.unique_name.guard():
    model = ctr_model.build_network(cfg)
    fleet.distributed_optimizer(fluid.optimizer.Adam(0.005, lazy_mode=True), strategy).minimize(model.loss)

if fleet.is_server():          # pservers and, in a heter job, heter trainers
    fleet.init_server()
    fleet.run_server()
else:
    tid, n = fleet.worker_index(), fleet.worker_num()
    exe = fluid.Executor(fluid.CPUPlace())
    fleet.init_worker()
    exe.run(fleet.startup_program)
    losses, auc = [], 0.0
    for step, b in enumerate(ctr.batches(args.data, args.batch, drop_last=True)):
        if step >= args.steps:
            break
        rows = slice(tid, None, n)
        ids, offs = [], []
        for i, o in zip(b.ids, b.lod):
            o = np.asarray(o)
            sel = np.arange(len(o) - 1)[rows]
            ids.append(np.concatenate([i[o[s]:o[s + 1]] for s in sel]))
            offs.append(np.concatenate([[0], np.cumsum(o[sel + 1] - o[sel])]))
        part = ctr.CtrBatch(b.dense[rows], tuple(ids), tuple(offs), b.label[rows])
        loss, a = exe.run(fleet.main_program, feed=ctr_model.feed_dict(model, part),
                          fetch_list=[model.loss, model.auc])
        losses.append(float(loss[0]))
        auc = float(a[0])
    stages = [op.type for op in fleet.main_program.global_block().ops].count("send_and_recv")
    if tid == 0:
        # Held-out AUC: the examples after the training steps, through a forward-only clone
        # (the heter forward stage stays; sends, barriers and the backward stage go).
        test = fleet.main_program.clone(for_test=True)
        block = test.global_block()
        comm = int(fluid.OpRole.RPC | fluid.OpRole.Dist)
        block.ops = [op for op in block.ops if op.type == "send_and_recv"
                     or not (int(op.attr("op_role", 0)) & comm) and op.type != "auc"]
        test._bump()
        scores, labels = [], []
        for step, b in enumerate(ctr.batches(args.data, args.batch, drop_last=True)):
            if step >= args.steps:
                pred, = exe.run(test, feed=ctr_model.feed_dict(model, b), fetch_list=[model.predict])
                scores.append(pred.reshape(-1))
                labels.append(b.label.reshape(-1))
        test_auc = ctr.roc_auc(np.concatenate(labels), np.concatenate(scores))
        with open(os.path.join(args.out, "trainer0.json"), "w") as f:
            json.dump({"losses": losses, "auc": auc, "test_auc": test_auc, "stage_ops": stages}, f)
    fleet.stop_worker()
