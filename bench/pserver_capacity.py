"""How many trainers one pserver keeps busy: K synthetic trainers replaying CTR traffic.

    python bench/pserver_capacity.py [--trainers 1,2,4,8] [--steps 60] [--batch 1024]
    python bench/pserver_capacity.py --in-process [--steps 300]

The CTR-DNN (26 slots x 16 in one distributed table, 13 dense, fc 256-128-1,
Adam) is transpiled for one async pserver and K trainers; the pserver runs in
its own process (psjob.cluster.pserver.pserver.serve, as under `psjob launch`). Each of K
client processes replays what a trainer of that program sends per step, as
fast as the replies come back:

    prefetch  the distinct ids of one batch (26 slots x --batch examples of
              psjob's synthetic CTR data, client k reading batches k, k+K, ...)
    push      the dense gradients (every fc weight and bias) and the table
              gradient with one row per distinct id (as the fused trainer sends),
              its reply carrying the dense parameters (the async communicator's
              push_pull: psjob.cluster.trainer.communicator)
    pull      with --pull separate only: the dense parameters in a GetVariables
              of their own (the traffic before push_pull; --pull both runs the
              two replays, K by K, for their difference in one window)

Gradients are random (small): the pserver's work per request does not depend
on their values. For each K the bench prints the pserver's table rows served
per second (prefetched + pushed rows), the pserver CPU-seconds per trainer
step (/proc/<pserver>/stat over the timed steps: what a pserver core pays per
trainer step, which should stay flat as K grows) and each request kind's
latency p50/p99 as the clients saw it. On a machine with fewer cores than K + 1
the clients compete with the pserver for CPU: read the CPU per step, not rows/s.

--in-process replays the same traffic of one trainer straight into the
pserver's PserverState in this process (no gRPC, no framing) and prints its
CPU milliseconds per trainer step, per request kind: the table, optimizer and
executor work of a step, apart from the transport's.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import tempfile
import time

import numpy as np

HOST = "127.0.0.1"


def transpile(endpoint, trainers, trainer_id=0):
    import psjob.fluid as fluid
    from psjob.dataset import ctr
    from psjob.fluid.transpiler import DistributeTranspiler, DistributeTranspilerConfig
    from psjob.training.models import ctr as ctr_model
    cfg = ctr_model.CTRConfig(sparse_feature_dim=ctr.SPARSE_FEATURE_DIM, is_distributed=True)
    main, startup = fluid.Program(), fluid.Program()
    model = ctr_model.build(cfg, main, startup)
    config = DistributeTranspilerConfig()
    config.wait_port = False
    t = DistributeTranspiler(config)
    t.transpile(trainer_id, program=main, startup_program=startup, pservers=endpoint, trainers=trainers,
                sync_mode=False)
    return t, model


def serve_child(endpoint, trainers):
    import psjob.fluid as fluid
    from psjob.cluster.pserver.pserver import ServeOptions, serve
    t, _ = transpile(endpoint, trainers)
    prog, startup = t.get_pserver_programs(endpoint)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    serve(prog, scope, exe, ServeOptions())


def traffic(endpoint, trainers, trainer_id):
    """(table name, dense grad names and shapes, dense param names) of the trainer program."""
    t, _ = transpile(endpoint, trainers, trainer_id)
    block = t.get_trainer_program(wait_port=False).global_block()
    table = next(op.attr("table_names")[0] for op in block.ops if op.type == "prefetch")
    sends = [n for op in block.ops if op.type == "send" for n in op.input("X")]
    dense = {n: tuple(block.var(n).shape) for n in sends if not n.startswith(table)}
    table_grad = next(n for n in sends if n.startswith(table))
    params = [n for op in block.ops if op.type == "recv" for n in op.output("Out")]
    return table, table_grad, dense, params


def client_child(endpoint, trainers, trainer_id, data, batch, steps, start, results, separate_pull):
    from psjob.cluster.rpc.client import GrpcPSClient
    from psjob.dataset import ctr
    from psjob.fluid.core import SelectedRows
    table, table_grad, dense, params = traffic(endpoint, trainers, trainer_id)
    rng = np.random.default_rng(trainer_id)
    id_sets = []
    for i, b in enumerate(ctr.batches(data, batch, drop_last=True)):
        if i % trainers == trainer_id:
            id_sets.append(np.unique(np.concatenate(b.ids)))
        if len(id_sets) == steps + 1:
            break
    grads = {n: (rng.standard_normal(s) * 1e-3).astype(np.float32) for n, s in dense.items()}
    width = 16
    client = GrpcPSClient([endpoint], trainer_id)
    client.wait_server_ready(timeout_s=120)
    lat = {"prefetch": [], "push": [], "pull": []}
    rows = 0

    def step(ids):
        nonlocal rows
        t0 = time.perf_counter()
        client.prefetch(endpoint, table, ids).wait()
        t1 = time.perf_counter()
        sparse = SelectedRows(ids, (rng.standard_normal((ids.size, width)) * 1e-3).astype(np.float32), 0)
        pushed = dict(grads, **{table_grad: sparse})
        if separate_pull:
            client.push(endpoint, pushed).wait()
        else:
            client.push_pull(endpoint, pushed, params).wait()
        t2 = time.perf_counter()
        if separate_pull:
            client.pull(endpoint, params).wait()
        t3 = time.perf_counter()
        rows += 2 * ids.size
        return t1 - t0, t2 - t1, t3 - t2

    step(id_sets[0])  # warm-up: connection, first rows
    start.wait()      # every client ready: the timed window starts together
    rows = 0
    t0 = time.perf_counter()
    for ids in (id_sets[1:] * steps)[:steps]:
        for kind, seconds in zip(("prefetch", "push", "pull"), step(ids)):
            lat[kind].append(seconds)
    results.put((trainer_id, time.perf_counter() - t0, rows, lat))
    client.complete()
    client.close()


def replay_in_process(data, batch, steps):
    """CPU ms per step of PserverState's own work (prefetch, push, pull), one trainer's traffic."""
    from psjob.cluster.pserver.pserver_state import PserverState
    from psjob.dataset import ctr
    from psjob.fluid.core import SelectedRows
    endpoint = f"{HOST}:1"  # named in the program only: nothing listens
    t, _ = transpile(endpoint, 1)
    prog, startup = t.get_pserver_programs(endpoint)
    state = PserverState(prog)
    state.run_startup(startup)
    table, table_grad, dense, params = traffic(endpoint, 1, 0)
    rng = np.random.default_rng(0)
    grads = {n: (rng.standard_normal(s) * 1e-3).astype(np.float32) for n, s in dense.items()}
    steps_data = []
    for b in ctr.batches(data, batch, drop_last=True):
        ids = np.unique(np.concatenate(b.ids))
        table_rows = SelectedRows(ids, (rng.standard_normal((ids.size, 16)) * 1e-3).astype(np.float32), 0)
        steps_data.append((ids, dict(grads, **{table_grad: table_rows})))
        if len(steps_data) == 50:
            break
    spent = {"prefetch": 0.0, "push": 0.0, "pull": 0.0}

    def step(ids, pushed):
        t0 = time.process_time()
        state.on_prefetch(0, table, ids)
        t1 = time.process_time()
        state.on_send(0, pushed)
        t2 = time.process_time()
        state.on_get(0, params)
        t3 = time.process_time()
        return t1 - t0, t2 - t1, t3 - t2

    for ids, pushed in steps_data:  # warm-up: every id gets its row
        step(ids, pushed)
    for i in range(steps):
        for kind, seconds in zip(spent, step(*steps_data[i % len(steps_data)])):
            spent[kind] += seconds
    return {kind: 1e3 * v / steps for kind, v in spent.items()}


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(k, data, batch, steps, separate_pull):
    from psjob.launcher.launch import free_ports
    endpoint = f"{HOST}:{free_ports(1)[0]}"
    ctx = mp.get_context("spawn")
    server = ctx.Process(target=serve_child, args=(endpoint, k), daemon=True)
    server.start()
    start, results = ctx.Barrier(k + 1), ctx.Queue()
    clients = [ctx.Process(target=client_child, args=(endpoint, k, t, data, batch, steps, start, results,
                                                                   separate_pull),
                           daemon=True) for t in range(k)]
    for c in clients:
        c.start()
    start.wait(timeout=600)
    c0, w0 = cpu_seconds(server.pid), time.perf_counter()
    got = [results.get(timeout=1800) for _ in range(k)]
    c1, w1 = cpu_seconds(server.pid), time.perf_counter()
    for c in clients:
        c.join(60)
    server.join(60)
    rows = sum(r[2] for r in got)
    lat = {kind: np.concatenate([r[3][kind] for r in got]) for kind in ("prefetch", "push", "pull")}
    return {"k": k, "rows_per_s": rows / (w1 - w0), "cpu_per_step": (c1 - c0) / (k * steps),
            "latency": {kind: (np.percentile(v, 50), np.percentile(v, 99)) for kind, v in lat.items()}}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trainers", default="1,2,4,8")
    p.add_argument("--steps", type=int, default=60, help="timed steps per trainer")
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--in-process", action="store_true",
                   help="PserverState's own CPU per step, no gRPC (one trainer's traffic)")
    p.add_argument("--pull", choices=("with-push", "separate", "both"), default="with-push",
                   help="the dense parameters in the push's reply (as trainers do), a GetVariables of "
                        "their own (as they did), or both replays K by K")
    p.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "psjob-capacity-ctr"))
    args = p.parse_args()
    from psjob.dataset import ctr
    ks = [int(v) for v in args.trainers.split(",")]
    examples = args.batch * (max(ks) * (min(args.steps, 50) + 1) + 1)
    if not os.path.exists(os.path.join(args.data, "meta.json")):
        ctr.generate(args.data, num_examples=examples, num_files=1, seed=0, overwrite=True)
    if args.in_process:
        ms = replay_in_process(args.data, args.batch, args.steps)
        print(f"PserverState in process (no gRPC), one trainer's CTR traffic, batch {args.batch}, "
              f"{args.steps} steps; loadavg {os.getloadavg()[0]:.1f}")
        print(f"CPU ms/step: {sum(ms.values()):.2f} (" + ", ".join(f"{k} {v:.2f}" for k, v in ms.items()) + ")")
        return
    print(f"one async pserver, K synthetic CTR trainers (prefetch, push dense + table rows, pull dense per "
          f"step; batch {args.batch}), {args.steps} timed steps each; {os.cpu_count()} cores, "
          f"loadavg {os.getloadavg()[0]:.1f}")
    print(f"{'K':>3} {'pull':>10} {'rows/s':>12} {'pserver CPU ms/step':>20}   latency ms p50/p99: prefetch, "
          f"push, pull")
    replays = {"with-push": (False,), "separate": (True,), "both": (True, False)}[args.pull]
    for k in ks:
        for separate in replays:
            r = run(k, args.data, args.batch, args.steps, separate)
            lat = "   ".join(f"{1e3 * a:6.1f}/{1e3 * b:6.1f}" for a, b in r["latency"].values())
            print(f"{k:>3} {'separate' if separate else 'with push':>10} {r['rows_per_s']:>12,.0f} "
                  f"{1e3 * r['cpu_per_step']:>20.2f}   {lat}", flush=True)


if __name__ == "__main__":
    main()
