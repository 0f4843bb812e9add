"""psjob.cluster.pserver.device_staging with xp=numpy: the packing, pooling and view logic a GPU pserver runs.

Real: DeviceStaging itself, with numpy as its array module — the same code a
GPU pserver runs with cupy, where only the four module-specific primitives
(host allocation, h2d, d2h, finish) differ. The cupy side runs in
tests/cuda/test_pserver_device_gpu.py when a GPU is present.
"""
import numpy as np
import pytest

from psjob.cluster.pserver import device_staging as ds
from psjob.cluster.pserver.device_staging import ALIGN, MIN_BUFFER, DeviceStaging, parse_device
from psjob.fluid.core import PlaceError, SelectedRows


def wire_view(array):
    """What the RPC layer hands the pserver: a read-only view over message bytes."""
    return np.frombuffer(array.tobytes(), dtype=array.dtype).reshape(array.shape)


def test_parse_device_accepts_cpu_gpu_and_an_index_and_names_bad_values():
    assert parse_device("cpu") == ("cpu", 0)
    assert parse_device("") == ("cpu", 0)
    assert parse_device("gpu") == ("gpu", 0)
    assert parse_device("GPU:3") == ("gpu", 3)
    for bad in ("cuda", "gpu:", "gpu:-1", "gpu:a", "tpu:0", "gpu:0:1"):
        with pytest.raises(ValueError, match="cpu, gpu or gpu:N"):
            parse_device(bad)


def test_a_gpu_without_cupy_or_a_device_fails_naming_the_extra(monkeypatch):
    from psjob.foundation import cuda

    def missing():
        raise cuda.CudaUnavailableError(f"{cuda.INSTALL_HINT} (cupy is not installed: test)")
    monkeypatch.setattr(ds, "require_cupy", missing)
    with pytest.raises(PlaceError, match=r"pip install psjob\[cuda\].*device cpu"):
        ds.array_module_for("gpu:0")
    assert ds.array_module_for("cpu") == (np, 0)


def test_one_request_is_packed_into_one_buffer_and_one_copy_with_aligned_views():
    st = DeviceStaging(np)
    rng = np.random.default_rng(0)
    dense = rng.standard_normal((7, 5)).astype(np.float32)
    rows = np.array([3, 1, 3], np.int64)
    values = rng.standard_normal((3, 4)).astype(np.float64)
    scalar = np.array(2.5, np.float32)
    empty = np.zeros((0, 4), np.float32)
    got = st.to_device({"w@GRAD": wire_view(dense), "emb@GRAD": SelectedRows(wire_view(rows), wire_view(values), 10),
                        "lr": (wire_view(scalar), [[0, 1]]), "none": empty})
    assert st.uploads == 1 and st.allocated == 1
    np.testing.assert_array_equal(got["w@GRAD"], dense)
    assert got["w@GRAD"].dtype == np.float32 and got["w@GRAD"].shape == (7, 5)
    assert isinstance(got["emb@GRAD"], SelectedRows) and got["emb@GRAD"].height == 10
    np.testing.assert_array_equal(got["emb@GRAD"].rows, rows)
    np.testing.assert_array_equal(got["emb@GRAD"].values, values)
    assert got["lr"].shape == () and float(got["lr"]) == 2.5   # the (array, lod) pair became the array
    assert got["none"].shape == (0, 4)
    # Every "device" view lies in one allocation, each at a 256-byte boundary of it.
    base = got["w@GRAD"].base
    while getattr(base, "base", None) is not None:
        base = base.base
    start = got["w@GRAD"].ctypes.data
    for arr in (got["emb@GRAD"].rows, got["emb@GRAD"].values, got["lr"]):
        assert (arr.ctypes.data - start) % ALIGN == 0
        assert np.shares_memory(arr, base)
    # They are writable copies, detached from the staging buffer: reuse does not touch them.
    got["w@GRAD"][0, 0] = 99.0
    again = st.to_device({"w@GRAD": wire_view(dense * 0)})
    assert got["w@GRAD"][0, 0] == 99.0 and got["w@GRAD"][1, 0] == dense[1, 0]
    assert not again["w@GRAD"].any()


def test_staging_buffers_are_reused_and_grow_by_powers_of_two():
    st = DeviceStaging(np)
    small = np.ones(1000, np.float32)
    for _ in range(5):
        st.to_device({"g": small})
    assert st.allocated == 1 and st.cached_bytes == MIN_BUFFER
    big = np.ones(MIN_BUFFER // 4 + 1, np.float32)             # 1 MiB + 4 bytes
    st.to_device({"g": big})
    assert st.allocated == 2 and st.cached_bytes == MIN_BUFFER + 2 * MIN_BUFFER
    st.to_device({"g": small})                                  # the smallest buffer that fits
    st.to_device({"g": big})
    assert st.allocated == 2


def test_buffers_above_the_cache_limit_are_freed_after_use():
    st = DeviceStaging(np, max_cached_bytes=MIN_BUFFER)
    st.to_device({"g": np.ones(MIN_BUFFER // 4 + 1, np.float32)})
    assert st.cached_bytes == 0 and st.allocated == 1
    st.to_device({"g": np.ones(10, np.float32)})
    assert st.cached_bytes == MIN_BUFFER


def test_pulls_come_back_as_new_host_arrays_in_one_transfer():
    st = DeviceStaging(np)
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    sr = SelectedRows(np.array([0, 2], np.int64), np.ones((2, 4), np.float32), 3)
    out = st.to_host({"w": w, "t": w[:, 1:3], "sr": sr})        # a non-contiguous view too
    assert st.downloads == 1
    np.testing.assert_array_equal(out["w"], w)
    np.testing.assert_array_equal(out["t"], w[:, 1:3])
    assert not np.shares_memory(out["w"], w) and out["w"].flags.writeable
    np.testing.assert_array_equal(out["sr"].values, sr.values)
    w[0, 0] = -1.0
    assert out["w"][0, 0] == 0.0


def test_concurrent_requests_never_share_a_buffer():
    import threading
    st = DeviceStaging(np)
    errors = []

    def work(k):
        try:
            for i in range(50):
                a = np.full((257, 3), k * 1000 + i, np.float32)
                got = st.to_device({"a": a})["a"]
                if not (got == a).all():
                    errors.append((k, i))
        except Exception as exc:   # pragma: no cover - reported below
            errors.append(exc)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert st.allocated <= 4
