"""psjob's fixed cost per async step at small batches: 1 pserver + 1 trainer (--trainers), real processes.

    python bench/step_latency.py [--batches 32,128,512,2048] [--seconds 4]
                                 [--runtimes RUNTIME_DIR,...] [--rounds 1]

The model has PaddleRec's rank/dnn shape (26 sparse slots + 13 dense, a distributed
table of 1,000,001 rows × 9, fc 512-256-128-32, Adam) on the synthetic CTR set. One
`psjob launch` per runtime and round trains every batch size in turn (each for at least
--seconds after 5 warm-up steps) and prints, per batch size: examples/s, wall ms per step,
the trainer process's CPU ms per step (all its threads), its communicator's sender thread's
(send cpu), and the communicator's waits per
step (pull: the trainer waiting for a fresh-enough cache; prefetch: on embedding rows;
push_block: on a full queue; send_wait: the sender waiting for the rest of a step's
gradients, with the number of rounds that waited send_wait_s out; send_reply: on its
requests' replies). Runtimes without those counters print '-'.

The fixed cost per step is the intercept of a least-squares line wall_ms = a + b × batch
over the batch sizes (b: the per-example slope), printed with a and b.

--runtimes runs each given runtime directory (put first on PYTHONPATH, e.g. another
checkout's runtime/) in turn, interleaved over --rounds, on the same data: a before/after
comparison on a busy machine, where the load average is printed with each row.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WAITS = ("pull", "prefetch", "push_block", "send_wait", "send_reply")


def worker(args):
    import psjob.fluid as fluid
    from psjob import fleet
    from psjob.cluster.trainer import client_service
    from psjob.dataset import ctr
    from psjob.fleet import DistributedStrategy
    from psjob.training.models import ctr as ctr_model

    fleet.init()
    strategy = DistributedStrategy()
    strategy.a_sync = True
    cfg = ctr_model.CTRConfig(sparse_feature_dim=1_000_001, embedding_dim=9, hidden=(512, 256, 128, 32),
                              is_distributed=not args.dense_table)
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = cfg.seed
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        model = ctr_model.build_network(cfg)
        fleet.distributed_optimizer(fluid.optimizer.Adam(cfg.learning_rate, lazy_mode=True),
                                    strategy).minimize(model.loss)
    exe = fluid.Executor(fluid.CPUPlace())
    if fleet.is_server():
        fleet.init_server()
        fleet.run_server()
        return
    fleet.init_worker()
    exe.run(fleet.startup_program)
    service = client_service.installed()
    results = []
    for batch in (int(b) for b in args.batches.split(",")):
        feeds = [ctr_model.feed_dict(model, b) for b in ctr.batches(args.data, batch, drop_last=True)]
        for feed in feeds[:5]:
            exe.run(fleet.main_program, feed=feed, fetch_list=[model.loss])
        waits0 = dict(getattr(service, "waits", {}))
        profile = None
        if args.profile:
            import cProfile
            profile = cProfile.Profile()
            profile.enable()
        s0 = _sender_cpu()
        t0, c0, steps = time.perf_counter(), time.process_time(), 0
        for feed in feeds[5:]:
            exe.run(fleet.main_program, feed=feed, fetch_list=[model.loss])
            steps += 1
            if time.perf_counter() - t0 >= args.seconds and steps >= 10:
                break
        wall, cpu, send_cpu = time.perf_counter() - t0, time.process_time() - c0, _sender_cpu() - s0
        if profile is not None:
            import pstats
            profile.disable()
            with open(os.path.join(args.out, f"profile-{batch}.txt"), "w") as f:
                stats = pstats.Stats(profile, stream=f)
                stats.sort_stats("tottime").print_stats(25)
                stats.sort_stats("cumulative").print_stats(40)
                stats.print_callees("communicator.py.*push|wait")
        waits = getattr(service, "waits", None)
        results.append({"batch": batch, "steps": steps, "wall": wall, "cpu": cpu, "send_cpu": send_cpu,
                        "waits": None if waits is None else
                        {k: waits.get(k, 0) - waits0.get(k, 0) for k in WAITS + ("send_wait_timeouts",)}})
    fleet.stop_worker()
    with open(os.path.join(args.out, f"result-{fleet.worker_index()}.json"), "w") as f:
        json.dump(results, f)


def _sender_cpu() -> float:
    """CPU seconds the communicator's sender thread (psjob-send) has used (0.0 if none)."""
    import threading
    for t in threading.enumerate():
        if t.name == "psjob-send" and t.ident is not None:
            return time.clock_gettime(time.pthread_getcpuclockid(t.ident))
    return 0.0


