"""The CUDA path: fused optimizer kernels and the lazy cupy loader.

Importing this package never imports cupy; the first call that needs a GPU
does (`require_cupy`), and raises `CudaUnavailableError` — "CUDAPlace needs
cupy and an NVIDIA GPU: pip install psjob[cuda]" — when cupy or a device is
missing. The kernels are CUDA C++ in this folder (optimizer_math.cuh holds
the per-element arithmetic shared by device and host builds;
optimizer_kernels.cu the __global__ entry points) and are compiled at run
time by NVRTC through cupy.RawModule. docs/user/cuda.md says what runs where.

Dispatch by place: the framework calls
``cuda_optimizer_update(name, xp, param, grad, *state, **hyper)`` (or
``..._rows`` with ``rows, grad_values``) with the same arguments it would
pass to ``psjob.foundation.kernels.optimizers.<name>_update``.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from psjob.foundation.cuda._cupy import INSTALL_HINT, CudaUnavailableError, require_cupy
from psjob.foundation.cuda._source import FUSED_OPTIMIZERS, KERNEL_NAMES

__all__ = [
    "CudaUnavailableError", "FUSED_OPTIMIZERS", "INSTALL_HINT", "KERNEL_NAMES",
    "cuda_optimizer_update", "cuda_optimizer_update_rows", "is_available", "require_cupy",
]


def is_available() -> bool:
    """True when cupy imports and sees at least one CUDA device."""
    try:
        require_cupy()
    except CudaUnavailableError:
        return False
    return True


def _table(dense: bool) -> Mapping[str, Callable[..., None]]:
    require_cupy()  # fail with the install hint before touching any array
    from psjob.foundation.cuda import optimizers
    return optimizers.DENSE_UPDATES if dense else optimizers.ROW_UPDATES


def _lookup(table: Mapping[str, Callable[..., None]], name: str) -> Callable[..., None]:
    try:
        return table[name]
    except KeyError:
        raise ValueError(f"unknown optimizer {name!r}; known: {', '.join(sorted(table))}") from None


def cuda_optimizer_update(name: str, xp: Any, param: Any, grad: Any, *state: Any, **hyper: Any) -> None:
    """Dense update of `param` in place on the GPU (fused for sgd, momentum,
    adagrad, adam; the reference math on cupy for the rest)."""
    return _lookup(_table(dense=True), name)(xp, param, grad, *state, **hyper)


def cuda_optimizer_update_rows(name: str, xp: Any, param: Any, rows: Any, grad_values: Any, *state: Any,
                               **hyper: Any) -> None:
    """Lazy sparse update of the rows present, in place on the GPU."""
    return _lookup(_table(dense=False), name)(xp, param, rows, grad_values, *state, **hyper)
