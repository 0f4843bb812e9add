"""Data-plane frames (psjob.cluster.rpc.frames): header + out-of-band tensor bytes.

Real: the frame codec and the generated protobuf messages; no socket is
opened (the component tests push frames through a real pserver process).
"""
import numpy as np
import pytest

from psjob.cluster.rpc import codec, frames
from psjob.cluster.rpc import psjob_pb2 as pb
from psjob.fluid.core import SelectedRows


def _roundtrip(values, lods=None, header=None):
    raw = frames.pack_tensors(header or pb.SendRequest(trainer_id=1), "vars", values, lods)
    frame = frames.Frame(raw, pb.SendRequest, "test frame")
    out = frame.tensors(frame.header.vars)
    frame.finish()
    return raw, frame, out


@pytest.mark.parametrize("dtype", sorted(codec.ALLOWED_DTYPES))
def test_every_wire_dtype_round_trips_bit_exactly(dtype):
    arr = (np.arange(30) % 7).astype(dtype).reshape(5, 3, 2)
    _, _, out = _roundtrip({"x": arr})
    assert out["x"].dtype == arr.dtype and out["x"].shape == arr.shape
    np.testing.assert_array_equal(out["x"], arr)


def test_several_tensors_selected_rows_and_empty_ones_keep_their_order_and_ids():
    values = {
        "w": np.random.default_rng(0).standard_normal((7, 3)).astype(np.float32),
        "odd": np.arange(5, dtype=np.int8),               # 5 bytes: the next part is re-aligned
        "table@GRAD": SelectedRows(np.array([np.iinfo(np.int64).min, -1, np.iinfo(np.int64).max]),
                                   np.ones((3, 4), np.float64), 0),
        "empty": np.zeros((0, 16), np.float32),
        "emb@GRAD": SelectedRows(np.array([2, 9]), np.full((2, 2), 0.5, np.float32), 10),
    }
    _, frame, out = _roundtrip(values)
    assert list(out) == list(values)
    np.testing.assert_array_equal(out["w"], values["w"])
    np.testing.assert_array_equal(out["odd"], values["odd"])
    for name in ("table@GRAD", "emb@GRAD"):
        np.testing.assert_array_equal(out[name].rows, values[name].rows)
        np.testing.assert_array_equal(out[name].values, values[name].values)
        assert out[name].height == values[name].height
    assert out["empty"].shape == (0, 16)
    assert frame.remaining == 0


def test_decoding_is_zero_copy_aligned_and_read_only():
    arr = np.arange(12, dtype=np.float64).reshape(3, 4)
    raw, _, out = _roundtrip({"a": np.arange(3, dtype=np.uint8), "b": arr})
    b = out["b"]
    assert b.base is not None and not b.flags.writeable
    assert b.ctypes.data % 8 == 0 and b.flags.aligned
    assert len(raw) % 8 == 0


def test_lod_travels_in_the_header():
    _, frame, _ = _roundtrip({"ids": np.arange(5, dtype=np.int64).reshape(5, 1)}, {"ids": [[0, 2, 5]]})
    assert codec.decode_lod(frame.header.vars[0]) == [[0, 2, 5]]


def test_prefetch_ids_are_the_whole_payload():
    ids = np.array([3, -4, 2**62], np.int64)
    frame = frames.Frame(frames.pack(pb.PrefetchRequest(table="t"), (ids,)), pb.PrefetchRequest, "p")
    np.testing.assert_array_equal(frame.rest_as_ids("prefetch"), ids)
    frame = frames.Frame(frames.pack(pb.PrefetchRequest(table="t"), ()), pb.PrefetchRequest, "p")
    assert frame.rest_as_ids("prefetch").size == 0


def _frame_with_payload(meta, payload: bytes) -> bytes:
    head = pb.SendRequest(vars=[meta]).SerializeToString()
    pad = bytes(-len(head) % 8)
    return b"PSJF" + len(head).to_bytes(4, "little") + head + pad + payload


@pytest.mark.parametrize("raw, message", [
    (b"", "not a psjob frame"),
    (b"\x0a\x00\x00\x00 protobuf", "not a psjob frame"),
    (b"PSJF\xff\xff\x00\x00abc", "overruns"),
    (b"PSJF\x03\x00\x00\x00\xff\xff\xff\x00", "malformed frame header"),
])
def test_what_is_not_a_frame_is_refused_by_name(raw, message):
    with pytest.raises(codec.PayloadError, match=message):
        frames.Frame(raw, pb.SendRequest, "SendVariables request")


@pytest.mark.parametrize("meta, payload, message", [
    (pb.Tensor(name="w", dtype="float32", shape=[4]), bytes(8), r"tensor 'w' needs 16 payload bytes, the frame has 8"),
    (pb.Tensor(name="w", dtype="float32", shape=[2**40, 2**40]), bytes(8), "tensor 'w' needs"),
    (pb.Tensor(name="w", dtype="object", shape=[1]), bytes(8), "dtype 'object' is not allowed"),
    (pb.Tensor(name="w", dtype="float32", shape=[-2]), bytes(8), "negative dimension"),
    (pb.Tensor(name="w", dtype="float32", shape=[2], data=bytes(8)), bytes(8), "inline bytes inside a frame"),
    (pb.Tensor(name="g", dtype="float32", shape=[2, 1], selected_rows=True), bytes(8),
     "row ids of 'g' needs 16 payload bytes"),
    (pb.Tensor(name="g", dtype="float32", shape=[1, 1], selected_rows=True, height=3),
     bytes(8) + (7).to_bytes(8, "little"), r"row ids must lie in \[0, 3\)"),
])
def test_a_header_that_disagrees_with_its_payload_is_refused_by_name(meta, payload, message):
    frame = frames.Frame(_frame_with_payload(meta, payload), pb.SendRequest, "SendVariables request")
    with pytest.raises(codec.PayloadError, match=message):
        frame.tensors(frame.header.vars)


def test_trailing_bytes_and_ragged_ids_are_refused():
    raw = frames.pack(pb.SendRequest(vars=[pb.Tensor(name="w", dtype="int64", shape=[1])]),
                      (np.zeros(2, np.int64),))
    frame = frames.Frame(raw, pb.SendRequest, "req")
    frame.tensors(frame.header.vars)
    with pytest.raises(codec.PayloadError, match="8 payload bytes beyond what the header describes"):
        frame.finish()
    head = pb.PrefetchRequest(table="t").SerializeToString()
    ragged = b"PSJF" + len(head).to_bytes(4, "little") + head + bytes(-len(head) % 8) + b"abc"
    frame = frames.Frame(ragged, pb.PrefetchRequest, "p")
    with pytest.raises(codec.PayloadError, match="3 bytes is not a whole number of int64 ids"):
        frame.rest_as_ids("prefetch of 't'")
