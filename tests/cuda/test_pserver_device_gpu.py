"""A GPU-resident pserver on a real GPU: staging, device tables, and a served job.

Runs only where cupy imports and finds a CUDA device; skips otherwise (the
host twins are tests/unit/test_pserver_device_*.py, the same code with
xp=numpy). Real: pinned staging buffers and async copies, the fused sparse
kernels updating device-resident table columns, a PserverState whose scope
lives on the GPU, and `psjob run` with `spec.pserver.device: gpu` (real
pserver and trainer processes over gRPC).
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import psjob.foundation.cuda as cuda

if not cuda.is_available():
    pytest.skip("needs cupy and a CUDA device", allow_module_level=True)

cp = cuda.require_cupy()

from psjob.cluster.pserver.device_staging import DeviceStaging
from psjob.fluid.core import SelectedRows
from psjob.foundation.tables import InitializerConfig, OptimizerConfig, SparseTable, TableConfig

# The fused kernels may contract a*b+c into one FMA; numpy rounds twice.
RTOL, ATOL = 2e-5, 1e-6


def test_staging_round_trips_a_request_through_pinned_memory_in_one_copy():
    st = DeviceStaging(cp, 0)
    rng = np.random.default_rng(0)
    dense = rng.standard_normal((1000, 33)).astype(np.float32)
    sr = SelectedRows(np.arange(7, dtype=np.int64), rng.standard_normal((7, 16)).astype(np.float32), 50)
    got = st.to_device({"a": np.frombuffer(dense.tobytes(), np.float32).reshape(dense.shape), "s": sr})
    assert isinstance(got["a"], cp.ndarray) and isinstance(got["s"].values, cp.ndarray)
    assert st.uploads == 1
    np.testing.assert_array_equal(cp.asnumpy(got["a"]), dense)
    np.testing.assert_array_equal(cp.asnumpy(got["s"].rows), sr.rows)
    # the pinned buffer is reused: the second request waits for the first copy's event
    got2 = st.to_device({"a": dense * 2})
    assert st.allocated == 1
    np.testing.assert_array_equal(cp.asnumpy(got["a"]), dense)
    np.testing.assert_array_equal(cp.asnumpy(got2["a"]), dense * 2)
    back = st.to_host({"a": got2["a"], "v": got["s"].values[2:5]})
    assert isinstance(back["a"], np.ndarray)
    np.testing.assert_array_equal(back["a"], dense * 2)
    np.testing.assert_array_equal(back["v"], sr.values[2:5])


@pytest.mark.parametrize("name,hyper", [("sgd", {}), ("adagrad", {"epsilon": 1e-6}), ("adam", {}),
                                        ("momentum", {"mu": 0.9}), ("rmsprop", {})])
def test_a_device_table_gives_the_host_tables_rows_after_the_same_pushes(name, hyper):
    cfg = TableConfig("emb", dim=16, seed=9, initializer=InitializerConfig("uniform", low=-0.1, high=0.1),
                      optimizer=OptimizerConfig(name, lr=0.05, hyper=hyper), initial_capacity=1024)
    host = SparseTable(cfg)
    dev = SparseTable(cfg).to_device(cp, transfer=DeviceStaging(cp, 0))
    rng = np.random.default_rng(3)
    for _ in range(6):   # grows past the initial capacity on the device
        ids = (rng.zipf(1.2, 4096).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)).view(np.int64)
        np.testing.assert_allclose(dev.lookup(ids), host.lookup(ids), rtol=RTOL, atol=ATOL)
        grads = rng.standard_normal((ids.size, 16)).astype(np.float32)
        host.push(ids, grads)
        dev.push(ids, grads)
    assert isinstance(dev._storage.cols["value"], cp.ndarray)
    a, b = dev.export(), host.export()
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_allclose(a.values, b.values, rtol=RTOL, atol=ATOL)
    for k in b.state:
        assert isinstance(a.state[k], np.ndarray)
        np.testing.assert_allclose(a.state[k], b.state[k], rtol=RTOL, atol=ATOL, err_msg=k)
    restored = SparseTable(cfg).to_device(cp)
    restored.import_rows(a)
    np.testing.assert_array_equal(restored.export().values, a.values)


def test_an_in_process_pserver_with_its_state_on_the_gpu_trains_like_a_cpu_one():
    """The unit test's scenario (tests/unit/test_pserver_device_placement.py) on cupy."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "unit"))
    import test_pserver_device_placement as host_twin

    import psjob.fluid as fluid
    from psjob.cluster.pserver import pserver as ps_mod
    ref_cluster, ref_scopes, _ = host_twin.train("adam", 2, True, on_device=False)
    real_place = ps_mod.place_on_device

    def on_gpu(state, device, **_):
        return real_place(state, "gpu:0")
    host_twin.place_on_device, saved = on_gpu, host_twin.place_on_device
    try:
        cluster, scopes, placements = host_twin.train("adam", 2, True, on_device=True)
    finally:
        host_twin.place_on_device = saved
    for ep, p in placements.items():
        state = cluster.handler(ep)
        assert p.xp is cp and isinstance(state.exe.place, fluid.CUDAPlace)
        dense = [n for n, v in state.scope.vars.items() if n.startswith("fc_") and isinstance(v, cp.ndarray)]
        assert dense, "dense blocks should be cupy arrays"
        assert state.scope.vars["emb"].array_module is cp
    want, got = host_twin.dense_params(ref_scopes[0]), host_twin.dense_params(scopes[0])
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5, err_msg=name)


def test_psjob_run_with_gpu_pservers_completes(tmp_path):
    """`spec.pserver.device: gpu`: real pserver processes keep their state on the GPU."""
    import yaml
    job = tmp_path / "gpu-ps.yaml"
    job.write_text(yaml.safe_dump({
        "apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob", "metadata": {"name": "gpu-ps"},
        "spec": {"image": "psjob:test", "mode": "async",
                 "args": ["--examples", "4000", "--batch", "200", "--distributed_table"],
                 "pserver": {"replicas": 1, "device": "gpu"}, "worker": {"replicas": 2},
                 "runPolicy": {"backoffLimit": 0}}}))
    out = subprocess.run([sys.executable, "-m", "psjob.cli", "run", str(job), "--workdir", str(tmp_path / "w"),
                          "--summary", str(tmp_path / "s.json")], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["status"] == "Succeeded" and summary["examples"] == 4000
    logs = "".join(p.read_text(errors="replace") for p in (tmp_path / "w").rglob("*.log")
                   if "pserver" in p.name)
    assert "state on gpu" in logs, logs[-2000:]
