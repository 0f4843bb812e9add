"""Saving, loading and serializing single-machine programs; bad files lose nothing."""
import json
import os

import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.fluid import io
from psjob.fluid.serialization import ProgramFormatError, deserialize_program, serialize_program


def _trained(tmp_path=None, steps=3):
    main, startup = fluid.Program(), fluid.Program()
    startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[3])
        y = fluid.layers.data(name="y", shape=[1])
        pred = fluid.layers.fc(fluid.layers.fc(x, 4, act="relu"), 1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        fluid.optimizer.Adam(0.01).minimize(loss)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        exe.run(main, feed={"x": rng.normal(size=(8, 3)).astype("float32"),
                            "y": rng.normal(size=(8, 1)).astype("float32")}, fetch_list=[loss], scope=scope)
    return main, startup, exe, scope, pred, loss


def _values(scope, program, predicate):
    return {v.name: np.array(scope.find_var(v.name).get_tensor())
            for v in program.list_vars() if predicate(v) and scope.find_var(v.name) is not None}


@pytest.mark.parametrize("filename", [None, "all_params"])
def test_persistables_round_trip_exactly_including_optimizer_state(tmp_path, filename):
    main, startup, exe, scope, pred, loss = _trained()
    with fluid.scope_guard(scope):
        io.save_persistables(exe, str(tmp_path), main, filename=filename)
    saved = _values(scope, main, io.is_persistable)
    assert any(n.endswith("_moment1_0") for n in saved) and any("beta1_pow" in n for n in saved)
    fresh = fluid.Scope()
    exe.run(startup, scope=fresh)
    with fluid.scope_guard(fresh):
        io.load_persistables(exe, str(tmp_path), main, filename=filename)
    for name, value in saved.items():
        np.testing.assert_array_equal(np.array(fresh.find_var(name).get_tensor()), value, err_msg=name)


def test_a_manifest_is_written_last_and_lists_checksums(tmp_path):
    main, startup, exe, scope, pred, loss = _trained()
    with fluid.scope_guard(scope):
        io.save_params(exe, str(tmp_path), main)
    doc = json.loads((tmp_path / io.MANIFEST).read_text())
    assert doc["format"] == "psjob.vars" and doc["version"] == 1
    entry = doc["vars"]["fc_0.w_0"]
    assert entry["shape"] == [3, 4] and entry["dtype"] == "float32" and len(entry["sha256"]) == 64
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".tmp-")]


def test_a_corrupt_file_is_detected_and_the_scope_keeps_its_values(tmp_path):
    main, startup, exe, scope, pred, loss = _trained()
    with fluid.scope_guard(scope):
        io.save_params(exe, str(tmp_path), main)
    before = _values(scope, main, io.is_parameter)
    path = tmp_path / "fc_0.w_0"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with fluid.scope_guard(scope), pytest.raises(io.CheckpointError, match="checksum mismatch for 'fc_0.w_0'"):
        io.load_params(exe, str(tmp_path), main)
    for name, value in before.items():
        np.testing.assert_array_equal(np.array(scope.find_var(name).get_tensor()), value)


def test_loading_a_file_of_the_wrong_shape_names_both_shapes(tmp_path):
    main, startup, exe, scope, pred, loss = _trained()
    with fluid.scope_guard(scope):
        io.save_params(exe, str(tmp_path), main)
    other, other_startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(other, other_startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[5])
        fluid.layers.fc(fluid.layers.fc(x, 4, act="relu"), 1)
    with fluid.scope_guard(fluid.Scope()), pytest.raises(
            io.CheckpointError, match=r"'fc_0.w_0': the file holds shape \[3, 4\] but the program declares \[5, 4\]"):
        io.load_params(exe, str(tmp_path), other)


def test_a_directory_without_a_manifest_is_not_a_save(tmp_path):
    main, startup, exe, scope, pred, loss = _trained()
    with pytest.raises(io.CheckpointError, match="not a complete psjob save"):
        io.load_params(exe, str(tmp_path), main)


def test_io_functions_check_their_executor_and_program_types(tmp_path):
    main, *_ = _trained()
    with pytest.raises(TypeError, match="executor must be a fluid.Executor"):
        io.save_params("exe", str(tmp_path), main)
    with pytest.raises(TypeError, match="main_program must be a fluid.Program"):
        io.save_params(fluid.Executor(), str(tmp_path), "main")


def test_an_inference_model_is_pruned_and_predicts_like_the_training_program(tmp_path):
    main, startup, exe, scope, pred, loss = _trained()
    x = np.random.default_rng(1).normal(size=(4, 3)).astype("float32")
    with fluid.scope_guard(scope):
        want, = exe.run(main.clone(for_test=True), feed={"x": x, "y": np.zeros((4, 1), np.float32)},
                        fetch_list=[pred])
        io.save_inference_model(str(tmp_path), ["x"], [pred], exe, main)
    infer_scope = fluid.Scope()
    with fluid.scope_guard(infer_scope):
        program, feeds, fetches = io.load_inference_model(str(tmp_path), exe)
        got, = exe.run(program, feed={feeds[0]: x}, fetch_list=fetches)
    assert feeds == ["x"]
    assert {op.type for op in program.global_block().ops} <= {"mul", "elementwise_add", "relu"}
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_programs_serialize_to_a_versioned_document_and_back():
    main, *_ = _trained(steps=0)
    data = serialize_program(main)
    back = deserialize_program(data)
    assert serialize_program(back) == data
    assert [op.type for op in back.global_block().ops] == [op.type for op in main.global_block().ops]
    doc = json.loads(data)
    doc["version"] = 99
    with pytest.raises(ProgramFormatError, match="version 99 is not supported"):
        deserialize_program(json.dumps(doc).encode())
    with pytest.raises(ProgramFormatError, match="not valid JSON"):
        deserialize_program(b"\xff\x00")
    with pytest.raises(ProgramFormatError, match="malformed program document"):
        deserialize_program(json.dumps({"format": "psjob.program", "version": 1, "blocks": [{}]}).encode())


def test_clone_for_test_keeps_only_the_forward_ops():
    main, *_ = _trained(steps=0)
    test = main.clone(for_test=True)
    roles = {int(op.attr("op_role")) for op in test.global_block().ops}
    assert roles <= {0, 0x100}
    assert len(test.global_block().ops) < len(main.global_block().ops)
