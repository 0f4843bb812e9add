"""Where the CUDA sources are, what they define, and how they are compiled.

Pure Python with no cupy: the loader uses it at run time, and tests/cuda
use it to compile exactly the text NVRTC will see with nvcc and NVRTC on a
machine without a GPU.
"""
from __future__ import annotations

from pathlib import Path

SOURCE_DIR = Path(__file__).resolve().parent
HEADER = SOURCE_DIR / "optimizer_math.cuh"
KERNELS = SOURCE_DIR / "optimizer_kernels.cu"

FUSED_OPTIMIZERS = ("sgd", "momentum", "adagrad", "adam")
LAYOUTS = ("dense", "rows")
DTYPE_SUFFIX = {"float32": "f32", "float64": "f64"}

# Architectures the worker image targets, for the nvcc checks. nvcc 13 dropped
# everything before Turing, so sm_75 is the floor: T4 (75), A100/A30 (80),
# A10/A40/RTX 30 (86), L4/L40 (89), H100/H200 (90). The PTX for compute_90 is
# embedded too, so newer GPUs can JIT it. At run time cupy compiles the
# source with NVRTC for the GPU it actually finds, so this list bounds the
# test matrix, not where psjob can run.
TARGET_ARCHS = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90")
PTX_ARCH = "compute_90"

# Options for NVRTC (cupy adds -arch for the current device itself).
NVRTC_OPTIONS = ("--std=c++17",)


def kernel_name(optimizer: str, layout: str, dtype: str) -> str:
    """The extern "C" symbol of one fused kernel, e.g. psjob_adam_rows_f32."""
    if optimizer not in FUSED_OPTIMIZERS:
        raise ValueError(f"no fused CUDA kernel for optimizer {optimizer!r};"
                         f" fused ones: {', '.join(FUSED_OPTIMIZERS)}")
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    try:
        suffix = DTYPE_SUFFIX[str(dtype)]
    except KeyError:
        raise TypeError(f"fused CUDA optimizers take float32 or float64 arrays, got {dtype}") from None
    return f"psjob_{optimizer}_{layout}_{suffix}"


KERNEL_NAMES = tuple(kernel_name(o, layout, d) for o in FUSED_OPTIMIZERS
                     for layout in LAYOUTS for d in DTYPE_SUFFIX)


def kernel_source() -> str:
    """optimizer_kernels.cu with the header pasted in place of its #include.

    One self-contained string: NVRTC needs no include path, and cupy's
    compile cache (keyed by source text) sees changes to the header too.
    """
    include = f'#include "{HEADER.name}"'
    text = KERNELS.read_text()
    if include not in text:
        raise RuntimeError(f"{KERNELS.name} no longer includes {HEADER.name}")
    return text.replace(include, HEADER.read_text(), 1)


def nvcc_gencode_flags() -> list[str]:
    """-gencode flags building SASS for every target and PTX for the newest."""
    flags = []
    for arch in TARGET_ARCHS:
        code = f"[{arch},{PTX_ARCH}]" if arch.replace("sm_", "compute_") == PTX_ARCH else arch
        flags += ["-gencode", f"arch={arch.replace('sm_', 'compute_')},code={code}"]
    return flags
