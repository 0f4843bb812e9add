"""Host ⇄ device transfers of a pserver whose state lives on a GPU.

A GPU pserver (ServeOptions.device = "gpu:N", docs/user/cuda.md) receives
gradients from the network as numpy views over the request's bytes. Copying
those to the device straight from pageable memory makes the driver bounce
them through its own small pinned buffer, synchronously, one tensor at a
time. `DeviceStaging` instead packs every tensor of one request into a
reusable *pinned* host buffer (cupy.cuda.alloc_pinned_memory) and issues one
asynchronous host→device copy of the whole pack into one fresh device
allocation; the request's tensors are views of it. Pulls go the other way:
device→pinned (one async copy per tensor, one synchronisation), then each
tensor is copied out of the pinned buffer into the array the reply encodes.

The array module is injected: with ``xp=numpy`` the same packing, pooling and
view logic runs on the host (the "device" buffer is a numpy array), which is
how tests check it without a GPU and how the tables' device code runs on a
CPU. Only `_alloc_host`, `_h2d`, `_d2h` and `_finish_d2h` differ by module.

Ordering. The copy is enqueued on the calling thread's current cupy stream.
cupy's default is the legacy default stream, which orders every kernel of
every thread after it, so the optimizer kernels that read the gradients
(possibly launched from another gRPC thread in sync mode) run after the copy
without the host waiting. On any other stream (per-thread default streams,
or a stream the caller made current) the copy is synchronised before the
views are returned. A pinned buffer goes back to the pool with the event of
its copy; whoever takes it next waits for that event before writing.

Buffers: rounded up to powers of two (at least 1 MiB); a pool keeps free
ones up to `max_cached_bytes` in total (others are freed on release), so a
steady stream of pushes allocates no pinned memory after the first few.
"""
from __future__ import annotations

import contextlib
import ctypes
import threading

import numpy as np

from psjob.fluid.core import PlaceError, SelectedRows
from psjob.foundation.cuda import CudaUnavailableError, require_cupy
from psjob.foundation.settings import parse_device  # noqa: F401  (the settings check PSJOB_DEVICE with it)

ALIGN = 256                 # device views start on 256-byte boundaries (cudaMalloc's alignment)
MIN_BUFFER = 1 << 20
DEFAULT_MAX_CACHED = 256 << 20

__all__ = ["DeviceStaging", "DeviceUnavailableError", "parse_device", "array_module_for"]


class DeviceUnavailableError(PlaceError):
    """A GPU pserver was asked for but cupy or the device is missing."""


def array_module_for(device: str):
    """(array module, device index) for a pserver device string; cupy only for gpu.

    Raises DeviceUnavailableError naming the extra to install when gpu is
    asked for and cupy or the GPU is missing."""
    kind, index = parse_device(device)
    if kind == "cpu":
        return np, 0
    try:
        cupy = require_cupy()
    except CudaUnavailableError as exc:
        raise DeviceUnavailableError(f"the pserver was asked to keep its state on {device!r}: {exc}; "
                                     "or run the pserver with device cpu") from None
    count = cupy.cuda.runtime.getDeviceCount()
    if index >= count:
        raise DeviceUnavailableError(f"the pserver was asked to keep its state on {device!r}, but only "
                                     f"{count} GPU(s) are visible (CUDA_VISIBLE_DEVICES, the pod's "
                                     "nvidia.com/gpu limit)")
    return cupy, index


