"""Benchmark: what writing and reading a checkpoint array through the s3:// store costs this process.

    .venv/bin/python bench/checkpoint_s3.py              # a 256 MiB float32 array
    .venv/bin/python bench/checkpoint_s3.py --mib 64

The store is moto's S3 server on 127.0.0.1 (tests/component/s3server.py, from
.venv-s3): a Python server, so wall-clock rates say more about moto than about
psjob and are printed only for scale. What the figures are for:

* CPU-seconds of *this* process per GB (psjob's client: sha256 on the helper
  thread, SigV4, HTTP, copying into 16 MiB parts) next to the same array
  written to and read from a local directory, in the same run;
* the peak memory the write adds (ru_maxrss before and after, the array
  already allocated): the upload holds one 16 MiB part, never a second copy
  of the array. A read allocates the destination array and streams into it.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import sys
import tempfile
import time

import numpy as np

from psjob.foundation.checkpoint.format import read_array, write_array

HERE = os.path.dirname(os.path.abspath(__file__))


def _s3server():
    path = os.path.join(HERE, "..", "tests", "component", "s3server.py")
    spec = importlib.util.spec_from_file_location("s3server", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(path: str, arr: np.ndarray) -> dict:
    peak0 = _peak_mib()
    cpu0, t0 = time.process_time(), time.perf_counter()
    entry = write_array(path, arr)
    cpu1, t1 = time.process_time(), time.perf_counter()
    write_peak = _peak_mib() - peak0
    back = read_array(path, entry)
    cpu2, t2 = time.process_time(), time.perf_counter()
    assert np.array_equal(back, arr)
    gb = arr.nbytes / 1e9
    return {"write_cpu_s_per_gb": (cpu1 - cpu0) / gb, "read_cpu_s_per_gb": (cpu2 - cpu1) / gb,
            "write_mb_s": arr.nbytes / 1e6 / (t1 - t0), "read_mb_s": arr.nbytes / 1e6 / (t2 - t1),
            "write_peak_added_mib": write_peak}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mib", type=int, default=256)
    args = p.parse_args(argv)
    arr = np.random.default_rng(0).random(args.mib << 18, dtype=np.float32)  # mib MiB of float32
    with tempfile.TemporaryDirectory() as tmp:
        server = _s3server().S3Server(os.path.join(tmp, "moto.log"))
        try:
            os.environ.update(server.env())
            remote = measure(f"s3://{server.new_bucket()}/bench/values", arr)
            local = measure(os.path.join(tmp, "values"), arr)
        finally:
            server.stop()
    print(f"array {args.mib} MiB float32; CPU-seconds of this process per GB, MB/s wall (moto: for scale only)")
    for name, r in (("local", local), ("s3", remote)):
        print(f"  {name:<6} write {r['write_cpu_s_per_gb']:.2f} cpu-s/GB ({r['write_mb_s']:.0f} MB/s), "
              f"read {r['read_cpu_s_per_gb']:.2f} cpu-s/GB ({r['read_mb_s']:.0f} MB/s)")
    # Only the first measurement can raise the process's peak (ru_maxrss never falls): s3 runs first.
    print(f"  the s3 write added {remote['write_peak_added_mib']:.0f} MiB to the peak memory "
          f"(the array: {args.mib} MiB)")
    print(f"  s3/local CPU: write {remote['write_cpu_s_per_gb'] / local['write_cpu_s_per_gb']:.2f}x, "
          f"read {remote['read_cpu_s_per_gb'] / local['read_cpu_s_per_gb']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
