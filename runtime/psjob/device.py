"""Paddle 2.x's device and mode switches (`paddle.set_device`, `paddle.enable_static`, ...).

psjob runs static graphs only. Paddle starts in dynamic (dygraph) mode and a
static-graph script calls `paddle.enable_static()` first; psjob keeps that
switch so `in_dynamic_mode()` answers as Paddle would, and refuses to build an
`nn.Layer` (the one thing that would train eagerly in Paddle) until it is on.
"""
from __future__ import annotations

import numpy as np

from psjob.fluid import unique_name
from psjob.fluid.core import CPUPlace, CUDAPinnedPlace, CUDAPlace, is_compiled_with_cuda

__all__ = ["enable_static", "disable_static", "in_dynamic_mode", "set_device", "get_device",
           "is_compiled_with_cuda", "is_compiled_with_custom_device", "is_compiled_with_xpu",
           "is_compiled_with_rocm", "seed", "CPUPlace", "CUDAPlace", "CUDAPinnedPlace",
           "require_static", "cuda"]

_static = False
_device = "cpu"


class DynamicModeError(RuntimeError):
    """psjob has no dygraph (eager) mode."""


def enable_static():
    """Paddle's switch to static graphs. It also turns on Paddle 3.0's per-program names (each
    Program counts its own `fc_0`, `_generated_var_0`, ...: psjob.fluid.unique_name), which
    sets a Paddle 2.x/3.x script apart from a Fluid 1.x one: only the former calls this."""
    global _static
    _static = True
    unique_name.use_per_program_names(True)


def disable_static(place=None):
    """Paddle's switch back to dygraph: psjob has none, so this raises."""
    raise DynamicModeError("paddle.disable_static(): psjob runs static graphs only (dygraph "
                           "training is not supported); keep paddle.enable_static() and build a Program")


def in_dynamic_mode() -> bool:
    return not _static


def require_static(what: str):
    if not _static:
        raise DynamicModeError(f"{what} in dynamic (dygraph) mode: psjob runs static graphs only; "
                               "call paddle.enable_static() before building the model")


def set_device(device: str):
    """'cpu', 'gpu' or 'gpu:N'; returns the Place. A GPU needs CuPy and a CUDA device."""
    global _device
    if not isinstance(device, str):
        raise TypeError(f"set_device: device must be a string such as 'cpu' or 'gpu:0', got {device!r}")
    kind, _, index = device.lower().partition(":")
    if kind == "cpu":
        place = CPUPlace()
    elif kind == "gpu":
        if not is_compiled_with_cuda():
            raise ValueError(f"set_device({device!r}): no CUDA device (psjob needs CuPy and a GPU)")
        place = CUDAPlace(int(index or 0))
    else:
        raise ValueError(f"set_device: unknown device {device!r} (psjob has 'cpu' and 'gpu[:N]')")
    _device = "cpu" if kind == "cpu" else f"gpu:{int(index or 0)}"
    return place


def get_device() -> str:
    return _device


def is_compiled_with_custom_device(device_type: str = "") -> bool:
    return False


def is_compiled_with_xpu() -> bool:
    return False


def is_compiled_with_rocm() -> bool:
    return False


def seed(value: int):
    """Seed the programs built from now on (and numpy's global generator), as paddle.seed does
    in static mode: the default programs and every later Program get `random_seed = value`."""
    from psjob.fluid import framework
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"paddle.seed needs an int, got {value!r}")
    framework.global_seed(int(value))
    framework.default_main_program().random_seed = int(value)
    framework.default_startup_program().random_seed = int(value)
    np.random.seed(int(value) % 2**32)


class _Cuda:
    """paddle.device.cuda, the part scripts use to size themselves: device_count() (0 without
    CuPy or a visible GPU, as Paddle's CPU build answers) and get_device_properties(device)."""

    @staticmethod
    def device_count() -> int:
        if not is_compiled_with_cuda():
            return 0
        from psjob.foundation.cuda._cupy import require_cupy
        return int(require_cupy().cuda.runtime.getDeviceCount())

    @staticmethod
    def get_device_properties(device=None):
        """The CUDA properties of `device` (an index, 'gpu:N' or a CUDAPlace; the current
        device by default): name, major, minor, total_memory, multi_processor_count."""
        from types import SimpleNamespace

        from psjob.foundation.cuda._cupy import require_cupy
        cupy = require_cupy()  # raises, naming why, where there is no GPU
        if device is None:
            index = int(_device.partition(":")[2] or 0)
        elif isinstance(device, str):
            index = int(device.partition(":")[2] or 0)
        else:
            index = int(getattr(device, "device_id", device))
        props = cupy.cuda.runtime.getDeviceProperties(index)
        name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        return SimpleNamespace(name=name, major=props["major"], minor=props["minor"],
                               total_memory=props["totalGlobalMem"],
                               multi_processor_count=props["multiProcessorCount"])


cuda = _Cuda()
