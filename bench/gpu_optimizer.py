"""Throughput of the fused CUDA optimizer updates against numpy on the CPU.

    python bench/gpu_optimizer.py [--rows 4000000] [--width 64] [--batch 100000]

For sgd, momentum, adagrad and adam, dense (every row of a [rows, width]
float32 table) and sparse (`--batch` distinct rows of it, already merged),
prints rows/s and achieved bytes/s of the fused kernel, that rate as a
fraction of the GPU's peak memory bandwidth (2 x memory clock x bus width,
from the device attributes), and the numpy-on-CPU rate of the same update
measured in the same run (on a smaller table, so it finishes). Bytes are the
minimum traffic: each array the update reads or writes, once (plus the row
ids for sparse updates). Without cupy or a GPU it says so and exits 0.

Then a GPU-resident pserver (docs/user/cuda.md, "GPU pserver"): a request's
gradients uploaded through the pinned staging buffer next to a plain
``cupy.asarray`` from pageable memory, a pull the other way, and a sparse
table with its columns on the GPU next to the host table (push and lookup of
`--table-batch` Zipf ids, adagrad), all measured in the same run.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import psjob.foundation.cuda as cuda
from psjob.foundation.kernels import optimizers as reference

HYPER = {
    "sgd": {"lr": 0.01},
    "momentum": {"lr": 0.01, "mu": 0.9},
    "adagrad": {"lr": 0.01, "epsilon": 1e-6},
    "adam": {"lr": 0.001, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8},
}
# Param-shaped arrays read and written per element: (reads incl. grad, writes).
TRAFFIC = {"sgd": (2, 1), "momentum": (3, 2), "adagrad": (3, 2), "adam": (4, 3)}


def make_state(xp, name, shape):
    state = []
    for spec in reference.ACCUMULATORS[name]:
        if spec.shape == reference.ORIGIN_SHAPED:
            state.append(xp.full((1,), HYPER[name][spec.fill], xp.float32))
        else:
            state.append(xp.zeros(shape, xp.float32))
    return state


def bytes_per_update(name, rows, width, sparse):
    reads, writes = TRAFFIC[name]
    return rows * width * 4 * (reads + writes) + (rows * 8 if sparse else 0)


def time_gpu(cp, name, table_rows, width, batch, sparse, repeats):
    rng = cp.random.default_rng(0)
    param = rng.standard_normal((table_rows, width), dtype=cp.float32)
    state = make_state(cp, name, param.shape)
    if sparse:
        rows = cp.asarray(np.random.default_rng(1).choice(table_rows, batch, replace=False))
        grad = rng.standard_normal((batch, width), dtype=cp.float32)

        def step():
            cuda.cuda_optimizer_update_rows(name, cp, param, rows, grad, *state,
                                            assume_unique=True, **HYPER[name])
    else:
        grad = rng.standard_normal((table_rows, width), dtype=cp.float32)

        def step():
            cuda.cuda_optimizer_update(name, cp, param, grad, *state, **HYPER[name])
    step()  # compile / load the module, warm caches
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(repeats):
        step()
    end.record()
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) / 1e3 / repeats


def time_cpu(name, table_rows, width, batch, sparse, repeats):
    rng = np.random.default_rng(0)
    param = rng.standard_normal((table_rows, width), dtype=np.float32)
    state = make_state(np, name, param.shape)
    if sparse:
        rows = rng.choice(table_rows, batch, replace=False)
        grad = rng.standard_normal((batch, width), dtype=np.float32)

        def step():
            reference.ROW_UPDATES[name](np, param, rows, grad, *state, assume_unique=True,
                                        **HYPER[name])
    else:
        grad = rng.standard_normal((table_rows, width), dtype=np.float32)

        def step():
            reference.DENSE_UPDATES[name](np, param, grad, *state, **HYPER[name])
    step()
    begin = time.perf_counter()
    for _ in range(repeats):
        step()
    return (time.perf_counter() - begin) / repeats


def peak_bandwidth(cp):
    """Bytes/s from the device attributes, or None where the driver lacks them."""
    attributes = cp.cuda.Device().attributes
    try:
        clock_hz = attributes["MemoryClockRate"] * 1e3  # reported in kHz
        bus_bytes = attributes["GlobalMemoryBusWidth"] / 8
    except KeyError:
        return None
    return 2 * clock_hz * bus_bytes  # double data rate


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=4_000_000, help="GPU table rows")
    parser.add_argument("--cpu-rows", type=int, default=400_000, help="CPU table rows")
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--batch", type=int, default=100_000, help="rows per sparse update")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--table-batch", type=int, default=65_536, help="ids per table push/lookup")
    args = parser.parse_args(argv)
    try:
        cp = cuda.require_cupy()
    except cuda.CudaUnavailableError as err:
        print(f"no GPU benchmark: {err}")
        return 0
    peak = peak_bandwidth(cp)
    name_of_device = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"].decode()
    peak_text = f"{peak / 1e9:.0f} GB/s" if peak else "unknown"
    print(f"device: {name_of_device}, peak memory bandwidth {peak_text};"
          f" table {args.rows} x {args.width} float32 (CPU: {args.cpu_rows} rows),"
          f" sparse batch {args.batch} unique rows")
    print(f"{'update':<16}{'GPU rows/s':>14}{'GPU GB/s':>10}{'of peak':>9}"
          f"{'CPU rows/s':>14}{'CPU GB/s':>10}{'GPU/CPU':>9}")
    for name in cuda.FUSED_OPTIMIZERS:
        for sparse in (False, True):
            gpu_s = time_gpu(cp, name, args.rows, args.width, args.batch, sparse, args.repeats)
            cpu_s = time_cpu(name, args.cpu_rows, args.width, args.batch, sparse,
                             max(2, args.repeats // 10))
            gpu_rows = args.batch if sparse else args.rows
            cpu_rows = args.batch if sparse else args.cpu_rows
            gpu_bps = bytes_per_update(name, gpu_rows, args.width, sparse) / gpu_s
            cpu_bps = bytes_per_update(name, cpu_rows, args.width, sparse) / cpu_s
            label = f"{name} {'rows' if sparse else 'dense'}"
            of_peak = f"{gpu_bps / peak:.1%}" if peak else "n/a"
            print(f"{label:<16}{gpu_rows / gpu_s:>14.3e}{gpu_bps / 1e9:>10.1f}{of_peak:>9}"
                  f"{cpu_rows / cpu_s:>14.3e}{cpu_bps / 1e9:>10.2f}"
                  f"{(gpu_rows / gpu_s) / (cpu_rows / cpu_s):>9.1f}")
    residency(cp, args)
    return 0


def _best(fn, repeats, sync):
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - t0)
    return best


def residency(cp, args):
    from psjob.cluster.pserver.device_staging import DeviceStaging
    from psjob.foundation.tables import OptimizerConfig, SparseTable, TableConfig

    sync = cp.cuda.get_current_stream().synchronize
    staging = DeviceStaging(cp, cp.cuda.Device().id)
    print(f"\nGPU pserver residency (best of {args.repeats})")
    for mib in (1, 16, 64):
        grad = np.random.default_rng(0).standard_normal(mib << 18).astype(np.float32)
        wire = np.frombuffer(grad.tobytes(), np.float32)   # a view over message bytes, as received
        staged = _best(lambda: staging.to_device({"g": wire}), args.repeats, sync)
        plain = _best(lambda: cp.asarray(wire), args.repeats, sync)
        dev = cp.asarray(grad)
        pulled = _best(lambda: staging.to_host({"g": dev}), args.repeats, sync)
        plain_pull = _best(lambda: dev.get(), args.repeats, sync)
        print(f"  {mib:>3} MiB push: staged {mib / 1024 / staged:6.2f} GB/s, cupy.asarray "
              f"{mib / 1024 / plain:6.2f} GB/s; pull: staged {mib / 1024 / pulled:6.2f} GB/s, "
              f".get() {mib / 1024 / plain_pull:6.2f} GB/s")
    cfg = TableConfig("emb", dim=args.width, optimizer=OptimizerConfig("adagrad", lr=0.05),
                      initial_capacity=1 << 20)
    rng = np.random.default_rng(2)
    batches = [(rng.zipf(1.1, args.table_batch).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15))
               .view(np.int64) for _ in range(8)]
    grads = rng.standard_normal((args.table_batch, args.width)).astype(np.float32)
    print(f"  sparse table dim {args.width}, adagrad, batches of {args.table_batch} Zipf ids:")
    for label, table in (("host", SparseTable(cfg)),
                         ("GPU", SparseTable(cfg).to_device(cp, transfer=staging))):
        for ids in batches:          # warm: rows created, kernels compiled
            table.lookup(ids)
            table.push(ids, grads)
        lookup = min(_best(lambda ids=ids: table.lookup(ids, create=False), 1, sync) for ids in batches)
        push = min(_best(lambda ids=ids: table.push(ids, grads), 1, sync) for ids in batches)
        print(f"    {label:<5} lookup {args.table_batch / lookup:>10.3e} ids/s   push "
              f"{args.table_batch / push:>10.3e} ids/s   ({len(table)} rows)")


if __name__ == "__main__":
    sys.exit(main())
