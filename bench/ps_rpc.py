"""Parameter-server RPC over loopback (GrpcPSClient: the data plane, or gRPC with
PSJOB_DATA_PLANE=grpc) next to the same calls in-process.

    python bench/ps_rpc.py [--vocab 1000000] [--ids 65536] [--dense 2048x1024] [--repeat 20]

Builds one program with a dense fc weight and a distributed lookup table,
transpiles it for one async pserver, and serves the pserver program from a
child process (a real gRPC server). The parent then times, for each
operation, the gRPC call through psjob.cluster.rpc.client.GrpcPSClient and the same
request handled by a PserverState in this process (no transport):

    pull      dense parameter block           rows/s, MB/s
    push      dense gradient (+ SGD apply)    rows/s, MB/s
    prefetch  64K unique ids × dim 16         rows/s, MB/s
    push      sparse table gradient (64K rows, + SGD apply)

The table is the pserver's hash-keyed psjob.foundation.tables.SparseTable and the ids
are random int64 feature ids (hashes, negatives included), sent uniqued and
ascending as a trainer's prefetch and push send them (np.unique's order).
Their rows are created first, in a shuffled order (a table fills in the order
ids first arrive, unrelated to their values), so the timed calls measure
lookups and updates of existing rows scattered over the table. `--vocab`
only sizes the program's declared table.

and prints gRPC/in-process ratios. Then the prefetch target: the same
prefetch next to a bare gRPC method (a second child process that answers a
request of the prefetch's size with a reply of the prefetch's size and does
nothing else: the ceiling any prefetch could reach here), alternated for
--rounds rounds in one run; per round the rate ratio prefetch/bare and each
server's CPU milliseconds per request (from /proc, so the figure holds on a
loaded machine); the target is a median ratio >= 0.8.

To tell the transport from the table, a third child serves psjob's own
pserver service (psjob.cluster.rpc.server.start_server: the same guard, codec and
thread pool) with a handler that answers every prefetch with the same rows,
without a table: "server, no table" (called through GrpcPSClient, like the
prefetch) is what psjob's client and server add over the bare method; the
rest of the prefetch's cost is the pserver's table lookup (timed in this
process, CPU ms per call, on the same ids). A fourth child is that service
with a handler that gathers each reply's rows from a table-sized column in a
scattered order ("gather only"): a table whose id index cost nothing, the
ceiling of any index work. The bare method is also
served by grpc.aio, for the server CPU per call of the two server models.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import time

import numpy as np

ENDPOINT_HOST = "127.0.0.1"


def build(vocab: int, dense_in: int, dense_out: int, endpoint: str):
    import psjob.fluid as fluid
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[dense_in])
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
        emb = fluid.layers.embedding(ids, size=[vocab, 16], is_sparse=True, is_distributed=True,
                                     param_attr=fluid.ParamAttr(name="table"))
        pooled = fluid.layers.sequence_pool(emb, "sum")
        h = fluid.layers.fc(x, dense_out, param_attr=fluid.ParamAttr(name="dense_w"), bias_attr=False)
        loss = fluid.layers.mean(fluid.layers.concat([h, pooled], axis=1))
        fluid.optimizer.SGD(0.01).minimize(loss)
    config = fluid.DistributeTranspilerConfig()
    config.slice_var_up = False
    config.wait_port = False
    t = fluid.DistributeTranspiler(config)
    t.transpile(0, program=main, startup_program=startup, pservers=endpoint, trainers=1, sync_mode=False)
    return t


def serve_child(args, endpoint, ready):
    import psjob.fluid as fluid
    from psjob.cluster.pserver.pserver import ServeOptions, serve
    t = build(args.vocab, args.dense_in, args.dense_out, endpoint)
    prog, startup = t.get_pserver_programs(endpoint)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    ready.set()
    serve(prog, scope, exe, ServeOptions())


def cpu_seconds(pid):
    """utime + stime of a process, all threads (/proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CannedRows:
    """A pserver handler that answers every prefetch with the same rows: no table."""

    def __init__(self, n_ids, dim):
        self.rows = np.random.default_rng(0).normal(size=(n_ids, dim)).astype(np.float32)

    def on_prefetch(self, trainer_id, table, ids):
        if ids.size != self.rows.shape[0]:
            raise ValueError(f"expected {self.rows.shape[0]} ids, got {ids.size}")
        return self.rows

    def on_status(self):
        return {"state": "SERVING"}


class GatheredRows(CannedRows):
    """CannedRows that gathers each reply's rows from a table-sized value column, in the
    scattered order a table's rows have: a table with a perfect (free) id index."""

    def __init__(self, n_ids, dim):
        super().__init__(n_ids, dim)
        self.order = np.random.default_rng(1).permutation(n_ids)

    def on_prefetch(self, trainer_id, table, ids):
        from psjob.foundation.kernels.rows import take_rows
        super().on_prefetch(trainer_id, table, ids)
        return take_rows(self.rows, self.order, mode="clip")


def canned_child(n_ids, dim, port_queue, handler=CannedRows):
    """psjob's pserver gRPC service around CannedRows (or GatheredRows)."""
    from psjob.cluster.rpc.server import start_server
    from psjob.launcher.local import free_ports
    server = start_server(handler(n_ids, dim), f"{ENDPOINT_HOST}:{free_ports(1)[0]}", max_workers=16)
    port_queue.put(server.port)
    server.wait_for_termination()


def echo_child(reply_bytes, port_queue):
    """A bare gRPC method: bytes in, `reply_bytes` fresh bytes out, no other work."""
    from concurrent import futures

    import grpc

    from psjob.cluster.rpc.allocator import tune_for_large_messages
    from psjob.cluster.rpc.base_client import CHANNEL_OPTIONS
    tune_for_large_messages()
    template = bytearray(reply_bytes)
    server = grpc.server(futures.ThreadPoolExecutor(4), options=CHANNEL_OPTIONS)
    handler = grpc.unary_unary_rpc_method_handler(lambda request, context: bytes(template))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("bench.Echo", {"Echo": handler}),))
    port_queue.put(server.add_insecure_port(f"{ENDPOINT_HOST}:0"))
    server.start()
    server.wait_for_termination()


