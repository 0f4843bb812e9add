"""Paddle's public binary formats below the program: protobuf's wire encoding (varints and
length-delimited fields, as the messages of Paddle's framework.proto use it) and the serialized
DenseTensor of Paddle's parameter files (one tensor a file, or several back to back as
save_combine writes them). psjob.fluid.paddle_format builds Paddle's ProgramDesc on these; the
checkpoint readers (format.read_var) read variables saved in Paddle's tensor format with them.

A DenseTensor, as Paddle's SerializeToStream writes it: uint32 version 0, uint64 LoD level count
(and per level its byte size and uint64 offsets), uint32 version 0, int32 size of a TensorDesc
message (data type, dims), that message, then the raw little-endian data. Reading checks it all:
a malformed or truncated tensor raises PaddleFormatError naming what was being read.
"""
from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

# framework.proto's VarType.Type data types.
DTYPE_CODES = {"bool": 0, "int16": 1, "int32": 2, "int64": 3, "float16": 4, "float32": 5, "float64": 6,
               "uint8": 20, "int8": 21, "complex64": 23, "complex128": 24}
DTYPES = {code: name for name, code in DTYPE_CODES.items()}


class PaddleFormatError(ValueError):
    """Bytes that are not the Paddle message or tensor they should be (the checkpoint readers
    raise it on as a CorruptFileError naming the file)."""


# -- protobuf's wire format ------------------------------------------------------------------

def varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative int32/int64 travel as their 64-bit two's complement
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def int_field(field: int, n: int) -> bytes:
    return varint(field << 3) + varint(int(n))


def bytes_field(field: int, data: bytes) -> bytes:
    return varint(field << 3 | 2) + varint(len(data)) + data


def str_field(field: int, s: str) -> bytes:
    return bytes_field(field, s.encode())


def float_field(field: int, x: float) -> bytes:
    return varint(field << 3 | 5) + struct.pack("<f", float(x))


def double_field(field: int, x: float) -> bytes:
    return varint(field << 3 | 1) + struct.pack("<d", float(x))


def parse_fields(data: bytes, what: str) -> dict[int, list]:
    """{field number: [values]}: varints as ints, length-delimited fields as bytes, fixed
    fields as their raw 4 or 8 bytes."""
    out: dict[int, list] = {}
    i, end = 0, len(data)
    try:
        while i < end:
            key, i = read_varint(data, i)
            field, wire = key >> 3, key & 7
            value: int | bytes
            if wire == 0:
                value, i = read_varint(data, i)
            elif wire == 2:
                size, i = read_varint(data, i)
                if i + size > end:
                    raise ValueError("a field runs past the end")
                value, i = data[i:i + size], i + size
            elif wire in (1, 5):
                width = 8 if wire == 1 else 4
                if i + width > end:
                    raise ValueError("a field runs past the end")
                value, i = data[i:i + width], i + width
            else:
                raise ValueError(f"wire type {wire} is not used by Paddle's messages")
            out.setdefault(field, []).append(value)
    except (ValueError, IndexError) as exc:
        raise PaddleFormatError(f"{what}: not a protobuf message ({exc})") from exc
    return out


