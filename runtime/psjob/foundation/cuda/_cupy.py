"""The one place that imports cupy, lazily, with the error users see."""
from __future__ import annotations

from typing import Any

INSTALL_HINT = "CUDAPlace needs cupy and an NVIDIA GPU: pip install psjob[cuda]"


class CudaUnavailableError(RuntimeError):
    """cupy is not installed, or it finds no usable NVIDIA GPU."""


def require_cupy() -> Any:
    """Return the cupy module, or raise CudaUnavailableError saying why."""
    try:
        import cupy
    except ImportError as err:
        raise CudaUnavailableError(f"{INSTALL_HINT} (cupy is not installed: {err})") from err
    try:
        devices = cupy.cuda.runtime.getDeviceCount()
    except Exception as err:  # cupy raises CUDARuntimeError without a driver
        raise CudaUnavailableError(f"{INSTALL_HINT} (no usable CUDA device: {err})") from err
    if devices < 1:
        raise CudaUnavailableError(f"{INSTALL_HINT} (cupy found no CUDA device)")
    return cupy