def aio_echo_child(reply_bytes, port_queue, hop=False):
    """The same bare method on a grpc.aio server: on its event loop, or (hop) run on the
    loop's default thread pool, as a handler that blocks (a barrier, a lock) would be."""
    import asyncio

    import grpc

    from psjob.cluster.rpc.allocator import tune_for_large_messages
    from psjob.cluster.rpc.base_client import CHANNEL_OPTIONS
    tune_for_large_messages()
    template = bytearray(reply_bytes)

    async def echo(request, context):
        if hop:
            return await asyncio.get_running_loop().run_in_executor(None, bytes, template)
        return bytes(template)

    async def serve():
        server = grpc.aio.server(options=CHANNEL_OPTIONS)
        handler = grpc.unary_unary_rpc_method_handler(echo)
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("bench.Echo", {"Echo": handler}),))
        port_queue.put(server.add_insecure_port(f"{ENDPOINT_HOST}:0"))
        await server.start()
        await server.wait_for_termination()
    asyncio.run(serve())


def pipelined(fn, repeat, depth=2):
    """Seconds per call with `depth` calls in flight (fn() returns a handle with .wait() or .result())."""
    fn().wait()
    t0 = time.perf_counter()
    inflight = []
    for _ in range(repeat):
        inflight.append(fn())
        if len(inflight) >= depth:
            inflight.pop(0).wait()
    for h in inflight:
        h.wait()
    return (time.perf_counter() - t0) / repeat


