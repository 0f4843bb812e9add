"""`paddle.fluid.profiler`: Fluid's profiler switches, with psjob's coarser measure.

Paddle's profiler records every operator's time in its C++ runtime and, on stop, prints a
per-op table and writes `profile_path`. psjob has no per-op tracer: these functions check
their arguments as Paddle does (state 'CPU'/'GPU'/'All', tracer_option 'Default'/'OpDetail'/
'AllOpDetail', sorted_key None or 'calls'/'total'/'max'/'min'/'ave') and, on stop, print
the wall time between start and stop to stderr, saying that no per-op profile was kept.
`cuda_profiler` (nvprof) is refused: psjob runs no CUDA kernels of its own there.
Reference: PaddlePaddle 1.8 API, fluid.profiler.
"""
from __future__ import annotations

import contextlib
import sys
import time

__all__ = ["cuda_profiler", "reset_profiler", "profiler", "start_profiler", "stop_profiler"]

_STATES = ("CPU", "GPU", "All")
_TRACERS = ("Default", "OpDetail", "AllOpDetail")
_KEYS = (None, "calls", "total", "max", "min", "ave")
_started: list[float] = []


def start_profiler(state, tracer_option="Default"):
    if state not in _STATES:
        raise ValueError("The state must be 'CPU' or 'GPU' or 'All'.")
    if tracer_option not in _TRACERS:
        raise ValueError("tracer option must be 'Default', 'OpDetail', 'AllOpDetail'.")
    if not _started:
        _started.append(time.perf_counter())


def reset_profiler():
    if _started:
        _started[0] = time.perf_counter()


def stop_profiler(sorted_key=None, profile_path="/tmp/profile"):
    if sorted_key not in _KEYS:
        raise ValueError("The sorted_key must be None or in 'calls', 'total', 'max', 'min' and 'ave'")
    if not _started:
        return
    seconds = time.perf_counter() - _started.pop()
    sys.stderr.write(f"[psjob] profiler: {seconds:.3f} s between start and stop (psjob keeps no "
                     f"per-op profile; nothing written to {profile_path})\n")


@contextlib.contextmanager
def profiler(state, sorted_key=None, profile_path="/tmp/profile", tracer_option="Default"):
    start_profiler(state, tracer_option)
    try:
        yield
    finally:
        stop_profiler(sorted_key, profile_path)


def cuda_profiler(output_file, output_mode=None, config=None):
    raise RuntimeError("fluid.profiler.cuda_profiler (nvprof) is not supported by psjob; "
                       "use fluid.profiler.profiler('CPU') for a wall-time measure")
