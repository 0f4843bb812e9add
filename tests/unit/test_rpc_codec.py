"""The wire format: tensors round-trip exactly, malformed payloads are named."""
import os
import tempfile

import numpy as np
import pytest

from psjob.cluster.rpc import codec
from psjob.cluster.rpc import psjob_pb2 as pb
from psjob.fluid.core import SelectedRows


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "float16", "uint8", "bool"])
def test_dense_tensors_round_trip_bit_exactly(dtype):
    rng = np.random.default_rng(1)
    arr = (rng.normal(size=(3, 4, 5)) * 100).astype(dtype)
    msg = pb.Tensor.FromString(codec.encode("w", arr).SerializeToString())
    out = codec.decode(msg)
    assert out.dtype == arr.dtype and out.shape == arr.shape
    np.testing.assert_array_equal(out, arr)


def test_non_contiguous_arrays_are_encoded_in_c_order():
    arr = np.arange(12, dtype=np.float32).reshape(3, 4).T
    np.testing.assert_array_equal(codec.decode(codec.encode("t", arr)), arr)


def test_selected_rows_round_trip_with_unbounded_feature_ids():
    rows = np.array([np.iinfo(np.int64).min, -1, 0, 7, np.iinfo(np.int64).max], dtype=np.int64)
    values = np.arange(10, dtype=np.float32).reshape(5, 2)
    out = codec.decode(codec.encode("emb@GRAD", SelectedRows(rows, values, 0)))
    assert isinstance(out, SelectedRows) and out.height == 0
    np.testing.assert_array_equal(out.rows, rows)
    np.testing.assert_array_equal(out.values, values)


def test_a_payload_whose_bytes_disagree_with_its_shape_is_rejected_by_name():
    msg = codec.encode("fc_0.w_0", np.zeros((4, 4), np.float32))
    msg.data = msg.data[:-4]
    with pytest.raises(codec.PayloadError, match=r"fc_0\.w_0.*needs 64 bytes, payload has 60"):
        codec.decode(msg)


@pytest.mark.parametrize("dtype", ["object", "complex64", "<U4", ""])
def test_dtypes_outside_the_numeric_allow_list_are_rejected(dtype):
    msg = pb.Tensor(name="x", dtype=dtype, shape=[1], data=b"\0" * 8)
    with pytest.raises(codec.PayloadError, match="is not allowed"):
        codec.decode(msg)


def test_negative_dimensions_and_row_count_mismatches_are_rejected():
    with pytest.raises(codec.PayloadError, match="negative dimension"):
        codec.decode(pb.Tensor(name="x", dtype="float32", shape=[-1, 2], data=b""))
    msg = codec.encode("g", SelectedRows(np.array([1, 2], np.int64), np.zeros((2, 3), np.float32), 10))
    msg.rows = msg.rows[:8]
    with pytest.raises(codec.PayloadError, match="1 row ids for values shaped"):
        codec.decode(msg)
    msg = codec.encode("g", SelectedRows(np.array([1, 12], np.int64), np.zeros((2, 3), np.float32), 10))
    with pytest.raises(codec.PayloadError, match=r"row ids must lie in \[0, 10\)"):
        codec.decode(msg)
    msg = codec.encode("g", SelectedRows(np.array([-1, 2], np.int64), np.zeros((2, 3), np.float32), 10))
    with pytest.raises(codec.PayloadError, match=r"row ids must lie in \[0, 10\), got \[-1, 2\]"):
        codec.decode(msg)


def test_id_payloads_must_be_whole_int64s():
    with pytest.raises(codec.PayloadError, match="not a whole number of int64 ids"):
        codec.decode_ids("prefetch", b"\0" * 12)


def test_checked_in_generated_grpc_code_matches_the_proto():
    from psjob.cluster.rpc import codegen
    here = os.path.dirname(codegen.__file__)
    with tempfile.TemporaryDirectory() as tmp:
        for path in codegen.generate(tmp):
            with open(path) as fresh, open(os.path.join(here, os.path.basename(path))) as checked_in:
                assert fresh.read() == checked_in.read(), (
                    f"{os.path.basename(path)} is stale: run python -m psjob.cluster.rpc.codegen")