def timed(fn, repeat):
    fn()  # warm-up
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t0) / repeat


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--vocab", type=int, default=1_000_000)
    p.add_argument("--ids", type=int, default=65536)
    p.add_argument("--dense", default="2048x1024")
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--rounds", type=int, default=5, help="prefetch / bare gRPC alternations")
    args = p.parse_args()
    args.dense_in, args.dense_out = (int(v) for v in args.dense.split("x"))

    from psjob.launcher.launch import free_ports
    endpoint = f"{ENDPOINT_HOST}:{free_ports(1)[0]}"
    ctx = mp.get_context("spawn")
    ready = ctx.Event()
    child = ctx.Process(target=serve_child, args=(args, endpoint, ready), daemon=True)
    child.start()

    from psjob.cluster.pserver.pserver_state import PserverState
    from psjob.cluster.rpc.client import GrpcPSClient
    from psjob.fluid.core import SelectedRows

    t = build(args.vocab, args.dense_in, args.dense_out, endpoint)
    prog, startup = t.get_pserver_programs(endpoint)
    local = PserverState(prog)
    local.run_startup(startup)
    table_var = next(iter(local.prefetch_blocks))  # what the trainer's prefetch op names
    dense_grad = next(n for n in local.recv_names if n.startswith("dense_w@GRAD"))
    table_grad = next(n for n in local.recv_names if n.startswith("table@GRAD"))

    rng = np.random.default_rng(0)
    ids = np.unique(rng.integers(-2**63, 2**63 - 1, size=args.ids, dtype=np.int64))
    arrival = rng.permutation(ids)   # the order the table first sees them: it makes their rows
    g_dense = rng.normal(size=(args.dense_in, args.dense_out)).astype(np.float32) * 1e-3
    g_rows = SelectedRows(ids, rng.normal(size=(ids.size, 16)).astype(np.float32) * 1e-3, 0)

    ready.wait(120)
    client = GrpcPSClient([endpoint], 0)
    client.wait_server_ready(timeout_s=120)
    client.prefetch(endpoint, table_var, arrival).wait()
    local.on_prefetch(0, table_var, arrival)
    row_mb = args.dense_out * 4 / 1e6
    results = []

    def row(name, rows, mb, rpc_s, local_s):
        results.append((name, rows / rpc_s, mb / rpc_s, rows / local_s, mb / local_s, local_s / rpc_s))

    pull_rpc = timed(lambda: client.pull(endpoint, ["dense_w"]).wait(), args.repeat)
    pull_loc = timed(lambda: local.on_get(0, ["dense_w"]), args.repeat)
    row("pull dense", args.dense_in, args.dense_in * row_mb, pull_rpc, pull_loc)
    push_rpc = timed(lambda: client.push(endpoint, {dense_grad: g_dense}).wait(), args.repeat)
    push_loc = timed(lambda: local.on_send(0, {dense_grad: g_dense}), args.repeat)
    row("push dense + apply", args.dense_in, args.dense_in * row_mb, push_rpc, push_loc)
    pf_mb = args.ids * 16 * 4 / 1e6
    pf_rpc = timed(lambda: client.prefetch(endpoint, table_var, ids).wait(), args.repeat)
    pf_loc = timed(lambda: local.on_prefetch(0, table_var, ids), args.repeat)
    row(f"prefetch {args.ids} ids x16", args.ids, pf_mb, pf_rpc, pf_loc)
    pf_pipe = pipelined(lambda: client.prefetch(endpoint, table_var, ids), args.repeat)
    row("  same, 2 requests in flight", args.ids, pf_mb, pf_pipe, pf_loc)
    bare = BareTransport(ctx, ids.nbytes, args.ids * 16 * 4)
    row("  transport alone (bare gRPC)", args.ids, pf_mb, bare.timed(args.repeat)[0], pf_loc)
    sp_rpc = timed(lambda: client.push(endpoint, {table_grad: g_rows}).wait(), args.repeat)
    sp_loc = timed(lambda: local.on_send(0, {table_grad: g_rows}), args.repeat)
    row(f"push {args.ids} sparse rows + apply", args.ids, pf_mb, sp_rpc, sp_loc)

    print(f"pserver RPC over loopback ({os.environ.get('PSJOB_DATA_PLANE') or 'tcp'} data plane) vs in-process (same PserverState code), "
          f"{os.cpu_count()} cores, repeat {args.repeat}")
    print(f"{'operation':<34}{'gRPC rows/s':>14}{'gRPC MB/s':>11}{'local rows/s':>15}{'local MB/s':>12}"
          f"{'gRPC/local':>12}")
    for name, rr, rm, lr, lm, ratio in results:
        print(f"{name:<34}{rr:>14,.0f}{rm:>11,.1f}{lr:>15,.0f}{lm:>12,.1f}{ratio:>12.2f}")

    print(f"\nprefetch {args.ids} ids x16 vs a bare gRPC method of the same request/reply sizes, "
          f"{args.rounds} alternating rounds of {args.repeat} calls (ms per call; server CPU ms per call):")
    ports = ctx.Queue()
    canned = ctx.Process(target=canned_child, args=(ids.size, 16, ports), daemon=True)
    canned.start()
    canned_ep = f"{ENDPOINT_HOST}:{ports.get(timeout=60)}"
    gathered = ctx.Process(target=canned_child, args=(ids.size, 16, ports, GatheredRows), daemon=True)
    gathered.start()
    gathered_ep = f"{ENDPOINT_HOST}:{ports.get(timeout=60)}"
    client.wait_server_ready([canned_ep, gathered_ep], timeout_s=120)
    bare_aio = BareTransport(ctx, ids.nbytes, args.ids * 16 * 4, aio_echo_child)
    bare_aio_hop = BareTransport(ctx, ids.nbytes, args.ids * 16 * 4, aio_echo_child, True)
    ratios, stack_ratios, gather_ratios, lookups, aio_cpu, server_cpu = [], [], [], [], [], []
    for r in range(args.rounds):
        c0 = cpu_seconds(child.pid)
        pf_s = timed(lambda: client.prefetch(endpoint, table_var, ids).wait(), args.repeat)
        pf_cpu = (cpu_seconds(child.pid) - c0) / (args.repeat + 1)
        c0 = cpu_seconds(canned.pid)
        stack_s = timed(lambda: client.prefetch(canned_ep, table_var, ids).wait(), args.repeat)
        stack_cpu = (cpu_seconds(canned.pid) - c0) / (args.repeat + 1)
        c0 = cpu_seconds(gathered.pid)
        gather_s = timed(lambda: client.prefetch(gathered_ep, table_var, ids).wait(), args.repeat)
        gather_cpu = (cpu_seconds(gathered.pid) - c0) / (args.repeat + 1)
        bare_s, bare_cpu = bare.timed(args.repeat)
        aio_s, aio_cpu_call = bare_aio.timed(args.repeat)
        hop_s, hop_cpu_call = bare_aio_hop.timed(args.repeat)
        aio_cpu.append((aio_cpu_call, hop_cpu_call, bare_cpu))
        c0 = time.process_time()
        for _ in range(args.repeat):
            local.on_prefetch(0, table_var, ids)
        lookups.append((time.process_time() - c0) / args.repeat)
        ratios.append(bare_s / pf_s)
        stack_ratios.append(bare_s / stack_s)
        gather_ratios.append(bare_s / gather_s)
        server_cpu.append((pf_cpu, stack_cpu, bare_cpu, gather_cpu))
        print(f"  round {r}: prefetch {1e3 * pf_s:6.2f} ({1e3 * pf_cpu:5.2f})   "
              f"server, no table {1e3 * stack_s:6.2f} ({1e3 * stack_cpu:5.2f})   "
              f"gather only {1e3 * gather_s:6.2f} ({1e3 * gather_cpu:5.2f})   "
              f"bare {1e3 * bare_s:6.2f} ({1e3 * bare_cpu:5.2f})   bare on grpc.aio {1e3 * aio_s:6.2f} "
              f"({1e3 * aio_cpu_call:5.2f}), with a thread hop {1e3 * hop_s:6.2f} ({1e3 * hop_cpu_call:5.2f})   "
              f"table lookup in-process CPU {1e3 * lookups[-1]:5.2f}   "
              f"rate vs bare: prefetch {ratios[-1]:.2f}, server alone {stack_ratios[-1]:.2f}, "
              f"gather only {gather_ratios[-1]:.2f}")

    def median(values):
        return sorted(values)[len(values) // 2]
    pf_cpu, stack_cpu, bare_cpu, gather_cpu = (1e3 * sum(c[i] for c in server_cpu) / len(server_cpu)
                                               for i in range(4))
    print(f"psjob's client and server without the table vs the bare method: rate median "
          f"{median(stack_ratios):.2f}x (range {min(stack_ratios):.2f}-{max(stack_ratios):.2f}); server CPU "
          f"per call over all rounds: prefetch {pf_cpu:.2f} ms, without the table {stack_cpu:.2f} ms, bare "
          f"{bare_cpu:.2f} ms; the table lookup alone {1e3 * sum(lookups) / len(lookups):.2f} CPU ms")
    print(f"with only the reply's row gather (a free id index): rate median {median(gather_ratios):.2f}x "
          f"(range {min(gather_ratios):.2f}-{max(gather_ratios):.2f}), server CPU {gather_cpu:.2f} ms per call: "
          f"the most any id index could reach")
    pool_cpu = max(sum(pool for _, _, pool in aio_cpu), 1e-9)
    print(f"the bare method's server CPU per call over all rounds, grpc.aio / thread pool: "
          f"{sum(a for a, _, _ in aio_cpu) / pool_cpu:.2f}x on the event loop, "
          f"{sum(h for _, h, _ in aio_cpu) / pool_cpu:.2f}x with a thread hop")
    print(f"target: prefetch via GrpcPSClient >= 0.8x the bare gRPC method: median {median(ratios):.2f}x "
          f"(range {min(ratios):.2f}-{max(ratios):.2f}) -> {'MET' if median(ratios) >= 0.8 else 'MISSED'}")
    canned.kill()
    gathered.kill()
    bare_aio_hop.close()
    bare_aio.close()
    bare.close()
    client.complete()
    client.close()
    child.join(30)


class BareTransport:
    """The bare gRPC method in its own process, and a channel to it."""

    def __init__(self, ctx, request_bytes, reply_bytes, child=echo_child, *child_args):
        import grpc

        from psjob.cluster.rpc.base_client import CHANNEL_OPTIONS
        ports = ctx.Queue()
        self.proc = ctx.Process(target=child, args=(reply_bytes, ports, *child_args), daemon=True)
        self.proc.start()
        self.channel = grpc.insecure_channel(f"{ENDPOINT_HOST}:{ports.get(timeout=60)}", options=CHANNEL_OPTIONS)
        self.call = self.channel.unary_unary("/bench.Echo/Echo")
        self.request = bytes(request_bytes)

    def timed(self, repeat):
        """(seconds per call, server CPU seconds per call) over `repeat` calls after a warm-up."""
        c0 = cpu_seconds(self.proc.pid)
        seconds = timed(lambda: np.frombuffer(self.call(self.request, timeout=60), dtype=np.float32), repeat)
        return seconds, (cpu_seconds(self.proc.pid) - c0) / (repeat + 1)

    def close(self):
        self.channel.close()
        self.proc.kill()


if __name__ == "__main__":
    main()
