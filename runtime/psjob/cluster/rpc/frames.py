"""Data-plane framing: a protobuf header with the tensor bytes outside it.

Parameters, gradients and table rows are most of what crosses the wire, and
protobuf `bytes` fields copy them several times (into the message, into its
serialization, out of the parsed message). A frame carries them beside the
header instead:

    offset 0   magic b"PSJF"
           4   header length H (uint32, little-endian)
           8   header: a serialized psjob.proto message whose Tensor.data,
               Tensor.rows and PrefetchRequest.ids are left empty
       8 + H   zero padding to a multiple of 8
               payload: for each Tensor of the header, in order, its data
               then (SelectedRows) its int64 row ids, each part padded to a
               multiple of 8 bytes; a PrefetchRequest's ids are the whole payload

The part sizes follow from each Tensor's dtype and shape, so the header
carries no offsets and a frame whose length disagrees with its header is
refused. Encoding is one copy (`bytes.join` over the arrays' buffers), or
none for a reply the data plane sends (`gathered`: the parts go to one
scatter-gather sendmsg); decoding is zero-copy (`np.frombuffer` at 8-aligned offsets of the received
bytes — the arrays are read-only views that keep the frame alive).

SendVariables, GetVariables and Prefetch use frames in both directions; the
control methods (Barrier, Status, ...) carry small plain protobuf messages.
"""
from __future__ import annotations

import struct
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt

from psjob.cluster.rpc import codec
from psjob.cluster.rpc import psjob_pb2 as pb

MAGIC = b"PSJF"
_PREFIX = struct.Struct("<4sI")
_ALIGN = 8
_ZEROS = bytes(_ALIGN)


def _pad(n: int) -> int:
    return -n % _ALIGN


def _contiguous(arr: Any) -> np.ndarray:
    return np.ascontiguousarray(codec.host_array(arr))


class Gathered:
    """A frame as the list of its buffers (`parts`), not joined: what `pack` returns inside
    `gathered()`. len() is the frame's length; bytes() joins it."""

    __slots__ = ("parts", "nbytes")

    def __init__(self, parts: list[Any]) -> None:
        self.parts = parts
        self.nbytes = sum(len(p) if isinstance(p, bytes) else p.nbytes for p in parts)

    def __len__(self) -> int:
        return self.nbytes

    def __bytes__(self) -> bytes:
        return b"".join(self.parts)


_gather = threading.local()


@contextmanager
def gathered() -> Iterator[None]:
    """Within it, on this thread, `pack` returns a `Gathered` frame (no join copy): for the
    data-plane server's handlers, whose reply frame goes straight to a scatter-gather
    sendmsg (dataplane.py). The payload arrays must then stay unchanged until it is sent:
    the handlers pack fresh arrays or copies (a megabyte's join was ~10% of a pserver's
    data-plane CPU at batch 1024)."""
    before = getattr(_gather, "on", False)
    _gather.on = True
    try:
        yield
    finally:
        _gather.on = before


def pack(header: Any, parts: Iterable[np.ndarray]) -> Any:
    """header message + payload buffers → one frame (bytes: the only copy of the payload;
    a `Gathered` inside `gathered()`: none)."""
    head = header.SerializeToString()
    pieces: list[Any] = [_PREFIX.pack(MAGIC, len(head)), head, _ZEROS[:_pad(len(head))]]
    for part in parts:  # C-contiguous arrays: viewed as bytes without a copy
        if part.nbytes:
            pieces.append(part.reshape(-1).view(np.uint8))
            pieces.append(_ZEROS[:_pad(part.nbytes)])
    if getattr(_gather, "on", False):
        return Gathered(pieces)
    return b"".join(pieces)


def tensor_header(name: str, value: Any,
                  lod: Sequence[Sequence[int]] | None = None) -> tuple[pb.Tensor, list[np.ndarray]]:
    """numpy/cupy array or SelectedRows → (Tensor header without bytes, payload parts)."""
    rows = getattr(value, "rows", None)
    if rows is not None and hasattr(value, "values"):
        values = _contiguous(value.values)
        ids = np.ascontiguousarray(codec.host_array(rows), dtype=np.int64)
        return (pb.Tensor(name=name, dtype=codec.dtype_name(values.dtype), shape=values.shape, selected_rows=True,
                          height=int(value.height)), [values, ids])
    arr = _contiguous(value)
    msg = pb.Tensor(name=name, dtype=codec.dtype_name(arr.dtype), shape=arr.shape)
    if lod:
        msg.lod.extend(int(x) for x in lod[-1])
    return msg, [arr]


