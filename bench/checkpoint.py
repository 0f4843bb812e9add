"""Benchmark: checkpoint save and load throughput of a distributed table, next to plain file I/O.

    .venv/bin/python bench/checkpoint.py                  # a 1 GiB table (default)
    .venv/bin/python bench/checkpoint.py --gib 0.25       # smaller
    .venv/bin/python bench/checkpoint.py --dir /mnt/disk  # where the files go
    .venv/bin/python bench/checkpoint.py --delta --rows 10000000   # deltas against a full save

What runs is the real path, in one process: a transpiled job with one
pserver (a real PserverState over its pserver program) whose distributed
lookup table holds `--gib` GiB of float32 rows (`--width` wide), and trainer 0
of that job, wired to it by the in-memory transport (no sockets: the network
is not what is measured).

* save: `fluid.io.save_persistables` on trainer 0's program — freeze, pull
  the dense slices, the pserver writes its table shard (ids + values, sha256
  hashed while written, fsync, rename), thaw, manifest last;
* load: a fresh pserver's `restore_from_checkpoints(root)` — find the newest
  good checkpoint, read and sha256-verify the shard, place rows by id;
* baselines, same bytes, same run, same directory: one sequential
  `write` + `fsync` of the table's bytes, and one sequential read of that file
  into a preallocated array (`readinto`).

--delta: incremental checkpoints (docs/user/checkpoints.md). Trainer 0's
`Checkpointer` (incremental on) writes a base of a `--rows`-row table, then
a delta after pushes to 1% of the rows and another after pushes to 10%
(`--touched`); it prints seconds and bytes of each delta against the full
save (the issue's target: a 1%-touched delta at most 5% of both), and the
time to restore the chain on a fresh pserver.

Rates are MB/s of table payload (values + ids; MB = 10^6 bytes). Reads are
likely served from the page cache (this script cannot drop it), for the
baseline and the checkpoint alike. Files are removed at the end unless --keep.
Memory: about 3x the table size at the peak (the pserver's shard, the loaded
copy, the baseline buffer). The script refuses to start without 2.5x the
table size free on the target file system.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np

import psjob.fluid as fluid
from psjob.cluster.inmemory import InMemoryCluster
from psjob.cluster.pserver.pserver_state import PserverState
from psjob.fluid.transpiler import DistributeTranspiler
from psjob.foundation.checkpoint import store
from psjob.foundation.checkpoint.format import read_manifest

EP = "127.0.0.1:6170"


def build(rows: int, width: int):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64")
        y = fluid.layers.data(name="y", shape=[1])
        emb = fluid.layers.embedding(ids, size=[rows, width], is_sparse=True, is_distributed=True,
                                     param_attr=fluid.ParamAttr(name="table",
                                                                initializer=fluid.initializer.Constant(0.0)))
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(emb, 1), y))
        fluid.optimizer.SGD(0.1).minimize(loss)
    t = DistributeTranspiler()
    t.transpile(0, program=main, startup_program=startup, pservers=EP, trainers=1)
    return t


def fill(state, rows: int, width: int) -> None:
    """Give the pserver's table `rows` rows (ids 0..rows-1) of random values."""
    from psjob.foundation.tables import TableShard
    table = state.scope.vars["table"]
    rng = np.random.default_rng(0)
    step = 1 << 20
    for start in range(0, rows, step):
        ids = np.arange(start, min(rows, start + step), dtype=np.int64)
        table.import_rows(TableShard(ids=ids, values=rng.random((ids.size, width), dtype=np.float32)))


def _save_bytes(doc: dict) -> int:
    total = sum(e.get("file_bytes", e["bytes"]) for e in doc["vars"].values())
    return total + sum(e.get("file_bytes", e["bytes"]) for t in doc.get("tables", {}).values()
                       for s in t["shards"] for e in s["files"].values())


def delta_bench(args, work: str) -> None:
    from psjob.cluster.trainer import checkpoint_save
    from psjob.cluster.trainer.checkpointer import CheckpointConfig, Checkpointer
    t = build(args.rows, args.width)
    cluster = InMemoryCluster.from_transpiler(t)
    state = cluster.handler(EP)
    fill(state, args.rows, args.width)
    table = state.scope.vars["table"]
    exe, scope = cluster.executor(0), fluid.Scope()
    exe.run(t.get_trainer_startup_program(), scope=scope)
    prog = t.get_trainer_program(wait_port=False)
    root = os.path.join(work, "ckpt")
    ckpt = Checkpointer(exe, prog, CheckpointConfig(root=root, keep=100, incremental=True, base_every=1000),
                        scope=scope, dist=checkpoint_save.DistInfo.of(prog))
    rng = np.random.default_rng(1)
    results = []
    for step, share in enumerate([None] + [float(x) for x in args.touched.split(",")], start=1):
        if share is not None:  # training touched this share of the rows since the last save
            ids = np.sort(rng.choice(args.rows, size=max(1, int(share * args.rows)), replace=False)).astype(np.int64)
            table.push(ids, np.full((ids.size, args.width), 0.01, np.float32))
        t0 = time.perf_counter()
        path = ckpt.save(step)
        secs = time.perf_counter() - t0
        assert path is not None, ckpt.failures
        doc = read_manifest(path)
        kind = (doc.get("chain") or {}).get("kind")
        assert kind == ("base" if share is None else "delta"), kind
        results.append((share, secs, _save_bytes(doc), sum(s["rows"] for s in doc["tables"]["table"]["shards"])))
    main_p, startup_p = t.get_pserver_programs(EP)
    fresh = PserverState(main_p, scope=fluid.Scope(), executor=fluid.Executor())
    fresh.run_startup(startup_p)
    t0 = time.perf_counter()
    info = fresh.restore_from_checkpoints(root)
    restore_s = time.perf_counter() - t0
    assert info is not None and info.kind == "delta" and len(fresh.scope.vars["table"]) == args.rows
    full_s, full_b = results[0][1], results[0][2]
    print(f"{'save':<24} {'rows':>10} {'seconds':>8} {'MB':>9} {'time %':>7} {'bytes %':>8}")
    for share, secs, nbytes, rows in results:
        name = "full (base)" if share is None else f"delta, {share:.0%} touched"
        print(f"{name:<24} {rows:>10} {secs:8.3f} {nbytes / 1e6:9.1f} {100 * secs / full_s:6.1f}% "
              f"{100 * nbytes / full_b:7.2f}%")
    print(f"restore of the chain (base + {len(results) - 1} deltas) on a fresh pserver: {restore_s:.2f}s")


