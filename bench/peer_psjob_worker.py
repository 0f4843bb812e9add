"""psjob's side of bench/peer_paddle.py: the CTR-DNN on the Paddle anchor's 40-column TSV.

    python bench/peer_psjob_worker.py --data DIR --out DIR [--single]     # one process
    python bench/peer_psjob_worker.py --data DIR --out DIR --single --as_trainers 2 [--lead K]
                                     # one process, two trainers' batches in turn (a control)
    psjob launch ... bench/peer_psjob_worker.py --data DIR --out DIR      # pservers + trainers

The model is Paddle's (paddle_ps/paddle_ctr_ps.py): 26 slots sharing one
embedding table of dim 16, concat with the 13 dense values, fc 256-128-1,
sigmoid cross entropy, Adam 1e-3 (lazy), batch 1024, one epoch, no shuffle.
Async trainers read parameters as Fleet's default extrapolates them for Adam:
2 pull intervals ahead (a_sync_configs["predict_pulls"], psjob.fleet.strategy;
--predict_pulls K sets K for every parameter, 0: off).
Trainer t reads files[t::n] of DIR (Paddle's sharding). It writes
OUT/trainer<t>.json: examples trained, the training window as wall-clock
times (time.time(), so the parent can cut its /proc CPU samples at the same
instants), the progressive AUC over the epoch (every batch is scored before
it is trained on), and this process's own CPU-seconds in the window; with
--as_trainers also `shard_aucs`, each shard's progressive AUC (exact: psjob.dataset.ctr.roc_auc).
OUT/trainer<t>.scores.npz holds every prediction of the epoch and its label, in order.

The TSV is read by `load_tsv` below, a minimal vectorized loader: the data
plane under test is training, not parsing (loading time is outside the
window), and psjob.dataset.ctr reads its own format, not this one.
"""
from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

if os.environ.get("PSJOB_STACK_SAMPLES"):
    import stack_sampler  # noqa: F401  (bench/stack_sampler.py: profiles every thread of this role)

NUM_DENSE, NUM_SLOTS = 13, 26
COLUMNS = 1 + NUM_DENSE + NUM_SLOTS


def load_tsv(paths):
    """(label int64 [n, 1], dense float32 [n, 13], ids int64 [n, 26]) from 40-column TSV files."""
    parts = []
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
        # `sep=" "` matches any run of whitespace (tabs and newlines included); C parsing.
        values = np.fromstring(data, dtype=np.float64, sep=" ")
        if values.size != lines * COLUMNS:
            raise ValueError(f"{path}: {values.size} numbers in {lines} lines, expected {COLUMNS} per line")
        parts.append(values.reshape(lines, COLUMNS))
    table = np.concatenate(parts) if parts else np.zeros((0, COLUMNS))
    ids = table[:, 1 + NUM_DENSE:]
    if ids.size and (ids.min() < 0 or ids.max() >= 2 ** 53 or not np.all(ids == np.floor(ids))):
        raise ValueError("sparse ids must be non-negative integers below 2**53 (parsed as float64)")
    return (table[:, :1].astype(np.int64), table[:, 1:1 + NUM_DENSE].astype(np.float32),
            ids.astype(np.int64))


def data_files(data_dir):
    files = sorted(os.path.join(data_dir, n) for n in os.listdir(data_dir) if n.startswith("part-"))
    if not files:
        raise FileNotFoundError(f"{data_dir}: no part-* files (generate them with the anchor's gen_data.py)")
    return files


def feeds(model, label, dense, ids, batch):
    """Feed dicts of whole batches (the tail that does not fill a batch is dropped)."""
    lod = [np.arange(batch + 1, dtype=np.int64)]
    out = []
    for b in range(0, len(label) - batch + 1, batch):
        feed = {model.dense.name: dense[b:b + batch], model.label.name: label[b:b + batch]}
        for s, var in enumerate(model.slots):
            feed[var.name] = (np.ascontiguousarray(ids[b:b + batch, s:s + 1]), lod)
        out.append(feed)
    return out


def cpu_seconds():
    return time.process_time()  # all threads of this process


