"""A pserver's prefetch latency while a push is being applied: the two ways to serve it, side by side.

    python bench/prefetch_under_push.py [--steps 400] [--rounds 4] [--batch 32]

An async trainer's step waits on its prefetch, and the prefetch arrives at the pserver
while the trainer's previous push is still being applied (another thread of the same
process, sharing the GIL). This replays that overlap in one process, without a transport
or a trainer: a PserverState for the CTR-DNN of the Paddle anchor (26 slots into one
distributed table of width 16, fc 256-128-1, Adam), one thread applying a step's push
(dense gradients and the table's rows) while the main thread prefetches the next batch's
ids, timed. Modes, interleaved step by step over --rounds so a busy machine's load falls
on each alike:

    block      the prefetch block run by the executor under its lock (psjob before the direct read)
    direct     the table read directly (psjob.cluster.pserver.reads)

Printed per mode: the prefetch's median and 90th-percentile wall ms, and the apply's
median wall ms. The GIL switch interval is the serving pserver's (0.5 ms).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "runtime"))

EP = "127.0.0.1:6999"


def _state():
    import psjob.fluid as fluid
    from psjob.cluster.inmemory import InMemoryCluster
    from psjob.fluid.transpiler import DistributeTranspiler
    from psjob.training.models import ctr as ctr_model

    cfg = ctr_model.CTRConfig(sparse_feature_dim=1_000_001, embedding_dim=16, hidden=(256, 128),
                              is_distributed=True)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        model = ctr_model.build_network(cfg)
        fluid.optimizer.Adam(1e-3, lazy_mode=True).minimize(model.loss)
    tr = DistributeTranspiler()
    tr.transpile(0, program=main, startup_program=startup, pservers=EP, trainers=1, sync_mode=False)
    return InMemoryCluster({EP: tr.get_pserver_programs(EP)}).handler(EP), main


def _push(state, main, ids, rng):
    from psjob.fluid.core import SelectedRows
    out = {}
    for name in state.recv_names:
        base = name.split(".trainer_")[0].split(".pserver_")[0]
        if base.startswith("SparseFeatFactors"):
            out[name] = SelectedRows(ids, rng.standard_normal((ids.size, 16)).astype("float32") * 1e-3, 0)
        else:
            shape = main.global_block().var(base).shape
            out[name] = rng.standard_normal(shape).astype("float32") * 1e-3
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=400, help="steps per mode and round")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--batch", type=int, default=32)
    args = p.parse_args()
    from psjob.cluster.pserver.pserver import SWITCH_INTERVAL_S
    from psjob.cluster.pserver.reads import _DirectLookup
    from psjob.training.models.ctr import TABLE_NAME

    state, main_prog = _state()
    table = TABLE_NAME
    direct = state.reads._plan(table)
    assert isinstance(direct, _DirectLookup), "the transpiled prefetch block is not one lookup"
    modes = {"block": direct.block, "direct": direct}
    rng = np.random.default_rng(0)
    vocab = 200_000  # ids drawn Zipf-like from a vocabulary the table fills early

    def batch_ids():
        raw = np.minimum(rng.zipf(1.2, 26 * args.batch), vocab) * 2654435761 % (1 << 40)
        return np.unique(raw.astype(np.int64))

    for _ in range(200):  # warm the table and the executor
        ids = batch_ids()
        state.on_prefetch(0, table, ids)
        state.on_send(0, _push(state, main_prog, ids, rng))
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    lat: dict = {m: [] for m in modes}
    apply_ms: dict = {m: [] for m in modes}
    for _ in range(args.rounds):
        for _ in range(args.steps):
            for mode, plan in modes.items():
                state.reads._plans[table] = plan
                ids = batch_ids()
                push = _push(state, main_prog, ids, rng)
                started = threading.Event()

                def apply(push=push, started=started, mode=mode):
                    t0 = time.perf_counter()
                    started.set()
                    state.on_send(0, push)
                    apply_ms[mode].append(1e3 * (time.perf_counter() - t0))

                worker = threading.Thread(target=apply)
                worker.start()
                started.wait()
                nxt = batch_ids()
                t0 = time.perf_counter()
                state.on_prefetch(0, table, nxt)
                lat[mode].append(1e3 * (time.perf_counter() - t0))
                worker.join()
    load = os.getloadavg()[0]
    print(f"batch {args.batch}, {args.rounds} x {args.steps} steps per mode, load average {load:.1f}")
    print(f"{'mode':8s} {'prefetch p50 ms':>16s} {'p90 ms':>8s} {'apply p50 ms':>13s}")
    for mode in modes:
        xs = sorted(lat[mode])
        print(f"{mode:8s} {statistics.median(xs):16.3f} {xs[int(0.9 * len(xs))]:8.3f} "
              f"{statistics.median(apply_ms[mode]):13.3f}")


if __name__ == "__main__":
    main()