def _layout(arrays) -> tuple[list[int], int]:
    offsets, total = [], 0
    for a in arrays:
        offsets.append(total)
        total += -(-a.nbytes // ALIGN) * ALIGN
    return offsets, total


class _Buffer:
    __slots__ = ("host", "keep", "event")

    def __init__(self, host, keep):
        self.host = host      # uint8 numpy view of the (pinned) allocation
        self.keep = keep      # the allocation itself (the view does not own cupy's pointer)
        self.event = None     # the copy that still reads this buffer, if any


class DeviceStaging:
    """Packs tensors into reusable (pinned) host buffers for one-copy transfers."""

    def __init__(self, xp, device_id: int = 0, *, max_cached_bytes: int = DEFAULT_MAX_CACHED):
        self.xp = xp
        self.device_id = int(device_id)
        self.on_gpu = xp is not np
        self.max_cached_bytes = int(max_cached_bytes)
        self._lock = threading.Lock()
        self._free: list[_Buffer] = []
        self._cached = 0
        # counters (read by tests and the benchmark)
        self.uploads = self.downloads = 0
        self.bytes_up = self.bytes_down = 0
        self.allocated = 0    # host buffers ever allocated

    # -- context -------------------------------------------------------------------------
    def device(self):
        """Context making this staging's GPU current (cupy's current device is per thread)."""
        return self.xp.cuda.Device(self.device_id) if self.on_gpu else contextlib.nullcontext()

    # -- the tables' transfer protocol: lists of arrays ------------------------------------
    def to_device_arrays(self, arrays) -> list:
        """Device copies of host arrays: one packed host→device copy for all of them."""
        arrays = [_contiguous(np.asarray(a)) for a in arrays]
        offsets, total = _layout(arrays)
        xp = self.xp
        with self.device():
            if total == 0:
                return [xp.empty(a.shape, a.dtype) for a in arrays]
            buf = self._acquire(total)
            try:
                for a, off in zip(arrays, offsets):
                    buf.host[off:off + a.nbytes] = a.reshape(-1).view(np.uint8)
                dev = xp.empty(total, dtype=np.uint8)
                self._h2d(dev, buf, total)
            finally:
                self._release(buf)
            self.uploads += 1
            self.bytes_up += total
            return [dev[off:off + a.nbytes].view(a.dtype).reshape(a.shape)
                    for a, off in zip(arrays, offsets)]

    def to_host_arrays(self, arrays) -> list:
        """New host (numpy) copies of device arrays, through one pinned buffer and one sync."""
        with self.device():
            arrays = [_contiguous(a) for a in arrays]
            offsets, total = _layout(arrays)
            if total == 0:
                return [np.empty(a.shape, a.dtype) for a in arrays]
            buf = self._acquire(total)
            try:
                for a, off in zip(arrays, offsets):
                    if a.nbytes:
                        self._d2h(a, buf, off)
                self._finish_d2h()
                out = [buf.host[off:off + a.nbytes].view(a.dtype).reshape(a.shape).copy()
                       for a, off in zip(arrays, offsets)]
            finally:
                self._release(buf)
            self.downloads += 1
            self.bytes_down += total
            return out

    # -- the pserver's protocol: name → value dicts ---------------------------------------
    def to_device(self, values: dict) -> dict:
        """Arrays and SelectedRows (rows and values) of one request on the device, in one copy.
        `(array, lod)` pairs from the wire become the array (the pserver ignores LoD)."""
        flat, shapes = _flatten(values)
        return _unflatten(shapes, self.to_device_arrays(flat))

    def to_host(self, values: dict) -> dict:
        flat, shapes = _flatten(values)
        return _unflatten(shapes, self.to_host_arrays(flat))

    # -- buffers ---------------------------------------------------------------------------
    def _acquire(self, nbytes: int) -> _Buffer:
        with self._lock:
            fits = [b for b in self._free if b.host.nbytes >= nbytes]
            if fits:
                buf = min(fits, key=lambda b: b.host.nbytes)
                self._free.remove(buf)
                self._cached -= buf.host.nbytes
            else:
                buf = None
        if buf is None:
            size = max(MIN_BUFFER, 1 << (nbytes - 1).bit_length())
            host, keep = self._alloc_host(size)
            buf = _Buffer(host, keep)
            self.allocated += 1
        elif buf.event is not None:
            buf.event.synchronize()   # the previous copy out of it has finished
            buf.event = None
        return buf

    def _release(self, buf: _Buffer) -> None:
        with self._lock:
            if self._cached + buf.host.nbytes <= self.max_cached_bytes:
                self._free.append(buf)
                self._cached += buf.host.nbytes
                return
        # Over the cache limit: free it, but never while a copy still reads it.
        if buf.event is not None:
            buf.event.synchronize()

    @property
    def cached_bytes(self) -> int:
        return self._cached

    # -- the only module-specific pieces ----------------------------------------------------
    def _alloc_host(self, size: int):
        if not self.on_gpu:
            host = np.empty(size, np.uint8)
            return host, host
        mem = self.xp.cuda.alloc_pinned_memory(size)
        # The pinned allocator may round the size up: view exactly `size` bytes.
        return np.frombuffer(mem, np.uint8, size), mem

    def _h2d(self, dev, buf: _Buffer, total: int) -> None:
        if not self.on_gpu:
            dev[...] = buf.host[:total]
            return
        stream = self.xp.cuda.get_current_stream()
        dev.data.copy_from_host_async(ctypes.c_void_p(buf.host.ctypes.data), total, stream)
        if stream.ptr == 0:
            # Legacy default stream: later kernels of every thread are ordered after the copy.
            buf.event = stream.record()
        else:
            stream.synchronize()

    def _d2h(self, src, buf: _Buffer, offset: int) -> None:
        if not self.on_gpu:
            buf.host[offset:offset + src.nbytes] = src.reshape(-1).view(np.uint8)
            return
        src.data.copy_to_host_async(ctypes.c_void_p(buf.host.ctypes.data + offset), src.nbytes,
                                    self.xp.cuda.get_current_stream())

    def _finish_d2h(self) -> None:
        if self.on_gpu:
            self.xp.cuda.get_current_stream().synchronize()


def _contiguous(a):
    # Not (np|cupy).ascontiguousarray: it turns 0-d arrays into 1-d ones.
    return a if a.flags.c_contiguous else a.copy(order="C")


def _flatten(values: dict):
    flat, shapes = [], []
    for name, value in values.items():
        if isinstance(value, tuple):
            value = value[0]
        if isinstance(value, SelectedRows):
            shapes.append((name, value.height))
            flat.extend((value.rows, value.values))
        else:
            shapes.append((name, None))
            flat.append(value)
    return flat, shapes


def _unflatten(shapes, arrays) -> dict:
    out, it = {}, iter(arrays)
    for name, height in shapes:
        if height is None:
            out[name] = next(it)
        else:
            rows = next(it)
            out[name] = SelectedRows(rows, next(it), height)
    return out