def launch(args, runtime):
    env = dict(os.environ)
    if runtime:
        env["PYTHONPATH"] = runtime + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "psjob.cli", "launch", "--server_num", "1", "--worker_num", str(args.trainers),
               "--mode", "async", "--log_dir", os.path.join(out, "log"), os.path.abspath(__file__), "--run_role",
               "--data", args.data_dir, "--out", out, "--batches", args.batches, "--seconds", str(args.seconds)] + (["--profile"] if args.profile else []) \
            + (["--dense_table"] if args.dense_table else [])
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env)
        if r.returncode != 0:
            logs = ""
            for name in sorted(os.listdir(os.path.join(out, "log")) if os.path.isdir(os.path.join(out, "log")) else []):
                with open(os.path.join(out, "log", name), errors="replace") as f:
                    logs += f"--- {name}\n{f.read()[-2000:]}\n"
            raise RuntimeError(f"psjob launch failed ({r.returncode}):\n{r.stderr}\n{logs}")
        for name in sorted(os.listdir(out)):
            if name.startswith("profile-"):
                with open(os.path.join(out, name)) as f:
                    print(f"--- trainer {name}\n{f.read()}")
        with open(os.path.join(out, "result-0.json")) as f:
            return json.load(f)


def fixed_cost(rows):
    """(intercept ms, slope ms per example) of the least-squares line wall ms/step ~ batch."""
    xs = [r["batch"] for r in rows]
    ys = [1e3 * r["wall"] / r["steps"] for r in rows]
    n, mx, my = len(xs), sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if n < 2 or sxx == 0:
        return float("nan"), float("nan")
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - slope * mx, slope


def report(label, rows):
    print(f"{label}  (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print(f"  {'batch':>6} {'ex/s':>9} {'wall ms':>8} {'cpu ms':>7} {'send cpu':>8}   waits ms/step: "
          + " ".join(f"{w:>10}" for w in WAITS) + "  timeouts/step")
    for r in rows:
        s = r["steps"]
        w = r["waits"]
        cols = " ".join(f"{1e3 * w[k] / s:10.1f}" if w else f"{'-':>10}" for k in WAITS)
        print(f"  {r['batch']:6d} {r['batch'] * s / r['wall']:9,.0f} {1e3 * r['wall'] / s:8.1f} "
              f"{1e3 * r['cpu'] / s:7.1f} {1e3 * r.get('send_cpu', 0) / s:8.2f}   {'':14}{cols}  "
              + (f"{w['send_wait_timeouts'] / s:.2f}" if w else "-"))
    a, b = fixed_cost(rows)
    print(f"  fixed cost per step (intercept of wall ms = a + b × batch): a = {a:.1f} ms, "
          f"b = {1e3 * b:.1f} µs per example")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--run_role", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--data", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    p.add_argument("--batches", default="32,128,512,2048")
    p.add_argument("--seconds", type=float, default=4.0)
    p.add_argument("--examples", type=int, default=60_000)
    p.add_argument("--data_dir", default="/tmp/psjob-bench-ctr")
    p.add_argument("--runtimes", default="", help="comma-separated runtime dirs (PYTHONPATH); '' = this one")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--trainers", type=int, default=1, help="async trainers (rows: trainer 0's)")
    p.add_argument("--dense_table", action="store_true",
                   help="the table as an ordinary sparse parameter (as PaddleRec's paddle.nn.Embedding("
                        "sparse=True) is): pulled whole by the trainer's recv")
    p.add_argument("--profile", action="store_true",
                   help="cProfile the trainer's thread; print its top 25 functions per batch size")
    args = p.parse_args()
    if args.run_role:
        worker(args)
        return
    from psjob.dataset import ctr
    args.data_dir = os.path.join(args.data_dir, f"dense-{args.examples}")
    if not os.path.exists(os.path.join(args.data_dir, ctr.shard_name(0))):
        ctr.generate(args.data_dir, num_examples=args.examples, num_files=1, seed=0, overwrite=True)
    print(f"PaddleRec dnn shape (26 slots + 13 dense, table 1,000,001 x 9, fc 512-256-128-32, Adam), "
          f"1 pserver + {args.trainers} async trainer(s), {args.examples} examples, "
          f"{'ordinary sparse parameter' if args.dense_table else 'distributed'} table")
    for rnd in range(args.rounds):
        for runtime in args.runtimes.split(","):
            rows = launch(args, runtime)
            report(f"runtime {runtime or 'installed'} (round {rnd + 1})", rows)


if __name__ == "__main__":
    main()
