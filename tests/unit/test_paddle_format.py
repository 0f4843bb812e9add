"""Inference models in Paddle's own files (psjob.fluid.paddle_format): a model real Paddle 3.0.0
saved loads in psjob and predicts what Paddle predicted; what psjob saves is a ProgramDesc that
protobuf's own parser accepts, laid out and typed as Paddle's loader reads it; bad files raise
naming the problem and load nothing."""
import importlib
import json
import os
import shutil
import sys

import numpy as np
import pytest

import psjob as paddle
from psjob.fluid import paddle_format
from psjob.fluid.framework import Program, program_guard
from psjob.foundation.checkpoint.format import CheckpointError, array_sha256

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "paddle_format")


@pytest.fixture(autouse=True)
def _static():
    paddle.enable_static()


@pytest.fixture(scope="module")
def schema(tmp_path_factory):
    """Paddle's ProgramDesc messages compiled by protoc (framework_subset.proto)."""
    protoc = pytest.importorskip("grpc_tools.protoc")
    out = tmp_path_factory.mktemp("proto")
    assert protoc.main(["protoc", f"-I{DATA}", f"--python_out={out}", os.path.join(DATA, "framework_subset.proto")]) == 0
    sys.path.insert(0, str(out))
    try:
        return importlib.import_module("framework_subset_pb2")
    finally:
        sys.path.remove(str(out))


def _exe():
    return paddle.static.Executor(paddle.CPUPlace())


def _ctr_model():
    main, startup = Program(), Program()
    with program_guard(main, startup), paddle.utils.unique_name.guard():
        dense = paddle.static.data("dense", [-1, 4], "float32")
        ids = paddle.static.data("ids", [-1, 1], "int64")
        emb = paddle.reshape(paddle.nn.Embedding(10, 3, padding_idx=0)(ids), [-1, 3])
        h = paddle.static.nn.fc(paddle.concat([dense, emb], axis=1), 5, activation="relu")
        first = h[:, 0:1]                                              # strided_slice
        cond = paddle.greater_than(first, paddle.zeros([1], "float32"))
        picked = paddle.where(cond, h, paddle.full([1, 5], 0.5))     # operands broadcast
        prob = paddle.nn.functional.sigmoid(paddle.static.nn.fc(picked, 1))
    return main, startup, dense, ids, prob


FEED = {"dense": np.linspace(-1, 1, 12, dtype="float32").reshape(3, 4),
        "ids": np.array([[0], [4], [9]], dtype="int64")}


def _saved(tmp_path):
    main, startup, dense, ids, prob = _ctr_model()
    exe = _exe()
    exe.run(startup)
    want = exe.run(main, feed=FEED, fetch_list=[prob])[0]
    prefix = str(tmp_path / "model")
    paddle.static.save_inference_model(prefix, [dense, ids], [prob], exe, program=main)
    return prefix, want


def test_a_model_paddle_saved_predicts_what_paddle_predicted():
    expected = json.load(open(os.path.join(DATA, "expected.json")))
    exe = _exe()
    program, feeds, fetches = paddle.static.load_inference_model(os.path.join(DATA, "ctr"), exe)
    assert feeds == ["dense", "ids"] and [v.name for v in fetches] == ["softmax_0.tmp_0", "fc_1.tmp_1"]
    feed = {"dense": np.array(expected["feed"]["dense"], "float32"), "ids": np.array(expected["feed"]["ids"], "int64")}
    for got, want in zip(exe.run(program, feed=feed, fetch_list=fetches), expected["fetch"]):
        np.testing.assert_allclose(got, np.array(want), rtol=1e-5, atol=1e-6)


def test_parameters_rewrite_to_paddles_bytes():
    program, _, _ = paddle_format.program_from_bytes(open(os.path.join(DATA, "ctr.pdmodel"), "rb").read())
    names = [v.name for v in program.global_block().vars.values() if v.persistable]
    data = open(os.path.join(DATA, "ctr.pdiparams"), "rb").read()
    arrays = paddle_format.params_from_bytes(data, names, "ctr.pdiparams")
    assert paddle_format.params_to_bytes(arrays) == data


