"""NCCL for CUDA tensors through cupy (`cupy.cuda.nccl`), beside the CPU ring.

A collective trainer whose gradients live on the GPU (an executor on CUDAPlace)
all-reduces them with NCCL instead of copying them to the host for the TCP ring.
The NCCL communicator needs one unique id shared by every trainer: trainer 0
makes it (`nccl.get_unique_id()`, 128 bytes as signed integers) and it travels
over the ring this process already formed (the TCP rendezvous, authenticated by
the job's token and TLS) — as Paddle's `gen_nccl_id` sends it to the other
trainers over its own RPC. The id is broadcast as an all-reduce: trainer 0
contributes it, every other trainer zeros; each byte is an integer below 2^8,
exact in float64, so the sum is the id on every trainer.

Then `NcclCommunicator(world, id, rank)` on this process's current device, and
`allReduce` (sum) in place on the device, on cupy's current stream.
`exchange_unique_id` is plain Python over any ring (tested on CPU);
`NcclRing` needs cupy with NCCL and a GPU (tests/cuda/test_nccl_allreduce.py).
"""
from __future__ import annotations

import numpy as np

UNIQUE_ID_BYTES = 128  # NCCL_UNIQUE_ID_BYTES


class NcclUnavailableError(RuntimeError):
    """cupy, its NCCL binding or a CUDA device is missing."""


def nccl_module():
    """`cupy.cuda.nccl`, or NcclUnavailableError saying what is missing."""
    try:
        import cupy
        from cupy.cuda import nccl
    except ImportError as exc:
        raise NcclUnavailableError(f"NCCL all-reduce needs cupy with NCCL (pip install psjob[cuda]): "
                                   f"{exc}") from None
    if not getattr(nccl, "available", True):
        raise NcclUnavailableError("cupy was built without NCCL: install a cupy wheel with NCCL "
                                   "(cupy-cuda12x ships it)")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise NcclUnavailableError("cupy finds no CUDA device")
    except NcclUnavailableError:
        raise
    except Exception as exc:  # CUDARuntimeError without a driver
        raise NcclUnavailableError(f"no usable CUDA device: {exc}") from None
    return nccl


def exchange_unique_id(ring, make_id=None) -> tuple[int, ...]:
    """The NCCL unique id of trainer 0, on every trainer of `ring` (anything with `rank` and
    a summing `allreduce`). `make_id` makes it on trainer 0 (default: nccl.get_unique_id)."""
    if ring.rank == 0:
        uid = tuple(int(b) for b in (make_id or (lambda: nccl_module().get_unique_id()))())
        if len(uid) != UNIQUE_ID_BYTES or not all(-128 <= b < 256 for b in uid):
            raise ValueError(f"an NCCL unique id is {UNIQUE_ID_BYTES} bytes, got {len(uid)} values")
        mine = np.asarray(uid, dtype=np.float64)
    else:
        mine = np.zeros(UNIQUE_ID_BYTES, dtype=np.float64)
    summed = ring.allreduce(mine)
    return tuple(int(round(v)) for v in summed)


class NcclRing:
    """An NCCL communicator among the trainers of `ring`, on this process's current device."""

    def __init__(self, ring):
        self._nccl = nccl_module()
        import cupy
        self._cupy = cupy
        self.rank, self.size = ring.rank, ring.size
        uid = exchange_unique_id(ring, self._nccl.get_unique_id)
        self._comm = self._nccl.NcclCommunicator(self.size, uid, self.rank)
        self._dtypes = {np.dtype(np.float32): self._nccl.NCCL_FLOAT32,
                        np.dtype(np.float64): self._nccl.NCCL_FLOAT64,
                        np.dtype(np.float16): self._nccl.NCCL_FLOAT16}

    def allreduce(self, x):
        """Sum the cupy array `x` over every trainer, in place on the device; returns it."""
        x = self._cupy.ascontiguousarray(x)
        if x.dtype not in self._dtypes:
            raise TypeError(f"NCCL all-reduce takes float16/32/64 arrays, got {x.dtype}")
        stream = self._cupy.cuda.get_current_stream()
        self._comm.allReduce(x.data.ptr, x.data.ptr, x.size, self._dtypes[x.dtype],
                             self._nccl.NCCL_SUM, stream.ptr)
        return x

    def close(self) -> None:
        comm, self._comm = self._comm, None
        if comm is not None:
            comm.destroy()
