"""The heter protocol's messages: values through the codec (tests/unit/test_rpc_codec.py checks
the generated heter_pb2.py against heter.proto).

Real: the protobuf messages and psjob.cluster.rpc.codec. Faked: nothing; no socket is opened
(the gRPC service itself is exercised in tests/component/test_heter_rpc.py).
"""
import numpy as np
import pytest

from psjob.cluster.rpc import codec, heter_pb2
from psjob.cluster.rpc.heter_service import decode_values, encode_values
from psjob.fluid.core import SelectedRows


def test_stage_values_keep_dtype_shape_lod_and_selected_rows_through_a_request():
    values = {
        "act": np.arange(12, dtype="float32").reshape(3, 4),
        "ids": (np.array([[4], [5], [6]], dtype="int64"), [np.array([0, 1, 3])]),
        "emb@GRAD": SelectedRows(np.array([2, 9]), np.ones((2, 3), "float32"), 10),
    }
    wire = heter_pb2.RunStageRequest(trainer_id=1, stage=0, signature="abc", vars=encode_values(values))
    got = decode_values(heter_pb2.RunStageRequest.FromString(wire.SerializeToString()).vars)
    np.testing.assert_array_equal(got["act"], values["act"])
    ids, lod = got["ids"]
    np.testing.assert_array_equal(ids, values["ids"][0])
    assert lod == [[0, 1, 3]]
    sr = got["emb@GRAD"]
    assert isinstance(sr, SelectedRows) and sr.height == 10 and list(sr.rows) == [2, 9]


def test_a_malformed_tensor_in_a_stage_request_is_a_payload_error_naming_it():
    bad = heter_pb2.RunStageRequest(vars=[codec.encode("act", np.zeros((2, 2), "float32"))])
    bad.vars[0].shape[:] = [3, 3]
    with pytest.raises(codec.PayloadError, match="tensor 'act'"):
        decode_values(bad.vars)