def test_a_saved_model_is_a_program_desc_as_paddle_lays_it_out(tmp_path, schema):
    prefix, _ = _saved(tmp_path)
    desc = schema.ProgramDesc()
    desc.ParseFromString(open(prefix + ".pdmodel", "rb").read())
    assert desc.IsInitialized()  # every required field of every message is there
    ops = list(desc.blocks[0].ops)
    # Paddle prepends one feed op per input (so in reverse) and appends one fetch op per output.
    assert [(o.type, o.outputs[0].arguments[0], o.attrs[0].i) for o in ops[:2]] == [("feed", "ids", 1),
                                                                                   ("feed", "dense", 0)]
    assert ops[-1].type == "fetch" and ops[-1].inputs[0].arguments == ["sigmoid_0.tmp_0"]
    kinds = {v.name: v.type.type for v in desc.blocks[0].vars}
    assert kinds["feed"] == schema.VarType.FEED_MINIBATCH and kinds["fetch"] == schema.VarType.FETCH_LIST
    attrs = {(o.type, a.name): a for o in ops for a in o.attrs}
    assert attrs[("lookup_table", "padding_idx")].type == schema.LONG      # int64 in Paddle
    assert attrs[("fill_constant", "shape")].type == schema.LONGS
    assert attrs[("fill_constant", "dtype")].type == schema.INT and attrs[("fill_constant", "dtype")].i == 5
    assert list(attrs[("strided_slice", "infer_flags")].ints) == [1]     # Paddle's shape inference reads it
    # the broadcasting where, as paddle.where builds it: operands of one shape
    assert [o.type for o in ops].count("fill_any_like") == 3
    params = {v.name for v in desc.blocks[0].vars if v.persistable} - {"feed", "fetch"}
    assert {v.name for v in desc.blocks[0].vars if v.is_parameter} == params


def test_psjob_reloads_what_it_saved(tmp_path):
    prefix, want = _saved(tmp_path)
    exe = _exe()
    with paddle.static.scope_guard(paddle.static.Scope()):
        program, feeds, fetches = paddle.static.load_inference_model(prefix, exe)
        got = exe.run(program, feed=FEED, fetch_list=fetches)[0]
    assert feeds == ["dense", "ids"]
    np.testing.assert_array_equal(got, want)


def test_an_earlier_psjob_json_inference_model_still_loads(tmp_path):
    from psjob.fluid import io as fluid_io
    from psjob.fluid.serialization import program_to_dict
    main, startup, dense, ids, prob = _ctr_model()
    exe = _exe()
    exe.run(startup)
    want = exe.run(main, feed=FEED, fetch_list=[prob])[0]
    inference = main.clone(for_test=True)._prune([prob], [dense, ids])
    prefix = str(tmp_path / "old")
    names = [v.name for v in inference.global_block().vars.values() if v.persistable]
    arrays = fluid_io._arrays(paddle.static.global_scope(), names, "t")
    with open(prefix + ".pdiparams", "wb") as f:  # what earlier psjob versions wrote: an .npz
        np.savez(f, **arrays)
    records = {n: {"shape": list(a.shape), "dtype": a.dtype.name, "sha256": array_sha256(a)} for n, a in arrays.items()}
    fluid_io._write_model(prefix + ".pdmodel", {"format": fluid_io.PROGRAM_STATE_FORMAT,
                                                "program": program_to_dict(inference), "feed": ["dense", "ids"],
                                                "fetch": [prob.name], "arrays": {"inference": records}})
    with paddle.static.scope_guard(paddle.static.Scope()):
        program, _, fetches = paddle.static.load_inference_model(prefix, exe)
        np.testing.assert_array_equal(exe.run(program, feed=FEED, fetch_list=fetches)[0], want)


