"""NCCL all-reduce of collective trainers through cupy (psjob.cluster.collective.nccl), on a GPU.

Runs only where cupy imports with its NCCL binding and finds a CUDA device; skips otherwise
(the unique-id exchange over the TCP ring is tested on CPU in
tests/component/test_collective.py). One GPU: a one-trainer communicator, and the
c_allreduce_sum op of a CUDAPlace executor going through it; two trainers need two GPUs
(NCCL refuses two ranks on one device).
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from psjob.cluster.collective import nccl as psjob_nccl

try:
    psjob_nccl.nccl_module()
except psjob_nccl.NcclUnavailableError as exc:
    pytest.skip(f"needs cupy with NCCL and a CUDA device: {exc}", allow_module_level=True)

import cupy as cp  # noqa: E402

from psjob.cluster.collective.ring import Ring  # noqa: E402
from psjob.launcher.launch import free_ports  # noqa: E402


def test_a_one_trainer_communicator_sums_in_place_on_the_device():
    ring = nccl_over_one()
    x = cp.arange(1000, dtype=cp.float32)
    out = ring.allreduce(x)
    assert isinstance(out, cp.ndarray)
    np.testing.assert_array_equal(cp.asnumpy(out), np.arange(1000, dtype=np.float32))
    ring.close()


def nccl_over_one():
    return psjob_nccl.NcclRing(Ring(0, ["127.0.0.1:1"]))


def test_the_collective_op_on_cudaplace_goes_through_nccl(monkeypatch):
    """c_allreduce_sum of a program on CUDAPlace runs NCCL on the device (one trainer)."""
    from psjob.cluster.collective import service
    service.reset()
    monkeypatch.setenv("PADDLE_TRAINER_ENDPOINTS", "127.0.0.1:1")
    monkeypatch.setenv("PADDLE_TRAINER_ID", "0")
    monkeypatch.setenv("PADDLE_TRAINERS_NUM", "1")
    try:
        device = service.device_ring()
        assert isinstance(device, psjob_nccl.NcclRing)
        calls = []
        real = device.allreduce
        monkeypatch.setattr(device, "allreduce", lambda x: calls.append(x.shape) or real(x))
        from psjob import fluid
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup):
            x = fluid.layers.data(name="x", shape=[4], dtype="float32")
            y = fluid.layers.scale(x, scale=2.0)
            main.global_block().append_op(type="c_allreduce_sum", inputs={"X": [y]},
                                          outputs={"Out": [y]}, attrs={"ring_id": 0})
        exe = fluid.Executor(fluid.CUDAPlace(0))
        exe.run(startup)
        out, = exe.run(main, feed={"x": np.ones((2, 4), "float32")}, fetch_list=[y])
        np.testing.assert_array_equal(np.asarray(out), np.full((2, 4), 2.0, "float32"))
        assert calls, "no c_allreduce_sum went through NCCL"
    finally:
        service.reset()


@pytest.mark.skipif(cp.cuda.runtime.getDeviceCount() < 2, reason="two trainers need two GPUs")
def test_two_trainers_sum_over_nccl_with_the_id_sent_over_the_ring(tmp_path):
    eps = ",".join(f"127.0.0.1:{p}" for p in free_ports(2))
    script = textwrap.dedent(f"""
        import sys, cupy as cp
        from psjob.cluster.collective.ring import Ring
        from psjob.cluster.collective.nccl import NcclRing
        rank = int(sys.argv[1])
        cp.cuda.Device(rank).use()
        nccl = NcclRing(Ring(rank, "{eps}".split(","), "t").connect())
        out = nccl.allreduce(cp.arange(10, dtype=cp.float64) * (rank + 1))
        print(float(out.sum()))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(r)], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=dict(os.environ)) for r in range(2)]
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0, out
        assert float(out.strip().splitlines()[-1]) == 135.0  # 45 * (1 + 2)
