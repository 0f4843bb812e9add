"""Inference models Paddle 3.x saves with PIR on (<prefix>.json + <prefix>.pdiparams), read by
psjob.fluid.paddle_pir: the models under tests/data/paddle_pir were saved by real Paddle 3.0.0 (its
default PIR mode; tests/data/paddle_pir/make_reference.py), and expected.json holds the outputs
Paddle 3.0.0's own Executor computed from them; psjob loads each and predicts the same values.
Ops psjob does not read, and malformed or truncated files, are refused naming the op and the file,
with nothing loaded."""
import json
import os
import shutil

import numpy as np
import pytest

import psjob as paddle
from psjob.fluid import paddle_pir
from psjob.fluid.framework import ProgramFormatError
from psjob.foundation.checkpoint.format import CheckpointError

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(TESTS, "data", "paddle_pir")
LEGACY = os.path.join(TESTS, "data", "paddle_format")
with open(os.path.join(DATA, "expected.json")) as _f:
    EXPECTED = json.load(_f)


@pytest.fixture(autouse=True)
def _static():
    paddle.enable_static()


def _exe():
    return paddle.static.Executor(paddle.CPUPlace())


def _feed(expected):
    return {k: np.array(v, dtype="int64" if np.array(v).dtype.kind == "i" else "float32")
            for k, v in expected["feed"].items()}


def _copy(tmp_path, name="ops", json_text=None):
    """tmp_path/model.json + .pdiparams: a copy of a reference model, its JSON replaced if given."""
    prefix = str(tmp_path / "model")
    shutil.copy(os.path.join(DATA, f"{name}.pdiparams"), prefix + ".pdiparams")
    if json_text is None:
        shutil.copy(os.path.join(DATA, f"{name}.json"), prefix + ".json")
    else:
        with open(prefix + ".json", "w") as f:
            f.write(json_text)
    return prefix


def _doc(name="ops"):
    with open(os.path.join(DATA, f"{name}.json")) as f:
        return json.load(f)


def _ops(doc):
    return doc["program"]["regions"][0]["blocks"][0]["ops"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_loads_and_predicts_what_paddle_predicted(name):
    expected = EXPECTED[name]
    assert expected["paddle"] == "3.0.0"
    exe = _exe()
    with paddle.static.scope_guard(paddle.static.Scope()):
        program, feeds, fetches = paddle.static.load_inference_model(os.path.join(DATA, name), exe)
        assert feeds == expected["feed_names"]  # the order of the program's pd_op.data, as Paddle gives it
        assert [v.name for v in fetches] == [f"fetch_name_{i}" for i in range(len(expected["fetch"]))]
        feed = _feed(expected)
        outs = exe.run(program, feed={k: feed[k] for k in feeds}, fetch_list=fetches)
    assert len(outs) == len(expected["fetch"])
    for out, want in zip(outs, expected["fetch"]):
        want = np.array(want, dtype="float32")
        np.testing.assert_allclose(np.reshape(out, want.shape), want, rtol=1e-5, atol=1e-6)


def test_program_uses_psjob_ops():
    program, feeds, fetches = paddle_pir.program_from_json(open(os.path.join(DATA, "ops.json"), "rb").read(), "ops.json")
    types = [op.type for op in program.global_block().ops]
    assert {"lookup_table_v2", "reduce_sum", "reduce_mean", "concat", "matmul_v2", "elementwise_add",
            "reshape2", "scale", "fill_constant", "softmax", "relu", "sigmoid", "tanh"} <= set(types)
    scale = next(op for op in program.global_block().ops if op.type == "scale" and op.attr("bias") == 0.5)
    assert scale.attr("scale") == 2.0
    concat = next(op for op in program.global_block().ops if op.type == "concat")
    assert concat.attr("axis") == 1 and len(concat.input("X")) == 3
    params = sorted(v.name for v in program.global_block().vars.values() if v.persistable)
    assert params == ["create_parameter_0.w_0", "create_parameter_1.w_0", "embedding_0.w_0", "fc_0.b_0",
                      "fc_0.w_0", "fc_1.b_0", "fc_1.w_0"]
    assert feeds == ["dense", "ids"] and fetches == ["fetch_name_0", "fetch_name_1", "fetch_name_2"]


def test_paddle_inference_predictor_reads_the_json(tmp_path):
    expected = EXPECTED["rank_deepfm"]
    prefix = _copy(tmp_path, "rank_deepfm")
    predictor = paddle.inference.create_predictor(paddle.inference.Config(prefix + ".json", prefix + ".pdiparams"))
    assert predictor.get_input_names() == expected["feed_names"]
    assert predictor.get_output_names() == ["fetch_name_0"]  # Paddle 3.0's predictor names them so too
    feed = _feed(expected)
    for n in predictor.get_input_names():
        predictor.get_input_handle(n).copy_from_cpu(feed[n])
    predictor.run()
    out = predictor.get_output_handle("fetch_name_0").copy_to_cpu()
    np.testing.assert_allclose(out, np.array(expected["fetch"][0], dtype="float32"), rtol=1e-5, atol=1e-6)


def test_pdmodel_wins_where_both_exist(tmp_path):
    """Paddle 3.0 reads <prefix>.pdmodel with PIR off (psjob's static graph, and what psjob writes),
    <prefix>.json with it on; psjob reads the .json only where no .pdmodel is next to it."""
    prefix = _copy(tmp_path)
    exe = _exe()
    with paddle.static.scope_guard(paddle.static.Scope()):
        _, _, fetches = paddle.static.load_inference_model(prefix, exe)
    assert fetches[0].name == "fetch_name_0"
    shutil.copy(os.path.join(LEGACY, "ctr.pdmodel"), prefix + ".pdmodel")
    shutil.copy(os.path.join(LEGACY, "ctr.pdiparams"), prefix + ".pdiparams")
    with paddle.static.scope_guard(paddle.static.Scope()):
        program, _, fetches = paddle.static.load_inference_model(prefix, exe)
    assert fetches[0].name != "fetch_name_0"
    assert "mul" in {op.type for op in program.global_block().ops}  # the legacy program's fc


def test_fetched_input_is_copied(tmp_path):
    doc = _doc()
    data_id = next(op["O"][0]["%"] for op in _ops(doc) if op["#"] == "1.data" and op["A"][0]["AT"]["D"] == "dense")
    fetch = [op for op in _ops(doc) if op["#"] == "1.fetch"][-1]
    fetch["I"] = [{"%": data_id}]
    fetch["O"][0]["TT"]["D"][1] = [-1, 4]
    prefix = _copy(tmp_path, json_text=json.dumps(doc))
    exe = _exe()
    with paddle.static.scope_guard(paddle.static.Scope()):
        program, feeds, fetches = paddle.static.load_inference_model(prefix, exe)
        feed = _feed(EXPECTED["ops"])
        outs = exe.run(program, feed=feed, fetch_list=fetches)
    assert fetches[2].name == "fetch_name_2"
    np.testing.assert_array_equal(outs[2], feed["dense"])


def _refused(tmp_path, json_text, match):
    prefix = _copy(tmp_path, json_text=json_text)
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope), pytest.raises(CheckpointError, match=match) as info:
        paddle.static.load_inference_model(prefix, _exe())
    assert prefix + ".json" in str(info.value)
    assert not scope.find_var("fc_0.w_0")  # nothing loaded
    return info.value


