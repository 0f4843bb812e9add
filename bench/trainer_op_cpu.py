"""Main-thread CPU per step of a PaddleRec-shaped async trainer at batch 32, by op, in one process.

    python bench/trainer_op_cpu.py [--steps 500] [--top 25]

PaddleRec rank/dnn's shape (26 slots of one id each sharing one LoD, 13 dense, a
distributed table of 1,000,001 rows x 9, fc 512-256-128-32, Adam, the global and batch
`auc` ops), transpiled async for one in-memory pserver (psjob.cluster.inmemory) behind a
Communicator, trained through `pipelined` (prefetch_ahead) as train_from_dataset does.
Prints the main thread's CPU ms per step (time.thread_time: the pserver's work runs on
the communicator's thread and is not counted) and each op type's CPU µs per step from
the executor's kernel timings. Run it with PYTHONPATH=<another runtime> for a before/after
pair; set OPENBLAS_NUM_THREADS=1 (a loaded machine's BLAS threads otherwise spin into the
fc ops' figures).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import psjob.fluid as fluid
from psjob.cluster.inmemory import InMemoryCluster
from psjob.cluster.trainer.communicator import Communicator, CommunicatorConfig
from psjob.fluid.pipeline import pipelined
from psjob.fluid.transpiler import DistributeTranspiler
from psjob.training.models import ctr as ctr_model

WARMUP = 20


def build():
    cfg = ctr_model.CTRConfig(sparse_feature_dim=1_000_001, embedding_dim=9, hidden=(512, 256, 128, 32),
                              is_distributed=True)
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = cfg.seed
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        model = ctr_model.build_network(cfg)
        fluid.optimizer.Adam(cfg.learning_rate, lazy_mode=True).minimize(model.loss)
    t = DistributeTranspiler()
    t.transpile(0, program=main, startup_program=startup, pservers="127.0.0.1:6170", trainers=1, sync_mode=False)
    return model, startup, t.get_trainer_program(wait_port=False), InMemoryCluster.from_transpiler(t)


def feeds(model, n, rng):
    out = []
    for _ in range(n):
        lod = [np.arange(33, dtype=np.int64)]  # one id per example, one LoD object for every slot
        feed = {model.dense.name: rng.random((32, 13)).astype(np.float32),
                model.label.name: rng.integers(0, 2, (32, 1)).astype(np.int64)}
        for var in model.slots:
            feed[var.name] = (rng.integers(0, 1_000_001, (32, 1)).astype(np.int64), lod)
        out.append(feed)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=500)
    p.add_argument("--top", type=int, default=25)
    args = p.parse_args()
    model, startup, program, cluster = build()
    exe, scope = cluster.executor(0), fluid.Scope()
    exe.services["rpc"] = Communicator(exe.services["rpc"], CommunicatorConfig())
    exe.run(startup, scope=scope)
    batches = feeds(model, WARMUP + args.steps, np.random.default_rng(0))
    fetch = [model.loss, model.auc, model.batch_auc]
    for feed in batches[:WARMUP]:
        exe.run(program, feed=feed, fetch_list=fetch, scope=scope)
    exe.collect_timing, exe.timing_clock = True, time.thread_time
    c0 = time.thread_time()
    for feed in pipelined(exe, program, batches[WARMUP:]):
        exe.run(program, feed=feed, fetch_list=fetch, scope=scope)
    cpu = time.thread_time() - c0
    exe.services["rpc"].stop()
    n, ks = args.steps, exe.kernel_seconds
    print(f"steps {n}: main thread {1e3 * cpu / n:.3f} CPU-ms per step, of which ops {1e3 * sum(ks.values()) / n:.3f}")
    for op, seconds in sorted(ks.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  {op:40s} {1e6 * seconds / n:8.1f} µs")


if __name__ == "__main__":
    main()
