"""Compiles the fused kernels with cupy (NVRTC) and launches plans.

Lifecycle: the first launch on a device compiles optimizer_kernels.cu (with
the header pasted in) through cupy.RawModule; cupy caches the binary on disk,
so later processes load it without compiling. Each (device, stream) gets one
zero-initialised ticket counter for adam's in-launch beta-pow advance; adam
kernels reset it to 0 before they finish, so it is reused, and two launches
on one stream never overlap. Everything here runs on the current cupy device
and stream and returns without synchronising.
"""
from __future__ import annotations

import threading
from typing import Any

from psjob.foundation.cuda._plans import LaunchPlan
from psjob.foundation.cuda._source import NVRTC_OPTIONS, kernel_source

THREADS_PER_BLOCK = 256
# Grid-stride loops: more blocks than this per SM only adds scheduling work.
BLOCKS_PER_SM = 32

_lock = threading.Lock()
_modules: dict[int, object] = {}
_tickets: dict[tuple[int, int], object] = {}
_sm_counts: dict[int, int] = {}


def _module(cupy: Any, device_id: int) -> Any:
    with _lock:
        module = _modules.get(device_id)
        if module is None:
            module = cupy.RawModule(code=kernel_source(), options=NVRTC_OPTIONS)
            _modules[device_id] = module
        return module


def _ticket(cupy: Any, device_id: int) -> Any:
    key = (device_id, cupy.cuda.get_current_stream().ptr)
    with _lock:
        ticket = _tickets.get(key)
        if ticket is None:
            ticket = cupy.zeros(1, dtype=cupy.uint32)
            _tickets[key] = ticket
        return ticket


def _grid(cupy: Any, device_id: int, count: int) -> int:
    sms = _sm_counts.get(device_id)
    if sms is None:
        sms = cupy.cuda.Device(device_id).attributes["MultiProcessorCount"]
        _sm_counts[device_id] = sms
    blocks = -(-count // THREADS_PER_BLOCK)
    return max(1, min(blocks, sms * BLOCKS_PER_SM))


def launch(cupy: Any, plan: LaunchPlan) -> None:
    """Run one fused update (one kernel launch) on the current stream."""
    if not isinstance(plan.param, cupy.ndarray):
        raise TypeError("the fused CUDA optimizers take cupy arrays; for numpy arrays use"
                        " psjob.foundation.kernels.optimizers")
    if plan.count == 0 and not plan.needs_ticket:
        return  # nothing to visit (adam still advances its pows)
    device_id = plan.param.device.id
    # The kernels ignore the pointer slots planned as None; any device
    # pointer will do, and the parameter is at hand.
    args = tuple(plan.param if a is None else a for a in plan.args)
    if plan.needs_ticket:
        args += (_ticket(cupy, device_id),)
    kernel = _module(cupy, device_id).get_function(plan.kernel)
    kernel((_grid(cupy, device_id, plan.count),), (THREADS_PER_BLOCK,), args)
