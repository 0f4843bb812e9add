"""paddle.save / paddle.load in static mode, Program.state_dict / set_state_dict and
Variable.get_value / set_value (psjob.static.paddle_io, psjob.fluid.framework).

The reference files under tests/data/paddle_save_load/ and the values in its expected.json were
written by real Paddle 3.0.0 (legacy IR, FLAGS_enable_pir_api=0) with make_reference.py there:
the state_dict key sets of an Adam-trained fc, what paddle.save writes for a state dict, a
tensor, a nested object and a Program, and what static.save / save_inference_model /
save_vars write. Paddle 3.0.0 also said: paddle.load gives tensors (DenseTensor) in static mode
and ndarrays with return_numpy=True, ndarrays for a save_inference_model prefix; set_state_dict
skips unknown names and wrong shapes with a warning. test_real_paddle_reads_psjob_files runs
real Paddle on psjob's files where /tmp/probe/vpaddle300 exists (skipped otherwise)."""
import io
import json
import os
import pickle
import subprocess

import numpy as np
import pytest

import psjob as paddle
import psjob.fluid as fluid
from psjob.fluid.core import LoDTensor

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "paddle_save_load")
FLUID18 = os.path.join(os.path.dirname(DATA), "paddle_format", "fluid18")
PADDLE = "/tmp/probe/vpaddle300/bin/python"
with open(os.path.join(DATA, "expected.json")) as _f:
    EXPECTED = json.load(_f)


@pytest.fixture
def net():
    """An fc trained one Adam step, in its own scope (the global one, swapped)."""
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), fluid.unique_name.guard():
        x = paddle.static.data("x", [None, 3], "float32")
        y = paddle.static.nn.fc(x, 2)
        loss = paddle.mean(y)
        paddle.optimizer.Adam(0.01).minimize(loss)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        exe.run(main, feed={"x": np.arange(6, dtype="float32").reshape(2, 3)}, fetch_list=[loss])
        yield main, exe, scope, x, y


def _values(scope):
    return {n: np.array(v) for n, v in scope.vars.items()}


# -- state_dict / get_value / set_value --------------------------------------------------------

def test_state_dict_modes_have_paddles_keys(net):
    main, *_ = net
    for mode in ("param", "opt", "all"):
        state = main.state_dict(mode)
        assert sorted(state) == EXPECTED["keys"][mode], mode
        assert all(isinstance(v, LoDTensor) for v in state.values())
    with pytest.raises(ValueError, match="'param', 'opt' or 'all'"):
        main.state_dict("params")


def test_get_value_set_value(net):
    main, _, scope, x, _ = net
    b = main.global_block().var("fc_0.b_0")
    b.set_value(np.array([1.0, 2.0], "float32"))
    assert np.array(b.get_value()).tolist() == [1.0, 2.0]
    b.set_value(np.array([3.0, 4.0], "float64"))  # cast to the declared float32
    assert scope.vars["fc_0.b_0"].dtype == np.float32
    with pytest.raises(ValueError, match=r"fc_0.b_0 expected a shape \[2\], but the received shape is \[3\]"):
        b.set_value(np.ones(3, "float32"))
    with pytest.raises(ValueError, match="fc_0.b_0 expected dtype float32"):
        b.set_value(np.ones(2, "int64"))
    never = main.global_block().create_var(name="never_run", shape=[2], dtype="float32", persistable=True)
    with pytest.raises(ValueError, match="Can not find Variable 'never_run'"):
        never.get_value()
    with pytest.raises(TypeError):
        b.set_value("not an array")
    other = fluid.Scope()
    with pytest.raises(ValueError, match="Can not find"):
        b.get_value(other)