def read_varint(data: bytes, i: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        byte = data[i]
        i += 1
        n |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return n, i
        shift += 7
        if shift > 63:
            raise ValueError("a varint longer than 10 bytes")


def signed(n: int, bits: int = 64) -> int:
    n &= (1 << 64) - 1
    n = n - (1 << 64) if n >= 1 << 63 else n
    return n if bits == 64 else (n + (1 << 31)) % (1 << 32) - (1 << 31)


def ints(values: list, bits: int = 64) -> list[int]:
    """A repeated integer field, written packed or not."""
    out: list[int] = []
    for v in values:
        if isinstance(v, bytes):
            i = 0
            while i < len(v):
                n, i = read_varint(v, i)
                out.append(signed(n, bits))
        else:
            out.append(signed(v, bits))
    return out


def last(fields: dict, n: int, default: Any = None) -> Any:
    values = fields.get(n)
    return values[-1] if values else default


def text(fields: dict, n: int, default: str = "") -> str:
    value = last(fields, n)
    return value.decode() if value is not None else default


# -- tensors ------------------------------------------------------------------------------------

def tensor_desc(dtype: str, dims: Sequence[int]) -> bytes:
    if dtype not in DTYPE_CODES:
        raise PaddleFormatError(f"dtype {dtype!r} has no Paddle data type")
    return int_field(1, DTYPE_CODES[dtype]) + b"".join(int_field(2, d) for d in dims)


def read_tensor_desc(data: bytes, what: str) -> tuple[str, list[int]]:
    f = parse_fields(data, what)
    code = last(f, 1, -1)
    if code not in DTYPES:
        raise PaddleFormatError(f"{what}: data type {code} is not one psjob reads")
    return DTYPES[code], ints(f.get(2, []))


def tensor_to_bytes(array: np.ndarray, lod: Sequence[Sequence[int]] = ()) -> bytes:
    """One DenseTensor as Paddle's SerializeToStream writes it."""
    arr = np.ascontiguousarray(array)
    if arr.dtype.name not in DTYPE_CODES:
        raise PaddleFormatError(f"dtype {arr.dtype.name} has no Paddle data type")
    out = struct.pack("<IQ", 0, len(lod))
    for level in lod:
        offsets = np.asarray(level, dtype="<u8")
        out += struct.pack("<Q", offsets.nbytes) + offsets.tobytes()
    desc = tensor_desc(arr.dtype.name, arr.shape)
    return out + struct.pack("<Ii", 0, len(desc)) + desc + arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()


def tensor_from_bytes(data: bytes | memoryview, offset: int, what: str) -> tuple[np.ndarray, list, int]:
    """(array, LoD, offset after it) of the DenseTensor at `offset` of `data`."""
    def unpack(fmt: str) -> tuple[int, ...]:
        nonlocal offset
        try:
            values = struct.unpack_from(fmt, data, offset)
        except struct.error:
            raise PaddleFormatError(f"{what}: the file ends inside its tensor") from None
        offset += struct.calcsize(fmt)
        return values

    def take(nbytes: int) -> bytes | memoryview:
        nonlocal offset
        if nbytes < 0 or offset + nbytes > len(data):
            raise PaddleFormatError(f"{what}: the file ends inside its tensor "
                                    f"({nbytes} bytes wanted, {len(data) - offset} left)")
        offset += nbytes
        return data[offset - nbytes:offset]

    version, levels = unpack("<IQ")
    if version != 0:
        raise PaddleFormatError(f"{what}: tensor format version {version} (Paddle writes 0): not a Paddle tensor")
    lod = []
    for _ in range(levels):
        (size,) = unpack("<Q")
        lod.append(np.frombuffer(take(size - size % 8), dtype="<u8").tolist())
    version, desc_size = unpack("<Ii")
    if version != 0:
        raise PaddleFormatError(f"{what}: tensor format version {version} (Paddle writes 0): not a Paddle tensor")
    dtype, dims = read_tensor_desc(bytes(take(desc_size)), what)
    if any(d < 0 for d in dims):
        raise PaddleFormatError(f"{what}: negative dimension in {dims}")
    count = int(np.prod(dims, dtype=np.int64)) if dims else 1
    raw = take(count * np.dtype(dtype).itemsize)
    arr = np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<")).astype(dtype).reshape(dims)
    return arr, lod, offset


def params_to_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """A combined parameter file: the arrays sorted by name (the order Paddle's save_combine
    writes a program's persistables in, and its load_combine reads them back)."""
    return b"".join(tensor_to_bytes(arrays[name]) for name in sorted(arrays))


def params_from_bytes(data: bytes, names: Iterable[str], what: str) -> dict[str, np.ndarray]:
    """{name: array} of a combined parameter file holding `names` (sorted, as Paddle writes)."""
    view = memoryview(data)
    out: dict[str, np.ndarray] = {}
    offset = 0
    names = sorted(names)
    for name in names:
        if offset >= len(view):
            raise PaddleFormatError(f"{what}: the file ends before {name!r} "
                                    f"({len(out)} of {len(names)} parameters read)")
        out[name], _, offset = tensor_from_bytes(view, offset, f"{what}: {name!r}")
    if offset != len(view):
        raise PaddleFormatError(f"{what}: {len(view) - offset} bytes follow the last parameter "
                                f"({len(names)} expected): not this program's parameter file")
    return out


def tensors_from_bytes(data: bytes, what: str) -> list[np.ndarray]:
    """Every tensor of a combined file, in file order; the file must end after the last."""
    view, offset = memoryview(data), 0
    out: list[np.ndarray] = []
    while offset < len(view):
        arr, _, offset = tensor_from_bytes(view, offset, f"{what} (tensor {len(out)})")
        out.append(arr)
    return out