def pack_tensors(header: Any, field: str, values: Mapping, lods: Mapping | None = None) -> Any:
    """Frame `header` with its repeated Tensor `field` filled from {name: value}."""
    lods = lods or {}
    tensors, parts = getattr(header, field), []
    for name, value in values.items():
        meta, arrays = tensor_header(name, value, lods.get(name))
        tensors.append(meta)
        parts.extend(arrays)
    return pack(header, parts)


class Frame:
    """A received frame: `.header` (the parsed message) and its payload, read part by part."""

    def __init__(self, raw: bytes, header_cls: Any, what: str) -> None:
        if not isinstance(raw, (bytes, memoryview)):  # memoryview: a data-plane read (read-only)
            raise codec.PayloadError(f"{what}: expected a psjob frame, got {type(raw).__name__}")
        if len(raw) < _PREFIX.size or raw[:4] != MAGIC:
            raise codec.PayloadError(f"{what}: not a psjob frame (bad magic; is the peer an older psjob?)")
        _, head_len = _PREFIX.unpack_from(raw)
        if _PREFIX.size + head_len > len(raw):
            raise codec.PayloadError(f"{what}: frame header of {head_len} bytes overruns the "
                                     f"{len(raw)}-byte frame")
        view = memoryview(raw)
        try:
            self.header = header_cls.FromString(view[_PREFIX.size:_PREFIX.size + head_len])
        except Exception as exc:  # protobuf's DecodeError; name the message, not the parser
            raise codec.PayloadError(f"{what}: malformed frame header ({exc})") from None
        self.raw, self.what = raw, what
        self.offset = _PREFIX.size + head_len + _pad(head_len)

    @property
    def remaining(self) -> int:
        return len(self.raw) - self.offset

    def take(self, nbytes: int, dtype: npt.DTypeLike, count: int, label: str) -> np.ndarray:
        """The next payload part as a read-only array of `count` elements."""
        if nbytes > self.remaining:
            raise codec.PayloadError(f"{self.what}: {label} needs {nbytes} payload bytes, the frame has "
                                     f"{max(self.remaining, 0)} left")
        if not nbytes:  # frombuffer refuses an offset at the very end of the buffer
            return np.empty(0, dtype)
        arr = np.frombuffer(self.raw, dtype=dtype, count=count, offset=self.offset)
        self.offset += nbytes + _pad(nbytes)
        return arr

    def tensor(self, meta: pb.Tensor) -> Any:
        """Decode one Tensor header and its payload part(s) → ndarray or SelectedRows (validated)."""
        if meta.data or meta.rows:
            raise codec.PayloadError(f"tensor {meta.name!r}: inline bytes inside a frame (payload must "
                                     f"follow the header)")
        dtype, shape = codec.check_meta(meta)
        nbytes = codec.nbytes_of(dtype, shape)
        values = self.take(nbytes, dtype, nbytes // dtype.itemsize, f"tensor {meta.name!r}").reshape(shape)
        if not meta.selected_rows:
            return values
        if values.ndim == 0:
            raise codec.PayloadError(f"tensor {meta.name!r}: SelectedRows values need a row dimension")
        n = values.shape[0]
        rows = self.take(8 * n, np.int64, n, f"row ids of {meta.name!r}")
        return codec.selected_rows(meta, rows, values)

    def tensors(self, metas: Iterable[pb.Tensor]) -> dict:
        return {m.name: self.tensor(m) for m in metas}

    def rest_as_ids(self, label: str) -> np.ndarray:
        if self.remaining % 8:
            raise codec.PayloadError(f"{label}: id payload of {self.remaining} bytes is not a whole "
                                     f"number of int64 ids")
        return self.take(self.remaining, np.int64, self.remaining // 8, label)

    def finish(self) -> None:
        """Refuse trailing bytes the header does not describe."""
        if self.remaining > 0:
            raise codec.PayloadError(f"{self.what}: {self.remaining} payload bytes beyond what the "
                                     f"header describes")