def thread_cpu_seconds():
    """CPU-seconds of each live thread of this process by its Python name (/proc, Linux)."""
    import threading
    names = {t.native_id: t.name for t in threading.enumerate()}
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        name = names.get(int(tid), f"native-{tid}")
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--mode", default="async", choices=["sync", "async", "half_async"])
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--single", action="store_true", help="no pservers: plain single-process training")
    p.add_argument("--as_trainers", type=int, default=1, metavar="N",
                   help="with --single: train on the batches of N trainers' shards (files[t::N]) taken in "
                        "turn, one batch of each, and also write each shard's progressive AUC (the order an "
                        "async N-trainer job's updates arrive in, without its staleness)")
    p.add_argument("--lead", type=int, default=0, metavar="K",
                   help="with --as_trainers: shard 0 trains K batches alone first (a trainer that starts "
                        "K steps before the others)")
    p.add_argument("--prefetch_ahead", type=int, default=1,
                   help="1: issue batch i+1's embedding prefetch while batch i computes (async modes)")
    p.add_argument("--predict_pulls", type=float, default=None,
                   help="async reads extrapolated this many pull intervals ahead (a_sync_configs; 0: off); "
                        "unset: Fleet's default, by each parameter's optimizer")
    p.add_argument("--a_sync_configs", default=None, metavar="JSON",
                   help='more DistributedStrategy.a_sync_configs for async modes, e.g. \'{"max_stale_steps": 0}\'')
    p.add_argument("--profile", action="store_true",
                   help="also write each op type's kernel CPU-ms per batch (main thread) and each thread's "
                        "CPU-seconds in the window (the kernel timing adds a clock call per op)")
    args = p.parse_args()
    if args.as_trainers > 1 and not args.single:
        p.error("--as_trainers needs --single")

    import psjob.fluid as fluid
    from psjob.training.models import ctr as ctr_model

    with open(os.path.join(args.data, "meta.json")) as f:
        vocab = int(json.load(f)["total_vocab"])
    cfg = ctr_model.CTRConfig(sparse_feature_dim=vocab, is_distributed=not args.single)
    main_prog, startup = fluid.Program(), fluid.Program()
    if args.single:
        model = ctr_model.build(cfg, main_prog, startup)
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        tid, n, program = 0, 1, main_prog
    else:
        from psjob import fleet
        from psjob.fleet import DistributedStrategy
        fleet.init()
        strategy = DistributedStrategy()
        strategy.a_sync = args.mode != "sync"
        configs = json.loads(args.a_sync_configs) if args.a_sync_configs else {}
        if args.predict_pulls is not None:
            configs["predict_pulls"] = args.predict_pulls
        if strategy.a_sync and configs:
            strategy.a_sync_configs = configs
        main_prog.random_seed = startup.random_seed = cfg.seed
        with fluid.program_guard(main_prog, startup), fluid.unique_name.guard():
            model = ctr_model.build_network(cfg)
            opt = ctr_model.make_optimizer(cfg.optimizer, cfg.learning_rate)
            fleet.distributed_optimizer(opt, strategy).minimize(model.loss)
        exe = fluid.Executor(fluid.CPUPlace())
        if fleet.is_server():
            fleet.init_server()
            fleet.run_server()
            return
        tid, n = fleet.worker_index(), fleet.worker_num()
        fleet.init_worker()
        exe.run(fleet.startup_program)
        program = fleet.main_program

    t_load = time.time()
    if args.as_trainers > 1:
        shards = [feeds(model, *load_tsv(data_files(args.data)[t::args.as_trainers]), args.batch)
                  for t in range(args.as_trainers)]
        turns = [(0, feed) for feed in shards[0][:args.lead]]
        shards[0] = shards[0][args.lead:]
        turns += [(t, shard[i]) for i in range(max(map(len, shards)))
                  for t, shard in enumerate(shards) if i < len(shard)]
        batches = [feed for _, feed in turns]
        shard_of = [t for t, _ in turns]
    else:
        label, dense, ids = load_tsv(data_files(args.data)[tid::n])
        batches = feeds(model, label, dense, ids, args.batch)
        shard_of = None
    load_s = time.time() - t_load
    scored = {}   # shard (0 without --as_trainers) -> ([predictions], [labels])

    ahead = None
    if not args.single and args.prefetch_ahead:
        try:
            from psjob.fluid.pipeline import prefetch_ahead as ahead
        except ImportError:   # a --baseline tree from before the pipeline moved to fluid
            from psjob.cluster.trainer.communicator import prefetch_ahead as ahead
    if args.profile:
        exe.collect_timing, exe.timing_clock = True, time.thread_time  # CPU, not wall
        exe.kernel_seconds.clear()
        threads0 = thread_cpu_seconds()
    if os.environ.get("PSJOB_CPROFILE"):  # a cProfile of the training loop's thread to this file
        import cProfile
        profiler = cProfile.Profile(time.thread_time)
        profiler.enable()
    t0, c0 = time.time(), cpu_seconds()
    for i, feed in enumerate(batches):
        if ahead is not None and i + 1 < len(batches):
            ahead(exe, program, batches[i + 1])
        loss, auc, predict = exe.run(program, feed=feed, fetch_list=[model.loss, model.auc, model.predict])
        preds, labels = scored.setdefault(0 if shard_of is None else shard_of[i], ([], []))
        preds.append(np.asarray(predict)[:, -1].copy())
        labels.append(feed[model.label.name].reshape(-1))
    t1, c1 = time.time(), cpu_seconds()
    if os.environ.get("PSJOB_CPROFILE"):
        profiler.disable()
        profiler.dump_stats(f"{os.environ['PSJOB_CPROFILE']}.{tid}")
    result = {"examples": len(batches) * args.batch, "t_start": t0, "t_end": t1,
              "cpu_s": c1 - c0, "load_s": load_s, "loss": float(loss[0]), "auc": float(auc[0])}
    # Every prediction of the epoch (scored before its batch trained), for the parent's AUC
    # over all trainers together (the job's progressive AUC, as fleet.metrics.auc gives).
    np.savez(os.path.join(args.out, f"trainer{tid}.scores.npz"),
             predict=np.concatenate([np.concatenate(scored[t][0]) for t in sorted(scored)]),
             label=np.concatenate([np.concatenate(scored[t][1]) for t in sorted(scored)]))
    if shard_of is not None:
        from psjob.dataset.ctr import roc_auc
        result["shard_aucs"] = [roc_auc(np.concatenate(scored[t][1]), np.concatenate(scored[t][0]))
                                for t in sorted(scored)]
    if args.profile:
        threads1 = thread_cpu_seconds()
        result["thread_cpu_s"] = {name: round(cpu - threads0.get(name, 0.0), 3) for name, cpu in threads1.items()}
        result["kernel_ms_per_batch"] = {op: round(1e3 * s / len(batches), 3) for op, s in
                                         sorted(exe.kernel_seconds.items(), key=lambda kv: -kv[1])}
    if not args.single:
        fleet.stop_worker()
    with open(os.path.join(args.out, f"trainer{tid}.json"), "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
