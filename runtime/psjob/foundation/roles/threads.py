"""Thread sizing: how many math-library threads each process of a host gets."""
from __future__ import annotations

import os

# Thread pools of the math libraries under numpy (OpenBLAS, MKL, OpenMP). Each
# defaults to one thread per visible core, and its threads spin while waiting
# for work: with a pserver, a trainer and the trainer's communicator threads on
# the same cores, a 2-thread OpenBLAS matmul measured 2-3x slower than a
# 1-thread one (bench/ps_train.py). The launchers size them to the process's
# share of the cores; a value the user exported wins.
MATH_THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def math_threads(processes_on_host: int, cores: int | None = None) -> int:
    """The math-library threads per process when `processes_on_host` share the cores."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cores // max(1, processes_on_host))