def test_set_state_dict_skips_unknown_and_misfit_names_with_warnings(net):
    main, _, scope, *_ = net
    before = _values(scope)
    state = {"fc_0.w_0": np.zeros((2, 2), "float32"), "nonexist": np.zeros(2, "float32"),
             "fc_0.b_0": np.full(2, 5, "float32"), "learning_rate_0": np.array(0.5, "float32")}
    with pytest.warns(UserWarning) as record:
        main.set_state_dict(state)
    messages = " ".join(str(r.message) for r in record)
    assert "Skip loading for 'fc_0.w_0'" in messages and "expected a shape [3, 2]" in messages
    assert "Skip loading for 'nonexist'. Because 'nonexist' not in the program." in messages
    assert np.array_equal(scope.vars["fc_0.w_0"], before["fc_0.w_0"])  # the misfit left as it was
    assert scope.vars["fc_0.b_0"].tolist() == [5, 5]
    assert scope.vars["learning_rate_0"].tolist() == [0.5]  # Paddle's 0-D into the [1] variable
    assert "nonexist" not in scope.vars


def test_save_load_state_dict_round_trip(net, tmp_path):
    main, _, scope, *_ = net
    path = str(tmp_path / "sub" / "model.pdparams")
    paddle.save(main.state_dict("all"), path)
    saved = _values(scope)
    with open(path, "rb") as f:  # Paddle's state-dict pickle: {name: ndarray}
        raw = pickle.load(f)
    assert sorted(raw) == EXPECTED["keys"]["all"] and all(type(v) is np.ndarray for v in raw.values())
    for name in list(scope.vars):
        scope.vars[name] = np.zeros_like(scope.vars[name])
    state = paddle.load(path)
    assert all(isinstance(v, LoDTensor) for v in state.values())
    main.set_state_dict(state)
    for name in EXPECTED["keys"]["all"]:
        assert np.array_equal(scope.vars[name], saved[name]), name
    numpy_state = paddle.load(path, return_numpy=True)
    assert all(type(v) is np.ndarray for v in numpy_state.values())


def test_save_load_tensor_nested_program_bytesio(net, tmp_path):
    main, *_ = net
    w = main.global_block().var("fc_0.w_0").get_value()
    paddle.save(w, str(tmp_path / "w.pdtensor"))
    got = paddle.load(str(tmp_path / "w.pdtensor"))
    assert isinstance(got, LoDTensor) and np.array_equal(np.array(got), np.array(w))
    obj = {"a": [w, np.arange(3)], "b": (1, 2.5, "s"), "c": {"d": w}, "e": None}
    paddle.save(obj, str(tmp_path / "nested.pd"), protocol=2)
    got = paddle.load(str(tmp_path / "nested.pd"), return_numpy=True)
    assert got["b"] == (1, 2.5, "s") and got["e"] is None
    assert np.array_equal(got["a"][0], np.array(w)) and got["a"][1].tolist() == [0, 1, 2]
    buf = io.BytesIO()
    paddle.save(main.state_dict("param"), buf)
    buf.seek(0)
    assert sorted(paddle.load(buf)) == EXPECTED["keys"]["param"]
    paddle.save(main, str(tmp_path / "main.pdmodel"))
    prog = paddle.load(str(tmp_path / "main.pdmodel"))
    assert isinstance(prog, paddle.static.Program)
    assert [op.type for op in prog.global_block().ops] == [op.type for op in main.global_block().ops]
    paddle.save(w, str(tmp_path / "w.bin"), use_binary_format=True)
    assert np.array_equal(paddle.load(str(tmp_path / "w.bin"), return_numpy=True), np.array(w))


def test_save_refuses_what_load_cannot_read(net, tmp_path):
    main, _, _, x, _ = net
    with pytest.raises(TypeError, match="static Variable 'x'"):
        paddle.save({"x": x}, str(tmp_path / "v.pd"))
    with pytest.raises(TypeError, match="psjob saves tensors"):
        paddle.save({"f": object()}, str(tmp_path / "o.pd"))
    with pytest.raises(ValueError, match="protocol"):
        paddle.save({}, str(tmp_path / "p.pd"), protocol=5)
    with pytest.raises(ValueError, match="not supported"):
        paddle.save({}, str(tmp_path / "p.pd"), bogus=1)
    assert not os.listdir(tmp_path)


# -- Paddle's own files -----------------------------------------------------------------------

