"""CUDA tier: the fused optimizer kernels, checked without a GPU where possible.

Real: nvcc 13 compiling every CUDA source for the worker image's
architectures; NVRTC (libnvrtc from the nvidia-cuda-nvrtc-cu12 wheel, the
compiler cupy uses at run time) compiling the exact source string psjob
hands to cupy; the kernels' header compiled by nvcc for the host into a
shared library that runs the same arithmetic and row indexing on the CPU,
compared with the numpy reference (psjob.foundation.kernels.optimizers).
Faked: nothing. Not covered here: the launch itself (grid, in-launch beta-pow
advance) — test_gpu_kernels.py runs that when cupy finds a GPU and skips
otherwise; nvcc- and NVRTC-based tests skip when those tools are missing.
"""
import ctypes
import glob
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from psjob.foundation.cuda._source import SOURCE_DIR as CUDA_DIR

HERE = Path(__file__).resolve().parent


def _find_nvcc():
    return shutil.which("nvcc") or next(
        (p for p in ("/usr/local/cuda/bin/nvcc", "/usr/local/bin/nvcc") if os.path.exists(p)), None)


@pytest.fixture(scope="session")
def nvcc():
    path = _find_nvcc()
    if path is None:
        pytest.skip("nvcc is not installed")
    return path


@pytest.fixture(scope="session")
def host_library(nvcc, tmp_path_factory):
    """tests/cuda/host_shim.cu + optimizer_math.cuh built for the host by nvcc."""
    out = tmp_path_factory.mktemp("host") / "libpsjob_host_optimizers.so"
    subprocess.run(
        [nvcc, "-std=c++17", "-O2", "-Werror", "all-warnings", "-shared", "-Xcompiler", "-fPIC",
         f"-I{CUDA_DIR}", "-o", str(out), str(HERE / "host_shim.cu")],
        check=True, capture_output=True, text=True, timeout=120)
    return ctypes.CDLL(str(out))


@pytest.fixture(scope="session")
def nvrtc():
    try:
        import nvidia.cuda_nvrtc as package
    except ImportError:
        pytest.skip("libnvrtc is not installed (pip install nvidia-cuda-nvrtc-cu12)")
    roots = list(getattr(package, "__path__", []))
    libs = sorted(p for root in roots for p in glob.glob(os.path.join(root, "lib", "libnvrtc.so.*"))
                  if "alt" not in os.path.basename(p))
    if not libs:
        pytest.skip("libnvrtc.so not found in the nvidia-cuda-nvrtc package")
    return ctypes.CDLL(libs[0])