@pytest.mark.parametrize("damage, message", [
    (lambda b: b[:-7], "ends inside its tensor"),
    (lambda b: b + b"\0" * 16, "bytes follow the last parameter"),
    (lambda b: b[: len(b) // 3], "ends"),
])
def test_a_damaged_parameter_file_raises_and_loads_nothing(tmp_path, damage, message):
    prefix, _ = _saved(tmp_path)
    data = open(prefix + ".pdiparams", "rb").read()
    open(prefix + ".pdiparams", "wb").write(damage(data))
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope), pytest.raises(CheckpointError, match=message):
        paddle.static.load_inference_model(prefix, _exe())
    assert not scope.vars


def test_parameters_of_another_model_are_refused_by_name(tmp_path):
    prefix, _ = _saved(tmp_path)
    shutil.copy(os.path.join(DATA, "ctr.pdiparams"), prefix + ".pdiparams")
    with pytest.raises(CheckpointError, match="model.pdiparams"):
        paddle.static.load_inference_model(prefix, _exe())


def test_a_file_that_is_not_a_program_is_refused(tmp_path):
    prefix, _ = _saved(tmp_path)
    open(prefix + ".pdmodel", "wb").write(b"\x0a\xff\xff\xff\xff\x0f garbage")
    with pytest.raises(CheckpointError, match="not a Paddle inference model"):
        paddle.static.load_inference_model(prefix, _exe())


def test_a_tensor_of_the_wrong_dtype_is_refused(tmp_path):
    prefix, _ = _saved(tmp_path)
    program, _, _ = paddle_format.program_from_bytes(open(prefix + ".pdmodel", "rb").read())
    names = sorted(v.name for v in program.global_block().vars.values() if v.persistable)
    arrays = paddle_format.params_from_bytes(open(prefix + ".pdiparams", "rb").read(), names, "p")
    arrays[names[0]] = arrays[names[0]].astype("float64")
    open(prefix + ".pdiparams", "wb").write(paddle_format.params_to_bytes(arrays))
    with pytest.raises(CheckpointError, match=f"{names[0]!r}.*float64"):
        paddle.static.load_inference_model(prefix, _exe())


def test_attributes_round_trip():
    main, _, _, _, prob = _ctr_model()
    back, feeds, fetches = paddle_format.program_from_bytes(paddle_format.program_to_bytes(main, ["dense"], [prob.name]))
    assert (feeds, fetches) == (["dense"], [prob.name])
    ops = [op for op in back.global_block().ops if op.type != "where" and ".where_" not in op.output_arg_names[0]]
    originals = [op for op in main.global_block().ops if op.type != "where"]
    for mine, theirs in zip(originals, ops):
        assert mine.type == theirs.type
        for name, value in mine.attrs.items():
            if value is not None and value != []:
                got = theirs.attrs[name]
                assert got == pytest.approx(value) if isinstance(value, float) else got == value, (mine.type, name)


def test_lookup_table_v2_keeps_the_ids_shape_and_zeroes_the_padding_row():
    main, startup = Program(), Program()
    with program_guard(main, startup):
        ids = paddle.static.data("ids", [-1, 3], "int64")
        w = paddle.static.create_parameter([6, 2], "float32")
        out = main.global_block().create_var(name="emb", dtype="float32")
        main.global_block().append_op("lookup_table_v2", {"Ids": [ids], "W": [w]}, {"Out": [out]}, {"padding_idx": 2})
    exe = _exe()
    exe.run(startup)
    table = np.asarray(paddle.static.global_scope().vars[w.name])
    got = exe.run(main, feed={"ids": np.array([[1, 2, 5]], "int64")}, fetch_list=[out])[0]
    assert got.shape == (1, 3, 2)
    np.testing.assert_array_equal(got[0], np.stack([table[1], np.zeros(2, "float32"), table[5]]))


# -- the Fluid 1.x directory form (fluid.io.save_inference_model, save_persistables) ------------------

FLUID18 = os.path.join(DATA, "fluid18")


def _fluid_ctr():
    """The model of make_fluid18_reference.py, built by psjob (same names)."""
    import psjob.fluid as fluid
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        dense = fluid.layers.data(name="dense", shape=[4], dtype="float32")
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        pooled = fluid.layers.sequence_pool(fluid.layers.embedding(ids, size=[20, 3], is_sparse=True), "sum")
        h = fluid.layers.fc(fluid.layers.concat([dense, pooled], axis=1), 6, act="relu")
        prob = fluid.layers.fc(h, 2, act="softmax")
        fluid.optimizer.SGD(0.1).minimize(fluid.layers.mean(fluid.layers.cross_entropy(prob, label)))
    return main, startup, prob


def _fluid_feed(expected):
    import psjob.fluid as fluid
    ids = fluid.create_lod_tensor(np.array(expected["feed"]["ids"], "int64"), [[2, 1, 3]], fluid.CPUPlace())
    return {"dense": np.array(expected["feed"]["dense"], "float32"), "ids": ids}


@pytest.mark.parametrize("form, kwargs", [("fluid", {}), ("combined", {"params_filename": "__params__"})])
def test_a_fluid_model_paddle_1_8_saved_predicts_what_paddle_predicted(form, kwargs):
    import psjob.fluid as fluid
    expected = json.load(open(os.path.join(FLUID18, "expected.json")))
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        program, feeds, fetches = fluid.io.load_inference_model(os.path.join(FLUID18, form), exe, **kwargs)
        got = exe.run(program, feed=_fluid_feed(expected), fetch_list=fetches)[0]
    assert feeds == expected["feeds"]
    np.testing.assert_allclose(got, np.array(expected["fetch"]), rtol=1e-5, atol=1e-6)


def test_load_persistables_reads_paddles_save_persistables():
    """A Paddle checkpoint directory (one tensor file a variable, no manifest) starts a psjob program."""
    import psjob.fluid as fluid
    expected = json.load(open(os.path.join(FLUID18, "expected.json")))["persistables"]
    main, startup, _ = _fluid_ctr()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        fluid.io.load_persistables(exe, os.path.join(FLUID18, "persistables"), main_program=main)
    assert set(expected) <= set(scope.vars)
    for name, value in expected.items():
        np.testing.assert_array_equal(np.asarray(scope.vars[name]), np.array(value, dtype=np.asarray(scope.vars[name]).dtype))


def test_a_paddle_directory_missing_a_file_loads_nothing(tmp_path):
    import psjob.fluid as fluid
    shutil.copytree(os.path.join(FLUID18, "persistables"), tmp_path / "p")
    os.remove(tmp_path / "p" / "fc_1.w_0")
    main, startup, _ = _fluid_ctr()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        before = {k: np.array(v) for k, v in scope.vars.items()}
        with pytest.raises(CheckpointError, match="fc_1.w_0"):
            fluid.io.load_persistables(exe, str(tmp_path / "p"), main_program=main)
    assert all(np.array_equal(np.asarray(scope.vars[k]), v) for k, v in before.items())


@pytest.mark.parametrize("params_filename", [None, "__params__"])
def test_fluid_save_inference_model_writes_paddles_files(tmp_path, schema, params_filename):
    """psjob's Fluid-form inference model: Paddle's __model__ and tensor files (Paddle 1.8.5's
    fluid.io.load_inference_model and Paddle 3.0's Config(model_dir) load them), the manifest beside
    them keeping psjob's checksums."""
    import psjob.fluid as fluid
    from psjob.foundation.checkpoint import paddle_wire
    main, startup, prob = _fluid_ctr()
    exe = fluid.Executor(fluid.CPUPlace())
    expected = json.load(open(os.path.join(FLUID18, "expected.json")))
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        want = exe.run(main.clone(for_test=True), feed={**_fluid_feed(expected), "label": np.zeros((3, 1), "int64")},
                       fetch_list=[prob])[0]
        fluid.io.save_inference_model(str(tmp_path), ["dense", "ids"], [prob], exe, main_program=main,
                                      params_filename=params_filename)
    desc = schema.ProgramDesc()
    desc.ParseFromString(open(tmp_path / "__model__", "rb").read())
    assert desc.IsInitialized()
    pool = next(o for o in desc.blocks[0].ops if o.type == "sequence_pool")
    assert {v.parameter for v in pool.outputs} == {"Out", "MaxIndex"}  # Paddle's kernel requires MaxIndex
    params = sorted(v.name for v in desc.blocks[0].vars if v.persistable and v.name not in ("feed", "fetch"))
    if params_filename:
        tensors = paddle_wire.tensors_from_bytes(open(tmp_path / params_filename, "rb").read(), "p")
    else:
        tensors = [paddle_wire.tensor_from_bytes(open(tmp_path / n, "rb").read(), 0, n)[0] for n in params]
    assert [t.shape for t in tensors] == [(20, 3), (6,), (7, 6), (2,), (6, 2)]  # sorted by name
    with fluid.scope_guard(fluid.Scope()):
        program, _, fetches = fluid.io.load_inference_model(str(tmp_path), exe, params_filename=params_filename)
        np.testing.assert_array_equal(exe.run(program, feed=_fluid_feed(expected), fetch_list=fetches)[0], want)
    damaged = tmp_path / (params_filename or "fc_0.w_0")
    data = bytearray(open(damaged, "rb").read())
    data[-1] ^= 0xFF
    open(damaged, "wb").write(bytes(data))
    with fluid.scope_guard(fluid.Scope()), pytest.raises(CheckpointError, match="checksum"):
        fluid.io.load_inference_model(str(tmp_path), exe, params_filename=params_filename)


def test_control_flow_saves_its_sub_blocks(tmp_path, schema):
    """cond and while_loop keep their sub-blocks (BLOCK attributes, parents); the reloaded program
    predicts the same (Paddle 3.0.0's predictor runs this model too: scripts/check-paddle-inference.py
    covers PaddleRec's; this one was checked by hand)."""
    main, startup = Program(), Program()
    with program_guard(main, startup), paddle.utils.unique_name.guard():
        x = paddle.static.data("x", [-1, 4], "float32")
        h = paddle.static.nn.fc(x, 4, activation="relu")
        y = paddle.static.nn.cond(paddle.mean(h) > 0.1, lambda: h * 2.0, lambda: h - 1.0)
        ten = paddle.full([1], 3, "int64")
        _, z = paddle.static.nn.while_loop(lambda i, acc: i < ten, lambda i, acc: [i + 1, acc + 0.5],
                                           [paddle.full([1], 0, "int64"), y])
        out = paddle.nn.functional.sigmoid(z)
    exe = _exe()
    exe.run(startup)
    xv = np.linspace(-1, 1, 8, dtype="float32").reshape(2, 4)
    want = exe.run(main, feed={"x": xv}, fetch_list=[out])[0]
    prefix = str(tmp_path / "cf")
    paddle.static.save_inference_model(prefix, [x], [out], exe, program=main)
    desc = schema.ProgramDesc()
    desc.ParseFromString(open(prefix + ".pdmodel", "rb").read())
    assert desc.IsInitialized() and len(desc.blocks) > 2
    blocks = [a.block_idx for o in desc.blocks[0].ops for a in o.attrs if a.type == schema.BLOCK]
    assert blocks and all(desc.blocks[b].parent_idx == 0 for b in blocks)
    with paddle.static.scope_guard(paddle.static.Scope()):
        program, _, fetches = paddle.static.load_inference_model(prefix, exe)
        np.testing.assert_array_equal(exe.run(program, feed={"x": xv}, fetch_list=fetches)[0], want)


def test_save_persistables_writes_paddles_tensor_files(tmp_path):
    """A single-process program's save_persistables: one Paddle tensor file a variable (Paddle
    1.8.5's load_persistables reads this directory value for value: checked by hand), the manifest
    beside them; it loads back into psjob, and a file changed afterwards is refused by its checksum."""
    import psjob.fluid as fluid
    from psjob.foundation.checkpoint import paddle_wire
    main, startup, _ = _fluid_ctr()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        fluid.io.save_persistables(exe, str(tmp_path), main_program=main)
    saved = {v.name for v in main.list_vars() if v.persistable}
    for name in saved:
        arr, _, end = paddle_wire.tensor_from_bytes(open(tmp_path / name, "rb").read(), 0, name)
        assert end == os.path.getsize(tmp_path / name)
        np.testing.assert_array_equal(arr, np.asarray(scope.vars[name]))
    fresh = fluid.Scope()
    with fluid.scope_guard(fresh):
        fluid.io.load_persistables(exe, str(tmp_path), main_program=main)
    assert all(np.array_equal(np.asarray(fresh.vars[n]), np.asarray(scope.vars[n])) for n in saved)
    data = bytearray(open(tmp_path / "fc_0.w_0", "rb").read())
    data[-2] ^= 0x40
    open(tmp_path / "fc_0.w_0", "wb").write(bytes(data))
    with fluid.scope_guard(fluid.Scope()), pytest.raises(CheckpointError, match="checksum"):
        fluid.io.load_persistables(exe, str(tmp_path), main_program=main)