def test_loads_paddles_files():
    values = EXPECTED["values"]
    state = paddle.load(os.path.join(DATA, "param.pdparams"), return_numpy=True)
    assert sorted(state) == EXPECTED["keys"]["param"]
    assert np.allclose(state["fc_0.w_0"], values["fc_0.w_0"])
    assert isinstance(paddle.load(os.path.join(DATA, "param.pdparams"))["fc_0.w_0"], LoDTensor)
    w = paddle.load(os.path.join(DATA, "w.pdtensor"))  # eval("data", {"data": ndarray})
    assert isinstance(w, LoDTensor) and np.allclose(np.array(w), values["fc_0.w_0"])
    assert np.allclose(paddle.load(os.path.join(DATA, "w_binary.pdtensor"), return_numpy=True), values["fc_0.w_0"])
    nested = paddle.load(os.path.join(DATA, "nested.pd"), return_numpy=True)
    assert nested["b"] == (1, 2.5, "s") and np.allclose(nested["c"]["d"], values["fc_0.w_0"])
    prog = paddle.load(os.path.join(DATA, "main.pdmodel"))
    assert [op.type for op in prog.global_block().ops] == EXPECTED["program_ops"]
    opt = paddle.load(os.path.join(DATA, "static_save", "model.pdopt"), return_numpy=True)
    assert sorted(opt) == EXPECTED["keys"]["opt"]
    assert np.allclose(opt["fc_0.w_0_moment1_0"], values["fc_0.w_0_moment1_0"])


def test_loads_paddles_files_into_a_program(net):
    main, _, scope, *_ = net
    main.set_state_dict(paddle.load(os.path.join(DATA, "param.pdparams")))
    main.set_state_dict(paddle.load(os.path.join(DATA, "static_save", "model.pdopt")))
    for name in EXPECTED["keys"]["all"]:
        assert np.allclose(scope.vars[name].reshape(-1), np.ravel(EXPECTED["values"][name])), name


def test_loads_other_save_apis_results(net, tmp_path):
    values = EXPECTED["values"]
    inf = paddle.load(os.path.join(DATA, "inf", "model"))  # save_inference_model prefix: ndarrays
    assert sorted(inf) == EXPECTED["keys"]["param"] and type(inf["fc_0.w_0"]) is np.ndarray
    assert np.allclose(inf["fc_0.w_0"], values["fc_0.w_0"])
    fluid_dir = paddle.load(os.path.join(DATA, "fluid_dir"))  # save_vars: a tensor file a variable
    assert sorted(fluid_dir) == sorted(n for n in EXPECTED["keys"]["all"] if n.startswith("fc_0."))
    assert np.allclose(fluid_dir["fc_0.w_0_moment2_0"], values["fc_0.w_0_moment2_0"])
    expected18 = json.load(open(os.path.join(FLUID18, "expected.json")))["persistables"]
    for sub, kwargs in (("fluid", {}), ("combined", {"params_filename": "__params__"}), ("persistables", {})):
        got = paddle.load(os.path.join(FLUID18, sub), **kwargs)
        for name, arr in got.items():
            if name in expected18:
                assert np.allclose(arr, np.asarray(expected18[name]).reshape(arr.shape)), (sub, name)
        assert "fc_0.w_0" in got
    with pytest.raises(ValueError, match="no program"):
        paddle.load(os.path.join(FLUID18, "persistables"), params_filename="x")
    # psjob's own saves of the other APIs
    main, exe, scope, x, y = net
    paddle.static.save(main, str(tmp_path / "st" / "model"))
    assert sorted(paddle.load(str(tmp_path / "st" / "model.pdparams"))) == EXPECTED["keys"]["param"]
    with pytest.raises(ValueError, match="full file name|paddle.static.save"):
        paddle.load(str(tmp_path / "st" / "model"))
    paddle.static.save_inference_model(str(tmp_path / "inf" / "model"), [x], [y], exe, program=main)
    got = paddle.load(str(tmp_path / "inf" / "model"))
    assert np.array_equal(got["fc_0.w_0"], scope.vars["fc_0.w_0"])
    fluid.io.save_persistables(exe, str(tmp_path / "persist"), main)
    got = paddle.load(str(tmp_path / "persist"))
    assert sorted(got) == EXPECTED["keys"]["all"]
    fluid.io.save_inference_model(str(tmp_path / "finf"), ["x"], [y], exe, main, params_filename="params")
    assert sorted(paddle.load(str(tmp_path / "finf"), params_filename="params")) == EXPECTED["keys"]["param"]


