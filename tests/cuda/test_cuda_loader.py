"""Importing psjob never needs cupy; without cupy or a GPU the CUDA entry
points fail with one clear, actionable error."""
import subprocess
import sys

import numpy as np
import pytest

import psjob.foundation.cuda as cuda


def test_importing_psjob_and_its_cuda_package_does_not_import_cupy():
    code = ("import sys, psjob, psjob.foundation.cuda, psjob.foundation.cuda.optimizers, psjob.foundation.kernels.optimizers;"
            "print('cupy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         check=True)
    assert out.stdout.strip() == "False"


def test_cuda_update_without_cupy_or_gpu_raises_the_install_hint():
    if cuda.is_available():
        pytest.skip("cupy and a GPU are present here")
    param = np.zeros((2, 2), np.float32)
    with pytest.raises(cuda.CudaUnavailableError,
                       match=r"CUDAPlace needs cupy and an NVIDIA GPU: pip install psjob\[cuda\]"):
        cuda.cuda_optimizer_update("sgd", np, param, param.copy(), lr=0.1)
    with pytest.raises(cuda.CudaUnavailableError, match="pip install psjob"):
        cuda.cuda_optimizer_update_rows("adam", np, param, np.array([0]), param[:1].copy(),
                                        lr=0.1)
    with pytest.raises(cuda.CudaUnavailableError):
        cuda.require_cupy()
    np.testing.assert_array_equal(param, 0)


def test_the_cuda_tables_cover_every_optimizer_of_the_reference():
    from psjob.foundation.cuda import optimizers as on_gpu
    from psjob.foundation.kernels import optimizers as reference
    assert set(on_gpu.DENSE_UPDATES) == set(reference.DENSE_UPDATES)
    assert set(on_gpu.ROW_UPDATES) == set(reference.ROW_UPDATES)
    for name in cuda.FUSED_OPTIMIZERS:
        assert on_gpu.DENSE_UPDATES[name] is not reference.DENSE_UPDATES[name]
        assert on_gpu.ROW_UPDATES[name] is not reference.ROW_UPDATES[name]
