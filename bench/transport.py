"""psjob's transport alone: the data plane (TCP) against gRPC for one CTR trainer step's calls.

    python bench/transport.py [--steps 400] [--reps 3]

A pserver process serves psjob's real RPC front end (psjob.cluster.rpc.server.start_server:
frame decoding, the guard, metrics observer off) over a handler whose work is
nothing — it answers a prefetch with a fixed [15,000 x 16] float32 block and a
push with fixed dense parameters (570 KB) — so what is measured is the
transport: a client process (GrpcPSClient) replays a CTR step per iteration,

    prefetch  26,000 int64 ids                      → 15,000 x 16 float32 rows
    push_pull 15,000 x 16 float32 rows + their ids,
              570 KB of dense gradients              → 570 KB of dense parameters

first with PSJOB_DATA_PLANE=grpc, then tcp, alternating for --reps rounds (side by
side, so the machine's load drifts over both alike). Printed per mode: the pserver
process's CPU-ms per step (/proc over the timed steps), the client's, and the
step's wall-clock latency. The pserver's own work per step (table, optimizer)
is `bench/pserver_capacity.py --in-process`.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "runtime"))

IDS, ROWS, DIM, DENSE = 26_000, 15_000, 16, 570_000 // 4


def _cpu_s(pid="self") -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _NoWork:
    """A pserver handler that answers at once with fixed values (no table, no optimizer)."""

    def __init__(self):
        self.rows = np.ones((ROWS, DIM), np.float32)
        self.dense = {"dense": np.ones(DENSE, np.float32)}

    def on_prefetch(self, trainer_id, table, ids):
        return self.rows

    def on_send_and_get(self, trainer_id, values, names):
        return 0, self.dense, 1

    def on_status(self):
        return {"state": "SERVING"}


def serve(endpoint_file: str) -> None:
    from psjob.cluster.rpc.server import start_server
    from psjob.launcher.launch import free_ports
    endpoint = f"127.0.0.1:{free_ports(1)[0]}"
    server = start_server(_NoWork(), endpoint, max_workers=8)
    with open(endpoint_file + ".tmp", "w") as f:
        f.write(endpoint)
    os.replace(endpoint_file + ".tmp", endpoint_file)
    for _ in sys.stdin:  # one line per CPU reading asked for; EOF stops
        print(f"{_cpu_s():.4f}", flush=True)
    server.stop(0)


def one_mode(mode: str, steps: int, tmp: str) -> dict:
    from psjob.cluster.rpc.client import GrpcPSClient, RetryPolicy
    from psjob.fluid.core import SelectedRows
    from psjob.foundation.settings import Settings
    env = dict(os.environ, PSJOB_DATA_PLANE=mode)
    endpoint_file = os.path.join(tmp, f"endpoint-{mode}")
    if os.path.exists(endpoint_file):
        os.remove(endpoint_file)
    server = subprocess.Popen([sys.executable, __file__, "--serve", endpoint_file], env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        t_end = time.monotonic() + 60
        while not os.path.exists(endpoint_file):
            if server.poll() is not None or time.monotonic() > t_end:
                raise RuntimeError(f"the {mode} server did not start")
            time.sleep(0.05)
        endpoint = open(endpoint_file).read()
        client = GrpcPSClient([endpoint], retry=RetryPolicy(deadline_s=30), settings=Settings({"PSJOB_DATA_PLANE": mode}))
        client.wait_server_ready(timeout_s=60)
        rng = np.random.default_rng(0)
        ids = rng.integers(0, 1 << 40, IDS, dtype=np.int64)
        grads = {"emb@GRAD": SelectedRows(np.arange(ROWS, dtype=np.int64), np.ones((ROWS, DIM), np.float32), 1 << 40),
                 "dense@GRAD": np.ones(DENSE, np.float32)}

        def step():
            client.prefetch(endpoint, "emb", ids).wait()
            client.push_pull(endpoint, grads, ["dense"]).wait()
        for _ in range(10):
            step()

        def server_cpu():
            server.stdin.write("cpu\n")
            server.stdin.flush()
            return float(server.stdout.readline())
        s0, c0, t0 = server_cpu(), _cpu_s(), time.perf_counter()
        for _ in range(steps):
            step()
        t1, c1, s1 = time.perf_counter(), _cpu_s(), server_cpu()
        client.close()
        return {"server_ms": 1000 * (s1 - s0) / steps, "client_ms": 1000 * (c1 - c0) / steps,
                "latency_ms": 1000 * (t1 - t0) / steps}
    finally:
        server.stdin.close()
        server.wait(30)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--serve", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.serve:
        return serve(args.serve)
    import tempfile
    results = {"grpc": [], "tcp": []}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            for mode in ("grpc", "tcp"):
                r = one_mode(mode, args.steps, tmp)
                results[mode].append(r)
                print(f"[rep {rep}] {mode:4s}  server {r['server_ms']:.2f} CPU-ms/step  client "
                      f"{r['client_ms']:.2f}  latency {r['latency_ms']:.2f} ms", flush=True)
    print(f"{args.steps} steps x {args.reps} reps; loadavg {os.getloadavg()[0]:.1f}; median (min-max)")
    for key in ("server_ms", "client_ms", "latency_ms"):
        g = [r[key] for r in results["grpc"]]
        t = [r[key] for r in results["tcp"]]
        print(f"  {key:10s}  grpc {statistics.median(g):6.2f} ({min(g):.2f}-{max(g):.2f})   "
              f"tcp {statistics.median(t):6.2f} ({min(t):.2f}-{max(t):.2f})   "
              f"tcp/grpc {statistics.median(t) / statistics.median(g):.2f}x")


if __name__ == "__main__":
    main()