def plain_write(path: str, arr: np.ndarray) -> float:
    t0 = time.perf_counter()
    with open(path, "wb") as f:
        f.write(memoryview(arr.reshape(-1)).cast("B"))
        f.flush()
        os.fsync(f.fileno())
    return time.perf_counter() - t0


def plain_read(path: str, like: np.ndarray) -> float:
    out = np.empty_like(like)
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        f.readinto(memoryview(out.reshape(-1)).cast("B"))
    return time.perf_counter() - t0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gib", type=float, default=1.0, help="table size in GiB (default 1)")
    p.add_argument("--width", type=int, default=64, help="row width (floats)")
    p.add_argument("--dir", default=tempfile.gettempdir(), help="where to write (default: the temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the files")
    p.add_argument("--delta", action="store_true", help="incremental checkpoints: deltas against a full save")
    p.add_argument("--rows", type=int, default=10_000_000, help="--delta: table rows (default 10M)")
    p.add_argument("--touched", default="0.01,0.1", help="--delta: shares of rows touched before each delta")
    args = p.parse_args(argv)
    if args.delta:
        if args.width == 64 and "--width" not in (argv if argv is not None else sys.argv):
            args.width = 8  # 10M x 8 float32: 320 MB of values, a CTR table's size class
        work = tempfile.mkdtemp(prefix="psjob-ckpt-bench-", dir=args.dir)
        print(f"table: {args.rows} rows x {args.width} float32 (sgd); files in {work}")
        try:
            delta_bench(args, work)
        finally:
            if not args.keep:
                shutil.rmtree(work, ignore_errors=True)
        return 0
    rows = int(args.gib * (1 << 30)) // (4 * args.width)
    payload = rows * args.width * 4 + rows * 8
    free = shutil.disk_usage(args.dir).free
    if free < 2.5 * payload:
        print(f"not enough space in {args.dir}: {free / 1e9:.1f} GB free, need {2.5 * payload / 1e9:.1f} GB",
              file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="psjob-ckpt-bench-", dir=args.dir)
    print(f"table: {rows} rows x {args.width} float32 = {rows * args.width * 4 / 2**20:.0f} MiB values "
          f"+ {rows * 8 / 2**20:.0f} MiB ids; files in {work} ({free / 1e9:.0f} GB free)")
    try:
        t = build(rows, args.width)
        cluster = InMemoryCluster.from_transpiler(t)
        state = cluster.handler(EP)
        fill(state, rows, args.width)
        table = state.scope.vars["table"].export().values  # the same bytes, for the plain baselines

        results = []
        base_w = plain_write(os.path.join(work, "plain.bin"), table)
        results.append(("plain sequential write + fsync", base_w))

        exe, scope = cluster.executor(0), fluid.Scope()
        exe.run(t.get_trainer_startup_program(), scope=scope)
        prog = t.get_trainer_program(wait_port=False)
        root = os.path.join(work, "ckpt")
        t0 = time.perf_counter()
        fluid.io._save_distributed_persistables(exe, os.path.join(root, store.step_dirname(1)), prog, scope=scope)
        save_s = time.perf_counter() - t0
        results.append(("checkpoint save (trainer 0: freeze, shard + sha256, manifest)", save_s))
        doc = read_manifest(os.path.join(root, store.step_dirname(1)))
        frozen_s = doc["job"]["frozen_s"]

        base_r = plain_read(os.path.join(work, "plain.bin"), table)
        results.append(("plain sequential read (readinto)", base_r))
        main_p, startup_p = t.get_pserver_programs(EP)
        del cluster, state, table
        fresh = PserverState(main_p, scope=fluid.Scope(), executor=fluid.Executor())
        fresh.run_startup(startup_p)
        t0 = time.perf_counter()
        info = fresh.restore_from_checkpoints(root)
        load_s = time.perf_counter() - t0
        assert info is not None and info.step == 1
        results.append(("checkpoint load (pserver restore: read + sha256 verify + place)", load_s))

        print(f"{'':64} {'seconds':>8} {'MB/s':>8}")
        for name, secs in results:
            print(f"{name:<64} {secs:8.2f} {payload / 1e6 / secs:8.0f}")
        print(f"(training was frozen for {frozen_s:.2f}s of the save; verify: "
              f"{'ok' if store.verify(os.path.join(root, store.step_dirname(1))) == [] else 'FAILED'})")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
