"""The async communicator's cost per step on its two threads: the trainer's `push` and the sender.

    python bench/communicator_push.py [--steps 400] [--runtimes DIR1,DIR2] [--rounds 3] [--no-copy]

A pserver process (psjob's gRPC server and data plane, PaddleRec dnn's dense part: fc
247-512-256-128-32-1, Adam; 10 gradients, ~1.2 MB a step) and, in this process, a
Communicator (async, max_stale_steps 1) fed like a trainer's backward pass: a 300×300
matmul before each of the step's 10 pushes, one pull per step. Prints the pushing thread's
CPU µs per push (time.thread_time around each `push`), the sender thread's CPU ms per step
(its pthread CPU clock) and the wall ms per step.

--runtimes runs each runtime directory (first on PYTHONPATH) in turn, interleaved over
--rounds. --no-copy is a what-if, not a mode: it replaces the communicator's copy of each
pushed gradient by the array itself (unsafe for real trainers) to show what the copy costs.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import subprocess
import sys
import threading
import time

import numpy as np

SIZES = (512, 256, 128, 32, 1)


def _net():
    import psjob.fluid as fluid
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        h = fluid.layers.data(name="x", shape=[247])
        for n in SIZES:
            h = fluid.layers.fc(h, n, act="relu" if n > 1 else None)
        fluid.optimizer.Adam(0.001).minimize(fluid.layers.mean(h))
    return main, startup


def _serve(ep, ready, done):
    import psjob.fluid as fluid
    from psjob.cluster.pserver.pserver_state import PserverState
    from psjob.cluster.rpc.server import start_server
    from psjob.fluid.transpiler import DistributeTranspiler
    main, startup = _net()
    t = DistributeTranspiler()
    t.transpile(0, program=main, startup_program=startup, pservers=ep, trainers=1, sync_mode=False)
    program, pstartup = t.get_pserver_programs(ep)
    state = PserverState(program, scope=fluid.Scope(), executor=fluid.Executor())
    state.run_startup(pstartup)
    server = start_server(state, ep)
    ready.set()
    done.wait()
    server.stop(0)


def measure(steps: int, no_copy: bool) -> str:
    from psjob.cluster.rpc.client import GrpcPSClient
    from psjob.cluster.trainer import communicator
    from psjob.launcher.launch import loopback_endpoints
    [ep] = loopback_endpoints(1)
    ctx = mp.get_context("spawn")
    ready, done = ctx.Event(), ctx.Event()
    server = ctx.Process(target=_serve, args=(ep, ready, done))
    server.start()
    if not ready.wait(120):
        raise RuntimeError("the pserver did not start within 120 s")
    grads = {p.name: np.ones([abs(d) for d in p.shape], "float32") for p in _net()[0].global_block().all_parameters()}
    if no_copy:
        communicator._copy = lambda value: value
    client = GrpcPSClient([ep], 0, tls=None)
    client.wait_server_ready(timeout_s=60)
    comm = communicator.Communicator(client, communicator.CommunicatorConfig(max_stale_steps=1))
    try:
        params = list(grads)
        comm.pull(ep, params).wait()
        sender = next(t for t in threading.enumerate() if t.name == "psjob-send")
        clock = time.pthread_getcpuclockid(sender.ident)
        a = np.random.default_rng(0).random((300, 300), dtype=np.float32)
        push_cpu, s0, w0 = 0.0, time.clock_gettime(clock), time.perf_counter()
        for _ in range(steps):
            comm.pull(ep, params).wait()
            for name in params:
                a @ a  # a slice of the backward pass between two send ops
                c0 = time.thread_time()
                comm.push(ep, {f"{name}@GRAD": grads[name]})
                push_cpu += time.thread_time() - c0
        send_cpu, wall = time.clock_gettime(clock) - s0, time.perf_counter() - w0
    finally:
        comm.stop()
        client.close()
        done.set()
        server.join(30)
    return (f"push {1e6 * push_cpu / (steps * len(grads)):5.1f} CPU-µs, sender {1e3 * send_cpu / steps:5.2f} "
            f"CPU-ms per step, wall {1e3 * wall / steps:6.2f} ms per step")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--runtimes", default="", help="comma-separated runtime dirs (PYTHONPATH); '' = this one")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--no-copy", action="store_true", help="what-if: push hands over the caller's array")
    p.add_argument("--run", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.run:
        print(measure(args.steps, args.no_copy), flush=True)
        return
    for rnd in range(args.rounds):
        for runtime in args.runtimes.split(","):
            env = dict(os.environ)
            if runtime:
                env["PYTHONPATH"] = runtime + os.pathsep + env.get("PYTHONPATH", "")
            cmd = [sys.executable, os.path.abspath(__file__), "--run", "--steps", str(args.steps)] \
                + (["--no-copy"] if args.no_copy else [])
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
            if r.returncode != 0:
                raise RuntimeError(f"{runtime or 'installed'} failed:\n{r.stderr[-3000:]}")
            line = [ln for ln in r.stdout.splitlines() if ln.startswith("push ")][-1]
            print(f"round {rnd + 1} {runtime or 'installed':40} {line}  (load {os.getloadavg()[0]:.1f})", flush=True)


if __name__ == "__main__":
    main()