def test_bad_files_raise_naming_the_file(tmp_path):
    missing = str(tmp_path / "missing.pd")
    with pytest.raises(ValueError, match="missing.pd"):
        paddle.load(missing)
    with open(os.path.join(DATA, "nested.pd"), "rb") as f:
        data = f.read()
    (tmp_path / "trunc.pd").write_bytes(data[:60])
    (tmp_path / "foreign.pd").write_bytes(b"hello world")
    for name in ("trunc.pd", "foreign.pd"):
        with pytest.raises(ValueError, match=f"can not parse the file:.*{name}"):
            paddle.load(str(tmp_path / name))
    # A pickle that would run code: refused, nothing run.
    (tmp_path / "evil.pd").write_bytes(pickle.dumps({"a": os.system}))
    with pytest.raises(ValueError, match="evil.pd.*posix.system|evil.pd.*not part of"):
        paddle.load(str(tmp_path / "evil.pd"))

    class Evil:
        def __reduce__(self):
            return (eval, ("__import__('os').getcwd()", {}))
    (tmp_path / "eval.pd").write_bytes(pickle.dumps(Evil()))
    with pytest.raises(ValueError, match="eval.pd.*tensor wrapper"):
        paddle.load(str(tmp_path / "eval.pd"))
    (tmp_path / "model.pdparams").write_bytes(pickle.dumps({}))
    with pytest.raises(ValueError, match="full file name"):
        paddle.load(str(tmp_path / "model"))
    bad_dir = tmp_path / "dir"
    bad_dir.mkdir()
    (bad_dir / "w").write_bytes(b"not a tensor")
    with pytest.raises(ValueError, match="is not a Paddle tensor file"):
        paddle.load(str(bad_dir))
    with pytest.raises(ValueError, match="not supported"):
        paddle.load(missing, bogus=True)


# -- real Paddle reads psjob's files ----------------------------------------------------------

_PADDLE_CHECK = """
import os, sys, numpy as np
os.environ["FLAGS_enable_pir_api"] = "0"
import paddle
paddle.enable_static()
d = sys.argv[1]
w = np.load(os.path.join(d, "w.npy"))
sd = paddle.load(os.path.join(d, "all.pdparams"))
assert sorted(sd) == sys.argv[2].split(","), sorted(sd)
assert np.array_equal(np.array(sd["fc_0.w_0"]), w)
assert np.array_equal(np.array(paddle.load(os.path.join(d, "w.pdtensor"))), w)
n = paddle.load(os.path.join(d, "nested.pd"), return_numpy=True)
assert n["b"] == (1, 2.5, "s") and np.array_equal(n["c"]["d"], w)
p = paddle.load(os.path.join(d, "main.pdmodel"))
assert isinstance(p, paddle.static.Program), type(p)
print("OPS", ",".join(op.type for op in p.global_block().ops))
"""


@pytest.mark.skipif(not os.path.exists(PADDLE), reason="real Paddle 3.0.0 is not installed here")
def test_real_paddle_reads_psjob_files(net, tmp_path):
    main, *_ = net
    w = main.global_block().var("fc_0.w_0").get_value()
    paddle.save(main.state_dict("all"), str(tmp_path / "all.pdparams"))
    paddle.save(w, str(tmp_path / "w.pdtensor"))
    paddle.save({"a": [w], "b": (1, 2.5, "s"), "c": {"d": w}}, str(tmp_path / "nested.pd"))
    paddle.save(main, str(tmp_path / "main.pdmodel"))
    np.save(str(tmp_path / "w.npy"), np.array(w))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["FLAGS_enable_pir_api"] = "0"
    out = subprocess.run([PADDLE, "-c", _PADDLE_CHECK, str(tmp_path), ",".join(EXPECTED["keys"]["all"])],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    ops = [line for line in out.stdout.splitlines() if line.startswith("OPS ")][0][4:].split(",")
    assert ops == [op.type for op in main.global_block().ops]