def test_unknown_op_is_refused_by_name(tmp_path):
    doc = _doc()
    for op in _ops(doc):
        if op["#"] == "1.relu":
            op["#"] = "1.gelu"
    _refused(tmp_path, json.dumps(doc), r"op pd_op\.gelu is not one psjob reads")


def test_unknown_attribute_is_refused(tmp_path):
    doc = _doc()
    for op in _ops(doc):
        if op["#"] == "1.softmax":
            op["A"].append({"AT": {"#": "0.a_bool", "D": True}, "N": "use_cudnn"})
    _refused(tmp_path, json.dumps(doc), r"use_cudnn psjob does not read \(op pd_op\.softmax\)")


def test_runtime_shape_is_refused(tmp_path):
    doc = _doc()
    data_id = next(op["O"][0]["%"] for op in _ops(doc) if op["#"] == "1.data" and op["A"][0]["AT"]["D"] == "ids")
    next(op for op in _ops(doc) if op["#"] == "1.reshape")["I"][1] = {"%": data_id}
    _refused(tmp_path, json.dumps(doc), r"shape is computed at run time.*pd_op\.reshape")


@pytest.mark.parametrize("corrupt,match", [
    (lambda text: text[: len(text) // 2], "not a JSON document"),
    (lambda text: text.replace('"magic": "pir"', '"magic": "xyz"'), "not a Paddle PIR program"),
    (lambda text: text.replace('"version": 1', '"version": 7'), "PIR version 7"),
    (lambda text: text.replace('"0.t_f32"', '"0.t_c64"', 1), "data type '0.t_c64'"),
])
def test_corrupted_file_is_refused(tmp_path, corrupt, match):
    with open(os.path.join(DATA, "ops.json")) as f:
        text = json.dumps(json.load(f))
    _refused(tmp_path, corrupt(text), match)


def test_undefined_value_is_refused(tmp_path):
    doc = _doc()
    next(op for op in _ops(doc) if op["#"] == "1.relu")["I"] = [{"%": 999}]
    _refused(tmp_path, json.dumps(doc), r"input %999 is not defined")


def test_truncated_params_are_refused(tmp_path):
    prefix = _copy(tmp_path)
    with open(prefix + ".pdiparams", "r+b") as f:
        f.truncate(os.path.getsize(prefix + ".pdiparams") - 10)
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope), pytest.raises(CheckpointError, match="model.pdiparams"):
        paddle.static.load_inference_model(prefix, _exe())
    assert not scope.find_var("fc_0.w_0")


def test_program_from_json_names_the_file():
    with pytest.raises(ProgramFormatError, match="^somewhere/x.json: "):
        paddle_pir.program_from_json(b"{", "somewhere/x.json")


def test_infinite_and_nan_constants(tmp_path):
    """Paddle 3.0.0 writes a full's infinite or NaN value as {"#": "0.a_f64", "VD": "INF"} ("-INF", "NaN")."""
    doc = _doc()
    add_full = next(op for op in _ops(doc) if op["#"] == "1.full" and op["A"][1]["AT"].get("D") == 0.25)
    add_full["A"][1]["AT"] = {"#": "0.a_f64", "VD": "-INF"}
    prefix = _copy(tmp_path, json_text=json.dumps(doc))
    exe = _exe()
    with paddle.static.scope_guard(paddle.static.Scope()):
        program, feeds, fetches = paddle.static.load_inference_model(prefix, exe)
        fill = next(op for op in program.global_block().ops if op.type == "fill_constant"
                    and op.attr("dtype") == "float32")
        assert fill.attr("value") == float("-inf")
        outs = exe.run(program, feed=_feed(EXPECTED["ops"]), fetch_list=fetches)
    # h + (-inf) = -inf, then tanh(-inf) * 1.5 - sigmoid(-inf) = -1.5 everywhere: fc_1's output is constant
    assert np.allclose(outs[1], outs[1][0])
